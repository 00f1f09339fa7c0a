#include "moebench/perf/calibration.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <tuple>
#include <stdexcept>

#include "moebench/dist/communicator.h"
#include "moebench/tensor/matmul.h"
#include "moebench/tensor/rng.h"

namespace moebench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The fastest repetition: every repetition has the ranks competing with each other, as in a run;
// what else the machine does meanwhile (another job, a build) only ever slows one down.
double fastest(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

// The slowest rank's value (every rank measured at once, so the step waits for that one).
double slowest(Communicator& world, double seconds) {
  world.all_reduce(&seconds, 1, DType::f64, ReduceOp::max);
  return seconds;
}

// Every rank at once, `repeats` times: per repetition the slowest rank's seconds (the ranks
// contend as in a run), the fastest repetition (load from outside the job only slows one down).
double contended(Communicator& world, int repeats, const std::function<double()>& once) {
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < repeats; ++r) {
    world.barrier();
    best = std::min(best, slowest(world, once()));
  }
  return best;
}

// One shape's buffers; once() = seconds per product over enough back-to-back products (about
// 1 GFLOP) that the ranks' timings overlap for several scheduler slices.
struct Gemm {
  int m, k, n, inner;
  std::vector<float> in, w, out;
  Gemm(int m_, int k_, int n_)
      : m(m_), k(k_), n(n_), inner(std::max(1, (int)(1e9 / (2.0 * m_ * k_ * n_)))),
        in((size_t)m_ * k_), w((size_t)n_ * k_), out((size_t)m_ * n_) {
    Rng rng(11);
    for (float& x : in) x = rng.uniform();
    for (float& x : w) x = rng.uniform();
    matmul_forward(out.data(), in.data(), w.data(), nullptr, m, k, n);  // warm-up
  }
  double once() {
    const auto t0 = Clock::now();
    for (int i = 0; i < inner; ++i) matmul_forward(out.data(), in.data(), w.data(), nullptr, m, k, n);
    return seconds_since(t0) / inner;
  }
};

// Round trip of an 8-byte message between ranks 0 and 1, halved; the others wait.
double time_latency(Communicator& world, int repeats) {
  const int me = world.rank(), rounds = 200;
  double word = 0;
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    world.barrier();
    const auto t0 = Clock::now();
    for (int i = 0; i < rounds && me < 2; ++i) {
      if (me == 0) {
        world.send(&word, 1, DType::f64, 1);
        world.recv(&word, 1, DType::f64, 1);
      } else {
        world.recv(&word, 1, DType::f64, 0);
        world.send(&word, 1, DType::f64, 0);
      }
    }
    t.push_back(seconds_since(t0) / (2.0 * rounds));
  }
  double lat = fastest(t);
  world.broadcast(&lat, 1, DType::f64, 0);
  return lat;
}

double time_alltoall(Communicator& world, size_t bytes_per_peer, int repeats) {
  const int P = world.size();
  const size_t n = bytes_per_peer / sizeof(float);
  std::vector<float> send(n * (size_t)P, 1.0f), recv(n * (size_t)P);
  std::vector<size_t> counts((size_t)P, n), displs((size_t)P);
  for (int p = 0; p < P; ++p) displs[(size_t)p] = n * (size_t)p;
  auto once = [&] {
    world.all_to_all_v(send.data(), counts.data(), displs.data(), recv.data(), counts.data(), displs.data(),
                       DType::f32);
  };
  once();
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    world.barrier();
    const auto t0 = Clock::now();
    once();
    t.push_back(slowest(world, seconds_since(t0)));
  }
  return fastest(t);
}

std::string hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

}  // namespace

std::vector<GemmSample> calibration_shapes(bool quick) {
  // Rows x hidden -> output, from a small model's per-expert slice to a large dense FFN.
  struct Shape { int m, k, n; };
  static const Shape full[] = {{16, 64, 256},    {64, 64, 256},     {64, 128, 512},   {256, 128, 512},
                               {256, 256, 1024}, {512, 512, 1024},  {1024, 512, 2048}, {1024, 1024, 2048}};
  static const Shape small[] = {{16, 64, 256}, {64, 128, 512}, {256, 256, 1024}};
  std::vector<GemmSample> out;
  for (const Shape& s : quick ? std::vector<Shape>(std::begin(small), std::end(small))
                              : std::vector<Shape>(std::begin(full), std::end(full))) {
    GemmSample g;
    g.m = s.m, g.k = s.k, g.n = s.n;
    g.flops = 2.0 * s.m * s.k * s.n;
    out.push_back(g);
  }
  return out;
}

double time_gemm(int m, int k, int n, int repeats) {
  Gemm g(m, k, n);
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < repeats; ++r) best = std::min(best, g.once());
  return best;
}

double time_gemm_contended(Communicator& world, int m, int k, int n, int repeats) {
  Gemm g(m, k, n);
  return contended(world, repeats, [&] { return g.once(); });
}

Calibration measure_calibration(Communicator& world, const CalibrationOptions& o) {
  if (world.size() < 2)
    throw std::invalid_argument("calibration measures messages between ranks: it needs at least 2, got " +
                                std::to_string(world.size()));
  if (o.threads < 1 || o.repeats < 1) throw std::invalid_argument("calibration: threads and repeats must be >= 1");
  set_num_threads(o.threads);
  Calibration c;
  c.host = hostname();
  c.ranks = world.size();
  c.threads = o.threads;
  c.gemm = calibration_shapes(o.quick);
  for (GemmSample& g : c.gemm) g.seconds = time_gemm_contended(world, g.m, g.k, g.n, o.repeats);
  const size_t copy_bytes = o.quick ? (size_t(8) << 20) : (size_t(64) << 20);
  std::vector<char> from(copy_bytes, 1), to(copy_bytes, 0);
  std::memcpy(to.data(), from.data(), copy_bytes);  // fault the pages in
  c.copy_bandwidth = (double)copy_bytes / contended(world, o.repeats, [&] {
                       const auto t0 = Clock::now();
                       std::memcpy(to.data(), from.data(), copy_bytes);
                       const double t = seconds_since(t0);
                       from[0] = to[copy_bytes - 1];  // the copy is used
                       return t;
                     });
  c.latency = time_latency(world, o.repeats);
  c.alltoall_bytes = o.quick ? double(256 << 10) : double(2 << 20);
  const double P = world.size();
  const double a2a = time_alltoall(world, (size_t)c.alltoall_bytes, o.repeats);
  c.bandwidth = (P - 1) * c.alltoall_bytes / std::max(a2a - (P - 1) * c.latency, 0.5 * a2a);
  return c;
}

ClusterSpec calibrated_cluster(const Calibration& c) {
  ClusterSpec s;
  s.name = "local";
  s.nodes = 1;
  s.devices_per_node = c.ranks;
  double best = 0;
  for (const GemmSample& g : c.gemm) best = std::max(best, g.rate());
  s.device_flops = best;
  for (const GemmSample& g : c.gemm) s.efficiency.push_back({g.flops, g.rate() / best});
  s.copy_bandwidth = c.copy_bandwidth;
  s.intra = {c.bandwidth, c.latency};
  s.inter = s.intra;  // virtual nodes of one machine: the same shared memory
  return s;
}

std::string calibrated_cluster_file(const Calibration& c, const std::string& command) {
  const ClusterSpec s = calibrated_cluster(c);
  std::string out;
  char line[512];
  auto add = [&](const char* fmt, auto... args) {
    std::snprintf(line, sizeof line, fmt, args...);
    out += line;
  };
  add("# This machine (%s), measured by `%s`.\n", c.host.c_str(), command.c_str());
  add("# %d ranks measured at once, %d BLAS thread(s) each (what a run of %d ranks gives a rank here).\n",
      c.ranks, c.threads, c.ranks);
  out += "# sgemm (matmul_forward), seconds of the slowest rank per shape (fastest repetition):\n";
  for (const GemmSample& g : c.gemm)
    add("#   %5d x %5d x %5d  %10.3e FLOP  %10.3e s  %8.2f GFLOP/s\n", g.m, g.k, g.n, g.flops, g.seconds,
        g.rate() / 1e9);
  add("# memcpy %.2f GB/s per rank; 8-byte ping-pong %.2f us one way; all-to-all of %.0f KiB per peer\n",
      c.copy_bandwidth / 1e9, c.latency * 1e6, c.alltoall_bytes / 1024);
  add("# %.2f GB/s out of each rank. One node: its devices are the ranks (devices_per_node follows the\n",
      c.bandwidth / 1e9);
  out += "# config's run.ranks); the inter-node link is the same shared memory. Bandwidths GB/s (1e9 B/s).\n";
  out += "[cluster]\nname = \"local\"\nnodes = 1\n";
  add("device_tflops = %.6g\n", s.device_flops / 1e12);
  out += "efficiency_flops = [";
  for (size_t i = 0; i < s.efficiency.size(); ++i) add("%s%.6g", i ? ", " : "", s.efficiency[i].flops);
  out += "]\nefficiency = [";
  for (size_t i = 0; i < s.efficiency.size(); ++i) add("%s%.4f", i ? ", " : "", s.efficiency[i].efficiency);
  out += "]\n";
  add("copy_bw_gbs = %.6g\n", s.copy_bandwidth / 1e9);
  add("intra_bw_gbs = %.6g\nintra_latency_us = %.6g\n", s.intra.bandwidth / 1e9, s.intra.latency * 1e6);
  add("inter_bw_gbs = %.6g\ninter_latency_us = %.6g\n", s.inter.bandwidth / 1e9, s.inter.latency * 1e6);
  return out;
}

HostTaskFit fit_host_tasks(const std::vector<TaskTime>& measured, const std::vector<TaskTime>& predicted) {
  struct Sum {
    double seconds = 0, bytes = 0;
    long n = 0;
    double mean() const { return n ? seconds / (double)n : 0.0; }
  };
  using Key = std::tuple<bool, std::string, int>;  // comm?, name, run
  std::map<Key, Sum> m, p;
  auto add = [](std::map<Key, Sum>& to, const std::vector<TaskTime>& from) {
    for (const TaskTime& t : from)
      if (!t.name.empty() && (t.comm || !t.main)) {
        Sum& s = to[{t.comm, t.name, t.run}];
        s.seconds += t.seconds;
        s.bytes += t.bytes;
        ++s.n;
      }
  };
  add(m, measured);
  add(p, predicted);
  HostTaskFit fit;
  struct Weighted {
    double x, y, w;
  };
  std::vector<Weighted> comm;  // per name and run: bytes, extra seconds, count
  std::map<std::string, std::vector<std::pair<double, double>>> points;  // name -> (x, y) per run
  for (const auto& [k, ms] : m) {
    const auto it = p.find(k);
    if (it == p.end()) continue;
    if (std::get<0>(k)) {
      comm.push_back({ms.bytes / (double)ms.n, ms.mean() - it->second.mean(), (double)ms.n});
    } else if (it->second.mean() > 0 && ms.mean() > 0) {
      points[std::get<1>(k)].push_back({it->second.mean(), ms.mean()});
    }
  }
  for (const auto& [name, xy] : points) {
    double sx = 0, sy = 0, lo = xy.front().first, hi = lo;
    for (const auto& [x, y] : xy) sx += x, sy += y, lo = std::min(lo, x), hi = std::max(hi, x);
    TaskCostFit c{name, 0.0, sy / sx};
    if (xy.size() >= 2 && hi >= 1.2 * lo) {
      const double n = (double)xy.size(), mx = sx / n, my = sy / n;
      double sxy = 0, sxx = 0;
      for (const auto& [x, y] : xy) sxy += (x - mx) * (y - my), sxx += (x - mx) * (x - mx);
      const double factor = sxy / sxx, overhead = my - factor * mx;
      if (factor > 0 && overhead >= 0) c = {name, overhead, factor};
    }
    fit.task_costs.push_back(c);
  }
  double w = 0, mx = 0, my = 0;
  for (const Weighted& c : comm) w += c.w, mx += c.w * c.x, my += c.w * c.y;
  if (w > 0) {
    mx /= w;
    my /= w;
    double sxy = 0, sxx = 0;
    for (const Weighted& c : comm) sxy += c.w * (c.x - mx) * (c.y - my), sxx += c.w * (c.x - mx) * (c.x - mx);
    const double slope = sxx > 0 ? sxy / sxx : -1.0, intercept = my - slope * mx;
    if (slope >= 0 && intercept >= 0) {
      fit.comm_overhead = intercept;
      fit.comm_seconds_per_byte = slope;
    } else {
      fit.comm_overhead = std::max(0.0, my);
    }
  }
  return fit;
}

std::string host_task_fit_lines(const HostTaskFit& fit, const std::string& reference) {
  std::string out = "# Fitted on " + reference + ":\n"
                    "# a comm task takes comm_overhead_us + comm_us_per_mb x the MB it sends beyond its\n"
                    "# transfers; a compute task of a listed name its overhead + its factor x the\n"
                    "# GEMM-rate model's time (perf/calibration.h fit_host_tasks).\n";
  char line[128];
  std::snprintf(line, sizeof line, "comm_overhead_us = %.6g\ncomm_us_per_mb = %.6g\n", fit.comm_overhead * 1e6,
                fit.comm_seconds_per_byte * 1e12);
  out += line;
  auto list = [&](const char* key, auto value) {
    out += key;
    out += " = [";
    for (size_t i = 0; i < fit.task_costs.size(); ++i) out += (i ? ", " : "") + value(fit.task_costs[i]);
    out += "]\n";
  };
  auto number = [&](double v) {
    std::snprintf(line, sizeof line, "%.4g", v);
    return std::string(line);
  };
  list("task_names", [](const TaskCostFit& c) { return "\"" + c.name + "\""; });
  list("task_overhead_us", [&](const TaskCostFit& c) { return number(c.overhead * 1e6); });
  list("task_factors", [&](const TaskCostFit& c) { return number(c.factor); });
  return out;
}

}  // namespace moebench
