// ctest-labels: mpi np=4 np=8 slow
// Tensor, data and expert parallelism together against the single-process reference: each
// row names a layout (tp x dp, a strategy) of W ranks and runs where W ranks are launched
// (CTest runs the suite on 4 and on 8 ranks): 20 steps of a tiny MoE-GPT, per-step loss within
// 1e-5 relative of the 1-rank run, final parameters (tensor-parallel slices against the same
// elements of the whole tensors) within 1e-4. A checkpoint written by a tensor-parallel run
// resumes on one rank.
#include <QtTest>

#include "moebench/config/config_loader.h"
#include "moebench/dist/mpi_communicator.h"
#include "moebench/train/checkpoint.h"
#include "moebench/train/distributed.h"
#include "moebench/train/trainer.h"
#include "equivalence_support.h"
#include "mpi_test_main.h"
#include "test_support.h"

using namespace moebench;

namespace {

// The layout's config: 8 heads of 4 (tp up to 8), 2 MoE blocks with 8 experts, a global batch of
// 2 sequences per data-parallel rank.
Config layout_config(int ranks, int tp, const std::string& strategy, int nodes, const std::string& routing,
                     int steps = 20) {
  const int dp = ranks / tp;
  return load_config(test::tiny_config_path(),
                     {"train.steps=" + std::to_string(steps), "train.batch_size=" + std::to_string(2 * dp),
                      "train.eval_every=0", "run.threads=1", "run.ranks=" + std::to_string(ranks),
                      "cluster.nodes=" + std::to_string(nodes), "model.heads=8", "moe.moe_layers=[0, 1]",
                      "moe.experts=8", "parallel.tp=" + std::to_string(tp), "strategy.name=" + strategy,
                      "moe.routing=" + routing});
}

}  // namespace

class TestParallelLayouts : public QObject {
  Q_OBJECT

 private slots:
  void matches_single_rank_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("tp");
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("nodes");
    QTest::addColumn<QString>("routing");
    QTest::newRow("tp2 x dp2 expert_centric") << 4 << 2 << "expert_centric" << 1 << "learned";
    QTest::newRow("tp2 x dp2 hier_a2a, 2 nodes") << 4 << 2 << "hier_a2a" << 2 << "learned";
    QTest::newRow("tp2 x dp2 expert_centric zipf") << 4 << 2 << "expert_centric" << 1 << "zipf:1.2";
    QTest::newRow("tp4 ppmoe") << 4 << 4 << "ppmoe" << 1 << "learned";
    QTest::newRow("tp2 x dp2 ppmoe") << 4 << 2 << "ppmoe" << 1 << "learned";
    QTest::newRow("tp4 ppmoe, all tokens to expert 0") << 4 << 4 << "ppmoe" << 1 << "hot:0,1";
    QTest::newRow("tp2 x dp4 expert_centric, 2 nodes") << 8 << 2 << "expert_centric" << 2 << "learned";
    QTest::newRow("tp4 x dp2 ppmoe, 2 nodes") << 8 << 4 << "ppmoe" << 2 << "learned";
    QTest::newRow("tp8 ppmoe") << 8 << 8 << "ppmoe" << 1 << "learned";
  }
  void matches_single_rank() {
    QFETCH(int, ranks);
    QFETCH(int, tp);
    QFETCH(QString, strategy);
    QFETCH(int, nodes);
    QFETCH(QString, routing);
    auto world = MpiCommunicator::world();
    if (world->size() != ranks) QSKIP("a layout of another rank count (CTest runs it in the other launch)");
    const Config cfg = layout_config(ranks, tp, strategy.toStdString(), nodes, routing.toStdString());
    QTemporaryDir ref_dir, dist_dir;
    Trainer ref(cfg, ref_dir.path().toStdString());
    const std::vector<float> expected = test::train_losses(ref);
    Trainer dist(cfg, dist_dir.path().toStdString(), world.get());
    QCOMPARE(dist.distributed()->tp_shard().size, tp);
    const std::vector<float> got = test::train_losses(dist);
    const QString loss_diff = test::compare_losses(got, expected, world->rank());
    const QString param_diff = test::compare_params(dist.model().params(), ref.model().params(), world->rank());
    QVERIFY2(loss_diff.isEmpty(), qPrintable(loss_diff));
    QVERIFY2(param_diff.isEmpty(), qPrintable(param_diff));
  }

  // ppmoe's experts live in the TP group: rank r of a tp = 4 group holds experts [2r, 2r + 2)
  // of 8, and the model's attention holds heads [2r, 2r + 2) of 8.
  void ppmoe_places_experts_in_the_tensor_parallel_group() {
    auto world = MpiCommunicator::world();
    if (world->size() != 4) QSKIP("a 4-rank layout (CTest runs it in the 4-rank launch)");
    QTemporaryDir dir;
    Trainer t(layout_config(4, 4, "ppmoe", 1, "learned", 1), dir.path().toStdString(), world.get());
    const int r = world->rank();
    QCOMPARE(t.distributed()->groups().tp().rank(), r);
    QCOMPARE(t.distributed()->groups().ep().size(), 4);
    QCOMPARE(t.distributed()->groups().expert_dp().size(), 1);
    const ParamArena& p = t.model().params();
    for (int e = 0; e < 8; ++e)
      QCOMPARE(p.find("blocks.1.moe.experts." + std::to_string(e) + ".w1") != nullptr, e / 2 == r);
    const ParamView* qkv = p.find("blocks.0.attn.qkv.weight");
    QVERIFY(qkv);
    QCOMPARE(qkv->shape, (std::vector<int64_t>{3 * 8, 32}));  // q, k, v rows of two 4-wide heads
    QCOMPARE(qkv->full_shape(), (std::vector<int64_t>{96, 32}));
    QCOMPARE(qkv->slice.runs.front().first, (size_t)(r * 8 * 32));
  }

  // A tp = 2 x dp = 2 ppmoe run checkpoints the whole model: one rank resumes from it and holds
  // the parameters the distributed run ended with.
  void tensor_parallel_checkpoint_resumes_on_one_rank() {
    auto world = MpiCommunicator::world();
    if (world->size() != 4) QSKIP("a 4-rank layout (CTest runs it in the 4-rank launch)");
    Communicator* group = world.get();
    // Rank 0's folder, shared with the others by broadcast.
    QTemporaryDir dir;
    std::string path = dir.path().toStdString();
    std::vector<char> buf(512, 0);
    std::copy(path.begin(), path.end(), buf.begin());
    group->broadcast(buf.data(), buf.size(), DType::u8, 0);
    path = buf.data();
    const Config cfg = layout_config(4, 2, "ppmoe", 1, "learned", 3);
    Trainer dist(cfg, path, group);
    dist.run(-1);
    group->barrier();
    Trainer single(cfg, dir.path().toStdString() + "/single");
    QCOMPARE(single.resume(path), 3L);
    const QString diff = test::compare_params(dist.model().params(), single.model().params(), world->rank(), 1e-9);
    group->barrier();  // group rank 0's folder outlives every member's reading
    QVERIFY2(diff.isEmpty(), qPrintable(diff));
  }
};

MOEBENCH_MPI_TEST_MAIN(TestParallelLayouts)
#include "tst_parallel_layouts.moc"
