// ctest-labels: gpu
// The trainer on one GPU (run.device = "cuda") against the same run on the CPU: in fp32 every
// step's loss, the gradient norm and, after the steps, every parameter within 1e-4 (relative); in
// mixed precision (run.precision = "bf16": bf16 GEMM operands, fp32 accumulation) every step's
// loss within 1e-2 (relative) of the CPU's fp32 and not equal to the GPU's fp32 (the bf16 GEMMs
// ran); a resumed GPU run is bit-identical to the uninterrupted one in both precisions, as on the
// CPU; the SSD tier's experts (updated on the host) follow in-memory training.
// Without a CUDA build or a GPU every test is skipped.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "moebench/config/config_loader.h"
#include "moebench/storage/expert_state_store.h"
#include "moebench/train/device.h"
#include "moebench/train/trainer.h"
#include "gpu_support.h"
#include "test_support.h"

using namespace moebench;

namespace {

Config gpu_config(Device device, Precision precision = Precision::fp32) {
  Config cfg = load_config(test::tiny_config_path());
  cfg.run.device = device;
  cfg.run.precision = precision;
  cfg.train.steps = 6;
  cfg.train.eval_every = 3;
  cfg.train.grad_clip = 0.5f;  // clipping applies in some steps
  return cfg;
}

std::vector<StepStats> steps_of(Trainer& t, long stop_at) {
  std::vector<StepStats> out;
  TrainCallbacks cb;
  cb.on_step = [&](const StepStats& s) { out.push_back(s); };
  t.run(stop_at, cb);
  return out;
}

}  // namespace

class TestTrainCuda : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { MOEBENCH_REQUIRE_GPU(); }

  void gpu_steps_match_the_cpu() {
    QTemporaryDir cpu_dir, gpu_dir;
    Trainer cpu(gpu_config(Device::cpu), cpu_dir.path().toStdString());
    Trainer gpu(gpu_config(Device::cuda), gpu_dir.path().toStdString());
    QVERIFY(gpu.model().backend().device_memory());
    const std::vector<StepStats> c = steps_of(cpu, 3), g = steps_of(gpu, 3);
    QCOMPARE(g.size(), c.size());
    for (size_t i = 0; i < c.size(); ++i) {
      QVERIFY2(std::abs(g[i].loss.total - c[i].loss.total) <= 1e-4 * std::abs(c[i].loss.total),
               qPrintable(QString("step %1: loss %2 on the GPU, %3 on the CPU").arg(i + 1).arg(g[i].loss.total, 0, 'g', 9)
                              .arg(c[i].loss.total, 0, 'g', 9)));
      QVERIFY2(std::abs(g[i].grad_norm - c[i].grad_norm) <= 1e-4 * c[i].grad_norm,
               qPrintable(QString("step %1: grad norm %2 vs %3").arg(i + 1).arg(g[i].grad_norm).arg(c[i].grad_norm)));
    }
    const std::vector<float> cp = cpu.model().params().host_data(), gp = gpu.model().params().host_data();
    for (const ParamView& v : cpu.model().params().views()) {
      const double worst = test::worst_relative(gp, cp, v.offset, v.numel);
      QVERIFY2(worst <= 1e-4, qPrintable(QString("%1 after 3 steps: differs by %2 (relative)").arg(v.name.c_str()).arg(worst)));
    }
  }

  void gpu_bf16_follows_the_cpu() {
    QTemporaryDir cpu_dir, fp32_dir, bf16_dir;
    Trainer cpu(gpu_config(Device::cpu), cpu_dir.path().toStdString());
    Trainer fp32(gpu_config(Device::cuda), fp32_dir.path().toStdString());
    Trainer bf16(gpu_config(Device::cuda, Precision::bf16), bf16_dir.path().toStdString());
    QVERIFY(bf16.model().backend().mixed_precision());
    const std::vector<StepStats> c = steps_of(cpu, 3), f = steps_of(fp32, 3), b = steps_of(bf16, 3);
    QCOMPARE(b.size(), c.size());
    bool rounded = false;
    for (size_t i = 0; i < c.size(); ++i) {
      QVERIFY2(std::abs(b[i].loss.total - c[i].loss.total) <= 1e-2 * std::abs(c[i].loss.total),
               qPrintable(QString("step %1: loss %2 in bf16 on the GPU, %3 in fp32 on the CPU").arg(i + 1)
                              .arg(b[i].loss.total, 0, 'g', 9).arg(c[i].loss.total, 0, 'g', 9)));
      rounded = rounded || b[i].loss.total != f[i].loss.total;
    }
    QVERIFY2(rounded, "the bf16 run's losses equal the fp32 run's: its GEMMs did not run in bf16");
  }

  void gpu_resume_is_bit_identical_data() {
    QTest::addColumn<int>("precision");
    QTest::newRow("fp32") << (int)Precision::fp32;
    QTest::newRow("bf16") << (int)Precision::bf16;
  }
  void gpu_resume_is_bit_identical() {
    QFETCH(int, precision);
    QTemporaryDir full_dir, part_dir;
    const Config cfg = gpu_config(Device::cuda, (Precision)precision);
    Trainer full(cfg, full_dir.path().toStdString());
    const std::vector<StepStats> expected = steps_of(full, -1);
    {
      Trainer first(cfg, part_dir.path().toStdString());
      steps_of(first, 4);  // ends with a checkpoint of step 4
    }
    Trainer second(cfg, part_dir.path().toStdString());
    QCOMPARE(second.resume(part_dir.path().toStdString()), 4L);
    const std::vector<StepStats> tail = steps_of(second, -1);
    QCOMPARE(tail.size(), expected.size() - 4);
    for (size_t i = 0; i < tail.size(); ++i)
      QVERIFY2(std::memcmp(&tail[i].loss.total, &expected[4 + i].loss.total, sizeof(float)) == 0,
               qPrintable(QString("step %1 after the resume differs").arg(5 + i)));
    QVERIFY(second.model().params().host_data() == full.model().params().host_data());
  }

  // storage.sparse = "ssd" on the GPU: the experts' AdamW on the host through their records (the
  // gradients down, the weights up) against the GPU's AdamW kernel on the arena: the same update in
  // fp32 up to the kernel's rounding.
  void gpu_ssd_tier_matches_memory_training() {
    QTemporaryDir mem_dir, tier_dir, ssd;
    Config cfg = gpu_config(Device::cuda);
    Trainer mem(cfg, mem_dir.path().toStdString());
    cfg.storage.sparse = SparseStorage::ssd;
    cfg.storage.ssd_dir = ssd.path().toStdString();
    cfg.storage.host_cache_bytes = expert_state_record_bytes(cfg.model);  // one record: the others read each step
    Trainer tier(cfg, tier_dir.path().toStdString());
    const std::vector<StepStats> m = steps_of(mem, 3), t = steps_of(tier, 3);
    QCOMPARE(t.size(), m.size());
    for (size_t i = 0; i < m.size(); ++i) {
      QVERIFY2(std::abs(t[i].loss.total - m[i].loss.total) <= 1e-5 * std::abs(m[i].loss.total),
               qPrintable(QString("step %1: loss %2 with the SSD tier, %3 in memory").arg(i + 1)
                              .arg(t[i].loss.total, 0, 'g', 9).arg(m[i].loss.total, 0, 'g', 9)));
      QVERIFY(t[i].sparse && t[i].sparse->misses > 0);
    }
    const std::vector<float> a = tier.model().params().host_data(), b = mem.model().params().host_data();
    for (const ParamView& v : mem.model().params().views()) {
      const double worst = test::worst_relative(a, b, v.offset, v.numel);
      QVERIFY2(worst <= 1e-4, qPrintable(QString("%1 after 3 steps: differs by %2 (relative)").arg(v.name.c_str()).arg(worst)));
    }
  }
};

QTEST_GUILESS_MAIN(TestTrainCuda)
#include "tst_train_cuda.moc"
