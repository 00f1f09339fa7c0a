// The strategy registry: one line per strategy (name -> factory in strategies/<name>.cpp).
#include "moebench/strategies/registry.h"

#include <stdexcept>
#include <utility>
#include <vector>

#include "moebench/config/strategy_names.h"

namespace moebench {

std::unique_ptr<MoeStrategy> make_expert_centric(const StrategyConfig& options);
std::unique_ptr<MoeStrategy> make_hier_a2a(const StrategyConfig& options);
std::unique_ptr<MoeStrategy> make_data_centric(const StrategyConfig& options);
std::unique_ptr<MoeStrategy> make_ppmoe(const StrategyConfig& options);
std::unique_ptr<MoeStrategy> make_monta(const StrategyConfig& options);
std::unique_ptr<MoeStrategy> make_fastermoe(const StrategyConfig& options);

namespace {
using Factory = std::unique_ptr<MoeStrategy> (*)(const StrategyConfig&);
const std::vector<std::pair<std::string, Factory>>& table() {
  static const std::vector<std::pair<std::string, Factory>> t = {
      {"expert_centric", make_expert_centric},
      {"hier_a2a", make_hier_a2a},
      {"data_centric", make_data_centric},
      {"ppmoe", make_ppmoe},
      {"monta", make_monta},
      {"fastermoe", make_fastermoe},
  };
  return t;
}
}  // namespace

std::unique_ptr<MoeStrategy> make_strategy(const std::string& name, const StrategyConfig& options) {
  if (name == "janus" || name == "per_block")
    throw std::invalid_argument(name + " is chosen per MoE block (block_strategies() in strategies/janus.h)");
  for (const auto& [n, f] : table())
    if (n == name) return f(options);
  std::string known;
  for (const auto& n : strategy_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown strategy \"" + name + "\" (known: " + known + ")");
}

}  // namespace moebench
