// moebench run CONFIG [--set key=value]... [--steps N] [--ranks N] [--out DIR] [--resume PATH]
//                     [--overwrite] [--stop-at N] [--oversubscribe-ok]
// Trains the configured MoE-GPT and prints one progress line per step and a summary. With
// run.ranks > 1 outside an MPI launch it starts the ranks itself through mpirun
// (local_launch.h); under mpirun / srun every rank trains its share and rank 0 prints.
// Before anything trains, every problem the command can know of is found once: the config
// (for the launched rank count), the machine's bounds (launch_limits.h), the run store
// (store_writable.h), the storage.ssd_dir folders of every rank, the output directory
// (train/output_dir.h) and the resume point. A rank that fails later brings the
// whole job down (MPI_Abort) with its message, so nothing hangs.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <filesystem>

#include "commands.h"
#include "launch_limits.h"
#include "local_launch.h"
#include "measured_comm_curves.h"
#include "run_mfu.h"
#include "slurm_allocation.h"
#include "store_writable.h"
#include "stop_signals.h"
#include "stop_supervisor.h"
#include "moebench/config/config_loader.h"
#include "moebench/dist/task_assignment.h"
#include "moebench/config/usage_error.h"
#include "moebench/strategies/fastermoe_gate.h"
#include "moebench/train/device.h"
#include "moebench/dist/launch_report.h"
#include "moebench/dist/mpi_communicator.h"
#include "moebench/dist/peer_watch.h"
#include "moebench/dist/scheduler_env.h"
#include "moebench/store/run_store.h"
#include "moebench/strategies/registry.h"
#include "moebench/train/checkpoint.h"
#include "moebench/train/distributed.h"
#include "moebench/train/emulation.h"
#include "moebench/storage/expert_state_tier.h"
#include "moebench/train/output_dir.h"
#include "moebench/train/run_recorder.h"
#include "moebench/model/model_flops.h"
#include "moebench/train/trainer.h"

namespace moebench::cli {
namespace {

struct RunOptions {
  std::string config, out, resume, db, experiment;
  std::vector<std::string> sets;
  int steps = 0, stop_at = -1, ranks = 0;
  bool overwrite = false, oversubscribe_ok = false;
};

// A loss as printed: a NaN reads "nan" (printf writes "-nan" for a negative one), as in `runs`.
double shown(double v) { return std::isnan(v) ? std::fabs(v) : v; }

void print_step(const Config& cfg, const StepStats& s, bool distributed, const Emulation* emu) {
  const int width = (int)std::to_string(cfg.train.steps).size();
  std::printf("step %*ld/%d | loss %.4f | aux %.4f | lr %.2e | grad %.3f | %7.1f ms | %8.0f tok/s",
              width, s.step + 1, cfg.train.steps, shown(s.loss.ce), shown(s.loss.aux), s.lr, shown(s.grad_norm), s.ms,
              s.tokens_per_s);
  if (distributed)
    std::printf(" | comm %3.0f%% | sent intra %.2f MB inter %.2f MB", 100.0 * s.comm_ms / s.ms,
                s.bytes_intra / 1e6, s.bytes_inter / 1e6);
  if (s.sparse)
    std::printf(" | states hit %3.0f%% read %.2f MB stall %.1f ms", 100.0 * s.sparse->hit_rate(),
                s.sparse->bytes_read / 1e6, s.sparse->stall_s * 1e3);
  if (emu) std::printf(" | %s", emu->label().c_str());
  std::printf("\n");
  std::fflush(stdout);
}

// SIGINT / SIGTERM / SIGHUP: finish the current step (or evaluation batch) on every rank,
// checkpoint, mark the run KILLED; without a launcher a second request ends the run at once
// (stop_supervisor.h). SIGHUP is what a run started over `ssh -tt` (the GUI launcher) gets when the
// connection is closed or cancelled: it stops like Ctrl-C instead of dying unmarked.
// During a job shutdown mpirun stops reading the ranks' output: a rank blocked writing a
// progress line would never reach the stop, so the handler also makes stdout/stderr
// non-blocking (and is installed without SA_RESTART): unread lines are dropped instead.
std::atomic<bool> g_stop{false};
extern "C" void request_stop(int) {
  count_stop_signal();
  g_stop = true;
  for (int fd : {STDOUT_FILENO, STDERR_FILENO}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

void install_stop_handlers() {
  install_stop_handler(request_stop, 0);  // no SA_RESTART: a blocked write returns
  // When mpirun shuts a job down it closes the ranks' output pipes: a progress line must not
  // kill rank 0 (SIGPIPE) before it has marked the run.
  std::signal(SIGPIPE, SIG_IGN);
}

std::string out_dir_of(const RunOptions& o, const Config& cfg) {
  return o.out.empty() ? cfg.run.out_dir + "/" + cfg.run.name : o.out;
}

// A rank's failure, said once: into the local launcher's report folder, else printed.
void report_rank_failure(int rank, int world, int code, const std::string& message) {
  const std::string dir = launch_dir_from_env();
  if (!dir.empty()) {
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    write_rank_failure(dir, {rank, code, now, message});
    return;
  }
  if (world == 1) std::fprintf(stderr, "moebench: %s\n", message.c_str());
  else std::fprintf(stderr, "moebench: rank %d of %d failed: %s\n", rank, world, message.c_str());
  std::fflush(stderr);
}

// emu: the run's link emulator ([emulate]; world is already paced), else null. supervise: no
// launcher stops this process (one rank outside mpirun): it stops itself (stop_supervisor.h).
int train(const RunOptions& o, const Config& cfg, Communicator* world, const Emulation* emu, bool supervise) {
  install_stop_handlers();
  std::unique_ptr<StopSupervisor> supervisor;
  if (supervise) supervisor = std::make_unique<StopSupervisor>(cfg.run.stop_grace_s);
  const bool main = !world || world->rank() == 0;
  // Recorded before the ranks set up (their first messages may be paced slowly): a run stopped
  // or killed from now on is in the store, marked.
  std::unique_ptr<RunRecorder> recorder;
  if (cfg.store.enabled && main) {
    const char* uuid = std::getenv(kRunUuidEnv);  // named by the local launcher
    recorder = std::make_unique<RunRecorder>(cfg, world ? world->size() : 1, uuid ? uuid : "");
    if (supervisor) supervisor->set_run(cfg.store.db, recorder->run().uuid);
    if (emu)  // its times are measured under emulation (runs show: EMULATED)
      for (const auto& [key, value] : emu->tags()) recorder->store().set_tag(recorder->run().id, key, value);
    for (const auto& [key, value] : launch_tags())  // launcher, slurm_job_id, ... (scheduler_env.h)
      recorder->store().set_tag(recorder->run().id, key, value);
  }
  Trainer trainer(cfg, out_dir_of(o, cfg), world);
  const bool distributed = trainer.distributed() != nullptr;
  if (recorder) {
    recorder->on_setup(trainer.topology_description(), distributed ? &trainer.distributed()->topology() : nullptr);
    if (distributed) {  // the strategy each MoE block runs with (janus decides per block)
      const Topology& t = trainer.distributed()->topology();
      for (const auto& [block, name] : block_strategies(cfg, t.nodes(), t.devices_per_node()))
        recorder->store().set_tag(recorder->run().id, "strategy.block." + std::to_string(block), name);
    }
  }
  if (main) {
    const auto& m = cfg.model;
    std::printf("moebench run: %s | %d layers, hidden %d, heads %d, vocab %d, seq %d | MoE blocks %zu "
                "(top-%d, routing %s) | %zu parameters on rank 0 | data %s (%zu train / %zu val tokens)\n",
                cfg.run.name.c_str(), m.layers, m.hidden, m.heads, m.vocab_size, m.seq_len,
                cfg.moe.moe_layers.size(), cfg.moe.top_k, routing_text(cfg.moe.routing).c_str(), trainer.model().params().size(),
                choice_name(cfg.data.source).c_str(), trainer.corpus().train.size(), trainer.corpus().val.size());
    if (const Backend& be = trainer.model().backend(); be.device_memory())
      std::printf("device: %s | run.precision %s\n", be.name().c_str(), choice_name(cfg.run.precision).c_str());
    const ModelFlops flops = model_flops(cfg);
    std::printf("model FLOPs per token: %.4g GFLOP (6 x %.4g M active parameters + %.4g M attention; PaLM App. B)\n",
                flops.per_token() * 1e-9, flops.active_params * 1e-6, flops.attention * 1e-6);
    if (trainer.distributed())
      std::printf("distributed: %s | strategy %s | global batch %d\n", trainer.distributed()->describe().c_str(),
                  cfg.strategy.name.c_str(), cfg.train.batch_size);
    if (!trainer.task_assignment().empty()) {  // MoESys elastic training: the tasks on the DP ranks
      const std::vector<long> rows = rows_per_rank(cfg.data.tasks, trainer.task_assignment());
      std::string batches, ranks, load;
      for (size_t t = 0; t < cfg.data.tasks.size(); ++t) {
        if (t) batches += '/';
        batches += std::to_string(cfg.data.tasks[t]);
      }
      const std::vector<std::string> text = rank_tasks_text(trainer.task_assignment());
      for (size_t r = 0; r < text.size(); ++r) {
        if (r) ranks += " | ", load += ':';
        ranks += text[r];
        load += std::to_string(rows[r]);
      }
      std::printf("tasks %s sequences | data-parallel ranks' tasks %s (%s) | sequences per rank %s\n", batches.c_str(),
                  ranks.c_str(), cfg.data.rank_tasks.empty() ? "elastic proposal" : "data.rank_tasks", load.c_str());
    }
    if (emu) std::printf("%s\n", emu->describe().c_str());
    std::printf("uniform-guess loss ln(vocab) = %.4f\n", std::log((double)m.vocab_size));
    if (const std::string note = topo_gate_note(cfg); !note.empty()) std::printf("%s\n", note.c_str());
    if (const StrategyDescriptor& d = strategy_descriptor(cfg.strategy.name); trainer.distributed() && d.choice_note) {
      const Topology& t = trainer.distributed()->topology();
      std::printf("%s", d.choice_note(cfg, t.nodes(), t.devices_per_node()).c_str());
    }
  }
  if (!o.resume.empty()) {
    const long at = trainer.resume(o.resume);
    if (main) std::printf("resumed at step %ld from %s\n", at, o.resume.c_str());
  }
  if (cfg.store.enabled) {
    trainer.set_recording(true, cfg.store.spans_every);
    if (recorder)
      std::printf("recording run %s (%s) in %s, experiment %s\n", recorder->run().uuid.substr(0, 8).c_str(),
                  recorder->run().name.c_str(), cfg.store.db.c_str(), cfg.store.experiment.c_str());
  }
  if (main) std::fflush(stdout);  // the header shows before the first step ends (piped output too)
  trainer.set_stop_flag(&g_stop);
  TrainCallbacks cb;
  cb.on_step = [&](const StepStats& s) {
    if (!main) return;
    if (recorder) recorder->on_step(s);  // committed before it is shown
    print_step(cfg, s, distributed, emu);
  };
  cb.on_eval = [&](const EvalStats& e) {
    if (!main) return;
    std::printf("eval after step %ld | val loss %.4f\n", e.step, shown(e.loss));
    std::fflush(stdout);
    if (recorder) recorder->on_eval(e);
  };
  TrainSummary s;
  try {
    s = trainer.run(o.stop_at, cb);
  } catch (const NonFiniteLoss& e) {  // every rank at the same step: said once, by rank 0
    if (recorder) recorder->finish(RunStatus::failed, e.what());
    if (main) report_rank_failure(0, world ? world->size() : 1, 1, e.what());
    return 1;
  }
  if (recorder) recorder->finish(s.interrupted ? RunStatus::killed : RunStatus::finished);
  if (main && s.interrupted) {
    std::printf("stopped by signal after %ld steps: run marked KILLED, checkpoint %s\n", s.steps_done,
                s.last_checkpoint.c_str());
    return 130;
  }
  if (main) {
    const int ranks = world ? world->size() : 1;
    const std::string mfu =
        mfu_text(s.tokens_per_s * model_flops(cfg).per_token(),
                 mfu_references(cfg, ranks, distributed ? trainer.distributed()->ranks_on_host() : 1,
                                recorder ? recorder->peak_gflops() : std::nullopt));
    std::printf("done: %ld steps in %.1f s | %.0f tok/s%s | final train loss %.4f | val loss %.4f | "
                "checkpoint %s\n",
                s.steps_done, s.seconds, s.tokens_per_s, mfu.c_str(), shown(s.final_train_loss),
                shown(s.final_eval_loss), s.last_checkpoint.c_str());
  }
  return s.interrupted ? 130 : 0;
}

// The overrides of the command line, in order: --set, then the flags, then (under an MPI
// launcher) run.ranks = the launched world size, which every layout rule is checked against.
std::vector<std::string> overrides(const RunOptions& o, int world) {
  std::vector<std::string> sets = o.sets;
  if (o.steps > 0) sets.push_back("train.steps=" + std::to_string(o.steps));
  if (o.ranks > 0) sets.push_back("run.ranks=" + std::to_string(o.ranks));
  if (!o.db.empty()) sets.push_back("store.db=" + o.db);
  if (!o.experiment.empty()) sets.push_back("store.experiment=" + o.experiment);
  if (o.oversubscribe_ok) sets.push_back("run.oversubscribe_ok=true");
  if (world > 0) sets.push_back("run.ranks=" + std::to_string(world));
  return sets;
}

std::string canonical(const std::string& dir) {
  std::error_code ec;
  const auto p = std::filesystem::weakly_canonical(std::filesystem::absolute(dir), ec);
  return ec ? dir : p.string();
}

// The output directory's lock and mode (output_dir.h); the launcher holds it for its ranks.
FolderLock claim_out_dir(const RunOptions& o, const Config& cfg) {
  const OutputMode mode = o.overwrite ? OutputMode::overwrite
                                      : !o.resume.empty() ? OutputMode::resume : OutputMode::fresh;
  return claim_output_dir(out_dir_of(o, cfg), mode, o.resume);
}

// --resume must name a checkpoint with steps left to train (before --stop-at, when given).
void check_resume(const RunOptions& o, const Config& cfg) {
  if (o.resume.empty()) return;
  const std::string dir = resolve_checkpoint_dir(o.resume);
  const long step = checkpoint_step(dir);
  if (step >= cfg.train.steps)
    throw UsageError("--resume " + o.resume + ": the checkpoint " + dir + " is at step " + std::to_string(step) +
                     " and train.steps is " + std::to_string(cfg.train.steps) +
                     ": nothing left to train (raise train.steps or --steps)");
  if (o.stop_at >= 0 && o.stop_at <= step)
    throw UsageError("--stop-at " + std::to_string(o.stop_at) + ": the checkpoint " + dir + " is at step " +
                     std::to_string(step) + " already: stop at a later step");
}

// Under the user's own mpirun / srun no launcher settles a failed run, and the job's abort kills
// rank 0 before it can: every rank learns the run's uuid from rank 0 (before rank 0 records the
// run under it), and a rank that fails marks the run FAILED with its message: itself on rank 0's
// host, through rank 0 from another host (run_rank).
std::string agree_run_uuid(Communicator& world) {
  char buf[64] = {0};
  if (world.rank() == 0) std::snprintf(buf, sizeof buf, "%s", new_run_uuid().c_str());
  world.broadcast(buf, sizeof buf, DType::u8, 0);
  setenv(kRunUuidEnv, buf, 1);  // train() records the run under it
  return buf;
}

void mark_run_failed(const std::string& db, const std::string& uuid, const std::string& reason) {
  if (uuid.empty()) return;
  try {
    RunStore store(db);
    const RunInfo run = store.find_run(uuid);
    bool said = false;
    for (const auto& [key, value] : store.tags(run.id)) said = said || key == "failure";
    if (run.status == RunStatus::running || (run.status == RunStatus::failed && !said))
      store.set_tag(run.id, "failure", reason);
    if (run.status == RunStatus::running)
      store.set_status(run.id, RunStatus::failed,
                       std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  } catch (const std::exception&) {  // not recorded yet, or the store is unreachable: the message stands
  }
}

// Under mpirun / srun (ours or the user's): every rank loads the config for the launched world
// size and checks what it can before training; the ranks agree on the outcome, so a problem
// is reported once (by the lowest failing rank) and every rank exits with its code.
int run_rank(const RunOptions& o) {
  MpiRuntime mpi;
  std::unique_ptr<MpiCommunicator> world = MpiCommunicator::world();
  const int size = world->size(), me = world->rank();
  Config cfg;
  FolderLock lock;
  int code = 0;
  std::string message;
  try {
    cfg = load_config(o.config, overrides(o, size));
    const char* held = std::getenv(kOutLockedEnv);  // the local launcher holds the lock
    if (me == 0 && !(held && canonical(out_dir_of(o, cfg)) == held)) lock = claim_out_dir(o, cfg);
    if (me == 0 && cfg.store.enabled) check_store_writable(cfg.store.db, o.db.empty() ? "store.db" : "--db");
    check_resume(o, cfg);
    check_run_device(cfg);
  } catch (const ConfigError& e) {
    code = 2;
    message = std::string("config error:\n") + e.what();
  } catch (const UsageError& e) {
    code = 2;
    message = e.what();
  } catch (const std::exception& e) {
    code = 1;
    message = e.what();
  }
  int first = code ? me : INT_MAX, worst = code;
  world->all_reduce(&first, 1, DType::i32, ReduceOp::min);
  world->all_reduce(&worst, 1, DType::i32, ReduceOp::max);
  if (first != INT_MAX) {
    if (me == first) report_rank_failure(me, size, code, message);
    return worst;
  }
  std::unique_ptr<Communicator> paced;  // [emulate]: world paced over the cluster's links
  const std::string run_uuid =
      cfg.store.enabled && size > 1 && launch_dir_from_env().empty() ? agree_run_uuid(*world) : "";
  // Ranks on several hosts: a rank or host lost is said once, here, and the run marked FAILED
  // before the job is aborted (dist/peer_watch.h); during a stop the stop path decides (KILLED).
  // Only ranks on rank 0's host write the store (SQLite's WAL is not safe across hosts): a rank
  // elsewhere hands its failure to rank 0's watch, which marks the run.
  std::unique_ptr<PeerWatch> watch;
  const auto on_lost = [&](const std::string& what, bool on_rank0_host) {
    if (stop_requests() > 0) return;
    if (!launch_dir_from_env().empty()) {
      report_rank_failure(me, size, 1, what);
    } else {
      std::fprintf(stderr, "moebench: rank %d of %d: %s\n", me, size, what.c_str());
      std::fflush(stderr);
    }
    if (on_rank0_host) mark_run_failed(cfg.store.db, run_uuid, "rank " + std::to_string(me) + ": " + what);
    MpiRuntime::abort_job(1);
  };
  const auto on_peer_failure = [&](int, const std::string& reason) {  // "rank 2: ..." (record_failure)
    mark_run_failed(cfg.store.db, run_uuid, reason);
  };
  watch = watch_peers_across_hosts(*world, on_lost, on_peer_failure);
  // This rank's own failure (said by report_rank_failure): marked directly on rank 0's host or
  // with one host, else through rank 0; its end is then no lost rank to the watch.
  const auto record_failure = [&](const std::string& what) {
    const std::string reason = "rank " + std::to_string(me) + ": " + what;
    if (watch && me != 0 && watch->report_failure(reason)) return;
    if (watch) watch->leave();
    if (!watch || watch->on_rank0_host()) mark_run_failed(cfg.store.db, run_uuid, reason);
  };
  try {
    use_measured_comm_curves(cfg, *world);
    std::unique_ptr<Emulation> emu;
    if (!cfg.emulate.cluster.empty()) {
      emu = std::make_unique<Emulation>(resolve_emulation(cfg, world.get()));
      if (me == 0 && size > 1 && !emu->warning().empty()) {
        std::fprintf(stderr, "moebench: %s\n", emu->warning().c_str());
        std::fflush(stderr);
      }
      if (size > 1) paced = emulated_world(*emu, *world);
    }
    return train(o, cfg, size > 1 ? (paced ? paced.get() : world.get()) : nullptr, emu.get(), false);
  } catch (const UsageError& e) {  // found while setting up (e.g. no one-sided windows): every rank
    report_rank_failure(me, size, 2, e.what());
    record_failure(e.what());
    MpiRuntime::abort_job(2);
  } catch (const std::exception& e) {
    report_rank_failure(me, size, 1, e.what());
    record_failure(e.what());
    MpiRuntime::abort_job(1);
  }
}

int run_training(const RunOptions& o) {
  if (MpiRuntime::under_mpi_launcher()) {
    if (const int code = refuse_srun_without_mpi_plugin(o.config)) return code;
    return run_rank(o);
  }
  const Config cfg = load_config(o.config, overrides(o, 0));
  const std::string ranks_given_as = moebench::cli::ranks_given_as(cfg.run.ranks, o.ranks > 0);
  check_not_in_allocation_without_srun(cfg.run.ranks, ranks_given_as, o.config);
  check_local_launch(cfg, ranks_given_as);
  check_run_device(cfg);
  // A store that cannot be written, or a damaged or foreign one, is said once, here, and left
  // untouched (a new one is created by rank 0 as usual).
  if (cfg.store.enabled) {
    check_store_writable(cfg.store.db, o.db.empty() ? "store.db" : "--db");
    if (std::filesystem::exists(cfg.store.db)) RunStore(cfg.store.db);
  }
  // Another run's expert states: found here, once, not by every rank after the launch. The
  // locks are let go at once; each rank takes its own folder's again.
  if (cfg.storage.sparse == SparseStorage::ssd)
    for (int rank = 0; rank < cfg.run.ranks; ++rank) claim_expert_state_dir(cfg.storage, rank);
  const FolderLock lock = claim_out_dir(o, cfg);
  check_resume(o, cfg);
  if (cfg.run.ranks == 1) {  // one rank sends nothing: emulation only labels the run
    const std::unique_ptr<Emulation> emu =
        cfg.emulate.cluster.empty() ? nullptr : std::make_unique<Emulation>(resolve_emulation(cfg, nullptr));
    return train(o, cfg, nullptr, emu.get(), true);
  }
  LocalLaunch launch;
  launch.ranks = cfg.run.ranks;
  launch.ranks_given_as = ranks_given_as;
  launch.oversubscribe_ok = cfg.run.oversubscribe_ok;
  launch.oversubscribe_hint = kRunOversubscribeHint;
  launch.stop_grace_s = cfg.run.stop_grace_s;
  launch.out_dir = canonical(out_dir_of(o, cfg));
  if (cfg.store.enabled) {
    launch.db = cfg.store.db;
    launch.run_uuid = new_run_uuid();
  }
  return launch_local_ranks(launch);
}

}  // namespace

void add_run_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("run", "Train a model from a TOML config");
  auto o = std::make_shared<RunOptions>();
  cmd->add_option("config", o->config, "TOML config file")->required();
  cmd->add_option("--set", o->sets, "Override a key, e.g. --set train.lr=1e-3 (repeatable)");
  cmd->add_option("--steps", o->steps, "Train this many steps (sets train.steps)")->transform(positive());
  cmd->add_option("--ranks", o->ranks, "Local ranks to start through mpirun (sets run.ranks)")->transform(positive());
  cmd->add_option("--out", o->out, "Output directory (default: <run.out_dir>/<run.name>)");
  cmd->add_option("--db", o->db, "Run database (sets store.db; default runs.db)");
  cmd->add_option("--experiment", o->experiment, "Experiment name (sets store.experiment)");
  cmd->add_option("--resume", o->resume, "Continue from a checkpoint directory or a run directory");
  cmd->add_flag("--overwrite", o->overwrite,
                "Replace the checkpoints an earlier run left in the output directory (with --resume: a checkpoint "
                "of another folder)");
  cmd->add_flag("--oversubscribe-ok", o->oversubscribe_ok,
                "Start local ranks beyond 8 per core or beyond the available memory (sets run.oversubscribe_ok)");
  cmd->add_option("--stop-at", o->stop_at,
                  "Stop after this step (>= 1); the LR schedule still spans train.steps (for interrupting)")
      ->transform(positive());
  cmd->callback([&action, o] { action = [o] { return run_training(*o); }; });
}

}  // namespace moebench::cli
