// ctest-labels: unit
// LocalCommunicator: the single-process backend. Self send/recv through the per-tag FIFO,
// collectives as copies, windows and shared windows over local memory, split/dup, and that
// nothing is ever counted as traffic.
#include <QtTest>

#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "moebench/dist/local_communicator.h"
#include "moebench/dist/topology.h"
#include "moebench/dist/traffic_meter.h"
#include "test_support.h"

using namespace moebench;
using moebench::test::error_message;

class TestCommLocal : public QObject {
  Q_OBJECT

 private slots:
  void identity() {
    LocalCommunicator c;
    QCOMPARE(c.rank(), 0);
    QCOMPARE(c.size(), 1);
    QCOMPARE(c.world_rank(0), 0);
    QCOMPARE(QString::fromStdString(c.backend()), QString("local"));
    QVERIFY(error_message<std::out_of_range>([&] { c.world_rank(1); }).contains("size 1"));
  }

  void dtype_helpers() {
    QCOMPARE(dtype_size(DType::f32), size_t(4));
    QCOMPARE(dtype_size(DType::f64), size_t(8));
    QCOMPARE(dtype_size(DType::i32), size_t(4));
    QCOMPARE(dtype_size(DType::i64), size_t(8));
    QCOMPARE(dtype_size(DType::u8), size_t(1));
    QCOMPARE(QString(dtype_name(DType::f32)), QString("f32"));
    QCOMPARE(QString(dtype_name(DType::i64)), QString("i64"));
    QCOMPARE(QString(dtype_name(DType::u8)), QString("u8"));
  }

  void send_then_recv_is_fifo_per_tag() {
    LocalCommunicator c;
    std::vector<float> a{1, 2, 3}, b{4, 5, 6};
    int32_t x = 7;
    c.send(a.data(), 3, DType::f32, 0, 1);
    c.send(&x, 1, DType::i32, 0, 2);
    c.send(b.data(), 3, DType::f32, 0, 1);
    int32_t y = 0;
    c.recv(&y, 1, DType::i32, 0, 2);  // tag 2 is independent of tag 1
    QCOMPARE(y, 7);
    std::vector<float> r(3);
    c.recv(r.data(), 3, DType::f32, 0, 1);
    QCOMPARE(r, a);
    c.recv(r.data(), 3, DType::f32, 0, 1);
    QCOMPARE(r, b);
  }

  void irecv_before_send_completes_on_send() {
    LocalCommunicator c;
    double v = 0;
    auto req = c.irecv(&v, 1, DType::f64, 0, 5);
    QVERIFY(!req->test());
    double s = 2.5;
    c.isend(&s, 1, DType::f64, 0, 5)->wait();
    QVERIFY(req->test());
    req->wait();
    QCOMPARE(v, 2.5);
  }

  void empty_message() {
    LocalCommunicator c;
    c.send(nullptr, 0, DType::f32, 0, 0);
    c.recv(nullptr, 0, DType::f32, 0, 0);
  }

  void errors_instead_of_hangs() {
    LocalCommunicator c;
    float f = 0;
    QVERIFY(error_message<std::runtime_error>([&] { c.recv(&f, 1, DType::f32, 0, 3); })
                .contains("block forever"));
    float two[2] = {1, 2};
    c.send(two, 2, DType::f32, 0, 3);
    QVERIFY(error_message<std::runtime_error>([&] { c.recv(&f, 1, DType::f32, 0, 3); })
                .contains("expected 4 bytes"));
    QVERIFY(error_message<std::out_of_range>([&] { c.send(&f, 1, DType::f32, 1, 0); })
                .contains("rank 1"));
    QVERIFY(error_message<std::invalid_argument>([&] { c.send(&f, 1, DType::f32, 0, -1); })
                .contains("tag -1"));
    QVERIFY(error_message<std::out_of_range>([&] { c.broadcast(&f, 1, DType::f32, 2); })
                .contains("rank 2"));
    QVERIFY(error_message<std::out_of_range>([&] { c.reduce(&f, 1, DType::f32, 1); }).contains("rank 1"));
    // A cancelled (destroyed) irecv does not swallow a later message.
    { auto r = c.irecv(&f, 1, DType::f32, 0, 9); }
    float s = 3;
    c.send(&s, 1, DType::f32, 0, 9);
    c.recv(&f, 1, DType::f32, 0, 9);
    QCOMPARE(f, 3.0f);
  }

  void collectives_are_copies() {
    LocalCommunicator c;
    std::vector<float> v{1, -2, 3};
    c.all_reduce(v.data(), v.size(), DType::f32, ReduceOp::max);
    QCOMPARE(v, (std::vector<float>{1, -2, 3}));
    std::vector<float> g(3, 0);
    c.all_gather(v.data(), g.data(), 3, DType::f32);
    QCOMPARE(g, v);
    std::vector<int64_t> rs_in{4, 5}, rs_out(2, 0);
    c.reduce_scatter(rs_in.data(), rs_out.data(), 2, DType::i64);
    QCOMPARE(rs_out, rs_in);
    c.broadcast(v.data(), 3, DType::f32, 0);
    c.reduce(v.data(), 3, DType::f32, 0);
    QCOMPARE(v, (std::vector<float>{1, -2, 3}));
    c.barrier();
    // all_to_all_v: only the self block, honouring displacements.
    std::vector<int32_t> send{0, 10, 11, 12}, recv(6, -1);
    size_t sc = 3, sd = 1, rc = 3, rd = 2;
    c.all_to_all_v(send.data(), &sc, &sd, recv.data(), &rc, &rd, DType::i32);
    QCOMPARE(recv, (std::vector<int32_t>{-1, -1, 10, 11, 12, -1}));
    size_t bad = 2;
    QVERIFY(error_message<std::invalid_argument>(
                [&] { c.all_to_all_v(send.data(), &sc, &sd, recv.data(), &bad, &rd, DType::i32); })
                .contains("expects 2"));
  }

  void async_collectives_complete() {
    LocalCommunicator c;
    std::vector<double> v{1, 2}, g(2);
    auto r1 = c.iall_reduce(v.data(), 2, DType::f64);
    auto r2 = c.iall_gather(v.data(), g.data(), 2, DType::f64);
    auto r3 = c.ibroadcast(v.data(), 2, DType::f64, 0);
    size_t n = 2, z = 0;
    std::vector<double> a2a(2);
    auto r4 = c.iall_to_all_v(v.data(), &n, &z, a2a.data(), &n, &z, DType::f64);
    for (auto* r : {r1.get(), r2.get(), r3.get(), r4.get()}) {
      QVERIFY(r->test());
      r->wait();
    }
    QCOMPARE(g, v);
    QCOMPARE(a2a, v);
  }

  void split_and_dup() {
    LocalCommunicator c;
    Topology topo = Topology::virtual_blocks(1, 1);
    TrafficMeter meter(0, topo);
    c.set_traffic_meter(&meter);
    auto s = c.split(3, 0);
    QVERIFY(s);
    QCOMPARE(s->size(), 1);
    QCOMPARE(s->traffic_meter(), &meter);
    QVERIFY(!c.split(-1, 0));  // MPI_UNDEFINED
    auto d = c.dup();
    QCOMPARE(d->traffic_meter(), &meter);
    QCOMPARE(QString::fromStdString(d->backend()), QString("local"));
    // Own message space: a message sent on the dup is not seen by the original.
    float f = 1;
    d->send(&f, 1, DType::f32, 0, 0);
    QVERIFY(error_message<std::runtime_error>([&] { c.recv(&f, 1, DType::f32, 0, 0); })
                .contains("block forever"));
    d->recv(&f, 1, DType::f32, 0, 0);
    // Self traffic is never counted.
    std::vector<float> v(8, 1.0f);
    c.send(v.data(), 8, DType::f32, 0, 0);
    c.recv(v.data(), 8, DType::f32, 0, 0);
    c.all_reduce(v.data(), 8, DType::f32);
    QCOMPARE(meter.total(), uint64_t(0));
  }

  void window_get_put_accumulate() {
    LocalCommunicator c;
    std::vector<float> mem{1, 2, 3, 4};
    auto w = c.create_window(mem.data(), mem.size(), DType::f32);
    QCOMPARE(w->local_count(), size_t(4));
    QVERIFY(w->dtype() == DType::f32);
    float got[2] = {0, 0};
    w->get(got, 2, 0, 2 * sizeof(float));  // offsets are in bytes
    w->flush(0);
    QCOMPARE(got[0], 3.0f);
    QCOMPARE(got[1], 4.0f);
    float p = 9;
    w->put(&p, 1, 0, 0);
    float add[2] = {10, 20};
    w->accumulate(add, 2, 0, sizeof(float));
    float m[2] = {0, 5};
    w->accumulate(m, 2, 0, 2 * sizeof(float), ReduceOp::max);
    w->accumulate(m, 1, 0, 3 * sizeof(float), ReduceOp::min);
    w->flush_all();
    w->barrier();
    QCOMPARE(mem, (std::vector<float>{9, 12, 23, 0}));
    QVERIFY(error_message<std::out_of_range>([&] { w->get(got, 2, 0, 3 * sizeof(float)); })
                .contains("outside the window of 16 bytes"));
    QVERIFY(error_message<std::out_of_range>([&] { w->get(got, 1, 1, 0); }).contains("rank 1"));
  }

  void shared_window_is_plain_memory() {
    LocalCommunicator c;
    auto sw = c.create_shared_window(64);
    QCOMPARE(sw->local_rank(), 0);
    QCOMPARE(sw->local_size(), 1);
    QCOMPARE(sw->segment_bytes(0), size_t(64));
    auto* p = static_cast<uint8_t*>(sw->segment(0));
    QCOMPARE(int(p[0]), 0);
    std::iota(p, p + 64, uint8_t(0));
    sw->sync();
    QCOMPARE(int(static_cast<uint8_t*>(sw->segment(0))[63]), 63);
    auto empty = c.create_shared_window(0);
    QCOMPARE(empty->segment_bytes(0), size_t(0));
  }
};

QTEST_APPLESS_MAIN(TestCommLocal)
#include "tst_comm_local.moc"
