// ctest-labels: unit
// AdamW against hand-computed steps, global grad-norm clipping, and the LR schedule.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "moebench/model/cpu_backend.h"
#include "moebench/optim/adamw.h"

using namespace moebench;

class TestOptim : public QObject {
  Q_OBJECT

 private:
  static ParamArena two_params() {
    ParamArena a;
    a.add("w", {1, 1}, true);   // decayed
    a.add("b", {1}, false);     // not decayed
    a.finalize(cpu_backend());
    return a;
  }

 private slots:
  void adamw_matches_hand_computed_steps() {
    ParamArena a = two_params();
    a.param(0)[0] = 1.0f;
    a.param(1)[0] = 1.0f;
    AdamW opt(a, {0.9f, 0.95f, 1e-8f, 0.1f});
    a.grad(0)[0] = 0.5f;
    a.grad(1)[0] = 0.5f;
    opt.step(a, 0.1f, 1);
    // m = 0.05, v = 0.0125, mhat = 0.5, vhat = 0.25 -> update 1; decay 0.1 * 1.
    QVERIFY(std::abs(a.param(0)[0] - 0.89f) < 1e-6f);
    QVERIFY(std::abs(a.param(1)[0] - 0.9f) < 1e-6f);
    a.grad(0)[0] = -0.25f;
    opt.step(a, 0.1f, 2);
    // m = 0.02, v = 0.015, mhat = 0.02/0.19, vhat = 0.015/0.0975
    const double mhat = 0.02 / 0.19, vhat = 0.015 / 0.0975;
    const double expect = 0.89 - 0.1 * (mhat / (std::sqrt(vhat) + 1e-8) + 0.1 * 0.89);
    QVERIFY2(std::abs(a.param(0)[0] - expect) < 1e-6, qPrintable(QString::number(a.param(0)[0], 'g', 9)));
    QVERIFY(std::abs(opt.m()[0] - 0.02f) < 1e-7f);
    QVERIFY(std::abs(opt.v()[0] - 0.015f) < 1e-7f);
  }

  // AdamW updates runs of neighbouring views with one decay flag at once: the same bits as one
  // update per view, whatever the mix of decay flags and offloaded (not kept) views.
  void runs_of_views_update_as_the_views_do() {
    ParamArena a;
    const bool decay[] = {true, true, false, true, false, false, true};
    for (int i = 0; i < 7; ++i) {
      std::string name = "p";
      name += std::to_string(i);
      a.add(name, {3 + i}, decay[i]);
    }
    a.finalize(cpu_backend());
    for (size_t j = 0; j < a.size(); ++j) {
      a.data()[j] = std::sin(0.7 * j);
      a.grads()[j] = std::cos(1.3 * j);
    }
    const AdamWHyper h{0.9f, 0.95f, 1e-8f, 0.1f};
    auto kept = [](const ParamView& v) { return v.name != "p4"; };  // p4's moments are held elsewhere
    AdamW opt(a, h, kept);
    std::vector<float> p(a.data(), a.data() + a.size()), m(opt.kept_params(), 0.0f), v = m;
    for (long t = 1; t <= 3; ++t) {
      opt.step(a, 0.01f, t);
      size_t at = 0;
      for (const ParamView& view : a.views()) {
        if (!kept(view)) continue;
        adamw_update(p.data() + view.offset, a.grads() + view.offset, m.data() + at, v.data() + at, (long)view.numel, h,
                     0.01f, t, view.decay ? h.weight_decay : 0.0f);
        at += view.numel;
      }
    }
    QVERIFY(std::equal(p.begin(), p.end(), a.data()));
    QVERIFY(std::equal(m.begin(), m.end(), opt.m()));
    QVERIFY(std::equal(v.begin(), v.end(), opt.v()));
    const ParamView& skipped = *a.find("p4");
    for (size_t j = skipped.offset; j < skipped.offset + skipped.numel; ++j) QCOMPARE(a.data()[j], (float)std::sin(0.7 * j));
  }

  void clip_scales_to_max_norm() {
    ParamArena a = two_params();
    a.grad(0)[0] = 3.0f;
    a.grad(1)[0] = 4.0f;
    QCOMPARE(clip_grad_norm(a, 10.0f), 5.0);  // below the limit: untouched
    QCOMPARE(a.grad(0)[0], 3.0f);
    QCOMPARE(clip_grad_norm(a, 1.0f), 5.0);
    QVERIFY(std::abs(grad_norm(a) - 1.0) < 1e-5);
    QVERIFY(std::abs(a.grad(1)[0] - 0.8f) < 1e-5f);
    a.grad(0)[0] = 30.0f;
    clip_grad_norm(a, 0.0f);  // 0 = off
    QCOMPARE(a.grad(0)[0], 30.0f);
  }

  void lr_schedule_data() {
    QTest::addColumn<long>("step");
    QTest::addColumn<double>("expected");
    // lr 1.0, warmup 10, 111 steps (cosine over steps 10..110), floor 0.1
    QTest::newRow("first warmup step") << 0L << 0.1;
    QTest::newRow("mid warmup") << 4L << 0.5;
    QTest::newRow("end of warmup") << 10L << 1.0;
    QTest::newRow("half of cosine") << 60L << 0.55;
    QTest::newRow("last step at floor") << 110L << 0.1;
    QTest::newRow("beyond the end stays at floor") << 500L << 0.1;
  }
  void lr_schedule() {
    QFETCH(long, step);
    QFETCH(double, expected);
    QVERIFY2(std::abs(lr_at(step, 1.0f, 10, 111, 0.1f) - expected) < 1e-5,
             qPrintable(QString::number(lr_at(step, 1.0f, 10, 111, 0.1f))));
  }
};

QTEST_APPLESS_MAIN(TestOptim)
#include "tst_optim.moc"
