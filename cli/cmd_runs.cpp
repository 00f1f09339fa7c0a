// moebench runs list|show|compare|delete|import: browse the run store (default ./runs.db, --db PATH).
//   list [--experiment X] [--json]   one line per run, newest last
//   show RUN [--json]                the run's info, params, tags and summary (run_summary.h)
//   compare RUN RUN... [--json]      side by side; speedups are against the FIRST run given; the
//                                    row "timing" says measured, emulated <cluster> x<scale> or
//                                    predicted (<cluster>)
//   delete RUN [--force]             the run and all its rows (a RUNNING run of another host only
//                                    with --force; never one whose process is alive)
//   roofline RUN... [--peak G] [--json]  DDL-roofline points per MoE layer (runs_roofline.h)
//   import FILE                      another store's runs copied in, by uuid (runs_import.h)
// RUN is a row id, a uuid or a unique uuid prefix (>= 4 chars), or a unique run name.
// Reading verbs open the database read-only; a missing file is an error, never created.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "run_db.h"
#include "runs_import.h"
#include "runs_roofline.h"
#include "moebench/config/usage_error.h"
#include "moebench/store/run_summary.h"

namespace moebench::cli {

namespace {

using json = nlohmann::json;

struct LossInfo {
  int64_t steps = 0;
  double final_loss = std::numeric_limits<double>::quiet_NaN();  // also NaN when the loss diverged
  bool has_loss = false;  // a loss was recorded
};

// Steps with a "loss" metric (else a "step_ms" one) and the last loss (cheaper than a full
// summary, for `list`).
LossInfo loss_info(const RunStore& store, int64_t run) {
  LossInfo out;
  std::set<int64_t> steps;
  int64_t last = INT64_MIN;
  for (const auto& m : store.metrics(run, "loss")) {
    steps.insert(m.step);
    if (m.step >= last) {
      last = m.step;
      out.final_loss = m.value;
      out.has_loss = true;
    }
  }
  if (steps.empty())  // a predicted run computes no loss: its simulated steps
    for (const auto& m : store.metrics(run, "step_ms")) steps.insert(m.step);
  out.steps = int64_t(steps.size());
  return out;
}

// A run measured under the link emulator (tag "emulated").
bool is_emulated(const RunStore& store, int64_t run) {
  for (const auto& [k, v] : store.tags(run))
    if (k == "emulated") return v == "1";
  return false;
}

json num_or_null(double v) { return v == v ? json(v) : json(nullptr); }

std::string short_uuid(const std::string& uuid) { return uuid.substr(0, 8); }

int list_runs(const std::string& db, const std::string& experiment, bool as_json) {
  auto store = open_run_db(db, RunStore::Mode::read_only);
  const auto runs = store->list_runs(experiment);
  if (as_json) {
    json out = json::array();
    for (const auto& r : runs) {
      const LossInfo li = loss_info(*store, r.id);
      json j = run_info_json(r);
      j["steps"] = li.steps;
      j["final_loss"] = num_or_null(li.final_loss);
      j["duration_s"] = num_or_null(run_duration(r) >= 0 ? run_duration(r) : std::nan(""));
      j["emulated"] = is_emulated(*store, r.id);
      out.push_back(j);
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  if (runs.empty()) {
    std::fprintf(stderr, "no runs in %s%s\n", db.c_str(),
                 experiment.empty() ? "" : (" for experiment '" + experiment + "'").c_str());
    return 0;
  }
  TextTable t({"ID", "UUID", "NAME", "EXPERIMENT", "STATUS", "STRATEGY", "STEPS", "FINAL LOSS", "START", "DURATION"},
              {true, false, false, false, false, false, true, true, false, true});
  for (const auto& r : runs) {
    const LossInfo li = loss_info(*store, r.id);
    const bool emulated = is_emulated(*store, r.id);
    t.add({std::to_string(r.id), short_uuid(r.uuid), emulated ? r.name + " (emulated)" : r.name, r.experiment, run_status_name(r.status), r.strategy,
           std::to_string(li.steps), fmt_recorded("%.4f", li.final_loss, li.has_loss), fmt_time(r.start_time),
           fmt_duration(run_duration(r))});
  }
  std::cout << t.str();
  return 0;
}

int show_run(const std::string& db, const std::string& ref, bool as_json) {
  auto store = open_run_db(db, RunStore::Mode::read_only);
  const RunInfo r = store->find_run(ref);
  const auto params = store->params(r.id);
  const auto tags = store->tags(r.id);
  const RunSummary s = summarize_run(*store, r);
  if (as_json) {
    json p = json::object(), t = json::object();
    for (const auto& [k, v] : params) p[k] = v;
    for (const auto& [k, v] : tags) t[k] = v;
    json out = {{"run", run_info_json(r)}, {"params", p}, {"tags", t}, {"summary", summary_json(s)}};
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::string o;
  o += "run          " + std::to_string(r.id) + "  " + r.uuid + "\n";
  o += "name         " + r.name + "\n";
  o += "experiment   " + r.experiment + "\n";
  o += "status       " + std::string(run_status_name(r.status)) + "\n";
  for (const auto& [k, v] : tags)
    if (k == "failure") o += "failure      " + v + "\n";  // why a FAILED run stopped (a diverged loss)
  o += "strategy     " + r.strategy + "\n";
  o += "ranks        " + std::to_string(r.ranks) + (r.topology.empty() ? "" : "  (" + r.topology + ")") + "\n";
  o += "host         " + r.host + "  pid " + std::to_string(r.pid) + "\n";
  if (!r.git_rev.empty()) o += "git rev      " + r.git_rev + "\n";
  o += "started      " + fmt_time(r.start_time) + "  (" + fmt_duration(run_duration(r)) +
       (r.end_time > 0 ? ")" : " so far)") + "\n";
  o += "\nsummary\n" + format_summary(s);
  if (!params.empty()) {
    o += "\nparams\n";
    for (const auto& [k, v] : params) o += "  " + k + " = " + v + "\n";
  }
  if (!tags.empty()) {
    o += "\ntags\n";
    for (const auto& [k, v] : tags) o += "  " + k + " = " + v + "\n";
  }
  std::cout << o;
  return 0;
}

int compare_runs(const std::string& db, const std::vector<std::string>& refs, bool as_json) {
  auto store = open_run_db(db, RunStore::Mode::read_only);
  std::vector<RunSummary> sums;
  for (const auto& ref : refs) sums.push_back(summarize_run(*store, store->find_run(ref)));
  const RunSummary& base = sums.front();
  auto speedup_ms = [&](const RunSummary& s) { return base.mean_step_ms / s.mean_step_ms; };
  auto speedup_tps = [&](const RunSummary& s) { return s.mean_tokens_per_s / base.mean_tokens_per_s; };
  auto comm_share = [](const RunSummary& s) {
    return s.has_phases ? s.phases.comm_share : std::numeric_limits<double>::quiet_NaN();
  };
  // How its times came about: a plain run's are measured; an emulated run's are measured under
  // the link emulator; a simulated run's are predicted.
  auto timing = [](const RunSummary& s) {
    if (s.predicted) return "predicted" + (s.predicted_cluster.empty() ? std::string() : " (" + s.predicted_cluster + ")");
    if (s.emulated) return "emulated " + s.emulated_cluster + " x" + s.emulated_time_scale;
    return std::string("measured");
  };
  if (as_json) {
    json runs = json::array();
    for (const auto& s : sums) {
      runs.push_back({{"id", s.run.id},
                      {"uuid", s.run.uuid},
                      {"name", s.run.name},
                      {"strategy", s.run.strategy},
                      {"status", run_status_name(s.run.status)},
                      {"timing", timing(s)},
                      {"steps", s.steps},
                      {"final_loss", num_or_null(s.last("loss"))},
                      {"eval_loss", num_or_null(s.last("eval_loss"))},
                      {"ms_per_step", num_or_null(s.mean_step_ms)},
                      {"tokens_per_s", num_or_null(s.mean_tokens_per_s)},
                      {"comm_share", num_or_null(comm_share(s))},
                      {"intra_mb_per_step", s.bytes_intra_per_step / 1e6},
                      {"inter_mb_per_step", s.bytes_inter_per_step / 1e6},
                      {"max_imbalance", num_or_null(s.max_imbalance)},
                      {"speedup_ms_per_step", num_or_null(speedup_ms(s))},
                      {"speedup_tokens_per_s", num_or_null(speedup_tps(s))}});
    }
    json out = {{"baseline", {{"id", base.run.id}, {"uuid", base.run.uuid}, {"name", base.run.name}}},
                {"runs", runs}};
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::vector<std::string> header{""};
  for (const auto& s : sums) header.push_back(std::to_string(s.run.id) + " " + short_uuid(s.run.uuid));
  std::vector<bool> right(header.size(), true);
  right[0] = false;  // labels
  TextTable t(header, right);
  auto row = [&](const std::string& label, auto&& cell) {
    std::vector<std::string> r{label};
    for (const auto& s : sums) r.push_back(cell(s));
    t.add(r);
  };
  row("name", [](const RunSummary& s) { return s.run.name; });
  row("strategy", [](const RunSummary& s) { return s.run.strategy; });
  row("status", [](const RunSummary& s) { return std::string(run_status_name(s.run.status)); });
  row("timing", timing);
  row("steps", [](const RunSummary& s) { return std::to_string(s.steps); });
  row("final loss", [](const RunSummary& s) { return fmt_recorded("%.4f", s.last("loss"), s.last_metrics.count("loss")); });
  row("eval loss",
      [](const RunSummary& s) { return fmt_recorded("%.4f", s.last("eval_loss"), s.last_metrics.count("eval_loss")); });
  row("ms/step", [](const RunSummary& s) { return fmt_num("%.3f", s.mean_step_ms); });
  row("tokens/s", [](const RunSummary& s) { return fmt_num("%.0f", s.mean_tokens_per_s); });
  row("comm share", [&](const RunSummary& s) { return fmt_num("%.1f%%", 100 * comm_share(s)); });
  row("intra MB/step", [](const RunSummary& s) { return fmt_num("%.3f", s.bytes_intra_per_step / 1e6); });
  row("inter MB/step", [](const RunSummary& s) { return fmt_num("%.3f", s.bytes_inter_per_step / 1e6); });
  row("max imbalance", [](const RunSummary& s) { return fmt_num("%.3f", s.max_imbalance); });
  row("speedup ms/step", [&](const RunSummary& s) { return fmt_num("%.2fx", speedup_ms(s)); });
  row("speedup tokens/s", [&](const RunSummary& s) { return fmt_num("%.2fx", speedup_tps(s)); });
  std::cout << t.str() << "speedups are against the first run (" << base.run.id << " " << short_uuid(base.run.uuid)
            << "); ms/step and tokens/s leave the first step out as warm-up; MB = 1e6 bytes, all ranks\n";
  return 0;
}

int delete_run(const std::string& db, const std::string& ref, bool force) {
  auto store = open_run_db(db, RunStore::Mode::read_write);
  const RunInfo r = store->find_run(ref);
  // Deleting a run that still trains would lose it: its next step finds no run to record into.
  const std::string run = "run " + std::to_string(r.id) + " (" + r.name + ")";
  if (run_process_alive(r))
    throw UsageError(run + " is RUNNING: its process " + std::to_string(r.pid) + " on this host is alive; stop it "
                     "first (kill " + std::to_string(r.pid) + ": it checkpoints and ends KILLED), then delete it");
  if (r.status == RunStatus::running && !force)
    throw UsageError(run + " is RUNNING on " + r.host + " (pid " + std::to_string(r.pid) +
                     "), which this host cannot check; stop it first, or pass --force if it has ended");
  store->delete_run(r.id);
  std::printf("deleted run %lld %s %s\n", static_cast<long long>(r.id), short_uuid(r.uuid).c_str(), r.name.c_str());
  return 0;
}

}  // namespace

void add_runs_command(CLI::App& app, Action& action) {
  auto* runs = app.add_subcommand("runs", "Browse the run store: list, show, compare, roofline, delete, import");
  runs->require_subcommand(1);
  auto db = std::make_shared<std::string>(kDefaultRunDb);
  auto as_json = std::make_shared<bool>(false);
  auto add_db = [db](CLI::App* cmd) {
    cmd->add_option("--db", *db, "Run database (default: runs.db in the current directory)");
  };

  auto* list = runs->add_subcommand("list", "One line per run");
  auto experiment = std::make_shared<std::string>();
  add_db(list);
  list->add_option("--experiment", *experiment, "Only runs of this experiment");
  list->add_flag("--json", *as_json, "Print JSON");
  list->callback([&action, db, experiment, as_json] {
    action = [db, experiment, as_json] { return with_run_db(*db, [&] { return list_runs(*db, *experiment, *as_json); }); };
  });

  auto* show = runs->add_subcommand("show", "A run's info, params and summary");
  auto ref = std::make_shared<std::string>();
  show->add_option("run", *ref, "Run id, uuid (prefix) or name")->required();
  add_db(show);
  show->add_flag("--json", *as_json, "Print JSON");
  show->callback([&action, db, ref, as_json] {
    action = [db, ref, as_json] { return with_run_db(*db, [&] { return show_run(*db, *ref, *as_json); }); };
  });

  auto* compare = runs->add_subcommand("compare", "Runs side by side; speedups against the first run");
  auto refs = std::make_shared<std::vector<std::string>>();
  compare->add_option("runs", *refs, "Two or more runs (id, uuid prefix or name); the first is the baseline")
      ->required()
      ->expected(2, -1);
  add_db(compare);
  compare->add_flag("--json", *as_json, "Print JSON");
  compare->callback([&action, db, refs, as_json] {
    action = [db, refs, as_json] { return with_run_db(*db, [&] { return compare_runs(*db, *refs, *as_json); }); };
  });

  auto* roofline = runs->add_subcommand("roofline", "DDL-roofline points per MoE layer: measured, simulated, predicted");
  auto roofline_refs = std::make_shared<std::vector<std::string>>();
  auto peak = std::make_shared<double>(0.0);
  roofline->add_option("runs", *roofline_refs, "Runs (id, uuid prefix or name)")->required()->expected(1, -1);
  add_db(roofline);
  roofline->add_option("--peak", *peak, "P_w in GFLOP/s per worker for the curves (default: each run's peak_gflops)")
      ->check(positive_number(kMaxPeakGflops));
  roofline->add_flag("--json", *as_json, "Print JSON");
  roofline->callback([&action, db, roofline_refs, peak, as_json] {
    action = [db, roofline_refs, peak, as_json] {
      return with_run_db(*db, [&] { return runs_roofline(*db, *roofline_refs, *peak, *as_json); });
    };
  });

  auto* del = runs->add_subcommand("delete", "Delete a run and all its rows");
  auto del_ref = std::make_shared<std::string>();
  auto force = std::make_shared<bool>(false);
  del->add_option("run", *del_ref, "Run id, uuid (prefix) or name")->required();
  add_db(del);
  del->add_flag("--force", *force, "Delete a run marked RUNNING on another host (never one whose process is alive here)");
  del->callback([&action, db, del_ref, force] {
    action = [db, del_ref, force] { return with_run_db(*db, [&] { return delete_run(*db, *del_ref, *force); }); };
  });

  auto* import = runs->add_subcommand("import", "Copy the runs of another moebench store into this one (by uuid)");
  auto import_file = std::make_shared<std::string>();
  import->add_option("file", *import_file, "The other run database (e.g. one fetched from a cluster)")->required();
  import->add_option("--db", *db, "Run database to import into (default: runs.db; created when missing)");
  import->callback([&action, db, import_file] {
    action = [db, import_file] { return runs_import(*db, *import_file); };  // errors name their file
  });
}

}  // namespace moebench::cli
