// The embedding partition's and the position embedding's kernels (kernels/embedding_partition.h).
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/embedding_partition.h"
#include "moebench/kernels/launch.h"

namespace moebench::cuda {
namespace {

#define MOEBENCH_GRID_STRIDE(i, n) \
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < (n); i += (long)gridDim.x * blockDim.x)

__global__ void lookup_kernel(float* out, const int* ids, const float* wte, long n, int Cp) {
  MOEBENCH_GRID_STRIDE(k, n) {
    const long i = k / Cp;
    out[k] = wte[(long)ids[i] * Cp + (k - i * Cp)];
  }
}

__global__ void assemble_kernel(float* x, const float* slices, const float* wpe, long N, int T, int P, int Cp) {
  const long C = (long)P * Cp;
  MOEBENCH_GRID_STRIDE(k, N * C) {
    const long n = k / C, col = k - n * C, q = col / Cp, c = col - q * Cp;
    x[k] = slices[(q * N + n) * Cp + c] + wpe[(n % T) * C + col];
  }
}

__global__ void split_kernel(float* slices, const float* dx, long N, int P, int Cp) {
  const long C = (long)P * Cp;
  MOEBENCH_GRID_STRIDE(k, N * C) {
    const long n = k / C, col = k - n * C, q = col / Cp, c = col - q * Cp;
    slices[(q * N + n) * Cp + c] = dx[k];
  }
}

// One thread per column, the rows in order.
__global__ void partition_backward_kernel(float* dwte, const float* dslices, const int* ids, long rows, int Cp) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= Cp) return;
  for (long i = 0; i < rows; ++i) dwte[(long)ids[i] * Cp + c] += dslices[i * Cp + c];
}

__global__ void position_forward_kernel(float* x, const float* wpe, long N, int T, int C) {
  MOEBENCH_GRID_STRIDE(k, N * C) {
    const long n = k / C;
    x[k] += wpe[(n % T) * C + (k - n * C)];
  }
}

// One thread per (t, c): the rows n = t, t + T, ... in order.
__global__ void position_backward_kernel(float* dwpe, const float* dx, long N, int T, int C) {
  MOEBENCH_GRID_STRIDE(k, (long)T * C) {
    const long t = k / C, c = k - t * C;
    float acc = dwpe[k];
    for (long n = t; n < N; n += T) acc += dx[n * C + c];
    dwpe[k] = acc;
  }
}

#undef MOEBENCH_GRID_STRIDE

}  // namespace

void embedding_partition_lookup(float* out, const int* ids, const float* wte_part, long rows, int Cp,
                                cudaStream_t stream) {
  const Launch1d l = launch_1d(rows * Cp);
  if (l.grid == 0) return;
  lookup_kernel<<<l.grid, l.block, 0, stream>>>(out, ids, wte_part, rows * Cp, Cp);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

void embedding_partition_assemble(float* x, const float* slices, const float* wpe, long N, int T, int P, int Cp,
                                  cudaStream_t stream) {
  const Launch1d l = launch_1d(N * P * Cp);
  if (l.grid == 0) return;
  assemble_kernel<<<l.grid, l.block, 0, stream>>>(x, slices, wpe, N, T, P, Cp);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

void embedding_partition_split(float* slices, const float* dx, long N, int P, int Cp, cudaStream_t stream) {
  const Launch1d l = launch_1d(N * P * Cp);
  if (l.grid == 0) return;
  split_kernel<<<l.grid, l.block, 0, stream>>>(slices, dx, N, P, Cp);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

void embedding_partition_backward(float* dwte_part, const float* dslices, const int* ids, long rows, int Cp,
                                  cudaStream_t stream) {
  if (rows <= 0 || Cp <= 0) return;
  partition_backward_kernel<<<(unsigned)ceil_div(Cp, 128), 128, 0, stream>>>(dwte_part, dslices, ids, rows, Cp);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

void position_embedding_forward(float* x, const float* wpe, long N, int T, int C, cudaStream_t stream) {
  const Launch1d l = launch_1d(N * C);
  if (l.grid == 0) return;
  position_forward_kernel<<<l.grid, l.block, 0, stream>>>(x, wpe, N, T, C);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

void position_embedding_backward(float* dwpe, const float* dx, long N, int T, int C, cudaStream_t stream) {
  const Launch1d l = launch_1d((long)T * C);
  if (l.grid == 0 || N <= 0) return;
  position_backward_kernel<<<l.grid, l.block, 0, stream>>>(dwpe, dx, N, T, C);
  MOEBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace moebench::cuda
