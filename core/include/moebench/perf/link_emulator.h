#pragma once
// The link emulator: a real run on one machine spends the communication time a target cluster
// (a ClusterModel, docs/simulator-emulator.md) would, stretched by a time scale.
//
// LinkEmulator holds what every rank of the job shares: the `free_at` time of each directed
// link of the cluster (ClusterNetwork's FIFO model) and the epoch of the emulated time, in POSIX
// shared memory guarded by a process-shared (robust) mutex. World rank 0 creates the segment
// under a job-unique name it broadcasts; once every rank has it mapped the name is unlinked, so
// nothing is left in /dev/shm even when the job dies. All ranks must run on one machine.
//
// Time: wall seconds on CLOCK_MONOTONIC since the shared epoch are the emulated seconds. The
// links are the cluster's with their time stretched by the scale s: bandwidth / s and latency
// x s (the "bandwidth and latency divided by the time scale" means the links' speed:
// a transfer that takes t on the cluster takes s x t here). With s = (cluster compute rate) /
// (this machine's rate per rank) compute and communication keep the cluster's ratio.
//
// EmulatedCommunicator decorates any Communicator (split() and dup() results are decorated
// too, so every sub-communicator is paced). For each operation it turns what this rank sends
// into flows (world peer, bytes, messages) with the byte counts the inner backend's algorithm
// sends (dist/mpi_communicator.h), reserves them on the shared links ready now, sleeps until the
// last one arrives and only then issues the real operation: a receiver sees the data no earlier
// than the cluster would deliver it. The real transfer's own time comes on top (small against
// scaled links; the emulator adds time, it never removes any).
//   send / isend            count x size bytes to the peer; isend sleeps before it returns the
//                           real request (the caller is held for the transfer, as the rank's
//                           NIC would be busy; never waits for a peer, so isend + recv between
//                           two ranks cannot deadlock, which deferring the start would)
//   recv / irecv            nothing: the sender paces
//   all_reduce              ring: 2 (P-1) messages, 2 (P-1)/P x count x size bytes to rank+1
//   all_gather              ring: P-1 messages of count elements to rank+1
//   reduce_scatter          ring: P-1 messages of count elements to rank+1
//   all_to_all_v            send_counts[p] elements to each peer p (the real, skewed counts)
//   broadcast               binomial tree: count elements to each child, ready when the data
//                           can have reached this rank (the hops from the root, each alone on
//                           its route: an estimate, other ranks' reservations are not known)
//   reduce                  binomial tree reversed: count elements to the parent (paced from the
//                           call; the children's arrival is the inner reduce's to wait for)
//   i<collective>           reserved when called; the real non-blocking collective starts at
//                           test() / wait() once its flows have arrived, earlier ones first (so
//                           every rank starts them in call order, as MPI requires). Trade-off: a
//                           request nobody tests until later starts later than the cluster
//                           would deliver it; a caller that computes meanwhile is not held.
//   windows                 get: a flow from the target to this rank; put / accumulate: from
//                           this rank to the target; each sleeps before the real call. flush and
//                           barrier pass through.
//   barrier, shared windows no bytes: pass through
// Errors of the inner communicator propagate unchanged. Traffic is counted by the inner
// communicator alone (this one hands it its traffic meter before each call), exactly as
// without emulation.
#include <memory>
#include <functional>
#include <vector>

#include "moebench/dist/communicator.h"
#include "moebench/perf/cluster_model.h"
#include "moebench/perf/cluster_network.h"

namespace moebench {

// One outgoing flow of a rank: `bytes` to world rank `to`, sent as `messages` messages.
struct EmulatedFlow {
  int to = 0;
  double bytes = 0;
  int messages = 1;
};

// The cluster with its time stretched by `scale` (> 0): bandwidths / scale, latencies x scale.
ClusterModel scaled_cluster(const ClusterModel& cluster, double scale);

class LinkEmulator {
 public:
  // Collective over `world` (every rank of the job; world ranks are the cluster's devices).
  // Throws std::invalid_argument when the sizes differ or scale <= 0, std::runtime_error when
  // the ranks are on several machines or the shared memory cannot be set up (on every rank).
  LinkEmulator(Communicator& world, const ClusterModel& cluster, double time_scale);
  ~LinkEmulator();
  LinkEmulator(const LinkEmulator&) = delete;
  LinkEmulator& operator=(const LinkEmulator&) = delete;

  const ClusterModel& cluster() const { return cluster_; }   // the target, as described
  const ClusterNetwork& network() const { return network_; }  // its links, time stretched
  double time_scale() const { return scale_; }

  double now() const;  // seconds since the shared epoch
  // Reserves `flows` from world rank `from`, each ready at `ready` (< 0: now), in order on the
  // shared links; returns the latest arrival (`ready` itself when no flow leaves the rank).
  double reserve(int from, const std::vector<EmulatedFlow>& flows, double ready = -1) const;
  void sleep_until(double t) const;  // t in seconds since the epoch; returns at once when past
  // reserve + sleep_until.
  void pace(int from, const std::vector<EmulatedFlow>& flows) const { sleep_until(reserve(from, flows)); }

 private:
  struct Shared;
  ClusterModel cluster_;
  double scale_ = 1;
  ClusterNetwork network_;
  Shared* shared_ = nullptr;
  size_t mapped_bytes_ = 0;
};

class EmulatedCommunicator final : public Communicator {
 public:
  // Paces `inner` (not owned: it must outlive this) over the emulator's links.
  EmulatedCommunicator(std::shared_ptr<const LinkEmulator> emulator, Communicator& inner);
  // Owns `inner` (split / dup results).
  EmulatedCommunicator(std::shared_ptr<const LinkEmulator> emulator, std::unique_ptr<Communicator> inner);
  ~EmulatedCommunicator() override;

  Communicator& inner() { return *inner_; }
  const LinkEmulator& emulator() const { return *emu_; }

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  int world_rank(int group_rank) const override { return inner_->world_rank(group_rank); }
  std::string backend() const override { return inner_->backend(); }

  void send(const void* buf, size_t count, DType type, int peer, int tag = 0) override;
  void recv(void* buf, size_t count, DType type, int peer, int tag = 0) override;
  RequestPtr isend(const void* buf, size_t count, DType type, int peer, int tag = 0) override;
  RequestPtr irecv(void* buf, size_t count, DType type, int peer, int tag = 0) override;

  void all_reduce(void* data, size_t count, DType type, ReduceOp op = ReduceOp::sum) override;
  void all_gather(const void* send, void* recv, size_t count, DType type) override;
  void reduce_scatter(const void* send, void* recv, size_t count, DType type, ReduceOp op = ReduceOp::sum) override;
  void all_to_all_v(const void* send, const size_t* send_counts, const size_t* send_displs, void* recv,
                    const size_t* recv_counts, const size_t* recv_displs, DType type) override;
  void broadcast(void* data, size_t count, DType type, int root) override;
  void reduce(void* data, size_t count, DType type, int root, ReduceOp op = ReduceOp::sum) override;
  void barrier() override;

  RequestPtr iall_reduce(void* data, size_t count, DType type, ReduceOp op = ReduceOp::sum) override;
  RequestPtr iall_gather(const void* send, void* recv, size_t count, DType type) override;
  RequestPtr iall_to_all_v(const void* send, const size_t* send_counts, const size_t* send_displs, void* recv,
                           const size_t* recv_counts, const size_t* recv_displs, DType type) override;
  RequestPtr ibroadcast(void* data, size_t count, DType type, int root) override;

  std::unique_ptr<Communicator> split(int color, int key) override;
  std::unique_ptr<Communicator> dup() override;

  void enable_windows() override { inner_->enable_windows(); }
  std::unique_ptr<Window> create_window(void* base, size_t count, DType type) override;
  std::unique_ptr<SharedWindow> create_shared_window(size_t bytes) override;

  // This rank's flows of each operation (group ranks -> world ranks): what pacing reserves.
  std::vector<EmulatedFlow> all_reduce_flows(size_t bytes) const;
  std::vector<EmulatedFlow> ring_flows(size_t bytes_per_rank) const;  // all_gather, reduce_scatter
  std::vector<EmulatedFlow> all_to_all_flows(const size_t* send_counts, size_t elem_bytes) const;
  // Broadcast: this rank's flows to its children and when the data can have reached it.
  std::vector<EmulatedFlow> broadcast_flows(size_t bytes, int root, double* ready) const;

  // The inner communicator counts traffic with this one's meter (also for its windows); on
  // destruction a borrowed inner one is left with this one's meter (null after Distributed).
  void sync_meter();

 private:
  class Deferred;
  struct PendingQueue;
  class EmuWindow;
  RequestPtr defer(double arrival, std::function<RequestPtr()> start);
  int me() const { return inner_->world_rank(inner_->rank()); }
  // A peer the inner communicator knows; others are not paced, so its own error comes unchanged.
  bool valid(int peer) const { return peer >= 0 && peer < inner_->size(); }

  std::shared_ptr<const LinkEmulator> emu_;
  std::unique_ptr<Communicator> owned_;
  Communicator* inner_ = nullptr;
  std::shared_ptr<PendingQueue> pending_;
};

}  // namespace moebench
