// ctest-labels: unit
// MoESys eq. 1 (perf/moesys_storage.h): the three sides against numbers worked out by hand, the
// overflowing tiers, the paper's Table II GPT model as a config (D, S, L counted from the config
// match its "13.9B"), the default alpha, and `moebench plan --memory` with --alpha.
#include <QtTest>

#include <string>

#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "moebench/config/config_loader.h"
#include "moebench/perf/moesys_storage.h"
#include "test_support.h"

using namespace moebench;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr int kGpu = (int)StorageTier::gpu, kCpu = (int)StorageTier::cpu, kSsd = (int)StorageTier::ssd;

// moesys.txt Table II, first row: a GPT of 13.9B parameters, hidden 4096, 64 heads, vocabulary
// 50304, 12 layers, 8 experts on 8 GPUs (A100 80 GB, §V-B), top-1 gating (§V-A "Gshard and
// top1-gating"). The table gives no sequence length: 1024 is assumed (the position embedding is
// 0.4% of D). Every layer is an MoE layer: the rows grow by 12.9B per 8 experts, 12 x an expert
// of 2 x 4096 x 16384 weights (ffn_mult 4). The paper gives no D, S, L for its 12B UFO model,
// so this row stands in for "the paper's setting".
const char* kTable2Row1 =
    "[run]\nranks = 8\n[model]\nvocab_size = 50304\nseq_len = 1024\nhidden = 4096\nlayers = 12\nheads = 64\n"
    "ffn_mult = 4\n[moe]\nmoe_layers = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\nexperts = 8\ntop_k = 1\n"
    "[cluster]\ndevice_memory_gib = 80.0\n";

}  // namespace

class TestMoesysStorage : public QObject {
  Q_OBJECT

 private slots:
  // D = 1.0e9 and S = 12.9e9 (Table II's 13.9B row read as above), L = 12, alpha = 1/8 (top-1 of
  // 8), N = 8, M_GPU = 80 GiB; M_CPU = 2 GiB and M_SSD = 16 GiB are made up to show overflows:
  //   GPU: 16 x 1.0e9 + 4 x 0.125 x 12.9e9 / 12 = 16.5375e9  <= 8 x 80 GiB = 687194767360
  //   CPU: 16 x 0.125 x 12.9e9              = 25.8e9      >  8 x 2 GiB  = 17179869184
  //   SSD: 12 x 12.9e9                       = 154.8e9     >  8 x 16 GiB = 137438953472
  void sides_by_hand() {
    MoesysStorageInput in{1.0e9, 12.9e9, 12, 0.125, 8, 80 * kGiB, 2 * kGiB, 16 * kGiB};
    MoesysStorage m = moesys_storage(in);
    QCOMPARE(m.need[kGpu], 16.5375e9);
    QCOMPARE(m.need[kCpu], 25.8e9);
    QCOMPARE(m.need[kSsd], 154.8e9);
    QCOMPARE(m.capacity[kGpu], 687194767360.0);
    QCOMPARE(m.capacity[kCpu], 17179869184.0);
    QCOMPARE(m.capacity[kSsd], 137438953472.0);
    QVERIFY(m.fits(StorageTier::gpu) && !m.fits(StorageTier::cpu) && !m.fits(StorageTier::ssd));
    QCOMPARE(m.overflowing(), std::string("CPU-Node, SSD-Node"));
    in.ssd_bytes = 32 * kGiB;  // 274877906944 >= 154.8e9
    QCOMPARE(moesys_storage(in).overflowing(), std::string("CPU-Node"));
    in.cpu_bytes = 0;  // not described: no verdict, not an overflow
    m = moesys_storage(in);
    QVERIFY(!m.described(StorageTier::cpu) && m.fits(StorageTier::cpu));
    QCOMPARE(m.overflowing(), std::string());
    in.gpu_bytes = 1 * kGiB;  // 8 x 1 GiB = 8589934592 < 16.5375e9
    QCOMPARE(moesys_storage(in).overflowing(), std::string("GPU-Node"));
  }

  void bad_inputs() {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, moesys_storage({1, 1, 1, 1.5, 1, 0, 0, 0}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, moesys_storage({1, 1, 1, -0.1, 1, 0, 0, 0}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, moesys_storage({1, 1, 0, 0.5, 1, 0, 0, 0}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, moesys_storage({1, 1, 1, 0.5, 0, 0, 0, 0}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, moesys_storage({1, 1, 1, 0.5, 1, -1, 0, 0}));
    Config dense = parse_config("", "d.toml");
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, moesys_storage_input(dense, 0.5));
  }

  // Table II row 1 as a config, counted by hand (H = 4096, F = 16384, E = 8, 12 blocks, tied head):
  //   a block's attention: 2H + (3H^2 + 3H) + (H^2 + H) + 2H = 4H^2 + 8H = 67141632; its router H x E = 32768
  //   wte 50304 x 4096 = 206045184, wpe 1024 x 4096 = 4194304, ln_f 2H = 8192
  //   D = 12 x (67141632 + 32768) + 206045184 + 4194304 + 8192 = 1016340480
  //   an expert: 2 F H + F + H = 134238208;  S = 12 x 8 x 134238208 = 12886867968
  //   D + S = 13903208448: Table II's "13.9"
  //   alpha = top_k / experts = 1/8, N = 8:
  //   GPU 16 D + 4 alpha S / 12 = 16261447680 + 536952832 = 16798400512 (fits 8 x 80 GiB)
  //   CPU 16 alpha S = 25773735936;  SSD 12 S = 154642415616
  void table2_gpt_as_a_config() {
    const Config cfg = parse_config(kTable2Row1, "table2.toml");
    QCOMPARE(default_alpha(cfg), 0.125);
    const MoesysStorageInput in = moesys_storage_input(cfg, default_alpha(cfg));
    QCOMPARE(in.dense, 1016340480.0);
    QCOMPARE(in.sparse, 12886867968.0);
    QCOMPARE(in.moe_layers, 12);
    QCOMPARE(in.devices, 8);
    QCOMPARE(in.gpu_bytes, 80 * kGiB);
    QCOMPARE(in.cpu_bytes, 0.0);
    const MoesysStorage m = moesys_storage(in);
    QCOMPARE(m.need[kGpu], 16798400512.0);
    QCOMPARE(m.need[kCpu], 25773735936.0);
    QCOMPARE(m.need[kSsd], 154642415616.0);
    QVERIFY(m.fits(StorageTier::gpu));
    QCOMPARE(m.overflowing(), std::string());
  }

  void default_alpha_per_block() {
    // top_k 2 over blocks of 8 and 4 experts: the largest share, 2/4.
    const Config c = parse_config("[moe]\nmoe_layers = [1, 3]\nexperts = [8, 4]\n", "a.toml");
    QCOMPARE(default_alpha(c), 0.5);
    QCOMPARE(default_alpha(parse_config("", "d.toml")), 1.0);
  }

  // tests/data/tiny.toml (hidden 32, F 64, 2 blocks, block 1 MoE with 4 experts top-2, vocab 32,
  // seq 16, tied head), by hand: an expert 2 x 64 x 32 + 64 + 32 = 4192, S = 4 x 4192 = 16768;
  // D = wte 1024 + wpe 512 + 2 x attention 4352 + block 0's FFN 4192 + router 128 + ln_f 64 = 14624.
  // N = 2, alpha 0.5 (default 2/4): GPU 16 x 14624 + 4 x 0.5 x 16768 = 267520, CPU 8 x 16768 =
  // 134144, SSD 12 x 16768 = 201216. host_memory_gib 0.0001 x 2 = 214748.3648 bytes holds the
  // CPU side; ssd_gib 0.00005 x 2 = 107374.1824 does not hold the SSD side. --alpha 1: CPU 268288.
  void plan_memory_json() {
    const QStringList base{"plan", test::tiny_config_path(), "--memory", "--json", "--set", "run.ranks=2",
                           "--set", "cluster.device_memory_gib=1", "--set", "cluster.host_memory_gib=0.0001",
                           "--set", "cluster.ssd_gib=0.00005"};
    test::CliResult r = test::run_cli(base);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    nlohmann::json j = nlohmann::json::parse(r.out.toStdString()).at("moesys_storage");
    QCOMPARE(j.at("D").get<double>(), 14624.0);
    QCOMPARE(j.at("S").get<double>(), 16768.0);
    QCOMPARE(j.at("L").get<int>(), 1);
    QCOMPARE(j.at("alpha").get<double>(), 0.5);
    QCOMPARE(j.at("N").get<int>(), 2);
    QCOMPARE(j.at("tiers").at("GPU-Node").at("need_bytes").get<double>(), 267520.0);
    QCOMPARE(j.at("tiers").at("CPU-Node").at("need_bytes").get<double>(), 134144.0);
    QCOMPARE(j.at("tiers").at("SSD-Node").at("need_bytes").get<double>(), 201216.0);
    QVERIFY(j.at("tiers").at("CPU-Node").at("fits").get<bool>());
    QVERIFY(!j.at("tiers").at("SSD-Node").at("fits").get<bool>());
    QCOMPARE(j.at("overflowing").get<std::string>(), std::string("SSD-Node"));
    r = test::run_cli(base + QStringList{"--alpha", "1"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    j = nlohmann::json::parse(r.out.toStdString()).at("moesys_storage");
    QCOMPARE(j.at("tiers").at("CPU-Node").at("need_bytes").get<double>(), 268288.0);
    QCOMPARE(j.at("overflowing").get<std::string>(), std::string("CPU-Node, SSD-Node"));
  }

  void plan_memory_table_and_errors() {
    test::CliResult r = test::run_cli({"plan", test::tiny_config_path(), "--memory", "--set", "run.ranks=2", "--set",
                                       "cluster.ssd_gib=0.00005", "--alpha", "0.25"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    for (const char* s : {"MoESys eq. 1 (hierarchical storage, predicted", "D = 14624 dense, S = 16768 sparse",
                          "L = 1 MoE layers, alpha = 0.25, N = 2", "no verdict (cluster.host_memory_gib is not set)",
                          "SSD-Node", "OVERFLOWS", "overflowing: SSD-Node"})
      QVERIFY2(r.out.contains(QString::fromUtf8(s)), qPrintable(QString::fromUtf8(s) + "\n" + r.out));
    r = test::run_cli({"plan", test::tiny_config_path(), "--alpha", "0.5"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--alpha needs --memory"), qPrintable(r.err));
    r = test::run_cli({"plan", test::tiny_config_path(), "--memory", "--alpha", "1.5"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--alpha"), qPrintable(r.err));
  }
};

QTEST_APPLESS_MAIN(TestMoesysStorage)
#include "tst_moesys_storage.moc"
