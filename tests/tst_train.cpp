// ctest-labels: unit slow
// The trainer: bit-identical resume from a checkpoint, checkpoint contents readable as plain
// safetensors, checkpoint folders written whole, the output directory claim, and the
// quickstart model learning its synthetic corpus.
#include <QtTest>

#include <unistd.h>

#include <QDir>

#include <cmath>
#include <cstring>
#include <fstream>

#include "moebench/config/config_loader.h"
#include "moebench/train/checkpoint.h"
#include "moebench/train/output_dir.h"
#include "moebench/train/safetensors.h"
#include "moebench/train/trainer.h"
#include "test_support.h"

using namespace moebench;

namespace {
Config tiny_config() { return load_config(test::tiny_config_path()); }

std::vector<float> losses_of(Trainer& t, long stop_at) {
  std::vector<float> out;
  TrainCallbacks cb;
  cb.on_step = [&](const StepStats& s) { out.push_back(s.loss.total); };
  t.run(stop_at, cb);
  return out;
}
}  // namespace

class TestTrain : public QObject {
  Q_OBJECT

 private slots:
  void resume_is_bit_identical() {
    QTemporaryDir full_dir, part_dir;
    const Config cfg = tiny_config();
    Trainer full(cfg, full_dir.path().toStdString());
    const std::vector<float> expected = losses_of(full, -1);
    QCOMPARE(expected.size(), size_t(12));

    {
      Trainer first(cfg, part_dir.path().toStdString());
      const std::vector<float> head = losses_of(first, 5);
      QCOMPARE(head.size(), size_t(5));
      QVERIFY(std::memcmp(head.data(), expected.data(), 5 * sizeof(float)) == 0);
    }
    Trainer second(cfg, part_dir.path().toStdString());
    QCOMPARE(second.resume(part_dir.path().toStdString()), 5L);
    const std::vector<float> tail = losses_of(second, -1);
    QCOMPARE(tail.size(), size_t(7));
    for (size_t i = 0; i < tail.size(); ++i)
      QVERIFY2(std::memcmp(&tail[i], &expected[5 + i], sizeof(float)) == 0,
               qPrintable(QString("step %1: %2 vs %3").arg(6 + i).arg(tail[i], 0, 'g', 9).arg(expected[5 + i], 0, 'g', 9)));
    QVERIFY(second.model().params().host_data() == full.model().params().host_data());
  }

  void checkpoint_is_plain_safetensors() {
    QTemporaryDir dir;
    Config cfg = tiny_config();
    cfg.train.steps = 2;
    Trainer t(cfg, dir.path().toStdString());
    t.run(-1);
    const std::string ckpt = resolve_checkpoint_dir(dir.path().toStdString());
    QVERIFY(ckpt.ends_with("step_000002"));
    SafetensorsFile f = read_safetensors(ckpt + "/model.safetensors");
    QVERIFY(f.tensors.count("blocks.1.moe.experts.3.w1"));
    QCOMPARE(f.tensors["blocks.1.moe.experts.3.w1"].shape, (std::vector<int64_t>{64, 32}));
    QCOMPARE(f.metadata["step"], std::string("2"));
    SafetensorsFile o = read_safetensors(ckpt + "/optimizer.safetensors");
    QVERIFY(o.tensors.count("m.embed.wte") && o.tensors.count("v.embed.wte"));
    const ParamView* v = t.model().params().find("blocks.1.moe.router.w");
    QVERIFY(std::memcmp(f.tensors["blocks.1.moe.router.w"].data.data(),
                        t.model().params().data() + v->offset, v->numel * 4) == 0);
  }

  void resume_rejects_a_different_model() {
    QTemporaryDir dir;
    Config cfg = tiny_config();
    cfg.train.steps = 1;
    Trainer(cfg, dir.path().toStdString()).run(-1);
    cfg.model.hidden = 16;
    Trainer other(cfg, dir.path().toStdString());
    try {
      other.resume(dir.path().toStdString());
      QFAIL("resume accepted a checkpoint of another shape");
    } catch (const CheckpointError& e) {
      QVERIFY2(std::string(e.what()).find("embed.wte") != std::string::npos, e.what());
    }
  }

  // A checkpoint folder appears whole or not at all: what a killed writer leaves (a hidden
  // ".step_N.partial-PID" folder, a step folder without its model file) is never resumed from,
  // and saving a step again replaces it in one rename.
  void checkpoint_folders_are_complete_or_absent() {
    QTemporaryDir dir;
    Config cfg = tiny_config();
    cfg.train.steps = 2;
    const std::string out = dir.path().toStdString();
    Trainer t(cfg, out);
    t.run(-1);
    const std::string ckpts = out + "/checkpoints";
    QDir(QString::fromStdString(ckpts)).mkpath(".step_000009.partial-123");
    std::ofstream(ckpts + "/.step_000009.partial-123/model.safetensors") << "half";
    QDir(QString::fromStdString(ckpts)).mkpath("step_000007");  // no model file
    QDir(QString::fromStdString(ckpts)).mkpath("step_00000x");
    QVERIFY(resolve_checkpoint_dir(out).ends_with("/step_000002"));
    QCOMPARE(checkpoint_step(resolve_checkpoint_dir(out)), 2L);
    // Numeric order, not text order: 10 steps is later than 9.
    QVERIFY(QDir().rename(QString::fromStdString(ckpts + "/step_000002"), QString::fromStdString(ckpts + "/step_10")));
    QDir(QString::fromStdString(ckpts)).mkpath("step_9");
    QFile::copy(QString::fromStdString(ckpts + "/step_10/model.safetensors"),
                QString::fromStdString(ckpts + "/step_9/model.safetensors"));
    QVERIFY(resolve_checkpoint_dir(out).ends_with("/step_10"));
    // Saving over an existing step folder: the new files replace the old ones, nothing is left beside.
    const std::string target = ckpts + "/step_10";
    save_checkpoint(target, t.model().params(), AdamW(t.model().params(), {}), {42, "{}"});
    QCOMPARE(checkpoint_step(target), 42L);
    const QStringList left = QDir(QString::fromStdString(ckpts)).entryList(QDir::Dirs | QDir::Hidden | QDir::NoDotAndDotDot);
    QCOMPARE(left, (QStringList{".step_000009.partial-123", "step_000007", "step_00000x", "step_10", "step_9"}));
  }

  // The output directory: a second claim while the first lives is refused naming the holder's
  // pid; a directory holding checkpoints is refused unless resuming or overwriting.
  void output_dir_is_claimed_once() {
    QTemporaryDir dir;
    const std::string out = dir.path().toStdString() + "/out";
    {
      FolderLock lock = claim_output_dir(out, OutputMode::fresh);
      QVERIFY(lock.held());
      const QString msg = test::error_message<UsageError>([&] { claim_output_dir(out, OutputMode::resume); });
      QVERIFY2(msg.contains("is in use by another moebench run (pid " + QString::number(getpid())), qPrintable(msg));
    }
    Config cfg = tiny_config();
    cfg.train.steps = 1;
    Trainer(cfg, out).run(-1);
    QString msg = test::error_message<UsageError>([&] { claim_output_dir(out, OutputMode::fresh); });
    QVERIFY2(msg.contains("holds checkpoints of an earlier run (latest step_000001)") && msg.contains("--overwrite"),
             qPrintable(msg));
    QVERIFY(claim_output_dir(out, OutputMode::resume).held());
    QVERIFY(QFile::exists(QString::fromStdString(out + "/checkpoints/step_000001/model.safetensors")));
    QVERIFY(claim_output_dir(out, OutputMode::overwrite).held());
    QVERIFY(!QFile::exists(QString::fromStdString(out + "/checkpoints")));
    std::ofstream(dir.path().toStdString() + "/afile") << "x";
    msg = test::error_message<std::runtime_error>([&] { claim_output_dir(dir.path().toStdString() + "/afile", OutputMode::fresh); });
    QVERIFY2(msg.contains("afile: cannot create it"), qPrintable(msg));
  }

  void quickstart_learns_the_synthetic_corpus() {
    // The quickstart model, shortened to 120 steps to keep the suite quick.
    Config cfg = load_config(MOEBENCH_SOURCE_DIR "/sample_configs/quickstart.toml", {"train.steps=120"});
    QTemporaryDir dir;
    Trainer t(cfg, dir.path().toStdString());
    const float before = t.evaluate();
    const TrainSummary s = t.run(-1);
    const float uniform = std::log((float)cfg.model.vocab_size);
    qInfo("quickstart: eval loss %.4f -> %.4f (ln vocab %.4f) in %.1f s", before,
          s.final_eval_loss, uniform, s.seconds);
    QVERIFY(std::abs(before - uniform) < 0.3f);       // starts near a uniform guess
    QVERIFY(s.final_eval_loss < 0.6f * uniform);      // and learns well below it
  }
};

QTEST_APPLESS_MAIN(TestTrain)
#include "tst_train.moc"
