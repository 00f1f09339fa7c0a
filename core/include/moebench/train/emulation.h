#pragma once
// The link emulator of a run ([emulate], docs/simulator-emulator.md): which cluster, which
// time scale and where it came from, and the communicator that paces every message over the
// cluster's links (perf/link_emulator.h).
//
// time_scale "auto" = (cluster device rate, FLOP/s) / (this machine's sgemm rate per rank):
// every rank times a 512^3 sgemm at once (perf/calibration.h's time_gemm_contended: so the ranks
// share the cores as they will while training, with the run's BLAS threads; the slowest rank of
// the fastest of 9 repetitions) and that is the machine's rate per rank, as `moebench calibrate`
// measures it. Every rank ends with the same scale.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/dist/communicator.h"
#include "moebench/perf/cluster_model.h"

namespace moebench {

class LinkEmulator;

struct Emulation {
  std::string cluster_file;       // emulate.cluster, resolved
  std::string cluster_name;       // its cluster.name (the file's stem when it names none)
  std::string cluster_text;       // ClusterModel::describe()
  double time_scale = 1;
  std::string time_scale_source;  // "auto" | "config"
  double cluster_gflops = 0;      // the cluster's device rate, GFLOP/s
  double measured_gflops = 0;     // auto: this machine's sgemm rate per rank, GFLOP/s (else 0)
  // The slowest message of the run: the dense gradients' all-reduce (fp32, the largest message
  // every step sends) over the slowest link rank 0 has, stretched by the time scale.
  double slowest_message_bytes = 0;
  double slowest_message_s = 0;      // 0 with one rank (it sends nothing)
  std::string slowest_message_link;  // its link class, "inter_node"

  // "" unless that message takes longer than kSlowMessageSeconds: then one line saying so (the
  // run would sit minutes before its first step with no output).
  static constexpr double kSlowMessageSeconds = 60;
  std::string warning() const;

  std::string label() const;     // "emulated janus x5200"
  std::string describe() const;  // one line for the run header: cluster, scale and its source
  // The run's tags: emulated = 1, emulated.cluster, emulated.cluster_file, emulated.time_scale,
  // emulated.time_scale_source (store/run_summary.h reads them for `runs show`).
  std::vector<std::pair<std::string, std::string>> tags() const;
};

// The [emulate] of a validated config (cfg.emulate.cluster not empty). Collective over `world`
// when given (null: one rank): "auto" measures the rate on every rank.
Emulation resolve_emulation(const Config& cfg, Communicator* world);

// The cluster an emulated run of `cfg` behaves like, for the simulator to predict it: the
// [emulate] cluster's nodes, devices and links with their time stretched by the time scale
// (perf/link_emulator.h scaled_cluster), computing at `host`'s rates (this machine: its device
// rate, efficiency curve, copy bandwidth, comm overhead and task factors, e.g. a `moebench
// calibrate` file). time_scale
// "auto" is taken as (cluster device rate) / (host device rate), what the run measures when
// `host` is calibrated. Throws std::invalid_argument without [emulate].
ClusterModel emulated_run_cluster(const Config& cfg, const ClusterModel& host);

// The emulator (collective over world: its shared links) and `world` paced over it.
std::unique_ptr<Communicator> emulated_world(const Emulation& e, Communicator& world);

}  // namespace moebench
