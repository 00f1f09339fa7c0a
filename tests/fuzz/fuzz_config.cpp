// Fuzz target: the config loader and the GUI's text functions on arbitrary input.
// Input: the TOML text, then any number of NUL-separated --set overrides
//   "[model]\nhidden = 64\n" "\0" "moe.top_k=1" "\0" "train.lr=2e-3"
// Checks: parse_config() either returns a Config or throws ConfigError with at least one issue
// (any other exception or a crash is a finding); an accepted config written back with
// config_to_toml() is accepted again with an equal canonical JSON (which must serialise); the
// editor's toml_syntax_error / find_config_value / set_config_value throw nothing but
// std::invalid_argument.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "moebench/config/config_loader.h"
#include "moebench/config/config_text_edit.h"

namespace {

void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_config: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void check_editor(const std::string& text, size_t pick) {
  (void)moebench::toml_syntax_error(text);
  const auto& keys = moebench::config_keys();
  const std::string& key = keys[pick % keys.size()].name;
  try {
    (void)moebench::find_config_value(text, key);
    (void)moebench::set_config_value(text, key, "1");
  } catch (const std::invalid_argument&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string text(input.substr(0, nul));
  std::vector<std::string> overrides;
  for (size_t at = nul; at != std::string_view::npos && at < input.size();) {
    const size_t next = input.find('\0', at + 1);
    overrides.emplace_back(input.substr(at + 1, next == std::string_view::npos ? next : next - at - 1));
    at = next;
  }
  // A folder that does not exist: relative data paths never reach real files.
  const std::string base_dir = "/nonexistent-moebench-fuzz";
  try {
    const moebench::Config config = moebench::parse_config(text, "fuzz.toml", overrides, base_dir);
    const std::string json = moebench::config_to_json(config).dump();
    const std::string written = moebench::config_to_toml(config);
    try {
      const moebench::Config again = moebench::parse_config(written, "written.toml", {}, base_dir);
      if (moebench::config_to_json(again).dump() != json)
        fail("config_to_toml does not read back equal", json + "\n" + written);
    } catch (const moebench::ConfigError& e) {
      fail("config_to_toml output is rejected", std::string(e.what()) + "\n" + written);
    }
  } catch (const moebench::ConfigError& e) {
    if (e.issues().empty() || std::string(e.what()).empty()) fail("ConfigError without issues", text);
  }
  check_editor(text, size);
  return 0;
}
