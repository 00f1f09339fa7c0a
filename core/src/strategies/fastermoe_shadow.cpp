#include "fastermoe_shadow.h"

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

GraphTask task(const char* name, TaskCategory category, StreamRole role, int layer, int expert = -1) {
  GraphTask t;
  t.name = name;
  t.category = category;
  t.role = role;
  t.layer = layer;
  t.expert = expert;
  return t;
}

// The views of the k shadowed experts' blocks, one after another from p.
std::vector<ExpertParams> copies(float* p, size_t k, int C, int F) {
  std::vector<ExpertParams> out;
  for (size_t i = 0; i < k; ++i) out.push_back(views(p + i * param_count(C, F), C, F));
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
  RowOps& ops = ctx.row_ops();
  if (act) {
    st.params.resize(ops, (long)(st.experts.size() * n));
    st.grads.resize(ops, (long)(st.experts.size() * n));
    if (!st.bank) st.bank = ops.make_experts();
  }
  std::vector<TaskId> sent;
  for (size_t k = 0; k < st.experts.size(); ++k) {
    const int e = st.experts[k], owner = st.owner(e);
    GraphTask t = task("moe.shadow.broadcast", TaskCategory::comm, role, ctx.layer, e);
    for (int child : binomial_children(ctx.ep_rank, owner, P))
      t.cost.bytes_to_peer.push_back({ctx.ep_world[(size_t)child], (uint64_t)(n * (uint64_t)ctx.wire_element_bytes)});
    if (act) {
      Communicator* comm = &ctx.rows_comm(role);
      float* dst = st.params.data() + k * n;
      const ExpertParams src = owner == ctx.ep_rank ? ctx.local[(size_t)(e - ctx.first_local)] : ExpertParams{};
      t.action = [comm, &ops, dst, src, n, owner, C, F] {
        if (src.w1) {
          const ExpertParams v = views(dst, C, F);
          ops.copy(v.w1, src.w1, (long)F * C);
          ops.copy(v.b1, src.b1, F);
          ops.copy(v.w2, src.w2, (long)C * F);
          ops.copy(v.b2, src.b2, C);
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
    const long rows = st.offsets.back();
    st.x.resize(ops, rows * C);
    st.y.resize(ops, rows * C);
    x.action = [&st, &ops, buffers = *buffers] {
      gather_row_ranges(ops, st.x.data(), buffers.xg, st.rows, st.C);
      st.bank->forward(st.y.data(), st.x.data(), st.offsets, copies(st.params.data(), st.experts.size(), st.C, st.F),
                       st.C, st.F);
      scatter_row_ranges(ops, buffers.y, st.y.data(), st.rows, st.C);
    };
  }
  return g.add(std::move(x), sent);
}

TaskId add_shadow_backward(TaskGraph& g, ShadowState& st, const std::vector<TaskId>& after, const MoeBuffers* buffers,
                           MoeContext& ctx) {
  GraphTask x = task("moe.shadow.experts_backward", TaskCategory::compute, StreamRole::compute, ctx.layer);
  x.cost.flops = 8.0 * st.offsets.back() * st.C * st.F;
  if (buffers) {
    if (!buffers->dxg || !st.bank)
      throw std::logic_error("fastermoe: the shadowed experts' backward needs their forward and dxg");
    RowOps& ops = ctx.row_ops();
    const long rows = st.offsets.back();
    st.dy.resize(ops, rows * st.C);
    st.dx.resize(ops, rows * st.C);
    x.action = [&st, &ops, buffers = *buffers] {
      const size_t k = st.experts.size();
      ops.zero(st.grads.data(), (long)(k * param_count(st.C, st.F)));
      gather_row_ranges(ops, st.dy.data(), buffers.dy, st.rows, st.C);
      st.bank->backward(st.dx.data(), st.dy.data(), copies(st.grads.data(), k, st.C, st.F),
                        copies(st.params.data(), k, st.C, st.F));
      scatter_row_ranges(ops, buffers.dxg, st.dx.data(), st.rows, st.C);
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
      r.cost.bytes_to_peer.push_back({ctx.ep_world[(size_t)binomial_parent(ctx.ep_rank, owner, P)], n * (uint64_t)ctx.wire_element_bytes});
    if (act) {
      Communicator* comm = &ctx.rows_comm(role);
      float* grad = st.grads.data() + k * n;
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
      float* grad = st.grads.data() + k * n;
      RowOps* ops = &ctx.row_ops();
      a.action = [ops, dst, grad, C, F] {
        const ExpertParams src = views(grad, C, F);
        ops->add(dst.w1, src.w1, (long)F * C);
        ops->add(dst.b1, src.b1, F);
        ops->add(dst.w2, src.w2, (long)C * F);
        ops->add(dst.b2, src.b2, C);
      };
    }
    out.push_back(g.add(std::move(a), {reduced}));
  }
  return out;
}

}  // namespace moebench
