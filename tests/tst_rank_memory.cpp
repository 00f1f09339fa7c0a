// ctest-labels: unit
// The lower bound on a rank's memory that local launches are checked against
// (perf/rank_memory.h): its parameter count equals what a real MoeGpt of that config and
// expert shard allocates, for dense, MoE, PR-MoE, untied-head and sharded layouts.
#include <QtTest>

#include "moebench/config/config_loader.h"
#include "moebench/model/moe_gpt.h"
#include "moebench/perf/rank_memory.h"
#include "test_support.h"

using namespace moebench;

class TestRankMemory : public QObject {
  Q_OBJECT

 private slots:
  void parameters_match_the_model_data() {
    QTest::addColumn<QStringList>("sets");
    QTest::addColumn<int>("ranks");
    QTest::newRow("dense") << QStringList{"moe.moe_layers=[]"} << 1;
    QTest::newRow("moe, 1 rank") << QStringList{} << 1;
    QTest::newRow("moe, 4 ranks") << QStringList{"run.ranks=4"} << 4;
    QTest::newRow("pr-moe, 2 ranks") << QStringList{"model.layers=3", "moe.moe_layers=[0,2]", "moe.experts=[2,4]",
                                                    "run.ranks=2"} << 2;
    QTest::newRow("untied head, ep 2 of 4") << QStringList{"model.tied_head=false", "parallel.ep=2",
                                                           "run.ranks=4"} << 4;
  }
  void parameters_match_the_model() {
    QFETCH(QStringList, sets);
    QFETCH(int, ranks);
    std::vector<std::string> s;
    for (const auto& x : sets) s.push_back(x.toStdString());
    const Config cfg = load_config(test::tiny_config_path(), s);
    const int ep = cfg.parallel.ep > 0 ? cfg.parallel.ep : ranks;
    const MoeGpt model(cfg.model, cfg.moe, ExpertShard{0, ep});
    const RankMemory m = estimate_rank_memory(cfg, ranks);
    QCOMPARE(m.parameters, (uint64_t)model.params().size());
    QCOMPARE(m.state_bytes, 16 * m.parameters);
    QVERIFY(m.activation_bytes > 0);
    QCOMPARE(m.total_bytes, kRankBaseBytes + m.state_bytes + m.activation_bytes);
  }

  // The whole-model GPU benchmark's config (sample_configs/models/moe_gpt_1b.toml) is ~1B
  // parameters and fits one 80 GB GPU with room to spare, even at the CPU path's fp32
  // activations (the lower bound counted here).
  void gpu_step_config_is_one_billion_parameters_on_one_gpu() {
    const Config cfg = load_config(std::string(MOEBENCH_SOURCE_DIR) + "/sample_configs/models/moe_gpt_1b.toml");
    const RankMemory m = estimate_rank_memory(cfg, 1);
    QVERIFY2(m.parameters > 900'000'000 && m.parameters < 1'100'000'000, std::to_string(m.parameters).c_str());
    QVERIFY2(m.total_bytes < (uint64_t(64) << 30), std::to_string(m.total_bytes).c_str());
  }

  void absurd_sizes_saturate_instead_of_wrapping() {
    Config cfg = load_config(test::tiny_config_path());
    cfg.model.hidden = 2'000'000'000;
    cfg.model.layers = 2'000'000'000;
    QCOMPARE(estimate_rank_memory(cfg, 1).total_bytes, UINT64_MAX);
  }
};

QTEST_APPLESS_MAIN(TestRankMemory)
#include "tst_rank_memory.moc"
