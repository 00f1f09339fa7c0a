#pragma once
// Compute devices: run.device = "cpu" (BLAS, threads) or "cuda" (kernels/, one GPU per rank,
// local rank -> device). What this build and this machine can do is asked here, so every
// command reports a missing CUDA build or a missing GPU with the same message (exit 2).
#include <functional>
#include <memory>
#include <string>

#include "moebench/config/config.h"
#include "moebench/dist/communicator.h"
#include "moebench/runtime/device_queue.h"
#include "moebench/runtime/executor.h"
#include "moebench/tensor/backend.h"

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

// The device a run asks for (run.device) can train this config here: "cpu" always; "cuda"
// throws UsageError (exit 2) for a bf16 config whose experts' rows are not a multiple of 8 wide
// (naming model.hidden), then through require_cuda when the build or the GPU is missing.
// Called before anything is created (the CLI, and the Trainer again).
void check_run_device(const Config& cfg);

// Where a rank's model lives and runs: the CPU backend, or (run.device = "cuda") the local
// rank's GPU — its DeviceQueue, CUDA backend (model/cuda_backend.h) and the StreamExecutor its
// tasks run on. Keep the DeviceRuntime alive as long as the model.
class DeviceRuntime {
 public:
  // Throws as check_run_device does (it calls it).
  DeviceRuntime(const Config& cfg, int local_rank);
  // A device from parts (the tests' device without a GPU): `backend` and `executor` (nullptr: the
  // CPU's threads) outlive the runtime; data_communicator() returns data_comm(group).
  using DataCommunicator = std::function<std::unique_ptr<Communicator>(Communicator& group)>;
  DeviceRuntime(Backend& backend, Executor* executor, DataCommunicator data_comm);
  ~DeviceRuntime();
  DeviceRuntime(const DeviceRuntime&) = delete;
  DeviceRuntime& operator=(const DeviceRuntime&) = delete;
  Backend& backend() const { return *backend_; }
  // The device's executor (nullptr on the CPU: the model's or the rank's ThreadExecutor).
  Executor* executor() const { return executor_; }
  int gpu() const { return gpu_; }  // the CUDA device (-1 on the CPU)
  // A communicator over `group`'s ranks for arrays in this device's memory, collective over
  // group: on the CPU a dup of it; on the GPU an NCCL communicator (bootstrapped over group)
  // whose operations go on the running task's stream (NcclCommunicator::follow_streams), so a
  // step graph's comm task enqueues them on its role's stream without a host wait.
  std::unique_ptr<Communicator> data_communicator(Communicator& group) const;

 private:
  std::unique_ptr<DeviceQueue> queue_;
  std::unique_ptr<Backend> owned_;
  std::unique_ptr<Executor> owned_executor_;
  Backend* backend_ = nullptr;
  Executor* executor_ = nullptr;
  DataCommunicator data_comm_;  // set by the parts constructor
  int gpu_ = -1;
};

// The device local rank `local_rank` uses: local_rank mod devices (ranks share GPUs when
// there are more ranks than GPUs on a node).
int device_for_local_rank(int local_rank, int devices);

}  // namespace moebench
