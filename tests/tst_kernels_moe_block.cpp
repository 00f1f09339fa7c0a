// ctest-labels: gpu
// cuda::MoeBlock<T> (kernels/moe_block.h), one MoE block on one GPU, against core's MoeLayer
// without a strategy, forward and backward, on random inputs with fixed seeds:
//   fp32   E = 8, K = 2 and E = 64, K = 8; dropless and with capacity dropping (GShard
//          order), gates normalised or not; dx, drouter_w and the expert gradients start
//          non-zero on both sides (accumulation). One block object runs every case (its
//          buffers grow and are reused), then the first case again: bitwise identical.
//   bf16   the same cases; inputs are rounded to bf16 first and the CPU runs in fp32 on the
//          rounded values. The device router works on bf16 logits, so a near tie may pick
//          another expert than the CPU's fp32 logits: the CPU reference is given the device's
//          expert choice (MoeLayer's forced_experts), which it gates, admits and drops the
//          same way; gradients start at zero so the tolerance measures them.
//   errors    bad shapes and backward without forward throw (needs the build, no GPU).
//
// Tolerances (|got - ref| <= atol + rtol * |ref|):
//   exact  expert choice (fp32), kept flags, the offsets (rows per expert)
//   fp32   out: atol 1e-4, rtol 1e-4 (cuBLAS fp32 vs OpenBLAS); aux: rtol 1e-5 (expf and
//          warp-tree sums); dx, drouter_w, expert gradients: atol 2e-4, rtol 1e-3 (several
//          GEMMs in a row, the router backward's softmax).
//   bf16   every tensor: atol 3e-2 of the reference's largest magnitude, rtol 3e-2 (bf16
//          logits, activations h, a, y, dy, da, dh and gradients between the GEMMs); aux:
//          rtol 3e-2.
//
// Without a CUDA build every test is skipped ("built without CUDA"); with one but no visible
// device the GPU tests are ("no GPU").
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "moebench/moe/expert_bank.h"
#include "moebench/moe/moe_layer.h"
#include "moebench/moe/router.h"
#include "moebench/train/device.h"
#include "moebench/tensor/matmul.h"
#include "test_support.h"

#ifdef MOEBENCH_HAVE_CUDA
#include <cuda_runtime.h>

#include "cuda_test_support.h"
#include "moebench/kernels/cuda_check.h"
#include "moebench/kernels/device_buffer.h"
#include "moebench/kernels/moe_block.h"
#include "moebench/kernels/precision.h"
#endif

using namespace moebench;

#ifdef MOEBENCH_HAVE_CUDA
#define REQUIRE_BUILD() \
  do {                  \
  } while (0)
#define REQUIRE_GPU()                                                                    \
  do {                                                                                   \
    const CudaAvailability avail_ = cuda_availability();                                 \
    if (avail_.devices == 0)                                                             \
      QSKIP(qPrintable(QString("no GPU: MoeBlock tests skipped (%1)")                    \
                           .arg(QString::fromStdString(avail_.detail))));                \
  } while (0)
#define GPU_BODY(...) __VA_ARGS__
#else
#define REQUIRE_BUILD() QSKIP("built without CUDA: MoeBlock tests need nvcc at configure time")
#define REQUIRE_GPU() REQUIRE_BUILD()
#define GPU_BODY(...)
#endif

#ifdef MOEBENCH_HAVE_CUDA
namespace {

using cuda::bf16;
using cuda::DeviceBuffer;

using namespace moebench::test;  // cuda_test_support.h

template <class V>
QString first_difference(const V& got, const V& ref) {
  if (got.size() != ref.size()) return QString("size %1 vs %2").arg(got.size()).arg(ref.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (!(got[i] == ref[i]))
      return QString("element %1: got %2, expected %3").arg(i).arg((double)got[i]).arg((double)ref[i]);
  return {};
}

#define CHECK_CLOSE(what, got, ref, atol, rtol)                                                     \
  do {                                                                                              \
    const QString m_ = mismatch((got), (ref), (atol), (rtol));                                      \
    QVERIFY2(m_.isEmpty(), qPrintable(QString("%1 %2: %3").arg(label, QString(what), m_)));         \
  } while (0)
#define CHECK_EQUAL(what, got, ref)                                                                 \
  do {                                                                                              \
    const QString m_ = first_difference((got), (ref));                                              \
    QVERIFY2(m_.isEmpty(), qPrintable(QString("%1 %2: %3").arg(label, QString(what), m_)));         \
  } while (0)

// ---- inputs ---------------------------------------------------------------------------------

struct Case {
  const char* name;
  int N, C, F, E, K;
  float capacity_factor;
  bool normalize;
};

const Case kCases[] = {
    {"E8 K2 dropless", 96, 32, 64, 8, 2, 0.0f, true},
    {"E8 K2 capacity 1.0", 96, 32, 64, 8, 2, 1.0f, true},
    {"E8 K2 capacity 0.5 unnormalised", 64, 40, 48, 8, 2, 0.5f, false},
    {"E64 K8 dropless", 128, 64, 128, 64, 8, 0.0f, true},
    {"E64 K8 capacity 1.25", 128, 64, 128, 64, 8, 1.25f, true},
};

// One case's inputs (host fp32, already rounded to T) and the gradients' starting values.
struct Inputs {
  MoeLayerShape s{};
  float aux_weight = 0.1f;
  std::vector<float> x, wr, dout, dx0, dwr0;
  HostExperts w, g0;
};

template <class T>
Inputs make_inputs(const Case& c, uint64_t seed, bool zero_grads) {
  Inputs in;
  in.s = MoeLayerShape{c.N, c.C, c.F, c.E, c.K, c.capacity_factor, c.normalize};
  in.x = rounded<T>(test::random_vector((size_t)c.N * c.C, seed));
  in.wr = rounded<T>(test::random_vector((size_t)c.E * c.C, seed + 1, 0.3f));
  in.dout = rounded<T>(test::random_vector((size_t)c.N * c.C, seed + 2));
  in.w = make_experts<T>(c.E, c.C, c.F, seed + 10, 1.0f);
  const float g = zero_grads ? 0.0f : 0.5f;
  in.dx0 = rounded<T>(test::random_vector((size_t)c.N * c.C, seed + 3, g));
  in.dwr0 = rounded<T>(test::random_vector((size_t)c.E * c.C, seed + 4, g));
  in.g0 = make_experts<T>(c.E, c.C, c.F, seed + 20, g);
  return in;
}

// What one forward + backward produces (on either side).
struct Outputs {
  std::vector<float> out, dx, dwr;
  HostExperts g;
  float aux = 0.0f;
  std::vector<int> expert, offsets;
  std::vector<uint8_t> kept;
  int dropped = 0;
};

template <class T>
Outputs run_device(cuda::MoeBlock<T>& block, const Inputs& in, cudaStream_t stream) {
  const MoeLayerShape& s = in.s;
  DeviceBuffer<T> x = upload<T>(in.x), wr = upload<T>(in.wr), dout = upload<T>(in.dout);
  DeviceBuffer<T> dx = upload<T>(in.dx0), dwr = upload<T>(in.dwr0), out((size_t)s.N * s.C);
  DeviceExperts<T> w(in.w), g(in.g0);
  // The uploads (cudaMemcpy from pageable memory) may still be in flight when cudaMemcpy
  // returns; `stream` may be one that does not wait for the legacy default stream.
  MOEBENCH_CUDA_CHECK(cudaDeviceSynchronize());
  Outputs o;
  o.aux = block.forward(out.data(), x.data(), wr.data(), w.view(), s.N, s.C, s.F, s.E, s.K,
                        expert_capacity(s.capacity_factor, s.N, s.K, s.E), s.gate_normalize, stream);
  block.backward(dx.data(), dwr.data(), g.view(), dout.data(), in.aux_weight, x.data(), wr.data(), w.view(), stream);
  MOEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  const size_t nk = (size_t)s.N * s.K;
  o.out = download(out);
  o.dx = download(dx);
  o.dwr = download(dwr);
  o.g = g.download_all(s.E, s.C, s.F);
  o.expert = download_raw(block.routing().expert, nk);
  o.kept = download_raw(block.routing().kept, nk);
  o.offsets = block.expert_offsets();
  for (uint8_t k : o.kept) o.dropped += k ? 0 : 1;
  return o;
}

// MoeLayer on the same inputs; forced: optional [N,K] expert choice.
Outputs run_host(const Inputs& in, const int* forced) {
  const MoeLayerShape& s = in.s;
  HostExperts w = in.w;
  Outputs o;
  o.out.resize((size_t)s.N * s.C);
  o.dx = in.dx0;
  o.dwr = in.dwr0;
  o.g = in.g0;
  MoeLayer layer;
  o.aux = layer.forward(o.out.data(), in.x.data(), in.wr.data(), w.params(), s, forced);
  layer.backward(o.dx.data(), o.dwr.data(), o.g.params(), in.dout.data(), in.aux_weight, in.x.data(), in.wr.data(),
                 w.params());
  o.expert = layer.routing().expert;
  o.kept = layer.routing().kept;
  o.offsets = layer.expert_offsets();
  o.dropped = layer.routing().dropped();
  return o;
}

bool bitwise_equal(const Outputs& a, const Outputs& b) {
  return a.out == b.out && a.dx == b.dx && a.dwr == b.dwr && a.g.w1 == b.g.w1 && a.g.b1 == b.g.b1 &&
         a.g.w2 == b.g.w2 && a.g.b2 == b.g.b2 && a.aux == b.aux && a.expert == b.expert && a.kept == b.kept &&
         a.offsets == b.offsets;
}

// The fp32 block against MoeLayer, case by case on one block object; then the first case
// again on the same (now larger) buffers, bitwise identical to its first run.
// A non-blocking stream (no implicit ordering with the legacy default stream).
class Stream {
 public:
  Stream() { MOEBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { (void)cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

void check_fp32() {
  const Stream stream;
  cuda::MoeBlock<float> block;
  Inputs first_in;
  Outputs first;
  uint64_t seed = 100;
  for (const Case& c : kCases) {
    const QString label = QString("fp32 %1:").arg(c.name);
    const Inputs in = make_inputs<float>(c, seed += 100, false);
    const Outputs ref = run_host(in, nullptr);
    const Outputs got = run_device(block, in, stream.get());
    if (c.capacity_factor > 0.0f) QVERIFY2(ref.dropped > 0, qPrintable(label + " expected dropped assignments"));
    else QCOMPARE(ref.dropped, 0);
    QCOMPARE(block.rows(), ref.offsets.back());
    CHECK_EQUAL("expert", got.expert, ref.expert);
    CHECK_EQUAL("kept", got.kept, ref.kept);
    CHECK_EQUAL("offsets", got.offsets, ref.offsets);
    CHECK_CLOSE("out", got.out, ref.out, 1e-4, 1e-4);
    CHECK_CLOSE("aux", std::vector<float>{got.aux}, std::vector<float>{ref.aux}, 0.0, 1e-5);
    CHECK_CLOSE("dx", got.dx, ref.dx, 2e-4, 1e-3);
    CHECK_CLOSE("drouter_w", got.dwr, ref.dwr, 2e-4, 1e-3);
    CHECK_CLOSE("dw1", got.g.w1, ref.g.w1, 2e-4, 1e-3);
    CHECK_CLOSE("db1", got.g.b1, ref.g.b1, 2e-4, 1e-3);
    CHECK_CLOSE("dw2", got.g.w2, ref.g.w2, 2e-4, 1e-3);
    CHECK_CLOSE("db2", got.g.b2, ref.g.b2, 2e-4, 1e-3);
    if (&c == &kCases[0]) {
      first_in = in;
      first = got;
    }
  }
  const Outputs again = run_device(block, first_in, stream.get());
  QVERIFY2(bitwise_equal(again, first), "the first case, run again on the reused buffers, differs");
}

// The bf16 block against MoeLayer in fp32 on the rounded inputs, given the device's choice.
void check_bf16() {
  cuda::MoeBlock<bf16> block;
  uint64_t seed = 700;
  for (const Case& c : kCases) {
    const QString label = QString("bf16 %1:").arg(c.name);
    const Inputs in = make_inputs<bf16>(c, seed += 100, true);
    const Outputs got = run_device(block, in, nullptr);
    const Outputs ref = run_host(in, got.expert.data());
    if (c.capacity_factor > 0.0f) QVERIFY2(ref.dropped > 0, qPrintable(label + " expected dropped assignments"));
    CHECK_EQUAL("kept", got.kept, ref.kept);
    CHECK_EQUAL("offsets", got.offsets, ref.offsets);
    struct Tensor {
      const char* what;
      const std::vector<float>& got;
      const std::vector<float>& ref;
    };
    const Tensor tensors[] = {{"out", got.out, ref.out},  {"dx", got.dx, ref.dx},     {"drouter_w", got.dwr, ref.dwr},
                              {"dw1", got.g.w1, ref.g.w1}, {"db1", got.g.b1, ref.g.b1}, {"dw2", got.g.w2, ref.g.w2},
                              {"db2", got.g.b2, ref.g.b2}};
    for (const Tensor& t : tensors) CHECK_CLOSE(t.what, t.got, t.ref, 3e-2 * std::max(1e-3, max_abs(t.ref)), 3e-2);
    CHECK_CLOSE("aux", std::vector<float>{got.aux}, std::vector<float>{ref.aux}, 0.0, 3e-2);
  }
}

}  // namespace
#endif

class TestKernelsMoeBlock : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { GPU_BODY(set_num_threads(1);) }

  // Bad shapes throw before anything runs; backward needs a forward (no GPU needed).
  void bad_arguments_throw() {
    REQUIRE_BUILD();
    GPU_BODY({
      cuda::MoeBlock<float> block;
      const cuda::ExpertWeights<float> w;
      float* p = nullptr;
      QVERIFY_THROWS_EXCEPTION(std::logic_error, block.backward(p, p, w, p, 0.0f, p, p, w));
      QVERIFY_THROWS_EXCEPTION(std::invalid_argument, block.forward(p, p, p, w, -1, 8, 8, 4, 2, 0, true));
      QVERIFY_THROWS_EXCEPTION(std::invalid_argument, block.forward(p, p, p, w, 4, 0, 8, 4, 2, 0, true));
      QVERIFY_THROWS_EXCEPTION(std::invalid_argument, block.forward(p, p, p, w, 4, 8, 0, 4, 2, 0, true));
      QVERIFY_THROWS_EXCEPTION(std::invalid_argument, block.forward(p, p, p, w, 4, 8, 8, 0, 1, 0, true));
      QVERIFY_THROWS_EXCEPTION(std::invalid_argument, block.forward(p, p, p, w, 4, 8, 8, 4, 5, 0, true));
      QVERIFY_THROWS_EXCEPTION(std::invalid_argument, block.forward(p, p, p, w, 4, 8, 8, 4, 0, 0, true));
      QVERIFY_THROWS_EXCEPTION(std::invalid_argument, block.forward(p, p, p, w, 4, 8, 8, 4, 2, -1, true));
      // bf16 rows must be 16-byte aligned for the grouped GEMMs: C = 12 is refused up front.
      const int offsets[3] = {0, 2, 4};
      cuda::bf16* q = nullptr;
      const cuda::ExpertWeights<cuda::bf16> wb;
      QVERIFY_THROWS_EXCEPTION(std::invalid_argument, cuda::experts_forward(q, q, q, q, offsets, wb, 2, 12, 16));
    })
  }

  void block_fp32_matches_moe_layer() {
    REQUIRE_GPU();
    GPU_BODY(check_fp32();)
  }
  void block_bf16_matches_moe_layer() {
    REQUIRE_GPU();
    GPU_BODY(check_bf16();)
  }
};

QTEST_APPLESS_MAIN(TestKernelsMoeBlock)
#include "tst_kernels_moe_block.moc"
