#include "moebench/perf/monta_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace moebench {

const char* monta_level_name(MontaLevel level) {
  switch (level) {
    case MontaLevel::baseline: return "baseline";
    case MontaLevel::O1: return "O1";
    case MontaLevel::O2: return "O2";
    case MontaLevel::O3: return "O3";
  }
  return "?";
}

MontaLevel monta_level_from_name(const std::string& name) {
  for (MontaLevel l : {MontaLevel::baseline, MontaLevel::O1, MontaLevel::O2, MontaLevel::O3})
    if (name == monta_level_name(l)) return l;
  throw std::invalid_argument("unknown MoNTA level \"" + name + "\" (expected baseline, O1, O2 or O3)");
}

Efficiency efficiency_curve(std::vector<std::pair<double, double>> points) {
  if (points.empty()) throw std::invalid_argument("an efficiency curve needs at least one point");
  for (size_t i = 0; i < points.size(); ++i) {
    const auto [bytes, r] = points[i];
    if (!(bytes > 0) || !(r > 0 && r <= 1))
      throw std::invalid_argument("efficiency point " + std::to_string(i) + ": bytes must be > 0 and efficiency in (0, 1]");
    if (i > 0 && !(bytes > points[i - 1].first))
      throw std::invalid_argument("efficiency points must have ascending bytes (point " + std::to_string(i) + ")");
  }
  return [points = std::move(points)](double bytes) {
    if (bytes <= points.front().first) return points.front().second;
    if (bytes >= points.back().first) return points.back().second;
    const auto hi = std::upper_bound(points.begin(), points.end(), bytes,
                                     [](double b, const std::pair<double, double>& p) { return b < p.first; });
    const auto lo = hi - 1;
    const double f = (std::log10(bytes) - std::log10(lo->first)) / (std::log10(hi->first) - std::log10(lo->first));
    return lo->second + f * (hi->second - lo->second);
  };
}

Efficiency link_efficiency(double bandwidth, double latency, double messages, double share) {
  if (!(bandwidth > 0)) throw std::invalid_argument("link_efficiency: bandwidth must be > 0");
  return [=](double bytes) {
    const double wire = bytes * share / bandwidth, fixed = messages * latency;
    return wire + fixed > 0 ? std::max(wire / (wire + fixed), 1e-9) : 1.0;
  };
}

namespace {

void check(const MontaInputs& in) {
  if (!(in.B1 > 0) || !(in.B2 > 0) || !(in.B3 > 0))
    throw std::invalid_argument("MoNTA cost model: bandwidths B1, B2, B3 must be > 0");
  if (in.t < 1 || in.e < 1) throw std::invalid_argument("MoNTA cost model: t and e must be >= 1");
  if (!in.r1 || !in.r2 || !in.r3) throw std::invalid_argument("MoNTA cost model: an efficiency curve is missing");
}

}  // namespace

MontaChunkTimes monta_chunk_times(const MontaInputs& in, int N) {
  check(in);
  if (N < 1) throw std::invalid_argument("MoNTA cost model: chunks must be >= 1, got " + std::to_string(N));
  const double t = in.t, e = in.e, aa_bytes = in.I / (N * t), ag_bytes = in.I / N;
  MontaChunkTimes c;
  c.aa = aa_bytes * (e - 1) / e / (in.B1 * in.r1(aa_bytes));
  c.ag = ag_bytes * (t - 1) / t / (in.B2 * in.r2(ag_bytes));
  c.d2d = ag_bytes / (in.B3 * in.r3(ag_bytes));
  return c;
}

double monta_seconds(const MontaInputs& in, MontaLevel level, int N) {
  check(in);
  const double t = in.t, e = in.e;
  switch (level) {
    case MontaLevel::baseline: return in.I * (e - 1) / e / (in.B1 * in.r1(in.I));
    case MontaLevel::O1: {  // eq. 11
      const double aa = in.I / t;
      return aa * (e - 1) / e / (in.B1 * in.r1(aa)) + in.I * (t - 1) / t / (in.B2 * in.r2(in.I));
    }
    case MontaLevel::O2: {  // Algorithm 1, lines 13-17
      const MontaChunkTimes c = monta_chunk_times(in, N);
      return c.aa < c.ag + c.d2d ? c.aa + (c.ag + c.d2d) * N : c.aa * N + c.ag + c.d2d;
    }
    case MontaLevel::O3: {  // Algorithm 2, lines 13-17
      const MontaChunkTimes c = monta_chunk_times(in, N);
      return c.aa < c.ag ? c.aa + c.ag * N + c.d2d : c.aa * N + c.ag + c.d2d;
    }
  }
  return 0;
}

MontaChoice monta_best_chunks(const MontaInputs& in, MontaLevel level) {
  if (level != MontaLevel::O2 && level != MontaLevel::O3)
    throw std::invalid_argument("monta_best_chunks: only O2 and O3 search chunks");
  MontaChoice best{level, 1, monta_seconds(in, level, 1)};
  for (int N = 2; N <= in.max_chunks; ++N) {
    if (in.I / ((double)N * in.t) < in.I_minimal || in.I / N < in.I_minimal) break;  // line 6
    const double T = monta_seconds(in, level, N);
    if (T < best.seconds) best = {level, N, T};  // line 18-19: T_min = T
  }
  return best;
}

MontaChoice monta_select(const MontaInputs& in) {
  MontaChoice best{MontaLevel::O1, 1, monta_seconds(in, MontaLevel::O1)};
  for (MontaLevel l : {MontaLevel::O2, MontaLevel::O3}) {
    const MontaChoice c = monta_best_chunks(in, l);
    if (c.seconds < best.seconds) best = c;
  }
  return best;
}

MontaChoice monta_select(const MontaInputs& in, int N) {
  MontaChoice best{MontaLevel::O1, 1, monta_seconds(in, MontaLevel::O1)};
  for (MontaLevel l : {MontaLevel::O2, MontaLevel::O3})
    if (const double T = monta_seconds(in, l, N); T < best.seconds) best = {l, N, T};
  return best;
}

double monta_speedup_bound(const MontaInputs& in) {
  check(in);
  const double t = in.t, e = in.e;
  if (in.e < 2) throw std::invalid_argument("monta_speedup_bound: needs e >= 2 (no AllToAll between nodes otherwise)");
  const double ag_share = (t - 1) * e * in.B1 * in.r1(in.I) / (t * (e - 1) * in.B2 * in.r2(in.I));
  return std::max(ag_share, 1.0 / t);
}

}  // namespace moebench
