// The experts' launchers (experts.h): the grouped path (one cublasGemmGroupedBatchedEx call per
// matrix product over all experts with rows, bias and GeLU kernels between them), and the choice
// between it and the per-expert path (experts_per_expert.cu), measured on scratch outputs at a
// shape class's first call (expert_gemm_tuner.h).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <list>
#include <stdexcept>
#include <string>
#include <vector>

#include "experts_detail.cuh"
#include "moebench/kernels/experts.h"
#include "moebench/kernels/expert_gemm_tuner.h"
#include "moebench/kernels/kernel_profile.h"

namespace moebench::cuda {
using namespace experts_detail;

namespace experts_detail {

template <typename T>
void grouped_forward(T* y, T* h, T* a, const T* x, const int* offsets, const ExpertWeights<T>& w, int E, int C,
                     int F, cudaStream_t stream) {
  const int S = offsets[E];
  const auto [g1, g2] = forward_gemms<T>(y, h, a, x, offsets, w, E, C, F);
  const GroupedUpload up({&g1, &g2}, offsets, E, stream);
  profile_step("experts: pointer arrays upload", stream);
  grouped_gemm<T>(g1, up.arrays(0), 1.0f, 0.0f, stream);  // h = x W1^T
  profile_step("experts: h = x W1^T (grouped)", stream);
  bias_gelu(h, a, w.b1, up.offsets(), E, S, F, w.step(F), stream);
  profile_step("experts: h += b1, a = gelu(h) (one kernel)", stream);
  grouped_gemm<T>(g2, up.arrays(1), 1.0f, 0.0f, stream);  // y = a W2^T
  profile_step("experts: y = a W2^T (grouped)", stream);
  add_expert_bias(y, w.b2, up.offsets(), E, S, C, w.step(C), stream);
  profile_step("experts: y += b2", stream);
}

template <typename T>
void grouped_backward(T* dx, const ExpertWeights<T>& dw, T* da, T* dh, const T* dy, const T* x, const T* h,
                      const T* a, const int* offsets, const ExpertWeights<T>& w, int E, int C, int F,
                      cudaStream_t stream) {
  const auto [g_dw2, g_da, g_dw1, g_dx] = backward_gemms<T>(dx, dw, da, dh, dy, x, a, offsets, w, E, C, F);
  const GroupedUpload up({&g_dw2, &g_da, &g_dw1, &g_dx}, offsets, E, stream);
  profile_step("experts: pointer arrays upload", stream);
  // W2: dW2 += dy^T a, da = dy W2, db2 += sum dy.
  grouped_gemm<T>(g_dw2, up.arrays(0), 1.0f, 1.0f, stream);
  profile_step("experts: dW2 += dy^T a (grouped)", stream);
  grouped_gemm<T>(g_da, up.arrays(1), 1.0f, 0.0f, stream);
  profile_step("experts: da = dy W2 (grouped)", stream);
  const ExpertRowChunks chunks(offsets, E, std::max(C, F), stream);
  expert_bias_grad(dw.b2, dy, chunks, C, dw.step(C), stream);
  profile_step("experts: db2 (row chunks, then experts)", stream);
  // GeLU and b1: dh = gelu'(h) da with db1's chunk sums in one pass, then db1 += them.
  gelu_backward_bias_grad(dh, dw.b1, h, da, chunks, F, dw.step(F), stream);
  profile_step("experts: dh = gelu'(h) da, db1 (row chunks, then experts)", stream);
  // W1: dW1 += dh^T x, dx = dh W1.
  grouped_gemm<T>(g_dw1, up.arrays(2), 1.0f, 1.0f, stream);
  profile_step("experts: dW1 += dh^T x (grouped)", stream);
  grouped_gemm<T>(g_dx, up.arrays(3), 1.0f, 0.0f, stream);
  profile_step("experts: dx = dh W1 (grouped)", stream);
}

}  // namespace experts_detail

namespace {

// Scratch for the tuning runs: StreamArrays (experts_detail.cuh) that report no room as !ok()
// (the class then takes the grouped path unmeasured).
using Scratch = StreamArrays;

// Gradients' scratch with the layout of `dw`: one region for the arena's layout (stride: the
// four tensors of every expert inside [lowest, lowest + span)), else one array per tensor.
template <typename T>
ExpertWeights<T> scratch_like(Scratch& s, const ExpertWeights<T>& dw, int E, int C, int F) {
  const long own[4] = {(long)F * C, F, (long)C * F, C};
  T* const ptr[4] = {dw.w1, dw.b1, dw.w2, dw.b2};
  T* out[4] = {};
  if (dw.stride) {
    const T* lowest = *std::min_element(ptr, ptr + 4);
    long span = 0;
    for (int t = 0; t < 4; ++t) span = std::max(span, (long)(ptr[t] - lowest) + (long)(E - 1) * dw.stride + own[t]);
    T* region = s.get<T>((size_t)span, lowest);
    for (int t = 0; t < 4 && region; ++t) out[t] = region + (ptr[t] - lowest);
  } else {
    for (int t = 0; t < 4; ++t) out[t] = s.get<T>((size_t)E * own[t], ptr[t]);
  }
  return {out[0], out[1], out[2], out[3], dw.stride};
}

// Runs the call on `requested`'s path, or on the tuner's (automatic): the first call of a shape
// class first measures both paths on scratch outputs (kRounds each, alternating; one host wait),
// so every real call of a class computes on the path the class keeps.
template <class Run>
void run_on_path(ExpertGemmShape shape, ExpertGemmPath requested, cudaStream_t stream, Run run,
                 const std::function<bool(Scratch&, std::function<void(ExpertGemmPath)>&)>& scratch_run) {
  ExpertGemmPath path = requested;
  if (path == ExpertGemmPath::automatic) {
    MOEBENCH_CUDA_CHECK(cudaGetDevice(&shape.device));
    ExpertGemmTuner& tuner = expert_gemm_tuner();
    bool measure = false;
    path = tuner.next(shape, measure);
    if (measure) {
      Scratch scratch(stream);
      std::function<void(ExpertGemmPath)> on_scratch;
      struct Timed {  // one timed run; its events destroyed with it (also while an error unwinds)
        ExpertGemmPath path;
        cudaEvent_t start = nullptr, stop = nullptr;
        ~Timed() {
          if (start) (void)cudaEventDestroy(start);
          if (stop) (void)cudaEventDestroy(stop);
        }
      };
      std::list<Timed> timed;
      if (scratch_run(scratch, on_scratch)) {
        const ProfilePaused paused;  // the timed runs' inner steps are not the call's
        for (; measure; path = tuner.next(shape, measure)) {
          Timed& t = timed.emplace_back();
          t.path = path;
          MOEBENCH_CUDA_CHECK(cudaEventCreate(&t.start));
          MOEBENCH_CUDA_CHECK(cudaEventCreate(&t.stop));
          MOEBENCH_CUDA_CHECK(cudaEventRecord(t.start, stream));
          on_scratch(path);
          MOEBENCH_CUDA_CHECK(cudaEventRecord(t.stop, stream));
        }
        MOEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
      }
      for (const Timed& t : timed) {
        float ms = 0.0f;
        MOEBENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, t.start, t.stop));
        tuner.report(shape, t.path, ms / 1e3);
      }
      if (timed.empty()) tuner.settle(shape, ExpertGemmPath::grouped);  // no room to measure
      path = tuner.next(shape, measure);
      profile_step("experts: measuring both GEMM paths (first call of the shape)", stream);
    }
  }
  run(path);
}

}  // namespace

template <typename T>
void experts_forward(T* y, T* h, T* a, const T* x, const int* offsets, const ExpertWeights<T>& w,
                     int E, int C, int F, cudaStream_t stream, ExpertGemmPath path) {
  const int S = check_experts<T>(offsets, E, C, F, "cuda::experts_forward");
  if (S == 0) return;
  const ExpertGemmShape shape{0, (int)sizeof(T), E, C, F, false, rows_log2(S)};
  auto on = [&](ExpertGemmPath p, T* y_, T* h_, T* a_) {
    if (p == ExpertGemmPath::per_expert) per_expert_forward<T>(y_, h_, a_, x, offsets, w, E, C, F, stream);
    else grouped_forward<T>(y_, h_, a_, x, offsets, w, E, C, F, stream);
  };
  run_on_path(shape, path, stream, [&](ExpertGemmPath p) { on(p, y, h, a); },
              [&](Scratch& s, std::function<void(ExpertGemmPath)>& f) {
                T* ys = s.get<T>((size_t)S * C, y);
                T* hs = s.get<T>((size_t)S * F, h);
                T* as = s.get<T>((size_t)S * F, a);
                f = [=](ExpertGemmPath p) { on(p, ys, hs, as); };
                return s.ok();
              });
}

template <typename T>
void experts_backward(T* dx, const ExpertWeights<T>& dw, T* da, T* dh, const T* dy, const T* x,
                      const T* h, const T* a, const int* offsets, const ExpertWeights<T>& w, int E,
                      int C, int F, cudaStream_t stream, ExpertGemmPath path) {
  const int S = check_experts<T>(offsets, E, C, F, "cuda::experts_backward");
  if (S == 0) return;
  const ExpertGemmShape shape{0, (int)sizeof(T), E, C, F, true, rows_log2(S)};
  auto on = [&](ExpertGemmPath p, T* dx_, const ExpertWeights<T>& dw_, T* da_, T* dh_) {
    if (p == ExpertGemmPath::per_expert) per_expert_backward<T>(dx_, dw_, da_, dh_, dy, x, h, a, offsets, w, E, C, F, stream);
    else grouped_backward<T>(dx_, dw_, da_, dh_, dy, x, h, a, offsets, w, E, C, F, stream);
  };
  run_on_path(shape, path, stream, [&](ExpertGemmPath p) { on(p, dx, dw, da, dh); },
              [&](Scratch& s, std::function<void(ExpertGemmPath)>& f) {
                T* dxs = s.get<T>((size_t)S * C, dx);
                T* das = s.get<T>((size_t)S * F, da);
                T* dhs = s.get<T>((size_t)S * F, dh);
                const ExpertWeights<T> dws = scratch_like(s, dw, E, C, F);
                f = [=](ExpertGemmPath p) { on(p, dxs, dws, das, dhs); };
                return s.ok();
              });
}

template void experts_forward<float>(float*, float*, float*, const float*, const int*,
                                     const ExpertWeights<float>&, int, int, int, cudaStream_t, ExpertGemmPath);
template void experts_forward<bf16>(bf16*, bf16*, bf16*, const bf16*, const int*, const ExpertWeights<bf16>&,
                                    int, int, int, cudaStream_t, ExpertGemmPath);
template void experts_backward<float>(float*, const ExpertWeights<float>&, float*, float*, const float*,
                                      const float*, const float*, const float*, const int*,
                                      const ExpertWeights<float>&, int, int, int, cudaStream_t, ExpertGemmPath);
template void experts_backward<bf16>(bf16*, const ExpertWeights<bf16>&, bf16*, bf16*, const bf16*, const bf16*,
                                     const bf16*, const bf16*, const int*, const ExpertWeights<bf16>&, int, int,
                                     int, cudaStream_t, ExpertGemmPath);

}  // namespace moebench::cuda
