#include "fastermoe_shadow.h"

#include <cstring>
#include <stdexcept>

#include "moebench/dist/communicator.h"

namespace moebench {
namespace {

size_t param_count(int C, int F) { return 2 * (size_t)C * F + (size_t)F + (size_t)C; }

// The views of a contiguous w1 [F,C] | b1 [F] | w2 [C,F] | b2 [C] block.
ExpertParams views(float* p, int C, int F) {
  ExpertParams v;
  v.w1 = p;
  v.b1 = v.w1 + (size_t)F * C;
  v.w2 = v.b1 + F;
  v.b2 = v.w2 + (size_t)C * F;
  return v;
}

// The children of `rank` in MpiCommunicator's binomial broadcast tree rooted at `root` (what
// the simulator replays): after the lowest set bit of rank's distance to the root, it sends to
// distance + 2^k for every lower k that stays inside the group.
std::vector<int> binomial_children(int rank, int root, int P) {
  const int vr = (rank - root + P) % P;
  int mask = 1;
  while (mask < P && !(vr & mask)) mask <<= 1;
  std::vector<int> out;
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (vr + mask < P) out.push_back((vr + mask + root) % P);
  return out;
}

// The parent of `rank` in that tree: its distance to the root without the lowest set bit.
int binomial_parent(int rank, int root, int P) {
  const int vr = (rank - root + P) % P;
  return ((vr & (vr - 1)) + root) % P;
}

void move_rows(float* dst, const float* src, const std::vector<std::pair<long, long>>& ranges, int C, bool gather) {
  long at = 0;
  for (const auto& [first, n] : ranges) {
    if (n) {
      if (gather) std::memcpy(dst + at * C, src + first * C, sizeof(float) * (size_t)n * C);
      else std::memcpy(dst + first * C, src + at * C, sizeof(float) * (size_t)n * C);
    }
    at += n;
  }
}

GraphTask task(const char* name, TaskCategory category, StreamRole role, int layer, int expert = -1) {
  GraphTask t;
  t.name = name;
  t.category = category;
  t.role = role;
  t.layer = layer;
  t.expert = expert;
  return t;
}

std::vector<ExpertParams> copies(std::vector<std::vector<float>>& blocks, int C, int F) {
  std::vector<ExpertParams> out;
  for (auto& b : blocks) out.push_back(views(b.data(), C, F));
  return out;
}

}  // namespace

void ShadowState::place_rows(const ExchangeCounts& counts, const MoeContext& ctx) {
  C = ctx.C, F = ctx.F, per_rank = counts.E / counts.P;
  std::vector<long> first((size_t)counts.E + 1, 0);
  for (int e = 0; e < counts.E; ++e) first[(size_t)e + 1] = first[(size_t)e] + counts.at(ctx.ep_rank, e);
  rows.clear();
  offsets.assign(1, 0);
  for (int e : experts) {
    rows.push_back({first[(size_t)e], counts.at(ctx.ep_rank, e)});
    offsets.push_back(offsets.back() + (int)counts.at(ctx.ep_rank, e));
  }
}

TaskId add_shadow_forward(TaskGraph& g, ShadowState& st, const std::vector<TaskId>& after, const MoeBuffers* buffers,
                          MoeContext& ctx) {
  const int P = ctx.ep_size, C = st.C, F = st.F;
  const size_t n = param_count(C, F);
  const StreamRole role = ctx.ep_role();
  const bool act = buffers != nullptr;
  if (act) {
    st.params.assign(st.experts.size(), std::vector<float>(n));
    st.grads.assign(st.experts.size(), std::vector<float>(n));
  }
  std::vector<TaskId> sent;
  for (size_t k = 0; k < st.experts.size(); ++k) {
    const int e = st.experts[k], owner = st.owner(e);
    GraphTask t = task("moe.shadow.broadcast", TaskCategory::comm, role, ctx.layer, e);
    for (int child : binomial_children(ctx.ep_rank, owner, P))
      t.cost.bytes_to_peer.push_back({ctx.ep_world[(size_t)child], (uint64_t)(n * sizeof(float))});
    if (act) {
      Communicator* comm = &ctx.role_comm(role);
      float* dst = st.params[k].data();
      const ExpertParams src = owner == ctx.ep_rank ? ctx.local[(size_t)(e - ctx.first_local)] : ExpertParams{};
      t.action = [comm, dst, src, n, owner, C, F] {
        if (src.w1) {
          const ExpertParams v = views(dst, C, F);
          std::memcpy(v.w1, src.w1, sizeof(float) * (size_t)F * C);
          std::memcpy(v.b1, src.b1, sizeof(float) * (size_t)F);
          std::memcpy(v.w2, src.w2, sizeof(float) * (size_t)C * F);
          std::memcpy(v.b2, src.b2, sizeof(float) * (size_t)C);
        }
        comm->broadcast(dst, n, DType::f32, owner);
      };
    }
    sent.push_back(g.add(std::move(t), after));
  }
  GraphTask x = task("moe.shadow.experts", TaskCategory::compute, StreamRole::compute, ctx.layer);
  x.cost.flops = 4.0 * st.offsets.back() * C * F;
  if (act) {
    if (!buffers->y || (!buffers->xg && st.offsets.back() > 0))
      throw std::invalid_argument("fastermoe: the shadowed experts' forward needs xg and y");
    x.action = [&st, buffers = *buffers] {
      const size_t rows = (size_t)st.offsets.back();
      st.x.resize(rows * st.C);
      st.y.resize(rows * st.C);
      move_rows(st.x.data(), buffers.xg, st.rows, st.C, true);
      st.bank.forward(st.y.data(), st.x.data(), st.offsets, copies(st.params, st.C, st.F), st.C, st.F);
      move_rows(buffers.y, st.y.data(), st.rows, st.C, false);
    };
  }
  return g.add(std::move(x), sent);
}

TaskId add_shadow_backward(TaskGraph& g, ShadowState& st, const std::vector<TaskId>& after, const MoeBuffers* buffers,
                           MoeContext& ctx) {
  GraphTask x = task("moe.shadow.experts_backward", TaskCategory::compute, StreamRole::compute, ctx.layer);
  x.cost.flops = 8.0 * st.offsets.back() * st.C * st.F;
  if (buffers) {
    if (!buffers->dxg || st.params.size() != st.experts.size())
      throw std::logic_error("fastermoe: the shadowed experts' backward needs their forward and dxg");
    x.action = [&st, buffers = *buffers] {
      const size_t rows = (size_t)st.offsets.back();
      st.dy.resize(rows * st.C);
      st.dx.resize(rows * st.C);
      for (auto& gr : st.grads) std::fill(gr.begin(), gr.end(), 0.0f);
      move_rows(st.dy.data(), buffers.dy, st.rows, st.C, true);
      st.bank.backward(st.dx.data(), st.dy.data(), copies(st.grads, st.C, st.F), copies(st.params, st.C, st.F));
      move_rows(buffers.dxg, st.dx.data(), st.rows, st.C, false);
    };
  }
  return g.add(std::move(x), after);
}

std::vector<TaskId> add_shadow_reduce(TaskGraph& g, ShadowState& st, TaskId computed, bool act, MoeContext& ctx) {
  const int P = ctx.ep_size, C = st.C, F = st.F;
  const size_t n = param_count(C, F);
  const StreamRole role = ctx.ep_role();
  std::vector<TaskId> out;
  for (size_t k = 0; k < st.experts.size(); ++k) {
    const int e = st.experts[k];
    GraphTask r = task("moe.shadow.reduce", TaskCategory::comm, role, ctx.layer, e);
    const int owner = st.owner(e);
    if (ctx.ep_rank != owner)  // the binomial tree reversed: once to the parent
      r.cost.bytes_to_peer.push_back({ctx.ep_world[(size_t)binomial_parent(ctx.ep_rank, owner, P)], n * sizeof(float)});
    if (act) {
      Communicator* comm = &ctx.role_comm(role);
      float* grad = st.grads[k].data();
      r.action = [comm, grad, n, owner] { comm->reduce(grad, n, DType::f32, owner, ReduceOp::sum); };
    }
    const TaskId reduced = g.add(std::move(r), {computed});
    if (st.owner(e) != ctx.ep_rank) {
      out.push_back(reduced);
      continue;
    }
    GraphTask a = task("moe.shadow.accumulate", TaskCategory::compute, StreamRole::compute, ctx.layer, e);
    a.cost.flops = (double)n;
    if (act) {
      const ExpertParams dst = ctx.local_grads[(size_t)(e - ctx.first_local)];
      const float* grad = st.grads[k].data();
      a.action = [dst, grad, C, F] {
        const ExpertParams src = views(const_cast<float*>(grad), C, F);
        auto add = [](float* d, const float* s, size_t count) {
          for (size_t i = 0; i < count; ++i) d[i] += s[i];
        };
        add(dst.w1, src.w1, (size_t)F * C);
        add(dst.b1, src.b1, (size_t)F);
        add(dst.w2, src.w2, (size_t)C * F);
        add(dst.b2, src.b2, (size_t)C);
      };
    }
    out.push_back(g.add(std::move(a), {reduced}));
  }
  return out;
}

}  // namespace moebench
