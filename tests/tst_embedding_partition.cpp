// ctest-labels: mpi np=4
// MoESys §IV-C embedding partition in data parallelism (model.embedding_partition), on the
// launched ranks (CTest: 4 = 2 virtual nodes x 2; 2 and 8 work too: the tiny model's hidden 32
// divides over them). P = the DP ranks (here all ranks: tp = pp = 1), N = B x T tokens of one
// rank's micro-batch, Cp = C / P. Traffic of the table, per rank and micro-batch:
//   embed.ids       ring all-gather of the int32 ids: (P-1) N 4 bytes to the next rank;
//   embed.a2a       the looked-up slices: N Cp 4 bytes to every other rank;
//   embed.grad_a2a  the gradient slices to their owners: N Cp 4 bytes to every other rank;
// and no all-reduce of the table: the embeddings' gradient bucket holds only wpe (T C floats
// instead of V C + T C), plus one more double all-reduced over DP (grad.norm.dp: the columns'
// share of the gradient norm).
#include <QtTest>

#include <algorithm>
#include <map>
#include <numeric>

#include "moebench/config/config_loader.h"
#include "moebench/dist/mpi_communicator.h"
#include "moebench/model/param_count.h"
#include "moebench/perf/trainer_memory.h"
#include "moebench/train/distributed.h"
#include "moebench/train/step_graph.h"
#include "moebench/train/trainer.h"
#include "equivalence_support.h"
#include "mpi_test_main.h"
#include "test_support.h"

using namespace moebench;

namespace {

// The tiny model trained on P ranks with the table partitioned over them (untied head: the
// partition refuses a tied one).
Config partition_config(int P, const std::vector<std::string>& extra = {}, bool partition = true) {
  std::vector<std::string> sets = {
      "train.steps=20", "train.batch_size=" + std::to_string(2 * P), "train.eval_every=0",
      "cluster.nodes=" + std::to_string(P % 2 == 0 ? 2 : 1), "run.ranks=" + std::to_string(P), "run.threads=1",
      "moe.experts=" + std::to_string(std::lcm(4, P)), "model.tied_head=false",
      std::string("model.embedding_partition=") + (partition ? "true" : "false")};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return load_config(test::tiny_config_path(), sets);
}

}  // namespace

class TestEmbeddingPartition : public QObject {
  Q_OBJECT

 private slots:
  // Same losses (1e-5 relative, 20 steps) and parameters as one rank: each rank's [V, C/P]
  // columns against the single-rank table's (compare_params reads the slice's runs); the
  // checkpoint gathers the whole table (rank 0 resumes it on one rank).
  void matches_single_rank_data() {
    QTest::addColumn<QString>("set");
    QTest::newRow("learned routing") << "moe.routing=learned";
    QTest::newRow("2 micro-batches (an exchange each)") << "parallel.microbatches=2";
    QTest::newRow("ep 2 (expert replicas)") << "parallel.ep=2";
  }
  void matches_single_rank() {
    QFETCH(QString, set);
    auto world = MpiCommunicator::world();
    const int P = world->size();
    if (P == 1) QSKIP("needs more than one rank (run under mpirun)");
    if (set.startsWith("parallel.ep") && P % 2 != 0) QSKIP("this row needs an even rank count");
    const Config cfg = partition_config(P, {set.toStdString()});
    QTemporaryDir ref_dir, dist_dir;
    Trainer ref(cfg, ref_dir.path().toStdString());
    const std::vector<float> expected = test::train_losses(ref);
    Trainer dist(cfg, dist_dir.path().toStdString() + "/r" + std::to_string(world->rank()), world.get());
    const ParamView* wte = dist.model().params().find("embed.wte");
    QVERIFY(wte);
    const int64_t V = cfg.model.vocab_size, C = cfg.model.hidden;
    QCOMPARE(wte->shape, (std::vector<int64_t>{V, C / P}));
    QCOMPARE(wte->full_shape(), (std::vector<int64_t>{V, C}));
    QCOMPARE(wte->slice.runs.front().first, size_t(world->rank() * (C / P)));  // row 0, this rank's columns
    std::string last_checkpoint;
    std::vector<float> got;
    TrainCallbacks cb;
    cb.on_step = [&](const StepStats& s) { got.push_back(s.loss.total); };
    last_checkpoint = dist.run(-1, cb).last_checkpoint;

    const QString loss_diff = test::compare_losses(got, expected, world->rank());
    QVERIFY2(loss_diff.isEmpty(), qPrintable(loss_diff));
    const QString param_diff = test::compare_params(dist.model().params(), ref.model().params(), world->rank());
    QVERIFY2(param_diff.isEmpty(), qPrintable(param_diff));
    if (world->rank() == 0) {  // every rank's columns reached the checkpoint
      Config one = cfg;
      Trainer resumed(one, ref_dir.path().toStdString() + "/resumed");
      resumed.resume(last_checkpoint);
      const QString ckpt_diff = test::compare_params(resumed.model().params(), ref.model().params(), 0);
      QVERIFY2(ckpt_diff.isEmpty(), qPrintable(ckpt_diff));
    }
  }

  // Parameters, gradients and AdamW state of the table: V C / P per rank (the arena holds all
  // three at the same offsets), as rank_param_counts and the memory model count them.
  void table_memory_is_a_column_share() {
    auto world = MpiCommunicator::world();
    const int P = world->size();
    if (P == 1) QSKIP("needs more than one rank (run under mpirun)");
    const Config cfg = partition_config(P, {"train.steps=1"});
    QTemporaryDir dir;
    Trainer dist(cfg, dir.path().toStdString() + "/r" + std::to_string(world->rank()), world.get());
    const ParamArena& params = dist.model().params();
    const double V = cfg.model.vocab_size, C = cfg.model.hidden;
    QCOMPARE((double)params.find("embed.wte")->numel, V * C / P);
    const ExpertShard ep = dist.distributed()->shard();
    const double counted =
        rank_param_counts(cfg.model, cfg.moe, ep, TpShard{}, PipeStage{}, EmbedShard{world->rank(), P}).total();
    QCOMPARE((double)params.size(), counted);
    // trainer_memory (plan --memory): weights, gradients and both Adam moments shrink by the
    // table's other columns, V C (1 - 1/P) floats each.
    const TrainerMemory on = trainer_memory(cfg, 0, false), off = trainer_memory(partition_config(P, {}, false), 0, false);
    QCOMPARE(off.parameters - on.parameters, V * C * (P - 1) / P);
    QCOMPARE(off.gradients - on.gradients, 4 * V * C * (P - 1) / P);
    QCOMPARE(off.adam - on.adam, 8 * V * C * (P - 1) / P);
  }

  // One training step with the partition against the same step without it: the meter's bytes
  // to every peer differ by exactly the formula of the file comment (so no table all-reduce
  // bytes remain); every rank's spans carry the step graph's names and bytes for the table's
  // exchanges and the DP all-reduces.
  void traffic_and_spans_equal_the_formula() {
    auto world = MpiCommunicator::world();
    const int P = world->size(), me = world->rank();
    if (P == 1) QSKIP("needs more than one rank (run under mpirun)");
    const std::vector<std::string> one_step = {"train.steps=1", "moe.routing=uniform"};
    const Config on_cfg = partition_config(P, one_step), off_cfg = partition_config(P, one_step, false);
    QTemporaryDir dir;
    auto step_traffic = [&](const Config& cfg, const char* tag, std::vector<Span>* spans) {
      Trainer t(cfg, dir.path().toStdString() + "/" + tag + std::to_string(me), world.get());
      t.set_recording(spans != nullptr, 1);
      std::vector<uint64_t> sent;
      TrainCallbacks cb;
      cb.on_step = [&](const StepStats& s) {
        sent = t.distributed()->meter().per_peer();
        if (spans) *spans = s.records.spans;  // every rank's, on rank 0
      };
      t.run(-1, cb);
      return sent;
    };
    // Recording ships the spans to rank 0 within the step (metered): a third run records them.
    const std::vector<uint64_t> on = step_traffic(on_cfg, "on", nullptr), off = step_traffic(off_cfg, "off", nullptr);
    std::vector<Span> spans;
    step_traffic(on_cfg, "recorded", &spans);

    const uint64_t N = (uint64_t)on_cfg.train.batch_size / P * on_cfg.model.seq_len, C = on_cfg.model.hidden,
                   V = on_cfg.model.vocab_size, T = on_cfg.model.seq_len, Cp = C / P;
    const int right = (me + 1) % P;
    for (int p = 0; p < P; ++p) {
      int64_t expected = 0;
      if (p != me) expected += 2 * (int64_t)(N * Cp * 4);  // embed.a2a + embed.grad_a2a
      if (p == right) {
        expected += (int64_t)((P - 1) * N * 4);                            // embed.ids
        expected += (int64_t)test::ring_allreduce_bytes(1, P, me, 8);            // grad.norm.dp
        expected -= (int64_t)(test::ring_allreduce_bytes(V * C + T * C, P, me, 4) -  // the bucket without wte
                              test::ring_allreduce_bytes(T * C, P, me, 4));
      }
      const int64_t diff = (int64_t)on.at(p) - (int64_t)off.at(p);
      QVERIFY2(diff == expected, qPrintable(QString("rank %1 -> %2: partition adds %3 bytes, the formula %4")
                                                .arg(me).arg(p).arg(diff).arg(expected)));
    }

    if (me != 0) return;
    // Per rank and name: the multiset of span bytes equals that of the graph tasks' bytes.
    const std::vector<std::string> names = {"embed.ids", "embed.a2a", "embed.grad_a2a", "grad.norm.dp", "grad.allreduce"};
    for (int r = 0; r < P; ++r) {
      std::map<std::string, std::vector<uint64_t>> ran, graph;
      for (const Span& s : spans)
        if (s.rank == r && std::find(names.begin(), names.end(), s.name) != names.end()) ran[s.name].push_back(s.bytes);
      const TaskGraph g = build_step_graph(on_cfg, r);
      for (const GraphTask& t : g.tasks()) {
        if (std::find(names.begin(), names.end(), t.name) == names.end()) continue;
        uint64_t bytes = 0;
        for (const auto& [peer, b] : t.cost.bytes_to_peer) bytes += b;
        graph[t.name].push_back(bytes);
      }
      for (const std::string& name : names) {
        std::sort(ran[name].begin(), ran[name].end());
        std::sort(graph[name].begin(), graph[name].end());
        QVERIFY2(!graph[name].empty(), name.c_str());
        QVERIFY2(ran[name] == graph[name], qPrintable(QString("rank %1 %2: %3 spans, %4 graph tasks")
                                                          .arg(r).arg(QString::fromStdString(name))
                                                          .arg(ran[name].size()).arg(graph[name].size())));
      }
    }
  }
};

MOEBENCH_MPI_TEST_MAIN(TestEmbeddingPartition)
#include "tst_embedding_partition.moc"
