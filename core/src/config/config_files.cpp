// The files a config names and the config bundled with them (config_files.h). The values come
// from the TOML text itself (toml++), not from a loaded Config: a config whose other keys do
// not validate here (a rank count this machine cannot start) is still bundled, and the loader
// on the target machine says what is wrong with it. The text is rewritten one key at a time
// (config_text_edit.h), so comments and everything else stay as the user wrote them.
#include "moebench/config/config_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <toml++/toml.h>

#include "moebench/config/config_loader.h"
#include "moebench/config/config_text_edit.h"
#include "moebench/config/file_kind.h"

namespace moebench {

namespace fs = std::filesystem;

namespace {

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

struct Override {
  std::string key, raw;
};

// "key=value" -> key and value; nullopt-like empty key for text without '='.
Override split_override(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos) return {};
  return {trim(std::string_view(text).substr(0, eq)), trim(std::string_view(text).substr(eq + 1))};
}

// An override's value as the loader takes it for a string key: a TOML string, else the bare text.
std::string override_string(const std::string& raw) {
  try {
    const toml::table t = toml::parse("v = " + raw);
    if (t.size() == 1)
      if (const auto* s = t.get_as<std::string>("v")) return s->get();
  } catch (const toml::parse_error&) {
  }
  return raw;
}

std::pair<std::string, std::string> split_key(const std::string& key) {
  const auto dot = key.rfind('.');
  return {key.substr(0, dot), key.substr(dot + 1)};
}

// The string the text sets for `key` (section.key), "" when none; throws for a non-string.
std::string text_string(const toml::table& root, const std::string& key) {
  const auto [section, name] = split_key(key);
  const toml::node* n = root[section][name].node();
  if (!n) return {};
  if (const auto* s = n->as_string()) return s->get();
  throw std::invalid_argument(key + ": expected a string (a path), got a " +
                              std::string(n->is_table() ? "table" : n->is_array() ? "array" : "non-string value"));
}

std::string resolve(const std::string& value, const std::string& dir) {
  fs::path p(value);
  if (p.is_relative()) p = fs::absolute(fs::path(dir.empty() ? "." : dir) / p);
  return p.lexically_normal().string();
}

// A file name without control characters (they would break scp's protocol and every log line).
std::string clean_name(std::string name) {
  for (char& c : name)
    if ((unsigned char)c < 0x20 || c == 0x7f) c = '_';
  return name;
}

std::string unique_name(const std::string& wanted, std::set<std::string>& taken) {
  std::string name = wanted;
  const fs::path p(wanted);
  const std::string stem = p.stem().string(), ext = p.extension().string();
  for (int k = 2; taken.count(name); ++k) name = stem + "-" + std::to_string(k) + ext;
  taken.insert(name);
  return name;
}

std::string same_file_key(const std::string& path) {
  std::error_code ec;
  const fs::path c = fs::weakly_canonical(path, ec);
  return ec ? path : c.string();
}

// "" when `path` is a readable regular file, else what is wrong with it.
std::string file_problem(const std::string& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) return "file not found: " + path;
  if (!fs::is_regular_file(status)) return path + " is " + file_kind(status) + ", not a file";
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot read " + path;
  return {};
}

}  // namespace

const std::vector<std::string>& config_path_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> v;
    for (const auto& k : config_keys())
      if (k.type == "path") v.push_back(k.name);
    return v;
  }();
  return keys;
}

bool is_config_path_key(std::string_view key) {
  const auto& keys = config_path_keys();
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

std::vector<ConfigPathRef> config_path_refs(std::string_view text, const std::string& base_dir,
                                            const std::vector<std::string>& overrides,
                                            const std::string& override_dir) {
  if (const std::string e = toml_syntax_error(text); !e.empty())
    throw std::invalid_argument("the config is not valid TOML: " + e);
  toml::table root;
  try {
    root = toml::parse(text);
  } catch (const toml::parse_error& e) {
    throw std::invalid_argument(std::string("the config is not valid TOML: ") + std::string(e.description()));
  }
  // The last override of each key, and the two choices that decide which paths are read.
  std::map<std::string, std::string> last;
  for (const std::string& o : overrides) {
    const Override s = split_override(o);
    if (!s.key.empty()) last[s.key] = override_string(s.raw);
  }
  auto effective = [&](const std::string& key) {
    if (const auto it = last.find(key); it != last.end()) return it->second;
    try {
      return text_string(root, key);
    } catch (const std::invalid_argument&) {
      return std::string();  // not a string: the loader reports it
    }
  };
  const std::string source = effective("data.source");
  const bool data_read = source == "bin" || source == "text";
  const bool ssd = effective("storage.sparse") == "ssd";

  std::vector<ConfigPathRef> refs;
  for (const std::string& key : config_path_keys()) {
    ConfigPathRef r;
    r.key = key;
    if (const auto it = last.find(key); it != last.end()) {
      r.value = it->second;
      r.from_override = true;
    } else {
      r.value = text_string(root, key);
    }
    if (r.value.empty()) continue;
    r.path = resolve(r.value, r.from_override ? override_dir : base_dir);
    r.directory = key == "storage.ssd_dir";
    if (key == "data.path" || key == "data.val_path") r.used = data_read;
    else if (r.directory) r.used = ssd;
    refs.push_back(std::move(r));
  }
  return refs;
}

namespace {
std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : std::string()) + v[i];
  return out;
}
}  // namespace

ConfigBundleError::ConfigBundleError(std::vector<std::string> problems)
    : std::runtime_error(join(problems, "; ")), problems_(std::move(problems)) {}

ConfigBundle bundle_config(std::string_view text, const std::string& config_path,
                           const std::vector<std::string>& overrides, const std::string& override_dir) {
  const fs::path config(config_path);
  const std::string base_dir = fs::absolute(config).parent_path().string();
  const std::vector<ConfigPathRef> refs = config_path_refs(text, base_dir, overrides, override_dir);

  ConfigBundle b;
  std::set<std::string> taken;
  b.config_name = unique_name(clean_name(config.filename().string()), taken);
  std::string out(text);
  std::vector<std::string> problems;
  std::map<std::string, size_t> file_of;  // same-file key -> index in b.files
  for (const ConfigPathRef& r : refs) {
    std::string value = r.value;  // what the bundled text sets (unused or absolute folders: as given)
    if (r.used && !r.directory) {
      if (const std::string p = file_problem(r.path); !p.empty()) {
        problems.push_back(r.key + ": " + p + (r.from_override ? " (--set)" : " (" + config.filename().string() + ")"));
        continue;
      }
      const std::string same = same_file_key(r.path);
      auto it = file_of.find(same);
      if (it == file_of.end()) {
        it = file_of.emplace(same, b.files.size()).first;
        b.files.push_back({r.path, unique_name(clean_name(fs::path(r.path).filename().string()), taken), {}});
      }
      b.files[it->second].keys.push_back(r.key);
      value = b.files[it->second].name;
    } else if (r.used && r.directory && fs::path(r.value).is_relative()) {
      std::string last = fs::path(r.path).filename().string();
      if (last.empty() || last == "." || last == "..") last = "ssd";
      value = unique_name(clean_name(last), taken);
      b.directories.push_back(value);
    } else if (!r.from_override) {
      continue;  // left as written
    }
    out = set_config_value(out, r.key, toml_string_literal(value));
  }
  if (!problems.empty()) throw ConfigBundleError(std::move(problems));
  // A path override that clears its key (`--set cluster.file=""`) is folded in as well.
  std::map<std::string, std::string> cleared;
  for (const std::string& o : overrides) {
    const Override s = split_override(o);
    if (!is_config_path_key(s.key)) b.overrides.push_back(o);
    else cleared[s.key] = override_string(s.raw);
  }
  for (const auto& [key, value] : cleared)
    if (value.empty()) out = set_config_value(out, key, "\"\"");
  b.config_text = std::move(out);
  return b;
}

}  // namespace moebench
