// Claiming a run's output directory: its lock (storage/folder_lock.h), refusal of a directory
// holding an earlier run's checkpoints (see output_dir.h).
#include "moebench/train/output_dir.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "moebench/train/checkpoint.h"

namespace fs = std::filesystem;

namespace moebench {

std::string latest_checkpoint_name(const std::string& dir) {
  try {
    return fs::path(resolve_checkpoint_dir(dir)).filename().string();
  } catch (const CheckpointError&) {
    return "";
  }
}

namespace {

// Whether the checkpoint `resume_from` names lies in <dir>/checkpoints (false when it names none:
// the resume reports that itself).
bool checkpoint_inside(const std::string& resume_from, const std::string& dir) {
  std::string checkpoint;
  try {
    checkpoint = resolve_checkpoint_dir(resume_from);
  } catch (const CheckpointError&) {
    return false;
  }
  std::error_code ec;
  const fs::path inside = fs::weakly_canonical(fs::absolute(fs::path(dir) / "checkpoints"), ec);
  const fs::path path = fs::weakly_canonical(fs::absolute(checkpoint), ec);
  const auto [end, unused] = std::mismatch(inside.begin(), inside.end(), path.begin(), path.end());
  return end == inside.end();
}

}  // namespace

FolderLock claim_output_dir(const std::string& dir, OutputMode mode, const std::string& resume_from) {
  FolderLock lock = lock_folder(dir, "pass another --out");
  const std::string latest = latest_checkpoint_name(dir);
  if (mode == OutputMode::fresh && !latest.empty())
    throw UsageError(dir + " holds checkpoints of an earlier run (latest " + latest + "): pass --resume " + dir +
                     " to continue it, --overwrite to replace it, or another --out");
  const bool foreign_resume = !resume_from.empty() && !checkpoint_inside(resume_from, dir);
  if (mode == OutputMode::resume && foreign_resume && !latest.empty())
    throw UsageError(dir + " holds checkpoints of another run (latest " + latest + "); --resume " + resume_from +
                     " continues a run from another folder and would replace them: pass --overwrite to replace "
                     "them, or another --out");
  if (mode == OutputMode::overwrite && !resume_from.empty() && !foreign_resume)
    throw UsageError("--overwrite would remove the checkpoint --resume " + resume_from + " names (it is in " + dir +
                     "): resume without --overwrite");
  if (mode == OutputMode::overwrite) {
    std::error_code ec;
    fs::remove_all(fs::path(dir) / "checkpoints", ec);
    if (ec)
      throw std::runtime_error("output directory " + dir + ": cannot remove the earlier checkpoints (" +
                               ec.message() + ")");
  }
  return lock;
}

}  // namespace moebench
