#pragma once
// A folder one moebench run owns while it lives: a lock (flock on <dir>/.moebench.lock, holding
// the owner's pid) keeps a second run out. The lock dies with its process, so a killed run never
// leaves a stale one. Run outputs (train/output_dir.h) and the SSD tier's state folders
// (storage/expert_state_tier.h) are claimed through it.
#include <string>

namespace moebench {

// Holds the lock until destroyed (or until its process ends).
class FolderLock {
 public:
  FolderLock() = default;
  ~FolderLock();
  FolderLock(FolderLock&& other) noexcept;
  FolderLock& operator=(FolderLock&& other) noexcept;
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

  bool held() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }  // the lock file

 private:
  friend FolderLock lock_folder(const std::string& dir, const std::string& in_use_hint);
  int fd_ = -1;
  std::string path_;
};

// Creates `dir` if needed and takes its lock. Throws UsageError (exit 2) when the path is too
// long for the filesystem (config/path_limits.h) or another run holds the lock: "runs/qs is in
// use by another moebench run (pid 4242; lock runs/qs/.moebench.lock): wait for it to end, or
// <in_use_hint>". Other failures (a path that is a file, no permission) throw
// std::runtime_error naming the path.
FolderLock lock_folder(const std::string& dir, const std::string& in_use_hint);

}  // namespace moebench
