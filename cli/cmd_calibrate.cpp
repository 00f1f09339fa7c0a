// moebench calibrate [--ranks N] [--threads T] [--out FILE] [--force] [--db PATH] [--quick]
//                    [--oversubscribe-ok]
// Measures this machine (perf/calibration.h: sgemm rate by shape, copy bandwidth, the
// communicator's per-message latency and per-rank bandwidth) with N ranks at once and writes it
// as a cluster file (default clusters/local.toml) for `simulate --cluster`, `plan --cluster` and
// the link emulator. Outside a launcher it starts its ranks through mpirun itself, as `run`
// does, and then fits this host's own costs on two reference runs (cli/calibrate_reference.h:
// comm_overhead_us, task factors); under mpirun / srun it measures the launched world only.
//   --threads T  BLAS threads per rank; 0 = the cores shared among the ranks, as `run` does
//   --force      replace an existing output file (otherwise: exit 2, nothing written)
//   --oversubscribe-ok  more ranks than 8 per core (local_launch.h checks the bounds)
//   --db PATH    also store the best sgemm rate as a `bench gemm` record (runs started on this
//                host then carry it as peak_gflops)
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "calibrate_reference.h"
#include "commands.h"
#include "output_file.h"
#include "local_launch.h"
#include "thread_option.h"
#include "moebench/config/usage_error.h"
#include "moebench/dist/launch_report.h"
#include "moebench/dist/mpi_communicator.h"
#include "moebench/perf/calibration.h"
#include "moebench/store/gemm_rate_record.h"

namespace moebench::cli {
namespace {

namespace fs = std::filesystem;

struct CalibrateArgs {
  int ranks = 4, threads = 0;
  std::string out = "clusters/local.toml", db;
  bool force = false, quick = false, oversubscribe_ok = false;
};

void check_output(const CalibrateArgs& a) { check_output_file("calibrate --out", a.out, a.force); }

std::string command_line(const CalibrateArgs& a, int ranks) {
  std::string c = "moebench calibrate --ranks " + std::to_string(ranks);
  if (a.threads) c += " --threads " + std::to_string(a.threads);
  if (a.quick) c += " --quick";
  return c;
}

// Written beside the target and renamed over it, so a failed write leaves no half file.
void write_file(const std::string& path, const std::string& text) {
  const fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f.flush()) throw std::runtime_error("calibrate: cannot write " + tmp);
  }
  fs::rename(tmp, p);
}

int calibrate_ranks(const CalibrateArgs& a) {
  MpiRuntime mpi;
  std::unique_ptr<MpiCommunicator> world = MpiCommunicator::world();
  const int me = world->rank(), size = world->size();
  int bad = 0;
  if (me == 0) {
    if (size < 2) {
      std::fprintf(stderr, "moebench: calibrate measures messages between ranks: launch at least 2 (got %d)\n", size);
      bad = 2;
    } else {
      try {
        check_output(a);
      } catch (const UsageError& e) {
        std::fprintf(stderr, "moebench: %s\n", e.what());
        bad = 2;
      }
    }
  }
  if (size > 1) world->broadcast(&bad, 1, DType::i32, 0);
  if (bad) return bad;
  CalibrationOptions opt;
  opt.threads = a.threads > 0 ? a.threads : std::max(1, (int)std::thread::hardware_concurrency() / size);
  opt.quick = a.quick;
  const Calibration c = measure_calibration(*world, opt);
  if (me != 0) return 0;
  write_file(a.out, calibrated_cluster_file(c, command_line(a, size)));
  const ClusterSpec s = calibrated_cluster(c);
  std::printf("calibrate: %d ranks x %d thread(s) on %s (measured)\n", size, opt.threads, c.host.c_str());
  std::printf("  sgemm       %.2f GFLOP/s per rank (best shape); efficiency %.2f at %.1e FLOP .. %.2f at %.1e FLOP\n",
              s.device_flops / 1e9, s.efficiency.front().efficiency, s.efficiency.front().flops,
              s.efficiency.back().efficiency, s.efficiency.back().flops);
  std::printf("  copy        %.2f GB/s per rank\n", c.copy_bandwidth / 1e9);
  std::printf("  messages    %.2f us latency, %.2f GB/s out of each rank (all-to-all)\n", c.latency * 1e6,
              c.bandwidth / 1e9);
  std::printf("wrote %s\n", a.out.c_str());
  if (MpiRuntime::under_mpi_launcher() && std::getenv(kLaunchDirEnv) == nullptr)
    std::printf("(no reference runs under your launcher: run `moebench calibrate` outside mpirun to fit task costs)\n");
  if (!a.db.empty()) {
    std::vector<std::pair<std::string, double>> shapes;
    for (const GemmSample& g : c.gemm)
      shapes.emplace_back(std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k), g.rate() / 1e9);
    RunStore store(a.db);
    const RunInfo run = record_gemm_rate(store, s.device_flops / 1e9, opt.threads, shapes);
    std::printf("stored the sgemm rate as run %s in %s (runs on %s record it as peak_gflops)\n",
                run.uuid.substr(0, 8).c_str(), a.db.c_str(), run.host.c_str());
  }
  return 0;
}

int calibrate_main(const CalibrateArgs& a) {
  if (MpiRuntime::under_mpi_launcher()) return calibrate_ranks(a);
  if (a.ranks < 2) throw UsageError("calibrate --ranks " + std::to_string(a.ranks) +
                                    ": messages are measured between ranks, at least 2 are needed");
  check_output(a);
  if (!a.db.empty() && fs::exists(a.db)) RunStore(a.db);  // a damaged store is said here, once
  LocalLaunch launch;
  launch.ranks = a.ranks;
  launch.oversubscribe_ok = a.oversubscribe_ok;
  launch.oversubscribe_hint = "pass --oversubscribe-ok to start them anyway";
  const int rc = launch_local_ranks(launch);
  if (rc == 0) fit_reference_runs(a.out, a.ranks, a.quick);
  return rc;
}

}  // namespace

void add_calibrate_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("calibrate", "Measure this machine into a cluster file (clusters/local.toml)");
  auto a = std::make_shared<CalibrateArgs>();
  cmd->add_option("--ranks", a->ranks, "Ranks measured at once (started through mpirun; default 4)")
      ->transform(positive());
  cmd->add_option("--threads", a->threads, "BLAS threads per rank (0 = the cores shared among the ranks)")
      ->transform(non_negative())->check(thread_count());
  cmd->add_option("--out", a->out, "Cluster file to write (default clusters/local.toml)");
  cmd->add_flag("--force", a->force, "Replace the output file if it exists");
  cmd->add_option("--db", a->db, "Also store the sgemm rate in this run database (as bench gemm does)");
  cmd->add_flag("--quick", a->quick, "Fewer, smaller measurements (seconds; for tests)");
  cmd->add_flag("--oversubscribe-ok", a->oversubscribe_ok, "Start more than 8 ranks per core");
  cmd->callback([&action, a] { action = [a] { return calibrate_main(*a); }; });
}

}  // namespace moebench::cli
