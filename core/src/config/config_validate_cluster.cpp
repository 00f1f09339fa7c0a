// [cluster]: the topology, links, fitted host costs and measured curves (config_checker.h).
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "config_checker.h"
#include "value_bounds.h"

namespace moebench::config_detail {

// [cluster] on its own (also a cluster file without a config): nodes, links, compute.
void Checker::check_cluster() {
  const auto& k = c_.cluster;
  at_least("cluster.nodes", k.nodes, 1);
  at_least("cluster.devices_per_node", k.devices_per_node, 0, " (0 = ranks / nodes)");
  if (ok({"cluster.name"}) && k.name.empty()) fail("cluster.name", "must not be empty");
  if (ok({"cluster.nodes", "cluster.devices_per_node"}) && (int64_t)k.nodes * k.devices_per_node > INT32_MAX)
    fail("cluster.devices_per_node", "cluster.nodes x devices_per_node = " +
                                         std::to_string((int64_t)k.nodes * k.devices_per_node) +
                                         " devices, more than 2147483647", "cluster.nodes");
  if (ok({"cluster.pcie_switch_pairs"})) {
    const auto& pairs = k.pcie_switch_pairs;
    std::set<int> seen;
    if (pairs.size() % 2 != 0)
      fail("cluster.pcie_switch_pairs", "must list pairs of local ranks (an even number of entries), got " +
                                            std::to_string(pairs.size()));
    for (int r : pairs)
      if (r < 0 || !seen.insert(r).second) {
        fail("cluster.pcie_switch_pairs", "local rank " + std::to_string(r) + " is negative or listed twice");
        break;
      } else if (ok({"cluster.devices_per_node"}) && k.devices_per_node > 0 && r >= k.devices_per_node) {
        fail("cluster.pcie_switch_pairs", "local rank " + std::to_string(r) + " does not exist: a node has " +
                                              std::to_string(k.devices_per_node) + " devices (cluster.devices_per_node)");
        break;
      }
  }
  positive_number("cluster.device_tflops", k.device_tflops);
  non_negative_number("cluster.device_memory_gib", k.device_memory_gib, " (0 = not described)");
  non_negative_number("cluster.host_memory_gib", k.host_memory_gib, " (0 = not described)");
  non_negative_number("cluster.ssd_gib", k.ssd_gib, " (0 = not described)");
  positive_number("cluster.copy_bw_gbs", k.copy_bw_gbs);
  positive_number("cluster.intra_bw_gbs", k.intra_bw_gbs);
  positive_number("cluster.inter_bw_gbs", k.inter_bw_gbs);
  non_negative_number("cluster.pcie_bw_gbs", k.pcie_bw_gbs, " (0 = the intra-node link)");
  non_negative_number("cluster.spine_bw_gbs", k.spine_bw_gbs, " (0 = cluster.inter_bw_gbs)");
  non_negative_number("cluster.intra_latency_us", k.intra_latency_us);
  non_negative_number("cluster.pcie_latency_us", k.pcie_latency_us);
  non_negative_number("cluster.inter_latency_us", k.inter_latency_us);
  non_negative_number("cluster.spine_latency_us", k.spine_latency_us);
  at_least("cluster.devices_per_nic", k.devices_per_nic, 0, " (0 = all devices of a node)");
  at_least("cluster.nodes_per_switch", k.nodes_per_switch, 0, " (0 = all nodes under one switch)");
  if (ok({"cluster.devices_per_nic", "cluster.devices_per_node"}) && k.devices_per_nic > 0 &&
      k.devices_per_node > 0 && k.devices_per_node % k.devices_per_nic != 0)
    fail("cluster.devices_per_nic", "must divide cluster.devices_per_node (" + std::to_string(k.devices_per_node) +
                                        "), got " + std::to_string(k.devices_per_nic), "cluster.devices_per_node");
  non_negative_number("cluster.comm_overhead_us", k.comm_overhead_us);
  non_negative_number("cluster.comm_us_per_mb", k.comm_us_per_mb);
  if (ok({"cluster.task_names", "cluster.task_overhead_us", "cluster.task_factors"})) {
    bool sized = true;
    for (const auto& [key, n] : {std::pair{"cluster.task_overhead_us", k.task_overhead_us.size()},
                                 std::pair{"cluster.task_factors", k.task_factors.size()}})
      if (n != k.task_names.size()) {
        fail(key, "has " + std::to_string(n) + " entries but cluster.task_names has " +
                      std::to_string(k.task_names.size()) + "; give one per task name",
             "cluster.task_names");
        sized = false;
      }
    for (size_t i = 0; sized && i < k.task_names.size(); ++i) {
      if (!(k.task_overhead_us[i] >= 0.0) || !std::isfinite(k.task_overhead_us[i])) {
        fail("cluster.task_overhead_us", "must be >= 0, entry " + std::to_string(i) + " (" + k.task_names[i] + ") is " +
                                             number_text(k.task_overhead_us[i]));
        break;
      }
      if (!(k.task_factors[i] > 0.0) || !std::isfinite(k.task_factors[i])) {
        fail("cluster.task_factors", "must be > 0, entry " + std::to_string(i) + " (" + k.task_names[i] + ") is " +
                                         number_text(k.task_factors[i]));
        break;
      }
    }
  }
  non_negative_number("cluster.d2d_bw_gbs", k.d2d_bw_gbs, " (0 = cluster.copy_bw_gbs)");
  non_negative_number("cluster.ssd_bw_gbs", k.ssd_bw_gbs, " (0 = cluster.copy_bw_gbs)");
  check_curve("cluster.efficiency_flops", k.efficiency_flops, "cluster.efficiency", k.efficiency, "efficiency",
              "in (0, 1]", 1.0);
  check_curve("cluster.alltoall_busbw_bytes", k.alltoall_busbw_bytes, "cluster.alltoall_busbw_gbs", k.alltoall_busbw_gbs,
              "bus bandwidth", "> 0", 0.0);
  check_curve("cluster.allgather_busbw_bytes", k.allgather_busbw_bytes, "cluster.allgather_busbw_gbs",
              k.allgather_busbw_gbs, "bus bandwidth", "> 0", 0.0);
  check_curve("cluster.intra_msg_bytes", k.intra_msg_bytes, "cluster.intra_msg_gbs", k.intra_msg_gbs, "bandwidth",
              "> 0", 0.0);
  check_curve("cluster.inter_msg_bytes", k.inter_msg_bytes, "cluster.inter_msg_gbs", k.inter_msg_gbs, "bandwidth",
              "> 0", 0.0);
  check_cluster_bounds();
}

// The magnitudes of the values above (value_bounds.h): a value the sign rules let through is
// still a machine, not 1e-300 or 1e300.
void Checker::check_cluster_bounds() {
  const auto& k = c_.cluster;
  bounded("cluster.device_tflops", k.device_tflops, kMinDeviceTflops, kMaxDeviceTflops, " TFLOP/s");
  bounded("cluster.device_memory_gib", k.device_memory_gib, kMinGib, kMaxMemoryGib, " GiB (0 = not described)");
  bounded("cluster.host_memory_gib", k.host_memory_gib, kMinGib, kMaxMemoryGib, " GiB (0 = not described)");
  bounded("cluster.ssd_gib", k.ssd_gib, kMinGib, kMaxSsdGib, " GiB (0 = not described)");
  for (const auto& [key, v] : {std::pair{"cluster.copy_bw_gbs", k.copy_bw_gbs}, {"cluster.intra_bw_gbs", k.intra_bw_gbs},
                               {"cluster.inter_bw_gbs", k.inter_bw_gbs}, {"cluster.pcie_bw_gbs", k.pcie_bw_gbs},
                               {"cluster.spine_bw_gbs", k.spine_bw_gbs}, {"cluster.d2d_bw_gbs", k.d2d_bw_gbs},
                               {"cluster.ssd_bw_gbs", k.ssd_bw_gbs}})
    bounded(key, v, kMinBandwidthGbs, kMaxBandwidthGbs, " GB/s");
  for (const auto& [key, v] :
       {std::pair{"cluster.intra_latency_us", k.intra_latency_us}, {"cluster.pcie_latency_us", k.pcie_latency_us},
        {"cluster.inter_latency_us", k.inter_latency_us}, {"cluster.spine_latency_us", k.spine_latency_us},
        {"cluster.comm_overhead_us", k.comm_overhead_us}})
    bounded(key, v, 0.0, kMaxMicroseconds, " us");
  bounded("cluster.comm_us_per_mb", k.comm_us_per_mb, 0.0, kMaxMicrosecondsPerMb, " us per MB");
  bounded("cluster.task_overhead_us", k.task_overhead_us, 0.0, kMaxMicroseconds, " us");
  bounded("cluster.task_factors", k.task_factors, kMinTaskFactor, kMaxTaskFactor);
  bounded("cluster.efficiency_flops", k.efficiency_flops, 0.0, kMaxCurvePoint, " FLOPs");
  bounded("cluster.alltoall_busbw_bytes", k.alltoall_busbw_bytes, 0.0, kMaxCurvePoint, " bytes");
  bounded("cluster.allgather_busbw_bytes", k.allgather_busbw_bytes, 0.0, kMaxCurvePoint, " bytes");
  bounded("cluster.alltoall_busbw_gbs", k.alltoall_busbw_gbs, kMinBandwidthGbs, kMaxBandwidthGbs, " GB/s");
  bounded("cluster.allgather_busbw_gbs", k.allgather_busbw_gbs, kMinBandwidthGbs, kMaxBandwidthGbs, " GB/s");
  bounded("cluster.intra_msg_bytes", k.intra_msg_bytes, 0.0, kMaxCurvePoint, " bytes");
  bounded("cluster.inter_msg_bytes", k.inter_msg_bytes, 0.0, kMaxCurvePoint, " bytes");
  bounded("cluster.intra_msg_gbs", k.intra_msg_gbs, kMinBandwidthGbs, kMaxBandwidthGbs, " GB/s");
  bounded("cluster.inter_msg_gbs", k.inter_msg_gbs, kMinBandwidthGbs, kMaxBandwidthGbs, " GB/s");
}

// A measured curve: points xs (> 0, strictly ascending) and one value ys each (a `noun`), > 0
// and at most `max` when max > 0.
void Checker::check_curve(const char* xs_key, const std::vector<double>& xs, const char* ys_key,
                          const std::vector<double>& ys, const char* noun, const char* range, double max) {
  if (!ok({xs_key, ys_key})) return;
  if (xs.size() != ys.size()) {
    fail(ys_key, "has " + std::to_string(ys.size()) + " entries but " + xs_key + " has " + std::to_string(xs.size()) +
                     "; give one " + noun + " per point",
         xs_key);
    return;
  }
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!(xs[i] > 0.0) || (i > 0 && !(xs[i] > xs[i - 1]))) {
      fail(xs_key, "must be > 0 and strictly ascending, entry " + std::to_string(i) + " is " + number_text(xs[i]));
      break;
    }
  }
  for (size_t i = 0; i < ys.size(); ++i)
    if (!(ys[i] > 0.0 && (max <= 0.0 || ys[i] <= max) && std::isfinite(ys[i]))) {
      std::string what = "must be ";
      what += range;
      fail(ys_key, what + ", entry " + std::to_string(i) + " is " + number_text(ys[i]));
      break;
    }
}

}  // namespace moebench::config_detail
