// ctest-labels: mpi np=2 np=4
// Served windows (dist/served_window.h) over MPI: the data communicator is
// tests/host_device.h's RecordingCommunicator whose windows reach only the ranks of one
// "machine" (as the NCCL backend's CUDA IPC windows do; an operation through them on another
// machine's rank throws), so every operation across machines must be a request served by the
// target's thread. Gets, puts and accumulates to every rank, concurrent accumulates into one
// rank from both paths, epochs (what a get returns after each barrier), the bytes on the data
// communicator's meter, bad offsets, and several windows made and freed together.
#include <mpi.h>

#include <QtTest>

#include <functional>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "host_device.h"
#include "moebench/dist/mpi_communicator.h"
#include "moebench/dist/served_window.h"
#include "moebench/dist/topology.h"
#include "moebench/dist/traffic_meter.h"
#include "mpi_test_main.h"
#include "rank_check.h"
#include "test_support.h"

using namespace moebench;
using moebench::test::Check;
using moebench::test::error_message;

class TestServedWindow : public QObject {
  Q_OBJECT

 public:
  std::unique_ptr<MpiCommunicator> world;
  int rank = 0, size = 1;

 private:
  // The data communicator: a dup of the world whose windows reach `machine`'s groups.
  std::unique_ptr<Communicator> data(std::function<int(int)> machine) {
    return std::make_unique<test::RecordingCommunicator>(world->dup(), std::make_shared<std::vector<test::RecordedCall>>(),
                                                         std::move(machine));
  }
  static std::function<int(int)> machines(const QString& layout) {
    if (layout == "every rank a machine") return [](int r) { return r; };
    return [](int r) { return r / 2; };
  }

 private slots:
  void initTestCase() {
    world = MpiCommunicator::world();
    rank = world->rank();
    size = world->size();
    QVERIFY(size >= 2);
    world->enable_windows();
  }
  void cleanupTestCase() { world.reset(); }

  void operations_reach_every_rank_data() {
    QTest::addColumn<QString>("layout");
    QTest::newRow("every rank a machine") << "every rank a machine";
    QTest::newRow("two ranks a machine") << "two ranks a machine";
  }
  void operations_reach_every_rank() {
    QFETCH(QString, layout);
    if (layout == "two ranks a machine" && size < 4) QSKIP("needs two machines of two ranks (np=4)");
    Check chk;
    auto machine = machines(layout);
    auto comm = data(machine);
    TrafficMeter meter(rank, Topology::virtual_blocks(size, 1));
    comm->set_traffic_meter(&meter);
    const size_t n = 8;  // floats per segment: 0 the accumulation, 1 + r what rank r put
    std::vector<float> mem((size_t)(size + 1) * n);
    for (size_t i = 0; i < mem.size(); ++i) mem[i] = float(rank * 1000 + (int)i);
    const int next = (rank + 1) % size;
    {
      auto w = create_served_window(*comm, *world, mem.data(), mem.size(), DType::f32);
      std::vector<float> got((size_t)size * n, -1.f);
      for (int t = 0; t < size; ++t)
        if (t != rank) w->get(got.data() + (size_t)t * n, n, t, (size_t)(1 + t) * n * sizeof(float));
      std::vector<float> add(n, float(rank + 1)), mine(n, float(-rank));
      for (int t = 0; t < size; ++t) w->accumulate(add.data(), n, t, 0);
      w->put(mine.data(), n, next, (size_t)(1 + rank) * n * sizeof(float));
      w->flush_all();
      for (int t = 0; t < size; ++t)
        if (t != rank)
          for (size_t i = 0; i < n; ++i)
            chk.expect(got[(size_t)t * n + i] == float(t * 1000 + (int)((1 + t) * n + i)),
                       QString("get from rank %1, element %2: %3").arg(t).arg(i).arg(got[(size_t)t * n + i]));
      w->barrier();
      const float sum = float(size * (size + 1) / 2);
      for (size_t i = 0; i < n; ++i) {
        chk.expect(mem[i] == float(rank * 1000 + (int)i) + sum, QString("accumulated element %1: %2").arg(i).arg(mem[i]));
        const int prev = (rank + size - 1) % size;
        chk.expect(mem[(size_t)(1 + prev) * n + i] == float(-prev), QString("put from rank %1: %2").arg(prev).arg(mem[(size_t)(1 + prev) * n + i]));
      }
      // Served operations count on this rank's meter like one-sided ones: a get, an
      // accumulate and (to the next rank) a put per machine-crossing peer.
      for (int t = 0; t < size; ++t)
        if (machine(t) != machine(rank)) {
          const uint64_t want = (2 + (t == next ? 1 : 0)) * n * sizeof(float);
          chk.expect(meter.bytes_to(t) == want, QString("bytes to rank %1: %2, want %3").arg(t).arg(meter.bytes_to(t)).arg(want));
        }
      const QString bad = error_message<std::out_of_range>([&] { w->get(got.data(), n, next, mem.size() * sizeof(float)); });
      chk.expect(bad.contains(QString("outside rank %1's window").arg(next)), "a get beyond the window: " + bad);
      w->barrier();
    }
    AGREE(chk);
  }

  // Each round every rank writes its memory, and after the barrier every get sees that round's
  // values; a second window lives beside the first, and both are freed together.
  void gets_see_the_last_barrier() {
    Check chk;
    auto comm = data(machines("every rank a machine"));
    std::vector<float> a(16), b(4, float(rank));
    auto wa = create_served_window(*comm, *world, a.data(), a.size(), DType::f32);
    auto wb = create_served_window(*comm, *world, b.data(), b.size(), DType::f32);
    for (int round = 0; round < 20; ++round) {
      std::fill(a.begin(), a.end(), float(round * 100 + rank));
      wa->barrier();
      for (int t = 0; t < size; ++t) {
        if (t == rank) continue;
        std::vector<float> got(16, -1.f);
        wa->get(got.data(), got.size(), t, 0);
        float other = -1.f;
        wb->get(&other, 1, t, 3 * sizeof(float));
        wa->flush(t);
        wb->flush(t);
        chk.expect(std::all_of(got.begin(), got.end(), [&](float v) { return v == float(round * 100 + t); }),
                   QString("round %1, rank %2: %3").arg(round).arg(t).arg(got[0]));
        chk.expect(other == float(t), QString("second window, rank %1: %2").arg(t).arg(other));
      }
      wa->barrier();  // every get is done before the next round writes
    }
    AGREE(chk);
  }
};

MOEBENCH_MPI_TEST_MAIN(TestServedWindow)
#include "tst_served_window.moc"
