// ctest-labels: unit
// Router (top-k, ties, gate normalisation, capacity dropping in GShard priority order, aux
// loss, forced choice) and MoeLayer (reference forward, finite-difference gradients of every
// input and parameter, bitwise determinism across thread counts).
#include <QtTest>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "moebench/moe/moe_layer.h"
#include "moebench/moe/router.h"
#include "moebench/tensor/matmul.h"
#include "moe_problem.h"
#include "test_support.h"

using namespace moebench;

namespace {

using test::Problem;
using test::make_problem;

std::vector<double> softmax_d(const float* l, int E) {
  std::vector<double> p(E);
  double mx = l[0];
  for (int e = 1; e < E; ++e) mx = std::max(mx, (double)l[e]);
  double sum = 0;
  for (int e = 0; e < E; ++e) sum += p[e] = std::exp((double)l[e] - mx);
  for (auto& v : p) v /= sum;
  return p;
}

double gelu_d(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

// A layer's inputs and parameters; expert e's tensors are p[4e+0..3] = w1, b1, w2, b2.

// Smallest gap (in logits) between consecutive ranks 0..K of any token: the top-k set and
// its order (which sets GShard priority) survive perturbations smaller than this.
double routing_margin(const Problem& pr) {
  const auto& s = pr.s;
  double m = 1e30;
  for (int n = 0; n < s.N; ++n) {
    std::vector<double> l(s.E);
    for (int e = 0; e < s.E; ++e) {
      double acc = 0;
      for (int c = 0; c < s.C; ++c) acc += (double)pr.x[n * s.C + c] * pr.wr[e * s.C + c];
      l[e] = acc;
    }
    std::sort(l.begin(), l.end(), std::greater<>());
    for (int j = 0; j < s.K && j + 1 < s.E; ++j) m = std::min(m, l[j] - l[j + 1]);
  }
  return m;
}

// Independent double-precision MoE forward: own routing, admission and experts.
std::vector<double> reference_forward(const Problem& pr, std::vector<int>* kept_out = nullptr) {
  const auto& s = pr.s;
  std::vector<double> out((size_t)s.N * s.C, 0.0);
  std::vector<int> expert((size_t)s.N * s.K);
  std::vector<double> gate((size_t)s.N * s.K);
  for (int n = 0; n < s.N; ++n) {
    std::vector<float> l(s.E);
    for (int e = 0; e < s.E; ++e) {
      double acc = 0;
      for (int c = 0; c < s.C; ++c) acc += (double)pr.x[n * s.C + c] * pr.wr[e * s.C + c];
      l[e] = (float)acc;
    }
    auto p = softmax_d(l.data(), s.E);
    std::vector<int> idx(s.E);
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return p[a] > p[b]; });
    double sum = 0;
    for (int k = 0; k < s.K; ++k) sum += p[idx[k]];
    for (int k = 0; k < s.K; ++k) {
      expert[n * s.K + k] = idx[k];
      gate[n * s.K + k] = s.gate_normalize ? p[idx[k]] / sum : p[idx[k]];
    }
  }
  const int cap = expert_capacity(s.capacity_factor, s.N, s.K, s.E);
  std::vector<int> count(s.E, 0), kept((size_t)s.N * s.K, 0);
  for (int k = 0; k < s.K; ++k)
    for (int n = 0; n < s.N; ++n) {
      int e = expert[n * s.K + k];
      if (cap == 0 || count[e] < cap) kept[n * s.K + k] = 1, ++count[e];
    }
  for (int n = 0; n < s.N; ++n)
    for (int k = 0; k < s.K; ++k) {
      if (!kept[n * s.K + k]) continue;
      const int e = expert[n * s.K + k];
      const auto &w1 = pr.p[4 * e], &b1 = pr.p[4 * e + 1], &w2 = pr.p[4 * e + 2], &b2 = pr.p[4 * e + 3];
      std::vector<double> a(s.F);
      for (int f = 0; f < s.F; ++f) {
        double h = b1[f];
        for (int c = 0; c < s.C; ++c) h += (double)w1[f * s.C + c] * pr.x[n * s.C + c];
        a[f] = gelu_d(h);
      }
      for (int c = 0; c < s.C; ++c) {
        double y = b2[c];
        for (int f = 0; f < s.F; ++f) y += (double)w2[c * s.F + f] * a[f];
        out[n * s.C + c] += gate[n * s.K + k] * y;
      }
    }
  if (kept_out) *kept_out = kept;
  return out;
}

// The first seed from seed0 on whose routing margin exceeds min_margin (and, with a capacity
// factor, where some assignment is dropped).
Problem pick_problem(const MoeLayerShape& s, uint64_t seed0, double min_margin) {
  for (uint64_t seed = seed0; seed < seed0 + 1000; ++seed) {
    Problem pr = make_problem(s, seed);
    if (routing_margin(pr) <= min_margin) continue;
    std::vector<int> kept;
    reference_forward(pr, &kept);
    const bool drops = std::find(kept.begin(), kept.end(), 0) != kept.end();
    if (s.capacity_factor <= 0.0f || drops) return pr;
  }
  return make_problem(s, seed0);  // the caller's margin check then fails loudly
}

}  // namespace

class TestMoe : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { set_num_threads(1); }

  void capacityFormula() {
    QCOMPARE(expert_capacity(0.0f, 10, 2, 3), 0);
    QCOMPARE(expert_capacity(1.0f, 10, 2, 3), 7);    // ceil(6.67)
    QCOMPARE(expert_capacity(1.25f, 8, 2, 4), 5);
    QCOMPARE(expert_capacity(1.1f, 20, 2, 2), 22);   // not 23 from 1.1f's rounding
    QCOMPARE(expert_capacity(4.0f, 10, 1, 2), 10);   // clamped to N*K
    QCOMPARE(expert_capacity(0.01f, 4, 1, 4), 1);
  }

  void topK_data() {
    QTest::addColumn<QList<float>>("logits");
    QTest::addColumn<int>("E");
    QTest::addColumn<int>("K");
    QTest::addColumn<bool>("normalize");
    QTest::addColumn<QList<int>>("expected");
    QTest::newRow("top1") << QList<float>{1, 3, 2, 0, 0.5f, -1, 0, 2} << 4 << 1 << false
                          << QList<int>{1, 3};
    QTest::newRow("top1 normalised") << QList<float>{1, 3, 2, 0, 0.5f, -1, 0, 2} << 4 << 1
                                     << true << QList<int>{1, 3};
    QTest::newRow("top2") << QList<float>{1, 3, 2, 0, 0, 0, 5, 4} << 4 << 2 << false
                          << QList<int>{1, 2, 2, 3};
    QTest::newRow("top2 normalised") << QList<float>{1, 3, 2, 0, 0, 0, 5, 4} << 4 << 2 << true
                                     << QList<int>{1, 2, 2, 3};
    QTest::newRow("tie first") << QList<float>{2, 5, 5, 1} << 4 << 1 << false << QList<int>{1};
    QTest::newRow("tie top2") << QList<float>{2, 5, 5, 1} << 4 << 2 << true << QList<int>{1, 2};
    QTest::newRow("tie second") << QList<float>{9, 1, 3, 3} << 4 << 2 << false
                                << QList<int>{0, 2};
    QTest::newRow("all equal") << QList<float>{0, 0, 0} << 3 << 2 << true << QList<int>{0, 1};
  }

  void topK() {
    QFETCH(QList<float>, logits);
    QFETCH(int, E);
    QFETCH(int, K);
    QFETCH(bool, normalize);
    QFETCH(QList<int>, expected);
    const int N = (int)logits.size() / E;
    Routing r;
    route_from_logits(r, logits.data(), N, E, {K, 0.0f, normalize});
    QCOMPARE(r.capacity, 0);
    for (int n = 0; n < N; ++n) {
      auto p = softmax_d(logits.data() + n * E, E);
      double sum = 0;
      for (int k = 0; k < K; ++k) sum += p[expected[n * K + k]];
      double gsum = 0;
      for (int k = 0; k < K; ++k) {
        QCOMPARE(r.expert[n * K + k], expected[n * K + k]);
        QCOMPARE(r.kept[n * K + k], (uint8_t)1);
        double want = p[expected[n * K + k]] / (normalize ? sum : 1.0);
        QVERIFY2(std::abs(r.gate[n * K + k] - want) < 1e-6, qPrintable(QString::number(want)));
        gsum += r.gate[n * K + k];
      }
      if (normalize) QVERIFY(std::abs(gsum - 1.0) < 1e-6);
      for (int e = 0; e < E; ++e) QVERIFY(std::abs(r.probs[n * E + e] - p[e]) < 1e-6);
    }
  }

  // N=4, E=2, K=2, capacity ceil(0.5*4*2/2) = 2. 1st choices: t0,t1,t2 -> e0, t3 -> e1;
  // 2nd choices: t0,t1,t2 -> e1, t3 -> e0. GShard priority admits t0/e0, t1/e0, t3/e1 (1st
  // round; t2/e0 dropped), then t0/e1 (2nd round; t1/e1, t2/e1, t3/e0 dropped). Token order
  // would instead have kept both choices of t0 and t1 and nothing of t2 and t3.
  void capacityDropping() {
    const std::vector<float> logits{2, 1, 2, 1, 3, 1, 1, 2};
    Routing r;
    route_from_logits(r, logits.data(), 4, 2, {2, 0.5f, true});
    QCOMPARE(r.capacity, 2);
    QCOMPARE(r.expert, (std::vector<int>{0, 1, 0, 1, 0, 1, 1, 0}));
    QCOMPARE(r.kept, (std::vector<uint8_t>{1, 1, 1, 0, 0, 0, 1, 0}));
    QCOMPARE(r.counts, (std::vector<int>{2, 2}));
    QCOMPARE(r.selected, (std::vector<int>{4, 4}));
    QCOMPARE(r.dropped(), 4);

    // Through the layer: logits = x @ I, so x rows are the logits above. Token 2 lost both
    // assignments and gets zero output; the others match the reference.
    Problem pr = make_problem({4, 2, 8, 2, 2, 0.5f, true}, 7);
    pr.x = logits;
    pr.wr = {1, 0, 0, 1};
    MoeLayer layer;
    std::vector<float> out(8, 123.0f);
    layer.forward(out.data(), pr.x.data(), pr.wr.data(), pr.params(), pr.s);
    QCOMPARE(layer.routing().kept, r.kept);
    QCOMPARE(out[4], 0.0f);
    QCOMPARE(out[5], 0.0f);
    std::vector<int> kept;
    auto ref = reference_forward(pr, &kept);
    QCOMPARE(kept, (std::vector<int>{1, 1, 1, 0, 0, 0, 1, 0}));
    for (size_t i = 0; i < out.size(); ++i) QVERIFY(std::abs(out[i] - ref[i]) < 1e-5);
    QVERIFY(out[0] != 0.0f && out[2] != 0.0f && out[6] != 0.0f);
  }

  void auxLoss() {
    Routing r;
    // Uniform probabilities: aux = E * sum_e f_e / E = 1 whatever the choice.
    std::vector<float> uniform(8 * 4, 0.0f);
    route_from_logits(r, uniform.data(), 8, 4, {1, 0.0f, true});
    QVERIFY(std::abs(r.aux - 1.0f) < 1e-6);
    std::vector<int> round_robin{0, 1, 2, 3, 0, 1, 2, 3};
    route_from_logits(r, uniform.data(), 8, 4, {1, 0.0f, true}, round_robin.data());
    QVERIFY(std::abs(r.aux - 1.0f) < 1e-6);
    for (int e = 0; e < 4; ++e) QCOMPARE(r.f[e], 0.25f);
    // Every token on expert 2 with probability ~1: aux = E.
    std::vector<float> hot(8 * 4, 0.0f);
    for (int n = 0; n < 8; ++n) hot[n * 4 + 2] = 40.0f;
    route_from_logits(r, hot.data(), 8, 4, {1, 0.0f, true});
    QVERIFY(std::abs(r.aux - 4.0f) < 1e-5);
    // Hand-computed: p = [0.75, 0.25] for both tokens, f = [1, 0]: aux = 2 * 0.75 = 1.5.
    const float l3 = std::log(3.0f);
    std::vector<float> l{l3, 0, l3, 0};
    route_from_logits(r, l.data(), 2, 2, {1, 0.0f, false});
    QVERIFY(std::abs(r.aux - 1.5f) < 1e-6);
    QVERIFY(std::abs(r.P[0] - 0.75f) < 1e-6);
    // K=2 of E=4 with f counting both choices: f = [0.5, 0.5, 0, 0], P uniform -> 1.
    route_from_logits(r, uniform.data(), 8, 4, {2, 0.0f, true});
    QCOMPARE(r.f[0], 0.5f);
    QCOMPARE(r.f[1], 0.5f);
    QVERIFY(std::abs(r.aux - 1.0f) < 1e-6);
  }

  // dlogits of L = sum_kept w * gate + aux_weight * aux against finite differences.
  void routerBackward_data() {
    QTest::addColumn<int>("K");
    QTest::addColumn<bool>("normalize");
    QTest::addColumn<float>("cf");
    QTest::newRow("K1") << 1 << false << 0.0f;
    QTest::newRow("K2 normalised") << 2 << true << 0.0f;
    QTest::newRow("K2 raw capacity") << 2 << false << 1.0f;
    QTest::newRow("K3 normalised capacity") << 3 << true << 0.8f;
  }

  void routerBackward() {
    QFETCH(int, K);
    QFETCH(bool, normalize);
    QFETCH(float, cf);
    const int N = 7, E = 5;
    const float aux_weight = 0.3f;
    std::vector<float> logits;
    for (uint64_t seed = 1;; ++seed) {  // a seed with well-separated logits
      logits = test::random_vector((size_t)N * E, seed, 1.5f);
      double m = 1e30;
      for (int n = 0; n < N; ++n) {
        std::vector<float> l(logits.begin() + n * E, logits.begin() + (n + 1) * E);
        std::sort(l.begin(), l.end(), std::greater<>());
        for (int j = 0; j < K; ++j) m = std::min(m, (double)(l[j] - l[j + 1]));
      }
      if (m > 0.02) break;
      QVERIFY(seed < 1000);
    }
    const auto w = test::random_vector((size_t)N * K, 99, 1.0f);
    const RouterOptions opt{K, cf, normalize};
    Routing r;
    route_from_logits(r, logits.data(), N, E, opt);
    const auto base_kept = r.kept;
    const auto base_expert = r.expert;
    if (cf > 0.0f) QVERIFY(r.dropped() > 0);
    std::vector<float> dgate(N * K);
    for (int i = 0; i < N * K; ++i) dgate[i] = r.kept[i] ? w[i] : 0.0f;
    std::vector<float> dlogits(N * E);
    router_logits_backward(dlogits.data(), dgate.data(), aux_weight, r);
    bool changed = false;
    Routing r2;
    test::check_gradient("logits", logits, dlogits, [&]() {
      route_from_logits(r2, logits.data(), N, E, opt);
      changed |= r2.kept != base_kept || r2.expert != base_expert;
      double L = aux_weight * (double)r2.aux;
      for (int i = 0; i < N * K; ++i) L += r2.kept[i] ? (double)w[i] * r2.gate[i] : 0.0;
      return L;
    });
    QVERIFY(!changed);
  }

  void forcedExperts() {
    const int N = 4, E = 3, K = 2;
    const std::vector<float> logits{0.1f, 0.5f, -0.3f, 1.0f, 0.0f, 0.2f,
                                    -1.0f, 0.4f, 0.3f, 0.0f, 0.0f, 2.0f};
    const std::vector<int> forced{2, 0, 1, 2, 0, 1, 2, 1};
    Routing r;
    route_from_logits(r, logits.data(), N, E, {K, 0.0f, true}, forced.data());
    QCOMPARE(r.expert, forced);
    QCOMPARE(r.selected, (std::vector<int>{2, 3, 3}));
    double aux = 0;
    for (int e = 0; e < E; ++e) {
      double P = 0;
      for (int n = 0; n < N; ++n) P += softmax_d(logits.data() + n * E, E)[e] / N;
      aux += (double)r.selected[e] / (N * K) * P;
    }
    QVERIFY(std::abs(r.aux - E * aux) < 1e-6);
    for (int n = 0; n < N; ++n) {
      auto p = softmax_d(logits.data() + n * E, E);
      const double s = p[forced[n * K]] + p[forced[n * K + 1]];
      for (int k = 0; k < K; ++k)
        QVERIFY(std::abs(r.gate[n * K + k] - p[forced[n * K + k]] / s) < 1e-6);
    }
    // Capacity 2 (ceil(0.75*4*2/3)): 1st round e2,e1,e0,e2; 2nd round e0 ok, e2 full,
    // e1 ok, e1 full.
    route_from_logits(r, logits.data(), N, E, {K, 0.75f, true}, forced.data());
    QCOMPARE(r.capacity, 2);
    QCOMPARE(r.kept, (std::vector<uint8_t>{1, 1, 1, 0, 1, 1, 1, 0}));

    // The layer follows a forced choice.
    Problem pr = make_problem({N, 3, 8, E, K, 0.0f, true}, 3);
    MoeLayer layer;
    std::vector<float> out(N * 3);
    layer.forward(out.data(), pr.x.data(), pr.wr.data(), pr.params(), pr.s, forced.data());
    QCOMPARE(layer.routing().expert, forced);
    const std::vector<int> bad{0, 3, 1, 2, 0, 1, 2, 1};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             layer.forward(out.data(), pr.x.data(), pr.wr.data(), pr.params(),
                                           pr.s, bad.data()));
  }

  void forwardMatchesReference_data() { shapes_data(); }
  void forwardMatchesReference() {
    QFETCH(int, E);
    QFETCH(int, K);
    QFETCH(bool, normalize);
    QFETCH(float, cf);
    Problem pr = pick_problem({10, 6, 8, E, K, cf, normalize}, 1, 0.02);
    MoeLayer layer;
    std::vector<float> out((size_t)10 * 6);
    const float aux = layer.forward(out.data(), pr.x.data(), pr.wr.data(), pr.params(), pr.s);
    QCOMPARE(aux, layer.routing().aux);
    std::vector<int> kept;
    auto ref = reference_forward(pr, &kept);
    QCOMPARE(std::vector<int>(layer.routing().kept.begin(), layer.routing().kept.end()), kept);
    for (size_t i = 0; i < out.size(); ++i)
      QVERIFY2(std::abs(out[i] - ref[i]) < 1e-5,
               qPrintable(QString("%1: %2 vs %3").arg(i).arg(out[i]).arg(ref[i])));
  }

  void gradients_data() { shapes_data(); }
  void gradients() {
    QFETCH(int, E);
    QFETCH(int, K);
    QFETCH(bool, normalize);
    QFETCH(float, cf);
    const int N = 8, C = 5, F = 8;
    const float aux_weight = 0.5f;
    Problem pr = pick_problem({N, C, F, E, K, cf, normalize}, 1, 0.03);
    QVERIFY(routing_margin(pr) > 0.03);
    const auto wout = test::random_vector((size_t)N * C, 4242, 1.0f);

    MoeLayer layer;
    std::vector<float> out((size_t)N * C);
    layer.forward(out.data(), pr.x.data(), pr.wr.data(), pr.params(), pr.s);
    const Routing base = layer.routing();
    if (cf > 0.0f) QVERIFY2(base.dropped() > 0, "the capacity row should drop some tokens");
    pr.zero_grads();
    layer.backward(pr.dx.data(), pr.dwr.data(), pr.grads(), wout.data(), aux_weight,
                   pr.x.data(), pr.wr.data(), pr.params());

    MoeLayer probe;
    bool changed = false;
    const auto loss = test::weighted_output_loss(probe, pr, wout, aux_weight, base, changed);
    const double eps = 1e-3, atol = 5e-4, rtol = 2e-2;
    test::check_gradient("x", pr.x, pr.dx, loss, eps, atol, rtol);
    test::check_gradient("router_w", pr.wr, pr.dwr, loss, eps, atol, rtol);
    const char* names[4] = {"w1", "b1", "w2", "b2"};
    for (int e = 0; e < E; ++e)
      for (int t = 0; t < 4; ++t) {
        const QByteArray what = QByteArray("expert ") + QByteArray::number(e) + " " + names[t];
        test::check_gradient(what.constData(), pr.p[4 * e + t], pr.g[4 * e + t], loss, eps, atol,
                             rtol);
      }
    QVERIFY(!changed);
  }

  // Forward + backward with 1 and with 2 OpenMP threads (BLAS threads fixed: OpenBLAS's
  // sgemm may round differently per thread count): bitwise equal; and run to run with 2.
  void threadsBitwise() {
    Problem pr = make_problem({97, 16, 40, 4, 2, 1.25f, true}, 11);
    const auto dout = test::random_vector((size_t)97 * 16, 77, 1.0f);
    auto run = [&]() {
      MoeLayer layer;
      std::vector<float> out((size_t)97 * 16);
      for (int rep = 0; rep < 2; ++rep) {  // a second call reuses the layer's buffers
        pr.zero_grads();
        layer.forward(out.data(), pr.x.data(), pr.wr.data(), pr.params(), pr.s);
        layer.backward(pr.dx.data(), pr.dwr.data(), pr.grads(), dout.data(), 0.1f, pr.x.data(),
                       pr.wr.data(), pr.params());
      }
      std::vector<float> all = out;
      all.insert(all.end(), pr.dx.begin(), pr.dx.end());
      all.insert(all.end(), pr.dwr.begin(), pr.dwr.end());
      for (const auto& v : pr.g) all.insert(all.end(), v.begin(), v.end());
      return all;
    };
    auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
      return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    set_num_threads(1);
    const auto one = run();
    omp_set_num_threads(2);
    const auto two_omp = run();
    set_num_threads(2);
    const auto two_a = run();
    const auto two_b = run();
    set_num_threads(1);
    QVERIFY(same(one, two_omp));
    QVERIFY(same(two_a, two_b));
  }

  void badShapes() {
    MoeLayer layer;
    Problem pr = make_problem({4, 3, 8, 2, 1, 0.0f, true}, 5);
    std::vector<float> out(12), dx(12);
    QVERIFY_THROWS_EXCEPTION(std::logic_error,
                             layer.backward(dx.data(), pr.dwr.data(), pr.grads(), out.data(), 0.0f,
                                            pr.x.data(), pr.wr.data(), pr.params()));
    MoeLayerShape s = pr.s;
    s.K = 3;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             layer.forward(out.data(), pr.x.data(), pr.wr.data(), pr.params(), s));
    auto few = pr.params();
    few.pop_back();
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             layer.forward(out.data(), pr.x.data(), pr.wr.data(), few, pr.s));
  }

 private:
  void shapes_data() {
    QTest::addColumn<int>("E");
    QTest::addColumn<int>("K");
    QTest::addColumn<bool>("normalize");
    QTest::addColumn<float>("cf");
    QTest::newRow("E4 K1") << 4 << 1 << false << 0.0f;
    QTest::newRow("E4 K1 normalised") << 4 << 1 << true << 0.0f;
    QTest::newRow("E4 K2 normalised") << 4 << 2 << true << 0.0f;
    QTest::newRow("E4 K2 raw") << 4 << 2 << false << 0.0f;
    QTest::newRow("E3 K2 normalised cf1") << 3 << 2 << true << 1.0f;
  }
};

QTEST_APPLESS_MAIN(TestMoe)
#include "tst_moe.moc"
