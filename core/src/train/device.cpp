#include "moebench/train/device.h"

#include <stdexcept>

#include "moebench/config/usage_error.h"
#include "moebench/model/cpu_backend.h"
#include "moebench/moe/synthetic_routing.h"
#include "moebench/runtime/stream_executor.h"

#ifdef MOEBENCH_HAVE_CUDA
#include <cuda_runtime.h>

#include "moebench/model/cuda_backend.h"
#include "moebench/runtime/cuda_device_queue.h"
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

void check_run_device(const Config& cfg) {
  if (cfg.run.device != Device::cuda) return;
  const std::string what = "run.device = \"cuda\"";
  require_cuda(what);
  auto not_yet = [&](const std::string& setting) {
    throw UsageError(what + " with " + setting + " is not built yet: the GPU path trains one rank in fp32 for now "
                            "(docs/gpu.md); change that setting or use run.device = \"cpu\"");
  };
  if (cfg.run.ranks > 1) not_yet("run.ranks = " + std::to_string(cfg.run.ranks) + " (NCCL strategies)");
  if (cfg.run.precision == Precision::bf16) not_yet("run.precision = \"bf16\"");
  if (cfg.storage.sparse == SparseStorage::ssd) not_yet("storage.sparse = \"ssd\"");
  if (cfg.moe.routing.kind != RoutingSpec::Kind::learned && !cfg.moe.moe_layers.empty())
    not_yet("moe.routing = \"" + routing_text(cfg.moe.routing) + "\"");
}

DeviceRuntime::DeviceRuntime(const Config& cfg, int local_rank) {
  check_run_device(cfg);
  if (cfg.run.device != Device::cuda) {
    backend_ = &cpu_backend();
    return;
  }
#ifdef MOEBENCH_HAVE_CUDA
  gpu_ = device_for_local_rank(local_rank, cuda_availability().devices);
  auto queue = std::make_unique<CudaDeviceQueue>(gpu_);
  owned_ = make_cuda_backend(*queue);
  executor_ = std::make_unique<StreamExecutor>(*queue, 0);
  queue_ = std::move(queue);
  backend_ = owned_.get();
#else
  (void)local_rank;  // check_run_device threw: no CUDA build
#endif
}

DeviceRuntime::~DeviceRuntime() = default;

int device_for_local_rank(int local_rank, int devices) {
  if (devices <= 0) throw std::invalid_argument("device_for_local_rank: no devices");
  if (local_rank < 0) throw std::invalid_argument("device_for_local_rank: negative local rank");
  return local_rank % devices;
}

}  // namespace moebench
