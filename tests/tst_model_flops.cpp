// ctest-labels: unit
// What model FLOPs utilisation divides by: the model FLOPs per token (model/model_flops.h)
// against the parameters a built MoeGpt holds — its matrices and their biases, with top_k of each
// block's experts, the LM head once whether tied or not, no LayerNorms or embedding lookups — and
// the datasheet table (perf/datasheet_peaks.h) against the CUDA device names it must recognise.
#include <QtTest>

#include <string>

#include "moebench/config/config_loader.h"
#include "moebench/model/model_flops.h"
#include "moebench/model/moe_gpt.h"
#include "moebench/perf/datasheet_peaks.h"
#include "test_support.h"

using namespace moebench;

namespace {

// The parameters a token multiplies by, read off the model's tensors.
double active_from_views(const Config& cfg) {
  MoeGpt model(cfg.model, cfg.moe);
  double n = 0;
  for (const ParamView& v : model.params().views()) {
    const std::string& name = v.name;
    const bool norm = name.find(".ln1.") != std::string::npos || name.find(".ln2.") != std::string::npos ||
                      name.rfind("ln_f.", 0) == 0;
    const bool lookup = name == "embed.wpe" || (name == "embed.wte" && !cfg.model.tied_head);
    if (norm || lookup || name.find(".moe.experts.") != std::string::npos) continue;
    n += (double)v.numel;
  }
  for (int l = 0; l < cfg.model.layers; ++l)
    if (const int experts = cfg.experts_in_block(l); experts > 0) {
      double one = 0;  // expert 0 of block l: w1, b1, w2, b2
      const std::string prefix = "blocks." + std::to_string(l) + ".moe.experts.0.";
      for (const ParamView& v : model.params().views())
        if (v.name.rfind(prefix, 0) == 0) one += (double)v.numel;
      n += std::min(cfg.moe.top_k, experts) * one;
    }
  return n;
}

}  // namespace

class TestModelFlops : public QObject {
  Q_OBJECT

 private slots:
  void active_parameters_are_the_models_data() {
    QTest::addColumn<QString>("set");
    QTest::newRow("tiny, tied head") << "";
    QTest::newRow("untied head, top-1") << "model.tied_head=false,moe.top_k=1";
    QTest::newRow("dense") << "moe.moe_layers=[]";
  }
  void active_parameters_are_the_models() {
    QFETCH(QString, set);
    std::vector<std::string> sets;
    for (const QString& s : set.split(u',', Qt::SkipEmptyParts)) sets.push_back(s.toStdString());
    const Config cfg = load_config(test::tiny_config_path(), sets);
    const ModelFlops f = model_flops(cfg);
    QCOMPARE(f.active_params, active_from_views(cfg));
    const ModelConfig& m = cfg.model;
    QCOMPARE(f.attention, 12.0 * m.layers * m.hidden * m.seq_len);
    QCOMPARE(f.per_token(), 6.0 * f.active_params + f.attention);
  }

  void datasheet_peaks_by_cuda_device_name() {
    auto peak = datasheet_peak("NVIDIA H100 80GB HBM3");
    QVERIFY(peak);
    QCOMPARE(QString::fromStdString(peak->gpu), QStringLiteral("H100 SXM"));
    QCOMPARE(peak->bf16_tflops, 989.5);  // 1,979 with sparsity
    QCOMPARE(peak->fp32_tflops, 67.0);
    QCOMPARE(datasheet_peak("NVIDIA H100 PCIe")->bf16_tflops, 756.5);
    QCOMPARE(datasheet_peak("NVIDIA H100 NVL")->fp32_tflops, 60.0);
    QCOMPARE(QString::fromStdString(datasheet_peak("NVIDIA H200")->gpu), QStringLiteral("H200 SXM"));
    QCOMPARE(datasheet_peak("NVIDIA A100-SXM4-80GB")->bf16_tflops, 312.0);
    QVERIFY(!datasheet_peak("NVIDIA GeForce RTX 4090"));
  }
};

QTEST_GUILESS_MAIN(TestModelFlops)
#include "tst_model_flops.moc"
