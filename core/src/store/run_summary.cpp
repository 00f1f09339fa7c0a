// summarize_run and its text / JSON forms (definitions in run_summary.h).
#include "moebench/store/run_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <tuple>

namespace moebench {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// Mean of the values of one metric by step, leaving the first out when there are > 2.
double mean_without_warmup(const std::vector<MetricPoint>& points, bool& excluded) {
  if (points.empty()) return kNaN;
  size_t first = points.size() > 2 ? 1 : 0;
  if (first) excluded = true;
  double sum = 0;
  for (size_t i = first; i < points.size(); ++i) sum += points[i].value;
  return sum / double(points.size() - first);
}

// The trainer's phases: on stream host since the task-graph runtime, on stream compute in
// runs recorded before it.
bool is_compute_phase(const SpanRow& s) {
  return (s.stream == "host" || s.stream == "compute") &&
         (s.name == "forward" || s.name == "backward" || s.name == "optimizer");
}

using Intervals = std::vector<std::pair<double, double>>;

Intervals merged(Intervals v) {
  std::sort(v.begin(), v.end());
  Intervals out;
  for (const auto& iv : v) {
    if (iv.second <= iv.first) continue;
    if (!out.empty() && iv.first <= out.back().second) out.back().second = std::max(out.back().second, iv.second);
    else out.push_back(iv);
  }
  return out;
}

// a minus b (both merged).
Intervals minus(const Intervals& a, const Intervals& b) {
  Intervals out;
  for (auto [lo, hi] : a) {
    for (const auto& [blo, bhi] : b) {
      if (bhi <= lo || blo >= hi) continue;
      if (blo > lo) out.push_back({lo, blo});
      lo = std::max(lo, bhi);
      if (lo >= hi) break;
    }
    if (lo < hi) out.push_back({lo, hi});
  }
  return out;
}

double length(const Intervals& v) {
  double t = 0;
  for (const auto& [lo, hi] : v) t += hi - lo;
  return t;
}

// Communication of one rank's step that computation did not hide: the union of the comm
// spans minus the time the compute stream computed. Stream compute spans count as computing
// except while the compute thread itself was blocked in communication (stream compute.comm,
// runs recorded before the task-graph runtime); the host's phases never do.
Intervals exposed_comm(const std::vector<const SpanRow*>& list) {
  Intervals comm, computing, blocked;
  for (const SpanRow* s : list) {
    const std::pair<double, double> iv{s->start, s->start + s->duration};
    if (s->category == "comm" && !(s->stream == "host" && s->name == "step")) comm.push_back(iv);
    if (s->stream == "compute.comm") blocked.push_back(iv);
    else if (s->stream == "compute" && s->category == "compute") computing.push_back(iv);
  }
  return minus(merged(comm), minus(merged(computing), merged(blocked)));
}

void add(PhaseSplit& into, const PhaseSplit& x) {
  into.step_s += x.step_s;
  into.compute_s += x.compute_s;
  into.comm_s += x.comm_s;
  into.idle_s += x.idle_s;
  into.bubble_s += x.bubble_s;
  into.samples += x.samples;
}

void finish(PhaseSplit& p) {
  if (p.samples == 0) return;
  const double n = double(p.samples);
  p.step_s /= n;
  p.compute_s /= n;
  p.comm_s /= n;
  p.idle_s /= n;
  p.bubble_s /= n;
  p.comm_share = p.step_s > 0 ? p.comm_s / p.step_s : kNaN;
  p.bubble_share = p.step_s > 0 ? p.bubble_s / p.step_s : kNaN;
}

void summarize_phases(const std::vector<SpanRow>& spans, RunSummary& out) {
  // (step, rank) -> indices of its spans
  std::map<std::pair<int64_t, int>, std::vector<const SpanRow*>> by_step_rank;
  std::set<int64_t> span_steps, timed_steps;
  for (const auto& s : spans) {
    by_step_rank[{s.step, s.rank}].push_back(&s);
    span_steps.insert(s.step);
    if (s.stream == "host" && s.name == "step") timed_steps.insert(s.step);
  }
  out.span_steps = int64_t(span_steps.size());
  if (timed_steps.empty()) return;
  int64_t skip_step = -1;
  if (timed_steps.size() > 2) {
    skip_step = *timed_steps.begin();
    out.phase_warmup_excluded = true;
  }
  int max_rank = 0;
  for (const auto& [key, list] : by_step_rank) max_rank = std::max(max_rank, key.second);
  std::map<int, std::pair<double, double>> layer_sums;  // layer -> (compute s, comm s), summed
  out.rank_phases.assign(size_t(max_rank) + 1, PhaseSplit{});
  for (const auto& [key, list] : by_step_rank) {
    if (key.first == skip_step) continue;
    PhaseSplit x;
    bool has_step = false;
    std::vector<const SpanRow*> phases;
    for (const SpanRow* s : list) {
      if (s->stream == "host" && s->name == "step") {
        x.step_s += s->duration;
        has_step = true;
      } else if (is_compute_phase(*s)) {
        phases.push_back(s);
      } else if ((s->stream == "host" && (s->name == "pp.forward" || s->name == "pp.backward")) ||
                 s->name == "pp.recv_forward" || s->name == "pp.recv_backward") {  // receives (older runs' names)
        x.bubble_s += s->duration;
      }
    }
    if (!has_step) continue;
    const Intervals exposed = exposed_comm(list);
    Intervals in_phases;
    double phase_total = 0;
    for (const SpanRow* p : phases) {
      phase_total += p->duration;
      in_phases.push_back({p->start, p->start + p->duration});
    }
    x.comm_s = length(exposed);
    x.compute_s = phase_total - (x.comm_s - length(minus(exposed, merged(in_phases))));
    x.idle_s = x.step_s - x.compute_s - x.comm_s;
    x.samples = 1;
    add(out.phases, x);
    add(out.rank_phases[size_t(key.second)], x);
    for (const SpanRow* s : list) {
      if (s->layer < 0) continue;
      if (s->stream == "compute" && s->category == "compute") layer_sums[s->layer].first += s->duration;
      else if (s->category == "comm") layer_sums[s->layer].second += s->duration;
    }
  }
  finish(out.phases);
  for (auto& r : out.rank_phases) finish(r);
  out.has_phases = out.phases.samples > 0;
  for (const auto& [layer, sums] : layer_sums)
    out.layer_phases.push_back({layer, sums.first / double(out.phases.samples), sums.second / double(out.phases.samples)});
}

void summarize_routing(const std::vector<RoutingRow>& routing, const std::string& config_json, RunSummary& out) {
  std::map<int, std::map<int, int64_t>> tokens;  // layer -> expert -> tokens
  for (const auto& r : routing) tokens[r.layer][r.expert] += r.tokens;
  const auto configured = moe_experts_per_layer(config_json);
  for (const auto& [layer, per_expert] : tokens) {
    LayerLoad l;
    l.layer = layer;
    int seen = per_expert.empty() ? 0 : per_expert.rbegin()->first + 1;
    auto it = configured.find(layer);
    l.experts = std::max(seen, it == configured.end() ? 0 : it->second);
    l.tokens.assign(size_t(std::max(l.experts, 0)), 0);
    for (const auto& [e, t] : per_expert) {
      if (e < 0) continue;
      l.tokens[size_t(e)] += t;
      l.total_tokens += t;
    }
    for (int e = 0; e < l.experts; ++e) {
      if (l.busiest_expert < 0 || l.tokens[size_t(e)] > l.max_tokens) {
        l.max_tokens = l.tokens[size_t(e)];
        l.busiest_expert = e;
      }
    }
    if (l.experts > 0) l.mean_tokens = double(l.total_tokens) / l.experts;
    if (l.mean_tokens > 0) l.imbalance = double(l.max_tokens) / l.mean_tokens;
    if (std::isfinite(l.imbalance) && !(l.imbalance <= out.max_imbalance)) out.max_imbalance = l.imbalance;
    out.expert_load.push_back(std::move(l));
  }
}

std::string ms(double seconds) { return fmt("%.3f ms", seconds * 1e3); }
std::string pct(double part, double whole) { return whole > 0 ? fmt("%.1f%%", 100.0 * part / whole) : "-"; }
std::string mb(double bytes) { return fmt("%.3f MB", bytes / 1e6); }

std::string phase_line(const PhaseSplit& p) {
  return "step " + ms(p.step_s) + " = compute " + ms(p.compute_s) + " (" + pct(p.compute_s, p.step_s) + ") + comm " +
         ms(p.comm_s) + " (" + pct(p.comm_s, p.step_s) + ") + idle " + ms(p.idle_s) + " (" + pct(p.idle_s, p.step_s) +
         ")" + (p.bubble_s > 0 ? "; bubble " + pct(p.bubble_s, p.step_s) : "");
}

nlohmann::json phase_json(const PhaseSplit& p) {
  return {{"step_s", p.step_s},       {"compute_s", p.compute_s}, {"comm_s", p.comm_s},
          {"idle_s", p.idle_s},       {"comm_share", num(p.comm_share)}, {"bubble_s", p.bubble_s},
          {"bubble_share", num(p.bubble_share)}, {"samples", p.samples}};
}

}  // namespace

std::map<int, int> moe_experts_per_layer(const std::string& config_json) {
  std::map<int, int> out;
  if (config_json.empty()) return out;
  const auto cfg = nlohmann::json::parse(config_json, nullptr, false);
  if (cfg.is_discarded() || !cfg.is_object() || !cfg.contains("moe") || !cfg["moe"].is_object()) return out;
  const auto& moe = cfg["moe"];
  if (!moe.contains("moe_layers") || !moe["moe_layers"].is_array()) return out;
  const auto& layers = moe["moe_layers"];
  const nlohmann::json experts = moe.contains("experts") ? moe["experts"] : nlohmann::json();
  for (size_t i = 0; i < layers.size(); ++i) {
    if (!layers[i].is_number_integer()) continue;
    int e = 0;
    if (experts.is_array() && i < experts.size() && experts[i].is_number_integer()) e = experts[i].get<int>();
    else if (experts.is_number_integer()) e = experts.get<int>();
    out[layers[i].get<int>()] = e;
  }
  return out;
}

double RunSummary::last(const std::string& key) const {
  auto it = last_metrics.find(key);
  return it == last_metrics.end() ? kNaN : it->second;
}

namespace {
// RunSummary::steps' rule: distinct steps with a "loss" metric, else with any metric.
std::set<int64_t> training_steps(const std::vector<MetricPoint>& metrics) {
  std::set<int64_t> steps, any_steps;
  for (const MetricPoint& m : metrics) {
    any_steps.insert(m.step);
    if (m.key == "loss") steps.insert(m.step);
  }
  return steps.empty() ? any_steps : steps;  // a run that logs no training loss
}
}  // namespace

int64_t recorded_steps(const RunStore& store, int64_t run) {
  return int64_t(training_steps(store.metrics(run)).size());
}

RunSummary summarize_run(const RunStore& store, const RunInfo& run) {
  RunSummary out;
  out.run = run;
  for (const auto& [key, value] : store.tags(run.id)) {
    if (key == "predicted") out.predicted = true;
    if (key == "cluster") out.predicted_cluster = value;
    if (key == "emulated") out.emulated = value == "1";
    if (key == "emulated.cluster") out.emulated_cluster = value;
    if (key == "emulated.time_scale") out.emulated_time_scale = value;
  }
  if (!out.predicted) out.predicted_cluster.clear();

  // Metrics: steps, last values, speed means.
  std::vector<MetricPoint> metrics = store.metrics(run.id);
  const std::set<int64_t> steps = training_steps(metrics);
  std::map<std::string, std::vector<MetricPoint>> by_key;
  for (auto& m : metrics) by_key[m.key].push_back(std::move(m));
  for (auto& [key, points] : by_key) {
    std::stable_sort(points.begin(), points.end(),
                     [](const MetricPoint& a, const MetricPoint& b) { return a.step < b.step; });
    out.last_metrics[key] = points.back().value;
  }
  out.steps = int64_t(steps.size());
  if (!steps.empty()) {
    out.first_step = *steps.begin();
    out.last_step = *steps.rbegin();
  }
  if (auto it = by_key.find("step_ms"); it != by_key.end())
    out.mean_step_ms = mean_without_warmup(it->second, out.warmup_excluded);
  if (auto it = by_key.find("tokens_per_s"); it != by_key.end())
    out.mean_tokens_per_s = mean_without_warmup(it->second, out.warmup_excluded);

  if (auto hits = by_key.find("sparse_hits"); hits != by_key.end()) {
    auto mean = [&](const char* key) {
      bool excluded = false;
      auto it = by_key.find(key);
      return it == by_key.end() ? 0.0 : mean_without_warmup(it->second, excluded);
    };
    out.has_sparse = true;
    const double h = mean("sparse_hits"), m = mean("sparse_misses");
    if (h + m > 0) out.sparse_hit_rate = h / (h + m);
    out.sparse_read_per_step = mean("sparse_read_bytes");
    out.sparse_written_per_step = mean("sparse_written_bytes");
    out.sparse_stall_ms = mean("sparse_stall_ms");
    out.sparse_update_ms = mean("sparse_update_ms");
  }

  summarize_phases(store.spans(run.id), out);

  std::set<int64_t> traffic_steps;
  for (const auto& t : store.traffic(run.id)) {
    traffic_steps.insert(t.step);
    if (t.link == "inter_node") out.bytes_inter += t.bytes;
    else out.bytes_intra += t.bytes;
  }
  const int64_t per = std::max<int64_t>(out.steps, int64_t(traffic_steps.size()));
  if (per > 0) {
    out.bytes_intra_per_step = double(out.bytes_intra) / double(per);
    out.bytes_inter_per_step = double(out.bytes_inter) / double(per);
  }

  summarize_routing(store.routing(run.id), run.config_json, out);
  return out;
}

std::string format_summary(const RunSummary& s) {
  std::string t;
  if (s.predicted)
    t += "PREDICTED    by the simulator" + (s.predicted_cluster.empty() ? "" : " on cluster " + s.predicted_cluster) +
         ": nothing ran; every time below is predicted\n";
  if (s.emulated)
    t += "EMULATED     on " + (s.emulated_cluster.empty() ? std::string("a cluster") : s.emulated_cluster) +
         " (time scale x" + s.emulated_time_scale +
         "): every message paced over its links; times below are measured under emulation\n";
  t += "steps        " + std::to_string(s.steps);
  if (s.steps > 0) t += " (" + std::to_string(s.first_step) + ".." + std::to_string(s.last_step) + ")";
  t += "\n";
  if (!s.last_metrics.empty()) {
    std::string line = "last values ";
    for (const auto& [key, value] : s.last_metrics) {
      const std::string item = " " + key + " " + fmt("%.6g", value);
      if (line.size() + item.size() > 96) {
        t += line + "\n";
        line = "            ";
      }
      line += item;
    }
    t += line + "\n";
  }
  if (std::isfinite(s.mean_step_ms) || std::isfinite(s.mean_tokens_per_s)) {
    t += "speed        ";
    if (std::isfinite(s.mean_step_ms)) t += fmt("%.3f ms/step", s.mean_step_ms);
    if (std::isfinite(s.mean_tokens_per_s)) t += fmt("  %.0f tokens/s", s.mean_tokens_per_s);
    if (s.warmup_excluded) t += "  (first step left out as warm-up)";
    t += "\n";
  }
  if (s.has_phases) {
    t += "time split   " + phase_line(s.phases) + "  [mean per rank and step";
    t += s.phase_warmup_excluded ? ", warm-up step left out]\n" : "]\n";
    t += "comm share   " + (std::isfinite(s.phases.comm_share) ? fmt("%.1f%%", 100 * s.phases.comm_share) : "-") + "\n";
    if (s.phases.bubble_s > 0)
      t += "pipeline bubble " + fmt("%.1f%%", 100 * s.phases.bubble_share) + " of the step (" + ms(s.phases.bubble_s) +
           " waiting for a neighbouring stage, measured; part of comm)\n";
    if (s.rank_phases.size() > 1)
      for (size_t r = 0; r < s.rank_phases.size(); ++r)
        if (s.rank_phases[r].samples > 0) t += fmt("  rank %-5.0f  ", double(r)) + phase_line(s.rank_phases[r]) + "\n";
    for (const LayerPhase& l : s.layer_phases)
      t += fmt("  MoE layer %-2.0f", double(l.layer)) + fmt(" experts %.3f ms", 1e3 * l.compute_s) +
           fmt("  exchange %.3f ms\n", 1e3 * l.comm_s);
  } else {
    t += "time split   - (no step spans recorded)\n";
  }
  if (s.has_sparse)
    t += "SSD tier     host-cache hit rate " +
         (std::isfinite(s.sparse_hit_rate) ? fmt("%.1f%%", 100 * s.sparse_hit_rate) : std::string("-")) + ", read " +
         mb(s.sparse_read_per_step) + "/step, written " + mb(s.sparse_written_per_step) + "/step, update " +
         fmt("%.1f ms/step", s.sparse_update_ms) + fmt(" of which %.1f ms stalled on loads", s.sparse_stall_ms) +
         "  [all ranks, first step left out]\n";
  t += "traffic      intra-node " + mb(s.bytes_intra_per_step) + "/step (" + mb(double(s.bytes_intra)) +
       " total), inter-node " + mb(s.bytes_inter_per_step) + "/step (" + mb(double(s.bytes_inter)) + " total)\n";
  if (s.expert_load.empty()) {
    t += "expert load  - (no routing recorded)\n";
  } else {
    for (const auto& l : s.expert_load) {
      t += fmt("expert load  layer %-3.0f ", double(l.layer));
      t += std::isfinite(l.imbalance) ? fmt("imbalance %.3f", l.imbalance) : std::string("imbalance -");
      t += " (max " + std::to_string(l.max_tokens) + " tokens on expert " + std::to_string(l.busiest_expert) +
           fmt(", mean %.1f", l.mean_tokens) + " over " + std::to_string(l.experts) + " experts)\n";
    }
  }
  return t;
}

nlohmann::json run_info_json(const RunInfo& r) {
  return {{"id", r.id},
          {"uuid", r.uuid},
          {"name", r.name},
          {"experiment", r.experiment},
          {"status", run_status_name(r.status)},
          {"strategy", r.strategy},
          {"topology", r.topology},
          {"git_rev", r.git_rev},
          {"host", r.host},
          {"pid", r.pid},
          {"start_time", r.start_time},
          {"end_time", r.end_time > 0 ? nlohmann::json(r.end_time) : nlohmann::json(nullptr)},
          {"ranks", r.ranks}};
}

nlohmann::json summary_json(const RunSummary& s) {
  nlohmann::json j;
  j["run"] = run_info_json(s.run);
  j["predicted"] = s.predicted;
  j["emulated"] = s.emulated;
  if (s.emulated) j["emulated_on"] = {{"cluster", s.emulated_cluster}, {"time_scale", s.emulated_time_scale}};
  j["steps"] = s.steps;
  j["first_step"] = s.steps > 0 ? nlohmann::json(s.first_step) : nlohmann::json(nullptr);
  j["last_step"] = s.steps > 0 ? nlohmann::json(s.last_step) : nlohmann::json(nullptr);
  nlohmann::json last = nlohmann::json::object();
  for (const auto& [key, value] : s.last_metrics) last[key] = num(value);
  j["last_metrics"] = last;
  j["mean_step_ms"] = num(s.mean_step_ms);
  j["mean_tokens_per_s"] = num(s.mean_tokens_per_s);
  j["warmup_excluded"] = s.warmup_excluded;
  if (s.has_phases) {
    nlohmann::json p = phase_json(s.phases);
    p["warmup_excluded"] = s.phase_warmup_excluded;
    nlohmann::json per_rank = nlohmann::json::array();
    for (const auto& r : s.rank_phases) per_rank.push_back(r.samples > 0 ? phase_json(r) : nlohmann::json(nullptr));
    p["per_rank"] = per_rank;
    nlohmann::json layers = nlohmann::json::array();
    for (const LayerPhase& l : s.layer_phases)
      layers.push_back({{"layer", l.layer}, {"compute_s", l.compute_s}, {"comm_s", l.comm_s}});
    p["layers"] = layers;
    j["phases"] = p;
  } else {
    j["phases"] = nullptr;
  }
  if (s.has_sparse)
    j["ssd_tier"] = {{"hit_rate", num(s.sparse_hit_rate)},
                     {"read_bytes_per_step", s.sparse_read_per_step},
                     {"written_bytes_per_step", s.sparse_written_per_step},
                     {"update_ms_per_step", s.sparse_update_ms},
                     {"stall_ms_per_step", s.sparse_stall_ms}};
  j["span_steps"] = s.span_steps;
  j["traffic"] = {{"bytes_intra", s.bytes_intra},
                  {"bytes_inter", s.bytes_inter},
                  {"bytes_intra_per_step", s.bytes_intra_per_step},
                  {"bytes_inter_per_step", s.bytes_inter_per_step}};
  nlohmann::json loads = nlohmann::json::array();
  for (const auto& l : s.expert_load)
    loads.push_back({{"layer", l.layer},
                     {"experts", l.experts},
                     {"total_tokens", l.total_tokens},
                     {"max_tokens", l.max_tokens},
                     {"busiest_expert", l.busiest_expert},
                     {"mean_tokens", l.mean_tokens},
                     {"imbalance", num(l.imbalance)},
                     {"tokens", l.tokens}});
  j["expert_load"] = loads;
  j["max_imbalance"] = num(s.max_imbalance);
  return j;
}

}  // namespace moebench
