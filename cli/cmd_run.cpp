// moebench run CONFIG [--set key=value]... [--steps N] [--out DIR] [--resume PATH] [--stop-at N]
// Trains the configured MoE-GPT and prints one progress line per step and a summary.
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "moebench/config/config_loader.h"
#include "moebench/train/trainer.h"

namespace moebench::cli {
namespace {

struct RunOptions {
  std::string config, out, resume;
  std::vector<std::string> sets;
  int steps = 0, stop_at = -1;
};

int run_training(const RunOptions& o) {
  std::vector<std::string> sets = o.sets;
  if (o.steps > 0) sets.push_back("train.steps=" + std::to_string(o.steps));
  const Config cfg = load_config(o.config, sets);
  const std::string out_dir = o.out.empty() ? cfg.run.out_dir + "/" + cfg.run.name : o.out;
  std::filesystem::create_directories(out_dir);

  Trainer trainer(cfg, out_dir);
  const auto& m = cfg.model;
  std::printf("moebench run: %s | %d layers, hidden %d, heads %d, vocab %d, seq %d | MoE blocks %zu "
              "(top-%d) | %zu parameters | data %s (%zu train / %zu val tokens)\n",
              cfg.run.name.c_str(), m.layers, m.hidden, m.heads, m.vocab_size, m.seq_len,
              cfg.moe.moe_layers.size(), cfg.moe.top_k, trainer.model().params().size(),
              cfg.data.source.c_str(), trainer.corpus().train.size(), trainer.corpus().val.size());
  std::printf("uniform-guess loss ln(vocab) = %.4f\n", std::log((double)m.vocab_size));
  if (!o.resume.empty()) std::printf("resumed at step %ld from %s\n", trainer.resume(o.resume), o.resume.c_str());

  TrainCallbacks cb;
  const int width = (int)std::to_string(cfg.train.steps).size();
  cb.on_step = [&](const StepStats& s) {
    std::printf("step %*ld/%d | loss %.4f | aux %.4f | lr %.2e | grad %.3f | %7.1f ms | %8.0f tok/s\n",
                width, s.step + 1, cfg.train.steps, s.loss.ce, s.loss.aux, s.lr, s.grad_norm, s.ms,
                s.tokens_per_s);
    std::fflush(stdout);
  };
  cb.on_eval = [&](const EvalStats& e) {
    std::printf("eval after step %ld | val loss %.4f\n", e.step, e.loss);
    std::fflush(stdout);
  };
  const TrainSummary s = trainer.run(o.stop_at, cb);
  std::printf("done: %ld steps in %.1f s | %.0f tok/s | final train loss %.4f | val loss %.4f | "
              "checkpoint %s\n",
              s.steps_done, s.seconds, s.tokens_per_s, s.final_train_loss, s.final_eval_loss,
              s.last_checkpoint.c_str());
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("run", "Train a model from a TOML config");
  auto o = std::make_shared<RunOptions>();
  cmd->add_option("config", o->config, "TOML config file")->required();
  cmd->add_option("--set", o->sets, "Override a key, e.g. --set train.lr=1e-3 (repeatable)");
  cmd->add_option("--steps", o->steps, "Train this many steps (sets train.steps)")->check(positive());
  cmd->add_option("--out", o->out, "Output directory (default: <run.out_dir>/<run.name>)");
  cmd->add_option("--resume", o->resume, "Continue from a checkpoint directory or a run directory");
  cmd->add_option("--stop-at", o->stop_at,
                  "Stop after this step; the LR schedule still spans train.steps (for interrupting)")
      ->check(non_negative());
  cmd->callback([&action, o] { action = [o] { return run_training(*o); }; });
}

}  // namespace moebench::cli
