// ctest-labels: mpi np=4
// MoESys hierarchical storage in training (storage.sparse = "ssd", storage/expert_state_tier.h):
// the experts' fp32 master weights and Adam moments in files behind an LFU host cache 4x smaller
// than the states. On the launched ranks (CTest: 4, and 1) against in-memory training of the same
// layout: bit-identical losses and parameters, with and without prefetch, also with the trainer on
// a device (tests/host_device.h: gradients down to the host and weights back up through the
// backend's copies, the tasks on the StreamExecutor over a fake device); the cache's counters
// against the schedule's arithmetic; checkpoints complete without a flush; a resume rebuilds the
// records; a damaged record stops the step naming its file and expert.
#include <QtTest>

#include <QTemporaryDir>

#include <filesystem>
#include <fstream>

#include "fake_device_queue.h"
#include "host_device.h"
#include "moebench/config/config_loader.h"
#include "moebench/config/usage_error.h"
#include "moebench/dist/mpi_communicator.h"
#include "moebench/storage/expert_state_store.h"
#include "moebench/runtime/stream_executor.h"
#include "moebench/storage/expert_state_tier.h"
#include "moebench/train/device.h"
#include "moebench/train/trainer.h"
#include "equivalence_support.h"
#include "mpi_test_main.h"
#include "test_support.h"

using namespace moebench;

namespace {

constexpr int kExperts = 8, kBlocks = 2;

// The tiny model with 8 experts in both blocks; `cache_records` = host cache in records (0: no SSD tier).
Config tier_config(int P, int cache_records, bool prefetch, const std::string& ssd_dir,
                   const std::vector<std::string>& extra = {}) {
  std::vector<std::string> sets = {"train.steps=6",
                                   "train.batch_size=" + std::to_string(2 * P),
                                   "train.eval_every=0",
                                   "cluster.nodes=" + std::to_string(P % 2 == 0 ? 2 : 1),
                                   "run.ranks=" + std::to_string(P),
                                   "run.threads=1",
                                   "moe.experts=" + std::to_string(kExperts),
                                   "moe.moe_layers=[0, 1]"};
  if (cache_records > 0) {
    const Config probe = load_config(test::tiny_config_path(), sets);
    sets.push_back("storage.sparse=ssd");
    sets.push_back("storage.ssd_dir=" + ssd_dir);
    sets.push_back("storage.host_cache_bytes=" + std::to_string(cache_records * expert_state_record_bytes(probe.model)));
    sets.push_back(std::string("storage.sparse_prefetch=") + (prefetch ? "true" : "false"));
  }
  sets.insert(sets.end(), extra.begin(), extra.end());
  return load_config(test::tiny_config_path(), sets);
}

struct Trace {
  std::vector<float> losses;
  std::vector<SparseStepStats> sparse;
};

Trace train(Trainer& t, long stop_at = -1) {
  Trace out;
  TrainCallbacks cb;
  cb.on_step = [&](const StepStats& s) {
    out.losses.push_back(s.loss.total);
    if (s.sparse) out.sparse.push_back(*s.sparse);
  };
  t.run(stop_at, cb);
  return out;
}

std::string rank_dir(const QTemporaryDir& d, Communicator* world) {
  return d.path().toStdString() + "/r" + std::to_string(world && world->size() > 1 ? world->rank() : 0);
}

// Rank 0's folder name on every rank (a checkpoint is written by rank 0 and read by all).
std::string shared_path(const QTemporaryDir& d, Communicator* world) {
  std::string path = d.path().toStdString();
  if (!world) return path;
  std::vector<char> buf(4096, '\0');
  std::copy(path.begin(), path.end(), buf.begin());
  world->broadcast(buf.data(), buf.size(), DType::u8, 0);
  return buf.data();
}

}  // namespace

class TestExpertStateTier : public QObject {
  Q_OBJECT

 private slots:
  // Every step's loss and every parameter equal in-memory training's bit for bit (the update is
  // the same adamw_update on the same values), the states being 4x the host cache. Counters per
  // step, summed over the ranks (N records and C cache slots per rank, F bytes per file):
  //   step 1: every record read (nothing cached yet): misses N, hits 0;
  //   later:  the C records left cached by the last update are updated first: hits C, misses N - C;
  //   reads:  misses x F; write-backs: every eviction of an updated (dirty) record, N - C a step
  //           (step 1 too: its first evictions take records it loaded and updated).
  void matches_memory_training_data() {
    QTest::addColumn<bool>("prefetch");
    QTest::addColumn<bool>("distributed");
    QTest::addColumn<bool>("device");
    QTest::newRow("prefetch, launched ranks") << true << true << false;
    QTest::newRow("no prefetch, launched ranks") << false << true << false;
    QTest::newRow("prefetch, one rank") << true << false << false;
    QTest::newRow("no prefetch, one rank") << false << false << false;
    QTest::newRow("prefetch, launched ranks on a device") << true << true << true;
  }
  void matches_memory_training() {
    QFETCH(bool, prefetch);
    QFETCH(bool, distributed);
    QFETCH(bool, device);
    auto world = MpiCommunicator::world();
    const int P = distributed ? world->size() : 1;
    Communicator* comm = P > 1 ? world.get() : nullptr;
    const int N = kBlocks * kExperts / P, C = N / 4;
    QTemporaryDir mem_dir, ssd_out, ssd;
    Trainer mem(tier_config(P, 0, prefetch, ""), rank_dir(mem_dir, comm), comm);
    const Trace expected = train(mem);
    test::HostDevice backend;
    test::FakeDeviceQueue queue;
    StreamExecutor executor(queue, comm ? comm->rank() : 0);
    const Config cfg = tier_config(P, C, prefetch, ssd.path().toStdString());
    Trainer tier(cfg, rank_dir(ssd_out, comm), comm,
                 device ? std::make_unique<DeviceRuntime>(backend, &executor, [](Communicator& g) { return g.dup(); })
                        : nullptr);
    QCOMPARE(tier.model().params().backend().device_memory(), device);
    const Trace got = train(tier);
    QCOMPARE(got.losses, expected.losses);
    const std::vector<float> a = tier.model().params().host_data();
    const std::vector<float> b = mem.model().params().host_data();
    QVERIFY(a == b);
    const int64_t F = int64_t(ExpertStateFiles::kHeaderBytes) + expert_state_record_bytes(tier_config(P, 0, true, "").model);
    QCOMPARE((int)got.sparse.size(), 6);
    for (size_t s = 0; s < got.sparse.size(); ++s) {
      const SparseStepStats& st = got.sparse[s];
      const int64_t hits = s == 0 ? 0 : C, misses = N - hits;
      const int64_t writes = N - C;
      QCOMPARE(st.hits, P * hits);
      QCOMPARE(st.misses, P * misses);
      QCOMPARE(st.bytes_read, P * misses * F);
      QCOMPARE(st.bytes_written, P * writes * F);
      QVERIFY(st.stall_s >= 0 && st.stall_s <= st.update_s);
    }
    // One file per expert of the rank, nothing else (no temp file left).
    const std::string dir = ssd.path().toStdString() + "/rank" + std::to_string(comm ? world->rank() : 0);
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.path().extension() == ".state";
    QCOMPARE(files, N);
  }

  // The io, copy and compute tasks of the update are in the step's spans: a load per miss on the
  // io role, an update per record on the compute role, with prefetch a write-back task per load
  // on the copy role.
  void update_tasks_are_spans() {
    auto world = MpiCommunicator::world();
    const int P = world->size();
    Communicator* comm = P > 1 ? world.get() : nullptr;
    const int N = kBlocks * kExperts / P, C = N / 4;
    QTemporaryDir out, ssd;
    Trainer t(tier_config(P, C, true, ssd.path().toStdString(), {"train.steps=3"}), rank_dir(out, comm), comm);
    std::vector<Span> spans;
    TrainCallbacks cb;
    long step = 0;
    t.set_recording(true, 1);
    cb.on_step = [&](const StepStats& s) {
      if (++step == 3) spans = s.records.spans;
    };
    t.run(-1, cb);
    if (world->rank() != 0) return;  // records are gathered on rank 0
    int loads = 0, updates = 0, writebacks = 0;
    for (const Span& s : spans) {
      if (s.rank != 0) continue;
      const bool io = s.role == StreamRole::io;
      if (s.name == "sparse.load") loads += io ? 1 : 1000;  // a load off the io role fails the count
      if (s.name == "sparse.update") updates += s.role == StreamRole::compute ? 1 : 1000;
      if (s.name == "sparse.writeback") writebacks += s.role == StreamRole::copy ? 1 : 1000;
    }
    QCOMPARE(loads, N - C);
    QCOMPARE(updates, N);
    QCOMPARE(writebacks, N - C);
  }

  // The schedule of the update phase against hand-built ones: 6 records, 2 cached, 1 free slot.
  //   prefetch:    load 0 takes the free slot (no wait); load j >= 1 waits for update j - 1,
  //                which frees a slot (the cached ones are updated first: updates 0 and 1);
  //   no prefetch: load j waits for update 2 + j - 1, the one just before its record's.
  void load_schedule_is_the_hand_built_one() {
    QCOMPARE(sparse_load_waits(6, 2, 1, true), (std::vector<int>{-1, 0, 1, 2}));
    QCOMPARE(sparse_load_waits(6, 2, 1, false), (std::vector<int>{1, 2, 3, 4}));
    QCOMPARE(sparse_load_waits(3, 0, 0, false), (std::vector<int>{-1, 0, 1}));
    QCOMPARE(sparse_load_waits(3, 0, 5, true), (std::vector<int>{-1, -1, -1}));  // everything fits: all at once
    QCOMPARE(sparse_load_waits(4, 4, 0, true), std::vector<int>{});  // all cached: no load
  }

  // A checkpoint of an SSD-tier run holds every expert's moments (read through the tier): an
  // in-memory run resumes it; an SSD-tier run with a fresh folder rebuilds the records from it;
  // both continue with the uninterrupted run's losses.
  void checkpoint_and_resume_data() {
    QTest::addColumn<bool>("distributed");
    QTest::newRow("launched ranks") << true;
    QTest::newRow("one rank") << false;
  }
  void checkpoint_and_resume() {
    QFETCH(bool, distributed);
    auto world = MpiCommunicator::world();
    const int P = distributed ? world->size() : 1;
    Communicator* comm = P > 1 ? world.get() : nullptr;
    const int C = kBlocks * kExperts / P / 4;
    QTemporaryDir out, ssd, ssd2, out2, out3;
    const Config cfg = tier_config(P, C, true, ssd.path().toStdString(), {"train.checkpoint_every=3"});
    Trainer whole(cfg, rank_dir(out, comm), comm);
    const Trace full = train(whole);
    const std::string ckpt = shared_path(out, comm) + "/r0/checkpoints/step_000003";
    const std::vector<float> tail(full.losses.begin() + 3, full.losses.end());
    {
      Trainer resumed(tier_config(P, C, true, ssd2.path().toStdString()), rank_dir(out2, comm), comm);
      QCOMPARE(resumed.resume(ckpt), 3L);
      const Trace t = train(resumed);
      QCOMPARE(t.losses, tail);
      QCOMPARE(t.sparse.front().misses + t.sparse.front().hits, (int64_t)(kBlocks * kExperts));
    }
    {
      Trainer in_memory(tier_config(P, 0, true, ""), rank_dir(out3, comm), comm);
      QCOMPARE(in_memory.resume(ckpt), 3L);
      QCOMPARE(train(in_memory).losses, tail);
    }
  }

  // One run per storage.ssd_dir: a second trainer on the same folder (another run's valid records
  // would pass every checksum) is refused, naming the key and the folder, until the first ends.
  void ssd_dir_is_one_runs() {
    QTemporaryDir out, out2, ssd;
    const Config cfg = tier_config(1, 4, true, ssd.path().toStdString());
    {
      Trainer first(cfg, out.path().toStdString());
      try {
        Trainer second(cfg, out2.path().toStdString());
        QFAIL("two runs shared one storage.ssd_dir");
      } catch (const UsageError& e) {
        const QString what = QString::fromUtf8(e.what());
        QVERIFY2(what.startsWith("storage.ssd_dir: ") && what.contains(ssd.path() + "/rank0"), qPrintable(what));
      }
    }
    Trainer after(cfg, out2.path().toStdString());  // the first one ended
  }

  // A record damaged on disk is never trained on: the step that reads it fails with an error
  // naming the file, the block and the expert.
  void damaged_record_stops_training() {
    // One rank (each launched rank alone): a multi-rank run reports the error through the CLI.
    QTemporaryDir out, ssd;
    Trainer t(tier_config(1, 4, false, ssd.path().toStdString()), out.path().toStdString());
    train(t, 2);
    // Every file not cached now is read by the next step; damage one byte of each payload.
    const std::string dir = ssd.path().toStdString() + "/rank0";
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(ExpertStateFiles::kHeaderBytes + 5);
      f.put('\x7f');
    }
    try {
      train(t, 3);
      QFAIL("a damaged record was trained on");
    } catch (const ExpertStateError& e) {
      const QString what = QString::fromUtf8(e.what());
      QVERIFY2(what.contains(QString::fromStdString(dir)) && what.contains("expert") && e.expert() >= 0,
               qPrintable(what));
    }
  }
};

MOEBENCH_MPI_TEST_MAIN(TestExpertStateTier)
#include "tst_expert_state_tier.moc"
