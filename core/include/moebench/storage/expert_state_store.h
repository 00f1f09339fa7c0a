#pragma once
// The SSD tier of MoESys's hierarchical storage (moesys.txt §III-B1): one file per expert
// (block, expert index) holding its state record, fp32 master weights + Adam m + v
// (3 x the expert's parameter count floats, config.h expert_state_record_bytes).
//
// Decisions:
// - One file per expert, <dir>/block<B>_expert<E>.state: a write-back of one expert touches one
//   file; pread / pwrite at fixed offsets (io_uring would add a dependency for no gain at this
//   size, the cache above batches nothing yet).
// - File = a 40-byte header + the payload. Header, little-endian: magic "MBEXPST1" (8 bytes),
//   format version u32 (1), block i32, expert i32, reserved u32 (0), float count u64, CRC-32
//   (IEEE, as zlib's crc32) of the payload bytes u32, CRC-32 of the header's first 36 bytes u32.
//   Payload: float count fp32 values, host order (little-endian hosts only; checked).
// - Atomic replace: the record is written to <file>.tmp, fsync'ed (unless sync = false, below),
//   renamed over <file>, and the directory fsync'ed, so a kill -9 at any point leaves either the old or the new complete file
//   (POSIX rename is atomic). A <file>.tmp left by such a kill is never read, is overwritten
//   (O_TRUNC) by the next write of that expert and removed when the store is opened.
// - One store per directory and process: opening one removes every *.tmp in it, so ranks sharing
//   a folder each take their own sub-folder (the trainer: <ssd_dir>/rank<r>).
// - Reads verify everything ("never train on garbage"): a missing file, a short file, a bad
//   magic, version, header checksum, block / expert / count that differ from the request, or a
//   payload checksum mismatch throw ExpertStateError naming the file, block and expert.
// - Writes that fail (ENOSPC, EACCES, EROFS, ...) throw ExpertStateError naming the path and
//   the system's reason; the temp file is removed and the old record stays.
// - Fault injection for the crash tests: MOEBENCH_KILL_IN_WRITE=N sends the process SIGKILL in
//   its N-th write, after the temp file is complete and before the rename.
// Not thread-safe: one owner (the cache, storage/sparse_state_cache.h) calls it.
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

namespace moebench {

// A storage failure of one expert's record (or of the folder: block = expert = -1).
class ExpertStateError : public std::runtime_error {
 public:
  ExpertStateError(const std::string& path, int block, int expert, const std::string& what);
  const std::string& path() const { return path_; }
  int block() const { return block_; }
  int expert() const { return expert_; }

 private:
  std::string path_;
  int block_, expert_;
};

// CRC-32 (IEEE 802.3, reflected, as zlib's crc32), continuing from `crc` (0 to start).
uint32_t crc32_update(uint32_t crc, const void* data, size_t bytes);

class ExpertStateFiles {
 public:
  static constexpr uint32_t kFormatVersion = 1;
  static constexpr size_t kHeaderBytes = 40;

  // `dir` must be an existing writable directory (ExpertStateError otherwise); stale *.tmp files
  // in it (a write-back killed mid-way) are removed. sync = false leaves out both fsyncs: a
  // write is still atomic against a killed process (the kernel keeps what was written; the rename
  // is atomic) but not against a power loss. The trainer's tier writes so
  // (storage/expert_state_tier.h: a resume rebuilds every record from the checkpoint anyway).
  explicit ExpertStateFiles(std::string dir, bool sync = true);

  const std::string& dir() const { return dir_; }
  std::string path_of(int block, int expert) const;  // <dir>/block<B>_expert<E>.state
  bool exists(int block, int expert) const;

  // Replaces the record of (block, expert) atomically with `payload`.
  void write(int block, int expert, std::span<const float> payload);
  // Reads the record of (block, expert) into `out`, whose size must be the stored float count;
  // verifies header and checksum (ExpertStateError naming file, block and expert otherwise).
  void read(int block, int expert, std::span<float> out);

  int stale_temps_removed() const { return stale_removed_; }  // by the constructor
  // Bytes moved through read() / write() (headers included), since construction.
  int64_t bytes_read() const { return bytes_read_; }
  int64_t bytes_written() const { return bytes_written_; }

 private:
  std::string dir_;
  bool sync_ = true;
  int stale_removed_ = 0;
  int64_t bytes_read_ = 0, bytes_written_ = 0;
};

}  // namespace moebench
