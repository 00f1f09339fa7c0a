#pragma once
// Compute devices: run.device = "cpu" (BLAS, threads) or "cuda" (kernels/, one GPU per rank,
// local rank -> device). What this build and this machine can do is asked here, so every
// command reports a missing CUDA build or a missing GPU with the same message (exit 2).
#include <string>

#include "moebench/config/config_choices.h"

namespace moebench {

struct CudaAvailability {
  bool built = false;   // this moebench was built with nvcc (kernels/ linked)
  int devices = 0;      // visible CUDA devices (0 without a GPU or a usable driver)
  std::string detail;   // why there are none: the CUDA runtime's message, or "" when devices > 0
};

CudaAvailability cuda_availability();

// Throws UsageError (exit 2) naming `what` (e.g. `run.device = "cuda"`) and which part is
// missing: "this moebench was built without CUDA (no nvcc at configure time)" or "no CUDA
// device is visible (<runtime message>)". Returns the number of devices otherwise.
int require_cuda(const std::string& what);

// The device a run asks for (run.device) can train here: "cpu" always; "cuda" throws
// UsageError (exit 2) through require_cuda when the build or the GPU is missing, and
// otherwise because the GPU training path (device buffers, CUDA-stream executor, NCCL
// strategies) is not built yet: kernels/ holds the kernels, tested on their own.
void check_run_device(Device device);

// The device local rank `local_rank` uses: local_rank mod devices (ranks share GPUs when
// there are more ranks than GPUs on a node).
int device_for_local_rank(int local_rank, int devices);

}  // namespace moebench
