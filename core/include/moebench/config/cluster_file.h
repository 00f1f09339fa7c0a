#pragma once
// Cluster description files (sample_configs/clusters/*.toml): a TOML file with one [cluster]
// section holding any [cluster] key of the config except `file` (README "Cluster files").
// A config names one with `cluster.file`; its keys apply where the config sets none.
//
// The readers here check a file on its own: the same types and value rules as the config's
// [cluster] keys, but nothing that depends on the rest of a config (run.ranks). Problems are
// thrown as one ConfigError whose issues name the cluster file, the line and the key.
#include <string>
#include <string_view>

#include "moebench/config/config.h"
#include "moebench/config/config_loader.h"

namespace moebench {

// Parses a cluster file's text; `source_name` names it in messages. Unset keys keep the
// defaults of ClusterConfig. Throws ConfigError.
ClusterConfig parse_cluster_file(std::string_view toml_text, const std::string& source_name);

// Reads the cluster file at `path` (at most 1 MiB). Throws ConfigError, also when it cannot be read.
ClusterConfig load_cluster_file(const std::string& path);

}  // namespace moebench
