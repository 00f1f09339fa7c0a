// ctest-labels: unit
// ParallelLayout (dist/parallel_layout.h) against hand-written layouts: every rank's coordinates
// and groups of pp 2 x dp 2 x tp 2, expert groups smaller than DP, Pipeline MoE's experts in the
// TP group, even and uneven stage bounds, the rules bad sizes break (by message), 1,024 ranks on
// chosen ranks, and the layout a config describes (config/config_layout.h).
#include <QtTest>

#include <set>

#include "moebench/config/config.h"
#include "moebench/config/config_layout.h"
#include "moebench/dist/parallel_layout.h"
#include "test_support.h"

using namespace moebench;
using namespace Qt::StringLiterals;

namespace {
using Group = std::vector<int>;

// One rank as written by hand: its coordinates and the members of each of its groups.
struct Expected {
  int rank;
  RankCoords at;
  Group tp, dp, pp, ep, replicas;
};

void check_rank(const ParallelLayout& L, const Expected& e) {
  const QByteArray what = "rank " + QByteArray::number(e.rank) + " of " + QByteArray::fromStdString(L.describe());
  const RankCoords c = L.coords(e.rank);
  QVERIFY2(c.tp == e.at.tp && c.dp == e.at.dp && c.pp == e.at.pp, what.constData());
  QVERIFY2(c.ep == e.at.ep && c.replica == e.at.replica, what.constData());
  QVERIFY2(L.world_rank(c.pp, c.dp, c.tp) == e.rank, what.constData());
  QVERIFY2(L.tp_group(e.rank) == e.tp, what.constData());
  QVERIFY2(L.dp_group(e.rank) == e.dp, what.constData());
  QVERIFY2(L.pp_group(e.rank) == e.pp, what.constData());
  QVERIFY2(L.ep_group(e.rank) == e.ep, what.constData());
  QVERIFY2(L.replica_group(e.rank) == e.replicas, what.constData());
}

QString error_of(const ParallelSizes& s) {
  return test::error_message<std::invalid_argument>([&] { ParallelLayout layout(s); });
}
}  // namespace

class TestParallelLayout : public QObject {
  Q_OBJECT

 private slots:
  // world 8 = pp 2 x dp 2 x tp 2, experts over the whole DP group (ep 0 = dp = 2).
  void pp2_dp2_tp2_every_rank() {
    const ParallelLayout L(ParallelSizes{.world = 8, .tp = 2, .pp = 2, .layers = 5});
    QCOMPARE(L.dp(), 2);
    QCOMPARE(L.ep(), 2);
    QCOMPARE(L.replicas(), 1);
    QCOMPARE(L.describe(), std::string("world 8 = pp 2 x dp 2 x tp 2; ep 2, expert-dp 1"));
    // rank {tp, dp, pp, ep, replica}  tp group  dp group  pp group  ep group  replicas
    const Expected all[] = {
        {0, {0, 0, 0, 0, 0}, {0, 1}, {0, 2}, {0, 4}, {0, 2}, {0}},
        {1, {1, 0, 0, 0, 0}, {0, 1}, {1, 3}, {1, 5}, {1, 3}, {1}},
        {2, {0, 1, 0, 1, 0}, {2, 3}, {0, 2}, {2, 6}, {0, 2}, {2}},
        {3, {1, 1, 0, 1, 0}, {2, 3}, {1, 3}, {3, 7}, {1, 3}, {3}},
        {4, {0, 0, 1, 0, 0}, {4, 5}, {4, 6}, {0, 4}, {4, 6}, {4}},
        {5, {1, 0, 1, 0, 0}, {4, 5}, {5, 7}, {1, 5}, {5, 7}, {5}},
        {6, {0, 1, 1, 1, 0}, {6, 7}, {4, 6}, {2, 6}, {4, 6}, {6}},
        {7, {1, 1, 1, 1, 0}, {6, 7}, {5, 7}, {3, 7}, {5, 7}, {7}},
    };
    for (const Expected& e : all) check_rank(L, e);
    QCOMPARE(L.ep_groups(), (std::vector<Group>{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
    QCOMPARE(L.stage_bounds(), (std::vector<int>{0, 3, 5}));  // 5 blocks: the first stage takes the extra one
    QCOMPARE(L.stage_blocks(1).first, 3);
    QCOMPARE(L.stage_blocks(1).end, 5);
  }

  // world 8 = dp 4 x tp 2 with ep 2: two EP groups per TP rank, each expert held twice.
  void experts_over_part_of_dp() {
    const ParallelLayout L(ParallelSizes{.world = 8, .tp = 2, .ep = 2, .experts_per_block = {4, 0, 6}});
    QCOMPARE(L.dp(), 4);
    QCOMPARE(L.ep(), 2);
    QCOMPARE(L.replicas(), 2);
    QCOMPARE(L.experts_in_tp(), false);
    QCOMPARE(L.describe(), std::string("world 8 = pp 1 x dp 4 x tp 2; ep 2, expert-dp 2"));
    const Expected all[] = {
        {0, {0, 0, 0, 0, 0}, {0, 1}, {0, 2, 4, 6}, {0}, {0, 2}, {0, 4}},
        {1, {1, 0, 0, 0, 0}, {0, 1}, {1, 3, 5, 7}, {1}, {1, 3}, {1, 5}},
        {2, {0, 1, 0, 1, 0}, {2, 3}, {0, 2, 4, 6}, {2}, {0, 2}, {2, 6}},
        {3, {1, 1, 0, 1, 0}, {2, 3}, {1, 3, 5, 7}, {3}, {1, 3}, {3, 7}},
        {4, {0, 2, 0, 0, 1}, {4, 5}, {0, 2, 4, 6}, {4}, {4, 6}, {0, 4}},
        {5, {1, 2, 0, 0, 1}, {4, 5}, {1, 3, 5, 7}, {5}, {5, 7}, {1, 5}},
        {6, {0, 3, 0, 1, 1}, {6, 7}, {0, 2, 4, 6}, {6}, {4, 6}, {2, 6}},
        {7, {1, 3, 0, 1, 1}, {6, 7}, {1, 3, 5, 7}, {7}, {5, 7}, {3, 7}},
    };
    for (const Expected& e : all) check_rank(L, e);
    // By stage, then TP rank, then DP rank.
    QCOMPARE(L.ep_groups(), (std::vector<Group>{{0, 2}, {4, 6}, {1, 3}, {5, 7}}));
    // parallel.dp given explicitly: the same layout.
    QCOMPARE(ParallelLayout(ParallelSizes{.world = 8, .tp = 2, .dp = 4, .ep = 2}).replica_group(6), (Group{2, 6}));
  }

  // Pipeline MoE: the EP group is the TP group, the replicas are the DP group.
  void experts_in_the_tensor_parallel_group() {
    const ParallelLayout L(ParallelSizes{.world = 8, .tp = 2, .pp = 2, .experts = ExpertGroups::tensor_parallel,
                                         .experts_per_block = {4, 6}, .layers = 4});
    QCOMPARE(L.ep(), 2);
    QCOMPARE(L.replicas(), 2);
    QCOMPARE(L.experts_in_tp(), true);
    QCOMPARE(L.describe(), std::string("world 8 = pp 2 x dp 2 x tp 2; ep 2 (the TP group), expert-dp 2"));
    const Expected all[] = {
        {0, {0, 0, 0, 0, 0}, {0, 1}, {0, 2}, {0, 4}, {0, 1}, {0, 2}},
        {3, {1, 1, 0, 1, 1}, {2, 3}, {1, 3}, {3, 7}, {2, 3}, {1, 3}},
        {5, {1, 0, 1, 1, 0}, {4, 5}, {5, 7}, {1, 5}, {4, 5}, {5, 7}},
        {6, {0, 1, 1, 0, 1}, {6, 7}, {4, 6}, {2, 6}, {6, 7}, {4, 6}},
    };
    for (const Expected& e : all) check_rank(L, e);
    QCOMPARE(L.ep_groups(), (std::vector<Group>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
    // ep may name the TP size; anything else is refused, and the experts divide over tp.
    QCOMPARE(ParallelLayout(ParallelSizes{.world = 8, .tp = 2, .ep = 2, .experts = ExpertGroups::tensor_parallel}).ep(), 2);
    QCOMPARE(error_of(ParallelSizes{.world = 8, .tp = 2, .ep = 4, .experts = ExpertGroups::tensor_parallel}),
             u"parallel.ep = 4 must be 0 or parallel.tp = 2 when the experts live inside the tensor-parallel group"_s);
    QVERIFY(error_of(ParallelSizes{.world = 8, .tp = 2, .experts = ExpertGroups::tensor_parallel,
                                   .experts_per_block = {3}})
                .startsWith(u"parallel.tp = 2 does not divide the 3 experts of MoE block entry 0"_s));
  }

  void stage_bounds_data() {
    QTest::addColumn<int>("layers");
    QTest::addColumn<int>("pp");
    QTest::addColumn<QList<int>>("stage_layers");
    QTest::addColumn<QList<int>>("bounds");
    QTest::addColumn<QString>("error");  // empty = valid
    QTest::newRow("even") << 8 << 4 << QList<int>{} << QList<int>{0, 2, 4, 6, 8} << QString();
    QTest::newRow("the first stages take the rest") << 7 << 3 << QList<int>{} << QList<int>{0, 3, 5, 7} << QString();
    QTest::newRow("one stage") << 3 << 1 << QList<int>{} << QList<int>{0, 3} << QString();
    QTest::newRow("uneven stage_layers") << 6 << 2 << QList<int>{1, 5} << QList<int>{0, 1, 6} << QString();
    QTest::newRow("three uneven stages") << 9 << 3 << QList<int>{4, 1, 4} << QList<int>{0, 4, 5, 9} << QString();
    QTest::newRow("more stages than blocks")
        << 2 << 3 << QList<int>{} << QList<int>{} << u"3 pipeline stages over 2 blocks (model.layers): every stage needs a block"_s;
    QTest::newRow("short sum") << 6 << 2 << QList<int>{2, 3} << QList<int>{}
                               << u"parallel.stage_layers sums to 5, not model.layers = 6"_s;
    QTest::newRow("empty stage") << 6 << 2 << QList<int>{6, 0} << QList<int>{}
                                 << u"parallel.stage_layers: every stage needs a block, got 0"_s;
    QTest::newRow("entry count") << 6 << 2 << QList<int>{6} << QList<int>{}
                                 << u"parallel.stage_layers needs one entry per pipeline stage (parallel.pp = 2), got 1"_s;
  }
  void stage_bounds() {
    QFETCH(int, layers);
    QFETCH(int, pp);
    QFETCH(QList<int>, stage_layers);
    QFETCH(QList<int>, bounds);
    QFETCH(QString, error);
    const ParallelSizes s{.world = pp, .pp = pp, .layers = layers,
                          .stage_layers = std::vector<int>(stage_layers.begin(), stage_layers.end())};
    if (!error.isEmpty()) {
      QCOMPARE(error_of(s), error);
      return;
    }
    const ParallelLayout L(s);
    QCOMPARE(L.stage_bounds(), std::vector<int>(bounds.begin(), bounds.end()));
    for (int st = 0; st < pp; ++st) {
      QCOMPARE(L.stage_blocks(st).first, bounds[st]);
      QCOMPARE(L.stage_blocks(st).end, bounds[st + 1]);
    }
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, L.stage_blocks(pp));
  }

  // The rules of the sizes, each named by its message (ProcessGroups and every reader of a
  // config's layout see these).
  void bad_sizes_data() {
    QTest::addColumn<int>("world");
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("dp");
    QTest::addColumn<int>("ep");
    QTest::addColumn<QList<int>>("experts");
    QTest::addColumn<QString>("error");  // empty = valid
    QTest::newRow("all dp") << 4 << 1 << 1 << 0 << 0 << QList<int>{8} << QString();
    QTest::newRow("single rank") << 1 << 1 << 1 << 0 << 0 << QList<int>{8, 8} << QString();
    QTest::newRow("ep 2 of dp 4") << 4 << 1 << 1 << 0 << 2 << QList<int>{8} << QString();
    QTest::newRow("tp 2 pp 2 dp 2") << 8 << 2 << 2 << 0 << 0 << QList<int>{4} << QString();
    QTest::newRow("dp given") << 8 << 2 << 2 << 2 << 0 << QList<int>{4} << QString();
    QTest::newRow("pr-moe experts") << 4 << 1 << 1 << 0 << 2 << QList<int>{32, 64} << QString();
    QTest::newRow("dense entries skipped") << 4 << 1 << 1 << 0 << 0 << QList<int>{0, 8, 0} << QString();
    QTest::newRow("empty world") << 0 << 1 << 1 << 0 << 0 << QList<int>{} << u"the world must hold at least 1 rank (got 0)"_s;
    QTest::newRow("tp x pp does not divide world")
        << 6 << 2 << 2 << 0 << 0 << QList<int>{} << u"the world size 6 is not divisible by parallel.tp x parallel.pp = 2 x 2 = 4"_s;
    QTest::newRow("dp does not match")
        << 8 << 2 << 1 << 3 << 0 << QList<int>{}
        << u"parallel.pp x parallel.dp x parallel.tp = 1 x 3 x 2 does not match the world of 8 ranks"_s;
    QTest::newRow("ep does not divide dp")
        << 4 << 1 << 1 << 0 << 3 << QList<int>{6} << u"parallel.ep = 3 does not divide the data-parallel size 4"_s;
    QTest::newRow("ep larger than dp")
        << 4 << 2 << 1 << 0 << 4 << QList<int>{8} << u"parallel.ep = 4 does not divide the data-parallel size 2"_s;
    QTest::newRow("experts not divisible by ep")
        << 4 << 1 << 1 << 0 << 0 << QList<int>{8, 6}
        << u"parallel.ep = 4 does not divide the 6 experts of MoE block entry 1 (every expert-parallel rank must hold "
           "the same number of experts)"_s;
    QTest::newRow("tp zero") << 4 << 0 << 1 << 0 << 0 << QList<int>{} << u"parallel.tp = 0 must be at least 1"_s;
    QTest::newRow("pp negative") << 4 << 1 << -1 << 0 << 0 << QList<int>{} << u"parallel.pp = -1 must be at least 1"_s;
    QTest::newRow("dp negative")
        << 4 << 1 << 1 << -1 << 0 << QList<int>{} << u"parallel.dp = -1 must be 0 (world / (tp x pp)) or positive"_s;
    QTest::newRow("ep negative")
        << 4 << 1 << 1 << 0 << -2 << QList<int>{} << u"parallel.ep = -2 must be 0 (the whole data-parallel group) or positive"_s;
  }
  void bad_sizes() {
    QFETCH(int, world);
    QFETCH(int, tp);
    QFETCH(int, pp);
    QFETCH(int, dp);
    QFETCH(int, ep);
    QFETCH(QList<int>, experts);
    QFETCH(QString, error);
    const ParallelSizes s{.world = world, .tp = tp, .pp = pp, .dp = dp, .ep = ep,
                          .experts_per_block = std::vector<int>(experts.begin(), experts.end()), .layers = std::max(1, pp)};
    QCOMPARE(error_of(s), error.isEmpty() ? u"<no exception>"_s : error);
  }

  void ranks_outside_the_world_are_refused() {
    const ParallelLayout L(ParallelSizes{.world = 4, .tp = 2});
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, L.coords(4));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, L.ep_group(-1));
  }

  // 1,024 ranks = pp 4 x dp 32 x tp 8 with EP groups of 8: rank = pp * 256 + dp * 8 + tp.
  void a_thousand_ranks() {
    const ParallelLayout L(ParallelSizes{.world = 1024, .tp = 8, .pp = 4, .ep = 8, .experts_per_block = {64, 64},
                                         .layers = 30});
    QCOMPARE(L.dp(), 32);
    QCOMPARE(L.replicas(), 4);
    QCOMPARE(L.describe(), std::string("world 1024 = pp 4 x dp 32 x tp 8; ep 8, expert-dp 4"));
    QCOMPARE(L.stage_bounds(), (std::vector<int>{0, 8, 16, 23, 30}));
    const Expected chosen[] = {
        {0, {0, 0, 0, 0, 0}, {0, 1, 2, 3, 4, 5, 6, 7},
         {0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120,
          128, 136, 144, 152, 160, 168, 176, 184, 192, 200, 208, 216, 224, 232, 240, 248},
         {0, 256, 512, 768}, {0, 8, 16, 24, 32, 40, 48, 56}, {0, 64, 128, 192}},
        // 605 = 2 * 256 + 11 * 8 + 5: stage 2, DP rank 11 (EP index 3 of the second EP group), TP rank 5.
        {605, {5, 11, 2, 3, 1}, {600, 601, 602, 603, 604, 605, 606, 607},
         {517, 525, 533, 541, 549, 557, 565, 573, 581, 589, 597, 605, 613, 621, 629, 637,
          645, 653, 661, 669, 677, 685, 693, 701, 709, 717, 725, 733, 741, 749, 757, 765},
         {93, 349, 605, 861}, {581, 589, 597, 605, 613, 621, 629, 637}, {541, 605, 669, 733}},
        {1023, {7, 31, 3, 7, 3}, {1016, 1017, 1018, 1019, 1020, 1021, 1022, 1023},
         {775, 783, 791, 799, 807, 815, 823, 831, 839, 847, 855, 863, 871, 879, 887, 895,
          903, 911, 919, 927, 935, 943, 951, 959, 967, 975, 983, 991, 999, 1007, 1015, 1023},
         {255, 511, 767, 1023}, {967, 975, 983, 991, 999, 1007, 1015, 1023}, {831, 895, 959, 1023}},
    };
    for (const Expected& e : chosen) check_rank(L, e);
    // The EP groups split the world: 128 groups of 8, each rank in exactly one, and every member
    // of a group sees that same group.
    const std::vector<Group> groups = L.ep_groups();
    QCOMPARE(groups.size(), size_t(128));
    std::set<int> seen;
    for (const Group& g : groups) {
      QCOMPARE(g.size(), size_t(8));
      for (int r : g) {
        QVERIFY2(seen.insert(r).second, qPrintable(u"rank %1 in two EP groups"_s.arg(r)));
        QVERIFY2(L.ep_group(r) == g, qPrintable(u"rank %1 sees another EP group"_s.arg(r)));
      }
    }
    QCOMPARE(seen.size(), size_t(1024));
  }

  // The layout a config describes: the [parallel] sizes over run.ranks, the model's blocks over
  // the stages, and ppmoe's experts in the TP group.
  void layout_of_a_config() {
    Config c;
    c.run.ranks = 16;
    c.parallel.tp = 2;
    c.parallel.pp = 2;
    c.parallel.ep = 2;
    c.parallel.stage_layers = {3, 1};
    c.moe.moe_layers = {1, 3};
    c.moe.experts = {4, 8};
    ParallelLayout L = layout_of(c);
    QCOMPARE(L.describe(), std::string("world 16 = pp 2 x dp 4 x tp 2; ep 2, expert-dp 2"));
    QCOMPARE(L.stage_bounds(), (std::vector<int>{0, 3, 4}));
    QCOMPARE(expert_groups_of(c), ExpertGroups::data_parallel);
    c.strategy.name = "ppmoe";
    c.parallel.ep = 0;
    QCOMPARE(expert_groups_of(c), ExpertGroups::tensor_parallel);
    L = layout_of(c);
    QCOMPARE(L.ep_group(13), (Group{12, 13}));
    QCOMPARE(L.replica_group(13), (Group{9, 11, 13, 15}));
    c.moe.experts = {4, 3};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, layout_of(c));
  }
};

QTEST_APPLESS_MAIN(TestParallelLayout)
#include "tst_parallel_layout.moc"
