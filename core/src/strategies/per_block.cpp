// per_block: each MoE block's strategy named in [strategy.per_block] blocks (`plan
// --write-config` writes the planner's choice); its blocks read the option sections of the
// strategies they name.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "moebench/strategies/strategy_descriptor.h"

namespace moebench {
namespace {

std::vector<std::string> members() {
  std::vector<std::string> out;
  for (const StrategySpec* s : strategy_specs())
    if (s->per_block_member) out.push_back(s->name);
  return out;
}

std::string listed(const std::vector<std::string>& names, const char* sep, const char* last) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? last : sep) + names[i];
  return s;
}

// One strategy per moe.moe_layers entry, each one that runs a block alone.
void check_blocks(StrategyCheck& check) {
  const Config& c = check.config();
  if (!check.ok({"strategy.name", "strategy.per_block.blocks", "moe.moe_layers"}) || c.strategy.name != "per_block") return;
  const std::vector<std::string>& blocks = c.strategy.option("per_block.blocks").strings;
  if (blocks.size() != c.moe.moe_layers.size())
    check.fail("strategy.per_block.blocks", "needs one strategy per moe.moe_layers entry (" +
                                                std::to_string(c.moe.moe_layers.size()) + "), got " +
                                                std::to_string(blocks.size()));
  const std::vector<std::string> allowed = members();
  for (const std::string& n : blocks)
    if (std::find(allowed.begin(), allowed.end(), n) == allowed.end()) {
      std::string text = "\"";
      text.append(n, 0, 48).append("\" cannot run one block (expected ").append(listed(allowed, ", ", " or ")).append(")");
      check.fail("strategy.per_block.blocks", text);
      break;
    }
}

}  // namespace

StrategyDescriptor per_block_descriptor() {
  StrategyDescriptor d;
  d.spec.name = "per_block";
  d.spec.summary = "one strategy per MoE block, as listed (the planner's choice, plan --write-config)";
  d.spec.options = {string_list_option(
      "blocks", "one strategy per moe.moe_layers entry: " + listed(members(), " | ", " | ") + " (plan --write-config)")};
  d.spec.reads_member_sections = true;
  d.spec.chooser = true;
  d.spec.members = [](const StrategyConfig& s) { return s.option("per_block.blocks").strings; };
  d.spec.check = check_blocks;
  d.choose = [](const Config& cfg, int, int) {
    std::map<int, std::string> out;
    const std::vector<std::string>& blocks = cfg.strategy.option("per_block.blocks").strings;
    for (size_t i = 0; i < cfg.moe.moe_layers.size() && i < blocks.size(); ++i) out[cfg.moe.moe_layers[i]] = blocks[i];
    return out;
  };
  d.assign_blocks = [](StrategyConfig& s, const std::vector<std::string>& blocks) {
    s.name = "per_block";
    s.option("per_block.blocks").strings = blocks;
  };
  return d;
}

}  // namespace moebench
