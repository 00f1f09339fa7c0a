#pragma once
// Topology: which node each world rank lives on and its index inside the node, and the link
// class between two ranks. On one machine it is virtual ([cluster] nodes x devices_per_node,
// ranks placed in node blocks: rank r on node r / devices_per_node); under a real multi-host
// launch it is detected from the ranks' host names and checked against the config.
#include <string>
#include <vector>

namespace moebench {

enum class LinkClass { self, intra_node, inter_node };
const char* link_class_name(LinkClass c);

class Topology {
 public:
  Topology() = default;
  // Virtual topology: ranks in blocks of devices_per_node.
  static Topology virtual_blocks(int nodes, int devices_per_node);
  // From the host name of every world rank (index = rank). Ranks with the same host form a
  // node, nodes numbered by first appearance; each node must hold the same number of ranks.
  static Topology from_hostnames(const std::vector<std::string>& hosts);

  int world_size() const { return (int)node_.size(); }
  int nodes() const { return nodes_; }
  int devices_per_node() const { return per_node_; }
  int node_of(int rank) const { return node_.at(rank); }
  int local_index(int rank) const { return local_.at(rank); }
  // The world rank with the given node and local index.
  int rank_at(int node, int local_index) const;
  LinkClass link(int a, int b) const;
  bool is_virtual() const { return virtual_; }
  std::string describe() const;  // "2 nodes x 2 devices (virtual)"

 private:
  int nodes_ = 1, per_node_ = 1;
  bool virtual_ = true;
  std::vector<int> node_, local_;
};

// Chooses the topology of a run. hosts: the host name of every world rank. When all ranks
// share one host, the virtual topology nodes x devices_per_node is used (nodes *
// devices_per_node must equal the world size). When they span several hosts, the detected
// topology must match nodes x devices_per_node. Throws std::runtime_error naming the
// mismatch ("config says 2 nodes x 4 devices, the launch has 3 hosts with 4, 4, 2 ranks").
Topology resolve_topology(int nodes, int devices_per_node, const std::vector<std::string>& hosts);

class Communicator;
// Every rank's host name (gethostname), gathered over `world` (collective).
std::vector<std::string> gather_hostnames(Communicator& world);
// A rank's index among the ranks of its host (its local rank: the GPU it takes, train/device.h).
int host_local_rank(const std::vector<std::string>& hosts, int rank);

}  // namespace moebench
