// The commands of a remote launch (remote_launch.h).
#include "remote_launch.h"

#include <stdexcept>

#include "moebench/remote/remote_shell.h"

namespace moebench::cli {

using remote::quote_remote_path;
using remote::shell_quote;

namespace {
std::vector<std::string> ssh_base(const RemoteLaunch& l, std::vector<std::string> argv) {
  remote::check_ssh_host(l.host);
  argv.insert(argv.end(), {"-o", "BatchMode=yes"});
  for (const std::string& o : l.ssh_options) {
    remote::check_ssh_option(o);
    argv.insert(argv.end(), {"-o", o});
  }
  return argv;
}
}  // namespace

std::string run_folder(const RemoteLaunch& l) { return std::string(remote::kRunsFolder) + "/" + l.run_id; }

std::string remote_run_path(const RemoteLaunch& l) { return remote::join_remote_path(l.remote_dir, run_folder(l)); }

std::string remote_store_path(const RemoteLaunch& l) { return remote_run_path(l) + "/runs.db"; }

std::vector<std::string> mkdir_command(const RemoteLaunch& l) {
  std::vector<std::string> argv = ssh_base(l, {"ssh"});
  std::string cmd = "mkdir -p -- " + quote_remote_path(remote_run_path(l));
  for (const std::string& d : l.directories) cmd += " " + quote_remote_path(remote_run_path(l) + "/" + d);
  argv.insert(argv.end(), {l.host, "--", cmd});
  return argv;
}

std::vector<std::string> upload_command(const RemoteLaunch& l, const std::vector<std::string>& staged_files) {
  std::vector<std::string> argv = ssh_base(l, {"scp", "-O"});
  argv.insert(argv.end(), staged_files.begin(), staged_files.end());
  argv.push_back(l.host + ":" + quote_remote_path(remote_run_path(l)));
  return argv;
}

std::vector<std::string> remote_run_arguments(const RemoteLaunch& l) {
  std::vector<std::string> a{"run", run_folder(l) + "/" + l.config_name, "--db", run_folder(l) + "/runs.db"};
  a.insert(a.end(), l.run_options.begin(), l.run_options.end());
  return a;
}

std::vector<std::string> run_command(const RemoteLaunch& l) {
  std::vector<std::string> argv = ssh_base(l, {"ssh", "-tt"});
  argv.insert(argv.end(),
              {l.host, "--", remote::remote_shell_command(l.remote_dir, l.prefix, l.remote_moebench, remote_run_arguments(l))});
  return argv;
}

std::vector<std::string> fetch_command(const RemoteLaunch& l, const std::string& local_file) {
  std::vector<std::string> argv = ssh_base(l, {"scp", "-O", "-T"});
  argv.insert(argv.end(), {l.host + ":" + quote_remote_path(remote_store_path(l)), local_file});
  return argv;
}

}  // namespace moebench::cli
