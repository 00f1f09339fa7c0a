// The strategy registry: the one place that lists the built-in strategies (each one's
// descriptor lives in its own file, strategies/<name>.cpp), and the descriptors by name.
#include "moebench/strategies/registry.h"

#include <deque>
#include <stdexcept>

#include "moebench/config/config_loader.h"

namespace moebench {

StrategyDescriptor expert_centric_descriptor();
StrategyDescriptor hier_a2a_descriptor();
StrategyDescriptor data_centric_descriptor();
StrategyDescriptor janus_descriptor();
StrategyDescriptor ppmoe_descriptor();
StrategyDescriptor monta_descriptor();
StrategyDescriptor fastermoe_descriptor();
StrategyDescriptor per_block_descriptor();

namespace {

struct Registry {
  std::deque<StrategyDescriptor> all;  // stable addresses
  std::vector<const StrategyDescriptor*> order;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

// Called once by config/strategy_spec.cpp before its first lookup (the hook that keeps the
// built-ins registered in every binary: the core library is static). The first is the default
// strategy.name.
void register_builtin_strategies() {
  for (auto* describe : {expert_centric_descriptor, hier_a2a_descriptor, data_centric_descriptor, janus_descriptor,
                         ppmoe_descriptor, monta_descriptor, fastermoe_descriptor, per_block_descriptor})
    register_strategy(describe());
}

void register_strategy(StrategyDescriptor d) {
  if (!d.spec.chooser && !d.make)
    throw std::invalid_argument("strategy \"" + d.spec.name + "\" runs blocks itself but has no factory");
  if (d.spec.chooser && !d.choose)
    throw std::invalid_argument("strategy \"" + d.spec.name + "\" chooses per block but has no choose()");
  register_strategy_spec(d.spec);  // first: it checks the name
  Registry& r = registry();
  r.all.push_back(std::move(d));
  r.order.push_back(&r.all.back());
}

const std::vector<const StrategyDescriptor*>& strategy_descriptors() {
  strategy_specs();  // the built-ins first
  return registry().order;
}

const StrategyDescriptor& strategy_descriptor(const std::string& name) {
  for (const StrategyDescriptor* d : strategy_descriptors())
    if (d->spec.name == name) return *d;
  strategy_spec(name);  // throws, listing the known names
  throw std::logic_error("strategy \"" + name + "\" has a spec but no descriptor");
}

std::unique_ptr<MoeStrategy> make_strategy(const std::string& name, const StrategyConfig& options) {
  const StrategyDescriptor& d = strategy_descriptor(name);
  if (!d.make) throw std::invalid_argument(name + " is chosen per MoE block (block_strategies() in strategies/registry.h)");
  return d.make(options);
}

std::string candidate_section(const StrategyDescriptor& d, const PlannerCandidate& p) {
  StrategyConfig s;
  s.name = d.spec.name;
  p.tweak(s);
  return changed_options_toml(s, d.spec.name);
}

std::map<int, std::string> block_strategies(const Config& cfg, int nodes, int workers_per_node) {
  const StrategyDescriptor& d = strategy_descriptor(cfg.strategy.name);
  if (d.choose) return d.choose(cfg, nodes, workers_per_node);
  std::map<int, std::string> out;
  for (int block : cfg.moe.moe_layers) out[block] = cfg.strategy.name;
  return out;
}

}  // namespace moebench
