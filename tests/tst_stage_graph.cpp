// ctest-labels: mpi np=4
// The step graph a rank executed (train/rank_step.h: the step builder's tasks with the rank's
// actions) against the step graph built for the same rank without buffers (train/step_graph.h,
// what `simulate` and `plan --graph` replay): for dp, tp x dp (with and without the
// vocabulary-parallel head), pp (gpipe and 1f1b) x dp, zero3 and the partitioned embedding, and
// around every strategy's MoE blocks, every task outside the MoE blocks — the stages' layers, the
// pipeline's transfers, the gradient buckets, ZeRO-3's gathers, the tail's reductions, the norm,
// the loss and the optimizer — is the same task in the same order: name, role, category, layer,
// micro-batch and cost; Janus prefetch's iteration start included. With one micro-batch per step the MoE blocks' own tasks are compared
// too: the graph is built from the routing the run took (every rank's kept tokens per expert, as
// the run store records them and plan/trace_routing.h replays them). With several micro-batches
// the built graph splits the step's rows evenly over them, the run by what each micro-batch
// routed: there the MoE passes are compared block by block in tst_exchange_graph.
#include <QtTest>

#include <map>
#include <set>

#include "moebench/config/config_loader.h"
#include "moebench/dist/mpi_communicator.h"
#include "moebench/model/stage_graph.h"
#include "moebench/train/step_graph.h"
#include "moebench/train/trainer.h"
#include "equivalence_support.h"
#include "mpi_test_main.h"
#include "test_support.h"

using namespace moebench;

namespace {

std::vector<std::string> split_sets(const QString& s) {
  std::vector<std::string> out;
  for (const QString& part : s.split(';', Qt::SkipEmptyParts)) out.push_back(part.toStdString());
  return out;
}

// The tasks outside the MoE blocks, in order.
std::vector<GraphTask> chain_tasks(const TaskGraph& g) {
  static const std::set<std::string> names = [] {
    std::set<std::string> n = {"grad.allreduce", "grad.reduce_scatter", "dense.allgather", "pp.forward", "pp.backward",
                               "pp.allgather", "tp.partial_allreduce", "pp.tied_grad", "expert.allreduce", "grad.norm",
                               "grad.norm.tp", "grad.norm.ep", "grad.norm.dp", "grad.norm.pp", "grad.clip", "loss.pp",
                               "loss.dp", "optimizer", "sparse.load", "sparse.writeback", "sparse.update"};
    for (int op = 0; op <= (int)StageOp::stage_input_grad; ++op) n.insert(stage_op_name((StageOp)op));
    return n;
  }();
  std::vector<GraphTask> out;
  for (const GraphTask& t : g.tasks())
    if (names.count(t.name)) {
      GraphTask c = t;
      c.deps.clear();
      c.action = nullptr;
      out.push_back(std::move(c));
    }
  return out;
}

// Every task, in order.
std::vector<GraphTask> all_tasks(const TaskGraph& g) {
  std::vector<GraphTask> out;
  for (const GraphTask& t : g.tasks()) {
    GraphTask c = t;
    c.deps.clear();
    c.action = nullptr;
    out.push_back(std::move(c));
  }
  return out;
}

// The routing every rank took in its last step (the kept tokens of each of its experts' rows,
// summed over the world: each rank contributes its own row).
StepRouting taken_routing(const Config& cfg, const std::map<int, std::vector<int>>& mine, Communicator& world) {
  StepRouting r;
  const int W = world.size(), me = world.rank();
  for (size_t i = 0; i < cfg.moe.moe_layers.size(); ++i) {
    const int l = cfg.moe.moe_layers[i], E = cfg.moe.experts.at(i);
    std::vector<long> rows((size_t)W * E, 0);
    if (auto it = mine.find(l); it != mine.end() && !it->second.empty())
      for (int e = 0; e < E; ++e) rows[(size_t)me * E + e] = it->second.at((size_t)e);
    world.all_reduce(rows.data(), rows.size(), DType::i64);
    r.rows[l] = std::move(rows);
  }
  return r;
}

QString describe(const GraphTask& t) {
  return QString("%1 (role %2, layer %3, chunk %4, %5 flops, %6 bytes)")
      .arg(t.name.c_str()).arg(stream_role_name(t.role)).arg(t.layer).arg(t.chunk).arg(t.cost.flops)
      .arg((qulonglong)t.cost.bytes_sent());
}

QString first_difference(const std::vector<GraphTask>& ran, const std::vector<GraphTask>& built) {
  for (size_t i = 0; i < std::min(ran.size(), built.size()); ++i) {
    const GraphTask &a = ran[i], &b = built[i];
    if (a.name != b.name || a.role != b.role || a.category != b.category || a.layer != b.layer ||
        a.chunk != b.chunk || !(a.cost == b.cost) || a.priority != b.priority)
      return QString("task %1: ran %2, built %3").arg(i).arg(describe(a)).arg(describe(b));
  }
  if (ran.size() != built.size()) return QString("ran %1 tasks, built %2").arg(ran.size()).arg(built.size());
  return {};
}

}  // namespace

class TestStageGraph : public QObject {
  Q_OBJECT
 private slots:
  void executed_equals_built_data() {
    QTest::addColumn<QString>("sets");
    QTest::newRow("dp 4") << "";
    QTest::newRow("dp 4, capacity") << "moe.capacity_factor=1.0";
    QTest::newRow("tp 2 x dp 2") << "parallel.tp=2";
    QTest::newRow("tp 2 x dp 2, vocabulary-parallel") << "parallel.tp=2;parallel.vocab_parallel=true";
    QTest::newRow("pp 2 x dp 2, gpipe") << "parallel.pp=2;parallel.microbatches=2;parallel.schedule=gpipe";
    QTest::newRow("pp 2 x dp 2, 1f1b") << "parallel.pp=2;parallel.microbatches=4;parallel.schedule=1f1b";
    QTest::newRow("pp 2 x dp 2, untied head") << "parallel.pp=2;parallel.microbatches=2;model.tied_head=false";
    QTest::newRow("pp 2 x dp 2, one micro-batch") << "parallel.pp=2";
    QTest::newRow("tp 2 x pp 2, ppmoe") << "parallel.tp=2;parallel.pp=2;parallel.microbatches=2;strategy.name=ppmoe";
    QTest::newRow("ep 2 (expert replicas)") << "parallel.ep=2";
    QTest::newRow("zero3") << "storage.dense=zero3";
    QTest::newRow("SSD tier") << "storage.sparse=ssd";
    QTest::newRow("partitioned embedding") << "model.embedding_partition=true;model.tied_head=false";
    for (const char* name : {"hier_a2a", "data_centric", "janus", "monta", "fastermoe"})
      QTest::newRow(name) << QString("strategy.name=%1").arg(name);
    QTest::newRow("data_centric, prefetch") << "strategy.name=data_centric;strategy.data_centric.prefetch=true";
    QTest::newRow("data_centric, hierarchical prefetch")
        << "strategy.name=data_centric;strategy.data_centric.prefetch=true;strategy.data_centric.hierarchical=true";
    QTest::newRow("janus, prefetch") << "strategy.name=janus;strategy.data_centric.prefetch=true";
  }
  void executed_equals_built() {
    QFETCH(QString, sets);
    auto world = MpiCommunicator::world();
    const int P = world->size(), me = world->rank();
    if (P != 4) QSKIP("runs under mpirun with 4 ranks");
    std::vector<std::string> extra = {"train.steps=2", "train.batch_size=8", "train.eval_every=0", "run.threads=1",
                                      "run.ranks=4", "cluster.nodes=2", "moe.experts=4"};
    for (const std::string& s : split_sets(sets)) extra.push_back(s);
    QTemporaryDir dir;
    if (sets.contains("ssd")) extra.push_back("storage.ssd_dir=" + dir.path().toStdString());
    const Config cfg = load_config(test::tiny_config_path(), extra);
    Trainer trainer(cfg, dir.path().toStdString() + "/r" + std::to_string(me), world.get());
    const bool whole = cfg.parallel.microbatches == 1;  // the MoE passes' tasks too
    std::vector<GraphTask> ran;
    std::map<int, std::vector<int>> counts;
    size_t moe_tasks = 0;
    TrainCallbacks cb;
    cb.on_step = [&](const StepStats& s) {  // the second step: a steady one (zero3 gathers)
      if (s.step != 1) return;
      ran = whole ? all_tasks(trainer.step_graph()) : chain_tasks(trainer.step_graph());
      moe_tasks = ran.size() - chain_tasks(trainer.step_graph()).size();
      for (int l : cfg.moe.moe_layers) counts[l] = trainer.model().expert_counts(l);
    };
    trainer.run(-1, cb);
    const TaskGraph g = build_step_graph(cfg, me, taken_routing(cfg, counts, *world));
    const std::vector<GraphTask> built = whole ? all_tasks(g) : chain_tasks(g);
    QVERIFY(!ran.empty());
    if (whole && std::any_of(counts.begin(), counts.end(), [](const auto& c) { return !c.second.empty(); }))
      QVERIFY(moe_tasks > 0);  // this rank's stage holds an MoE block: its tasks were compared
    qInfo("rank %d: %zu tasks compared, %zu of the MoE blocks", me, ran.size(), moe_tasks);
    const QString diff = first_difference(ran, built);
    QVERIFY2(diff.isEmpty(), qPrintable(QString("rank %1: %2").arg(me).arg(diff)));
  }
};

MOEBENCH_MPI_TEST_MAIN(TestStageGraph)
#include "tst_stage_graph.moc"
