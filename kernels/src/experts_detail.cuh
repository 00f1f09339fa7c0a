#pragma once
// What the expert GEMM paths share (kernels/src/experts.cu: the grouped path and the public
// launchers; experts_per_expert.cu: the per-expert cuBLASLt path): the bias kernels, the upload
// of the grouped GEMMs' pointer arrays and the offsets, the checks. Private to kernels/src/.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "gelu_math.cuh"
#include "moebench/kernels/blas_handle.h"
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/experts.h"
#include "moebench/kernels/grouped_gemm_args.h"
#include "moebench/kernels/launch.h"
#include "moebench/kernels/precision.h"

namespace moebench::cuda::experts_detail {

constexpr int kBiasBlock = 128;

template <typename T>
cudaDataType_t cuda_type();
template <>
inline cudaDataType_t cuda_type<float>() { return CUDA_R_32F; }
template <>
inline cudaDataType_t cuda_type<bf16>() { return CUDA_R_16BF; }

inline cublasOperation_t cublas_op(GemmOp op) { return op == GemmOp::T ? CUBLAS_OP_T : CUBLAS_OP_N; }

// The expert owning `row`: the largest e < E with offsets[e] <= row (empty experts share
// their offset with the next one, which then wins).
__device__ inline int expert_of_row(const int* offsets, int E, long row) {
  int lo = 0, hi = E - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (offsets[mid] <= row) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// out[row] += bias[expert of row], one block per row (grid-stride); expert e's bias at e * stride.
template <typename T>
__global__ void __launch_bounds__(kBiasBlock)
    add_expert_bias_kernel(T* out, const T* bias, const int* offsets, int E, int S, int OC, long stride) {
  for (long row = blockIdx.x; row < S; row += gridDim.x) {
    const T* b = bias + (long)expert_of_row(offsets, E, row) * stride;
    T* o = out + row * OC;
    for (int c = threadIdx.x; c < OC; c += kBiasBlock) o[c] = from_float<T>(to_float(o[c]) + to_float(b[c]));
  }
}

// Bias gradients over the experts' rows in two passes that fill the GPU even when a few experts
// own all the rows: the rows of each expert are cut into chunks of at most kChunkRows rows; pass 1
// sums each chunk's column (one thread per (chunk, column), rows in order, fp32) into a partial;
// pass 2 adds an expert's partials in chunk order to its bias gradient. Fixed order: the same
// inputs give the same bits on every run.
constexpr int kChunkRows = 64;
constexpr int kMaxGridY = 65535;  // the grid's y limit (the kernels loop over what it cannot cover)

// Pass 1 for a plain bias: partial[c, j] = sum of d[row, j] over chunk c's rows.
template <typename T>
__global__ void __launch_bounds__(kBiasBlock)
    chunk_column_sums_kernel(float* partial, const T* d, const int* begin, const int* end, int count, int OC) {
  const int j = blockIdx.x * kBiasBlock + threadIdx.x;
  if (j >= OC) return;
  for (int c = blockIdx.y; c < count; c += gridDim.y) {
    float s = 0.0f;
#pragma unroll 4
    for (long row = begin[c]; row < end[c]; ++row) s += to_float(d[row * OC + j]);
    partial[(long)c * OC + j] = s;
  }
}

// Pass 1 of the GeLU backward with b1's gradient: dh = gelu'(h) da (overwritten, rounded once),
// and partial[c, j] = the sum of chunk c's stored dh[row, j].
template <typename T>
__global__ void __launch_bounds__(kBiasBlock)
    gelu_backward_chunk_sums_kernel(T* dh, float* partial, const T* h, const T* da, const int* begin, const int* end,
                                    int count, int F) {
  const int j = blockIdx.x * kBiasBlock + threadIdx.x;
  if (j >= F) return;
  for (int c = blockIdx.y; c < count; c += gridDim.y) {
    float s = 0.0f;
#pragma unroll 4
    for (long row = begin[c]; row < end[c]; ++row) {
      const long i = row * F + j;
      const T g = from_float<T>(0.0f + gelu_math::gelu_grad(to_float(h[i])) * to_float(da[i]));
      dh[i] = g;
      s += to_float(g);
    }
    partial[(long)c * F + j] = s;
  }
}

// Pass 2: dbias[e, j] += the sum of expert e's partials, in chunk order.
template <typename T>
__global__ void __launch_bounds__(kBiasBlock)
    add_chunk_sums_kernel(T* dbias, const float* partial, const int* first, int E, int OC, long stride) {
  const int j = blockIdx.x * kBiasBlock + threadIdx.x;
  if (j >= OC) return;
  for (int e = blockIdx.y; e < E; e += gridDim.y) {
    float s = 0.0f;
    for (int c = first[e]; c < first[e + 1]; ++c) s += partial[(long)c * OC + j];
    T* db = dbias + (long)e * stride + j;
    *db = from_float<T>(to_float(*db) + s);
  }
}

// The grouped path's bias + GeLU in one pass: h[row] += b1[expert of row] (stored rounded, as
// add_expert_bias), a[row] = gelu(h[row]); one block per row (grid-stride).
template <typename T>
__global__ void __launch_bounds__(kBiasBlock)
    bias_gelu_kernel(T* h, T* a, const T* bias, const int* offsets, int E, int S, int F, long stride) {
  for (long row = blockIdx.x; row < S; row += gridDim.x) {
    const T* b = bias + (long)expert_of_row(offsets, E, row) * stride;
    T* hr = h + row * F;
    T* ar = a + row * F;
    for (int c = threadIdx.x; c < F; c += kBiasBlock) {
      const T v = from_float<T>(to_float(hr[c]) + to_float(b[c]));
      hr[c] = v;
      ar[c] = from_float<T>(gelu_math::gelu(to_float(v)));
    }
  }
}

// The device pointer arrays of some grouped GEMMs and a copy of the offsets, in one
// stream-ordered allocation freed (stream-ordered, after the GEMMs) on destruction.
class GroupedUpload {
 public:
  struct Arrays {
    const void* const* A;
    const void* const* B;
    void* const* C;
  };

  // Offsets only: no GEMMs.
  GroupedUpload(const int* offsets, int E, cudaStream_t stream) : GroupedUpload({}, offsets, E, stream) {}
  GroupedUpload(const std::vector<const GroupedGemmArgs*>& gemms, const int* offsets, int E,
                cudaStream_t stream)
      : stream_(stream) {
    size_t words = 0;
    for (const GroupedGemmArgs* g : gemms) words += 3 * (size_t)g->count();
    const size_t offset_words = ((size_t)(E + 1) * sizeof(int) + sizeof(uintptr_t) - 1) / sizeof(uintptr_t);
    std::vector<uintptr_t> host(words + offset_words, 0);
    size_t at = 0;
    for (const GroupedGemmArgs* g : gemms) {
      for (const void* p : g->A) host[at++] = reinterpret_cast<uintptr_t>(p);
      for (const void* p : g->B) host[at++] = reinterpret_cast<uintptr_t>(p);
      for (void* p : g->C) host[at++] = reinterpret_cast<uintptr_t>(p);
    }
    std::memcpy(host.data() + words, offsets, (size_t)(E + 1) * sizeof(int));
    const size_t bytes = host.size() * sizeof(uintptr_t);
    MOEBENCH_CUDA_CHECK(cudaMallocAsync(&base_, bytes, stream));
    // From pageable memory: returns once the host data is staged, so `host` may go.
    MOEBENCH_CUDA_CHECK(cudaMemcpyAsync(base_, host.data(), bytes, cudaMemcpyHostToDevice, stream));
    uintptr_t* dev = static_cast<uintptr_t*>(base_);
    at = 0;
    for (const GroupedGemmArgs* g : gemms) {
      const size_t n = (size_t)g->count();
      arrays_.push_back({reinterpret_cast<const void* const*>(dev + at),
                         reinterpret_cast<const void* const*>(dev + at + n),
                         reinterpret_cast<void* const*>(dev + at + 2 * n)});
      at += 3 * n;
    }
    offsets_ = reinterpret_cast<const int*>(dev + words);
  }
  ~GroupedUpload() {
    if (base_) (void)cudaFreeAsync(base_, stream_);  // no throw from a destructor
  }
  GroupedUpload(const GroupedUpload&) = delete;
  GroupedUpload& operator=(const GroupedUpload&) = delete;

  const Arrays& arrays(size_t i) const { return arrays_[i]; }
  const int* offsets() const { return offsets_; }

 private:
  cudaStream_t stream_;
  void* base_ = nullptr;
  std::vector<Arrays> arrays_;
  const int* offsets_ = nullptr;
};

// One grouped GEMM call: C_i = alpha op(A_i) op(B_i) + beta C_i for every problem.
template <typename T>
void grouped_gemm(const GroupedGemmArgs& g, const GroupedUpload::Arrays& d, float alpha, float beta,
                  cudaStream_t stream) {
  const int count = g.count();
  if (count == 0) return;
  cublasHandle_t handle = cublas_handle();
  MOEBENCH_CUBLAS_CHECK(cublasSetStream(handle, stream));
  MOEBENCH_CUBLAS_CHECK(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST));
  const std::vector<cublasOperation_t> transa(count, cublas_op(g.transa)), transb(count, cublas_op(g.transb));
  const std::vector<float> alphas(count, alpha), betas(count, beta);
  const std::vector<int> group_size(count, 1);
  const cudaDataType_t type = cuda_type<T>();
  MOEBENCH_CUBLAS_CHECK(cublasGemmGroupedBatchedEx(
      handle, transa.data(), transb.data(), g.m.data(), g.n.data(), g.k.data(), alphas.data(), d.A, type,
      g.lda.data(), d.B, type, g.ldb.data(), betas.data(), d.C, type, g.ldc.data(), count,
      group_size.data(), CUBLAS_COMPUTE_32F));
}

// Checks the host offsets and returns S = offsets[E]. bf16 rows must be 16-byte aligned for the
// grouped GEMMs (C and F multiples of 8): a clean error instead of a misaligned-address fault.
template <typename T>
int check_experts(const int* offsets, int E, int C, int F, const char* what) {
  if (E < 1 || C < 1 || F < 1)
    throw std::invalid_argument(std::string(what) + ": need E, C, F >= 1");
  if (sizeof(T) == 2 && (C % 8 != 0 || F % 8 != 0))
    throw std::invalid_argument(std::string(what) + ": bf16 needs C and F to be multiples of 8, got C = " +
                                std::to_string(C) + ", F = " + std::to_string(F));
  if (offsets[0] != 0) throw std::invalid_argument(std::string(what) + ": offsets[0] must be 0");
  for (int e = 0; e < E; ++e)
    if (offsets[e + 1] < offsets[e])
      throw std::invalid_argument(std::string(what) + ": offsets decrease at expert " + std::to_string(e));
  return offsets[E];
}

template <typename T>
void add_expert_bias(T* out, const T* bias, const int* d_offsets, int E, int S, int OC, long stride,
                     cudaStream_t stream) {
  add_expert_bias_kernel<T><<<(int)std::min<long>(S, kMaxGridX), kBiasBlock, 0, stream>>>(out, bias, d_offsets,
                                                                                     E, S, OC, stride);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

template <typename T>
void bias_gelu(T* h, T* a, const T* bias, const int* d_offsets, int E, int S, int F, long stride, cudaStream_t stream) {
  bias_gelu_kernel<T><<<(int)std::min<long>(S, kMaxGridX), kBiasBlock, 0, stream>>>(h, a, bias, d_offsets, E, S, F,
                                                                                     stride);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

// The chunks of the experts' rows (host offsets) and the partial sums of up to `max_columns`
// columns, in one stream-ordered allocation freed (stream-ordered) on destruction; for the bias
// gradients below, which run one after another on `stream`.
class ExpertRowChunks {
 public:
  ExpertRowChunks(const int* offsets, int E, int max_columns, cudaStream_t stream)
      : E(E), max_columns(max_columns), stream_(stream) {
    std::vector<int> begin, end, first((size_t)E + 1, 0);
    for (int e = 0; e < E; ++e) {
      first[(size_t)e] = (int)begin.size();
      for (int r = offsets[e]; r < offsets[e + 1]; r += kChunkRows) {
        begin.push_back(r);
        end.push_back(std::min(r + kChunkRows, offsets[e + 1]));
      }
    }
    count = (int)begin.size();
    first[(size_t)E] = count;
    std::vector<int> host;  // begin, end, first, then the partials (16-byte aligned)
    host.insert(host.end(), begin.begin(), begin.end());
    host.insert(host.end(), end.begin(), end.end());
    host.insert(host.end(), first.begin(), first.end());
    const size_t index_bytes = (host.size() * sizeof(int) + 15) / 16 * 16;
    const size_t bytes = index_bytes + (size_t)count * (size_t)max_columns * sizeof(float);
    MOEBENCH_CUDA_CHECK(cudaMallocAsync(&base_, std::max<size_t>(bytes, 16), stream));
    // From pageable memory: returns once the host data is staged, so `host` may go.
    MOEBENCH_CUDA_CHECK(cudaMemcpyAsync(base_, host.data(), host.size() * sizeof(int), cudaMemcpyHostToDevice, stream));
    const int* dev = static_cast<const int*>(base_);
    rows_begin = dev, rows_end = dev + count, first_chunk = dev + 2 * (size_t)count;
    partial = reinterpret_cast<float*>(static_cast<char*>(base_) + index_bytes);
  }
  ~ExpertRowChunks() {
    if (base_) (void)cudaFreeAsync(base_, stream_);  // no throw from a destructor
  }
  ExpertRowChunks(const ExpertRowChunks&) = delete;
  ExpertRowChunks& operator=(const ExpertRowChunks&) = delete;

  // The grids of the two passes over OC columns.
  dim3 chunk_grid(int OC) const {
    return dim3((unsigned)ceil_div(OC, kBiasBlock), (unsigned)std::clamp(count, 1, kMaxGridY));
  }
  dim3 expert_grid(int OC) const {
    return dim3((unsigned)ceil_div(OC, kBiasBlock), (unsigned)std::clamp(E, 1, kMaxGridY));
  }
  void check(int OC) const {
    if (OC > max_columns)
      throw std::logic_error("ExpertRowChunks: " + std::to_string(OC) + " columns, room for " +
                             std::to_string(max_columns));
  }

  int E = 0, max_columns = 0, count = 0;  // count: chunks
  const int *rows_begin = nullptr, *rows_end = nullptr;  // [count]: each chunk's rows
  const int* first_chunk = nullptr;                       // [E + 1]: each expert's chunks
  float* partial = nullptr;                               // [count, max_columns]

 private:
  cudaStream_t stream_;
  void* base_ = nullptr;
};

// dh = gelu'(h) da and dbias[e] += the column sums of e's rows of dh (the stored, rounded values).
template <typename T>
void gelu_backward_bias_grad(T* dh, T* dbias, const T* h, const T* da, const ExpertRowChunks& rc, int F, long stride,
                             cudaStream_t stream) {
  rc.check(F);
  gelu_backward_chunk_sums_kernel<T><<<rc.chunk_grid(F), kBiasBlock, 0, stream>>>(
      dh, rc.partial, h, da, rc.rows_begin, rc.rows_end, rc.count, F);
  MOEBENCH_CUDA_CHECK_LAUNCH();
  add_chunk_sums_kernel<T><<<rc.expert_grid(F), kBiasBlock, 0, stream>>>(dbias, rc.partial, rc.first_chunk, rc.E,
                                                                        F, stride);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

// dbias[e] += the column sums of e's rows of d.
template <typename T>
void expert_bias_grad(T* dbias, const T* d, const ExpertRowChunks& rc, int OC, long stride, cudaStream_t stream) {
  rc.check(OC);
  chunk_column_sums_kernel<T><<<rc.chunk_grid(OC), kBiasBlock, 0, stream>>>(
      rc.partial, d, rc.rows_begin, rc.rows_end, rc.count, OC);
  MOEBENCH_CUDA_CHECK_LAUNCH();
  add_chunk_sums_kernel<T><<<rc.expert_grid(OC), kBiasBlock, 0, stream>>>(dbias, rc.partial, rc.first_chunk, rc.E,
                                                                         OC, stride);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

// Stream-ordered device arrays of one call, freed on `stream` (stream-ordered) when it ends.
// get() returns nullptr and ok() turns false when the device has no room (the error cleared: a
// failed allocation is not sticky); with `like`, the address has like's alignment within 256
// bytes (so cuBLASLt's alignment checks choose on scratch as on the real arrays).
class StreamArrays {
 public:
  explicit StreamArrays(cudaStream_t stream) : stream_(stream) {}
  ~StreamArrays() {
    for (void* p : held_) (void)cudaFreeAsync(p, stream_);
  }
  StreamArrays(const StreamArrays&) = delete;
  StreamArrays& operator=(const StreamArrays&) = delete;
  template <typename U>
  U* get(size_t n, const void* like = nullptr) {
    void* p = nullptr;
    if (!ok_ || cudaMallocAsync(&p, std::max<size_t>(n, 1) * sizeof(U) + 256, stream_) != cudaSuccess) {
      (void)cudaGetLastError();
      ok_ = false;
      return nullptr;
    }
    held_.push_back(p);
    const uintptr_t base = reinterpret_cast<uintptr_t>(p), want = reinterpret_cast<uintptr_t>(like) % 256;
    return reinterpret_cast<U*>(base + (want + 256 - base % 256) % 256);
  }
  bool ok() const { return ok_; }

 private:
  cudaStream_t stream_;
  std::vector<void*> held_;
  bool ok_ = true;
};

// The products of the experts' forward and backward (grouped_gemm_args.h), which both paths run:
// grouped in one call each, or problem by problem.
struct ForwardGemms {
  GroupedGemmArgs g1, g2;  // h = x W1^T, y = a W2^T
};
template <typename T>
ForwardGemms forward_gemms(T* y, T* h, const T* a, const T* x, const int* offsets, const ExpertWeights<T>& w, int E,
                           int C, int F) {
  const size_t el = sizeof(T);
  return {grouped_linear_forward_args(offsets, E, el, h, x, w.w1, C, F, (size_t)w.step((long)F * C)),
          grouped_linear_forward_args(offsets, E, el, y, a, w.w2, F, C, (size_t)w.step((long)C * F))};
}
struct BackwardGemms {
  GroupedGemmArgs dw2, da, dw1, dx;  // dW2 += dy^T a, da = dy W2, dW1 += dh^T x, dx = dh W1
};
template <typename T>
BackwardGemms backward_gemms(T* dx, const ExpertWeights<T>& dw, T* da, const T* dh, const T* dy, const T* x,
                             const T* a, const int* offsets, const ExpertWeights<T>& w, int E, int C, int F) {
  const size_t el = sizeof(T), own = (size_t)C * F;
  return {grouped_linear_dweight_args(offsets, E, el, dw.w2, dy, a, F, C, dw.step(own)),
          grouped_linear_dinp_args(offsets, E, el, da, dy, w.w2, F, C, w.step(own)),
          grouped_linear_dweight_args(offsets, E, el, dw.w1, dh, x, C, F, dw.step(own)),
          grouped_linear_dinp_args(offsets, E, el, dx, dh, w.w1, C, F, w.step(own))};
}

// The two paths (offsets checked, S > 0): experts.cu (grouped), experts_per_expert.cu.
template <typename T>
void grouped_forward(T* y, T* h, T* a, const T* x, const int* offsets, const ExpertWeights<T>& w, int E, int C,
                     int F, cudaStream_t stream);
template <typename T>
void grouped_backward(T* dx, const ExpertWeights<T>& dw, T* da, T* dh, const T* dy, const T* x, const T* h,
                      const T* a, const int* offsets, const ExpertWeights<T>& w, int E, int C, int F,
                      cudaStream_t stream);
template <typename T>
void per_expert_forward(T* y, T* h, T* a, const T* x, const int* offsets, const ExpertWeights<T>& w, int E, int C,
                        int F, cudaStream_t stream);
template <typename T>
void per_expert_backward(T* dx, const ExpertWeights<T>& dw, T* da, T* dh, const T* dy, const T* x, const T* h,
                         const T* a, const int* offsets, const ExpertWeights<T>& w, int E, int C, int F,
                         cudaStream_t stream);

}  // namespace moebench::cuda::experts_detail
