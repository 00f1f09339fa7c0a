#pragma once
// Private to strategies/data_centric*.cpp: the span helper, expert views and the per-expert
// state of a pass (Slot) and of a prefetch (Prefetched).
#include <stdexcept>
#include <string>
#include <vector>

#include "moebench/runtime/executor.h"
#include "moebench/strategies/data_centric.h"

namespace moebench::data_centric_detail {

// Runs fn on the calling thread (the compute worker running the block's task) and records
// it as a span with its own role, category and cost (when an executor is attached).
template <class Fn>
void phase(MoeContext& ctx, const char* name, TaskCategory category, TaskCost cost, int expert, int peer,
           Fn&& fn) {
  if (!ctx.executor) return fn();
  Span span;
  span.name = name;
  span.category = category;
  span.role = category == TaskCategory::comm ? ctx.ep_role()
              : category == TaskCategory::copy ? StreamRole::copy : StreamRole::compute;
  span.flops = cost.flops;
  span.bytes = cost.bytes_sent();
  span.layer = ctx.layer;
  span.expert = expert;
  span.peer = peer;
  span.start = ctx.executor->now();
  fn();
  span.end = ctx.executor->now();
  ctx.executor->add_span(std::move(span));
}

// Checks that the L experts of `v` lie back to back as w1|b1|w2|b2, expert after expert.
inline void check_contiguous(const std::vector<ExpertParams>& v, int C, int F, const char* what) {
  const size_t n = 2 * (size_t)F * C + F + C;
  for (size_t j = 0; j < v.size(); ++j) {
    const float* base = v[0].w1 + j * n;
    if (v[j].w1 != base || v[j].b1 != base + (size_t)F * C || v[j].w2 != base + (size_t)F * C + F ||
        v[j].b2 != base + 2 * (size_t)F * C + F)
      throw std::invalid_argument(std::string("data_centric: the owned experts' ") + what +
                                  " must be one contiguous block (w1|b1|w2|b2 per expert)");
  }
}

inline ExpertParams view(float* base, int C, int F) {
  return {base, base + (size_t)F * C, base + (size_t)F * C + F, base + 2 * (size_t)F * C + F};
}

}  // namespace moebench::data_centric_detail

namespace moebench {

struct DataCentric::Slot {
  int e = 0, owner = 0, off = 0, n = 0;
  bool owned = false;
  bool node_cached = false;  // hierarchical external expert: params in the node cache
  bool issued = false;       // its get has been issued (prefetch or forward)
  bool credit = false;       // holds a credit until computed
  int ext = -1;              // index in ext_ (external experts)
  ExpertParams params{}, grads{};
  std::vector<float> cache, grad;  // pulled experts only
  ExpertBank bank;
};

struct DataCentric::Prefetched {
  int e = 0, owner = 0;
  bool credit = false;  // internal: holds a credit
  std::vector<float> buf;
};

}  // namespace moebench
