// ctest-labels: unit
// The fp32 prediction (perf/trainer_memory.h) against a real run: a single-rank training (the
// Trainer in this process: 2 steps, the final evaluation and checkpoint) of a model whose memory
// dominates the process, its peak resident set measured from the kernel's high-water mark
// (VmHWM, reset through /proc/self/clear_refs) minus the resident set just before the Trainer
// is built.
//
// Tolerance 10 %: what the prediction leaves out here is the allocator's rounding of each buffer
// to pages (about a hundred buffers, well under 1 MiB), the corpus (200 KB) and the Trainer's
// executor and bookkeeping, all far below 10 % of the ~330 MiB predicted; the process's own
// memory (libraries, MPI, OpenBLAS buffers, threads) is in the baseline, because a warm-up run
// has set it up and run.threads = 1 keeps OpenBLAS and OpenMP to the thread that was warmed up.
// The test can fail: each of AdamW's m and v (69 MiB), the activations (109 MiB) and the
// checkpoint writer's buffer (69 MiB) is more than 10 %, and the test checks that a prediction
// without any one of them would be outside the tolerance of this measurement. Skipped under
// AddressSanitizer (debug-asan preset), whose allocator changes what is resident.
#include <QtTest>

#include <QTemporaryDir>

#include <malloc.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "moebench/config/config_loader.h"
#include "moebench/perf/trainer_memory.h"
#include "moebench/train/trainer.h"

using namespace moebench;

namespace {

constexpr double kTolerance = 0.10;
constexpr double kMiB = 1024.0 * 1024.0;

// 2 MoE blocks of 8 experts at hidden 256 (9.0 M parameters), 8 sequences of 128 tokens.
constexpr const char* kConfig = R"([run]
seed = 3
threads = 1
[model]
vocab_size = 256
seq_len = 128
hidden = 256
layers = 2
heads = 4
ffn_mult = 4
[moe]
moe_layers = [0, 1]
experts = 8
top_k = 2
[data]
corpus_tokens = 50000
[train]
steps = 2
batch_size = 8
warmup_steps = 1
eval_every = 0
eval_batches = 1
[store]
enabled = false
)";

// A field of /proc/self/status in kB ("VmRSS", "VmHWM"), -1 when absent.
long status_kb(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string name;
  long kb = -1;
  while (in >> name) {
    if (name == key + ":" && in >> kb) return kb;
    in.ignore(1 << 12, '\n');
  }
  return -1;
}

// Resets VmHWM to the current resident set (Linux >= 4.0).
bool reset_peak() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return (bool)f;
}

void train(const Config& cfg, const QString& out) {
  Trainer trainer(cfg, out.toStdString());
  trainer.run(-1);
}

}  // namespace

class TestMemoryRss : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
#ifdef __SANITIZE_ADDRESS__
    QSKIP("under AddressSanitizer the resident set holds its shadow memory and quarantine, not the trainer's");
#endif
    // Every buffer of 64 KiB or more in its own mapping, returned when freed: without this,
    // glibc raises its mmap threshold as buffers are freed and a later row could reuse pages
    // an earlier row left resident.
    QVERIFY(mallopt(M_MMAP_THRESHOLD, 64 * 1024) == 1);
    // Warm-up: libraries, OpenBLAS and OpenMP set up, the executor's threads started.
    QTemporaryDir dir;
    train(parse_config(kConfig, "rss.toml",
                       {"model.hidden=16", "model.heads=2", "model.seq_len=16", "model.vocab_size=32",
                        "moe.experts=2", "train.steps=1", "train.batch_size=1"}),
          dir.path());
  }

  void peak_rss_matches_the_fp32_prediction_data() {
    QTest::addColumn<QStringList>("sets");
    QTest::newRow("one micro-batch") << QStringList{};
    // GPipe on one rank keeps every micro-batch's activations until the backwards.
    QTest::newRow("gpipe, 4 micro-batches in flight")
        << QStringList{"parallel.schedule=gpipe", "parallel.microbatches=4", "train.batch_size=16"};
  }
  void peak_rss_matches_the_fp32_prediction() {
    QFETCH(QStringList, sets);
    std::vector<std::string> s;
    for (const QString& x : sets) s.push_back(x.toStdString());
    const Config cfg = parse_config(kConfig, "rss.toml", s);
    const TrainerMemory p = trainer_memory(cfg, 0, true);
    QTemporaryDir dir;
    QVERIFY2(reset_peak(), "cannot reset the peak resident set through /proc/self/clear_refs");
    const long base = status_kb("VmRSS");
    train(cfg, dir.path());
    const long peak = status_kb("VmHWM");
    QVERIFY(base > 0 && peak > 0);
    const double measured = (double)(peak - base) * 1024.0, predicted = p.peak();
    const QString what = QString("measured %1 MiB (peak %2 MiB - before %3 MiB), predicted %4 MiB (weights, gradients "
                                 "%5 MiB each, Adam %6 MiB, activations %7 MiB, workspace %8 MiB, checkpoint %9 MiB)")
                             .arg(measured / kMiB, 0, 'f', 1)
                             .arg(peak / 1024.0, 0, 'f', 1)
                             .arg(base / 1024.0, 0, 'f', 1)
                             .arg(predicted / kMiB, 0, 'f', 1)
                             .arg(p.weights / kMiB, 0, 'f', 1)
                             .arg(p.adam / kMiB, 0, 'f', 1)
                             .arg(p.activations / kMiB, 0, 'f', 1)
                             .arg(p.workspace / kMiB, 0, 'f', 1)
                             .arg(p.checkpoint / kMiB, 0, 'f', 1);
    qInfo("%s: %+.1f %% of the prediction", qPrintable(what), 100.0 * (measured - predicted) / predicted);
    QVERIFY2(predicted > 200 * kMiB, qPrintable(what));  // the model dominates the process
    QVERIFY2(std::fabs(measured - predicted) <= kTolerance * predicted, qPrintable(what));
    // The tolerance is tight enough to catch a prediction missing one of its large terms.
    for (const double term : {p.adam, p.activations, p.checkpoint}) {
      const double without = predicted - term;
      QVERIFY2(std::fabs(measured - without) > kTolerance * without, qPrintable(what));
    }
  }
};

QTEST_APPLESS_MAIN(TestMemoryRss)
#include "tst_memory_rss.moc"
