// ctest-labels: mpi np=4
// ProcessGroups over MpiCommunicator::world() with 4 ranks: the size of every group and which
// world ranks share it (all_gather of the world ranks inside each group), against hand-written
// Megatron layouts (rank = pp_rank * dp * tp + dp_rank * tp + tp_rank; EP = runs of ep DP ranks,
// or the TP group for Pipeline MoE).
// Every collective of a row runs before any check, so a failing rank never leaves the others
// waiting in a collective.
#include <QtTest>

#include <mpi.h>

#include "moebench/dist/mpi_communicator.h"
#include "moebench/dist/parallel_layout.h"
#include "moebench/dist/process_groups.h"
#include "test_support.h"
#include "mpi_test_main.h"

using namespace moebench;
using namespace Qt::StringLiterals;

namespace {
// "0,1|2,3" -> the group of `rank` ({0, 1} for rank 1).
QList<int> group_of(const QString& partition, int rank) {
  for (const QString& g : partition.split(u'|')) {
    QList<int> members;
    for (const QString& m : g.split(u',')) members.push_back(m.toInt());
    if (members.contains(rank)) return members;
  }
  return {};
}

struct Seen {
  int size = 0, rank = -1;
  QList<int> gathered;   // world ranks of the group, by group rank (all_gather)
  QList<int> mapped;     // world_rank(i) for every group rank i
  int sum = 0;           // all_reduce of the world ranks
};

Seen look_at(Communicator& c, int world_rank) {
  Seen s;
  s.size = c.size();
  s.rank = c.rank();
  std::vector<int32_t> all(c.size(), -1);
  const int32_t mine = world_rank;
  c.all_gather(&mine, all.data(), 1, DType::i32);
  s.gathered = QList<int>(all.begin(), all.end());
  for (int i = 0; i < c.size(); ++i) s.mapped.push_back(c.world_rank(i));
  int32_t sum = world_rank;
  c.all_reduce(&sum, 1, DType::i32);
  s.sum = sum;
  return s;
}
}  // namespace

class TestGroupsMpi : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { QCOMPARE(MpiRuntime::world_size(), 4); }

  void groups_data() {
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("ep");
    QTest::addColumn<bool>("experts_in_tp");
    QTest::addColumn<QString>("tp_groups");
    QTest::addColumn<QString>("dp_groups");
    QTest::addColumn<QString>("pp_groups");
    QTest::addColumn<QString>("ep_groups");
    QTest::addColumn<QString>("edp_groups");
    QTest::addColumn<QString>("describe");
    const QString singles = u"0|1|2|3"_s;
    QTest::newRow("dp 4") << 1 << 1 << 0 << false << singles << u"0,1,2,3"_s << singles << u"0,1,2,3"_s << singles
                          << u"world 4 = pp 1 x dp 4 x tp 1; ep 4, expert-dp 1"_s;
    QTest::newRow("dp 4, ep 2") << 1 << 1 << 2 << false << singles << u"0,1,2,3"_s << singles << u"0,1|2,3"_s
                                << u"0,2|1,3"_s << u"world 4 = pp 1 x dp 4 x tp 1; ep 2, expert-dp 2"_s;
    QTest::newRow("tp 2") << 2 << 1 << 0 << false << u"0,1|2,3"_s << u"0,2|1,3"_s << singles << u"0,2|1,3"_s << singles
                          << u"world 4 = pp 1 x dp 2 x tp 2; ep 2, expert-dp 1"_s;
    QTest::newRow("pp 2") << 1 << 2 << 0 << false << singles << u"0,1|2,3"_s << u"0,2|1,3"_s << u"0,1|2,3"_s << singles
                          << u"world 4 = pp 2 x dp 2 x tp 1; ep 2, expert-dp 1"_s;
    QTest::newRow("tp 2, pp 2") << 2 << 2 << 0 << false << u"0,1|2,3"_s << singles << u"0,2|1,3"_s << singles << singles
                                << u"world 4 = pp 2 x dp 1 x tp 2; ep 1, expert-dp 1"_s;
    QTest::newRow("pp 2, ep 1") << 1 << 2 << 1 << false << singles << u"0,1|2,3"_s << u"0,2|1,3"_s << singles << u"0,1|2,3"_s
                                << u"world 4 = pp 2 x dp 2 x tp 1; ep 1, expert-dp 2"_s;
    QTest::newRow("tp 2, experts in tp") << 2 << 1 << 0 << true << u"0,1|2,3"_s << u"0,2|1,3"_s << singles
                                         << u"0,1|2,3"_s << u"0,2|1,3"_s
                                         << u"world 4 = pp 1 x dp 2 x tp 2; ep 2 (the TP group), expert-dp 2"_s;
  }
  void groups() {
    QFETCH(int, tp);
    QFETCH(int, pp);
    QFETCH(int, ep);
    QFETCH(bool, experts_in_tp);
    QFETCH(QString, tp_groups);
    QFETCH(QString, dp_groups);
    QFETCH(QString, pp_groups);
    QFETCH(QString, ep_groups);
    QFETCH(QString, edp_groups);
    QFETCH(QString, describe);
    auto world = MpiCommunicator::world();
    const int me = world->rank();
    const ExpertGroups experts = experts_in_tp ? ExpertGroups::tensor_parallel : ExpertGroups::data_parallel;
    ProcessGroups g(*world, ParallelLayout(ParallelSizes{.world = 4, .tp = tp, .pp = pp, .ep = ep, .experts = experts,
                                                         .layers = pp}));
    // All collectives first (the same order on every rank), checks afterwards.
    const Seen seen[] = {look_at(g.tp(), me), look_at(g.dp(), me), look_at(g.pp(), me), look_at(g.ep(), me),
                         look_at(g.expert_dp(), me)};
    const QString partitions[] = {tp_groups, dp_groups, pp_groups, ep_groups, edp_groups};
    const char* names[] = {"tp", "dp", "pp", "ep", "expert-dp"};
    QCOMPARE(QString::fromStdString(g.describe()), describe);
    QCOMPARE(&g.world(), static_cast<Communicator*>(world.get()));
    for (int i = 0; i < 5; ++i) {
      const QList<int> expected = group_of(partitions[i], me);
      const QByteArray what = QByteArray(names[i]) + " group of world rank " + QByteArray::number(me);
      QVERIFY2(seen[i].size == expected.size(), what.constData());
      QVERIFY2(seen[i].gathered == expected, what.constData());
      QVERIFY2(seen[i].mapped == expected, what.constData());
      QVERIFY2(seen[i].rank == expected.indexOf(me), what.constData());
      int sum = 0;
      for (int r : expected) sum += r;
      QVERIFY2(seen[i].sum == sum, what.constData());
    }
    QCOMPARE(g.dp_size(), group_of(dp_groups, me).size());
    QCOMPARE(g.ep_size(), group_of(ep_groups, me).size());
  }

  void bad_sizes_throw_on_every_rank() {
    auto world = MpiCommunicator::world();
    auto groups_of = [&](ParallelSizes sizes) {
      sizes.world = world->size();
      return test::error_message<std::invalid_argument>([&] { ProcessGroups g(*world, ParallelLayout(sizes)); });
    };
    const QString msg = groups_of(ParallelSizes{.ep = 3});
    QVERIFY2(msg.contains(u"parallel.ep = 3 does not divide the data-parallel size 4"_s), qPrintable(msg));
    const QString msg2 = groups_of(ParallelSizes{.tp = 3});
    QVERIFY2(msg2.contains(u"world size 4 is not divisible"_s), qPrintable(msg2));
    const QString msg3 = test::error_message<std::invalid_argument>(
        [&] { ProcessGroups g(*world, ParallelLayout(ParallelSizes{.world = 2})); });
    QVERIFY2(msg3.contains(u"is for 2 ranks, the world has 4"_s), qPrintable(msg3));
  }
};

MOEBENCH_MPI_TEST_MAIN(TestGroupsMpi)
#include "tst_groups_mpi.moc"
