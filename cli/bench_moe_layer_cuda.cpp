// moebench bench moe-layer --device cuda [--precision fp32|bf16]: one cuda::MoeBlock forward
// and backward on the current GPU (CUDA_VISIBLE_DEVICES picks it), dropless with normalised
// gates and aux weight 0.01 as on the CPU; each pass timed with CUDA events, median of --iters
// after one warm-up forward+backward. Same flop formula as the CPU path.
//
// x, router_w and dout are drawn on the host and uploaded (rounded to bf16 with --precision
// bf16) from Rng(42) in the order and scale of the CPU path, so the routing is that of the CPU
// run of the same shape; the expert weights (N(0, 0.02^2) as on the CPU, other values) on the
// device by cuda::fill_normal, one stream per expert and tensor, since at the target sizes
// (E * 2 * H * A*H values, 10^9 and more) the host would take minutes.
//
// The reference rate, measured in the same command with cuda::time_gemm of the block's type
// (bf16: bf16 in and out, fp32 accumulation; fp32: true fp32, no TF32): the expert-FFN shape
// [T*K/E, H] x [H, A*H] and 8192^3, the best of the two is "the measured GEMM rate".
#include "bench_moe_layer.h"

#ifdef MOEBENCH_HAVE_CUDA
#include <cuda_runtime.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/device_buffer.h"
#include "moebench/kernels/expert_gemm_tuner.h"
#include "moebench/kernels/gemm_timing.h"
#include "moebench/kernels/kernel_profile.h"
#include "moebench/kernels/moe_block.h"
#include "moebench/kernels/precision.h"
#include "moebench/kernels/random_fill.h"
#include "moebench/tensor/matmul.h"
#include "moebench/tensor/rng.h"

namespace moebench::cli {
namespace {

constexpr float kAuxWeight = 0.01f;  // as the CPU path

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class Event {
 public:
  Event() { MOEBENCH_CUDA_CHECK(cudaEventCreate(&e_)); }
  ~Event() { (void)cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record() { MOEBENCH_CUDA_CHECK(cudaEventRecord(e_, nullptr)); }
  void synchronize() { MOEBENCH_CUDA_CHECK(cudaEventSynchronize(e_)); }
  // Seconds from `start` to this event (both recorded and complete).
  double seconds_since(const Event& start) const {
    float ms = 0.0f;
    MOEBENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, start.e_, e_));
    return ms * 1e-3;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

std::vector<float> normals(Rng& rng, size_t n, float scale) {
  std::vector<float> v(n);
  for (auto& x : v) x = rng.normal() * scale;
  return v;
}

// dst[0, v.size()) = v converted to T.
template <typename T>
void upload(T* dst, const std::vector<float>& v) {
  std::vector<T> t(v.size());
#pragma omp parallel for schedule(static)
  for (long i = 0; i < (long)v.size(); ++i) t[i] = cuda::from_float<T>(v[i]);
  MOEBENCH_CUDA_CHECK(cudaMemcpy(dst, t.data(), sizeof(T) * t.size(), cudaMemcpyHostToDevice));
}

// The E experts' tensors (experts.h layout), or their gradients (zeroed).
template <typename T>
struct Experts {
  cuda::DeviceBuffer<T> w1, b1, w2, b2;
  Experts(int E, int C, int F)
      : w1((size_t)E * F * C), b1((size_t)E * F), w2((size_t)E * C * F), b2((size_t)E * C) {}
  cuda::ExpertWeights<T> view() { return {w1.data(), b1.data(), w2.data(), b2.data()}; }
};

struct BlockTiming {
  double forward = 0.0, backward = 0.0;  // median seconds
  long kept = 0;                          // kept assignments T_kept
  float aux = 0.0f;
  std::vector<cuda::KernelProfile::Step> steps;  // --profile: one more forward + backward, step by step
};

template <typename T>
BlockTiming time_block(const MoeBenchOptions& o) {
  const int N = o.tokens, C = o.hidden, F = o.ffn_mult * o.hidden, E = o.experts, K = o.top_k;
  const size_t nc = (size_t)N * C, ec = (size_t)E * C, fc = (size_t)F * C;
  Rng rng(42);  // the CPU path's draws, in its order
  cuda::DeviceBuffer<T> x(nc), router(ec), dout(nc), out(nc), dx(nc), drouter(ec);
  upload(x.data(), normals(rng, nc, 1.0f));
  upload(router.data(), normals(rng, ec, 0.02f));
  upload(dout.data(), normals(rng, nc, 1.0f / N));
  dx.zero();
  drouter.zero();
  Experts<T> w(E, C, F), g(E, C, F);
  for (int e = 0; e < E; ++e) {  // stream (42, expert, tensor)
    const uint64_t key = (uint64_t{42} << 40) | ((uint64_t)e << 8);
    cuda::fill_normal(w.w1.data() + e * fc, (long)fc, 0.02f, key | 0);
    cuda::fill_normal(w.b1.data() + (size_t)e * F, F, 0.02f, key | 1);
    cuda::fill_normal(w.w2.data() + e * fc, (long)fc, 0.02f, key | 2);
    cuda::fill_normal(w.b2.data() + (size_t)e * C, C, 0.02f, key | 3);
  }
  for (auto* b : {&g.w1, &g.b1, &g.w2, &g.b2}) b->zero();

  cuda::MoeBlock<T> block;
  block.expert_gemms = *cuda::parse_expert_gemm_path(o.expert_gemms);
  BlockTiming t;
  auto forward = [&] {
    t.aux = block.forward(out.data(), x.data(), router.data(), w.view(), N, C, F, E, K, /*capacity: dropless*/ 0, true, nullptr);
  };
  auto backward = [&] {
    block.backward(dx.data(), drouter.data(), g.view(), dout.data(), kAuxWeight, x.data(), router.data(), w.view(),
                   nullptr);
  };
  forward();
  backward();  // warm-up: sizes the buffers, first cuBLAS calls
  MOEBENCH_CUDA_CHECK(cudaDeviceSynchronize());
  Event start, mid, stop;
  std::vector<double> tf, tb;
  for (int i = 0; i < o.iters; ++i) {
    start.record();
    forward();
    mid.record();
    backward();
    stop.record();
    stop.synchronize();
    tf.push_back(mid.seconds_since(start));
    tb.push_back(stop.seconds_since(mid));
  }
  t.forward = median(tf);
  t.backward = median(tb);
  t.kept = block.rows();
  if (o.profile) {  // after the timed iterations: the marks' events do not weigh on them
    cuda::KernelProfile profile(nullptr);
    forward();
    cuda::profile_step("(forward done)", nullptr);
    backward();
    t.steps = profile.finish();
  }
  return t;
}

// The experts' GEMM path of a shape class: forced, or what the tuner measured and chose.
std::string expert_gemms_line(const MoeBenchOptions& o, bool bf16, int C, int F, long kept, bool backward,
                              nlohmann::json& j) {
  const cuda::ExpertGemmPath forced = *cuda::parse_expert_gemm_path(o.expert_gemms);
  const char* pass = backward ? "backward" : "forward";
  if (forced != cuda::ExpertGemmPath::automatic) {
    j[pass] = {{"path", o.expert_gemms}, {"forced", true}};
    return std::string(pass) + " " + o.expert_gemms + " (forced)";
  }
  cuda::ExpertGemmShape s{0, bf16 ? 2 : 4, o.experts, C, F, backward, cuda::rows_log2(kept)};
  MOEBENCH_CUDA_CHECK(cudaGetDevice(&s.device));
  cuda::ExpertGemmTuner& t = cuda::expert_gemm_tuner();
  const auto chosen = t.decided(s);
  std::string line = std::string(pass) + " " + (chosen ? cuda::expert_gemm_path_name(*chosen) : "?");
  std::vector<double> g = t.seconds(s, cuda::ExpertGemmPath::grouped), p = t.seconds(s, cuda::ExpertGemmPath::per_expert);
  for (auto* v : {&g, &p})
    for (double& x : *v) x *= 1e3;  // ms
  auto text = [](const std::vector<double>& v) {
    std::string r;
    char b[32];
    for (double x : v) std::snprintf(b, sizeof b, "%s%.3f", r.empty() ? "" : ", ", x), r += b;
    return r;
  };
  if (!g.empty() || !p.empty()) line += " (measured ms, warm-up first: grouped " + text(g) + "; per_expert " + text(p) + ")";
  else line += " (not measured: no room for the tuning scratch)";
  j[pass] = {{"path", chosen ? cuda::expert_gemm_path_name(*chosen) : "?"}, {"forced", false},
             {"grouped_ms", g}, {"per_expert_ms", p}};
  return line;
}

struct GemmRate {
  int m, n, k;
  double tflops;
};

GemmRate gemm_rate(int m, int n, int k, cuda::GemmType type, int iters) {
  const double sec = median(cuda::time_gemm(m, n, k, type, 3, iters));
  return {m, n, k, 2.0 * m * n * k / sec / 1e12};
}

std::string device_name() {
  int dev = 0;
  MOEBENCH_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  MOEBENCH_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  return "CUDA device " + std::to_string(dev) + " (" + prop.name + ")";
}

}  // namespace

int bench_moe_layer_cuda(const MoeBenchOptions& o) {
  set_num_threads(o.threads);  // host-side input generation
  const int N = o.tokens, C = o.hidden, F = o.ffn_mult * o.hidden, E = o.experts, K = o.top_k;
  const bool bf16 = o.precision == "bf16";
  const std::string device = device_name();
  const BlockTiming t = bf16 ? time_block<cuda::bf16>(o) : time_block<float>(o);  // frees its buffers

  const cuda::GemmType type = bf16 ? cuda::GemmType::bf16 : cuda::GemmType::fp32;
  const int rows = std::max(1, (int)((long)N * K / E));
  const GemmRate rates[] = {gemm_rate(rows, F, C, type, o.iters), gemm_rate(8192, 8192, 8192, type, o.iters)};
  const double peak = std::max(rates[0].tflops, rates[1].tflops);

  const double fwd_flops = 2.0 * N * C * E + 4.0 * t.kept * C * F;
  const double total_flops = 3.0 * fwd_flops;
  const double mt = t.forward + t.backward;
  const double tflops = total_flops / mt / 1e12;
  const double percent = 100.0 * tflops / peak;
  const char* tname = cuda::gemm_type_name(type);
  nlohmann::json gemms;
  const std::string fwd_line = expert_gemms_line(o, bf16, C, F, t.kept, false, gemms);
  const std::string bwd_line = expert_gemms_line(o, bf16, C, F, t.kept, true, gemms);
  nlohmann::json steps = nlohmann::json::array();
  for (const cuda::KernelProfile::Step& s : t.steps) steps.push_back({{"step", s.name}, {"ms", s.seconds * 1e3}});
  if (o.json) {
    nlohmann::json shapes = nlohmann::json::array();
    for (const GemmRate& r : rates) shapes.push_back({{"m", r.m}, {"n", r.n}, {"k", r.k}, {"tflops", r.tflops}});
    nlohmann::json j = {{"device", "cuda"}, {"gpu", device}, {"precision", o.precision}, {"tokens", N},
                        {"hidden", C}, {"ffn_mult", o.ffn_mult}, {"experts", E}, {"top_k", K}, {"iters", o.iters},
                        {"kept_assignments", t.kept}, {"aux", t.aux}, {"forward_ms", t.forward * 1e3},
                        {"backward_ms", t.backward * 1e3}, {"total_ms", mt * 1e3}, {"tokens_per_s", N / mt},
                        {"gflops", tflops * 1e3}, {"tflops", tflops}, {"flops", total_flops},
                        {"flop_formula", "3 x (2*T*H*E + 4*T_kept*H*(A*H))"}, {"gemm_type", tname},
                        {"gemm_shapes", shapes}, {"gemm_rate_tflops", peak}, {"gemm_rate_percent", percent},
                        {"expert_gemms", gemms}};
    if (o.profile) j["profile"] = steps;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("# MoE layer fwd+bwd on %s, %s: T=%d H=%d A=%d E=%d K=%d, median of %d after 1 warm-up\n",
              device.c_str(), o.precision.c_str(), N, C, o.ffn_mult, E, K, o.iters);
  std::printf("# flops = 3 x (2*T*H*E + 4*T_kept*H*(A*H)) = %.3f GFLOP (T_kept = %ld)\n", total_flops / 1e9, t.kept);
  std::printf("forward  %9.3f ms\nbackward %9.3f ms\ntotal    %9.3f ms | %.0f tokens/s | %.1f TFLOP/s\n",
              t.forward * 1e3, t.backward * 1e3, mt * 1e3, N / mt, tflops);
  std::printf("# %s GEMM (cublasGemmEx): [%d,%d]x[%d,%d] (expert FFN) %.1f TFLOP/s, 8192^3 %.1f TFLOP/s\n", tname,
              rates[0].m, rates[0].k, rates[0].k, rates[0].n, rates[0].tflops, rates[1].tflops);
  std::printf("%.1f %% of the measured %s GEMM rate (%.1f TFLOP/s)\n", percent, tname, peak);
  std::printf("# expert GEMMs: %s; %s\n", fwd_line.c_str(), bwd_line.c_str());
  if (o.profile) {
    double sum = 0.0;
    for (const cuda::KernelProfile::Step& s : t.steps) sum += s.seconds;
    std::printf("# profile of one forward + backward (CUDA events between the steps; %.3f ms in all):\n", sum * 1e3);
    for (const cuda::KernelProfile::Step& s : t.steps)
      std::printf("%9.3f ms %5.1f %%  %s\n", s.seconds * 1e3, sum > 0 ? 100.0 * s.seconds / sum : 0.0, s.name.c_str());
  }
  return 0;
}

}  // namespace moebench::cli
#endif
