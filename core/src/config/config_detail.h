#pragma once
// Internal to the config loader (config_loader.cpp, config_schema.cpp, config_validate.cpp):
// the key table, where each key was set, and the collected issues.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/config/config_loader.h"

namespace moebench::config_detail {

enum class Kind { Int, Int64, UInt64, Float, Double, Bool, String, Path, IntList, DoubleList, StringList, Experts, AutoOrNumber,
                  Choice };  // Choice: a TOML string parsed once into a typed field (config_choices.h, moe.routing)

struct FieldDef {
  std::string section;
  std::string key;
  Kind kind;
  std::string doc;
  std::function<void*(Config&)> ref;               // address of the field inside a Config
  std::function<const void*(const Config&)> cref;  // the same, read-only (a strategy option's default)
  // Kind::Choice: parse stores the word's value at the field's address and returns "" (or what
  // is wrong with the word, the field unchanged); print gives the field's word.
  std::function<std::string(void*, const std::string&)> parse;
  std::function<std::string(const void*)> print;

  std::string name() const { return section + "." + key; }
  template <class T>
  T& get(Config& c) const { return *static_cast<T*>(ref(c)); }
  template <class T>
  const T& get(const Config& c) const { return *static_cast<const T*>(cref(c)); }
};

// The keys in file order: config.h's, then each registered strategy's options after strategy.name.
const std::vector<FieldDef>& fields();
const std::vector<std::string>& section_names();   // run, cluster, ..., strategy, strategy.<x>, ...
// Whether fields() was built (strategies registered later would be missing from it).
bool schema_built();
const FieldDef* find_field(std::string_view section, std::string_view key);
const char* section_doc(std::string_view section);  // what a section holds; "" for none
std::string value_text(const FieldDef& f, const Config& c);  // as config_to_toml writes it
const char* kind_name(Kind k);  // "integer", "float array", ...

inline constexpr int kDefaultExperts = 8;  // moe.experts when not given
// Problems listed in one ConfigError; more are counted in one last issue. A 1 MiB file of
// unknown keys would otherwise make ~100,000 messages (and as many "did you mean" searches).
inline constexpr size_t kMaxReportedIssues = 100;

// Where a key got its value.
struct Origin {
  std::string file;  // source name or "--set"
  int line = 0;
};

struct LoadState {
  std::string source_name;
  std::map<std::string, Origin> origins;  // "model.hidden" -> where it was last set
  std::set<std::string> bad;              // keys whose value was rejected while reading
  bool experts_scalar = true;             // moe.experts given as one integer
  int experts_value = kDefaultExperts;    // ... that integer
  std::vector<ConfigIssue> issues;       // at most kMaxReportedIssues
  size_t dropped = 0;                     // issues beyond that, counted only

  bool is_set(const std::string& key) const { return origins.count(key) > 0; }
  bool full() const { return issues.size() >= kMaxReportedIssues; }
  void add(ConfigIssue issue);  // kept while not full(), else counted in `dropped`
  // An issue at the origin of `key`; when `key` kept its default, at the origin of `fallback`.
  void fail(const std::string& key, const std::string& message, const std::string& fallback = {});
};

// Expands moe.experts to one entry per MoE block and checks every rule; adds to st.issues.
void validate(Config& c, LoadState& st);
// Only the rules on [cluster] keys that hold without the rest of the config (a cluster file).
void validate_cluster(Config& c, LoadState& st);

// Reads cluster.file (when set) into c.cluster: its keys apply where the config set none; its
// problems name the cluster file, its line and the key. Adds to st.issues.
void read_cluster_file(Config& c, LoadState& st);

// At most `max` bytes of `s`, then "... (N bytes)" when cut: user text echoed in messages.
std::string excerpt(std::string_view s, size_t max = 48);

// The number a Kind::AutoOrNumber value holds ("50", "2.5"), nullopt for any other text ("auto").
std::optional<double> auto_or_number_value(const std::string& text);

// Shortest text that reads back as the same float ("0.003", "1e-08").
std::string float_text(float v);

// Damerau-Levenshtein (optimal string alignment) distance, case-insensitive, when it is at most
// max_distance; else max_distance + 1. O(max_distance * length) time, O(length) memory, so a
// huge unknown key costs nothing to compare ("did you mean" only wants close candidates).
int edit_distance(std::string_view a, std::string_view b, int max_distance);

}  // namespace moebench::config_detail
