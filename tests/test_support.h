#pragma once
// Helpers shared by the QtTest suites: finite-difference gradient checks and temp paths.
#include <QtTest>

#include <cmath>
#include <exception>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "moebench/strategies/registry.h"
#include "moebench/tensor/rng.h"

namespace moebench::test {

inline std::vector<float> random_vector(size_t n, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = rng.normal() * scale;
  return v;
}

// Compares an analytic gradient with central differences of a scalar loss(x) in double.
// Checks every element when x is small, else a strided sample. Fails the running test with
// the worst element when |a - n| > atol + rtol * max(|a|, |n|).
inline void check_gradient(const char* what, std::span<float> x, const std::vector<float>& analytic,
                           const std::function<double()>& loss, double eps = 1e-3,
                           double atol = 1e-4, double rtol = 2e-2, size_t max_checks = 256) {
  QCOMPARE(analytic.size(), x.size());
  size_t stride = std::max<size_t>(1, x.size() / max_checks);
  double worst = 0.0;
  size_t worst_i = 0;
  double worst_a = 0, worst_n = 0;
  for (size_t i = 0; i < x.size(); i += stride) {
    float orig = x[i];
    x[i] = orig + (float)eps;
    double lp = loss();
    x[i] = orig - (float)eps;
    double lm = loss();
    x[i] = orig;
    double num = (lp - lm) / (2 * eps);
    double a = analytic[i];
    double excess = std::abs(a - num) - (atol + rtol * std::max(std::abs(a), std::abs(num)));
    if (excess > worst) { worst = excess; worst_i = i; worst_a = a; worst_n = num; }
  }
  if (worst > 0)
    QFAIL(qPrintable(QString("%1: gradient mismatch at %2: analytic %3 vs numeric %4")
                         .arg(what).arg(worst_i).arg(worst_a, 0, 'g', 8).arg(worst_n, 0, 'g', 8)));
}

// Runs f and returns the message of the E it throws; a marker string when it throws something
// else or nothing, so a QVERIFY on the expected text fails with a readable message.
template <class E>
QString error_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return QString::fromStdString(e.what());
  } catch (const std::exception& e) {
    return QStringLiteral("<not the expected exception type: %1>").arg(e.what());
  }
  return QStringLiteral("<no exception>");
}

// tests/data/tiny.toml: a tiny MoE-GPT config shared by the trainer and CLI tests.
inline const char* tiny_config_path() { return MOEBENCH_SOURCE_DIR "/tests/data/tiny.toml"; }

// Strategy `name` with [strategy.expert_centric] / [strategy.hier_a2a] overlap_degree = D.
inline std::unique_ptr<MoeStrategy> make_strategy_with_degree(const std::string& name, int overlap_degree) {
  StrategyConfig options;
  options.option("expert_centric.overlap_degree").i = options.option("hier_a2a.overlap_degree").i = overlap_degree;
  return make_strategy(name, options);
}

}  // namespace moebench::test
