// ctest-labels: unit
// Dense transformer layers on CPU (model/encoder, layernorm, attention, gelu, residual,
// crossentropy): finite-difference gradient checks of every backward, reference values,
// causality, numerical stability, the fast tanh, and thread-count determinism.
#include <QtTest>

#include <omp.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "moebench/model/attention.h"
#include "moebench/model/crossentropy.h"
#include "moebench/model/encoder.h"
#include "moebench/tensor/gelu.h"
#include "moebench/model/layernorm.h"
#include "moebench/model/residual.h"
#include "moebench/tensor/rng.h"
#include "test_support.h"

using moebench::test::check_gradient;
using moebench::test::random_vector;

namespace {

using Vec = std::vector<float>;

// loss = sum(out * w) in double; its gradient w.r.t. out is w.
double weighted_sum(const Vec& out, const Vec& w) {
  double s = 0.0;
  for (size_t i = 0; i < out.size(); ++i) s += (double)out[i] * w[i];
  return s;
}

// Backwards accumulate: start from a random gradient and return what was added to it.
Vec minus(const Vec& a, const Vec& b) {
  Vec r(a.size());
  for (size_t i = 0; i < a.size(); ++i) r[i] = a[i] - b[i];
  return r;
}

std::vector<int> random_tokens(size_t n, int V, uint64_t seed) {
  moebench::Rng rng(seed);
  std::vector<int> v(n);
  for (auto& x : v) x = (int)rng.below((uint64_t)V);
  return v;
}

bool same_bits(const Vec& a, const Vec& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

double gelu_ref(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

double gelu_grad_ref(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  const double th = std::tanh(k * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * k * (1.0 + 3.0 * 0.044715 * x * x);
}

}  // namespace

class TestLayers : public QObject {
  Q_OBJECT

 private slots:
  // One thread unless a test says otherwise (the many tiny parallel regions of the
  // finite-difference loops crawl on a loaded machine); see forward_deterministic_across_threads.
  void initTestCase() { omp_set_num_threads(1); }

  void encoder_gradient_data();
  void encoder_gradient();
  void layernorm_gradient_data();
  void layernorm_gradient();
  void attention_gradient_data();
  void attention_gradient();
  void gelu_gradient_data();
  void gelu_gradient();
  void residual_gradient();
  void crossentropy_gradient_data();
  void crossentropy_gradient();

  void encoder_values();
  void layernorm_normalises();
  void attention_matches_reference();
  void attention_is_causal();
  void crossentropy_uniform_and_stable();
  void fast_tanh_accuracy();
  void gelu_matches_reference();
  void forward_deterministic_across_threads();
};

// ---------------------------------------------------------------- gradient checks

void TestLayers::encoder_gradient_data() {
  QTest::addColumn<int>("B");
  QTest::addColumn<int>("T");
  QTest::addColumn<int>("C");
  QTest::addColumn<int>("V");
  QTest::newRow("B2 T5 C8 V11") << 2 << 5 << 8 << 11;
  QTest::newRow("repeated tokens") << 3 << 4 << 6 << 3;
  QTest::newRow("C spans two blocks") << 2 << 3 << 70 << 5;
}

void TestLayers::encoder_gradient() {
  QFETCH(int, B);
  QFETCH(int, T);
  QFETCH(int, C);
  QFETCH(int, V);
  auto inp = random_tokens((size_t)B * T, V, 1);
  Vec wte = random_vector((size_t)V * C, 2), wpe = random_vector((size_t)T * C, 3);
  Vec w = random_vector((size_t)B * T * C, 4), out((size_t)B * T * C);
  auto loss = [&] {
    moebench::encoder_forward(out.data(), inp.data(), wte.data(), wpe.data(), B, T, C);
    return weighted_sum(out, w);
  };
  const Vec dwte0 = random_vector(wte.size(), 5), dwpe0 = random_vector(wpe.size(), 6);
  Vec dwte = dwte0, dwpe = dwpe0;
  moebench::encoder_backward(dwte.data(), dwpe.data(), w.data(), inp.data(), B, T, C);
  check_gradient("dwte", wte, minus(dwte, dwte0), loss);
  check_gradient("dwpe", wpe, minus(dwpe, dwpe0), loss);
}

void TestLayers::layernorm_gradient_data() {
  QTest::addColumn<int>("N");
  QTest::addColumn<int>("C");
  QTest::newRow("N10 C8") << 10 << 8;
  QTest::newRow("N3 C70") << 3 << 70;
}

void TestLayers::layernorm_gradient() {
  QFETCH(int, N);
  QFETCH(int, C);
  Vec inp = random_vector((size_t)N * C, 11, 2.0f);
  Vec weight = random_vector(C, 12, 0.5f), bias = random_vector(C, 13);
  for (auto& x : weight) x += 1.0f;
  Vec w = random_vector((size_t)N * C, 14), out((size_t)N * C), mean(N), rstd(N);
  auto loss = [&] {
    moebench::layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(),
                                bias.data(), N, C);
    return weighted_sum(out, w);
  };
  loss();
  const Vec dinp0 = random_vector(inp.size(), 15), dw0 = random_vector(C, 16),
            db0 = random_vector(C, 17);
  Vec dinp = dinp0, dw = dw0, db = db0;
  moebench::layernorm_backward(dinp.data(), dw.data(), db.data(), w.data(), inp.data(),
                               weight.data(), mean.data(), rstd.data(), N, C);
  // Float rounding of the forward is ~1e-7 per output: a step of 1e-2 keeps it out of the way.
  check_gradient("dinp", inp, minus(dinp, dinp0), loss, 1e-2);
  check_gradient("dweight", weight, minus(dw, dw0), loss, 1e-2);
  check_gradient("dbias", bias, minus(db, db0), loss, 1e-2);
}

void TestLayers::attention_gradient_data() {
  QTest::addColumn<int>("B");
  QTest::addColumn<int>("T");
  QTest::addColumn<int>("C");
  QTest::addColumn<int>("NH");
  QTest::newRow("B2 T5 C8 NH2") << 2 << 5 << 8 << 2;
  QTest::newRow("B1 T7 C12 NH3") << 1 << 7 << 12 << 3;
  QTest::newRow("single head") << 2 << 4 << 6 << 1;
}

void TestLayers::attention_gradient() {
  QFETCH(int, B);
  QFETCH(int, T);
  QFETCH(int, C);
  QFETCH(int, NH);
  const size_t natt = (size_t)B * NH * T * T;
  Vec qkv = random_vector((size_t)B * T * 3 * C, 21);
  Vec w = random_vector((size_t)B * T * C, 22), out((size_t)B * T * C), preatt(natt), att(natt);
  auto loss = [&] {
    moebench::attention_forward(out.data(), preatt.data(), att.data(), qkv.data(), B, T, C, NH);
    return weighted_sum(out, w);
  };
  loss();
  const Vec dqkv0 = random_vector(qkv.size(), 23);
  Vec dqkv = dqkv0, dpreatt(natt, 123.0f), datt(natt, -7.0f);  // scratch: must be zeroed inside
  moebench::attention_backward(dqkv.data(), dpreatt.data(), datt.data(), w.data(), qkv.data(),
                               att.data(), B, T, C, NH);
  check_gradient("dqkv", qkv, minus(dqkv, dqkv0), loss);
  // Scratch above the diagonal is left zero, not stale.
  for (int bh = 0; bh < B * NH; ++bh)
    for (int t = 0; t < T; ++t)
      for (int t2 = t + 1; t2 < T; ++t2) {
        QCOMPARE(dpreatt[((size_t)bh * T + t) * T + t2], 0.0f);
        QCOMPARE(datt[((size_t)bh * T + t) * T + t2], 0.0f);
      }
}

void TestLayers::gelu_gradient_data() {
  QTest::addColumn<int>("N");
  QTest::addColumn<float>("scale");
  QTest::newRow("N37 scale 1") << 37 << 1.0f;
  QTest::newRow("N64 scale 3") << 64 << 3.0f;
}

void TestLayers::gelu_gradient() {
  QFETCH(int, N);
  QFETCH(float, scale);
  Vec inp = random_vector(N, 31, scale), w = random_vector(N, 32), out(N);
  auto loss = [&] {
    moebench::gelu_forward(out.data(), inp.data(), N);
    return weighted_sum(out, w);
  };
  const Vec dinp0 = random_vector(N, 33);
  Vec dinp = dinp0;
  moebench::gelu_backward(dinp.data(), inp.data(), w.data(), N);
  // In the negative tail 1 + tanh cancels, so the float forward is noisy at the 1e-7 level:
  // use a step of 1e-2 (gelu is smooth, the truncation error stays ~1e-5).
  check_gradient("dinp", inp, minus(dinp, dinp0), loss, 1e-2);
}

void TestLayers::residual_gradient() {
  const long N = 45;
  Vec a = random_vector(N, 41), b = random_vector(N, 42), w = random_vector(N, 43), out(N);
  auto loss = [&] {
    moebench::residual_forward(out.data(), a.data(), b.data(), N);
    return weighted_sum(out, w);
  };
  const Vec da0 = random_vector(N, 44), db0 = random_vector(N, 45);
  Vec da = da0, db = db0;
  moebench::residual_backward(da.data(), db.data(), w.data(), N);
  check_gradient("dinp1", a, minus(da, da0), loss);
  check_gradient("dinp2", b, minus(db, db0), loss);
}

void TestLayers::crossentropy_gradient_data() {
  QTest::addColumn<int>("N");
  QTest::addColumn<int>("V");
  QTest::newRow("N4 V11") << 4 << 11;
  QTest::newRow("N3 V50") << 3 << 50;
}

void TestLayers::crossentropy_gradient() {
  QFETCH(int, N);
  QFETCH(int, V);
  Vec logits = random_vector((size_t)N * V, 51, 2.0f), probs((size_t)N * V), losses(N);
  auto targets = random_tokens(N, V, 52);
  const float dloss = 1.0f / N;
  auto loss = [&] {
    moebench::crossentropy_softmax_forward(losses.data(), probs.data(), logits.data(),
                                           targets.data(), N, V);
    double s = 0.0;
    for (float l : losses) s += l;
    return s * dloss;
  };
  loss();
  const Vec d0 = random_vector(logits.size(), 53);
  Vec d = d0;
  moebench::crossentropy_softmax_backward(d.data(), probs.data(), targets.data(), dloss, N, V);
  check_gradient("dlogits", logits, minus(d, d0), loss);
}

// ---------------------------------------------------------------- values and properties

void TestLayers::encoder_values() {
  const int B = 2, T = 3, C = 4, V = 5;
  std::vector<int> inp = {4, 0, 4, 2, 2, 1};
  Vec wte = random_vector((size_t)V * C, 61), wpe = random_vector((size_t)T * C, 62);
  Vec out((size_t)B * T * C);
  moebench::encoder_forward(out.data(), inp.data(), wte.data(), wpe.data(), B, T, C);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < C; ++c)
        QCOMPARE(out[((size_t)b * T + t) * C + c], wte[(size_t)inp[b * T + t] * C + c] + wpe[t * C + c]);
}

void TestLayers::layernorm_normalises() {
  const int N = 6, C = 33;
  Vec inp = random_vector((size_t)N * C, 71, 5.0f);
  for (size_t i = 0; i < inp.size(); ++i) inp[i] += 3.0f + (float)(i / C);  // per-row offsets
  Vec weight(C, 1.0f), bias(C, 0.0f), out(inp.size()), mean(N), rstd(N);
  moebench::layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(),
                              bias.data(), N, C);
  for (int n = 0; n < N; ++n) {
    double m = 0, v = 0, xm = 0, xv = 0;
    for (int c = 0; c < C; ++c) { m += out[n * C + c]; xm += inp[n * C + c]; }
    m /= C;
    xm /= C;
    for (int c = 0; c < C; ++c) {
      v += (out[n * C + c] - m) * (out[n * C + c] - m);
      xv += (inp[n * C + c] - xm) * (inp[n * C + c] - xm);
    }
    v /= C;
    xv /= C;
    QVERIFY2(std::abs(m) < 1e-5, qPrintable(QString("row %1 mean %2").arg(n).arg(m)));
    QVERIFY2(std::abs(v - 1.0) < 1e-4, qPrintable(QString("row %1 var %2").arg(n).arg(v)));
    QVERIFY(std::abs(mean[n] - xm) < 1e-5 * (1 + std::abs(xm)));
    QVERIFY(std::abs(rstd[n] - 1.0 / std::sqrt(xv + 1e-5)) < 1e-5 * rstd[n]);
  }
  // A row whose variance is comparable to eps = 1e-5: rstd = 1/sqrt(var + eps) exactly.
  Vec flat = random_vector(C, 72, 3e-3f);
  moebench::layernorm_forward(out.data(), mean.data(), rstd.data(), flat.data(), weight.data(),
                              bias.data(), 1, C);
  double fm = 0, fv = 0;
  for (float v : flat) fm += v;
  fm /= C;
  for (float v : flat) fv += (v - fm) * (v - fm);
  fv /= C;
  QVERIFY2(std::abs(rstd[0] * std::sqrt(fv + 1e-5) - 1.0) < 1e-5,
           qPrintable(QString("rstd %1 for var %2").arg(rstd[0]).arg(fv)));
}

void TestLayers::attention_matches_reference() {
  const int B = 2, T = 6, C = 12, NH = 3, hs = C / NH;
  Vec qkv = random_vector((size_t)B * T * 3 * C, 81);
  Vec out((size_t)B * T * C), preatt((size_t)B * NH * T * T), att(preatt.size());
  moebench::attention_forward(out.data(), preatt.data(), att.data(), qkv.data(), B, T, C, NH);
  auto at = [&](int b, int t, int part, int h, int i) {
    return (double)qkv[((size_t)b * T + t) * 3 * C + part * C + h * hs + i];
  };
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        std::vector<double> s(t + 1);
        double mx = -1e300, sum = 0;
        for (int t2 = 0; t2 <= t; ++t2) {
          double d = 0;
          for (int i = 0; i < hs; ++i) d += at(b, t, 0, h, i) * at(b, t2, 1, h, i);
          s[t2] = d / std::sqrt((double)hs);
          mx = std::max(mx, s[t2]);
        }
        for (int t2 = 0; t2 <= t; ++t2) sum += std::exp(s[t2] - mx);
        const size_t row = (((size_t)b * NH + h) * T + t) * T;
        for (int t2 = 0; t2 < T; ++t2) {
          const double p = t2 <= t ? std::exp(s[t2] - mx) / sum : 0.0;
          QVERIFY(std::abs(att[row + t2] - p) < 1e-6);
          QVERIFY(std::abs(preatt[row + t2] - (t2 <= t ? s[t2] : 0.0)) < 1e-5);
        }
        for (int i = 0; i < hs; ++i) {
          double o = 0;
          for (int t2 = 0; t2 <= t; ++t2) o += std::exp(s[t2] - mx) / sum * at(b, t2, 2, h, i);
          QVERIFY(std::abs(out[((size_t)b * T + t) * C + h * hs + i] - o) < 1e-5);
        }
      }
}

void TestLayers::attention_is_causal() {
  const int B = 2, T = 5, C = 8, NH = 2;
  Vec qkv = random_vector((size_t)B * T * 3 * C, 91);
  Vec out((size_t)B * T * C), preatt((size_t)B * NH * T * T), att(preatt.size());
  moebench::attention_forward(out.data(), preatt.data(), att.data(), qkv.data(), B, T, C, NH);
  const Vec before = out;
  // Change q, k and v of token t = 3 in batch 0: rows t < 3 must not move, row 3 must.
  const int tf = 3;
  for (int j = 0; j < 3 * C; ++j) qkv[((size_t)0 * T + tf) * 3 * C + j] += 1.5f;
  moebench::attention_forward(out.data(), preatt.data(), att.data(), qkv.data(), B, T, C, NH);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      bool same = std::memcmp(&out[((size_t)b * T + t) * C], &before[((size_t)b * T + t) * C],
                              C * sizeof(float)) == 0;
      const bool expect_same = b == 1 || t < tf;
      QVERIFY2(same == expect_same, qPrintable(QString("b %1 t %2").arg(b).arg(t)));
    }
}

void TestLayers::crossentropy_uniform_and_stable() {
  const int N = 3, V = 11;
  Vec logits((size_t)N * V, 0.0f), probs(logits.size()), losses(N);
  std::vector<int> targets = {0, 5, 10};
  moebench::crossentropy_softmax_forward(losses.data(), probs.data(), logits.data(),
                                         targets.data(), N, V);
  for (float l : losses) QVERIFY(std::abs(l - std::log((double)V)) < 1e-6);
  for (float p : probs) QVERIFY(std::abs(p - 1.0 / V) < 1e-7);
  // Huge logits: no overflow; a target far below the max gives a large finite loss.
  for (int v = 0; v < V; ++v) logits[v] = 1000.0f + v;
  logits[V + 5] = 500.0f;
  logits[2 * V + 10] = -200.0f;
  moebench::crossentropy_softmax_forward(losses.data(), probs.data(), logits.data(),
                                         targets.data(), N, V);
  double lse0 = 0;
  for (int v = 0; v < V; ++v) lse0 += std::exp((double)v - (V - 1));
  QVERIFY(std::abs(losses[0] - (std::log(lse0) + (V - 1))) < 1e-4);
  QVERIFY(std::abs(losses[1]) < 1e-6);                       // row 1: one dominant logit
  QVERIFY(std::abs(losses[2] - (200.0 + std::log((double)V - 1))) < 1e-3);
  for (float p : probs) QVERIFY(std::isfinite(p));
}

void TestLayers::fast_tanh_accuracy() {
  double worst = 0, worst_x = 0;
  auto check = [&](float x) {
    const double err = std::abs((double)moebench::fast_tanh(x) - std::tanh((double)x));
    if (err > worst) { worst = err; worst_x = x; }
  };
  for (int i = -400000; i <= 400000; ++i) check(i * 5e-5f);  // [-20, 20]
  for (float x : {0.0f, -0.0f, 1e-30f, -1e-30f, 3e-4f, 7.9f, 7.91f, -7.91f, 9.0f, 1e30f, -1e30f,
                  INFINITY, -INFINITY})
    check(x);
  QVERIFY2(worst < 1e-6, qPrintable(QString("max error %1 at x=%2").arg(worst).arg(worst_x)));
  QVERIFY(std::abs(moebench::fast_tanh(100.0f)) <= 1.0f);
}

void TestLayers::gelu_matches_reference() {
  const long N = 20001;
  Vec inp(N), out(N), dinp(N, 0.5f), dout(N, 1.0f);
  for (long i = 0; i < N; ++i) inp[i] = -10.0f + 20.0f * (float)i / (N - 1);
  moebench::gelu_forward(out.data(), inp.data(), N);
  moebench::gelu_backward(dinp.data(), inp.data(), dout.data(), N);
  double worst = 0, worst_g = 0;
  for (long i = 0; i < N; ++i) {
    const double x = inp[i];
    // tanh error <= 1e-6 is scaled by 0.5|x| in gelu; float rounding adds ~1 ulp.
    worst = std::max(worst, std::abs(out[i] - gelu_ref(x)) / (1.0 + std::abs(x)));
    worst_g = std::max(worst_g, std::abs(dinp[i] - 0.5 - gelu_grad_ref(x)) / (1.0 + x * x));
  }
  QVERIFY2(worst < 1e-6, qPrintable(QString("gelu error %1").arg(worst)));
  QVERIFY2(worst_g < 2e-6, qPrintable(QString("gelu grad error %1").arg(worst_g)));
}

void TestLayers::forward_deterministic_across_threads() {
  const int B = 3, T = 16, C = 136, NH = 4, V = 7;  // small V: many repeated tokens
  const int N = B * T;
  const size_t natt = (size_t)B * NH * T * T;
  auto tokens = random_tokens(N, V, 101);
  const Vec wte = random_vector((size_t)V * C, 102), wpe = random_vector((size_t)T * C, 103);
  const Vec x = random_vector((size_t)N * C, 104), x2 = random_vector((size_t)N * C, 105);
  const Vec lw = random_vector(C, 106), lb = random_vector(C, 107);
  const Vec qkv = random_vector((size_t)N * 3 * C, 108);
  const Vec logits = random_vector((size_t)N * V, 109, 3.0f);

  auto run_all = [&] {
    std::vector<Vec> r;
    Vec out((size_t)N * C), dwte(wte.size(), 0.f), dwpe(wpe.size(), 0.f);
    moebench::encoder_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
    moebench::encoder_backward(dwte.data(), dwpe.data(), x.data(), tokens.data(), B, T, C);
    r.insert(r.end(), {out, dwte, dwpe});
    Vec mean(N), rstd(N), dinp(x.size(), 0.f), dw(C, 0.f), db(C, 0.f);
    moebench::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), lw.data(),
                                lb.data(), N, C);
    moebench::layernorm_backward(dinp.data(), dw.data(), db.data(), x2.data(), x.data(),
                                 lw.data(), mean.data(), rstd.data(), N, C);
    r.insert(r.end(), {out, mean, rstd, dinp, dw, db});
    Vec preatt(natt), att(natt), dpre(natt), datt(natt), dqkv(qkv.size(), 0.f);
    moebench::attention_forward(out.data(), preatt.data(), att.data(), qkv.data(), B, T, C, NH);
    moebench::attention_backward(dqkv.data(), dpre.data(), datt.data(), x2.data(), qkv.data(),
                                 att.data(), B, T, C, NH);
    r.insert(r.end(), {out, preatt, att, dqkv});
    Vec g(x.size(), 0.f);
    moebench::gelu_forward(out.data(), x.data(), (long)x.size());
    moebench::gelu_backward(g.data(), x.data(), x2.data(), (long)x.size());
    r.insert(r.end(), {out, g});
    Vec d1(x.size(), 0.f), d2(x.size(), 0.f);
    moebench::residual_forward(out.data(), x.data(), x2.data(), (long)x.size());
    moebench::residual_backward(d1.data(), d2.data(), x2.data(), (long)x.size());
    r.insert(r.end(), {out, d1, d2});
    Vec losses(N), probs(logits.size()), dlogits(logits.size(), 0.f);
    moebench::crossentropy_softmax_forward(losses.data(), probs.data(), logits.data(),
                                           tokens.data(), N, V);
    moebench::crossentropy_softmax_backward(dlogits.data(), probs.data(), tokens.data(),
                                            1.0f / N, N, V);
    r.insert(r.end(), {losses, probs, dlogits});
    return r;
  };

  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const auto one = run_all();
  const auto again = run_all();
  omp_set_num_threads(2);
  const auto two = run_all();
  omp_set_num_threads(saved);
  QCOMPARE(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i) {
    QVERIFY2(same_bits(one[i], again[i]), qPrintable(QString("result %1 differs between calls").arg(i)));
    QVERIFY2(same_bits(one[i], two[i]), qPrintable(QString("result %1 differs 1 vs 2 threads").arg(i)));
  }
}

QTEST_APPLESS_MAIN(TestLayers)
#include "tst_layers.moc"
