#include "nccl_watchdog.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

namespace moebench::nccl_watch {
namespace {

struct Watched {
  std::string who;
  std::string failure;  // set once aborted
  std::chrono::steady_clock::time_point failed_at;
};

// Never destroyed: the detached thread may outlive static destruction.
struct Registry {
  std::mutex m;
  std::map<ncclComm_t, Watched> comms;
  bool thread_started = false;
};
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

void poll_forever() {
  Registry& r = registry();
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::lock_guard<std::mutex> lock(r.m);
    const auto now = std::chrono::steady_clock::now();
    for (auto& [comm, w] : r.comms) {
      if (!w.failure.empty()) {
        if (now - w.failed_at > std::chrono::seconds(30)) {  // nobody picked it up: stop the rank
          std::fprintf(stderr, "moebench: %s\n", w.failure.c_str());
          std::fflush(stderr);
          std::_Exit(1);
        }
        continue;
      }
      ncclResult_t state = ncclSuccess;
      if (ncclCommGetAsyncError(comm, &state) != ncclSuccess || state == ncclSuccess || state == ncclInProgress)
        continue;
      const char* detail = ncclGetLastError(comm);
      w.failure = "NCCL error on " + w.who + ": " + ncclGetErrorString(state) +
                  (detail && *detail ? std::string(" (") + detail + ")" : std::string()) +
                  "; the communicator was aborted";
      w.failed_at = now;
      (void)ncclCommAbort(comm);
    }
  }
}

}  // namespace

void add(ncclComm_t comm, const std::string& who) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.m);
  r.comms[comm] = Watched{who, {}, {}};
  if (!r.thread_started) {
    std::thread(poll_forever).detach();
    r.thread_started = true;
  }
}

void remove(ncclComm_t comm) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.m);
  r.comms.erase(comm);
}

std::string failure(ncclComm_t comm) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.m);
  const auto it = r.comms.find(comm);
  return it == r.comms.end() ? std::string() : it->second.failure;
}

}  // namespace moebench::nccl_watch
