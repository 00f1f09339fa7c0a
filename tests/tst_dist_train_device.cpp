// ctest-labels: mpi np=2 np=4
// Every multi-rank layout on a device, without a GPU: the GPU trainer's wiring (a device
// backend's model whose MoE blocks stay local and sum their aux statistics over the DP group, or
// run their strategy over the device's data communicators: expert_centric, hier_a2a, fastermoe,
// ppmoe, monta; tensor parallelism with the vocabulary-parallel head and sliced experts; pipeline
// stages; ZeRO-3; the partitioned embedding; Distributed reducing the gradients over the device's
// data communicators from the tasks of the device's StreamExecutor; checkpoints through host
// copies) on tests/host_device.h's device — the CPU's arithmetic behind device-memory arrays, the
// executor over fake_device_queue.h, and the weight copies of mixed precision (the dense GEMMs
// read copies rewritten only where the model says the weights changed: before each step and
// after ZeRO-3's gathers; a stale copy would change the losses). Against the same layout on the CPU and, dropless, the
// one-rank reference (with the same micro-batches): the same per-step losses and parameters. And
// what the data communicators carried, by group: the gradients' all-reduces (each gradient
// element once per step; ZeRO-3's reduce-scatters instead), the rows' all-to-alls (per MoE block,
// 4 a step: dispatch and combine, forward and backward; 2 an evaluation batch; per chunk or
// phase), fastermoe's shadows' broadcasts and reduces, the TP group's all-reduces and monta's
// all-gathers, the pipeline links' messages and the tied embedding's all-reduce — the counts
// never (they go over MPI); data_centric's windows made over those communicators (its pulls and
// pushes then go through the windows).
#include <QtTest>

#include <numeric>

#include "equivalence_support.h"
#include "fake_device_queue.h"
#include "host_device.h"
#include "moebench/config/config_loader.h"
#include "moebench/dist/mpi_communicator.h"
#include "moebench/runtime/stream_executor.h"
#include "moebench/storage/dense_shards.h"
#include "moebench/train/device.h"
#include "moebench/train/trainer.h"
#include "mpi_test_main.h"
#include "test_support.h"

using namespace moebench;
using namespace Qt::StringLiterals;

class TestDistTrainDevice : public QObject {
  Q_OBJECT

 private slots:
  void data_parallel_on_a_device_matches_the_cpu_data() {
    QTest::addColumn<QString>("capacity");
    QTest::addColumn<int>("ep");
    QTest::addColumn<QString>("strategy");  // fastermoe: "+shadow", "+smart", "+groupN", "+topo_gate" set its options
    QTest::addColumn<QString>("routing");
    QTest::addColumn<int>("tp");
    QTest::newRow("dropless") << "0" << 1 << "expert_centric" << "learned" << 1;  // then also the one-rank run's
    QTest::newRow("capacity 1.5 (per rank, GShard)") << "1.5" << 1 << "expert_centric" << "learned" << 1;
    // the heads and FFN columns split over the ranks (Megatron): activations all-reduced over TP
    QTest::newRow("tensor parallel") << "0" << 1 << "expert_centric" << "learned" << 2;
    QTest::newRow("tensor parallel, vocabulary-parallel head") << "0" << 1 << "expert_centric+vocab" << "learned" << 2;
    // DeepSpeed-TED: each expert's FFN columns over the TP group, the partial outputs summed over it
    QTest::newRow("tensor parallel, sliced experts") << "0" << 0 << "expert_centric+expert_tp" << "learned" << 2;
    // MoESys' embedding partition: embed.wte's columns over DP, ids all-gathered, slices exchanged
    QTest::newRow("embedding partition") << "0" << 1 << "expert_centric+embed_partition" << "learned" << 1;
    // Pipeline MoE: the experts spread over the TP group, which holds the tokens (no exchange;
    // the outputs' and dx's shares all-reduced over TP)
    QTest::newRow("ppmoe over the TP group") << "0" << 0 << "ppmoe" << "learned" << 2;
    QTest::newRow("ppmoe, capacity 1.5") << "1.5" << 0 << "ppmoe" << "learned" << 2;
    // MoNTA: each TP rank sends its part of the rows over EP, the TP group all-gathers them;
    // "+LEVEL:CHUNKS" sets [strategy.monta]
    QTest::newRow("monta O2, 2 chunks") << "0" << 0 << "monta+O2:2" << "learned" << 2;
    QTest::newRow("monta O3, 3 chunks, zipf") << "0" << 0 << "monta+O3:3" << "zipf:1.2" << 2;
    QTest::newRow("monta O3, 2 chunks, sliced experts") << "0" << 0 << "monta+O3:2+expert_tp" << "learned" << 2;
    QTest::newRow("expert parallel, dropless") << "0" << 0 << "expert_centric" << "learned" << 1;  // ep = 0: the whole DP group
    QTest::newRow("expert parallel, capacity 1.5") << "1.5" << 0 << "expert_centric" << "learned" << 1;
    QTest::newRow("expert parallel, zipf routing") << "0" << 0 << "expert_centric" << "zipf:1.2" << 1;
    // one rank on each of two nodes: the node phase within each rank, the rows across nodes
    QTest::newRow("hier_a2a over two nodes, dropless") << "0" << 0 << "hier_a2a" << "learned" << 1;
    // fastermoe over two nodes of one rank: a hot expert is shadowed (broadcast, computed where
    // its tokens are, its gradient reduced to the owner); smart exchanges in one chunk per group
    QTest::newRow("fastermoe shadow, every token to expert 1") << "0" << 0 << "fastermoe+shadow" << "hot:1,1" << 1;
    QTest::newRow("fastermoe smart, groups of 1") << "0" << 0 << "fastermoe+smart+group1" << "learned" << 1;
    QTest::newRow("fastermoe smart + shadow, capacity 1.5") << "1.5" << 0 << "fastermoe+shadow+smart+group1"
                                                            << "hot:0,1" << 1;
    QTest::newRow("fastermoe topo_gate") << "0" << 0 << "fastermoe+topo_gate" << "learned" << 1;
    // Janus' data_centric: the experts pulled and their gradients pushed through windows of the
    // device's data communicators; "+prefetch", "+creditsN", "+hier" (the node cache, two ranks
    // per node: np=4), "+pairing" set [strategy.data_centric]; janus with threshold 0 picks it
    // for every block
    QTest::newRow("data_centric over one-rank nodes") << "0" << 0 << "data_centric" << "learned" << 1;
    QTest::newRow("data_centric, prefetch, 1 credit") << "0" << 0 << "data_centric+prefetch+credits1" << "zipf:1.2" << 1;
    QTest::newRow("data_centric, node cache, prefetch, pairing") << "0" << 0 << "data_centric+hier+prefetch+pairing"
                                                                  << "learned" << 1;
    QTest::newRow("janus, data_centric everywhere") << "0" << 0 << "janus+threshold0" << "learned" << 1;
    // "+served": each node a machine of its own, which the device's windows do not reach across
    // (as CUDA IPC's): the pulls and pushes between machines are requests served over MPI
    QTest::newRow("data_centric across machines") << "0" << 0 << "data_centric+served" << "zipf:1.2" << 1;
    QTest::newRow("data_centric across machines, node cache, prefetch")
        << "0" << 0 << "data_centric+hier+prefetch+served" << "learned" << 1;
    QTest::newRow("janus across machines") << "0" << 0 << "janus+served+threshold0" << "learned" << 1;
    // ZeRO-3: the dense parts reduce-scattered and gathered over DP (prefetched, or on demand)
    QTest::newRow("zero3, dense prefetch") << "0" << 0 << "expert_centric+zero3" << "learned" << 1;
    QTest::newRow("zero3 on demand, experts replicated") << "0" << 1 << "expert_centric+zero3+on_demand" << "learned" << 1;
    // pipeline stages ("+ppN", "+gpipe", "+microN"): the activations and their gradients over
    // each pair of neighbour stages' links, the tied embedding's gradient over the first and last
    QTest::newRow("pp 2, 1f1b, 2 micro-batches") << "0" << 0 << "expert_centric+pp2+micro2" << "learned" << 1;
    QTest::newRow("pp 2, gpipe, 4 micro-batches") << "0" << 0 << "expert_centric+pp2+gpipe+micro4" << "learned" << 1;
  }
  void data_parallel_on_a_device_matches_the_cpu() {
    QFETCH(QString, capacity);
    QFETCH(int, ep);
    QFETCH(QString, strategy);
    QFETCH(QString, routing);
    QFETCH(int, tp);
    auto world = MpiCommunicator::world();
    const int P = world->size();
    if (P == 1) QSKIP("needs more than one rank (run under mpirun)");
    const long steps = 4;
    const QStringList parts = strategy.split(u'+');
    const QString name = parts[0];
    if (name == "monta" && P / tp < 2) QSKIP("monta's exchange needs two DP ranks per TP rank (np=4)");
    std::vector<std::string> settings = {"train.steps=" + std::to_string(steps),
                                         "train.batch_size=" + std::to_string(2 * P), "train.eval_every=0",
                                         "run.ranks=" + std::to_string(P), "run.threads=1",
                                         "parallel.ep=" + std::to_string(ep), "strategy.name=" + name.toStdString(),
                                         "moe.capacity_factor=" + capacity.toStdString(),
                                         "moe.routing=" + routing.toStdString(), "parallel.tp=" + std::to_string(tp)};
    if (routing.startsWith(u"hot:"_s)) settings.push_back("moe.top_k=1");  // the hot expert's rows only
    const bool zero3 = parts.contains(u"zero3"_s);
    if (zero3)
      settings.insert(settings.end(), {"storage.dense=zero3", "storage.dense_prefetch=" +
                                                                  std::string(parts.contains(u"on_demand"_s) ? "false" : "true")});
    const bool hier = parts.contains(u"hier"_s);
    if (hier && P < 4) QSKIP("the node cache needs two nodes of two ranks (np=4)");
    int pp = 1;
    for (const QString& o : parts.mid(1))
      if (o == "zero3" || o == "on_demand" || o == "served") continue;
      else if (name == "janus") settings.push_back("strategy.janus.threshold=" + o.mid(9).toStdString());
      else if (o == "hier") settings.push_back("strategy.data_centric.hierarchical=true");
      else if (o == "prefetch") settings.push_back("strategy.data_centric.prefetch=true");
      else if (o.startsWith(u"credits"_s)) settings.push_back("strategy.data_centric.credits=" + o.mid(7).toStdString());
      else if (o == "pairing")
        settings.insert(settings.end(), {"strategy.data_centric.pcie_pairing=true", "cluster.pcie_switch_pairs=[0, 1]"});
      else if (o == "vocab") settings.push_back("parallel.vocab_parallel=true");
      else if (o == "expert_tp") settings.push_back("moe.expert_tp=true");
      else if (o == "embed_partition") settings.insert(settings.end(), {"model.embedding_partition=true", "model.tied_head=false"});
      else if (o.startsWith(u"pp"_s)) settings.push_back("parallel.pp=" + std::to_string(pp = o.mid(2).toInt()));
      else if (o == "gpipe") settings.push_back("parallel.schedule=gpipe");
      else if (o.startsWith(u"micro"_s)) settings.push_back("parallel.microbatches=" + o.mid(5).toStdString());
      else if (name == "monta")
        settings.insert(settings.end(), {"strategy.monta.level=" + o.section(u':', 0, 0).toStdString(),
                                         "strategy.monta.chunks=" + o.section(u':', 1, 1).toStdString()});
      else
        settings.push_back(o.startsWith(u"group"_s) ? "strategy.fastermoe.group_size=" + o.mid(5).toStdString()
                                                    : "strategy.fastermoe." + o.toStdString() + "=true");
    // Two MoE blocks where strategies make communicators of their own (shared by the blocks).
    if (name == "data_centric" || name == "janus" || name == "hier_a2a") settings.push_back("moe.moe_layers=[0, 1]");
    if (name != "expert_centric")  // one rank per node; two with the node cache
      settings.insert(settings.end(), {"cluster.nodes=" + std::to_string(hier ? P / 2 : P),
                                       "cluster.devices_per_node=" + std::string(hier ? "2" : "1")});
    const Config cfg = load_config(test::tiny_config_path(), settings);
    QTemporaryDir dir;
    const std::string out = dir.path().toStdString() + "/r" + std::to_string(world->rank());

    // the one-rank reference: the whole model on one rank, with the same micro-batches
    std::vector<std::string> one_stage = {"run.ranks=1"};
    for (const std::string& set : settings)
      if (!set.starts_with("parallel.pp=") && !set.starts_with("parallel.schedule=") && !set.starts_with("run.ranks="))
        one_stage.push_back(set);
    Trainer single(pp > 1 ? load_config(test::tiny_config_path(), one_stage) : cfg, out + "/single");
    Trainer cpu(cfg, out + "/cpu", world.get());
    const std::vector<float> cpu_losses = test::train_losses(cpu);

    test::HostDevice backend(true);
    test::FakeDeviceQueue queue;
    StreamExecutor executor(queue, world->rank());
    auto log = std::make_shared<std::vector<test::RecordedCall>>();
    std::function<int(int)> machine;  // "+served": a node's ranks on one machine
    if (parts.contains(u"served"_s)) machine = [hier](int world_rank) { return hier ? world_rank / 2 : world_rank; };
    auto made = std::make_shared<size_t>(0);  // data communicators made
    auto recorded = [log, machine, made](Communicator& group) {
      ++*made;
      return std::make_unique<test::RecordingCommunicator>(group.dup(), log, machine);
    };
    Trainer device(cfg, out + "/device", world.get(), std::make_unique<DeviceRuntime>(backend, &executor, recorded));
    QVERIFY(device.model().params().backend().device_memory());
    QVERIFY(device.model().params().backend().mixed_precision());
    const size_t built = log->size();  // nothing is reduced before the first step
    const size_t made_before = *made;
    const std::vector<float> device_losses = test::train_losses(device);

    const QString losses = test::compare_losses(device_losses, cpu_losses, world->rank());
    QVERIFY2(losses.isEmpty(), qPrintable(losses));
    const QString params = test::compare_params(device.model().params(), cpu.model().params(), world->rank(), 1e-5);
    QVERIFY2(params.isEmpty(), qPrintable(params));
    if (cfg.moe.capacity_factor == 0) {  // capacity is per rank: with drops, 2 ranks are not 1
      const QString vs_single = test::compare_losses(device_losses, test::train_losses(single), world->rank());
      QVERIFY2(vs_single.isEmpty(), qPrintable(vs_single));
      const QString params_single = test::compare_params(device.model().params(), single.model().params(), world->rank());
      QVERIFY2(params_single.isEmpty(), qPrintable(params_single));
    }

    // The data communicators carried the gradients' all-reduces (once per step every dense
    // element over DP, and every expert element over its replicas where it has some: ep = 1)
    // and the rows' exchanges.
    size_t elements = 0, exchanges = 0, broadcasts = 0, reduces = 0, tp_reduces = 0, tp_gathers = 0, tp_scatters = 0;
    size_t scattered = 0, gathered = 0;  // zero3: the dense gradients' reduce-scatters, the weights' gathers
    size_t gather_calls = 0;             // the embedding partition's: the token ids
    size_t windows = 0;                  // data_centric's: parameters and gradients per block
    const bool embed = parts.contains(u"embed_partition"_s);
    const int dp = P / tp / pp, me = world->rank(), stride = dp * tp;
    // the tied embedding's pair: this rank's DP and TP position on the first and the last stage
    const std::vector<int> tied_group = {me % stride, me % stride + (pp - 1) * stride};
    size_t messages = 0, tied = 0;  // pipeline sends and receives; the tied embedding's elements
    std::vector<int> tp_group;  // Megatron's order: TP ranks adjacent
    for (int r = me - me % tp; r < me - me % tp + tp; ++r) tp_group.push_back(r);
    for (size_t i = built; i < log->size(); ++i) {
      const std::string& op = (*log)[i].op;
      if (tp > 1 && (*log)[i].group == tp_group) {  // the TP group's: activations, partial gradients, monta's rows
        if (op == "all_gather") {
          ++tp_gathers;
          continue;
        }
        if (op == "reduce_scatter") {  // monta with sliced experts: the partial rows summed before the return trip
          ++tp_scatters;
          continue;
        }
        QCOMPARE(QString::fromStdString(op), QStringLiteral("all_reduce"));
        ++tp_reduces;
      } else if (op == "send" || op == "recv") {
        ++messages;
      } else if (pp > 1 && op == "all_reduce" && (*log)[i].group == tied_group) {
        tied += (*log)[i].count;
      } else if (op == "all_to_all_v") ++exchanges;
      else if (op == "reduce_scatter") scattered += (*log)[i].count * P;  // count: each rank's shard
      else if (op == "all_gather") {
        gathered += (*log)[i].count * P;
        ++gather_calls;
      }
      else if (op == "create_window") ++windows;  // data_centric's, over the experts' memory
      else if (op == "broadcast") ++broadcasts;  // fastermoe's shadowed experts, forward
      else if (op == "reduce") ++reduces;        // ... and their gradients to the owner
      else {
        QCOMPARE(QString::fromStdString(op), QStringLiteral("all_reduce"));
        elements += (*log)[i].count;
      }
    }
    if (parts.contains(u"shadow"_s)) {
      QVERIFY2(broadcasts > 0 && reduces > 0, "no expert was shadowed on the device's communicators");
      double shadowed = 0;
      for (const StrategyDecision& d : device.model().strategy_decisions(1))
        if (d.key == "fastermoe.shadowed") shadowed = d.value;
      QVERIFY2(shadowed >= 1, "Algorithm 1 shadowed no expert of the hot routing");
    } else {
      QCOMPARE(broadcasts + reduces, size_t(0));
    }
    if (tp > 1) QVERIFY2(tp_reduces > 0, "the TP group's activations never crossed a device communicator");
    // monta: each chunk's AllToAll is followed by the TP group's AllGather of the pieces
    QCOMPARE(tp_gathers, name == "monta" ? exchanges : size_t(0));
    QCOMPARE(tp_scatters > 0, name == "monta" && parts.contains(u"expert_tp"_s));
    size_t expert_elements = 0;
    for (const BlockExperts& b : device.model().expert_ranges()) expert_elements += b.range.count;
    // the experts only over their replicas: several DP ranks and ep = 1, or ppmoe (EP = TP)
    const bool replicas = dp > 1 && (ep == 1 || name == "ppmoe");
    const size_t reduced = device.model().params().size() - (replicas ? 0 : expert_elements);
    if (pp > 1) {  // each stage's link carried its micro-batches; the tied embedding's gradient once a step
      QVERIFY2(messages > 0, "no activation crossed a pipeline link");
      const ParamView* wte = device.model().params().find("embed.wte");
      QCOMPARE(tied, wte ? (size_t)steps * wte->numel : size_t(0));
    } else {
      QCOMPARE(messages + tied, size_t(0));
    }
    if (zero3) {  // the dense parts reduce-scattered instead (P shards of s each), all-gathered for forward
      size_t dense = 0;
      for (const DenseShards::Part& p : device.dense_shards()->parts()) dense += p.shard * P;
      QCOMPARE(scattered, (size_t)steps * dense);
      QVERIFY2(gathered >= (size_t)(steps - 1) * dense, "the dense parts were not gathered after each update");
      QCOMPARE(elements, (size_t)steps * (replicas ? expert_elements : 0));
    } else if (embed) {  // each rank owns its columns of embed.wte: no all-reduce of the table
      QCOMPARE(scattered, size_t(0));
      QCOMPARE(elements, (size_t)steps * (reduced - device.model().params().find("embed.wte")->numel));
      // the ids all-gathered and the column slices exchanged, forward and backward
      QCOMPARE(gather_calls, (size_t)(steps + cfg.train.eval_batches));
      QCOMPARE(exchanges, (size_t)(2 * steps + cfg.train.eval_batches));
      return;
    } else {
      QCOMPARE(scattered + gathered, size_t(0));
      QCOMPARE(elements, (size_t)steps * reduced);
    }
    // 4 per MoE block and step, 2 per block and batch of the final evaluation (forward only); each
    // per micro-batch
    const size_t passes = ((size_t)steps * 4 + (size_t)cfg.train.eval_batches * 2) * cfg.parallel.microbatches;
    // hier_a2a: each in two phases, the node's and the nodes'; fastermoe's smart schedule: one
    // chunk per group of ranks
    // data_centric's windows: the parameters' and the gradients' of each MoE block, made once
    const bool pulls = name == "data_centric" || name == "janus";
    QCOMPARE(windows, pulls ? 2 * device.model().expert_ranges().size() : size_t(0));
    // The strategies' own groups get one data communicator each for the run, whatever the number
    // of blocks (MoeContext::rows_communicator): data_centric's windows' (and its node cache's),
    // hier_a2a's node and cross-node groups'.
    if (pulls || name == "hier_a2a") {
      QCOMPARE(device.model().expert_ranges().size(), size_t(2));
      QCOMPARE(*made - made_before, size_t(name == "hier_a2a" || hier ? 2 : 1));
    }
    const size_t phases = name == "ppmoe" || pulls       ? 0
                          : name == "hier_a2a"           ? 2
                          : parts.contains(u"smart"_s)   ? (size_t)P
                          : name == "monta"              ? (size_t)parts[1].section(u':', 1, 1).toInt()
                                                         : 1;
    const int ep_size = name == "ppmoe" ? tp : ep == 0 ? dp : ep;  // ppmoe: the EP group is the TP group
    const size_t blocks = device.model().expert_ranges().size();  // this stage's MoE blocks
    // sliced experts run their strategy on an EP group of one rank too (its exchange a local copy)
    const bool sliced = parts.contains(u"expert_tp"_s);
    QCOMPARE(exchanges, ep_size == 1 && !sliced ? size_t(0) : passes * phases * blocks);
  }
};

MOEBENCH_MPI_TEST_MAIN(TestDistTrainDevice)
#include "tst_dist_train_device.moc"
