// ctest-labels: unit
// `moebench infer` and train/inference.h: a tiny model trained on a repeated sentence continues
// it greedily, also past its seq_len context (the window slides); the CLI prints the same tokens;
// MoESys's ring memory (storage/ring_memory.h) gives the same tokens with 1, 2 or 3 of the 3 MoE
// blocks' experts on the device tier, with the loads and device bytes worked out by hand; every
// bad input (no checkpoint, another safetensors file, a prompt outside the vocabulary or not ids,
// a ring larger than the MoE blocks) is a usage error naming it (exit 2).
#include <QtTest>

#include <QTemporaryDir>

#include <string>

#include <nlohmann/json.hpp>

#include "moebench/config/config_loader.h"
#include "moebench/train/inference.h"
#include "moebench/storage/ring_memory.h"
#include "moebench/train/safetensors.h"
#include "moebench/train/trainer.h"
#include "cli_support.h"
#include "test_support.h"

using namespace Qt::StringLiterals;
using namespace moebench;

namespace {

const std::string kSentence = "the cat sat. ";

// The text a correct continuation of `prompt` (a prefix of the repeated sentence) gives.
std::string continuation(size_t prompt_len, size_t count) {
  std::string out;
  for (size_t i = prompt_len; i < prompt_len + count; ++i) out += kSentence[i % kSentence.size()];
  return out;
}

}  // namespace

class TestInfer : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::string run_dir_;

 private slots:
  // 150 steps of the tiny model (hidden 32, ffn_mult 2, 4 experts) with 3 blocks, all MoE, on the
  // sentence repeated (byte-level text, vocab 256).
  void initTestCase() {
    QVERIFY(dir_.isValid());
    std::string text;
    for (int i = 0; i < 400; ++i) text += kSentence;
    const QString corpus = test::write_file(dir_, u"pattern.txt"_s, QByteArray::fromStdString(text));
    const Config cfg = load_config(test::tiny_config_path(),
                                   {"data.source=text", "data.path=" + corpus.toStdString(), "model.vocab_size=256", "model.layers=3",
                                    "moe.moe_layers=[0,1,2]",
                                    "train.steps=150", "train.eval_every=0", "train.lr=0.01", "store.enabled=false"});
    run_dir_ = dir_.filePath(u"run"_s).toStdString();
    Trainer trainer(cfg, run_dir_);
    QVERIFY(!trainer.run(-1).last_checkpoint.empty());
  }

  void greedy_continues_the_sentence_past_the_context() {
    InferenceModel m = load_inference_model(run_dir_);  // the run folder: its latest checkpoint
    QCOMPARE(m.step, 150L);
    QCOMPARE(m.config.model.seq_len, 16);
    const std::vector<int> prompt = {'t', 'h', 'e', ' ', 'c'};
    const std::vector<int> out = greedy_generate(m, prompt, 40);  // 45 tokens: the window slides
    QCOMPARE(std::string(out.begin(), out.end()), continuation(prompt.size(), 40));
  }

  // Each MoE block's experts: 4 x (w1 64x32 + b1 64 + w2 32x64 + b2 32) floats = 4 x 4192 x 4 B
  // = 67,072 bytes. K slots hold K of them instead of all 3; a pass over the 3 blocks loads each
  // block into the slot the ring gives it (K < 3: every acquire is a load, the loader at most one
  // load ahead of the 3 x 12 acquires), while K = 3 loads each block once and keeps it.
  void ring_memory_gives_the_same_tokens() {
    InferenceModel m = load_inference_model(run_dir_);
    const std::vector<int> prompt = {'t', 'h', 'e', ' ', 'c'};
    const std::vector<int> resident = greedy_generate(m, prompt, 12);
    const size_t block_bytes = 67072, whole = m.model->params().size() * sizeof(float);
    for (int K = 1; K <= 3; ++K) {
      RingStats st;
      {
        RingMemory ring(*m.model, K);
        QCOMPARE(greedy_generate(m, prompt, 12), resident);
        st = ring.stats();
      }
      QCOMPARE(st.ring_bytes, (size_t)K * block_bytes);
      QCOMPARE(st.device_bytes, whole - (size_t)(3 - K) * block_bytes);
      QCOMPARE(st.resident_bytes, whole);
      if (K == 3) QCOMPARE(st.loads, 3L);
      else QVERIFY2(st.loads >= 36 && st.loads <= 36 + K, qPrintable(QString::number(st.loads)));
      QVERIFY(st.exposed_seconds <= st.load_seconds + 1.0);  // waits only for loads (and the loader's wake-up)
    }
    {  // Without prefetch each block loads when its forward asks: exactly one load per acquire.
      RingMemory on_demand(*m.model, 1, false);
      QCOMPARE(greedy_generate(m, prompt, 12), resident);
      QCOMPARE(on_demand.stats().loads, 36L);
    }
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, RingMemory(*m.model, 4));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, RingMemory(*m.model, 0));
    QCOMPARE(greedy_generate(m, prompt, 12), resident);  // the arena again once the ring is gone
  }

  void cli_prints_the_same_tokens() {
    const test::CliResult r = test::run_cli({u"infer"_s, QString::fromStdString(run_dir_), u"--prompt"_s,
                                             u"116 104 101 32 99"_s, u"--tokens"_s, u"12"_s, u"--json"_s});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const nlohmann::json j = nlohmann::json::parse(r.out.toStdString());
    const std::vector<int> tokens = j.at("tokens").get<std::vector<int>>();
    QCOMPARE(std::string(tokens.begin(), tokens.end()), continuation(5, 12));
    QCOMPARE(j.at("text").get<std::string>(), continuation(5, 12));
    QCOMPARE(j.at("step").get<long>(), 150L);
    const test::CliResult ring = test::run_cli({u"infer"_s, QString::fromStdString(run_dir_), u"--prompt"_s,
                                                u"116 104 101 32 99"_s, u"--tokens"_s, u"12"_s, u"--ring"_s, u"2"_s,
                                                u"--json"_s});
    QVERIFY2(ring.code == 0, qPrintable(ring.err));
    const nlohmann::json jr = nlohmann::json::parse(ring.out.toStdString());
    QCOMPARE(jr.at("tokens").get<std::vector<int>>(), tokens);
    QCOMPARE(jr.at("ring").at("ring_bytes").get<size_t>(), (size_t)2 * 67072);
    QCOMPARE(jr.at("ring").at("moe_blocks").get<int>(), 3);
  }

  void bad_inputs_are_usage_errors_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("message");
    QTest::newRow("no checkpoint") << QStringList{u"DIR/empty"_s} << u"no checkpoint here"_s;
    QTest::newRow("another safetensors file") << QStringList{u"DIR/foreign"_s} << u"not a moebench checkpoint"_s;
    QTest::newRow("prompt outside the vocabulary") << QStringList{u"RUN"_s, u"--prompt"_s, u"5 300"_s}
                                                   << u"prompt token 1 is 300, outside the model's vocabulary [0, 256)"_s;
    QTest::newRow("prompt not ids") << QStringList{u"RUN"_s, u"--prompt"_s, u"5 cat"_s}
                                    << u"--prompt: 'cat' is not a token id"_s;
    QTest::newRow("missing prompt file") << QStringList{u"RUN"_s, u"--prompt-file"_s, u"DIR/none.txt"_s}
                                         << u"--prompt-file:"_s;
    QTest::newRow("ring larger than the MoE blocks") << QStringList{u"RUN"_s, u"--ring"_s, u"4"_s}
                                                     << u"--ring: ring memory: 4 slots for a model with 3 MoE block(s)"_s;
  }
  void bad_inputs_are_usage_errors() {
    QFETCH(QStringList, args);
    QFETCH(QString, message);
    QDir().mkpath(dir_.filePath(u"empty"_s));
    QDir().mkpath(dir_.filePath(u"foreign"_s));
    const float one = 1.0f;
    write_safetensors(dir_.filePath(u"foreign/model.safetensors"_s).toStdString(), {{"w", {1}, &one}},
                      {{"format", "pt"}});
    for (QString& a : args) a.replace(u"DIR"_s, dir_.path()).replace(u"RUN"_s, QString::fromStdString(run_dir_));
    const test::CliResult r = test::run_cli(QStringList{u"infer"_s} + args);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(message), qPrintable(r.err));
    QCOMPARE(r.err.count(u"moebench:"_s), 1);  // said once
  }
};

QTEST_GUILESS_MAIN(TestInfer)
#include "tst_infer.moc"
