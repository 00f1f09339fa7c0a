// moebench run CONFIG [--set key=value]... [--steps N] [--ranks N] [--out DIR] [--resume PATH]
//                     [--stop-at N]
// Trains the configured MoE-GPT and prints one progress line per step and a summary. With
// run.ranks > 1 outside an MPI launch it starts the ranks itself through mpirun; under
// mpirun / srun every rank trains its share and rank 0 prints. A rank that fails prints its
// message and brings the whole job down (MPI_Abort), so nothing hangs.
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "commands.h"
#include "moebench/config/config_loader.h"
#include "moebench/dist/mpi_communicator.h"
#include "moebench/strategies/janus.h"
#include "moebench/train/distributed.h"
#include "moebench/train/run_recorder.h"
#include "moebench/train/trainer.h"

namespace moebench::cli {
namespace {

struct RunOptions {
  std::string config, out, resume, db, experiment;
  std::vector<std::string> sets;
  int steps = 0, stop_at = -1, ranks = 0;
};

// The rank processes of a local launch: the children of the mpirun process.
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) out.push_back((pid_t)std::stoi(name));
  }
  return out;
}

std::atomic<int> g_forward{0};  // stop signals received by the launching process
extern "C" void note_signal(int) { g_forward.fetch_add(1); }

// Installs `handler` for SIGINT, SIGTERM and SIGHUP, except where the signal was ignored when
// we started (`nohup` ignores SIGHUP, a shell's background job SIGINT): that stays ignored.
void install_signal_handler(void (*handler)(int), int flags) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = flags;
    sigaction(sig, &sa, nullptr);
  }
}

// Runs this command under `mpirun -np ranks` and waits for it. mpirun gets its own process
// group, so Ctrl-C (or a terminal hang-up) reaches only this process, which forwards SIGTERM
// to the ranks: each finishes its step, checkpoints and marks the run KILLED (mpirun on its
// own would stop reading the ranks' output and leave them blocked until it kills them).
// Ranks that appear after the stop (mpirun still starting) get it too; a second stop signal
// kills mpirun's process group at once. If this process dies (SIGKILL), mpirun is sent
// SIGTERM by the kernel (PR_SET_PDEATHSIG) instead of running on orphaned.
int launch_local_ranks(int ranks) {
  std::vector<std::string> args = {"mpirun", "-np", std::to_string(ranks), "--bind-to", "none"};
  if ((unsigned)ranks > std::thread::hardware_concurrency()) args.push_back("--oversubscribe");
  if (geteuid() == 0) {  // OpenMPI refuses root unless told; its ranks check these too
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  }
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  args.push_back(ec ? program_args().at(0) : self);
  const auto& own = program_args();
  args.insert(args.end(), own.begin() + 1, own.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  // Before the fork: a signal between fork and the handlers would otherwise be missed.
  install_signal_handler(note_signal, 0);
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (child == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);  // the launcher died before prctl
    execvp("mpirun", argv.data());
    std::fprintf(stderr, "moebench: cannot start mpirun for %d ranks (%s): install openmpi-bin "
                 "(scripts/install-deps.sh) or launch with mpirun/srun yourself\n", ranks, std::strerror(errno));
    _exit(1);
  }
  std::set<pid_t> stopped;  // ranks sent SIGTERM
  bool killed = false;
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(child, &status, WNOHANG);
    if (r == child) break;
    if (r < 0 && errno != EINTR) throw std::runtime_error("waitpid on mpirun failed");
    const int signals = g_forward.load();
    if (signals >= 1) {
      if (stopped.empty()) std::fprintf(stderr, "moebench: stopping the %d ranks after their current step\n", ranks);
      for (pid_t rank : children_of(child))
        if (stopped.insert(rank).second) kill(rank, SIGTERM);
      if (stopped.empty()) stopped.insert(0);  // none started yet: message printed once
    }
    if (signals >= 2 && !killed) {
      killed = true;
      std::fprintf(stderr, "moebench: second stop signal: killing the ranks now\n");
      kill(-child, SIGKILL);
    }
    usleep(signals ? 20000 : 100000);
  }
  if (g_forward.load() > 0) return 130;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void print_step(const Config& cfg, const StepStats& s, bool distributed) {
  const int width = (int)std::to_string(cfg.train.steps).size();
  std::printf("step %*ld/%d | loss %.4f | aux %.4f | lr %.2e | grad %.3f | %7.1f ms | %8.0f tok/s",
              width, s.step + 1, cfg.train.steps, s.loss.ce, s.loss.aux, s.lr, s.grad_norm, s.ms, s.tokens_per_s);
  if (distributed)
    std::printf(" | comm %3.0f%% | sent intra %.2f MB inter %.2f MB", 100.0 * s.comm_ms / s.ms,
                s.bytes_intra / 1e6, s.bytes_inter / 1e6);
  std::printf("\n");
  std::fflush(stdout);
}

// SIGINT / SIGTERM / SIGHUP: finish the current step on every rank, checkpoint, mark the run
// KILLED. SIGHUP is what a run started over `ssh -tt` (the GUI launcher) gets when the
// connection is closed or cancelled: it stops like Ctrl-C instead of dying unmarked.
// During a job shutdown mpirun stops reading the ranks' output: a rank blocked writing a
// progress line would never reach the stop, so the handler also makes stdout/stderr
// non-blocking (and is installed without SA_RESTART): unread lines are dropped instead.
std::atomic<bool> g_stop{false};
extern "C" void request_stop(int) {
  g_stop = true;
  for (int fd : {STDOUT_FILENO, STDERR_FILENO}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

void install_stop_handlers() {
  install_signal_handler(request_stop, 0);  // no SA_RESTART: a blocked write returns
  // When mpirun shuts a job down it closes the ranks' output pipes: a progress line must not
  // kill rank 0 (SIGPIPE) before it has marked the run.
  std::signal(SIGPIPE, SIG_IGN);
}

int train(const RunOptions& o, const Config& cfg, Communicator* world) {
  install_stop_handlers();
  const std::string out_dir = o.out.empty() ? cfg.run.out_dir + "/" + cfg.run.name : o.out;
  if (!world || world->rank() == 0) std::filesystem::create_directories(out_dir);
  Trainer trainer(cfg, out_dir, world);
  const bool main = trainer.is_main();
  if (main) {
    const auto& m = cfg.model;
    std::printf("moebench run: %s | %d layers, hidden %d, heads %d, vocab %d, seq %d | MoE blocks %zu "
                "(top-%d, routing %s) | %zu parameters on rank 0 | data %s (%zu train / %zu val tokens)\n",
                cfg.run.name.c_str(), m.layers, m.hidden, m.heads, m.vocab_size, m.seq_len,
                cfg.moe.moe_layers.size(), cfg.moe.top_k, cfg.moe.routing.c_str(), trainer.model().params().size(),
                cfg.data.source.c_str(), trainer.corpus().train.size(), trainer.corpus().val.size());
    if (trainer.distributed())
      std::printf("distributed: %s | strategy %s | global batch %d\n", trainer.distributed()->describe().c_str(),
                  cfg.strategy.name.c_str(), cfg.train.batch_size);
    std::printf("uniform-guess loss ln(vocab) = %.4f\n", std::log((double)m.vocab_size));
    if (trainer.distributed() && cfg.strategy.name == "janus") {
      const Topology& t = trainer.distributed()->topology();
      std::printf("%s", janus_decision_table(cfg, t.nodes(), t.devices_per_node()).c_str());
    }
  }
  if (!o.resume.empty()) {
    const long at = trainer.resume(o.resume);
    if (main) std::printf("resumed at step %ld from %s\n", at, o.resume.c_str());
  }
  const bool distributed = trainer.distributed() != nullptr;
  std::unique_ptr<RunRecorder> recorder;
  if (cfg.store.enabled) {
    trainer.set_recording(true, cfg.store.spans_every);
    if (main) {
      recorder = std::make_unique<RunRecorder>(cfg, trainer.topology_description(),
                                               distributed ? &trainer.distributed()->topology() : nullptr,
                                               world ? world->size() : 1);
      if (distributed) {  // the strategy each MoE block runs with (janus decides per block)
        const Topology& t = trainer.distributed()->topology();
        for (const auto& [block, name] : block_strategies(cfg, t.nodes(), t.devices_per_node()))
          recorder->store().set_tag(recorder->run().id, "strategy.block." + std::to_string(block), name);
      }
      std::printf("recording run %s (%s) in %s, experiment %s\n", recorder->run().uuid.substr(0, 8).c_str(),
                  recorder->run().name.c_str(), cfg.store.db.c_str(), cfg.store.experiment.c_str());
    }
  }
  trainer.set_stop_flag(&g_stop);
  TrainCallbacks cb;
  cb.on_step = [&](const StepStats& s) {
    if (!main) return;
    if (recorder) recorder->on_step(s);  // committed before it is shown
    print_step(cfg, s, distributed);
  };
  cb.on_eval = [&](const EvalStats& e) {
    if (!main) return;
    std::printf("eval after step %ld | val loss %.4f\n", e.step, e.loss);
    std::fflush(stdout);
    if (recorder) recorder->on_eval(e);
  };
  const TrainSummary s = trainer.run(o.stop_at, cb);
  if (recorder) recorder->finish(s.interrupted ? RunStatus::killed : RunStatus::finished);
  if (main && s.interrupted) {
    std::printf("stopped by signal after %ld steps: run marked KILLED, checkpoint %s\n", s.steps_done,
                s.last_checkpoint.c_str());
    return 130;
  }
  if (main)
    std::printf("done: %ld steps in %.1f s | %.0f tok/s | final train loss %.4f | val loss %.4f | "
                "checkpoint %s\n",
                s.steps_done, s.seconds, s.tokens_per_s, s.final_train_loss, s.final_eval_loss,
                s.last_checkpoint.c_str());
  return s.interrupted ? 130 : 0;
}

int run_training(const RunOptions& o) {
  std::vector<std::string> sets = o.sets;
  if (o.steps > 0) sets.push_back("train.steps=" + std::to_string(o.steps));
  if (o.ranks > 0) sets.push_back("run.ranks=" + std::to_string(o.ranks));
  if (!o.db.empty()) sets.push_back("store.db=" + o.db);
  if (!o.experiment.empty()) sets.push_back("store.experiment=" + o.experiment);
  const Config cfg = load_config(o.config, sets);
  const bool launched = MpiRuntime::under_mpi_launcher();
  if (!launched && cfg.run.ranks > 1) return launch_local_ranks(cfg.run.ranks);
  if (!launched) return train(o, cfg, nullptr);

  MpiRuntime mpi;
  std::unique_ptr<MpiCommunicator> world = MpiCommunicator::world();
  try {
    return train(o, cfg, world->size() > 1 ? world.get() : nullptr);
  } catch (const std::exception& e) {
    if (world->size() == 1) throw;
    std::fprintf(stderr, "moebench: rank %d of %d failed: %s\n", world->rank(), world->size(), e.what());
    std::fflush(stderr);
    MpiRuntime::abort_job(1);
  }
}

}  // namespace

void add_run_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("run", "Train a model from a TOML config");
  auto o = std::make_shared<RunOptions>();
  cmd->add_option("config", o->config, "TOML config file")->required();
  cmd->add_option("--set", o->sets, "Override a key, e.g. --set train.lr=1e-3 (repeatable)");
  cmd->add_option("--steps", o->steps, "Train this many steps (sets train.steps)")->check(positive());
  cmd->add_option("--ranks", o->ranks, "Local ranks to start through mpirun (sets run.ranks)")->check(positive());
  cmd->add_option("--out", o->out, "Output directory (default: <run.out_dir>/<run.name>)");
  cmd->add_option("--db", o->db, "Run database (sets store.db; default runs.db)");
  cmd->add_option("--experiment", o->experiment, "Experiment name (sets store.experiment)");
  cmd->add_option("--resume", o->resume, "Continue from a checkpoint directory or a run directory");
  cmd->add_option("--stop-at", o->stop_at,
                  "Stop after this step; the LR schedule still spans train.steps (for interrupting)")
      ->check(non_negative());
  cmd->callback([&action, o] { action = [o] { return run_training(*o); }; });
}

}  // namespace moebench::cli
