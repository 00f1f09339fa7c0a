#pragma once
// MoeRows: the row work of one MoE block on one rank, in the memory of the model's backend
// (tensor/backend.h): what MoeLayer (moe/moe_layer.h) does around the experts, in phases, so
// that a distributed strategy can move the routed rows between them.
//   forward   route (router, gates, capacity, aux, dispatch layout, xg = x's rows in slot order)
//             -> [the experts: experts_forward here, or a strategy filling y] -> combine
//   backward  combine_backward (dgate, dy) -> [experts_backward here, or a strategy filling dxg]
//             -> scatter_router_backward (dx += dxg's rows, the router's dx and drouter_w)
// Two implementations: the host one (make_host_moe_rows below: moe/router.h, moe/expert_bank.h,
// OpenMP; the CPU backend's and every CPU test's), and a GPU's (model/cuda_backend.h:
// kernels/'s MoeBlock phases on the running task's stream). x, out, router_w, the experts and
// every returned buffer are memory of that backend; the layout (offsets) is always on the host,
// since a strategy sizes its exchange and the grouped GEMMs with it.
// Semantics are MoeLayer's (accumulation rules included); one instance per block and
// activation set: it keeps its forward's routing and rows for the backward.
#include <memory>
#include <vector>

#include "moebench/moe/expert_bank.h"
#include "moebench/moe/router.h"
#include "moebench/moe/row_ops.h"

namespace moebench {

class Communicator;

struct MoeLayerShape {
  int N;                  // tokens on this rank
  int C;                  // hidden size
  int F;                  // expert FFN width
  int E;                  // experts (over the whole EP group)
  int K;                  // top-k
  float capacity_factor;  // 0 = dropless (capacity is per rank, as in GShard)
  bool gate_normalize;    // renormalise the top-k gates to sum to 1
};

class MoeRows {
 public:
  virtual ~MoeRows() = default;

  // Router -> routing, dispatch layout, xg() [S,C]; sizes y(). forced_experts: optional HOST
  // [N,K] choice replacing top-k; policy: rewrites the choice (moe/router.h GatePolicy; a
  // device's rows throw std::invalid_argument when one is set).
  virtual void route(const float* x, const float* router_w, const MoeLayerShape& s, const int* forced_experts,
                     const GatePolicy& policy) = 0;
  // The last route's dispatch layout on the host: expert e owns slots [offsets[e], offsets[e+1]).
  virtual const std::vector<int>& offsets() const = 0;
  // The last route's unweighted aux loss (the group's after globalize_aux).
  virtual float aux() const = 0;
  // Replaces the aux statistics (f, P, aux) by those of the whole group (moe_layer.h
  // global_aux_stats): collective over `group`.
  virtual void globalize_aux(Communicator& group) = 0;
  // The routing on the host (tests, bench moe-layer); a device's rows throw std::logic_error.
  virtual const Routing& host_routing() const = 0;
  virtual const std::vector<int>& host_slot_of() const = 0;

  // The routed rows [S,C] of the last route: xg (inputs), y (expert outputs, unweighted), and
  // in backward dy (their gradients) and dxg (the inputs' gradients).
  virtual float* xg() = 0;
  virtual float* y() = 0;
  virtual float* dy() = 0;
  virtual float* dxg() = 0;

  // y = experts(xg) with all E experts here (`experts`, E parameter sets in the arena's layout).
  virtual void experts_forward(const std::vector<ExpertParams>& experts, int F) = 0;
  // out[N,C] (overwritten) = sum over kept (n,k) of gate[n,k] * y[slot].
  virtual void combine(float* out) = 0;
  // Sizes dy() and dxg() for the last route (before a graph binds their addresses).
  virtual void prepare_backward() = 0;
  // dgate and dy from dout[N,C] (after prepare_backward).
  virtual void combine_backward(const float* dout) = 0;
  // dxg (overwritten) and the expert gradients (+=) from dy: the experts of experts_forward.
  virtual void experts_backward(const std::vector<ExpertParams>& dexperts, const std::vector<ExpertParams>& experts) = 0;
  // dx[N,C] += dxg's rows by token; then dx += and drouter_w += through the router (gates and
  // aux_weight * aux).
  virtual void scatter_router_backward(float* dx, float* drouter_w, float aux_weight, const float* x,
                                       const float* router_w) = 0;
  // A buffer of n floats in this memory, for a caller that keeps rows of its own (dx share).
  virtual float* scratch(long n) = 0;
  // A strategy's row work in this memory (MoeLayer hands it to the strategy: MoeContext::ops).
  virtual RowOps& row_ops() = 0;
};

// The host rows (CPU memory): MoeLayer's default.
std::unique_ptr<MoeRows> make_host_moe_rows();

}  // namespace moebench
