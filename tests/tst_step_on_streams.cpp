// ctest-labels: unit
// A one-rank training step (train/rank_step.h over MoeGpt on the CPU backend) run by the
// StreamExecutor over a fake device (fake_device_queue.h) — the executor the GPU trainer uses —
// against the same steps on the ThreadExecutor: the same losses, gradient norms and parameters,
// bit for bit, with one or two micro-batches, and a span for every task the thread executor ran.
// The CPU backend computes inside each action as the stream executor enqueues it, so this checks
// the executor's part of the GPU path (submit, the routing point's wait, release, synchronize,
// spans) on any machine; the GPU's own run is tst_train_cuda.
#include <QtTest>

#include <algorithm>
#include <string>
#include <vector>

#include "fake_device_queue.h"
#include "moebench/config/config_loader.h"
#include "moebench/model/moe_gpt.h"
#include "moebench/model/pipeline_schedule.h"
#include "moebench/optim/adamw.h"
#include "moebench/runtime/stream_executor.h"
#include "moebench/tensor/rng.h"
#include "moebench/train/rank_step.h"
#include "test_support.h"

using namespace moebench;

namespace {

struct Outcome {
  std::vector<float> losses;
  std::vector<double> norms;
  std::vector<float> params;
  std::vector<std::string> span_names;  // sorted
};

Outcome train_steps(const Config& cfg, Executor* ex) {
  PipeStage pipe;
  pipe.in_flight = pipeline_slots(cfg.parallel.schedule, 1, 0, cfg.parallel.microbatches);
  MoeGpt model(cfg.model, cfg.moe, {}, {}, pipe);
  model.init(cfg.run.seed);
  model.set_routing(cfg.moe.routing, cfg.run.seed);
  if (ex) model.use_executor(*ex);
  Outcome out;
  {
    RankStep step(model, cfg, nullptr, 0.0);
    AdamW opt(model.params(), {cfg.train.beta1, cfg.train.beta2, cfg.train.eps, cfg.train.weight_decay});
    const int M = cfg.parallel.microbatches, B = cfg.train.batch_size / M, T = cfg.model.seq_len;
    std::vector<int> inputs((size_t)M * B * T), targets(inputs.size());
    for (long s = 0; s < 3; ++s) {
      Rng rng(100 + (uint64_t)s);
      for (size_t i = 0; i < inputs.size(); ++i) {
        inputs[i] = (int)rng.below((uint64_t)cfg.model.vocab_size);
        targets[i] = (int)rng.below((uint64_t)cfg.model.vocab_size);
      }
      model.params().zero_grad();
      model.begin_step();
      const size_t n = (size_t)B * T;
      const RankStep::Result r = step.train(
          [&](int m) {
            return MicroBatch{inputs.data() + m * n, targets.data() + m * n, B, T, s, (long)(m * n), M > 1 ? m : -1};
          },
          0.5f, [&, s] { opt.step(model.params(), 1e-2f, s + 1); });
      out.losses.push_back(r.loss.total);
      out.norms.push_back(r.grad_norm);
    }
  }
  out.params = model.params().host_data();
  for (const Span& sp : model.executor().take_spans()) out.span_names.push_back(sp.name);
  std::sort(out.span_names.begin(), out.span_names.end());
  return out;
}

}  // namespace

class TestStepOnStreams : public QObject {
  Q_OBJECT
 private slots:
  void the_stream_executor_trains_as_the_threads_do_data() {
    QTest::addColumn<int>("microbatches");
    QTest::newRow("one micro-batch") << 1;
    QTest::newRow("two micro-batches") << 2;
  }
  void the_stream_executor_trains_as_the_threads_do() {
    QFETCH(int, microbatches);
    Config cfg = load_config(test::tiny_config_path(), {"parallel.microbatches=" + std::to_string(microbatches)});
    const Outcome threads = train_steps(cfg, nullptr);
    test::FakeDeviceQueue device(7);
    StreamExecutor streams(device, 0);
    const Outcome on_streams = train_steps(cfg, &streams);
    QCOMPARE(on_streams.losses, threads.losses);
    QCOMPARE(on_streams.norms, threads.norms);
    QVERIFY(on_streams.params == threads.params);
    QVERIFY(!threads.span_names.empty());
    QCOMPARE(on_streams.span_names, threads.span_names);
    QVERIFY(device.host_syncs > 0);  // the step's end (and each routing point) waited on the device
  }
};

QTEST_GUILESS_MAIN(TestStepOnStreams)
#include "tst_step_on_streams.moc"
