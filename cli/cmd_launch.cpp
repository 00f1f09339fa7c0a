// moebench launch HOST CONFIG: a run on another machine over ssh, its run store brought back into
// the local one. The steps (remote_launch.h has each command):
//   1. the config and every file it names are staged in a local temporary folder (bundle_config:
//      the config's path keys rewritten to the copies' names, relative to the run folder);
//   2. ssh HOST mkdir -p DIR/moebench-runs/<id>; scp the staged files there;
//   3. ssh -tt HOST 'cd DIR && PREFIX moebench run moebench-runs/<id>/<config> --db
//      moebench-runs/<id>/runs.db --out moebench-runs/<id>/out ...', its output streamed here,
//      Ctrl-C / SIGTERM / SIGHUP forwarded as Ctrl-C through the remote terminal (the run stops
//      after its step and is marked KILLED);
//   4. scp the run folder's store back to a temporary file and import it into the local store
//      (RunStore::import_runs), printing where the run now is.
// Exit codes: the remote run's (0, 1, 2, 130), and 3 when a step of the launch itself failed
// (ssh or scp: the connection, the run folder, the upload, the fetch, a remote moebench that is
// not there), the message naming the step and the host. The local store changes only by the
// import, in one transaction; the run folder stays on the host.
#include <sys/stat.h>
#include <csignal>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "commands.h"
#include "remote_launch.h"
#include "remote_process.h"
#include "runs_import.h"
#include "stop_signals.h"
#include "store_writable.h"
#include "moebench/config/config_files.h"
#include "moebench/config/usage_error.h"
#include "moebench/remote/remote_shell.h"
#include "moebench/store/run_store.h"

namespace moebench::cli {
namespace {

namespace fs = std::filesystem;
using remote::display_command;

// A step of the launch itself failed (ssh, scp): documented in docs/cli.md.
constexpr int kLaunchStepFailed = 3;
constexpr double kStopGraceS = 15;

struct LaunchOptions {
  std::string host, config, dir, prefix, remote_moebench = "moebench", db = "runs.db", out, experiment;
  std::vector<std::string> ssh_options, sets;
  int steps = 0, ranks = 0;
  bool overwrite = false;
};

void note(const std::string& line) { std::fprintf(stderr, "moebench launch: %s\n", line.c_str()); }

int step_failed(const std::string& line) {
  note(line);
  return kLaunchStepFailed;
}

// A private folder that removes itself.
struct TempFolder {
  std::string path;
  TempFolder() {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/moebench-remote-XXXXXX";
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a folder in " + tmpl + ": " + std::strerror(errno));
    path = tmpl;
  }
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string read_config(const std::string& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (!fs::exists(st)) throw UsageError("launch: config file " + path + ": not found");
  if (!fs::is_regular_file(st)) throw UsageError("launch: config file " + path + ": not a file");
  std::ifstream f(path, std::ios::binary);
  std::stringstream text;
  text << f.rdbuf();
  if (!f) throw UsageError("launch: config file " + path + ": cannot be read");
  return text.str();
}

// Before anything starts: a local store the import could not write is refused here, not after
// the run (a damaged or foreign file: StoreError, exit 1; a folder that is missing or read-only:
// UsageError, exit 2).
void check_local_store(const std::string& db) {
  check_store_writable(db, "the local store (--db)");
  if (fs::exists(db)) RunStore check(db, RunStore::Mode::read_only);
}

// What the stop signals did to a step that had not started the run.
int stopped_before_run() {
  note("stopped before the run started; nothing ran");
  return 130;
}

int launch(const LaunchOptions& o) {
  // Everything that can be known here is checked before the first connection.
  RemoteLaunch l;
  l.host = o.host;
  l.ssh_options = o.ssh_options;
  l.remote_dir = o.dir;
  l.prefix = o.prefix;
  l.remote_moebench = o.remote_moebench;
  l.run_id = remote::new_run_id();
  try {
    remote::check_ssh_host(o.host);
    for (const std::string& opt : o.ssh_options) remote::check_ssh_option(opt);
    remote::split_launcher_prefix(o.prefix);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("launch: ") + e.what());
  }
  if (o.remote_moebench.empty()) throw UsageError("launch: --remote-moebench is empty");
  const std::string text = read_config(o.config);
  ConfigBundle bundle;
  try {
    bundle = bundle_config(text, fs::absolute(o.config).lexically_normal().string(), o.sets, fs::current_path().string());
  } catch (const ConfigBundleError& e) {
    throw UsageError("launch: cannot upload the config " + o.config + ": " + e.what());
  } catch (const std::invalid_argument& e) {
    throw UsageError("launch: config file " + o.config + ": " + e.what());
  }
  check_local_store(o.db);
  l.config_name = bundle.config_name;
  l.directories = bundle.directories;
  l.run_options = {"--out", o.out.empty() ? run_folder(l) + "/out" : o.out};
  for (const std::string& s : bundle.overrides) l.run_options.insert(l.run_options.end(), {"--set", s});
  if (o.steps > 0) l.run_options.insert(l.run_options.end(), {"--steps", std::to_string(o.steps)});
  if (o.ranks > 0) l.run_options.insert(l.run_options.end(), {"--ranks", std::to_string(o.ranks)});
  if (!o.experiment.empty()) l.run_options.insert(l.run_options.end(), {"--experiment", o.experiment});
  if (o.overwrite) l.run_options.push_back("--overwrite");
  const std::vector<std::string> run = run_command(l);  // (checks the words once more)

  // 1. Stage: the rewritten config and a link per file, under their names in the run folder.
  TempFolder stage;
  std::vector<std::string> staged{stage.path + "/" + bundle.config_name};
  {
    std::ofstream f(staged[0], std::ios::binary);
    f << bundle.config_text;
    if (!f.flush()) throw std::runtime_error("cannot write the config to upload to " + staged[0]);
  }
  std::string names = bundle.config_name;
  for (const ConfigBundleFile& file : bundle.files) {
    staged.push_back(stage.path + "/" + file.name);
    if (symlink(file.source.c_str(), staged.back().c_str()) != 0)
      throw std::runtime_error("cannot stage " + file.source + " in " + stage.path + ": " + std::strerror(errno));
    std::string keys;
    for (const std::string& k : file.keys) keys += (keys.empty() ? "" : ", ") + k;
    names += ", " + file.name + " (" + keys + ")";
  }

  install_stop_counter(0);  // from here a stop request is forwarded, never missed
  std::signal(SIGPIPE, SIG_IGN);

  // 2. The run folder and the upload.
  const std::string where = o.host + ":" + remote_run_path(l);
  const std::vector<std::string> mkdir = mkdir_command(l);
  note("creating the run folder " + where + ": " + display_command(mkdir));
  std::fflush(stdout);
  StepEnd e = run_step(mkdir, 1);
  if (e.stopped) return stopped_before_run();
  if (!e.exec_error.empty()) return step_failed("cannot start ssh (" + e.exec_error + "): install openssh-client");
  if (e.code != 0)
    return step_failed("could not create the run folder " + where + " (" +
                       (e.code == 255 ? std::string("ssh exit 255: the connection to " + o.host + " failed")
                                      : "remote exit " + std::to_string(e.code)) +
                       "); nothing ran");
  const std::vector<std::string> upload = upload_command(l, staged);
  note("uploading " + names + ": " + display_command(upload));
  e = run_step(upload, 1);
  if (e.stopped) return stopped_before_run();
  if (!e.exec_error.empty()) return step_failed("cannot start scp (" + e.exec_error + "): install openssh-client");
  if (e.code != 0)
    return step_failed("uploading the config to " + where + " failed (scp exit " + std::to_string(e.code) + "); nothing ran");

  // 3. The run.
  note("running in " + (o.dir.empty() ? std::string("the login directory") : o.dir) + " on " + o.host + ": " +
       display_command(run));
  const std::vector<std::string> prefix_words = remote::split_launcher_prefix(o.prefix);
  const bool srun = !prefix_words.empty() && fs::path(prefix_words.front()).filename() == "srun";
  const RunEnd r = run_streaming(run, srun, kStopGraceS);
  if (!r.exec_error.empty()) return step_failed("cannot start ssh (" + r.exec_error + "): install openssh-client");
  if (r.code == 127 || r.code == 126) {
    const std::string program = prefix_words.empty() ? "'" + o.remote_moebench + "'"
                                                     : "'" + prefix_words.front() + "' or '" + o.remote_moebench + "'";
    return step_failed(program + " " + (r.code == 127 ? "not found" : "is not executable") + " on " + o.host +
                       " (remote exit " + std::to_string(r.code) + "); give its path with --remote-moebench" +
                       (prefix_words.empty() ? "" : " (or in --prefix)"));
  }
  if (r.code == 255 && !r.output_seen) return step_failed("ssh to " + o.host + " failed (exit 255); nothing ran");
  const bool lost = r.code == 255;
  if (lost) note("the ssh connection to " + o.host + " was lost (exit 255): the remote run stops on the hang-up; fetching its store");

  // 4. Fetch the run folder's store and import it.
  TempFolder fetched;
  const std::string copy = fetched.path + "/runs.db";
  const std::vector<std::string> fetch = fetch_command(l, copy);
  note("fetching the run store: " + display_command(fetch));
  // Only a stop request made during the fetch ends it: the one that stopped the run (even a
  // second one, which ends the run at once) still brings the KILLED run back.
  e = run_step(fetch, stop_requests() + 1);
  const std::string remote_store = o.host + ":" + remote_store_path(l);
  if (r.code == 2 && (e.code != 0 || !e.exec_error.empty())) {  // refused before rank 0 recorded anything
    note("the run refused its config or options on " + o.host + " (exit 2, above); nothing was recorded");
    return 2;
  }
  if (e.stopped || e.code != 0 || !e.exec_error.empty())
    return step_failed("fetching the run store " + remote_store + " failed (" +
                       (e.stopped ? std::string("stopped") : !e.exec_error.empty() ? e.exec_error : "scp exit " + std::to_string(e.code)) +
                       "); " + o.db + " is unchanged, the store stays on the host (scp it and `moebench runs import` it)");
  std::vector<ImportedRun> runs;
  try {
    runs = import_store(o.db, copy);
  } catch (const StoreError& err) {
    return step_failed("importing the run store fetched from " + remote_store + " failed: " + err.what() + "; " + o.db +
                       " is unchanged");
  }
  std::fflush(stdout);
  for (const ImportedRun& run_in : runs) std::printf("%s\n", describe_import(run_in, o.db).c_str());
  note("the run folder stays on the host: " + where);
  if (lost) return kLaunchStepFailed;
  if (r.stop_requested && r.code != 0) return 130;
  return r.code;
}

}  // namespace

void add_launch_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<LaunchOptions>();
  auto* cmd = app.add_subcommand("launch", "Run a config on another machine over ssh; its run comes back into the local store");
  cmd->add_option("host", o->host, "ssh destination, e.g. user@login1")->required();
  cmd->add_option("config", o->config, "TOML config file (here; it is uploaded with the files it names)")->required();
  cmd->add_option("--dir", o->dir, "Remote directory the run starts in (default: the login directory); runs go to DIR/moebench-runs/<id>/");
  cmd->add_option("--prefix", o->prefix, "Launcher words before moebench on the host, e.g. \"srun -n 4\" or \"mpirun -np 4\"");
  cmd->add_option("--remote-moebench", o->remote_moebench, "moebench on the host (default: moebench in its PATH)");
  cmd->add_option("--ssh-option", o->ssh_options, "One ssh -o option Key=Value for ssh and scp (repeatable), e.g. ProxyJump=gw");
  cmd->add_option("--set", o->sets, "Override a key, e.g. --set train.lr=1e-3 (repeatable; path keys are uploaded)");
  cmd->add_option("--steps", o->steps, "Train this many steps (sets train.steps)")->transform(positive());
  cmd->add_option("--ranks", o->ranks, "Ranks the remote moebench starts through mpirun (run --ranks)")->transform(positive());
  cmd->add_option("--experiment", o->experiment, "Experiment name (sets store.experiment)");
  cmd->add_option("--out", o->out, "Output directory on the host, relative to --dir (default: moebench-runs/<id>/out)");
  cmd->add_flag("--overwrite", o->overwrite, "Replace the checkpoints an earlier run left in --out");
  cmd->add_option("--db", o->db, "Local run store the run is imported into (default: runs.db; created when missing)");
  cmd->callback([&action, o] { action = [o] { return launch(*o); }; });
}

}  // namespace moebench::cli
