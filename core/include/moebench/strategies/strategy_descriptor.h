#pragma once
// A strategy in one place: its descriptor, registered beside its factory. The config-level part
// (StrategySpec, config/strategy_spec.h: options section, keys, defaults and checks, layout,
// per_block, memory terms, config rules) is what config/ and perf/ read; this adds what only
// code above strategies/ needs: the factory, how it picks block strategies (a chooser), the
// planner's candidates and when they apply. Costs are the strategy's own predict().
// Code outside strategies/ asks a descriptor and never compares strategy names; docs/strategies.md
// ("Adding a strategy") says how to add one.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "moebench/config/config.h"
#include "moebench/config/strategy_spec.h"
#include "moebench/moe/moe_strategy.h"
#include "moebench/perf/cluster_model.h"

namespace moebench {

// One option set the planner simulates (`moebench plan --cluster`): a label and how it changes
// the planned config's [strategy] (name already set, a chooser's list cleared).
struct PlannerCandidate {
  PlannerCandidate(std::string label_, std::function<void(StrategyConfig&)> tweak_, bool measured_ = false,
                   bool quick_ = false, bool calibration_ = false)
      : label(std::move(label_)), tweak(std::move(tweak_)), measured(measured_), quick(quick_), calibration(calibration_) {}
  std::string label;  // "data_centric + cache", ...
  std::function<void(StrategyConfig&)> tweak;
  // With the defaults as base: in `bench predictor`'s matrix of measured against predicted runs,
  // in its --quick matrix too, and among `calibrate`'s reference runs.
  bool measured = false, quick = false, calibration = false;
};

// One variant `moebench bench overlap` measures: a label, how it changes [strategy], and whether
// the compute / comm bound describes its overlap (false: it overlaps comm with comm, monta's
// chunks).
struct BenchVariant {
  BenchVariant(std::string label_, std::function<void(StrategyConfig&)> tweak_, bool bounded_ = true)
      : label(std::move(label_)), tweak(std::move(tweak_)), bounded(bounded_) {}
  std::string label;  // "expert_centric D=2", ...
  std::function<void(StrategyConfig&)> tweak;
  bool bounded = true;
};

struct StrategyDescriptor {
  StrategySpec spec;
  // A block strategy's factory, holding its typed options read from the config's values.
  std::function<std::unique_ptr<MoeStrategy>(const StrategyConfig&)> make;
  // A chooser's block strategies: MoE block -> strategy name, on `nodes` machines of
  // `per_node` ranks; and the text `moebench run` prints about its choice ("" = none).
  std::function<std::map<int, std::string>(const Config&, int nodes, int per_node)> choose;
  std::function<std::string(const Config&, int nodes, int per_node)> choice_note;
  // A chooser that takes an explicit list: sets s to run `blocks` (one per MoE block). The
  // planner writes its per-block mix with it.
  std::function<void(StrategyConfig& s, const std::vector<std::string>& blocks)> assign_blocks;
  // The planner's candidates from the planned config `base` (none: the planner leaves it out),
  // and why a candidate's config cannot run on its layout ("" = it can).
  std::function<std::vector<PlannerCandidate>(const Config& base)> candidates;
  std::function<std::string(const Config&)> inapplicable;
  // Its own part of the planner's report on cfg's cluster (monta's cost-model choice per block
  // under tensor parallelism): JSON (under its name; null = none) and text ("" = none).
  std::function<nlohmann::json(const Config&, const ClusterModel&)> plan_json;
  std::function<std::string(const Config&, const ClusterModel&)> plan_text;
  // The variants `bench overlap` measures of one block on cfg's layout with `tp` tensor-parallel
  // ranks on `nodes` nodes (none: it is not measured there).
  std::function<std::vector<BenchVariant>(const Config& cfg, int tp, int nodes)> overlap_variants;
  // Whether its blocks route through FasterMoE's topology-aware gate (moe/topo_gate.h) under
  // these options.
  std::function<bool(const StrategyConfig&)> topo_gate;
  // Whether its cost model chooses at run time from the cluster's measured AllToAll / AllGather
  // curves under cfg (monta's "auto"): `moebench run` then fills them from this host's
  // `bench comm` records (cli/measured_comm_curves.h).
  std::function<bool(const Config&)> reads_comm_curves;
};

// Registers `d` (its spec with config/strategy_spec.h). A block strategy needs `make`, a
// chooser `choose`; throws std::invalid_argument otherwise and as register_strategy_spec does.
void register_strategy(StrategyDescriptor d);

// The [strategy.<name>] section (TOML) of the options candidate `p` of `d` changes from their
// defaults; "" when it changes none.
std::string candidate_section(const StrategyDescriptor& d, const PlannerCandidate& p);

const StrategyDescriptor& strategy_descriptor(const std::string& name);  // throws for an unknown name
const std::vector<const StrategyDescriptor*>& strategy_descriptors();     // in registration order

}  // namespace moebench
