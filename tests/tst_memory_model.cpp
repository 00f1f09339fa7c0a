// ctest-labels: unit
// MoNTA's memory model (perf/memory_model.h): Table 3's ZeRO factors, Table 4's rows and eq. 2
// against numbers worked out by hand, P1 / P2 / psi / activations of small tensor- and
// pipeline-parallel configs by hand, the per-rank parameter counts (model/param_count.h) against
// the arenas of real models, cluster.device_memory_gib, and `moebench plan --memory`.
#include <QtTest>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "moebench/config/config_loader.h"
#include "moebench/model/moe_gpt.h"
#include "moebench/model/param_count.h"
#include "moebench/perf/cluster_model.h"
#include "moebench/perf/memory_model.h"
#include "test_support.h"

using namespace moebench;
using Qt::StringLiterals::operator""_s;

namespace {

// tests/data/tiny.toml: vocab 32, seq 16, hidden 32, 2 blocks (block 1 MoE: 4 experts, top-2),
// 2 heads, ffn_mult 2 (F = 64), batch 4, tied head.
Config tiny(std::vector<std::string> sets) { return load_config(test::tiny_config_path(), sets); }

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

class TestMemoryModel : public QObject {
  Q_OBJECT

 private slots:
  // Table 3, bytes per parameter: 2 + 2 + 4 + 4 + 4 = 16 whole; ZeRO shards over N ranks the
  // fp32 states (12), then the fp16 gradient (+2), then the fp16 weight (+2).
  void table3_factors() {
    QCOMPARE(zero_bytes_per_param(ZeroStage::baseline, 4), 16.0);
    QCOMPARE(zero_bytes_per_param(ZeroStage::zero1, 4), 7.0);   // 4 + 12/4
    QCOMPARE(zero_bytes_per_param(ZeroStage::zero2, 4), 5.5);   // 2 + 14/4
    QCOMPARE(zero_bytes_per_param(ZeroStage::zero3, 4), 4.0);   // 16/4
    // A group of one shards nothing: every stage holds the baseline's 16 bytes.
    for (ZeroStage z : {ZeroStage::zero1, ZeroStage::zero2, ZeroStage::zero3}) QCOMPARE(zero_bytes_per_param(z, 1), 16.0);
  }

  // Table 4 for b = 2, s = 8, h = 16, a = 2, t = 2 and k = 2 copies: b s h = 256 bytes per unit,
  // scores 5 a s / (h t) = 5 x 2 x 8 / 32 = 2.5.
  void table4_rows_by_hand() {
    const LayerShape d{2, 8, 16, 2, 2};
    // PP+TP+EP: 5 + 5 x 2 + (8 + 16 x 2) / 2 + 2.5 = 5 + 10 + 20 + 2.5 = 37.5 units
    QCOMPARE(layer_activation_bytes(ActivationScheme::pp_tp_ep, d, 2), 37.5 * 256);
    // +SP: (13 + 42) / 2 + 2.5 = 30 units
    QCOMPARE(layer_activation_bytes(ActivationScheme::pp_tp_ep_sp, d, 2), 30.0 * 256);
    // +selective recompute: 55 / 2 = 27.5 units
    QCOMPARE(layer_activation_bytes(ActivationScheme::selective_recompute, d, 2), 27.5 * 256);
    // +full recompute: 2 / t = 1 unit
    QCOMPARE(layer_activation_bytes(ActivationScheme::full_recompute, d, 2), 256.0);
    // eq. 2: 13 + 42 + 5 x 2 x 8 / 16 = 60 units, and PP+TP+EP at t = 1 is eq. 2:
    // 5 + 10 + 8 + 32 + 5 = 60.
    QCOMPARE(eq2_layer_bytes(d, 2), 60.0 * 256);
    const LayerShape d1{2, 8, 16, 2, 1};
    QCOMPARE(layer_activation_bytes(ActivationScheme::pp_tp_ep, d1, 2), 60.0 * 256);
    // A dense layer (1 copy) is Megatron's s b h (34 + 5 a s / h) = 256 x (34 + 5) bytes.
    QCOMPARE(eq2_layer_bytes(d1, 1), 39.0 * 256);
  }

  // MoNTA's evaluation shape (Table 7, "End-to-End time on Model"): h = 8192, s = 8192, t = 8,
  // micro-batch 1. The paper gives no memory figures, nor heads or top-k: a = 64 and k = 2 are
  // assumed here (Llama-2-70B's heads, two experts per token). b s h = 2^26 bytes per unit;
  // scores 5 x 64 x 8192 / (8192 x 8) = 40 units.
  void table4_at_montas_evaluation_shape() {
    const LayerShape d{1, 8192, 8192, 64, 8};
    const double unit = 67108864.0;
    // PP+TP+EP: 5 + 10 + (8 + 32) / 8 + 40 = 60 units = 3.75 GiB per layer: the attention
    // scores dominate, so an 80 GB card holds about 21 such layers of one micro-batch ...
    QCOMPARE(layer_activation_bytes(ActivationScheme::pp_tp_ep, d, 2), 60 * unit);
    QCOMPARE(layer_activation_bytes(ActivationScheme::pp_tp_ep, d, 2) / kGiB, 3.75);
    // ... selective recompute drops them: 55 / 8 = 6.875 units = 440 MiB per layer ...
    QCOMPARE(layer_activation_bytes(ActivationScheme::selective_recompute, d, 2), 6.875 * unit);
    // ... full recompute keeps 2 / 8 of a unit = 16 MiB per layer.
    QCOMPARE(layer_activation_bytes(ActivationScheme::full_recompute, d, 2), 16.0 * 1024 * 1024);
  }

  // tp 2 x dp 2 on 4 ranks, experts over the DP group (ep = 2): b = 4 / 2 = 2 sequences.
  // Per rank: wte 32 x 32 = 1024, wpe 16 x 32 = 512; each block's attention (4 x 32^2 + 3 x 32) / 2
  // + 5 x 32 = 2256; block 0's FFN (2 x 32 x 64 + 64) / 2 + 32 = 2112; block 1's router 4 x 32 =
  // 128; ln_f 64: P1 = 1024 + 512 + 2 x 2256 + 2112 + 128 + 64 = 8352. Experts: 4 / 2 = 2 of
  // 2 x 32 x 64 + 64 + 32 = 4192 each: P2 = 8384, with one replica (d / e = 1).
  void tensor_parallel_config_by_hand() {
    const MemoryModel m = memory_model(tiny({"run.ranks=4", "parallel.tp=2"}));
    QCOMPARE(m.stages.size(), size_t(1));
    QCOMPARE(m.b, 2);
    QCOMPARE(m.d, 2);
    QCOMPARE(m.t, 2);
    QCOMPARE(m.e, 2);
    QCOMPARE(m.expert_replicas, 1);
    const StageMemory& s = m.stages[0];
    QCOMPARE(s.p1, 8352.0);
    QCOMPARE(s.p2, 8384.0);
    QCOMPARE(s.psi1[(int)ZeroStage::baseline], 16 * 8352.0);
    QCOMPARE(s.psi2[(int)ZeroStage::baseline], 16 * 8384.0);
    QCOMPARE(s.psi1[(int)ZeroStage::zero1], (4 + 12 / 2.0) * 8352);  // sharded over d = 2
    QCOMPARE(s.psi1[(int)ZeroStage::zero3], 8 * 8352.0);
    QCOMPARE(s.psi2[(int)ZeroStage::zero3], 16 * 8384.0);  // one replica: nothing to shard over
    // Activations: b s h = 2 x 16 x 32 = 1024 bytes per unit, scores 5 x 2 x 16 / (32 x 2) = 2.5.
    // PP+TP+EP: block 0 (dense) 5 + 5 + 24 / 2 + 2.5 = 24.5, block 1 (k = 2) 5 + 10 + 40 / 2 + 2.5
    // = 37.5: 62 units. Full recompute: 2 blocks x 2 / 2 = 2 units.
    QCOMPARE(s.in_flight, 1);
    QCOMPARE(s.activations[(int)ActivationScheme::pp_tp_ep], 62.0 * 1024);
    QCOMPARE(s.activations[(int)ActivationScheme::full_recompute], 2.0 * 1024);
    // eq. 2 over both blocks: (13 + 21 + 5) + (13 + 42 + 5) = 99 units.
    QCOMPARE(m.eq2_bytes, 99.0 * 1024);
    QCOMPARE(s.total(ZeroStage::baseline, ActivationScheme::pp_tp_ep), 16 * (8352.0 + 8384) + 62 * 1024);
  }

  // pp 2 on 2 ranks, 4 micro-batches of b = 8 / 4 = 2: stage 0 holds block 0, stage 1 block 1.
  // Stage 0: wte 1024 + wpe 512 + attention (4 x 1024 + 96) + 160 = 4352 + FFN 2 x 32 x 64 + 64 + 32
  // = 4192: P1 = 10080. Stage 1: attention 4352 + router 128 + ln_f 64 + its copy of the tied
  // wte 1024 = 5568; P2 = all 4 experts, 4 x 4192 = 16768. One unit = 2 x 16 x 32 = 1024 bytes;
  // block 0 keeps 13 + 21 + 5 = 39 units per micro-batch, block 1 13 + 42 + 5 = 60.
  void pipeline_config_by_hand_data() {
    QTest::addColumn<QString>("schedule");
    QTest::addColumn<int>("in_flight0");  // micro-batches stage 0 keeps
    QTest::addColumn<int>("in_flight1");
    QTest::newRow("1f1b: p - stage") << u"1f1b"_s << 2 << 1;
    QTest::newRow("gpipe: every micro-batch") << u"gpipe"_s << 4 << 4;
  }
  void pipeline_config_by_hand() {
    QFETCH(QString, schedule);
    QFETCH(int, in_flight0);
    QFETCH(int, in_flight1);
    const MemoryModel m = memory_model(tiny({"run.ranks=2", "parallel.pp=2", "parallel.microbatches=4",
                                             "train.batch_size=8", "parallel.schedule=" + schedule.toStdString()}));
    QCOMPARE(m.stages.size(), size_t(2));
    QCOMPARE(m.b, 2);
    const StageMemory &s0 = m.stages[0], &s1 = m.stages[1];
    QCOMPARE(s0.p1, 10080.0);
    QCOMPARE(s0.p2, 0.0);
    QCOMPARE(s1.p1, 5568.0);
    QCOMPARE(s1.p2, 16768.0);
    QCOMPARE(s0.in_flight, in_flight0);
    QCOMPARE(s1.in_flight, in_flight1);
    QCOMPARE(s0.activations[(int)ActivationScheme::pp_tp_ep], 39.0 * 1024 * in_flight0);
    QCOMPARE(s1.activations[(int)ActivationScheme::pp_tp_ep], 60.0 * 1024 * in_flight1);
    // The largest total: stage 1 holds more weights (16 x 22336 against 16 x 10080 bytes).
    const auto z = ZeroStage::baseline;
    const auto a = ActivationScheme::pp_tp_ep;
    QCOMPARE(m.worst(z, a).stage, 1);
    QCOMPARE(m.worst(z, a).total(z, a), 16 * (5568.0 + 16768) + 60.0 * 1024 * in_flight1);
  }

  // The per-rank counts equal what a real model of that layout allocates.
  void parameters_match_the_model_data() {
    QTest::addColumn<QStringList>("sets");
    QTest::addColumn<int>("ep");
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("stages");
    QTest::newRow("dense") << QStringList{"moe.moe_layers=[]"} << 1 << 1 << 1;
    QTest::newRow("moe") << QStringList{} << 1 << 1 << 1;
    QTest::newRow("experts over 4") << QStringList{} << 4 << 1 << 1;
    QTest::newRow("pr-moe over 2") << QStringList{"model.layers=3", "moe.moe_layers=[0,2]", "moe.experts=[2,4]"} << 2
                                   << 1 << 1;
    QTest::newRow("untied head") << QStringList{"model.tied_head=false"} << 2 << 1 << 1;
    QTest::newRow("tp 2") << QStringList{} << 2 << 2 << 1;
    QTest::newRow("tp 2, vocabulary split, sliced experts")
        << QStringList{"run.ranks=2", "parallel.tp=2", "parallel.vocab_parallel=true", "moe.expert_tp=true"} << 1 << 2
        << 1;
    QTest::newRow("pp 2, tied head") << QStringList{} << 1 << 1 << 2;
    QTest::newRow("pp 2, untied head, tp 2") << QStringList{"model.tied_head=false"} << 2 << 2 << 2;
  }
  void parameters_match_the_model() {
    QFETCH(QStringList, sets);
    QFETCH(int, ep);
    QFETCH(int, tp);
    QFETCH(int, stages);
    std::vector<std::string> s;
    for (const auto& x : sets) s.push_back(x.toStdString());
    const Config cfg = tiny(s);
    const TpShard tps{tp - 1, tp, cfg.parallel.vocab_parallel};
    for (int st = 0; st < stages; ++st) {
      const int per = cfg.model.layers / stages;
      const PipeStage pipe{st, stages, st * per, st == stages - 1 ? cfg.model.layers : (st + 1) * per, 1};
      const MoeGpt model(cfg.model, cfg.moe, ExpertShard{ep - 1, ep}, tps, pipe);
      const ParamCounts n = rank_param_counts(cfg.model, cfg.moe, ExpertShard{ep - 1, ep}, tps, pipe);
      QCOMPARE(n.total(), (double)model.params().size());
      size_t experts = 0;
      for (const BlockExperts& b : model.expert_ranges()) experts += b.range.count;
      QCOMPARE(n.experts, (double)experts);
    }
  }

  // Sizes beyond any machine stay finite and huge in double, never wrapped around.
  void absurd_sizes_stay_huge() {
    Config cfg = tiny({});
    cfg.model.hidden = 2'000'000'000;
    cfg.model.heads = 1;
    cfg.model.layers = 2'000'000;
    cfg.moe.moe_layers = {};
    const MemoryModel m = memory_model(cfg);
    QVERIFY(m.stages[0].fp32.peak() > 1e24);
    QVERIFY(m.stages[0].weights(ZeroStage::baseline) > 1e24);
  }

  // The whole-model GPU benchmark's config (moe_gpt_1b.toml, ~1B parameters) fits one 80 GiB
  // device in the paper's mixed precision with room to spare.
  void one_billion_parameters_on_one_device() {
    const Config cfg =
        load_config(MOEBENCH_SOURCE_DIR "/sample_configs/models/moe_gpt_1b.toml", {"cluster.device_memory_gib=80"});
    const MemoryModel m = memory_model(cfg);
    const StageMemory& s = m.stages[0];
    QVERIFY2(s.p1 + s.p2 > 0.9e9 && s.p1 + s.p2 < 1.1e9, std::to_string(s.p1 + s.p2).c_str());
    QCOMPARE(m.device_memory, 80 * kGiB);
    QVERIFY(s.total(ZeroStage::baseline, ActivationScheme::pp_tp_ep) < m.device_memory);
  }

  // cluster.device_memory_gib: from a cluster file, >= 0, in the cluster's description.
  void device_memory_key() {
    const Config c = load_config(test::tiny_config_path(),
                                 {"run.ranks=16", "train.batch_size=16", "parallel.ep=4",
                                  "cluster.file=" MOEBENCH_SOURCE_DIR "/sample_configs/clusters/monta.toml"});
    QCOMPARE(c.cluster.device_memory_gib, 80.0);
    QCOMPARE(memory_model(c).device_memory, 80 * kGiB);
    QVERIFY(QString::fromStdString(cluster_model(c).describe()).contains("80 GiB per device"));
    QCOMPARE(tiny({}).cluster.device_memory_gib, 0.0);  // not described
    const QString err = test::error_message<ConfigError>([] { tiny({"cluster.device_memory_gib=-1"}); });
    QVERIFY2(err.contains("cluster.device_memory_gib") && err.contains(">= 0"), qPrintable(err));
  }

  // `plan --memory --json`: the hand-computed tp 2 x dp 2 numbers, a verdict per combination
  // against the device memory set, and "does not fit" below the total.
  void plan_memory_json() {
    const QStringList base{"plan", test::tiny_config_path(), "--memory", "--json", "--set", "run.ranks=4",
                           "--set", "parallel.tp=2"};
    test::CliResult r = test::run_cli(base + QStringList{"--set", "cluster.device_memory_gib=1"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    nlohmann::json j = nlohmann::json::parse(r.out.toStdString());
    QVERIFY(j.at("predicted").get<bool>());
    QCOMPARE(j.at("device_memory_bytes").get<double>(), kGiB);
    QCOMPARE(j.at("stages").at(0).at("p1").get<double>(), 8352.0);
    QCOMPARE(j.at("stages").at(0).at("p2").get<double>(), 8384.0);
    QCOMPARE(j.at("combinations").size(), size_t(16));
    const double total = 16 * (8352.0 + 8384) + 62 * 1024;  // baseline + PP+TP+EP, by hand above
    QCOMPARE(j.at("combinations").at(0).at("weights").get<std::string>(), std::string("baseline"));
    QCOMPARE(j.at("combinations").at(0).at("activations").get<std::string>(), std::string("PP+TP+EP"));
    QCOMPARE(j.at("combinations").at(0).at("bytes").get<double>(), total);
    QVERIFY(j.at("combinations").at(0).at("fits").get<bool>());
    QVERIFY(j.at("fp32").at("fits").get<bool>());
    // A device of 300 KiB holds full recompute's 264 KiB (16 x 16736 + 2 x 1024 bytes), not the
    // 324 KiB above.
    r = test::run_cli(base + QStringList{"--set", "cluster.device_memory_gib=" + QString::number(300.0 / 1024 / 1024)});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    j = nlohmann::json::parse(r.out.toStdString());
    QVERIFY(!j.at("combinations").at(0).at("fits").get<bool>());
    QVERIFY(j.at("combinations").at(12).at("fits").get<bool>());  // baseline + full recompute
  }

  // The table names every column and says PREDICTED; verdicts say what is needed and what is there.
  void plan_memory_table() {
    const test::CliResult r = test::run_cli({"plan", test::tiny_config_path(), "--memory", "--set", "run.ranks=4",
                                             "--set", "parallel.tp=2", "--set", "cluster.device_memory_gib=0.0003"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    for (const char* s : {"PREDICTED", "P1 (non-MoE)", "P2 (MoE)", "ZeRO-3", "PP+TP+EP+SP+full recompute",
                          "without parallelism (eq. 2", "device memory: 315 KiB (cluster local: cluster.device_memory_gib)",
                          "baseline + PP+TP+EP: does not fit: stage 0: needs 324 KiB, device has 315 KiB",
                          "ZeRO-3 + PP+TP+EP+SP+full recompute: fits (stage 0: ", "fp32 trainer: "})
      QVERIFY2(r.out.contains(QString::fromUtf8(s)), qPrintable(QString::fromUtf8(s) + "\n" + r.out));
  }

  // --memory with a flag of another mode is a usage error naming both.
  void plan_memory_usage_errors() {
    test::CliResult r = test::run_cli({"plan", test::tiny_config_path(), "--memory", "--graph", "0"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--memory") && r.err.contains("--graph"), qPrintable(r.err));
    r = test::run_cli({"plan", test::tiny_config_path(), "--memory", "--cluster",
                       MOEBENCH_SOURCE_DIR "/sample_configs/clusters/monta.toml", "--write-config", "x.toml"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--memory") && r.err.contains("--write-config"), qPrintable(r.err));
  }

  // plan --context (MoNTA "Cluster Expansion"): the longest sequence one EP group holds is where
  // --memory's baseline + selective-recompute verdict turns from fits to does not fit, and the
  // paper's rule on 16 single-GPU nodes with EP groups of 4: cp < ep with a switch of 16 >= ep x cp
  // nodes is horizontal (scale ep x cp), cp >= ep vertical (max), and a switch of 4 nodes forces
  // vertical for cp = 2.
  void plan_context_expansion() {
    const QStringList layout{"--set", "run.ranks=16", "--set", "cluster.nodes=16", "--set", "parallel.ep=4",
                             "--set", "train.batch_size=16", "--set", "cluster.device_memory_gib=0.001"};
    auto context = [&](long long len, const QStringList& more = {}) {
      const test::CliResult r = test::run_cli(QStringList{"plan", test::tiny_config_path(), "--context", QString::number(len),
                                                          "--json"} + layout + more);
      if (r.code != 0) qWarning("%s", qPrintable(r.err));
      return nlohmann::json::parse(r.code == 0 ? r.out.toStdString() : std::string("{}"));
    };
    const nlohmann::json one = context(100);
    QVERIFY(one.at("predicted").get<bool>());
    const long long L = one.at("group_max_sequence").get<long long>();
    QVERIFY(L > 1);
    auto fits_at = [&](long long s) {
      const test::CliResult r = test::run_cli(QStringList{"plan", test::tiny_config_path(), "--memory", "--json", "--set",
                                                          "model.seq_len=" + QString::number(s)} + layout);
      const nlohmann::json j = nlohmann::json::parse(r.out.toStdString());
      for (const auto& c : j.at("combinations"))
        if (c.at("weights") == "baseline" && c.at("activations") == "PP+TP+EP+SP+selective recompute") return c.at("fits").get<bool>();
      return false;
    };
    QVERIFY(fits_at(L));
    QVERIFY(!fits_at(L + 1));
    const nlohmann::json whole = context(L), h2 = context(L + 1), h3 = context(3 * L), v4 = context(3 * L + 1);
    QCOMPARE(whole.at("expansion").get<std::string>(), std::string("no"));
    QCOMPARE(h2.at("cp_world_size").get<int>(), 2);
    QCOMPARE(h2.at("expansion").get<std::string>(), std::string("horizontal"));
    QCOMPARE(h2.at("network_scale_nodes").get<int>(), 8);
    QCOMPARE(h3.at("expansion").get<std::string>(), std::string("horizontal"));
    QCOMPARE(h3.at("network_scale_nodes").get<int>(), 12);
    QCOMPARE(v4.at("cp_world_size").get<int>(), 4);
    QCOMPARE(v4.at("expansion").get<std::string>(), std::string("vertical"));
    QCOMPARE(v4.at("network_scale_nodes").get<int>(), 4);
    const nlohmann::json small = context(L + 1, {"--set", "cluster.nodes_per_switch=4"});
    QCOMPARE(small.at("expansion").get<std::string>(), std::string("vertical"));
    QVERIFY(small.at("why").get<std::string>().find("switch network (4 nodes) is smaller") != std::string::npos);
  }

  void plan_context_errors() {
    test::CliResult r = test::run_cli({"plan", test::tiny_config_path(), "--context", "0"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("the context length 0 is outside [1, 1099511627776] tokens"), qPrintable(r.err));
    r = test::run_cli({"plan", test::tiny_config_path(), "--context", "4096"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("cluster.device_memory_gib"), qPrintable(r.err));
    r = test::run_cli({"plan", test::tiny_config_path(), "--context", "4096", "--memory"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--context") && r.err.contains("--memory"), qPrintable(r.err));
    r = test::run_cli({"plan", test::tiny_config_path(), "--context", "4096", "--set", "cluster.device_memory_gib=0.00001"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("the weights alone need"), qPrintable(r.err));
  }

  // --cluster only describes the devices: MoNTA's own cluster, 16 A800 of 80 GiB.
  void plan_memory_on_a_cluster_file() {
    const test::CliResult r =
        test::run_cli({"plan", test::tiny_config_path(), "--memory", "--json", "--ranks", "16", "--set",
                       "train.batch_size=16", "--set", "parallel.ep=4", "--cluster", MOEBENCH_SOURCE_DIR "/sample_configs/clusters/monta.toml"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const nlohmann::json j = nlohmann::json::parse(r.out.toStdString());
    QCOMPARE(j.at("device_memory_bytes").get<double>(), 80 * kGiB);
    QCOMPARE(j.at("symbols").at("d").get<int>(), 16);
  }
};

QTEST_APPLESS_MAIN(TestMemoryModel)
#include "tst_memory_model.moc"
