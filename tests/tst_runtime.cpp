// ctest-labels: unit
// Executor: FIFO streams, cross-stream dependencies, real overlap, span fields, error
// propagation (rethrow, skipped dependants, recovery), run_inline, clean destruction, scale.
// No pass/fail depends on durations; the only time limit is a bounded wait that turns a
// deadlock (serialised streams) into a failure.
#include <QtTest>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "moebench/runtime/executor.h"

using namespace moebench;

namespace {

Task make_task(std::string name, Stream& s, std::function<void()> action = {},
               std::vector<Event*> deps = {}) {
  Task t;
  t.name = std::move(name);
  t.stream = &s;
  t.action = std::move(action);
  t.deps = std::move(deps);
  return t;
}

const Span* find_span(const std::vector<Span>& spans, const std::string& name) {
  for (const auto& s : spans)
    if (s.name == name) return &s;
  return nullptr;
}

// A gate the host opens later; waiters give up after a bound so a bug fails instead of hanging.
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  void release() {
    { std::lock_guard<std::mutex> l(m); open = true; }
    cv.notify_all();
  }
  bool wait(std::chrono::seconds bound = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> l(m);
    return cv.wait_for(l, bound, [this] { return open; });
  }
};

// Each of n parties arrives and waits (bounded) until all n have arrived.
struct Rendezvous {
  explicit Rendezvous(int n) : needed(n) {}
  std::mutex m;
  std::condition_variable cv;
  int arrived = 0;
  int needed;
  bool arrive_and_wait(std::chrono::seconds bound) {
    std::unique_lock<std::mutex> l(m);
    ++arrived;
    cv.notify_all();
    return cv.wait_for(l, bound, [this] { return arrived >= needed; });
  }
};

}  // namespace

class TestRuntime : public QObject {
  Q_OBJECT

 private slots:
  void category_names() {
    QCOMPARE(QString(task_category_name(TaskCategory::compute)), QString("compute"));
    QCOMPARE(QString(task_category_name(TaskCategory::comm)), QString("comm"));
    QCOMPARE(QString(task_category_name(TaskCategory::copy)), QString("copy"));
    QCOMPARE(QString(task_category_name(TaskCategory::io)), QString("io"));
  }

  void streams_are_created_once_by_name() {
    Executor ex(0);
    Stream& a = ex.stream("compute");
    Stream& b = ex.stream("comm");
    QVERIFY(&a != &b);
    QCOMPARE(&ex.stream("compute"), &a);
    QCOMPARE(QString::fromStdString(a.name()), QString("compute"));
    QCOMPARE(ex.rank(), 0);
  }

  void submit_requires_a_stream_of_this_executor() {
    Executor ex(0), other(1);
    Task t;
    t.name = "nowhere";
    bool threw = false;
    try { ex.submit(t); } catch (const std::invalid_argument&) { threw = true; }
    QVERIFY(threw);
    threw = false;
    try { ex.submit(make_task("foreign", other.stream("compute"))); } catch (const std::invalid_argument&) { threw = true; }
    QVERIFY(threw);
  }

  void fifo_order_on_one_stream() {
    Executor ex(0);
    Stream& s = ex.stream("compute");
    std::vector<int> order;  // touched only by the stream's worker until synchronize
    const int n = 200;
    for (int i = 0; i < n; ++i)
      ex.submit(make_task(QString("t%1").arg(i).toStdString(), s, [&order, i] { order.push_back(i); }));
    ex.synchronize();
    QCOMPARE((int)order.size(), n);
    for (int i = 0; i < n; ++i) QCOMPARE(order[i], i);
    auto spans = ex.take_spans();
    QCOMPARE((int)spans.size(), n);
    for (int i = 0; i < n; ++i) {
      QCOMPARE(QString::fromStdString(spans[i].name), QString("t%1").arg(i));
      QVERIFY(spans[i].start <= spans[i].end);
      if (i > 0) QVERIFY(spans[i - 1].end <= spans[i].start);  // serial on one stream
    }
    QVERIFY(ex.take_spans().empty());  // taken
  }

  void dependencies_across_streams() {
    for (int rep = 0; rep < 20; ++rep) {
      Executor ex(0);
      Stream& a = ex.stream("A");
      Stream& b = ex.stream("B");
      std::atomic<int> counter{0};
      std::atomic<int> seen{-1};
      std::atomic<bool> gate_ok{false};
      Gate gate;
      // A's task cannot finish before the host has submitted B's task: B must really wait.
      Event* ea = ex.submit(make_task("produce", a, [&] {
        gate_ok = gate.wait();
        counter.store(1);
      }));
      Event* eb = ex.submit(make_task("consume", b, [&] { seen.store(counter.load()); }, {ea}));
      QVERIFY(!eb->done());
      gate.release();
      eb->wait();
      QVERIFY(ea->done());
      QVERIFY(gate_ok);
      QCOMPARE(seen.load(), 1);
      ex.synchronize();
      auto spans = ex.take_spans();
      const Span* p = find_span(spans, "produce");
      const Span* c = find_span(spans, "consume");
      QVERIFY(p && c);
      QVERIFY2(p->end <= c->start, "consumer started before its dependency finished");
    }
  }

  void streams_overlap_for_real() {
    Executor ex(0);
    Rendezvous both(2);
    std::atomic<bool> comm_ok{false}, compute_ok{false};
    const auto bound = std::chrono::seconds(5);
    Task comm = make_task("a2a", ex.stream("comm"), [&] { comm_ok = both.arrive_and_wait(bound); });
    comm.category = TaskCategory::comm;
    Task compute = make_task("gemm", ex.stream("compute"), [&] { compute_ok = both.arrive_and_wait(bound); });
    ex.submit(comm);
    ex.submit(compute);
    ex.synchronize();
    QVERIFY2(comm_ok && compute_ok, "comm and compute tasks did not run at the same time");
    auto spans = ex.take_spans();
    const Span* a = find_span(spans, "a2a");
    const Span* g = find_span(spans, "gemm");
    QVERIFY(a && g);
    QVERIFY(a->start < g->end && g->start < a->end);  // the recorded intervals intersect
  }

  void span_fields_are_recorded() {
    Executor ex(3);
    ex.set_step(7);
    Task t = make_task("dispatch", ex.stream("comm"));
    t.category = TaskCategory::comm;
    t.cost.flops = 1e6;
    t.cost.bytes_to_peer = {{5, 1000}};
    t.layer = 2;
    t.expert = 4;
    ex.submit(t);
    Task multi = make_task("scatter", ex.stream("comm"));
    multi.category = TaskCategory::comm;
    multi.cost.bytes_to_peer = {{1, 10}, {2, 20}, {6, 30}};
    ex.submit(multi);
    Task explicit_peer = make_task("pull", ex.stream("copy"));
    explicit_peer.category = TaskCategory::copy;
    explicit_peer.cost.bytes_to_peer = {{1, 10}, {2, 20}};
    explicit_peer.peer = 2;
    ex.submit(explicit_peer);
    ex.set_step(8);
    ex.submit(make_task("plain", ex.stream("compute")));
    ex.synchronize();
    auto spans = ex.take_spans();
    QCOMPARE((int)spans.size(), 4);

    const Span* d = find_span(spans, "dispatch");
    QVERIFY(d);
    QCOMPARE(d->rank, 3);
    QCOMPARE(QString::fromStdString(d->stream), QString("comm"));
    QVERIFY(d->category == TaskCategory::comm);
    QCOMPARE(d->bytes, (uint64_t)1000);
    QCOMPARE(d->peer, 5);
    QCOMPARE(d->layer, 2);
    QCOMPARE(d->expert, 4);
    QCOMPARE(d->step, 7L);
    QVERIFY(d->start >= 0.0 && d->start <= d->end && d->end <= ex.now());

    const Span* m = find_span(spans, "scatter");
    QVERIFY(m);
    QCOMPARE(m->bytes, (uint64_t)60);
    QCOMPARE(m->peer, -1);
    QCOMPARE(m->layer, -1);
    QCOMPARE(m->expert, -1);
    QCOMPARE(m->step, 7L);

    const Span* e = find_span(spans, "pull");
    QVERIFY(e);
    QCOMPARE(QString::fromStdString(e->stream), QString("copy"));
    QVERIFY(e->category == TaskCategory::copy);
    QCOMPARE(e->bytes, (uint64_t)30);
    QCOMPARE(e->peer, 2);

    const Span* p = find_span(spans, "plain");
    QVERIFY(p);
    QCOMPARE(p->step, 8L);
    QCOMPARE(p->bytes, (uint64_t)0);
    QCOMPARE(p->peer, -1);
    QVERIFY(p->category == TaskCategory::compute);
  }

  void errors_propagate_and_the_executor_recovers() {
    Executor ex(0);
    Stream& compute = ex.stream("compute");
    Stream& comm = ex.stream("comm");
    std::atomic<bool> dependant_ran{false}, grandchild_ran{false}, independent_ran{false};
    Event* bad = ex.submit(make_task("bad", compute, [] { throw std::runtime_error("boom"); }));
    Event* dep = ex.submit(make_task("dependant", comm, [&] { dependant_ran = true; }, {bad}));
    Event* dep2 = ex.submit(make_task("grandchild", compute, [&] { grandchild_ran = true; }, {dep}));
    Event* ind = ex.submit(make_task("independent", compute, [&] { independent_ran = true; }));

    auto message_of = [](const std::function<void()>& f) -> QString {
      try {
        f();
      } catch (const std::runtime_error& e) {
        return QString(e.what());
      } catch (...) {
        return "<other exception>";
      }
      return "<no exception>";
    };
    QCOMPARE(message_of([&] { bad->wait(); }), QString("boom"));
    QCOMPARE(message_of([&] { dep->wait(); }), QString("boom"));
    QCOMPARE(message_of([&] { dep2->wait(); }), QString("boom"));
    QVERIFY(bad->error() && dep->error() && dep2->error());
    ind->wait();  // no dependency on the failure: runs and succeeds
    QVERIFY(!ind->error());
    QCOMPARE(message_of([&] { ex.synchronize(); }), QString("boom"));
    QVERIFY(!dependant_ran);
    QVERIFY(!grandchild_ran);
    QVERIFY(independent_ran);
    auto spans = ex.take_spans();
    QVERIFY(find_span(spans, "bad"));  // it ran (and failed)
    QVERIFY(!find_span(spans, "dependant"));  // skipped: no span
    QVERIFY(!find_span(spans, "grandchild"));
    QVERIFY(find_span(spans, "independent"));

    // The error was reported once; the executor keeps working.
    ex.synchronize();
    compute.synchronize();
    comm.synchronize();
    ex.clear_events();
    std::atomic<int> ran{0};
    Event* x = ex.submit(make_task("after1", compute, [&] { ++ran; }));
    ex.submit(make_task("after2", comm, [&] { ++ran; }, {x}));
    ex.synchronize();
    QCOMPARE(ran.load(), 2);
    QCOMPARE((int)ex.take_spans().size(), 2);

    // Stream::synchronize rethrows its own stream's error, then clears it.
    ex.submit(make_task("bad2", comm, [] { throw std::runtime_error("again"); }));
    QCOMPARE(message_of([&] { comm.synchronize(); }), QString("again"));
    comm.synchronize();
    ex.synchronize();
  }

  void synchronize_reports_the_earliest_error() {
    Executor ex(0);
    Stream& a = ex.stream("a");
    Stream& z = ex.stream("z");
    // "z" fails first; "a" (iterated first by name) fails only after it.
    Event* first = ex.submit(make_task("first", z, [] { throw std::runtime_error("first"); }));
    ex.submit(make_task("second", a, [&] {
      try { first->wait(); } catch (...) {}
      throw std::runtime_error("second");
    }));
    QString msg;
    try {
      ex.synchronize();
    } catch (const std::runtime_error& e) {
      msg = e.what();
    }
    QCOMPARE(msg, QString("first"));
    ex.synchronize();  // both cleared
  }

  void run_inline_records_spans() {
    Executor ex(1);
    ex.set_step(4);
    int value = 0;
    Task t;
    t.name = "optimizer";
    t.category = TaskCategory::compute;
    t.layer = 3;
    t.action = [&] { value = 42; };
    ex.run_inline(t);
    QCOMPARE(value, 42);  // ran on this thread, synchronously
    std::thread::id ran_on;
    Task io;
    io.name = "checkpoint";
    io.category = TaskCategory::io;
    // Inline tasks wait for their dependencies.
    std::atomic<bool> produced{false};
    Event* e = ex.submit(make_task("produce", ex.stream("compute"), [&] { produced = true; }));
    io.deps = {e};
    io.action = [&] {
      ran_on = std::this_thread::get_id();
      QVERIFY(produced.load());
    };
    ex.run_inline(io, "io");
    QVERIFY(ran_on == std::this_thread::get_id());
    ex.synchronize();
    auto spans = ex.take_spans();
    const Span* s = find_span(spans, "optimizer");
    QVERIFY(s);
    QCOMPARE(QString::fromStdString(s->stream), QString("host"));
    QCOMPARE(s->rank, 1);
    QCOMPARE(s->step, 4L);
    QCOMPARE(s->layer, 3);
    QVERIFY(s->start <= s->end);
    const Span* c = find_span(spans, "checkpoint");
    QVERIFY(c);
    QCOMPARE(QString::fromStdString(c->stream), QString("io"));
    QVERIFY(c->category == TaskCategory::io);

    // A throwing inline task throws to the caller.
    Task bad;
    bad.name = "bad_inline";
    bad.action = [] { throw std::runtime_error("inline"); };
    bool threw = false;
    try { ex.run_inline(bad); } catch (const std::runtime_error&) { threw = true; }
    QVERIFY(threw);
    ex.synchronize();  // inline errors are not stream errors
  }

  void destruction_drains_queued_tasks() {
    std::atomic<int> ran{0};
    const int per_stream = 300;
    {
      Executor ex(0);
      Gate gate;
      Stream& a = ex.stream("a");
      Stream& b = ex.stream("b");
      Event* blocker = ex.submit(make_task("blocker", a, [&] { gate.wait(); ++ran; }));
      Event* last_a = blocker;
      for (int i = 0; i < per_stream; ++i) {
        last_a = ex.submit(make_task("a", a, [&] { ++ran; }));
        // b's tasks depend on a's: destruction order of the streams must not matter.
        ex.submit(make_task("b", b, [&] { ++ran; }, {last_a}));
      }
      ex.submit(make_task("fails", b, [] { throw std::runtime_error("ignored at shutdown"); }));
      gate.release();
      // ~Executor with (most of) the work still queued and an unreported error.
    }
    QCOMPARE(ran.load(), 1 + 2 * per_stream);
  }

  void clear_events_with_queued_dependants_is_safe() {
    Executor ex(0);
    Gate gate;
    std::atomic<int> ran{0};
    Event* done = ex.submit(make_task("early", ex.stream("a"), [&] { ++ran; }));
    done->wait();
    ex.submit(make_task("blocker", ex.stream("b"), [&] { gate.wait(); }));
    ex.submit(make_task("late", ex.stream("b"), [&] { ++ran; }, {done}));
    ex.clear_events();  // "early"'s event must stay alive for "late"
    gate.release();
    ex.synchronize();
    QCOMPARE(ran.load(), 2);
  }

  void many_tasks_across_three_streams() {
    Executor ex(0);
    Stream* streams[3] = {&ex.stream("compute"), &ex.stream("comm"), &ex.stream("copy")};
    const int n = 10000;
    std::vector<Event*> events;
    events.reserve(n);
    std::vector<std::atomic<int>> done(n);
    std::atomic<int> violations{0};
    uint64_t state = 12345;
    for (int i = 0; i < n; ++i) {
      std::vector<Event*> deps;
      std::vector<int> dep_ids;
      if (i > 0) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        int j = (int)((state >> 33) % (uint64_t)i);
        deps.push_back(events[j]);
        dep_ids.push_back(j);
        if (i % 7 == 0) { deps.push_back(events[i - 1]); dep_ids.push_back(i - 1); }
      }
      events.push_back(ex.submit(make_task("t", *streams[i % 3], [&, i, dep_ids] {
        for (int j : dep_ids)
          if (!done[j].load()) ++violations;
        done[i].store(1);
      }, deps)));
    }
    ex.synchronize();
    QCOMPARE(violations.load(), 0);
    for (int i = 0; i < n; ++i) {
      QVERIFY(done[i].load() == 1);
      QVERIFY(events[i]->done());
    }
    auto spans = ex.take_spans();
    QCOMPARE((int)spans.size(), n);
    int per_stream[3] = {0, 0, 0};
    for (const auto& s : spans) {
      if (s.stream == "compute") ++per_stream[0];
      else if (s.stream == "comm") ++per_stream[1];
      else if (s.stream == "copy") ++per_stream[2];
    }
    QCOMPARE(per_stream[0] + per_stream[1] + per_stream[2], n);
    QVERIFY(per_stream[0] > 0 && per_stream[1] > 0 && per_stream[2] > 0);
    ex.clear_events();
  }
};

QTEST_APPLESS_MAIN(TestRuntime)
#include "tst_runtime.moc"
