#pragma once
// What config/ and the models below strategies/ know of a strategy: the part of its descriptor
// (strategies/strategy_descriptor.h) that parsing, validation and the memory model read. The
// strategies register themselves (strategies/registry.cpp); nothing below strategies/ names one.
// Registration happens before the first lookup: strategy_specs() calls
// register_builtin_strategies() once (defined in strategies/registry.cpp, in the same library),
// and a strategy outside the library registers before the first config is loaded.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/dist/parallel_layout.h"

namespace moebench {

enum class OptionKind { Int, Float, Double, Bool, String, AutoOrNumber, StringList };

// One key of a strategy's section [strategy.<name>].
struct OptionDef {
  std::string key;
  OptionKind kind = OptionKind::Int;
  OptionValue fallback;  // the default (the member of `kind`)
  std::string doc;       // one line (config reference, `validate --keys`)
  // Checks the loader applies: numbers at least `min` ("must be >= 1<min_note>, got 0");
  // strings one of `one_of` ("must be baseline, O1, O2, O3 or auto, got ...").
  bool has_min = false;
  double min = 0;
  std::string min_note;
  std::vector<std::string> one_of;

  // The least value, with a note for the message ("must be >= 0 (0 = ...), got -1").
  OptionDef& at_least(double least, std::string note = {}) {
    has_min = true;
    min = least;
    min_note = std::move(note);
    return *this;
  }
};

// Keys of each kind with their default.
OptionDef int_option(std::string key, int fallback, std::string doc);
OptionDef bool_option(std::string key, bool fallback, std::string doc);
OptionDef float_option(std::string key, float fallback, std::string doc);
OptionDef double_option(std::string key, double fallback, std::string doc);
// A string, one of `one_of` when that is not empty.
OptionDef string_option(std::string key, std::string fallback, std::string doc, std::vector<std::string> one_of = {});
OptionDef auto_or_number_option(std::string key, std::string fallback, std::string doc);  // "auto" or a number as text
OptionDef string_list_option(std::string key, std::string doc);                           // default []

// What a strategy's config rules may use (the checker of config_validate*.cpp).
class StrategyCheck {
 public:
  virtual ~StrategyCheck() = default;
  virtual const Config& config() const = 0;
  // Whether none of `keys` was rejected already (one typo, one message).
  virtual bool ok(std::initializer_list<const char*> keys) const = 0;
  // An issue at `key`'s origin; when `key` kept its default, at `fallback`'s.
  virtual void fail(const std::string& key, const std::string& message, const std::string& fallback = {}) = 0;
  // The data-parallel size (0: not valid), the tokens of one rank and micro-batch (0: not
  // known) and how they follow from the config ("train.batch_size / run.ranks").
  int data_parallel = 0;
  int64_t tokens = 0;
  std::string tokens_text;
};

struct StrategySpec {
  std::string name;
  std::string summary;             // one line
  std::vector<OptionDef> options;  // [strategy.<name>]; none: the section does not exist
  std::vector<std::string> reads;  // further sections it reads (janus: expert_centric, data_centric)
  bool reads_member_sections = false;  // reads every section a per_block member has (per_block)
  // Where its experts live (dist/parallel_layout.h): over runs of parallel.ep data-parallel
  // ranks, or inside the tensor-parallel group (ppmoe, Pipeline MoE §3.3).
  ExpertGroups expert_groups = ExpertGroups::data_parallel;
  // A block strategy runs a block itself (its factory makes it); a chooser picks a block
  // strategy per MoE block (janus, per_block): `members` names those its config runs
  // (default: the sections it reads).
  bool chooser = false;
  std::function<std::vector<std::string>(const StrategyConfig&)> members;
  bool per_block_member = false;  // strategy.per_block.blocks may name it
  // Memory terms (perf/trainer_memory.cpp): whether a block holds the token exchange's buffers
  // (x_recv, x_exp, y_exp, y_back and their gradients; false: it pulls experts instead), and
  // whether it sums sliced experts' partial outputs itself (no dx_part buffer).
  bool exchanges_tokens = true;
  bool sums_slices = false;
  // The chunks its exchange cuts a block's rows into under these options (the simulation's
  // size estimate, plan/simulation_estimate.cpp); none: 1.
  std::function<int(const StrategyConfig&)> chunks;
  // Why moe.expert_tp cannot apply to a config running it ("" = it can): the message, with
  // "{name}" standing for strategy.name's value.
  std::string expert_tp_refusal;
  // Rules on its options beyond min / one_of, checked on every config (defaults pass).
  std::function<void(StrategyCheck&)> check;
  // Rules against the layout, checked when a block runs it: `ep` ranks per expert-parallel
  // group, `per_node` ranks per node.
  std::function<void(StrategyCheck&, const ParallelLayout& layout, int per_node)> check_layout;
};

// Adds `spec` (a strategy's registration does; strategies/strategy_descriptor.h). Throws
// std::invalid_argument for a name taken or an empty one, and std::logic_error once the config
// schema was built (register before loading the first config).
void register_strategy_spec(StrategySpec spec);
// Defined in strategies/registry.cpp: registers the built-in strategies (called once, first).
void register_builtin_strategies();

const std::vector<const StrategySpec*>& strategy_specs();  // in registration order
const StrategySpec* find_strategy_spec(const std::string& name);  // null when unknown
// The spec of a name that must exist; throws std::invalid_argument listing the known names.
const StrategySpec& strategy_spec(const std::string& name);
const std::vector<std::string>& strategy_names();
std::string known_strategies_text();  // "expert_centric, hier_a2a, ..." (messages)

// The [strategy.<x>] sections strategy `name` reads, as "x": its own, then those in `reads`
// (per_block: every member's). Empty for an unknown name. Setting a key of any other
// strategy's section is a config error.
std::vector<std::string> strategy_option_sections(const std::string& name);

// The block strategies a config runs: strategy.name, or a chooser's members.
std::vector<std::string> block_strategy_names(const StrategyConfig& s);
// Whether any of them satisfies `pred`.
bool runs_any(const StrategyConfig& s, const std::function<bool(const StrategySpec&)>& pred);
// Where the experts of cfg's strategy live.
ExpertGroups expert_groups_of(const Config& cfg);

}  // namespace moebench
