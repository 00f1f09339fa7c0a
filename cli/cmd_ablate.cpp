// moebench ablate CONFIG... [--vary key=a,b]... [--experiment NAME] [--db PATH]
//                          [--set key=value]... [--steps N] [--repeats N [--repeat-seeds]] [--overwrite]
// Runs the cartesian product of the configs and the varied keys as one experiment (several
// configs compare layouts that differ in many keys at once, e.g. sample_configs/models/
// ppmoe_*.toml; experiment name, database and output folder come from the first; each variant a child
// `moebench run`, so multi-rank configs launch their ranks as usual), then prints the
// comparison table of `moebench runs compare` over the variants (speedups against the first).
// Variant i writes its checkpoints to <run.out_dir>/<experiment>.<i>; when any of those holds
// an earlier run's checkpoints nothing starts unless --overwrite replaces them. A variant
// leaves out the [strategy.<x>] keys its strategy does not read (and equal variants run once).
// --repeats N runs every variant N times (the machine's noise): each repeat is a run of its own,
// named <experiment>.<i>.<r> (r = 1..N; with N = 1 the name stays <experiment>.<i>) writing to
// <run.out_dir>/<that name>, tagged ablation.variant (the same for all repeats) and
// ablation.repeat = r. Repeats keep the variant's run.seed, so they differ only by the machine;
// --repeat-seeds gives repeat r the seed run.seed + r - 1 (data, init and sampling then vary
// too). With repeats a single config needs no --vary, and the end adds a table of the mean and
// sample standard deviation over the repeats per variant.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "commands.h"
#include "launch_limits.h"
#include "store_writable.h"
#include "moebench/config/config_loader.h"
#include "moebench/config/strategy_spec.h"
#include "moebench/config/usage_error.h"
#include "moebench/train/output_dir.h"
#include "moebench/store/run_store.h"
#include "moebench/store/run_summary.h"

namespace moebench::cli {
namespace {

struct AblateOptions {
  std::vector<std::string> configs;
  std::string experiment, db;
  std::vector<std::string> vary, sets;
  int steps = 0;
  int repeats = 1;
  bool repeat_seeds = false;
  bool overwrite = false;
};

struct Axis {
  std::string key;
  std::vector<std::string> values;
};

// "moe.top_k=1,2" -> {moe.top_k, [1, 2]}; commas inside [...] or "..." do not split.
Axis parse_axis(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw CLI::ValidationError("--vary", "expected key=value1,value2,..., got \"" + text + "\"");
  Axis a{text.substr(0, eq), {}};
  std::string cur;
  int depth = 0;
  bool quoted = false;
  for (char c : text.substr(eq + 1)) {
    if (c == '"') quoted = !quoted;
    if (!quoted && c == '[') ++depth;
    if (!quoted && c == ']') --depth;
    if (c == ',' && depth == 0 && !quoted) {
      a.values.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  a.values.push_back(cur);
  for (const auto& v : a.values)
    if (v.empty()) throw CLI::ValidationError("--vary", "empty value in \"" + text + "\"");
  return a;
}

int run_child(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The --set keys a variant keeps: strategy option keys ([strategy.<x>]) only when the
// variant's strategy reads that section (setting others is a config error), so a --vary over
// strategy.name with data_centric switches runs expert_centric once, not once per switch.
std::vector<std::string> applicable(const std::vector<std::string>& sets, const std::string& file_strategy) {
  std::string name = file_strategy;
  for (const auto& s : sets)
    if (s.starts_with("strategy.name=")) name = s.substr(14);
  const std::vector<std::string> reads = strategy_option_sections(name);
  std::vector<std::string> out;
  for (const auto& s : sets) {
    const std::string key = s.substr(0, s.find('='));
    const size_t dot = key.find('.', 9);
    if (key.starts_with("strategy.") && dot != std::string::npos &&
        std::find(reads.begin(), reads.end(), key.substr(9, dot - 9)) == reads.end())
      continue;
    out.push_back(s);
  }
  return out;
}

struct Variant {
  std::string config, label;
  std::vector<std::string> sets;  // the varied keys' values
  uint64_t seed = 0;              // its run.seed (--repeat-seeds counts up from it)
  bool operator==(const Variant&) const = default;
};

// Mean and sample standard deviation (n - 1; NaN for fewer than 2 values) of the finite values.
struct Spread {
  size_t n = 0;
  double mean = std::nan(""), sd = std::nan("");
};
Spread spread(const std::vector<double>& values) {
  Spread s;
  double sum = 0;
  for (double v : values)
    if (std::isfinite(v)) sum += v, ++s.n;
  if (s.n == 0) return s;
  s.mean = sum / double(s.n);
  if (s.n < 2) return s;
  double sq = 0;
  for (double v : values)
    if (std::isfinite(v)) sq += (v - s.mean) * (v - s.mean);
  s.sd = std::sqrt(sq / double(s.n - 1));
  return s;
}

std::string format_spread(const Spread& s, int precision) {
  if (s.n == 0) return "-";
  char buf[96];
  if (std::isfinite(s.sd))
    std::snprintf(buf, sizeof buf, "%.*f +- %.*f", precision, s.mean, precision, s.sd);
  else
    std::snprintf(buf, sizeof buf, "%.*f", precision, s.mean);
  return buf;
}

int ablate(const AblateOptions& o) {
  if (o.configs.size() == 1 && o.vary.empty() && o.repeats < 2)
    throw UsageError("--vary: nothing to compare: give --vary key=a,b, several configs or --repeats N");
  if (o.repeat_seeds && o.repeats < 2) throw UsageError("--repeat-seeds: needs --repeats N with N >= 2");
  std::vector<Axis> axes;
  for (const auto& v : o.vary) axes.push_back(parse_axis(v));
  std::vector<std::vector<std::string>> product(1);
  for (const Axis& a : axes) {
    std::vector<std::vector<std::string>> next;
    for (const auto& partial : product)
      for (const auto& value : a.values) {
        auto v = partial;
        v.push_back(a.key + "=" + value);
        next.push_back(v);
      }
    product = next;
  }
  std::vector<std::string> base = o.sets;
  if (o.steps > 0) base.push_back("train.steps=" + std::to_string(o.steps));
  std::vector<Variant> variants;
  for (const std::string& config : o.configs) {
    const std::string file_strategy = load_config(config).strategy.name;
    for (const auto& v : product) {
      auto sets = base;
      sets.insert(sets.end(), v.begin(), v.end());
      const std::vector<std::string> keep = applicable(sets, file_strategy);
      Variant variant{config, o.configs.size() > 1 ? std::filesystem::path(config).stem().string() : "", {}};
      for (const auto& s : v)
        if (std::find(keep.begin(), keep.end(), s) != keep.end()) {
          variant.sets.push_back(s);
          variant.label += (variant.label.empty() ? "" : " ") + s;
        }
      // A lone config repeated without --vary: its file name is the variant.
      if (variant.label.empty()) variant.label = std::filesystem::path(config).stem().string();
      if (std::find(variants.begin(), variants.end(), variant) != variants.end()) continue;
      // Check every variant's config and launch bounds (launch_limits.h) before running any:
      // ConfigError / UsageError -> exit 2.
      const Config checked = load_config(config, keep);
      variant.seed = checked.run.seed;
      check_local_launch(checked, "ablate variant \"" + (variant.label.empty() ? config : variant.label) +
                                      "\" (run.ranks = " + std::to_string(checked.run.ranks) + ")");
      variants.push_back(std::move(variant));
    }
  }
  const std::string& first = o.configs.front();
  const Config cfg = load_config(first, applicable(base, load_config(first).strategy.name));
  const std::string experiment = o.experiment.empty() ? cfg.run.name + "-ablation" : o.experiment;
  const std::string db = o.db.empty() ? cfg.store.db : o.db;
  check_store_writable(db, o.db.empty() ? "store.db" : "--db");
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const int repeats = o.repeats;
  if (repeats > 1)
    std::printf("ablate: %zu variants x %d repeats (%s) -> experiment %s in %s\n", variants.size(), repeats,
                o.repeat_seeds ? "seed run.seed + repeat - 1" : "same seed", experiment.c_str(), db.c_str());
  else
    std::printf("ablate: %zu variants -> experiment %s in %s\n", variants.size(), experiment.c_str(), db.c_str());
  // Run name (and output folder under run.out_dir) of variant i's repeat r (0-based both).
  const auto run_name = [&](size_t i, int r) {
    std::string name = experiment + "." + std::to_string(i + 1);
    if (repeats > 1) name += "." + std::to_string(r + 1);
    return name;
  };

  std::vector<std::string> taken;  // variants' output directories holding checkpoints
  for (size_t i = 0; i < variants.size(); ++i)
    for (int r = 0; r < repeats; ++r) {
      const std::string dir = cfg.run.out_dir + "/" + run_name(i, r);
      if (!latest_checkpoint_name(dir).empty()) taken.push_back(dir);
    }
  if (!taken.empty() && !o.overwrite) {
    std::string list;
    for (const auto& d : taken) list += (list.empty() ? "" : ", ") + d;
    throw UsageError("ablate: " + list + (taken.size() == 1 ? " holds" : " hold") +
                     " checkpoints of an earlier run: pass --overwrite to replace them, or --experiment NAME "
                     "for a new experiment");
  }

  std::vector<std::string> run_ids;
  std::vector<std::vector<int64_t>> variant_runs(variants.size());
  int failures = 0;
  for (size_t i = 0; i < variants.size(); ++i)
    for (int r = 0; r < repeats; ++r) {
      const std::string& label = variants[i].label;
      const std::string name = run_name(i, r);
      if (repeats > 1)
        std::printf("\n=== variant %zu/%zu, repeat %d/%d: %s (run name %s)\n", i + 1, variants.size(), r + 1, repeats,
                    label.c_str(), name.c_str());
      else
        std::printf("\n=== variant %zu/%zu: %s (run name %s)\n", i + 1, variants.size(), label.c_str(), name.c_str());
      std::vector<std::string> args = {self, "run", variants[i].config, "--db", db, "--experiment", experiment,
                                       "--set", "run.name=" + name, "--set", "store.enabled=true"};
      auto sets = base;
      sets.insert(sets.end(), variants[i].sets.begin(), variants[i].sets.end());
      for (const auto& s : applicable(sets, load_config(variants[i].config).strategy.name))
        args.insert(args.end(), {"--set", s});
      // After the variant's own keys, so it wins over a run.seed in --set or --vary.
      if (o.repeat_seeds) args.insert(args.end(), {"--set", "run.seed=" + std::to_string(variants[i].seed + uint64_t(r))});
      if (o.overwrite) args.push_back("--overwrite");
      const int rc = run_child(args);
      if (rc != 0) {
        std::printf("variant %zu%s failed (exit %d)\n", i + 1,
                    repeats > 1 ? (" repeat " + std::to_string(r + 1)).c_str() : "", rc);
        ++failures;
      }
      // The newest run with this name in the experiment is this repeat's.
      RunStore store(db);
      int64_t newest = 0;
      for (const RunInfo& run : store.list_runs(experiment))
        if (run.name == name && run.id > newest) newest = run.id;
      if (newest > 0) {
        run_ids.push_back(std::to_string(newest));
        variant_runs[i].push_back(newest);
        store.set_tag(newest, "ablation.variant", label);
        store.set_tag(newest, "ablation.repeat", std::to_string(r + 1));
      }
    }
  if (run_ids.size() >= 1) {
    std::printf("\n=== %s: %zu runs (speedups against variant 1)\n", experiment.c_str(), run_ids.size());
    std::vector<std::string> args = {self, "runs", "compare", "--db", db};
    args.insert(args.end(), run_ids.begin(), run_ids.end());
    run_child(args);
  }
  if (repeats > 1 && !run_ids.empty()) {
    // Per variant over its repeats: mean +- sample standard deviation, speedup of the means
    // against variant 1 (the GUI's Ablation view draws the same numbers).
    const RunStore store(db, RunStore::Mode::read_only);
    std::vector<Spread> ms(variants.size()), tps(variants.size());
    for (size_t i = 0; i < variants.size(); ++i) {
      std::vector<double> m, t;
      for (int64_t id : variant_runs[i]) {
        const RunSummary s = summarize_run(store, store.find_run(std::to_string(id)));
        m.push_back(s.mean_step_ms);
        t.push_back(s.mean_tokens_per_s);
      }
      ms[i] = spread(m);
      tps[i] = spread(t);
    }
    std::printf("\n=== %s: mean +- standard deviation over %d repeats per variant\n", experiment.c_str(), repeats);
    std::printf("%-4s %-40s %3s %24s %24s %8s\n", "#", "variant", "n", "ms/step", "tokens/s", "speedup");
    for (size_t i = 0; i < variants.size(); ++i) {
      char speedup[32] = "-";
      if (ms[0].n > 0 && ms[i].n > 0 && ms[i].mean > 0) std::snprintf(speedup, sizeof speedup, "%.2fx", ms[0].mean / ms[i].mean);
      std::printf("%-4zu %-40s %3zu %24s %24s %8s\n", i + 1, variants[i].label.c_str(), ms[i].n,
                  format_spread(ms[i], 2).c_str(), format_spread(tps[i], 0).c_str(), speedup);
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

void add_ablate_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("ablate", "Run the cartesian product of config variants as one experiment");
  auto o = std::make_shared<AblateOptions>();
  cmd->add_option("config", o->configs, "TOML config file(s): each is a variant (times the --vary product)")->required();
  cmd->add_option("--vary", o->vary, "key=value1,value2,... (repeatable; the product is run)");
  cmd->add_option("--set", o->sets, "Override a key in every variant (repeatable)");
  cmd->add_option("--steps", o->steps, "Steps per variant (sets train.steps)")->transform(positive());
  cmd->add_option("--repeats", o->repeats, "Runs per variant, each a run of its own (default 1)")->transform(positive());
  cmd->add_flag("--repeat-seeds", o->repeat_seeds,
                "Repeat r uses run.seed + r - 1 (default: every repeat keeps the variant's seed)");
  cmd->add_option("--experiment", o->experiment, "Experiment name (default: <run.name>-ablation)");
  cmd->add_option("--db", o->db, "Run database (default: store.db of the config)");
  cmd->add_flag("--overwrite", o->overwrite, "Replace checkpoints an earlier run of this experiment left");
  cmd->callback([&action, o] { action = [o] { return ablate(*o); }; });
}

}  // namespace moebench::cli
