#pragma once
// LocalCommunicator: the single-process backend (size 1, rank 0, backend "local"), no MPI.
// Collectives are copies; send/recv to self go through an in-memory FIFO per tag (a send
// followed by a recv completes; an irecv posted before the matching send completes when the
// send arrives); windows and shared windows are plain local memory. split() and dup() give new
// LocalCommunicators with their own message space and the same traffic meter.
//
// Semantics shared with MpiCommunicator:
//   - peer / root / target must be 0 (the only rank); anything else throws std::out_of_range.
//   - recv/irecv must name exactly the element count of the matching send
//     (std::runtime_error otherwise). A recv that no send can ever match throws instead of
//     blocking forever ("would block forever").
//   - split(color, key) with color < 0 (MPI_UNDEFINED) returns nullptr.
//   - tags must be in [0, 32700) (higher tags are reserved for the MPI backend's collectives).
//   - Window offsets are in BYTES, counts in elements of the window's dtype.
// Nothing is ever counted as traffic (every message is a self-send).
#include <memory>

#include "moebench/dist/communicator.h"

namespace moebench {

class LocalCommunicator : public Communicator {
 public:
  LocalCommunicator();
  ~LocalCommunicator() override;

  int rank() const override { return 0; }
  int size() const override { return 1; }
  int world_rank(int group_rank) const override;
  std::string backend() const override { return "local"; }

  void send(const void* buf, size_t count, DType type, int peer, int tag = 0) override;
  void recv(void* buf, size_t count, DType type, int peer, int tag = 0) override;
  RequestPtr isend(const void* buf, size_t count, DType type, int peer, int tag = 0) override;
  RequestPtr irecv(void* buf, size_t count, DType type, int peer, int tag = 0) override;

  void all_reduce(void* data, size_t count, DType type, ReduceOp op = ReduceOp::sum) override;
  void all_gather(const void* send, void* recv, size_t count, DType type) override;
  void reduce_scatter(const void* send, void* recv, size_t count, DType type,
                      ReduceOp op = ReduceOp::sum) override;
  void all_to_all_v(const void* send, const size_t* send_counts, const size_t* send_displs,
                    void* recv, const size_t* recv_counts, const size_t* recv_displs,
                    DType type) override;
  void broadcast(void* data, size_t count, DType type, int root) override;
  void reduce(void* data, size_t count, DType type, int root, ReduceOp op = ReduceOp::sum) override;
  void barrier() override {}

  RequestPtr iall_reduce(void* data, size_t count, DType type, ReduceOp op = ReduceOp::sum) override;
  RequestPtr iall_gather(const void* send, void* recv, size_t count, DType type) override;
  RequestPtr iall_to_all_v(const void* send, const size_t* send_counts, const size_t* send_displs,
                           void* recv, const size_t* recv_counts, const size_t* recv_displs,
                           DType type) override;
  RequestPtr ibroadcast(void* data, size_t count, DType type, int root) override;

  std::unique_ptr<Communicator> split(int color, int key) override;
  std::unique_ptr<Communicator> dup() override;

  std::unique_ptr<Window> create_window(void* base, size_t count, DType type) override;
  std::unique_ptr<SharedWindow> create_shared_window(size_t bytes) override;

  struct Mailbox;  // the per-communicator message queues (public only for the request type)

 private:
  std::shared_ptr<Mailbox> mailbox_;
};

}  // namespace moebench
