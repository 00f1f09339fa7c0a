// moebench bench overlap CONFIG [--ranks N] [--set key=value]... [-n ITERS] [-w WARMUP]
// Outside a launcher it starts N ranks (default the config's run.ranks) through mpirun itself, as
// `moebench run` does (bench_ranks.h); under mpirun -np N / srun it measures the launched world.
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
//   of_bound = max(compute, comm) / scheduled: the speedup serial / scheduled as a fraction of
//              the bound serial / max(compute, comm), FasterMoE Fig. 12's measure ("reaches up
//              to 99% of the theoretical speedup"); 1 at the bound.
// Times are medians over the iterations of the slowest rank. The cases: expert_centric with
// overlap degrees 1, 2, 4, hier_a2a with 1 and 2, data_centric with the config's credits (its
// pulls overlap the computes of the experts pulled before them), fastermoe's smart schedule
// with a group per node (2 nodes or more) and with groups of one rank (FasterMoE Fig. 12: its
// speedup against the bound (comm + compute) / max(comm, compute) is serial / sched against
// serial / max(compute, comm); overlap = 1 reaches the bound). With parallel.tp = t > 1 the
// world is t-rank TP groups (consecutive ranks, the same tokens) and EP groups across them, and
// the cases are monta's levels: baseline, O1, O2 and O3 with [strategy.monta] chunks (4 when
// "auto"), where O2 / O3 also overlap chunk j's AllGather (and copy) with chunk j+1's AllToAll:
// communication with communication, so their overlap column is "-" (compare sched_ms with
// serial_ms). [emulate] paces every message over the cluster's links, as in a run.
// run.device = "cuda": each rank's block on its GPU as in a GPU run (train/device.h: the
// arrays in GPU memory, the tasks on the StreamExecutor's streams — serial: all on the compute
// stream — and the rows over NCCL data communicators, data_centric's windows over CUDA IPC);
// the times then include a device synchronisation at the end of each pass. Not with [emulate]
// (it paces the MPI messages).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench.h"
#include "bench_ranks.h"
#include "moebench/config/config_loader.h"
#include "moebench/config/usage_error.h"
#include "moebench/dist/mpi_communicator.h"
#include "moebench/dist/parallel_layout.h"
#include "moebench/dist/topology.h"
#include "moebench/moe/moe_layer.h"
#include "moebench/moe/synthetic_routing.h"
#include "moebench/model/cpu_backend.h"
#include "moebench/moe/moe_rows.h"
#include "moebench/runtime/thread_executor.h"
#include "moebench/strategies/registry.h"
#include "moebench/tensor/device_array.h"
#include "moebench/tensor/rng.h"
#include "moebench/train/device.h"
#include "moebench/train/emulation.h"

namespace moebench::cli {
namespace {

struct OverlapOptions {
  std::string config;
  std::vector<std::string> sets;
  int iters = 10, warmup = 2;
  int ranks = 0;  // 0: the config's run.ranks
};

// One strategy's variant (StrategyDescriptor::overlap_variants).
struct Case {
  std::string strategy;
  BenchVariant variant;
};

// The groups of the run: the whole world as the EP group, or with tp > 1 TP groups of
// consecutive ranks and EP groups of the ranks at one TP index.
struct Groups {
  Communicator* ep = nullptr;
  std::unique_ptr<Communicator> ep_owned, tp_group;
  std::shared_ptr<Communicator> tp;  // the TP group's dup the comm workers use
  int tp_size = 1, tp_index = 0, data_index = 0;  // data_index: the TP group (its tokens)
};

struct Times {
  double serial = 0, scheduled = 0, compute = 0, comm = 0;
};

// Where the block runs: the host (no runtime: a ThreadExecutor per case, host arrays), or the
// rank's GPU (run.device = "cuda") with the EP (and TP) groups' data communicators per comm role.
struct BlockDevice {
  std::unique_ptr<DeviceRuntime> rt;
  std::shared_ptr<EpStreams> ep_rows, tp_rows;
};

std::shared_ptr<EpStreams> data_streams(const DeviceRuntime& rt, Communicator& group) {
  auto s = std::make_shared<EpStreams>();
  s->intra = rt.data_communicator(group);
  s->inter = rt.data_communicator(group);
  return s;
}

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

Times run_case(const Case& c, const Config& cfg, Communicator& world, Groups& groups, const Topology& topo,
               const OverlapOptions& o, BlockDevice& dev) {
  Communicator& ep = *groups.ep;
  const int P = ep.size(), me = ep.rank(), d = groups.data_index;
  const int block = cfg.moe.moe_layers.front(), E = cfg.moe.experts.front();
  const int C = cfg.model.hidden, F = cfg.model.ffn_mult * C, K = cfg.moe.top_k;
  const int N = cfg.train.batch_size / (world.size() / groups.tp_size) * cfg.model.seq_len;
  const size_t ef = 2 * (size_t)F * C + F + C;
  const int L = E / P;
  // The tokens (and their gradients) of a TP group are the same on its ranks.
  Backend& be = dev.rt ? dev.rt->backend() : cpu_backend();
  auto array = [&be](const std::vector<float>& host, const char* what) {
    DeviceArray<float> a(be, what);
    a.assign(host.data(), host.size());
    return a;
  };
  DeviceArray<float> w = array(random_values((size_t)L * ef, 50 + world.rank(), 0.02f), "the experts"),
                     g = array(std::vector<float>((size_t)L * ef, 0.0f), "the experts' gradients"),
                     x = array(random_values((size_t)N * C, 100 + d, 1.0f), "the block's input"),
                     router = array(random_values((size_t)E * C, 7, 0.02f), "the router"),
                     dout = array(random_values((size_t)N * C, 300 + d, 1.0f), "the output's gradient"),
                     out(be, "the block's output"), dx(be, "the input's gradient"), drouter(be, "the router's gradient");
  RoutingSpec spec = cfg.moe.routing;
  if (spec.kind == RoutingSpec::Kind::learned) spec.kind = RoutingSpec::Kind::uniform;
  std::vector<int> forced((size_t)N * K);
  synthetic_expert_choice(forced.data(), spec, N, K, E, cfg.run.seed, 1, block, (long)d * N);
  std::unique_ptr<ThreadExecutor> threads;
  if (!dev.rt) threads = std::make_unique<ThreadExecutor>(world.rank());
  Executor& ex = dev.rt ? *dev.rt->executor() : *threads;
  MoeContext ctx;
  ctx.ep = &ep;
  ctx.tp = groups.tp;
  ctx.topology = &topo;
  ctx.executor = &ex;
  ctx.layer = block;
  ctx.experts = E;
  ctx.C = C;
  ctx.F = F;
  ctx.first_local = me * L;
  if (dev.rt) {
    ctx.rows_streams = dev.ep_rows;
    ctx.tp_rows = dev.tp_rows;
    ctx.rows_group = [rt = dev.rt.get()](Communicator& group) { return rt->data_communicator(group); };
  }
  for (int j = 0; j < L; ++j) {
    float* p = w.data() + j * ef;
    float* q = g.data() + j * ef;
    ctx.local.push_back({p, p + (size_t)F * C, p + (size_t)F * C + F, p + 2 * (size_t)F * C + F});
    ctx.local_grads.push_back({q, q + (size_t)F * C, q + (size_t)F * C + F, q + 2 * (size_t)F * C + F});
  }
  ctx.sync_group();
  MoeLayer layer(be.make_moe_rows());
  StrategyConfig options = cfg.strategy;
  c.variant.tweak(options);
  std::unique_ptr<MoeStrategy> strategy = make_strategy(c.strategy, options);
  if (strategy->uses_windows()) world.enable_windows();  // collective: every rank runs every case
  layer.set_strategy(std::move(strategy), ctx);
  const MoeLayerShape shape{N, C, F, E, K, 0.0f, true};
  out.ensure((size_t)N * C);
  dx.ensure((size_t)N * C);
  drouter.ensure((size_t)E * C);
  auto pass = [&] {
    world.barrier();
    const double t0 = ex.now();
    layer.begin_iteration();
    layer.forward(out.data(), x.data(), router.data(), {}, shape, forced.data());
    layer.backward(dx.data(), drouter.data(), {}, dout.data(), 0.0f, x.data(), router.data(), {});
    ex.synchronize();  // a device's work is done (the host's already is)
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
  const Config asked = load_config(o.config, o.sets);
  check_run_device(asked);  // once, before any rank starts
  const int ranks = o.ranks > 0 ? o.ranks : asked.run.ranks;
  if (const std::optional<int> rc = launch_bench_ranks("bench overlap", ranks, o.ranks > 0)) return *rc;
  MpiRuntime mpi;
  std::unique_ptr<MpiCommunicator> world = MpiCommunicator::world();
  std::vector<std::string> sets = o.sets;
  sets.push_back("run.ranks=" + std::to_string(world->size()));
  const Config cfg = load_config(o.config, sets);
  if (cfg.moe.moe_layers.empty()) throw UsageError("bench overlap: the config has no MoE block (moe.moe_layers)");
  const int nodes = cfg.cluster.nodes;
  const Topology topo = Topology::virtual_blocks(nodes, world->size() / nodes);
  // [emulate]: every message paced over the cluster's links (train/emulation.h), as in a run.
  std::unique_ptr<Emulation> emu;
  std::unique_ptr<Communicator> paced;
  if (!cfg.emulate.cluster.empty()) {
    emu = std::make_unique<Emulation>(resolve_emulation(cfg, world.get()));
    if (world->size() > 1) paced = emulated_world(*emu, *world);
  }
  Communicator& all = paced ? *paced : *world;
  BlockDevice dev;
  if (cfg.run.device == Device::cuda) {
    if (emu) throw UsageError("bench overlap: [emulate] paces MPI messages; not with run.device = \"cuda\"");
    dev.rt = std::make_unique<DeviceRuntime>(cfg, host_local_rank(gather_hostnames(*world), world->rank()));
  }
  Groups groups;
  groups.ep = &all;
  groups.tp_size = std::max(1, cfg.parallel.tp);
  groups.data_index = world->rank();  // without TP every rank has its own tokens
  if (groups.tp_size > 1) {
    // One stage of dp x tp ranks, the experts over the whole data-parallel group.
    const ParallelLayout layout(ParallelSizes{.world = world->size(), .tp = groups.tp_size});
    const int r = world->rank();
    const RankCoords at = layout.coords(r);
    groups.tp_index = at.tp;
    groups.data_index = at.dp;
    groups.tp_group = all.split(layout.tp_group(r).front(), at.tp);
    groups.tp = std::shared_ptr<Communicator>(groups.tp_group->dup());
    groups.ep_owned = all.split(layout.ep_group(r).front(), at.ep);
    groups.ep = groups.ep_owned.get();
  }
  if (dev.rt) {  // the rows' data communicators, shared by the cases as by a run's blocks
    dev.ep_rows = data_streams(*dev.rt, *groups.ep);
    if (groups.tp_group) dev.tp_rows = data_streams(*dev.rt, *groups.tp_group);
  }
  // Every strategy's variants for this layout, in registration order.
  std::vector<Case> cases;
  for (const StrategyDescriptor* d : strategy_descriptors())
    if (d->overlap_variants)
      for (BenchVariant& v : d->overlap_variants(cfg, groups.tp_size, nodes)) cases.push_back({d->spec.name, std::move(v)});
  const bool main = world->rank() == 0;
  if (main) {
    std::printf("# overlap of one MoE block (forward + backward): %s, %d rank(s) on %d virtual node(s), block %d: "
                "%d experts, hidden %d, top-%d, %d tokens/rank; median of %d iterations, slowest rank\n",
                o.config.c_str(), world->size(), nodes, cfg.moe.moe_layers.front(), cfg.moe.experts.front(),
                cfg.model.hidden, cfg.moe.top_k, cfg.train.batch_size / (world->size() / groups.tp_size) * cfg.model.seq_len,
                o.iters);
    if (emu) std::printf("# %s\n", emu->describe().c_str());
    if (groups.tp_size > 1)
      std::printf("# tp = %d: EP groups of %d ranks across the TP groups (every rank of a TP group holds its tokens)\n",
                  groups.tp_size, groups.ep->size());
    std::printf("%-20s %11s %11s %11s %11s %9s %9s\n", "case", "serial_ms", "sched_ms", "compute_ms", "comm_ms",
                "overlap", "of_bound");
  }
  for (const Case& c : cases) {
    const Times t = run_case(c, cfg, all, groups, topo, o, dev);
    const double ideal = t.serial - std::max(t.compute, t.comm);
    if (main) {
      const std::string& name = c.variant.label;
      // A variant that overlaps communication with communication (monta's chunks: AllGather
      // under AllToAll) is not described by the compute / comm bound: there sched_ms against
      // serial_ms is the measure.
      char overlap[16] = "-", of_bound[16] = "-";
      if (c.variant.bounded) {
        std::snprintf(overlap, sizeof overlap, "%.2f", ideal > 0 ? (t.serial - t.scheduled) / ideal : 0.0);
        std::snprintf(of_bound, sizeof of_bound, "%.2f", std::max(t.compute, t.comm) / t.scheduled);
      }
      std::printf("%-20s %11.3f %11.3f %11.3f %11.3f %9s %9s\n", name.c_str(), t.serial * 1e3, t.scheduled * 1e3,
                  t.compute * 1e3, t.comm * 1e3, overlap, of_bound);
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
  cmd->add_option("--ranks", o->ranks, "Ranks started through mpirun outside a launcher (default: run.ranks)")
      ->transform(positive());
  cmd->add_option("-n,--iters", o->iters, "Timed iterations per case")->transform(positive());
  cmd->add_option("-w,--warmup", o->warmup, "Untimed iterations per case")->transform(non_negative());
  cmd->callback([&action, o] { action = [o] { return bench_overlap(*o); }; });
}

}  // namespace moebench::cli
