// The experts' per-expert path (experts.h): one cuBLASLt matmul per expert and product, on side
// streams of the calling thread, with the bias, GeLU, GeLU derivative and b1's gradient in the
// GEMMs' epilogues where cuBLASLt has an algorithm for them.
#include <cublasLt.h>

#include <cstdint>
#include <algorithm>
#include <map>
#include <memory>
#include <utility>
#include <stdexcept>
#include <string>
#include <vector>

#include "experts_detail.cuh"
#include "moebench/kernels/kernel_profile.h"

namespace moebench::cuda::experts_detail {
namespace {

constexpr int kSideStreams = 4;
constexpr size_t kWorkspaceBytes = size_t(32) << 20;  // per side stream (cuBLASLt's Hopper kernels want 32 MiB)

// The calling thread's cuBLASLt handle, side streams, their workspaces and events on one device.
struct LtSide {
  cublasLtHandle_t lt = nullptr;
  cudaStream_t stream[kSideStreams] = {};
  void* workspace[kSideStreams] = {};
  cudaEvent_t done[kSideStreams] = {};
  cudaEvent_t fork = nullptr;
};

struct ThreadSides {
  std::map<int, LtSide> by_device;
  ThreadSides() = default;
  ThreadSides(const ThreadSides&) = delete;
  ThreadSides& operator=(const ThreadSides&) = delete;
  ~ThreadSides() {  // at thread exit; errors ignored (the runtime may be shutting down)
    int current = -1;
    const bool have_current = cudaGetDevice(&current) == cudaSuccess;
    for (auto& [device, s] : by_device) {
      if (cudaSetDevice(device) != cudaSuccess) continue;
      for (int i = 0; i < kSideStreams; ++i) {
        if (s.stream[i]) (void)cudaStreamSynchronize(s.stream[i]), (void)cudaStreamDestroy(s.stream[i]);
        if (s.workspace[i]) (void)cudaFree(s.workspace[i]);
        if (s.done[i]) (void)cudaEventDestroy(s.done[i]);
      }
      if (s.fork) (void)cudaEventDestroy(s.fork);
      if (s.lt) (void)cublasLtDestroy(s.lt);
    }
    if (have_current) (void)cudaSetDevice(current);
    (void)cudaGetLastError();
  }
};

LtSide& lt_side() {
  thread_local ThreadSides sides;
  int device = 0;
  MOEBENCH_CUDA_CHECK(cudaGetDevice(&device));
  LtSide& s = sides.by_device[device];
  if (!s.lt) {
    MOEBENCH_CUBLAS_CHECK(cublasLtCreate(&s.lt));
    for (int i = 0; i < kSideStreams; ++i) {
      MOEBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream[i], cudaStreamNonBlocking));
      MOEBENCH_CUDA_CHECK(cudaMalloc(&s.workspace[i], kWorkspaceBytes));
      MOEBENCH_CUDA_CHECK(cudaEventCreateWithFlags(&s.done[i], cudaEventDisableTiming));
    }
    MOEBENCH_CUDA_CHECK(cudaEventCreateWithFlags(&s.fork, cudaEventDisableTiming));
  }
  return s;
}

// The side streams start after what `stream` has so far...
void fork(LtSide& s, cudaStream_t stream) {
  MOEBENCH_CUDA_CHECK(cudaEventRecord(s.fork, stream));
  for (int i = 0; i < kSideStreams; ++i) MOEBENCH_CUDA_CHECK(cudaStreamWaitEvent(s.stream[i], s.fork, 0));
}
// ... and `stream` goes on after what they have.
void join(LtSide& s, cudaStream_t stream) {
  for (int i = 0; i < kSideStreams; ++i) {
    MOEBENCH_CUDA_CHECK(cudaEventRecord(s.done[i], s.stream[i]));
    MOEBENCH_CUDA_CHECK(cudaStreamWaitEvent(stream, s.done[i], 0));
  }
}

// One matmul: problem i of a GroupedGemmArgs (D = C = op(A) op(B), beta 0 or 1), with an epilogue.
struct LtGemm {
  const GroupedGemmArgs* g = nullptr;
  int i = 0;
  float beta = 0.0f;
  void* D = nullptr;  // the output (problem's C unless an epilogue writes elsewhere)
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;  // BIAS: input; DGELU_BGRAD: the bias gradient's output
  const void* aux = nullptr;   // GELU_AUX_BIAS: h written; DGELU_BGRAD: h read
  long aux_ld = 0;
};

template <typename T>
struct Desc {  // RAII over the descriptors of one matmul
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~Desc() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

template <typename T>
void set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const T& v) {
  MOEBENCH_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof v));
}

// The largest power of two up to 256 dividing the address: what cuBLASLt may assume of it (its
// default, 256, would let it pick algorithms that refuse or fault on a row slice).
uint32_t alignment_of(const void* p) {
  const uintptr_t v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && v % a != 0) a /= 2;
  return a;
}

// One planned matmul: its descriptors and the algorithm cuBLASLt chose for them.
template <typename T>
struct LtPlan {
  LtGemm m;
  Desc<T> d;
  cublasLtMatmulAlgo_t algo{};
};

// Plans the matmul (the heuristic only, nothing enqueued); null when cuBLASLt has no algorithm
// (with an epilogue: any refusal of the heuristic, e.g. an epilogue it does not offer for this
// type, shape or alignment).
template <typename T>
std::unique_ptr<LtPlan<T>> plan(LtSide& side, const LtGemm& m) {
  const GroupedGemmArgs& g = *m.g;
  const int i = m.i;
  const cudaDataType_t type = cuda_type<T>();
  const cublasOperation_t ta = cublas_op(g.transa), tb = cublas_op(g.transb);
  auto p = std::make_unique<LtPlan<T>>();
  p->m = m;
  Desc<T>& d = p->d;
  MOEBENCH_CUBLAS_CHECK(cublasLtMatmulDescCreate(&d.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  set(d.op, CUBLASLT_MATMUL_DESC_TRANSA, ta);
  set(d.op, CUBLASLT_MATMUL_DESC_TRANSB, tb);
  if (m.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    set(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, m.epilogue);
    if (m.bias) set(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, m.bias);
    if (m.aux) {
      set(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, m.aux);
      set(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, (int64_t)m.aux_ld);
    }
  }
  const int m_ = g.m[i], n = g.n[i], k = g.k[i];
  MOEBENCH_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.a, type, ta == CUBLAS_OP_N ? m_ : k, ta == CUBLAS_OP_N ? k : m_,
                                                   g.lda[i]));
  MOEBENCH_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.b, type, tb == CUBLAS_OP_N ? k : n, tb == CUBLAS_OP_N ? n : k,
                                                   g.ldb[i]));
  MOEBENCH_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.c, type, m_, n, g.ldc[i]));
  MOEBENCH_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&d.pref));
  const uint64_t ws = kWorkspaceBytes;
  MOEBENCH_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  const std::pair<cublasLtMatmulPreferenceAttributes_t, const void*> operands[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, g.A[i]},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, g.B[i]},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, m.D},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, m.D}};
  for (const auto& [attr, ptr] : operands) {
    const uint32_t a = alignment_of(ptr);
    MOEBENCH_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(d.pref, attr, &a, sizeof a));
  }
  cublasLtMatmulHeuristicResult_t found{};
  int count = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(side.lt, d.op, d.a, d.b, d.c, d.c, d.pref, 1, &found, &count);
  if (m.epilogue != CUBLASLT_EPILOGUE_DEFAULT && (st != CUBLAS_STATUS_SUCCESS || count == 0)) return nullptr;
  MOEBENCH_CUBLAS_CHECK(st);
  if (count == 0) return nullptr;
  p->algo = found.algo;
  return p;
}

template <typename T>
using Plans = std::vector<std::unique_ptr<LtPlan<T>>>;

// Plans every matmul of `ms`; empty when one has none (the caller then plans them without the
// epilogue). `what` names them in the error when even that fails.
template <typename T>
Plans<T> plan_all(LtSide& side, const std::vector<LtGemm>& ms, const char* what) {
  Plans<T> out;
  for (const LtGemm& m : ms) {
    std::unique_ptr<LtPlan<T>> p = plan<T>(side, m);
    if (!p) {
      if (m.epilogue != CUBLASLT_EPILOGUE_DEFAULT) return {};
      throw std::runtime_error(std::string("cuBLASLt has no algorithm for the experts' ") + what + " (expert " +
                               std::to_string(m.g->expert[(size_t)m.i]) + ")");
    }
    out.push_back(std::move(p));
  }
  return out;
}

// Enqueues the planned matmul on side stream `slot`.
template <typename T>
void run(LtSide& side, int slot, const LtPlan<T>& p) {
  const GroupedGemmArgs& g = *p.m.g;
  const float alpha = 1.0f, beta = p.m.beta;
  MOEBENCH_CUBLAS_CHECK(cublasLtMatmul(side.lt, p.d.op, &alpha, g.A[p.m.i], p.d.a, g.B[p.m.i], p.d.b, &beta, p.m.D,
                                       p.d.c, p.m.D, p.d.c, &p.algo, side.workspace[slot], kWorkspaceBytes,
                                       side.stream[slot]));
}

// The side streams forked from `stream` for a scope: joined back when it ends, also while an
// error unwinds (so nothing freed on `stream` afterwards is still being written).
class Forked {
 public:
  Forked(LtSide& side, cudaStream_t stream) : side_(side), stream_(stream) { fork(side_, stream_); }
  ~Forked() {
    try {
      join(side_, stream_);
    } catch (...) {
    }
  }
  Forked(const Forked&) = delete;
  Forked& operator=(const Forked&) = delete;

 private:
  LtSide& side_;
  cudaStream_t stream_;
};

// Whether every expert's epilogue operands are 16-byte aligned (cuBLASLt's vectorised
// epilogues; checked before the first one is tried, so no expert faults on a misaligned bias).
bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// dst[e * stride + j] += src[i * OC + j] for problem i of expert experts[i].
template <typename T>
__global__ void __launch_bounds__(kBiasBlock)
    add_problem_rows_kernel(T* dst, const T* src, const int* experts, int OC, long stride) {
  const int i = blockIdx.y;
  const int j = blockIdx.x * kBiasBlock + threadIdx.x;
  if (j >= OC) return;
  T* d = dst + (long)experts[i] * stride + j;
  *d = from_float<T>(to_float(*d) + to_float(src[(long)i * OC + j]));
}

}  // namespace

template <typename T>
void per_expert_forward(T* y, T* h, T* a, const T* x, const int* offsets, const ExpertWeights<T>& w, int E, int C,
                        int F, cudaStream_t stream) {
  const int S = offsets[E];
  const auto [g1, g2] = forward_gemms<T>(y, h, a, x, offsets, w, E, C, F);  // g1's outputs: h's rows
  LtSide& side = lt_side();
  // Every matmul is planned before any is enqueued: the first GEMM with bias + GeLU (h kept as the
  // epilogue's aux output, ld F: a multiple of 8), the second with its bias; else without.
  std::vector<LtGemm> m1, m2, plain1, plain2;
  bool fusable1 = F % 8 == 0, fusable2 = true;
  for (int i = 0; i < g1.count(); ++i) {
    const int e = g1.expert[(size_t)i];
    const long r0 = offsets[e];
    m1.push_back({&g1, i, 0.0f, a + r0 * F, CUBLASLT_EPILOGUE_GELU_AUX_BIAS, w.b1 + (long)e * w.step(F), h + r0 * F, F});
    m2.push_back({&g2, i, 0.0f, g2.C[(size_t)i], CUBLASLT_EPILOGUE_BIAS, w.b2 + (long)e * w.step(C)});
    plain1.push_back({&g1, i, 0.0f, g1.C[(size_t)i]});
    plain2.push_back({&g2, i, 0.0f, g2.C[(size_t)i]});
    fusable1 = fusable1 && aligned(a + r0 * F) && aligned(h + r0 * F) && aligned(w.b1 + (long)e * w.step(F));
    fusable2 = fusable2 && aligned(w.b2 + (long)e * w.step(C));
  }
  Plans<T> p1 = fusable1 ? plan_all<T>(side, m1, "first GEMM") : Plans<T>{};
  const bool fused1 = !p1.empty();
  if (!fused1) p1 = plan_all<T>(side, plain1, "first GEMM");
  Plans<T> p2 = fusable2 ? plan_all<T>(side, m2, "second GEMM") : Plans<T>{};
  const bool fused2 = !p2.empty();
  if (!fused2) p2 = plan_all<T>(side, plain2, "second GEMM");
  if (fused1) {  // each expert's two GEMMs on one side stream
    Forked f(side, stream);
    for (size_t i = 0; i < p1.size(); ++i) {
      run(side, (int)i % kSideStreams, *p1[i]);
      run(side, (int)i % kSideStreams, *p2[i]);
    }
  } else {  // bias and GeLU as the grouped path's kernel between the GEMMs
    {
      Forked f(side, stream);
      for (size_t i = 0; i < p1.size(); ++i) run(side, (int)i % kSideStreams, *p1[i]);
    }
    profile_step("experts: h = x W1^T (per expert)", stream);
    const GroupedUpload up(offsets, E, stream);
    bias_gelu(h, a, w.b1, up.offsets(), E, S, F, w.step(F), stream);
    profile_step("experts: a = gelu(h + b1) (kernel)", stream);
    Forked f(side, stream);
    for (size_t i = 0; i < p2.size(); ++i) run(side, (int)i % kSideStreams, *p2[i]);
  }
  profile_step(fused1 ? "experts: a = gelu(x W1^T + b1), y = a W2^T (+ b2) (per expert, fused)"
                      : "experts: y = a W2^T (per expert)",
               stream);
  if (!fused2) {
    const GroupedUpload up(offsets, E, stream);
    add_expert_bias(y, w.b2, up.offsets(), E, S, C, w.step(C), stream);
    profile_step("experts: y += b2 (kernel)", stream);
  }
}

template <typename T>
void per_expert_backward(T* dx, const ExpertWeights<T>& dw, T* da, T* dh, const T* dy, const T* x, const T* h,
                         const T* a, const int* offsets, const ExpertWeights<T>& w, int E, int C, int F,
                         cudaStream_t stream) {
  const size_t el = sizeof(T);
  const auto [g_dw2, g_da, g_dw1, g_dx] = backward_gemms<T>(dx, dw, da, dh, dy, x, a, offsets, w, E, C, F);
  const int n = g_da.count();
  // b2's gradient (kernel, as the grouped path); b1's per problem from the epilogue, added after.
  StreamArrays arrays(stream);  // freed after the side streams joined (declared before them)
  const ExpertRowChunks chunks(offsets, E, std::max(C, F), stream);
  expert_bias_grad(dw.b2, dy, chunks, C, dw.step(C), stream);
  profile_step("experts: db2", stream);
  T* db1 = arrays.get<T>((size_t)n * F);  // [n, F]
  int* experts = arrays.get<int>((size_t)n);
  if (!arrays.ok())
    throw std::runtime_error("cudaMallocAsync of the experts' b1 gradient rows (" + std::to_string((size_t)n * F * el) +
                             " bytes) failed: out of memory");
  // From pageable memory: staged before the call returns.
  MOEBENCH_CUDA_CHECK(cudaMemcpyAsync(experts, g_da.expert.data(), (size_t)n * sizeof(int), cudaMemcpyHostToDevice, stream));
  LtSide& side = lt_side();
  // Planned before anything is enqueued: dh = gelu'(h) (dy W2) with b1's gradient into db1's row
  // i (aux ld F a multiple of 8, every row aligned), else da = dy W2 and the kernel after.
  std::vector<LtGemm> mdw2, mdh, mda, mdw1, mdx;
  bool fusable = aligned(db1) && (F * el) % 16 == 0 && F % 8 == 0;
  for (int i = 0; i < n; ++i) {
    const long r0 = offsets[g_da.expert[(size_t)i]];
    fusable = fusable && aligned(dh + r0 * F) && aligned(h + r0 * F);
    mdw2.push_back({&g_dw2, i, 1.0f, g_dw2.C[(size_t)i]});
    mdh.push_back({&g_da, i, 0.0f, dh + r0 * F, CUBLASLT_EPILOGUE_DGELU_BGRAD, db1 + (size_t)i * F, h + r0 * F, F});
    mda.push_back({&g_da, i, 0.0f, g_da.C[(size_t)i]});
    mdw1.push_back({&g_dw1, i, 1.0f, g_dw1.C[(size_t)i]});
    mdx.push_back({&g_dx, i, 0.0f, g_dx.C[(size_t)i]});
  }
  const Plans<T> p_dw2 = plan_all<T>(side, mdw2, "W2 gradient");
  Plans<T> p_dh = fusable ? plan_all<T>(side, mdh, "second GEMM's input gradient") : Plans<T>{};
  const bool fused = !p_dh.empty();
  if (!fused) p_dh = plan_all<T>(side, mda, "second GEMM's input gradient");
  const Plans<T> p_dw1 = plan_all<T>(side, mdw1, "W1 gradient");
  const Plans<T> p_dx = plan_all<T>(side, mdx, "first GEMM's input gradient");
  {
    Forked f(side, stream);
    for (int i = 0; i < n; ++i) {
      run(side, i % kSideStreams, *p_dw2[(size_t)i]);
      run(side, i % kSideStreams, *p_dh[(size_t)i]);
      if (fused) {
        run(side, i % kSideStreams, *p_dw1[(size_t)i]);
        run(side, i % kSideStreams, *p_dx[(size_t)i]);
      }
    }
  }
  if (!fused) {  // GeLU's derivative and b1's gradient as the grouped path's kernel
    profile_step("experts: dW2, da = dy W2 (per expert)", stream);
    gelu_backward_bias_grad(dh, dw.b1, h, da, chunks, F, dw.step(F), stream);
    profile_step("experts: dh = gelu'(h) da, db1 (kernel)", stream);
    Forked f(side, stream);
    for (int i = 0; i < n; ++i) {
      run(side, i % kSideStreams, *p_dw1[(size_t)i]);
      run(side, i % kSideStreams, *p_dx[(size_t)i]);
    }
  }
  profile_step(fused ? "experts: dW2, dh = gelu'(h) (dy W2) + db1 rows, dW1, dx (per expert, fused)"
                     : "experts: dW1, dx (per expert)",
               stream);
  if (fused) {
    const dim3 grid((unsigned)ceil_div(F, kBiasBlock), (unsigned)n);
    add_problem_rows_kernel<T><<<grid, kBiasBlock, 0, stream>>>(dw.b1, db1, experts, F, dw.step(F));
    MOEBENCH_CUDA_CHECK_LAUNCH();
    profile_step("experts: db1", stream);
  }
}

template void per_expert_forward<float>(float*, float*, float*, const float*, const int*, const ExpertWeights<float>&,
                                        int, int, int, cudaStream_t);
template void per_expert_forward<bf16>(bf16*, bf16*, bf16*, const bf16*, const int*, const ExpertWeights<bf16>&, int,
                                       int, int, cudaStream_t);
template void per_expert_backward<float>(float*, const ExpertWeights<float>&, float*, float*, const float*,
                                         const float*, const float*, const float*, const int*,
                                         const ExpertWeights<float>&, int, int, int, cudaStream_t);
template void per_expert_backward<bf16>(bf16*, const ExpertWeights<bf16>&, bf16*, bf16*, const bf16*, const bf16*,
                                        const bf16*, const bf16*, const int*, const ExpertWeights<bf16>&, int, int,
                                        int, cudaStream_t);

}  // namespace moebench::cuda::experts_detail
