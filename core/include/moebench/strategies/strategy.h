#pragma once
// MoeStrategy: how an MoE block gets its routed tokens processed by experts that live on
// other ranks. The router, the local dispatch plan (kept assignments grouped by expert) and
// the gate-weighted combine are the same for every strategy (MoeLayer); a strategy takes the
// gathered slot rows and returns the expert outputs for them, and the reverse in backward.
// One file per strategy (strategies/<name>.cpp) holds the strategy, its analytical cost model
// and its factory; registry.cpp lists the factories by name.
#include <memory>
#include <string>
#include <vector>

#include "moebench/moe/expert_bank.h"

namespace moebench {

class Communicator;
class Topology;
class Executor;

// What a strategy may use for one MoE block on one rank.
struct MoeContext {
  Communicator* ep = nullptr;          // expert-parallel group (used by the compute thread only)
  const Topology* topology = nullptr;  // world topology (link classes, nodes)
  Executor* executor = nullptr;        // records a span per phase when set
  int layer = -1;                      // block index (span labels)
  int experts = 0;                     // E of this block, over the whole EP group
  int C = 0, F = 0;
  // This rank owns experts [first_local, first_local + local.size()); gradients of owned
  // experts accumulate into local_grads.
  int first_local = 0;
  std::vector<ExpertParams> local, local_grads;
  // data_centric (Janus): credit-based buffer size, pulled experts in flight at once.
  int credits = 2;
  bool priority = true;       // data_centric switches (config [strategy], Janus §5.1.2-5.3)
  bool prefetch = false;
  bool hierarchical = false;
  bool pcie_pairing = false;            // with hierarchical: Janus §5.2 Fig. 8-9
  std::vector<int> pcie_switch_pairs;   // local ranks sharing a PCIe switch, pairwise
};

// Analytical cost of one forward pass of one MoE block (per rank); "predicted", never measured.
struct CostInputs {
  double tokens = 0;        // tokens per rank
  int top_k = 1, hidden = 0, ffn = 0, experts = 0;
  int ep_size = 1;          // ranks in the EP group
  int devices_per_node = 1; // of the EP group's ranks, how many share a node
  double intra_bw = 0, inter_bw = 0;   // bytes/s per link direction
  double latency = 0;                  // seconds per message
  double flops_rate = 0;               // sustained FLOP/s per rank
};
struct StrategyCost {
  double bytes_intra = 0, bytes_inter = 0;  // sent per rank, forward (backward moves the same)
  double comm_seconds = 0, compute_seconds = 0;
};

class MoeStrategy {
 public:
  virtual ~MoeStrategy() = default;
  virtual std::string name() const = 0;
  // y[S,C]: the expert outputs for the local slot rows xg[S,C]; rows [offsets[e],
  // offsets[e+1]) go to global expert e (offsets has experts + 1 entries). Collective over
  // ctx.ep. xg must stay valid until backward().
  virtual void forward(float* y, const float* xg, const std::vector<int>& offsets, MoeContext& ctx) = 0;
  // dxg[S,C] (overwritten) from dy[S,C]; gradients of the experts this rank owns accumulate
  // into ctx.local_grads. Collective over ctx.ep.
  virtual void backward(float* dxg, const float* dy, MoeContext& ctx) = 0;
  virtual StrategyCost predict(const CostInputs& in) const = 0;
  // Called for every MoE block at the start of each forward pass of the model, before any
  // block's gate runs (Janus prefetch, §5.3). Collective over ctx.ep. Default: nothing.
  virtual void begin_iteration(MoeContext& ctx) { (void)ctx; }
};

// The strategy registered under `name`; throws std::invalid_argument listing the known names.
std::unique_ptr<MoeStrategy> make_strategy(const std::string& name);
const std::vector<std::string>& strategy_names();

}  // namespace moebench
