#include "moebench/perf/cluster_network.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace moebench {

ClusterNetwork::ClusterNetwork(const ClusterModel& cluster) : cluster_(cluster) {
  const ClusterSpec& s = cluster_.spec();
  const int W = cluster_.world_size(), nics = cluster_.nodes() * cluster_.nics_per_node();
  auto add = [&](const std::string& name, double bw) {
    links_.push_back({name, bw});
    return (int)links_.size() - 1;
  };
  dev_out_ = (int)links_.size();
  for (int r = 0; r < W; ++r) add("dev_out " + std::to_string(r), s.intra.bandwidth);
  dev_in_ = (int)links_.size();
  for (int r = 0; r < W; ++r) add("dev_in " + std::to_string(r), s.intra.bandwidth);
  nic_out_ = (int)links_.size();
  for (int n = 0; n < nics; ++n) add("nic_out " + std::to_string(n), s.inter.bandwidth);
  nic_in_ = (int)links_.size();
  for (int n = 0; n < nics; ++n) add("nic_in " + std::to_string(n), s.inter.bandwidth);
  const int switches = cluster_.switch_of(W - 1) + 1;
  if (switches > 1 && s.spine.bandwidth > 0) {
    up_ = (int)links_.size();
    for (int k = 0; k < switches; ++k) add("up " + std::to_string(k), s.spine.bandwidth);
    down_ = (int)links_.size();
    for (int k = 0; k < switches; ++k) add("down " + std::to_string(k), s.spine.bandwidth);
  }
  if (s.pcie_pair.bandwidth > 0 && !s.pcie_switch_pairs.empty()) {
    pcie_slot_.assign((size_t)W, -1);
    for (int r = 0; r < W; ++r) {
      const int peer = cluster_.pcie_peer_of(r);
      if (peer >= 0) pcie_slot_[(size_t)r] = add("pcie " + std::to_string(r) + "->" + std::to_string(peer), s.pcie_pair.bandwidth);
    }
  }
}

Route ClusterNetwork::route(int a, int b) const {
  Route r;
  r.link = cluster_.link_class(a, b);  // checks both ranks
  if (r.link == ClusterLink::self) return r;
  const LinkSpec spec = cluster_.link(r.link);
  r.latency = spec.latency;
  switch (r.link) {
    case ClusterLink::self: break;
    case ClusterLink::pcie_pair:
      if (!pcie_slot_.empty()) {
        r.links[r.count++] = pcie_slot_[(size_t)a];
        break;
      }
      [[fallthrough]];
    case ClusterLink::intra_node:
      r.links[r.count++] = dev_out_ + a;
      r.links[r.count++] = dev_in_ + b;
      break;
    case ClusterLink::inter_switch:
      if (up_ >= 0) {
        r.links[r.count++] = nic_out_ + cluster_.nic_of(a);
        r.links[r.count++] = up_ + cluster_.switch_of(a);
        r.links[r.count++] = down_ + cluster_.switch_of(b);
        r.links[r.count++] = nic_in_ + cluster_.nic_of(b);
        // The NIC's own latency and the spine's, both crossed.
        r.latency = cluster_.spec().inter.latency + spec.latency;
        break;
      }
      [[fallthrough]];
    case ClusterLink::inter_node:
      r.links[r.count++] = nic_out_ + cluster_.nic_of(a);
      r.links[r.count++] = nic_in_ + cluster_.nic_of(b);
      break;
  }
  r.bandwidth = links_[(size_t)r.links[0]].bandwidth;
  for (int i = 1; i < r.count; ++i) r.bandwidth = std::min(r.bandwidth, links_[(size_t)r.links[(size_t)i]].bandwidth);
  return r;
}

TransferTiming ClusterNetwork::reserve(double* free_at, const Route& r, double bytes, double ready, int messages) const {
  if (r.count == 0) return {ready, ready};
  // A measured rate by message size caps every link of the route (a message of b bytes holds
  // each for b / min(its bandwidth, that rate)).
  const int m = std::max(1, messages);
  const double measured = cluster_.measured_message_rate(r.link, bytes / m);
  const double rate = measured > 0 ? measured : std::numeric_limits<double>::infinity();
  double enter = ready, end = ready, start = ready;
  for (int i = 0; i < r.count; ++i) {
    const int l = r.links[(size_t)i];
    enter = std::max(enter, free_at[l]);  // queued behind the link's earlier transfers
    if (i == 0) start = enter;
    free_at[l] = enter + bytes / std::min(links_[(size_t)l].bandwidth, rate);
    end = std::max(end, free_at[l]);      // not done on this link before the previous one
  }
  return {start, end + m * r.latency};
}

TransferTiming ClusterNetwork::reserve(double* free_at, int a, int b, double bytes, double ready, int messages) const {
  return reserve(free_at, route(a, b), bytes, ready, messages);
}

}  // namespace moebench
