// data_centric's analytical cost (predicted, never measured).
#include <algorithm>
#include <cmath>

#include "moebench/strategies/data_centric.h"

namespace moebench {

// Predicted (never measured), uniform routing: each of the E - L experts this rank does not
// own receives at least one of its tokens*k assignments with probability 1 - (1 - 1/E)^(tk)
// and is then pulled whole (2HF + F + H floats); (d-1)*L of them live on this rank's node.
// The pulls run back to back on each link class (the slower one bounds), one latency per
// pull; backward pushes the same bytes back (not included, as for the other strategies).
StrategyCost DataCentric::predict(const CostInputs& in) const {
  StrategyCost c;
  const int P = std::max(1, in.ep_size), E = in.experts;
  if (E <= 0 || E % P != 0) return c;
  const int L = E / P, d = std::clamp(in.devices_per_node, 1, P);
  const double expert_bytes = (2.0 * in.hidden * in.ffn + in.ffn + in.hidden) * sizeof(float);
  const double assignments = in.tokens * in.top_k;
  const double p_used = assignments > 0 ? 1.0 - std::pow(1.0 - 1.0 / E, assignments) : 0.0;
  const double n_intra = (double)(d - 1) * L * p_used, n_inter = (double)(P - d) * L * p_used;
  c.bytes_intra = n_intra * expert_bytes;
  c.bytes_inter = n_inter * expert_bytes;
  const double t_intra = in.intra_bw > 0 ? c.bytes_intra / in.intra_bw : 0;
  const double t_inter = in.inter_bw > 0 ? c.bytes_inter / in.inter_bw : 0;
  c.comm_seconds = std::max(t_intra, t_inter) + (n_intra + n_inter) * in.latency;
  c.compute_seconds = in.flops_rate > 0 ? 4.0 * in.tokens * in.top_k * in.hidden * in.ffn / in.flops_rate : 0;
  return c;
}

}  // namespace moebench
