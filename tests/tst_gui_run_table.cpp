// ctest-labels: gui
// The run browser as a run table (issue 35, point 3): the query filter (RunQuery) on hand-made
// rows and through RunFilterProxy on the fixture store (QAbstractItemModelTester), param columns
// of any config key sorted as numbers, tags, notes, rename and delete written to the store and
// seen after a reload, a run's config opened in the editor and two runs' configs diffed.
#include <QtTest>

#include <QAbstractItemModelTester>
#include <QLineEdit>
#include <QTreeView>

#include <algorithm>

#include "gui_fixture.h"
#include "mainwindow.h"
#include "models/runedits.h"
#include "models/runfilterproxy.h"
#include "models/runlistmodel.h"
#include "models/runquery.h"
#include "widgets/configeditor.h"

using namespace moebench;
using moebench::gui::RunQuery;
namespace fx = moebench::test::gui_fixture;

namespace {

RunListModel::RunRow row(const std::string& name, const std::string& strategy, double stepMs,
                         std::map<std::string, std::string> params, std::map<std::string, std::string> tags = {}) {
  RunListModel::RunRow r;
  r.info.name = name;
  r.info.strategy = strategy;
  r.info.status = RunStatus::finished;
  r.steps = 10;
  r.stepMs = stepMs;
  r.params = std::move(params);
  r.tags = std::move(tags);
  if (auto it = r.tags.find("tags"); it != r.tags.end()) r.userTags = QString::fromStdString(it->second);
  if (auto it = r.tags.find("note"); it != r.tags.end()) r.note = QString::fromStdString(it->second);
  return r;
}

// Names of the runs the proxy shows, sorted.
QStringList shownRuns(const QAbstractItemModel* m) {
  QStringList out;
  for (int e = 0; e < m->rowCount(); ++e) {
    const QModelIndex exp = m->index(e, 0);
    for (int r = 0; r < m->rowCount(exp); ++r) out << m->index(r, 0, exp).data().toString();
  }
  out.sort();
  return out;
}

}  // namespace

class TestGuiRunTable : public QObject {
  Q_OBJECT

 private slots:
  void query_matches_keys_words_and_numbers() {
    const auto a = row("ec-base", "expert_centric", 20.0, {{"strategy.name", "expert_centric"}, {"train.steps", "300"}},
                       {{"tags", "baseline, paper"}, {"note", "first try"}});
    const auto b = row("variant-1", "hier_a2a", 12.5, {{"strategy.name", "hier_a2a"}, {"train.steps", "50"}},
                       {{"ablation.variant", "strategy.name=hier_a2a"}});
    auto m = [](const QString& q, const RunListModel::RunRow& r) {
      RunQuery query(q);
      if (!query.isValid()) qWarning() << q << query.error();
      return query.isValid() && query.matches(QStringLiteral("exp"), r);
    };
    // Words: name, strategy, experiment, tags, note, ablation variant; without case.
    QVERIFY(m("HIER", b) && !m("hier", a));
    QVERIFY(m("baseline", a) && m("first", a) && m("exp", a));
    // The example: a param, numbers compared as numbers (50 < 100 < 300).
    QVERIFY(!m("strategy.name = hier_a2a and train.steps > 100", b));
    QVERIFY(m("strategy.name = hier_a2a and train.steps > 10", b));
    QVERIFY(m("train.steps>100", a) && !m("train.steps>100", b));
    QVERIFY(m("train.steps >= 300", a) && m("train.steps <= 50", b) && m("train.steps != 50", a));
    // or binds looser than and.
    QVERIFY(m("strategy = nope or ms_per_step < 15 and steps = 10", b));
    QVERIFY(!m("strategy = nope or ms_per_step < 15 and steps = 11", b));
    // Contains, quoted values, tags explicitly, a key a run lacks fails.
    QVERIFY(m("tags ~ paper", a) && !m("tags ~ paper", b) && m("tags !~ paper", b));
    QVERIFY(m("note = 'first try'", a));
    QVERIFY(m("tag.ablation.variant ~ hier", b) && !m("param.ablation.variant ~ hier", b));
    QVERIFY(!m("model.hidden = 64", a) && !m("model.hidden != 64", a));
    QVERIFY(m("status = finished", a));  // text without case
    QVERIFY(m("", a) && RunQuery("").isEmpty());
    // Errors name what is wrong and where.
    QCOMPARE(RunQuery("train.steps >").error(), QString("'train.steps >' at column 1 needs a value after it"));
    QCOMPARE(RunQuery("= 3").error(), QString("'=' at column 1 needs a key before it"));
    QCOMPARE(RunQuery("a = 'x").error(), QString("unterminated quote at column 5"));
    QCOMPARE(RunQuery("hier and").error(), QString("the query ends with 'and': a condition must follow"));
    QCOMPARE(RunQuery("and hier").error(), QString("'and' at column 1 needs a condition before it"));
  }

  void proxy_filters_the_fixture_and_param_columns_sort_as_numbers() {
    QTemporaryDir dir;
    const QString path = fx::write(dir);
    auto store = std::make_shared<RunStore>(path.toStdString(), RunStore::Mode::read_only);
    RunListModel runs;
    runs.setStore(store);
    RunFilterProxy proxy;
    proxy.setRunModel(&runs);
    QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(shownRuns(&proxy), QStringList({"broken", "dc", "ec", "hier"}));
    QCOMPARE(proxy.setQuery("hier"), QString());
    QCOMPARE(shownRuns(&proxy), QStringList({"hier"}));
    QCOMPARE(proxy.rowCount(), 1);  // only the experiment that holds a match
    QCOMPARE(proxy.setQuery("peak_gflops = 100 and strategy != hier_a2a"), QString());
    QCOMPARE(shownRuns(&proxy), QStringList({"ec"}));
    QCOMPARE(proxy.setQuery("status = failed or ms_per_step < 13"), QString());
    QCOMPARE(shownRuns(&proxy), QStringList({"broken", "dc"}));  // dc: 12.4 ms (variant 2)
    // An invalid query keeps the last valid one.
    QVERIFY(!proxy.setQuery("status =").isEmpty());
    QCOMPARE(shownRuns(&proxy), QStringList({"broken", "dc"}));
    QCOMPARE(proxy.setQuery(""), QString());

    // A param column: the fixture's ec and hier have peak_gflops; the header names the key.
    QVERIFY(runs.paramKeys().contains("peak_gflops"));
    runs.setParamColumns({"peak_gflops"});
    const int col = RunListModel::ColumnCount;
    QCOMPARE(runs.columnCount(), col + 1);
    QCOMPARE(runs.headerData(col, Qt::Horizontal).toString(), QString("peak_gflops"));
    const QModelIndex ec = runs.indexForRun(store->find_run("ec").id, col);
    QCOMPARE(ec.data().toString(), QString("100"));
    QCOMPARE(ec.data(Qt::UserRole).typeId(), QMetaType::Double);
    QCOMPARE(runs.indexForRun(store->find_run("dc").id, col).data().toString(), QString());
  }

  // Rename, tags, note and delete go to the store (read-write for just that change) and the
  // window shows them after its next read; the tags are kept normalised.
  void edits_reach_the_store_and_the_browser() {
    QTemporaryDir dir;
    const QString path = fx::write(dir);
    MainWindow w;
    w.setAskBeforeClose(false);
    QVERIFY(w.openStore(path));
    w.liveStore()->setLive(false);
    const int64_t ec = RunStore(path.toStdString(), RunStore::Mode::read_only).find_run("ec").id;
    const int64_t broken = RunStore(path.toStdString(), RunStore::Mode::read_only).find_run("broken").id;
    QCOMPARE(gui::normalizeTags(" a, b,,a , c "), QString("a, b, c"));
    QVERIFY(w.renameRun(ec, "  expert-centric  "));
    QVERIFY(w.setRunTags(ec, "baseline,, paper ,baseline"));
    QVERIFY(w.setRunNote(ec, "warm cache\nsecond line"));
    QVERIFY(!w.renameRun(ec, "   "));  // refused, named
    {
      RunStore s(path.toStdString(), RunStore::Mode::read_only);
      const RunInfo info = s.find_run(std::to_string(ec));
      QCOMPARE(info.name, std::string("expert-centric"));
      std::map<std::string, std::string> tags;
      for (auto& [k, v] : s.tags(ec)) tags[k] = v;
      QCOMPARE(tags["tags"], std::string("baseline, paper"));
      QCOMPARE(tags["note"], std::string("warm cache\nsecond line"));
    }
    // Each edit asks for a read; edits made while one is in flight are seen by the one queued.
    QTRY_COMPARE(w.runModel()->indexForRun(ec).data().toString(), QString("expert-centric"));
    QTRY_COMPARE(w.runModel()->indexForRun(ec, RunListModel::TagsColumn).data().toString(), QString("baseline, paper"));
    QTRY_COMPARE(w.runModel()->indexForRun(ec, RunListModel::NoteColumn).data().toString(), QString("warm cache"));
    // The filter finds the tag.
    w.filterEdit()->setText("tags ~ paper");
    QCOMPARE(shownRuns(w.runView()->model()), QStringList({"expert-centric"}));
    w.filterEdit()->setText("tags ~");
    QVERIFY(w.filterError().contains("needs a value"));
    w.filterEdit()->clear();
    QCOMPARE(w.filterError(), QString());
    // Delete.
    QVERIFY(w.deleteRuns({broken}));
    QTRY_VERIFY(!w.runModel()->indexForRun(broken).isValid());
    QVERIFY_THROWS_EXCEPTION(StoreError, RunStore(path.toStdString(), RunStore::Mode::read_only).find_run(std::to_string(broken)));
    // An edit the store refuses names the store.
    const QString error = gui::renameRun(dir.filePath("missing/runs.db"), ec, "x");
    QVERIFY2(error.startsWith("cannot change " + dir.filePath("missing/runs.db")), qPrintable(error));
  }

  void config_opens_in_the_editor_and_two_configs_diff() {
    QTemporaryDir dir;
    const QString path = fx::write(dir);
    MainWindow w;
    w.setAskBeforeClose(false);
    QVERIFY(w.openStore(path));
    const int64_t ec = RunStore(path.toStdString(), RunStore::Mode::read_only).find_run("ec").id;
    QVERIFY(w.openRunConfig(ec));
    QCOMPARE(w.pages()->currentWidget(), w.configEditor());
    QCOMPARE(w.configEditor()->filePath(), QString());  // a new unsaved document
    QVERIFY(w.configEditor()->isModified());
    const Config reparsed = parse_config(w.configEditor()->text().toStdString(), "run.toml");
    QCOMPARE(config_to_json(reparsed).dump(), fx::configJson());  // the run's config, every key

    const auto diff = gui::diffParams({{"a", "1"}, {"b", "2"}, {"same", "x"}}, {{"a", "1"}, {"b", "3"}, {"c", "4"}, {"same", "x"}});
    QCOMPARE(int(diff.size()), 2);
    QCOMPARE(diff[0].key, QString("b"));
    QCOMPARE(diff[0].a, QString("2"));
    QCOMPARE(diff[0].b, QString("3"));
    QCOMPARE(diff[1].key, QString("c"));
    QCOMPARE(diff[1].a, QString("(not set)"));
  }
};

QTEST_MAIN(TestGuiRunTable)
#include "tst_gui_run_table.moc"
