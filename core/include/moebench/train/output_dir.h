#pragma once
// A run's output directory (checkpoints/ under --out or <run.out_dir>/<run.name>) is claimed
// before training: its lock (storage/folder_lock.h) keeps a second run out while the first
// lives, and a directory that already holds checkpoints is refused unless the run resumes or
// was asked to overwrite.
#include <string>

#include "moebench/config/usage_error.h"
#include "moebench/storage/folder_lock.h"

namespace moebench {

enum class OutputMode {
  fresh,      // refuse a directory that holds checkpoints
  resume,     // --resume: continuing a run; its checkpoints stay
  overwrite,  // --overwrite: the earlier checkpoints are removed
};

// Creates `dir` if needed, takes its lock (lock_folder) and applies `mode`. Throws UsageError
// (exit 2): "runs/qs is in use by another moebench run (pid 4242; lock runs/qs/.moebench.lock)", or
// "runs/qs holds checkpoints of an earlier run (latest step_000300): pass --resume runs/qs to
// continue it, --overwrite to replace it, or another --out". Other failures (a path that is
// a file, no permission) throw std::runtime_error naming the path. A path too long for the
// filesystem (path_limits.h) is a UsageError too.
// resume_from: the checkpoint a run resumes from (--resume, as given), with mode resume or
// overwrite. Resuming from another folder into a `dir` that holds checkpoints is refused like a
// fresh run (they belong to another run): --overwrite replaces them, unless the checkpoint
// resumed from is among them.
FolderLock claim_output_dir(const std::string& dir, OutputMode mode, const std::string& resume_from = "");

// The newest step_NNNNNN folder under <dir>/checkpoints, or "" when there is none.
std::string latest_checkpoint_name(const std::string& dir);

}  // namespace moebench
