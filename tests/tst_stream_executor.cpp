// ctest-labels: unit
// StreamExecutor (runtime/stream_executor.h), the GPU path's executor, on a fake device
// (fake_device_queue.h: streams run in random interleavings on a virtual clock): every task's
// work runs after its dependencies' in every interleaving; waits are issued only across
// streams, one per producer stream; host-role tasks share the compute stream and priority tasks
// get a high-priority stream; serial mode runs every task on the compute stream; submit never
// waits on the host; spans come from the events; an
// action's error names its task, a device error reaches the synchronizing host.
#include <QtTest>

#include <random>
#include <set>

#include "fake_device_queue.h"
#include "moebench/runtime/stream_executor.h"

using namespace moebench;
using test::FakeDeviceQueue;

namespace {

GraphTask task(const std::string& name, StreamRole role, bool priority = false) {
  GraphTask t;
  t.name = name;
  t.role = role;
  t.category = role == StreamRole::compute || role == StreamRole::host ? TaskCategory::compute : TaskCategory::comm;
  t.priority = priority;
  return t;
}

}  // namespace

class TestStreamExecutor : public QObject {
  Q_OBJECT
 private slots:
  // A random graph of 80 tasks over every role and both lanes, 40 interleavings: each task's
  // work runs once, after the work of all its dependencies.
  void dependencies_hold_in_every_interleaving() {
    const StreamRole roles[] = {StreamRole::host, StreamRole::compute, StreamRole::comm_intra, StreamRole::comm_inter,
                                StreamRole::copy, StreamRole::io};
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      FakeDeviceQueue q(seed);
      StreamExecutor ex(q, 0);
      std::mt19937_64 rng(seed * 7919);
      TaskGraph g;
      std::vector<int> ran;
      const int n = 80;
      for (int i = 0; i < n; ++i) {
        const StreamRole role = roles[rng() % 6];
        GraphTask t = task("t" + std::to_string(i), role, role != StreamRole::host && rng() % 5 == 0);
        for (int d = 0; d < i && t.deps.size() < 3; ++d)
          if (rng() % 8 == 0) t.deps.push_back((int)(rng() % (uint64_t)i));
        t.action = [&q, &ran, i] { q.launch([&ran, i] { ran.push_back(i); }, 0.5 + i % 3); };
        g.add(std::move(t));
        if (i == n / 2) ex.submit(g);  // a graph that grows while it runs
      }
      ex.submit(g);
      QCOMPARE(q.host_syncs, 0);  // enqueued ahead: the host has not waited
      ex.synchronize();
      QCOMPARE((int)ran.size(), n);
      std::vector<int> at(n, -1);
      for (int k = 0; k < n; ++k) at[(size_t)ran[(size_t)k]] = k;
      for (int i = 0; i < n; ++i)
        for (int d : g.task(i).deps)
          QVERIFY2(at[(size_t)d] < at[(size_t)i],
                   qPrintable(QString("seed %1: task %2 ran before its dependency %3").arg(seed).arg(i).arg(d)));
    }
  }

  void waits_only_across_streams_one_per_producer() {
    FakeDeviceQueue q;
    StreamExecutor ex(q, 0);
    TaskGraph g;
    const TaskId a = g.add(task("a", StreamRole::compute));
    const TaskId b = g.add(task("b", StreamRole::compute), {a});       // stream order: no wait
    const TaskId c = g.add(task("c", StreamRole::comm_inter), {a, b});  // one wait, on b's end
    g.add(task("d", StreamRole::comm_inter), {a, c});                   // a: covered by b's, c: stream order
    g.add(task("e", StreamRole::host), {b});                             // the compute stream: no wait
    ex.submit(g);
    QCOMPARE(q.waits.size(), size_t(1));
    QCOMPARE(q.waits[0].first, ex.stream_of(StreamRole::comm_inter, false));
    QCOMPARE(ex.stream_of(StreamRole::host, false), ex.stream_of(StreamRole::compute, false));
    ex.synchronize();
  }

  void priority_tasks_get_a_high_priority_stream() {
    FakeDeviceQueue q;
    StreamExecutor ex(q, 0);
    const auto lane = ex.stream_of(StreamRole::comm_inter, true), plain = ex.stream_of(StreamRole::comm_inter, false);
    QVERIFY(lane != plain);
    QVERIFY(q.high_priority(lane));
    QVERIFY(!q.high_priority(plain));
    QCOMPARE(ex.stream_of(StreamRole::comm_inter, true), lane);  // made once
  }

  // Spans from the events on the virtual clock: a = 2 s of compute, b = 3 s on comm.intra after
  // a, c = 1 s of compute in parallel with b; a join (empty name) records none.
  void spans_come_from_the_events() {
    FakeDeviceQueue q;
    double host_now = 0.0;
    StreamExecutor ex(q, 3, [&host_now] { return host_now; });
    ex.set_step(7);
    TaskGraph g;
    auto work = [&q](double s) { return [&q, s] { q.launch([] {}, s); }; };
    GraphTask ta = task("a", StreamRole::compute);
    ta.action = work(2);
    ta.cost.flops = 10;
    ta.layer = 1;
    const TaskId a = g.add(std::move(ta));
    GraphTask tb = task("b", StreamRole::comm_intra);
    tb.action = work(3);
    tb.cost.bytes_to_peer = {{1, 64}};
    const TaskId b = g.add(std::move(tb), {a});
    GraphTask tc = task("c", StreamRole::compute);
    tc.action = work(1);
    g.add(std::move(tc), {a});
    g.add(GraphTask{}, {b});
    ex.submit(g);
    ex.synchronize();
    const std::vector<Span> spans = ex.take_spans();
    QCOMPARE(spans.size(), size_t(3));
    QCOMPARE(spans[0].name, std::string("a"));
    QCOMPARE(spans[0].start, 0.0);
    QCOMPARE(spans[0].end, 2.0);
    QCOMPARE(spans[0].flops, 10.0);
    QCOMPARE(spans[0].layer, 1);
    QCOMPARE(spans[0].rank, 3);
    QCOMPARE(spans[0].step, 7L);
    QCOMPARE(spans[1].name, std::string("b"));
    QCOMPARE(spans[1].role, StreamRole::comm_intra);
    QCOMPARE(spans[1].start, 2.0);
    QCOMPARE(spans[1].end, 5.0);
    QCOMPARE(spans[1].bytes, uint64_t(64));
    QCOMPARE(spans[2].start, 2.0);
    QCOMPARE(spans[2].end, 3.0);
    QVERIFY(ex.take_spans().empty());
    QCOMPARE(q.retired, 1);
    // The next step: events numbered from 0 again, spans placed at the host time of its start.
    host_now = 100.0;
    TaskGraph g2;
    GraphTask t2 = task("a", StreamRole::compute);
    t2.action = work(4);
    g2.add(std::move(t2));
    ex.submit(g2);
    ex.synchronize();
    const std::vector<Span> next = ex.take_spans();
    QCOMPARE(next.size(), size_t(1));
    QCOMPARE(next[0].start, 100.0);
    QCOMPARE(next[0].end, 104.0);
  }

  // Serial mode (bench overlap's baseline): the same graph on the compute stream alone, in
  // submission order — b (3 s of comm) and c (1 s of compute) no longer overlap, no wait is
  // issued, and b's span keeps its role; off again, b goes back to its own stream.
  void serial_mode_puts_every_task_on_the_compute_stream() {
    FakeDeviceQueue q;
    StreamExecutor ex(q, 0);
    auto work = [&q](double s) { return [&q, s] { q.launch([] {}, s); }; };
    auto graph = [&](TaskGraph& g) {
      GraphTask ta = task("a", StreamRole::compute), tb = task("b", StreamRole::comm_intra), tc = task("c", StreamRole::compute);
      ta.action = work(2), tb.action = work(3), tc.action = work(1);
      const TaskId a = g.add(std::move(ta));
      g.add(std::move(tb), {a});
      g.add(std::move(tc), {a});
    };
    ex.set_serial(true);
    TaskGraph g;
    graph(g);
    ex.submit(g);
    ex.synchronize();
    QVERIFY(q.waits.empty());
    std::vector<Span> spans = ex.take_spans();
    QCOMPARE(spans.size(), size_t(3));
    QCOMPARE(spans[1].role, StreamRole::comm_intra);
    QCOMPARE(spans[1].end - spans[1].start, 3.0);
    QCOMPARE(spans[2].start, spans[1].end);  // c after b: one stream
    QCOMPARE(spans[2].end - spans[0].start, 6.0);
    ex.set_serial(false);
    TaskGraph g2;
    graph(g2);
    ex.submit(g2);
    ex.synchronize();
    QCOMPARE(q.waits.size(), size_t(1));  // b waits for a across streams
    spans = ex.take_spans();
    QCOMPARE(spans[1].end - spans[0].start, 5.0);  // b and c overlap again: c ends inside b
    QVERIFY(spans[2].end < spans[1].end);
  }

  // The routing point: the host waits for one task (its stream up to it and what it waited for).
  void wait_runs_a_task_and_its_dependencies() {
    FakeDeviceQueue q(5);
    StreamExecutor ex(q, 0);
    TaskGraph g;
    std::set<std::string> ran;
    auto named = [&](const char* name, StreamRole role, std::vector<TaskId> deps) {
      GraphTask t = task(name, role);
      t.action = [&q, &ran, name] { q.launch([&ran, name] { ran.insert(name); }); };
      return g.add(std::move(t), deps);
    };
    const TaskId router = named("router", StreamRole::compute, {});
    const TaskId counts = named("counts", StreamRole::comm_intra, {router});
    ex.submit(g);
    ex.wait(g, counts);
    QVERIFY(ran.count("router") && ran.count("counts"));
    QCOMPARE(q.host_syncs, 1);
    named("experts", StreamRole::compute, {counts});  // built after the counts
    ex.submit(g);
    ex.synchronize();
    QCOMPARE(ran.size(), size_t(3));
    // A task added after synchronize() whose dependency completed then: no wait for it.
    const size_t waits = q.waits.size();
    named("later", StreamRole::copy, {counts});
    ex.submit(g);
    ex.synchronize();
    QCOMPARE(q.waits.size(), waits);
    QCOMPARE(ran.size(), size_t(4));
  }

  void errors_name_their_task() {
    FakeDeviceQueue q;
    StreamExecutor ex(q, 0);
    TaskGraph g;
    GraphTask bad = task("moe.experts", StreamRole::compute);
    bad.action = [] { throw std::runtime_error("cudaMalloc of 12.0 GiB failed: out of memory"); };
    g.add(std::move(bad));
    try {
      ex.submit(g);
      QFAIL("no error");
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString(e.what()).contains("task moe.experts: cudaMalloc"), e.what());
    }
    // A failing kernel: the error reaches the host that synchronizes.
    TaskGraph h;
    GraphTask k = task("attn.forward", StreamRole::compute);
    k.action = [&q] { q.launch([] { throw std::runtime_error("illegal memory access in attn.forward"); }); };
    h.add(std::move(k));
    ex.submit(h);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, ex.synchronize());
  }
};

QTEST_GUILESS_MAIN(TestStreamExecutor)
#include "tst_stream_executor.moc"
