// One file per expert state record, written atomically and read with verification
// (expert_state_store.h).
#include "moebench/storage/expert_state_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

namespace moebench {
namespace {

// Fault injection for the crash tests: MOEBENCH_KILL_IN_WRITE=N kills the process with SIGKILL
// in the N-th record write of the process (1-based), its temp file written and synced, the
// rename not done: the worst moment of a write-back.
void kill_if_asked() {
  static const long target = [] {
    const char* v = std::getenv("MOEBENCH_KILL_IN_WRITE");
    return v ? std::atol(v) : 0L;
  }();
  static long writes = 0;
  if (target > 0 && ++writes == target) ::raise(SIGKILL);
}

static_assert(std::endian::native == std::endian::little, "expert state files are little-endian");

constexpr char kMagic[8] = {'M', 'B', 'E', 'X', 'P', 'S', 'T', '1'};

// Slicing-by-8 tables: t[0] the byte-wise CRC table, t[k][i] the CRC of byte i followed by k
// zero bytes, so 8 bytes fold in one step (the byte loop reads records at ~0.4 GB/s, slower
// than the files; this one several times faster).
using CrcTables = std::array<std::array<uint32_t, 256>, 8>;
CrcTables crc_tables() {
  CrcTables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i)
    for (int k = 1; k < 8; ++k) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFFu];
  return t;
}

std::string expert_text(int block, int expert) {
  return "block " + std::to_string(block) + ", expert " + std::to_string(expert);
}

std::string errno_text(int err) { return std::strerror(err); }

// The header's fields (expert_state_store.h); encode/decode go through memcpy at fixed offsets.
struct Header {
  uint32_t version = ExpertStateFiles::kFormatVersion;
  int32_t block = 0, expert = 0;
  uint64_t count = 0;
  uint32_t payload_crc = 0;
};

std::array<unsigned char, ExpertStateFiles::kHeaderBytes> encode(const Header& h) {
  std::array<unsigned char, ExpertStateFiles::kHeaderBytes> b{};
  const uint32_t reserved = 0;
  std::memcpy(b.data(), kMagic, 8);
  std::memcpy(b.data() + 8, &h.version, 4);
  std::memcpy(b.data() + 12, &h.block, 4);
  std::memcpy(b.data() + 16, &h.expert, 4);
  std::memcpy(b.data() + 20, &reserved, 4);
  std::memcpy(b.data() + 24, &h.count, 8);
  std::memcpy(b.data() + 32, &h.payload_crc, 4);
  const uint32_t header_crc = crc32_update(0, b.data(), 36);
  std::memcpy(b.data() + 36, &header_crc, 4);
  return b;
}

// Closes a descriptor on every path out of a scope.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

// pwrite / pread of the whole range, retrying short transfers and EINTR; returns the errno of a
// failure (0 = all done) and, for reads, stops at end of file (*done < bytes).
int pwrite_all(int fd, const void* data, size_t bytes, off_t offset) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::pwrite(fd, p, bytes, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += n;
    bytes -= (size_t)n;
    offset += n;
  }
  return 0;
}

int pread_all(int fd, void* data, size_t bytes, off_t offset, size_t* done) {
  char* p = static_cast<char*>(data);
  *done = 0;
  while (*done < bytes) {
    const ssize_t n = ::pread(fd, p + *done, bytes - *done, offset + (off_t)*done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) break;  // end of file
    *done += (size_t)n;
  }
  return 0;
}

}  // namespace

ExpertStateError::ExpertStateError(const std::string& path, int block, int expert, const std::string& what)
    : std::runtime_error(what), path_(path), block_(block), expert_(expert) {}

uint32_t crc32_update(uint32_t crc, const void* data, size_t bytes) {
  static const CrcTables t = crc_tables();
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (; bytes >= 8; bytes -= 8, p += 8) {  // little-endian words (the store checks the host order)
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= crc;
    crc = t[7][lo & 0xFFu] ^ t[6][(lo >> 8) & 0xFFu] ^ t[5][(lo >> 16) & 0xFFu] ^ t[4][lo >> 24] ^
          t[3][hi & 0xFFu] ^ t[2][(hi >> 8) & 0xFFu] ^ t[1][(hi >> 16) & 0xFFu] ^ t[0][hi >> 24];
  }
  for (; bytes > 0; --bytes, ++p) crc = t[0][(crc ^ *p) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

ExpertStateFiles::ExpertStateFiles(std::string dir, bool sync) : dir_(std::move(dir)), sync_(sync) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir_, ec))
    throw ExpertStateError(dir_, -1, -1, "expert state folder " + dir_ + " is not an existing directory");
  if (::access(dir_.c_str(), W_OK | X_OK) != 0)
    throw ExpertStateError(dir_, -1, -1, "expert state folder " + dir_ + " is not writable: " + errno_text(errno));
  // A write-back killed before its rename leaves <file>.tmp: never a record, removed here.
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec))
    if (e.path().extension() == ".tmp" && e.path().stem().extension() == ".state" && fs::remove(e.path(), ec))
      ++stale_removed_;
}

std::string ExpertStateFiles::path_of(int block, int expert) const {
  return dir_ + "/block" + std::to_string(block) + "_expert" + std::to_string(expert) + ".state";
}

bool ExpertStateFiles::exists(int block, int expert) const {
  struct stat st {};
  return ::stat(path_of(block, expert).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

void ExpertStateFiles::write(int block, int expert, std::span<const float> payload) {
  const std::string path = path_of(block, expert), tmp = path + ".tmp";
  auto fail = [&](const std::string& step, int err) {
    ::unlink(tmp.c_str());
    throw ExpertStateError(path, block, expert,
                           "cannot write the state of " + expert_text(block, expert) + ": " + step + " " + tmp + ": " +
                               errno_text(err) + (err == ENOSPC ? " (the disk under storage.ssd_dir is full)" : ""));
  };
  Header h;
  h.block = block;
  h.expert = expert;
  h.count = payload.size();
  h.payload_crc = crc32_update(0, payload.data(), payload.size_bytes());
  const auto header = encode(h);
  {
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.fd < 0) fail("open", errno);
    if (int err = pwrite_all(fd.fd, header.data(), header.size(), 0)) fail("pwrite", err);
    if (int err = pwrite_all(fd.fd, payload.data(), payload.size_bytes(), (off_t)kHeaderBytes)) fail("pwrite", err);
    if (sync_ && ::fsync(fd.fd) != 0) fail("fsync", errno);
    const int fd_value = fd.fd;
    fd.fd = -1;
    if (::close(fd_value) != 0) fail("close", errno);  // NFS and some file systems report ENOSPC here
  }
  kill_if_asked();  // MOEBENCH_KILL_IN_WRITE: a kill -9 between the complete temp file and the rename
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename to " + path + ":", errno);
  // The rename is durable once the directory is: without this a power loss could bring back the old name.
  if (sync_) {
    Fd dirfd(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dirfd.fd < 0 || ::fsync(dirfd.fd) != 0)
      throw ExpertStateError(path, block, expert, "cannot sync the folder " + dir_ + " after writing " + path + ": " +
                                                      errno_text(errno));
  }
  bytes_written_ += (int64_t)(kHeaderBytes + payload.size_bytes());
}

void ExpertStateFiles::read(int block, int expert, std::span<float> out) {
  const std::string path = path_of(block, expert);
  auto bad = [&](const std::string& why) {
    throw ExpertStateError(path, block, expert,
                           "expert state file " + path + " (" + expert_text(block, expert) + ") " + why);
  };
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.fd < 0) bad("cannot be opened: " + errno_text(errno));
  std::array<unsigned char, kHeaderBytes> b{};
  size_t got = 0;
  if (int err = pread_all(fd.fd, b.data(), b.size(), 0, &got)) bad("cannot be read: " + errno_text(err));
  if (got < kHeaderBytes) bad("is truncated: " + std::to_string(got) + " bytes, shorter than its header");
  if (std::memcmp(b.data(), kMagic, 8) != 0) bad("has a bad magic (not an expert state file)");
  Header h;
  uint32_t header_crc = 0;
  std::memcpy(&h.version, b.data() + 8, 4);
  std::memcpy(&h.block, b.data() + 12, 4);
  std::memcpy(&h.expert, b.data() + 16, 4);
  std::memcpy(&h.count, b.data() + 24, 8);
  std::memcpy(&h.payload_crc, b.data() + 32, 4);
  std::memcpy(&header_crc, b.data() + 36, 4);
  if (h.version != kFormatVersion)
    bad("has format version " + std::to_string(h.version) + "; this build reads " + std::to_string(kFormatVersion));
  if (crc32_update(0, b.data(), 36) != header_crc) bad("has a corrupt header (header checksum mismatch)");
  if (h.block != block || h.expert != expert)
    bad("holds " + expert_text(h.block, h.expert) + " instead (a file copied or renamed by hand?)");
  if (h.count != out.size())
    bad("holds " + std::to_string(h.count) + " floats; the model's record has " + std::to_string(out.size()));
  if (int err = pread_all(fd.fd, out.data(), out.size_bytes(), (off_t)kHeaderBytes, &got))
    bad("cannot be read: " + errno_text(err));
  if (got < out.size_bytes())
    bad("is truncated: " + std::to_string(kHeaderBytes + got) + " of " +
        std::to_string(kHeaderBytes + out.size_bytes()) + " bytes");
  char extra = 0;
  if (pread_all(fd.fd, &extra, 1, (off_t)(kHeaderBytes + out.size_bytes()), &got) == 0 && got > 0)
    bad("is longer than its header says (trailing bytes)");
  if (crc32_update(0, out.data(), out.size_bytes()) != h.payload_crc)
    bad("is corrupt: payload checksum mismatch");
  bytes_read_ += (int64_t)(kHeaderBytes + out.size_bytes());
}

}  // namespace moebench
