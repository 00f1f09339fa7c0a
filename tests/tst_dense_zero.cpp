// ctest-labels: mpi np=4
// storage.dense = "zero3" (storage/dense_shards.h: MoESys §III-B2, Algorithm 1) on the launched
// ranks (CTest: 4 = 2 virtual nodes x 2; every rank a DP rank: tp = pp = 1). Checked against
// the replicated run on the same ranks, which only differs in where the dense parameters live:
//   losses and parameters equal (1e-5 relative / 1e-4 absolute) with the prefetch on and off,
//     with parts P divides and parts it does not (hidden 30: padded shards), under every
//     strategy that runs with tp = pp = 1;
//   each rank's optimizer moments: its 1/P shard of every dense part + its experts;
//   dense.allgather spans per block; with the prefetch block 1's gather starts before block
//     0's forward ends, without it after;
//   the traffic of a step: reduce-scatter + all-gather send the all-reduce's bytes (plus the
//     gradient norm's one double all-reduced over DP);
//   checkpoints hold whole tensors and moments: zero3 -> replicated and replicated -> zero3
//     resume and continue with the uninterrupted run's losses;
//   bad configs name storage.dense.
#include <QtTest>

#include <algorithm>
#include <numeric>
#include <set>
#include <tuple>
#include <thread>

#include "moebench/config/config_loader.h"
#include "moebench/dist/mpi_communicator.h"
#include "moebench/perf/trainer_memory.h"
#include "moebench/train/checkpoint.h"
#include "moebench/storage/dense_shards.h"
#include "moebench/train/distributed.h"
#include "moebench/train/step_graph.h"
#include "moebench/train/trainer.h"
#include "equivalence_support.h"
#include "mpi_test_main.h"
#include "test_support.h"

using namespace moebench;

namespace {

Config zero_config(int P, const std::vector<std::string>& extra, const std::string& dense, bool prefetch = true) {
  std::vector<std::string> sets = {"train.steps=8", "train.batch_size=" + std::to_string(2 * P), "train.eval_every=0",
                                   "cluster.nodes=" + std::to_string(P % 2 == 0 ? 2 : 1),
                                   "run.ranks=" + std::to_string(P), "run.threads=1",
                                   "moe.experts=" + std::to_string(std::lcm(4, P)), "storage.dense=" + dense,
                                   std::string("storage.dense_prefetch=") + (prefetch ? "true" : "false")};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return load_config(test::tiny_config_path(), sets);
}

std::string rank_dir(const QTemporaryDir& d, const std::string& name, int rank) {
  return d.path().toStdString() + "/" + name + "/r" + std::to_string(rank);
}

// Every rank's spans of the run's second step (a typical one: the first gathers nothing), on rank 0.
std::vector<Span> second_step_spans(const Config& cfg, const std::string& out, Communicator* world) {
  Trainer zero(cfg, out, world);
  zero.set_recording(true, 1);
  std::vector<Span> spans;
  TrainCallbacks cb;
  cb.on_step = [&](const StepStats& s) {
    if (s.step == 1) spans = s.records.spans;
  };
  zero.run(-1, cb);
  return spans;
}

std::vector<std::string> split_sets(const QString& s) {
  std::vector<std::string> out;
  for (const QString& part : s.split(';', Qt::SkipEmptyParts)) out.push_back(part.toStdString());
  return out;
}

}  // namespace

class TestDenseZero : public QObject {
  Q_OBJECT

 private slots:
  void matches_replicated_data() {
    QTest::addColumn<QString>("sets");
    QTest::addColumn<bool>("prefetch");
    QTest::newRow("prefetch") << "" << true;
    QTest::newRow("on demand") << "" << false;
    QTest::newRow("learned routing, 2 micro-batches") << "moe.routing=learned;parallel.microbatches=2" << true;
    QTest::newRow("ep 2 (expert replicas)") << "parallel.ep=2" << true;
    QTest::newRow("hidden 30 (padded shards), untied head") << "model.hidden=30;model.tied_head=false" << true;
    for (const char* name : {"hier_a2a", "data_centric", "janus", "monta", "fastermoe"})
      QTest::newRow(name) << QString("strategy.name=%1").arg(name) << true;
    // storage.zero3_experts: every expert on every rank (ep 1), sharded with its block.
    QTest::newRow("experts sharded, ep 1") << "parallel.ep=1;storage.zero3_experts=true" << true;
    QTest::newRow("experts sharded, on demand, hidden 30")
        << "parallel.ep=1;storage.zero3_experts=true;model.hidden=30;model.tied_head=false" << false;
    QTest::newRow("experts sharded, fastermoe")
        << "parallel.ep=1;storage.zero3_experts=true;strategy.name=fastermoe" << true;
  }
  void matches_replicated() {
    QFETCH(QString, sets);
    QFETCH(bool, prefetch);
    auto world = MpiCommunicator::world();
    const int P = world->size(), me = world->rank();
    if (P == 1) QSKIP("needs more than one rank (run under mpirun)");
    if (sets.contains("parallel.ep") && P % 2 != 0) QSKIP("this row needs an even rank count");
    QTemporaryDir dir;
    std::vector<std::string> ref_sets;  // the replicated run: the same without zero3's own keys
    for (const std::string& s : split_sets(sets))
      if (!s.starts_with("storage.zero3_experts")) ref_sets.push_back(s);
    Trainer ref(zero_config(P, ref_sets, "replicated"), rank_dir(dir, "ref", me), world.get());
    QVERIFY(!ref.dense_shards());
    const std::vector<float> expected = test::train_losses(ref);
    const Config zcfg = zero_config(P, split_sets(sets), "zero3", prefetch);
    Trainer zero(zcfg, rank_dir(dir, "zero", me), world.get());
    QVERIFY(zero.dense_shards());
    QCOMPARE(zero.dense_shards()->prefetch(), prefetch);
    const std::vector<float> got = test::train_losses(zero);
    const QString loss_diff = test::compare_losses(got, expected, me);
    QVERIFY2(loss_diff.isEmpty(), qPrintable(loss_diff));
    // The run ends with a checkpoint, which gathers every part: the arenas are whole.
    const QString param_diff = test::compare_params(zero.model().params(), ref.model().params(), me);
    QVERIFY2(param_diff.isEmpty(), qPrintable(param_diff));
    if (!sets.contains("zero3_experts")) return;
    // The experts are shards: the optimizer holds 1/P of every part and nothing else.
    size_t arena = zero.model().params().size(), owned = 0, covered = 0;
    for (const DenseShards::Part& p : zero.dense_shards()->parts()) {
      owned += p.owned.count;
      covered += p.range.count;
    }
    QCOMPARE(covered, arena);
    QCOMPARE(zero.dense_shards()->optimizer_state_floats(), owned);
    // plan --memory counts rank 0's moments (the largest shards) exactly.
    if (me == 0) QCOMPARE(trainer_memory(zcfg, 0, true).adam, 8.0 * (double)owned);
  }

  // Each rank's AdamW moments: its shard of every dense part (ceil(n / P) floats at most, the
  // shards of the P ranks tiling the part) plus its experts; the replicated optimizer holds the
  // whole arena; plan --memory's count of them.
  void optimizer_state_is_a_shard() {
    auto world = MpiCommunicator::world();
    const int P = world->size(), me = world->rank();
    if (P == 1) QSKIP("needs more than one rank (run under mpirun)");
    QTemporaryDir dir;
    Trainer zero(zero_config(P, {"train.steps=1", "model.hidden=30"}, "zero3"), rank_dir(dir, "z", me), world.get());
    const DenseShards& shards = *zero.dense_shards();
    const ParamArena& params = zero.model().params();
    size_t dense = 0, owned = 0;
    for (const DenseShards::Part& p : shards.parts()) {
      dense += p.range.count;
      owned += p.owned.count;
      QVERIFY(p.owned.count <= (p.range.count + P - 1) / P);
      uint64_t total = p.owned.count;  // the ranks' shards tile the part
      world->all_reduce(&total, 1, DType::i64);
      QCOMPARE((size_t)total, p.range.count);
    }
    size_t experts = 0;
    for (const BlockExperts& b : zero.model().expert_ranges()) experts += b.range.count;
    QCOMPARE(dense + experts, params.size());
    QCOMPARE(shards.optimizer_state_floats(), owned + experts);
    QVERIFY(owned <= dense / P + shards.parts().size());
    // plan --memory (perf/trainer_memory.h) counts rank 0's moments exactly (its shards are the
    // largest), and the replicated run's as the whole arena.
    const Config zcfg = zero_config(P, {"train.steps=1", "model.hidden=30"}, "zero3");
    const Config rcfg = zero_config(P, {"train.steps=1", "model.hidden=30"}, "replicated");
    if (me == 0) QCOMPARE(trainer_memory(zcfg, 0, true).adam, 8.0 * (double)shards.optimizer_state_floats());
    QCOMPARE(trainer_memory(rcfg, 0, true).adam, 8.0 * (double)params.size());
    QVERIFY(trainer_memory(zcfg, 0, true).adam >= 8.0 * (double)shards.optimizer_state_floats());
  }

  // Spans of step 2 (step 1 starts from the identical init: nothing to gather): one
  // dense.allgather per block and for the embeddings and the head, each ending before its block
  // computes; with the prefetch on the DP comm role, block 1's gather starting before block 0's
  // forward has ended (it overlaps compute; asserted where the ranks' threads have cores); on
  // demand in the rank's chain, block 1's after block 0's forward.
  void allgather_spans_overlap_forward_data() {
    QTest::addColumn<bool>("prefetch");
    QTest::newRow("prefetch") << true;
    QTest::newRow("on demand") << false;
  }
  void allgather_spans_overlap_forward() {
    QFETCH(bool, prefetch);
    auto world = MpiCommunicator::world();
    const int P = world->size(), me = world->rank();
    if (P == 1) QSKIP("needs more than one rank (run under mpirun)");
    QTemporaryDir dir;
    // hidden 128 and 16 sequences a rank: a block's forward takes milliseconds, longer than a
    // worker thread's wake-up on the oversubscribed test machine.
    const Config cfg = zero_config(P, {"train.steps=2", "moe.routing=uniform", "model.hidden=128",
                                       "train.batch_size=" + std::to_string(16 * P)}, "zero3", prefetch);
    const std::vector<Span> spans = second_step_spans(cfg, rank_dir(dir, "z", me), world.get());
    if (me != 0) return;  // the records are gathered on rank 0
    // On a machine with fewer cores than the ranks' main threads and comm workers (the 2-core
    // test machine runs 4 ranks), a submitted gather waits for a core until some main thread
    // blocks: the overlap in time is only asserted where every thread can have a core.
    const bool spare_cores = std::thread::hardware_concurrency() >= 2u * (unsigned)P;
    for (int r = 0; r < P; ++r) {
      std::map<int, const Span*> gathers;
      int head_and_embed = 0;
      double block0_forward_end = 0.0, block1_start = 0.0;
      for (const Span& s : spans) {
        if (s.rank != r) continue;
        if (s.name == "dense.allgather") {
          // on demand: in the rank's chain; prefetched: on the DP comm role (the embeddings' first
          // gather is on demand either way)
          if (!prefetch) QCOMPARE(s.role, StreamRole::host);
          else if (s.layer >= 0) QVERIFY(s.role == StreamRole::comm_intra || s.role == StreamRole::comm_inter);
          QVERIFY(s.bytes > 0);
          if (s.layer >= 0) gathers[s.layer] = &s;
          else ++head_and_embed;
        }
        if (s.layer == 0 && s.category == TaskCategory::compute && s.name.ends_with(".forward"))
          block0_forward_end = std::max(block0_forward_end, s.end);
        if (s.layer == 1 && s.name == "attn.forward") block1_start = s.start;
      }
      QCOMPARE((int)gathers.size(), cfg.model.layers);
      QCOMPARE(head_and_embed, 2);
      QVERIFY(block0_forward_end > 0.0);
      const Span& g1 = *gathers.at(1);
      QVERIFY(block1_start > 0.0);
      QVERIFY2(g1.end <= block1_start, qPrintable(QString("rank %1: block 1 computed before its gather ended").arg(r)));
      if (!prefetch) {
        QVERIFY(g1.start >= block0_forward_end);
      } else if (spare_cores) {
        QVERIFY2(g1.start < block0_forward_end, qPrintable(QString("rank %1: block 1's gather at %2, block 0 ends %3")
                                                               .arg(r).arg(g1.start).arg(block0_forward_end)));
      }
    }
    if (prefetch && !spare_cores)
      qInfo("%u cores for %d ranks: a rank's comm worker gets a core only when a main thread waits, so the "
            "prefetch's start before block 0's end is not checked here",
            std::thread::hardware_concurrency(), P);
  }

  // The predicted step graph (train/step_graph.h) holds the run's zero3 tasks: every rank's
  // dense.allgather, grad.reduce_scatter and grad.norm.dp spans of step 2 match its tasks by
  // name, layer and bytes, the prefetched gathers on the DP comm role.
  void step_graph_has_the_zero3_tasks_data() {
    QTest::addColumn<bool>("prefetch");
    QTest::addColumn<QString>("sets");
    QTest::newRow("prefetch") << true << "";
    QTest::newRow("on demand") << false << "";
    QTest::newRow("prefetch, hidden 30, untied head") << true << "model.hidden=30;model.tied_head=false";
    QTest::newRow("experts sharded (ep 1)") << true << "parallel.ep=1;storage.zero3_experts=true";
    QTest::newRow("experts sharded (ep 1), on demand") << false << "parallel.ep=1;storage.zero3_experts=true";
  }
  void step_graph_has_the_zero3_tasks() {
    QFETCH(bool, prefetch);
    QFETCH(QString, sets);
    auto world = MpiCommunicator::world();
    const int P = world->size(), me = world->rank();
    if (P == 1) QSKIP("needs more than one rank (run under mpirun)");
    std::vector<std::string> extra = {"train.steps=2", "moe.routing=uniform"};
    for (const std::string& x : split_sets(sets)) extra.push_back(x);
    const Config cfg = zero_config(P, extra, "zero3", prefetch);
    QTemporaryDir dir;
    const std::vector<Span> spans = second_step_spans(cfg, rank_dir(dir, "z", me), world.get());
    if (me != 0) return;
    const std::set<std::string> names = {"dense.allgather", "grad.reduce_scatter", "grad.norm.dp"};
    for (int r = 0; r < P; ++r) {
      std::multiset<std::tuple<std::string, int, uint64_t>> ran, predicted;
      for (const Span& s : spans)
        if (s.rank == r && names.count(s.name)) ran.insert({s.name, s.layer, s.bytes});
      const TaskGraph g = build_step_graph(cfg, r, synthetic_step_routing(cfg, 2));
      int on_comm_role = 0;
      for (const GraphTask& t : g.tasks())
        if (names.count(t.name)) {
          predicted.insert({t.name, t.layer, t.cost.bytes_sent()});
          if (t.name == "dense.allgather" && t.role != StreamRole::host) ++on_comm_role;
        }
      QCOMPARE(on_comm_role, prefetch ? cfg.model.layers + 1 : 0);  // the blocks' and the head's
      QVERIFY(!ran.empty());
      if (ran != predicted) {
        QString text;
        for (const auto& [n, l, b] : ran) text += QString(" ran %1/%2/%3").arg(n.c_str()).arg(l).arg(b);
        for (const auto& [n, l, b] : predicted) text += QString(" predicted %1/%2/%3").arg(n.c_str()).arg(l).arg(b);
        QFAIL(qPrintable(QString("rank %1:").arg(r) + text));
      }
    }
  }

  // A step's bytes: the replicated run's with each part's all-reduce replaced by its
  // reduce-scatter and all-gather, (P-1) s floats each (where P divides every part, as hidden
  // 32 on 2 or 4 ranks, exactly the all-reduce's 2 (P-1) n / P), plus the norm's one double
  // all-reduced over DP; step 1 has the reduce-scatters only (every rank starts from the same
  // init, no gather).
  void traffic_equals_the_allreduce() {
    auto world = MpiCommunicator::world();
    const int P = world->size(), me = world->rank();
    if (P == 1) QSKIP("needs more than one rank (run under mpirun)");
    QTemporaryDir dir;
    std::vector<uint64_t> bytes[2];
    uint64_t reduce_scatter = 0, all_reduce = 0;  // per part (P-1) s floats; the ring all-reduce's of n
    bool divides = true;
    for (int z = 0; z < 2; ++z) {
      Trainer t(zero_config(P, {"train.steps=2", "moe.routing=uniform"}, z ? "zero3" : "replicated"),
                rank_dir(dir, z ? "z" : "r", me), world.get());
      TrainCallbacks cb;
      cb.on_step = [&](const StepStats& s) { bytes[z].push_back((uint64_t)(s.bytes_intra + s.bytes_inter)); };
      t.run(-1, cb);
      if (z)
        for (const DenseShards::Part& p : t.dense_shards()->parts()) {
          divides = divides && p.range.count % P == 0;
          reduce_scatter += (uint64_t)(P - 1) * p.shard * sizeof(float);
          all_reduce += test::ring_allreduce_bytes(p.range.count, P, me, sizeof(float));
        }
    }
    if (divides) QCOMPARE(2 * reduce_scatter, all_reduce);  // the formula (P divides every part at P = 2, 4)
    const uint64_t norm = test::ring_allreduce_bytes(1, P, me, sizeof(double));
    QCOMPARE(bytes[1][1], bytes[0][1] - all_reduce + 2 * reduce_scatter + norm);  // step 2: reduce-scatters and gathers
    QCOMPARE(bytes[1][0], bytes[0][0] - all_reduce + reduce_scatter + norm);  // step 1: no gathers (the init is whole)
  }

  // Checkpoints hold whole tensors and moments either way: resuming the step-4 checkpoint of
  // one storage in a run of the other continues with the uninterrupted run's losses, and both
  // runs' checkpoints read back equal (weights and AdamW m, v) on one rank.
  void checkpoint_resumes_across_storages() {
    auto world = MpiCommunicator::world();
    const int P = world->size(), me = world->rank();
    if (P == 1) QSKIP("needs more than one rank (run under mpirun)");
    QTemporaryDir dir;
    const std::vector<std::string> sets = {"train.checkpoint_every=4", "moe.routing=learned"};
    const Config repl = zero_config(P, sets, "replicated"), zero = zero_config(P, sets, "zero3");
    // The rank-0 directory of each run (rank 0 writes the checkpoint).
    char root[512] = {};  // rank 0's folder: every rank resumes from the files it wrote
    std::snprintf(root, sizeof root, "%s", dir.path().toStdString().c_str());
    world->broadcast(root, sizeof root, DType::u8, 0);
    const std::string repl_dir = std::string(root) + "/repl/r0", zero_dir = std::string(root) + "/zero/r0";
    std::vector<float> full[2];
    {
      Trainer a(repl, rank_dir(dir, "repl", me), world.get());
      full[0] = test::train_losses(a);
      Trainer b(zero, rank_dir(dir, "zero", me), world.get());
      full[1] = test::train_losses(b);
    }
    const QString same = test::compare_losses(full[1], full[0], me);
    QVERIFY2(same.isEmpty(), qPrintable(same));
    const std::string ckpt[2] = {repl_dir + "/checkpoints/step_000004", zero_dir + "/checkpoints/step_000004"};
    world->barrier();  // rank 0 returned from the saves
    for (int from = 0; from < 2; ++from) {  // resume the other storage's checkpoint
      Trainer t(from ? repl : zero, rank_dir(dir, from ? "r_from_z" : "z_from_r", me), world.get());
      QCOMPARE(t.resume(ckpt[from]), 4L);
      std::vector<float> rest;
      TrainCallbacks cb;
      cb.on_step = [&](const StepStats& s) { rest.push_back(s.loss.total); };
      t.run(-1, cb);
      const std::vector<float> tail(full[0].begin() + 4, full[0].end());
      const QString diff = test::compare_losses(rest, tail, me);
      QVERIFY2(diff.isEmpty(), qPrintable(QString(from ? "replicated from zero3: " : "zero3 from replicated: ") + diff));
    }
    if (me != 0) return;
    Config one = repl;
    one.run.ranks = 1;
    one.storage.dense = DenseStorage::replicated;
    MoeGpt ma(one.model, one.moe), mb(one.model, one.moe);
    AdamW oa(ma.params(), {}), ob(mb.params(), {});
    load_checkpoint(ckpt[0], ma.params(), oa);
    load_checkpoint(ckpt[1], mb.params(), ob);
    const QString wdiff = test::compare_params(mb.params(), ma.params(), 0);
    QVERIFY2(wdiff.isEmpty(), qPrintable(wdiff));
    double worst = 0.0;
    for (size_t i = 0; i < oa.kept_params(); ++i) {
      worst = std::max(worst, (double)std::abs(oa.m()[i] - ob.m()[i]));
      worst = std::max(worst, (double)std::abs(oa.v()[i] - ob.v()[i]));
    }
    QVERIFY2(worst < 1e-6, qPrintable(QString("moments differ by %1").arg(worst)));
    double norm = 0.0;  // and they are not all zero (the dense shards were gathered)
    for (size_t i = 0; i < ob.kept_params(); ++i) norm += std::abs(ob.m()[i]);
    QVERIFY(norm > 0.0);
  }

  // Bad configs: the message names storage.dense (and the key it conflicts with).
  void config_errors_data() {
    QTest::addColumn<QString>("sets");
    QTest::addColumn<QString>("message");
    QTest::newRow("unknown value") << "storage.dense=zero2" << "must be \"replicated\" or \"zero3\"";
    QTest::newRow("tp") << "storage.dense=zero3;parallel.tp=2" << "needs parallel.tp = 1";
    QTest::newRow("pp") << "storage.dense=zero3;parallel.pp=2" << "needs parallel.pp = 1";
    QTest::newRow("embedding partition")
        << "storage.dense=zero3;model.embedding_partition=true;model.tied_head=false" << "model.embedding_partition";
    QTest::newRow("one rank") << "storage.dense=zero3;run.ranks=1;moe.experts=4;cluster.nodes=1"
                              << "more than one data-parallel rank";
  }
  void config_errors() {
    QFETCH(QString, sets);
    QFETCH(QString, message);
    std::vector<std::string> all = {"run.ranks=4", "cluster.nodes=1", "train.batch_size=8"};
    for (const std::string& s : split_sets(sets)) all.push_back(s);
    try {
      load_config(test::tiny_config_path(), all);
      QFAIL("no error");
    } catch (const ConfigError& e) {
      bool found = false;
      for (const ConfigIssue& i : e.issues())
        if (i.key == "storage.dense" && i.message.find(message.toStdString()) != std::string::npos) found = true;
      QVERIFY2(found, e.what());
    }
  }
};

MOEBENCH_MPI_TEST_MAIN(TestDenseZero)
#include "tst_dense_zero.moc"
