// KernelProfile (kernel_profile.h): a thread-local open profile collecting marks.
#include "moebench/kernels/kernel_profile.h"

#include "moebench/kernels/cuda_check.h"

namespace moebench::cuda {
namespace {
thread_local KernelProfile* open_profile = nullptr;
}

void profile_step(const char* name, cudaStream_t stream) {
  KernelProfile* p = open_profile;
  if (!p) return;
  cudaEvent_t e = nullptr;
  MOEBENCH_CUDA_CHECK(cudaEventCreate(&e));
  MOEBENCH_CUDA_CHECK(cudaEventRecord(e, stream));
  p->marks_.push_back({name, e});
}

ProfilePaused::ProfilePaused() : saved_(open_profile) { open_profile = nullptr; }
ProfilePaused::~ProfilePaused() { open_profile = saved_; }

KernelProfile::KernelProfile(cudaStream_t stream) {
  open_profile = this;
  profile_step("start", stream);
}

KernelProfile::~KernelProfile() {
  if (open_profile == this) open_profile = nullptr;
  for (Mark& m : marks_) (void)cudaEventDestroy(m.event);
}

std::vector<KernelProfile::Step> KernelProfile::finish() {
  if (open_profile == this) open_profile = nullptr;
  std::vector<Step> steps;
  if (marks_.empty()) return steps;
  MOEBENCH_CUDA_CHECK(cudaEventSynchronize(marks_.back().event));
  for (size_t i = 1; i < marks_.size(); ++i) {
    float ms = 0.0f;
    MOEBENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, marks_[i - 1].event, marks_[i].event));
    steps.push_back({marks_[i].name, ms * 1e-3});
  }
  return steps;
}

}  // namespace moebench::cuda
