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

// The cluster a calibration describes (name "local", one node of `ranks` devices).
ClusterSpec calibrated_cluster(const Calibration& c);
// That cluster as a cluster file (README "Cluster files"): a comment block naming `command`,
// the host, ranks and threads and every measurement, then [cluster].
std::string calibrated_cluster_file(const Calibration& c, const std::string& command);

}  // namespace moebench
