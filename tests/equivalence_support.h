#pragma once
// Shared by the multi-rank equivalence suites: train a config on the launched ranks and as
// the single-process reference, then compare per-step losses and parameters. Helpers return
// an empty string on success, else a message for QVERIFY2.
#include <QString>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "moebench/train/trainer.h"

namespace moebench::test {

// Bytes rank r sends to its right neighbour in MpiCommunicator's ring all-reduce of `count`
// elements of `size` bytes over P ranks: segments of count / P, the first count % P one longer;
// reduce-scatter step s sends segment r-s-1, all-gather step s segment r-s.
inline uint64_t ring_allreduce_bytes(size_t count, int P, int r, size_t size) {
  if (P < 2) return 0;
  auto len = [&](int i) { return count / P + ((size_t)(((i % P) + P) % P) < count % P ? 1 : 0); };
  uint64_t n = 0;
  for (int s = 0; s < P - 1; ++s) n += len(r - s - 1) + len(r - s);
  return n * size;
}


inline std::vector<float> train_losses(Trainer& t) {
  std::vector<float> losses;
  TrainCallbacks cb;
  cb.on_step = [&](const StepStats& s) { losses.push_back(s.loss.total); };
  t.run(-1, cb);
  return losses;
}

// Every step's loss within rel_tol (relative) of the reference.
inline QString compare_losses(const std::vector<float>& got, const std::vector<float>& expected, int rank,
                              float rel_tol = 1e-5f) {
  if (got.size() != expected.size())
    return QString("rank %1: %2 steps vs %3 in the reference").arg(rank).arg(got.size()).arg(expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - expected[i]) <= rel_tol * std::abs(expected[i])))
      return QString("rank %1 step %2: loss %3 vs single-rank %4")
          .arg(rank).arg(i + 1).arg(got[i], 0, 'g', 9).arg(expected[i], 0, 'g', 9);
  return {};
}

// Every tensor of `mine` (dense replicas, tensor-parallel slices and this rank's experts) within
// abs_tol of the same elements of the reference's tensor of the same name (whole, or the same slice).
inline QString compare_params(const ParamArena& mine, const ParamArena& reference, int rank, double abs_tol = 1e-4) {
  double worst = 0;
  std::string worst_name;
  const std::vector<float> m = mine.host_data(), ref = reference.host_data();  // device arenas too
  for (const ParamView& pv : mine.views()) {
    const ParamView* rv = reference.find(pv.name);
    if (!rv) return QString("rank %1: %2 missing in the reference").arg(rank).arg(QString::fromStdString(pv.name));
    if (rv->full_shape() != pv.full_shape())
      return QString("rank %1: %2 has another whole shape than the reference").arg(rank).arg(QString::fromStdString(pv.name));
    const std::vector<std::pair<size_t, size_t>> whole = {{0, pv.numel}};
    // A sliced reference (the same layout on another device) holds the same slice.
    const bool same_slice = !rv->slice.whole();
    if (same_slice && rv->numel != pv.numel)
      return QString("rank %1: %2 is another slice than the reference's").arg(rank).arg(QString::fromStdString(pv.name));
    size_t i = 0;
    for (const auto& [offset, count] : pv.slice.whole() || same_slice ? whole : pv.slice.runs)
      for (size_t j = 0; j < count; ++j, ++i) {
        const double d = std::abs(m[pv.offset + i] - ref[rv->offset + offset + j]);
        if (d > worst) worst = d, worst_name = pv.name;
      }
  }
  if (worst < abs_tol) return {};
  return QString("rank %1: %2 differs by %3").arg(rank).arg(QString::fromStdString(worst_name)).arg(worst);
}

}  // namespace moebench::test
