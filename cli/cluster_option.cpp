#include "cluster_option.h"

#include <nlohmann/json.hpp>

#include "moebench/config/cluster_file.h"
#include "moebench/config/config_loader.h"
#include "moebench/config/usage_error.h"

namespace moebench::cli {
namespace {

// A described cluster names every link its devices use (cluster_file.h).
void require_links(const std::string& file, const ClusterConfig& c) {
  const std::vector<std::string> missing = missing_cluster_links(file, c);
  if (missing.empty()) return;
  std::string keys;
  for (const std::string& k : missing) keys += (keys.empty() ? "" : ", ") + k;
  throw UsageError("--cluster " + file + ": missing " + keys + " (a described cluster names every link it uses)");
}

}  // namespace

std::vector<std::string> cluster_sets(const std::string& config, const std::vector<std::string>& sets,
                                      const std::string& cluster, int nodes, int ranks) {
  std::vector<std::string> out = sets;
  if (!cluster.empty()) {
    Config c;
    c.cluster = load_cluster_file(cluster);
    if (nodes > 0) c.cluster.nodes = nodes;
    require_links(cluster, c.cluster);
    const int devices = c.cluster.nodes * c.cluster.devices_per_node;
    const int world = ranks > 0 ? ranks : load_config(config, sets).run.ranks;
    if (c.cluster.devices_per_node > 0 && devices != world)
      throw UsageError("--cluster " + cluster + " describes " + std::to_string(c.cluster.nodes) + " nodes x " +
                       std::to_string(c.cluster.devices_per_node) + " devices = " + std::to_string(devices) +
                       " devices; the config runs " + std::to_string(world) + " ranks (run.ranks): pass --ranks " +
                       std::to_string(devices) + ", or --nodes to resize the cluster");
    const nlohmann::json j = config_to_json(c).at("cluster");
    for (auto it = j.begin(); it != j.end(); ++it)
      if (it.key() != "file") out.push_back("cluster." + it.key() + "=" + it.value().dump());
  } else if (nodes > 0) {
    out.push_back("cluster.nodes=" + std::to_string(nodes));
  }
  if (ranks > 0) out.push_back("run.ranks=" + std::to_string(ranks));
  return out;
}

}  // namespace moebench::cli
