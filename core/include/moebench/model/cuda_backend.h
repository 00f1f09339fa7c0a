#pragma once
// The CUDA backend (tensor/backend.h) of one GPU: arrays are cudaMalloc'd on the queue's device,
// copies and zeroing are cudaMemcpyAsync / cudaMemsetAsync, the layer functions kernels/'s
// launchers, all enqueued on the stream of the running task (the queue's current
// stream, set by the StreamExecutor) or, outside a task, on a stream of the backend's own.
// Every call first makes the queue's device current on the calling thread, so any host thread
// may call it. to_host and sum() wait for the stream.
// mixed_precision (run.precision = "bf16"): the arrays stay fp32; the dense GEMMs and the
// experts' read bf16 copies of their operands (the parameter arena's kept ones, tensor/backend.h
// keep_weight_copies) and accumulate in fp32 (kernels/mixed_precision.h); the experts' GEMMs run
// kernels/experts.h in bf16 and their weight gradients are added into the fp32 ones; the
// attention's GEMMs stay fp32 operands on TF32 tensor cores; everything else is fp32 (docs/gpu.md). Built with the CUDA build only
// (MOEBENCH_HAVE_CUDA); this header has no CUDA types.
#include <memory>

#include "moebench/tensor/backend.h"

namespace moebench {

class CudaDeviceQueue;

// `queue` must outlive the backend.
std::unique_ptr<Backend> make_cuda_backend(CudaDeviceQueue& queue, bool mixed_precision = false);

}  // namespace moebench
