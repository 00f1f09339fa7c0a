#pragma once
// A run store of measured and predicted runs with known step times, for the prediction-accuracy
// model and view and the stacked timeline. Written through RunStore; params are the real
// config_params() of parsed configs; predicted runs carry the tags `moebench simulate` writes
// (plan/predicted_run.h: predicted = simulator, cluster, routing, trace_run = a measured uuid).
//
// Configs (base: 4 ranks, 2 MoE layers): A = expert_centric, B = hier_a2a, C = data_centric,
// D = expert_centric on 8 ranks. Runs, in id order (start times ascending unless noted):
//   "ec"              measured A          step_ms 50 10 12 14   -> 12 (first step: warm-up)
//   "ec zipf"         measured A, moe.routing = zipf:1.2, started last: another routing, never paired
//                                          step_ms 100 100 100
//   "hier old"        measured B' (B with cluster.name = "other")   step_ms 70 70 70
//   "hier"            measured B          step_ms 22 18         -> 20 (2 steps: both count)
//   "dc old"          measured C          step_ms 40 40 40      -> 40
//   "dc"              measured C, later   step_ms 9 30 30       -> 30
//   "ec (predicted)"  predicted A, with store.db, run.name and train.steps changed (ignored keys)
//                     step_ms 12 14 14.5 -> 13.5 (every step: no warm-up)  vs "ec"   +12.5 %
//   "hier (predicted)" predicted B', trace_run = uuid of "hier": the tag wins over the equal
//                     config of "hier old"  step_ms 18           -> 18    vs "hier" -10 %
//   "dc (predicted)"  predicted C          step_ms 31.5 31.5     -> 31.5  vs "dc"   +5 %
//   "big (predicted)" predicted D          step_ms 5            no measured run: unmatched
//   "lost (predicted)" predicted D', trace_run = a uuid not in the store, config matching none
//                                          step_ms 6             unmatched
// Pairs: (13.5, 12), (18, 20), (31.5, 30): MAE = (12.5 + 10 + 5) / 3 = 9.1667 %;
// mean measured 62/3, SS_tot = (676 + 4 + 784) / 9 = 1464/9, SS_res = 2.25 + 4 + 2.25 = 8.5,
// R² = 1 - 8.5 * 9 / 1464 = 1 - 76.5 / 1464 = 0.947746.
//
// Spans (runs "ec" and "ec (predicted)", 2 ranks each, every step): per (step, rank), D = the
// step's step_ms / 1000 s, t = the step's start:
//   host "step" compute [t, t + D]; compute "forward" compute [t, t + 0.4D];
//   comm "moe.dispatch" comm [t + 0.4D, t + 0.6D]
// measured: t = 5 + (step - 1) s (the executor's own clock); predicted: t = 0 every step, as the
// simulator writes each step.
#include <QString>
#include <QTemporaryDir>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "moebench/config/config_loader.h"
#include "moebench/store/run_store.h"
#include "moebench/train/run_recorder.h"

namespace moebench::test::prediction_fixture {

constexpr double kMae = (12.5 + 10.0 + 5.0) / 3.0;
constexpr double kR2 = 1.0 - 76.5 / 1464.0;

inline Config config(const std::string& strategy, int ranks, const std::string& extra = "") {
  const std::string toml = "[run]\nname = \"fixture\"\nranks = " + std::to_string(ranks) +
                           "\n[model]\nvocab_size = 32\nseq_len = 16\nhidden = 32\nlayers = 2\nheads = 2\n"
                           "ffn_mult = 2\n[moe]\nmoe_layers = [0, 1]\nexperts = 8\ntop_k = 2\n[strategy]\nname = \"" +
                           strategy + "\"\n" + extra;
  return parse_config(toml, "fixture.toml");
}

// Measured step times of run "ec" (and of its spans); those of "ec (predicted)".
inline std::vector<double> ecMeasuredMs() { return {50, 10, 12, 14}; }
inline std::vector<double> ecPredictedMs() { return {12, 14, 14.5}; }

inline std::vector<SpanRow> stepSpans(int64_t step, int rank, double t, double ms) {
  const double D = ms / 1000.0;
  std::vector<SpanRow> out(3);
  out[0] = {step, rank, "host", "step", "compute", t, D, 0, -1, -1, -1, 0.0, -1};
  out[1] = {step, rank, "compute", "forward", "compute", t, 0.4 * D, 0, -1, -1, -1, 0.0, -1};
  out[2] = {step, rank, "comm", "moe.dispatch", "comm", t + 0.4 * D, 0.2 * D, 4096, 1 - rank, 0, -1, 0.0, -1};
  return out;
}

struct RunSpec {
  std::string name;
  Config cfg;
  std::vector<double> stepMs;
  std::vector<std::pair<std::string, std::string>> tags;  // non-empty: a predicted run
  bool spans = false;
  double spanOrigin = 0;  // t of step 1 (measured: each next step 1 s later; predicted: all at 0)
};

inline RunInfo writeRun(RunStore& store, const RunSpec& spec, double startTime) {
  const bool predicted = !spec.tags.empty();
  RunInfo info;
  info.name = spec.name;
  info.strategy = spec.cfg.strategy.name;
  info.config_json = config_to_json(spec.cfg).dump();
  info.ranks = spec.cfg.run.ranks;
  info.topology = predicted ? "2 nodes x 2 devices (predicted)" : "2 nodes x 2 devices (virtual)";
  info.start_time = startTime;
  info = store.create_run(info);
  store.log_params(info.id, config_params(spec.cfg));
  for (const auto& [k, v] : spec.tags) store.set_tag(info.id, k, v);
  for (size_t i = 0; i < spec.stepMs.size(); ++i) {
    const int64_t step = int64_t(i) + 1;
    std::vector<SpanRow> spans;
    if (spec.spans)
      for (int rank = 0; rank < 2; ++rank)
        for (const SpanRow& s : stepSpans(step, rank, predicted ? spec.spanOrigin : spec.spanOrigin + double(i),
                                          spec.stepMs[i]))
          spans.push_back(s);
    store.log_step(info.id, {{"step_ms", step, spec.stepMs[i], startTime + double(i)}}, spans, {}, {});
  }
  store.set_status(info.id, RunStatus::finished, startTime + 100);
  return info;
}

// Writes the store to dir/predictions.db and returns its path.
inline QString write(const QTemporaryDir& dir) {
  const QString path = dir.filePath("predictions.db");
  RunStore store(path.toStdString());
  const Config A = config("expert_centric", 4), B = config("hier_a2a", 4),
               Bother = config("hier_a2a", 4, "[cluster]\nname = \"other\"\n"), C = config("data_centric", 4),
               D = config("expert_centric", 8), Dother = config("expert_centric", 8, "[train]\nbatch_size = 16\n");
  Config Azipf = A;
  Azipf.moe.routing = parse_routing("zipf:1.2");
  Config Apredicted = A;  // what `simulate --db` and another step count change: ignored keys
  Apredicted.store.db = "elsewhere.db";
  Apredicted.run.name = "renamed";
  Apredicted.train.steps = 2;
  auto sim = [](std::vector<std::pair<std::string, std::string>> extra = {}) {
    std::vector<std::pair<std::string, std::string>> tags = {{"predicted", "simulator"},
                                                             {"cluster", "fixture cluster"},
                                                             {"routing", "uniform (synthetic)"}};
    for (auto& t : extra) tags.push_back(std::move(t));
    return tags;
  };
  double t = 1700000000.0;
  writeRun(store, {"ec", A, ecMeasuredMs(), {}, true, 5.0}, t += 10);
  const double zipfStart = t + 1000;  // started last of all
  writeRun(store, {"ec zipf", Azipf, {100, 100, 100}, {}, false, 0}, zipfStart);
  writeRun(store, {"hier old", Bother, {70, 70, 70}, {}, false, 0}, t += 10);
  const RunInfo hier = writeRun(store, {"hier", B, {22, 18}, {}, false, 0}, t += 10);
  writeRun(store, {"dc old", C, {40, 40, 40}, {}, false, 0}, t += 10);
  writeRun(store, {"dc", C, {9, 30, 30}, {}, false, 0}, t += 10);
  writeRun(store, {"ec (predicted)", Apredicted, ecPredictedMs(), sim(), true, 0.0}, t += 10);
  writeRun(store, {"hier (predicted)", Bother, {18}, sim({{"trace_run", hier.uuid}}), false, 0}, t += 10);
  writeRun(store, {"dc (predicted)", C, {31.5, 31.5}, sim(), false, 0}, t += 10);
  writeRun(store, {"big (predicted)", D, {5}, sim(), false, 0}, t += 10);
  writeRun(store, {"lost (predicted)", Dother, {6}, sim({{"trace_run", std::string(32, 'f')}}), false, 0}, t += 10);
  return path;
}

// write(), then the store opened read-only, as the GUI opens it.
inline std::shared_ptr<RunStore> open(const QTemporaryDir& dir) {
  return std::make_shared<RunStore>(write(dir).toStdString(), RunStore::Mode::read_only);
}

}  // namespace moebench::test::prediction_fixture
