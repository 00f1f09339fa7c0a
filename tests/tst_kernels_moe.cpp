// ctest-labels: gpu
// The MoE kernels of kernels/ against their CPU functions in core, forward and backward, fp32
// and bf16, on random inputs with fixed seeds:
//   router      cuda::route_from_logits / router_logits_backward vs route_from_logits /
//               router_logits_backward (top-k, exact ties, gate normalisation on and off,
//               capacity dropping in GShard order, forced choices with repeats, E = 64 K = 8)
//   layout      cuda::dispatch_layout vs dispatch_layout (dropped slots, empty experts), also
//               fed straight from the device router
//   permute     moe_permute_* / moe_unpermute_* vs MoeLayer's gather, combine, combine
//               backward and scatter-add (both row-copy paths: C * sizeof(T) a multiple of 16
//               bytes or not)
//   experts     experts_forward / experts_backward (grouped cuBLAS, per-expert cuBLASLt with fused
//               epilogues, and the measured choice) vs ExpertBank, with
//               experts that get no rows, gradients accumulated onto non-zero values
//   pipeline    router -> layout -> permute -> experts -> unpermute and back vs MoeLayer
//               (E = 64, K = 8, capacity dropping; fp32), run twice: bitwise identical.
// bf16 inputs are rounded to bf16 first and the CPU reference runs in fp32 on the rounded
// values, so the differences are the device's own roundings.
//
// Tolerances (|got - ref| <= atol + rtol * |ref|):
//   exact      expert choice, kept flags, selected, counts, f, the layout, permuted rows (a copy)
//   fp32       probabilities, gates, P: atol 1e-6, rtol 1e-5 (expf and warp-tree sums vs
//              std::exp and serial sums); aux: rtol 1e-5; dlogits: atol 2e-6, rtol 1e-4;
//              combine: atol 1e-5 (the device fuses multiply-adds), rtol 1e-5; dy and the
//              scatter-add: atol 1e-6, rtol 1e-5 (same operations); dgate (a dot over C in another
//              order): atol 1e-4, rtol 1e-5; experts (cuBLAS fp32 vs OpenBLAS): atol 1e-4,
//              rtol 1e-4; pipeline gradients: atol 2e-4, rtol 1e-3.
//   bf16       one rounding of an fp32 result to bf16 is at most 2^-9 relative: rtol 5e-3
//              with the fp32 atol (dlogits, combine, dy, scatter-add); the experts keep bf16 activations (h, a,
//              da, dh) and bf16 weight gradients between GEMMs: atol and rtol 3e-2 of the
//              tensor's largest magnitude.
//
// Without a CUDA build every test is skipped ("built without CUDA"); with one but no visible
// device too ("no GPU").
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "moebench/moe/dispatch_layout.h"
#include "moebench/moe/expert_bank.h"
#include "moebench/moe/moe_layer.h"
#include "moebench/moe/router.h"
#include "moebench/train/device.h"
#include "moebench/tensor/matmul.h"
#include "moebench/tensor/rng.h"
#include "test_support.h"

#ifdef MOEBENCH_HAVE_CUDA
#include <cuda_runtime.h>

#include "cuda_test_support.h"
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/device_buffer.h"
#include "moebench/kernels/dispatch_layout.h"
#include "moebench/kernels/experts.h"
#include "moebench/kernels/moe_permute.h"
#include "moebench/kernels/precision.h"
#include "moebench/kernels/router.h"
#endif

using namespace moebench;

#ifdef MOEBENCH_HAVE_CUDA
#define REQUIRE_GPU()                                                                    \
  do {                                                                                   \
    const CudaAvailability avail_ = cuda_availability();                                 \
    if (avail_.devices == 0)                                                             \
      QSKIP(qPrintable(QString("no GPU: MoE kernel tests skipped (%1)")                  \
                           .arg(QString::fromStdString(avail_.detail))));                \
  } while (0)
#define GPU_BODY(...) __VA_ARGS__
#else
#define REQUIRE_GPU() QSKIP("built without CUDA: MoE kernel tests need nvcc at configure time")
#define GPU_BODY(...)
#endif

#ifdef MOEBENCH_HAVE_CUDA
namespace {

using cuda::bf16;
using cuda::DeviceBuffer;

using namespace moebench::test;  // cuda_test_support.h

#define CHECK_CLOSE(what, got, ref, atol, rtol)                                      \
  do {                                                                               \
    const QString m_ = mismatch((got), (ref), (atol), (rtol));                       \
    QVERIFY2(m_.isEmpty(), qPrintable(QString("%1: %2").arg(what, m_)));             \
  } while (0)

// Exact equality of two vectors, naming the first differing element.
template <class V>
QString first_difference(const V& got, const V& ref) {
  if (got.size() != ref.size()) return QString("size %1 vs %2").arg(got.size()).arg(ref.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (!(got[i] == ref[i])) return QString("element %1: got %2, expected %3").arg(i).arg((double)got[i]).arg((double)ref[i]);
  return {};
}

#define CHECK_EQUAL(what, got, ref)                                                  \
  do {                                                                               \
    const QString m_ = first_difference((got), (ref));                               \
    QVERIFY2(m_.isEmpty(), qPrintable(QString("%1: %2").arg(what, m_)));             \
  } while (0)

// ---- router -----------------------------------------------------------------------------------

enum class Logits { random, ties, forced };

struct RouterCase {
  int N, E, K;
  float capacity_factor;
  bool normalize;
  Logits kind;
};

std::vector<float> make_logits(const RouterCase& c, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> l((size_t)c.N * c.E);
  for (auto& v : l) v = c.kind == Logits::ties ? (float)rng.below(3) : 2.0f * rng.normal();
  return l;
}

std::vector<int> make_forced(const RouterCase& c, uint64_t seed) {
  Rng rng(seed);
  std::vector<int> f((size_t)c.N * c.K);
  for (auto& e : f) e = (int)rng.below(c.E);  // repeats within a token allowed
  return f;
}

template <class T>
void check_router(const RouterCase& c, uint64_t seed) {
  const std::vector<float> logits = rounded<T>(make_logits(c, seed));
  const std::vector<int> forced = c.kind == Logits::forced ? make_forced(c, seed + 1) : std::vector<int>();
  RouterOptions opt;
  opt.top_k = c.K;
  opt.capacity_factor = c.capacity_factor;
  opt.gate_normalize = c.normalize;
  Routing ref;
  route_from_logits(ref, logits.data(), c.N, c.E, opt, forced.empty() ? nullptr : forced.data());
  if (c.capacity_factor > 0.0f) QVERIFY2(ref.dropped() > 0, "the case should drop assignments");

  DeviceBuffer<T> d_logits = upload<T>(logits);
  DeviceBuffer<int> d_forced(forced);
  cuda::DeviceRoutingBuffers buf;
  buf.resize(c.N, c.E, c.K);
  cuda::DeviceRouting r = buf.view();
  const cuda::RouterParams params{c.K, expert_capacity(c.capacity_factor, c.N, c.K, c.E), c.normalize};
  cuda::route_from_logits(r, d_logits.data(), c.N, c.E, params, forced.empty() ? nullptr : d_forced.data());
  QCOMPARE(r.N, c.N);
  QCOMPARE(r.E, c.E);
  QCOMPARE(r.K, c.K);
  QCOMPARE(r.capacity, ref.capacity);
  QCOMPARE(r.gate_normalize, c.normalize);

  CHECK_CLOSE("probs", download(buf.probs), ref.probs, 1e-6, 1e-5);
  CHECK_EQUAL("expert", download_raw(buf.expert), ref.expert);
  CHECK_CLOSE("gate", download(buf.gate), ref.gate, 1e-6, 1e-5);
  CHECK_EQUAL("kept", download_raw(buf.kept), ref.kept);
  CHECK_EQUAL("selected", download_raw(buf.selected), ref.selected);
  CHECK_EQUAL("counts", download_raw(buf.counts), ref.counts);
  CHECK_EQUAL("f", download(buf.f), ref.f);
  CHECK_CLOSE("P", download(buf.P), ref.P, 1e-6, 1e-5);
  CHECK_CLOSE("aux", download(buf.aux), std::vector<float>{ref.aux}, 0.0, 1e-5);

  // Backward: dgate random on kept assignments, zero on dropped ones (as the combine
  // backward gives it), and an aux weight.
  std::vector<float> dgate = test::random_vector((size_t)c.N * c.K, seed + 2);
  for (size_t i = 0; i < dgate.size(); ++i)
    if (!ref.kept[i]) dgate[i] = 0.0f;
  const float aux_weight = 0.05f;
  std::vector<float> ref_dlogits((size_t)c.N * c.E);
  router_logits_backward(ref_dlogits.data(), dgate.data(), aux_weight, ref);
  DeviceBuffer<float> d_dgate(dgate);
  DeviceBuffer<T> d_dlogits((size_t)c.N * c.E);
  cuda::router_logits_backward(d_dlogits.data(), d_dgate.data(), aux_weight, r);
  if constexpr (is_bf16<T>)
    CHECK_CLOSE("dlogits", download(d_dlogits), ref_dlogits, 2e-6, 5e-3);
  else
    CHECK_CLOSE("dlogits", download(d_dlogits), ref_dlogits, 2e-6, 1e-4);
}

const RouterCase kRouterCases[] = {
    {64, 8, 2, 0.0f, true, Logits::random},      // dropless, normalised
    {200, 16, 4, 1.0f, false, Logits::random},   // capacity dropping, raw gates
    {96, 6, 3, 0.8f, true, Logits::ties},        // exact ties everywhere, dropping
    {50, 5, 5, 0.0f, false, Logits::ties},       // K = E with ties
    {80, 8, 3, 0.7f, true, Logits::forced},      // forced choice with repeats, dropping
    {256, 64, 8, 1.25f, true, Logits::random},   // E = 64, K = 8, dropping
    {33, 64, 8, 0.0f, false, Logits::random},    // E = 64, K = 8, dropless, N not a multiple of 8
};

template <class T>
void check_router_cases() {
  uint64_t seed = 100;
  for (const RouterCase& c : kRouterCases) {
    check_router<T>(c, seed += 10);
    if (QTest::currentTestFailed()) {
      qWarning("router case N=%d E=%d K=%d capacity_factor=%g normalize=%d kind=%d", c.N, c.E, c.K,
               c.capacity_factor, (int)c.normalize, (int)c.kind);
      return;
    }
  }
}

// ---- dispatch layout ------------------------------------------------------------------------

struct Layout {
  std::vector<int> offsets, slot_of, token_of;
};

Layout host_layout(const std::vector<int>& expert, const std::vector<uint8_t>& kept, int N, int K, int E) {
  Layout l;
  l.offsets.resize(E + 1);
  l.slot_of.resize((size_t)N * K);
  l.token_of.resize((size_t)N * K);
  dispatch_layout(l.offsets.data(), l.slot_of.data(), l.token_of.data(), expert.data(), kept.data(), N, K, E);
  l.token_of.resize(l.offsets[E]);
  return l;
}

// The device layout of device expert / kept arrays, downloaded.
Layout device_layout(const int* d_expert, const uint8_t* d_kept, int N, int K, int E) {
  DeviceBuffer<int> offsets(E + 1), slot_of((size_t)std::max(1, N * K)), token_of((size_t)std::max(1, N * K));
  cuda::dispatch_layout(offsets.data(), slot_of.data(), token_of.data(), d_expert, d_kept, N, K, E);
  Layout l;
  l.offsets = download_raw(offsets);
  l.slot_of = download_raw(slot_of);
  l.token_of = download_raw(token_of);
  l.slot_of.resize((size_t)N * K);
  l.token_of.resize(l.offsets[E]);
  return l;
}

void check_layout_case(int N, int K, int E, uint64_t seed) {
  Rng rng(seed);
  std::vector<int> expert((size_t)N * K);
  std::vector<uint8_t> kept((size_t)N * K);
  for (size_t i = 0; i < expert.size(); ++i) {
    int e = (int)rng.below(E);
    if (e % 5 == 3) e = (e + 1) % E;  // experts 3, 8, 13, ... get nothing
    expert[i] = e;
    kept[i] = rng.uniform() < 0.8f ? 1 : 0;
  }
  const Layout ref = host_layout(expert, kept, N, K, E);
  DeviceBuffer<int> d_expert(expert);
  DeviceBuffer<uint8_t> d_kept(kept);
  const Layout got = device_layout(d_expert.data(), d_kept.data(), N, K, E);
  CHECK_EQUAL("offsets", got.offsets, ref.offsets);
  CHECK_EQUAL("slot_of", got.slot_of, ref.slot_of);
  CHECK_EQUAL("token_of", got.token_of, ref.token_of);
}

// ---- permute / unpermute --------------------------------------------------------------------

template <class T>
void check_permute(int N, int E, int K, int C, uint64_t seed) {
  RouterOptions opt;
  opt.top_k = K;
  opt.capacity_factor = 0.75f;
  Routing r;
  const auto logits = test::random_vector((size_t)N * E, seed, 2.0f);
  route_from_logits(r, logits.data(), N, E, opt);
  QVERIFY(r.dropped() > 0);
  const Layout l = host_layout(r.expert, r.kept, N, K, E);
  const int S = l.offsets[E];

  const auto x = rounded<T>(test::random_vector((size_t)N * C, seed + 1));
  const auto y = rounded<T>(test::random_vector((size_t)S * C, seed + 2));
  const auto dout = rounded<T>(test::random_vector((size_t)N * C, seed + 3));
  const auto dxg = rounded<T>(test::random_vector((size_t)S * C, seed + 4));
  const auto dx0 = rounded<T>(test::random_vector((size_t)N * C, seed + 5));

  // References: MoeLayer's loops.
  std::vector<float> ref_xg((size_t)S * C), ref_out((size_t)N * C, 0.0f), ref_dy((size_t)S * C),
      ref_dgate((size_t)N * K), ref_dx = dx0;
  for (int s = 0; s < S; ++s)
    std::copy_n(x.begin() + (long)l.token_of[s] * C, C, ref_xg.begin() + (long)s * C);
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) {
      const int i = n * K + k, slot = l.slot_of[i];
      if (slot < 0) {
        ref_dgate[i] = 0.0f;
        continue;
      }
      const float g = r.gate[i];
      float dot = 0.0f;
      for (int c = 0; c < C; ++c) {
        ref_out[(long)n * C + c] += g * y[(long)slot * C + c];
        dot += dout[(long)n * C + c] * y[(long)slot * C + c];
        ref_dy[(long)slot * C + c] = g * dout[(long)n * C + c];
        ref_dx[(long)n * C + c] += dxg[(long)slot * C + c];
      }
      ref_dgate[i] = dot;
    }

  DeviceBuffer<T> d_x = upload<T>(x), d_y = upload<T>(y), d_dout = upload<T>(dout), d_dxg = upload<T>(dxg),
                  d_dx = upload<T>(dx0);
  // Overwritten outputs start as garbage (7s), to see that every element is written.
  DeviceBuffer<T> d_xg = upload<T>(std::vector<float>((size_t)S * C, 7.0f)),
                  d_out = upload<T>(std::vector<float>((size_t)N * C, 7.0f)),
                  d_dy = upload<T>(std::vector<float>((size_t)S * C, 7.0f));
  DeviceBuffer<float> d_gate(r.gate), d_dgate(std::vector<float>((size_t)N * K, 7.0f));
  DeviceBuffer<int> d_token_of(l.token_of), d_slot_of(l.slot_of);

  cuda::moe_permute_forward(d_xg.data(), d_x.data(), d_token_of.data(), S, C);
  cuda::moe_unpermute_forward(d_out.data(), d_y.data(), d_gate.data(), d_slot_of.data(), N, K, C);
  cuda::moe_unpermute_backward(d_dgate.data(), d_dy.data(), d_dout.data(), d_y.data(), d_gate.data(),
                               d_slot_of.data(), N, K, C);
  cuda::moe_permute_backward(d_dx.data(), d_dxg.data(), d_slot_of.data(), N, K, C);

  CHECK_EQUAL("xg", download(d_xg), ref_xg);
  const double rt = is_bf16<T> ? 5e-3 : 1e-5;
  CHECK_CLOSE("out", download(d_out), ref_out, 1e-5, rt);  // fused multiply-adds on the device
  CHECK_CLOSE("dy", download(d_dy), ref_dy, 1e-6, rt);
  CHECK_CLOSE("dgate", download(d_dgate), ref_dgate, 1e-4, 1e-5);
  CHECK_CLOSE("dx", download(d_dx), ref_dx, 1e-6, rt);
}

// ---- experts --------------------------------------------------------------------------------


// Tolerance of an expert output: fp32 fixed, bf16 relative to the tensor's scale.
template <class T>
void check_expert_tensor(const char* what, const std::vector<float>& got, const std::vector<float>& ref) {
  if constexpr (is_bf16<T>) {
    const double scale = std::max(1e-3, max_abs(ref));
    CHECK_CLOSE(what, got, ref, 3e-2 * scale, 3e-2);
  } else {
    CHECK_CLOSE(what, got, ref, 1e-4, 1e-4);
  }
}

template <class T>
void check_experts(const std::vector<int>& rows, int C, int F, uint64_t seed, cuda::ExpertGemmPath path) {
  const int E = (int)rows.size();
  std::vector<int> offsets(E + 1, 0);
  for (int e = 0; e < E; ++e) offsets[e + 1] = offsets[e] + rows[e];
  const int S = offsets[E];
  HostExperts w = make_experts<T>(E, C, F, seed);
  HostExperts g0 = make_experts<T>(E, C, F, seed + 10, 0.5f);  // non-zero gradients to accumulate on
  const auto x = rounded<T>(test::random_vector((size_t)S * C, seed + 20));
  const auto dy = rounded<T>(test::random_vector((size_t)S * C, seed + 21));

  ExpertBank bank;
  std::vector<float> ref_y((size_t)S * C), ref_dx((size_t)S * C);
  HostExperts ref_g = g0;
  bank.forward(ref_y.data(), x.data(), offsets, w.params(), C, F);
  bank.backward(ref_dx.data(), dy.data(), ref_g.params(), w.params());

  DeviceExperts<T> d_w(w), d_g(g0);
  DeviceBuffer<T> d_x = upload<T>(x), d_dy = upload<T>(dy);
  const size_t sc = std::max<size_t>(1, (size_t)S * C), sf = std::max<size_t>(1, (size_t)S * F);
  DeviceBuffer<T> d_y(sc), d_h(sf), d_a(sf), d_dx(sc), d_da(sf), d_dh(sf);
  cuda::experts_forward(d_y.data(), d_h.data(), d_a.data(), d_x.data(), offsets.data(), d_w.view(), E, C, F, nullptr,
                        path);
  cuda::experts_backward(d_dx.data(), d_g.view(), d_da.data(), d_dh.data(), d_dy.data(), d_x.data(), d_h.data(),
                         d_a.data(), offsets.data(), d_w.view(), E, C, F, nullptr, path);

  if (S > 0) {
    std::vector<float> y = download(d_y), dx = download(d_dx);
    y.resize((size_t)S * C);
    dx.resize((size_t)S * C);
    check_expert_tensor<T>("y", y, ref_y);
    check_expert_tensor<T>("dx", dx, ref_dx);
  }
  const std::vector<float> gw1 = download(d_g.w1), gb1 = download(d_g.b1), gw2 = download(d_g.w2),
                           gb2 = download(d_g.b2);
  check_expert_tensor<T>("dw1", gw1, ref_g.w1);
  check_expert_tensor<T>("db1", gb1, ref_g.b1);
  check_expert_tensor<T>("dw2", gw2, ref_g.w2);
  check_expert_tensor<T>("db2", gb2, ref_g.b2);
  // Experts with no rows keep their gradients bit for bit.
  for (int e = 0; e < E; ++e) {
    if (rows[e] > 0) continue;
    for (long j = (long)e * F * C; j < (long)(e + 1) * F * C; ++j) QCOMPARE(gw1[j], g0.w1[j]);
    for (long j = (long)e * C * F; j < (long)(e + 1) * C * F; ++j) QCOMPARE(gw2[j], g0.w2[j]);
    for (long j = (long)e * F; j < (long)(e + 1) * F; ++j) QCOMPARE(gb1[j], g0.b1[j]);
    for (long j = (long)e * C; j < (long)(e + 1) * C; ++j) QCOMPARE(gb2[j], g0.b2[j]);
  }
}

// Row counts of E = 64 experts from N * K = 512 random assignments (a few experts get none).
std::vector<int> rows_e64(uint64_t seed) {
  Rng rng(seed);
  std::vector<int> rows(64, 0);
  for (int i = 0; i < 512; ++i) {
    int e = (int)rng.below(64);
    if (e % 16 == 5) e = (e + 1) % 64;
    rows[e] += 1;
  }
  return rows;
}

template <class T>
void check_expert_cases(cuda::ExpertGemmPath path) {
  check_experts<T>({5, 0, 9, 3}, 32, 64, 300, path);
  if (QTest::currentTestFailed()) return;
  check_experts<T>({0, 1, 0, 17, 2, 0}, 16, 24, 310, path);
  if (QTest::currentTestFailed()) return;
  check_experts<T>({0, 0, 0}, 8, 16, 320, path);  // no rows at all: a no-op
  if (QTest::currentTestFailed()) return;
  check_experts<T>(rows_e64(330), 64, 128, 340, path);
  if (QTest::currentTestFailed()) return;
  // Experts of several 64-row chunks (the bias gradients' first pass), one of exactly one chunk.
  check_experts<T>({200, 0, 64, 129}, 24, 40, 350, path);
}

// ---- the whole block ------------------------------------------------------------------------

// What one device pass of the block produces (fp32).
struct BlockResult {
  std::vector<float> out, dx, dwr, dw1, db1, dw2, db2;
  float aux = 0.0f;
  std::vector<int> expert;
  std::vector<uint8_t> kept;
};

BlockResult device_block(const MoeLayerShape& s, const std::vector<float>& x, const std::vector<float>& wr,
                         HostExperts& w, const std::vector<float>& dout, float aux_weight) {
  const int N = s.N, C = s.C, F = s.F, E = s.E, K = s.K;
  BlockResult res;
  // The logits GEMM is the dense helper's matmul_forward; here it runs on the host.
  std::vector<float> logits((size_t)N * E);
  matmul_forward(logits.data(), x.data(), wr.data(), nullptr, N, C, E);
  DeviceBuffer<float> d_logits(logits), d_x(x), d_dout(dout);
  cuda::DeviceRoutingBuffers rb;
  rb.resize(N, E, K);
  cuda::DeviceRouting r = rb.view();
  cuda::route_from_logits(r, d_logits.data(), N, E,
                          cuda::RouterParams{K, expert_capacity(s.capacity_factor, N, K, E), s.gate_normalize});
  DeviceBuffer<int> d_offsets(E + 1), d_slot_of((size_t)N * K), d_token_of((size_t)N * K);
  cuda::dispatch_layout(d_offsets.data(), d_slot_of.data(), d_token_of.data(), r.expert, r.kept, N, K, E);
  const std::vector<int> offsets = download_raw(d_offsets);  // the host needs the row counts
  const int S = offsets[E];
  const size_t sc = std::max<size_t>(1, (size_t)S * C), sf = std::max<size_t>(1, (size_t)S * F);
  DeviceBuffer<float> xg(sc), y(sc), h(sf), a(sf), out((size_t)N * C);
  cuda::moe_permute_forward(xg.data(), d_x.data(), d_token_of.data(), S, C);
  DeviceExperts<float> d_w(w);
  cuda::experts_forward(y.data(), h.data(), a.data(), xg.data(), offsets.data(), d_w.view(), E, C, F);
  cuda::moe_unpermute_forward(out.data(), y.data(), rb.gate.data(), d_slot_of.data(), N, K, C);

  // Backward.
  HostExperts zero = w;
  for (auto* v : {&zero.w1, &zero.b1, &zero.w2, &zero.b2}) std::fill(v->begin(), v->end(), 0.0f);
  DeviceExperts<float> d_g(zero);
  DeviceBuffer<float> dgate((size_t)N * K), dy(sc), dxg(sc), da(sf), dh(sf), dx((size_t)N * C), dlogits((size_t)N * E);
  dx.zero();
  cuda::moe_unpermute_backward(dgate.data(), dy.data(), d_dout.data(), y.data(), rb.gate.data(), d_slot_of.data(), N,
                               K, C);
  cuda::experts_backward(dxg.data(), d_g.view(), da.data(), dh.data(), dy.data(), xg.data(), h.data(), a.data(),
                         offsets.data(), d_w.view(), E, C, F);
  cuda::moe_permute_backward(dx.data(), dxg.data(), d_slot_of.data(), N, K, C);
  cuda::router_logits_backward(dlogits.data(), dgate.data(), aux_weight, r);

  res.out = download(out);
  res.aux = download(rb.aux)[0];
  res.expert = download_raw(rb.expert);
  res.kept = download_raw(rb.kept);
  res.dx = download(dx);
  res.dwr.assign((size_t)E * C, 0.0f);
  const std::vector<float> dl = download(dlogits);
  matmul_backward(res.dx.data(), res.dwr.data(), nullptr, dl.data(), x.data(), wr.data(), N, C, E);
  res.dw1 = download(d_g.w1);
  res.db1 = download(d_g.b1);
  res.dw2 = download(d_g.w2);
  res.db2 = download(d_g.b2);
  return res;
}

void check_block() {
  const MoeLayerShape s{128, 64, 128, 64, 8, 1.25f, true};
  const float aux_weight = 0.01f;
  const auto x = test::random_vector((size_t)s.N * s.C, 501);
  const auto wr = test::random_vector((size_t)s.E * s.C, 502, 0.3f);
  const auto dout = test::random_vector((size_t)s.N * s.C, 503);
  HostExperts w = make_experts<float>(s.E, s.C, s.F, 510);

  MoeLayer layer;
  std::vector<float> ref_out((size_t)s.N * s.C), ref_dx((size_t)s.N * s.C, 0.0f), ref_dwr((size_t)s.E * s.C, 0.0f);
  const float ref_aux = layer.forward(ref_out.data(), x.data(), wr.data(), w.params(), s);
  HostExperts ref_g = w;
  for (auto* v : {&ref_g.w1, &ref_g.b1, &ref_g.w2, &ref_g.b2}) std::fill(v->begin(), v->end(), 0.0f);
  layer.backward(ref_dx.data(), ref_dwr.data(), ref_g.params(), dout.data(), aux_weight, x.data(), wr.data(),
                 w.params());
  QVERIFY(layer.routing().dropped() > 0);

  const BlockResult got = device_block(s, x, wr, w, dout, aux_weight);
  CHECK_EQUAL("expert", got.expert, layer.routing().expert);
  CHECK_EQUAL("kept", got.kept, layer.routing().kept);
  CHECK_CLOSE("out", got.out, ref_out, 1e-4, 1e-4);
  CHECK_CLOSE("aux", std::vector<float>{got.aux}, std::vector<float>{ref_aux}, 0.0, 1e-5);
  CHECK_CLOSE("dx", got.dx, ref_dx, 2e-4, 1e-3);
  CHECK_CLOSE("drouter_w", got.dwr, ref_dwr, 2e-4, 1e-3);
  CHECK_CLOSE("dw1", got.dw1, ref_g.w1, 2e-4, 1e-3);
  CHECK_CLOSE("db1", got.db1, ref_g.b1, 2e-4, 1e-3);
  CHECK_CLOSE("dw2", got.dw2, ref_g.w2, 2e-4, 1e-3);
  CHECK_CLOSE("db2", got.db2, ref_g.b2, 2e-4, 1e-3);

  // Run to run: bit for bit.
  const BlockResult again = device_block(s, x, wr, w, dout, aux_weight);
  QVERIFY(again.out == got.out && again.dx == got.dx && again.dwr == got.dwr);
  QVERIFY(again.dw1 == got.dw1 && again.db1 == got.db1 && again.dw2 == got.dw2 && again.db2 == got.db2);
  QVERIFY(again.aux == got.aux);
}

}  // namespace
#endif

class TestKernelsMoe : public QObject {
  Q_OBJECT

 private:
  static void expert_paths() {
    QTest::addColumn<QString>("path");
    for (const char* p : {"grouped", "per_expert", "auto"}) QTest::newRow(p) << QString(p);
  }

 private slots:
  void initTestCase() { GPU_BODY(set_num_threads(1);) }

  void router_fp32() {
    REQUIRE_GPU();
    GPU_BODY(check_router_cases<float>();)
  }
  void router_bf16() {
    REQUIRE_GPU();
    GPU_BODY(check_router_cases<bf16>();)
  }

  void dispatch_layout_matches_host() {
    REQUIRE_GPU();
    GPU_BODY({
      // Hand example of tst_dispatch_layout: dropped slots and an expert with no rows.
      const std::vector<int> expert = {1, 0, 1, 2, 0, 1, 1, 2};
      const std::vector<uint8_t> kept = {1, 1, 1, 0, 1, 1, 0, 1};
      DeviceBuffer<int> d_expert(expert);
      DeviceBuffer<uint8_t> d_kept(kept);
      const Layout got = device_layout(d_expert.data(), d_kept.data(), 4, 2, 4);
      QCOMPARE(got.offsets, (std::vector<int>{0, 2, 5, 6, 6}));
      QCOMPARE(got.slot_of, (std::vector<int>{2, 0, 3, -1, 1, 4, -1, 5}));
      QCOMPARE(got.token_of, (std::vector<int>{0, 2, 0, 1, 2, 3}));
      check_layout_case(100, 2, 8, 1);
      if (QTest::currentTestFailed()) return;
      check_layout_case(300, 8, 64, 2);  // E = 64, K = 8; more assignments than one block
      if (QTest::currentTestFailed()) return;
      check_layout_case(1, 1, 3, 3);
      if (QTest::currentTestFailed()) return;
      // No tokens: offsets all zero.
      const Layout none = device_layout(d_expert.data(), d_kept.data(), 0, 2, 5);
      QCOMPARE(none.offsets, std::vector<int>(6, 0));
    })
  }

  // The layout of the device router's own output equals the host layout of that output.
  void dispatch_layout_from_router() {
    REQUIRE_GPU();
    GPU_BODY({
      const int N = 256, E = 64, K = 8;
      const auto logits = test::random_vector((size_t)N * E, 77, 2.0f);
      DeviceBuffer<float> d_logits(logits);
      cuda::DeviceRoutingBuffers rb;
      rb.resize(N, E, K);
      cuda::DeviceRouting r = rb.view();
      cuda::route_from_logits(r, d_logits.data(), N, E, cuda::RouterParams{K, expert_capacity(1.0f, N, K, E), true});
      const Layout got = device_layout(r.expert, r.kept, N, K, E);
      const Layout ref = host_layout(download_raw(rb.expert), download_raw(rb.kept), N, K, E);
      CHECK_EQUAL("offsets", got.offsets, ref.offsets);
      CHECK_EQUAL("slot_of", got.slot_of, ref.slot_of);
      CHECK_EQUAL("token_of", got.token_of, ref.token_of);
      const std::vector<int> counts = download_raw(rb.counts);
      for (int e = 0; e < E; ++e) QCOMPARE(got.offsets[e + 1] - got.offsets[e], counts[e]);
    })
  }

  void permute_fp32() {
    REQUIRE_GPU();
    GPU_BODY({
      check_permute<float>(96, 8, 2, 40, 21);  // 160-byte rows: 16-byte vector copies
      if (QTest::currentTestFailed()) return;
      check_permute<float>(96, 8, 2, 37, 22);  // odd width: element copies
      if (QTest::currentTestFailed()) return;
      check_permute<float>(64, 64, 8, 64, 23);
    })
  }
  void permute_bf16() {
    REQUIRE_GPU();
    GPU_BODY({
      check_permute<bf16>(96, 8, 2, 40, 31);   // 80-byte rows: vector copies
      if (QTest::currentTestFailed()) return;
      check_permute<bf16>(96, 8, 2, 37, 32);
      if (QTest::currentTestFailed()) return;
      check_permute<bf16>(64, 64, 8, 64, 33);
    })
  }

  // Both GEMM paths (expert_gemm_tuner.h) and the measured choice, each against ExpertBank:
  // grouped cuBLAS, per-expert cuBLASLt with the fused epilogues, and automatic.
  void experts_fp32_data() { expert_paths(); }
  void experts_fp32() {
    REQUIRE_GPU();
    QFETCH(QString, path);
    GPU_BODY(check_expert_cases<float>(*cuda::parse_expert_gemm_path(path.toStdString()));)
  }
  void experts_bf16_data() { expert_paths(); }
  void experts_bf16() {
    REQUIRE_GPU();
    QFETCH(QString, path);
    GPU_BODY(check_expert_cases<bf16>(*cuda::parse_expert_gemm_path(path.toStdString()));)
  }

  void block_matches_moe_layer() {
    REQUIRE_GPU();
    GPU_BODY(check_block();)
  }
};

QTEST_APPLESS_MAIN(TestKernelsMoe)
#include "tst_kernels_moe.moc"
