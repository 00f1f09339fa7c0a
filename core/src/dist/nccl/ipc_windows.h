#pragma once
// One-sided windows of the NCCL backend over CUDA IPC (dist/nccl_communicator.h): every rank's
// device memory mapped into the processes of its communicator on the same machine. Private to
// src/dist/nccl/.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "moebench/dist/communicator.h"
#include "moebench/dist/served_window.h"

namespace moebench {

class NcclCommunicator;

std::unique_ptr<Window> make_ipc_window(NcclCommunicator& comm, void* base, size_t count, DType type);
std::unique_ptr<SharedWindow> make_ipc_shared_window(NcclCommunicator& comm, size_t bytes);
// NcclCommunicator::window_reach: ranks of one machine share a value (collective).
std::vector<int> ipc_reach(NcclCommunicator& comm);
// NcclCommunicator::window_staging (device_staging.cpp): the served window's copies on the GPU.
std::unique_ptr<WindowStaging> make_device_staging(NcclCommunicator& comm, void* base);
// Throws std::runtime_error "<who>: <call> failed: <CUDA's reason>" unless e is cudaSuccess.
void check_window_cuda(cudaError_t e, const char* who, const char* call);

}  // namespace moebench
