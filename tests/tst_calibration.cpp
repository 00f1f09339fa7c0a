// ctest-labels: mpi np=2
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

  void one_rank_is_refused() {
    LocalCommunicator one;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, measure_calibration(one, CalibrationOptions{}));
  }
};

MOEBENCH_MPI_TEST_MAIN(TestCalibration)
#include "tst_calibration.moc"
