#include "moebench/perf/ddl_prediction.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <utility>

#include "moebench/config/config_json.h"
#include "moebench/config/config_layout.h"
#include "moebench/config/strategy_spec.h"
#include "moebench/model/param_count.h"
#include "moebench/perf/cluster_model.h"
#include "moebench/perf/fastermoe_model.h"

#include "ddl_point_math.h"

namespace moebench {
namespace {

constexpr const char* kCompPrefix = "fastermoe.predicted_comp_ms/block";
constexpr const char* kCommPrefix = "fastermoe.predicted_comm_ms/block";

using ddl_detail::layer_text;

// The block of a "<prefix><L>" key, or -1.
int block_of(const std::string& key, const std::string& prefix) {
  if (key.size() <= prefix.size() || key.compare(0, prefix.size(), prefix) != 0) return -1;
  int L = 0;
  for (size_t i = prefix.size(); i < key.size(); ++i) {
    if (key[i] < '0' || key[i] > '9' || L > 1000000) return -1;
    L = 10 * L + (key[i] - '0');
  }
  return L;
}

// Per-step mean of the metric's values (several values of a key in one step: their mean).
std::map<int64_t, double> step_means(const std::vector<MetricPoint>& points) {
  std::map<int64_t, std::pair<double, int>> acc;
  for (const auto& p : points) {
    auto& [sum, n] = acc[p.step];
    sum += p.value;
    ++n;
  }
  std::map<int64_t, double> out;
  for (const auto& [step, sn] : acc) out[step] = sn.first / sn.second;
  return out;
}

// What the run's stored config gives: the model sizes, and the layout and cluster source (b)
// is computed on (or why it cannot be).
struct RunModel {
  std::string config_error;  // no usable config: no FLOPs at all
  double H = 0, F = 0, ffn_mult = 0;
  double expert_params = 0;  // one expert's parameters (w1, b1, w2, b2)
  int microbatches = 1;
  std::map<int, int> experts;  // block -> experts (config)
  std::string layout_error;    // source (b) unavailable for every layer
  int world = 0, ep = 0;
  std::unique_ptr<ClusterModel> cluster;
  std::unique_ptr<ClusterNetwork> network;
};

RunModel run_model(const RunInfo& run) {
  RunModel m;
  if (run.config_json.empty()) {
    m.config_error = "the run stores no config (model.hidden, model.ffn_mult and the cluster are needed)";
    return m;
  }
  Config cfg;
  try {
    cfg = config_from_json(run.config_json);
  } catch (const std::invalid_argument& e) {
    m.config_error = e.what();
    return m;
  }
  if (cfg.model.hidden <= 0 || cfg.model.ffn_mult <= 0) {
    m.config_error = "the run's config has no positive model.hidden and model.ffn_mult (needed for eq. 1 and the FLOPs)";
    return m;
  }
  m.H = cfg.model.hidden;
  m.ffn_mult = cfg.model.ffn_mult;
  m.F = double(cfg.model.ffn_mult) * cfg.model.hidden;
  m.expert_params = param_pieces(cfg.model, TpShard{}, false).expert;
  m.microbatches = std::max(1, cfg.parallel.microbatches);
  for (size_t i = 0; i < cfg.moe.moe_layers.size(); ++i) m.experts[cfg.moe.moe_layers[i]] = cfg.experts_in_block(cfg.moe.moe_layers[i]);

  const ParallelConfig& par = cfg.parallel;
  m.world = run.ranks;
  if (par.tp > 1) {
    m.layout_error = "parallel.tp = " + std::to_string(par.tp) +
                     " is not covered by the predicted point (TP ranks hold the same tokens; where the experts "
                     "and their traffic go depends on the strategy)";
  } else if (par.pp > 1) {
    m.layout_error = "parallel.pp = " + std::to_string(par.pp) +
                     " is not covered by the predicted point (each pipeline stage holds only its blocks and ranks)";
  } else if (expert_groups_of(cfg) == ExpertGroups::tensor_parallel) {
    m.layout_error = "strategy " + cfg.strategy.name + " (experts inside the TP group) is not covered by the predicted point";
  } else if (run.ranks < 1) {
    m.layout_error = "the run records " + std::to_string(run.ranks) + " ranks";
  } else {
    Config ran = cfg;  // laid out over the ranks the run had
    ran.run.ranks = run.ranks;
    try {
      m.ep = layout_of(ran).ep();
    } catch (const std::invalid_argument& e) {
      m.layout_error = e.what();
    }
  }
  if (m.layout_error.empty()) {
    try {
      m.cluster = std::make_unique<ClusterModel>(cluster_spec(cfg.cluster, run.ranks));
      if (m.cluster->world_size() < run.ranks)
        m.layout_error = "the run's cluster (" + m.cluster->describe() + ") has fewer devices than its " +
                         std::to_string(run.ranks) + " ranks";
      else
        m.network = std::make_unique<ClusterNetwork>(*m.cluster);
    } catch (const std::exception& e) {
      m.layout_error = std::string("the run's cluster model: ") + e.what();
    }
  }
  return m;
}

// One layer's routing: step -> T (world x E, row-major), and the step's token sum.
struct LayerRouting {
  std::map<int64_t, std::map<std::pair<int, int>, double>> tokens;  // step -> (source, expert) -> tokens
  std::map<int64_t, double> assignments;
  int max_source = -1, max_expert = -1;
};

}  // namespace

std::string ddl_stored_comp_key(int layer) { return kCompPrefix + std::to_string(layer); }
std::string ddl_stored_comm_key(int layer) { return kCommPrefix + std::to_string(layer); }

DdlStepPrediction ddl_predict_step(const std::vector<double>& tokens, int world, int experts, int ep, double H,
                                   double F, const ClusterModel& cluster, const ClusterNetwork& network) {
  if (world < 1 || ep < 1 || world % ep != 0 || experts < 1 || experts % ep != 0)
    throw std::invalid_argument("ddl_predict_step: " + std::to_string(world) + " ranks, EP groups of " +
                                std::to_string(ep) + " and " + std::to_string(experts) +
                                " experts: the EP size must divide both");
  if (tokens.size() != size_t(world) * size_t(experts))
    throw std::invalid_argument("ddl_predict_step: tokens has " + std::to_string(tokens.size()) +
                                " entries, expected ranks x experts = " + std::to_string(size_t(world) * experts));
  const int per_rank = experts / ep;
  const double row_bytes = H * cluster.wire_element_bytes();  // the runtime's fp32 rows, or the cluster's precision
  DdlStepPrediction out;
  out.loads.assign(size_t(world), 0.0);
  LinkTraffic traffic(network);
  for (int g = 0; g < world / ep; ++g) {
    std::vector<int> ranks((size_t)ep);
    for (int i = 0; i < ep; ++i) ranks[size_t(i)] = g * ep + i;
    std::vector<double> bytes(size_t(ep) * size_t(ep), 0.0);
    for (int i = 0; i < ep; ++i)
      for (int e = 0; e < experts; ++e) {
        const double t = tokens[size_t(g * ep + i) * size_t(experts) + size_t(e)];
        const int j = e / per_rank;  // the owner's index in the group
        out.loads[size_t(g * ep + j)] += t;
        if (j != i) bytes[size_t(i) * size_t(ep) + size_t(j)] += t * row_bytes;
      }
    traffic.add_all_to_all_v(ranks, bytes);
  }
  out.comp_s = fastermoe_comp_seconds(out.loads, H, F, cluster);
  out.comm_s = traffic.seconds();
  return out;
}

double ddl_expert_allreduce_seconds(int world, int experts, int ep, double expert_params,
                                    const ClusterNetwork& network) {
  if (world < 1 || ep < 1 || world % ep != 0 || experts < 1 || experts % ep != 0)
    throw std::invalid_argument("ddl_expert_allreduce_seconds: " + std::to_string(world) + " ranks, EP groups of " +
                                std::to_string(ep) + " and " + std::to_string(experts) +
                                " experts: the EP size must divide both");
  if (world == ep) return 0.0;  // one copy of each expert: nothing to sum
  const double S = double(experts / ep) * expert_params * network.cluster().wire_element_bytes();  // gradients per rank
  LinkTraffic traffic(network);
  for (int i = 0; i < ep; ++i) {
    std::vector<int> replicas;
    for (int w = i; w < world; w += ep) replicas.push_back(w);
    traffic.add_ring_all_reduce(replicas, S);
  }
  return traffic.seconds();
}

std::vector<DdlPredictedPoint> ddl_predicted_points(const RunStore& store, const RunInfo& run) {
  const std::vector<RoutingRow> routing = store.routing(run.id);
  // layer -> step -> stored latencies (ms)
  std::map<int, std::map<int64_t, double>> stored_comp, stored_comm;
  for (const std::string& key : store.metric_keys(run.id)) {
    const int comp = block_of(key, kCompPrefix), comm = block_of(key, kCommPrefix);
    if (comp >= 0) stored_comp[comp] = step_means(store.metrics(run.id, key));
    if (comm >= 0) stored_comm[comm] = step_means(store.metrics(run.id, key));
  }

  DdlPredictedPoint whole;
  whole.run_id = run.id;
  whole.run_name = run.name;
  whole.layer = -1;
  if (routing.empty()) {
    whole.reason = "no routing rows recorded for this run (the predicted point needs the tokens per expert)";
    return {whole};
  }

  // Warm-up: ddl_roofline's rule on the steps with spans, else on the steps with routing rows.
  std::vector<int64_t> steps = store.steps_with(run.id, RecordTable::spans);
  if (steps.empty()) steps = store.steps_with(run.id, RecordTable::routing);
  const bool warmup = steps.size() > 2;
  const int64_t skip_step = warmup ? steps.front() : std::numeric_limits<int64_t>::min();

  std::map<int, LayerRouting> by_layer;
  std::set<int> layers;
  for (const auto& r : routing) {
    layers.insert(r.layer);
    if (r.step == skip_step) continue;
    LayerRouting& l = by_layer[r.layer];
    l.tokens[r.step][{r.source_rank, r.expert}] += double(r.tokens);
    l.assignments[r.step] += double(r.tokens);
    l.max_source = std::max(l.max_source, r.source_rank);
    l.max_expert = std::max(l.max_expert, r.expert);
  }
  for (const auto& [L, v] : stored_comp) layers.insert(L);
  for (const auto& [L, v] : stored_comm) layers.insert(L);
  const RunModel model = run_model(run);
  for (const auto& [L, e] : model.experts) layers.insert(L);

  std::vector<DdlPredictedPoint> out;
  ddl_detail::WholeRun sums;
  for (int L : layers) {
    DdlPredictedPoint p;
    p.run_id = run.id;
    p.run_name = run.name;
    p.layer = L;
    p.warmup_excluded = warmup;
    const auto rit = by_layer.find(L);
    const auto cit = stored_comp.find(L), mit = stored_comm.find(L);
    // Why source (b) cannot be computed for this layer ("" when it can).
    std::string layout = model.layout_error;
    const auto eit = model.experts.find(L);
    const int E = eit == model.experts.end() ? 0 : eit->second;
    if (layout.empty() && rit != by_layer.end()) {
      if (E < 1)
        layout = "the config names no experts for block " + std::to_string(L);
      else if (E % model.ep != 0)
        layout = std::to_string(E) + " experts of " + layer_text(L) + " do not split over EP groups of " +
                 std::to_string(model.ep);
      else if (rit->second.max_expert >= E)
        layout = "routing rows of " + layer_text(L) + " name expert " + std::to_string(rit->second.max_expert) +
                 " of " + std::to_string(E);
      else if (rit->second.max_source >= model.world)
        layout = "routing rows of " + layer_text(L) + " name source rank " + std::to_string(rit->second.max_source) +
                 " of " + std::to_string(model.world);
    }
    if (!model.config_error.empty()) {
      p.reason = model.config_error;
    } else if (run.ranks < 1) {
      p.reason = "the run records " + std::to_string(run.ranks) + " ranks (N of eq. 4 must be >= 1)";
    } else if (rit == by_layer.end()) {
      p.reason = "no routing rows of " + layer_text(L) + (warmup ? " after the warm-up step" : "") +
                 ": the tokens (B_w) are unknown";
    } else {
      double comp = 0, comm = 0, e2e = 0, flops = 0;
      int64_t n = 0, from_metrics = 0, from_routing = 0;
      const double flops_per_assignment = 12.0 * model.ffn_mult * model.H * model.H;
      // The layer's expert gradient all-reduce, once per step (0 without replicas; left out
      // where the layout is not covered: ddl_prediction.h).
      const double allreduce = layout.empty() ? ddl_expert_allreduce_seconds(model.world, E, model.ep,
                                                                             model.expert_params, *model.network)
                                              : 0.0;
      for (const auto& [step, cells] : rit->second.tokens) {
        double c = 0, m = 0;
        const bool has_c = cit != stored_comp.end() && cit->second.count(step);
        const bool has_m = mit != stored_comm.end() && mit->second.count(step);
        if (has_c && has_m) {
          c = cit->second.at(step) * 1e-3 * model.microbatches;
          m = mit->second.at(step) * 1e-3 * model.microbatches;
          ++from_metrics;
        } else if (layout.empty()) {
          std::vector<double> T(size_t(model.world) * size_t(E), 0.0);
          for (const auto& [se, t] : cells)
            if (se.first >= 0 && se.second >= 0) T[size_t(se.first) * size_t(E) + size_t(se.second)] += t;
          const DdlStepPrediction s = ddl_predict_step(T, model.world, E, model.ep, model.H, model.F, *model.cluster, *model.network);
          c = s.comp_s;
          m = s.comm_s;
          ++from_routing;
        } else {
          p.reason = "step " + std::to_string(step) + " of " + layer_text(L) +
                     " has no stored fastermoe predictions and eq. 1-2 cannot be evaluated: " + layout;
          break;
        }
        comp += 3.0 * c;  // the step's rounds, as the measured side sums them (ddl_prediction.h)
        comm += 4.0 * m + allreduce;
        e2e += 3.0 * c + 4.0 * m + allreduce;
        flops += flops_per_assignment * rit->second.assignments.at(step);
        ++n;
      }
      if (p.reason.empty()) {
        p.steps_used = n;
        p.steps_from_metrics = from_metrics;
        p.steps_from_routing = from_routing;
        if (n == 0) {
          p.reason = "no step with routing rows of " + layer_text(L);
        } else {
          ddl_detail::finish_layer(p, comp, comm, e2e, flops, n, run.ranks,
                                   "the predicted communication (every token stays on its rank) of",
                                   "the predicted expert compute of");
        }
      }
    }
    sums.add(p, "predicted point");
    if (p.has_point()) {
      whole.steps_from_metrics = std::max(whole.steps_from_metrics, p.steps_from_metrics);
      whole.steps_from_routing = std::max(whole.steps_from_routing, p.steps_from_routing);
    }
    out.push_back(std::move(p));
  }

  whole.warmup_excluded = warmup;
  sums.finish(whole, run.ranks);
  if (!whole.has_point()) whole.steps_from_metrics = whole.steps_from_routing = 0;
  out.push_back(std::move(whole));
  return out;
}

}  // namespace moebench
