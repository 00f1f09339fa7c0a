#pragma once
// ClusterModel: the machine a run is predicted (or emulated) on, as plain data and functions —
// nodes x devices, each device's compute rate (optionally an efficiency curve over task
// size), host <-> device copy bandwidth, and the directed links between two devices with their
// bandwidth and latency. Every strategy's predict(), the simulator and the planner read it.
//
// Link classes between two world ranks a != b (ranks in node blocks: rank r on node
// r / devices_per_node, local index r % devices_per_node):
//   pcie_pair     same node, both behind one PCIe switch (cluster.pcie_switch_pairs);
//                 its own link when cluster.pcie_bw_gbs > 0, else the intra-node link
//   intra_node    same node otherwise (NVLink / NVSwitch / PCIe through the host / shared memory)
//   inter_node    different nodes under one leaf switch: NIC to NIC; a NIC is shared by
//                 devices_per_nic consecutive local devices (bandwidth is per NIC)
//   inter_switch  different nodes under different leaf switches (nodes_per_switch > 0): the
//                 spine link when cluster.spine_bw_gbs > 0, else the inter-node link
// A device to itself is class `self`: no link, transfers take no time.
// Bandwidths are bytes/s in one direction; latencies seconds. One transfer of `bytes` over a
// link takes latency + bytes / bandwidth (no contention here: the simulator shares links).
//
// Numbers come from [cluster] and a cluster file (sample_configs/clusters/*.toml,
// docs/config-guide.md); whatever they predict is "predicted", never measured.
#include <string>
#include <utility>
#include <vector>

#include "moebench/config/config.h"

namespace moebench {

enum class ClusterLink { self, pcie_pair, intra_node, inter_node, inter_switch };
const char* cluster_link_name(ClusterLink link);  // "self", "pcie_pair", "intra_node", ...

struct LinkSpec {
  double bandwidth = 0;  // bytes/s, one direction
  double latency = 0;    // seconds per message
};

struct LinkInfo {
  ClusterLink link = ClusterLink::self;
  double bandwidth = 0;  // bytes/s (0 for self)
  double latency = 0;    // seconds
  int nic_a = -1, nic_b = -1;  // inter-node classes: the global NIC of each end, else -1
};

// A compute task's cost on a calibrated host: overhead + factor x compute_seconds(flops).
struct TaskCostFit {
  std::string name;
  double overhead = 0;  // seconds
  double factor = 1;
  bool operator==(const TaskCostFit&) const = default;
};

struct EfficiencyPoint {
  double flops = 0;       // FLOPs of one task
  double efficiency = 1;  // fraction of the device's rate reached for such a task, (0, 1]
};

// Plain description; ClusterModel checks it. Units are SI (bytes/s, seconds, FLOP/s).
struct ClusterSpec {
  std::string name = "local";
  int nodes = 1;
  int devices_per_node = 1;
  double device_flops = 1.2e11;              // sustained FLOP/s per device
  // Bytes per activation, gradient or weight element in what predictions send (graphs built
  // without buffers, the strategies' cost models): 2 for a workload in fp16 / bf16, 4 for fp32
  // and for moebench's own runtime (cluster.train_precision). Executed graphs use 4.
  int wire_element_bytes = 4;
  std::vector<EfficiencyPoint> efficiency;   // ascending flops; empty = always 1
  double device_memory = 0;                  // bytes per device; 0 = not described
  double copy_bandwidth = 1e10;              // host <-> device, bytes/s per PCIe switch uplink
  LinkSpec intra{1e10, 1e-6};
  LinkSpec pcie_pair{0, 0};                  // bandwidth 0 = use `intra`
  LinkSpec inter{1e10, 2e-6};                // per NIC
  LinkSpec spine{0, 0};                      // bandwidth 0 = use `inter`
  int devices_per_nic = 0;                   // 0 = devices_per_node (one NIC per node)
  int nodes_per_switch = 0;                  // 0 = nodes (one leaf switch)
  std::vector<int> pcie_switch_pairs;        // local indices, pairwise: [0,1,2,3] = {0,1},{2,3}
  // A host's own costs (calibrate, perf/calibration.h fit_host_tasks): seconds every comm task
  // takes beyond its transfers (plus comm_seconds_per_byte x the bytes it sends), and per
  // compute-task name its fitted cost.
  double comm_overhead = 0;
  double comm_seconds_per_byte = 0;
  std::vector<TaskCostFit> task_costs;
  // The link emulator's pacing (perf/link_emulator.h) instead of the cluster's: set for a run
  // that is emulated (train/emulation.h emulated_run_cluster), never by a cluster file. A rank's
  // send-type comm task reserves its flows when it starts, without waiting for the receivers,
  // sleeps until the last one arrives and only then issues the real operation; so it ends once
  // its own flows and, for each peer that sends to it, all of that peer's flows have arrived.
  bool emulated_pacing = false;
  // Measured collective rates (ClusterConfig's *_busbw_* keys): (bytes, bus bandwidth in
  // bytes/s), ascending; empty = none. And the device-memory copy rate (0 = copy_bandwidth).
  std::vector<std::pair<double, double>> alltoall_busbw, allgather_busbw;
  double d2d_bandwidth = 0;
  double ssd_bandwidth = 0;  // the SSD tier's file transfers, bytes/s (0 = copy_bandwidth)
  // Measured rates by message size (ClusterConfig's *_msg_* keys): (bytes of one message,
  // bytes/s), ascending; empty = the link's bandwidth at every size. intra: the intra-node and
  // PCIe-pair classes; inter: the inter-node and inter-switch ones.
  std::vector<std::pair<double, double>> intra_message_bw, inter_message_bw;
};

class ClusterModel {
 public:
  ClusterModel();  // the default ClusterSpec: one node, one device
  // Throws std::invalid_argument naming the first bad field (nodes < 1, bandwidth <= 0, a
  // devices_per_nic that does not divide devices_per_node, unsorted efficiency points, ...).
  explicit ClusterModel(ClusterSpec spec);

  const ClusterSpec& spec() const { return spec_; }
  int world_size() const { return spec_.nodes * spec_.devices_per_node; }
  int nodes() const { return spec_.nodes; }
  int devices_per_node() const { return spec_.devices_per_node; }
  int devices_per_nic() const { return per_nic_; }
  int nics_per_node() const { return spec_.devices_per_node / per_nic_; }

  // Placement of world rank r (0 <= r < world_size(); else std::out_of_range).
  int node_of(int rank) const;
  int local_index(int rank) const;
  int nic_of(int rank) const;         // global NIC index: node * nics_per_node + local / devices_per_nic
  int switch_of(int rank) const;      // leaf switch of its node
  int pcie_peer_of(int rank) const;   // the world rank behind the same PCIe switch, or -1

  ClusterLink link_class(int a, int b) const;
  LinkInfo link_between(int a, int b) const;
  // The link of a class as configured (self: {0, 0}); what analytical models use.
  LinkSpec link(ClusterLink link) const;
  // The rate a message of `message_bytes` gets on a link of this class: the class's measured
  // curve (ClusterSpec::intra_message_bw / inter_message_bw) interpolated linearly in
  // log10(bytes) and clamped to its end points, at most the link's bandwidth; the link's
  // bandwidth without a curve (0 for self).
  double message_bandwidth(ClusterLink link, double message_bytes) const;
  // The class's measured curve alone at that size (not capped); 0 where it has none.
  double measured_message_rate(ClusterLink link, double message_bytes) const;
  // Seconds to move `bytes` from rank a to rank b alone on the link as one message: latency +
  // bytes / message_bandwidth; 0 when a == b. bytes >= 0.
  double transfer_seconds(int a, int b, double bytes) const;
  // Bandwidth one device gets to another node when every device of its NIC sends at once.
  double inter_bandwidth_per_device() const { return link(ClusterLink::inter_node).bandwidth / per_nic_; }

  double device_flops() const { return spec_.device_flops; }
  int wire_element_bytes() const { return spec_.wire_element_bytes; }
  // Efficiency for a task of `flops`: the curve interpolated linearly in log10(flops), clamped to
  // its end points; 1 without a curve.
  double efficiency_at(double flops) const;
  double compute_seconds(double flops) const;  // flops / (device_flops * efficiency_at(flops))
  // The fitted cost of a compute task of this name ({name, 0, 1} when none is listed).
  TaskCostFit task_cost(const std::string& name) const;
  // What a comm task sending `bytes` takes beyond its transfers on a calibrated host (else 0).
  double comm_extra_seconds(double bytes) const { return spec_.comm_overhead + spec_.comm_seconds_per_byte * bytes; }
  double copy_seconds(double bytes) const;     // bytes / copy_bandwidth (one device alone)
  double device_copy_seconds(double bytes) const;  // within device memory: bytes / d2d_bandwidth (copy_bandwidth when 0)
  double io_seconds(double bytes) const;       // bytes / ssd_bandwidth (copy_bandwidth when 0)

  // "janus: 4 nodes x 8 devices, 312 TFLOP/s, intra 300 GB/s 2 us, inter 25 GB/s per NIC (2 devices) 5 us, ..."
  std::string describe() const;

 private:
  void check_rank(int rank) const;
  ClusterSpec spec_;
  int per_nic_ = 1, per_switch_ = 1;
  std::vector<int> pcie_peer_local_;  // local index -> peer local index or -1
  std::vector<std::pair<double, double>> efficiency_curve_;  // spec_.efficiency as (flops, efficiency)
};

// The cluster of a validated config: [cluster] (file included) with devices_per_node = 0
// resolved as run.ranks / nodes. GB/s -> bytes/s, us -> s, TFLOP/s -> FLOP/s.
ClusterSpec cluster_spec(const ClusterConfig& cluster, int world_size);
ClusterModel cluster_model(const Config& config);

}  // namespace moebench
