// ctest-labels: gpu
// Dense-model CUDA kernels (kernels/: encoder, layernorm, attention, residual, crossentropy,
// matmul and its mixed-precision form, AdamW, gradient norm and clipping) against their CPU functions in core, forward and
// backward, for float and bf16, on uniform random inputs from std::mt19937 with fixed seeds,
// at shapes that are not multiples of the warp size (T = 13, C = 72, hs = 9, V = 1001, ...).
// Every backward starts from nonzero gradients, so the accumulation (+=) is checked too.
// For bf16 the CPU reference gets the same bf16-rounded inputs as the device, so only the
// device's bf16 outputs (and intermediate bf16 arrays) make the difference.
//
// Tolerances, per element: |gpu - ref| <= atol + rtol * |ref|, with (atol, rtol):
//   fp32 elementwise (encoder forward, residual, AdamW):        (1e-5, 1e-5)
//   fp32 GEMMs and reductions (matmul, attention, layernorm,
//     losses, probabilities' sums):                             (1e-4, 1e-4)
//   fp32 encoder backward: exact (same order of fp32 additions as the CPU function)
//   bf16 everything (outputs rounded to bf16, 2^-9 relative):   (2e-2, 2e-2)
//   bf16 attention (bf16 scores, probabilities, their grads):   (3e-2, 3e-2)
//   grad norm (double accumulation on both sides):              (0, 1e-10)
// fill_normal (bench inputs drawn on the device) is checked for its distribution instead.
//
// Without CUDA in the build every test skips ("built without CUDA"); with CUDA but no visible
// device, every test skips with "no GPU" (CTest reports the suite as Skipped).
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "moebench/train/device.h"

#ifdef MOEBENCH_HAVE_CUDA
#include "moebench/kernels/adamw.h"
#include "moebench/kernels/attention.h"
#include "moebench/kernels/crossentropy.h"
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/device_buffer.h"
#include "moebench/kernels/encoder.h"
#include "moebench/kernels/layernorm.h"
#include "moebench/kernels/matmul.h"
#include "moebench/kernels/mixed_precision.h"
#include "moebench/kernels/precision.h"
#include "moebench/kernels/random_fill.h"
#include "moebench/kernels/residual.h"
#include "moebench/model/attention.h"
#include "moebench/model/crossentropy.h"
#include "moebench/model/encoder.h"
#include "moebench/model/layernorm.h"
#include "moebench/model/param_arena.h"
#include "moebench/model/residual.h"
#include "moebench/model/cpu_backend.h"
#include "moebench/optim/adamw.h"
#include "moebench/tensor/matmul.h"

namespace {

namespace gpu = moebench::cuda;
using gpu::bf16;
using gpu::DeviceBuffer;
using Vec = std::vector<float>;

struct Tol {
  double atol, rtol;
};
constexpr Tol kExact{0.0, 0.0};
constexpr Tol kElemF32{1e-5, 1e-5};
constexpr Tol kReduceF32{1e-4, 1e-4};
constexpr Tol kBf16{2e-2, 2e-2};
constexpr Tol kAttentionBf16{3e-2, 3e-2};

template <typename T>
constexpr Tol elem_tol() { return std::is_same_v<T, float> ? kElemF32 : kBf16; }
template <typename T>
constexpr Tol reduce_tol() { return std::is_same_v<T, float> ? kReduceF32 : kBf16; }
template <typename T>
constexpr const char* type_name() { return std::is_same_v<T, float> ? "fp32" : "bf16"; }

Vec uniform(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Vec v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

std::vector<int> uniform_ints(size_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<int> v(n);
  for (int& x : v) x = dist(gen);
  return v;
}

// The values as the device type holds them (rounded to bf16 for bf16).
template <typename T>
Vec representable(Vec v) {
  if constexpr (!std::is_same_v<T, float>)
    for (float& x : v) x = gpu::to_float(gpu::from_float<T>(x));
  return v;
}

template <typename T>
DeviceBuffer<T> to_device(const Vec& v) {
  std::vector<T> host(v.size());
  for (size_t i = 0; i < v.size(); ++i) host[i] = gpu::from_float<T>(v[i]);
  return DeviceBuffer<T>(host);
}

template <typename T>
Vec to_host(const DeviceBuffer<T>& d) {
  MOEBENCH_CUDA_CHECK(cudaDeviceSynchronize());  // report asynchronous kernel faults here
  const std::vector<T> host = d.download();
  Vec v(host.size());
  for (size_t i = 0; i < host.size(); ++i) v[i] = gpu::to_float(host[i]);
  return v;
}

// "" when every element is within tolerance, else the worst element and the count.
QString mismatch(const Vec& got, const Vec& ref, Tol tol) {
  if (got.size() != ref.size())
    return QString("size %1, expected %2").arg(got.size()).arg(ref.size());
  double worst = 0.0;
  size_t worst_i = 0, bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs((double)got[i] - (double)ref[i]);
    const double excess = err - (tol.atol + tol.rtol * std::abs((double)ref[i]));
    if (excess > 0 || std::isnan(got[i]) != std::isnan(ref[i])) {
      ++bad;
      if (std::isnan(excess) || excess >= worst) {
        worst = std::isnan(excess) ? INFINITY : excess;
        worst_i = i;
      }
    }
  }
  if (bad == 0) return {};
  return QString("%1 of %2 elements off (atol %3, rtol %4); worst [%5]: got %6, expected %7")
      .arg(bad).arg(got.size()).arg(tol.atol).arg(tol.rtol).arg(worst_i)
      .arg((double)got[worst_i], 0, 'g', 9).arg((double)ref[worst_i], 0, 'g', 9);
}

#define EXPECT_CLOSE(what, got, ref, tol)                                       \
  do {                                                                          \
    const QString m_ = mismatch((got), (ref), (tol));                           \
    QVERIFY2(m_.isEmpty(), qPrintable(QString("%1: %2").arg(what).arg(m_)));    \
  } while (0)

// ---- encoder -------------------------------------------------------------------------

template <typename T>
void check_encoder(int B, int Tlen, int C, int V, uint32_t seed) {
  const QString tag = QString("encoder %1 B=%2 T=%3 C=%4 V=%5").arg(type_name<T>()).arg(B).arg(Tlen).arg(C).arg(V);
  const int maxT = Tlen + 3;  // wpe has more positions than used
  const std::vector<int> inp = uniform_ints((size_t)B * Tlen, seed, 0, V - 1);
  const Vec wte = representable<T>(uniform((size_t)V * C, seed + 1));
  const Vec wpe = representable<T>(uniform((size_t)maxT * C, seed + 2));
  Vec out_ref((size_t)B * Tlen * C);
  moebench::encoder_forward(out_ref.data(), inp.data(), wte.data(), wpe.data(), B, Tlen, C);
  DeviceBuffer<int> d_inp(inp);
  DeviceBuffer<T> d_wte = to_device<T>(wte), d_wpe = to_device<T>(wpe), d_out(out_ref.size());
  gpu::encoder_forward(d_out.data(), d_inp.data(), d_wte.data(), d_wpe.data(), B, Tlen, C);
  EXPECT_CLOSE(tag + " out", to_host(d_out), out_ref, elem_tol<T>());

  const Vec dout = representable<T>(uniform(out_ref.size(), seed + 3));
  Vec dwte_ref = representable<T>(uniform(wte.size(), seed + 4));
  Vec dwpe_ref = representable<T>(uniform(wpe.size(), seed + 5));
  DeviceBuffer<T> d_dout = to_device<T>(dout), d_dwte = to_device<T>(dwte_ref),
                  d_dwpe = to_device<T>(dwpe_ref);
  DeviceBuffer<T> d_dwte2 = to_device<T>(dwte_ref), d_dwpe2 = to_device<T>(dwpe_ref);
  moebench::encoder_backward(dwte_ref.data(), dwpe_ref.data(), dout.data(), inp.data(), B, Tlen, C);
  gpu::encoder_backward(d_dwte.data(), d_dwpe.data(), d_dout.data(), d_inp.data(), B, Tlen, C);
  gpu::encoder_backward(d_dwte2.data(), d_dwpe2.data(), d_dout.data(), d_inp.data(), B, Tlen, C);
  const Tol tol = std::is_same_v<T, float> ? kExact : kBf16;
  const Vec dwte = to_host(d_dwte), dwpe = to_host(d_dwpe);
  EXPECT_CLOSE(tag + " dwte", dwte, dwte_ref, tol);
  EXPECT_CLOSE(tag + " dwpe", dwpe, dwpe_ref, tol);
  EXPECT_CLOSE(tag + " dwte (second run, bitwise)", to_host(d_dwte2), dwte, kExact);
  EXPECT_CLOSE(tag + " dwpe (second run, bitwise)", to_host(d_dwpe2), dwpe, kExact);
}

// ---- layernorm -----------------------------------------------------------------------

template <typename T>
void check_layernorm(int N, int C, uint32_t seed) {
  const QString tag = QString("layernorm %1 N=%2 C=%3").arg(type_name<T>()).arg(N).arg(C);
  const Vec inp = representable<T>(uniform((size_t)N * C, seed, -2.0f, 3.0f));
  const Vec weight = representable<T>(uniform(C, seed + 1, 0.5f, 1.5f));
  const Vec bias = representable<T>(uniform(C, seed + 2, -0.5f, 0.5f));
  Vec out_ref(inp.size()), mean_ref(N), rstd_ref(N);
  moebench::layernorm_forward(out_ref.data(), mean_ref.data(), rstd_ref.data(), inp.data(),
                              weight.data(), bias.data(), N, C);
  DeviceBuffer<T> d_inp = to_device<T>(inp), d_w = to_device<T>(weight), d_b = to_device<T>(bias),
                  d_out(inp.size());
  DeviceBuffer<float> d_mean((size_t)N), d_rstd((size_t)N);
  gpu::layernorm_forward(d_out.data(), d_mean.data(), d_rstd.data(), d_inp.data(), d_w.data(),
                         d_b.data(), N, C);
  EXPECT_CLOSE(tag + " out", to_host(d_out), out_ref, reduce_tol<T>());
  EXPECT_CLOSE(tag + " mean", to_host(d_mean), mean_ref, kReduceF32);
  EXPECT_CLOSE(tag + " rstd", to_host(d_rstd), rstd_ref, kReduceF32);

  const Vec dout = representable<T>(uniform(inp.size(), seed + 3));
  Vec dinp_ref = representable<T>(uniform(inp.size(), seed + 4));
  Vec dw_ref = representable<T>(uniform(C, seed + 5));
  Vec db_ref = representable<T>(uniform(C, seed + 6));
  DeviceBuffer<T> d_dout = to_device<T>(dout), d_dinp = to_device<T>(dinp_ref),
                  d_dw = to_device<T>(dw_ref), d_db = to_device<T>(db_ref);
  moebench::layernorm_backward(dinp_ref.data(), dw_ref.data(), db_ref.data(), dout.data(),
                               inp.data(), weight.data(), mean_ref.data(), rstd_ref.data(), N, C);
  gpu::layernorm_backward(d_dinp.data(), d_dw.data(), d_db.data(), d_dout.data(), d_inp.data(),
                          d_w.data(), d_mean.data(), d_rstd.data(), N, C);
  EXPECT_CLOSE(tag + " dinp", to_host(d_dinp), dinp_ref, reduce_tol<T>());
  EXPECT_CLOSE(tag + " dweight", to_host(d_dw), dw_ref, reduce_tol<T>());
  EXPECT_CLOSE(tag + " dbias", to_host(d_db), db_ref, reduce_tol<T>());
}

// ---- attention -----------------------------------------------------------------------

template <typename T>
void check_attention(int B, int Tlen, int C, int NH, uint32_t seed) {
  const QString tag = QString("attention %1 B=%2 T=%3 C=%4 NH=%5").arg(type_name<T>()).arg(B).arg(Tlen).arg(C).arg(NH);
  const Tol tol = std::is_same_v<T, float> ? kReduceF32 : kAttentionBf16;
  const size_t nqkv = (size_t)B * Tlen * 3 * C, nout = (size_t)B * Tlen * C;
  const size_t natt = (size_t)B * NH * Tlen * Tlen;
  const Vec qkv = representable<T>(uniform(nqkv, seed));
  Vec out_ref(nout), preatt_ref(natt), att_ref(natt);
  moebench::attention_forward(out_ref.data(), preatt_ref.data(), att_ref.data(), qkv.data(), B,
                              Tlen, C, NH);
  const Vec garbage(natt, 7.0f);  // every element must be overwritten
  DeviceBuffer<T> d_qkv = to_device<T>(qkv), d_out(nout), d_preatt = to_device<T>(garbage),
                  d_att = to_device<T>(garbage);
  gpu::attention_forward(d_out.data(), d_preatt.data(), d_att.data(), d_qkv.data(), B, Tlen, C, NH);
  const Vec preatt = to_host(d_preatt), att = to_host(d_att);
  EXPECT_CLOSE(tag + " out", to_host(d_out), out_ref, tol);
  EXPECT_CLOSE(tag + " preatt", preatt, preatt_ref, tol);
  EXPECT_CLOSE(tag + " att", att, att_ref, tol);
  for (long r = 0; r < (long)B * NH * Tlen; ++r)
    for (int t2 = (int)(r % Tlen) + 1; t2 < Tlen; ++t2) {
      const size_t i = (size_t)r * Tlen + (size_t)t2;
      QVERIFY2(preatt[i] == 0.0f && att[i] == 0.0f,
               qPrintable(tag + QString(": nonzero above the diagonal at %1").arg(i)));
    }

  const Vec dout = representable<T>(uniform(nout, seed + 1));
  Vec dqkv_ref = representable<T>(uniform(nqkv, seed + 2));
  Vec dpreatt_ref(natt), datt_ref(natt);
  const Vec scratch(natt, 5.0f);
  DeviceBuffer<T> d_dout = to_device<T>(dout), d_dqkv = to_device<T>(dqkv_ref),
                  d_dpreatt = to_device<T>(scratch), d_datt = to_device<T>(scratch);
  moebench::attention_backward(dqkv_ref.data(), dpreatt_ref.data(), datt_ref.data(), dout.data(),
                               qkv.data(), att_ref.data(), B, Tlen, C, NH);
  gpu::attention_backward(d_dqkv.data(), d_dpreatt.data(), d_datt.data(), d_dout.data(),
                          d_qkv.data(), d_att.data(), B, Tlen, C, NH);
  EXPECT_CLOSE(tag + " dqkv", to_host(d_dqkv), dqkv_ref, tol);
  EXPECT_CLOSE(tag + " dpreatt", to_host(d_dpreatt), dpreatt_ref, tol);
  EXPECT_CLOSE(tag + " datt", to_host(d_datt), datt_ref, tol);
}

// ---- residual ------------------------------------------------------------------------

template <typename T>
void check_residual(long N, uint32_t seed) {
  const QString tag = QString("residual %1 N=%2").arg(type_name<T>()).arg(N);
  const Vec a = representable<T>(uniform((size_t)N, seed)), b = representable<T>(uniform((size_t)N, seed + 1));
  Vec out_ref((size_t)N);
  moebench::residual_forward(out_ref.data(), a.data(), b.data(), N);
  DeviceBuffer<T> d_a = to_device<T>(a), d_b = to_device<T>(b), d_out((size_t)N);
  gpu::residual_forward(d_out.data(), d_a.data(), d_b.data(), N);
  EXPECT_CLOSE(tag + " out", to_host(d_out), out_ref, elem_tol<T>());

  const Vec dout = representable<T>(uniform((size_t)N, seed + 2));
  Vec d1_ref = representable<T>(uniform((size_t)N, seed + 3));
  Vec d2_ref = representable<T>(uniform((size_t)N, seed + 4));
  Vec alias_ref = d1_ref;
  DeviceBuffer<T> d_dout = to_device<T>(dout), d_d1 = to_device<T>(d1_ref), d_d2 = to_device<T>(d2_ref),
                  d_alias = to_device<T>(alias_ref);
  moebench::residual_backward(d1_ref.data(), d2_ref.data(), dout.data(), N);
  moebench::residual_backward(alias_ref.data(), alias_ref.data(), dout.data(), N);
  gpu::residual_backward(d_d1.data(), d_d2.data(), d_dout.data(), N);
  gpu::residual_backward(d_alias.data(), d_alias.data(), d_dout.data(), N);
  EXPECT_CLOSE(tag + " dinp1", to_host(d_d1), d1_ref, elem_tol<T>());
  EXPECT_CLOSE(tag + " dinp2", to_host(d_d2), d2_ref, elem_tol<T>());
  EXPECT_CLOSE(tag + " dinp1 == dinp2 (aliased)", to_host(d_alias), alias_ref, elem_tol<T>());
}

// ---- cross-entropy -------------------------------------------------------------------

template <typename T>
void check_crossentropy(int N, int V, uint32_t seed) {
  const QString tag = QString("crossentropy %1 N=%2 V=%3").arg(type_name<T>()).arg(N).arg(V);
  const Tol probs_tol = std::is_same_v<T, float> ? Tol{1e-8, 1e-4} : Tol{1e-5, 2e-2};
  const Vec logits = representable<T>(uniform((size_t)N * V, seed, -5.0f, 5.0f));
  const std::vector<int> targets = uniform_ints((size_t)N, seed + 1, 0, V - 1);
  Vec losses_ref((size_t)N), probs_ref(logits.size());
  moebench::crossentropy_softmax_forward(losses_ref.data(), probs_ref.data(), logits.data(),
                                         targets.data(), N, V);
  DeviceBuffer<T> d_logits = to_device<T>(logits), d_probs(logits.size());
  DeviceBuffer<int> d_targets(targets);
  DeviceBuffer<float> d_losses((size_t)N);
  gpu::crossentropy_softmax_forward(d_losses.data(), d_probs.data(), d_logits.data(),
                                    d_targets.data(), N, V);
  EXPECT_CLOSE(tag + " losses", to_host(d_losses), losses_ref, kReduceF32);
  EXPECT_CLOSE(tag + " probs", to_host(d_probs), probs_ref, probs_tol);

  // dloss = 1: updates of the size of the probabilities on top of a comparable prefill.
  const float dloss = 1.0f;
  Vec dlogits_ref = representable<T>(uniform(logits.size(), seed + 2, -1e-3f, 1e-3f));
  DeviceBuffer<T> d_dlogits = to_device<T>(dlogits_ref);
  moebench::crossentropy_softmax_backward(dlogits_ref.data(), probs_ref.data(), targets.data(),
                                          dloss, N, V);
  gpu::crossentropy_softmax_backward(d_dlogits.data(), d_probs.data(), d_targets.data(), dloss, N, V);
  EXPECT_CLOSE(tag + " dlogits", to_host(d_dlogits), dlogits_ref, probs_tol);
}

// ---- matmul --------------------------------------------------------------------------

// grads: bit 0 dinp, bit 1 dweight, bit 2 dbias (the others are passed as nullptr).
template <typename T>
void check_matmul(int N, int C, int OC, bool with_bias, int grads, uint32_t seed) {
  const QString tag = QString("matmul %1 N=%2 C=%3 OC=%4 bias=%5 grads=%6")
                          .arg(type_name<T>()).arg(N).arg(C).arg(OC).arg(with_bias).arg(grads);
  const Vec inp = representable<T>(uniform((size_t)N * C, seed));
  const Vec weight = representable<T>(uniform((size_t)OC * C, seed + 1));
  const Vec bias = representable<T>(uniform((size_t)OC, seed + 2));
  Vec out_ref((size_t)N * OC);
  moebench::matmul_forward(out_ref.data(), inp.data(), weight.data(), with_bias ? bias.data() : nullptr,
                           N, C, OC);
  DeviceBuffer<T> d_inp = to_device<T>(inp), d_w = to_device<T>(weight), d_b = to_device<T>(bias);
  DeviceBuffer<T> d_out = to_device<T>(Vec(out_ref.size(), 3.0f));  // overwritten
  gpu::matmul_forward(d_out.data(), d_inp.data(), d_w.data(), with_bias ? d_b.data() : nullptr, N, C, OC);
  EXPECT_CLOSE(tag + " out", to_host(d_out), out_ref, reduce_tol<T>());

  const Vec dout = representable<T>(uniform(out_ref.size(), seed + 3));
  Vec dinp_ref = representable<T>(uniform(inp.size(), seed + 4));
  Vec dw_ref = representable<T>(uniform(weight.size(), seed + 5));
  Vec db_ref = representable<T>(uniform(bias.size(), seed + 6));
  DeviceBuffer<T> d_dout = to_device<T>(dout), d_dinp = to_device<T>(dinp_ref),
                  d_dw = to_device<T>(dw_ref), d_db = to_device<T>(db_ref);
  const bool gi = grads & 1, gw = grads & 2, gb = grads & 4;
  moebench::matmul_backward(gi ? dinp_ref.data() : nullptr, gw ? dw_ref.data() : nullptr,
                            gb ? db_ref.data() : nullptr, dout.data(), inp.data(), weight.data(),
                            N, C, OC);
  gpu::matmul_backward(gi ? d_dinp.data() : nullptr, gw ? d_dw.data() : nullptr,
                       gb ? d_db.data() : nullptr, d_dout.data(), d_inp.data(), d_w.data(), N, C, OC);
  EXPECT_CLOSE(tag + " dinp", to_host(d_dinp), dinp_ref, reduce_tol<T>());
  EXPECT_CLOSE(tag + " dweight", to_host(d_dw), dw_ref, reduce_tol<T>());
  EXPECT_CLOSE(tag + " dbias", to_host(d_db), db_ref, reduce_tol<T>());
}

// Mixed precision (run.precision = "bf16"): bf16 copies of fp32 arrays, their GEMMs into fp32.
// The reference is the CPU function on the bf16-rounded operands (the bias and its gradient from
// the fp32 values): only the order of the fp32 additions differs.
void check_matmul_mixed(int N, int C, int OC, uint32_t seed) {
  const QString tag = QString("matmul mixed N=%1 C=%2 OC=%3").arg(N).arg(C).arg(OC);
  const Vec inp = uniform((size_t)N * C, seed), weight = uniform((size_t)OC * C, seed + 1);
  const Vec bias = uniform((size_t)OC, seed + 2), dout = uniform((size_t)N * OC, seed + 3);
  DeviceBuffer<float> d_inp(inp), d_w(weight), d_b(bias), d_dout(dout);
  DeviceBuffer<bf16> i16(inp.size()), w16(weight.size()), o16(dout.size());
  gpu::cast(i16.data(), d_inp.data(), (long)inp.size());
  gpu::cast(w16.data(), d_w.data(), (long)weight.size());
  gpu::cast(o16.data(), d_dout.data(), (long)dout.size());
  EXPECT_CLOSE(tag + " cast", to_host(i16), representable<bf16>(inp), kExact);
  DeviceBuffer<float> back(inp.size());
  gpu::cast(back.data(), i16.data(), (long)inp.size());
  EXPECT_CLOSE(tag + " cast back", to_host(back), representable<bf16>(inp), kExact);

  const Vec ri = representable<bf16>(inp), rw = representable<bf16>(weight), rd = representable<bf16>(dout);
  Vec out_ref((size_t)N * OC);
  moebench::matmul_forward(out_ref.data(), ri.data(), rw.data(), bias.data(), N, C, OC);
  DeviceBuffer<float> d_out(Vec(out_ref.size(), 3.0f));  // overwritten
  gpu::matmul_forward_mixed(d_out.data(), i16.data(), w16.data(), d_b.data(), N, C, OC);
  EXPECT_CLOSE(tag + " out", to_host(d_out), out_ref, kReduceF32);

  Vec dinp_ref = uniform(inp.size(), seed + 4), dw_ref = uniform(weight.size(), seed + 5);
  Vec db_ref = uniform(bias.size(), seed + 6);
  DeviceBuffer<float> d_dinp(dinp_ref), d_dw(dw_ref), d_db(db_ref);
  moebench::matmul_backward(dinp_ref.data(), dw_ref.data(), nullptr, rd.data(), ri.data(), rw.data(), N, C, OC);
  moebench::matmul_backward(nullptr, nullptr, db_ref.data(), dout.data(), ri.data(), rw.data(), N, C, OC);
  gpu::matmul_backward_mixed(d_dinp.data(), d_dw.data(), d_db.data(), d_dout.data(), o16.data(), i16.data(),
                             w16.data(), N, C, OC);
  EXPECT_CLOSE(tag + " dinp", to_host(d_dinp), dinp_ref, kReduceF32);
  EXPECT_CLOSE(tag + " dweight", to_host(d_dw), dw_ref, kReduceF32);
  EXPECT_CLOSE(tag + " dbias", to_host(d_db), db_ref, kReduceF32);

  Vec acc = uniform(inp.size(), seed + 7);  // acc += float(bf16): one fp32 addition each
  DeviceBuffer<float> d_acc(acc);
  gpu::accumulate(d_acc.data(), i16.data(), (long)inp.size());
  for (size_t i = 0; i < acc.size(); ++i) acc[i] += ri[i];
  EXPECT_CLOSE(tag + " accumulate", to_host(d_acc), acc, kExact);
}

// ---- AdamW and gradient norms ---------------------------------------------------------

template <typename G>
void check_adamw(uint32_t seed) {
  const QString tag = QString("adamw grads %1").arg(type_name<G>());
  moebench::ParamArena arena;
  arena.add("w1", {37, 29}, true);
  arena.add("b1", {29}, false);
  arena.add("w2", {64, 33}, true);
  arena.add("ln", {33}, false);
  arena.finalize(moebench::cpu_backend());
  const size_t n = arena.size();
  std::ranges::copy(uniform(n, seed), arena.data());
  std::ranges::copy(representable<G>(uniform(n, seed + 1)), arena.grads());
  moebench::AdamWHyper h;
  h.weight_decay = 0.1f;
  moebench::AdamW opt(arena, h);
  std::ranges::copy(uniform(n, seed + 2, -0.1f, 0.1f), opt.m());
  std::ranges::copy(uniform(n, seed + 3, 0.0f, 0.01f), opt.v());
  const float lr = 1e-3f;
  const long t = 5;
  DeviceBuffer<float> d_p(arena.host_data()), d_m(Vec(opt.m(), opt.m() + n)), d_v(Vec(opt.v(), opt.v() + n));
  DeviceBuffer<G> d_g = to_device<G>(arena.host_grads());
  DeviceBuffer<bf16> d_p16 = to_device<bf16>(Vec(n, 9.0f));
  const std::vector<moebench::ParamView>& views = arena.views();
  for (size_t i = 0; i < views.size(); ++i) {
    const size_t o = views[i].offset;
    // The last view gets no bf16 copy (nullptr), the others do.
    bf16* copy = i + 1 < views.size() ? d_p16.data() + o : nullptr;
    gpu::adamw_update(d_p.data() + o, d_m.data() + o, d_v.data() + o, copy, d_g.data() + o,
                      (long)views[i].numel, lr, h.beta1, h.beta2, h.eps,
                      views[i].decay ? h.weight_decay : 0.0f, t);
  }
  opt.step(arena, lr, t);
  const Vec p = to_host(d_p);
  EXPECT_CLOSE(tag + " params", p, arena.host_data(), kElemF32);
  EXPECT_CLOSE(tag + " m", to_host(d_m), Vec(opt.m(), opt.m() + n), kElemF32);
  EXPECT_CLOSE(tag + " v", to_host(d_v), Vec(opt.v(), opt.v() + n), kElemF32);
  Vec copy_ref = representable<bf16>(p);
  const size_t last = views.back().offset;
  for (size_t i = last; i < n; ++i) copy_ref[i] = 9.0f;  // untouched
  EXPECT_CLOSE(tag + " bf16 copy", to_host(d_p16), copy_ref, kExact);
}

template <typename G>
void check_grad_norm(long n, uint32_t seed) {
  const QString tag = QString("grad norm %1 n=%2").arg(type_name<G>()).arg(n);
  moebench::ParamArena arena;
  arena.add("g", {n}, true);
  arena.finalize(moebench::cpu_backend());
  std::ranges::copy(representable<G>(uniform((size_t)n, seed, -0.01f, 0.01f)), arena.grads());
  const Vec grads = arena.host_grads();
  const double norm_ref = moebench::grad_norm(arena);

  DeviceBuffer<G> d_g = to_device<G>(grads);
  DeviceBuffer<char> ws(gpu::grad_norm_workspace_bytes(n));
  DeviceBuffer<double> d_norm(2), d_sumsq(1);
  gpu::grad_norm(d_norm.data(), d_g.data(), n, ws.data());
  gpu::grad_norm(d_norm.data() + 1, d_g.data(), n, ws.data());
  const long half = n / 2;
  gpu::grad_sumsq(d_sumsq.data(), d_g.data(), half, false, ws.data());
  gpu::grad_sumsq(d_sumsq.data(), d_g.data() + half, n - half, true, ws.data());
  MOEBENCH_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<double> norms = d_norm.download();
  const double sumsq = d_sumsq.download()[0];
  QVERIFY2(std::abs(norms[0] - norm_ref) <= 1e-10 * norm_ref,
           qPrintable(tag + QString(": norm %1, expected %2").arg(norms[0], 0, 'g', 17).arg(norm_ref, 0, 'g', 17)));
  QVERIFY2(norms[0] == norms[1], qPrintable(tag + ": two runs differ"));
  QVERIFY2(std::abs(std::sqrt(sumsq) - norm_ref) <= 1e-10 * norm_ref,
           qPrintable(tag + QString(": sqrt(sumsq over two halves) %1, expected %2")
                                .arg(std::sqrt(sumsq), 0, 'g', 17).arg(norm_ref, 0, 'g', 17)));

  // No clipping when the norm is below max_norm, or max_norm <= 0.
  gpu::clip_grad_norm(d_g.data(), d_norm.data(), n, (float)(2.0 * norm_ref), ws.data());
  gpu::clip_grad_norm(d_g.data(), d_norm.data(), n, 0.0f, ws.data());
  EXPECT_CLOSE(tag + " unclipped grads", to_host(d_g), grads, kExact);
  // Clipping to half the norm, against the CPU clip_grad_norm.
  const float max_norm = (float)(0.5 * norm_ref);
  const double before = moebench::clip_grad_norm(arena, max_norm);
  gpu::clip_grad_norm(d_g.data(), d_norm.data(), n, max_norm, ws.data());
  const Vec clipped = to_host(d_g);
  const Tol clip_tol = std::is_same_v<G, float> ? Tol{1e-9, 1e-6} : kBf16;
  EXPECT_CLOSE(tag + " clipped grads", clipped, arena.host_grads(), clip_tol);
  const double after_norm = d_norm.download()[0];
  QVERIFY2(std::abs(after_norm - before) <= 1e-10 * before,
           qPrintable(tag + ": clip_grad_norm's norm is not the norm before clipping"));
}

// fill_normal: 2^20 draws of one stream have mean 0 and standard deviation `scale` (within 5
// standard errors), 68 % within one deviation, repeat exactly, and another key gives other values.
void check_fill_normal() {
  const long n = 1 << 20;
  const float scale = 0.02f;
  DeviceBuffer<float> a((size_t)n), b((size_t)n), c((size_t)n);
  gpu::fill_normal(a.data(), n, scale, 7);
  gpu::fill_normal(b.data(), n, scale, 7);
  gpu::fill_normal(c.data(), n, scale, 8);
  const std::vector<float> va = a.download(), vb = b.download(), vc = c.download();
  QVERIFY(va == vb);
  long same = 0, within = 0;
  double sum = 0.0, sq = 0.0;
  for (long i = 0; i < n; ++i) {
    same += va[i] == vc[i];
    sum += va[i];
    sq += (double)va[i] * va[i];
    within += std::abs(va[i]) <= scale;
  }
  const double mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
  QVERIFY2(std::abs(mean) <= 5 * scale / std::sqrt((double)n), qPrintable(QString("mean %1").arg(mean)));
  QVERIFY2(std::abs(sd / scale - 1.0) <= 5 * std::sqrt(0.5 / n), qPrintable(QString("sd %1").arg(sd)));
  QVERIFY2(std::abs((double)within / n - 0.6827) <= 0.005, qPrintable(QString("within one sd %1").arg((double)within / n)));
  QVERIFY2(same < 10, "another key gave the same draws");
  DeviceBuffer<bf16> h(1000);
  gpu::fill_normal(h.data(), 1000, scale, 7);  // bf16: the same draws rounded once
  const std::vector<bf16> vh = h.download();
  for (int i = 0; i < 1000; ++i) QCOMPARE(gpu::to_float(vh[(size_t)i]), gpu::to_float(gpu::from_float<bf16>(va[(size_t)i])));
}

}  // namespace
#endif  // MOEBENCH_HAVE_CUDA

class TestKernelsDense : public QObject {
  Q_OBJECT

 private slots:
  void init() {
#ifndef MOEBENCH_HAVE_CUDA
    QSKIP("built without CUDA: dense kernel tests need a CUDA build and a GPU");
#else
    const moebench::CudaAvailability a = moebench::cuda_availability();
    if (a.devices == 0)
      QSKIP(qPrintable(QString::fromStdString("no GPU: dense kernel tests skipped (" + a.detail + ")")));
#endif
  }

  void encoder() {
#ifdef MOEBENCH_HAVE_CUDA
    check_encoder<float>(2, 13, 72, 7, 11);    // one chunk of positions, many repeats
    check_encoder<float>(3, 130, 72, 11, 12);  // B*T = 390 > 256: several chunks
    check_encoder<float>(2, 13, 1100, 5, 13);  // C > 1024: two channel slices
    check_encoder<bf16>(2, 13, 72, 7, 14);
    check_encoder<bf16>(3, 130, 72, 11, 15);
    check_encoder<bf16>(2, 13, 1100, 5, 16);
#endif
  }

  void layernorm() {
#ifdef MOEBENCH_HAVE_CUDA
    check_layernorm<float>(26, 72, 21);
    check_layernorm<float>(70, 1030, 22);  // rows > 32 per tile thread, C not a multiple of 32
    check_layernorm<bf16>(26, 72, 23);
    check_layernorm<bf16>(70, 1030, 24);
#endif
  }

  void attention() {
#ifdef MOEBENCH_HAVE_CUDA
    check_attention<float>(2, 13, 72, 8, 31);  // hs = 9; batched over heads, looped over b
    check_attention<float>(3, 40, 64, 2, 32);  // hs = 32; batched over b, looped over heads
    check_attention<float>(1, 1, 8, 1, 33);    // T = 1
    check_attention<bf16>(2, 13, 72, 8, 34);
    check_attention<bf16>(3, 40, 64, 2, 35);
#endif
  }

  void residual() {
#ifdef MOEBENCH_HAVE_CUDA
    check_residual<float>(1003, 41);
    check_residual<bf16>(1003, 42);
#endif
  }

  void crossentropy() {
#ifdef MOEBENCH_HAVE_CUDA
    check_crossentropy<float>(26, 1001, 51);
    check_crossentropy<float>(3, 50257, 52);  // GPT-2 vocabulary
    check_crossentropy<bf16>(26, 1001, 53);
    check_crossentropy<bf16>(3, 50257, 54);
#endif
  }

  void matmul() {
#ifdef MOEBENCH_HAVE_CUDA
    check_matmul<float>(26, 72, 40, true, 7, 61);
    check_matmul<float>(300, 33, 70, false, 7, 62);  // N > 32 rows per dbias thread
    check_matmul<bf16>(26, 72, 40, true, 7, 63);
    check_matmul<bf16>(300, 33, 70, false, 7, 64);
#endif
  }

  void matmulMixedPrecision() {
#ifdef MOEBENCH_HAVE_CUDA
    check_matmul_mixed(26, 72, 40, 65);
    check_matmul_mixed(300, 33, 70, 66);  // odd sizes: cuBLAS's unaligned bf16 paths
#endif
  }

  void matmulNullGradients() {
#ifdef MOEBENCH_HAVE_CUDA
    for (int grads = 0; grads < 7; ++grads) check_matmul<float>(26, 72, 40, true, grads, 70 + grads);
#endif
  }

  void adamw() {
#ifdef MOEBENCH_HAVE_CUDA
    check_adamw<float>(81);
    check_adamw<bf16>(82);
#endif
  }

  void fillNormal() {
#ifdef MOEBENCH_HAVE_CUDA
    check_fill_normal();
#endif
  }

  void gradNormAndClip() {
#ifdef MOEBENCH_HAVE_CUDA
    check_grad_norm<float>(300001, 91);  // > 512 blocks x 256 threads: grid-stride
    check_grad_norm<float>(1000, 92);    // fewer blocks than the cap
    check_grad_norm<bf16>(300001, 93);
#endif
  }
};

QTEST_APPLESS_MAIN(TestKernelsDense)

#include "tst_kernels_dense.moc"
