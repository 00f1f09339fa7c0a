// ctest-labels: gpu np=2 np=4
// Data parallelism on GPUs (run.device = "cuda", fp32, parallel.ep = 1: every expert on each
// rank) and expert parallelism (parallel.ep = 0, expert_centric, hier_a2a and fastermoe with its
// shadows, smart schedule and topology-aware gate over NCCL; synthetic routing too) and tensor
// parallelism (tp = 2, the activations' all-reduces over NCCL; ppmoe's experts over the TP group;
// monta's pieces all-gathered over it; the vocabulary-parallel head; sliced experts), ZeRO-3's dense shards,
// pipeline stages and the partitioned embedding, data_centric and janus (CUDA IPC windows), and mixed precision (run.precision = "bf16")
// with ZeRO-3 (the gathered parts' bf16 copies) and with expert parallelism: the
// launched ranks, sharing the machine's GPUs (local rank mod devices; NCCL between ranks of one
// GPU through dist/device_sharing.h), train the tiny model and every rank compares its per-step
// losses and its parameters after the steps with the one-rank GPU run within 1e-4 (relative for
// data parallelism; absolute, by name, for the experts each rank holds); in bf16 the losses
// within 1e-3 (relative) and the parameters within 3e-3 (absolute): the same bf16 operands,
// whose fp32 sums differ in their last bits with the rows per rank and may round an operand of a
// later GEMM the other way (a parameter moves by at most lr per step). Without a CUDA build or
// a GPU every test is skipped; on one rank too.
#include <QtTest>

#include <cmath>
#include <string>
#include <vector>

#include "equivalence_support.h"
#include "gpu_support.h"
#include "moebench/config/config_loader.h"
#include "moebench/dist/mpi_communicator.h"
#include "moebench/train/trainer.h"
#include "mpi_test_main.h"
#include "test_support.h"

using namespace moebench;
using namespace Qt::StringLiterals;

class TestDistTrainCuda : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { MOEBENCH_REQUIRE_GPU(); }

  void data_parallel_matches_one_gpu_data() {
    QTest::addColumn<int>("ep");
    QTest::addColumn<QString>("strategy");  // fastermoe: "+shadow", "+smart", "+groupN", "+topo_gate"
    QTest::addColumn<QString>("routing");
    QTest::addColumn<int>("tp");
    QTest::newRow("data parallel (every expert on each rank)") << 1 << "expert_centric" << "learned" << 1;
    QTest::newRow("expert parallel (expert_centric)") << 0 << "expert_centric" << "learned" << 1;
    QTest::newRow("expert parallel (expert_centric, zipf routing)") << 0 << "expert_centric" << "zipf:1.2" << 1;
    QTest::newRow("expert parallel (hier_a2a, two virtual nodes)") << 0 << "hier_a2a" << "learned" << 1;
    QTest::newRow("fastermoe shadow + smart, hot expert") << 0 << "fastermoe+shadow+smart+group1" << "hot:0,1" << 1;
    QTest::newRow("fastermoe topo_gate") << 0 << "fastermoe+topo_gate" << "learned" << 1;
    // tp = 2: heads and FFN columns over pairs of ranks; on 4 ranks expert_centric over the 2 DP ranks
    QTest::newRow("tensor parallel (tp = 2)") << 0 << "expert_centric" << "learned" << 2;
    QTest::newRow("ppmoe (experts over the TP group)") << 0 << "ppmoe" << "learned" << 2;
    QTest::newRow("tensor parallel, vocabulary-parallel head") << 1 << "expert_centric+vocab" << "learned" << 2;
    QTest::newRow("tensor parallel, sliced experts (DeepSpeed-TED)") << 0 << "expert_centric+expert_tp" << "learned" << 2;
    QTest::newRow("embedding partition (MoESys)") << 1 << "expert_centric+embed_partition" << "learned" << 1;
    // ZeRO-3: the dense parts sharded over DP, reduce-scattered and gathered over NCCL
    QTest::newRow("zero3 (expert parallel, dense prefetch)") << 0 << "expert_centric+zero3" << "learned" << 1;
    QTest::newRow("zero3 with the experts (ep 1)") << 1 << "expert_centric+zero3+zero3_experts" << "learned" << 1;
    // two pipeline stages ("+ppN", "+microN"): NCCL send / receive over each pair of stages
    QTest::newRow("pp 2, 1f1b, 2 micro-batches") << 0 << "expert_centric+pp2+micro2" << "learned" << 1;
    // monta (4 ranks: tp 2 x dp 2): "+LEVEL:CHUNKS" sets [strategy.monta]
    QTest::newRow("monta O3, 2 chunks (tp = 2)") << 0 << "monta+O3:2" << "learned" << 2;
    // data_centric: the experts pulled from the owners' GPU memory and their gradients added back
    // through CUDA IPC windows (ranks of one machine); "+hier" the node cache in a node-shared IPC
    // window, "+prefetch" the pulls at the iteration start; janus with threshold 0: data_centric
    // for every block
    QTest::newRow("data_centric (CUDA IPC windows)") << 0 << "data_centric" << "learned" << 1;
    QTest::newRow("data_centric, node cache, prefetch") << 0 << "data_centric+hier+prefetch" << "learned" << 1;
    QTest::newRow("janus, data_centric everywhere") << 0 << "janus+threshold0" << "learned" << 1;
    // mixed precision: the weights' bf16 copies rewritten where ZeRO-3 gathers them; the experts'
    // bf16 GEMMs on exchanged rows
    QTest::newRow("bf16, zero3") << 1 << "expert_centric+zero3+bf16" << "learned" << 1;
    QTest::newRow("bf16, expert parallel (expert_centric)") << 0 << "expert_centric+bf16" << "learned" << 1;
  }
  void data_parallel_matches_one_gpu() {
    QFETCH(int, ep);
    QFETCH(QString, strategy);
    QFETCH(QString, routing);
    QFETCH(int, tp);
    auto world = MpiCommunicator::world();
    const int P = world->size();
    if (P == 1) QSKIP("needs more than one rank (run under mpirun)");
    const QStringList parts = strategy.split(u'+');
    std::vector<std::string> settings = {"run.device=cuda", "run.ranks=" + std::to_string(P),
                                         "parallel.ep=" + std::to_string(ep), "strategy.name=" + parts[0].toStdString(),
                                         "train.batch_size=" + std::to_string(2 * P), "train.steps=4",
                                         "train.eval_every=0", "train.grad_clip=0.5", "moe.capacity_factor=0",
                                         "moe.routing=" + routing.toStdString(), "parallel.tp=" + std::to_string(tp)};
    if (parts[0] == "monta" && P / tp < 2) QSKIP("monta's exchange needs two DP ranks per TP rank (np=4)");
    int pp = 1;
    const bool bf16 = parts.contains(u"bf16"_s);
    for (const QString& o : parts.mid(1))
      if (o == "bf16")
        settings.push_back("run.precision=bf16");
      else if (parts[0] == "janus")
        settings.push_back("strategy.janus.threshold=" + o.mid(9).toStdString());
      else if (o == "hier" || o == "prefetch")
        settings.push_back("strategy.data_centric." + std::string(o == "hier" ? "hierarchical" : "prefetch") + "=true");
      else if (o == "zero3")
        settings.push_back("storage.dense=zero3");
      else if (o == "zero3_experts")
        settings.push_back("storage.zero3_experts=true");
      else if (o == "vocab")
        settings.push_back("parallel.vocab_parallel=true");
      else if (o == "expert_tp")
        settings.push_back("moe.expert_tp=true");
      else if (o == "embed_partition")
        settings.insert(settings.end(), {"model.embedding_partition=true", "model.tied_head=false"});
      else if (o.startsWith(u"pp"_s))
        settings.push_back("parallel.pp=" + std::to_string(pp = o.mid(2).toInt()));
      else if (o.startsWith(u"micro"_s))
        settings.push_back("parallel.microbatches=" + o.mid(5).toStdString());
      else if (parts[0] == "monta")
        settings.insert(settings.end(), {"strategy.monta.level=" + o.section(u':', 0, 0).toStdString(),
                                         "strategy.monta.chunks=" + o.section(u':', 1, 1).toStdString()});
      else
        settings.push_back(o.startsWith(u"group"_s) ? "strategy.fastermoe.group_size=" + o.mid(5).toStdString()
                                                    : "strategy.fastermoe." + o.toStdString() + "=true");
    if (routing.startsWith(u"hot:"_s)) settings.push_back("moe.top_k=1");  // the hot expert's rows only
    if (parts[0] != "expert_centric")  // two virtual nodes over the machine's GPUs
      settings.insert(settings.end(), {"cluster.nodes=2", "cluster.devices_per_node=" + std::to_string(P / 2)});
    const Config cfg = load_config(test::tiny_config_path(), settings);
    QTemporaryDir dir;
    const std::string out = dir.path().toStdString() + "/r" + std::to_string(world->rank());
    std::vector<std::string> one_stage = {"run.ranks=1"};  // one GPU: the whole model, the same micro-batches
    for (const std::string& set : settings)
      if (!set.starts_with("parallel.pp=") && !set.starts_with("run.ranks=")) one_stage.push_back(set);
    Trainer one(pp > 1 ? load_config(test::tiny_config_path(), one_stage) : cfg, out + "/one");
    const std::vector<float> expected = test::train_losses(one);
    Trainer dist(cfg, out + "/dist", world.get());
    QVERIFY(dist.distributed());
    const std::vector<float> got = test::train_losses(dist);
    const double loss_tol = bf16 ? 1e-3 : 1e-4, param_tol = bf16 ? 3e-3 : 1e-4;
    const QString losses = test::compare_losses(got, expected, world->rank(), (float)loss_tol);
    QVERIFY2(losses.isEmpty(), qPrintable(losses));

    // each rank holds its experts, slices, stage or embedding columns (or bf16): compared by name, absolute
    if (bf16 || ep != 1 || tp != 1 || dist.model().params().size() != one.model().params().size()) {
      const QString params = test::compare_params(dist.model().params(), one.model().params(), world->rank(), param_tol);
      QVERIFY2(params.isEmpty(), qPrintable(params));
      return;
    }
    const std::vector<float> a = dist.model().params().host_data(), b = one.model().params().host_data();
    QCOMPARE(a.size(), b.size());  // every expert on each rank: the same arena
    for (const ParamView& v : one.model().params().views()) {
      const double worst = test::worst_relative(a, b, v.offset, v.numel);
      QVERIFY2(worst <= 1e-4, qPrintable(QString("rank %1: %2 differs by %3 (relative)")
                                             .arg(world->rank()).arg(QString::fromStdString(v.name)).arg(worst)));
    }
  }
};

MOEBENCH_MPI_TEST_MAIN(TestDistTrainCuda)
#include "tst_dist_train_cuda.moc"
