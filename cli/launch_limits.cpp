// Local launch bounds (launch_limits.h).
#include "launch_limits.h"

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "moebench/config/usage_error.h"
#include "moebench/perf/memory_model.h"
#include "number_text.h"

namespace moebench::cli {
namespace {

// A cgroup v2 file holding one number, or "max"; 0 when absent or unlimited.
uint64_t cgroup_value(const std::string& name) {
  std::ifstream in("/sys/fs/cgroup/" + name);
  std::string v;
  if (!(in >> v) || v == "max") return 0;
  try {
    return std::stoull(v);
  } catch (const std::exception&) {
    return 0;
  }
}

std::string local_ranks_text(int ranks) { return std::to_string(ranks) + (ranks == 1 ? " rank" : " local ranks"); }

}  // namespace

int usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

uint64_t available_memory_bytes() {
  uint64_t avail = 0;
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  uint64_t kb = 0;
  while (meminfo >> key >> kb >> unit)
    if (key == "MemAvailable:") avail = kb * 1024;
  const uint64_t limit = cgroup_value("memory.max");
  if (limit > 0) {
    const uint64_t used = cgroup_value("memory.current");
    const uint64_t left = limit > used ? limit - used : 0;
    avail = avail == 0 ? left : std::min(avail, left);
  }
  return avail;
}

uint64_t process_memory_left_bytes() {
  uint64_t left = available_memory_bytes();
  rlimit lim{};
  if (getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    uint64_t mapped = 0;  // VmSize, kB
    std::ifstream status("/proc/self/status");
    std::string key, unit;
    uint64_t kb = 0;
    while (status >> key) {
      if (key == "VmSize:" && status >> kb >> unit) mapped = kb * 1024;
      status.ignore(4096, '\n');
    }
    const uint64_t as_left = lim.rlim_cur > mapped ? lim.rlim_cur - mapped : 0;
    left = left == 0 ? as_left : std::min(left, as_left);
  }
  return left;
}

std::string ranks_given_as(int ranks, bool from_flag) {
  return (from_flag ? "--ranks " : "run.ranks = ") + std::to_string(ranks);
}

void check_rank_count(int ranks, bool oversubscribe_ok, const std::string& given_as, const std::string& override_hint) {
  const int cores = usable_cores();
  const int per_core = kMaxRanksPerCore * cores;
  const std::string where = std::to_string(cores) + (cores == 1 ? " core" : " cores");
  if (ranks > kMaxLocalRanks)
    throw UsageError(given_as + ": refusing to start " + local_ranks_text(ranks) + ": one launch on this machine "
                     "starts at most " + std::to_string(kMaxLocalRanks) + " (and " + std::to_string(kMaxRanksPerCore) +
                     " per core without --oversubscribe-ok: " + std::to_string(per_core) + " on " + where +
                     "); for more, start them with mpirun / srun yourself");
  if (ranks > per_core && !oversubscribe_ok)
    throw UsageError(given_as + ": refusing to start " + local_ranks_text(ranks) + " on " + where + ": at most " +
                     std::to_string(kMaxRanksPerCore) + " ranks per core (" + std::to_string(per_core) + " here)" +
                     (override_hint.empty() ? "" : "; " + override_hint));
}

void check_local_launch(const Config& cfg, const std::string& given_as) {
  const int ranks = cfg.run.ranks;
  check_rank_count(ranks, cfg.run.oversubscribe_ok, given_as, kRunOversubscribeHint);
  if (cfg.run.oversubscribe_ok) return;
  const std::string what = local_ranks_text(ranks);
  // Every stage's ranks (dp x tp of them), and rank 0's checkpoint buffers once. On a GPU
  // (run.device = "cuda") the weights, gradients, Adam moments and activations live in the GPU's
  // memory: the host keeps each rank's corpus and the checkpoint's buffers.
  const bool gpu = cfg.run.device == Device::cuda;
  const MemoryModel model = memory_model(cfg);
  double need = model.stages.front().fp32.checkpoint;
  for (const StageMemory& s : model.stages)
    need += (double)model.d * model.t * (kRankBaseBytes + (gpu ? s.fp32.data : s.fp32.steady()));
  const TrainerMemory& worst = model.worst_fp32().fp32;
  const uint64_t avail = available_memory_bytes();
  if (gpu && avail > 0 && need > (double)avail)
    throw UsageError("refusing to start " + what + ": they need about " + bytes_text(need) + " of host memory (" +
                     bytes_text(worst.data) + " per rank for the corpus" +
                     (worst.checkpoint > 0 ? ", " + bytes_text(worst.checkpoint) + " to write a checkpoint" : "") +
                     "; the model lives on the GPU) and " + bytes_text((double)avail) + " is available; " +
                     kRunOversubscribeHint);
  if (avail > 0 && need > (double)avail)
    throw UsageError("refusing to start " + what + ": they need about " + bytes_text(need) + " of memory (up to " +
                     bytes_text(kRankBaseBytes + worst.peak()) + " for one rank: " +
                     bytes_text(worst.weights + worst.gradients + worst.adam) + " for " + count_text(worst.parameters) +
                     " parameters' weights, gradients and Adam moments, " +
                     bytes_text(worst.activations + worst.workspace) + " of activations and workspace, " +
                     bytes_text(worst.data) + " for the corpus" +
                     (worst.checkpoint > 0 ? ", " + bytes_text(worst.checkpoint) + " to write a checkpoint" : "") +
                     "; moebench plan --memory details it) and " + bytes_text((double)avail) + " is available; " +
                     kRunOversubscribeHint);
}

}  // namespace moebench::cli
