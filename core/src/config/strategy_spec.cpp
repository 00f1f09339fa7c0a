// The catalog of registered strategies (config/strategy_spec.h).
#include "moebench/config/strategy_spec.h"

#include <algorithm>
#include <deque>
#include <stdexcept>

#include "config_detail.h"

namespace moebench {
namespace {

struct Catalog {
  std::deque<StrategySpec> specs;  // stable addresses
  std::vector<const StrategySpec*> order;
  std::vector<std::string> names;
};

Catalog& catalog() {
  static Catalog c;
  return c;
}

// The built-ins come first, before any other registration or lookup. A plain flag, not a
// static's initializer: the built-ins' registration re-enters register_strategy_spec.
void ensure_builtins() {
  static bool started = false;
  if (started) return;
  started = true;
  register_builtin_strategies();
}

OptionDef option_of(std::string key, OptionKind kind, std::string doc) {
  OptionDef o;
  o.key = std::move(key);
  o.kind = kind;
  o.doc = std::move(doc);
  return o;
}

}  // namespace

OptionDef int_option(std::string key, int fallback, std::string doc) {
  OptionDef o = option_of(std::move(key), OptionKind::Int, std::move(doc));
  o.fallback.i = fallback;
  return o;
}

OptionDef bool_option(std::string key, bool fallback, std::string doc) {
  OptionDef o = option_of(std::move(key), OptionKind::Bool, std::move(doc));
  o.fallback.b = fallback;
  return o;
}

OptionDef float_option(std::string key, float fallback, std::string doc) {
  OptionDef o = option_of(std::move(key), OptionKind::Float, std::move(doc));
  o.fallback.f = fallback;
  return o;
}

OptionDef double_option(std::string key, double fallback, std::string doc) {
  OptionDef o = option_of(std::move(key), OptionKind::Double, std::move(doc));
  o.fallback.d = fallback;
  return o;
}

OptionDef string_option(std::string key, std::string fallback, std::string doc, std::vector<std::string> one_of) {
  OptionDef o = option_of(std::move(key), OptionKind::String, std::move(doc));
  o.fallback.s = std::move(fallback);
  o.one_of = std::move(one_of);
  return o;
}

OptionDef auto_or_number_option(std::string key, std::string fallback, std::string doc) {
  OptionDef o = option_of(std::move(key), OptionKind::AutoOrNumber, std::move(doc));
  o.fallback.s = std::move(fallback);
  return o;
}

OptionDef string_list_option(std::string key, std::string doc) {
  return option_of(std::move(key), OptionKind::StringList, std::move(doc));
}

void register_strategy_spec(StrategySpec spec) {
  ensure_builtins();
  if (config_detail::schema_built())
    throw std::logic_error("strategy \"" + spec.name + "\" registered after the config schema was built; register "
                           "strategies before the first config is loaded");
  if (spec.name.empty()) throw std::invalid_argument("a strategy needs a name");
  Catalog& c = catalog();
  if (std::find(c.names.begin(), c.names.end(), spec.name) != c.names.end())
    throw std::invalid_argument("strategy \"" + spec.name + "\" is registered twice");
  c.specs.push_back(std::move(spec));
  c.order.push_back(&c.specs.back());
  c.names.push_back(c.specs.back().name);
}

const std::vector<const StrategySpec*>& strategy_specs() {
  ensure_builtins();
  return catalog().order;
}

const std::vector<std::string>& strategy_names() {
  ensure_builtins();
  return catalog().names;
}

const StrategySpec* find_strategy_spec(const std::string& name) {
  for (const StrategySpec* s : strategy_specs())
    if (s->name == name) return s;
  return nullptr;
}

std::string known_strategies_text() {
  std::string known;
  for (const auto& n : strategy_names()) known += (known.empty() ? "" : ", ") + n;
  return known;
}

const StrategySpec& strategy_spec(const std::string& name) {
  if (const StrategySpec* s = find_strategy_spec(name)) return *s;
  throw std::invalid_argument("unknown strategy \"" + config_detail::excerpt(name) + "\" (known: " +
                              known_strategies_text() + ")");
}

std::vector<std::string> strategy_option_sections(const std::string& name) {
  const StrategySpec* spec = find_strategy_spec(name);
  if (!spec) return {};
  // Its own name even without options: the list must not be empty (empty means an unknown
  // name, for which check_strategy_options rejects nothing), and a section of no options
  // names no section of the schema, so every [strategy.<x>] key is rejected.
  std::vector<std::string> out = {name};
  for (const auto& r : spec->reads) out.push_back(r);
  if (spec->reads_member_sections)
    for (const StrategySpec* s : strategy_specs())
      if (s->per_block_member) out.push_back(s->name);
  return out;
}

std::vector<std::string> block_strategy_names(const StrategyConfig& s) {
  const StrategySpec* spec = find_strategy_spec(s.name);
  if (!spec) return {};
  if (!spec->chooser) return {s.name};
  std::vector<std::string> out;
  for (const std::string& n : spec->members ? spec->members(s) : spec->reads)
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  return out;
}

bool runs_any(const StrategyConfig& s, const std::function<bool(const StrategySpec&)>& pred) {
  for (const std::string& n : block_strategy_names(s))
    if (const StrategySpec* spec = find_strategy_spec(n); spec && pred(*spec)) return true;
  return false;
}

ExpertGroups expert_groups_of(const Config& cfg) {
  const StrategySpec* spec = find_strategy_spec(cfg.strategy.name);
  return spec ? spec->expert_groups : ExpertGroups::data_parallel;
}

}  // namespace moebench
