#pragma once
// MoESys's hierarchical-storage capacity model (moesys.txt §III-B1, eq. 1): with Adam, where do
// the dense and sparse (expert) parameter states of a model fit? Pure; every number PREDICTED.
//
// Symbols: D dense and S sparse (expert) parameters of the whole model, L MoE layers, alpha the
// likelihood a sparse parameter is activated during training (0..1), N devices, and per device
// M_GPU, M_CPU, M_SSD bytes of device memory, host memory and SSD space.
//   GPU-Node: 16 D + 4 alpha S / L <= M_GPU N   dense fp16 weight + grad, fp32 master, m, v
//                                               (2+2+4+4+4 bytes), and one MoE layer's active
//                                               sparse fp16 weights + grads (4 bytes each)
//   CPU-Node: 16 alpha S <= M_CPU N             the cache of frequently activated sparse states
//   SSD-Node: 12 S <= M_SSD N                   every sparse fp32 master, m, v (4+4+4 bytes)
// The sides are totals over the N devices (the paper's form); per-device values divide by N.
// For a config: D = every tensor but the experts (routers included), S = every expert of every
// MoE block (model/param_count.h, whole model), L = the MoE blocks, N = run.ranks, M_GPU =
// cluster.device_memory_gib, M_CPU = cluster.host_memory_gib, M_SSD = cluster.ssd_gib.
#include <string>

#include "moebench/config/config.h"

namespace moebench {

enum class StorageTier { gpu, cpu, ssd };
inline constexpr int kStorageTiers = 3;
const char* storage_tier_name(StorageTier t);  // "GPU-Node", "CPU-Node", "SSD-Node"

struct MoesysStorageInput {
  double dense = 0, sparse = 0;  // D, S: parameters
  int moe_layers = 1;            // L (>= 1)
  double alpha = 1.0;            // activation likelihood, [0, 1]
  int devices = 1;               // N
  double gpu_bytes = 0, cpu_bytes = 0, ssd_bytes = 0;  // M_GPU, M_CPU, M_SSD per device; 0 = not described
};

struct MoesysStorage {
  MoesysStorageInput in;
  double need[kStorageTiers] = {};      // left sides of eq. 1, bytes over all devices
  double capacity[kStorageTiers] = {};  // right sides: M x N; 0 when M is not described
  bool described(StorageTier t) const { return capacity[(int)t] > 0; }
  bool fits(StorageTier t) const { return !described(t) || need[(int)t] <= capacity[(int)t]; }
  // The tiers that overflow, "GPU-Node, SSD-Node", or "" when every described tier fits.
  std::string overflowing() const;
};

// Throws std::invalid_argument for alpha outside [0, 1], L < 1, N < 1 or a negative count or size.
MoesysStorage moesys_storage(const MoesysStorageInput& in);

// alpha when none is given: the largest top_k / experts over the MoE blocks (the share of a
// block's experts one token activates; balanced routing makes it every parameter's likelihood per
// token). 1 without MoE blocks.
double default_alpha(const Config& cfg);

// The input for a validated config: its whole model's D, S, L, N = run.ranks and the cluster's
// memories. Throws std::invalid_argument when the config has no MoE block (S = 0, L = 0).
MoesysStorageInput moesys_storage_input(const Config& cfg, double alpha);

}  // namespace moebench
