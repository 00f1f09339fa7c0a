// ctest-labels: mpi np=2 serial
// Calibration (perf/calibration.h) on 2 ranks: the calibrated cluster predicts a GEMM shape and
// a message size it did not measure, the cluster file it writes reads back as the same cluster,
// one rank is refused. `moebench calibrate` end to end: tst_calibrate_cli.
#include <QtTest>

#include <chrono>

#include "moebench/config/cluster_file.h"
#include "moebench/dist/local_communicator.h"
#include "moebench/dist/mpi_communicator.h"
#include "moebench/perf/calibration.h"
#include "mpi_test_main.h"

using namespace moebench;

namespace {

bool near(double a, double b) { return std::abs(a - b) <= 1e-9 + 1e-6 * std::abs(b); }

double slowest(Communicator& world, double v) {
  world.all_reduce(&v, 1, DType::f64, ReduceOp::max);
  return v;
}

// One-way seconds of a message of `bytes` from rank 0 to 1 (half a ping-pong, the fastest of 9,
// as the calibration counts).
double one_way_seconds(Communicator& world, size_t bytes) {
  std::vector<char> buf(bytes);
  std::vector<double> t;
  for (int r = 0; r < 9; ++r) {
    world.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    if (world.rank() == 0) {
      world.send(buf.data(), bytes, DType::u8, 1);
      world.recv(buf.data(), bytes, DType::u8, 1);
    } else if (world.rank() == 1) {
      world.recv(buf.data(), bytes, DType::u8, 0);
      world.send(buf.data(), bytes, DType::u8, 0);
    }
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 2);
  }
  double v = *std::min_element(t.begin(), t.end());
  world.broadcast(&v, 1, DType::f64, 0);
  return v;
}

}  // namespace

class TestCalibration : public QObject {
  Q_OBJECT
  std::unique_ptr<MpiCommunicator> world_ = MpiCommunicator::world();
  Calibration cal_;

 private slots:
  void initTestCase() {
    QCOMPARE(world_->size(), 2);
    CalibrationOptions o;
    o.quick = true;
    cal_ = measure_calibration(*world_, o);
    QCOMPARE(cal_.ranks, 2);
    QCOMPARE((int)cal_.gemm.size(), (int)calibration_shapes(true).size());
  }

  // A shape between the measured ones, timed with both ranks computing as they were: the
  // calibrated rate and efficiency curve predict it (loosely: this is a shared 2-core machine).
  void predicts_an_unmeasured_gemm() {
    const ClusterModel model(calibrated_cluster(cal_));
    const int m = 128, k = 192, n = 768;
    world_->barrier();
    const double measured = slowest(*world_, time_gemm(m, k, n, 7));
    const double predicted = model.compute_seconds(2.0 * m * k * n);
    QVERIFY2(predicted > 0.4 * measured && predicted < 2.5 * measured,
             qPrintable(QString("predicted %1 s, measured %2 s").arg(predicted).arg(measured)));
  }

  // A message size the all-to-all did not use, sent alone: latency + bytes / bandwidth is in the
  // measured time's range (a pair alone gets at least the port bandwidth of an all-to-all).
  void predicts_an_unmeasured_message() {
    const ClusterModel model(calibrated_cluster(cal_));
    for (size_t bytes : {size_t(64), size_t(1) << 20}) {
      const double measured = one_way_seconds(*world_, bytes);
      const double predicted = model.transfer_seconds(0, 1, (double)bytes);
      QVERIFY2(predicted > 0.2 * measured && predicted < 5.0 * measured,
               qPrintable(QString("%1 bytes: predicted %2 s, measured %3 s").arg(bytes).arg(predicted).arg(measured)));
    }
  }

  // The written file is a cluster file that reads back as the calibrated cluster.
  void file_reads_back_as_the_cluster() {
    const std::string text = calibrated_cluster_file(cal_, "moebench calibrate --ranks 2 --quick");
    QVERIFY(text.find("moebench calibrate --ranks 2 --quick") != std::string::npos);
    const ClusterSpec read = cluster_spec(parse_cluster_file(text, "local.toml"), 2);
    const ClusterSpec want = calibrated_cluster(cal_);
    auto close = [](double a, double b) { return std::abs(a - b) <= 1e-4 * std::abs(b); };
    QCOMPARE(read.nodes, 1);
    QCOMPARE(read.devices_per_node, 2);
    QVERIFY(close(read.device_flops, want.device_flops));
    QVERIFY(close(read.copy_bandwidth, want.copy_bandwidth));
    QVERIFY(close(read.intra.bandwidth, want.intra.bandwidth));
    QVERIFY(close(read.intra.latency, want.intra.latency));
    QVERIFY(close(read.inter.bandwidth, want.intra.bandwidth));
    QCOMPARE(read.efficiency.size(), want.efficiency.size());
    for (size_t i = 0; i < want.efficiency.size(); ++i) {
      QVERIFY(close(read.efficiency[i].flops, want.efficiency[i].flops));
      QVERIFY(std::abs(read.efficiency[i].efficiency - want.efficiency[i].efficiency) <= 1e-4);
    }
    ClusterModel model(read);  // valid: positive bandwidths, ascending curve in (0, 1]
    QCOMPARE(model.efficiency_at(1e30), read.efficiency.back().efficiency);
  }

  // fit_host_tasks on hand-made spans: a line through two runs' points, the ratio when the
  // points do not span task sizes, and the comm line over bytes.
  void fits_host_task_costs() {
    std::vector<TaskTime> m, p;
    auto task = [](int run, const char* name, bool comm, double s, double bytes = 0) {
      return TaskTime{run, name, comm, false, s, bytes};
    };
    // "e": run 0 predicted 1 ms measured 3 ms; run 1 predicted 2 ms measured 5 ms: 1 ms + 2 x.
    for (int i = 0; i < 3; ++i) m.push_back(task(0, "e", false, 3e-3)), m.push_back(task(1, "e", false, 5e-3));
    p.push_back(task(0, "e", false, 1e-3));
    p.push_back(task(1, "e", false, 2e-3));
    // "f": the same size in both runs: measured 3 and 5 ms over predicted 2 ms: ratio 8 / 4 = 2.
    m.push_back(task(0, "f", false, 3e-3));
    m.push_back(task(1, "f", false, 5e-3));
    p.push_back(task(0, "f", false, 2e-3));
    p.push_back(task(1, "f", false, 2e-3));
    // main-thread phases, unnamed tasks and names only one side has do not count
    m.push_back({0, "step", false, true, 9.0, 0});
    p.push_back({0, "step", false, true, 1.0, 0});
    m.push_back(task(0, "", false, 9.0));
    m.push_back(task(0, "only_measured", false, 9.0));
    // comm: 100 B takes 2 ms more than predicted, 300 B 4 ms more: 1 ms + 10 us per byte.
    m.push_back(task(0, "a2a", true, 7e-3, 100));
    p.push_back(task(0, "a2a", true, 5e-3, 100));
    m.push_back(task(0, "ar", true, 9e-3, 300));
    p.push_back(task(0, "ar", true, 5e-3, 300));
    const HostTaskFit fit = fit_host_tasks(m, p);
    QCOMPARE(fit.task_costs.size(), size_t(2));
    QCOMPARE(fit.task_costs[0].name, std::string("e"));
    QVERIFY(near(fit.task_costs[0].overhead, 1e-3));
    QVERIFY(near(fit.task_costs[0].factor, 2.0));
    QCOMPARE(fit.task_costs[1].name, std::string("f"));
    QCOMPARE(fit.task_costs[1].overhead, 0.0);
    QVERIFY(near(fit.task_costs[1].factor, 2.0));
    QVERIFY(near(fit.comm_overhead, 1e-3));
    QVERIFY(near(fit.comm_seconds_per_byte, 1e-5));
    // a line with a negative overhead falls back to the ratio; comm faster than predicted: 0
    const HostTaskFit slow = fit_host_tasks({task(0, "g", false, 1e-3), task(1, "g", false, 4e-3), task(0, "c", true, 1e-3, 8)},
                                            {task(0, "g", false, 1e-3), task(1, "g", false, 2e-3), task(0, "c", true, 2e-3, 8)});
    QCOMPARE(slow.task_costs.size(), size_t(1));
    QCOMPARE(slow.task_costs[0].overhead, 0.0);
    QVERIFY(near(slow.task_costs[0].factor, 5.0 / 3.0));
    QCOMPARE(slow.comm_overhead, 0.0);
    QCOMPARE(slow.comm_seconds_per_byte, 0.0);
    // the fit's lines read back into the cluster
    const std::string text = "[cluster]\nname = \"local\"\n" + host_task_fit_lines(fit, "a test");
    const ClusterSpec read = cluster_spec(parse_cluster_file(text, "fit.toml"), 2);
    QCOMPARE(read.task_costs.size(), size_t(2));
    QVERIFY(near(read.task_costs[0].overhead, 1e-3) && near(read.task_costs[0].factor, 2.0));
    QVERIFY(near(read.comm_overhead, 1e-3) && near(read.comm_seconds_per_byte, 1e-5));
  }

  void one_rank_is_refused() {
    LocalCommunicator one;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, measure_calibration(one, CalibrationOptions{}));
  }
};

MOEBENCH_MPI_TEST_MAIN(TestCalibration)
#include "tst_calibration.moc"
