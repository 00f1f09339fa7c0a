// ctest-labels: unit
// The host dispatch layout (moe/dispatch_layout.h) against a hand-computed example (dropped
// assignments, an expert with no rows), against the layout MoeLayer builds, and its errors;
// and the grouped-GEMM argument builders of kernels/ (grouped_gemm_args.h, plain C++)
// against hand-computed arrays and, applied with cuBLAS' column-major semantics on the host,
// against core's matmul_forward / matmul_backward per expert.
#include <QtTest>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "moebench/kernels/grouped_gemm_args.h"
#include "moebench/moe/dispatch_layout.h"
#include "moebench/moe/moe_layer.h"
#include "moebench/tensor/matmul.h"
#include "moebench/tensor/rng.h"
#include "test_support.h"

using namespace moebench;
using cuda::GemmOp;
using cuda::GroupedGemmArgs;

namespace {

// C = alpha op(A) op(B) + beta C for every problem, column-major as cuBLAS (host pointers).
void apply_grouped(const GroupedGemmArgs& g, float alpha, float beta) {
  for (int i = 0; i < g.count(); ++i) {
    const float* A = static_cast<const float*>(g.A[i]);
    const float* B = static_cast<const float*>(g.B[i]);
    float* C = static_cast<float*>(g.C[i]);
    for (int col = 0; col < g.n[i]; ++col)
      for (int row = 0; row < g.m[i]; ++row) {
        double acc = 0.0;
        for (int l = 0; l < g.k[i]; ++l) {
          const float a = g.transa == GemmOp::N ? A[row + (long)l * g.lda[i]] : A[l + (long)row * g.lda[i]];
          const float b = g.transb == GemmOp::N ? B[l + (long)col * g.ldb[i]] : B[col + (long)l * g.ldb[i]];
          acc += (double)a * b;
        }
        float& c = C[row + (long)col * g.ldc[i]];
        c = (float)(alpha * acc + beta * (double)c);
      }
  }
}

bool all_close(const std::vector<float>& got, const std::vector<float>& ref, double tol) {
  if (got.size() != ref.size()) return false;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::abs((double)got[i] - ref[i]) > tol * (1.0 + std::abs((double)ref[i]))) return false;
  return true;
}

std::vector<const void*> addresses(std::initializer_list<const void*> l) { return l; }

}  // namespace

class TestDispatchLayout : public QObject {
  Q_OBJECT

 private slots:
  // N = 4 tokens, K = 2, E = 4; assignments i = n*K + k:
  //   expert = [1 0 | 1 2 | 0 1 | 1 2], kept = [1 1 | 1 0 | 1 1 | 0 1]
  // kept per expert: e0 {i1, i4}, e1 {i0, i2, i5}, e2 {i7}, e3 none.
  void hand_example() {
    const int N = 4, K = 2, E = 4;
    const std::vector<int> expert = {1, 0, 1, 2, 0, 1, 1, 2};
    const std::vector<uint8_t> kept = {1, 1, 1, 0, 1, 1, 0, 1};
    std::vector<int> offsets(E + 1, -7), slot_of(N * K, -7), token_of(N * K, -7);
    dispatch_layout(offsets.data(), slot_of.data(), token_of.data(), expert.data(), kept.data(), N, K, E);
    QCOMPARE(offsets, (std::vector<int>{0, 2, 5, 6, 6}));
    QCOMPARE(slot_of, (std::vector<int>{2, 0, 3, -1, 1, 4, -1, 5}));
    token_of.resize(offsets[E]);
    QCOMPARE(token_of, (std::vector<int>{0, 2, 0, 1, 2, 3}));
  }

  void no_tokens() {
    std::vector<int> offsets(4, -1);
    dispatch_layout(offsets.data(), nullptr, nullptr, nullptr, nullptr, 0, 2, 3);
    QCOMPARE(offsets, (std::vector<int>{0, 0, 0, 0}));
  }

  void errors() {
    std::vector<int> offsets(3), slot_of(2), token_of(2);
    const std::vector<int> bad = {0, 2};
    const std::vector<uint8_t> kept = {1, 0};
    QVERIFY(test::error_message<std::invalid_argument>([&] {
              dispatch_layout(offsets.data(), slot_of.data(), token_of.data(), bad.data(), kept.data(), 1, 2, 2);
            }).contains("outside [0, 2)"));
    QVERIFY(test::error_message<std::invalid_argument>([&] {
              dispatch_layout(offsets.data(), slot_of.data(), token_of.data(), bad.data(), kept.data(), 1, 0, 2);
            }).contains("K >= 1"));
  }

  // MoeLayer's layout (built through dispatch_layout) is grouped by expert in (n, k) order
  // and consistent with the routing, on a layer with capacity dropping.
  void moe_layer_layout() {
    const MoeLayerShape s{40, 8, 12, 6, 2, 0.8f, true};
    const auto x = test::random_vector((size_t)s.N * s.C, 11);
    const auto wr = test::random_vector((size_t)s.E * s.C, 12);
    std::vector<std::vector<float>> p;
    std::vector<ExpertParams> experts;
    for (int e = 0; e < s.E; ++e) {
      p.push_back(test::random_vector((size_t)s.F * s.C, 20 + e, 0.3f));
      p.push_back(test::random_vector(s.F, 40 + e, 0.1f));
      p.push_back(test::random_vector((size_t)s.C * s.F, 60 + e, 0.3f));
      p.push_back(test::random_vector(s.C, 80 + e, 0.1f));
    }
    for (int e = 0; e < s.E; ++e) experts.push_back({p[4 * e].data(), p[4 * e + 1].data(), p[4 * e + 2].data(), p[4 * e + 3].data()});
    MoeLayer layer;
    std::vector<float> out((size_t)s.N * s.C);
    layer.forward(out.data(), x.data(), wr.data(), experts, s);
    const Routing& r = layer.routing();
    QVERIFY(r.dropped() > 0);
    const auto& off = layer.expert_offsets();
    const auto& slot_of = layer.slot_of();
    std::vector<int> next(off.begin(), off.end() - 1);
    for (int i = 0; i < s.N * s.K; ++i) {
      if (!r.kept[i]) {
        QCOMPARE(slot_of[i], -1);
        continue;
      }
      QCOMPARE(slot_of[i], next[r.expert[i]]++);
    }
    for (int e = 0; e < s.E; ++e) {
      QCOMPARE(next[e], off[e + 1]);
      QCOMPARE(off[e + 1] - off[e], r.counts[e]);
    }
  }

  // E = 3 experts, rows [0,3) [3,3) [3,7): the empty expert 1 is left out. C = 4, OC = 6.
  void grouped_args_hand() {
    const int E = 3, C = 4, OC = 6;
    const int offsets[] = {0, 3, 3, 7};
    std::vector<float> inp(7 * C), out(7 * OC), w(E * OC * C), dinp(7 * C), dout(7 * OC), dw(E * OC * C);

    const GroupedGemmArgs f = cuda::grouped_linear_forward_args(offsets, E, sizeof(float), out.data(), inp.data(),
                                                                w.data(), C, OC);
    QCOMPARE(f.count(), 2);
    QVERIFY(f.transa == GemmOp::T && f.transb == GemmOp::N);
    QCOMPARE(f.m, (std::vector<int>{6, 6}));
    QCOMPARE(f.n, (std::vector<int>{3, 4}));
    QCOMPARE(f.k, (std::vector<int>{4, 4}));
    QCOMPARE(f.lda, (std::vector<int>{4, 4}));
    QCOMPARE(f.ldb, (std::vector<int>{4, 4}));
    QCOMPARE(f.ldc, (std::vector<int>{6, 6}));
    QCOMPARE(f.expert, (std::vector<int>{0, 2}));
    QVERIFY(f.A == addresses({&w[0], &w[48]}));
    QVERIFY(f.B == addresses({&inp[0], &inp[12]}));
    QVERIFY(f.C == (std::vector<void*>{&out[0], &out[18]}));

    const GroupedGemmArgs d = cuda::grouped_linear_dinp_args(offsets, E, sizeof(float), dinp.data(), dout.data(),
                                                             w.data(), C, OC);
    QVERIFY(d.transa == GemmOp::N && d.transb == GemmOp::N);
    QCOMPARE(d.m, (std::vector<int>{4, 4}));
    QCOMPARE(d.n, (std::vector<int>{3, 4}));
    QCOMPARE(d.k, (std::vector<int>{6, 6}));
    QCOMPARE(d.lda, (std::vector<int>{4, 4}));
    QCOMPARE(d.ldb, (std::vector<int>{6, 6}));
    QCOMPARE(d.ldc, (std::vector<int>{4, 4}));
    QVERIFY(d.A == addresses({&w[0], &w[48]}));
    QVERIFY(d.B == addresses({&dout[0], &dout[18]}));
    QVERIFY(d.C == (std::vector<void*>{&dinp[0], &dinp[12]}));

    const GroupedGemmArgs g = cuda::grouped_linear_dweight_args(offsets, E, sizeof(float), dw.data(), dout.data(),
                                                                inp.data(), C, OC);
    QVERIFY(g.transa == GemmOp::N && g.transb == GemmOp::T);
    QCOMPARE(g.m, (std::vector<int>{4, 4}));
    QCOMPARE(g.n, (std::vector<int>{6, 6}));
    QCOMPARE(g.k, (std::vector<int>{3, 4}));
    QCOMPARE(g.lda, (std::vector<int>{4, 4}));
    QCOMPARE(g.ldb, (std::vector<int>{6, 6}));
    QCOMPARE(g.ldc, (std::vector<int>{4, 4}));
    QCOMPARE(g.expert, (std::vector<int>{0, 2}));
    QVERIFY(g.A == addresses({&inp[0], &inp[12]}));
    QVERIFY(g.B == addresses({&dout[0], &dout[18]}));
    QVERIFY(g.C == (std::vector<void*>{&dw[0], &dw[48]}));

    // bf16 (2-byte elements): the same element offsets in bytes.
    std::vector<uint16_t> inp16(7 * C), out16(7 * OC), w16(E * OC * C);
    const GroupedGemmArgs h = cuda::grouped_linear_forward_args(offsets, E, 2, out16.data(), inp16.data(),
                                                                w16.data(), C, OC);
    QVERIFY(h.A == addresses({&w16[0], &w16[48]}));
    QVERIFY(h.B == addresses({&inp16[0], &inp16[12]}));
    QVERIFY(h.C == (std::vector<void*>{&out16[0], &out16[18]}));
  }

  void grouped_args_errors() {
    const int decreasing[] = {0, 3, 2};
    float buf[64] = {};
    QVERIFY(test::error_message<std::invalid_argument>([&] {
              cuda::grouped_linear_forward_args(decreasing, 2, 4, buf, buf, buf, 2, 2);
            }).contains("offsets decrease at expert 1"));
    const int all_empty[] = {0, 0, 0};
    QCOMPARE(cuda::grouped_linear_dweight_args(all_empty, 2, 4, buf, buf, buf, 2, 2).count(), 0);
  }

  // The three builders applied with cuBLAS' semantics equal matmul_forward / matmul_backward
  // per expert: forward (beta 0), dinp (beta 0) and dweight (beta 1, accumulating).
  void grouped_args_semantics() {
    const int E = 4, C = 5, OC = 3;
    const std::vector<int> offsets = {0, 2, 2, 7, 8};
    const int S = offsets[E];
    const auto inp = test::random_vector((size_t)S * C, 1);
    const auto w = test::random_vector((size_t)E * OC * C, 2);
    const auto dout = test::random_vector((size_t)S * OC, 3);
    const auto dw0 = test::random_vector((size_t)E * OC * C, 4);

    std::vector<float> out(S * OC, 99.0f), dinp(S * C, 99.0f), dw = dw0;
    apply_grouped(cuda::grouped_linear_forward_args(offsets.data(), E, 4, out.data(), inp.data(), w.data(), C, OC),
                  1.0f, 0.0f);
    apply_grouped(cuda::grouped_linear_dinp_args(offsets.data(), E, 4, dinp.data(), dout.data(), w.data(), C, OC),
                  1.0f, 0.0f);
    apply_grouped(cuda::grouped_linear_dweight_args(offsets.data(), E, 4, dw.data(), dout.data(), inp.data(), C, OC),
                  1.0f, 1.0f);

    std::vector<float> ref_out(S * OC), ref_dinp(S * C, 0.0f), ref_dw = dw0;
    for (int e = 0; e < E; ++e) {
      const int r0 = offsets[e], M = offsets[e + 1] - r0;
      matmul_forward(ref_out.data() + r0 * OC, inp.data() + r0 * C, w.data() + e * OC * C, nullptr, M, C, OC);
      matmul_backward(ref_dinp.data() + r0 * C, ref_dw.data() + e * OC * C, nullptr, dout.data() + r0 * OC,
                      inp.data() + r0 * C, w.data() + e * OC * C, M, C, OC);
    }
    QVERIFY(all_close(out, ref_out, 1e-5));
    QVERIFY(all_close(dinp, ref_dinp, 1e-5));
    QVERIFY(all_close(dw, ref_dw, 1e-5));
    // Expert 1 has no rows: its gradient block is untouched.
    for (int j = OC * C; j < 2 * OC * C; ++j) QCOMPARE(dw[j], dw0[j]);
  }

  // With a stride (the parameter arena's per-expert layout: each expert's weight followed by its
  // other tensors) the builders read and write expert e's weight at e * stride, and nothing in
  // between: the same products as the contiguous layout.
  void grouped_args_with_a_stride() {
    const int E = 3, C = 4, OC = 2;
    const size_t own = (size_t)OC * C, stride = own + 5;
    const std::vector<int> offsets = {0, 3, 3, 6};
    const int S = offsets[E];
    const auto inp = test::random_vector((size_t)S * C, 5);
    const auto w = test::random_vector((size_t)E * own, 6);
    const auto dout = test::random_vector((size_t)S * OC, 7);
    std::vector<float> ws(E * stride, -7.0f);  // the experts' weights, 5 other floats after each
    for (int e = 0; e < E; ++e) std::copy_n(w.begin() + e * own, own, ws.begin() + e * stride);
    std::vector<float> out(S * OC), out_s(S * OC), dinp(S * C), dinp_s(S * C), dw(E * own, 0.0f), dws(E * stride, -7.0f);
    for (int e = 0; e < E; ++e) std::fill_n(dws.begin() + e * stride, own, 0.0f);
    apply_grouped(cuda::grouped_linear_forward_args(offsets.data(), E, 4, out.data(), inp.data(), w.data(), C, OC),
                  1.0f, 0.0f);
    apply_grouped(cuda::grouped_linear_forward_args(offsets.data(), E, 4, out_s.data(), inp.data(), ws.data(), C, OC,
                                                    stride),
                  1.0f, 0.0f);
    apply_grouped(cuda::grouped_linear_dinp_args(offsets.data(), E, 4, dinp.data(), dout.data(), w.data(), C, OC),
                  1.0f, 0.0f);
    apply_grouped(cuda::grouped_linear_dinp_args(offsets.data(), E, 4, dinp_s.data(), dout.data(), ws.data(), C, OC,
                                                 stride),
                  1.0f, 0.0f);
    apply_grouped(cuda::grouped_linear_dweight_args(offsets.data(), E, 4, dw.data(), dout.data(), inp.data(), C, OC),
                  1.0f, 1.0f);
    apply_grouped(cuda::grouped_linear_dweight_args(offsets.data(), E, 4, dws.data(), dout.data(), inp.data(), C, OC,
                                                    stride),
                  1.0f, 1.0f);
    QCOMPARE(out_s, out);
    QCOMPARE(dinp_s, dinp);
    for (int e = 0; e < E; ++e) {
      for (size_t j = 0; j < own; ++j) QCOMPARE(dws[e * stride + j], dw[e * own + j]);
      for (size_t j = own; j < stride; ++j) QCOMPARE(dws[e * stride + j], -7.0f);  // the other tensors
    }
  }
};

QTEST_APPLESS_MAIN(TestDispatchLayout)
#include "tst_dispatch_layout.moc"
