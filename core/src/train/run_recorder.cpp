#include "moebench/train/run_recorder.h"

#include <chrono>
#include <cstdio>

#include "moebench/config/config_loader.h"
#include "moebench/store/gemm_rate_record.h"
#include "moebench/tensor/matmul.h"

#ifndef MOEBENCH_GIT_REV
#define MOEBENCH_GIT_REV "unknown"
#endif

namespace moebench {
namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

const char* build_git_revision() { return MOEBENCH_GIT_REV; }

std::vector<std::pair<std::string, std::string>> config_params(const Config& cfg) {
  std::vector<std::pair<std::string, std::string>> out;
  const nlohmann::json j = config_to_json(cfg);
  for (auto section = j.begin(); section != j.end(); ++section)
    for (auto key = section->begin(); key != section->end(); ++key)
      out.emplace_back(section.key() + "." + key.key(),
                       key->is_string() ? key->get<std::string>() : key->dump());
  return out;
}

RunRecorder::RunRecorder(const Config& cfg, int ranks, const std::string& uuid) : on_cpu_(cfg.run.device == Device::cpu) {
  store_ = std::make_unique<RunStore>(cfg.store.db);
  RunInfo info;
  info.uuid = uuid;
  info.name = cfg.run.name;
  info.experiment = cfg.store.experiment;
  info.strategy = ranks > 1 ? cfg.strategy.name : "local";
  info.config_json = config_to_json(cfg).dump();
  info.git_rev = build_git_revision();
  info.ranks = ranks;
  run_ = store_->create_run(info);
  store_->log_params(run_.id, config_params(cfg));
}

RunRecorder::~RunRecorder() {
  if (!finished_) {
    try {
      finish(RunStatus::failed);
    } catch (...) {
    }
  }
}

void RunRecorder::on_step(const StepStats& s) {
  const double ts = unix_now();
  const int64_t step = s.step + 1;  // the store's steps are 1-based: s.step is the 0-based index
  std::vector<MetricPoint> m = {
      {"loss", step, s.loss.ce, ts},           {"aux_loss", step, s.loss.aux, ts},
      {"total_loss", step, s.loss.total, ts},  {"lr", step, s.lr, ts},
      {"grad_norm", step, s.grad_norm, ts},    {"step_ms", step, s.ms, ts},
      {"tokens_per_s", step, s.tokens_per_s, ts}, {"comm_ms", step, s.comm_ms, ts},
      {"bytes_intra", step, (double)s.bytes_intra, ts}, {"bytes_inter", step, (double)s.bytes_inter, ts}};
  if (const std::optional<SparseStepStats>& sp = s.sparse) {  // MoESys's SSD tier, summed over the ranks
    m.push_back({"sparse_hit_rate", step, sp->hit_rate(), ts});
    m.push_back({"sparse_hits", step, (double)sp->hits, ts});
    m.push_back({"sparse_misses", step, (double)sp->misses, ts});
    m.push_back({"sparse_read_bytes", step, (double)sp->bytes_read, ts});
    m.push_back({"sparse_written_bytes", step, (double)sp->bytes_written, ts});
    m.push_back({"sparse_stall_ms", step, sp->stall_s * 1e3, ts});
    m.push_back({"sparse_update_ms", step, sp->update_s * 1e3, ts});
  }
  // Every rank of a block's EP and TP groups decides alike: the first rank holding the block says.
  for (size_t b = 0; b < s.records.moe_blocks.size(); ++b)
    for (const auto& rank : s.records.decisions)
      if (b < rank.size() && !rank[b].empty()) {
        for (const StrategyDecision& d : rank[b])
          m.push_back({d.key + "/block" + std::to_string(s.records.moe_blocks[b]), step, d.value, ts});
        break;
      }
  std::vector<SpanRow> spans;
  spans.reserve(s.records.spans.size());
  for (const Span& sp : s.records.spans)
    spans.push_back({step, sp.rank, stream_role_name(sp.role), sp.name, task_category_name(sp.category), sp.start,
                     sp.end - sp.start, (int64_t)sp.bytes, sp.peer, sp.layer, sp.expert, sp.flops, sp.chunk});
  std::vector<TrafficRow> traffic;
  for (size_t r = 0; r < s.records.traffic.size(); ++r)
    for (size_t p = 0; p < s.records.traffic[r].size(); ++p) {
      const uint64_t bytes = s.records.traffic[r][p];
      if (bytes == 0 || r == p) continue;
      const bool intra = topology_ && topology_->link((int)r, (int)p) == LinkClass::intra_node;
      traffic.push_back({step, (int)r, (int)p, intra ? "intra_node" : "inter_node", (int64_t)bytes});
    }
  std::vector<RoutingRow> routing;
  for (size_t r = 0; r < s.records.routing.size(); ++r)
    for (size_t b = 0; b < s.records.routing[r].size(); ++b)
      for (size_t e = 0; e < s.records.routing[r][b].size(); ++e)
        routing.push_back({step, s.records.moe_blocks[b], (int)r, (int)e, s.records.routing[r][b][e]});
  store_->log_step(run_.id, m, spans, traffic, routing);
}

void RunRecorder::on_eval(const EvalStats& e) {
  // "eval after step N" is at step N, beside that step's training metrics.
  store_->log_step(run_.id, {{"eval_loss", e.step, e.loss, unix_now()}}, {}, {}, {});
}

void RunRecorder::on_setup(const std::string& topology_text, const Topology* topology) {
  topology_ = topology;
  store_->set_topology(run_.id, topology_text);
  run_.topology = topology_text;
  // The peak compute rate the run's DDL-roofline is drawn against, when this host measured one.
  // P_w is one worker's rate: the benchmark's rate scaled to the BLAS threads this rank runs
  // with (ranks on one host share its cores), assuming linear scaling in threads. A GPU run
  // carries none: the recorded rate is the CPU's sgemm.
  if (const auto peak = on_cpu_ ? latest_gemm_rate(*store_, run_.host) : std::nullopt) {
    const int threads = num_threads();
    double gflops = peak->gflops;
    std::string source = peak->source;
    if (peak->threads > 0 && threads > 0 && threads != peak->threads) {
      gflops *= double(threads) / peak->threads;
      source += "; scaled to " + std::to_string(threads) + " thread" + (threads == 1 ? "" : "s") + " per rank";
    }
    peak_gflops_ = gflops;
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.6g", gflops);
    store_->log_params(run_.id, {{"peak_gflops", rate}, {"peak_gflops_source", source}});
  }
}

void RunRecorder::finish(RunStatus status, const std::string& reason) {
  finished_ = true;
  // Another rank that failed has marked the run FAILED with its message (cmd_run's
  // mark_run_failed) and aborted the job: the stop this rank then sees does not make it KILLED.
  if (status != RunStatus::failed && store_->find_run(run_.uuid).status == RunStatus::failed)
    for (const auto& [key, value] : store_->tags(run_.id))
      if (key == "failure") {
        run_.status = RunStatus::failed;
        return;
      }
  if (!reason.empty()) store_->set_tag(run_.id, "failure", reason);
  store_->set_status(run_.id, status, unix_now());
  run_.status = status;
}

}  // namespace moebench
