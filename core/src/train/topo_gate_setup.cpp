#include "moebench/train/topo_gate_setup.h"

#include <algorithm>
#include <set>

namespace moebench {

bool runs_fastermoe(const Config& cfg) {
  const std::vector<std::string>& blocks = cfg.strategy.per_block.blocks;
  return cfg.strategy.name == "fastermoe" ||
         (cfg.strategy.name == "per_block" && std::find(blocks.begin(), blocks.end(), "fastermoe") != blocks.end());
}

std::string topo_gate_note(const Config& cfg) {
  if (!runs_fastermoe(cfg) || !cfg.strategy.fastermoe.topo_gate) return "";
  if (cfg.cluster.nodes <= 1) return "fastermoe: topo_gate on a single node (cluster.nodes = 1) changes nothing";
  // EP groups (dist/process_groups.h): runs of `ep` consecutive DP ranks of one TP rank and
  // stage; world rank = stage * dp * tp + dp_rank * tp + tp_rank; node = rank / per_node.
  const int ranks = cfg.run.ranks, tp = std::max(1, cfg.parallel.tp), pp = std::max(1, cfg.parallel.pp);
  const int dp = cfg.parallel.dp > 0 ? cfg.parallel.dp : ranks / (tp * pp);
  const int ep = cfg.parallel.ep > 0 ? cfg.parallel.ep : dp;
  const int per_node = cfg.cluster.devices_per_node > 0 ? cfg.cluster.devices_per_node : ranks / cfg.cluster.nodes;
  if (dp < 1 || ep < 1 || per_node < 1) return "";
  for (int stage = 0; stage < pp; ++stage)
    for (int t = 0; t < tp; ++t)
      for (int first = 0; first + ep <= dp; first += ep) {
        std::set<int> nodes;
        for (int i = first; i < first + ep; ++i) nodes.insert((stage * dp * tp + i * tp + t) / per_node);
        if (nodes.size() > 1) return "";
      }
  return "fastermoe: topo_gate with every expert-parallel group inside one node (parallel.ep = " + std::to_string(ep) +
         ", " + std::to_string(per_node) + " ranks per node) changes nothing";
}

}  // namespace moebench
