// MoeGpt's layer functions: the action of each task of a stage's micro-batch (model/stage_graph.h),
// run by the executor in the chain's order on one thread (the compute worker), so BLAS/OpenMP
// never run on two threads of a rank at once. They call the model's backend (tensor/backend.h):
// the CPU functions, or the CUDA launchers enqueued on the task's stream.
#include <stdexcept>

#include "moe_gpt_parts.h"
#include "moebench/dist/communicator.h"
#include "moebench/model/stage_graph.h"

namespace moebench {

void MoeGpt::tp_allreduce(float* x, size_t n, ReduceOp op) {
  if (tp_.size == 1) return;
  if (!tp_comm_) throw std::logic_error("MoeGpt: tensor parallelism without distribute()");
  tp_comm_->all_reduce(x, n, DType::f32, op);
}

// embed_send_ [P, block] -> embed_recv_ [P, block]: block q to DP rank q.
void MoeGpt::embed_all_to_all(size_t block) {
  if (!embed_comm_) throw std::logic_error("MoeGpt: embedding partition without distribute()");
  const int P = embed_.size;
  const std::vector<size_t> counts((size_t)P, block);
  std::vector<size_t> displs((size_t)P);
  for (int q = 0; q < P; ++q) displs[(size_t)q] = (size_t)q * block;
  embed_comm_->all_to_all_v(embed_send_.data(), counts.data(), displs.data(), embed_recv_.ensure_data(P * block),
                            counts.data(), displs.data(), DType::f32);
}

// The previous block's MoE output is consumed: its (global-batch) aux loss and kept counts join
// the micro-batch's and the step's sums.
void MoeGpt::collect_moe(size_t i, int slot) {
  const Block& b = *blocks_[i];
  if (b.experts == 0) return;
  const Acts& a = b.acts[(size_t)slot];
  head_acts_[(size_t)slot].aux += a.moe->aux();
  const std::vector<int>& counts = a.moe->kept_counts();
  Block& mb = *blocks_[i];
  mb.step_counts.resize((size_t)b.experts, 0);
  for (int e = 0; e < b.experts; ++e) mb.step_counts[(size_t)e] += counts[(size_t)e];
}

void MoeGpt::finish_loss(HeadActs& h) {
  if (!be_.device_memory())  // the host's losses are there now
    return pass_losses_.push_back({(float)(be_.sum(h.losses.data(), h.N()) / (double)h.N()), h.aux, 0.0f});
  // A device's: copied aside (h.losses is the slot's, reused by a later pass), summed in pass_losses()
  const size_t pass = pass_losses_.size();
  while (pass_rows_.size() <= pass) pass_rows_.emplace_back(be_, "a pass's per-token losses");
  be_.copy(pass_rows_[pass].ensure_data((size_t)h.N()), h.losses.data(), (size_t)h.N() * sizeof(float));
  pending_losses_.push_back({pass, h.N()});
  pass_losses_.push_back({0.0f, h.aux, 0.0f});
}

const std::vector<LossParts>& MoeGpt::pass_losses() {
  for (const PendingLoss& p : pending_losses_)
    pass_losses_[p.pass].ce = (float)(be_.sum(pass_rows_[p.pass].data(), p.n) / (double)p.n);
  pending_losses_.clear();
  return pass_losses_;
}

void MoeGpt::run_op(StageOp op, int layer, int slot) {
  HeadActs& h = head_acts_[(size_t)slot];
  const int B = h.B, T = h.T, C = model_.hidden, F = model_.ffn_mult * C, V = model_.vocab_size, NH = model_.heads;
  const int t = tp_.size, Ct = C / t, Ft = F / t, NHt = NH / t;  // this rank's share (tensor parallel)
  const bool bias_here = tp_.rank == 0;                          // row-parallel biases: added once
  const long N = h.N();
  const int Vt = vocab_rows();
  const size_t i = layer >= 0 ? (size_t)(layer - pipe_.first_block) : 0;  // the block's index on this stage
  Block& b = *blocks_[layer >= 0 ? i : 0];
  Acts& a = b.acts[(size_t)slot];
  const Acts& last = blocks_.back()->acts[(size_t)slot];
  const int P = embed_.size, Cp = C / P;
  const size_t embed_block = (size_t)N * Cp;
  auto residual_ln2 = [&] {  // res1 += x; ln2 = LayerNorm(res1)
    be_.residual_forward(a.res1.data(), a.res1.data(), a.x.data(), N * C);
    a.ln2.ensure(N * C); a.ln2_mean.ensure(N); a.ln2_rstd.ensure(N);
    be_.layernorm_forward(a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.res1.data(), params_.param(b.ln2_w),
                      params_.param(b.ln2_b), (int)N, C);
  };
  auto lnf_backward = [&] {
    dresid_.zero(N * C);  // d x_out = d (res1 + ffn_out) of the last block
    be_.layernorm_backward(dresid_.data(), params_.grad(lnf_w_), params_.grad(lnf_b_), dscratch_.data(), h.x_out.data(),
                       params_.param(lnf_w_), h.lnf_mean.data(), h.lnf_rstd.data(), (int)N, C);
  };
  auto ln1_backward = [&] {
    be_.layernorm_backward(dresid_.data(), params_.grad(b.ln1_w), params_.grad(b.ln1_b), dscratch_.data(), a.x.data(),
                       params_.param(b.ln1_w), a.ln1_mean.data(), a.ln1_rstd.data(), (int)N, C);
  };
  auto stage_sum = [&] {  // the last block's residual sum
    collect_moe(blocks_.size() - 1, slot);
    h.x_out.ensure(N * C);
    be_.residual_forward(h.x_out.data(), last.res1.data(), last.ffn_out.data(), N * C);
  };
  float* x0 = blocks_.front()->acts[(size_t)slot].x.data();  // the first block's input
  switch (op) {
    case StageOp::batch_in:  // the loader's page-locked copy of this pass's tokens (add_forward)
      if (pipe_.first()) be_.to_device_async(h.inputs.data(), h.batch.data(), (size_t)N * sizeof(int));
      if (pipe_.last()) be_.to_device_async(h.targets.data(), h.batch.data() + N, (size_t)N * sizeof(int));
      return;
    // Forward of MoESys Fig. 9 (model.embedding_partition): ids all-gather, lookup of this rank's
    // columns for every rank's tokens, all-to-all of the [N, Cp] slices, assembly with the positions.
    case StageOp::embed_ids:
      h.all_inputs.ensure((size_t)P * N);
      return embed_comm_->all_gather(h.inputs.data(), h.all_inputs.data(), (size_t)N, DType::i32);
    case StageOp::embed_forward:
      if (embed_split())
        return be_.embedding_partition_lookup(embed_send_.ensure_data(P * embed_block), h.all_inputs.data(),
                                          params_.param(wte_), P * N, Cp);
      if (vocab_split())  // this rank's vocabulary rows, summed over TP
        return be_.vocab_slice_embed(x0, h.inputs.data(), params_.param(wte_), N, C, vocab_first(), vocab_rows());
      return be_.encoder_forward(x0, h.inputs.data(), params_.param(wte_), params_.param(wpe_), B, T, C);
    case StageOp::embed_a2a: return embed_all_to_all(embed_block);
    case StageOp::embed_reduce: return tp_allreduce(x0, N * C);
    case StageOp::embed_positions:
      if (embed_split())
        return be_.embedding_partition_assemble(x0, embed_recv_.data(), params_.param(wpe_), N, T, P, Cp);
      return be_.position_embedding_forward(x0, params_.param(wpe_), N, T, C);
    case StageOp::attn_forward:
      if (i > 0) {
        collect_moe(i - 1, slot);
        const Acts& prev = blocks_[i - 1]->acts[(size_t)slot];
        be_.residual_forward(a.x.data(), prev.res1.data(), prev.ffn_out.data(), N * C);
      } else if (!pipe_.first()) {
        be_.copy(a.x.data(), h.x_in, N * C * sizeof(float));
      }
      a.ln1.ensure(N * C); a.ln1_mean.ensure(N); a.ln1_rstd.ensure(N);
      be_.layernorm_forward(a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), a.x.data(), params_.param(b.ln1_w),
                        params_.param(b.ln1_b), (int)N, C);
      a.qkv.ensure(N * 3 * Ct);
      be_.matmul_forward(a.qkv.data(), a.ln1.data(), params_.param(b.qkv_w), params_.param(b.qkv_b), (int)N, C, 3 * Ct);
      a.preatt.ensure((size_t)B * NHt * T * T); a.att.ensure((size_t)B * NHt * T * T); a.atty.ensure(N * Ct);
      be_.attention_forward(a.atty.data(), a.preatt.data(), a.att.data(), a.qkv.data(), B, T, Ct, NHt);
      a.res1.ensure(N * C);
      be_.matmul_forward(a.res1.data(), a.atty.data(), params_.param(b.proj_w), bias_here ? params_.param(b.proj_b) : nullptr,
                     (int)N, Ct, C);
      if (t == 1) residual_ln2();
      return;
    case StageOp::attn_reduce: return tp_allreduce(a.res1.data(), N * C);
    case StageOp::attn_residual: return residual_ln2();
    case StageOp::ffn_forward:
      a.fch.ensure(N * Ft); a.fch_gelu.ensure(N * Ft);
      be_.matmul_forward(a.fch.data(), a.ln2.data(), params_.param(b.fc_w), params_.param(b.fc_b), (int)N, C, Ft);
      be_.gelu_forward(a.fch_gelu.data(), a.fch.data(), N * Ft);
      return be_.matmul_forward(a.ffn_out.data(), a.fch_gelu.data(), params_.param(b.fcproj_w),
                            bias_here ? params_.param(b.fcproj_b) : nullptr, (int)N, Ft, C);
    case StageOp::ffn_reduce: return tp_allreduce(a.ffn_out.data(), N * C);
    case StageOp::stage_output:
      stage_sum();
      return pass_losses_.push_back({0.0f, h.aux, 0.0f});
    case StageOp::head_forward:
      stage_sum();
      h.lnf.ensure(N * C); h.lnf_mean.ensure(N); h.lnf_rstd.ensure(N);
      be_.layernorm_forward(h.lnf.data(), h.lnf_mean.data(), h.lnf_rstd.data(), h.x_out.data(), params_.param(lnf_w_),
                        params_.param(lnf_b_), (int)N, C);
      logits_.ensure(N * Vt); h.probs.ensure(N * Vt); h.losses.ensure(N);
      be_.matmul_forward(logits_.data(), h.lnf.data(), params_.param(head_), nullptr, (int)N, C, Vt);
      if (vocab_split()) return be_.vocab_ce_row_max(rowmax_.ensure_data(N), logits_.data(), (int)N, Vt);
      be_.crossentropy_softmax_forward(h.losses.data(), h.probs.data(), logits_.data(), h.targets.data(), (int)N, V);
      return finish_loss(h);
    case StageOp::head_max_reduce: return tp_allreduce(rowmax_.data(), N, ReduceOp::max);
    case StageOp::head_softmax:
      return be_.vocab_ce_exp(h.probs.data(), ce_stats_.ensure_data(2 * N), logits_.data(), rowmax_.data(),
                          h.targets.data(), (int)N, Vt, vocab_first());
    case StageOp::head_sum_reduce: return tp_allreduce(ce_stats_.data(), 2 * N);
    case StageOp::head_loss:
      be_.vocab_ce_finish(h.losses.data(), h.probs.data(), ce_stats_.data(), rowmax_.data(), (int)N, Vt);
      return finish_loss(h);

    case StageOp::stage_output_grad: return be_.copy(dresid_.data(), h.dout, N * C * sizeof(float));
    case StageOp::stage_input_grad:
      h.din.ensure(N * C);
      return be_.copy(h.din.data(), dresid_.data(), N * C * sizeof(float));
    case StageOp::head_backward:
      dlogits_.zero(N * Vt);
      if (vocab_split())
        be_.vocab_ce_backward(dlogits_.data(), h.probs.data(), h.targets.data(), h.loss_scale / (float)N, (int)N, Vt,
                          vocab_first());
      else
        be_.crossentropy_softmax_backward(dlogits_.data(), h.probs.data(), h.targets.data(), h.loss_scale / (float)N,
                                      (int)N, V);
      dscratch_.zero(N * C);  // d lnf (partial over the vocabulary slices when split)
      be_.matmul_backward(dscratch_.data(), params_.grad(head_), nullptr, dlogits_.data(), h.lnf.data(),
                      params_.param(head_), (int)N, C, Vt);
      if (!vocab_split()) lnf_backward();
      return;
    case StageOp::head_grad_reduce: return tp_allreduce(dscratch_.data(), N * C);
    case StageOp::head_lnf_backward: return lnf_backward();
    case StageOp::ffn_backward: {  // dresid_ holds d x_{l+1} = d res1 (residual) = d ffn_out
      dscratch_.zero(N * C);       // d ln2
      dscratch2_.zero(N * Ft);     // d fch_gelu
      be_.matmul_backward(dscratch2_.data(), params_.grad(b.fcproj_w), params_.grad(b.fcproj_b), dresid_.data(),
                      a.fch_gelu.data(), params_.param(b.fcproj_w), (int)N, Ft, C);
      DeviceArray<float>& dfch = a.fch_gelu;  // reuse: fch_gelu no longer needed this micro-batch
      dfch.zero(N * Ft);
      be_.gelu_backward(dfch.data(), a.fch.data(), dscratch2_.data(), N * Ft);
      return be_.matmul_backward(dscratch_.data(), params_.grad(b.fc_w), params_.grad(b.fc_b), dfch.data(), a.ln2.data(),
                             params_.param(b.fc_w), (int)N, C, Ft);
    }
    case StageOp::ffn_grad_reduce: return tp_allreduce(dscratch_.data(), N * C);  // d ln2: partial over TP columns
    case StageOp::attn_backward:
      be_.layernorm_backward(dresid_.data(), params_.grad(b.ln2_w), params_.grad(b.ln2_b), dscratch_.data(), a.res1.data(),
                         params_.param(b.ln2_w), a.ln2_mean.data(), a.ln2_rstd.data(), (int)N, C);
      // dresid_ now holds d res1 = d x_l (residual) = d attn proj output
      dscratch_.zero(N * Ct);  // d atty
      be_.matmul_backward(dscratch_.data(), params_.grad(b.proj_w), params_.grad(b.proj_b), dresid_.data(), a.atty.data(),
                      params_.param(b.proj_w), (int)N, Ct, C);
      dscratch2_.zero(N * 3 * Ct);  // d qkv
      dpreatt_.ensure((size_t)B * NHt * T * T); datt_.ensure((size_t)B * NHt * T * T);
      be_.attention_backward(dscratch2_.data(), dpreatt_.data(), datt_.data(), dscratch_.data(), a.qkv.data(), a.att.data(),
                         B, T, Ct, NHt);
      dscratch_.zero(N * C);  // d ln1
      be_.matmul_backward(dscratch_.data(), params_.grad(b.qkv_w), params_.grad(b.qkv_b), dscratch2_.data(), a.ln1.data(),
                      params_.param(b.qkv_w), (int)N, C, 3 * Ct);
      if (t == 1) ln1_backward();
      return;
    case StageOp::attn_grad_reduce: return tp_allreduce(dscratch_.data(), N * C);  // d ln1: partial over TP heads
    case StageOp::attn_ln1_backward: return ln1_backward();
    // Backward of Fig. 9: dresid_ [N, C] cut by column owner, one all-to-all, then this rank's
    // columns accumulate every rank's tokens' gradients (rank order, token order: the single-rank
    // summation order when each rank holds consecutive batch rows).
    case StageOp::embed_grad_slices:
      return be_.embedding_partition_split(embed_send_.ensure_data(P * embed_block), dresid_.data(), N, P, Cp);
    case StageOp::embed_grad_a2a: return embed_all_to_all(embed_block);
    case StageOp::embed_backward:
      if (embed_split()) {
        be_.embedding_partition_backward(params_.grad(wte_), embed_recv_.data(), h.all_inputs.data(), P * N, Cp);
        return be_.position_embedding_backward(params_.grad(wpe_), dresid_.data(), N, T, C);
      }
      if (!vocab_split())
        return be_.encoder_backward(params_.grad(wte_), params_.grad(wpe_), dresid_.data(), h.inputs.data(), B, T, C);
      be_.vocab_slice_embed_backward(params_.grad(wte_), dresid_.data(), h.inputs.data(), N, C, vocab_first(), vocab_rows());
      return be_.position_embedding_backward(params_.grad(wpe_), dresid_.data(), N, T, C);
  }
}

}  // namespace moebench
