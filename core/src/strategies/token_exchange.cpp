#include "moebench/strategies/token_exchange.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "moebench/dist/communicator.h"
#include "moebench/runtime/executor.h"

namespace moebench {
namespace {

// Runs fn as a task on the calling thread so the phase shows up as a span (when an
// executor is attached).
template <class Fn>
void phase(MoeContext& ctx, const std::string& name, TaskCategory category, TaskCost cost, Fn&& fn) {
  if (!ctx.executor) return fn();
  Task t;
  t.name = name;
  t.category = category;
  t.cost = std::move(cost);
  t.layer = ctx.layer;
  t.action = std::forward<Fn>(fn);
  ctx.executor->run_inline(t, category == TaskCategory::comm ? "compute.comm" : "compute");
}

}  // namespace

void TokenExchange::forward(float* y, const float* xg, const std::vector<int>& offsets, MoeContext& ctx) {
  Communicator& ep = *ctx.ep;
  const int P = ep.size(), me = ep.rank(), E = ctx.experts, C = ctx.C;
  if (E % P != 0)
    throw std::invalid_argument("MoE block " + std::to_string(ctx.layer) + ": " + std::to_string(E) +
                                " experts do not divide over " + std::to_string(P) + " EP ranks");
  if ((int)offsets.size() != E + 1) throw std::invalid_argument("TokenExchange: offsets size != experts + 1");
  const int L = E / P;
  if ((int)ctx.local.size() != L || ctx.first_local != me * L)
    throw std::invalid_argument("TokenExchange: rank " + std::to_string(me) + " must own experts [" +
                                std::to_string(me * L) + ", " + std::to_string(me * L + L) + ")");
  P_ = P;
  L_ = L;
  C_ = C;

  // (1) every rank's per-expert slot counts.
  std::vector<long> mine(E);
  for (int e = 0; e < E; ++e) mine[e] = offsets[e + 1] - offsets[e];
  counts_.assign((size_t)P * E, 0);
  phase(ctx, "moe.counts", TaskCategory::comm, {}, [&] { ep.all_gather(mine.data(), counts_.data(), E, DType::i64); });
  rows_.assign((size_t)P * P, 0);
  for (int s = 0; s < P; ++s)
    for (int e = 0; e < E; ++e) rows_[(size_t)s * P + e / L] += counts_[(size_t)s * E + e];
  send_rows_.assign(P, 0);
  recv_rows_.assign(P, 0);
  for (int r = 0; r < P; ++r) {
    send_rows_[r] = rows_[(size_t)me * P + r];
    recv_rows_[r] = rows_[(size_t)r * P + me];
  }

  // Regrouping of received rows (source-major, then local expert) by local expert.
  local_offsets_.assign(L + 1, 0);
  for (int j = 0; j < L; ++j) {
    long n = 0;
    for (int s = 0; s < P; ++s) n += counts_[(size_t)s * E + me * L + j];
    local_offsets_[j + 1] = local_offsets_[j] + (int)n;
  }
  const long R = local_offsets_[L];
  recv_index_.resize(R);
  {
    std::vector<long> src_base(P, 0);
    for (int s = 1; s < P; ++s) src_base[s] = src_base[s - 1] + recv_rows_[s - 1];
    long row = 0;
    for (int j = 0; j < L; ++j)
      for (int s = 0; s < P; ++s) {
        long within = 0;  // rows of source s for local experts before j
        for (int jj = 0; jj < j; ++jj) within += counts_[(size_t)s * E + me * L + jj];
        const long n = counts_[(size_t)s * E + me * L + j];
        for (long i = 0; i < n; ++i) recv_index_[row++] = src_base[s] + within + i;
      }
  }

  // (2) rows to the owners, (3) experts, (4) outputs back.
  x_recv_.resize((size_t)R * C);
  run_transfer("moe.dispatch", true, xg, x_recv_.data(), ctx);
  x_exp_.resize((size_t)R * C);
  y_exp_.resize((size_t)R * C);
  y_recv_.resize((size_t)R * C);
  permute_to_experts(x_exp_.data(), x_recv_.data(), C);
  TaskCost cost;
  cost.flops = 4.0 * (double)R * C * ctx.F;
  phase(ctx, "moe.experts", TaskCategory::compute, cost,
        [&] { bank_.forward(y_exp_.data(), x_exp_.data(), local_offsets_, ctx.local, C, ctx.F); });
  permute_from_experts(y_recv_.data(), y_exp_.data(), C);
  run_transfer("moe.combine", false, y_recv_.data(), y, ctx);
}

void TokenExchange::backward(float* dxg, const float* dy, MoeContext& ctx) {
  const int C = C_;
  const long R = local_offsets_.empty() ? 0 : local_offsets_[L_];
  d_recv_.resize((size_t)R * C);
  d_exp_.resize((size_t)R * C);
  run_transfer("moe.dispatch_grad", true, dy, d_recv_.data(), ctx);
  permute_to_experts(d_exp_.data(), d_recv_.data(), C);
  TaskCost cost;
  cost.flops = 8.0 * (double)R * C * ctx.F;
  phase(ctx, "moe.experts_backward", TaskCategory::compute, cost, [&] {
    bank_.backward(y_exp_.data(), d_exp_.data(), ctx.local_grads, ctx.local);  // y_exp_ reused as dx
  });
  permute_from_experts(d_recv_.data(), y_exp_.data(), C);
  run_transfer("moe.combine_grad", false, d_recv_.data(), dxg, ctx);
}

void TokenExchange::run_transfer(const char* what, bool outbound, const float* send, float* recv,
                                 MoeContext& ctx) {
  const std::vector<long>& s = outbound ? send_rows_ : recv_rows_;
  const std::vector<long>& r = outbound ? recv_rows_ : send_rows_;
  // The transposed matrix for the return trip: rows dst -> src.
  std::vector<long> back;
  const std::vector<long>* rows = &rows_;
  if (!outbound) {
    back.resize(rows_.size());
    for (int a = 0; a < P_; ++a)
      for (int b = 0; b < P_; ++b) back[(size_t)a * P_ + b] = rows_[(size_t)b * P_ + a];
    rows = &back;
  }
  TaskCost cost;
  for (int p = 0; p < P_; ++p)
    if (p != ctx.ep->rank() && s[p] > 0)
      cost.bytes_to_peer.push_back({ctx.ep->world_rank(p), (uint64_t)s[p] * C_ * sizeof(float)});
  phase(ctx, what, TaskCategory::comm, cost, [&] { transfer(send, s, recv, r, *rows, C_, ctx); });
}

void TokenExchange::permute_to_experts(float* dst, const float* src, int C) const {
  const long R = (long)recv_index_.size();
#pragma omp parallel for schedule(static)
  for (long i = 0; i < R; ++i) std::memcpy(dst + i * C, src + recv_index_[i] * C, sizeof(float) * C);
}

void TokenExchange::permute_from_experts(float* dst, const float* src, int C) const {
  const long R = (long)recv_index_.size();
#pragma omp parallel for schedule(static)
  for (long i = 0; i < R; ++i) std::memcpy(dst + recv_index_[i] * C, src + i * C, sizeof(float) * C);
}

}  // namespace moebench
