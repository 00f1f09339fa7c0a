#include "moebench/train/device.h"

#include <stdexcept>

#include "moebench/config/usage_error.h"

#ifdef MOEBENCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace moebench {

CudaAvailability cuda_availability() {
  CudaAvailability a;
#ifdef MOEBENCH_HAVE_CUDA
  a.built = true;
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    a.detail = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return a;
  }
  a.devices = n;
  if (n == 0) a.detail = "cudaGetDeviceCount returned 0";
#else
  a.detail = "built without CUDA";
#endif
  return a;
}

int require_cuda(const std::string& what) {
  const CudaAvailability a = cuda_availability();
  if (!a.built)
    throw UsageError(what + ": this moebench was built without CUDA (no nvcc was found when it "
                            "was configured; install the CUDA toolkit and rebuild)");
  if (a.devices == 0)
    throw UsageError(what + ": no CUDA device is visible on this machine (" + a.detail + ")");
  return a.devices;
}

void check_run_device(Device device) {
  if (device != Device::cuda) return;
  const std::string what = "run.device = \"cuda\"";
  require_cuda(what);
  throw UsageError(what + ": training on the GPU is not available yet: kernels/ holds the CUDA "
                          "kernels (tested against the CPU functions), but the device runtime "
                          "(device buffers, CUDA-stream executor, NCCL strategies) is not built; "
                          "use run.device = \"cpu\"");
}

int device_for_local_rank(int local_rank, int devices) {
  if (devices <= 0) throw std::invalid_argument("device_for_local_rank: no devices");
  if (local_rank < 0) throw std::invalid_argument("device_for_local_rank: negative local rank");
  return local_rank % devices;
}

}  // namespace moebench
