#pragma once
// Janus's analytical communication model (Liu et al., SIGCOMM '23, §5.1.3 and eq. 1).
// Everything here is PREDICTED from the config, not measured: the inter-node traffic per MoE
// block of the expert-centric paradigm (all-to-all of tokens) and of the data-centric paradigm
// (pulling experts), their ratio R, and the paradigm the `janus` strategy picks per block.
//
// Notation (paper Table 2), for one MoE block:
//   n  machines (cluster.nodes)            m  workers per machine (devices per node)
//   B  sequences per worker = train.batch_size (the GLOBAL batch) / (n*m)
//   S  model.seq_len    k  moe.top_k    H  model.hidden
//   E  experts per worker in this block = experts / (n*m)
//   T  = B*S*k tokens (token copies) a worker sends into the block
//
//   R       = B*S*k / (4*n*H*E)                                         (eq. 1)
//   Comm_EC = 2*m*H*T*(n-1)/n   floats  per machine, per iteration, forward
//             (two all-to-alls; balanced routing assumed, the paper's lower bound)
//   Comm_DC = expert_floats * E*m*(n-1) floats  per machine, per iteration, forward
//             (each machine's m*E experts are pulled once by each of the n-1 other machines)
// Both are returned in bytes (fp32, 4 bytes a float). Backward moves the same volume again
// (EC: the activation gradients; DC: the expert gradients, pre-reduced per machine).
//
// The expert size is exactly what moebench pulls: w1 [a*H x H] + b1 [a*H] + w2 [H x a*H] +
// b2 [H] with a = model.ffn_mult, i.e. 2*a*H^2 + (a+1)*H floats (8H^2 + 5H for a = 4). The
// paper's 8H^2 drops the biases, so Comm_DC here is larger by (a+1)/(2*a*H) (0.08% at H = 768)
// and R (the paper's closed form, eq. 1) is not exactly ec_bytes / dc_bytes (that byte ratio is
// smaller by the same factor). Table 1's rounded GiB values are reproduced either way.
// eq. 1 assumes a = 4 (the 4 in 4nHE is 8H^2 / 2H); for another model.ffn_mult it generalises
// to R = B*S*k / (a*n*H*E), which this model uses (identical to eq. 1 for a = 4).
#include <string>
#include <vector>

#include "moebench/config/config.h"

namespace moebench {

// One MoE block's predicted plan. Bytes are per machine, per iteration, forward only.
struct JanusBlockPlan {
  int block = 0;               // 0-based transformer block index
  int experts = 0;             // experts in this block
  int experts_per_worker = 0;  // E; when experts do not divide the world: ceil(experts / world)
  double R = 0.0;              // eq. 1 (uses the exact experts / world)
  std::string paradigm;        // "data_centric" when R > strategy.janus.threshold, else "expert_centric"
  double ec_bytes = 0.0;       // Comm_EC in bytes
  double dc_bytes = 0.0;       // Comm_DC in bytes
};

// Floats of one expert FFN as moebench stores and pulls it: 2*a*H^2 + (a+1)*H.
double janus_expert_floats(int hidden, int ffn_mult);

// The formulas on plain numbers, for tests and other models. b = sequences per worker,
// e = experts per worker (may be fractional), n machines, m workers per machine.
double janus_R(double b, int s, int k, int n, int hidden, double e, int ffn_mult = 4);
double janus_ec_bytes(double b, int s, int k, int n, int m, int hidden);
double janus_dc_bytes(int n, int m, int hidden, double e, int ffn_mult = 4);

// One entry per MoE block of `config`, in block order. `nodes` and `workers_per_node` give the
// cluster (n, m); batch and experts are divided by nodes * workers_per_node.
// Throws std::invalid_argument when nodes or workers_per_node < 1.
std::vector<JanusBlockPlan> janus_plan(const Config& config, int nodes, int workers_per_node);

}  // namespace moebench
