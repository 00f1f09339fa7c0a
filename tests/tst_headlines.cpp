// ctest-labels: unit
// experiments/headlines.py, the verdict every experiment's headline table prints: within +-25 % of
// the paper's value, outside, or the wrong direction (the predicted value on the other side of the
// headline's neutral value, or on it), "not attempted" for a "-"; exit 1 only on a wrong
// direction, naming those headlines; a malformed line is an error naming it.
#include <QtTest>

#include <QProcess>

using namespace Qt::StringLiterals;

namespace {

struct Result {
  int code = -1;
  QString out;
};

Result headlines(const QByteArray& rows) {
  QProcess p;
  p.start(u"python3"_s, {QStringLiteral(MOEBENCH_SOURCE_DIR "/experiments/headlines.py"), u"test"_s});
  p.write(rows);
  p.closeWriteChannel();
  p.waitForFinished(60000);
  return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()) + QString::fromUtf8(p.readAllStandardError())};
}

// The verdict printed on the line of headline `name`.
QString verdict_of(const QString& out, const QString& name) {
  for (const QString& line : out.split(u'\n'))
    if (line.startsWith(name + u' ')) return line.section(u"  "_s, -1).trimmed();
  return {};
}

}  // namespace

class TestHeadlines : public QObject {
  Q_OBJECT
 private slots:
  void verdicts() {
    const Result r = headlines(
        "at_edge\t2.0\t2.5\t1\n"          // +25 %: within
        "just_out\t2.0\t2.51\t1\n"        // beyond 25 %
        "below\t2.0\t1.4\t1\n"            // 30 % low, still a speedup: outside
        "slower\t1.4\t0.9\t1\n"           // a speedup predicted as a slowdown
        "neutral\t1.4\t1.0\t1\n"          // no effect predicted: not the paper's direction
        "loss\t0.8\t0.7\t1\n"             // a slowdown both ways, 12.5 % off
        "gain_pct\t18.2\t-3\t0\n"         // a gain in per cent predicted as a loss
        "missing\t5.72\t-\t1\n");
    QCOMPARE(r.code, 1);
    QCOMPARE(verdict_of(r.out, u"at_edge"_s), u"within"_s);
    QCOMPARE(verdict_of(r.out, u"just_out"_s), u"outside"_s);
    QCOMPARE(verdict_of(r.out, u"below"_s), u"outside"_s);
    QCOMPARE(verdict_of(r.out, u"slower"_s), u"wrong direction"_s);
    QCOMPARE(verdict_of(r.out, u"neutral"_s), u"wrong direction"_s);
    QCOMPARE(verdict_of(r.out, u"loss"_s), u"within"_s);
    QCOMPARE(verdict_of(r.out, u"gain_pct"_s), u"wrong direction"_s);
    QCOMPARE(verdict_of(r.out, u"missing"_s), u"not attempted"_s);
    QVERIFY2(r.out.contains(u"headlines: within 2, outside 2, wrong direction 3, not attempted 1"_s), qPrintable(r.out));
    QVERIFY2(r.out.contains(u"\nwrong direction: slower; neutral; gain_pct\n"_s), qPrintable(r.out));
  }

  void no_wrong_direction_exits_0() {
    const Result r = headlines("a\t1.31\t2.52\t1\nb\t1.63\t1.69\t1\nc\t9\t-\t1\n");
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains(u"within 1, outside 1, wrong direction 0, not attempted 1"_s));
    QVERIFY(!r.out.contains(u"wrong direction:"_s));
  }

  void a_malformed_line_is_named() {
    Result r = headlines("a\t1.31\t2.52\n");
    QVERIFY(r.code != 0);
    QVERIFY2(r.out.contains(u"line 1: want 4 tab-separated fields"_s), qPrintable(r.out));
    r = headlines("a\t1.31\tfast\t1\n");
    QVERIFY(r.code != 0);
    QVERIFY2(r.out.contains(u"line 1:"_s) && r.out.contains(u"fast"_s), qPrintable(r.out));
  }
};

QTEST_APPLESS_MAIN(TestHeadlines)
#include "tst_headlines.moc"
