#pragma once
// One-sided windows of the NCCL backend over CUDA IPC (dist/nccl_communicator.h): every rank's
// device memory mapped into the processes of its communicator on the same machine. Private to
// src/dist/nccl/.
#include <cstddef>
#include <memory>

#include "moebench/dist/communicator.h"

namespace moebench {

class NcclCommunicator;

std::unique_ptr<Window> make_ipc_window(NcclCommunicator& comm, void* base, size_t count, DType type);
std::unique_ptr<SharedWindow> make_ipc_shared_window(NcclCommunicator& comm, size_t bytes);

}  // namespace moebench
