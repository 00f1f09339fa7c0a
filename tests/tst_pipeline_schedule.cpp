// ctest-labels: unit
// Pipeline schedules against hand-written ones (GPipe; 1F1B's warm-up, steady state and
// cool-down per stage), the activation sets each keeps, the schedule names, and a replay of all
// stages' op lists with blocking receives: every schedule finishes (no stage waits forever on a
// neighbour), and 1F1B needs fewer activation sets than GPipe. Stage bounds: tst_parallel_layout.
#include <QtTest>

#include "moebench/model/pipeline_schedule.h"

using namespace moebench;

namespace {
PipeOp F(int m) { return {PipeOp::Kind::forward, m}; }
PipeOp B(int m) { return {PipeOp::Kind::backward, m}; }

// Replays the stages' ops in lock step: an op runs once its input arrived (a forward needs the
// previous stage's forward of that micro-batch, a backward the next stage's backward or, on the
// last stage, its own forward). Returns the rounds taken, -1 on a deadlock; max_live: the most
// micro-batches any stage held (forward done, backward not yet).
int replay(PipeSchedule s, int stages, int micro, std::vector<int>& max_live) {
  std::vector<std::vector<PipeOp>> ops;
  for (int st = 0; st < stages; ++st) ops.push_back(pipeline_ops(s, stages, st, micro));
  std::vector<size_t> next(stages, 0);
  std::vector<std::vector<bool>> fwd(stages, std::vector<bool>(micro)), bwd = fwd;
  std::vector<int> live(stages, 0);
  max_live.assign(stages, 0);
  for (int round = 0;; ++round) {
    bool all_done = true, progressed = false;
    std::vector<std::pair<int, PipeOp>> run;
    for (int st = 0; st < stages; ++st) {
      if (next[st] == ops[st].size()) continue;
      all_done = false;
      const PipeOp op = ops[st][next[st]];
      const bool ready = op.kind == PipeOp::Kind::forward ? st == 0 || fwd[st - 1][op.micro]
                                                           : (st == stages - 1 ? fwd[st][op.micro] : bwd[st + 1][op.micro]);
      if (ready) run.push_back({st, op});
    }
    if (all_done) return round;
    for (const auto& [st, op] : run) {  // one op per stage per round, results visible next round
      (op.kind == PipeOp::Kind::forward ? fwd : bwd)[st][op.micro] = true;
      live[st] += op.kind == PipeOp::Kind::forward ? 1 : -1;
      max_live[st] = std::max(max_live[st], live[st]);
      ++next[st];
      progressed = true;
    }
    if (!progressed) return -1;
  }
}
}  // namespace

class TestPipelineSchedule : public QObject {
  Q_OBJECT

 private slots:
  void gpipe_runs_all_forwards_then_all_backwards() {
    for (int stage = 0; stage < 3; ++stage)
      QCOMPARE(pipeline_ops(PipeSchedule::gpipe, 3, stage, 3), (std::vector<PipeOp>{F(0), F(1), F(2), B(0), B(1), B(2)}));
    QCOMPARE(pipeline_slots(PipeSchedule::gpipe, 4, 0, 6), 6);
  }

  // PipeDream-flush with 4 stages and 6 micro-batches (Narayanan et al. 2021, Fig. 4 top).
  void one_f_one_b_phases() {
    const auto s = PipeSchedule::one_f_one_b;
    QCOMPARE(pipeline_ops(s, 4, 0, 6),
             (std::vector<PipeOp>{F(0), F(1), F(2), F(3), B(0), F(4), B(1), F(5), B(2), B(3), B(4), B(5)}));
    QCOMPARE(pipeline_ops(s, 4, 1, 6),
             (std::vector<PipeOp>{F(0), F(1), F(2), B(0), F(3), B(1), F(4), B(2), F(5), B(3), B(4), B(5)}));
    QCOMPARE(pipeline_ops(s, 4, 2, 6),
             (std::vector<PipeOp>{F(0), F(1), B(0), F(2), B(1), F(3), B(2), F(4), B(3), F(5), B(4), B(5)}));
    QCOMPARE(pipeline_ops(s, 4, 3, 6),
             (std::vector<PipeOp>{F(0), B(0), F(1), B(1), F(2), B(2), F(3), B(3), F(4), B(4), F(5), B(5)}));
    // fewer micro-batches than stages: the warm-up is cut to the micro-batches
    QCOMPARE(pipeline_ops(s, 4, 0, 2), (std::vector<PipeOp>{F(0), F(1), B(0), B(1)}));
    // one stage: gradient accumulation, one micro-batch at a time
    QCOMPARE(pipeline_ops(s, 1, 0, 3), (std::vector<PipeOp>{F(0), B(0), F(1), B(1), F(2), B(2)}));
    QCOMPARE(pipeline_slots(s, 4, 0, 6), 4);
    QCOMPARE(pipeline_slots(s, 4, 3, 6), 1);
    QCOMPARE(pipeline_slots(s, 4, 0, 2), 2);
  }

  void schedules_finish_and_keep_their_activation_sets() {
    for (auto s : {PipeSchedule::gpipe, PipeSchedule::one_f_one_b})
      for (int stages : {1, 2, 3, 4})
        for (int micro : {1, 2, 3, 5, 8}) {
          std::vector<int> max_live;
          const int rounds = replay(s, stages, micro, max_live);
          QVERIFY2(rounds > 0, qPrintable(QString("deadlock: %1 stages, %2 micro-batches").arg(stages).arg(micro)));
          // 2 m ops per stage plus the fill and drain of the pipeline: 2 (m + p - 1) rounds
          QCOMPARE(rounds, 2 * (micro + stages - 1));
          for (int st = 0; st < stages; ++st) QCOMPARE(max_live[st], pipeline_slots(s, stages, st, micro));
        }
  }

  void schedule_names_parse() {
    QCOMPARE(parse_choice<PipeSchedule>("gpipe"), PipeSchedule::gpipe);
    QCOMPARE(parse_choice<PipeSchedule>("1f1b"), PipeSchedule::one_f_one_b);
    QCOMPARE(parse_choice<PipeSchedule>("zb-h1"), std::nullopt);
    QCOMPARE(choice_name(PipeSchedule::one_f_one_b), std::string("1f1b"));
  }
};

QTEST_APPLESS_MAIN(TestPipelineSchedule)
#include "tst_pipeline_schedule.moc"
