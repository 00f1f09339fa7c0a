#pragma once
// TokenExchange: the expert-centric family (GShard / DeepSpeed / Tutel): tokens travel to the
// rank owning their expert and the outputs travel back; experts never move. Subclasses only
// say how rows cross the EP group (transfer()): one all-to-all-v (expert_centric) or the
// two-phase hierarchical all-to-all (hier_a2a).
//
// Per forward: (1) all_gather of every rank's per-expert slot counts (E ints per rank) so
// every rank knows every (source, expert) row count; (2) transfer of the slot rows to the
// owners; (3) the owner regroups them by local expert (source-major within an expert, which
// is global token order when the global batch is split by rank in order) and runs its
// ExpertBank; (4) transfer of the outputs back. Backward moves dy and dx the same way.
#include <vector>

#include "moebench/strategies/strategy.h"

namespace moebench {

class TokenExchange : public MoeStrategy {
 public:
  void forward(float* y, const float* xg, const std::vector<int>& offsets, MoeContext& ctx) override;
  void backward(float* dxg, const float* dy, MoeContext& ctx) override;

  // counts[src * E + e]: slot rows rank src sends to expert e in the last forward.
  const std::vector<long>& counts() const { return counts_; }

 protected:
  // Moves rows (C floats each): send holds rows for EP rank 0, then 1, ... (send_rows[r]
  // each); recv gets rows from EP rank 0, then 1, ... (recv_rows[r] each). `rows[s * P + d]`
  // is the full P x P matrix of row counts (known to every rank), for multi-hop transfers.
  virtual void transfer(const float* send, const std::vector<long>& send_rows, float* recv,
                        const std::vector<long>& recv_rows, const std::vector<long>& rows, int C,
                        MoeContext& ctx) = 0;

 private:
  void permute_to_experts(float* dst, const float* src, int C) const;
  void permute_from_experts(float* dst, const float* src, int C) const;
  void run_transfer(const char* what, bool outbound, const float* send, float* recv, MoeContext& ctx);

  int P_ = 1, L_ = 0, C_ = 0;
  std::vector<long> counts_;                // [P*E]
  std::vector<long> rows_;                  // [P*P] rows src -> dst
  std::vector<long> send_rows_, recv_rows_; // [P]
  std::vector<int> local_offsets_;          // [L+1] rows per local expert, expert-major
  std::vector<long> recv_index_;            // expert-major row -> recv (source-major) row
  std::vector<float> x_recv_, x_exp_, y_exp_, y_recv_, d_recv_, d_exp_;
  ExpertBank bank_;
};

}  // namespace moebench
