// ctest-labels: gpu
// MoeGpt on the CUDA backend (model/cuda_backend.h) against the same model on the CPU backend:
// after init from one seed both hold the same parameters; forward + backward of the same
// batches give the same losses and gradients within 1e-4 (fp32: cuBLAS and the kernels sum in
// another order than BLAS and the CPU loops). Dense and MoE blocks (kernels/'s MoeBlock on the
// arena's expert layout), capacity drops, tied and untied heads, a batch shorter than
// model.seq_len, synthetic routing; the second micro-batch accumulates. An allocation the GPU cannot hold names its
// size, what it was for and the GPU; what the GPU path does not run yet is refused by name.
// Without a CUDA build or a GPU every test is skipped.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include "gpu_support.h"
#include "moebench/model/moe_gpt.h"
#include "moebench/moe/synthetic_routing.h"
#include "moebench/tensor/rng.h"

#ifdef MOEBENCH_HAVE_CUDA
#include "moebench/model/cuda_backend.h"
#include "moebench/runtime/cuda_device_queue.h"
#endif

using namespace moebench;

namespace {

ModelConfig small_model(bool tied) {
  ModelConfig m;
  m.vocab_size = 97;
  m.seq_len = 24;
  m.hidden = 64;
  m.heads = 4;
  m.layers = 3;
  m.ffn_mult = 4;
  m.tied_head = tied;
  m.init_std = 0.05f;
  return m;
}

}  // namespace

class TestModelCuda : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { MOEBENCH_REQUIRE_GPU(); }

#ifdef MOEBENCH_HAVE_CUDA
  void forward_backward_matches_the_cpu_data() {
    QTest::addColumn<bool>("tied");
    QTest::addColumn<int>("T");
    QTest::addColumn<std::vector<int>>("moe_layers");
    QTest::addColumn<std::vector<int>>("experts");
    QTest::addColumn<float>("capacity");
    QTest::addColumn<QString>("routing");
    using V = std::vector<int>;
    QTest::newRow("dense, untied head, full sequence") << false << 24 << V{} << V{} << 0.0f << "learned";
    QTest::newRow("dense, tied head, shorter sequence") << true << 17 << V{} << V{} << 0.0f << "learned";
    QTest::newRow("moe block 1, 4 experts") << false << 24 << V{1} << V{4} << 0.0f << "learned";
    QTest::newRow("moe capacity 1.0 drops") << true << 24 << V{1} << V{4} << 1.0f << "learned";
    QTest::newRow("PR-MoE 2 and 8 experts") << false << 20 << V{0, 2} << V{2, 8} << 0.0f << "learned";
    // synthetic routing: the forced choice, gated by the router's probabilities
    QTest::newRow("zipf routing, capacity 1.0") << false << 24 << V{1} << V{4} << 1.0f << "zipf:1.5";
    QTest::newRow("hot expert routing") << true << 24 << V{0, 2} << V{2, 8} << 0.0f << "hot:3,0.7";
  }
  void forward_backward_matches_the_cpu() {
    QFETCH(bool, tied);
    QFETCH(int, T);
    QFETCH(std::vector<int>, moe_layers);
    QFETCH(std::vector<int>, experts);
    QFETCH(float, capacity);
    QFETCH(QString, routing);
    const ModelConfig model = small_model(tied);
    MoeConfig moe;
    moe.moe_layers = moe_layers;
    moe.experts = experts;
    moe.top_k = 2;
    moe.capacity_factor = capacity;
    moe.aux_loss_weight = 0.01f;
    CudaDeviceQueue queue(0);
    std::unique_ptr<Backend> gpu = make_cuda_backend(queue);
    MoeGpt cpu_model(model, moe), gpu_model(model, moe, {}, {}, {}, {}, *gpu);
    cpu_model.init(7);
    gpu_model.init(7);
    cpu_model.set_routing(parse_routing(routing.toStdString()), 11);
    gpu_model.set_routing(parse_routing(routing.toStdString()), 11);
    QVERIFY(gpu_model.params().host_data() == cpu_model.params().host_data());  // init writes the same bits

    const int B = 3;
    Rng rng(5);
    std::vector<int> in((size_t)B * T), tg((size_t)B * T);
    for (int& x : in) x = (int)rng.below((uint64_t)model.vocab_size);
    for (int& x : tg) x = (int)rng.below((uint64_t)model.vocab_size);
    for (int micro = 0; micro < 2; ++micro) {  // the second accumulates into the same gradients
      const float c = cpu_model.forward(in.data(), tg.data(), B, T).total;
      const float g = gpu_model.forward(in.data(), tg.data(), B, T).total;
      QVERIFY2(std::abs(g - c) <= 1e-4 * std::abs(c), qPrintable(QString("loss %1 on the GPU, %2 on the CPU").arg(g).arg(c)));
      cpu_model.backward();
      gpu_model.backward();
      std::reverse(in.begin(), in.end());
    }
    const std::vector<float> cg = cpu_model.params().host_grads(), gg = gpu_model.params().host_grads();
    for (const ParamView& v : cpu_model.params().views()) {
      const double worst = test::worst_relative(gg, cg, v.offset, v.numel);
      QVERIFY2(worst <= 1e-4, qPrintable(QString("%1: gradient differs by %2 (relative)").arg(v.name.c_str()).arg(worst)));
    }
    gpu_model.params().zero_grad();
    for (float x : gpu_model.params().host_grads()) QCOMPARE(x, 0.0f);
  }

  void an_allocation_too_large_names_its_size_and_purpose() {
    CudaDeviceQueue queue(0);
    std::unique_ptr<Backend> gpu = make_cuda_backend(queue);
    DeviceArray<float> huge(*gpu, "the test's huge array");
    try {
      huge.ensure((size_t)1 << 42);  // 16 TiB
      QFAIL("a 16 TiB allocation succeeded");
    } catch (const std::runtime_error& e) {
      const QString what = e.what();
      QVERIFY2(what.contains("cudaMalloc of 16384.0 GiB for the test's huge array on GPU 0 failed"), qPrintable(what));
    }
    DeviceArray<float> small(*gpu, "after the failure");  // the device still works
    small.assign(std::vector<float>{1, 2, 3}.data(), 3);
    QCOMPARE(small.download(), (std::vector<float>{1, 2, 3}));
  }

  void what_the_gpu_does_not_run_yet_is_refused() {
    CudaDeviceQueue queue(0);
    std::unique_ptr<Backend> gpu = make_cuda_backend(queue);
    MoeConfig moe;
    moe.moe_layers = {1};
    moe.experts = {4};
    moe.top_k = 2;
    MoeGpt m(small_model(false), moe, {}, {}, {}, {}, *gpu);
    struct NoExperts : ExpertSource {
      std::vector<ExpertParams> none;
      const std::vector<ExpertParams>& acquire(int) override { return none; }
      void release(int) override {}
    } source;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, m.set_expert_source(&source));  // offloading: host experts
  }
#endif
};

QTEST_GUILESS_MAIN(TestModelCuda)
#include "tst_model_cuda.moc"
