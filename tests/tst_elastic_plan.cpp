// ctest-labels: unit
// Multi-task data and the elastic assignment (MoESys §IV-A, Fig. 6; Table III):
// dist/elastic_plan.h's proposal on hand-computed rows (the paper's 512/256/128/128 on 8 ranks
// is 4/2/1/1), dist/task_assignment.h's rows (every row of the global batch on exactly one rank
// for any assignment), the per-task token streams of the synthetic corpus, and the config
// errors of [data] tasks / rank_tasks, each naming its key.
#include <QtTest>

#include <algorithm>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "moebench/config/config_json.h"
#include "moebench/config/config_loader.h"
#include "moebench/data/corpus.h"
#include "moebench/data/synthetic_corpus.h"
#include "moebench/dist/task_assignment.h"
#include "moebench/dist/elastic_plan.h"
#include "test_support.h"

using namespace moebench;

namespace {

std::vector<int> ints(const QString& s) {
  std::vector<int> v;
  for (const QString& x : s.split(u'/', Qt::SkipEmptyParts)) v.push_back(x.toInt());
  return v;
}

QString text(const std::vector<std::vector<int>>& assignment) {
  QStringList out;
  for (const std::string& s : rank_tasks_text(assignment)) out << QString::fromStdString(s);
  return out.join(u' ');
}

// The config issues of the tiny test config with these overrides ("" when accepted).
QString issues_with(const std::vector<std::string>& sets) {
  try {
    load_config(test::tiny_config_path(), sets);
  } catch (const ConfigError& e) {
    QString s;
    for (const ConfigIssue& i : e.issues()) s += QString::fromStdString(i.key + ": " + i.message) + u'\n';
    return s;
  }
  return {};
}

// The proposal as elastic_plan.h states it, by exhaustive search over every rank count (what
// propose_elastic computed before it listed divisors and bisected): the reference the fast
// search must agree with. Returns the ranks per task (ranks >= tasks only), {} when it throws.
std::vector<long> exhaustive_ranks_per_task(const std::vector<int>& b, int ranks, int M) {
  const int T = (int)b.size();
  auto valid = [&](int t, long k) { return k >= 1 && b[(size_t)t] % (k * M) == 0; };
  for (int t = 0; t < T; ++t)
    if (!valid(t, 1)) return {};
  std::vector<double> candidates;
  for (int t = 0; t < T; ++t)
    for (long k = 1; k <= b[(size_t)t] / M; ++k)
      if (valid(t, k)) candidates.push_back((double)b[(size_t)t] / (double)k);
  std::sort(candidates.begin(), candidates.end());
  std::vector<long> k;
  for (double L : candidates) {
    std::vector<long> need((size_t)T, 0);
    long sum = 0;
    for (int t = 0; t < T; ++t) {
      for (long j = 1; j <= b[(size_t)t] / M && !need[(size_t)t]; ++j)
        if (valid(t, j) && (double)b[(size_t)t] / (double)j <= L) need[(size_t)t] = j;
      sum += need[(size_t)t];
    }
    if (std::find(need.begin(), need.end(), 0L) == need.end() && sum <= ranks) {
      k = need;
      break;
    }
  }
  for (long spare = ranks - std::accumulate(k.begin(), k.end(), 0L); spare > 0;) {
    int best = -1;
    long best_next = 0;
    for (int t = 0; t < T; ++t) {
      long next = k[(size_t)t] + 1;
      while (next <= k[(size_t)t] + spare && !valid(t, next)) ++next;
      if (next > k[(size_t)t] + spare) continue;
      if (best < 0 || (long)b[(size_t)t] * k[(size_t)best] > (long)b[(size_t)best] * k[(size_t)t]) best = t, best_next = next;
    }
    if (best < 0) return {};
    spare -= best_next - k[(size_t)best];
    k[(size_t)best] = best_next;
  }
  return k;
}

}  // namespace

class TestElasticPlan : public QObject {
  Q_OBJECT

 private slots:
  void proposal_on_hand_computed_rows_data() {
    QTest::addColumn<QString>("batches");
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("micro");
    QTest::addColumn<QString>("assignment");
    QTest::addColumn<int>("max_load");
    QTest::addColumn<double>("bubble");
    // Table III: load balanced = 4/2/1/1 GPUs on 8.
    QTest::newRow("UFO on 8 ranks") << "512/256/128/128" << 8 << 1 << "0 0 0 0 1 1 2 3" << 128 << 0.0;
    // Table III's load imbalanced: one rank each; max 512, mean 256.
    QTest::newRow("UFO on 4 ranks") << "512/256/128/128" << 4 << 1 << "0 1 2 3" << 512 << 0.5;
    // LPT: 512 -> r0, 256 -> r1, 128 -> r1 (384 < 512), 128 -> r1.
    QTest::newRow("UFO on 2 ranks (merge)") << "512/256/128/128" << 2 << 1 << "0 1+2+3" << 512 << 0.0;
    // Fig. 6(b): 1:1:2 merged 2:2 (16 -> r0, then both 8s onto r1).
    QTest::newRow("1:1:2 on 2 ranks") << "8/8/16" << 2 << 1 << "2 0+1" << 16 << 0.0;
    // Fig. 6(c): the heavy task on two ranks, 1:1:1:1.
    QTest::newRow("1:1:2 on 4 ranks") << "8/8/16" << 4 << 1 << "0 1 2 2" << 8 << 0.0;
    QTest::newRow("1:1:2 on 4 ranks, 2 micro-batches") << "8/8/16" << 4 << 2 << "0 1 2 2" << 8 << 0.0;
    // Fig. 6(a): 3 ranks, 8:8:16, mean 32/3: bubble 1 - (32/3)/16 = 1/3.
    QTest::newRow("1:1:2 on 3 ranks") << "8/8/16" << 3 << 1 << "0 1 2" << 16 << 1.0 / 3.0;
    // 5 ranks: L = 8 needs 1/1/2 = 4 ranks; the spare one goes to task 0 (tie at 8, lower index).
    // loads 4 4 8 8 8: mean 32/5, bubble 1 - 6.4/8 = 0.2.
    QTest::newRow("1:1:2 on 5 ranks") << "8/8/16" << 5 << 1 << "0 0 1 2 2" << 8 << 0.2;
    // 6 over 3 ranks (load 2) and 2 on one: L = 2 fits 3 + 1 = 4 ranks.
    QTest::newRow("6/2 on 4 ranks") << "6/2" << 4 << 1 << "0 0 0 1" << 2 << 0.0;
    // 3 does not split over 2 ranks: the greedy without divisibility would give 2/1.
    QTest::newRow("6/3 on 3 ranks") << "6/3" << 3 << 1 << "0 0 1" << 3 << 0.0;
  }
  void proposal_on_hand_computed_rows() {
    QFETCH(QString, batches);
    QFETCH(int, ranks);
    QFETCH(int, micro);
    QFETCH(QString, assignment);
    QFETCH(int, max_load);
    QFETCH(double, bubble);
    const ElasticPlan p = propose_elastic(ints(batches), ranks, micro);
    QCOMPARE(text(p.assignment), assignment);
    QCOMPARE(p.max_load, (long)max_load);
    QVERIFY2(std::abs(p.bubble_share - bubble) < 1e-12, qPrintable(QString::number(p.bubble_share)));
    QVERIFY(assignment_problem(ints(batches), p.assignment, ranks, micro).empty());
  }

  // The divisor listing and the bisection give what the exhaustive search gives, on every
  // small case (ranks >= tasks), errors included.
  void proposal_matches_the_exhaustive_search() {
    int compared = 0;
    for (int T = 1; T <= 3; ++T)
      for (int M = 1; M <= 3; ++M)
        for (int ranks = T; ranks <= 13; ++ranks)
          for (int code = 0; code < 24 * 24 * 24; code += 7) {
            std::vector<int> b;
            for (int t = 0, c = code; t < T; ++t, c /= 24) b.push_back(1 + c % 24);
            const std::vector<long> want = exhaustive_ranks_per_task(b, ranks, M);
            std::vector<long> got;
            try {
              const ElasticPlan p = propose_elastic(b, ranks, M);
              got.assign((size_t)T, 0);
              for (const std::vector<int>& on_rank : p.assignment) ++got[(size_t)on_rank.at(0)];
            } catch (const std::invalid_argument&) {
            }
            QVERIFY2(got == want, qPrintable(QString("batches %1/%2/%3, %4 ranks, %5 micro-batches")
                                                 .arg(b[0]).arg(T > 1 ? b[1] : 0).arg(T > 2 ? b[2] : 0)
                                                 .arg(ranks).arg(M)));
            ++compared;
          }
    QVERIFY(compared > 10000);
  }

  void proposal_errors() {
    // 3 ranks for 3 + 1: task 0 cannot take a 2nd rank (3 % 2), nor a 3rd within the 1 spare.
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, propose_elastic({3, 1}, 3, 1));
    try {
      propose_elastic({3, 1}, 3, 1);
    } catch (const std::invalid_argument& e) {
      QVERIFY2(std::string(e.what()).find("1 of the 3 ranks stay unused") != std::string::npos, e.what());
    }
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, propose_elastic({3, 4}, 2, 2));  // 3 rows in 2 micro-batches
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, propose_elastic({}, 2, 1));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, propose_elastic({4}, 0, 1));
  }

  // Every row of the global batch lies on exactly one rank in exactly one micro-batch, and
  // micro-batch m holds the same rows whatever the assignment (what makes the aux statistics
  // and the loss curve assignment-independent).
  void rows_cover_the_global_batch_once_data() {
    QTest::addColumn<QString>("rank_tasks");
    QTest::addColumn<int>("micro");
    QTest::newRow("one task per rank") << "0 1 2" << 1;
    QTest::newRow("split heavy") << "0 1 2 2" << 2;
    QTest::newRow("merged light") << "0+1 2" << 2;
    QTest::newRow("merge and split mixed") << "0+1 2 0 1" << 2;
    QTest::newRow("everything on one rank") << "2+0+1" << 4;
  }
  void rows_cover_the_global_batch_once() {
    QFETCH(QString, rank_tasks);
    QFETCH(int, micro);
    const std::vector<int> batches = {8, 8, 16};
    std::vector<std::string> entries;
    for (const QString& e : rank_tasks.split(u' ')) entries.push_back(e.toStdString());
    const auto assignment = parse_rank_tasks(entries);
    QVERIFY(assignment_problem(batches, assignment, (int)assignment.size(), micro).empty());
    std::vector<std::set<long>> rows_of_micro((size_t)micro);
    long total = 0;
    for (int r = 0; r < (int)assignment.size(); ++r)
      for (const TaskRowSlice& s : task_row_slices(batches, assignment, r, micro))
        for (int m = 0; m < micro; ++m)
          for (int j = 0; j < s.rows; ++j) {
            const long row = s.first_row + (long)m * s.row_step + j;
            QVERIFY2(rows_of_micro[(size_t)m].insert(row).second, "a row on two ranks");
            ++total;
          }
    QCOMPARE(total, 32L);
    // Micro-batch m = rows [m b_t / M, (m + 1) b_t / M) of every task (task offsets 0, 8, 16).
    for (int m = 0; m < micro; ++m) {
      std::set<long> expected;
      for (int t = 0, offset = 0; t < 3; offset += batches[(size_t)t], ++t)
        for (long j = 0; j < batches[(size_t)t] / micro; ++j) expected.insert(offset + m * batches[(size_t)t] / micro + j);
      QCOMPARE(rows_of_micro[(size_t)m], expected);
    }
  }

  void slices_and_loads_by_hand() {
    // ["0+1", "2", "0", "1"], M = 2: task 0 on ranks 0, 2; task 1 on 0, 3; task 2 on 1.
    const auto a = parse_rank_tasks({"0+1", "2", "0", "1"});
    const auto r0 = task_row_slices({8, 8, 16}, a, 0, 2);
    QCOMPARE((int)r0.size(), 2);
    QCOMPARE(r0[0].task, 0);
    QCOMPARE(r0[0].rows, 2);
    QCOMPARE(r0[0].first_row, 0L);
    QCOMPARE(r0[0].row_step, 4L);
    QCOMPARE(r0[1].first_row, 8L);
    const auto r3 = task_row_slices({8, 8, 16}, a, 3, 2);
    QCOMPARE(r3[0].first_row, 10L);  // task 1's second rank: rows 10-11 (+4 in micro-batch 1)
    QCOMPARE(rows_per_rank({8, 8, 16}, a), (std::vector<long>{8, 16, 4, 4}));
    const ElasticPlan p = evaluate_assignment({8, 8, 16}, a);
    QCOMPARE(p.max_load, 16L);
    QCOMPARE(p.imbalance, 2.0);
    QCOMPARE(p.bubble_share, 0.5);
  }

  void parse_and_problems() {
    QCOMPARE(text(parse_rank_tasks({"0", "2+3", "10"})), QString("0 2+3 10"));
    for (const char* bad : {"", "a", "1+", "+1", "1+1", "-1", "1 2"})
      QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parse_rank_tasks({"0", bad}));
    const std::vector<int> b = {8, 8, 16};
    QVERIFY(QString::fromStdString(assignment_problem(b, parse_rank_tasks({"0", "1"}), 2, 1)).contains("no rank trains task 2"));
    QVERIFY(QString::fromStdString(assignment_problem(b, parse_rank_tasks({"0", "1", "3"}), 3, 1)).contains("names task 3"));
    QVERIFY(QString::fromStdString(assignment_problem(b, parse_rank_tasks({"0", "1", "2"}), 4, 1)).contains("needs one per data-parallel rank (4)"));
    QVERIFY(QString::fromStdString(assignment_problem(b, parse_rank_tasks({"0+1", "2", "2", "2"}), 4, 1))
                .contains("task 2's batch 16 does not divide over its 3 rank(s)"));
    QVERIFY(QString::fromStdString(assignment_problem(b, parse_rank_tasks({"0", "1", "2", "2"}), 4, 16)).contains("micro-batch"));
  }

  // Task t's streams hold only language t's text: most bigrams are likely successors of
  // language t (the rest: the 2% noise and document starts), far fewer of another language.
  void task_streams_are_the_languages() {
    DataConfig d;
    d.languages = 3;
    d.corpus_tokens = 30000;
    d.tasks = {1, 1, 2};
    const TokenCorpus c = load_corpus(d, 32, 16, 5);
    QCOMPARE((int)c.task_train.size(), 3);
    QCOMPARE((int)c.task_val.size(), 3);
    DataConfig plain = d;
    plain.tasks.clear();
    QCOMPARE(load_corpus(plain, 32, 16, 5).train, c.train);  // tasks leave the mixture as it was
    const auto langs = make_synthetic_languages(d, 32, 5);
    auto likely_share = [](const std::vector<int32_t>& s, const MarkovLanguage& L) {
      long likely = 0;
      for (size_t i = 1; i < s.size(); ++i) {
        const int32_t* succ = &L.successors[(size_t)s[i - 1] * L.branching];
        likely += std::find(succ, succ + L.branching, s[i]) != succ + L.branching;
      }
      return (double)likely / (double)(s.size() - 1);
    };
    for (int t = 0; t < 3; ++t) {
      QCOMPARE((long)c.task_train[(size_t)t].size(), 27000L / 3);
      QCOMPARE((long)c.task_val[(size_t)t].size(), 3000L / 3);
      for (const auto* s : {&c.task_train[(size_t)t], &c.task_val[(size_t)t]}) {
        QVERIFY2(likely_share(*s, langs[(size_t)t]) > 0.9, qPrintable(QString::number(t)));
        QVERIFY2(likely_share(*s, langs[(size_t)(t + 1) % 3]) < 0.5, qPrintable(QString::number(t)));
      }
    }
    d.corpus_tokens = 300;  // 30 held-out tokens / 3 tasks < seq_len + 1
    QVERIFY_THROWS_EXCEPTION(DataError, load_corpus(d, 32, 16, 5));
  }

  void config_errors_name_the_key_data() {
    QTest::addColumn<QStringList>("sets");
    QTest::addColumn<QString>("expected");
    const QStringList base = {"run.ranks=4", "data.languages=3", "train.batch_size=16", "data.tasks=[4,4,8]"};
    QTest::newRow("sum") << (QStringList{"run.ranks=4", "data.languages=3", "data.tasks=[4,4,8]"})
                         << "data.tasks: the task batches sum to 16; they must sum to train.batch_size = 4";
    QTest::newRow("zero batch") << (QStringList{"data.languages=3", "data.tasks=[4,0]"})
                                << "data.tasks: task 1's batch must be >= 1";
    QTest::newRow("languages") << (QStringList{"run.ranks=4", "train.batch_size=16", "data.tasks=[4,4,4,4]", "data.languages=3"})
                               << "data.languages: must be >= the 4 tasks";
    QTest::newRow("source") << (base + QStringList{"data.source=text", "model.vocab_size=256", "data.path=/etc/hostname"})
                            << "data.tasks: needs data.source = \"synthetic\"";
    QTest::newRow("rank_tasks without tasks") << (QStringList{"run.ranks=2", "data.rank_tasks=[\"0\",\"0\"]"})
                                              << "data.rank_tasks: needs data.tasks";
    QTest::newRow("entries") << (base + QStringList{"data.rank_tasks=[\"0\",\"1\",\"2\"]"})
                             << "data.rank_tasks: has 3 entries; needs one per data-parallel rank (4) (run.ranks = 4)";
    QTest::newRow("syntax") << (base + QStringList{"data.rank_tasks=[\"0\",\"1\",\"2\",\"2-3\"]"})
                            << "data.rank_tasks: entry 3 (\"2-3\")";
    QTest::newRow("divisibility") << (base + QStringList{"data.rank_tasks=[\"0+1\",\"2\",\"2\",\"2\"]"})
                                  << "data.rank_tasks: task 2's batch 8 does not divide over its 3 rank(s)";
    QTest::newRow("no proposal") << (QStringList{"run.ranks=4", "data.languages=3", "train.batch_size=5", "data.tasks=[3,1,1]", "moe.experts=4"})
                                 << "data.tasks: no elastic assignment on the 4 data-parallel ranks";
    QTest::newRow("embedding partition") << (base + QStringList{"model.embedding_partition=true"})
                                         << "model.embedding_partition: does not apply with data.tasks";
  }
  void config_errors_name_the_key() {
    QFETCH(QStringList, sets);
    QFETCH(QString, expected);
    std::vector<std::string> s;
    for (const QString& x : sets) s.push_back(x.toStdString());
    const QString issues = issues_with(s);
    QVERIFY2(issues.contains(expected), qPrintable("expected \"" + expected + "\" in:\n" + issues));
  }

  // The keys survive config_to_toml -> parse_config and appear in the canonical JSON.
  void task_keys_round_trip() {
    const Config c = load_config(test::tiny_config_path(),
                                 {"run.ranks=4", "data.languages=3", "train.batch_size=16", "data.tasks=[4,4,8]",
                                  "data.rank_tasks=[\"0+1\",\"2\",\"0\",\"1\"]"});
    const Config back = parse_config(config_to_toml(c), "back.toml");
    QCOMPARE(back.data.tasks, (std::vector<int>{4, 4, 8}));
    QCOMPARE(back.data.rank_tasks, (std::vector<std::string>{"0+1", "2", "0", "1"}));
    const nlohmann::json j = config_to_json(c);
    QCOMPARE(j.at("data").at("tasks").get<std::vector<int>>(), back.data.tasks);
    QCOMPARE(j.at("data").at("rank_tasks").get<std::vector<std::string>>(), back.data.rank_tasks);
  }

  void good_task_configs_load() {
    QCOMPARE(issues_with({"run.ranks=4", "data.languages=3", "train.batch_size=16", "data.tasks=[4,4,8]",
                          "data.rank_tasks=[\"0+1\",\"2\",\"0\",\"1\"]", "parallel.microbatches=2"}),
             QString());
    QCOMPARE(issues_with({"run.ranks=3", "data.languages=3", "train.batch_size=16", "data.tasks=[4,4,8]",
                          "moe.experts=3"}),
             QString());  // 16 does not divide over 3 ranks: fine with tasks (the proposal: one task each, 4:4:8)
  }
};

QTEST_APPLESS_MAIN(TestElasticPlan)
#include "tst_elastic_plan.moc"
