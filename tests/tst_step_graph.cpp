// The step graph of tensor- and pipeline-parallel layouts (train/step_graph.h): the SSD tier's
// update after the optimizer against hand-built ones, a pipeline
// stage's graph against a hand-built one, sliced pipeline sends under TP, ppmoe's MoE block moving only the TP all-reduce of
// Pipeline MoE §3.3.4, the experts' all-reduce over their replicas once per MoE block with the
// block as its layer, the replayed pipeline's makespan inside the 1F1B / GPipe bounds, and every
// layout of the equivalence matrix replaying without a deadlock, the workload's precision in the
// predicted bytes, and [data] tasks giving each rank its rows.
#include <QtTest>

#include <map>
#include <numeric>
#include <set>

#include "moebench/config/config_loader.h"
#include "moebench/model/dense_costs.h"
#include "moebench/optim/adamw.h"
#include "moebench/perf/simulator.h"
#include "moebench/train/step_graph.h"
#include "test_support.h"

using namespace moebench;

namespace {

// A data row's --set list, on a cluster of 2 nodes.
std::vector<std::string> on_two_nodes(const QStringList& sets) {
  std::vector<std::string> s;
  for (const QString& x : sets) s.push_back(x.toStdString());
  s.push_back("cluster.nodes=2");
  return s;
}

Config tiny(std::vector<std::string> sets) {
  sets.push_back("cluster.nodes=1");
  return load_config(test::tiny_config_path(), sets);
}

GraphTask task(const char* name, TaskCategory category, StreamRole role, int layer, int chunk, double flops = 0) {
  GraphTask t;
  t.name = name;
  t.category = category;
  t.role = role;
  t.layer = layer;
  t.chunk = chunk;
  t.cost.flops = flops;
  return t;
}

// The first task where two graphs differ, in words (for failure messages).
QString first_difference(const TaskGraph& a, const TaskGraph& b) {
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const GraphTask &x = a.task((int)i), &y = b.task((int)i);
    TaskGraph one, other;
    GraphTask xc = x, yc = y;
    xc.deps.clear(), yc.deps.clear();
    one.add(xc);
    other.add(yc);
    if (!one.same_schedule(other) || x.deps != y.deps)
      return QString("task %1: %2 (layer %3 chunk %4, %5 deps) vs %6 (layer %7 chunk %8, %9 deps)")
          .arg(i).arg(x.name.c_str()).arg(x.layer).arg(x.chunk).arg(x.deps.size())
          .arg(y.name.c_str()).arg(y.layer).arg(y.chunk).arg(y.deps.size());
  }
  return QString("sizes %1 vs %2").arg(a.size()).arg(b.size());
}

double makespan(const Config& cfg) {
  std::vector<TaskGraph> graphs;
  for (int r = 0; r < cfg.run.ranks; ++r) graphs.push_back(build_step_graph(cfg, r));
  std::vector<const TaskGraph*> ptrs;
  for (const TaskGraph& g : graphs) ptrs.push_back(&g);
  return simulate_graphs(ptrs, ClusterNetwork(cluster_model(cfg))).makespan;
}

}  // namespace

class TestStepGraph : public QObject {
  Q_OBJECT
 private slots:
  // Stage 0 of pp = 2 x dp = 2 with 2 micro-batches under 1F1B (F0 F1 B0 B1 for this stage):
  // activations out and gradients in per micro-batch, the buckets on the last backward only,
  // then the tied embedding exchanged with the last stage.
  void pipeline_stage_against_hand_built() {
    const Config cfg = tiny({"run.ranks=4", "parallel.pp=2", "parallel.microbatches=2"});
    const double N = 1 * 16, C = 32, T = 16, F = 64, V = 32;  // micro-batch 1 sequence of 16
    TaskGraph want;
    TaskId last;
    auto main = [&](GraphTask t) { return last = want.add(std::move(t), {last}); };
    auto send = [&](int chunk) {
      GraphTask t = task("pp.forward", TaskCategory::comm, StreamRole::comm_intra, 1, chunk);
      t.peer = 2;  // stage 1, same DP rank
      t.cost.bytes_to_peer.push_back({2, (uint64_t)(N * C * 4)});
      want.add(std::move(t), {last});
    };
    for (int m = 0; m < 2; ++m) {
      GraphTask in = task("batch.copy_in", TaskCategory::copy, StreamRole::copy, -1, m);  // the token ids
      in.cost.copy_bytes = (uint64_t)N * 4;
      main(std::move(in));
      main(task("embed.forward", TaskCategory::compute, StreamRole::compute, -1, m));
      main(task("attn.forward", TaskCategory::compute, StreamRole::compute, 0, m, attn_forward_flops(N, C, T)));
      main(task("ffn.forward", TaskCategory::compute, StreamRole::compute, 0, m, ffn_forward_flops(N, C, F)));
      main(task("stage.output", TaskCategory::compute, StreamRole::compute, -1, m));  // the residual sum sent on
      send(m);
    }
    // ln1 2C, QKV 3C^2 + 3C, projection C^2 + C, ln2 2C; the FFN 2CF + F + C
    const double block_floats = (4 * C * C + 8 * C) + (2 * C * F + F + C), embed_floats = V * C + T * C;
    std::vector<TaskId> reduces;
    auto bucket = [&](int layer, double floats) {
      GraphTask t = task("grad.allreduce", TaskCategory::comm, StreamRole::comm_intra, layer, -1);
      t.cost.bytes_to_peer.push_back({1, (uint64_t)(floats * 4)});  // 2 (P-1)/P = 1 of it, DP peer rank 1
      t.cost.messages = 2;
      reduces.push_back(want.add(std::move(t), {last}));
    };
    for (int m = 0; m < 2; ++m) {
      main(task("pp.backward", TaskCategory::comm, StreamRole::host, 1, m));
      main(task("stage.output_grad", TaskCategory::compute, StreamRole::compute, -1, m));  // the received gradient in
      main(task("ffn.backward", TaskCategory::compute, StreamRole::compute, 0, m, 2 * ffn_forward_flops(N, C, F)));
      main(task("attn.backward", TaskCategory::compute, StreamRole::compute, 0, m, 2 * attn_forward_flops(N, C, T)));
      if (m == 1) bucket(0, block_floats);
      main(task("embed.backward", TaskCategory::compute, StreamRole::compute, -1, m));
      if (m == 1) bucket(-1, embed_floats);
    }
    // The tail, each task after the buckets and the task before it: the tied embedding with the
    // last stage; the norm's sums (2 flops per parameter held); the norm's and the loss's ring
    // all-reduces of a few doubles, over EP = DP {0, 1} and PP {0, 2}; the clipping (1 flop per
    // parameter); the optimizer.
    const double held = embed_floats + block_floats;
    auto tail = [&](GraphTask t) {
      std::vector<TaskId> deps = reduces;
      deps.push_back(last);
      last = want.add(std::move(t), deps);
    };
    GraphTask tied = task("pp.tied_grad", TaskCategory::comm, StreamRole::host, -1, -1);
    tied.peer = 2;
    tied.cost.bytes_to_peer.push_back({2, (uint64_t)(V * C * 4)});
    tail(std::move(tied));
    auto host_reduce = [&](const char* name, int doubles, int peer) {
      GraphTask t = task(name, TaskCategory::comm, StreamRole::host, -1, -1);
      t.cost.bytes_to_peer.push_back({peer, (uint64_t)(doubles * 8)});  // 2 (P-1)/P = 1 of them
      t.cost.messages = 2;
      tail(std::move(t));
    };
    tail(task("grad.norm", TaskCategory::compute, StreamRole::compute, -1, -1, 2 * held));
    host_reduce("grad.norm.ep", 1, 1);
    host_reduce("grad.norm.pp", 1, 2);
    tail(task("grad.clip", TaskCategory::compute, StreamRole::compute, -1, -1, held));
    host_reduce("loss.pp", 2, 2);
    host_reduce("loss.dp", 1, 1);
    tail(task("optimizer", TaskCategory::compute, StreamRole::compute, -1, -1, adamw_flops((size_t)held)));
    const TaskGraph got = build_step_graph(cfg, 0);
    QVERIFY2(got.same_schedule(want), qPrintable(first_difference(got, want)));
  }

  // storage.sparse = "ssd" (storage/expert_state_tier.h): the tier's update after the optimizer,
  // which no longer updates the experts. The tiny model on one rank: 4 records (block 1's
  // experts), a host cache of 1 (C = 1, full in a later step). Order: the cached record (the
  // last one, expert 3), then experts 0-2, each loaded. Hand-built (o = the optimizer):
  //   prefetch:    U3 {o}; L0 {U3}; W0 {L0}; U0 {L0, U3}; L1 {U0, W0}; W1 {L1}; U1 {L1, U0};
  //                L2 {U1, W1}; W2 {L2}; U2 {L2, U1}   (a load waits for the update freeing a slot)
  //   no prefetch: U3 {o}; L0 {U3}; U0 {L0, U3}; L1 {U0}; U1 {L1, U0}; L2 {U1}; U2 {L2, U1}
  // A load takes record bytes / cluster.ssd_bw_gbs in the simulator.
  void ssd_tier_update_after_the_optimizer_data() {
    QTest::addColumn<bool>("prefetch");
    QTest::newRow("prefetch") << true;
    QTest::newRow("no prefetch") << false;
  }
  void ssd_tier_update_after_the_optimizer() {
    QFETCH(bool, prefetch);
    const Config memory = tiny({"run.ranks=1"});
    const int64_t record = expert_state_record_bytes(memory.model);
    const Config ssd = tiny({"run.ranks=1", "storage.sparse=ssd", std::string("storage.ssd_dir=" MOEBENCH_SOURCE_DIR "/tests"),
                             "storage.host_cache_bytes=" + std::to_string(record),
                             std::string("storage.sparse_prefetch=") + (prefetch ? "true" : "false"),
                             "cluster.ssd_bw_gbs=2"});
    const TaskGraph base = build_step_graph(memory, 0), got = build_step_graph(ssd, 0);
    const int o = (int)base.size() - 1;  // the optimizer, last in-memory
    QCOMPARE(got.task(o).name, std::string("optimizer"));
    const double expert = (double)expert_param_count(memory.model);
    QCOMPARE(got.task(o).cost.flops, base.task(o).cost.flops - adamw_flops((size_t)(4 * expert)));
    struct Want {
      const char* name;
      StreamRole role;
      int expert;
      std::vector<int> deps;  // indices into the tail, -1 = the optimizer
    };
    const std::vector<Want> want =
        prefetch ? std::vector<Want>{{"sparse.update", StreamRole::compute, 3, {-1}},
                                     {"sparse.load", StreamRole::io, 0, {0}},
                                     {"sparse.writeback", StreamRole::copy, 0, {1}},
                                     {"sparse.update", StreamRole::compute, 0, {1, 0}},
                                     {"sparse.load", StreamRole::io, 1, {3, 2}},
                                     {"sparse.writeback", StreamRole::copy, 1, {4}},
                                     {"sparse.update", StreamRole::compute, 1, {4, 3}},
                                     {"sparse.load", StreamRole::io, 2, {6, 5}},
                                     {"sparse.writeback", StreamRole::copy, 2, {7}},
                                     {"sparse.update", StreamRole::compute, 2, {7, 6}}}
                 : std::vector<Want>{{"sparse.update", StreamRole::compute, 3, {-1}},
                                     {"sparse.load", StreamRole::io, 0, {0}},
                                     {"sparse.update", StreamRole::compute, 0, {1, 0}},
                                     {"sparse.load", StreamRole::io, 1, {2}},
                                     {"sparse.update", StreamRole::compute, 1, {3, 2}},
                                     {"sparse.load", StreamRole::io, 2, {4}},
                                     {"sparse.update", StreamRole::compute, 2, {5, 4}}};
    QCOMPARE((int)got.size(), o + 1 + (int)want.size());
    for (size_t k = 0; k < want.size(); ++k) {
      const GraphTask& t = got.task(o + 1 + (int)k);
      std::vector<int> deps;
      for (int d : want[k].deps) deps.push_back(o + 1 + d);
      std::sort(deps.begin(), deps.end());  // a graph keeps its dependencies sorted
      QCOMPARE(t.name, std::string(want[k].name));
      QCOMPARE(t.role, want[k].role);
      QCOMPARE(t.layer, 1);
      QCOMPARE(t.expert, want[k].expert);
      QCOMPARE(t.deps, deps);
      if (t.name == "sparse.update") QCOMPARE(t.cost.flops, adamw_flops((size_t)expert));
      else QCOMPARE(t.cost.copy_bytes, (uint64_t)record);
    }
    const SimulationResult sim = simulate_graphs({&got}, ClusterNetwork(cluster_model(ssd)));
    const SimulatedTask& load = sim.tasks[0][(size_t)o + 2];
    QCOMPARE(load.end - load.start, (double)record / 2e9);
  }

  // ppmoe with tp = 2: the MoE block moves no all-to-all; its combine is one all-reduce per pass
  // of 2 (t-1)/t x b s h x 4 bytes (Pipeline MoE §3.3.4), the gate sync h x E x 4 once per step.
  void ppmoe_moves_only_the_tp_allreduce() {
    const Config cfg = tiny({"run.ranks=2", "parallel.tp=2", "strategy.name=\"ppmoe\""});
    const TaskGraph g = build_step_graph(cfg, 1);
    const double bsh = 4 * 16 * 32, t = 2, E = 4, h = 32;
    std::map<std::string, std::vector<uint64_t>> comm;  // name -> bytes per task
    for (const GraphTask& x : g.tasks())
      if (x.category == TaskCategory::comm) comm[x.name].push_back(x.cost.bytes_sent());
    for (const auto& [name, bytes] : comm) {
      QVERIFY2(name.find("a2a") == std::string::npos && name.find("dispatch") == std::string::npos, name.c_str());
      for (uint64_t b : bytes)
        if (name != "grad.allreduce" && name != "expert.allreduce") QVERIFY2(b > 0, name.c_str());
    }
    const uint64_t pass = (uint64_t)(2 * (t - 1) / t * bsh * 4);
    QCOMPARE(comm["moe.allreduce"], std::vector<uint64_t>({pass}));
    QCOMPARE(comm["moe.allreduce_grad"], std::vector<uint64_t>({pass}));
    QCOMPARE(comm["tp.partial_allreduce"], std::vector<uint64_t>({(uint64_t)(2 * (t - 1) / t * h * E * 4)}));
    // Megatron's g and f: the attention's pair in both blocks, the dense FFN's pair in block 0.
    QCOMPARE(comm["tp.allreduce"], std::vector<uint64_t>(6, pass));
    // The experts are split over the TP group: rank 1 computes experts 2 and 3 only.
    for (const GraphTask& x : g.tasks())
      if (x.expert >= 0) QVERIFY2(x.expert >= 2, x.name.c_str());
  }

  // parallel.ep = 1 on 2 ranks (FasterMoE's DP): after the buckets, one ring all-reduce of the
  // block's 4 experts' gradients per MoE block, on the host role, its layer the block (as
  // Distributed::finish_gradients records it): 2 (P-1)/P = 1 x 4 x (2 C F + F + C) floats to
  // the other rank. ep = 2: every expert held once, no expert all-reduce.
  void expert_allreduce_carries_its_block() {
    const Config dp = tiny({"run.ranks=2", "parallel.ep=1", "model.layers=4", "moe.moe_layers=[1, 3]"});
    const double C = 32, F = 64;
    std::vector<int> layers;
    const TaskGraph g = build_step_graph(dp, 0);
    for (const GraphTask& t : g.tasks())
      if (t.name == "expert.allreduce") {
        layers.push_back(t.layer);
        QVERIFY(t.role == StreamRole::host);
        QCOMPARE(t.cost.bytes_to_peer, (std::vector<std::pair<int, uint64_t>>{{1, (uint64_t)(4 * (2 * C * F + F + C) * 4)}}));
      }
    QCOMPARE(layers, (std::vector<int>{1, 3}));
    QVERIFY(makespan(dp) > 0);  // the two ranks' all-reduces meet block by block
    const Config ep = tiny({"run.ranks=2", "parallel.ep=2", "model.layers=4", "moe.moe_layers=[1, 3]"});
    const TaskGraph once = build_step_graph(ep, 0);
    for (const GraphTask& t : once.tasks()) QVERIFY(t.name != "expert.allreduce");
  }

  // model.embedding_partition (MoESys §IV-C) on 4 DP ranks, 2 micro-batches of N = 1 x 16
  // tokens, C = 32 (Cp = 8): per micro-batch embed.ids (ring all-gather, 3 N int32 to the next
  // rank), embed.a2a and embed.grad_a2a (N Cp floats to each other rank); the embeddings'
  // bucket all-reduces wpe only (T C floats), the head's bucket the untied head (2C + V C).
  void embedding_partition_exchanges_replace_the_table_allreduce() {
    const Config cfg = tiny({"run.ranks=4", "train.batch_size=8", "parallel.microbatches=2", "model.tied_head=false",
                             "model.embedding_partition=true"});
    const uint64_t N = 16, Cp = 8, C = 32, V = 32, T = 16;
    const TaskGraph g = build_step_graph(cfg, 1);
    std::map<std::string, int> count;
    std::vector<uint64_t> buckets;  // layer -1: the head's and the embeddings'
    for (const GraphTask& t : g.tasks()) {
      ++count[t.name];
      using Bytes = std::vector<std::pair<int, uint64_t>>;
      if (t.name == "embed.ids") QCOMPARE(t.cost.bytes_to_peer, (Bytes{{2, 3 * N * 4}}));
      if (t.name == "embed.a2a" || t.name == "embed.grad_a2a")
        QCOMPARE(t.cost.bytes_to_peer, (Bytes{{0, N * Cp * 4}, {2, N * Cp * 4}, {3, N * Cp * 4}}));
      if (t.name == "grad.allreduce" && t.layer == -1) buckets.push_back(t.cost.bytes_to_peer.at(0).second);
      if (t.name == "grad.norm.dp") QCOMPARE(t.cost.bytes_to_peer, (Bytes{{2, 2 * 8 * 3 / 4}}));
    }
    QCOMPARE(count["embed.ids"], 2);
    QCOMPARE(count["embed.a2a"], 2);
    QCOMPARE(count["embed.grad_a2a"], 2);
    QCOMPARE(count["grad.norm.dp"], 1);
    QCOMPARE(buckets, (std::vector<uint64_t>{2 * (2 * C + V * C) * 4 * 3 / 4, 2 * T * C * 4 * 3 / 4}));
    QVERIFY(makespan(cfg) > 0);  // the exchanges meet on every rank
  }

  // [strategy.monta] ep_priority: exactly the MoE blocks' comm tasks (counts, statistics,
  // AllToAlls, AllGathers) go to the priority lanes; the DP buckets, pipeline sends and dense TP
  // all-reduces stay on the plain ones; without it no task is on a priority lane.
  void ep_priority_moves_the_moe_comm_tasks() {
    const std::vector<std::string> layout{"run.ranks=8", "cluster.nodes=2", "parallel.tp=2", "parallel.pp=2",
                                          "parallel.microbatches=2", "strategy.name=\"monta\"",
                                          "strategy.monta.level=\"O2\"", "strategy.monta.chunks=2"};
    std::vector<std::string> with = layout;
    with.push_back("strategy.monta.ep_priority=true");
    const TaskGraph plain = build_step_graph(tiny(layout), 5), prio = build_step_graph(tiny(with), 5);  // stage 1: the MoE block
    QCOMPARE(prio.size(), plain.size());
    int moved = 0;
    for (int i = 0; i < (int)prio.size(); ++i) {
      const GraphTask& t = prio.task(i);
      QVERIFY(!plain.task(i).priority);
      const bool moe = t.category == TaskCategory::comm && t.name.rfind("moe.", 0) == 0;
      QVERIFY2(t.priority == moe, t.name.c_str());
      moved += t.priority;
    }
    QVERIFY(moved > 0);
  }

  // pp = 2 x tp = 2: each TP rank sends half of the micro-batch's activation to its peer of the
  // next stage, which all-gathers the halves over its TP group (Megatron's scatter/gather).
  void pipeline_sends_slices_under_tp() {
    const Config cfg = tiny({"run.ranks=4", "parallel.pp=2", "parallel.tp=2", "parallel.microbatches=2"});
    const uint64_t act = 2 * 16 * 32 * 4;  // dp = 1: micro-batches of 2 sequences of 16, hidden 32
    const TaskGraph first = build_step_graph(cfg, 1), second = build_step_graph(cfg, 3);
    int sends = 0, gathers = 0;
    for (const GraphTask& t : first.tasks())
      if (t.name == "pp.forward") {
        ++sends;
        QCOMPARE(t.cost.bytes_to_peer, (std::vector<std::pair<int, uint64_t>>{{3, act / 2}}));
      }
    for (const GraphTask& t : second.tasks())
      if (t.name == "pp.allgather") {
        ++gathers;
        QCOMPARE(t.cost.bytes_to_peer, (std::vector<std::pair<int, uint64_t>>{{2, act / 2}}));
        QCOMPARE(t.cost.messages, 1);
      }
    QCOMPARE(sends, 2);
    QCOMPARE(gathers, 2);  // the forward activations; the first stage gathers the gradients
  }

  // Janus prefetch (§5.3): the planned pulls' bytes move in janus.prefetch at the start of the
  // iteration (each expert's bytes once, as without prefetch). Where the blocks before the MoE
  // block compute longer than the pulls take, the predicted step is shorter by the forward
  // pulls' time: the bytes from the other node through this rank's NIC at its bandwidth.
  void prefetch_moves_the_pulls_to_the_iteration_start() {
    const double inter_gbs = 0.02;
    auto cfg_with = [&](bool prefetch) {
      return load_config(test::tiny_config_path(),
                         {"run.ranks=4", "cluster.nodes=2", "strategy.name=\"data_centric\"", "model.layers=4",
                          "moe.moe_layers=[3]", "cluster.inter_bw_gbs=" + std::to_string(inter_gbs),
                          "cluster.device_tflops=0.0002",
                          std::string("strategy.data_centric.prefetch=") + (prefetch ? "true" : "false")});
    };
    auto pulled = [](const TaskGraph& g) {
      uint64_t bytes = 0;
      for (const GraphTask& t : g.tasks())
        if (t.category == TaskCategory::comm && t.cost.transfer == Transfer::get) bytes += t.cost.bytes_sent();
      return bytes;
    };
    const TaskGraph plain = build_step_graph(cfg_with(false), 0), prefetch = build_step_graph(cfg_with(true), 0);
    QVERIFY(pulled(plain) > 0);
    QCOMPARE(pulled(prefetch), pulled(plain));
    const GraphTask& first = prefetch.task(0);  // before the embeddings
    QCOMPARE(first.name, std::string("janus.prefetch"));
    double inter_bytes = 0;  // rank 0 is on node 0; ranks 2 and 3 on node 1
    for (const auto& [peer, bytes] : first.cost.bytes_to_peer)
      if (peer >= 2) inter_bytes += (double)bytes;
    QVERIFY(inter_bytes > 0);
    const double saved = makespan(cfg_with(false)) - makespan(cfg_with(true)), pulls = inter_bytes / (inter_gbs * 1e9);
    QVERIFY2(saved > 0.8 * pulls && saved < 1.2 * pulls,
             qPrintable(QString("prefetch saved %1 s; the forward pulls take %2 s").arg(saved).arg(pulls)));
  }

  // Four stages of one block each, links so fast that only compute counts. With 8 micro-batches
  // the replayed step lies between (M + P - 1) x the cheapest and the dearest stage's time per
  // micro-batch (fill and drain around M micro-batches), for 1F1B and GPipe alike; with one
  // micro-batch the stages run one after another.
  void pipeline_bubble_within_the_schedule_bounds() {
    for (const char* schedule : {"1f1b", "gpipe"})
      for (int M : {8, 1}) {
        const Config cfg = tiny({"run.ranks=4", "model.layers=4", "moe.moe_layers=[]", "parallel.pp=4",
                                 "train.batch_size=" + std::to_string(M), "parallel.microbatches=" + std::to_string(M),
                                 "cluster.intra_bw_gbs=1e9", "cluster.intra_latency_us=0", "cluster.device_tflops=0.001",
                                 std::string("parallel.schedule=\"") + schedule + "\""});
        const ClusterModel cluster = cluster_model(cfg);
        std::vector<double> stage(4, 0.0);  // forward + backward of one micro-batch on each stage
        for (int s = 0; s < 4; ++s) {
          const TaskGraph g = build_step_graph(cfg, s);
          for (const GraphTask& t : g.tasks())
            if (t.category == TaskCategory::compute && (t.chunk == 0 || M == 1) && t.name != "optimizer")
              stage[(size_t)s] += cluster.compute_seconds(t.cost.flops);
        }
        const double got = makespan(cfg);
        const double lo = (M + 3) * *std::min_element(stage.begin(), stage.end());
        const double hi = (M + 3) * *std::max_element(stage.begin(), stage.end());
        const double serial = std::accumulate(stage.begin(), stage.end(), 0.0);
        if (M == 1)
          QVERIFY2(got >= serial * 0.999 && got <= serial * 1.05,
                   qPrintable(QString("%1, one micro-batch: %2 s, the stages in turn take %3 s").arg(schedule).arg(got).arg(serial)));
        else
          QVERIFY2(got >= lo * 0.999 && got <= hi * 1.05,
                   qPrintable(QString("%1: %2 s outside [%3, %4]").arg(schedule).arg(got).arg(lo).arg(hi)));
      }
  }

  // Each layout of the equivalence matrix replays on a 2-node cluster: every send meets its
  // receiver (the simulator throws on an unmatched send or a schedule that cannot finish).
  // cluster.train_precision = "fp16" (a paper's workload predicted): every activation, gradient
  // and weight transfer and row copy of the predicted step graph carries half the bytes of the
  // runtime's fp32 graph, task by task; what is not an fp element keeps its bytes (token ids,
  // the gradient norm's and the loss's doubles); the compute is the same.
  void train_precision_halves_the_wire_bytes_data() {
    QTest::addColumn<QStringList>("sets");
    QTest::newRow("expert_centric dp4") << QStringList{"run.ranks=4"};
    QTest::newRow("data_centric node cache") << QStringList{"run.ranks=4", "strategy.name=\"data_centric\"",
                                                            "strategy.data_centric.hierarchical=true"};
    QTest::newRow("fastermoe shadow") << QStringList{"run.ranks=4", "strategy.name=\"fastermoe\"",
                                                     "strategy.fastermoe.shadow=true"};
    QTest::newRow("hier_a2a tp2") << QStringList{"run.ranks=4", "parallel.tp=2", "strategy.name=\"hier_a2a\""};
    QTest::newRow("ppmoe tp2 x pp2") << QStringList{"run.ranks=4", "parallel.tp=2", "parallel.pp=2",
                                                    "parallel.microbatches=2", "strategy.name=\"ppmoe\""};
    QTest::newRow("monta tp2") << QStringList{"run.ranks=4", "parallel.tp=2", "strategy.name=\"monta\""};
    QTest::newRow("zero3 dp4") << QStringList{"run.ranks=4", "storage.dense=\"zero3\""};
    QTest::newRow("dp4 embedding partition") << QStringList{"run.ranks=4", "model.tied_head=false",
                                                            "model.embedding_partition=true"};
  }
  void train_precision_halves_the_wire_bytes() {
    QFETCH(QStringList, sets);
    std::vector<std::string> s = on_two_nodes(sets);
    const Config fp32 = load_config(test::tiny_config_path(), s);
    s.push_back("cluster.train_precision=\"fp16\"");
    const Config fp16 = load_config(test::tiny_config_path(), s);
    // Token ids and routing counts (int32), the router's load statistics and the norm's and
    // loss's sums (fp32 / fp64 in mixed precision too).
    const std::set<std::string> not_elements = {"embed.ids", "moe.counts", "moe.aux_stats", "batch.copy_in",
                                                "grad.norm.tp", "grad.norm.ep", "grad.norm.dp", "grad.norm.pp",
                                                "loss.pp", "loss.dp"};
    for (int r = 0; r < fp32.run.ranks; ++r) {
      const TaskGraph a = build_step_graph(fp32, r), b = build_step_graph(fp16, r);
      QCOMPARE(a.size(), b.size());
      int halved = 0;
      for (int i = 0; i < (int)a.size(); ++i) {
        const GraphTask &x = a.task(i), &y = b.task(i);
        QCOMPARE(y.name, x.name);
        QCOMPARE(y.cost.flops, x.cost.flops);
        QCOMPARE(y.cost.bytes_to_peer.size(), x.cost.bytes_to_peer.size());
        const bool keep = not_elements.count(x.name) > 0;
        for (size_t k = 0; k < x.cost.bytes_to_peer.size(); ++k) {
          const auto [peer, bytes] = x.cost.bytes_to_peer[k];
          QCOMPARE(y.cost.bytes_to_peer[k].first, peer);
          const uint64_t want = keep ? bytes : bytes / 2;
          QVERIFY2(y.cost.bytes_to_peer[k].second == want || (!keep && y.cost.bytes_to_peer[k].second == (bytes + 1) / 2),
                   qPrintable(QString("%1 (rank %2): %3 bytes at fp16, %4 at fp32")
                                  .arg(x.name.c_str()).arg(r).arg(y.cost.bytes_to_peer[k].second).arg(bytes)));
          halved += !keep && bytes > 0;
        }
        QCOMPARE(y.cost.copy_bytes, keep ? x.cost.copy_bytes : x.cost.copy_bytes / 2);
      }
      QVERIFY(halved > 0);
    }
  }

  // [data] tasks (MoESys §IV-A): each data-parallel rank's predicted step carries its tasks' rows
  // (16 / 8 / 4 / 4 sequences here), in its routed tokens and its compute; without tasks every
  // rank carries batch / dp.
  void tasks_give_each_rank_its_rows() {
    const std::vector<std::string> base = {"run.ranks=4", "cluster.nodes=1", "train.batch_size=32",
                                           "data.languages=4"};
    std::vector<std::string> with = base;
    with.push_back("data.tasks=[16, 8, 4, 4]");
    with.push_back("data.rank_tasks=[\"0\", \"1\", \"2\", \"3\"]");
    const Config tasks = load_config(test::tiny_config_path(), with), even = load_config(test::tiny_config_path(), base);
    const int T = tasks.model.seq_len, K = tasks.moe.top_k, E = tasks.moe.experts.at(0), l = tasks.moe.moe_layers.at(0);
    const StepRouting routed = synthetic_step_routing(tasks, 1), flat = synthetic_step_routing(even, 1);
    const std::vector<long> sequences = {16, 8, 4, 4};
    for (int r = 0; r < 4; ++r) {
      long mine = 0, uniform = 0;
      for (int e = 0; e < E; ++e) {
        mine += routed.rows.at(l)[(size_t)r * E + e];
        uniform += flat.rows.at(l)[(size_t)r * E + e];
      }
      QCOMPARE(mine, sequences[(size_t)r] * T * K);
      QCOMPARE(uniform, 8L * T * K);
    }
    auto forward_flops = [](const TaskGraph& g) {
      double f = 0;
      for (const GraphTask& t : g.tasks())
        if (t.name == "attn.forward") f += t.cost.flops;
      return f;
    };
    const double f0 = forward_flops(build_step_graph(tasks, 0)), f2 = forward_flops(build_step_graph(tasks, 2));
    QVERIFY(f2 > 0);
    QCOMPARE(f0 / f2, 4.0);  // attention over 16 against 4 sequences of the same length
    QCOMPARE(forward_flops(build_step_graph(even, 0)), forward_flops(build_step_graph(even, 2)));
  }

  // FasterMoE's topology-aware gate in the predicted step: each rank sends at most L =
  // floor(rho N K) of its assignments off its node (rho = W_net / (M W_local)), the others stay
  // on the node's experts, and no assignment is lost; without the gate, about half leave.
  void topology_gate_caps_the_inter_node_rows() {
    const std::vector<std::string> base = {"run.ranks=4", "cluster.nodes=2", "train.batch_size=8",
                                           "strategy.name=\"fastermoe\"", "moe.routing=\"uniform\"",
                                           "cluster.intra_bw_gbs=100.0", "cluster.inter_bw_gbs=20.0"};
    std::vector<std::string> gated = base;
    gated.push_back("strategy.fastermoe.topo_gate=true");
    const Config on = load_config(test::tiny_config_path(), gated), off = load_config(test::tiny_config_path(), base);
    const int T = on.model.seq_len, K = on.moe.top_k, E = on.moe.experts.at(0), l = on.moe.moe_layers.at(0);
    const long N = 2L * T;  // 8 sequences over 4 ranks
    const long cap = (long)std::floor(20.0 / (2 * 100.0) * N * K);  // rho = 20 / (2 x 100)
    const StepRouting with = synthetic_step_routing(on, 1), without = synthetic_step_routing(off, 1);
    for (int r = 0; r < 4; ++r) {
      long remote = 0, remote_off = 0, all = 0;
      for (int e = 0; e < E; ++e) {
        const bool far = (e / (E / 4)) / 2 != r / 2;  // expert e's EP rank's node
        remote += far ? with.rows.at(l)[(size_t)r * E + e] : 0;
        remote_off += far ? without.rows.at(l)[(size_t)r * E + e] : 0;
        all += with.rows.at(l)[(size_t)r * E + e];
      }
      QCOMPARE(all, N * K);
      QCOMPARE(remote, cap);
      QVERIFY2(remote_off > 3 * cap, std::to_string(remote_off).c_str());
    }
  }

  void every_layout_replays_data() {
    QTest::addColumn<QStringList>("sets");
    QTest::newRow("tp2 x dp2") << QStringList{"run.ranks=4", "parallel.tp=2"};
    QTest::newRow("pp2 x dp2") << QStringList{"run.ranks=4", "parallel.pp=2", "parallel.microbatches=2"};
    QTest::newRow("pp2 x tp2") << QStringList{"run.ranks=4", "parallel.pp=2", "parallel.tp=2", "parallel.microbatches=4"};
    QTest::newRow("tp2 x pp2 x dp2 gpipe") << QStringList{"run.ranks=8", "parallel.pp=2", "parallel.tp=2",
                                                          "parallel.microbatches=2", "parallel.schedule=\"gpipe\""};
    QTest::newRow("tp2 x dp2 expert_tp") << QStringList{"run.ranks=4", "parallel.tp=2", "moe.expert_tp=true"};
    QTest::newRow("ppmoe tp2 x pp2") << QStringList{"run.ranks=4", "parallel.tp=2", "parallel.pp=2",
                                                    "parallel.microbatches=2", "strategy.name=\"ppmoe\""};
    QTest::newRow("pp2 x dp4") << QStringList{"run.ranks=8", "parallel.pp=2", "train.batch_size=8"};
    QTest::newRow("tp2 x dp2 hier_a2a") << QStringList{"run.ranks=4", "parallel.tp=2", "strategy.name=\"hier_a2a\""};
    QTest::newRow("dp4 embedding partition") << QStringList{"run.ranks=4", "model.tied_head=false",
                                                            "model.embedding_partition=true"};
  }
  void every_layout_replays() {
    QFETCH(QStringList, sets);
    const Config cfg = load_config(test::tiny_config_path(), on_two_nodes(sets));
    QVERIFY(makespan(cfg) > 0);
  }
};

QTEST_APPLESS_MAIN(TestStepGraph)
#include "tst_step_graph.moc"
