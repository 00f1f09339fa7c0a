// moebench bench simulate [--ranks 8,64,...] [--layers 32] [--experts 64] [--cluster FILE]:
// how long the simulator takes for one training iteration, by rank count. The model: a GPT of
// `layers` MoE blocks (hidden 1024, 16 heads, FFN 4x, sequence 512, 4 sequences per rank,
// top-2 of `experts` experts, uniform synthetic routing), expert_centric with EP groups of
// min(experts, ranks) ranks and data parallelism across the groups, on nodes of the cluster
// file's node type (default: the Janus A100 nodes) with as many nodes as the ranks need.
// Times are split into routing (choosing every token's experts), graph building (every rank's
// step graph by the strategies' builders) and replay (perf/simulator.h), on one core.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>

#include "bench.h"
#include "moebench/config/cluster_file.h"
#include "moebench/config/config_loader.h"
#include "moebench/config/usage_error.h"
#include "moebench/perf/cluster_network.h"
#include "moebench/plan/step_simulation.h"

namespace moebench::cli {
namespace {

struct Args {
  std::vector<int> ranks = {8, 64, 256, 1024};
  int layers = 32, experts = 64;
  std::string cluster;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;
}

Config bench_config(const Args& a, int ranks, const ClusterConfig& node) {
  const int per_node = node.devices_per_node > 0 ? node.devices_per_node : 8;
  if (ranks % per_node != 0)
    throw UsageError("bench simulate: " + std::to_string(ranks) + " ranks are not whole nodes of " +
                     std::to_string(per_node) + " devices");
  std::ostringstream moe_layers;
  for (int l = 0; l < a.layers; ++l) moe_layers << (l ? ", " : "") << l;
  std::ostringstream t;
  t << "[run]\nname = \"bench-simulate\"\nranks = " << ranks << "\n"
    << "[parallel]\nep = " << std::min(a.experts, ranks) << "\n"
    << "[strategy]\nname = \"expert_centric\"\n"
    << "[model]\nvocab_size = 32000\nseq_len = 512\nhidden = 1024\nlayers = " << a.layers
    << "\nheads = 16\nffn_mult = 4\n"
    << "[moe]\nmoe_layers = [" << moe_layers.str() << "]\nexperts = " << a.experts << "\ntop_k = 2\nrouting = \"uniform\"\n"
    << "[train]\nbatch_size = " << 4 * ranks << "\n";
  Config c = parse_config(t.str(), "bench-simulate");
  c.cluster = node;
  c.cluster.devices_per_node = per_node;
  c.cluster.nodes = ranks / per_node;
  return c;
}

int bench_simulate_main(const Args& a) {
  ClusterConfig node = a.cluster.empty() ? ClusterConfig{} : load_cluster_file(a.cluster);
  if (a.cluster.empty()) {  // the Janus testbed's node (sample_configs/clusters/janus.toml)
    node.name = "janus-nodes";
    node.devices_per_node = 8;
    node.device_tflops = 312.0;
    node.intra_bw_gbs = 300.0;
    node.intra_latency_us = 2.0;
    node.inter_bw_gbs = 25.0;
    node.devices_per_nic = 2;
    node.inter_latency_us = 5.0;
  }
  std::printf("# bench simulate: one iteration of a %d-MoE-block GPT (hidden 1024, top-2 of %d experts, "
              "expert_centric, uniform routing) on %s nodes; times measured on this machine, step times predicted\n",
              a.layers, a.experts, node.name.c_str());
  std::printf("%7s %6s %10s %11s %10s %10s %10s %10s %14s %10s\n", "ranks", "ep", "tasks", "transfers", "routing s",
              "build s", "replay s", "total s", "predicted ms", "RSS MiB");
  for (int W : a.ranks) {
    const Config cfg = bench_config(a, W, node);
    const ClusterNetwork net(cluster_model(cfg));
    const auto t0 = std::chrono::steady_clock::now();
    const StepRouting routing = synthetic_step_routing(cfg, 1);
    const double routing_s = seconds_since(t0);
    const auto t1 = std::chrono::steady_clock::now();
    StepSimulation sim;
    sim.graphs.reserve((size_t)W);
    for (int r = 0; r < W; ++r) sim.graphs.push_back(build_step_graph(cfg, r, routing));
    const double build_s = seconds_since(t1);
    std::vector<const TaskGraph*> ptrs;
    size_t tasks = 0;
    for (const TaskGraph& g : sim.graphs) {
      ptrs.push_back(&g);
      tasks += g.size();
    }
    const auto t2 = std::chrono::steady_clock::now();
    sim.result = simulate_graphs(ptrs, net);
    const double replay_s = seconds_since(t2);
    std::printf("%7d %6d %10zu %11llu %10.3f %10.3f %10.3f %10.3f %14.3f %10.0f\n", W, cfg.parallel.ep, tasks,
                (unsigned long long)sim.result.transfers, routing_s, build_s, replay_s, routing_s + build_s + replay_s,
                sim.result.makespan * 1e3, peak_rss_mib());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

void add_bench_simulate(CLI::App& bench, Action& action) {
  auto* cmd = bench.add_subcommand("simulate", "Time the simulator on one iteration, by rank count (8 ... 4096)");
  auto a = std::make_shared<Args>();
  cmd->add_option("--ranks", a->ranks, "Rank counts, e.g. --ranks 8,64,1024")->delimiter(',')->transform(positive());
  cmd->add_option("--layers", a->layers, "MoE blocks")->transform(positive());
  cmd->add_option("--experts", a->experts, "Experts per MoE block")->transform(positive());
  cmd->add_option("--cluster", a->cluster, "Cluster file whose node type is repeated (default: Janus's A100 nodes)");
  cmd->callback([&action, a] { action = [a] { return bench_simulate_main(*a); }; });
}

}  // namespace moebench::cli
