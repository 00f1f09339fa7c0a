// TrafficMeter: lock-free per-peer byte counters of one rank; link-class sums via the topology.
#include "moebench/dist/traffic_meter.h"

#include <stdexcept>
#include <string>

namespace moebench {

TrafficMeter::TrafficMeter(int my_rank, const Topology& topology)
    : rank_(my_rank), topo_(topology), per_peer_(new std::atomic<uint64_t>[topology.world_size()]) {
  if (my_rank < 0 || my_rank >= topology.world_size())
    throw std::invalid_argument("traffic meter: rank " + std::to_string(my_rank) + " is outside the world of " +
                                std::to_string(topology.world_size()) + " ranks");
  for (int p = 0; p < topo_.world_size(); ++p) per_peer_[p].store(0, std::memory_order_relaxed);
}

void TrafficMeter::add(int world_peer, uint64_t bytes) {
  if (world_peer < 0 || world_peer >= topo_.world_size())
    throw std::out_of_range("traffic meter: peer " + std::to_string(world_peer) + " is outside the world of " +
                            std::to_string(topo_.world_size()) + " ranks");
  if (world_peer == rank_) return;  // a copy to oneself is not traffic
  per_peer_[world_peer].fetch_add(bytes, std::memory_order_relaxed);
}

uint64_t TrafficMeter::bytes_to(int world_peer) const {
  if (world_peer < 0 || world_peer >= topo_.world_size())
    throw std::out_of_range("traffic meter: peer " + std::to_string(world_peer) + " is outside the world of " +
                            std::to_string(topo_.world_size()) + " ranks");
  return per_peer_[world_peer].load(std::memory_order_relaxed);
}

uint64_t TrafficMeter::bytes(LinkClass c) const {
  if (c == LinkClass::self) return 0;
  uint64_t sum = 0;
  for (int p = 0; p < topo_.world_size(); ++p)
    if (topo_.link(rank_, p) == c) sum += per_peer_[p].load(std::memory_order_relaxed);
  return sum;
}

uint64_t TrafficMeter::total() const {
  uint64_t sum = 0;
  for (int p = 0; p < topo_.world_size(); ++p)
    if (p != rank_) sum += per_peer_[p].load(std::memory_order_relaxed);
  return sum;
}

std::vector<uint64_t> TrafficMeter::per_peer() const {
  std::vector<uint64_t> out(topo_.world_size());
  for (int p = 0; p < topo_.world_size(); ++p) out[p] = per_peer_[p].load(std::memory_order_relaxed);
  return out;
}

void TrafficMeter::reset() {
  for (int p = 0; p < topo_.world_size(); ++p) per_peer_[p].store(0, std::memory_order_relaxed);
}

}  // namespace moebench
