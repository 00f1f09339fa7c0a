// moebench bench comm: collective bandwidth in the style of nccl-tests, through the same
// Communicator the trainer uses.
//   moebench bench comm --ranks 4 --op alltoall -b 8 -e 64M -f 2 [-n 20 -w 5 -c 1] [--json]
//        [--db FILE]
// Outside a launcher it starts --ranks ranks (default 4) through mpirun itself, as `moebench run`
// does (bench_ranks.h); under mpirun / srun it measures the launched world. --db (alltoall and
// allgather only) stores the busbw curve for MoNTA's cost model (store/comm_rate_record.h); the
// table also ends with the curve written as cluster keys (*_busbw_bytes / *_busbw_gbs).
//
// Semantics follow nccl-tests (doc/PERFORMANCE.md there):
//   size   bytes of the largest buffer a rank touches: allreduce / broadcast the buffer,
//          allgather the whole receive buffer, reducescatter and alltoall the whole send
//          buffer; sizes are rounded down to a multiple of ranks x 4 bytes where the op
//          splits the buffer between ranks. count = size / 4 (elements, type float).
//   time   mean over ranks of the per-iteration time (us), after -w untimed iterations.
//   algbw  size / time (GB/s = 1e9 B/s);  busbw = algbw x factor, factor = 2(n-1)/n for
//          allreduce, (n-1)/n for allgather / reducescatter / alltoall, 1 for broadcast.
//   #wrong elements that differ from the exact expected result, summed over ranks (-c 1);
//          inputs are small rank/index dependent integers, so every float sum is exact.
// allreduce and broadcast are in place in the Communicator interface, so their columns are
// headed "in-place"; the others are out-of-place. Exit code 1 when any #wrong > 0.
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>

#include "bench.h"
#include "bench_ranks.h"
#include "launch_limits.h"
#include "moebench/config/usage_error.h"
#include "moebench/dist/local_communicator.h"
#include "moebench/dist/mpi_communicator.h"
#include "moebench/store/comm_rate_record.h"
#include "number_text.h"

namespace moebench::cli {
namespace {

enum class Op { allreduce, allgather, reducescatter, alltoall, broadcast };

struct CommBenchOptions {
  std::string op = "allreduce";
  std::string min_bytes = "32M", max_bytes = "32M", step_bytes = "1M";
  int factor = 1, iters = 20, warmup = 5, check = 1;
  std::string backend = "mpi";
  int ranks = 4;             // started through mpirun outside a launcher
  bool ranks_given = false;
  std::string db;  // store the curve (alltoall / allgather) in this run database
  bool json = false;
};

// Bounds (docs/limits.md "Sizes, memory and time"): a size at most 1 TiB (beyond any one
// machine's memory; the memory check below refuses far less), at most kMaxCommSizes sizes in
// one sweep (nccl-tests' -b 8 -e 8G -f 2 is 31; -f 1 with a small -i could ask for billions).
constexpr size_t kMaxCommBytes = size_t(1) << 40;
constexpr size_t kMaxCommSizes = 1000;

// nccl-tests' size syntax: an integer with an optional K, M or G suffix (powers of 1024), at
// most kMaxCommBytes.
std::optional<size_t> parse_size(const std::string& s) {
  if (s.empty()) return std::nullopt;
  size_t digits = 0;
  while (digits < s.size() && std::isdigit((unsigned char)s[digits])) ++digits;
  if (digits == 0 || digits + 1 < s.size()) return std::nullopt;
  size_t mult = 1;
  if (digits < s.size()) {
    switch (std::toupper((unsigned char)s[digits])) {
      case 'K': mult = size_t(1) << 10; break;
      case 'M': mult = size_t(1) << 20; break;
      case 'G': mult = size_t(1) << 30; break;
      default: return std::nullopt;
    }
  }
  try {
    const unsigned long long n = std::stoull(s.substr(0, digits));
    if (n > kMaxCommBytes / mult) return std::nullopt;  // also keeps n x mult within 64 bits
    return n * mult;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

CLI::Validator byte_size() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        return parse_size(s) ? std::string()
                             : "'" + s + "' is not a byte count of at most 1024G (e.g. 8, 512K, 64M, 1G)";
      },
      "BYTES[K|M|G]");
}

// The sizes of the sweep -b .. -e (times -f, or plus -i when -f is 1), at most `limit` + 1 of
// them (enough to tell a sweep that is too long).
std::vector<size_t> sweep_sizes(size_t min_b, size_t max_b, size_t step, int factor, size_t limit) {
  std::vector<size_t> sizes;
  for (size_t size = min_b; size <= max_b && sizes.size() <= limit;) {
    sizes.push_back(size);
    if (size == 0) break;  // -b 0 with -f > 1 would never grow
    const size_t next = factor > 1 ? (size > max_b / (size_t)factor ? max_b + 1 : size * (size_t)factor) : size + step;
    if (next <= size) break;  // past 64 bits
    size = next;
  }
  return sizes;
}

// Local ranks of this host under a launcher (1 without one): each holds its own buffers.
int local_ranks() {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char* v = std::getenv(var)) return std::max(1, std::atoi(v));
  return 1;
}

// The sweep's length, and the largest size's buffers on each rank (send and receive: up to twice
// the size) against what each rank may use: the memory available now shared by this host's
// ranks, and the process's address-space limit. Exit 2 before any buffer is allocated
// (docs/limits.md "Sizes, memory and time").
void check_comm_budget(const CommBenchOptions& o) {
  const size_t min_b = *parse_size(o.min_bytes), max_b = *parse_size(o.max_bytes);
  const std::vector<size_t> sizes = sweep_sizes(min_b, max_b, *parse_size(o.step_bytes), o.factor, kMaxCommSizes);
  if (sizes.size() > kMaxCommSizes)
    throw UsageError("bench comm: -b " + o.min_bytes + " -e " + o.max_bytes +
                     (o.factor > 1 ? " -f " + std::to_string(o.factor) : " -i " + o.step_bytes) + " asks for more than " +
                     std::to_string(kMaxCommSizes) + " sizes; raise -f (e.g. -f 2) or -i");
  const int ranks = o.backend == "local" ? 1 : local_ranks();
  const bool in_place = o.op == "allreduce" || o.op == "broadcast";
  const double need = (in_place ? 1.0 : 2.0) * (double)max_b;  // per rank
  const uint64_t avail = available_memory_bytes(), mine = process_memory_left_bytes();
  const double left = std::min(avail > 0 ? (double)avail / ranks : INFINITY, mine > 0 ? (double)mine : INFINITY);
  if (need > left)
    throw UsageError("bench comm: --op " + o.op + " at -e " + o.max_bytes + " needs about " + bytes_text(need) +
                     (in_place ? " for its buffer" : " for its send and receive buffers") + " on each rank, and " +
                     bytes_text(left) + " is available" +
                     (ranks > 1 ? " to each of the " + std::to_string(ranks) + " ranks on this host" : "") +
                     "; lower -e");
}

Op op_of(const std::string& s) {
  if (s == "allreduce") return Op::allreduce;
  if (s == "allgather") return Op::allgather;
  if (s == "reducescatter") return Op::reducescatter;
  if (s == "alltoall") return Op::alltoall;
  return Op::broadcast;
}

// Value of element i of rank r's input: a small integer, so sums over ranks are exact.
float input_value(int r, size_t i) { return float((r * 7 + (i % 1021) * 3) % 17 + 1); }

struct Row {
  size_t size, count;
  const char* redop;
  int root;
  double time_us, algbw, busbw;
  long wrong;  // -1 = not checked
};

// One collective over buffers sized for `count` total elements (see the header comment).
class CollBench {
 public:
  CollBench(Communicator& comm, Op op, size_t count) : c_(comm), op_(op), n_(comm.size()), count_(count) {
    per_rank_ = count / n_;
    switch (op_) {
      case Op::allreduce:
      case Op::broadcast: send_.resize(count); break;
      case Op::allgather: send_.resize(per_rank_), recv_.resize(per_rank_ * n_); break;
      case Op::reducescatter: send_.resize(per_rank_ * n_), recv_.resize(per_rank_); break;
      case Op::alltoall:
        send_.resize(per_rank_ * n_), recv_.resize(per_rank_ * n_);
        counts_.assign(n_, per_rank_);
        for (int p = 0; p < n_; ++p) displs_.push_back(per_rank_ * p);
        break;
    }
    fill();
  }

  void run() {
    switch (op_) {
      case Op::allreduce: c_.all_reduce(send_.data(), send_.size(), DType::f32); break;
      case Op::broadcast: c_.broadcast(send_.data(), send_.size(), DType::f32, 0); break;
      case Op::allgather: c_.all_gather(send_.data(), recv_.data(), per_rank_, DType::f32); break;
      case Op::reducescatter: c_.reduce_scatter(send_.data(), recv_.data(), per_rank_, DType::f32); break;
      case Op::alltoall:
        c_.all_to_all_v(send_.data(), counts_.data(), displs_.data(), recv_.data(), counts_.data(), displs_.data(),
                        DType::f32);
        break;
    }
  }

  // Fresh inputs, one operation, and the number of elements of this rank that are wrong.
  long check() {
    fill();
    std::fill(recv_.begin(), recv_.end(), -1.0f);
    run();
    const int me = c_.rank();
    long wrong = 0;
    auto sum_over_ranks = [&](size_t i) {
      long s = 0;
      for (int r = 0; r < n_; ++r) s += (long)input_value(r, i);
      return (float)s;
    };
    switch (op_) {
      case Op::allreduce:
        for (size_t i = 0; i < send_.size(); ++i) wrong += send_[i] != sum_over_ranks(i);
        break;
      case Op::broadcast:
        for (size_t i = 0; i < send_.size(); ++i) wrong += send_[i] != input_value(0, i);
        break;
      case Op::allgather:
        for (int r = 0; r < n_; ++r)
          for (size_t i = 0; i < per_rank_; ++i) wrong += recv_[r * per_rank_ + i] != input_value(r, i);
        break;
      case Op::reducescatter:
        for (size_t i = 0; i < per_rank_; ++i) wrong += recv_[i] != sum_over_ranks(me * per_rank_ + i);
        break;
      case Op::alltoall:
        for (int r = 0; r < n_; ++r)
          for (size_t i = 0; i < per_rank_; ++i) wrong += recv_[r * per_rank_ + i] != input_value(r, me * per_rank_ + i);
        break;
    }
    return wrong;
  }

 private:
  void fill() {
    const int me = c_.rank();
    // broadcast: only the root holds the data; the others start from a value never expected.
    for (size_t i = 0; i < send_.size(); ++i)
      send_[i] = (op_ == Op::broadcast && me != 0) ? -1.0f : input_value(me, i);
  }

  Communicator& c_;
  Op op_;
  int n_;
  size_t count_, per_rank_;
  std::vector<float> send_, recv_;
  std::vector<size_t> counts_, displs_;
};

double bus_factor(Op op, int n) {
  switch (op) {
    case Op::allreduce: return 2.0 * (n - 1) / n;
    case Op::broadcast: return 1.0;
    default: return double(n - 1) / n;
  }
}

Row measure(Communicator& comm, Op op, size_t size, const CommBenchOptions& o) {
  const int n = comm.size();
  const bool split = op != Op::allreduce && op != Op::broadcast;
  const size_t count = split ? size / 4 / n * n : size / 4;
  Row row{count * 4, count, (op == Op::allreduce || op == Op::reducescatter) ? "sum" : "none",
          op == Op::broadcast ? 0 : -1, 0, 0, 0, -1};
  CollBench b(comm, op, count);
  for (int i = 0; i < o.warmup; ++i) b.run();
  comm.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < o.iters; ++i) b.run();
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / o.iters;
  comm.all_reduce(&sec, 1, DType::f64);
  sec /= n;  // mean over ranks, as nccl-tests' default (-a 1)
  row.time_us = sec * 1e6;
  row.algbw = sec > 0 ? row.size / sec / 1e9 : 0.0;
  row.busbw = row.algbw * bus_factor(op, n);
  if (o.check) {
    int64_t wrong = b.check();
    comm.all_reduce(&wrong, 1, DType::i64);
    row.wrong = (long)wrong;
  }
  return row;
}

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// "#  Rank  0 Pid  12345 on host" for every rank (nccl-tests' device list, without devices).
std::vector<std::string> rank_lines(Communicator& comm) {
  constexpr size_t kLen = 128;
  char mine[kLen] = {};
  std::snprintf(mine, kLen, "#  Rank %2d Pid %6d on %s", comm.rank(), (int)getpid(), host_name().c_str());
  std::vector<char> all(kLen * comm.size());
  comm.all_gather(mine, all.data(), kLen, DType::u8);
  std::vector<std::string> out;
  for (int r = 0; r < comm.size(); ++r) out.emplace_back(all.data() + r * kLen);
  return out;
}

std::string format_time(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, us >= 10000 ? "%7.0f" : us >= 100 ? "%7.1f" : "%7.2f", us);
  return buf;
}

int run_bench(Communicator& comm, const CommBenchOptions& o) {
  const Op op = op_of(o.op);
  const size_t min_b = *parse_size(o.min_bytes), max_b = *parse_size(o.max_bytes), step = *parse_size(o.step_bytes);
  const bool root = comm.rank() == 0;
  const auto ranks = rank_lines(comm);
  if (root && !o.json) {
    std::printf("# moebench bench comm: %s, backend %s, %d rank%s\n", o.op.c_str(), comm.backend().c_str(), comm.size(),
                comm.size() == 1 ? "" : "s");
    if (o.factor > 1)
      std::printf("# minBytes %zu maxBytes %zu step: %d(factor) warmup iters: %d iters: %d validation: %d\n", min_b,
                  max_b, o.factor, o.warmup, o.iters, o.check);
    else
      std::printf("# minBytes %zu maxBytes %zu step: %zu(bytes) warmup iters: %d iters: %d validation: %d\n", min_b,
                  max_b, step, o.warmup, o.iters, o.check);
    std::printf("#\n# Using ranks\n");
    for (const auto& l : ranks) std::printf("%s\n", l.c_str());
    const bool in_place = op == Op::allreduce || op == Op::broadcast;
    const char* label = in_place ? "in-place" : "out-of-place";
    std::printf("#\n#%*s%s\n", 53 + (31 - (int)std::strlen(label)) / 2, "", label);  // over the time..#wrong block
    std::printf("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type", "redop", "root", "time",
                "algbw", "busbw", "#wrong");
    std::printf("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)",
                "(GB/s)", "");
    std::fflush(stdout);
  }
  std::vector<Row> rows;
  for (size_t size : sweep_sizes(min_b, max_b, step, o.factor, kMaxCommSizes)) {
    rows.push_back(measure(comm, op, size, o));
    const Row& r = rows.back();
    if (root && !o.json) {
      const std::string wrong = r.wrong < 0 ? "N/A" : std::to_string(r.wrong);
      std::printf("%12zu  %12zu  %8s  %6s  %6d  %7s  %6.2f  %6.2f  %6s\n", r.size, r.count, "float", r.redop, r.root,
                  format_time(r.time_us).c_str(), r.algbw, r.busbw, wrong.c_str());
      std::fflush(stdout);
    }
  }
  double avg = 0;
  long wrong_total = 0;
  for (const Row& r : rows) {
    avg += r.busbw;
    wrong_total += std::max(0L, r.wrong);
  }
  avg = rows.empty() ? 0.0 : avg / rows.size();
  if (root) {
    if (o.json) {
      nlohmann::json j = {{"op", o.op}, {"backend", comm.backend()}, {"ranks", comm.size()}, {"type", "float"},
                          {"warmup", o.warmup}, {"iters", o.iters}, {"check", o.check != 0},
                          {"avg_busbw_gbps", avg}, {"wrong", wrong_total}};
      j["rows"] = nlohmann::json::array();
      for (const Row& r : rows) {
        nlohmann::json row = {{"size", r.size}, {"count", r.count}, {"redop", r.redop}, {"root", r.root},
                              {"time_us", r.time_us}, {"algbw_gbps", r.algbw}, {"busbw_gbps", r.busbw}};
        row["wrong"] = r.wrong < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.wrong);
        j["rows"].push_back(row);
      }
      std::cout << j.dump(2) << std::endl;
    } else {
      std::printf("# Out of bounds values : %ld %s\n", wrong_total, wrong_total ? "FAILED" : "OK");
      std::printf("# Avg bus bandwidth    : %g \n#\n", avg);
      // The curve as cluster keys (MoNTA's r1 / r2 = busbw / the link's bandwidth).
      if ((op == Op::alltoall || op == Op::allgather) && comm.size() > 1) {
        std::string xs, ys;
        for (const Row& r : rows) {
          if (r.size == 0 || !(r.busbw > 0)) continue;
          xs += (xs.empty() ? "" : ", ") + std::to_string(r.size);
          char y[32];
          std::snprintf(y, sizeof y, "%.4g", r.busbw);
          ys += (ys.empty() ? "" : ", ") + std::string(y);
        }
        std::printf("# cluster keys (measured, %d ranks):\n# %s_busbw_bytes = [%s]\n# %s_busbw_gbs = [%s]\n", comm.size(),
                    o.op.c_str(), xs.c_str(), o.op.c_str(), ys.c_str());
      }
      std::fflush(stdout);
    }
    if (!o.db.empty() && wrong_total == 0) {
      std::vector<std::pair<double, double>> curve;
      for (const Row& r : rows) curve.push_back({(double)r.size, r.busbw});
      RunStore store(o.db);
      const RunInfo run = record_comm_rate(store, o.op, comm.size(), curve);
      std::fprintf(o.json ? stderr : stdout, "# stored as run %s (experiment %s) in %s, host %s\n",
                   run.uuid.substr(0, 8).c_str(), kBenchExperiment, o.db.c_str(), run.host.c_str());
    }
  }
  return wrong_total > 0 ? 1 : 0;
}

int bench_comm(const CommBenchOptions& o) {
  if (o.backend == "local") {
    LocalCommunicator comm;
    return run_bench(comm, o);
  }
  if (const std::optional<int> rc = launch_bench_ranks("bench comm", o.ranks, o.ranks_given)) return *rc;
  MpiRuntime mpi;
  auto world = MpiCommunicator::world();
  try {
    return run_bench(*world, o);
  } catch (const std::exception& e) {
    if (world->size() == 1) throw;
    // A failing rank brings the job down with its message instead of leaving the others
    // waiting in a collective.
    std::fprintf(stderr, "moebench: error on rank %d: %s\n", world->rank(), e.what());
    std::fflush(stderr);
    MpiRuntime::abort_job(1);
  }
}

}  // namespace

void add_bench_comm(CLI::App& bench, Action& action) {
  auto* cmd = bench.add_subcommand("comm", "Collective bandwidth, nccl-tests style (run under mpirun)");
  auto o = std::make_shared<CommBenchOptions>();
  cmd->add_option("--op", o->op, "Collective")
      ->check(CLI::IsMember({"allreduce", "allgather", "reducescatter", "alltoall", "broadcast"}));
  cmd->add_option("-b,--minbytes", o->min_bytes, "Smallest size (bytes; K/M/G suffixes)")->check(byte_size());
  cmd->add_option("-e,--maxbytes", o->max_bytes, "Largest size (bytes; K/M/G suffixes)")->check(byte_size());
  cmd->add_option("-i,--stepbytes", o->step_bytes, "Size increment when -f is 1")->check(byte_size());
  cmd->add_option("-f,--stepfactor", o->factor, "Size multiplication factor")->transform(positive());
  cmd->add_option("-n,--iters", o->iters, "Timed iterations")->transform(positive());
  cmd->add_option("-w,--warmup_iters", o->warmup, "Untimed warm-up iterations")->transform(non_negative());
  cmd->add_option("-c,--check", o->check, "Check results (0 or 1)")->transform(whole_number(0, 1));
  cmd->add_option("--backend", o->backend, "Communicator: mpi, or local (1 rank, no MPI)")
      ->check(CLI::IsMember({"mpi", "local"}));
  CLI::Option* ranks = cmd->add_option("--ranks", o->ranks,
                                       "Ranks started through mpirun outside a launcher (default 4; backend mpi)")
                           ->transform(positive());
  cmd->add_flag("--json", o->json, "Print JSON instead of the table");
  cmd->add_option("--db", o->db,
                  "Store the alltoall / allgather curve in this run database (monta level = \"auto\" uses it)");
  cmd->callback([&action, o, ranks] {
    o->ranks_given = ranks->count() > 0;
    if (o->ranks_given && o->backend == "local") throw CLI::ValidationError("--ranks", "the local backend is 1 rank");
    if (*parse_size(o->min_bytes) > *parse_size(o->max_bytes))
      throw CLI::ValidationError("-b", o->min_bytes + " is larger than -e " + o->max_bytes);
    if (o->factor == 1 && *parse_size(o->step_bytes) == 0)
      throw CLI::ValidationError("-i", "must be positive when -f is 1");
    if (!o->db.empty() && o->op != "alltoall" && o->op != "allgather")
      throw CLI::ValidationError("--db", "stores the alltoall and allgather curves (MoNTA's r1, r2), not --op " + o->op);
    action = [o] {
      check_comm_budget(*o);
      return bench_comm(*o);
    };
  });
}

}  // namespace moebench::cli
