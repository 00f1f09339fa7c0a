// ctest-labels: mpi np=4 slow
// Distributed training against the single-process reference: a tiny MoE-GPT, a fixed global
// batch, 20 steps, on the launched ranks (CTest: 4 = 2 virtual nodes x 2; any other count
// works: mpirun -np 2|6|8 tst_dist_train) with each strategy and several routings.
// Every rank also trains the 1-rank reference in-process and compares per-step loss (1e-5
// relative) and its final parameters (dense ones and the experts it owns).
#include <QtTest>

#include <cmath>
#include <numeric>

#include "moebench/config/config_loader.h"
#include "moebench/dist/mpi_communicator.h"
#include "moebench/train/distributed.h"
#include "moebench/train/trainer.h"
#include "mpi_test_main.h"
#include "test_support.h"

using namespace moebench;

namespace {

std::vector<float> train_losses(Trainer& t) {
  std::vector<float> losses;
  TrainCallbacks cb;
  cb.on_step = [&](const StepStats& s) { losses.push_back(s.loss.total); };
  t.run(-1, cb);
  return losses;
}

}  // namespace

class TestDistTrain : public QObject {
  Q_OBJECT

 private slots:
  void matches_single_rank_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<QString>("routing");
    QTest::addColumn<int>("top_k");
    QTest::addColumn<int>("ep");
    QTest::newRow("expert_centric learned") << "expert_centric" << "learned" << 2 << 0;
    QTest::newRow("hier_a2a learned") << "hier_a2a" << "learned" << 2 << 0;
    QTest::newRow("expert_centric zipf") << "expert_centric" << "zipf:1.2" << 2 << 0;
    QTest::newRow("hier_a2a uniform") << "hier_a2a" << "uniform" << 2 << 0;
    QTest::newRow("expert_centric all tokens to expert 0") << "expert_centric" << "hot:0,1" << 1 << 0;
    QTest::newRow("hier_a2a all tokens to expert 0") << "hier_a2a" << "hot:0,1" << 1 << 0;
    QTest::newRow("expert_centric ep 2 (expert replicas)") << "expert_centric" << "learned" << 2 << 2;
  }
  void matches_single_rank() {
    QFETCH(QString, strategy);
    QFETCH(QString, routing);
    QFETCH(int, top_k);
    QFETCH(int, ep);
    auto world = MpiCommunicator::world();
    const int P = world->size();
    if (P == 1) QSKIP("needs more than one rank (run under mpirun)");
    if (ep > 0 && P % ep != 0) QSKIP("this row needs a rank count divisible by its ep");
    // 2 virtual nodes when the ranks split evenly; experts and batch scaled to the world.
    const int nodes = P % 2 == 0 ? 2 : 1, experts = std::lcm(4, P);
    const std::vector<std::string> sets = {
        "train.steps=20", "train.batch_size=" + std::to_string(2 * P), "train.eval_every=0",
        "cluster.nodes=" + std::to_string(nodes), "run.ranks=" + std::to_string(P), "run.threads=1",
        "moe.experts=" + std::to_string(experts), "moe.top_k=" + std::to_string(top_k),
        "parallel.ep=" + std::to_string(ep), "strategy.name=" + strategy.toStdString(),
        "moe.routing=" + routing.toStdString()};
    const Config cfg = load_config(test::tiny_config_path(), sets);
    QTemporaryDir ref_dir, dist_dir;

    Trainer ref(cfg, ref_dir.path().toStdString());
    const std::vector<float> expected = train_losses(ref);
    Trainer dist(cfg, dist_dir.path().toStdString() + "/r" + std::to_string(world->rank()), world.get());
    QVERIFY(dist.distributed());
    const std::vector<float> got = train_losses(dist);

    QCOMPARE(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i)
      QVERIFY2(std::abs(got[i] - expected[i]) <= 1e-5f * std::abs(expected[i]),
               qPrintable(QString("rank %1 step %2: loss %3 vs single-rank %4")
                              .arg(world->rank()).arg(i + 1).arg(got[i], 0, 'g', 9).arg(expected[i], 0, 'g', 9)));
    // Parameters: every tensor this rank holds (dense replicas and its own experts).
    const ParamArena& mine = dist.model().params();
    const ParamArena& all = ref.model().params();
    double worst = 0;
    std::string worst_name;
    for (size_t v = 0; v < mine.views().size(); ++v) {
      const ParamView& pv = mine.views()[v];
      const ParamView* rv = all.find(pv.name);
      QVERIFY2(rv, pv.name.c_str());
      for (size_t i = 0; i < pv.numel; ++i) {
        const double d = std::abs(mine.data()[pv.offset + i] - all.data()[rv->offset + i]);
        if (d > worst) worst = d, worst_name = pv.name;
      }
    }
    QVERIFY2(worst < 1e-4, qPrintable(QString("rank %1: %2 differs by %3").arg(world->rank())
                                          .arg(QString::fromStdString(worst_name)).arg(worst)));
  }

  void bad_layouts_are_reported() {
    auto world = MpiCommunicator::world();
    const int P = world->size();
    if (P != 4) QSKIP("written for 4 ranks");
    const Config odd_batch = load_config(test::tiny_config_path(), {"train.batch_size=6", "cluster.nodes=2", "run.ranks=4"});
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Trainer(odd_batch, "/tmp/unused", world.get()));
    const Config wrong_nodes = load_config(test::tiny_config_path(), {"cluster.nodes=3", "run.ranks=3"});
    try {
      Trainer t(wrong_nodes, "/tmp/unused", world.get());
      QFAIL("3 nodes over 4 launched ranks accepted");
    } catch (const std::exception& e) {
      QVERIFY2(QString(e.what()).contains("cluster.nodes"), e.what());
    }
  }
};

MOEBENCH_MPI_TEST_MAIN(TestDistTrain)
#include "tst_dist_train.moc"
