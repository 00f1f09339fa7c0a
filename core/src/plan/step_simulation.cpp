#include "moebench/plan/step_simulation.h"

#include "moebench/perf/ddl_roofline.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <utility>

#include "moebench/dist/topology.h"
#include "moebench/strategies/registry.h"

namespace moebench {
namespace {

// A task of MoE block `layer`'s passes (perf/ddl_roofline.h moe_block_task).
bool block_task(const GraphTask& t, int layer) { return t.layer == layer && moe_block_task(t.name); }

using Interval = std::pair<double, double>;

// Total length of the union of intervals.
double union_length(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  double total = 0, a = 0, b = -1;
  for (const auto& [s, e] : v) {
    if (s > b) {
      if (b > a) total += b - a;
      a = s;
      b = e;
    } else {
      b = std::max(b, e);
    }
  }
  if (b > a) total += b - a;
  return total;
}

}  // namespace

StepSimulation simulate_step(const Config& cfg, const ClusterNetwork& net, const StepRouting& routing) {
  const int W = cfg.run.ranks;
  if (net.cluster().world_size() != W)
    throw std::invalid_argument("the cluster " + net.cluster().spec().name + " has " +
                                std::to_string(net.cluster().world_size()) + " devices; the config runs " +
                                std::to_string(W) + " ranks (run.ranks)");
  StepSimulation out;
  out.graphs.reserve((size_t)W);
  for (int r = 0; r < W; ++r) out.graphs.push_back(build_step_graph(cfg, r, routing));
  std::vector<const TaskGraph*> ptrs;
  for (const TaskGraph& g : out.graphs) ptrs.push_back(&g);
  out.result = simulate_graphs(ptrs, net);
  return out;
}

std::vector<BlockSplit> block_splits(const Config& cfg, const StepSimulation& step) {
  const int W = cfg.run.ranks;
  const int nodes = cfg.cluster.nodes;
  const int per_node = cfg.cluster.devices_per_node > 0 ? cfg.cluster.devices_per_node : W / nodes;
  const std::map<int, std::string> names = block_strategies(cfg, nodes, per_node);
  std::vector<BlockSplit> out;
  for (int l : cfg.moe.moe_layers) {
    BlockSplit b;
    b.block = l;
    b.strategy = names.count(l) ? names.at(l) : cfg.strategy.name;
    int holders = 0;  // ranks whose stage holds the block
    for (int r = 0; r < W; ++r) {
      const TaskGraph& g = step.graphs[(size_t)r];
      const auto& times = step.result.tasks[(size_t)r];
      bool holds = false;
      // Each pass of the block (per micro-batch), and its expert all-reduce, is one run of
      // consecutive tasks of the graph.
      for (int i = 0; i < (int)g.size();) {
        if (!block_task(g.task(i), l)) {
          ++i;
          continue;
        }
        holds = true;
        double first = times[(size_t)i].start, last = times[(size_t)i].end, compute = 0;
        std::vector<Interval> comm, busy;
        for (; i < (int)g.size() && block_task(g.task(i), l); ++i) {
          const GraphTask& t = g.task(i);
          const SimulatedTask& s = times[(size_t)i];
          first = std::min(first, s.start);
          last = std::max(last, s.end);
          if (t.category == TaskCategory::comm) {
            comm.push_back({s.start, s.end});
          } else {
            busy.push_back({s.start, s.end});
            if (t.role == StreamRole::compute) compute += s.end - s.start;
          }
        }
        std::vector<Interval> all = comm;
        all.insert(all.end(), busy.begin(), busy.end());
        const double exposed = union_length(all) - union_length(busy);
        b.compute_s += compute;
        b.comm_s += exposed;
        b.idle_s += std::max(0.0, (last - first) - compute - exposed);
      }
      holders += holds;
    }
    if (holders > 0) {
      b.compute_s /= holders;
      b.comm_s /= holders;
      b.idle_s /= holders;
    }
    out.push_back(b);
  }
  return out;
}

double exposed_comm_seconds(const StepSimulation& sim) {
  double total = 0;
  for (size_t r = 0; r < sim.graphs.size(); ++r) {
    std::vector<Interval> comm, busy;
    const TaskGraph& g = sim.graphs[r];
    for (int i = 0; i < (int)g.size(); ++i) {
      const SimulatedTask& s = sim.result.tasks[r][(size_t)i];
      const GraphTask& t = g.task(i);
      if (t.category == TaskCategory::comm) comm.push_back({s.start, s.end});
      else if (t.role == StreamRole::compute) busy.push_back({s.start, s.end});
    }
    std::vector<Interval> all = comm;
    all.insert(all.end(), busy.begin(), busy.end());
    total += union_length(all) - union_length(busy);
  }
  return sim.graphs.empty() ? 0.0 : total / (double)sim.graphs.size();
}

}  // namespace moebench
