#pragma once
// The CUDA backend (tensor/backend.h) of one GPU: arrays are cudaMalloc'd on the queue's device,
// copies and zeroing are cudaMemcpyAsync / cudaMemsetAsync, the layer functions kernels/'s
// launchers (fp32), all enqueued on the stream of the running task (the queue's current
// stream, set by the StreamExecutor) or, outside a task, on a stream of the backend's own.
// Every call first makes the queue's device current on the calling thread, so any host thread
// may call it. to_host and sum() wait for the stream. Built with the CUDA build only
// (MOEBENCH_HAVE_CUDA); this header has no CUDA types.
#include <memory>

#include "moebench/tensor/backend.h"

namespace moebench {

class CudaDeviceQueue;

// `queue` must outlive the backend.
std::unique_ptr<Backend> make_cuda_backend(CudaDeviceQueue& queue);

}  // namespace moebench
