#pragma once
// A run's output directory (checkpoints/ under --out or <run.out_dir>/<run.name>) is claimed
// before training: a lock (flock on <dir>/.moebench.lock, holding the owner's pid) keeps a
// second run out while the first lives, and a directory that already holds checkpoints is
// refused unless the run resumes or was asked to overwrite. The lock dies with its process,
// so a killed run never leaves a stale one.
#include <string>

#include "moebench/config/usage_error.h"

namespace moebench {

enum class OutputMode {
  fresh,      // refuse a directory that holds checkpoints
  resume,     // --resume: continuing a run; its checkpoints stay
  overwrite,  // --overwrite: the earlier checkpoints are removed
};

// Holds the lock until destroyed (or until its process ends).
class OutputDirLock {
 public:
  OutputDirLock() = default;
  ~OutputDirLock();
  OutputDirLock(OutputDirLock&& other) noexcept;
  OutputDirLock& operator=(OutputDirLock&& other) noexcept;
  OutputDirLock(const OutputDirLock&) = delete;
  OutputDirLock& operator=(const OutputDirLock&) = delete;

  bool held() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }  // the lock file

 private:
  friend OutputDirLock claim_output_dir(const std::string& dir, OutputMode mode, const std::string& resume_from);
  int fd_ = -1;
  std::string path_;
};

// Creates `dir` if needed, takes its lock and applies `mode`. Throws UsageError (exit 2):
// "runs/qs is in use by another moebench run (pid 4242; lock runs/qs/.moebench.lock)", or
// "runs/qs holds checkpoints of an earlier run (latest step_000300): pass --resume runs/qs to
// continue it, --overwrite to replace it, or another --out". Other failures (a path that is
// a file, no permission) throw std::runtime_error naming the path. A path too long for the
// filesystem (path_limits.h) is a UsageError too.
// resume_from: the checkpoint a run resumes from (--resume, as given), with mode resume or
// overwrite. Resuming from another folder into a `dir` that holds checkpoints is refused like a
// fresh run (they belong to another run): --overwrite replaces them, unless the checkpoint
// resumed from is among them.
OutputDirLock claim_output_dir(const std::string& dir, OutputMode mode, const std::string& resume_from = "");

// The newest step_NNNNNN folder under <dir>/checkpoints, or "" when there is none.
std::string latest_checkpoint_name(const std::string& dir);

}  // namespace moebench
