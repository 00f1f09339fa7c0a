#include "moebench/train/topo_gate_setup.h"

#include <algorithm>

#include "moebench/config/config_layout.h"

namespace moebench {

bool runs_fastermoe(const Config& cfg) {
  const std::vector<std::string>& blocks = cfg.strategy.per_block.blocks;
  return cfg.strategy.name == "fastermoe" ||
         (cfg.strategy.name == "per_block" && std::find(blocks.begin(), blocks.end(), "fastermoe") != blocks.end());
}

std::string topo_gate_note(const Config& cfg) {
  if (!runs_fastermoe(cfg) || !cfg.strategy.fastermoe.topo_gate) return "";
  if (cfg.cluster.nodes <= 1) return "fastermoe: topo_gate on a single node (cluster.nodes = 1) changes nothing";
  const ParallelLayout layout = layout_of(cfg);
  const int ranks = cfg.run.ranks;
  const int per_node = cfg.cluster.devices_per_node > 0 ? cfg.cluster.devices_per_node : ranks / cfg.cluster.nodes;
  if (per_node < 1) return "";
  for (const std::vector<int>& group : layout.ep_groups())
    if (group.front() / per_node != group.back() / per_node) return "";  // the ranks of a group ascend
  return "fastermoe: topo_gate with every expert-parallel group inside one node (parallel.ep = " +
         std::to_string(layout.ep()) + ", " + std::to_string(per_node) + " ranks per node) changes nothing";
}

}  // namespace moebench
