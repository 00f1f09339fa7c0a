// moebench bench <what>: speed measurements (never done in tests).
//   gemm       the machine's sgemm GFLOP/s through the same CBLAS the trainer uses
//   moe-layer  router + experts + combine, forward and backward
#include "bench.h"
#include "commands.h"

namespace moebench::cli {

void add_bench_command(CLI::App& app, Action& action) {
  auto* bench = app.add_subcommand("bench", "Benchmarks (speed is measured here, never in tests)");
  bench->require_subcommand(1);
  add_bench_gemm(*bench, action);
  add_bench_moe_layer(*bench, action);
  add_bench_recording(*bench, action);
  add_bench_comm(*bench, action);
  add_bench_overlap(*bench, action);
  add_bench_simulate(*bench, action);
  add_bench_predictor(*bench, action);
}

}  // namespace moebench::cli
