#pragma once
// Which GEMMs an MoE block's experts run on (experts.h), chosen by measuring: plain C++ (no CUDA
// headers), so the CPU test suite checks the choice (tests/tst_expert_gemm_tuner.cpp).
//
// Two paths compute the same products:
//   grouped     one cublasGemmGroupedBatchedEx per matrix product over all experts (few launches;
//               cuBLAS 13 runs it on Ampere-generation kernels, also on Hopper);
//   per_expert  one cuBLASLt matmul per expert and product, spread over a few streams, with the
//               bias and GeLU in the GEMMs' epilogues (the kernels cuBLASLt picks for the GPU:
//               Hopper's on an H100; one launch per expert).
// Which is faster depends on the GPU and on the shape (few large experts or many small ones), so
// `automatic` measures: at the first call of a shape class (device, element size, E, C, F,
// forward or backward, the total rows' power of two) the launcher runs each path kRounds times,
// alternating, into scratch outputs (the call's own inputs), timed by CUDA events, waits once, and
// the class keeps the path whose later rounds were fastest (their minimum; the first round is a
// warm-up: cuBLAS loads kernels and makes workspaces then). Every real call of the class, the
// first included, then runs on that path, so a run (and its resume in the same process) computes
// each class one way. Without room for the scratch the class keeps the grouped path, unmeasured.
// The choice lives for the process, per device (another process may choose otherwise where the
// two paths are within noise: the results then differ in rounding only). Header only (C++17, inline): the launchers and the CPU tests share it.
#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace moebench::cuda {

enum class ExpertGemmPath { automatic, grouped, per_expert };
inline const char* expert_gemm_path_name(ExpertGemmPath p) {
  return p == ExpertGemmPath::grouped ? "grouped" : p == ExpertGemmPath::per_expert ? "per_expert" : "auto";
}
inline std::optional<ExpertGemmPath> parse_expert_gemm_path(std::string_view name) {
  for (ExpertGemmPath p : {ExpertGemmPath::automatic, ExpertGemmPath::grouped, ExpertGemmPath::per_expert})
    if (name == expert_gemm_path_name(p)) return p;
  return std::nullopt;
}

struct ExpertGemmShape {
  int device = 0, element_bytes = 4, E = 0, C = 0, F = 0;
  bool backward = false;
  int rows_log2 = 0;  // floor(log2(total rows)), 0 for none
  bool operator<(const ExpertGemmShape& o) const {
    return std::tie(device, element_bytes, E, C, F, backward, rows_log2) <
           std::tie(o.device, o.element_bytes, o.E, o.C, o.F, o.backward, o.rows_log2);
  }
};
inline int rows_log2(long rows) {
  int l = 0;
  while (rows > 1) rows >>= 1, ++l;
  return l;
}

class ExpertGemmTuner {
 public:
  static constexpr int kRounds = 3;  // measurements per path; the first is a warm-up
  // The path this call takes (never automatic): alternating while the class is measured, then
  // the faster one. `measure` is set when the caller must time the call and report() it.
  ExpertGemmPath next(const ExpertGemmShape& s, bool& measure) {
    std::lock_guard<std::mutex> lock(m_);
    Class& c = classes_[s];
    measure = false;
    if (c.choice) return *c.choice;
    if (c.issued < 2 * kRounds) {
      measure = true;
      return c.issued++ % 2 == 0 ? ExpertGemmPath::grouped : ExpertGemmPath::per_expert;
    }
    if ((int)(c.grouped.size() + c.per_expert.size()) < 2 * kRounds)  // reports still to come
      return ExpertGemmPath::grouped;  // (the launcher reports every measurement before asking again)
    c.choice = best(c.per_expert) < best(c.grouped) ? ExpertGemmPath::per_expert : ExpertGemmPath::grouped;
    return *c.choice;
  }
  // Decides a class without measurements (no room for the scratch).
  void settle(const ExpertGemmShape& s, ExpertGemmPath p) {
    std::lock_guard<std::mutex> lock(m_);
    classes_[s].choice = p;
  }
  // The seconds a measured call took.
  void report(const ExpertGemmShape& s, ExpertGemmPath p, double seconds) {
    std::lock_guard<std::mutex> lock(m_);
    Class& c = classes_[s];
    (p == ExpertGemmPath::per_expert ? c.per_expert : c.grouped).push_back(seconds);
  }
  std::optional<ExpertGemmPath> decided(const ExpertGemmShape& s) const {
    std::lock_guard<std::mutex> lock(m_);
    auto it = classes_.find(s);
    return it == classes_.end() ? std::nullopt : it->second.choice;
  }
  // The measured seconds of a class and path (in report order).
  std::vector<double> seconds(const ExpertGemmShape& s, ExpertGemmPath p) const {
    std::lock_guard<std::mutex> lock(m_);
    auto it = classes_.find(s);
    if (it == classes_.end()) return {};
    return p == ExpertGemmPath::per_expert ? it->second.per_expert : it->second.grouped;
  }
  void clear() {
    std::lock_guard<std::mutex> lock(m_);
    classes_.clear();
  }

 private:
  struct Class {
    int issued = 0;  // measured calls handed out
    std::vector<double> grouped, per_expert;
    std::optional<ExpertGemmPath> choice;
  };
  // The minimum after the warm-up round (every measurement when there is only one).
  static double best(std::vector<double> v) {
    if (v.empty()) return std::numeric_limits<double>::infinity();
    if (v.size() > 1) v.erase(v.begin());
    return *std::min_element(v.begin(), v.end());
  }
  mutable std::mutex m_;
  std::map<ExpertGemmShape, Class> classes_;
};

inline ExpertGemmTuner& expert_gemm_tuner() {  // the process's
  static ExpertGemmTuner t;
  return t;
}

}  // namespace moebench::cuda
