// ctest-labels: unit
// TaskGraph (dependencies, cycles, foreign tasks, topological order, schedule equality) and
// Executor: FIFO per role, dependencies across roles, real concurrency of two comm roles and
// compute, incremental submission, span fields, error propagation (rethrow, skipped
// dependants, recovery), release, run_inline, clean destruction, scale; exposed comm time.
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

#include "moebench/runtime/thread_executor.h"
#include "moebench/runtime/graph_dump.h"

using namespace moebench;

namespace {

GraphTask task(std::string name, StreamRole role, std::function<void()> action = {},
               TaskCategory category = TaskCategory::compute) {
  GraphTask t;
  t.name = std::move(name);
  t.role = role;
  t.category = category;
  t.action = std::move(action);
  return t;
}

const Span* find_span(const std::vector<Span>& spans, const std::string& name) {
  for (const auto& s : spans)
    if (s.name == name) return &s;
  return nullptr;
}

QString message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return QString(e.what());
  }
  return "<no exception>";
}

Span span_at(const char* name, StreamRole role, TaskCategory category, double start, double end) {
  Span s;
  s.name = name;
  s.role = role;
  s.category = category;
  s.start = start;
  s.end = end;
  return s;
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
  void names() {
    QCOMPARE(QString(task_category_name(TaskCategory::comm)), QString("comm"));
    QCOMPARE(QString(stream_role_name(StreamRole::comm_intra)), QString("comm.intra"));
    QCOMPARE(QString(stream_role_name(StreamRole::comm_inter)), QString("comm.inter"));
    for (int i = 0; i < kStreamRoles; ++i)
      QVERIFY(parse_stream_role(stream_role_name((StreamRole)i)) == (StreamRole)i);
    QVERIFY(!parse_stream_role("compute.comm"));
    QVERIFY(parse_task_category("io") == TaskCategory::io);
  }

  void graph_dependencies_and_order() {
    TaskGraph g;
    const TaskId a = g.add(task("a", StreamRole::compute));
    const TaskId b = g.add(task("b", StreamRole::comm_intra), {a});
    const TaskId c = g.add(task("c", StreamRole::compute), {a, b, a});
    QCOMPARE((int)g.size(), 3);
    QCOMPARE(g[c].deps, (std::vector<int>{0, 1}));  // deduplicated, sorted
    QCOMPARE(g.topological_order(), (std::vector<int>{0, 1, 2}));
    // A later dependency on a task added after: the order puts it first.
    const TaskId d = g.add(task("d", StreamRole::copy));
    g.add_dep(b, d);
    QCOMPARE(g.topological_order(), (std::vector<int>{0, 3, 1, 2}));
    QCOMPARE(g.topological_order(2), (std::vector<int>{2, 3}));  // deps outside [2, 4) are done
  }

  void graph_errors_are_logic_errors() {
    TaskGraph g, other;
    const TaskId a = g.add(task("a", StreamRole::compute));
    const TaskId b = g.add(task("b", StreamRole::compute), {a});
    const TaskId x = other.add(task("x", StreamRole::compute));
    QCOMPARE(message_of([&] { g.add(task("y", StreamRole::compute), {x}); }),
             QString("task graph: dependency of 'y' is a task of another graph"));
    QCOMPARE(message_of([&] { g.add_dep(a, x); }), QString("task graph: dependency is a task of another graph"));
    QCOMPARE(message_of([&] { g.add_dep(a, a); }), QString("task graph: task 'a' depends on itself"));
    GraphTask forward = task("fwd", StreamRole::compute);
    forward.deps = {5};
    QCOMPARE(message_of([&] { g.add(forward); }), QString("task graph: task 'fwd' depends on index 5, not an earlier task"));
    g.add_dep(a, b);  // a <-> b
    QCOMPARE(message_of([&] { g.topological_order(); }),
             QString("task graph: the dependencies form a cycle through 'a', 'b'"));
    ThreadExecutor ex(0);
    QCOMPARE(message_of([&] { ex.submit(g); }), QString("task graph: the dependencies form a cycle through 'a', 'b'"));
  }

  // A host task (a blocking collective of the rank's chain) runs on the compute worker, after
  // the compute task before it, and its span keeps the host role.
  void host_tasks_run_in_the_compute_chain() {
    ThreadExecutor ex(0);
    TaskGraph g;
    std::thread::id compute_thread, host_thread;
    std::vector<std::string> order;
    const TaskId a = g.add(task("attn", StreamRole::compute, [&] { compute_thread = std::this_thread::get_id(); order.push_back("attn"); }));
    const TaskId b = g.add(task("tp.allreduce", StreamRole::host, [&] { host_thread = std::this_thread::get_id(); order.push_back("tp"); },
                                TaskCategory::comm), {a});
    ex.submit(g);
    ex.wait(g, b);
    ex.synchronize();
    QVERIFY(compute_thread == host_thread);
    QVERIFY(host_thread != std::this_thread::get_id());
    QCOMPARE(order, (std::vector<std::string>{"attn", "tp"}));
    const std::vector<Span> spans = ex.take_spans();
    QCOMPARE(spans.size(), (size_t)2);
    QCOMPARE(spans[1].role, StreamRole::host);
  }

  void same_schedule_compares_everything_but_actions() {
    auto build = [](bool with_actions, int peer_bytes) {
      TaskGraph g;
      GraphTask t = task("dispatch", StreamRole::comm_inter, with_actions ? std::function<void()>([] {}) : nullptr,
                         TaskCategory::comm);
      t.cost.bytes_to_peer = {{1, (uint64_t)peer_bytes}};
      t.layer = 2;
      t.chunk = 1;
      const TaskId d = g.add(std::move(t));
      g.add(task("experts", StreamRole::compute), {d});
      return g;
    };
    QVERIFY(build(true, 64).same_schedule(build(false, 64)));
    QVERIFY(!build(true, 64).same_schedule(build(false, 64), true));
    QVERIFY(!build(false, 64).same_schedule(build(false, 65)));
    const TaskGraph g = build(false, 64);
    const nlohmann::json j = graph_json(g);
    QCOMPARE(j["tasks"][0]["role"].get<std::string>(), std::string("comm.inter"));
    QCOMPARE(j["tasks"][0]["bytes_to_peer"][0]["bytes"].get<int>(), 64);
    QCOMPARE(j["tasks"][1]["deps"][0].get<int>(), 0);
    QVERIFY(QString::fromStdString(graph_table(g)).contains("[0]"));
  }

  void fifo_order_per_role() {
    ThreadExecutor ex(0);
    TaskGraph g;
    std::vector<int> order;  // touched only by the compute worker until synchronize
    const int n = 200;
    for (int i = 0; i < n; ++i)
      g.add(task("t" + std::to_string(i), StreamRole::compute, [&order, i] { order.push_back(i); }));
    ex.submit(g);
    ex.synchronize();
    QCOMPARE((int)order.size(), n);
    for (int i = 0; i < n; ++i) QCOMPARE(order[i], i);
    auto spans = ex.take_spans();
    QCOMPARE((int)spans.size(), n);
    for (int i = 1; i < n; ++i) QVERIFY(spans[i - 1].end <= spans[i].start);  // serial on one role
    QVERIFY(ex.take_spans().empty());
  }

  void dependencies_across_roles_and_incremental_submit() {
    for (int rep = 0; rep < 20; ++rep) {
      ThreadExecutor ex(0);
      TaskGraph g;
      std::atomic<int> counter{0}, seen{-1};
      std::atomic<bool> gate_ok{false};
      Gate gate;
      const TaskId a = g.add(task("produce", StreamRole::comm_inter, [&] {
        gate_ok = gate.wait();
        counter.store(1);
      }));
      ex.submit(g);
      // Added while "produce" runs: the graph grows, its new task waits for the old one.
      const TaskId b = g.add(task("consume", StreamRole::compute, [&] { seen.store(counter.load()); }), {a});
      ex.submit(g);
      QCOMPARE(g.submitted(), 2);
      QCOMPARE(message_of([&] { g.add_dep(b, a); }),
               QString("task graph: task 'consume' was already submitted; its dependencies are fixed"));
      gate.release();
      ex.wait(g, b);
      QVERIFY(gate_ok);
      QCOMPARE(seen.load(), 1);
      ex.release(g);
      auto spans = ex.take_spans();
      const Span* p = find_span(spans, "produce");
      const Span* c = find_span(spans, "consume");
      QVERIFY(p && c);
      QVERIFY2(p->end <= c->start, "consumer started before its dependency finished");
      QCOMPARE(message_of([&] { ex.wait(g, b); }), QString("ThreadExecutor::wait: the graph's tasks were already synchronized"));
    }
  }

  void two_comm_roles_and_compute_run_concurrently() {
    ThreadExecutor ex(0);
    Rendezvous all(3);
    std::atomic<int> ok{0};
    const auto bound = std::chrono::seconds(5);
    TaskGraph g;
    g.add(task("a2a.intra", StreamRole::comm_intra, [&] { ok += all.arrive_and_wait(bound); }, TaskCategory::comm));
    g.add(task("a2a.inter", StreamRole::comm_inter, [&] { ok += all.arrive_and_wait(bound); }, TaskCategory::comm));
    g.add(task("gemm", StreamRole::compute, [&] { ok += all.arrive_and_wait(bound); }));
    ex.submit(g);
    ex.synchronize();
    QVERIFY2(ok.load() == 3, "the comm.intra, comm.inter and compute tasks did not run at the same time");
    auto spans = ex.take_spans();
    const Span* a = find_span(spans, "a2a.intra");
    const Span* b = find_span(spans, "a2a.inter");
    const Span* c = find_span(spans, "gemm");
    QVERIFY(a && b && c);
    QVERIFY(a->start < c->end && c->start < a->end && b->start < c->end && c->start < b->end);
  }

  // A priority task runs on its role's second lane: it completes while an earlier task of the
  // same role (a DP bucket, say) still blocks the role's worker, which plain FIFO would not allow.
  // Within the lane the order stays FIFO.
  void priority_lane_does_not_queue_behind_its_role() {
    ThreadExecutor ex(0);
    Gate gate;
    std::atomic<bool> gate_ok{false}, bucket_done{false}, a2a_saw_bucket{true};
    std::vector<int> lane_order;  // touched only by the priority lane's thread until synchronize
    TaskGraph g;
    g.add(task("grad.allreduce", StreamRole::comm_inter, [&] {
      gate_ok = gate.wait();
      bucket_done = true;
    }, TaskCategory::comm));
    for (int i = 0; i < 3; ++i) {
      GraphTask a2a = task("moe.dispatch." + std::to_string(i), StreamRole::comm_inter, [&, i] {
        lane_order.push_back(i);
        if (i == 2) {
          a2a_saw_bucket = bucket_done.load();
          gate.release();  // only a task that ran beside the blocked bucket can open its gate
        }
      }, TaskCategory::comm);
      a2a.priority = true;
      g.add(std::move(a2a));
    }
    QVERIFY(g.task(1).priority && !g.task(0).priority);
    ex.submit(g);
    ex.synchronize();
    QVERIFY2(gate_ok, "the priority tasks waited behind the bucket (the gate timed out)");
    QVERIFY(!a2a_saw_bucket);
    QCOMPARE(lane_order, (std::vector<int>{0, 1, 2}));
    TaskGraph h;
    h.add(task("x", StreamRole::compute));
    ex.submit(h);
    QCOMPARE(message_of([&] { h.set_priority(0, true); }),
             QString("task graph: task 'x' was already submitted; its lane is fixed"));
    ex.synchronize();
  }

  void span_fields_are_recorded() {
    ThreadExecutor ex(3);
    ex.set_step(7);
    TaskGraph g;
    GraphTask d = task("dispatch", StreamRole::comm_inter, {}, TaskCategory::comm);
    d.cost.bytes_to_peer = {{5, 1000}};
    d.layer = 2;
    d.expert = 4;
    d.chunk = 1;
    g.add(std::move(d));
    GraphTask m = task("scatter", StreamRole::comm_intra, {}, TaskCategory::comm);
    m.cost.bytes_to_peer = {{1, 10}, {2, 20}, {6, 30}};
    g.add(std::move(m));
    GraphTask e = task("pull", StreamRole::copy, {}, TaskCategory::copy);
    e.cost.bytes_to_peer = {{1, 10}, {2, 20}};
    e.peer = 2;
    g.add(std::move(e));
    GraphTask x = task("gemm", StreamRole::compute);
    x.cost.flops = 2.5e6;
    g.add(std::move(x));
    GraphTask hidden = task("", StreamRole::compute);  // a join point: no span of its own
    g.add(std::move(hidden));
    ex.submit(g);
    ex.synchronize();
    auto spans = ex.take_spans();
    QCOMPARE((int)spans.size(), 4);
    const Span* s = find_span(spans, "dispatch");
    QVERIFY(s);
    QCOMPARE(s->rank, 3);
    QVERIFY(s->role == StreamRole::comm_inter && s->category == TaskCategory::comm);
    QCOMPARE(s->bytes, (uint64_t)1000);
    QCOMPARE(s->peer, 5);
    QCOMPARE(s->layer, 2);
    QCOMPARE(s->expert, 4);
    QCOMPARE(s->chunk, 1);
    QCOMPARE(s->step, 7L);
    QVERIFY(s->start >= 0.0 && s->start <= s->end && s->end <= ex.now());
    s = find_span(spans, "scatter");
    QCOMPARE(s->bytes, (uint64_t)60);
    QCOMPARE(s->peer, -1);
    s = find_span(spans, "pull");
    QVERIFY(s->role == StreamRole::copy);
    QCOMPARE(s->peer, 2);
    s = find_span(spans, "gemm");
    QCOMPARE(s->flops, 2.5e6);
    QCOMPARE(s->bytes, (uint64_t)0);
  }

  void errors_propagate_and_the_executor_recovers() {
    ThreadExecutor ex(0);
    TaskGraph g;
    std::atomic<bool> dependant_ran{false}, grandchild_ran{false}, independent_ran{false};
    const TaskId bad = g.add(task("bad", StreamRole::compute, [] { throw std::runtime_error("boom"); }));
    const TaskId dep = g.add(task("dependant", StreamRole::comm_intra, [&] { dependant_ran = true; }), {bad});
    const TaskId dep2 = g.add(task("grandchild", StreamRole::compute, [&] { grandchild_ran = true; }), {dep});
    const TaskId ind = g.add(task("independent", StreamRole::compute, [&] { independent_ran = true; }));
    ex.submit(g);
    QCOMPARE(message_of([&] { ex.wait(g, bad); }), QString("boom"));
    QCOMPARE(message_of([&] { ex.wait(g, dep); }), QString("boom"));
    QCOMPARE(message_of([&] { ex.wait(g, dep2); }), QString("boom"));
    ex.wait(g, ind);  // no dependency on the failure: runs and succeeds
    QCOMPARE(message_of([&] { ex.synchronize(); }), QString("boom"));
    QVERIFY(!dependant_ran && !grandchild_ran && independent_ran);
    auto spans = ex.take_spans();
    QVERIFY(find_span(spans, "bad"));          // it ran (and failed)
    QVERIFY(!find_span(spans, "dependant"));   // skipped: no span
    QVERIFY(find_span(spans, "independent"));
    ex.synchronize();  // reported once; the executor keeps working
    TaskGraph next;
    std::atomic<int> ran{0};
    const TaskId x = next.add(task("after1", StreamRole::compute, [&] { ++ran; }));
    next.add(task("after2", StreamRole::comm_inter, [&] { ++ran; }), {x});
    ex.submit(next);
    ex.synchronize();
    QCOMPARE(ran.load(), 2);
    // release() reports the graph's own error.
    TaskGraph failing;
    failing.add(task("bad2", StreamRole::copy, [] { throw std::runtime_error("again"); }));
    ex.submit(failing);
    QCOMPARE(message_of([&] { ex.release(failing); }), QString("again"));
    ex.synchronize();
  }

  void run_inline_records_spans() {
    ThreadExecutor ex(1);
    ex.set_step(4);
    int value = 0;
    ex.run_inline("optimizer", StreamRole::host, TaskCategory::compute, [&] { value = 42; }, 3, 1e3);
    QCOMPARE(value, 42);  // ran on this thread, synchronously
    QCOMPARE(message_of([&] { ex.run_inline("bad_inline", StreamRole::host, TaskCategory::io, [] {
               throw std::runtime_error("inline");
             }); }),
             QString("inline"));
    auto spans = ex.take_spans();
    const Span* s = find_span(spans, "optimizer");
    QVERIFY(s && s->role == StreamRole::host);
    QCOMPARE(s->rank, 1);
    QCOMPARE(s->step, 4L);
    QCOMPARE(s->layer, 3);
    QCOMPARE(s->flops, 1e3);
    QVERIFY(find_span(spans, "bad_inline"));
  }

  void destruction_drains_queued_tasks() {
    std::atomic<int> ran{0};
    const int per_role = 300;
    {
      ThreadExecutor ex(0);
      Gate gate;
      TaskGraph g;
      TaskId last = g.add(task("blocker", StreamRole::comm_intra, [&] { gate.wait(); ++ran; }));
      for (int i = 0; i < per_role; ++i) {
        last = g.add(task("a", StreamRole::comm_intra, [&] { ++ran; }));
        g.add(task("b", StreamRole::compute, [&] { ++ran; }), {last});  // roles depend on each other
      }
      g.add(task("fails", StreamRole::compute, [] { throw std::runtime_error("ignored at shutdown"); }));
      ex.submit(g);
      gate.release();
      // ~Executor with (most of) the work still queued and an unreported error.
    }
    QCOMPARE(ran.load(), 1 + 2 * per_role);
  }

  void many_tasks_across_three_roles() {
    ThreadExecutor ex(0);
    const StreamRole roles[3] = {StreamRole::compute, StreamRole::comm_inter, StreamRole::copy};
    const int n = 10000;
    TaskGraph g;
    std::vector<std::atomic<int>> done(n);
    std::atomic<int> violations{0};
    uint64_t state = 12345;
    for (int i = 0; i < n; ++i) {
      std::vector<TaskId> deps;
      std::vector<int> dep_ids;
      if (i > 0) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        const int j = (int)((state >> 33) % (uint64_t)i);
        deps.push_back(g.id(j));
        dep_ids.push_back(j);
        if (i % 7 == 0) deps.push_back(g.id(i - 1)), dep_ids.push_back(i - 1);
      }
      g.add(task("t", roles[i % 3], [&, i, dep_ids] {
              for (int j : dep_ids)
                if (!done[j].load()) ++violations;
              done[i].store(1);
            }),
            deps);
      if (i % 1000 == 999) ex.submit(g);  // in batches, as a step's graph grows
    }
    ex.synchronize();
    QCOMPARE(violations.load(), 0);
    for (int i = 0; i < n; ++i) QVERIFY(done[i].load() == 1);
    auto spans = ex.take_spans();
    QCOMPARE((int)spans.size(), n);
    int per_role[3] = {0, 0, 0};
    for (const auto& s : spans)
      for (int r = 0; r < 3; ++r) per_role[r] += s.role == roles[r];
    QCOMPARE(per_role[0] + per_role[1] + per_role[2], n);
  }

  void exposed_comm_is_what_compute_does_not_cover() {
    // comm [0,4) and [6,10) (overlapping comm spans count once); compute [1,2) and [3,7);
    // a host phase [0,10) never counts as computing. Exposed: [0,1) + [2,3) + [7,10) = 5.
    std::vector<Span> spans = {
        span_at("a2a", StreamRole::comm_inter, TaskCategory::comm, 0, 4),
        span_at("a2a2", StreamRole::comm_intra, TaskCategory::comm, 2, 3),
        span_at("ar", StreamRole::comm_intra, TaskCategory::comm, 6, 10),
        span_at("gemm", StreamRole::compute, TaskCategory::compute, 1, 2),
        span_at("gemm2", StreamRole::compute, TaskCategory::compute, 3, 7),
        span_at("forward", StreamRole::host, TaskCategory::compute, 0, 10),
    };
    QCOMPARE(exposed_comm_seconds(spans, 0, 10), 5.0);
    QCOMPARE(exposed_comm_seconds(spans, 0, 8), 3.0);  // clipped to the window: [0,1) [2,3) [7,8)
    QCOMPARE(exposed_comm_seconds({}, 0, 10), 0.0);
  }
};

QTEST_APPLESS_MAIN(TestRuntime)
#include "tst_runtime.moc"
