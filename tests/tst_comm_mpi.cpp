// ctest-labels: mpi np=4
// MpiCommunicator under mpirun -np 4: point to point, the ring / tree collectives against
// serial references (and bitwise-identical results on every rank), all_to_all_v with
// irregular counts, non-blocking collectives overlapping with work on the caller thread,
// split / dup, RMA and node-shared windows, and exact TrafficMeter bytes per peer.
// Every slot checks its results only after all its communication and agrees on the outcome
// across ranks (AGREE), so a failure on one rank fails everywhere instead of hanging.
#include <mpi.h>

#include <QtTest>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "moebench/dist/mpi_communicator.h"
#include "moebench/dist/topology.h"
#include "moebench/dist/traffic_meter.h"
#include "test_support.h"
#include "mpi_test_main.h"
#include "rank_check.h"

using namespace moebench;
using moebench::test::error_message;

namespace {

using moebench::test::Check;

// Small integers, exact in every dtype and in any summation order.
double value(int rank, size_t i) { return double((int)((rank * 7 + i * 3) % 11) - 5) * (rank + 1); }
uint8_t small_u8(int rank, size_t i) { return uint8_t((rank + i) % 50); }

template <class T>
T reduce_ref(ReduceOp op, T a, T b) {
  switch (op) {
    case ReduceOp::sum: return T(a + b);
    case ReduceOp::max: return a < b ? b : a;
    case ReduceOp::min: return b < a ? b : a;
  }
  return a;
}

template <class T>
T make(int rank, size_t i) {
  if constexpr (std::is_same_v<T, uint8_t>)
    return small_u8(rank, i);
  else
    return T(value(rank, i));
}

// all_reduce of make<T>(rank, i) checked against a serial reduction over all ranks.
template <class T>
void all_reduce_case(Communicator& c, size_t count, DType type, ReduceOp op, Check& chk) {
  std::vector<T> data(count);
  for (size_t i = 0; i < count; ++i) data[i] = make<T>(c.rank(), i);
  c.all_reduce(count ? data.data() : nullptr, count, type, op);
  for (size_t i = 0; i < count; ++i) {
    T ref = make<T>(0, i);
    for (int r = 1; r < c.size(); ++r) ref = reduce_ref(op, ref, make<T>(r, i));
    chk.expect(data[i] == ref, QString("element %1: %2 != reference %3")
                                   .arg(i).arg(double(data[i])).arg(double(ref)));
  }
}

// Bytes of `v` equal on every rank of MPI_COMM_WORLD.
template <class T>
bool same_bits_everywhere(const std::vector<T>& v) {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  size_t bytes = v.size() * sizeof(T);
  std::vector<char> all(bytes * n);
  MPI_Allgather(v.data(), (int)bytes, MPI_BYTE, all.data(), (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
  for (int r = 0; r < n; ++r)
    if (std::memcmp(all.data() + r * bytes, v.data(), bytes) != 0) return false;
  return true;
}

}  // namespace

class TestCommMpi : public QObject {
  Q_OBJECT

 public:
  std::unique_ptr<MpiCommunicator> comm;
  int rank = 0, size = 1;

 private slots:
  void initTestCase() {
    comm = MpiCommunicator::world();
    rank = comm->rank();
    size = comm->size();
    QVERIFY(size >= 2);
    comm->enable_windows();  // the window tests below (collective; a second call is a no-op)
    comm->enable_windows();
  }
  void cleanupTestCase() { comm.reset(); }

  void identity() {
    Check chk;
    chk.expect(comm->rank() == MpiRuntime::world_rank(), "rank differs from the world rank");
    chk.expect(comm->size() == MpiRuntime::world_size(), "size differs from the world size");
    chk.expect(comm->backend() == "mpi", "backend is not mpi");
    for (int i = 0; i < size; ++i) chk.expect(comm->world_rank(i) == i, "world_rank mapping");
    chk.expect(!MpiRuntime::hostname().empty(), "empty host name");
    chk.expect(MpiRuntime::under_mpi_launcher(), "not detected as launched by mpirun");
    chk.expect(error_message<std::out_of_range>([&] { comm->world_rank(size); }).contains("outside"),
               "world_rank out of range not reported");
    AGREE(chk);
  }

  void send_recv() {
    Check chk;
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    // Blocking, ordered by parity to avoid a cycle of blocking sends.
    std::vector<int64_t> out(5 + rank), in(5 + left);
    for (size_t i = 0; i < out.size(); ++i) out[i] = rank * 100 + (int64_t)i;
    if (rank % 2 == 0) {
      comm->send(out.data(), out.size(), DType::i64, right, 3);
      comm->recv(in.data(), in.size(), DType::i64, left, 3);
    } else {
      comm->recv(in.data(), in.size(), DType::i64, left, 3);
      comm->send(out.data(), out.size(), DType::i64, right, 3);
    }
    for (size_t i = 0; i < in.size(); ++i) chk.expect(in[i] == left * 100 + (int64_t)i, "blocking payload");
    // Non-blocking, two tags received in the opposite order, plus an empty message.
    float a = 1.5f + rank, b = -2.0f * rank, ra = 0, rb = 0;
    auto r1 = comm->irecv(&rb, 1, DType::f32, left, 2);
    auto r2 = comm->irecv(&ra, 1, DType::f32, left, 1);
    auto r3 = comm->irecv(nullptr, 0, DType::f32, left, 4);
    auto s1 = comm->isend(&a, 1, DType::f32, right, 1);
    auto s2 = comm->isend(&b, 1, DType::f32, right, 2);
    auto s3 = comm->isend(nullptr, 0, DType::f32, right, 4);
    for (auto* r : {r1.get(), r2.get(), r3.get(), s1.get(), s2.get(), s3.get()}) r->wait();
    chk.expect(r1->test() && s3->test(), "completed requests do not test true");
    chk.expect(ra == 1.5f + left && rb == -2.0f * left, "non-blocking payloads by tag");
    chk.expect(error_message<std::invalid_argument>([&] { comm->send(&a, 1, DType::f32, right, 40000); })
                   .contains("tag 40000"),
               "reserved tag accepted");
    chk.expect(error_message<std::out_of_range>([&] { comm->send(&a, 1, DType::f32, size, 0); })
                   .contains("outside the communicator"),
               "bad peer accepted");
    AGREE(chk);
  }

  void recv_count_mismatch_is_an_error() {
    Check chk;
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double two[2] = {1, 2}, got[3] = {0, 0, 0};
    auto s = comm->isend(two, 2, DType::f64, right, 7);
    QString msg = error_message<std::runtime_error>([&] { comm->recv(got, 3, DType::f64, left, 7); });
    s->wait();
    chk.expect(msg.contains("expected 3 elements") && msg.contains("received 2"), msg);
    AGREE(chk);
  }

  void all_reduce_data() {
    QTest::addColumn<int>("type");
    QTest::addColumn<int>("op");
    QTest::addColumn<int>("count");
    const char* tn[] = {"f32", "f64", "i32", "i64", "u8"};
    const char* on[] = {"sum", "max", "min"};
    for (int t : {0, 1, 3})
      for (int o = 0; o < 3; ++o)
        for (int n : {0, 1, 3, 4, 10, 1001})
          QTest::addRow("%s %s n=%d", tn[t], on[o], n) << t << o << n;
    QTest::addRow("i32 sum n=13") << 2 << 0 << 13;
    QTest::addRow("i32 max n=13") << 2 << 1 << 13;
    QTest::addRow("u8 sum n=37") << 4 << 0 << 37;
  }
  void all_reduce() {
    QFETCH(int, type);
    QFETCH(int, op);
    QFETCH(int, count);
    Check chk;
    auto t = DType(type);
    auto o = ReduceOp(op);
    switch (t) {
      case DType::f32: all_reduce_case<float>(*comm, count, t, o, chk); break;
      case DType::f64: all_reduce_case<double>(*comm, count, t, o, chk); break;
      case DType::i32: all_reduce_case<int32_t>(*comm, count, t, o, chk); break;
      case DType::i64: all_reduce_case<int64_t>(*comm, count, t, o, chk); break;
      case DType::u8: all_reduce_case<uint8_t>(*comm, count, t, o, chk); break;
    }
    AGREE(chk);
  }

  void all_reduce_is_bitwise_identical() {
    Check chk;
    for (size_t n : {size_t(1003), size_t(4096)}) {
      std::vector<float> v = test::random_vector(n, 1000 + rank);
      comm->all_reduce(v.data(), n, DType::f32);
      chk.expect(same_bits_everywhere(v), QString("n=%1: ranks hold different bits").arg(n));
      for (size_t i = 0; i < n; ++i) {
        double ref = 0;
        for (int r = 0; r < size; ++r) ref += test::random_vector(n, 1000 + r)[i];
        if (std::abs(v[i] - ref) > 1e-5 * (1 + std::abs(ref))) {
          chk.expect(false, QString("n=%1 element %2: %3 vs %4").arg(n).arg(i).arg(v[i]).arg(ref));
          break;
        }
      }
    }
    AGREE(chk);
  }

  void all_gather_data() {
    QTest::addColumn<int>("count");
    for (int n : {0, 1, 5, 64}) QTest::addRow("n=%d", n) << n;
  }
  void all_gather() {
    QFETCH(int, count);
    Check chk;
    std::vector<double> mine(count), all(size_t(count) * size, -1.0);
    for (int i = 0; i < count; ++i) mine[i] = value(rank, i);
    comm->all_gather(mine.data(), all.data(), count, DType::f64);
    for (int r = 0; r < size; ++r)
      for (int i = 0; i < count; ++i)
        chk.expect(all[size_t(r) * count + i] == value(r, i), QString("block %1 element %2").arg(r).arg(i));
    // In place: own block already in the output.
    std::vector<double> inplace(size_t(count) * size, 0.0);
    for (int i = 0; i < count; ++i) inplace[size_t(rank) * count + i] = value(rank, i);
    comm->all_gather(inplace.data() + size_t(rank) * count, inplace.data(), count, DType::f64);
    chk.expect(inplace == all, "in-place all_gather differs");
    AGREE(chk);
  }

  void reduce_scatter_data() {
    QTest::addColumn<int>("op");
    QTest::addColumn<int>("count");
    for (int o : {0, 1, 2})
      for (int n : {0, 1, 7}) QTest::addRow("op%d n=%d", o, n) << o << n;
  }
  void reduce_scatter() {
    QFETCH(int, op);
    QFETCH(int, count);
    Check chk;
    auto o = ReduceOp(op);
    size_t total = size_t(count) * size;
    std::vector<int64_t> in(total), out(count, 99);
    for (size_t i = 0; i < total; ++i) in[i] = (int64_t)value(rank, i);
    const std::vector<int64_t> before = in;
    comm->reduce_scatter(in.data(), out.data(), count, DType::i64, o);
    for (int i = 0; i < count; ++i) {
      size_t gi = size_t(rank) * count + i;
      int64_t ref = (int64_t)value(0, gi);
      for (int r = 1; r < size; ++r) ref = reduce_ref(o, ref, (int64_t)value(r, gi));
      chk.expect(out[i] == ref, QString("element %1: %2 vs %3").arg(i).arg(out[i]).arg(ref));
    }
    chk.expect(in == before, "reduce_scatter modified its input");
    AGREE(chk);
  }

  void all_to_all_v_irregular() {
    Check chk;
    // Rank r sends (r + 2p) % 3 elements to p (zeros included), blocks separated by a gap.
    std::vector<size_t> sc(size), sd(size), rc(size), rd(size);
    size_t spos = 0, rpos = 1;
    for (int p = 0; p < size; ++p) {
      sc[p] = size_t((rank + 2 * p) % 3);
      rc[p] = size_t((p + 2 * rank) % 3);
      sd[p] = spos;
      rd[p] = rpos;
      spos += sc[p] + 1;
      rpos += rc[p] + 1;
    }
    std::vector<int32_t> send(spos, -7), recv(rpos, -1);
    for (int p = 0; p < size; ++p)
      for (size_t j = 0; j < sc[p]; ++j) send[sd[p] + j] = rank * 1000 + p * 100 + (int)j;
    comm->all_to_all_v(send.data(), sc.data(), sd.data(), recv.data(), rc.data(), rd.data(), DType::i32);
    std::vector<int32_t> expect(rpos, -1);
    for (int p = 0; p < size; ++p)
      for (size_t j = 0; j < rc[p]; ++j) expect[rd[p] + j] = p * 1000 + rank * 100 + (int)j;
    chk.expect(recv == expect, "received blocks (or untouched gaps) differ");
    AGREE(chk);
  }

  void broadcast_data() {
    QTest::addColumn<int>("root");
    QTest::addColumn<int>("count");
    for (int r = 0; r < MpiRuntime::world_size(); ++r)
      for (int n : {1, 1000}) QTest::addRow("root %d n=%d", r, n) << r << n;
  }
  void broadcast() {
    QFETCH(int, root);
    QFETCH(int, count);
    Check chk;
    std::vector<float> v(count);
    for (int i = 0; i < count; ++i) v[i] = rank == root ? float(value(root, i)) : -1.0f;
    comm->broadcast(v.data(), count, DType::f32, root);
    for (int i = 0; i < count; ++i) chk.expect(v[i] == float(value(root, i)), QString("element %1").arg(i));
    chk.expect(error_message<std::out_of_range>([&] { comm->broadcast(v.data(), 1, DType::f32, size); })
                   .contains("root"),
               "bad root accepted");
    AGREE(chk);
  }

  // reduce: the root gets the sum of every rank's data (in the tree's order: exact for these
  // integers as floats); the others keep theirs.
  void reduce_data() {
    QTest::addColumn<int>("root");
    QTest::addColumn<int>("count");
    for (int r = 0; r < MpiRuntime::world_size(); ++r)
      for (int n : {1, 1000}) QTest::addRow("root %d n=%d", r, n) << r << n;
  }
  void reduce() {
    QFETCH(int, root);
    QFETCH(int, count);
    Check chk;
    std::vector<float> v(count);
    for (int i = 0; i < count; ++i) v[i] = float(value(rank, i));
    comm->reduce(v.data(), count, DType::f32, root);
    for (int i = 0; i < count; ++i) {
      double want = 0;
      for (int r = 0; r < size; ++r) want += value(r, i);
      if (rank != root) want = value(rank, i);
      chk.expect(v[i] == float(want), QString("element %1").arg(i));
    }
    chk.expect(error_message<std::out_of_range>([&] { comm->reduce(v.data(), 1, DType::f32, size); }).contains("root"),
               "bad root accepted");
    AGREE(chk);
  }

  void iall_reduce_overlaps_with_compute() {
    Check chk;
    const size_t n = size_t(1) << 18;
    std::vector<float> big(n);
    for (size_t i = 0; i < n; ++i) big[i] = float(value(rank, i));
    auto req = comm->iall_reduce(big.data(), n, DType::f32);
    // Work on the caller thread, including a blocking collective on the same communicator,
    // while the all-reduce proceeds on the worker thread; it must finish without wait().
    std::vector<double> small{double(rank)};
    comm->all_reduce(small.data(), 1, DType::f64);
    chk.expect(small[0] == size * (size - 1) / 2.0, "concurrent blocking all_reduce");
    double acc = 0;
    long iterations = 0;
    auto start = std::chrono::steady_clock::now();
    bool finished = false;
    while (std::chrono::steady_clock::now() - start < std::chrono::seconds(120)) {
      for (int k = 0; k < 1000; ++k) acc += std::sin(double(k + iterations));
      ++iterations;
      if (req->test()) {
        finished = true;
        break;
      }
    }
    chk.expect(finished, "iall_reduce made no progress while the caller computed");
    req->wait();
    chk.expect(std::isfinite(acc) && iterations > 0, "no compute happened");
    for (size_t i = 0; i < n; ++i) {
      double ref = 0;
      for (int r = 0; r < size; ++r) ref += value(r, i);
      if (big[i] != float(ref)) {
        chk.expect(false, QString("element %1: %2 vs %3").arg(i).arg(big[i]).arg(ref));
        break;
      }
    }
    chk.expect(same_bits_everywhere(big), "async result differs between ranks");
    AGREE(chk);
  }

  void async_collectives_in_order() {
    Check chk;
    const int count = 6;
    std::vector<int64_t> mine(count), gathered(size_t(count) * size, 0), bc(count, -1), sum(count);
    for (int i = 0; i < count; ++i) mine[i] = sum[i] = rank * 10 + i;
    if (rank == size - 1) bc = mine;
    std::vector<size_t> sc(size, 2), sd(size), rc(size, 2), rd(size);
    for (int p = 0; p < size; ++p) sd[p] = rd[p] = size_t(2 * p);
    std::vector<double> a2a_in(2 * size_t(size)), a2a_out(2 * size_t(size), 0);
    for (int p = 0; p < size; ++p) a2a_in[2 * p] = a2a_in[2 * p + 1] = rank * 10 + p;
    auto r1 = comm->iall_gather(mine.data(), gathered.data(), count, DType::i64);
    auto r2 = comm->ibroadcast(bc.data(), count, DType::i64, size - 1);
    auto r3 = comm->iall_to_all_v(a2a_in.data(), sc.data(), sd.data(), a2a_out.data(), rc.data(),
                                  rd.data(), DType::f64);
    sc.assign(size, 999);  // the counts were copied: changing them now must not matter
    auto r4 = comm->iall_reduce(sum.data(), count, DType::i64, ReduceOp::max);
    r4->wait();  // completes in order: the earlier ones are done too
    chk.expect(r1->test() && r2->test() && r3->test(), "earlier async collectives not complete");
    r3->wait();
    r2->wait();
    r1->wait();
    for (int r = 0; r < size; ++r)
      for (int i = 0; i < count; ++i)
        chk.expect(gathered[size_t(r) * count + i] == r * 10 + i, "iall_gather");
    for (int i = 0; i < count; ++i) chk.expect(bc[i] == (size - 1) * 10 + i, "ibroadcast");
    for (int p = 0; p < size; ++p)
      chk.expect(a2a_out[2 * p] == p * 10 + rank && a2a_out[2 * p + 1] == p * 10 + rank, "iall_to_all_v");
    for (int i = 0; i < count; ++i) chk.expect(sum[i] == (size - 1) * 10 + i, "iall_reduce max");
    chk.expect(error_message<std::out_of_range>([&] { comm->ibroadcast(bc.data(), 1, DType::i64, -1); })
                   .contains("root"),
               "bad async root accepted");
    AGREE(chk);
  }

  void split_into_two_groups() {
    Check chk;
    // Even and odd ranks, ordered by descending world rank (key = -rank).
    auto sub = comm->split(rank % 2, -rank);
    std::vector<int> members;
    for (int r = size - 1; r >= 0; --r)
      if (r % 2 == rank % 2) members.push_back(r);
    chk.expect(sub && sub->size() == (int)members.size(), "group size");
    if (sub) {
      for (int i = 0; i < sub->size(); ++i)
        chk.expect(sub->world_rank(i) == members[i], QString("world_rank(%1)").arg(i));
      chk.expect(sub->world_rank(sub->rank()) == rank, "own world rank");
      int64_t s = rank;
      sub->all_reduce(&s, 1, DType::i64);
      chk.expect(s == std::accumulate(members.begin(), members.end(), int64_t(0)), "sum inside the group");
      std::vector<int32_t> g(sub->size());
      int32_t me = rank;
      sub->all_gather(&me, g.data(), 1, DType::i32);
      chk.expect(g == std::vector<int32_t>(members.begin(), members.end()), "all_gather inside the group");
      int32_t b = sub->rank() == 0 ? 4242 + rank % 2 : 0;
      sub->broadcast(&b, 1, DType::i32, 0);
      chk.expect(b == 4242 + rank % 2, "broadcast inside the group");
      double d = 1.0;
      sub->iall_reduce(&d, 1, DType::f64)->wait();
      chk.expect(d == double(members.size()), "iall_reduce inside the group");
    }
    // color < 0: rank 0 joins no group.
    auto rest = comm->split(rank == 0 ? -1 : 0, rank);
    chk.expect((rank == 0) == !rest, "MPI_UNDEFINED color");
    if (rest) {
      int32_t one = 1;
      rest->all_reduce(&one, 1, DType::i32);
      chk.expect(one == size - 1, "all_reduce over the rest");
    }
    AGREE(chk);
  }

  void dup_is_an_independent_communicator() {
    Check chk;
    auto d = comm->dup();
    chk.expect(d->size() == size && d->rank() == rank && d->backend() == "mpi", "dup identity");
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    // Same tag on both communicators: each receive matches only its own communicator's send.
    int32_t x = rank, y = 100 + rank, gx = -1, gy = -1;
    auto rx = comm->irecv(&gx, 1, DType::i32, left, 0);
    auto ry = d->irecv(&gy, 1, DType::i32, left, 0);
    d->isend(&y, 1, DType::i32, right, 0)->wait();
    comm->isend(&x, 1, DType::i32, right, 0)->wait();
    rx->wait();
    ry->wait();
    chk.expect(gx == left && gy == 100 + left, "messages crossed between communicator and dup");
    AGREE(chk);
  }

  void window_get_put_accumulate() {
    Check chk;
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    // Every rank accumulates into rank 0's window.
    std::vector<double> acc(size + 1, 0.0);
    {
      auto w = comm->create_window(acc.data(), acc.size(), DType::f64);
      chk.expect(w->local_count() == acc.size() && w->dtype() == DType::f64, "window shape");
      double mine = rank + 1;
      w->accumulate(&mine, 1, 0, size_t(rank) * sizeof(double));
      w->accumulate(&mine, 1, 0, size_t(size) * sizeof(double));
      w->barrier();
      if (rank == 0) {
        for (int r = 0; r < size; ++r) chk.expect(acc[r] == r + 1, QString("slot %1").arg(r));
        chk.expect(acc[size] == size * (size + 1) / 2.0, "accumulated sum");
      }
      w->barrier();
    }
    // Gets from the right neighbour, puts into the left one, max/min into rank 0.
    const int n = std::max(size, 4);
    std::vector<int64_t> data(n);
    for (int i = 0; i < n; ++i) data[i] = rank * 10 + i;
    {
      auto w = comm->create_window(data.data(), data.size(), DType::i64);
      int64_t got[2] = {-1, -1};
      w->get(got, 2, right, sizeof(int64_t));  // offsets are in bytes
      w->flush(right);
      chk.expect(got[0] == right * 10 + 1 && got[1] == right * 10 + 2, "get from the right neighbour");
      w->barrier();  // every get is done before anyone overwrites element 0
      int64_t me = rank;
      w->put(&me, 1, left, 0);
      int64_t neg = -rank;
      w->accumulate(&me, 1, 0, sizeof(int64_t), ReduceOp::max);
      w->accumulate(&neg, 1, 0, 2 * sizeof(int64_t), ReduceOp::min);
      w->flush_all();
      w->barrier();
      chk.expect(data[0] == right, "put from the right neighbour");
      if (rank == 0) {
        chk.expect(data[1] == std::max<int64_t>(1, size - 1), "accumulate max");
        chk.expect(data[2] == -(size - 1), "accumulate min");
      }
      QString msg = error_message<std::out_of_range>([&] { w->get(got, 2, right, (n - 1) * sizeof(int64_t)); });
      chk.expect(msg.contains("outside rank"), "out-of-bounds get: " + msg);
      w->barrier();
    }
    AGREE(chk);
  }

  // The groups of one split on one host each get their own windows (the process's one dynamic
  // window underneath; per-group MPI_Win_create collides in OpenMPI 4.1, ompi#9492), and a
  // second window over part of a buffer that is attached already shares its attachment.
  void windows_of_split_groups_are_independent() {
    Check chk;
    auto group = comm->split(rank % 2, rank);
    const int g = group->rank(), n = group->size(), peer = (g + 1) % n;
    std::vector<float> mem(8);
    for (int i = 0; i < 8; ++i) mem[i] = float(1000 * (rank % 2) + 100 * g + i);
    {
      auto whole = group->create_window(mem.data(), mem.size(), DType::f32);
      float got[3] = {};
      {
        auto tail = group->create_window(mem.data() + 4, 4, DType::f32);  // inside `whole`
        tail->get(got, 2, peer, sizeof(float));                             // the peer's mem[5], mem[6]
        tail->flush(peer);
        chk.expect(got[0] == float(1000 * (rank % 2) + 100 * peer + 5) && got[1] == got[0] + 1,
                   QString("get through the sub-range window: %1 %2").arg(got[0]).arg(got[1]));
        tail->barrier();
      }
      whole->get(got, 3, peer, 0);  // still attached after the other window went
      whole->flush(peer);
      chk.expect(got[0] == float(1000 * (rank % 2) + 100 * peer) && got[2] == got[0] + 2,
                 QString("get after the sub-range window was destroyed: %1").arg(got[0]));
      whole->barrier();
      const float mark = float(-1 - rank);
      whole->put(&mark, 1, peer, 7 * sizeof(float));
      whole->barrier();
      const int from = group->world_rank((g + n - 1) % n);  // the peer that put into us
      chk.expect(mem[7] == float(-1 - from), QString("put from world rank %1 landed: %2").arg(from).arg(mem[7]));
      whole->barrier();
    }
    AGREE(chk);
  }

  void shared_window_segments() {
    Check chk;
    // Every rank of this single-host test is on the node; segments of different sizes.
    auto sw = comm->create_shared_window(8 * size_t(rank + 1));
    const int lr = sw->local_rank(), ls = sw->local_size();
    chk.expect(ls == size && lr == rank, "node communicator is not the world on one host");
    auto* own = static_cast<uint8_t*>(sw->segment(lr));
    bool zero = true;
    for (size_t i = 0; i < sw->segment_bytes(lr); ++i) zero = zero && own[i] == 0;
    chk.expect(zero, "segment not zeroed at creation");
    for (size_t i = 0; i < sw->segment_bytes(lr); ++i) own[i] = uint8_t(lr * 16 + i);
    sw->sync();
    for (int r = 0; r < ls; ++r) {
      chk.expect(sw->segment_bytes(r) == 8 * size_t(r + 1), QString("segment %1 size").arg(r));
      const auto* seg = static_cast<const uint8_t*>(sw->segment(r));
      for (size_t i = 0; i < sw->segment_bytes(r); ++i)
        chk.expect(seg[i] == uint8_t(r * 16 + i), QString("segment %1 byte %2").arg(r).arg(i));
    }
    sw->sync();
    AGREE(chk);
  }

  void traffic_is_exact_per_peer() {
    if (size != 4) QSKIP("the traffic test assumes 4 ranks (2 virtual nodes x 2 devices)");
    Check chk;
    TrafficMeter meter(rank, Topology::virtual_blocks(2, 2));
    auto c = comm->dup();
    c->set_traffic_meter(&meter);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size, across = (rank + 2) % size;
    auto expect_peers = [&](const std::vector<uint64_t>& want, const char* what) {
      std::vector<uint64_t> got = meter.per_peer();
      QStringList g;
      for (auto b : got) g << QString::number(b);
      chk.expect(got == want, QString("%1: per peer %2").arg(what).arg(g.join(",")));
      meter.reset();
    };
    auto only = [&](int peer, uint64_t bytes) {
      std::vector<uint64_t> v(size, 0);
      v[peer] = bytes;
      return v;
    };

    // send: 10 floats to the right, 3 doubles across; self-sends are free.
    {
      std::vector<float> f(10, 1.0f), fr(10);
      std::vector<double> d(3, 2.0), dr(3);
      auto s1 = c->isend(f.data(), 10, DType::f32, right, 0);
      auto s2 = c->isend(d.data(), 3, DType::f64, across, 1);
      auto s3 = c->isend(d.data(), 3, DType::f64, rank, 2);
      c->recv(fr.data(), 10, DType::f32, left, 0);
      c->recv(dr.data(), 3, DType::f64, across, 1);
      c->recv(dr.data(), 3, DType::f64, rank, 2);
      s1->wait(), s2->wait(), s3->wait();
      std::vector<uint64_t> want(size, 0);
      want[right] += 40;
      want[across] += 24;
      expect_peers(want, "send");
    }
    // all_to_all_v: exactly send_counts[p] elements to each other peer.
    {
      std::vector<size_t> sc(size), sd(size), rc(size), rd(size);
      size_t sp = 0, rp = 0;
      for (int p = 0; p < size; ++p) {
        sc[p] = size_t((rank + 2 * p) % 3) + (p == rank ? 5 : 0);
        rc[p] = size_t((p + 2 * rank) % 3) + (p == rank ? 5 : 0);
        sd[p] = sp, rd[p] = rp;
        sp += sc[p], rp += rc[p];
      }
      std::vector<float> s(sp, 1.0f), r(rp);
      c->all_to_all_v(s.data(), sc.data(), sd.data(), r.data(), rc.data(), rd.data(), DType::f32);
      std::vector<uint64_t> want(size, 0);
      for (int p = 0; p < size; ++p)
        if (p != rank) want[p] = sc[p] * 4;
      expect_peers(want, "all_to_all_v");
    }
    // Ring all_reduce, count divisible by P: 2 (P-1)/P * bytes, all to the right neighbour,
    // blocking and non-blocking alike.
    {
      std::vector<float> v(400, 1.0f);
      c->all_reduce(v.data(), v.size(), DType::f32);
      expect_peers(only(right, 2 * 3 * 1600 / 4), "all_reduce 400 f32");
      c->iall_reduce(v.data(), v.size(), DType::f32)->wait();
      chk.expect(meter.bytes(LinkClass::inter_node) == (rank % 2 == 1 ? 2400u : 0u) &&
                     meter.bytes(LinkClass::intra_node) == (rank % 2 == 0 ? 2400u : 0u),
                 "all_reduce link classes");
      expect_peers(only(right, 2400), "iall_reduce 400 f32");
      // Uneven: segments 3,3,2,2; the reduce-scatter sends every segment but our own, the
      // all-gather every segment but the right neighbour's.
      std::vector<double> u(10, 1.0);
      c->all_reduce(u.data(), u.size(), DType::f64);
      auto seg = [](int i) { return i < 2 ? 3u : 2u; };
      expect_peers(only(right, 8u * ((10 - seg(rank)) + (10 - seg(right)))), "all_reduce 10 f64");
    }
    // reduce_scatter and all_gather: (P-1) * count elements to the right neighbour.
    {
      std::vector<int32_t> in(4 * 5, 1), out(5);
      c->reduce_scatter(in.data(), out.data(), 5, DType::i32);
      expect_peers(only(right, 3 * 5 * 4), "reduce_scatter");
      c->all_gather(out.data(), in.data(), 5, DType::i32);
      expect_peers(only(right, 3 * 5 * 4), "all_gather");
    }
    // Binomial broadcast from 0 over 4 ranks: 0 -> 2, 0 -> 1, 2 -> 3.
    {
      std::vector<float> b(25, 1.0f);
      c->broadcast(b.data(), b.size(), DType::f32, 0);
      std::vector<uint64_t> want(size, 0);
      if (rank == 0) want[1] = want[2] = 100;
      if (rank == 2) want[3] = 100;
      expect_peers(want, "broadcast from 0");
      // reduce to 0 is the same tree reversed: 1 -> 0, 3 -> 2, 2 -> 0.
      c->reduce(b.data(), b.size(), DType::f32, 0);
      std::fill(want.begin(), want.end(), 0);
      if (rank == 1 || rank == 2) want[0] = 100;
      if (rank == 3) want[2] = 100;
      expect_peers(want, "reduce to 0");
    }
    // Windows: puts / accumulates to the target, gets as pull traffic from the target.
    {
      std::vector<double> mem(4, 0.0);
      auto w = c->create_window(mem.data(), mem.size(), DType::f64);
      meter.reset();
      double three[3] = {1, 2, 3}, two[2];
      w->put(three, 3, right, 0);
      w->accumulate(three, 1, across, 0);
      w->get(two, 2, left, 0);
      w->get(two, 2, rank, 0);  // self: free
      w->flush_all();
      w->barrier();
      std::vector<uint64_t> want(size, 0);
      want[right] += 24;
      want[across] += 8;
      want[left] += 16;
      expect_peers(want, "window");
    }
    // Sub-communicators inherit the meter and count by world rank.
    {
      auto sub = c->split(rank % 2, rank);
      chk.expect(sub->traffic_meter() == &meter, "split does not inherit the meter");
      std::vector<float> v(8, 1.0f);
      sub->all_reduce(v.data(), v.size(), DType::f32);
      expect_peers(only(across, 32), "all_reduce in a group of 2");
    }
    AGREE(chk);
  }
};

MOEBENCH_MPI_TEST_MAIN(TestCommMpi)

#include "tst_comm_mpi.moc"
