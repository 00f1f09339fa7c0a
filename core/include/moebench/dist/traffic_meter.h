#pragma once
// TrafficMeter: every byte one rank sends, by destination world rank and by link class.
// Communicators call add() for each message they send (collectives per underlying message).
// Thread-safe: the compute and comm streams of a rank share one meter.
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "moebench/dist/topology.h"

namespace moebench {

class TrafficMeter {
 public:
  TrafficMeter(int my_rank, const Topology& topology);

  void add(int world_peer, uint64_t bytes);
  uint64_t bytes_to(int world_peer) const;
  uint64_t bytes(LinkClass c) const;  // self-sends are never counted (copies, not traffic)
  uint64_t total() const;             // intra_node + inter_node
  std::vector<uint64_t> per_peer() const;
  void reset();
  int rank() const { return rank_; }
  const Topology& topology() const { return topo_; }

 private:
  int rank_;
  Topology topo_;
  std::unique_ptr<std::atomic<uint64_t>[]> per_peer_;
};

}  // namespace moebench
