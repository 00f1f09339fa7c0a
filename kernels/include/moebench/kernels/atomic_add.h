#pragma once
// dst[i] += src[i] with atomicAdd_system (atomic with the adds of other GPUs and processes, not
// only this GPU's threads), for memory that other ranks add into at the same time: the
// CUDA IPC windows' accumulate (dist/nccl_communicator.h), where dst is another process's
// allocation mapped into this one (on this GPU, or a peer GPU reachable over NVLink/PCIe P2P).
// The order of concurrent additions is not fixed, so sums of several ranks' contributions may
// differ in their last bits from run to run (as MPI_Accumulate's).
#include <cuda_runtime.h>

namespace moebench::cuda {

void atomic_add(float* dst, const float* src, long n, cudaStream_t stream = nullptr);

}  // namespace moebench::cuda
