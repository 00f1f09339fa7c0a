#pragma once
// Internal to the config loader: reading one TOML value into its field, shared by the config
// reader (config_loader.cpp) and the cluster-file reader (cluster_file.cpp).
#include <string>

#include <toml++/toml.h>

#include "config_detail.h"

namespace moebench::config_detail {

// Reads `n` into field `f` of `c`; on success records `at` as the key's origin, else adds an
// issue at `at` (or the value's own line) and marks the key bad. `base_dir` resolves paths.
void read_field(Config& c, LoadState& st, const FieldDef& f, const toml::node& n, const Origin& at,
                const std::string& base_dir);

// "unknown key in [cluster]; did you mean `intra_bw_gbs`?"
std::string unknown_key_text(const std::string& section, const std::string& key);

// "string \"abc\"", "float 128.0", "array" ...
std::string describe_value(const toml::node& n);

}  // namespace moebench::config_detail
