// ctest-labels: mpi np=2
// Data parallelism on a device, without a GPU: the GPU trainer's multi-rank wiring (a device
// backend's model whose MoE blocks stay local and sum their aux statistics over the DP group,
// Distributed reducing the gradients over the device's data communicators from the tasks of the
// device's StreamExecutor, checkpoints through host copies) on tests/host_device.h's device —
// the CPU's arithmetic behind device-memory arrays, the executor over fake_device_queue.h.
// Against the same layout on the CPU (MoE blocks through their strategy with every expert on
// each rank) and, dropless, the one-rank reference: the same per-step losses and parameters. And what
// the data communicators carried: all-reduces only, each gradient element once per step.
#include <QtTest>

#include <numeric>

#include "equivalence_support.h"
#include "fake_device_queue.h"
#include "host_device.h"
#include "moebench/config/config_loader.h"
#include "moebench/dist/mpi_communicator.h"
#include "moebench/runtime/stream_executor.h"
#include "moebench/train/device.h"
#include "moebench/train/trainer.h"
#include "mpi_test_main.h"
#include "test_support.h"

using namespace moebench;

class TestDistTrainDevice : public QObject {
  Q_OBJECT

 private slots:
  void data_parallel_on_a_device_matches_the_cpu_data() {
    QTest::addColumn<QString>("capacity");
    QTest::newRow("dropless") << "0";  // then also the one-rank run's
    QTest::newRow("capacity 1.5 (per rank, GShard)") << "1.5";
  }
  void data_parallel_on_a_device_matches_the_cpu() {
    QFETCH(QString, capacity);
    auto world = MpiCommunicator::world();
    const int P = world->size();
    if (P == 1) QSKIP("needs more than one rank (run under mpirun)");
    const long steps = 4;
    const Config cfg = load_config(test::tiny_config_path(),
                                   {"train.steps=" + std::to_string(steps), "train.batch_size=" + std::to_string(2 * P),
                                    "train.eval_every=0", "run.ranks=" + std::to_string(P), "run.threads=1",
                                    "parallel.ep=1", "moe.capacity_factor=" + capacity.toStdString()});
    QTemporaryDir dir;
    const std::string out = dir.path().toStdString() + "/r" + std::to_string(world->rank());

    Trainer single(cfg, out + "/single");
    Trainer cpu(cfg, out + "/cpu", world.get());
    const std::vector<float> cpu_losses = test::train_losses(cpu);

    test::HostDevice backend;
    test::FakeDeviceQueue queue;
    StreamExecutor executor(queue, world->rank());
    auto log = std::make_shared<std::vector<test::RecordedCall>>();
    auto recorded = [log](Communicator& group) {
      return std::make_unique<test::RecordingCommunicator>(group.dup(), log);
    };
    Trainer device(cfg, out + "/device", world.get(), std::make_unique<DeviceRuntime>(backend, &executor, recorded));
    QVERIFY(device.model().params().backend().device_memory());
    const size_t built = log->size();  // nothing is reduced before the first step
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

    // The data communicators carried the gradients' all-reduces and nothing else: every
    // element of the arena once per step (dense buckets on DP, experts over their replicas).
    size_t elements = 0;
    for (size_t i = built; i < log->size(); ++i) {
      QCOMPARE(QString::fromStdString((*log)[i].op), QStringLiteral("all_reduce"));
      elements += (*log)[i].count;
    }
    QCOMPARE(elements, (size_t)steps * device.model().params().size());
  }
};

MOEBENCH_MPI_TEST_MAIN(TestDistTrainDevice)
#include "tst_dist_train_device.moc"
