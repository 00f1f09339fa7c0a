// A folder's flock-based lock with the holder's pid (see folder_lock.h).
#include "moebench/storage/folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "moebench/config/path_limits.h"
#include "moebench/config/usage_error.h"

namespace fs = std::filesystem;

namespace moebench {

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

FolderLock::FolderLock(FolderLock&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

FolderLock& FolderLock::operator=(FolderLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

FolderLock lock_folder(const std::string& dir, const std::string& in_use_hint) {
  if (const std::string why = path_length_problem(dir); !why.empty())
    throw UsageError("output directory " + dir.substr(0, 48) + (dir.size() > 48 ? "..." : "") + ": " + why);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir))
    throw std::runtime_error("output directory " + dir + ": cannot create it" +
                             (ec ? " (" + ec.message() + ")" : std::string(" (a file has that name)")));
  FolderLock lock;
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
                       "; lock " + lock.path_ + "): wait for it to end, or " + in_use_hint);
    throw std::runtime_error("output directory " + dir + ": cannot lock " + lock.path_ + " (" +
                             std::strerror(err) + ")");
  }
  const std::string pid = std::to_string((long)::getpid()) + "\n";
  if (::ftruncate(lock.fd_, 0) != 0 || ::pwrite(lock.fd_, pid.data(), pid.size(), 0) != (ssize_t)pid.size())
    throw std::runtime_error("output directory " + dir + ": cannot write " + lock.path_ + " (" +
                             std::strerror(errno) + ")");
  return lock;
}

}  // namespace moebench
