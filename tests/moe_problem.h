#pragma once
// One MoE layer's inputs and parameters for the layer tests (tst_moe, tst_topo_gate): x [N,C],
// router weights [E,C] and each expert's w1, b1, w2, b2 as separate vectors, seeded, with their
// gradient buffers.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "moebench/moe/moe_layer.h"
#include "test_support.h"

namespace moebench::test {

struct Problem {
  MoeLayerShape s{};
  std::vector<float> x, wr;
  std::vector<std::vector<float>> p, g;
  std::vector<float> dx, dwr;

  std::vector<ExpertParams> params() {
    std::vector<ExpertParams> v;
    for (int e = 0; e < s.E; ++e)
      v.push_back({p[4 * e].data(), p[4 * e + 1].data(), p[4 * e + 2].data(), p[4 * e + 3].data()});
    return v;
  }
  std::vector<ExpertParams> grads() {
    std::vector<ExpertParams> v;
    for (int e = 0; e < s.E; ++e)
      v.push_back({g[4 * e].data(), g[4 * e + 1].data(), g[4 * e + 2].data(), g[4 * e + 3].data()});
    return v;
  }
  void zero_grads() {
    dx.assign(x.size(), 0.0f);
    dwr.assign(wr.size(), 0.0f);
    for (auto& v : g) std::fill(v.begin(), v.end(), 0.0f);
  }
};

Problem make_problem(const MoeLayerShape& s, uint64_t seed) {
  Problem pr;
  pr.s = s;
  pr.x = random_vector((size_t)s.N * s.C, seed * 101 + 1, 1.0f);
  pr.wr = random_vector((size_t)s.E * s.C, seed * 101 + 2, 1.0f);
  for (int e = 0; e < s.E; ++e) {
    pr.p.push_back(random_vector((size_t)s.F * s.C, seed * 101 + 10 + 4 * e, 0.5f));
    pr.p.push_back(random_vector((size_t)s.F, seed * 101 + 11 + 4 * e, 0.2f));
    pr.p.push_back(random_vector((size_t)s.C * s.F, seed * 101 + 12 + 4 * e, 0.4f));
    pr.p.push_back(random_vector((size_t)s.C, seed * 101 + 13 + 4 * e, 0.2f));
  }
  for (const auto& v : pr.p) pr.g.emplace_back(v.size(), 0.0f);
  pr.zero_grads();
  return pr;
}

// For check_gradient: the loss sum(out * wout) + aux_weight * aux of `probe`'s forward on pr's
// current values; sets `changed` when the routing leaves `base` (a perturbation moved a choice).
inline auto weighted_output_loss(MoeLayer& probe, Problem& pr, const std::vector<float>& wout, float aux_weight,
                                 const Routing& base, bool& changed) {
  return [&probe, &pr, &wout, aux_weight, &base, &changed]() {
    std::vector<float> o((size_t)pr.s.N * pr.s.C);
    const float aux = probe.forward(o.data(), pr.x.data(), pr.wr.data(), pr.params(), pr.s);
    changed |= probe.routing().expert != base.expert || probe.routing().kept != base.kept;
    double L = aux_weight * (double)aux;
    for (size_t i = 0; i < o.size(); ++i) L += (double)o[i] * wout[i];
    return L;
  };
}

}  // namespace moebench::test
