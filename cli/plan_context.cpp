// plan --context (plan_context.h): the longest sequence an EP group holds, and the expansion.
#include "plan_context.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <nlohmann/json.hpp>

#include "moebench/config/config_loader.h"
#include "moebench/config/usage_error.h"
#include "moebench/perf/memory_model.h"
#include "number_text.h"

namespace moebench::cli {
namespace {

constexpr ZeroStage kZero = ZeroStage::baseline;
constexpr ActivationScheme kActs = ActivationScheme::selective_recompute;

// eq. 1's largest per-device total with sequence length s, one sequence per micro-batch.
double need_at(Config cfg, long long s) {
  cfg.model.seq_len = (int)std::min<long long>(s, 1LL << 30);
  const MemoryModel probe = memory_model(cfg);
  cfg.train.batch_size = probe.d * std::max(1, cfg.parallel.microbatches);
  const MemoryModel m = memory_model(cfg);
  return m.worst(kZero, kActs).total(kZero, kActs);
}

std::string context_limit_text() {
  return "[1, " + std::to_string(kMaxContextTokens) + "] tokens (2^40)";
}

}  // namespace

CLI::Validator context_tokens() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(text.c_str(), &end, 0);  // as CLI11 reads integers
        if (text.empty() || end != text.c_str() + text.size()) return "";  // not an integer: CLI11 says so
        if (errno != ERANGE && v >= 1 && v <= kMaxContextTokens) return "";
        return "the context length " + text + " is outside " + context_limit_text();
      },
      "TOKENS");
}

int context_plan_main(const std::string& path, const std::vector<std::string>& sets, long long context, bool json) {
  if (context < 1 || context > kMaxContextTokens)
    throw UsageError("--context: the context length " + std::to_string(context) + " is outside " + context_limit_text());
  const Config cfg = load_config(path, sets);
  const MemoryModel base = memory_model(cfg);
  const double device = base.device_memory;
  if (!(device > 0))
    throw UsageError("--context needs the devices' memory: set cluster.device_memory_gib (in the config or the --cluster "
                     "file; cluster " + cfg.cluster.name + " has none)");
  if (need_at(cfg, 1) > device)
    throw UsageError("--context: the weights alone need " + bytes_text(need_at(cfg, 1)) + " per device, more than the " +
                     bytes_text(device) + " of cluster " + cfg.cluster.name + ": no sequence fits");
  long long lo = 1, hi = 1;  // need(lo) fits; grow hi until it does not (or 2^30)
  while (hi < (1LL << 30) && need_at(cfg, hi) <= device) lo = hi, hi *= 2;
  if (need_at(cfg, hi) <= device) lo = hi;
  while (hi - lo > 1) {
    const long long mid = lo + (hi - lo) / 2;
    (need_at(cfg, mid) <= device ? lo : hi) = mid;
  }
  const long long L = lo;
  const int ep = base.e, tp = base.t;
  const long long cp = 1 + (context - 1) / L;  // ceil(context / L)
  const int switch_nodes = cfg.cluster.nodes_per_switch > 0 ? cfg.cluster.nodes_per_switch : cfg.cluster.nodes;
  const bool horizontal = cp > 1 && cp < ep && (long long)ep * cp <= switch_nodes;
  const long long scale = cp == 1 ? ep : horizontal ? (long long)ep * cp : std::max<long long>(ep, cp);
  std::string how, why;
  if (cp == 1) {
    how = "no";
    why = "one EP group holds the whole context";
  } else if (horizontal) {
    how = "horizontal";
    why = "cp_world_size < ep_world_size and the switch network (" + std::to_string(switch_nodes) +
          " nodes) covers ep x cp = " + std::to_string(ep * cp) + ": CP orthogonal to EP";
  } else {
    how = "vertical";
    why = cp >= ep ? "cp_world_size >= ep_world_size: CP aligned with EP"
                   : "cp_world_size < ep_world_size but the switch network (" + std::to_string(switch_nodes) +
                         " nodes) is smaller than ep x cp = " + std::to_string(ep * cp) + ": CP aligned with EP";
  }
  if (json) {
    nlohmann::json j = {{"predicted", true},
                        {"model", "monta_cluster_expansion"},
                        {"config", path},
                        {"cluster", cfg.cluster.name},
                        {"context", context},
                        {"device_memory_bytes", device},
                        {"memory_scheme", std::string(zero_stage_name(kZero)) + " + " + activation_scheme_name(kActs)},
                        {"group_max_sequence", L},
                        {"tp", tp},
                        {"ep_world_size", ep},
                        {"cp_world_size", cp},
                        {"expansion", how},
                        {"why", why},
                        {"network_scale_nodes", scale},
                        {"switch_nodes", switch_nodes}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("Long-context expansion (MoNTA \"Cluster Expansion\", Fig. 12) for %s on cluster %s, PREDICTED\n",
              path.c_str(), cfg.cluster.name.c_str());
  std::printf("one EP group (t = %d, e = %d, p = %d) holds sequences of up to %lld tokens per device's %s "
              "(memory model: %s weights, %s activations, one sequence per micro-batch)\n",
              tp, ep, base.p, L, bytes_text(device).c_str(), zero_stage_name(kZero), activation_scheme_name(kActs));
  std::printf("context %lld: cp_world_size = %lld, ep_world_size = %d -> %s expansion (%s); network scale %lld nodes\n",
              context, cp, ep, how.c_str(), why.c_str(), scale);
  return 0;
}

}  // namespace moebench::cli
