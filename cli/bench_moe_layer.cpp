// moebench bench moe-layer --tokens T --hidden H --ffn-mult A --experts E --top-k K
//                          [--threads N] [--iters N] [--json]
//                          [--device cpu|cuda] [--precision fp32|bf16]
//                          [--expert-gemms auto|grouped|per_expert] [--profile]
// Times one MoE block (router + dispatch + experts + combine) forward and backward on CPU
// (MoeLayer, fp32), or with --device cuda on one GPU (cuda::MoeBlock, fp32 or bf16; see
// bench_moe_layer_cuda.cpp, which also reports the fraction of a measured GEMM rate).
// FLOPs counted (matmuls only): forward = 2*T*H*E (router) + 4*T_kept*H*(A*H) (two expert
// matmuls per kept assignment); backward = 2 x forward (input and weight gradients).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <iostream>
#include <string>

#include "bench.h"
#include "bench_moe_layer.h"
#include "launch_limits.h"
#include "thread_option.h"
#include "moebench/config/usage_error.h"
#include "moebench/moe/moe_layer.h"
#include "moebench/perf/trainer_memory.h"
#include "moebench/train/device.h"
#include "moebench/tensor/matmul.h"
#include "moebench/tensor/rng.h"
#include "number_text.h"

namespace moebench::cli {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// What the CPU benchmark below holds: every expert's weights and gradients, the router and its
// gradient [E, H], x, dout, dx and out [T, H], the ExpertParams views, and one MoE layer's
// buffers for T tokens, dropless (perf/trainer_memory.h moe_layer_bytes).
struct MoeBenchBytes {
  double weights = 0, activations = 0;
  double total() const { return weights + activations; }
};
MoeBenchBytes moe_bench_bytes(const MoeBenchOptions& o) {
  const double N = o.tokens, C = o.hidden, F = (double)o.ffn_mult * o.hidden, E = o.experts, S = N * o.top_k;
  MoeBenchBytes b;
  b.weights = 2 * sizeof(float) * E * (2 * F * C + F + C + C) + 2 * E * sizeof(ExpertParams);
  b.activations = 4 * sizeof(float) * N * C + moe_layer_bytes(N, o.top_k, o.experts, S, C, S, F);
  return b;
}

// The checks before anything is allocated (exit 2): --top-k within --experts, the layer's int
// indices (T x K assignments, the expert width A x H), and the memory estimate within the memory
// available now (docs/limits.md "Sizes, memory and time").
void check_moe_bench(const MoeBenchOptions& o) {
  if (o.top_k > o.experts)
    throw UsageError("--top-k " + std::to_string(o.top_k) + " must be <= --experts " + std::to_string(o.experts));
  if ((double)o.tokens * o.top_k > INT_MAX)
    throw UsageError("--tokens x --top-k = " + count_text((double)o.tokens * o.top_k) +
                     " token copies; the MoE layer indexes them with int, at most " + std::to_string(INT_MAX));
  if ((double)o.ffn_mult * o.hidden > INT_MAX)
    throw UsageError("--ffn-mult x --hidden = " + count_text((double)o.ffn_mult * o.hidden) +
                     ", the experts' width, is over " + std::to_string(INT_MAX));
  if (o.device != "cpu") return;
  const MoeBenchBytes need = moe_bench_bytes(o);
  const uint64_t avail = process_memory_left_bytes();
  if (avail > 0 && need.total() > (double)avail)
    throw UsageError("bench moe-layer: T=" + std::to_string(o.tokens) + " H=" + std::to_string(o.hidden) +
                     " A=" + std::to_string(o.ffn_mult) + " E=" + std::to_string(o.experts) +
                     " K=" + std::to_string(o.top_k) + " needs about " + bytes_text(need.total()) + " of memory (" +
                     bytes_text(need.weights) + " for the experts' weights and gradients, " +
                     bytes_text(need.activations) + " for the tokens' activations and routing) and " +
                     bytes_text((double)avail) + " is available; lower --experts, --hidden, --ffn-mult or --tokens");
}

int bench_moe_layer(const MoeBenchOptions& o) {
  set_num_threads(o.threads);
  const int N = o.tokens, C = o.hidden, F = o.ffn_mult * o.hidden, E = o.experts, K = o.top_k;
  Rng rng(42);
  auto fill = [&](std::vector<float>& v, size_t n, float scale) {
    v.resize(n);
    for (auto& x : v) x = rng.normal() * scale;
  };
  std::vector<float> x, router, weights, grads, dout, dx, drouter, out((size_t)N * C);
  fill(x, (size_t)N * C, 1.0f);
  fill(router, (size_t)E * C, 0.02f);
  fill(dout, (size_t)N * C, 1.0f / N);
  const size_t per_expert = (size_t)F * C + F + (size_t)C * F + C;
  fill(weights, per_expert * E, 0.02f);
  grads.assign(per_expert * E, 0.0f);
  std::vector<ExpertParams> ep, eg;
  for (int e = 0; e < E; ++e) {
    float* w = weights.data() + per_expert * e;
    float* g = grads.data() + per_expert * e;
    ep.push_back({w, w + (size_t)F * C, w + (size_t)F * C + F, w + (size_t)F * C + F + (size_t)C * F});
    eg.push_back({g, g + (size_t)F * C, g + (size_t)F * C + F, g + (size_t)F * C + F + (size_t)C * F});
  }
  dx.assign((size_t)N * C, 0.0f);
  drouter.assign((size_t)E * C, 0.0f);
  MoeLayer layer;
  const MoeLayerShape shape{N, C, F, E, K, 0.0f, true};
  auto fwd = [&] { layer.forward(out.data(), x.data(), router.data(), ep, shape); };
  auto bwd = [&] { layer.backward(dx.data(), drouter.data(), eg, dout.data(), 0.01f, x.data(), router.data(), ep); };
  fwd();
  bwd();  // warm-up, also sizes the buffers
  std::vector<double> tf, tb;
  for (int i = 0; i < o.iters; ++i) {
    tf.push_back(time_iterations(0, 1, fwd)[0]);
    tb.push_back(time_iterations(0, 1, bwd)[0]);
  }
  long kept = 0;
  for (int c : layer.routing().counts) kept += c;
  const double fwd_flops = 2.0 * N * C * E + 4.0 * kept * C * F;
  const double total_flops = 3.0 * fwd_flops;
  const double mf = median(tf), mb = median(tb), mt = mf + mb;
  const double gflops = total_flops / mt / 1e9;
  if (o.json) {
    nlohmann::json j = {{"tokens", N}, {"hidden", C}, {"ffn_mult", o.ffn_mult}, {"experts", E},
                        {"top_k", K}, {"threads", num_threads()}, {"iters", o.iters},
                        {"kept_assignments", kept}, {"forward_ms", mf * 1e3}, {"backward_ms", mb * 1e3},
                        {"total_ms", mt * 1e3}, {"tokens_per_s", N / mt}, {"gflops", gflops},
                        {"flops", total_flops},
                        {"flop_formula", "3 x (2*T*H*E + 4*T_kept*H*(A*H))"}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("# MoE layer fwd+bwd: T=%d H=%d A=%d E=%d K=%d, %d threads, median of %d\n", N, C,
              o.ffn_mult, E, K, num_threads(), o.iters);
  std::printf("# flops = 3 x (2*T*H*E + 4*T_kept*H*(A*H)) = %.3f GFLOP (T_kept = %ld)\n",
              total_flops / 1e9, kept);
  std::printf("forward  %9.2f ms\nbackward %9.2f ms\ntotal    %9.2f ms | %.0f tokens/s | %.2f GFLOP/s\n",
              mf * 1e3, mb * 1e3, mt * 1e3, N / mt, gflops);
  return 0;
}

// The CPU path (fp32 only), or the GPU one when this build and machine have it.
int bench_moe_layer_on(const MoeBenchOptions& o) {
  if (o.device == "cpu" && o.precision != "fp32")
    throw UsageError("--precision " + o.precision + " needs --device cuda: the CPU MoE block runs in fp32");
  if (o.device == "cpu" && o.profile)
    throw UsageError("--profile needs --device cuda: it times the GPU kernels with CUDA events");
  if (o.device == "cpu" && o.expert_gemms != "auto")
    throw UsageError("--expert-gemms " + o.expert_gemms + " needs --device cuda: the CPU experts run on BLAS");
  check_moe_bench(o);
  if (o.device == "cpu") return bench_moe_layer(o);
  if (o.precision == "bf16" && o.hidden % 8 != 0)
    throw UsageError("--precision bf16 needs --hidden to be a multiple of 8 (16-byte rows for cuBLAS), got " +
                     std::to_string(o.hidden));
  require_cuda("bench moe-layer --device cuda");
#ifdef MOEBENCH_HAVE_CUDA
  return bench_moe_layer_cuda(o);
#else
  return 2;  // require_cuda threw: this build has no CUDA
#endif
}

}  // namespace

void add_bench_moe_layer(CLI::App& bench, Action& action) {
  auto* cmd = bench.add_subcommand("moe-layer", "One MoE block forward+backward on CPU or one GPU");
  auto o = std::make_shared<MoeBenchOptions>();
  cmd->add_option("--tokens", o->tokens, "Tokens T")->transform(positive());
  cmd->add_option("--hidden", o->hidden, "Hidden size H")->transform(positive());
  cmd->add_option("--ffn-mult", o->ffn_mult, "Expert FFN width multiplier A")->transform(positive());
  cmd->add_option("--experts", o->experts, "Experts E")->transform(positive());
  cmd->add_option("--top-k", o->top_k, "Experts per token K")->transform(positive());
  cmd->add_option("--threads", o->threads, "Threads (0 = all cores)")->transform(non_negative())->check(thread_count());
  cmd->add_option("--iters", o->iters, "Timed iterations")->transform(positive());
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->add_flag("--profile", o->profile,
                "After the timed iterations, time each step of one more forward + backward (CUDA events; "
                "--device cuda only)");
  cmd->add_option("--device", o->device, "cpu (MoeLayer, fp32) or cuda (cuda::MoeBlock on the current GPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--precision", o->precision, "fp32 or bf16 (bf16 activations and weights, fp32 accumulation; "
                                               "--device cuda only)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  cmd->add_option("--expert-gemms", o->expert_gemms,
                  "auto (measure both on the first call, keep the faster), grouped (one grouped cuBLAS GEMM per "
                  "product) or per_expert (cuBLASLt per expert, fused epilogues); --device cuda only")
      ->check(CLI::IsMember({"auto", "grouped", "per_expert"}));
  cmd->callback([&action, o] { action = [o] { return bench_moe_layer_on(*o); }; });
}

}  // namespace moebench::cli
