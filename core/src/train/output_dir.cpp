// Claiming a run's output directory: flock-based lock with the holder's pid, refusal of a
// directory holding an earlier run's checkpoints (see output_dir.h).
#include "moebench/train/output_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "moebench/config/path_limits.h"
#include "moebench/train/checkpoint.h"

namespace fs = std::filesystem;

namespace moebench {

OutputDirLock::~OutputDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

OutputDirLock::OutputDirLock(OutputDirLock&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

OutputDirLock& OutputDirLock::operator=(OutputDirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

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

OutputDirLock claim_output_dir(const std::string& dir, OutputMode mode, const std::string& resume_from) {
  if (const std::string why = path_length_problem(dir); !why.empty())
    throw UsageError("output directory " + dir.substr(0, 48) + (dir.size() > 48 ? "..." : "") + ": " + why);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir))
    throw std::runtime_error("output directory " + dir + ": cannot create it" +
                             (ec ? " (" + ec.message() + ")" : std::string(" (a file has that name)")));
  OutputDirLock lock;
  lock.path_ = (fs::path(dir) / ".moebench.lock").string();
  lock.fd_ = ::open(lock.path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock.fd_ < 0)
    throw std::runtime_error("output directory " + dir + ": cannot open its lock file " + lock.path_ + " (" +
                             std::strerror(errno) + ")");
  if (::flock(lock.fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {};
    const ssize_t n = ::pread(lock.fd_, buf, sizeof buf - 1, 0);
    std::string holder = n > 0 ? std::string(buf, (size_t)n) : std::string();
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    if (err == EWOULDBLOCK)
      throw UsageError(dir + " is in use by another moebench run (pid " + (holder.empty() ? "unknown" : holder) +
                       "; lock " + lock.path_ + "): wait for it to end, or pass another --out");
    throw std::runtime_error("output directory " + dir + ": cannot lock " + lock.path_ + " (" +
                             std::strerror(err) + ")");
  }
  const std::string pid = std::to_string((long)::getpid()) + "\n";
  if (::ftruncate(lock.fd_, 0) != 0 || ::pwrite(lock.fd_, pid.data(), pid.size(), 0) != (ssize_t)pid.size())
    throw std::runtime_error("output directory " + dir + ": cannot write " + lock.path_ + " (" +
                             std::strerror(errno) + ")");
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
    fs::remove_all(fs::path(dir) / "checkpoints", ec);
    if (ec)
      throw std::runtime_error("output directory " + dir + ": cannot remove the earlier checkpoints (" +
                               ec.message() + ")");
  }
  return lock;
}

}  // namespace moebench
