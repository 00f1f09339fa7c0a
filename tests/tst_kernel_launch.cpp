// Launch geometry of kernels/ (moebench/kernels/launch.h, plain C++: checked on every machine,
// with or without nvcc) and the rank -> GPU assignment of run.device = "cuda".
#include <QtTest>

#include "moebench/kernels/launch.h"
#include "moebench/train/device.h"

using namespace moebench;
using moebench::cuda::launch_1d;
using moebench::cuda::launch_rows;

class TestKernelLaunch : public QObject {
  Q_OBJECT

 private slots:
  void one_dimensional_grids_cover_every_element_data() {
    QTest::addColumn<long>("n");
    QTest::addColumn<int>("block");
    QTest::addColumn<int>("per_thread");
    QTest::addColumn<int>("grid");
    QTest::newRow("empty") << 0L << 256 << 1 << 0;
    QTest::newRow("one") << 1L << 256 << 1 << 1;
    QTest::newRow("exact block") << 256L << 256 << 1 << 1;
    QTest::newRow("one past a block") << 257L << 256 << 1 << 2;
    QTest::newRow("vector of 4, ragged") << 1025L << 256 << 4 << 2;  // 257 threads
    QTest::newRow("vector of 8") << 2048L << 128 << 8 << 2;
    QTest::newRow("capped") << 100000000L << 256 << 1 << 65535;     // grid-stride covers the rest
  }
  void one_dimensional_grids_cover_every_element() {
    QFETCH(long, n);
    QFETCH(int, block);
    QFETCH(int, per_thread);
    QFETCH(int, grid);
    const cuda::Launch1d l = launch_1d(n, block, per_thread);
    QCOMPARE(l.grid, grid);
    QCOMPARE(l.block, block);
    if (n == 0 || l.grid == 65535) return;  // capped: the kernels' grid-stride loop covers the rest
    // Uncapped: every element has a thread and no block is idle.
    QVERIFY((long)l.grid * l.block * per_thread >= n);
    QVERIFY((long)(l.grid - 1) * l.block * per_thread < n);
  }

  void row_kernels_give_each_row_a_warp() {
    cuda::Launch1d l = launch_rows(13, 8);
    QCOMPARE(l.grid, 2);
    QCOMPARE(l.block, 256);
    l = launch_rows(16, 8);
    QCOMPARE(l.grid, 2);
    l = launch_rows(0, 4);
    QCOMPARE(l.grid, 0);
    QCOMPARE(l.block, 128);
    QCOMPARE(launch_rows(1, 32).block, 1024);
  }

  void impossible_geometry_is_refused() {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, launch_1d(10, 100));   // not a warp multiple
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, launch_1d(10, 2048));  // over 1024 threads
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, launch_1d(10, 256, 0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, launch_1d(-1));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, launch_rows(10, 33));  // 1056 threads
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, launch_rows(10, 0));
  }

  // Local ranks beyond the GPUs of a node share them round-robin.
  void local_ranks_map_to_devices_round_robin() {
    QCOMPARE(device_for_local_rank(0, 8), 0);
    QCOMPARE(device_for_local_rank(7, 8), 7);
    QCOMPARE(device_for_local_rank(1, 1), 0);
    QCOMPARE(device_for_local_rank(5, 2), 1);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, device_for_local_rank(0, 0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, device_for_local_rank(-1, 4));
  }
};

QTEST_GUILESS_MAIN(TestKernelLaunch)
#include "tst_kernel_launch.moc"
