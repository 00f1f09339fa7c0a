// ctest-labels: mpi np=4 np=8 slow
// Tensor, pipeline, data and expert parallelism together against the single-process reference:
// each row names a layout (pp x dp x tp, micro-batches and schedule, a strategy) of W ranks and
// runs where W ranks are launched (CTest runs the suite on 4 and on 8 ranks): 20 steps of a tiny
// MoE-GPT, per-step loss within 1e-5 relative of the 1-rank run with the same micro-batches
// (gradient accumulation; the aux loss is per micro-batch, as in Megatron), final parameters
// (tensor-parallel slices against the same elements of the whole tensors, each stage's blocks)
// within 1e-4. A checkpoint written by a tensor- and pipeline-parallel run resumes on one rank.
#include <QtTest>

#include "moebench/config/config_loader.h"
#include "moebench/dist/mpi_communicator.h"
#include "moebench/train/checkpoint.h"
#include "moebench/train/device.h"
#include "moebench/train/distributed.h"
#include "moebench/train/step_builder.h"
#include "moebench/train/trainer.h"
#include "equivalence_support.h"
#include "mpi_test_main.h"
#include "test_support.h"

using namespace moebench;

namespace {

struct Layout {
  int ranks, tp, pp = 1, micro = 1;
  std::string schedule = "1f1b";
};

// The layout's config: 8 heads of 4 (tp up to 8), max(2, pp) blocks of which blocks 0 and 1 are
// MoE blocks with 8 experts, micro-batches of one sequence (two when there is one micro-batch)
// per data-parallel rank.
// strategy: a strategy name, "+expert_tp" appended to slice the experts over the TP group,
// "+vocab" to split the embedding and head by vocabulary rows; "monta:LEVEL:CHUNKS" for monta,
// "per_block:A,B" for strategies A and B on the two MoE blocks; "+ep_priority" (last) puts the MoE
// blocks' comm tasks on the priority lanes.
Config layout_config(const Layout& l, std::string strategy, int nodes, const std::string& routing, int steps = 20) {
  const int dp = l.ranks / (l.tp * l.pp);
  auto option = [&](const std::string& suffix) {
    if (!strategy.ends_with(suffix)) return false;
    strategy.resize(strategy.size() - suffix.size());
    return true;
  };
  const bool priority = option("+ep_priority");
  const bool vocab = option("+vocab"), expert_tp = option("+expert_tp");
  std::vector<std::string> monta;  // the strategy's own keys: "monta:LEVEL:CHUNKS", "per_block:A,B"
  if (strategy.starts_with("monta:")) {
    const size_t colon = strategy.find(':', 6);
    monta = {"strategy.monta.level=" + strategy.substr(6, colon - 6), "strategy.monta.chunks=" + strategy.substr(colon + 1)};
    strategy = "monta";
  } else if (strategy.starts_with("per_block:")) {  // "per_block:A,B": one strategy per MoE block
    monta = {"strategy.per_block.blocks=[\"" + strategy.substr(10, strategy.find(',') - 10) + "\", \"" +
             strategy.substr(strategy.find(',') + 1) + "\"]"};
    strategy = "per_block";
  }
  std::vector<std::string> sets = {"train.steps=" + std::to_string(steps),
                                    "train.batch_size=" + std::to_string(dp * std::max(2, l.micro)), "train.eval_every=0",
                                    "run.threads=1", "run.ranks=" + std::to_string(l.ranks), "cluster.nodes=" + std::to_string(nodes),
                                    "model.heads=8", "model.layers=" + std::to_string(std::max(2, l.pp)), "moe.moe_layers=[0, 1]",
                                    "moe.experts=8", "parallel.tp=" + std::to_string(l.tp), "parallel.pp=" + std::to_string(l.pp),
                                    "parallel.microbatches=" + std::to_string(l.micro), "parallel.schedule=" + l.schedule,
                                    "strategy.name=" + strategy, "moe.routing=" + routing,
                                    std::string("moe.expert_tp=") + (expert_tp ? "true" : "false"),
                                    std::string("parallel.vocab_parallel=") + (vocab ? "true" : "false")};
  sets.insert(sets.end(), monta.begin(), monta.end());
  if (priority) sets.push_back("strategy.monta.ep_priority=true");
  return load_config(test::tiny_config_path(), sets);
}

// The single-rank reference of a layout: one stage, the same micro-batches.
Config reference_of(Config cfg) {
  cfg.parallel.pp = 1;
  cfg.moe.expert_tp = false;
  cfg.parallel.vocab_parallel = false;
  cfg.parallel.stage_layers.clear();
  return cfg;
}

}  // namespace

class TestParallelLayouts : public QObject {
  Q_OBJECT

 private slots:
  void matches_single_rank_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("micro");
    QTest::addColumn<QString>("schedule");
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("nodes");
    QTest::addColumn<QString>("routing");
    auto row = [](const char* name, int ranks, int tp, int pp, int micro, const char* schedule, const char* strategy,
                  int nodes, const char* routing) {
      QTest::newRow(name) << ranks << tp << pp << micro << schedule << strategy << nodes << routing;
    };
    row("tp2 x dp2 expert_centric", 4, 2, 1, 1, "1f1b", "expert_centric", 1, "learned");
    row("tp2 x dp2 hier_a2a, 2 nodes", 4, 2, 1, 1, "1f1b", "hier_a2a", 2, "learned");
    row("tp2 x dp2 expert_centric zipf", 4, 2, 1, 1, "1f1b", "expert_centric", 1, "zipf:1.2");
    row("tp4 ppmoe", 4, 4, 1, 1, "1f1b", "ppmoe", 1, "learned");
    row("tp2 x dp2 ppmoe", 4, 2, 1, 1, "1f1b", "ppmoe", 1, "learned");
    row("tp4 ppmoe, all tokens to expert 0", 4, 4, 1, 1, "1f1b", "ppmoe", 1, "hot:0,1");
    row("pp2 x dp2 expert_centric, 2 micro-batches 1f1b", 4, 1, 2, 2, "1f1b", "expert_centric", 1, "learned");
    row("pp2 x dp2 expert_centric, 4 micro-batches gpipe", 4, 1, 2, 4, "gpipe", "expert_centric", 1, "learned");
    row("pp2 x tp2 expert_centric, 2 micro-batches", 4, 2, 2, 2, "1f1b", "expert_centric", 1, "learned");
    row("tp2 x pp2 ppmoe, 2 micro-batches", 4, 2, 2, 2, "1f1b", "ppmoe", 1, "learned");
    row("pp4, 4 micro-batches 1f1b", 4, 1, 4, 4, "1f1b", "expert_centric", 1, "learned");
    row("dp4, 2 micro-batches (gradient accumulation)", 4, 1, 1, 2, "gpipe", "expert_centric", 1, "learned");
    row("dp4 janus, 2 micro-batches gpipe (two activation sets)", 4, 1, 1, 2, "gpipe", "janus", 2, "learned");
    row("dp4 data_centric, 2 micro-batches 1f1b", 4, 1, 1, 2, "1f1b", "data_centric", 1, "learned");
    // The pulls' windows of several EP groups on one host (one shared dynamic window).
    row("tp2 x dp2 data_centric", 4, 2, 1, 1, "1f1b", "data_centric", 1, "learned");
    row("tp2 x pp2 data_centric, 2 micro-batches gpipe (one EP rank)", 4, 2, 2, 2, "gpipe", "data_centric", 1, "learned");
    row("pp2 x dp2 janus, 2 nodes, 2 micro-batches", 4, 1, 2, 2, "1f1b", "janus", 2, "learned");
    row("tp2 x dp2 janus, 2 nodes", 4, 2, 1, 1, "1f1b", "janus", 2, "zipf:1.2");
    row("tp2 x dp2 expert_centric, experts sliced over TP", 4, 2, 1, 1, "1f1b", "expert_centric+expert_tp", 1, "learned");
    row("tp4 expert_centric, experts sliced over TP", 4, 4, 1, 1, "1f1b", "expert_centric+expert_tp", 1, "zipf:1.2");
    row("tp2 x dp2 expert_centric, vocabulary-parallel embedding and head", 4, 2, 1, 1, "1f1b", "expert_centric+vocab", 1, "learned");
    row("tp2 x pp2 ppmoe, vocabulary-parallel (tied copy on the last stage)", 4, 2, 2, 2, "1f1b", "ppmoe+vocab", 1, "learned");
    // monta (MoNTA): drop + AllToAll + AllGather + copy, chunks pipelined (O2) and the copy on its stream (O3).
    row("tp2 x dp2 monta O1, 2 nodes", 4, 2, 1, 1, "1f1b", "monta:O1:auto", 2, "learned");
    row("tp2 x dp2 monta O2 3 chunks, 2 nodes", 4, 2, 1, 1, "1f1b", "monta:O2:3", 2, "learned");
    row("tp2 x dp2 monta O3 2 chunks, sliced experts, 2 nodes", 4, 2, 1, 1, "1f1b", "monta:O3:2+expert_tp", 2, "zipf:1.2");
    row("tp2 x dp2 monta baseline, sliced experts", 4, 2, 1, 1, "1f1b", "monta:baseline:auto+expert_tp", 1, "learned");
    row("tp4 monta O2 4 chunks, sliced experts", 4, 4, 1, 1, "1f1b", "monta:O2:4+expert_tp", 1, "learned");
    row("tp2 x pp2 monta auto, 2 micro-batches", 4, 2, 2, 2, "1f1b", "monta:auto:auto", 1, "learned");
    row("tp2 x dp2 monta O2 2 chunks, EP priority, 2 nodes", 4, 2, 1, 1, "1f1b", "monta:O2:2+ep_priority", 2, "learned");
    row("tp2 x dp2 monta auto, sliced experts, zipf, 2 nodes", 4, 2, 1, 1, "1f1b", "monta:auto:auto+expert_tp", 2, "zipf:1.5");
    row("tp4 x dp2 monta O3 4 chunks, sliced experts, 2 nodes", 8, 4, 1, 1, "1f1b", "monta:O3:4+expert_tp", 2, "learned");
    row("tp2 x dp4 monta O2 2 chunks, 2 nodes", 8, 2, 1, 1, "1f1b", "monta:O2:2", 2, "zipf:1.2");
    row("tp2 x pp2 x dp2 monta O3 2 chunks, EP priority, 2 nodes", 8, 2, 2, 2, "1f1b", "monta:O3:2+ep_priority", 2,
        "learned");
    row("tp2 x dp4 per_block monta auto + data_centric, 2 nodes", 8, 2, 1, 1, "1f1b",
        "per_block:monta,data_centric", 2, "learned");
    row("tp2 x pp2 x dp2 monta O3 3 chunks, sliced experts, 2 nodes", 8, 2, 2, 2, "gpipe", "monta:O3:3+expert_tp", 2, "learned");
    row("tp2 x dp4 expert_centric, 2 nodes", 8, 2, 1, 1, "1f1b", "expert_centric", 2, "learned");
    row("tp2 x pp2 x dp2 data_centric, 2 nodes", 8, 2, 2, 2, "gpipe", "data_centric", 2, "learned");
    row("tp2 x dp4 janus, 2 nodes", 8, 2, 1, 1, "1f1b", "janus", 2, "zipf:1.2");
    row("tp4 x dp2 ppmoe, 2 nodes", 8, 4, 1, 1, "1f1b", "ppmoe", 2, "learned");
    row("tp8 ppmoe", 8, 8, 1, 1, "1f1b", "ppmoe", 1, "learned");
    row("tp2 x pp2 x dp2 expert_centric, 2 micro-batches", 8, 2, 2, 2, "1f1b", "expert_centric", 1, "learned");
    row("tp2 x pp2 x dp2 hier_a2a, 2 nodes", 8, 2, 2, 2, "gpipe", "hier_a2a", 2, "learned");
    row("tp2 x pp2 x dp2 ppmoe", 8, 2, 2, 2, "1f1b", "ppmoe", 1, "learned");
    row("pp4 x dp2 expert_centric, 4 micro-batches", 8, 1, 4, 4, "1f1b", "expert_centric", 1, "learned");
    row("tp2 x pp2 x dp2 hier_a2a, experts sliced over TP, 2 nodes", 8, 2, 2, 2, "1f1b", "hier_a2a+expert_tp", 2, "learned");
    row("tp4 x pp2 expert_centric, sliced experts, vocabulary-parallel", 8, 4, 2, 2, "gpipe", "expert_centric+expert_tp+vocab", 1, "learned");
  }
  void matches_single_rank() {
    QFETCH(int, ranks);
    QFETCH(int, tp);
    QFETCH(int, pp);
    QFETCH(int, micro);
    QFETCH(QString, schedule);
    QFETCH(QString, strategy);
    QFETCH(int, nodes);
    QFETCH(QString, routing);
    auto world = MpiCommunicator::world();
    if (world->size() != ranks) QSKIP("a layout of another rank count (CTest runs it in the other launch)");
    const Config cfg = layout_config({ranks, tp, pp, micro, schedule.toStdString()}, strategy.toStdString(), nodes,
                                     routing.toStdString());
    QTemporaryDir ref_dir, dist_dir;
    Trainer ref(reference_of(cfg), ref_dir.path().toStdString());
    const std::vector<float> expected = test::train_losses(ref);
    Trainer dist(cfg, dist_dir.path().toStdString(), world.get());
    QCOMPARE(dist.distributed()->tp_shard().size, tp);
    QCOMPARE(dist.model().pipe().stages, pp);
    if (strategy.contains(QStringLiteral("+vocab")))  // this rank's rows of the vocabulary
      if (const ParamView* wte = dist.model().params().find("embed.wte"))
        QCOMPARE(wte->shape, (std::vector<int64_t>{cfg.model.vocab_size / tp, cfg.model.hidden}));
    if (strategy.contains(QStringLiteral("+expert_tp"))) {  // this rank's slice of an expert: F / tp of its columns
      const ParamView* w1 = nullptr;
      for (const ParamView& v : dist.model().params().views())
        if (v.name.ends_with(".w1")) w1 = &v;
      QVERIFY(w1);
      QCOMPARE(w1->shape, (std::vector<int64_t>{cfg.model.ffn_mult * cfg.model.hidden / tp, cfg.model.hidden}));
    }
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
    Trainer t(layout_config({4, 4}, "ppmoe", 1, "learned", 1), dir.path().toStdString(), world.get());
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

  // Pipeline MoE §3.3: the gate's parameters are synchronised once per step, h x E floats per
  // MoE block all-reduced over the tp = 4 group (each rank's router gradient covers only its own
  // experts' tokens); with dp = 1 that is all the step's tail sends before the gradient norm.
  void ppmoe_synchronises_the_gate_once_per_step() {
    auto world = MpiCommunicator::world();
    if (world->size() != 4) QSKIP("a 4-rank layout (CTest runs it in the 4-rank launch)");
    const Config cfg = layout_config({4, 4}, "ppmoe", 1, "learned", 1);
    Distributed dist(*world, cfg);
    MoeGpt model(cfg.model, cfg.moe, dist.shard(), dist.tp_shard());
    model.init(cfg.run.seed);
    DeviceRuntime cpu(cfg, 0);
    dist.attach(model, cfg, cpu);
    const int T = cfg.model.seq_len, B = 2, V = cfg.model.vocab_size;
    std::vector<int> in((size_t)B * T), tg((size_t)B * T);
    for (size_t i = 0; i < in.size(); ++i) in[i] = (int)(i * 7 % V), tg[i] = (int)(i * 5 % V);
    model.params().zero_grad();
    model.forward(in.data(), tg.data(), B, T);
    model.backward();
    QCOMPARE(model.tp_partial_ranges().size(), size_t(2));  // both MoE blocks' routers
    dist.meter().reset();
    dist.executor().synchronize();
    dist.tail_action(StepOp::tp_partial, -1, model, 0.0f)();
    const uint64_t t = 4, gate = (uint64_t)cfg.model.hidden * 8 * sizeof(float);  // h x E floats
    QCOMPARE(dist.meter().total(), 2 * (2 * (t - 1) * gate / t));
  }

  // A tp = 2 x pp = 2 ppmoe run checkpoints the whole model (the tied embedding once): one rank
  // resumes from it and holds the parameters the distributed run ended with.
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
    const Config cfg = layout_config({4, 2, 2, 2}, "ppmoe", 1, "learned", 3);
    Trainer dist(cfg, path, group);
    dist.run(-1);
    group->barrier();
    Trainer single(reference_of(cfg), dir.path().toStdString() + "/single");
    QCOMPARE(single.resume(path), 3L);
    const QString diff = test::compare_params(dist.model().params(), single.model().params(), world->rank(), 1e-9);
    // and the same layout resumes from it: every stage and slice as the run left it
    Trainer again(cfg, path + "/again", group);
    QCOMPARE(again.resume(path), 3L);
    const bool same = again.model().params().host_data() == dist.model().params().host_data();
    group->barrier();  // group rank 0's folder outlives every member's reading
    QVERIFY2(diff.isEmpty(), qPrintable(diff));
    QVERIFY2(same, "the same layout resumed with other parameters than the run saved");
  }
};

MOEBENCH_MPI_TEST_MAIN(TestParallelLayouts)
#include "tst_parallel_layouts.moc"
