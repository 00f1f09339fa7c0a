#pragma once
// Step timing inside the launchers, for `bench moe-layer --profile`: while a KernelProfile is
// open on the calling thread, profile_step(name, stream) records a CUDA event on `stream`, and
// the time from the previous mark to it is the step's (the steps of one profile must be marked on
// one stream, in order; a step that forks work onto other streams marks after joining them).
// Closed (the normal case), profile_step does nothing.
#include <cuda_runtime.h>

#include <string>
#include <vector>

namespace moebench::cuda {

class KernelProfile;
void profile_step(const char* name, cudaStream_t stream);

// While one lives, profile_step marks nothing on this thread (work inside a step that is not the
// step's own: the experts' tuning runs).
class ProfilePaused {
 public:
  ProfilePaused();
  ~ProfilePaused();
  ProfilePaused(const ProfilePaused&) = delete;
  ProfilePaused& operator=(const ProfilePaused&) = delete;

 private:
  KernelProfile* saved_;
};

class KernelProfile {
 public:
  explicit KernelProfile(cudaStream_t stream);  // opens it on this thread: a first mark
  ~KernelProfile();                             // closes it
  KernelProfile(const KernelProfile&) = delete;
  KernelProfile& operator=(const KernelProfile&) = delete;
  struct Step {
    std::string name;
    double seconds = 0.0;
  };
  // Waits for the marks and returns each step's time in order (closes the profile).
  std::vector<Step> finish();

 private:
  friend void profile_step(const char*, cudaStream_t);
  struct Mark {
    std::string name;
    cudaEvent_t event;
  };
  std::vector<Mark> marks_;
  bool open_ = true;
};

}  // namespace moebench::cuda
