// moebench bench recording CONFIG [--steps N] [--reps N] [--set key=value]...
// The cost of recording a run in the store: trains the config with recording off and on
// (alternating, --reps times each, a fresh temporary database per recorded repetition) and
// reports the median ms/step of each and the overhead. Under mpirun every rank trains and
// ships its spans, traffic and routing to rank 0, which writes them, as in `moebench run`.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "bench.h"
#include "moebench/config/config_loader.h"
#include "moebench/dist/mpi_communicator.h"
#include "moebench/train/distributed.h"
#include "moebench/train/run_recorder.h"
#include "moebench/train/trainer.h"

namespace moebench::cli {
namespace {

struct RecordingOptions {
  std::string config;
  std::vector<std::string> sets;
  int steps = 50, reps = 2;
};

// Median ms per step of one training run, skipping the first 3 steps (warm-up).
double timed_run(const Config& cfg, Communicator* world, bool record, const std::string& dir) {
  Trainer trainer(cfg, dir, world);
  std::unique_ptr<RunRecorder> recorder;
  if (record) {
    trainer.set_recording(true, cfg.store.spans_every);
    if (trainer.is_main()) {
      recorder = std::make_unique<RunRecorder>(cfg, world ? world->size() : 1);
      recorder->on_setup(trainer.topology_description(),
                         trainer.distributed() ? &trainer.distributed()->topology() : nullptr);
    }
  }
  std::vector<double> ms;
  TrainCallbacks cb;
  cb.on_step = [&](const StepStats& s) {
    if (recorder) recorder->on_step(s);
    if (s.step >= 3) ms.push_back(s.ms);
  };
  trainer.run(-1, cb);
  if (recorder) recorder->finish(RunStatus::finished);
  std::sort(ms.begin(), ms.end());
  return ms.empty() ? 0.0 : ms[ms.size() / 2];
}

int bench_recording(const RecordingOptions& o) {
  std::vector<std::string> sets = o.sets;
  sets.push_back("train.steps=" + std::to_string(o.steps));
  sets.push_back("train.eval_every=0");
  Config cfg = load_config(o.config, sets);
  std::unique_ptr<MpiRuntime> mpi;
  std::unique_ptr<MpiCommunicator> world;
  if (MpiRuntime::under_mpi_launcher()) {
    mpi = std::make_unique<MpiRuntime>();
    world = MpiCommunicator::world();
  }
  Communicator* w = world && world->size() > 1 ? world.get() : nullptr;
  const bool main = !world || world->rank() == 0;
  const std::string tmp = std::filesystem::temp_directory_path() / ("moebench-bench-recording-" + std::to_string(getpid()));
  std::vector<double> off, on;
  for (int r = 0; r < o.reps; ++r) {
    off.push_back(timed_run(cfg, w, false, tmp + "/off"));
    cfg.store.db = tmp + "/runs-" + std::to_string(r) + ".db";
    on.push_back(timed_run(cfg, w, true, tmp + "/on"));
  }
  if (main) {
    std::sort(off.begin(), off.end());
    std::sort(on.begin(), on.end());
    const double a = off[off.size() / 2], b = on[on.size() / 2];
    std::printf("# recording cost: %s, %d steps x %d reps, spans every %d step(s), %d rank(s)\n",
                o.config.c_str(), o.steps, o.reps, cfg.store.spans_every, world ? world->size() : 1);
    std::printf("recording off  %8.3f ms/step (median)\nrecording on   %8.3f ms/step (median)\n"
                "overhead       %8.2f %%\n", a, b, 100.0 * (b - a) / a);
    std::filesystem::remove_all(tmp);
  }
  return 0;
}

}  // namespace

void add_bench_recording(CLI::App& bench, Action& action) {
  auto* cmd = bench.add_subcommand("recording", "Step time with run-store recording off vs on");
  auto o = std::make_shared<RecordingOptions>();
  cmd->add_option("config", o->config, "TOML config file")->required();
  cmd->add_option("--set", o->sets, "Override a key (repeatable)");
  cmd->add_option("--steps", o->steps, "Steps per run")->transform(whole_number(5, 1000000));
  cmd->add_option("--reps", o->reps, "Repetitions of each setting")->transform(positive());
  cmd->callback([&action, o] { action = [o] { return bench_recording(*o); }; });
}

}  // namespace moebench::cli
