// ctest-labels: unit
// The wire format of step records (step_records_codec.h): a round trip of every field, and one
// clear error, leaving the records unchanged, for every kind of corrupt buffer rank 0 may get.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "moebench/train/step_records_codec.h"

#include "test_support.h"

using namespace moebench;

namespace {

Span make_span(int rank, const char* name, TaskCategory category) {
  Span s;
  s.rank = rank;
  s.role = StreamRole::comm_inter;
  s.name = name;
  s.category = category;
  s.start = 0.25;
  s.end = 1.5;
  s.flops = 1.5e9;
  s.bytes = 4096;
  s.peer = 3;
  s.layer = 1;
  s.expert = 2;
  s.chunk = 3;
  s.step = 17;
  return s;
}

// The buffer of two spans, 4 peers and 2 MoE blocks of 3 experts, the second with a decision.
std::vector<uint8_t> sample() {
  return encode_rank_records({make_span(1, "dispatch", TaskCategory::comm), make_span(1, "ffn", TaskCategory::compute)},
                             {0, 10, 20, 30}, {{5, 0, 7}, {1, 2, 3}}, {{}, {{"monta.level", 2}}});
}

template <class T>
void put(std::vector<uint8_t>& buf, size_t at, T v) {
  std::memcpy(buf.data() + at, &v, sizeof v);
}

// Byte offsets in sample(): the span count, the first span's role and category, the traffic
// count.
constexpr size_t kSpanCount = 0;
constexpr size_t kFirstRole = 4 + 4;                        // count, rank
constexpr size_t kFirstCategory = 4 + 4 + 4 + (4 + 8);      // count, rank, role, name
constexpr size_t kTrafficCount = 4 + 2 * 72 + 8 + 3;        // 2 spans of 72 + their names
constexpr size_t kDecisionBytes = 4 + (4 + 4 + 11 + 8);     // block 0: none; block 1: one

}  // namespace

class TestStepRecords : public QObject {
  Q_OBJECT

 private slots:
  void round_trip() {
    StepRecords rec;
    rec.moe_blocks = {1, 3};
    decode_rank_records(sample(), rec);
    decode_rank_records(sample(), rec);  // a second rank appends
    QCOMPARE(rec.spans.size(), size_t(4));
    const Span& s = rec.spans[0];
    QCOMPARE(s.rank, 1);
    QVERIFY(s.role == StreamRole::comm_inter);
    QCOMPARE(s.name, std::string("dispatch"));
    QCOMPARE(s.category, TaskCategory::comm);
    QCOMPARE(s.start, 0.25);
    QCOMPARE(s.end, 1.5);
    QCOMPARE(s.bytes, uint64_t(4096));
    QCOMPARE(s.peer, 3);
    QCOMPARE(s.layer, 1);
    QCOMPARE(s.expert, 2);
    QCOMPARE(s.chunk, 3);
    QCOMPARE(s.flops, 1.5e9);
    QCOMPARE(s.step, 17L);
    QCOMPARE(rec.spans[1].category, TaskCategory::compute);
    QCOMPARE(rec.traffic.size(), size_t(2));
    QVERIFY((rec.traffic[1] == std::vector<uint64_t>{0, 10, 20, 30}));
    QCOMPARE(rec.routing.size(), size_t(2));
    QVERIFY((rec.routing[1] == std::vector<std::vector<int64_t>>{{5, 0, 7}, {1, 2, 3}}));
    QCOMPARE(rec.decisions.size(), size_t(2));
    QCOMPARE(rec.decisions[1].size(), size_t(2));
    QVERIFY(rec.decisions[1][0].empty());
    QCOMPARE(rec.decisions[1][1].size(), size_t(1));
    QCOMPARE(rec.decisions[1][1][0].key, std::string("monta.level"));
    QCOMPARE(rec.decisions[1][1][0].value, 2.0);
  }

  void layout_offsets() {  // the offsets the corrupt rows below write at
    const std::vector<uint8_t> buf = sample();
    int32_t role = 0, category = 0;
    uint32_t peers = 0;
    std::memcpy(&role, buf.data() + kFirstRole, 4);
    std::memcpy(&category, buf.data() + kFirstCategory, 4);
    QCOMPARE(role, (int32_t)StreamRole::comm_inter);
    std::memcpy(&peers, buf.data() + kTrafficCount, 4);
    QCOMPARE(category, (int32_t)TaskCategory::comm);
    QCOMPARE(peers, 4u);
  }

  void corrupt_buffers_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("expected");
    QTest::newRow("empty") << "empty" << "truncated span count (at byte 0 of 0)";
    QTest::newRow("truncated") << "truncated" << "truncated decision value";
    QTest::newRow("span count too large") << "spans" << "span count 4294967295 needs more than the";
    QTest::newRow("traffic count too large") << "traffic" << "traffic peer count 536870912 needs more than the";
    QTest::newRow("string past the end") << "string" << "span name length 4000000000 needs more than the";
    QTest::newRow("role out of range") << "role" << "span role 6 is not a stream role";
    QTest::newRow("category out of range") << "category" << "span category 9 is not a task category";
    QTest::newRow("negative routing count") << "negative" << "routing count -4 is not a token count";
    QTest::newRow("decision count too large") << "decisions" << "decision count 1000 needs more than the";
    QTest::newRow("decision not finite") << "nan" << "decision monta.level is not a finite number";
    QTest::newRow("trailing bytes") << "trailing" << "3 bytes after the records";
  }

  void corrupt_buffers() {
    QFETCH(QString, kind);
    QFETCH(QString, expected);
    std::vector<uint8_t> buf = sample();
    if (kind == "empty") buf.clear();
    else if (kind == "truncated") buf.resize(buf.size() - 1);
    else if (kind == "spans") put<uint32_t>(buf, kSpanCount, 0xFFFFFFFFu);
    else if (kind == "traffic") put<uint32_t>(buf, kTrafficCount, 1u << 29);  // 4 GiB of peers
    else if (kind == "string") put<uint32_t>(buf, kSpanCount + 12, 4000000000u);
    else if (kind == "role") put<int32_t>(buf, kFirstRole, 6);
    else if (kind == "category") put<int32_t>(buf, kFirstCategory, 9);
    else if (kind == "negative") put<int64_t>(buf, buf.size() - kDecisionBytes - 8, -4);
    else if (kind == "decisions") put<uint32_t>(buf, buf.size() - kDecisionBytes + 4, 1000u);
    else if (kind == "nan") put<double>(buf, buf.size() - 8, std::nan(""));
    else if (kind == "trailing") buf.insert(buf.end(), {1, 2, 3});
    StepRecords rec;
    rec.moe_blocks = {1, 3};
    decode_rank_records(sample(), rec);
    const StepRecords before = rec;
    QString msg;
    try {
      decode_rank_records(buf, rec);
    } catch (const std::runtime_error& e) {
      msg = QString::fromStdString(e.what());
    }
    QVERIFY2(msg.startsWith("corrupt step records from a rank: ") && msg.contains(expected), qPrintable(msg));
    QCOMPARE(rec.spans.size(), before.spans.size());  // nothing appended
    QCOMPARE(rec.traffic.size(), before.traffic.size());
    QCOMPARE(rec.routing.size(), before.routing.size());
    QCOMPARE(rec.decisions.size(), before.decisions.size());
  }
};

QTEST_APPLESS_MAIN(TestStepRecords)
#include "tst_step_records.moc"
