// The strategies' own options ([strategy.<name>]): which sections a config may set, the checks
// each option declares (config/strategy_spec.h), and each strategy's own rules, which live
// with the strategy (its descriptor's check and check_layout).
#include <algorithm>
#include <string>

#include "config_checker.h"
#include "moebench/config/strategy_spec.h"

namespace moebench::config_detail {
namespace {

// The checker as a strategy's rules see it.
class CheckerView : public StrategyCheck {
 public:
  CheckerView(Checker& checker, const Config& c) : checker_(checker), c_(c) {}
  const Config& config() const override { return c_; }
  bool ok(std::initializer_list<const char*> keys) const override { return checker_.ok(keys); }
  void fail(const std::string& key, const std::string& message, const std::string& fallback) override {
    checker_.fail(key, message, fallback);
  }

 private:
  Checker& checker_;
  const Config& c_;
};

std::string one_of_text(const std::vector<std::string>& values) {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i) s += (i == 0 ? "" : i + 1 == values.size() ? " or " : ", ") + values[i];
  return s;
}

}  // namespace

// [strategy.<x>] sections: only those the chosen strategy reads may be set; then each option's
// declared checks and each strategy's rules.
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
  for (const StrategySpec* spec : strategy_specs())
    for (const OptionDef& o : spec->options) {
      const std::string key = "strategy." + spec->name + "." + o.key;
      if (!ok({key.c_str()})) continue;
      const OptionValue& v = c_.strategy.option(spec->name + "." + o.key);
      const std::string at_least = "must be >= " + Checker::number_text(o.min) + o.min_note + ", got ";
      if (o.has_min && o.kind == OptionKind::Int && v.i < o.min) fail(key, at_least + std::to_string(v.i));
      if (o.has_min && o.kind == OptionKind::Float && !(v.f >= o.min)) fail(key, at_least + float_text(v.f));
      if (o.has_min && o.kind == OptionKind::Double && !(v.d >= o.min)) fail(key, at_least + Checker::number_text(v.d));
      if (!o.one_of.empty() && std::find(o.one_of.begin(), o.one_of.end(), v.s) == o.one_of.end())
        fail(key, "must be " + one_of_text(o.one_of) + ", got \"" + excerpt(v.s) + "\"");
    }
  // The tokens of a rank and micro-batch (train.batch_size / dp sequences of model.seq_len: the
  // ranks of a tensor-parallel group share their sequences), for rules that cut them.
  CheckerView view(*this, c_);
  view.data_parallel = data_parallel();
  const int dp = view.data_parallel, micro = c_.parallel.microbatches;
  view.tokens = dp >= 1 && micro >= 1 && c_.train.batch_size % ((int64_t)dp * micro) == 0
                    ? (int64_t)c_.train.batch_size / dp / micro * c_.model.seq_len : 0;
  view.tokens_text = c_.parallel.dp > 0                          ? "train.batch_size / parallel.dp"
                     : c_.parallel.tp > 1 || c_.parallel.pp > 1 ? "train.batch_size / (run.ranks / (parallel.tp x parallel.pp))"
                                                                 : "train.batch_size / run.ranks";
  if (micro > 1) view.tokens_text += " / parallel.microbatches";
  for (const StrategySpec* spec : strategy_specs())
    if (spec->check) spec->check(view);
}

// The rules against the layout of each block strategy the config runs.
void Checker::check_strategy_layout(const ParallelLayout& layout, int per_node) {
  if (!ok({"strategy.name"})) return;
  if (const StrategySpec* chosen = find_strategy_spec(c_.strategy.name); chosen && chosen->chooser)  // its members' list
    for (const OptionDef& o : chosen->options)
      if (!ok({("strategy." + chosen->name + "." + o.key).c_str()})) return;
  CheckerView view(*this, c_);
  view.data_parallel = data_parallel();
  for (const std::string& n : block_strategy_names(c_.strategy))
    if (const StrategySpec* spec = find_strategy_spec(n); spec && spec->check_layout) spec->check_layout(view, layout, per_node);
}

}  // namespace moebench::config_detail
