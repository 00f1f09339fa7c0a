#include <cstdio>

#include "moebench/plan/predicted_run.h"

#include <algorithm>
#include <chrono>

#include "moebench/config/config_loader.h"
#include "moebench/train/run_recorder.h"

namespace moebench {
namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

PredictedRunWriter::PredictedRunWriter(RunStore& store, const Config& cfg, const ClusterModel& cluster,
                                       const std::vector<std::pair<std::string, std::string>>& tags)
    : store_(store), cfg_(cfg), cluster_(cluster) {
  RunInfo info;
  info.name = cfg.run.name + " (predicted)";
  info.experiment = cfg.store.experiment;
  info.strategy = cfg.strategy.name;
  info.config_json = config_to_json(cfg).dump();
  info.topology = cluster.describe() + " (predicted)";
  info.git_rev = build_git_revision();
  info.ranks = cfg.run.ranks;
  run_ = store_.create_run(info);
  auto params = config_params(cfg);
  // The roofline's ceiling of a predicted run is the rate its own cluster's devices were
  // simulated at, not this machine's: the simulated points are drawn against it.
  char peak[32];
  std::snprintf(peak, sizeof(peak), "%.6g", cluster.device_flops() / 1e9);
  params.push_back({"peak_gflops", peak});
  params.push_back({"peak_gflops_source", "cluster " + cluster.spec().name + ": the device rate the simulator used (predicted)"});
  store_.log_params(run_.id, params);
  store_.set_tag(run_.id, "predicted", "simulator");
  for (const auto& [k, v] : tags) store_.set_tag(run_.id, k, v);
}

PredictedRunWriter::~PredictedRunWriter() {
  if (finished_) return;
  try {
    store_.set_status(run_.id, RunStatus::failed, 0);
  } catch (...) {
  }
}

void PredictedRunWriter::add_step(int64_t step, const StepSimulation& sim) {
  const double ts = unix_now();
  const int W = (int)sim.graphs.size();
  std::vector<SpanRow> spans;
  std::vector<std::vector<uint64_t>> bytes((size_t)W, std::vector<uint64_t>((size_t)W, 0));
  for (int r = 0; r < W; ++r) {
    const TaskGraph& g = sim.graphs[(size_t)r];
    const auto& times = sim.result.tasks[(size_t)r];
    double forward_end = 0, backward_start = -1, optimizer_start = -1;
    for (int i = 0; i < (int)g.size(); ++i) {
      const GraphTask& t = g.task(i);
      const SimulatedTask& s = times[(size_t)i];
      int peer = t.peer;
      if (peer < 0 && !t.cost.bytes_to_peer.empty()) {
        peer = t.cost.bytes_to_peer.front().first;
        for (const auto& [p, b] : t.cost.bytes_to_peer) peer = p == peer ? peer : -1;
      }
      spans.push_back({step, r, stream_role_name(t.role), t.name, task_category_name(t.category), s.start,
                       s.end - s.start, (int64_t)t.cost.bytes_sent(), peer, t.layer, t.expert, t.cost.flops, t.chunk});
      for (const auto& [p, b] : t.cost.bytes_to_peer) bytes[(size_t)r][(size_t)p] += b;
      if (t.name == "head.forward") forward_end = s.end;
      if (t.name == "head.backward") backward_start = s.start;
      if (t.name == "optimizer") optimizer_start = s.start;
    }
    const double end = sim.result.rank_end[(size_t)r];
    auto host = [&](const char* name, double a, double b) {
      spans.push_back({step, r, "host", name, "compute", a, std::max(0.0, b - a), 0, -1, -1, -1, 0.0, -1});
    };
    host("step", 0.0, end);
    host("forward", 0.0, forward_end);
    if (backward_start >= 0) host("backward", backward_start, optimizer_start >= 0 ? optimizer_start : end);
  }
  std::vector<TrafficRow> traffic;
  uint64_t intra = 0, inter = 0;
  for (int r = 0; r < W; ++r)
    for (int p = 0; p < W; ++p) {
      const uint64_t b = bytes[(size_t)r][(size_t)p];
      if (b == 0 || r == p) continue;
      const ClusterLink link = cluster_.link_class(r, p);
      const bool in_node = link == ClusterLink::intra_node || link == ClusterLink::pcie_pair;
      (in_node ? intra : inter) += b;
      traffic.push_back({step, r, p, in_node ? "intra_node" : "inter_node", (int64_t)b});
    }
  const double step_s = sim.result.makespan;
  const double tokens = (double)cfg_.train.batch_size * cfg_.model.seq_len;
  const std::vector<MetricPoint> metrics = {{"step_ms", step, step_s * 1e3, ts},
                                            {"tokens_per_s", step, step_s > 0 ? tokens / step_s : 0.0, ts},
                                            {"comm_ms", step, exposed_comm_seconds(sim) * 1e3, ts},
                                            {"bytes_intra", step, (double)intra, ts},
                                            {"bytes_inter", step, (double)inter, ts}};
  store_.log_step(run_.id, metrics, spans, traffic, {});
}

void PredictedRunWriter::finish() {
  store_.set_status(run_.id, RunStatus::finished, 0);
  finished_ = true;
}

}  // namespace moebench
