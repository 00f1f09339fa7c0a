#include "moebench/perf/ddl_roofline.h"

#include "ddl_point_math.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

namespace moebench {
namespace {

using ddl_detail::layer_text;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One layer's spans on one rank in one step.
struct RankLayerStep {
  double comp = 0, comm = 0;
  double flops = 0;  // recorded FLOPs of the compute spans (0: none recorded)
  bool has_comp = false, has_comm = false;
  std::vector<std::pair<double, double>> intervals;  // [start, end)
};

double union_length(std::vector<std::pair<double, double>> iv) {
  std::sort(iv.begin(), iv.end());
  double total = 0, lo = 0, hi = 0;
  bool open = false;
  for (const auto& [a, b] : iv) {
    if (!open || a > hi) {
      if (open) total += hi - lo;
      lo = a;
      hi = b;
      open = true;
    } else {
      hi = std::max(hi, b);
    }
  }
  if (open) total += hi - lo;
  return total;
}

struct ModelDims {
  double hidden = 0, ffn_mult = 0;
  std::set<int> moe_layers;
  std::string error;  // why hidden/ffn_mult could not be read
};

ModelDims dims_from_config(const std::string& config_json) {
  ModelDims d;
  if (config_json.empty()) {
    d.error = "the run stores no config (model.hidden, model.ffn_mult are needed for the FLOPs)";
    return d;
  }
  const auto cfg = nlohmann::json::parse(config_json, nullptr, false);
  if (cfg.is_discarded() || !cfg.is_object()) {
    d.error = "the run's stored config is not a JSON object";
    return d;
  }
  if (cfg.contains("moe") && cfg["moe"].is_object() && cfg["moe"].contains("moe_layers") &&
      cfg["moe"]["moe_layers"].is_array())
    for (const auto& l : cfg["moe"]["moe_layers"])
      if (l.is_number_integer()) d.moe_layers.insert(l.get<int>());
  const auto model = cfg.contains("model") && cfg["model"].is_object() ? cfg["model"] : nlohmann::json();
  for (const char* key : {"hidden", "ffn_mult"}) {
    if (!model.is_object() || !model.contains(key) || !model[key].is_number() || model[key].get<double>() <= 0) {
      d.error = std::string("the run's config has no positive model.") + key + " (needed for the FLOPs)";
      return d;
    }
  }
  d.hidden = model["hidden"].get<double>();
  d.ffn_mult = model["ffn_mult"].get<double>();
  return d;
}

}  // namespace

double ddl_ideal_gflops(double r_cc, double peak_gflops) { return peak_gflops * std::min(1.0, r_cc); }

double ddl_semi_ideal_gflops(double r_cc, double peak_gflops) {
  if (std::isinf(r_cc) && r_cc > 0) return peak_gflops;
  return peak_gflops * r_cc / (r_cc + 1.0);
}

double ddl_parse_peak_gflops(const std::string& value, const RunInfo& run) {
  double v = kNaN;
  size_t used = 0;
  try {
    v = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  while (used < value.size() && std::isspace(static_cast<unsigned char>(value[used]))) ++used;
  if (used == 0 || used != value.size() || !std::isfinite(v) || v <= 0)
    throw std::invalid_argument("run '" + run.name + "' (id " + std::to_string(run.id) + "): param peak_gflops = '" +
                                value + "' is not a positive number of GFLOP/s");
  return v;
}

std::optional<double> ddl_stored_peak_gflops(const RunStore& store, const RunInfo& run) {
  for (const auto& [key, value] : store.params(run.id))
    if (key == "peak_gflops") return ddl_parse_peak_gflops(value, run);
  return std::nullopt;
}

std::string ddl_stored_peak_source(const RunStore& store, const RunInfo& run) {
  for (const auto& [key, value] : store.params(run.id))
    if (key == "peak_gflops_source") return value;
  return {};
}

bool moe_block_task(const std::string& name) {
  for (const char* other : {"attn.", "ffn.", "tp.", "pp.", "grad.", "dense."})
    if (name.rfind(other, 0) == 0) return false;
  return true;
}

std::vector<DdlPoint> ddl_roofline_points(const RunStore& store, const RunInfo& run) {
  const std::vector<SpanRow> spans = store.spans(run.id);
  const std::vector<RoutingRow> routing = store.routing(run.id);

  DdlPoint whole;
  whole.run_id = run.id;
  whole.run_name = run.name;
  whole.layer = -1;
  if (spans.empty()) {
    whole.reason = "no spans recorded for this run";
    return {whole};
  }

  // Warm-up: the first step with spans, when more than 2 steps have spans.
  std::set<int64_t> span_steps;
  for (const auto& s : spans) span_steps.insert(s.step);
  const bool warmup = span_steps.size() > 2;
  const int64_t skip_step = warmup ? *span_steps.begin() : std::numeric_limits<int64_t>::min();

  // layer -> step -> rank -> the layer's spans there
  std::map<int, std::map<int64_t, std::map<int, RankLayerStep>>> by_layer;
  std::set<int> layers;
  for (const auto& s : spans) {
    if (s.layer < 0 || !moe_block_task(s.name)) continue;
    const bool comp = s.stream == "compute" && s.category == "compute";
    // Host comm spans are the main thread's waits and issues (janus.prefetch); the one that
    // moves the layer's own bytes there is its experts' gradient all-reduce.
    const bool comm = s.category == "comm" && (s.stream != "host" || s.name == "expert.allreduce");
    if (!comp && !comm) continue;
    layers.insert(s.layer);
    if (s.step == skip_step) continue;
    RankLayerStep& acc = by_layer[s.layer][s.step][s.rank];
    (comp ? acc.comp : acc.comm) += s.duration;
    if (comp) acc.flops += s.flops;
    (comp ? acc.has_comp : acc.has_comm) = true;
    acc.intervals.emplace_back(s.start, s.start + s.duration);
  }
  // layer -> step -> token-expert assignments (sum over source ranks and experts)
  std::map<int, std::map<int64_t, int64_t>> assignments;
  for (const auto& r : routing) {
    layers.insert(r.layer);
    assignments[r.layer][r.step] += r.tokens;
  }
  const ModelDims dims = dims_from_config(run.config_json);
  for (int l : dims.moe_layers) layers.insert(l);

  std::vector<DdlPoint> out;
  ddl_detail::WholeRun sums;
  for (int L : layers) {
    DdlPoint p;
    p.run_id = run.id;
    p.run_name = run.name;
    p.layer = L;
    p.warmup_excluded = warmup;
    const auto steps_it = by_layer.find(L);
    const auto routed_it = assignments.find(L);
    bool any_comp = false, any_comm = false, any_flops = false;
    if (steps_it != by_layer.end())
      for (const auto& [step, ranks] : steps_it->second)
        for (const auto& [rank, acc] : ranks) {
          any_comp = any_comp || acc.has_comp;
          any_comm = any_comm || acc.has_comm;
          any_flops = any_flops || acc.flops > 0;
        }
    if (!dims.error.empty()) {
      p.reason = dims.error;
    } else if (run.ranks < 1) {
      p.reason = "the run records " + std::to_string(run.ranks) + " ranks (N of eq. 4 must be >= 1)";
    } else if (steps_it == by_layer.end()) {
      p.reason = "no spans of " + layer_text(L) + (warmup ? " after the warm-up step" : "");
    } else if (!any_comp) {
      p.reason = "no expert compute spans (stream compute) of " + layer_text(L) + ": Lat_comp unknown";
    } else if (!any_comm) {
      p.reason = "no communication spans (category comm) of " + layer_text(L) +
                 ": R_CC undefined";
    } else if (routed_it == assignments.end() && !any_flops) {
      p.reason = "no routing rows of " + layer_text(L) + ": the tokens (sum of B_w) are unknown";
    } else {
      double comp = 0, comm = 0, e2e = 0, flops = 0;
      int64_t n = 0;
      const double flops_per_assignment = 12.0 * dims.ffn_mult * dims.hidden * dims.hidden;
      for (const auto& [step, ranks] : steps_it->second) {
        double step_comp = 0, step_comm = 0, step_e2e = 0, recorded = 0;
        for (const auto& [rank, acc] : ranks) {
          step_comp = std::max(step_comp, acc.comp);
          step_comm = std::max(step_comm, acc.comm);
          step_e2e = std::max(step_e2e, union_length(acc.intervals));
          recorded += acc.flops;
        }
        double step_flops = recorded;
        if (!(recorded > 0)) {
          if (routed_it == assignments.end()) continue;
          const auto tokens = routed_it->second.find(step);
          if (tokens == routed_it->second.end()) continue;
          step_flops = flops_per_assignment * double(tokens->second);
        }
        comp += step_comp;
        comm += step_comm;
        e2e += step_e2e;
        flops += step_flops;
        ++n;
      }
      if (n == 0) {
        p.reason = "no step has both spans and routing rows (or recorded FLOPs) of " + layer_text(L);
      } else {
        ddl_detail::finish_layer(p, comp, comm, e2e, flops, n, run.ranks, "the communication time of",
                                 "the expert compute time of");
      }
    }
    sums.add(p, "point");
    out.push_back(std::move(p));
  }

  whole.warmup_excluded = warmup;
  if (layers.empty()) whole.reason = "no MoE layer in the spans, the routing or the config";
  else sums.finish(whole, run.ranks);
  out.push_back(std::move(whole));
  return out;
}

}  // namespace moebench
