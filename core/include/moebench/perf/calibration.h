#pragma once
// Calibration: this machine measured as a cluster description (`moebench calibrate`, written to
// clusters/local.toml), so that the simulator predicts runs here and the link emulator's
// time_scale "auto" has a measured rate per rank.
//
// Every rank of the world measures at once, as ranks of a `moebench run` compete for the cores
// and the memory bus: each repetition counts its slowest rank, each measurement the fastest
// repetition (other load on the machine only slows a repetition down):
//   compute   sgemm (the trainer's matmul_forward) over shapes from 1e5 to ~4e9 FLOPs, at the
//             BLAS threads a run of this many ranks gives each rank; the time per shape is the
//             slowest rank's. device rate = the best shape's rate; the efficiency curve =
//             each shape's rate / that best, by FLOPs per task (ClusterModel::efficiency_at)
//   copy      memcpy of a large buffer, every rank at once: bytes / seconds
//   messages  latency = half the round trip of an 8-byte ping-pong between ranks 0 and 1 (the
//             communicator's per-message overhead); port bandwidth = an all-to-all of `bytes`
//             per peer on every rank: (P - 1) x bytes / (seconds - (P - 1) x latency)
// One machine is one node whose "devices" are the ranks; the inter-node link of the file is the
// same shared memory (virtual nodes of a local run travel through it too).
#include <string>
#include <vector>

#include "moebench/perf/cluster_model.h"

namespace moebench {

class Communicator;

struct CalibrationOptions {
  int threads = 1;          // BLAS threads per rank while measuring
  int repeats = 7;          // timed repetitions per measurement (the fastest counts)
  bool quick = false;       // fewer and smaller shapes (tests)
};

struct GemmSample {
  int m = 0, k = 0, n = 0;  // out[m,n] = in[m,k] @ w[n,k]^T
  double flops = 0;         // 2 m k n
  double seconds = 0;       // fastest repetition, slowest rank
  double rate() const { return flops / seconds; }
};

struct Calibration {
  std::string host;
  int ranks = 0, threads = 0;
  std::vector<GemmSample> gemm;  // ascending flops
  double copy_bandwidth = 0;     // bytes/s per rank, every rank copying
  double latency = 0;            // seconds per message
  double bandwidth = 0;          // bytes/s out of one rank, every rank sending (all-to-all)
  double alltoall_bytes = 0;     // bytes per peer the bandwidth was measured with
};

// The GEMM shapes measured (ascending flops).
std::vector<GemmSample> calibration_shapes(bool quick);
// Seconds of one sgemm of the shape on this rank (fastest of `repeats`, each ~1 GFLOP of
// back-to-back products, after a warm-up).
double time_gemm(int m, int k, int n, int repeats);
// The same on every rank of `world` at once: per repetition the slowest rank, the fastest
// repetition (collective).
double time_gemm_contended(Communicator& world, int m, int k, int n, int repeats);

// Collective over `world` (size >= 2; std::invalid_argument otherwise). Every rank returns the
// same result.
Calibration measure_calibration(Communicator& world, const CalibrationOptions& options);

// The host's own costs, fitted on a reference run (`moebench calibrate` trains small MoE models
// under the link emulator and simulates the same runs on the calibration without a fit): what
// the GEMM rate and the links do not explain — non-GEMM work, memory-bound steps and thread
// scheduling of several ranks on few cores.
struct TaskTime {
  int run = 0;  // which reference run (a measured run and its simulation share it)
  std::string name;
  bool comm = false;  // a comm task (category comm)
  bool main = false;  // the main thread's phases (role host: forward, backward, step, ...)
  double seconds = 0;
  double bytes = 0;   // sent to peers
};
struct HostTaskFit {
  double comm_overhead = 0;            // seconds every comm task takes beyond its transfers, >= 0
  double comm_seconds_per_byte = 0;    // and per byte it sends, >= 0
  std::vector<TaskCostFit> task_costs;  // compute tasks, by name (sorted)
};
// Per name of a compute task of a worker role found in both: each run gives a point (x = the
// predicted mean seconds of its tasks of that name, y = the measured mean); the cost is the
// least-squares line y = overhead + factor x over the points when they span x (max >= 1.2 min)
// and the line has overhead >= 0 and factor > 0, else overhead 0 and factor = sum y / sum x.
// The comm tasks (names found in both) give a point per name and run (x = mean bytes sent, y =
// measured mean - predicted mean, weighted by the measured count): comm_overhead and
// comm_seconds_per_byte are the weighted least-squares line when both come out >= 0, else
// the weighted mean of y (at least 0) and 0. Unnamed tasks are ignored.
HostTaskFit fit_host_tasks(const std::vector<TaskTime>& measured, const std::vector<TaskTime>& predicted);
// The fit as lines of a cluster file's [cluster] table, with a comment naming `reference`.
std::string host_task_fit_lines(const HostTaskFit& fit, const std::string& reference);

// The cluster a calibration describes (name "local", one node of `ranks` devices).
ClusterSpec calibrated_cluster(const Calibration& c);
// That cluster as a cluster file (docs/config-guide.md): a comment block naming `command`,
// the host, ranks and threads and every measurement, then [cluster].
std::string calibrated_cluster_file(const Calibration& c, const std::string& command);

}  // namespace moebench
