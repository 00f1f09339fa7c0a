#include "moebench/config/config.h"

#include <stdexcept>

#include "moebench/config/strategy_spec.h"

namespace moebench {

bool Config::is_moe_block(int block) const { return experts_in_block(block) > 0; }

int Config::experts_in_block(int block) const {
  for (size_t i = 0; i < moe.moe_layers.size(); ++i)
    if (moe.moe_layers[i] == block) return i < moe.experts.size() ? moe.experts[i] : 0;
  return 0;
}

namespace {

const OptionDef* declared_option(const std::string& key) {
  const auto dot = key.find('.');
  if (dot != std::string::npos)
    if (const StrategySpec* spec = find_strategy_spec(key.substr(0, dot)))
      for (const OptionDef& o : spec->options)
        if (o.key == key.substr(dot + 1)) return &o;
  throw std::invalid_argument("no strategy declares the option \"" + key + "\" (strategy.<section>.<key> without "
                              "\"strategy.\", e.g. \"data_centric.credits\")");
}

}  // namespace

StrategyConfig::StrategyConfig() : name(strategy_names().front()) {}

const OptionValue& StrategyConfig::option(const std::string& key) const {
  if (const auto it = options.find(key); it != options.end()) return it->second;
  return declared_option(key)->fallback;
}

OptionValue& StrategyConfig::option(const std::string& key) {
  if (const auto it = options.find(key); it != options.end()) return it->second;
  return options.emplace(key, declared_option(key)->fallback).first->second;
}

int64_t expert_param_count(const ModelConfig& model) {
  const int64_t h = model.hidden, f = (int64_t)model.ffn_mult * model.hidden;
  return f * h + f + h * f + h;  // w1 [F,H], b1 [F], w2 [H,F], b2 [H]
}

int64_t expert_state_record_bytes(const ModelConfig& model) {
  return 3 * expert_param_count(model) * (int64_t)sizeof(float);
}

}  // namespace moebench
