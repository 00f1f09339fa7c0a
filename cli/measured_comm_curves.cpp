#include "measured_comm_curves.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "moebench/config/config_layout.h"
#include "moebench/dist/mpi_communicator.h"
#include "moebench/store/comm_rate_record.h"
#include "moebench/strategies/strategy_descriptor.h"

namespace moebench::cli {

namespace {

// Whether a block strategy of cfg chooses from the curves (StrategyDescriptor::reads_comm_curves).
bool reads_curves(const Config& cfg) {
  for (const std::string& name : block_strategy_names(cfg.strategy))
    if (const StrategyDescriptor& d = strategy_descriptor(name); d.reads_comm_curves && d.reads_comm_curves(cfg)) return true;
  return false;
}

// Rank 0's (bytes, GB/s) points to every rank.
void share(std::vector<double>& xs, std::vector<double>& ys, Communicator& world) {
  int64_t n = (int64_t)xs.size();
  world.broadcast(&n, 1, DType::i64, 0);
  xs.resize((size_t)n);
  ys.resize((size_t)n);
  if (n == 0) return;
  world.broadcast(xs.data(), xs.size(), DType::f64, 0);
  world.broadcast(ys.data(), ys.size(), DType::f64, 0);
}

}  // namespace

void use_measured_comm_curves(Config& cfg, Communicator& world) {
  if (!reads_curves(cfg) || !cfg.emulate.cluster.empty()) return;
  ClusterConfig& k = cfg.cluster;
  const ParallelLayout layout = layout_of(cfg);
  const int tp = layout.tp(), ep = layout.ep();
  struct Op {
    const char* name;
    int ranks;
    std::vector<double>& xs;
    std::vector<double>& ys;
    const char* r;
  };
  for (Op op : {Op{"alltoall", ep, k.alltoall_busbw_bytes, k.alltoall_busbw_gbs, "r1"},
                Op{"allgather", tp, k.allgather_busbw_bytes, k.allgather_busbw_gbs, "r2"}}) {
    if (!op.xs.empty()) continue;  // the cluster's own curve (every rank loaded the same config)
    std::string note;
    if (world.rank() == 0) {
      std::optional<CommRate> rate;
      if (cfg.store.enabled && std::filesystem::exists(cfg.store.db))
        rate = latest_comm_rate(RunStore(cfg.store.db), MpiRuntime::hostname(), op.name, op.ranks);
      if (rate) {
        for (const auto& [bytes, gbs] : rate->busbw) op.xs.push_back(bytes), op.ys.push_back(gbs);
        note = std::string(op.r) + " from the measured " + op.name + " curve: " + rate->source;
        if (rate->ranks != op.ranks) note += " (the group has " + std::to_string(op.ranks) + ")";
      } else {
        note = std::string("no measured ") + op.name + " curve for this host" +
               (cfg.store.enabled ? " in " + cfg.store.db : std::string(" (store disabled)")) + ": " + op.r +
               " from the link latency model (measure it: mpirun -np " + std::to_string(op.ranks) +
               " moebench bench comm --op " + op.name + " -b 64K -e 256M -f 2 --db " + cfg.store.db + ")";
      }
      std::printf("monta: %s\n", note.c_str());
      std::fflush(stdout);
    }
    share(op.xs, op.ys, world);
  }
}

}  // namespace moebench::cli
