// ClusterModel: placement of ranks on nodes, NICs, leaf switches and PCIe switches, the link
// class between two ranks, and the time of transfers, copies and compute on it.
#include "moebench/perf/cluster_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>

namespace moebench {

const char* cluster_link_name(ClusterLink link) {
  switch (link) {
    case ClusterLink::self: return "self";
    case ClusterLink::pcie_pair: return "pcie_pair";
    case ClusterLink::intra_node: return "intra_node";
    case ClusterLink::inter_node: return "inter_node";
    case ClusterLink::inter_switch: return "inter_switch";
  }
  return "?";
}

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("cluster model: " + what);
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// y at x on a curve of (x > 0 ascending, y) points: linear in log10(x), clamped to the end points.
double log_interpolate(const std::vector<std::pair<double, double>>& pts, double x) {
  if (x <= pts.front().first) return pts.front().second;
  if (x >= pts.back().first) return pts.back().second;
  size_t i = 1;
  while (pts[i].first < x) ++i;
  const double x0 = std::log10(pts[i - 1].first), x1 = std::log10(pts[i].first);
  const double t = (std::log10(x) - x0) / (x1 - x0);
  return pts[i - 1].second + t * (pts[i].second - pts[i - 1].second);
}

std::string link_text(const LinkSpec& l) {
  return num(l.bandwidth / 1e9) + " GB/s " + num(l.latency * 1e6) + " us";
}

}  // namespace

ClusterModel::ClusterModel() : ClusterModel(ClusterSpec{}) {}

ClusterModel::ClusterModel(ClusterSpec spec) : spec_(std::move(spec)) {
  const auto& s = spec_;
  require(s.nodes >= 1, "nodes must be >= 1, got " + std::to_string(s.nodes));
  require(s.devices_per_node >= 1, "devices_per_node must be >= 1, got " + std::to_string(s.devices_per_node));
  require((int64_t)s.nodes * s.devices_per_node <= INT32_MAX, "more than 2147483647 devices");
  require(s.device_flops > 0, "device_flops must be > 0");
  require(s.wire_element_bytes == 2 || s.wire_element_bytes == 4,
          "wire_element_bytes must be 2 or 4, got " + std::to_string(s.wire_element_bytes));
  require(s.device_memory >= 0, "device_memory must be >= 0");
  require(s.copy_bandwidth > 0, "copy_bandwidth must be > 0");
  require(s.comm_overhead >= 0 && s.comm_seconds_per_byte >= 0, "comm_overhead and comm_seconds_per_byte must be >= 0");
  for (const TaskCostFit& t : s.task_costs)
    require(t.factor > 0 && t.overhead >= 0, "task cost of " + t.name + " needs factor > 0 and overhead >= 0");
  require(s.intra.bandwidth > 0 && s.inter.bandwidth > 0, "intra and inter bandwidths must be > 0");
  require(s.pcie_pair.bandwidth >= 0 && s.spine.bandwidth >= 0, "pcie_pair and spine bandwidths must be >= 0");
  require(s.intra.latency >= 0 && s.inter.latency >= 0 && s.pcie_pair.latency >= 0 && s.spine.latency >= 0,
          "latencies must be >= 0");
  per_nic_ = s.devices_per_nic == 0 ? s.devices_per_node : s.devices_per_nic;
  require(per_nic_ >= 1 && s.devices_per_node % per_nic_ == 0,
          "devices_per_nic (" + std::to_string(s.devices_per_nic) + ") must divide devices_per_node (" +
              std::to_string(s.devices_per_node) + ")");
  per_switch_ = s.nodes_per_switch == 0 ? s.nodes : s.nodes_per_switch;
  require(per_switch_ >= 1, "nodes_per_switch must be >= 0");
  for (size_t i = 0; i < s.efficiency.size(); ++i) {
    const auto& p = s.efficiency[i];
    require(p.flops > 0 && (i == 0 || p.flops > s.efficiency[i - 1].flops),
            "efficiency points must have flops > 0, strictly ascending");
    require(p.efficiency > 0 && p.efficiency <= 1, "efficiency must be in (0, 1]");
    efficiency_curve_.push_back({p.flops, p.efficiency});
  }
  for (const auto* curve : {&s.intra_message_bw, &s.inter_message_bw})
    for (size_t i = 0; i < curve->size(); ++i)
      require((*curve)[i].first > 0 && (i == 0 || (*curve)[i].first > (*curve)[i - 1].first) && (*curve)[i].second > 0,
              "message-size curves need bytes > 0, strictly ascending, and bandwidths > 0");
  require(s.pcie_switch_pairs.size() % 2 == 0, "pcie_switch_pairs must hold pairs");
  pcie_peer_local_.assign((size_t)s.devices_per_node, -1);
  for (size_t i = 0; i + 1 < s.pcie_switch_pairs.size(); i += 2) {
    const int a = s.pcie_switch_pairs[i], b = s.pcie_switch_pairs[i + 1];
    require(a >= 0 && b >= 0 && a < s.devices_per_node && b < s.devices_per_node && a != b &&
                pcie_peer_local_[(size_t)a] < 0 && pcie_peer_local_[(size_t)b] < 0,
            "pcie_switch_pairs: local indices must exist and appear once");
    pcie_peer_local_[(size_t)a] = b;
    pcie_peer_local_[(size_t)b] = a;
  }
}

void ClusterModel::check_rank(int rank) const {
  if (rank < 0 || rank >= world_size())
    throw std::out_of_range("cluster model: rank " + std::to_string(rank) + " outside [0, " +
                            std::to_string(world_size()) + ")");
}

int ClusterModel::node_of(int rank) const {
  check_rank(rank);
  return rank / spec_.devices_per_node;
}

int ClusterModel::local_index(int rank) const {
  check_rank(rank);
  return rank % spec_.devices_per_node;
}

int ClusterModel::nic_of(int rank) const {
  return node_of(rank) * nics_per_node() + local_index(rank) / per_nic_;
}

int ClusterModel::switch_of(int rank) const { return node_of(rank) / per_switch_; }

int ClusterModel::pcie_peer_of(int rank) const {
  const int peer = pcie_peer_local_[(size_t)local_index(rank)];
  return peer < 0 ? -1 : node_of(rank) * spec_.devices_per_node + peer;
}

ClusterLink ClusterModel::link_class(int a, int b) const {
  check_rank(a);
  check_rank(b);
  if (a == b) return ClusterLink::self;
  if (node_of(a) == node_of(b)) return pcie_peer_of(a) == b ? ClusterLink::pcie_pair : ClusterLink::intra_node;
  return switch_of(a) == switch_of(b) ? ClusterLink::inter_node : ClusterLink::inter_switch;
}

LinkSpec ClusterModel::link(ClusterLink link) const {
  switch (link) {
    case ClusterLink::self: return {};
    case ClusterLink::pcie_pair: return spec_.pcie_pair.bandwidth > 0 ? spec_.pcie_pair : spec_.intra;
    case ClusterLink::intra_node: return spec_.intra;
    case ClusterLink::inter_node: return spec_.inter;
    case ClusterLink::inter_switch: return spec_.spine.bandwidth > 0 ? spec_.spine : spec_.inter;
  }
  return {};
}

LinkInfo ClusterModel::link_between(int a, int b) const {
  LinkInfo info;
  info.link = link_class(a, b);
  const LinkSpec l = link(info.link);
  info.bandwidth = l.bandwidth;
  info.latency = l.latency;
  if (info.link == ClusterLink::inter_node || info.link == ClusterLink::inter_switch) {
    info.nic_a = nic_of(a);
    info.nic_b = nic_of(b);
  }
  return info;
}

double ClusterModel::measured_message_rate(ClusterLink link, double message_bytes) const {
  const bool intra = link == ClusterLink::intra_node || link == ClusterLink::pcie_pair;
  const auto& curve = intra ? spec_.intra_message_bw : spec_.inter_message_bw;
  return link == ClusterLink::self || curve.empty() ? 0.0 : log_interpolate(curve, message_bytes);
}

double ClusterModel::message_bandwidth(ClusterLink link, double message_bytes) const {
  const double bandwidth = this->link(link).bandwidth, measured = measured_message_rate(link, message_bytes);
  return measured > 0 ? std::min(bandwidth, measured) : bandwidth;
}

double ClusterModel::transfer_seconds(int a, int b, double bytes) const {
  if (!(bytes >= 0)) throw std::invalid_argument("cluster model: transfer of negative bytes");
  const LinkInfo l = link_between(a, b);
  if (l.link == ClusterLink::self) return 0.0;
  return l.latency + bytes / message_bandwidth(l.link, bytes);
}

double ClusterModel::efficiency_at(double flops) const {
  return efficiency_curve_.empty() ? 1.0 : log_interpolate(efficiency_curve_, flops);
}

TaskCostFit ClusterModel::task_cost(const std::string& name) const {
  for (const TaskCostFit& t : spec_.task_costs)
    if (t.name == name) return t;
  return {name, 0.0, 1.0};
}

double ClusterModel::compute_seconds(double flops) const {
  if (!(flops > 0)) return 0.0;
  return flops / (spec_.device_flops * efficiency_at(flops));
}

double ClusterModel::copy_seconds(double bytes) const {
  if (!(bytes > 0)) return 0.0;
  return bytes / spec_.copy_bandwidth;
}

double ClusterModel::device_copy_seconds(double bytes) const {
  if (!(bytes > 0)) return 0.0;
  return bytes / (spec_.d2d_bandwidth > 0 ? spec_.d2d_bandwidth : spec_.copy_bandwidth);
}

double ClusterModel::io_seconds(double bytes) const {
  if (!(bytes > 0)) return 0.0;
  return bytes / (spec_.ssd_bandwidth > 0 ? spec_.ssd_bandwidth : spec_.copy_bandwidth);
}

std::string ClusterModel::describe() const {
  const auto& s = spec_;
  std::string out = s.name + ": " + std::to_string(s.nodes) + (s.nodes == 1 ? " node" : " nodes") + " x " +
                    std::to_string(s.devices_per_node) + " devices, " + num(s.device_flops / 1e12) +
                    " TFLOP/s per device";
  if (!s.efficiency.empty()) out += " (efficiency curve, " + std::to_string(s.efficiency.size()) + " points)";
  if (s.wire_element_bytes != 4) out += ", " + std::to_string(s.wire_element_bytes) + "-byte elements on the wire";
  if (s.device_memory > 0) out += ", " + num(s.device_memory / (1024.0 * 1024.0 * 1024.0)) + " GiB per device";
  out += ", intra " + link_text(s.intra);
  if (!s.pcie_switch_pairs.empty())
    out += ", PCIe pairs " + std::to_string(s.pcie_switch_pairs.size() / 2) + " per node" +
           (s.pcie_pair.bandwidth > 0 ? " " + link_text(s.pcie_pair) : std::string(" (intra link)"));
  out += ", inter " + link_text(s.inter) + " per NIC (" + std::to_string(per_nic_) + " devices per NIC)";
  if (per_switch_ < s.nodes)
    out += ", " + std::to_string(per_switch_) + " nodes per switch, spine " +
           (s.spine.bandwidth > 0 ? link_text(s.spine) : std::string("= inter"));
  out += ", copy " + num(s.copy_bandwidth / 1e9) + " GB/s";
  if (s.d2d_bandwidth > 0) out += ", device copies " + num(s.d2d_bandwidth / 1e9) + " GB/s";
  if (s.ssd_bandwidth > 0) out += ", SSD " + num(s.ssd_bandwidth / 1e9) + " GB/s";
  if (!s.alltoall_busbw.empty() || !s.allgather_busbw.empty())
    out += ", measured AllToAll / AllGather curves (" + std::to_string(s.alltoall_busbw.size()) + " / " +
           std::to_string(s.allgather_busbw.size()) + " points)";
  if (!s.intra_message_bw.empty() || !s.inter_message_bw.empty())
    out += ", measured rates by message size (intra / inter " + std::to_string(s.intra_message_bw.size()) + " / " +
           std::to_string(s.inter_message_bw.size()) + " points)";
  if (s.comm_overhead > 0 || s.comm_seconds_per_byte > 0)
    out += ", comm tasks +" + num(s.comm_overhead * 1e6) + " us +" + num(s.comm_seconds_per_byte * 1e12) + " us/MB";
  if (!s.task_costs.empty()) out += ", " + std::to_string(s.task_costs.size()) + " fitted task costs";
  return out;
}

ClusterSpec cluster_spec(const ClusterConfig& k, int world_size) {
  ClusterSpec s;
  s.name = k.name;
  s.nodes = k.nodes;
  s.devices_per_node = k.devices_per_node > 0 ? k.devices_per_node : (k.nodes > 0 ? world_size / k.nodes : 0);
  s.device_flops = k.device_tflops * 1e12;
  s.wire_element_bytes = k.train_precision == TrainPrecision::fp16 || k.train_precision == TrainPrecision::bf16 ? 2 : 4;
  s.device_memory = k.device_memory_gib * 1024.0 * 1024.0 * 1024.0;
  s.efficiency.clear();
  for (size_t i = 0; i < k.efficiency_flops.size() && i < k.efficiency.size(); ++i)
    s.efficiency.push_back({k.efficiency_flops[i], k.efficiency[i]});
  s.copy_bandwidth = k.copy_bw_gbs * 1e9;
  s.comm_overhead = k.comm_overhead_us * 1e-6;
  s.comm_seconds_per_byte = k.comm_us_per_mb * 1e-12;
  for (size_t i = 0; i < k.task_names.size() && i < k.task_factors.size() && i < k.task_overhead_us.size(); ++i)
    s.task_costs.push_back({k.task_names[i], k.task_overhead_us[i] * 1e-6, k.task_factors[i]});
  s.intra = {k.intra_bw_gbs * 1e9, k.intra_latency_us * 1e-6};
  s.pcie_pair = {k.pcie_bw_gbs * 1e9, k.pcie_latency_us * 1e-6};
  s.inter = {k.inter_bw_gbs * 1e9, k.inter_latency_us * 1e-6};
  s.spine = {k.spine_bw_gbs * 1e9, k.spine_latency_us * 1e-6};
  s.devices_per_nic = k.devices_per_nic;
  s.nodes_per_switch = k.nodes_per_switch;
  s.pcie_switch_pairs = k.pcie_switch_pairs;
  for (size_t i = 0; i < k.alltoall_busbw_bytes.size() && i < k.alltoall_busbw_gbs.size(); ++i)
    s.alltoall_busbw.push_back({k.alltoall_busbw_bytes[i], k.alltoall_busbw_gbs[i] * 1e9});
  for (size_t i = 0; i < k.allgather_busbw_bytes.size() && i < k.allgather_busbw_gbs.size(); ++i)
    s.allgather_busbw.push_back({k.allgather_busbw_bytes[i], k.allgather_busbw_gbs[i] * 1e9});
  for (size_t i = 0; i < k.intra_msg_bytes.size() && i < k.intra_msg_gbs.size(); ++i)
    s.intra_message_bw.push_back({k.intra_msg_bytes[i], k.intra_msg_gbs[i] * 1e9});
  for (size_t i = 0; i < k.inter_msg_bytes.size() && i < k.inter_msg_gbs.size(); ++i)
    s.inter_message_bw.push_back({k.inter_msg_bytes[i], k.inter_msg_gbs[i] * 1e9});
  s.d2d_bandwidth = k.d2d_bw_gbs * 1e9;
  s.ssd_bandwidth = k.ssd_bw_gbs * 1e9;
  return s;
}

ClusterModel cluster_model(const Config& config) {
  return ClusterModel(cluster_spec(config.cluster, config.run.ranks));
}

}  // namespace moebench
