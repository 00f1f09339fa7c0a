#include "moebench/perf/fastermoe_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <string>

namespace moebench {

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

void non_negative(const char* name, double v) {
  if (!(v >= 0) || !std::isfinite(v))
    throw std::invalid_argument(std::string("fastermoe model: ") + name + " = " + num(v) + " must be finite and >= 0");
}

void positive(const char* name, double v) {
  if (!(v > 0) || !std::isfinite(v))
    throw std::invalid_argument(std::string("fastermoe model: ") + name + " = " + num(v) + " must be finite and > 0");
}

// H, F, bytes_per_element always; the rates when a latency is asked for.
void check_scalars(const ShadowModel& m, bool rates) {
  non_negative("ShadowModel.H", m.H);
  non_negative("ShadowModel.F", m.F);
  positive("ShadowModel.bytes_per_element", m.bytes_per_element);
  if (rates) {
    positive("ShadowModel.flops", m.flops);
    positive("ShadowModel.w_net", m.w_net);
  }
}

// P, E, the shape and signs of T, max_shadows.
void check_tokens(const ShadowModel& m) {
  if (m.P < 1) throw std::invalid_argument("fastermoe model: ShadowModel.P = " + std::to_string(m.P) + " must be >= 1");
  if (m.E < 1 || m.E % m.P != 0)
    throw std::invalid_argument("fastermoe model: ShadowModel.E = " + std::to_string(m.E) +
                                " must be a positive multiple of P = " + std::to_string(m.P) + " (experts in contiguous blocks)");
  const size_t want = (size_t)m.P * (size_t)m.E;
  if (m.T.size() != want)
    throw std::invalid_argument("fastermoe model: ShadowModel.T has " + std::to_string(m.T.size()) +
                                " entries, expected P x E = " + std::to_string(want));
  for (size_t i = 0; i < m.T.size(); ++i)
    if (!(m.T[i] >= 0) || !std::isfinite(m.T[i]))
      throw std::invalid_argument("fastermoe model: ShadowModel.T[" + std::to_string(i / (size_t)m.E) + " * E + " +
                                  std::to_string(i % (size_t)m.E) + "] = " + num(m.T[i]) + " must be finite and >= 0");
  if (m.max_shadows < -1)
    throw std::invalid_argument("fastermoe model: ShadowModel.max_shadows = " + std::to_string(m.max_shadows) +
                                " must be >= 0, or -1 for no limit");
}

void check_r(int r) {
  if (r < 0) throw std::invalid_argument("fastermoe model: r = " + std::to_string(r) + " shadowed experts must be >= 0");
}

double max_of(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }

// The experts in descending order of their total tokens (ties: the lower index first).
std::vector<int> by_total(const ShadowModel& m) {
  std::vector<double> total((size_t)m.E, 0.0);
  for (int s = 0; s < m.P; ++s)
    for (int e = 0; e < m.E; ++e) total[(size_t)e] += m.T[(size_t)s * m.E + e];
  std::vector<int> order((size_t)m.E);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return total[(size_t)a] > total[(size_t)b]; });
  return order;
}


}  // namespace

// ---- eq. 1 ----

double fastermoe_comp_seconds(const std::vector<double>& tokens_per_worker, double H, double F,
                              const ClusterModel& cluster) {
  non_negative("H", H);
  non_negative("F", F);
  if ((int)tokens_per_worker.size() > cluster.world_size())
    throw std::invalid_argument("fastermoe model: tokens_per_worker has " + std::to_string(tokens_per_worker.size()) +
                                " workers, the cluster " + std::to_string(cluster.world_size()) + " devices");
  double worst = 0;
  for (size_t w = 0; w < tokens_per_worker.size(); ++w) {
    const std::string name = "tokens_per_worker[" + std::to_string(w) + "]";
    non_negative(name.c_str(), tokens_per_worker[w]);
    // 2 FCs of 2 B H F FLOPs each (an FMA is 2 operations); the efficiency curve is per task.
    worst = std::max(worst, cluster.compute_seconds(4 * tokens_per_worker[w] * H * F));
  }
  return worst;
}

// ---- eq. 2 ----

LinkTraffic::LinkTraffic(const ClusterNetwork& net) : net_(net), bytes_((size_t)net.link_count(), 0.0) {}

void LinkTraffic::add(int a, int b, double bytes) {
  non_negative("bytes", bytes);
  const Route r = net_.route(a, b);  // std::out_of_range for ranks outside the cluster, also when a == b
  for (int i = 0; i < r.count; ++i) bytes_[(size_t)r.links[(size_t)i]] += bytes;
}

void LinkTraffic::add_all_to_all_v(const std::vector<int>& ranks, const std::vector<double>& bytes) {
  const size_t n = ranks.size();
  if (bytes.size() != n * n)
    throw std::invalid_argument("fastermoe model: all-to-all-v bytes has " + std::to_string(bytes.size()) +
                                " entries, expected ranks^2 = " + std::to_string(n * n));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) add(ranks[i], ranks[j], bytes[i * n + j]);
}

void LinkTraffic::add_ring_all_reduce(const std::vector<int>& ranks, double S) {
  non_negative("S", S);
  const size_t n = ranks.size();
  if (n < 2) return;
  // Reduce-scatter then all-gather, n-1 steps each of S/n: 2 (n-1)/n S to the ring's next rank.
  const double per_rank = 2.0 * (double)(n - 1) / (double)n * S;
  for (size_t i = 0; i < n; ++i) add(ranks[i], ranks[(i + 1) % n], per_rank);
}

void LinkTraffic::add_ring_chain(const std::vector<int>& ranks, int first, double S, const char* what) {
  non_negative("S", S);
  const int n = (int)ranks.size();
  if (first < 0 || first >= n)
    throw std::invalid_argument(std::string("fastermoe model: ") + what + " root = " + std::to_string(first) +
                                " must index ranks (size " + std::to_string(n) + ")");
  // n-1 hops in ring order starting at ranks[first]; pipelined, so every hop carries all of S.
  for (int k = 0; k + 1 < n; ++k) add(ranks[(size_t)((first + k) % n)], ranks[(size_t)((first + k + 1) % n)], S);
}

void LinkTraffic::add_ring_broadcast(const std::vector<int>& ranks, int root, double S) {
  add_ring_chain(ranks, root, S, "ring broadcast");
}

void LinkTraffic::add_ring_reduce(const std::vector<int>& ranks, int root, double S) {
  const int n = (int)ranks.size();
  if (root < 0 || root >= n)
    throw std::invalid_argument("fastermoe model: ring reduce root = " + std::to_string(root) +
                                " must index ranks (size " + std::to_string(n) + ")");
  add_ring_chain(ranks, (root + 1) % n, S, "ring reduce");  // root+1 -> ... -> root
}

double LinkTraffic::seconds() const {
  const int l = busiest_link();
  return l < 0 ? 0.0 : bytes_[(size_t)l] / net_.link(l).bandwidth;
}

int LinkTraffic::busiest_link() const {
  int best = -1;
  double best_s = 0;
  for (int l = 0; l < (int)bytes_.size(); ++l) {
    const double s = bytes_[(size_t)l] / net_.link(l).bandwidth;
    if (bytes_[(size_t)l] > 0 && (best < 0 || s > best_s)) best = l, best_s = s;
  }
  return best;
}

const std::vector<double>& LinkTraffic::bytes() const { return bytes_; }

// ---- §4.1 dynamic shadowing ----

std::vector<double> worker_loads(const ShadowModel& m) {
  check_tokens(m);
  const int per = m.E / m.P;
  std::vector<double> B((size_t)m.P, 0.0);
  for (int s = 0; s < m.P; ++s)
    for (int e = 0; e < m.E; ++e) B[(size_t)(e / per)] += m.T[(size_t)s * m.E + e];
  return B;
}

double lat_imbl(double B_max, const ShadowModel& m) {
  check_scalars(m, true);
  non_negative("B_max", B_max);
  // eq. 7: 3 GeMM rounds (1 forward, 2 backward) and 4 all-to-all rounds of B H elements.
  return 3 * 4 * B_max * m.H * m.F / m.flops + 4 * B_max * m.H * m.bytes_per_element / m.w_net;
}

double lat_shadow(int r, double B_max_after, const ShadowModel& m) {
  check_scalars(m, true);
  check_r(r);
  non_negative("B_max_after", B_max_after);
  // eq. 8: the same 3 GeMM rounds at the new max, plus a broadcast and a reduce (2 collectives)
  // of 2 matrices of H F elements for each of the r shadowed experts.
  return 3 * 4 * B_max_after * m.H * m.F / m.flops + 2.0 * r * (2 * m.H * m.F * m.bytes_per_element) / m.w_net;
}

// eq. 9 and eq. 10 from eq. 8 < eq. 7 (B = B_max, B' = B_max_after, P = flops,
// W = w_net / bytes_per_element in elements/s):
//   12 B' H F / P + 4 r H F / W  <  12 B H F / P + 4 B H / W
//   <=>  3 (B - B') F / P  >  (r F - B) / W                                     (divided by 4 H)
// eq. 9 compares the communication terms alone: 4 B H / W > 4 r H F / W <=> B > r F (the input's
// B H elements outweigh r experts' r H F parameter elements). Then the right side is negative,
// and shadowing pays whenever B' <= B, which the paper takes for granted; with B' > B (a worker
// receiving the shadowed tokens ends above the old max) eq. 9 can hold while eq. 8 > eq. 7.
// eq. 10 is the same inequality divided by (r F - B) and multiplied by P, valid when r F > B,
// i.e. exactly where eq. 9 fails:  3 (B - B') F / (r F - B) > P / W.  It is evaluated here
// multiplied out, 3 (B - B') F W > (r F - B) P: identical where r F > B, defined at r F = B
// (then: B' < B), and for r F < B it stays eq. 8 < eq. 7 instead of the flipped inequality a
// negative denominator would give. So "eq. 9 or eq. 10" follows from eq. 8 < eq. 7 always and
// implies it whenever B' <= B.
bool shadow_condition_9(int r, double B_max, const ShadowModel& m) {
  check_scalars(m, false);
  check_r(r);
  non_negative("B_max", B_max);
  return B_max > r * m.F;
}

bool shadow_condition_10(int r, double B_max, double B_max_after, const ShadowModel& m) {
  check_scalars(m, true);
  check_r(r);
  non_negative("B_max", B_max);
  non_negative("B_max_after", B_max_after);
  const double W = m.w_net / m.bytes_per_element;
  return 3 * (B_max - B_max_after) * m.F * W > (r * m.F - B_max) * m.flops;
}

// Algorithm 1. With E == P (one expert per worker, the paper's listing) expert i is worker i,
// its total tokens are B_i, and removing its remote tokens leaves B_i = T_ii (line 6) while
// B_j += T_ji (line 8). With E = k P only expert e's remote tokens leave its owner; the other
// experts of the owner keep theirs.
ShadowSelection select_shadow_experts(const ShadowModel& m) {
  check_tokens(m);
  check_scalars(m, true);
  ShadowSelection out;
  out.loads_before = worker_loads(m);
  std::vector<double> B = out.loads_before;
  double c_min = lat_imbl(max_of(B), m);  // line 3
  out.seconds_before = c_min;

  const std::vector<int> order = by_total(m);
  const int per = m.E / m.P;
  const size_t limit = m.max_shadows < 0 ? order.size() : std::min(order.size(), (size_t)m.max_shadows);
  for (size_t k = 0; k < limit; ++k) {  // line 5
    const int e = order[k], owner = e / per;
    std::vector<double> trial = B;
    for (int s = 0; s < m.P; ++s) {  // lines 6-9: remote tokens of e computed where they are
      if (s == owner) continue;
      const double t = m.T[(size_t)s * m.E + e];
      trial[(size_t)owner] -= t;
      trial[(size_t)s] += t;
    }
    const double c = lat_shadow((int)out.experts.size() + 1, max_of(trial), m);  // lines 10-11
    if (!(c < c_min)) break;  // line 16: the first expert that does not pay ends the search
    c_min = c;                // lines 13-14
    B = std::move(trial);
    out.experts.push_back(e);
  }
  out.loads_after = std::move(B);
  out.seconds_after = c_min;
  return out;
}

ShadowSelection select_shadow_experts(const ShadowModel& m, const ClusterNetwork& net, const std::vector<int>& ranks) {
  check_tokens(m);
  check_scalars(m, false);
  if ((int)ranks.size() != m.P)
    throw std::invalid_argument("fastermoe model: ranks has " + std::to_string(ranks.size()) + " entries for P = " +
                                std::to_string(m.P));
  const int per = m.E / m.P;
  const double params = 2 * m.H * m.F * m.bytes_per_element;
  std::vector<char> shadowed((size_t)m.E, 0);
  // The latency of the set `shadowed` and its loads.
  auto latency = [&](std::vector<double>& loads) {
    loads.assign((size_t)m.P, 0.0);
    std::vector<double> bytes((size_t)m.P * m.P, 0.0);
    for (int s = 0; s < m.P; ++s)
      for (int e = 0; e < m.E; ++e) {
        const double t = m.T[(size_t)s * m.E + e];
        const int w = shadowed[(size_t)e] ? s : e / per;
        loads[(size_t)w] += t;
        if (w != s) bytes[(size_t)s * m.P + w] += t * m.H * m.bytes_per_element;
      }
    LinkTraffic tokens(net), model(net);
    tokens.add_all_to_all_v(ranks, bytes);
    for (int e = 0; e < m.E; ++e)
      if (shadowed[(size_t)e]) {
        model.add_ring_broadcast(ranks, e / per, params);
        model.add_ring_reduce(ranks, e / per, params);
      }
    return 3 * fastermoe_comp_seconds(loads, m.H, m.F, net.cluster()) + 4 * tokens.seconds() + model.seconds();
  };
  ShadowSelection out;
  double c_min = latency(out.loads_before);
  out.seconds_before = c_min;
  out.loads_after = out.loads_before;
  const std::vector<int> order = by_total(m);
  const size_t limit = m.max_shadows < 0 ? order.size() : std::min(order.size(), (size_t)m.max_shadows);
  for (size_t k = 0; k < limit; ++k) {
    const int e = order[k];
    shadowed[(size_t)e] = 1;
    std::vector<double> loads;
    const double c = latency(loads);
    if (!(c < c_min)) break;  // the first expert that does not pay ends the search (Algorithm 1)
    c_min = c;
    out.loads_after = std::move(loads);
    out.experts.push_back(e);
  }
  out.seconds_after = c_min;
  return out;
}

}  // namespace moebench
