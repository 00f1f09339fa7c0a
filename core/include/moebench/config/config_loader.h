#pragma once
// Loading, validating and writing configs: TOML (toml++) + `--set key=value` overrides ->
// moebench::Config, and the resolved Config back to TOML or canonical JSON.
//
// Sections and keys are exactly the structs and field names of config.h:
//   [run] [model] [moe] [data] [train]      e.g. model.hidden, moe.experts, train.batch_size
// Every key has a default (config.h). Special keys:
//   moe.experts    one integer (the same for every MoE block; default 8) or an array with one
//                  entry per moe.moe_layers entry (PR-MoE). Stored expanded, one per block.
//   data.path, data.val_path
//                  relative paths from the file are resolved against the config file's folder,
//                  from --set against the current directory; stored absolute.
// Overrides are "section.key=value"; value is a TOML value (1, 1e-3, [1,3], "text", true) or a
// bare word taken as a string (data.source=text). They apply on top of the file before
// validation. For string keys any value that is not a TOML string is taken verbatim.
//
// All problems (syntax, unknown section/key, wrong type, out of range, inconsistent keys,
// missing data files) are collected and thrown together as one ConfigError (at most 100, then
// one "and N more" issue). Each issue names the file and line (or `--set key`) and the key, and
// says what was expected. Texts over the size, key and nesting limits of docs/limits.md
// (1 MiB; 32 dotted parts and 1024 bytes per key; nesting 64) are rejected before parsing.
#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "moebench/config/config.h"

namespace moebench {

// The `file` of issues about --set overrides.
inline constexpr const char* kOverrideSource = "--set";

struct ConfigIssue {
  std::string file;     // the config file's name as given, or "--set"
  int line = 0;         // 1-based; 0 = not tied to a line (a default value, an override)
  std::string key;      // "moe.top_k"; a section name for unknown sections; "" for syntax errors
  std::string message;  // what was expected and what was found
  // "quickstart.toml:12: moe.top_k: must be <= ... got 3"  or  "--set moe.top_k: ..."
  std::string to_string() const;
};

class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(std::vector<ConfigIssue> issues);
  const std::vector<ConfigIssue>& issues() const { return issues_; }  // never empty

 private:
  std::vector<ConfigIssue> issues_;
};

// Reads the TOML file at `path` (relative paths inside resolve against its folder).
// Throws ConfigError (also when the file cannot be read).
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});

// Parses TOML text; `source_name` is used in messages and as Config::source_file, `base_dir`
// resolves relative data paths written in the text. Throws ConfigError.
Config parse_config(std::string_view toml_text, const std::string& source_name,
                    const std::vector<std::string>& overrides = {},
                    const std::string& base_dir = ".");

// The fully resolved config, every key in every section with a comment on its meaning;
// parse_config() accepts it again and gives an equal config.
std::string config_to_toml(const Config& config);
// The [strategy.<section>] table of the options of `s` that differ from their defaults, as
// config_to_toml writes them; "" when none does.
std::string changed_options_toml(const StrategyConfig& s, const std::string& section);

// Canonical JSON (sorted keys, floats in shortest form) of the resolved config:
// {"data": {...}, "model": {...}, "moe": {...}, "run": {...}, "train": {...}}.
// Config::source_file is not part of it (the same config from two files is equal).
nlohmann::json config_to_json(const Config& config);

// `s` as a TOML basic string literal: quoted, with \", \\, \n, \t... and \uXXXX escapes.
std::string toml_string_literal(std::string_view s);

// The schema, in file order: for editors, docs and completion.
struct ConfigKeyInfo {
  std::string name;  // "model.hidden"
  std::string type;  // "integer", "float", "boolean", "string", "path", "integer array",
                     // "float array", "string array", "integer or integer array", "auto or number"
  std::string doc;   // one-line meaning
};
const std::vector<ConfigKeyInfo>& config_keys();

}  // namespace moebench
