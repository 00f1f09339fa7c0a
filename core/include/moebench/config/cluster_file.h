#pragma once
// Cluster description files (sample_configs/clusters/*.toml): a TOML file with one [cluster]
// section holding any [cluster] key of the config except `file` (docs/config-guide.md).
// A config names one with `cluster.file`; its keys apply where the config sets none.
//
// The readers here check a file on its own: the same types and value rules as the config's
// [cluster] keys, but nothing that depends on the rest of a config (run.ranks). Problems are
// thrown as one ConfigError whose issues name the cluster file, the line and the key.
#include <string>
#include <string_view>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/config/config_loader.h"

namespace moebench {

// Parses a cluster file's text; `source_name` names it in messages. Unset keys keep the
// defaults of ClusterConfig. Throws ConfigError.
ClusterConfig parse_cluster_file(std::string_view toml_text, const std::string& source_name);

// Reads the cluster file at `path` (at most 1 MiB). Throws ConfigError, also when it cannot be read.
ClusterConfig load_cluster_file(const std::string& path);

// The keys a described cluster (simulate/plan --cluster, [emulate] cluster) must name and the
// file at `path` does not, for the devices `c` (that file, read) describes: cluster.device_tflops
// always, cluster.intra_bw_gbs unless one device per node, cluster.inter_bw_gbs with more than
// one node (the development machine's defaults would otherwise stand in for them silently).
// Empty when all are there or the file does not parse (load_cluster_file reports that).
std::vector<std::string> missing_cluster_links(const std::string& path, const ClusterConfig& c);

}  // namespace moebench
