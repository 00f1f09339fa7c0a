// ctest-labels: unit
// MoESys hierarchical storage (storage/expert_state_store.h, storage/sparse_state_cache.h): state
// files round-trip bit-exactly, every kind of damage raises an error naming file, block and
// expert, a write-back killed before its rename leaves the old record readable, a full disk is
// named; the LFU host cache of Algorithm 2 evicts in the hand-computed order, writes back dirty
// records, decays its hits every K requests, never evicts a pinned record and counts exactly.
#include <QtTest>

#include <QTemporaryDir>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "moebench/storage/expert_state_store.h"
#include "moebench/storage/sparse_state_cache.h"

using namespace moebench;

namespace {

constexpr int64_t kFloats = 6;  // a tiny record: 2 parameters x (weights, m, v)
constexpr int64_t kFileBytes = (int64_t)ExpertStateFiles::kHeaderBytes + kFloats * 4;  // 64

// A record whose every value says which expert it belongs to: 100 block + expert + i / 10.
std::vector<float> record_of(int block, int expert, int64_t n = kFloats) {
  std::vector<float> r((size_t)n);
  for (int64_t i = 0; i < n; ++i) r[(size_t)i] = 100.0f * block + expert + 0.1f * (float)i;
  return r;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void spill(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), (std::streamsize)bytes.size());
}

}  // namespace

class TestExpertStateStore : public QObject {
  Q_OBJECT

 private slots:
  void crc32_known_value() {
    // The standard check value of CRC-32/ISO-HDLC (zlib's crc32): "123456789" -> 0xCBF43926.
    QCOMPARE(crc32_update(0, "123456789", 9), 0xCBF43926u);
    QCOMPARE(crc32_update(crc32_update(0, "1234", 4), "56789", 5), 0xCBF43926u);  // continues
  }

  void round_trip() {
    QTemporaryDir dir;
    ExpertStateFiles files(dir.path().toStdString());
    QCOMPARE(files.stale_temps_removed(), 0);
    QVERIFY(!files.exists(0, 0));
    const std::vector<float> a = record_of(0, 0, 3000), b = record_of(3, 7, 3000);
    files.write(0, 0, a);
    files.write(3, 7, b);
    QVERIFY(files.exists(0, 0) && files.exists(3, 7) && !files.exists(3, 0));
    QCOMPARE(files.path_of(3, 7), dir.path().toStdString() + "/block3_expert7.state");
    QCOMPARE((int64_t)std::filesystem::file_size(files.path_of(3, 7)), int64_t(40 + 3000 * 4));
    std::vector<float> got(3000);
    files.read(3, 7, got);
    QVERIFY(got == b);  // bit-exact
    files.read(0, 0, got);
    QVERIFY(got == a);
    files.write(0, 0, b);  // a replace
    files.read(0, 0, got);
    QVERIFY(got == b);
    QCOMPARE(files.bytes_written(), int64_t(3 * (40 + 3000 * 4)));
    QCOMPARE(files.bytes_read(), int64_t(3 * (40 + 3000 * 4)));
    const ExpertStateView v = split_state_record(got);
    QCOMPARE(v.weights.size(), size_t(1000));
    QCOMPARE(v.m.data(), got.data() + 1000);
    QCOMPARE(v.v.data(), got.data() + 2000);
  }

  // Each damage to block 2, expert 5's file: the read throws ExpertStateError whose message names
  // the file, the block and the expert, and says what is wrong.
  void damaged_files_data() {
    QTest::addColumn<QString>("damage");
    QTest::addColumn<QString>("message");
    QTest::newRow("truncated header") << "truncate 20" << "is truncated: 20 bytes, shorter than its header";
    QTest::newRow("truncated payload") << "truncate 60" << "is truncated: 60 of 64 bytes";
    QTest::newRow("flipped payload byte") << "flip 50" << "is corrupt: payload checksum mismatch";
    QTest::newRow("wrong magic") << "flip 0" << "has a bad magic";
    QTest::newRow("flipped header byte") << "flip 25" << "has a corrupt header";
    QTest::newRow("trailing byte") << "append" << "is longer than its header says";
    QTest::newRow("another expert's file") << "copy" << "holds block 2, expert 6 instead";
    QTest::newRow("missing") << "delete" << "cannot be opened: No such file or directory";
  }
  void damaged_files() {
    QFETCH(QString, damage);
    QFETCH(QString, message);
    QTemporaryDir dir;
    ExpertStateFiles files(dir.path().toStdString());
    files.write(2, 5, record_of(2, 5));
    files.write(2, 6, record_of(2, 6));
    const std::string path = files.path_of(2, 5);
    std::string bytes = slurp(path);
    QCOMPARE((int64_t)bytes.size(), kFileBytes);
    const QStringList op = damage.split(' ');
    if (op[0] == "truncate") std::filesystem::resize_file(path, op[1].toULong());
    else if (op[0] == "flip") bytes[op[1].toULong()] ^= 0x10, spill(path, bytes);
    else if (op[0] == "append") spill(path, bytes + "x");
    else if (op[0] == "copy") spill(path, slurp(files.path_of(2, 6)));
    else if (op[0] == "delete") std::filesystem::remove(path);
    std::vector<float> out(kFloats);
    try {
      files.read(2, 5, out);
      QFAIL("the damaged file was read");
    } catch (const ExpertStateError& e) {
      const QString what = e.what();
      QVERIFY2(what.contains(QString::fromStdString(path)) && what.contains("block 2, expert 5") && what.contains(message),
               qPrintable(what));
      QCOMPARE(e.path(), path);
      QCOMPARE(e.block(), 2);
      QCOMPARE(e.expert(), 5);
    }
    QCOMPARE(files.bytes_read(), int64_t(0));  // nothing counted as read
  }

  void wrong_record_size() {
    QTemporaryDir dir;
    ExpertStateFiles files(dir.path().toStdString());
    files.write(0, 1, record_of(0, 1));
    std::vector<float> out(kFloats + 3);
    try {
      files.read(0, 1, out);
      QFAIL("a record of another size was read");
    } catch (const ExpertStateError& e) {
      QVERIFY2(QString(e.what()).contains("holds 6 floats; the model's record has 9"), e.what());
    }
  }

  // A write-back killed after writing its temp file and before the rename: the old record is read
  // intact, the temp is never read and reopening the folder removes it; the next write replaces.
  void killed_write_back_keeps_the_old_record() {
    QTemporaryDir dir;
    const std::string d = dir.path().toStdString();
    {
      ExpertStateFiles files(d);
      files.write(1, 2, record_of(1, 2));
    }
    const std::string path = d + "/block1_expert2.state";
    spill(path + ".tmp", slurp(path).substr(0, 30));  // half a new record: what kill -9 leaves
    spill(d + "/notes.tmp", "not ours");               // other files stay
    std::vector<float> out(kFloats);
    {
      ExpertStateFiles reopened(d);  // as a restarted run opens it
      QCOMPARE(reopened.stale_temps_removed(), 1);
      reopened.read(1, 2, out);
      QVERIFY(out == record_of(1, 2));
    }
    QVERIFY(!std::filesystem::exists(path + ".tmp"));
    QVERIFY(std::filesystem::exists(d + "/notes.tmp"));
    ExpertStateFiles files(d);
    QCOMPARE(files.stale_temps_removed(), 0);
    files.read(1, 2, out);
    QVERIFY(out == record_of(1, 2));
    // A stale temp present while the store writes (left after the store opened): overwritten.
    spill(path + ".tmp", std::string(1000, 'z'));
    files.read(1, 2, out);
    QVERIFY(out == record_of(1, 2));  // never read
    files.write(1, 2, record_of(1, 3));
    QVERIFY(!std::filesystem::exists(path + ".tmp"));
    files.read(1, 2, out);
    QVERIFY(out == record_of(1, 3));
  }

  // A real kill -9: a child process rewrites one 4 MiB record over and over, alternating two
  // contents, and is killed mid-way. The file then holds one of them complete (never a mix or a
  // torn write), and reopening the folder removes the temp the kill left.
  void kill_9_during_write_backs() {
    QTemporaryDir dir;
    const std::string d = dir.path().toStdString();
    constexpr int64_t n = 1 << 20;
    const std::vector<float> a = record_of(4, 1, n), b = record_of(4, 2, n);
    ExpertStateFiles(d).write(4, 1, a);
    const pid_t child = ::fork();
    QVERIFY(child >= 0);
    if (child == 0) {  // the child only writes until it is killed; it never returns into QtTest
      try {
        ExpertStateFiles files(d);
        for (int i = 0;; ++i) files.write(4, 1, i % 2 ? a : b);
      } catch (...) {
      }
      ::_exit(1);
    }
    ::usleep(150 * 1000);
    QCOMPARE(::kill(child, SIGKILL), 0);
    int status = 0;
    QCOMPARE(::waitpid(child, &status, 0), child);
    QVERIFY(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    ExpertStateFiles files(d);
    QVERIFY(files.stale_temps_removed() <= 1);
    std::vector<float> out((size_t)n);
    files.read(4, 1, out);
    QVERIFY(out == a || out == b);
  }

  void unusable_folders_are_named() {
    QTemporaryDir dir;
    const std::string missing = dir.path().toStdString() + "/nope";
    try {
      ExpertStateFiles files(missing);
      QFAIL("a missing folder was accepted");
    } catch (const ExpertStateError& e) {
      QVERIFY2(QString(e.what()).contains(QString::fromStdString(missing) + " is not an existing directory"), e.what());
    }
    // The folder vanishes under an open store: the write names the temp path and the reason.
    const std::string gone = dir.path().toStdString() + "/gone";
    std::filesystem::create_directories(gone);
    ExpertStateFiles files(gone);
    std::filesystem::remove(gone);
    try {
      files.write(0, 0, record_of(0, 0));
      QFAIL("a write into a removed folder succeeded");
    } catch (const ExpertStateError& e) {
      QVERIFY2(QString(e.what()).contains("cannot write the state of block 0, expert 0: open " + QString::fromStdString(gone)) &&
                   QString(e.what()).contains("No such file or directory"),
               e.what());
      QCOMPARE(e.path(), gone + "/block0_expert0.state");
    }
    QCOMPARE(files.bytes_written(), int64_t(0));
  }

  // A full disk: the temp file is a link to /dev/full, whose writes fail with ENOSPC. The error
  // names the path and says the disk is full; the old record stays and the link is removed.
  void full_disk_is_named() {
    if (!std::filesystem::exists("/dev/full")) QSKIP("no /dev/full on this system");
    QTemporaryDir dir;
    ExpertStateFiles files(dir.path().toStdString());
    files.write(0, 3, record_of(0, 3));
    const std::string tmp = files.path_of(0, 3) + ".tmp";
    std::filesystem::create_symlink("/dev/full", tmp);
    try {
      files.write(0, 3, record_of(0, 4));
      QFAIL("a write to a full disk succeeded");
    } catch (const ExpertStateError& e) {
      QVERIFY2(QString(e.what()).contains(QString::fromStdString(tmp)) &&
                   QString(e.what()).contains("No space left on device") && QString(e.what()).contains("is full"),
               e.what());
    }
    QVERIFY(!std::filesystem::exists(std::filesystem::symlink_status(tmp)));
    std::vector<float> out(kFloats);
    files.read(0, 3, out);
    QVERIFY(out == record_of(0, 3));
  }

  // LFU under a budget of 3 records (threshold 1, no decay), experts of block 0 named A=0 .. E=4.
  // By hand (hits after each request; victim = fewest hits, ties the least recently used):
  //   A miss [A1]          B miss [A1 B1]        A hit [A2 B1]          C miss [A2 B1 C1]
  //   C hit [A2 B1 C2]     D miss: evict B (1)   -> [A2 C2 D1], D updated and marked dirty
  //   A hit [A3 C2 D1]     E miss: evict D (1, dirty: written back) -> [A3 C2 E1]
  //   B miss: evict E (1)  -> [A3 C2 B1]
  // hits 3, misses 6, evictions 3, write-backs 1; bytes read 6 x 64, written 1 x 64.
  void lfu_eviction_order_and_write_back() {
    QTemporaryDir dir;
    ExpertStateFiles files(dir.path().toStdString());
    for (int e = 0; e < 5; ++e) files.write(0, e, record_of(0, e));
    SparseStateCache cache(files, kFloats, {3 * kFloats * 4, 1.0, 0.5, 0});
    QCOMPARE(cache.record_bytes(), int64_t(24));
    enum { A, B, C, D, E };
    auto get = [&](int e) { return cache.get(0, e); };
    QVERIFY(get(A)[0] == 0.0f);
    get(B);
    get(A);
    get(C);
    get(C);
    QCOMPARE(cache.hits_of(0, A), 2.0);
    QCOMPARE(cache.hits_of(0, B), 1.0);
    std::span<float> d = get(D);
    QVERIFY(!cache.contains(0, B) && cache.contains(0, A) && cache.contains(0, C) && cache.contains(0, D));
    d[0] = 42.0f;  // an optimizer step on D
    cache.mark_dirty(0, D);
    QVERIFY(cache.is_dirty(0, D));
    get(A);
    const int64_t written_before = files.bytes_written();
    get(E);
    QVERIFY(!cache.contains(0, D) && cache.contains(0, E));
    QCOMPARE(files.bytes_written() - written_before, kFileBytes);  // D written back, nothing else
    std::vector<float> on_disk(kFloats);
    files.read(0, D, on_disk);
    QCOMPARE(on_disk[0], 42.0f);
    get(B);
    QVERIFY(!cache.contains(0, E) && cache.contains(0, A) && cache.contains(0, C) && cache.contains(0, B));
    QCOMPARE(cache.hits_of(0, A), 3.0);
    QCOMPARE(cache.hits_of(0, B), 1.0);  // its hits were forgotten on eviction
    QCOMPARE(cache.cached_records(), int64_t(3));
    QCOMPARE(cache.cached_bytes(), int64_t(72));
    const SparseCacheStats& s = cache.stats();
    QCOMPARE(s.hits, int64_t(3));
    QCOMPARE(s.misses, int64_t(6));
    QCOMPARE(s.evictions, int64_t(3));
    QCOMPARE(s.write_backs, int64_t(1));
    QCOMPARE(s.bytes_read, 6 * kFileBytes);
    QCOMPARE(s.bytes_written, kFileBytes);
    // flush(): the dirty records are written and stay cached, clean.
    cache.get(0, A)[1] = -1.0f;
    cache.mark_dirty(0, A);
    cache.flush();
    QVERIFY(cache.contains(0, A) && !cache.is_dirty(0, A));
    files.read(0, A, on_disk);
    QCOMPARE(on_disk[1], -1.0f);
    QCOMPARE(cache.stats().write_backs, int64_t(2));
    QCOMPARE(cache.stats().hits, int64_t(4));
    cache.flush();  // nothing dirty: nothing written
    QCOMPARE(cache.stats().write_backs, int64_t(2));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, cache.mark_dirty(0, E));
  }

  // Equal hits: the least recently used goes first.
  void ties_evict_the_least_recently_used() {
    QTemporaryDir dir;
    ExpertStateFiles files(dir.path().toStdString());
    for (int e = 0; e < 3; ++e) files.write(1, e, record_of(1, e));
    SparseStateCache cache(files, kFloats, {2 * kFloats * 4, 1.0, 0.5, 0});
    cache.get(1, 1);
    cache.get(1, 0);
    cache.get(1, 2);  // 1 and 0 both at 1 hit: 1 is older
    QVERIFY(!cache.contains(1, 1) && cache.contains(1, 0) && cache.contains(1, 2));
  }

  // The SSD tier's loader protocol: pinned records are never victims; take_victim() hands the
  // victim out (dirty or not) and counts an eviction, not a write-back; insert_loaded() counts a
  // miss with the file's bytes and pins; with every record pinned no room can be made.
  void pinned_records_and_taken_victims() {
    QTemporaryDir dir;
    ExpertStateFiles files(dir.path().toStdString());
    for (int e = 0; e < 3; ++e) files.write(1, e, record_of(1, e));
    SparseStateCache cache(files, kFloats, {2 * kFloats * 4, 0.0, 0.5, 0});
    cache.get(1, 0);
    cache.get(1, 0);  // 2 hits: plain LFU would evict 1, not 0
    cache.get(1, 1);  // full: a third record needs a victim
    cache.pin(1, 1);
    std::optional<SparseStateCache::Evicted> v = cache.take_victim();
    QVERIFY(v && v->block == 1 && v->expert == 0 && !v->dirty);  // 1 is pinned
    QVERIFY(v->data == record_of(1, 0));
    QCOMPARE(cache.stats().evictions, int64_t(1));
    QVERIFY(!cache.take_victim());  // one record cached: room for another
    cache.insert_loaded(1, 2, record_of(1, 2), kFileBytes);
    QCOMPARE(cache.stats().misses, int64_t(3));
    QCOMPARE(cache.stats().bytes_read, 2 * kFileBytes + kFileBytes);
    QVERIFY(cache.contains(1, 2));
    QVERIFY_THROWS_EXCEPTION(std::logic_error, cache.take_victim());  // both pinned
    cache.pin(1, 1, false);
    cache.mark_dirty(1, 1);
    v = cache.take_victim();
    QVERIFY(v && v->expert == 1 && v->dirty);
    QCOMPARE(cache.stats().write_backs, int64_t(0));  // the caller writes it
    cache.count_write_back(kFileBytes);
    QCOMPARE(cache.stats().write_backs, int64_t(1));
    QCOMPARE(cache.stats().bytes_written, kFileBytes);
  }

  // Decay beta = 0.25 every K = 3 requests, threshold 0 (plain LFU), budget 2 records:
  //   A miss (1), A hit (2), A hit (3) -> 3rd request: A = 3 x 0.25 = 0.75
  //   B miss (1)                        -> [A 0.75, B 1]
  //   C miss: evict A (0.75 < 1; without the decay B would go) -> [B 1, C 1]
  //   B hit (2): the 6th request, decay -> [B 0.5, C 0.25]
  void decay_every_k_requests() {
    QTemporaryDir dir;
    ExpertStateFiles files(dir.path().toStdString());
    for (int e = 0; e < 3; ++e) files.write(0, e, record_of(0, e));
    SparseStateCache cache(files, kFloats, {2 * kFloats * 4, 0.0, 0.25, 3});
    cache.get(0, 0);
    cache.get(0, 0);
    QCOMPARE(cache.hits_of(0, 0), 2.0);
    cache.get(0, 0);
    QCOMPARE(cache.hits_of(0, 0), 0.75);
    cache.get(0, 1);
    QCOMPARE(cache.hits_of(0, 1), 1.0);
    cache.get(0, 2);
    QVERIFY(!cache.contains(0, 0) && cache.contains(0, 1) && cache.contains(0, 2));
    QCOMPARE(cache.hits_of(0, 1), 1.0);
    QCOMPARE(cache.hits_of(0, 2), 1.0);
    cache.get(0, 1);
    QCOMPARE(cache.hits_of(0, 1), 0.5);
    QCOMPARE(cache.hits_of(0, 2), 0.25);
  }

  // Threshold 2, no decay, budget 2: records below 2 hits are protected while one at or above
  // it can go; when all are below it, plain LFU.
  //   A miss, A hit (2), B miss (1); C miss: A is the only one >= 2 -> evict A -> [B1 C1]
  //   D miss: none >= 2 -> fewest overall, tie -> least recently used: B -> [C1 D1]
  void threshold_protects_new_records() {
    QTemporaryDir dir;
    ExpertStateFiles files(dir.path().toStdString());
    for (int e = 0; e < 4; ++e) files.write(0, e, record_of(0, e));
    SparseStateCache cache(files, kFloats, {2 * kFloats * 4, 2.0, 0.5, 0});
    cache.get(0, 0);
    cache.get(0, 0);
    cache.get(0, 1);
    cache.get(0, 2);
    QVERIFY(!cache.contains(0, 0) && cache.contains(0, 1) && cache.contains(0, 2));
    cache.get(0, 3);
    QVERIFY(!cache.contains(0, 1) && cache.contains(0, 2) && cache.contains(0, 3));
    QCOMPARE(cache.stats().evictions, int64_t(2));
  }

  void put_and_clear_write_initial_states() {
    QTemporaryDir dir;
    ExpertStateFiles files(dir.path().toStdString());
    SparseStateCache cache(files, kFloats, {});  // unlimited
    for (int e = 0; e < 4; ++e) cache.put(2, e, record_of(2, e));
    QVERIFY(cache.is_dirty(2, 3) && !files.exists(2, 3));
    QCOMPARE(cache.stats().hits + cache.stats().misses, int64_t(0));  // puts are no requests
    cache.clear();
    QCOMPARE(cache.cached_records(), int64_t(0));
    QCOMPARE(cache.stats().write_backs, int64_t(4));
    QCOMPARE(cache.stats().bytes_written, 4 * kFileBytes);
    QVERIFY(cache.get(2, 3)[0] == record_of(2, 3)[0]);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, cache.put(2, 0, record_of(2, 0, kFloats + 3)));
  }

  // A miss whose file is missing or corrupt throws and caches nothing; it still counts as a miss.
  void missing_record_is_an_error() {
    QTemporaryDir dir;
    ExpertStateFiles files(dir.path().toStdString());
    SparseStateCache cache(files, kFloats, {});
    QVERIFY_THROWS_EXCEPTION(ExpertStateError, cache.get(9, 9));
    QVERIFY(!cache.contains(9, 9));
    QCOMPARE(cache.stats().misses, int64_t(1));
    QCOMPARE(cache.stats().bytes_read, int64_t(0));
  }

  void budget_below_one_record_is_an_error() {
    QTemporaryDir dir;
    ExpertStateFiles files(dir.path().toStdString());
    try {
      SparseStateCache cache(files, kFloats, {23, 1.0, 0.5, 0});
      QFAIL("a 23-byte cache was accepted for 24-byte records");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString(e.what()).contains("host cache budget of 23 bytes cannot hold one expert state record of 24 bytes"),
               e.what());
    }
    SparseStateCache exact(files, kFloats, {24, 1.0, 0.5, 0});  // one record fits
    QCOMPARE(exact.record_bytes(), int64_t(24));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, SparseStateCache(files, kFloats, {0, 1.0, 1.5, 0}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, SparseStateCache(files, kFloats, {0, 1.0, 0.5, -1}));
  }
};

QTEST_GUILESS_MAIN(TestExpertStateStore)
#include "tst_expert_state_store.moc"
