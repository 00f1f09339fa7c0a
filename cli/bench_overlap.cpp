// mpirun -np N moebench bench overlap CONFIG [--set key=value]... [-n ITERS] [-w WARMUP]
// How much of a MoE block's communication its schedule hides. The config's first MoE block
// (its hidden size, FFN width, experts and top-k; N = batch / ranks x seq_len tokens per rank,
// synthetic routing from moe.routing, uniform when learned) runs forward + backward as a task
// graph on the launched ranks (the whole world is the EP group) in each case:
//   serial     every task on one stream, in the schedule's order;
//   scheduled  each task on its role's stream (overlap where the graph allows it);
//   compute / comm   the summed spans of the serial run's compute (and copy) tasks and of
//              its comm tasks: each of them ran alone there.
//   overlap = (serial - scheduled) / (serial - max(compute, comm)): 1 when the shorter of
//              the two is completely hidden, 0 when nothing is.
// Times are medians over the iterations of the slowest rank. The cases: expert_centric with
// overlap degrees 1, 2, 4, hier_a2a with 1 and 2, data_centric with the config's credits (its
// pulls overlap the computes of the experts pulled before them).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench.h"
#include "moebench/config/config_loader.h"
#include "moebench/config/usage_error.h"
#include "moebench/dist/mpi_communicator.h"
#include "moebench/dist/topology.h"
#include "moebench/moe/moe_layer.h"
#include "moebench/moe/synthetic_routing.h"
#include "moebench/runtime/executor.h"
#include "moebench/strategies/registry.h"
#include "moebench/tensor/rng.h"

namespace moebench::cli {
namespace {

struct OverlapOptions {
  std::string config;
  std::vector<std::string> sets;
  int iters = 10, warmup = 2;
};

struct Case {
  std::string strategy;
  int degree = 1;
};

struct Times {
  double serial = 0, scheduled = 0, compute = 0, comm = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

std::vector<float> random_values(size_t n, uint64_t key, float scale) {
  Rng rng = Rng::keyed({key, 0x0b1aull});
  std::vector<float> v(n);
  for (float& x : v) x = rng.normal() * scale;
  return v;
}

Times run_case(const Case& c, const Config& cfg, Communicator& world, const Topology& topo, const OverlapOptions& o) {
  const int P = world.size(), me = world.rank();
  const int block = cfg.moe.moe_layers.front(), E = cfg.moe.experts.front();
  const int C = cfg.model.hidden, F = cfg.model.ffn_mult * C, K = cfg.moe.top_k;
  const int N = cfg.train.batch_size / P * cfg.model.seq_len;
  const size_t ef = 2 * (size_t)F * C + F + C;
  const int L = E / P;
  std::vector<float> w = random_values((size_t)L * ef, 50 + me, 0.02f), g(w.size(), 0.0f);
  std::vector<float> x = random_values((size_t)N * C, 100 + me, 1.0f), router = random_values((size_t)E * C, 7, 0.02f);
  std::vector<float> dout = random_values((size_t)N * C, 300 + me, 1.0f);
  RoutingSpec spec = parse_routing(cfg.moe.routing);
  if (spec.kind == RoutingSpec::Kind::learned) spec = parse_routing("uniform");
  std::vector<int> forced((size_t)N * K);
  synthetic_expert_choice(forced.data(), spec, N, K, E, cfg.run.seed, 1, block, (long)me * N);
  Executor ex(me);
  MoeContext ctx;
  ctx.ep = &world;
  ctx.topology = &topo;
  ctx.executor = &ex;
  ctx.layer = block;
  ctx.experts = E;
  ctx.C = C;
  ctx.F = F;
  ctx.first_local = me * L;
  for (int j = 0; j < L; ++j) {
    float* p = w.data() + j * ef;
    float* q = g.data() + j * ef;
    ctx.local.push_back({p, p + (size_t)F * C, p + (size_t)F * C + F, p + 2 * (size_t)F * C + F});
    ctx.local_grads.push_back({q, q + (size_t)F * C, q + (size_t)F * C + F, q + 2 * (size_t)F * C + F});
  }
  MoeLayer layer;
  StrategyConfig options = cfg.strategy;
  options.expert_centric.overlap_degree = options.hier_a2a.overlap_degree = c.degree;
  layer.set_strategy(make_strategy(c.strategy, options), ctx);
  const MoeLayerShape shape{N, C, F, E, K, 0.0f, true};
  std::vector<float> out((size_t)N * C), dx((size_t)N * C), drouter((size_t)E * C);
  auto pass = [&] {
    world.barrier();
    const double t0 = ex.now();
    layer.begin_iteration();
    layer.forward(out.data(), x.data(), router.data(), {}, shape, forced.data());
    layer.backward(dx.data(), drouter.data(), {}, dout.data(), 0.0f, x.data(), router.data(), {});
    double t = ex.now() - t0;
    world.all_reduce(&t, 1, DType::f64, ReduceOp::max);
    return t;
  };
  std::vector<double> serial, scheduled, compute, comm;
  for (int i = 0; i < o.warmup + o.iters; ++i) {
    ex.set_serial(true);
    ex.take_spans();
    const double ts = pass();
    double sums[2] = {0, 0};  // compute (and copy), comm: each ran alone in the serial run
    for (const Span& s : ex.take_spans()) sums[s.category == TaskCategory::comm ? 1 : 0] += s.end - s.start;
    world.all_reduce(sums, 2, DType::f64, ReduceOp::max);
    ex.set_serial(false);
    const double tp = pass();
    if (i < o.warmup) continue;
    serial.push_back(ts);
    scheduled.push_back(tp);
    compute.push_back(sums[0]);
    comm.push_back(sums[1]);
  }
  return {median(serial), median(scheduled), median(compute), median(comm)};
}

int bench_overlap(const OverlapOptions& o) {
  MpiRuntime mpi;
  std::unique_ptr<MpiCommunicator> world = MpiCommunicator::world();
  std::vector<std::string> sets = o.sets;
  sets.push_back("run.ranks=" + std::to_string(world->size()));
  const Config cfg = load_config(o.config, sets);
  if (cfg.moe.moe_layers.empty()) throw UsageError("bench overlap: the config has no MoE block (moe.moe_layers)");
  const int nodes = cfg.cluster.nodes;
  const Topology topo = Topology::virtual_blocks(nodes, world->size() / nodes);
  const std::vector<Case> cases = {{"expert_centric", 1}, {"expert_centric", 2}, {"expert_centric", 4},
                                   {"hier_a2a", 1},       {"hier_a2a", 2},       {"data_centric", 1}};
  const bool main = world->rank() == 0;
  if (main) {
    std::printf("# overlap of one MoE block (forward + backward): %s, %d rank(s) on %d virtual node(s), block %d: "
                "%d experts, hidden %d, top-%d, %d tokens/rank; median of %d iterations, slowest rank\n",
                o.config.c_str(), world->size(), nodes, cfg.moe.moe_layers.front(), cfg.moe.experts.front(),
                cfg.model.hidden, cfg.moe.top_k, cfg.train.batch_size / world->size() * cfg.model.seq_len, o.iters);
    std::printf("%-20s %11s %11s %11s %11s %9s\n", "case", "serial_ms", "sched_ms", "compute_ms", "comm_ms",
                "overlap");
  }
  for (const Case& c : cases) {
    if (c.strategy == "hier_a2a" && nodes < 2) continue;
    const Times t = run_case(c, cfg, *world, topo, o);
    const double ideal = t.serial - std::max(t.compute, t.comm);
    if (main) {
      const std::string name = c.strategy + (c.strategy == "data_centric" ? "" : " D=" + std::to_string(c.degree));
      std::printf("%-20s %11.3f %11.3f %11.3f %11.3f %9.2f\n", name.c_str(), t.serial * 1e3, t.scheduled * 1e3,
                  t.compute * 1e3, t.comm * 1e3, ideal > 0 ? (t.serial - t.scheduled) / ideal : 0.0);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace

void add_bench_overlap(CLI::App& bench, Action& action) {
  auto* cmd = bench.add_subcommand("overlap", "Achieved comm/compute overlap of a MoE block's schedule (under mpirun)");
  auto o = std::make_shared<OverlapOptions>();
  cmd->add_option("config", o->config, "TOML config file")->required();
  cmd->add_option("--set", o->sets, "Override a key (repeatable)");
  cmd->add_option("-n,--iters", o->iters, "Timed iterations per case")->check(positive());
  cmd->add_option("-w,--warmup", o->warmup, "Untimed iterations per case")->check(CLI::NonNegativeNumber);
  cmd->callback([&action, o] { action = [o] { return bench_overlap(*o); }; });
}

}  // namespace moebench::cli
