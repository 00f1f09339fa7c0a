#pragma once
// `--cluster FILE [--nodes N] [--ranks N]` of simulate and plan: the cluster file's every
// [cluster] key as --set overrides (it replaces the config's section; --nodes resizes it),
// checked against the config's rank count first (UsageError naming both).
#include <string>
#include <vector>

namespace moebench::cli {

// The overrides to load CONFIG with: `sets`, then the cluster's keys (when `cluster` is not
// empty; else cluster.nodes = nodes when nodes > 0), then run.ranks = ranks (when ranks > 0).
std::vector<std::string> cluster_sets(const std::string& config, const std::vector<std::string>& sets,
                                      const std::string& cluster, int nodes, int ranks);

}  // namespace moebench::cli
