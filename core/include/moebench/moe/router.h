#pragma once
// The MoE router on CPU (fp32): logits = x @ Wr^T (no bias), softmax per token, top-k expert
// choice (or an externally forced choice, for synthetic routing), gate weights (optionally
// renormalised over the k chosen), GShard capacity dropping and the GShard/Switch
// load-balancing aux loss; plus the backward pass down to dlogits, dx and dWr.
//
// Conventions (decisions recorded here):
// - top-k is by descending probability; equal probabilities go to the lower expert index.
// - capacity = ceil(capacity_factor * N * K / E) when capacity_factor > 0 (0: dropless). The
//   product is taken in double with a relative slack of 1e-6, so that e.g. 1.1 * 20 gives 22,
//   not 23 (1.1f is slightly above 1.1).
// - Assignments are admitted in GShard priority order: every token's 1st choice in token
//   order, then every 2nd choice, ...; an assignment that finds its expert full is dropped
//   (kept = 0): it contributes nothing to the block output, and the token still passes through
//   the residual connection outside the block.
// - Gate normalisation divides by the sum of the probabilities of all k chosen experts,
//   dropped ones included (dropping happens after gating, as in GShard).
// - aux = E * sum_e f_e * P_e, f_e = (top-k selections of e before dropping) / (N * K),
//   P_e = mean_n probs[n, e]; f is a constant, so the gradient flows only through P_e:
//   d aux / d probs[n, e] = E * f_e / N.
// - A forced choice may name the same expert twice for one token; each (token, k) slot is then
//   dispatched separately. Expert indices outside [0, E) throw std::invalid_argument.
// - Gate policy (the `policy` argument, DESIGN §2; FasterMoE's topology-aware gate,
//   moe/topo_gate.h): called once per forward after the choice (top-k or forced) with probs
//   and expert filled, before gates, selections, capacity and aux; it may rewrite expert (an
//   index out of range is the policy's bug: std::logic_error). Everything after it follows the
//   rewritten choice: the gate weights are the final experts' probabilities (renormalised as
//   above), f_e counts the final selections, capacity drops among the final choices.
#include <cstdint>
#include <functional>
#include <vector>

namespace moebench {

struct Routing;

struct RouterOptions {
  int top_k = 2;                  // K, 1 <= K <= E
  float capacity_factor = 0.0f;   // 0 = dropless
  bool gate_normalize = true;     // renormalise the k gate weights to sum to 1
};

// Rewrites r.expert after the choice, before gates / capacity / aux (see above).
using GatePolicy = std::function<void(Routing& r)>;

// The routing decision of one forward pass, kept for backward and for statistics.
struct Routing {
  int N = 0, E = 0, K = 0;
  bool gate_normalize = true;
  int capacity = 0;              // per-expert capacity; 0 = unlimited (dropless)
  std::vector<float> logits;     // [N,E]
  std::vector<float> probs;      // [N,E] softmax(logits)
  std::vector<int> expert;       // [N,K] chosen expert per slot (descending prob for top-k
                                 // without a gate policy)
  std::vector<float> gate;       // [N,K] gate weight per slot (normalised when gate_normalize)
  std::vector<uint8_t> kept;     // [N,K] 1 = admitted, 0 = dropped by capacity
  std::vector<int> selected;     // [E] selections per expert (after a gate policy), before dropping
  std::vector<int> counts;       // [E] kept assignments per expert
  std::vector<float> f;          // [E] selected / (N*K)
  std::vector<float> P;          // [E] mean probability
  float aux = 0.0f;              // E * sum_e f_e * P_e (unweighted)

  int dropped() const;           // number of dropped assignments
};

// ceil(capacity_factor * N * K / E), or 0 (unlimited) when capacity_factor <= 0.
int expert_capacity(float capacity_factor, int N, int K, int E);

// Fills r from given logits[N,E] (copied into r.logits). forced_experts: optional [N,K]
// choice replacing top-k; gates, normalisation, capacity and aux are computed the same way
// (policy, when set, runs on the forced choice too).
void route_from_logits(Routing& r, const float* logits, int N, int E, const RouterOptions& opt,
                       const int* forced_experts = nullptr, const GatePolicy& policy = {});

// logits = x[N,C] @ router_w[E,C]^T, then route_from_logits.
void router_forward(Routing& r, const float* x, const float* router_w, int N, int C, int E,
                    const RouterOptions& opt, const int* forced_experts = nullptr,
                    const GatePolicy& policy = {});

// dlogits[N,E] (overwritten) for a loss L = (terms through the gates) + aux_weight * aux,
// given dgate[N,K] = dL/dgate (zero for dropped slots): back through the optional
// normalisation and the aux loss into dprobs, then through the softmax.
void router_logits_backward(float* dlogits, const float* dgate, float aux_weight, const Routing& r);

// Accumulates dx[N,C] += dlogits @ Wr and drouter_w[E,C] += dlogits^T @ x, where dlogits
// comes from router_logits_backward; dlogits_scratch must hold N*E floats (overwritten).
void router_backward(float* dx, float* drouter_w, float* dlogits_scratch, const float* dgate,
                     float aux_weight, const Routing& r, const float* x, const float* router_w,
                     int C);

}  // namespace moebench
