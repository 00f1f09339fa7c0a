#include "moebench/strategies/token_exchange.h"

#include "moebench/dist/communicator.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace moebench {
namespace {

TransferSpec spec(const char* name, const ExchangeHandle& h, const ExchangeChunk& c, int chunk, bool outbound) {
  TransferSpec t;
  t.name = name;
  t.chunk = h.D > 1 ? chunk : -1;
  t.C = h.C;
  t.state = h.state.get();
  t.send_rows = outbound ? c.send_rows : c.recv_rows;
  t.recv_rows = outbound ? c.recv_rows : c.send_rows;
  if (outbound) {
    t.rows = c.rows;
  } else {  // the return trip: rows dst -> src
    t.rows.resize(c.rows.size());
    for (int a = 0; a < h.P; ++a)
      for (int b = 0; b < h.P; ++b) t.rows[(size_t)a * h.P + b] = c.rows[(size_t)b * h.P + a];
  }
  return t;
}

}  // namespace

TokenExchange::TokenExchange(int overlap_degree) : D_(overlap_degree) {
  if (D_ < 1)
    throw std::invalid_argument("overlap_degree must be at least 1, got " + std::to_string(overlap_degree));
}

TaskId TokenExchange::add_all_to_all_v(TaskGraph& g, const TransferSpec& t, const std::vector<TaskId>& after,
                                       MoeContext& ctx) {
  const int P = ctx.ep_size;
  GraphTask task;
  task.name = t.name;
  task.category = TaskCategory::comm;
  task.role = ctx.ep_role();
  task.layer = t.layer;
  task.chunk = t.chunk;
  for (int p = 0; p < P; ++p)
    if (p != ctx.ep_rank && t.send_rows[p] > 0)
      task.cost.bytes_to_peer.push_back({ctx.ep_world[p], (uint64_t)t.send_rows[p] * t.C * (uint64_t)ctx.wire_element_bytes});
  if (t.act) {
    std::vector<size_t> sc(P), sd(P), rc(P), rd(P);
    size_t so = 0, ro = 0;
    for (int p = 0; p < P; ++p) {
      sc[p] = (size_t)t.send_rows[p] * t.C;
      rc[p] = (size_t)t.recv_rows[p] * t.C;
      sd[p] = so;
      rd[p] = ro;
      so += sc[p];
      ro += rc[p];
    }
    Communicator* comm = &ctx.rows_comm(task.role);
    const float* send = t.send;
    float* recv = t.recv;
    task.action = [comm, send, recv, sc, sd, rc, rd] {
      comm->all_to_all_v(send, sc.data(), sd.data(), recv, rc.data(), rd.data(), DType::f32);
    };
  }
  return g.add(std::move(task), after);
}

std::vector<StrategyDecision> TokenExchange::pass_decisions(const ExchangeHandle& handle) const {
  return handle.state ? state_decisions(*handle.state) : std::vector<StrategyDecision>{};
}

std::unique_ptr<ExchangeHandle> TokenExchange::layout_pass(const ExchangeCounts& counts, MoeContext& ctx) {
  ctx.sync_group();
  const int P = ctx.ep_size, me = ctx.ep_rank, E = ctx.experts;
  if (E % P != 0)
    throw std::invalid_argument("MoE block " + std::to_string(ctx.layer) + ": " + std::to_string(E) +
                                " experts do not divide over " + std::to_string(P) + " EP ranks");
  if (counts.P != P || counts.E != E || counts.rows.size() != (size_t)P * E)
    throw std::invalid_argument("TokenExchange: counts are not a " + std::to_string(P) + " x " + std::to_string(E) +
                                " matrix");
  const int L = E / P;
  if (ctx.ep && ((int)ctx.local.size() != L || ctx.first_local != me * L))
    throw std::invalid_argument("TokenExchange: rank " + std::to_string(me) + " must own experts [" +
                                std::to_string(me * L) + ", " + std::to_string(me * L + L) + ")");
  if (ctx.ep) prepare(ctx);
  auto h = std::make_unique<ExchangeHandle>();
  h->P = P, h->E = E, h->L = L, h->me = me, h->C = ctx.C, h->F = ctx.F;
  h->state = make_transfer_state(counts, ctx);
  const int D = chunk_count(h->state.get());
  if (D < 1) throw std::logic_error("TokenExchange: a pass needs at least one chunk");
  h->D = D;
  std::vector<long> first(E + 1, 0);  // this rank's slot offsets per expert
  for (int e = 0; e < E; ++e) first[e + 1] = first[e] + counts.at(me, e);
  // rows[(s * E + e) * D + i]: what source s sends to expert e in chunk i
  std::vector<long> split((size_t)P * E * D);
  for (int s = 0; s < P; ++s)
    for (int e = 0; e < E; ++e) {
      long sum = 0;
      for (int i = 0; i < D; ++i) sum += split[((size_t)s * E + e) * D + i] = chunk_rows(counts, h->state.get(), s, e, i, D);
      if (sum > counts.at(s, e) || sum < 0)
        throw std::logic_error("TokenExchange: the chunks of source " + std::to_string(s) + " and expert " +
                               std::to_string(e) + " hold " + std::to_string(sum) + " of its " +
                               std::to_string(counts.at(s, e)) + " rows");
    }
  auto size = [&](int s, int e, int i) { return split[((size_t)s * E + e) * D + i]; };
  auto before = [&](int e, int i) {  // this rank's rows of expert e in chunks before i
    long n = 0;
    for (int j = 0; j < i; ++j) n += size(me, e, j);
    return n;
  };
  h->chunks.resize(D);
  long sent = 0;
  for (int i = 0; i < D; ++i) {
    ExchangeChunk& c = h->chunks[i];
    c.rows.assign((size_t)P * P, 0);
    for (int s = 0; s < P; ++s)
      for (int e = 0; e < E; ++e) c.rows[(size_t)s * P + e / L] += size(s, e, i);
    c.send_rows.assign(P, 0);
    c.recv_rows.assign(P, 0);
    for (int r = 0; r < P; ++r) {
      c.send_rows[r] = c.rows[(size_t)me * P + r];
      c.recv_rows[r] = c.rows[(size_t)r * P + me];
      c.S += c.send_rows[r];
      c.R += c.recv_rows[r];
    }
    sent += c.S;
    for (int e = 0; e < E; ++e) c.pack.push_back({first[e] + before(e, i), size(me, e, i)});
    c.local_offsets.assign(L + 1, 0);
    for (int j = 0; j < L; ++j) {
      long n = 0;
      for (int s = 0; s < P; ++s) n += size(s, me * L + j, i);
      c.local_offsets[j + 1] = c.local_offsets[j] + (int)n;
    }
    c.recv_index.resize(c.R);
    std::vector<long> src_base(P, 0);
    for (int s = 1; s < P; ++s) src_base[s] = src_base[s - 1] + c.recv_rows[s - 1];
    long row = 0;
    std::vector<long> within(P, 0);  // rows of source s for local experts before j
    for (int j = 0; j < L; ++j)
      for (int s = 0; s < P; ++s) {
        const long n = size(s, me * L + j, i);
        for (long r = 0; r < n; ++r) c.recv_index[row++] = src_base[s] + within[s] + r;
        within[s] += n;
      }
  }
  h->packed = D > 1 || sent < first[E];
  return h;
}

long TokenExchange::chunk_rows(const ExchangeCounts& counts, const TransferState* state, int s, int e, int i,
                               int chunks) const {
  (void)state;
  const long n = counts.at(s, e);
  return n * (i + 1) / chunks - n * i / chunks;
}

std::vector<TaskId> TokenExchange::build_pass(TaskGraph& g, ExchangeHandle& h, MoePass pass,
                                              const std::vector<TaskId>& after, const MoeBuffers* buffers,
                                              MoeContext& ctx) {
  const bool fwd = pass == MoePass::forward, act = buffers != nullptr;
  if (act && fwd && (!buffers->y || (!buffers->xg && h.chunks[0].S > 0)))
    throw std::invalid_argument("TokenExchange: forward needs xg and y");
  if (act && !fwd && (!h.have_forward || !buffers->dxg))
    throw std::logic_error("TokenExchange: backward needs its forward and dxg");
  const int C = h.C, F = h.F, D = h.D;
  const uint64_t row_bytes = (uint64_t)C * (uint64_t)ctx.wire_element_bytes;
  RowOps& ops = ctx.row_ops();
  auto label = [&](GraphTask t, int i) {
    t.layer = ctx.layer;
    t.chunk = D > 1 ? i : -1;
    return t;
  };

  // Packs (h.packed): this chunk's rows of every expert, in destination order.
  std::vector<std::vector<TaskId>> entry(D, after);
  const bool packed = h.packed;
  if (packed)
    for (int i = 0; i < D; ++i) {
      ExchangeChunk& c = h.chunks[i];
      GraphTask t;
      t.name = fwd ? "moe.pack" : "moe.pack_grad";
      t.category = TaskCategory::copy;
      t.role = StreamRole::copy;
      t.cost.copy_bytes = (uint64_t)c.S * row_bytes;
      t.cost.device_copy = true;
      if (act) {
        float* dst = (fwd ? c.send : c.d_send).resize(ops, (long)c.S * C);
        const float* src = fwd ? buffers->xg : buffers->dy;
        t.action = [&c, &ops, dst, src, C] { gather_row_ranges(ops, dst, src, c.pack, C); };
      }
      entry[i] = {g.add(label(std::move(t), i), after)};
    }

  std::vector<TaskId> experts(D), exits;
  auto add_out = [&](int i) {  // the return trip of chunk i, then its unpack
    ExchangeChunk& c = h.chunks[i];
    TransferSpec t = spec(fwd ? "moe.combine" : "moe.combine_grad", h, c, i, false);
    t.layer = ctx.layer;
    float* final_dst = fwd ? (act ? buffers->y : nullptr) : (act ? buffers->dxg : nullptr);
    RowArray& staging = fwd ? c.y_recv : c.dx_recv;
    t.act = act;
    t.partial = ctx.experts_sliced;
    if (act) {
      t.send = fwd ? c.y_back.data() : c.dx_back.data();
      if (packed) staging.resize(ops, (long)c.S * C);
      t.recv = packed ? staging.data() : final_dst;
    }
    TaskId done = add_transfer(g, t, {experts[i]}, ctx);
    if (packed) {
      GraphTask u;
      u.name = fwd ? "moe.unpack" : "moe.unpack_grad";
      u.category = TaskCategory::copy;
      u.role = StreamRole::copy;
      u.cost.copy_bytes = (uint64_t)c.S * row_bytes;
      u.cost.device_copy = true;
      if (act) u.action = [&c, &ops, &staging, final_dst, C] { scatter_row_ranges(ops, final_dst, staging.data(), c.pack, C); };
      done = g.add(label(std::move(u), i), {done});
    }
    exits.push_back(done);
  };

  for (int i = 0; i < D; ++i) {
    ExchangeChunk& c = h.chunks[i];
    TransferSpec t = spec(fwd ? "moe.dispatch" : "moe.dispatch_grad", h, c, i, true);
    t.layer = ctx.layer;
    RowArray& in = fwd ? c.x_recv : c.d_recv;
    t.act = act;
    if (act) {
      t.send = packed ? (fwd ? c.send.data() : c.d_send.data()) : (fwd ? buffers->xg : buffers->dy);
      t.recv = in.resize(ops, (long)c.R * C);
    }
    const TaskId got = add_transfer(g, t, entry[i], ctx);

    GraphTask x;
    x.name = fwd ? "moe.experts" : "moe.experts_backward";
    x.category = TaskCategory::compute;
    x.role = StreamRole::compute;
    x.cost.flops = (fwd ? 4.0 : 8.0) * (double)c.R * C * F;
    if (act) {
      const long RC = (long)c.R * C;
      if (fwd) {
        if (!c.bank) c.bank = ops.make_experts();
        c.x_exp.resize(ops, RC);
        c.y_exp.resize(ops, RC);
        c.y_back.resize(ops, RC);
        x.action = [&c, &ctx, &ops, C, F] {
          ops.permute(c.x_exp.data(), c.x_recv.data(), c.recv_index, C, true);
          c.bank->forward(c.y_exp.data(), c.x_exp.data(), c.local_offsets, ctx.local, C, F);
          ops.permute(c.y_back.data(), c.y_exp.data(), c.recv_index, C, false);
        };
      } else {
        c.d_exp.resize(ops, RC);
        c.dx_exp.resize(ops, RC);
        c.dx_back.resize(ops, RC);
        x.action = [&c, &ctx, &ops, C] {
          ops.permute(c.d_exp.data(), c.d_recv.data(), c.recv_index, C, true);
          c.bank->backward(c.dx_exp.data(), c.d_exp.data(), ctx.local_grads, ctx.local);
          ops.permute(c.dx_back.data(), c.dx_exp.data(), c.recv_index, C, false);
        };
      }
    }
    experts[i] = g.add(label(std::move(x), i), {got});
    if (i > 0) add_out(i - 1);
  }
  add_out(D - 1);
  if (act && fwd) h.have_forward = true;
  return exits;
}

OptionDef overlap_degree_option(const std::string& doc) {
  return int_option("overlap_degree", 1, doc).at_least(1);
}

void check_overlap_degree(StrategyCheck& check, const std::string& section) {
  const std::string key = "strategy." + section + ".overlap_degree";
  const int d = check.config().strategy.option(section + ".overlap_degree").i;
  if (check.ok({key.c_str(), "train.batch_size", "model.seq_len"}) && check.tokens > 0 && d >= 1 && d > check.tokens)
    check.fail(key, "must be at most the " + std::to_string(check.tokens) + " tokens of a rank (" + check.tokens_text +
                        " x model.seq_len), got " + std::to_string(d));
}

std::string overlap_degree_inapplicable(const Config& c, int degree) {
  const int W = c.run.ranks, tp = std::max(1, c.parallel.tp), pp = std::max(1, c.parallel.pp);
  if ((long)c.train.batch_size / (W / (tp * pp)) / std::max(1, c.parallel.microbatches) * c.model.seq_len < degree)
    return "fewer tokens per rank than the overlap degree";
  return "";
}

}  // namespace moebench
