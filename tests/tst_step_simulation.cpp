// A simulated step's summaries (plan/step_simulation.h): the per MoE block compute / exposed
// comm / idle split (its experts' gradient all-reduce included) and the exposed comm per rank,
// on hand-placed task times.
#include <QtTest>

#include "moebench/config/config_loader.h"
#include "moebench/plan/step_simulation.h"
#include "test_support.h"

using namespace moebench;

namespace {

GraphTask task(const char* name, TaskCategory category, int layer) {
  GraphTask t;
  t.name = name;
  t.category = category;
  t.role = category == TaskCategory::comm ? StreamRole::comm_intra : StreamRole::compute;
  t.layer = layer;
  return t;
}

}  // namespace

class TestStepSimulation : public QObject {
  Q_OBJECT
 private slots:
  void block_split_and_exposed_comm() {
    const Config cfg = load_config(test::tiny_config_path(), {"run.ranks=1", "moe.moe_layers=[1]"});
    StepSimulation sim;
    sim.graphs.emplace_back();
    TaskGraph& g = sim.graphs.back();
    // (name, category, layer, start, end) in seconds.
    struct Placed {
      const char* name;
      TaskCategory category;
      int layer;
      double start, end;
    };
    const std::vector<Placed> tasks = {
        {"attn.forward", TaskCategory::compute, 1, 0, 1},    // not the block's
        {"moe.router", TaskCategory::compute, 1, 1, 2},
        {"moe.dispatch", TaskCategory::comm, 1, 2, 4},
        {"moe.experts", TaskCategory::compute, 1, 3, 5},
        {"moe.combine", TaskCategory::compute, 1, 5, 6},
        {"head.forward", TaskCategory::compute, -1, 6, 7},
        {"head.backward", TaskCategory::compute, -1, 7, 8},
        {"moe.combine_backward", TaskCategory::compute, 1, 8, 9},
        {"moe.dispatch_grad", TaskCategory::comm, 1, 10, 11},  // after a 1 s gap
        {"grad.allreduce", TaskCategory::comm, 1, 11, 13},     // not the block's
        {"expert.allreduce", TaskCategory::comm, 1, 13, 16},   // the block's, on the host role
    };
    for (const Placed& p : tasks) {
      GraphTask t = task(p.name, p.category, p.layer);
      if (t.name == "expert.allreduce") t.role = StreamRole::host;
      g.add(t);
      sim.result.tasks.resize(1);
      sim.result.tasks[0].push_back({p.start, p.end});
    }
    sim.result.rank_end = {16};
    sim.result.makespan = 16;
    const std::vector<BlockSplit> b = block_splits(cfg, sim);
    QCOMPARE(b.size(), (size_t)1);
    QCOMPARE(b[0].block, 1);
    // Forward window 1-6: compute 1 + 2 + 1 = 4, comm 2-4 exposed only 2-3: 1, idle 0.
    // Backward window 8-11: compute 1, comm 10-11: 1, idle 9-10: 1.
    // The experts' all-reduce 13-16, a window of its own: comm 3.
    QCOMPARE(b[0].compute_s, 5.0);
    QCOMPARE(b[0].comm_s, 5.0);
    QCOMPARE(b[0].idle_s, 1.0);
    // Over the whole step: comm 2-4, 10-11, 11-13, 13-16 while computing 0-3 ... 8-9:
    // 1 + 1 + 2 + 3.
    QCOMPARE(exposed_comm_seconds(sim), 7.0);
  }
};

QTEST_APPLESS_MAIN(TestStepSimulation)
#include "tst_step_simulation.moc"
