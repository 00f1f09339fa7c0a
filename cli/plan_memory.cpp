// plan --memory (plan_memory.h): tables and verdicts of the memory model.
#include "plan_memory.h"

#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "launch_limits.h"
#include "moebench/config/config_layout.h"
#include "moebench/config/config_loader.h"
#include "moebench/config/strategy_spec.h"
#include "moebench/config/usage_error.h"
#include "moebench/perf/memory_model.h"
#include "moebench/perf/moesys_storage.h"
#include "number_text.h"

namespace moebench::cli {
namespace {

constexpr ZeroStage kZero[] = {ZeroStage::baseline, ZeroStage::zero1, ZeroStage::zero2, ZeroStage::zero3};
constexpr ActivationScheme kActs[] = {ActivationScheme::pp_tp_ep, ActivationScheme::pp_tp_ep_sp,
                                      ActivationScheme::selective_recompute, ActivationScheme::full_recompute};
// Column heads of the per-stage activation table (activation_scheme_name in full elsewhere).
constexpr const char* kActColumns[] = {"PP+TP+EP", "+SP", "+SP+selective", "+SP+full"};

// The device memory a verdict compares with, and where it comes from.
struct Device {
  double bytes = 0;  // 0: unknown, no verdict
  std::string source;
};

Device device_of(const Config& cfg, const MemoryModel& m) {
  if (m.device_memory > 0)
    return {m.device_memory, "cluster " + cfg.cluster.name + ": cluster.device_memory_gib"};
  const double host = (double)available_memory_bytes();
  const int ranks = cfg.run.ranks;
  if (host <= 0) return {0, "cluster.device_memory_gib is not set and this host's available memory is unknown"};
  return {host / ranks, "cluster.device_memory_gib is not set: this host's available memory (" + bytes_text(host) +
                            ") shared by " + std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks")};
}

std::string verdict(double need, int stage, const Device& dev) {
  const std::string where = "stage " + std::to_string(stage) + ": ";
  if (dev.bytes <= 0) return "no verdict (device memory unknown): " + where + "needs " + bytes_text(need);
  if (need <= dev.bytes) return "fits (" + where + bytes_text(need) + " of " + bytes_text(dev.bytes) + ")";
  return "does not fit: " + where + "needs " + bytes_text(need) + ", device has " + bytes_text(dev.bytes);
}

nlohmann::json fp32_json(const TrainerMemory& f) {
  return {{"parameters", f.parameters}, {"weights", f.weights},       {"gradients", f.gradients},
          {"adam", f.adam},             {"activations", f.activations}, {"workspace", f.workspace},
          {"checkpoint", f.checkpoint}, {"data", f.data},               {"steady", f.steady()},
          {"peak", f.peak()}};
}

// MoESys eq. 1 for the config, or nullopt without MoE blocks (nothing is sparse).
std::optional<MoesysStorage> storage_of(const Config& cfg, std::optional<double> alpha) {
  if (cfg.moe.moe_layers.empty()) return std::nullopt;
  try {
    return moesys_storage(moesys_storage_input(cfg, alpha ? *alpha : default_alpha(cfg)));
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--memory: ") + e.what());
  }
}

constexpr StorageTier kTiers[] = {StorageTier::gpu, StorageTier::cpu, StorageTier::ssd};
// The cluster key each tier's M comes from.
const char* tier_key(StorageTier t) {
  return t == StorageTier::gpu ? "device_memory_gib" : t == StorageTier::cpu ? "host_memory_gib" : "ssd_gib";
}

nlohmann::json storage_json(const std::optional<MoesysStorage>& s) {
  if (!s) return nullptr;
  nlohmann::json j = {{"model", "moesys_eq1"},
                      {"D", s->in.dense},
                      {"S", s->in.sparse},
                      {"L", s->in.moe_layers},
                      {"alpha", s->in.alpha},
                      {"N", s->in.devices},
                      {"overflowing", s->overflowing()}};
  for (StorageTier t : kTiers)
    j["tiers"][storage_tier_name(t)] = {{"need_bytes", s->need[(int)t]},
                                        {"capacity_bytes", s->described(t) ? nlohmann::json(s->capacity[(int)t]) : nlohmann::json()},
                                        {"fits", s->described(t) ? nlohmann::json(s->fits(t)) : nlohmann::json()}};
  return j;
}

void print_storage(const Config& cfg, const std::optional<MoesysStorage>& s) {
  if (!s) {
    std::printf("\nMoESys eq. 1 (hierarchical storage): not applicable, the model has no MoE block\n");
    return;
  }
  std::printf("\nMoESys eq. 1 (hierarchical storage, predicted; totals over N devices): D = %s dense, S = %s sparse "
              "parameters, L = %d MoE layers, alpha = %g, N = %d\n",
              count_text(s->in.dense).c_str(), count_text(s->in.sparse).c_str(), s->in.moe_layers, s->in.alpha,
              s->in.devices);
  const char* formula[] = {"16 D + 4 alpha S / L", "16 alpha S", "12 S"};
  for (StorageTier t : kTiers) {
    std::string verdict;
    if (!s->described(t)) verdict = std::string("no verdict (cluster.") + tier_key(t) + " is not set)";
    else verdict = std::string(s->fits(t) ? "fits" : "OVERFLOWS") + " (M x N = " + bytes_text(s->capacity[(int)t]) +
                   ", cluster " + cfg.cluster.name + ": cluster." + tier_key(t) + ")";
    std::printf("  %-8s %-20s = %11s: %s\n", storage_tier_name(t), formula[(int)t], bytes_text(s->need[(int)t]).c_str(),
                verdict.c_str());
  }
  const std::string over = s->overflowing();
  std::printf("  %s\n", over.empty() ? "no described tier overflows" : ("overflowing: " + over).c_str());
}

int print_json(const std::string& path, const MemoryModel& m, const Device& dev,
               const std::optional<MoesysStorage>& storage) {
  nlohmann::json j;
  j["predicted"] = true;
  j["model"] = "monta_memory";
  j["note"] = "MoNTA eq. 1-2, Table 3 (mixed-precision Adam, ZeRO over the data-parallel group) and Table 4 "
              "(fp16 activations); fp32: moebench's CPU trainer. Bytes per device.";
  j["config"] = path;
  j["symbols"] = {{"b", m.b}, {"s", m.s}, {"h", m.h}, {"a", m.a}, {"l", m.l}, {"k", m.k},
                  {"d", m.d}, {"p", m.p}, {"t", m.t}, {"e", m.e}};
  j["expert_replicas"] = m.expert_replicas;
  j["microbatches"] = m.microbatches;
  j["schedule"] = choice_name(m.schedule);
  j["moe_blocks"] = m.moe_blocks;
  j["device_memory_bytes"] = dev.bytes;
  j["device_memory_source"] = dev.source;
  j["eq2_bytes"] = m.eq2_bytes;
  j["stages"] = nlohmann::json::array();
  for (const StageMemory& s : m.stages) {
    nlohmann::json sj = {{"stage", s.stage},         {"first_block", s.first_block}, {"end_block", s.end_block},
                         {"in_flight", s.in_flight}, {"p1", s.p1},                   {"p2", s.p2}};
    for (ZeroStage z : kZero)
      sj["weights"][zero_stage_name(z)] = {{"psi1", s.psi1[(int)z]}, {"psi2", s.psi2[(int)z]}, {"bytes", s.weights(z)}};
    for (ActivationScheme a : kActs) sj["activations"][activation_scheme_name(a)] = s.activations[(int)a];
    sj["fp32"] = fp32_json(s.fp32);
    j["stages"].push_back(sj);
  }
  auto fits = [&](double need) { return dev.bytes > 0 ? nlohmann::json(need <= dev.bytes) : nlohmann::json(); };
  j["combinations"] = nlohmann::json::array();
  for (ActivationScheme a : kActs)
    for (ZeroStage z : kZero) {
      const StageMemory& w = m.worst(z, a);
      j["combinations"].push_back({{"weights", zero_stage_name(z)}, {"activations", activation_scheme_name(a)},
                                   {"bytes", w.total(z, a)}, {"stage", w.stage}, {"fits", fits(w.total(z, a))}});
    }
  const StageMemory& f = m.worst_fp32();
  j["fp32"] = {{"bytes", f.fp32.peak()}, {"stage", f.stage}, {"fits", fits(f.fp32.peak())}};
  j["moesys_storage"] = storage_json(storage);
  std::cout << j.dump(2) << "\n";
  return 0;
}

}  // namespace

int memory_plan_main(const std::string& path, const std::vector<std::string>& sets, bool json,
                     std::optional<double> alpha) {
  const Config cfg = load_config(path, sets);
  MemoryModel m;
  try {
    m = memory_model(cfg);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--memory: ") + e.what());
  }
  const Device dev = device_of(cfg, m);
  const std::optional<MoesysStorage> storage = storage_of(cfg, alpha);
  if (json) return print_json(path, m, dev, storage);

  std::printf("Memory model of %s: bytes per device, every number PREDICTED (MoNTA eq. 1-2, Table 3: "
              "mixed-precision Adam, ZeRO over the data-parallel group; Table 4: fp16 activations)\n",
              path.c_str());
  std::printf("layout: %d ranks = pp %d x dp %d x tp %d; experts over %d ranks (%s), %d replica%s of each; "
              "%d micro-batch%s (%s)\n",
              cfg.run.ranks, m.p, m.d, m.t, m.e,
              expert_groups_of(cfg) == ExpertGroups::tensor_parallel ? "the TP group" : "the DP group", m.expert_replicas,
              m.expert_replicas == 1 ? "" : "s", m.microbatches, m.microbatches == 1 ? "" : "es", choice_name(m.schedule).c_str());
  std::string moe;
  for (int b : m.moe_blocks) moe += (moe.empty() ? "" : ", ") + std::to_string(b);
  std::printf("symbols: b = %d, s = %d, h = %d, a = %d, l = %d, k = %d (MoE blocks: %s), d = %d, p = %d, t = %d, "
              "e = %d\n",
              m.b, m.s, m.h, m.a, m.l, m.k, moe.empty() ? "none" : moe.c_str(), m.d, m.p, m.t, m.e);
  std::printf("device memory: %s (%s)\n", dev.bytes > 0 ? bytes_text(dev.bytes).c_str() : "unknown", dev.source.c_str());

  std::printf("\nparameters and weights per device (Table 3: psi_1 + psi_2)\n");
  std::printf("%5s %7s %9s %14s %14s", "stage", "blocks", "in flight", "P1 (non-MoE)", "P2 (MoE)");
  for (ZeroStage z : kZero) std::printf(" %11s", zero_stage_name(z));
  std::printf("\n");
  for (const StageMemory& s : m.stages) {
    const std::string blocks = std::to_string(s.first_block) + "-" + std::to_string(s.end_block - 1);
    std::printf("%5d %7s %9d %14s %14s", s.stage, blocks.c_str(), s.in_flight, count_text(s.p1).c_str(),
                count_text(s.p2).c_str());
    for (ZeroStage z : kZero) std::printf(" %11s", bytes_text(s.weights(z)).c_str());
    std::printf("\n");
  }

  std::printf("\nactivations per device (Table 4: the stage's blocks x its micro-batches in flight; +SP: sequence "
              "parallel, selective / full: activation recomputation)\n");
  std::printf("%5s", "stage");
  for (const char* c : kActColumns) std::printf(" %14s", c);
  std::printf("\n");
  for (const StageMemory& s : m.stages) {
    std::printf("%5d", s.stage);
    for (ActivationScheme a : kActs) std::printf(" %14s", bytes_text(s.activations[(int)a]).c_str());
    std::printf("\n");
  }
  std::printf("without parallelism (eq. 2: all %d blocks, one micro-batch, one device): %s\n", m.l,
              bytes_text(m.eq2_bytes).c_str());

  std::printf("\ntotal per device (eq. 1: weights + activations, the largest stage)\n");
  std::printf("%32s", "");
  for (ZeroStage z : kZero) std::printf(" %11s", zero_stage_name(z));
  std::printf("\n");
  for (ActivationScheme a : kActs) {
    std::printf("%32s", activation_scheme_name(a));
    for (ZeroStage z : kZero) std::printf(" %11s", bytes_text(m.worst(z, a).total(z, a)).c_str());
    std::printf("\n");
  }
  std::printf("\nverdicts (predicted, against %s):\n", dev.bytes > 0 ? bytes_text(dev.bytes).c_str() : "an unknown device memory");
  for (ActivationScheme a : kActs)
    for (ZeroStage z : kZero) {
      const StageMemory& w = m.worst(z, a);
      std::printf("  %s + %s: %s\n", zero_stage_name(z), activation_scheme_name(a),
                  verdict(w.total(z, a), w.stage, dev).c_str());
    }

  std::printf("\nfp32 as moebench's CPU trainer runs it, per rank (predicted: fp32 weights, gradients, AdamW m and v, "
              "the activations it keeps, the corpus; checkpoint: rank 0 while it writes one)\n");
  std::printf("%5s %12s %11s %11s %11s %12s %11s %11s %11s %11s\n", "stage", "parameters", "weights", "gradients",
              "Adam m+v", "activations", "workspace", "data", "checkpoint", "peak");
  for (const StageMemory& s : m.stages) {
    const TrainerMemory& f = s.fp32;
    std::printf("%5d %12s %11s %11s %11s %12s %11s %11s %11s %11s\n", s.stage, count_text(f.parameters).c_str(),
                bytes_text(f.weights).c_str(), bytes_text(f.gradients).c_str(), bytes_text(f.adam).c_str(),
                bytes_text(f.activations).c_str(), bytes_text(f.workspace).c_str(), bytes_text(f.data).c_str(),
                bytes_text(f.checkpoint).c_str(), bytes_text(f.peak()).c_str());
  }
  const StageMemory& f = m.worst_fp32();
  std::printf("  fp32 trainer: %s\n", verdict(f.fp32.peak(), f.stage, dev).c_str());
  print_storage(cfg, storage);
  return 0;
}

}  // namespace moebench::cli
