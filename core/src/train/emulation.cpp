#include "moebench/train/emulation.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <thread>
#include <vector>

#include "moebench/config/cluster_file.h"
#include "moebench/model/param_count.h"
#include "moebench/perf/calibration.h"
#include "moebench/perf/cluster_model.h"
#include "moebench/perf/link_emulator.h"
#include "moebench/tensor/matmul.h"

namespace moebench {
namespace {

std::string number(double v, const char* format = "%.4g") {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

ClusterModel emulated_cluster(const Emulation& e, int ranks) {
  return ClusterModel(cluster_spec(load_cluster_file(e.cluster_file), ranks));
}

// Emulation::slowest_message_*: rank 0 reaches every link class of the cluster.
void find_slowest_message(Emulation& e, const Config& cfg, const ClusterModel& cluster) {
  e.slowest_message_bytes = 4.0 * rank_param_counts(cfg.model, cfg.moe, ExpertShard{}, TpShard{}, PipeStage{}).dense;
  for (int r = 1; r < cluster.world_size(); ++r) {
    const double s = e.time_scale * cluster.transfer_seconds(0, r, e.slowest_message_bytes);
    if (s > e.slowest_message_s) {
      e.slowest_message_s = s;
      e.slowest_message_link = cluster_link_name(cluster.link_class(0, r));
    }
  }
}

}  // namespace

std::string Emulation::label() const { return "emulated " + cluster_name + " x" + number(time_scale); }

std::string Emulation::describe() const {
  std::string s = "emulated cluster " + cluster_name + " (" + cluster_file + ") | time scale x" + number(time_scale);
  if (time_scale_source == "auto")
    s += " (auto: " + number(cluster_gflops / 1e3) + " TFLOP/s per device / " + number(measured_gflops) +
         " GFLOP/s sgemm measured per rank)";
  else
    s += " (emulate.time_scale)";
  return s + " | every message paced over its links: times are measured under emulation, not predicted";
}

std::string Emulation::warning() const {
  if (!(slowest_message_s > kSlowMessageSeconds)) return "";
  return "warning: " + label() + ": one message of the dense gradients (" + number(slowest_message_bytes / 1e6) +
         " MB) takes " + number(slowest_message_s, "%.3g") + " s on the emulated " + slowest_message_link +
         " link, longer than a minute: the run will take minutes per message, even before its first step "
         "(lower emulate.time_scale, or emulate a faster cluster)";
}

std::vector<std::pair<std::string, std::string>> Emulation::tags() const {
  return {{"emulated", "1"},
          {"emulated.cluster", cluster_name},
          {"emulated.cluster_file", cluster_file},
          {"emulated.time_scale", number(time_scale, "%.6g")},
          {"emulated.time_scale_source", time_scale_source}};
}

Emulation resolve_emulation(const Config& cfg, Communicator* world) {
  Emulation e;
  e.cluster_file = cfg.emulate.cluster;
  const ClusterConfig k = load_cluster_file(e.cluster_file);
  const std::string stem = std::filesystem::path(e.cluster_file).stem().string();
  e.cluster_name = k.name == "local" && stem != "local" ? stem : k.name;
  const int ranks = world ? world->size() : 1;
  const ClusterModel cluster(cluster_spec(k, ranks));
  e.cluster_text = cluster.describe();
  e.cluster_gflops = cluster.device_flops() / 1e9;
  if (cfg.emulate.time_scale != "auto") {
    e.time_scale = std::stod(cfg.emulate.time_scale);
    e.time_scale_source = "config";
    find_slowest_message(e, cfg, cluster);
    return e;
  }
  e.time_scale_source = "auto";
  // The run's BLAS threads (as the trainer sets them) while every rank computes at once.
  const int threads = cfg.run.threads > 0 ? cfg.run.threads
                                          : std::max(1, (int)std::thread::hardware_concurrency() / ranks);
  set_num_threads(threads);
  constexpr int n = 512;  // calibration's GEMM timing (perf/calibration.h), every rank at once
  const double seconds = world ? time_gemm_contended(*world, n, n, n, 9) : time_gemm(n, n, n, 9);
  const double rate = 2.0 * n * n * n / seconds / 1e9;  // the same on every rank
  if (!(rate > 0)) throw std::runtime_error("link emulator: the measured sgemm rate is not positive");
  e.measured_gflops = rate;
  e.time_scale = e.cluster_gflops / rate;
  find_slowest_message(e, cfg, cluster);
  return e;
}

std::unique_ptr<Communicator> emulated_world(const Emulation& e, Communicator& world) {
  auto emu = std::make_shared<const LinkEmulator>(world, emulated_cluster(e, world.size()), e.time_scale);
  return std::make_unique<EmulatedCommunicator>(std::move(emu), world);
}

ClusterModel emulated_run_cluster(const Config& cfg, const ClusterModel& host) {
  if (cfg.emulate.cluster.empty()) throw std::invalid_argument("the config has no [emulate] cluster");
  const ClusterModel target(cluster_spec(load_cluster_file(cfg.emulate.cluster), cfg.run.ranks));
  const double scale = cfg.emulate.time_scale == "auto" ? target.device_flops() / host.device_flops()
                                                        : std::stod(cfg.emulate.time_scale);
  ClusterSpec s = scaled_cluster(target, scale).spec();
  s.name = target.spec().name + " emulated x" + number(scale) + " on " + host.spec().name;
  s.device_flops = host.spec().device_flops;
  s.efficiency = host.spec().efficiency;
  s.copy_bandwidth = host.spec().copy_bandwidth;
  s.comm_overhead = host.spec().comm_overhead;  // the host's own costs: it runs the tasks
  s.comm_seconds_per_byte = host.spec().comm_seconds_per_byte;
  s.task_costs = host.spec().task_costs;
  s.emulated_pacing = true;  // the run's messages go through the link emulator
  return ClusterModel(s);
}

}  // namespace moebench
