#pragma once
// ClusterNetwork: the directed links of a ClusterModel and the route a transfer between two
// devices takes over them, plus the FIFO link model the simulator (perf/simulator.h) and the
// link emulator share (ASTRA-sim's congestion-aware analytical backend as the model: a FIFO
// queue per directed link; a transfer holds a link for size / bandwidth and arrives after the
// latency).
//
// Links (each one direction, so a link's two directions never contend):
//   dev_out[r], dev_in[r]   device r's port into / out of its node's fabric (NVLink / NVSwitch /
//                           shared memory): intra-node transfers a -> b hold dev_out[a] and
//                           dev_in[b], so one device sending to many peers shares its port
//   pcie[a->b]              a PCIe switch pair's own link (cluster.pcie_bw_gbs > 0 only)
//   nic_out[n], nic_in[n]   NIC n (shared by devices_per_nic devices): every inter-node transfer
//                           holds its source NIC's out and its destination NIC's in
//   up[s], down[s]          leaf switch s to the spine and back (nodes_per_switch > 0 and
//                           spine_bw_gbs > 0): transfers between leaf switches hold both
// A transfer of `bytes` from a to b with m sequential messages (a ring all-reduce's 2 (P-1)
// steps) that is ready at t enters its route's links in order, each a FIFO of its own (the
// switches buffer, as ASTRA-sim's store-and-forward links): it enters link k at s_k =
// max(s_(k-1), link k's free time) (s_0 = t), holds it for bytes / its bandwidth, finishes on it
// at e_k = max(s_k + bytes / bandwidth_k, e_(k-1)) (never before the previous link), and arrives
// at e_last + m x latency. Where the cluster has a measured rate by message size for the route's
// class (ClusterModel::measured_message_rate at bytes / m), bandwidth_k is at most that rate: many
// small messages hold a port longer than a few large ones of the same bytes. Holding every link at once instead (a circuit) wastes a NIC while its
// partner is busy and predicted an all-to-all 2-3x slower than shared links carry it. The
// latency is the link class's (ClusterModel::link). a == b takes no time.
#include <array>
#include <string>
#include <vector>

#include "moebench/perf/cluster_model.h"

namespace moebench {

struct NetworkLink {
  std::string name;  // "dev_out 3", "nic_in 1", "pcie 2->3", "up 0"
  double bandwidth = 0;  // bytes/s
};

// At most 4 links per route (nic_out, up, down, nic_in).
struct Route {
  std::array<int, 4> links{};
  int count = 0;
  double latency = 0;        // seconds per message
  double bandwidth = 0;      // the route's smallest link bandwidth, bytes/s (0: a == b)
  ClusterLink link = ClusterLink::self;
};

struct TransferTiming {
  double start = 0, arrival = 0;  // seconds: entering the first link, arriving
};

class ClusterNetwork {
 public:
  explicit ClusterNetwork(const ClusterModel& cluster);

  const ClusterModel& cluster() const { return cluster_; }
  int link_count() const { return (int)links_.size(); }
  const NetworkLink& link(int id) const { return links_.at((size_t)id); }
  Route route(int a, int b) const;  // ranks of the cluster (std::out_of_range otherwise)

  // The FIFO model over `free_at` (link_count() entries, seconds; the caller owns it, so the
  // emulator can keep it in memory shared by processes): reserves the route from a to b for
  // `bytes` ready at `ready` and returns when it starts and arrives. messages >= 1.
  TransferTiming reserve(double* free_at, int a, int b, double bytes, double ready, int messages = 1) const;
  TransferTiming reserve(double* free_at, const Route& r, double bytes, double ready, int messages = 1) const;

 private:
  ClusterModel cluster_;
  std::vector<NetworkLink> links_;
  int dev_out_ = 0, dev_in_ = 0, nic_out_ = 0, nic_in_ = 0, up_ = -1, down_ = -1, pcie_ = -1;
  std::vector<int> pcie_slot_;  // world rank -> index of its pcie out link, or -1
};

}  // namespace moebench
