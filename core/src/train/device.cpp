#include "moebench/train/device.h"

#include <stdexcept>
#include <string>

#include "moebench/config/usage_error.h"
#include "moebench/model/cpu_backend.h"
#include "moebench/runtime/stream_executor.h"

#ifdef MOEBENCH_HAVE_CUDA
#include <cuda_runtime.h>

#include "moebench/model/cuda_backend.h"
#include "moebench/runtime/cuda_device_queue.h"
#endif
#ifdef MOEBENCH_HAVE_NCCL
#include "moebench/dist/nccl_communicator.h"
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
  if (cfg.run.precision == Precision::bf16 && !cfg.moe.moe_layers.empty()) {
    // kernels/experts.h: cuBLAS's bf16 grouped GEMMs want 16-byte aligned rows
    const int C = cfg.model.hidden, F = cfg.model.ffn_mult * C / (cfg.moe.expert_tp ? cfg.parallel.tp : 1);
    if (C % 8 != 0 || F % 8 != 0)
      throw UsageError(what + " with run.precision = \"bf16\": the experts' bf16 GEMMs need model.hidden (" +
                       std::to_string(C) + ") and each rank's expert FFN width (" + std::to_string(F) +
                       " = model.ffn_mult x model.hidden" + (cfg.moe.expert_tp ? " / parallel.tp" : "") +
                       ") to be multiples of 8; change model.hidden or use run.precision = \"fp32\"");
  }
  require_cuda(what);  // after the settings: a config's own problems show on any machine
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
  owned_ = make_cuda_backend(*queue, cfg.run.precision == Precision::bf16);
  owned_executor_ = std::make_unique<StreamExecutor>(*queue, 0);
  executor_ = owned_executor_.get();
  queue_ = std::move(queue);
  backend_ = owned_.get();
#else
  (void)local_rank;  // check_run_device threw: no CUDA build
#endif
}

DeviceRuntime::DeviceRuntime(Backend& backend, Executor* executor, DataCommunicator data_comm)
    : backend_(&backend), executor_(executor), data_comm_(std::move(data_comm)) {}

DeviceRuntime::~DeviceRuntime() = default;

std::unique_ptr<Communicator> DeviceRuntime::data_communicator(Communicator& group) const {
  if (data_comm_) return data_comm_(group);
  if (!backend_->device_memory()) return group.dup();
#ifdef MOEBENCH_HAVE_NCCL
  auto nccl = std::make_unique<NcclCommunicator>(group, gpu_);
  nccl->set_traffic_meter(group.traffic_meter());
  const auto* q = static_cast<const CudaDeviceQueue*>(queue_.get());
  nccl->follow_streams([q] {
    const DeviceQueue::Stream s = q->current_stream();
    return static_cast<CUstream_st*>(q->cuda_stream(s >= 0 ? s : 0));
  });
  return nccl;
#else
  (void)group;
  throw UsageError("run.device = \"cuda\" on several ranks: this moebench was built without NCCL (install NCCL "
                   "and rebuild)");
#endif
}

int device_for_local_rank(int local_rank, int devices) {
  if (devices <= 0) throw std::invalid_argument("device_for_local_rank: no devices");
  if (local_rank < 0) throw std::invalid_argument("device_for_local_rank: negative local rank");
  return local_rank % devices;
}

}  // namespace moebench
