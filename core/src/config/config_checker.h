#pragma once
// Internal to the config loader: the checker of a resolved config (config_validate.cpp: run,
// layout, model, MoE, data, training, emulation; config_validate_cluster.cpp: [cluster] and its
// curves; config_validate_strategy.cpp: the strategies' options and
// their own rules). A rule that involves a
// key already rejected while reading is skipped (ok()), so one typo gives one message.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "config_detail.h"
#include "moebench/dist/parallel_layout.h"

namespace moebench::config_detail {

class Checker {
 public:
  Checker(Config& c, LoadState& st) : c_(c), st_(st) {}

  bool ok(std::initializer_list<const char*> keys) const {
    for (const char* k : keys)
      if (st_.bad.count(k)) return false;
    return true;
  }
  void fail(const std::string& key, const std::string& msg, const std::string& fallback = {}) {
    st_.fail(key, msg, fallback);
  }

  void at_least(const char* key, int64_t v, int64_t lo, const char* note = "") {
    if (ok({key}) && v < lo)
      fail(key, "must be >= " + std::to_string(lo) + note + ", got " + std::to_string(v));
  }
  void positive(const char* key, float v) {
    if (ok({key}) && !(v > 0.0f)) fail(key, "must be > 0, got " + float_text(v));
  }
  void non_negative(const char* key, float v, const char* note = "") {
    if (ok({key}) && !(v >= 0.0f)) fail(key, std::string("must be >= 0") + note + ", got " + float_text(v));
  }
  // [0, 1) or, with closed, [0, 1].
  void unit(const char* key, float v, bool closed = false) {
    if (!ok({key})) return;
    const bool in = v >= 0.0f && (closed ? v <= 1.0f : v < 1.0f);
    if (!in) fail(key, std::string("must be in [0, 1") + (closed ? "]" : ")") + ", got " + float_text(v));
  }

  // Doubles of [cluster]: bandwidths, latencies, rates.
  static std::string number_text(double v) {
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, res.ptr);
  }
  void positive_number(const char* key, double v) {
    if (ok({key}) && !(v > 0.0)) fail(key, "must be > 0, got " + number_text(v));
  }
  void non_negative_number(const char* key, double v, const char* note = "") {
    if (ok({key}) && !(v >= 0.0)) fail(key, std::string("must be >= 0") + note + ", got " + number_text(v));
  }
  // Whether a rule already said something about `key` (one message per key).
  bool reported(const std::string& key) const {
    return std::any_of(st_.issues.begin(), st_.issues.end(), [&](const ConfigIssue& i) { return i.key == key; });
  }
  // The magnitude of a double that passed its sign check: when > 0, it must lie in [lo, hi]
  // ("must be from 0.001 to 1e+09 GB/s, got 1e-300"; 0 keeps its meaning, < 0 its message).
  void bounded(const char* key, double v, double lo, double hi, const char* unit = "") {
    if (ok({key}) && !reported(key) && v > 0.0 && !(v >= lo && v <= hi))
      fail(key, "must be from " + number_text(lo) + " to " + number_text(hi) + unit + ", got " + number_text(v));
  }
  // The same for each entry of a list, naming the first one out of bounds.
  void bounded(const char* key, const std::vector<double>& v, double lo, double hi, const char* unit = "") {
    if (!ok({key}) || reported(key)) return;
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i] > 0.0 && !(v[i] >= lo && v[i] <= hi)) {
        fail(key, "must be from " + number_text(lo) + " to " + number_text(hi) + unit + ", entry " +
                      std::to_string(i) + " is " + number_text(v[i]));
        return;
      }
  }

  void readable_file(const char* key, const std::string& path, const char* fallback) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(status)) return fail(key, "file not found: " + path, fallback);
    if (!std::filesystem::is_regular_file(status)) return fail(key, "not a regular file: " + path, fallback);
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(key, "file cannot be read: " + path, fallback);
  }

  void run();
  void check_cluster();
  void check_curve(const char* xs_key, const std::vector<double>& xs, const char* ys_key, const std::vector<double>& ys,
                   const char* noun, const char* range, double max);
  void check_cluster_bounds();  // config_validate_cluster.cpp

 private:
  void check_run();
  void check_parallel();
  void check_layout();
  void check_embedding_partition();
  int check_groups();
  void check_stages();
  int data_parallel() const;
  std::string data_parallel_origin() const;
  void check_strategy_options();                    // config_validate_strategy.cpp
  void check_strategy_layout(const ParallelLayout& layout, int per_node);  // config_validate_strategy.cpp
  void check_model();
  void check_moe();
  void check_data();
  void check_synthetic_size();
  void check_train();
  void check_emulate();
  void check_storage();        // config_validate_storage.cpp
  void check_dense_storage();  // config_validate_storage.cpp: storage.dense
  void check_tasks();          // config_validate_tasks.cpp

  Config& c_;
  LoadState& st_;
};

}  // namespace moebench::config_detail
