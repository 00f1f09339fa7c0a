// Topology: virtual node blocks on one machine, detected from host names on a cluster, and
// the check of a launch against the [cluster] section of the config.
#include "moebench/dist/topology.h"

#include <unistd.h>

#include <algorithm>

#include "moebench/dist/communicator.h"

#include <map>
#include <sstream>
#include <stdexcept>

namespace moebench {
namespace {

std::string plural(int n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// Host names in order of first appearance, with the world ranks on each.
struct HostGroups {
  std::vector<std::string> names;
  std::vector<std::vector<int>> ranks;
};

HostGroups group_hosts(const std::vector<std::string>& hosts) {
  HostGroups g;
  std::map<std::string, int> index;
  for (int r = 0; r < (int)hosts.size(); ++r) {
    auto [it, inserted] = index.emplace(hosts[r], (int)g.names.size());
    if (inserted) {
      g.names.push_back(hosts[r]);
      g.ranks.emplace_back();
    }
    g.ranks[it->second].push_back(r);
  }
  return g;
}

std::string rank_counts(const HostGroups& g) {
  std::string s;
  for (size_t i = 0; i < g.ranks.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(g.ranks[i].size());
  }
  return s;
}

bool uneven(const HostGroups& g) {
  for (const auto& r : g.ranks)
    if (r.size() != g.ranks.front().size()) return true;
  return false;
}

}  // namespace

const char* link_class_name(LinkClass c) {
  switch (c) {
    case LinkClass::self: return "self";
    case LinkClass::intra_node: return "intra_node";
    case LinkClass::inter_node: return "inter_node";
  }
  return "unknown";
}

Topology Topology::virtual_blocks(int nodes, int devices_per_node) {
  if (nodes < 1 || devices_per_node < 1)
    throw std::invalid_argument("topology needs at least 1 node and 1 device per node (got " +
                                std::to_string(nodes) + " x " + std::to_string(devices_per_node) + ")");
  Topology t;
  t.nodes_ = nodes;
  t.per_node_ = devices_per_node;
  t.virtual_ = true;
  const int world = nodes * devices_per_node;
  t.node_.resize(world);
  t.local_.resize(world);
  for (int r = 0; r < world; ++r) {
    t.node_[r] = r / devices_per_node;
    t.local_[r] = r % devices_per_node;
  }
  return t;
}

Topology Topology::from_hostnames(const std::vector<std::string>& hosts) {
  if (hosts.empty()) throw std::invalid_argument("topology from host names: no ranks");
  const HostGroups g = group_hosts(hosts);
  if (uneven(g))
    throw std::runtime_error("the launch has " + plural((int)g.names.size(), "host", "hosts") + " with " +
                             rank_counts(g) + " ranks; every node must hold the same number of ranks");
  Topology t;
  t.nodes_ = (int)g.names.size();
  t.per_node_ = (int)g.ranks.front().size();
  t.virtual_ = false;
  t.node_.resize(hosts.size());
  t.local_.resize(hosts.size());
  for (int n = 0; n < t.nodes_; ++n)
    for (int i = 0; i < t.per_node_; ++i) {
      t.node_[g.ranks[n][i]] = n;
      t.local_[g.ranks[n][i]] = i;  // order of world rank inside the node
    }
  return t;
}

int Topology::rank_at(int node, int local_index) const {
  if (node < 0 || node >= nodes_ || local_index < 0 || local_index >= per_node_)
    throw std::out_of_range("topology " + describe() + " has no rank at node " + std::to_string(node) +
                            ", local index " + std::to_string(local_index));
  if (virtual_) return node * per_node_ + local_index;
  for (int r = 0; r < world_size(); ++r)
    if (node_[r] == node && local_[r] == local_index) return r;
  throw std::out_of_range("topology " + describe() + " has no rank at node " + std::to_string(node) +
                          ", local index " + std::to_string(local_index));
}

LinkClass Topology::link(int a, int b) const {
  if (a == b) return LinkClass::self;
  return node_of(a) == node_of(b) ? LinkClass::intra_node : LinkClass::inter_node;
}

std::string Topology::describe() const {
  return plural(nodes_, "node", "nodes") + " x " + plural(per_node_, "device", "devices") +
         (virtual_ ? " (virtual)" : " (detected)");
}

Topology resolve_topology(int nodes, int devices_per_node, const std::vector<std::string>& hosts) {
  if (nodes < 1 || devices_per_node < 1)
    throw std::runtime_error("config says " + std::to_string(nodes) + " nodes x " + std::to_string(devices_per_node) +
                             " devices; both must be at least 1");
  if (hosts.empty()) throw std::runtime_error("the launch has no ranks");
  const std::string config = "config says " + plural(nodes, "node", "nodes") + " x " +
                             plural(devices_per_node, "device", "devices");
  const int world = (int)hosts.size();
  const HostGroups g = group_hosts(hosts);
  if (g.names.size() == 1) {
    if (nodes * devices_per_node != world)
      throw std::runtime_error(config + " = " + std::to_string(nodes * devices_per_node) +
                               " ranks, the launch has " + plural(world, "rank", "ranks") + " on one host (" +
                               g.names.front() + ")");
    return Topology::virtual_blocks(nodes, devices_per_node);
  }
  if ((int)g.names.size() != nodes || uneven(g) || (int)g.ranks.front().size() != devices_per_node)
    throw std::runtime_error(config + ", the launch has " + plural((int)g.names.size(), "host", "hosts") + " with " +
                             rank_counts(g) + " ranks");
  return Topology::from_hostnames(hosts);
}

std::vector<std::string> gather_hostnames(Communicator& world) {
  constexpr size_t kLen = 256;
  char mine[kLen] = {};
  gethostname(mine, kLen - 1);
  std::vector<char> all(kLen * world.size());
  world.all_gather(mine, all.data(), kLen, DType::u8);
  std::vector<std::string> hosts;
  for (int r = 0; r < world.size(); ++r) hosts.emplace_back(all.data() + r * kLen);
  return hosts;
}

int host_local_rank(const std::vector<std::string>& hosts, int rank) {
  return (int)std::count(hosts.begin(), hosts.begin() + rank, hosts.at((size_t)rank));
}

}  // namespace moebench
