#pragma once
// The commands of `moebench launch HOST CONFIG` (cmd_launch.cpp), each an argv run without a
// local shell; the one string each hands the remote shell is quoted by moebench/remote/remote_shell.h.
//
//   1. mkdir:  ssh -o BatchMode=yes [-o OPT]... HOST -- mkdir -p -- 'DIR/moebench-runs/<id>' [its folders]
//   2. upload: scp -O -o BatchMode=yes [-o OPT]... <staged config and files> HOST:'DIR/moebench-runs/<id>'
//   3. run:    ssh -tt -o BatchMode=yes [-o OPT]... HOST -- cd 'DIR' && [PREFIX] 'moebench' 'run'
//                'moebench-runs/<id>/<config>' '--db' 'moebench-runs/<id>/runs.db' '--out' ... [run options]
//   4. fetch:  scp -O -T -o BatchMode=yes [-o OPT]... HOST:'DIR/moebench-runs/<id>/runs.db' <local temp file>
//
// -O: scp's legacy protocol, where the remote path is read by the remote shell, so the quoting
// is exact. -T (fetch): no check that the name the server sends matches the requested one (it
// compares against the quoted string and fails on it, OpenSSH 9.2); the copy goes to the one
// file named. -tt (run): a remote terminal, so the run stops on a hang-up (a dropped connection)
// and a Ctrl-C byte written to ssh's stdin reaches it as SIGINT. DIR empty: the login directory.
#include <string>
#include <vector>

namespace moebench::cli {

struct RemoteLaunch {
  std::string host;                      // ssh destination, "user@login1"
  std::vector<std::string> ssh_options;  // "Key=Value", each passed as -o
  std::string remote_dir;                // where the run starts; "" the login directory
  std::string prefix;                    // launcher prefix, "srun -n 4", "mpirun -np 4"
  std::string remote_moebench = "moebench";
  std::string run_id;                    // remote::new_run_id()
  std::string config_name;               // the config's name in the run folder
  std::vector<std::string> directories;  // empty folders to create in the run folder
  std::vector<std::string> run_options;  // after CONFIG and --db: --out, --set k=v, --steps N, ...
};

// "moebench-runs/<id>", relative to remote_dir.
std::string run_folder(const RemoteLaunch& l);
// The run folder as the remote shell sees it: DIR/moebench-runs/<id> (unquoted).
std::string remote_run_path(const RemoteLaunch& l);
// The run's store on the host: <run folder>/runs.db (as the remote shell sees it, unquoted).
std::string remote_store_path(const RemoteLaunch& l);

// The argv of each step (argv[0] "ssh" or "scp", found in PATH). Throw std::invalid_argument for
// a bad host, ssh option or launcher prefix.
std::vector<std::string> mkdir_command(const RemoteLaunch& l);
std::vector<std::string> upload_command(const RemoteLaunch& l, const std::vector<std::string>& staged_files);
std::vector<std::string> run_command(const RemoteLaunch& l);
std::vector<std::string> fetch_command(const RemoteLaunch& l, const std::string& local_file);

// The words after the remote moebench: run <folder>/<config> --db <folder>/runs.db <run_options>.
std::vector<std::string> remote_run_arguments(const RemoteLaunch& l);

}  // namespace moebench::cli
