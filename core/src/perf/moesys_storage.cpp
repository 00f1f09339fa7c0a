// MoESys eq. 1 (moesys_storage.h).
#include "moebench/perf/moesys_storage.h"

#include <algorithm>
#include <stdexcept>

#include "moebench/model/param_count.h"

namespace moebench {

const char* storage_tier_name(StorageTier t) {
  switch (t) {
    case StorageTier::gpu: return "GPU-Node";
    case StorageTier::cpu: return "CPU-Node";
    case StorageTier::ssd: return "SSD-Node";
  }
  return "?";
}

std::string MoesysStorage::overflowing() const {
  std::string out;
  for (int t = 0; t < kStorageTiers; ++t)
    if (!fits((StorageTier)t)) out += (out.empty() ? "" : ", ") + std::string(storage_tier_name((StorageTier)t));
  return out;
}

MoesysStorage moesys_storage(const MoesysStorageInput& in) {
  if (!(in.alpha >= 0.0 && in.alpha <= 1.0))
    throw std::invalid_argument("alpha (activation likelihood) must be in [0, 1], got " + std::to_string(in.alpha));
  if (in.moe_layers < 1) throw std::invalid_argument("eq. 1 needs at least one MoE layer (L >= 1)");
  if (in.devices < 1) throw std::invalid_argument("eq. 1 needs at least one device (N >= 1)");
  if (in.dense < 0 || in.sparse < 0 || in.gpu_bytes < 0 || in.cpu_bytes < 0 || in.ssd_bytes < 0)
    throw std::invalid_argument("eq. 1: parameter counts and memory sizes must be >= 0");
  MoesysStorage m;
  m.in = in;
  const double n = in.devices;
  m.need[(int)StorageTier::gpu] = 16 * in.dense + 4 * in.alpha * in.sparse / in.moe_layers;
  m.need[(int)StorageTier::cpu] = 16 * in.alpha * in.sparse;
  m.need[(int)StorageTier::ssd] = 12 * in.sparse;
  m.capacity[(int)StorageTier::gpu] = in.gpu_bytes * n;
  m.capacity[(int)StorageTier::cpu] = in.cpu_bytes * n;
  m.capacity[(int)StorageTier::ssd] = in.ssd_bytes * n;
  return m;
}

double default_alpha(const Config& cfg) {
  double alpha = 0;
  for (int e : cfg.moe.experts)
    if (e > 0) alpha = std::max(alpha, std::min(1.0, (double)cfg.moe.top_k / e));
  return cfg.moe.experts.empty() ? 1.0 : alpha;
}

MoesysStorageInput moesys_storage_input(const Config& cfg, double alpha) {
  const ParamCounts whole = rank_param_counts(cfg.model, cfg.moe, ExpertShard{}, TpShard{}, PipeStage{});
  MoesysStorageInput in;
  in.dense = whole.dense;
  in.sparse = whole.experts;
  in.moe_layers = (int)cfg.moe.moe_layers.size();
  if (in.moe_layers == 0 || in.sparse <= 0)
    throw std::invalid_argument("MoESys eq. 1 needs sparse parameters: the config has no MoE block (moe.moe_layers)");
  in.alpha = alpha;
  in.devices = cfg.run.ranks;
  constexpr double gib = 1024.0 * 1024.0 * 1024.0;
  in.gpu_bytes = cfg.cluster.device_memory_gib * gib;
  in.cpu_bytes = cfg.cluster.host_memory_gib * gib;
  in.ssd_bytes = cfg.cluster.ssd_gib * gib;
  return in;
}

}  // namespace moebench
