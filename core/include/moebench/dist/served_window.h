#pragma once
// Served windows: one-sided windows whose group spans ranks that the data communicator's own
// windows do not reach (Communicator::window_reach: NCCL's CUDA IPC windows reach the ranks of
// one machine). Operations on a rank in reach go to the backend's window; on any other rank they
// become request/response messages over a host communicator of the same ranks (Janus §6: the
// requester sends a request, the target's server sends the data), served by a thread of the
// target that reads and writes its window memory through the backend (WindowStaging):
//   get         request {offset, count, epoch}, the data comes back into host staging and is
//               copied into the destination at the flush;
//   put, accumulate  request + the data from host staging; the server writes or adds it
//               (atomically with the backend window's accumulates) and acknowledges;
//   flush       completes this rank's operations to a target (data in place, acknowledgements in);
//   barrier     flushes everything, then the backend window's barrier; a request made after
//               barrier k is served once the target has returned from its barrier k, so a get
//               never reads memory the target's previous epoch is still writing.
// The host messages go over a dup of the host communicator (its own tags), not counted there:
// the bytes are counted on the data communicator's meter as the backend's one-sided operations
// are (a get on the requester's, with peer = target; a put or accumulate on the origin's).
// Destroying the window is collective (each rank tells each served peer it is done, and its
// server stops when every peer has); while unwinding, the server stops at once.
#include <cstddef>
#include <memory>

#include "moebench/dist/communicator.h"

namespace moebench {

// How a served window moves the data communicator's memory (Communicator::window_staging).
class WindowStaging {
 public:
  virtual ~WindowStaging() = default;
  virtual void* alloc_host(size_t bytes) = 0;  // staging (host memory; no call that waits for a GPU)
  virtual void free_host(void* p) noexcept = 0;
  // The requester's copies between its buffers and staging, after the calling task's earlier
  // work (its stream on a GPU); complete on return.
  virtual void to_host(void* host, const void* src, size_t bytes) = 0;
  virtual void from_host(void* dst, const void* host, size_t bytes) = 0;
  // The server's access to this rank's window memory (base + offset in bytes), from its thread;
  // complete on return. add: float sums, atomic with the backend window's accumulates.
  virtual void read(void* host, size_t offset, size_t bytes) = 0;
  virtual void write(size_t offset, const void* host, size_t bytes) = 0;
  virtual void add(size_t offset, const float* host, size_t count) = 0;
};

// Host memory (the default of Communicator::window_staging): copies, and adds through the
// backend window's own accumulate into this rank (`me`), which MPI makes atomic with the others'.
std::unique_ptr<WindowStaging> host_window_staging(Window& inner, void* base, int me);

// A window over `count` elements at `base` on every rank of `data` (collective over `data` and
// `host`, which hold the same ranks in the same order): the data communicator's own window when
// it reaches every rank, else a served window (above).
std::unique_ptr<Window> create_served_window(Communicator& data, Communicator& host, void* base, size_t count,
                                             DType type);

}  // namespace moebench
