// The simulator (perf/simulator.h) on hand-built graphs: every expected time is worked out by
// hand in the comments from the cluster's numbers.
#include <QtTest>

#include "moebench/perf/simulator.h"

using namespace moebench;

namespace {

// 2 nodes x 2 devices, 100 FLOP/s, intra 10 B/s 1 s, inter (one NIC per node) 1 B/s 2 s.
ClusterNetwork small_net(int nodes = 2) {
  ClusterSpec s;
  s.name = "small";
  s.nodes = nodes;
  s.devices_per_node = 2;
  s.device_flops = 100.0;
  s.intra = {10.0, 1.0};
  s.inter = {1.0, 2.0};
  s.copy_bandwidth = 5.0;
  return ClusterNetwork(ClusterModel(s));
}

GraphTask compute(const std::string& name, double flops) {
  GraphTask t;
  t.name = name;
  t.cost.flops = flops;
  return t;
}

GraphTask comm(const std::string& name, std::vector<std::pair<int, uint64_t>> sends, Transfer kind = Transfer::send,
               StreamRole role = StreamRole::comm_inter) {
  GraphTask t;
  t.name = name;
  t.category = TaskCategory::comm;
  t.role = role;
  t.cost.bytes_to_peer = std::move(sends);
  t.cost.transfer = kind;
  return t;
}

// Rank r computes (r + 1) s, then task "x": 0 -> 2 and 1 -> 3 send 4 bytes across nodes (2 and
// 3 only receive), then 1 s of compute.
std::vector<TaskGraph> two_senders_across_nodes() {
  std::vector<TaskGraph> gs(4);
  for (int r = 0; r < 4; ++r) {
    std::vector<std::pair<int, uint64_t>> sends;
    if (r < 2) sends.push_back({r + 2, 4});
    const TaskId a = gs[(size_t)r].add(compute("a", 100.0 * (r + 1)));
    const TaskId x = gs[(size_t)r].add(comm("x", sends), {a});
    gs[(size_t)r].add(compute("b", 100.0), {x});
  }
  return gs;
}

// Ranks compute 1, 2, 3, 4 s, then task "sync": zero bytes to every other rank (a barrier).
std::vector<TaskGraph> barrier_after_compute() {
  std::vector<TaskGraph> gs(4);
  for (int r = 0; r < 4; ++r) {
    std::vector<std::pair<int, uint64_t>> sends;
    for (int p = 0; p < 4; ++p)
      if (p != r) sends.push_back({p, 0});
    const TaskId a = gs[(size_t)r].add(compute("a", 100.0 * (r + 1)));
    gs[(size_t)r].add(comm("sync", sends), {a});
  }
  return gs;
}

std::vector<const TaskGraph*> ptrs(const std::vector<TaskGraph>& gs) {
  std::vector<const TaskGraph*> out;
  for (const TaskGraph& g : gs) out.push_back(&g);
  return out;
}

}  // namespace

class TestSimulator : public QObject {
  Q_OBJECT
 private slots:
  void matched_sends_wait_for_both_sides_and_share_the_nic() {
    const std::vector<TaskGraph> gs = two_senders_across_nodes();
    const SimulationResult res = simulate_graphs(ptrs(gs), small_net());
    // 0 -> 2 starts when rank 2 is ready (3 s): 3 + 2 latency + 4 B / 1 B/s = 9.
    // 1 -> 3 is ready at 4 s but node 0's NIC sends until 3 + 4 = 7: 7 + 2 + 4 = 13.
    QCOMPARE(res.tasks[0][1].start, 1.0);
    QCOMPARE(res.tasks[0][1].end, 9.0);
    QCOMPARE(res.tasks[2][1].start, 3.0);
    QCOMPARE(res.tasks[2][1].end, 9.0);
    QCOMPARE(res.tasks[1][1].end, 13.0);
    QCOMPARE(res.tasks[3][1].end, 13.0);
    QCOMPARE(res.rank_end, (std::vector<double>{10.0, 14.0, 10.0, 14.0}));
    QCOMPARE(res.makespan, 14.0);
    QCOMPARE(res.transfers, (uint64_t)2);
  }

  // The link emulator's order (ClusterSpec::emulated_pacing): a sender reserves its flows when
  // it starts, without waiting for the receiver, and a task ends once its own flows and all the
  // flows of every peer that sends to it have arrived.
  void emulated_pacing_follows_the_link_emulator() {
    ClusterSpec spec = small_net().cluster().spec();
    spec.emulated_pacing = true;
    const ClusterNetwork paced{ClusterModel(spec)};
    {  // The graph of matched_sends_wait_for_both_sides_and_share_the_nic.
      const std::vector<TaskGraph> gs = two_senders_across_nodes();
      const SimulationResult res = simulate_graphs(ptrs(gs), paced);
      // 0 -> 2 leaves at 1 s (rank 2 not started yet): node 0's NIC 1..5, arrival 1 + 2 + 4 = 7.
      // 1 -> 3 is ready at 2 s, the NIC is free at 5: 5 + 2 + 4 = 11. Receivers end there too.
      QCOMPARE(res.tasks[0][1].end, 7.0);
      QCOMPARE(res.tasks[2][1].start, 3.0);
      QCOMPARE(res.tasks[2][1].end, 7.0);
      QCOMPARE(res.tasks[1][1].end, 11.0);
      QCOMPARE(res.tasks[3][1].end, 11.0);
      QCOMPARE(res.rank_end, (std::vector<double>{8.0, 12.0, 8.0, 12.0}));
      QCOMPARE(res.transfers, (uint64_t)2);
    }
    // An all-to-all where rank 0 sends 10 B to rank 1 (intra: 1 s + 1 s) and 4 B to rank 2
    // (inter: 2 s + 4 s): with pacing rank 1 waits for rank 0's last flow (6 s), as the
    // emulator's real operation starts only then; matched pairs alone end it at 2 s.
    std::vector<TaskGraph> gs(4);
    for (int r = 0; r < 4; ++r)
      gs[(size_t)r].add(comm("x", r == 0 ? std::vector<std::pair<int, uint64_t>>{{1, 10}, {2, 4}}
                                         : std::vector<std::pair<int, uint64_t>>{}));
    const SimulationResult p = simulate_graphs(ptrs(gs), paced), m = simulate_graphs(ptrs(gs), small_net());
    QCOMPARE(p.rank_end, (std::vector<double>{6.0, 6.0, 6.0, 0.0}));
    QCOMPARE(m.rank_end, (std::vector<double>{6.0, 2.0, 6.0, 0.0}));
    // Zero-byte sends (a barrier after 1, 2, 3, 4 s of compute): the emulator paces nothing for
    // them, while the real operation still waits for the last rank: everyone leaves at 4 s.
    const std::vector<TaskGraph> barrier = barrier_after_compute();
    const SimulationResult synced = simulate_graphs(ptrs(barrier), paced);
    for (int r = 0; r < 4; ++r) QCOMPARE(synced.tasks[(size_t)r][1].end, 4.0);
    QCOMPARE(synced.transfers, (uint64_t)0);
  }

  void roles_overlap_and_run_their_tasks_in_order() {
    // Rank 0: compute a (2 s) while the comm role pulls g then h (10 B each from rank 1, intra);
    // c waits for a and h. Rank 1 computes 1 s.
    std::vector<TaskGraph> gs(2);
    const TaskId a = gs[0].add(compute("a", 200.0));
    const TaskId g = gs[0].add(comm("g", {{1, 10}}, Transfer::get, StreamRole::comm_intra));
    const TaskId h = gs[0].add(comm("h", {{1, 10}}, Transfer::get, StreamRole::comm_intra));
    gs[0].add(compute("c", 100.0), {a, h});
    gs[1].add(compute("a", 100.0));
    (void)g;
    const SimulationResult res = simulate_graphs(ptrs(gs), small_net(1));
    // g: 0 + 1 + 10/10 = 2. h starts after g (same role) at 2: link free at 1, so 2 + 1 + 1 = 4.
    QCOMPARE(res.tasks[0][1].end, 2.0);
    QCOMPARE(res.tasks[0][2].start, 2.0);
    QCOMPARE(res.tasks[0][2].end, 4.0);
    QCOMPARE(res.tasks[0][3].start, 4.0);
    QCOMPARE(res.makespan, 5.0);
  }

  // The same two gets with h on the priority lane: h no longer waits for g's task (the lanes
  // are separate queues, as the executor's threads) but still for the link g holds (FIFO, no
  // link priority): it starts at 0 and ends at 0 + 1 + 10/10 after g's bytes, 3.
  void a_priority_task_does_not_wait_for_its_role() {
    std::vector<TaskGraph> gs(2);
    gs[0].add(comm("g", {{1, 10}}, Transfer::get, StreamRole::comm_intra));
    GraphTask h = comm("h", {{1, 10}}, Transfer::get, StreamRole::comm_intra);
    h.priority = true;
    gs[0].add(std::move(h));
    gs[1].add(compute("a", 100.0));
    const SimulationResult res = simulate_graphs(ptrs(gs), small_net(1));
    QCOMPARE(res.tasks[0][0].end, 2.0);
    QCOMPARE(res.tasks[0][1].start, 0.0);
    QCOMPARE(res.tasks[0][1].end, 3.0);
  }

  void a_calibrated_hosts_task_costs_and_comm_extra() {
    // The same two ranks on a host whose fit says: task "a" takes 0.5 s + 2 x the model, comm
    // tasks 1 s + 0.1 s per byte beyond their transfers; task "c" has no fit (model time).
    ClusterSpec s = small_net(1).cluster().spec();
    s.task_costs = {{"a", 0.5, 2.0}};
    s.comm_overhead = 1.0;
    s.comm_seconds_per_byte = 0.1;
    const ClusterNetwork net{ClusterModel(s)};
    std::vector<TaskGraph> gs(2);
    const TaskId a = gs[0].add(compute("a", 100.0));
    gs[0].add(comm("g", {{1, 10}}, Transfer::get, StreamRole::comm_intra), {a});
    gs[1].add(compute("c", 100.0));
    for (int r = 0; r < 2; ++r) gs[(size_t)r].add(comm("x", {{1 - r, 10}}, Transfer::send, StreamRole::comm_inter));
    const SimulationResult res = simulate_graphs(ptrs(gs), net);
    // a: 0.5 + 2 x 1 = 2.5. g at 2.5: 1 + 10/10 = 2 on the link, + 1 + 0.1 x 10 = 6.5.
    QCOMPARE(res.tasks[0][0].end, 2.5);
    QCOMPARE(res.tasks[0][1].end, 6.5);
    QCOMPARE(res.tasks[1][0].end, 1.0);  // no fit for "c": 100 / 100
    // x: both start at 0 (their own role), 10 B each way: 1 + 1 = 2, then + 1 + 1 = 4.
    QCOMPARE(res.tasks[0][2].end, 4.0);
    QCOMPARE(res.tasks[1][1].end, 4.0);
  }

  void ring_messages_puts_and_copies() {
    // Both ranks exchange 10 B as a 2-message ring step (an all-reduce of 2 ranks), then rank 0
    // puts 20 B into rank 1 and copies 10 B locally.
    std::vector<TaskGraph> gs(2);
    for (int r = 0; r < 2; ++r) {
      GraphTask t = comm("ring", {{1 - r, 10}}, Transfer::send, StreamRole::comm_intra);
      t.cost.messages = 2;
      gs[(size_t)r].add(std::move(t));
    }
    const TaskId put = gs[0].add(comm("put", {{1, 20}}, Transfer::put, StreamRole::comm_intra));
    GraphTask copy;
    copy.name = "copy";
    copy.category = TaskCategory::copy;
    copy.role = StreamRole::copy;
    copy.cost.copy_bytes = 10;
    gs[0].add(std::move(copy), {put});
    const SimulationResult res = simulate_graphs(ptrs(gs), small_net(1));
    // ring: 2 x 1 s latency + 10 B / 10 B/s = 3 on both. put at 3: 3 + 1 + 2 = 6. copy: 10 / 5 = 2.
    QCOMPARE(res.tasks[0][0].end, 3.0);
    QCOMPARE(res.tasks[1][0].end, 3.0);
    QCOMPARE(res.tasks[0][1].end, 6.0);
    QCOMPARE(res.tasks[0][2].end, 8.0);
  }

  // A copy within device memory (row packing, MoNTA's reordering copy) takes the device-copy rate
  // (d2d_bandwidth); one to or from the host the copy link's; without a device rate both the latter.
  void device_copies_take_the_device_rate() {
    auto graph = [](bool device) {
      std::vector<TaskGraph> gs(1);
      GraphTask host;
      host.name = "to_host";
      host.category = TaskCategory::copy;
      host.role = StreamRole::copy;
      host.cost.copy_bytes = 100;
      const TaskId first = gs[0].add(std::move(host));
      GraphTask local = gs[0].task(first.index);
      local.name = "pack";
      local.deps.clear();
      local.cost.device_copy = device;
      gs[0].add(std::move(local), {first});
      return gs;
    };
    ClusterSpec s = small_net(1).cluster().spec();
    s.devices_per_node = 1;
    s.d2d_bandwidth = 50.0;
    const ClusterNetwork with_d2d{ClusterModel(s)};
    std::vector<TaskGraph> gs = graph(true);
    SimulationResult res = simulate_graphs(ptrs(gs), with_d2d);
    QCOMPARE(res.tasks[0][0].end, 20.0);      // 100 B / 5 B/s
    QCOMPARE(res.tasks[0][1].end, 22.0);      // + 100 B / 50 B/s
    gs = graph(false);
    res = simulate_graphs(ptrs(gs), with_d2d);
    QCOMPARE(res.tasks[0][1].end, 40.0);      // a host copy: + 100 / 5
    s.d2d_bandwidth = 0;
    gs = graph(true);
    res = simulate_graphs(ptrs(gs), ClusterNetwork(ClusterModel(s)));
    QCOMPARE(res.tasks[0][1].end, 40.0);      // no device rate: the copy link's
  }

  void barrier_of_zero_byte_sends() {
    // Ranks compute 1, 2, 3, 4 s, then a barrier over all four (zero bytes to every other):
    // nobody leaves before the last arrives (4 s); each pair then takes its latency. Rank 2
    // met ranks 0 and 1 at 3 s (inter: 5 s) and rank 3 at 4 s (intra: 5 s); ranks 0, 1 and 3
    // meet across the nodes at 4 s: 6 s.
    const std::vector<TaskGraph> gs = barrier_after_compute();
    const SimulationResult res = simulate_graphs(ptrs(gs), small_net());
    const std::vector<double> ends = {6.0, 6.0, 5.0, 6.0};
    for (int r = 0; r < 4; ++r) QCOMPARE(res.tasks[(size_t)r][1].end, ends[(size_t)r]);
    QCOMPARE(res.transfers, (uint64_t)12);
  }

  void bad_schedules_are_named() {
    std::vector<TaskGraph> one(1);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, simulate_graphs(ptrs(one), small_net()));
    // A send whose peer has no such task.
    std::vector<TaskGraph> gs(2);
    gs[0].add(comm("x", {{1, 4}}));
    gs[1].add(compute("a", 1.0));
    try {
      simulate_graphs(ptrs(gs), small_net(1));
      QFAIL("no error");
    } catch (const std::logic_error& e) {
      QVERIFY2(QString(e.what()).contains("rank 0 task 0 'x' sends to rank 1, which has no matching task"), e.what());
    }
    // Opposite orders on one role: a deadlock.
    std::vector<TaskGraph> dl(2);
    dl[0].add(comm("a", {{1, 4}}));
    dl[0].add(comm("b", {{1, 4}}));
    dl[1].add(comm("b", {{0, 4}}));
    dl[1].add(comm("a", {{0, 4}}));
    try {
      simulate_graphs(ptrs(dl), small_net(1));
      QFAIL("no error");
    } catch (const std::logic_error& e) {
      QVERIFY2(QString(e.what()).contains("the schedule cannot finish: rank 0 task 0 'a'"), e.what());
    }
  }
};

QTEST_APPLESS_MAIN(TestSimulator)
#include "tst_simulator.moc"
