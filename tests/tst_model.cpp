// ctest-labels: unit
// The whole MoE-GPT: parameter layout and names, init, and finite-difference gradients of
// the total loss (cross-entropy + weighted aux loss) for dense, MoE and PR-MoE layouts.
#include <QtTest>

#include <cmath>

#include "moebench/model/moe_gpt.h"
#include "moebench/tensor/device_array.h"
#include "test_support.h"

using namespace moebench;

namespace {
struct Tiny {
  ModelConfig model;
  MoeConfig moe;
};
Tiny tiny(std::vector<int> moe_layers, std::vector<int> experts, int top_k, bool tied,
          float capacity = 0.0f) {
  Tiny t;
  t.model.vocab_size = 11;
  t.model.seq_len = 5;
  t.model.hidden = 8;
  t.model.heads = 2;
  t.model.layers = 2;
  t.model.ffn_mult = 2;
  t.model.tied_head = tied;
  t.model.init_std = 0.3f;  // large enough that routing margins exceed the FD step
  t.moe.moe_layers = std::move(moe_layers);
  t.moe.experts = std::move(experts);
  t.moe.top_k = top_k;
  t.moe.aux_loss_weight = 0.1f;
  t.moe.capacity_factor = capacity;
  return t;
}
}  // namespace

class TestModel : public QObject {
  Q_OBJECT

 private slots:
  void parameter_names_and_shapes() {
    Tiny t = tiny({1}, {3}, 2, false);
    MoeGpt m(t.model, t.moe);
    const ParamArena& p = m.params();
    const ParamView* w1 = p.find("blocks.1.moe.experts.2.w1");
    QVERIFY(w1);
    QCOMPARE(w1->shape, (std::vector<int64_t>{16, 8}));
    QVERIFY(p.find("blocks.1.moe.router.w"));
    QVERIFY(p.find("blocks.0.ffn.fc.weight"));
    QVERIFY(!p.find("blocks.1.ffn.fc.weight"));
    QVERIFY(p.find("lm_head.weight"));
    QVERIFY(!MoeGpt(tiny({1}, {3}, 2, true).model, t.moe).params().find("lm_head.weight"));
    size_t total = 0;
    for (const auto& v : p.views()) {
      QCOMPARE(v.offset, total);  // contiguous, in registration order
      total += v.numel;
    }
    QCOMPARE(total, p.size());
  }

  // The arrays the model, its arena and AdamW live in (tensor/device_array.h, here on the CPU
  // backend): growing keeps the contents and zeroes the new elements (as std::vector::resize);
  // a smaller request keeps the array; zero() and assign() touch only the first n elements.
  void device_arrays_grow_as_vectors_do() {
    DeviceArray<float> a(cpu_backend(), "a test array");
    QCOMPARE(a.size(), size_t(0));
    a.assign(std::vector<float>{1, 2, 3}.data(), 3);
    a.ensure(6);
    QCOMPARE(a.download(), (std::vector<float>{1, 2, 3, 0, 0, 0}));
    const float* p = a.data();
    a.ensure(2);
    QCOMPARE(a.size(), size_t(6));
    QCOMPARE(a.data(), p);
    a.assign(std::vector<float>{7, 7, 7, 7, 7, 7}.data(), 6);
    a.zero(4);
    QCOMPARE(a.download(), (std::vector<float>{0, 0, 0, 0, 7, 7}));
    DeviceArray<float> b = std::move(a);
    QCOMPARE(b.download(5), (std::vector<float>{0, 0, 0, 0, 7}));
    QCOMPARE(a.size(), size_t(0));
  }

  // An allocation that fails names the array and its size, then what to change (the model's
  // activations: the batch settings), and leaves the array as it was.
  void a_failed_allocation_says_what_to_change() {
    DeviceArray<float> a(cpu_backend(), "blocks.0 activations (qkv)", "lower train.batch_size");
    a.ensure(4);
    try {
      a.ensure(size_t(1) << 58);  // 1 EiB
      QFAIL("allocated an exbibyte");
    } catch (const std::runtime_error& e) {
      QCOMPARE(QString(e.what()), QString("out of host memory allocating 1152921504606846976 bytes for blocks.0 "
                                          "activations (qkv); lower train.batch_size"));
    }
    QCOMPARE(a.size(), size_t(4));
  }

  void init_is_deterministic_and_seeded() {
    Tiny t = tiny({1}, {3}, 2, true);
    MoeGpt a(t.model, t.moe), b(t.model, t.moe), c(t.model, t.moe);
    a.init(5);
    b.init(5);
    c.init(6);
    QVERIFY(a.params().host_data() == b.params().host_data());
    QVERIFY(a.params().host_data() != c.params().host_data());
    QCOMPARE(a.params().data()[a.params().find("blocks.0.ln1.weight")->offset], 1.0f);
    QCOMPARE(a.params().data()[a.params().find("blocks.0.ln1.bias")->offset], 0.0f);
  }

  void gradients_match_finite_differences_data() {
    QTest::addColumn<std::vector<int>>("moe_layers");
    QTest::addColumn<std::vector<int>>("experts");
    QTest::addColumn<int>("top_k");
    QTest::addColumn<bool>("tied");
    QTest::addColumn<float>("capacity");
    QTest::newRow("dense, tied head") << std::vector<int>{} << std::vector<int>{} << 1 << true << 0.0f;
    QTest::newRow("moe block 1, top-2, untied") << std::vector<int>{1} << std::vector<int>{3} << 2 << false << 0.0f;
    QTest::newRow("moe block 0, top-1") << std::vector<int>{0} << std::vector<int>{4} << 1 << true << 0.0f;
    QTest::newRow("PR-MoE 2 and 4 experts") << std::vector<int>{0, 1} << std::vector<int>{2, 4} << 2 << true << 0.0f;
    QTest::newRow("capacity 1.0 drops tokens") << std::vector<int>{1} << std::vector<int>{3} << 2 << true << 1.0f;
  }
  void gradients_match_finite_differences() {
    QFETCH(std::vector<int>, moe_layers);
    QFETCH(std::vector<int>, experts);
    QFETCH(int, top_k);
    QFETCH(bool, tied);
    QFETCH(float, capacity);
    Tiny t = tiny(moe_layers, experts, top_k, tied, capacity);
    MoeGpt m(t.model, t.moe);
    m.init(11);
    const int B = 2, T = 5;
    Rng rng(3);
    std::vector<int> in(B * T), tg(B * T);
    for (auto& x : in) x = (int)rng.below(11);
    for (auto& x : tg) x = (int)rng.below(11);
    m.params().zero_grad();
    m.forward(in.data(), tg.data(), B, T);
    m.backward();
    std::vector<float> analytic = m.params().host_grads();
    auto loss = [&] { return (double)m.forward(in.data(), tg.data(), B, T).total; };
    test::check_gradient("MoeGpt", {m.params().data(), m.params().size()}, analytic, loss, 2e-3, 2e-4, 3e-2, 600);
  }
};

QTEST_APPLESS_MAIN(TestModel)
#include "tst_model.moc"
