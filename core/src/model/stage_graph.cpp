#include "moebench/model/stage_graph.h"

#include "moebench/model/dense_costs.h"

namespace moebench {
namespace {

struct Op {
  const char* name;
  bool collective;  // a blocking collective of the chain (role host), else compute
};

Op op_info(StageOp op) {
  switch (op) {
    case StageOp::batch_in: return {"batch.copy_in", false};
    case StageOp::embed_ids: return {"embed.ids", true};
    case StageOp::embed_forward: return {"embed.forward", false};
    case StageOp::embed_a2a: return {"embed.a2a", true};
    case StageOp::embed_reduce: return {"tp.allreduce", true};
    case StageOp::embed_positions: return {"embed.positions", false};
    case StageOp::attn_forward: return {"attn.forward", false};
    case StageOp::attn_reduce: return {"tp.allreduce", true};
    case StageOp::attn_residual: return {"attn.residual", false};
    case StageOp::ffn_forward: return {"ffn.forward", false};
    case StageOp::ffn_reduce: return {"tp.allreduce", true};
    case StageOp::head_forward: return {"head.forward", false};
    case StageOp::head_max_reduce: return {"tp.allreduce", true};
    case StageOp::head_softmax: return {"head.softmax", false};
    case StageOp::head_sum_reduce: return {"tp.allreduce", true};
    case StageOp::head_loss: return {"head.loss", false};
    case StageOp::stage_output: return {"stage.output", false};
    case StageOp::stage_output_grad: return {"stage.output_grad", false};
    case StageOp::head_backward: return {"head.backward", false};
    case StageOp::head_grad_reduce: return {"tp.allreduce", true};
    case StageOp::head_lnf_backward: return {"head.ln_f_backward", false};
    case StageOp::ffn_backward: return {"ffn.backward", false};
    case StageOp::ffn_grad_reduce: return {"tp.allreduce", true};
    case StageOp::attn_backward: return {"attn.backward", false};
    case StageOp::attn_grad_reduce: return {"tp.allreduce", true};
    case StageOp::attn_ln1_backward: return {"attn.ln1_backward", false};
    case StageOp::embed_grad_slices: return {"embed.grad_slices", false};
    case StageOp::embed_grad_a2a: return {"embed.grad_a2a", true};
    case StageOp::embed_backward: return {"embed.backward", false};
    case StageOp::stage_input_grad: return {"stage.input_grad", false};
  }
  return {"?", false};
}

// Adds the chain's tasks one after the other.
struct Chain {
  TaskGraph& g;
  StageBinding& b;
  TaskId last;
  int chunk;
  TaskId add(GraphTask t, StageOp op, int layer) {
    t.layer = layer;
    t.chunk = chunk;
    t.action = b.action(op, layer);
    return last = g.add(std::move(t), {last});
  }
  void compute(StageOp op, int layer, double flops = 0.0) {
    GraphTask t;
    t.name = op_info(op).name;
    t.cost.flops = flops;
    add(std::move(t), op, layer);
  }
  // A TP all-reduce of `floats` (nothing on one TP rank).
  void tp_reduce(const StageShape& s, StageOp op, int layer, double floats) {
    if (s.tp.size > 1)
      add(ring_allreduce_task(op_info(op).name, layer, floats, s.wire_element_bytes, s.tp_world, s.tp.rank,
                              StreamRole::host, chunk),
          op, layer);
  }
  // The micro-batch's token ids (first stage) and targets (last stage) from the loader's
  // page-locked buffer into the model's memory, on the copy role.
  void copy_in(const StageShape& s) {
    const int arrays = (s.pipe.first() ? 1 : 0) + (s.pipe.last() ? 1 : 0);
    if (arrays == 0) return;
    GraphTask t;
    t.name = op_info(StageOp::batch_in).name;
    t.category = TaskCategory::copy;
    t.role = StreamRole::copy;
    t.cost.copy_bytes = (uint64_t)arrays * s.N() * sizeof(int32_t);
    add(std::move(t), StageOp::batch_in, -1);
  }
  // The partitioned embedding's exchanges over DP: the ids' ring all-gather, or an all-to-all of
  // N x C/P floats to every other rank.
  void embed_exchange(const StageShape& s, StageOp op) {
    const int P = s.embed.size, me = s.embed.rank;
    GraphTask t;
    t.name = op_info(op).name;
    t.category = TaskCategory::comm;
    t.role = StreamRole::host;
    t.cost.messages = P - 1;
    if (op == StageOp::embed_ids)
      t.cost.bytes_to_peer = {{s.dp_world[(size_t)(me + 1) % P], (uint64_t)(P - 1) * s.N() * sizeof(int32_t)}};
    else
      for (int q = 0; q < P; ++q)
        if (q != me)
          t.cost.bytes_to_peer.push_back({s.dp_world[(size_t)q], (uint64_t)s.N() * (s.model.hidden / P) *
                                                                    (uint64_t)s.wire_element_bytes});
    add(std::move(t), op, -1);
  }
};

}  // namespace

const char* stage_op_name(StageOp op) { return op_info(op).name; }

GraphTask ring_allreduce_task(const std::string& name, int layer, double elements, int element_bytes,
                              const std::vector<int>& members, int me, StreamRole role, int chunk) {
  GraphTask t;
  t.name = name;
  t.layer = layer;
  t.chunk = chunk;
  t.category = TaskCategory::comm;
  t.role = role;
  const int P = (int)members.size();
  const uint64_t bytes = (uint64_t)(elements * element_bytes);
  if (P > 1) t.cost.bytes_to_peer.push_back({members[(size_t)(me + 1) % P], 2 * bytes * (uint64_t)(P - 1) / (uint64_t)P});
  t.cost.messages = 2 * (P - 1);
  return t;
}

TaskId add_stage_forward(TaskGraph& g, const StageShape& s, StageBinding& b, TaskId after, int chunk) {
  Chain c{g, b, after, chunk};
  const double N = (double)s.N(), C = s.model.hidden, T = s.T, t = s.tp.size;
  const double F = (double)s.model.ffn_mult * C, Vt = (double)s.model.vocab_size / (s.vocab_split() ? t : 1.0);
  c.copy_in(s);
  if (s.pipe.first()) {
    c.last = b.use_part(g, kEmbeddingsPart, c.last);
    if (s.embed_split()) c.embed_exchange(s, StageOp::embed_ids);
    c.compute(StageOp::embed_forward, -1);
    if (s.embed_split()) c.embed_exchange(s, StageOp::embed_a2a);
    if (s.vocab_split()) c.tp_reduce(s, StageOp::embed_reduce, -1, N * C);  // this rank's rows, summed
    if (s.embed_split() || s.vocab_split()) c.compute(StageOp::embed_positions, -1);
  }
  for (int l = s.pipe.first_block; l < s.pipe.end_block; ++l) {
    c.last = b.use_part(g, l, c.last);
    c.compute(StageOp::attn_forward, l, attn_forward_flops(N, C, T) / t);
    if (t > 1) {
      c.tp_reduce(s, StageOp::attn_reduce, l, N * C);
      c.compute(StageOp::attn_residual, l);
    }
    if (s.moe_block(l)) {
      c.last = b.moe_pass(g, l, MoePass::forward, c.last);
      continue;
    }
    c.compute(StageOp::ffn_forward, l, ffn_forward_flops(N, C, F) / t);
    c.tp_reduce(s, StageOp::ffn_reduce, l, N * C);
  }
  if (!s.pipe.last()) {
    c.compute(StageOp::stage_output, -1);
    return c.last;
  }
  c.last = b.use_part(g, s.model.layers, c.last);
  c.compute(StageOp::head_forward, -1, head_forward_flops(N, C, Vt));
  if (s.vocab_split()) {  // the softmax's statistics over the vocabulary slices
    c.tp_reduce(s, StageOp::head_max_reduce, -1, N);
    c.compute(StageOp::head_softmax, -1);
    c.tp_reduce(s, StageOp::head_sum_reduce, -1, 2 * N);
    c.compute(StageOp::head_loss, -1);
  }
  return c.last;
}

TaskId add_stage_backward(TaskGraph& g, const StageShape& s, StageBinding& b, TaskId after, int chunk,
                          bool last_micro) {
  Chain c{g, b, after, chunk};
  const double N = (double)s.N(), C = s.model.hidden, T = s.T, t = s.tp.size;
  const double F = (double)s.model.ffn_mult * C, Vt = (double)s.model.vocab_size / (s.vocab_split() ? t : 1.0);
  const int L = s.model.layers;
  if (s.pipe.last()) {
    c.compute(StageOp::head_backward, -1, 2 * head_forward_flops(N, C, Vt));
    if (s.vocab_split()) {
      c.tp_reduce(s, StageOp::head_grad_reduce, -1, N * C);
      c.compute(StageOp::head_lnf_backward, -1);
    }
    if (last_micro) b.grad_ready(g, L, c.last);
    if (last_micro && !s.pipe.first() && s.model.tied_head) b.grad_ready(g, L + 1, c.last);
  } else {
    c.compute(StageOp::stage_output_grad, -1);
  }
  for (int l = s.pipe.end_block - 1; l >= s.pipe.first_block; --l) {
    if (s.moe_block(l)) {
      c.last = b.moe_pass(g, l, MoePass::backward, c.last);
    } else {
      c.compute(StageOp::ffn_backward, l, 2 * ffn_forward_flops(N, C, F) / t);
      c.tp_reduce(s, StageOp::ffn_grad_reduce, l, N * C);
    }
    c.compute(StageOp::attn_backward, l, 2 * attn_forward_flops(N, C, T) / t);
    if (t > 1) {
      c.tp_reduce(s, StageOp::attn_grad_reduce, l, N * C);
      c.compute(StageOp::attn_ln1_backward, l);
    }
    if (last_micro) b.grad_ready(g, l, c.last);
  }
  if (!s.pipe.first()) {
    c.compute(StageOp::stage_input_grad, -1);
    return c.last;
  }
  if (s.embed_split()) {
    c.compute(StageOp::embed_grad_slices, -1);
    c.embed_exchange(s, StageOp::embed_grad_a2a);
  }
  c.compute(StageOp::embed_backward, -1);
  if (last_micro) b.grad_ready(g, kEmbeddingsPart, c.last);
  return c.last;
}

}  // namespace moebench
