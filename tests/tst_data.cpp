// ctest-labels: unit
// data/: synthetic corpus, llm.c token shards, byte-level text, corpus splits, batch sampling.
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <cstring>
#include <fstream>
#include <functional>

#include "moebench/data/batch_sampler.h"
#include "moebench/data/bin_shard.h"
#include "moebench/data/corpus.h"
#include "moebench/data/synthetic_corpus.h"
#include "moebench/data/text_corpus.h"

#include "test_support.h"

using namespace moebench;

namespace {

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), (std::streamsize)bytes.size());
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void put_le32(std::string& s, size_t at, uint32_t v) {
  for (int k = 0; k < 4; ++k) s[at + k] = (char)((v >> (8 * k)) & 0xff);
}

DataConfig synth_cfg() {
  DataConfig cfg;
  cfg.source = DataSource::synthetic;
  cfg.languages = 4;
  cfg.branching = 4;
  cfg.corpus_tokens = 20000;
  cfg.val_fraction = 0.1f;
  return cfg;
}

}  // namespace

class TestData : public QObject {
  Q_OBJECT

 private slots:
  void synthetic_deterministic() {
    const DataConfig cfg = synth_cfg();
    const TokenCorpus a = load_corpus(cfg, 256, 64, 7);
    const TokenCorpus b = load_corpus(cfg, 256, 64, 7);
    const TokenCorpus c = load_corpus(cfg, 256, 64, 8);
    QCOMPARE(a.vocab_size, 256);
    QCOMPARE((int64_t)(a.train.size() + a.val.size()), cfg.corpus_tokens);
    QCOMPARE((int64_t)a.val.size(), (int64_t)2000);
    QVERIFY(a.train == b.train);
    QVERIFY(a.val == b.val);
    QVERIFY(a.train != c.train);
    QVERIFY(a.val != c.val);
  }

  void synthetic_tokens_in_range() {
    const TokenCorpus a = load_corpus(synth_cfg(), 97, 32, 3);
    for (int32_t t : a.train) QVERIFY(t >= 0 && t < 97);
    for (int32_t t : a.val) QVERIFY(t >= 0 && t < 97);
  }

  void synthetic_val_is_own_stream() {
    const TokenCorpus a = load_corpus(synth_cfg(), 256, 64, 11);
    // Not a slice of train: the first val window appears nowhere in train.
    const std::vector<int32_t> probe(a.val.begin(), a.val.begin() + 32);
    QVERIFY(std::search(a.train.begin(), a.train.end(), probe.begin(), probe.end()) == a.train.end());
    QVERIFY(!std::equal(a.val.begin(), a.val.end(), a.train.begin()));
  }

  void synthetic_entropy_rate_data() {
    QTest::addColumn<int>("vocab");
    QTest::addColumn<int>("branching");
    QTest::newRow("V256 b4") << 256 << 4;
    QTest::newRow("V512 b2") << 512 << 2;
    QTest::newRow("V1024 b8") << 1024 << 8;
  }

  void synthetic_entropy_rate() {
    QFETCH(int, vocab);
    QFETCH(int, branching);
    DataConfig cfg = synth_cfg();
    cfg.branching = branching;
    const double h = moebench::synthetic_entropy_rate(cfg, vocab, 5);
    const double uniform = std::log((double)vocab);
    // Well below ln(V) and at least the noise floor; bounded by ln(b) + noise + doc starts.
    QVERIFY2(h < 0.5 * uniform, qPrintable(QString("H = %1, ln V = %2").arg(h).arg(uniform)));
    QVERIFY(h > 0.0);
    QVERIFY(h < std::log((double)branching) + 0.02 * uniform + 0.1 + uniform / 288.0);

    // Empirical check: the average -log p(next | language, prev) over a generated sample
    // matches the computed rate.
    const auto langs = make_synthetic_languages(cfg, vocab, 5);
    Rng rng(99);
    std::vector<int32_t> toks, lang_of;
    generate_synthetic_tokens(langs, 200000, rng, toks, &lang_of);
    QCOMPARE(toks.size(), lang_of.size());
    double nll = 0.0;
    for (size_t i = 0; i < toks.size(); ++i) {
      const bool doc_start = i == 0 || lang_of[i] != lang_of[i - 1];  // approx (same-language neighbours)
      double p = 1.0 / vocab;
      if (!doc_start) {
        const MarkovLanguage& L = langs[(size_t)lang_of[i]];
        p = 0.02 / vocab;
        for (int k = 0; k < L.branching; ++k)
          if (L.successors[(size_t)toks[i - 1] * L.branching + k] == toks[i])
            p += 0.98 * L.probs[(size_t)toks[i - 1] * L.branching + k];
      }
      nll -= std::log(p);
    }
    nll /= (double)toks.size();
    QVERIFY2(std::abs(nll - h) < 0.05 * h + 0.02,
             qPrintable(QString("empirical %1 vs computed %2").arg(nll).arg(h)));
  }

  void synthetic_languages_differ() {
    const auto langs = make_synthetic_languages(synth_cfg(), 256, 1);
    QCOMPARE(langs.size(), (size_t)4);
    QVERIFY(langs[0].successors != langs[1].successors);
    for (const auto& L : langs)
      for (int s = 0; s < L.vocab_size; ++s) {
        double sum = 0;
        for (int k = 0; k < L.branching; ++k) sum += L.probs[(size_t)s * L.branching + k];
        QVERIFY(std::abs(sum - 1.0) < 1e-5);
      }
  }

  void synthetic_bad_config() {
    DataConfig cfg = synth_cfg();
    cfg.languages = 0;
    QVERIFY(test::error_message<DataError>([&] { load_corpus(cfg, 256, 64, 1); }).contains("data.languages"));
    cfg = synth_cfg();
    cfg.corpus_tokens = 500;
    const QString msg = test::error_message<DataError>([&] { load_corpus(cfg, 256, 64, 1); });
    QVERIFY2(msg.contains("synthetic corpus") && msg.contains("held-out split") && msg.contains("seq_len + 1 = 65"),
             qPrintable(msg));
  }

  void bin_round_trip_data() {
    QTest::addColumn<int>("version");
    QTest::addColumn<int>("max_token");
    QTest::newRow("v1 uint16") << 1 << 65535;
    QTest::newRow("v2 uint32") << 2 << 1000000;
  }

  void bin_round_trip() {
    QFETCH(int, version);
    QFETCH(int, max_token);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath("shard.bin").toStdString();
    std::vector<int32_t> tokens = {0, 1, 2, 255, 256, 50256, max_token};
    Rng rng(4);
    for (int i = 0; i < 5000; ++i) tokens.push_back((int32_t)rng.below((uint64_t)max_token + 1));
    write_bin_shard(path, tokens, version);
    const std::string bytes = read_bytes(path);
    QCOMPARE(bytes.size(), (size_t)1024 + tokens.size() * (version == 1 ? 2 : 4));
    QCOMPARE((unsigned char)bytes[0], (unsigned char)(20240520 & 0xff));  // little-endian magic
    QCOMPARE((int)bytes[4], version);
    QVERIFY(read_bin_shard(path) == tokens);
    QVERIFY(parse_bin_shard(std::vector<uint8_t>(bytes.begin(), bytes.end()), "shard.bin") == tokens);
    // Empty shard round-trips too.
    write_bin_shard(path, {}, version);
    QVERIFY(read_bin_shard(path).empty());
  }

  void bin_write_rejects_unfit_token() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("w.bin").toStdString();
    const QString msg = test::error_message<DataError>([&] { write_bin_shard(path, {1, 70000}, 1); });
    QVERIFY2(msg.contains("w.bin") && msg.contains("70000") && msg.contains("index 1"), qPrintable(msg));
  }

  void bad_shards_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("expected");
    QTest::newRow("wrong magic") << "magic" << "bad magic 12345 (expected 20240520, an llm.c token shard)";
    QTest::newRow("truncated header") << "short_header" << "shorter than the 1024-byte llm.c shard header";
    QTest::newRow("truncated data") << "truncated" << "truncated: header says 1000 tokens, file holds 400";
    QTest::newRow("trailing bytes") << "trailing" << "6 trailing bytes: header says 1000 tokens";
    QTest::newRow("unknown version") << "version" << "unknown version 7";
    QTest::newRow("missing file") << "missing" << "no such file";
    QTest::newRow("token >= vocab") << "vocab" << "token 70000 at index 12 >= vocab_size 50257";
    QTest::newRow("directory") << "directory" << "is a directory";
  }

  void bad_shards() {
    QFETCH(QString, kind);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string name = "bad_" + kind.toStdString() + ".bin";
    const std::string path = dir.filePath(QString::fromStdString(name)).toStdString();
    std::vector<int32_t> tokens(1000, 5);
    tokens[12] = 70000;
    write_bin_shard(path, tokens, 2);
    std::string bytes = read_bytes(path);
    std::function<void()> f = [&] { read_bin_shard(path); };
    if (kind == "magic") put_le32(bytes, 0, 12345);
    else if (kind == "short_header") bytes.resize(100);
    else if (kind == "truncated") bytes.resize(1024 + 400 * 4 + 2);
    else if (kind == "trailing") bytes += "xxxxxx";
    else if (kind == "version") put_le32(bytes, 4, 7);
    else if (kind == "missing") std::filesystem::remove(path);
    else if (kind == "directory") std::filesystem::create_directory(path + ".d");
    if (kind == "directory") {
      f = [&] { read_bin_shard(path + ".d"); };
    } else if (kind == "vocab") {
      f = [&] {
        DataConfig cfg;
        cfg.source = DataSource::bin;
        cfg.path = path;
        load_corpus(cfg, 50257, 8, 1);
      };
    } else if (kind != "missing") {
      write_bytes(path, bytes);
    }
    const QString msg = test::error_message<DataError>(f);
    QVERIFY2(msg.contains(QString::fromStdString(name)), qPrintable(msg));
    QVERIFY2(msg.contains(expected), qPrintable(msg));
    if (kind == "missing" || kind == "directory" || kind == "vocab") return;
    // The same bytes in memory: the same message, under the name given.
    const QString mem = test::error_message<DataError>(
        [&] { parse_bin_shard(std::vector<uint8_t>(bytes.begin(), bytes.end()), name); });
    QCOMPARE(mem, msg.mid(msg.indexOf(QString::fromStdString(name))));
  }

  void bin_corpus_split() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("train.bin").toStdString();
    std::vector<int32_t> tokens(1000);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = (int32_t)(i % 300);
    write_bin_shard(path, tokens);
    DataConfig cfg;
    cfg.source = DataSource::bin;
    cfg.path = path;
    cfg.val_fraction = 0.2f;
    TokenCorpus c = load_corpus(cfg, 300, 16, 1);
    QCOMPARE(c.train.size(), (size_t)800);
    QCOMPARE(c.val.size(), (size_t)200);
    QVERIFY(std::equal(c.train.begin(), c.train.end(), tokens.begin()));
    QVERIFY(std::equal(c.val.begin(), c.val.end(), tokens.begin() + 800));

    // Separate held-out shard.
    const std::string vpath = dir.filePath("val.bin").toStdString();
    write_bin_shard(vpath, std::vector<int32_t>(50, 3), 2);
    cfg.val_path = vpath;
    c = load_corpus(cfg, 300, 16, 1);
    QCOMPARE(c.train.size(), (size_t)1000);
    QCOMPARE(c.val.size(), (size_t)50);
  }

  void split_too_small_data() {
    QTest::addColumn<float>("val_fraction");
    QTest::addColumn<QString>("expected");
    QTest::newRow("held-out too small") << 0.05f << "held-out split (last 5% of 1000 tokens) holds 50 tokens, fewer than seq_len + 1 = 65";
    QTest::newRow("train too small") << 0.95f << "train split (first 5% of 1000 tokens) holds 50 tokens, fewer than seq_len + 1 = 65";
    QTest::newRow("no held-out") << 0.0f << "val_fraction";
  }

  void split_too_small() {
    QFETCH(float, val_fraction);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const std::string path = dir.filePath("small.bin").toStdString();
    write_bin_shard(path, std::vector<int32_t>(1000, 1));
    DataConfig cfg;
    cfg.source = DataSource::bin;
    cfg.path = path;
    cfg.val_fraction = val_fraction;
    const QString msg = test::error_message<DataError>([&] { load_corpus(cfg, 256, 64, 1); });
    QVERIFY2(msg.contains("small.bin") && msg.contains(expected), qPrintable(msg));
  }

  void text_loader() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("corpus.txt").toStdString();
    std::string text;
    for (int i = 0; i < 50; ++i) text += "Hello, world! \xC3\xA9t\xC3\xA9\n";
    write_bytes(path, text);
    const auto bytes = read_text_bytes(path);
    QCOMPARE(bytes.size(), text.size());
    for (size_t i = 0; i < text.size(); ++i) QCOMPARE(bytes[i], (int32_t)(unsigned char)text[i]);
    QCOMPARE(bytes[14], (int32_t)0xC3);

    DataConfig cfg;
    cfg.source = DataSource::text;
    cfg.path = path;
    cfg.val_fraction = 0.25f;
    const TokenCorpus c = load_corpus(cfg, kTextVocabSize, 32, 1);
    QCOMPARE(c.train.size() + c.val.size(), text.size());
    QCOMPARE(c.vocab_size, 256);

    const std::string empty = dir.filePath("empty.txt").toStdString();
    write_bytes(empty, "");
    const QString msg = test::error_message<DataError>([&] { read_text_bytes(empty); });
    QVERIFY2(msg.contains("empty.txt") && msg.contains("empty file"), qPrintable(msg));
  }

  void file_source_without_path() {
    DataConfig cfg;
    cfg.source = DataSource::bin;
    QVERIFY(test::error_message<DataError>([&] { load_corpus(cfg, 256, 64, 1); }).contains("data.path"));
  }

  void sample_batch_deterministic() {
    std::vector<int32_t> tokens(5000);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = (int32_t)i;  // token == position
    const int B = 4, T = 16;
    std::vector<int32_t> in1(B * T), tg1(B * T), in2(B * T), tg2(B * T), in3(B * T), tg3(B * T),
        in4(B * T), tg4(B * T);
    sample_batch(tokens, B, T, 42, 10, kTrainStream, in1.data(), tg1.data());
    sample_batch(tokens, B, T, 42, 10, kTrainStream, in2.data(), tg2.data());
    sample_batch(tokens, B, T, 42, 11, kTrainStream, in3.data(), tg3.data());
    sample_batch(tokens, B, T, 42, 10, kEvalStream, in4.data(), tg4.data());
    QVERIFY(in1 == in2 && tg1 == tg2);
    QVERIFY(in1 != in3);
    QVERIFY(in1 != in4);
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t) {
        QCOMPARE(tg1[b * T + t], in1[b * T + t] + 1);  // contiguous window, targets shifted by one
        if (t + 1 < T) QCOMPARE(in1[b * T + t + 1], tg1[b * T + t]);
      }
    // Rows differ from each other.
    QVERIFY(in1[0] != in1[T] || in1[T] != in1[2 * T]);
  }

  void sample_batch_covers_all_windows() {
    // n = T + 3: starts 0..2 must all appear, never beyond (targets stay in range).
    std::vector<int32_t> tokens = {0, 1, 2, 3, 4, 5, 6};
    const int T = 4;
    std::set<int32_t> starts;
    for (uint64_t step = 0; step < 200; ++step) {
      int32_t in[T], tg[T];
      sample_batch(tokens, 1, T, 1, step, 0, in, tg);
      starts.insert(in[0]);
      QVERIFY(tg[T - 1] <= 6);
    }
    QVERIFY(starts == (std::set<int32_t>{0, 1, 2}));
    int32_t in[8], tg[8];
    QVERIFY(test::error_message<DataError>([&] { sample_batch(tokens, 1, 7, 1, 0, 0, in, tg); }).contains("seq_len + 1 = 8"));
  }
};

QTEST_APPLESS_MAIN(TestData)
#include "tst_data.moc"
