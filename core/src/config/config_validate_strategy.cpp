// The strategies' own options ([strategy.<name>], per_block's list) and monta's levels and chunks
// against the layout (config_checker.h).
#include <algorithm>
#include <map>
#include <string>

#include "config_checker.h"
#include "moebench/config/strategy_names.h"

namespace moebench::config_detail {

// [strategy.<x>] sections: only those of the chosen strategy (janus: also expert_centric's and
// data_centric's) may be set; then each option's range.
void Checker::check_strategy_options() {
  if (ok({"strategy.name"})) {
    const std::vector<std::string> applies = strategy_option_sections(c_.strategy.name);
    if (!applies.empty())
      for (const auto& [key, origin] : st_.origins) {
        if (!key.starts_with("strategy.") || key == "strategy.name") continue;
        const std::string rest = key.substr(9), section = rest.substr(0, rest.find('.'));
        if (std::find(applies.begin(), applies.end(), section) != applies.end()) continue;
        std::string users;
        for (const auto& n : strategy_names()) {
          const auto s = strategy_option_sections(n);
          if (std::find(s.begin(), s.end(), section) != s.end()) users += (users.empty() ? "" : " or ") + n;
        }
        fail(key, "[strategy." + section + "] does not apply to strategy.name = \"" + excerpt(c_.strategy.name) +
                      "\" (it is read by " + users + "); remove it or choose that strategy");
      }
  }
  const auto& o = c_.strategy;
  if (ok({"strategy.name", "strategy.per_block.blocks", "moe.moe_layers"}) && o.name == "per_block") {
    if (o.per_block.blocks.size() != c_.moe.moe_layers.size())
      fail("strategy.per_block.blocks", "needs one strategy per moe.moe_layers entry (" +
                                     std::to_string(c_.moe.moe_layers.size()) + "), got " +
                                     std::to_string(o.per_block.blocks.size()));
    for (const std::string& n : o.per_block.blocks)
      if (n != "expert_centric" && n != "hier_a2a" && n != "data_centric" && n != "monta" && n != "fastermoe") {
        fail("strategy.per_block.blocks", "\"" + excerpt(n) + "\" cannot run one block (expected expert_centric, hier_a2a, "
                                   "data_centric, monta or fastermoe)");
        break;
      }
  }
  at_least("strategy.data_centric.credits", o.data_centric.credits, 1);
  if (ok({"strategy.data_centric.pcie_pairing", "cluster.pcie_switch_pairs"}) && o.data_centric.pcie_pairing &&
      c_.cluster.pcie_switch_pairs.empty())
    fail("strategy.data_centric.pcie_pairing", "needs cluster.pcie_switch_pairs (which local ranks share a PCIe switch)");
  non_negative("strategy.janus.threshold", o.janus.threshold);
  // overlap_degree D cuts each expert's rows into D chunks: at least 1, at most the tokens of
  // a rank (train.batch_size / dp sequences of model.seq_len: the ranks of a tensor-parallel
  // group share their sequences), else chunks stay empty.
  const int dp = data_parallel(), micro = c_.parallel.microbatches;
  const int64_t tokens = dp >= 1 && micro >= 1 && c_.train.batch_size % ((int64_t)dp * micro) == 0
                             ? (int64_t)c_.train.batch_size / dp / micro * c_.model.seq_len : 0;
  std::string per_rank = c_.parallel.dp > 0  ? "train.batch_size / parallel.dp"
                         : c_.parallel.tp > 1 || c_.parallel.pp > 1 ? "train.batch_size / (run.ranks / (parallel.tp x parallel.pp))"
                                                                   : "train.batch_size / run.ranks";
  if (micro > 1) per_rank += " / parallel.microbatches";
  for (const auto& [key, d] : {std::pair<const char*, int>{"strategy.expert_centric.overlap_degree",
                                                           o.expert_centric.overlap_degree},
                               {"strategy.hier_a2a.overlap_degree", o.hier_a2a.overlap_degree}}) {
    at_least(key, d, 1);
    if (ok({key, "train.batch_size", "model.seq_len"}) && tokens > 0 && d > tokens)
      fail(key, "must be at most the " + std::to_string(tokens) + " tokens of a rank (" + per_rank +
                    " x model.seq_len), got " + std::to_string(d));
  }
  check_monta(tokens, per_rank);
  at_least("strategy.fastermoe.group_size", o.fastermoe.group_size, 0, " (0 = the EP ranks of a node)");
  non_negative_number("strategy.fastermoe.shadow_budget_mb", o.fastermoe.shadow_budget_mb);
}

// [strategy.fastermoe] against the layout: smart's groups divide the expert-parallel group (by
// group_size, or as the nodes cut it: group_size = 0), and a shadow budget holds one expert.
void Checker::check_fastermoe(const ParallelLayout& layout, int per_node) {
  const FasterMoeOptions& f = c_.strategy.fastermoe;
  const int ep = layout.ep();
  if (ok({"strategy.fastermoe.smart", "strategy.fastermoe.group_size"}) && f.smart) {
    if (f.group_size > 0 && ep % f.group_size != 0) {
      fail("strategy.fastermoe.group_size", "must divide the expert-parallel group of " + std::to_string(ep) +
                                                " ranks, got " + std::to_string(f.group_size));
    } else if (f.group_size == 0) {
      int g = 0;  // EP ranks per node: equal on every node of every group
      for (const std::vector<int>& members : layout.ep_groups()) {
        std::map<int, int> on_node;
        for (int r : members) ++on_node[r / per_node];
        for (const auto& [node, n] : on_node) {
          if (g == 0) g = n;
          if (n == g && ep % g == 0) continue;
          fail("strategy.fastermoe.smart", "groups the EP ranks of a node (group_size = 0), but an expert-parallel group of " +
                                                std::to_string(ep) + " ranks holds " + std::to_string(n) +
                                                " on node " + std::to_string(node) + " and " + std::to_string(g) +
                                                " on another; set group_size to a divisor of " + std::to_string(ep));
          return;
        }
      }
    }
  }
  if (ok({"strategy.fastermoe.shadow", "strategy.fastermoe.shadow_budget_mb", "model.hidden", "model.ffn_mult"}) &&
      f.shadow && f.shadow_budget_mb > 0) {
    const double C = c_.model.hidden, F = (double)c_.model.ffn_mult * c_.model.hidden;
    const double bytes = 2.0 * 4.0 * (2.0 * C * F + C + F);  // w1, b1, w2, b2 and their gradients, fp32
    if (f.shadow_budget_mb * 1e6 < bytes)
      fail("strategy.fastermoe.shadow_budget_mb", "cannot hold one shadowed expert: its parameters and gradients take " +
                                                      std::to_string(bytes / 1e6) + " MB (model.hidden = " +
                                                      std::to_string(c_.model.hidden) + ", model.ffn_mult = " +
                                                      std::to_string(c_.model.ffn_mult) + "), the budget is " +
                                                      std::to_string(f.shadow_budget_mb) + " MB");
  }
}

// [strategy.monta]: a known level; chunks "auto" or a whole number in [1, the tokens of a rank]
// (chunks cut the sequence); a level that drops rows needs tensor parallelism (tp = 1 leaves
// nothing redundant to drop).
void Checker::check_monta(int64_t tokens, const std::string& per_rank) {
  const MontaOptions& m = c_.strategy.monta;
  static const std::vector<std::string> levels = {"baseline", "O1", "O2", "O3", "auto"};
  if (ok({"strategy.monta.level"}) && std::find(levels.begin(), levels.end(), m.level) == levels.end())
    fail("strategy.monta.level", "must be baseline, O1, O2, O3 or auto, got \"" + excerpt(m.level) + "\"");
  if (ok({"strategy.monta.chunks"}) && m.chunks != "auto") {
    const auto v = auto_or_number_value(m.chunks);
    if (!v || !(*v >= 1) || *v != std::floor(*v) || *v > 1e9)
      fail("strategy.monta.chunks", "must be \"auto\" or a whole number >= 1, got \"" + excerpt(m.chunks) + "\"");
    else if (ok({"train.batch_size", "model.seq_len"}) && tokens > 0 && *v > (double)tokens)
      fail("strategy.monta.chunks", "must be at most the " + std::to_string(tokens) + " tokens of a rank (" + per_rank +
                                        " x model.seq_len), got " + m.chunks);
  }
  if (ok({"strategy.name", "strategy.monta.level", "parallel.tp"}) && c_.strategy.name == "monta" &&
      c_.parallel.tp == 1 && m.level != "baseline" && m.level != "auto")
    fail("strategy.monta.level", m.level + " drops the rows the tensor-parallel ranks hold alike, but parallel.tp = 1 "
                                 "(nothing to drop); use level = \"baseline\" or parallel.tp > 1",
         "parallel.tp");
}

}  // namespace moebench::config_detail
