// The strategies' own options ([strategy.<name>], per_block's list) and monta's levels and chunks
// against the layout (config_checker.h).
#include <algorithm>
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
      if (n != "expert_centric" && n != "hier_a2a" && n != "data_centric" && n != "monta") {
        fail("strategy.per_block.blocks", "\"" + excerpt(n) + "\" cannot run one block (expected expert_centric, hier_a2a, "
                                   "data_centric or monta)");
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
