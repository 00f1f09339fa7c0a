#pragma once
// The embedding partition's and the position embedding's device functions:
// model/embedding_partition.h's with the same names and argument order plus the stream (fp32).
// The accumulating backwards run one thread per column over the rows in order, as the CPU's
// (the same bits).
#include <cuda_runtime.h>

namespace moebench::cuda {

// out[i, :] = wte_part[ids[i], :] for i < rows; wte_part [V, Cp].
void embedding_partition_lookup(float* out, const int* ids, const float* wte_part, long rows, int Cp,
                                cudaStream_t stream = nullptr);
// x[n, q Cp + c] = slices[q, n, c] + wpe[n % T, q Cp + c]; slices [P, N, Cp], x [N, P Cp].
void embedding_partition_assemble(float* x, const float* slices, const float* wpe, long N, int T, int P, int Cp,
                                  cudaStream_t stream = nullptr);
// slices[q, n, c] = dx[n, q Cp + c].
void embedding_partition_split(float* slices, const float* dx, long N, int P, int Cp, cudaStream_t stream = nullptr);
// Accumulates (+=): dwte_part[ids[i], :] += dslices[i, :], every element in i order.
void embedding_partition_backward(float* dwte_part, const float* dslices, const int* ids, long rows, int Cp,
                                  cudaStream_t stream = nullptr);
// x[n, :] += wpe[n % T, :].
void position_embedding_forward(float* x, const float* wpe, long N, int T, int C, cudaStream_t stream = nullptr);
// Accumulates (+=): dwpe[n % T, :] += dx[n, :], every element in n order.
void position_embedding_backward(float* dwpe, const float* dx, long N, int T, int C, cudaStream_t stream = nullptr);

}  // namespace moebench::cuda
