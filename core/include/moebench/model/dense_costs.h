#pragma once
// Flops of MoeGpt's dense stages for N tokens (C hidden, F FFN width, T context, V vocab): the
// costs of the compute spans the model records and of the step graph's tasks (train/step_graph.h).
// Backward is twice the forward (two matmuls per forward one).
namespace moebench {

// qkv and output projections (8NC^2) + causal QK^T and AV over the average context (T+1)/2.
inline double attn_forward_flops(double N, double C, double T) { return 8.0 * N * C * C + 2.0 * N * C * (T + 1); }
inline double ffn_forward_flops(double N, double C, double F) { return 4.0 * N * C * F; }
inline double head_forward_flops(double N, double C, double V) { return 2.0 * N * C * V; }

}  // namespace moebench
