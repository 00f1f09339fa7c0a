// ctest-labels: mpi slow
// moebench under Slurm, for real: a private one-node Slurm (slurmctld + slurmd, munge) started by
// tests/cluster/slurm-local.sh into a temporary folder for this suite and stopped after it.
// `srun -n 4 moebench run` trains the same per-step losses as the local launcher's mpirun and
// records the job id; the documented job script (docs/examples/moebench.sbatch) trains under
// sbatch; `moebench run` with several ranks inside an allocation without srun (salloc, a batch
// script) is refused before anything starts (one rank runs), and so are tasks srun started without
// an MPI plugin (--mpi=none); a rank that fails under srun ends the job with moebench's message
// and the run FAILED with it. Also the Slurm environment rules
// (scheduler_env.h), which need no Slurm. Needs root, slurm-wlm and munge; the Slurm tests are
// skipped, naming what is missing, elsewhere. The daemons stop in cleanupTestCase, or when this
// process dies (the script watches it).
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QProcessEnvironment>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <unistd.h>

#include <map>

#include "moebench/dist/scheduler_env.h"
#include "moebench/store/run_store.h"

using moebench::RunStatus;
using moebench::RunStore;

namespace {
constexpr int kJobTimeoutMs = 180000;
const QString kScript = QStringLiteral(MOEBENCH_SOURCE_DIR "/tests/cluster/slurm-local.sh");
const QString kJobScript = QStringLiteral(MOEBENCH_SOURCE_DIR "/docs/examples/moebench.sbatch");
const QString kTiny = QStringLiteral(MOEBENCH_SOURCE_DIR "/tests/data/tiny.toml");  // 12 steps

struct Result {
  int code = -1;  // -1: did not end in time
  QString out, err;
};

std::map<std::string, std::string> tags_of(RunStore& store, int64_t run) {
  std::map<std::string, std::string> m;
  for (const auto& [k, v] : store.tags(run)) m[k] = v;
  return m;
}

// The per-step training losses of the only run in `db`.
std::vector<double> losses(const QString& db) {
  RunStore store(db.toStdString());
  const auto runs = store.list_runs();
  if (runs.size() != 1) return {};
  std::vector<double> v;
  for (const auto& m : store.metrics(runs[0].id, "loss")) v.push_back(m.value);
  return v;
}

int moebench_lines(const QString& err) {
  int n = 0;
  for (const QString& line : err.split('\n'))
    if (line.startsWith(QStringLiteral("moebench:"))) ++n;
  return n;
}
}  // namespace

class TestSlurm : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  QString m_slurmDir, m_conf, m_skip;

  // A command with this suite's Slurm (SLURM_CONF) and none of an outer job's variables.
  Result run(const QString& program, const QStringList& args, const QStringList& env = {},
             int timeout_ms = kJobTimeoutMs) {
    QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
    for (const QString& k : e.keys())
      if (k.startsWith(QStringLiteral("SLURM_")) || k.startsWith(QStringLiteral("SBATCH_")) ||
          k.startsWith(QStringLiteral("SALLOC_")) || k.startsWith(QStringLiteral("SRUN_")))
        e.remove(k);
    if (!m_conf.isEmpty()) e.insert(QStringLiteral("SLURM_CONF"), m_conf);
    for (const QString& kv : env) e.insert(kv.section('=', 0, 0), kv.section('=', 1));
    QProcess p;
    p.setProcessEnvironment(e);
    p.setWorkingDirectory(m_tmp.path());
    p.start(program, args);
    if (!p.waitForFinished(timeout_ms)) {
      p.kill();
      p.waitForFinished(5000);
      return {-1, QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
    }
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
  }

  QString path(const QString& name) const { return m_tmp.filePath(name); }

 private slots:
  void initTestCase() {
    QVERIFY(m_tmp.isValid());
    if (geteuid() != 0) {
      m_skip = QStringLiteral("not root: the private Slurm's slurmd runs jobs as root");
      return;
    }
    for (const char* tool : {"slurmctld", "slurmd", "srun", "sbatch", "salloc", "sinfo"})
      if (QStandardPaths::findExecutable(QString::fromUtf8(tool), {"/usr/sbin", "/usr/bin"}).isEmpty()) {
        m_skip = QStringLiteral("%1 is not installed (apt-get install slurm-wlm)").arg(QString::fromUtf8(tool));
        return;
      }
    if (QStandardPaths::findExecutable(QStringLiteral("munged"), {"/usr/sbin", "/usr/bin"}).isEmpty()) {
      m_skip = QStringLiteral("munged is not installed (apt-get install munge)");
      return;
    }
    m_slurmDir = path(QStringLiteral("slurm"));
    // This process as the owner: should it die without cleanupTestCase, the daemons stop too.
    const Result r = run(QStringLiteral("bash"), {kScript, QStringLiteral("start"), m_slurmDir,
                                                  QString::number(QCoreApplication::applicationPid())},
                         {}, 90000);
    if (r.code == 2) {  // a prerequisite the script names is missing
      m_skip = r.err.trimmed();
      return;
    }
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QRegularExpressionMatch m = QRegularExpression(QStringLiteral("export SLURM_CONF=(\\S+)")).match(r.out);
    QVERIFY2(m.hasMatch(), qPrintable(r.out));
    m_conf = m.captured(1);
  }

  void cleanupTestCase() {
    if (m_slurmDir.isEmpty()) return;
    const Result r = run(QStringLiteral("bash"), {kScript, QStringLiteral("stop"), m_slurmDir}, {}, 60000);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    for (const char* pid : {"slurmctld.pid", "slurmd.pid"})
      QVERIFY2(!QFileInfo::exists(m_slurmDir + '/' + pid), pid);
  }

  // The task layout lists srun exports ("2(x3),1") and the rule that makes MPI yield.
  void slurmTaskListsAndYieldRule() {
    using moebench::slurm_tasks_on_node;
    QCOMPARE(slurm_tasks_on_node("4", 0), 4);
    QCOMPARE(slurm_tasks_on_node("4", 1), 0);
    QCOMPARE(slurm_tasks_on_node("2(x3),1", 0), 2);
    QCOMPARE(slurm_tasks_on_node("2(x3),1", 2), 2);
    QCOMPARE(slurm_tasks_on_node("2(x3),1", 3), 1);
    QCOMPARE(slurm_tasks_on_node("2(x3),1", 4), 0);
    QCOMPARE(slurm_tasks_on_node("2(x3", 0), 0);
    QCOMPARE(slurm_tasks_on_node("x", 0), 0);
    moebench::SlurmEnv e;  // in salloc / a batch script: no step
    e.tasks_on_node = 4;
    e.cpus_on_node = 4;
    QVERIFY(!moebench::slurm_node_oversubscribed(e, 2));
    e.step_id = std::string(1, '0');  // a task srun started
    QVERIFY(moebench::slurm_node_oversubscribed(e, 2));   // 4 tasks, 2 cores
    QVERIFY(!moebench::slurm_node_oversubscribed(e, 8));  // 4 tasks, 4 CPUs given of 8
    e.cpus_on_node = 2;
    QVERIFY(moebench::slurm_node_oversubscribed(e, 8));   // 4 tasks on the 2 CPUs Slurm gave
    e.tasks_on_node = 1;
    QVERIFY(!moebench::slurm_node_oversubscribed(e, 1));
  }

  // srun -n 4 (MpiDefault=pmix: no --mpi) trains what the local launcher's mpirun trains, step
  // for step, and rank 0 records the job.
  void srunTrainsLikeMpirun() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const Result s = run(QStringLiteral("srun"), {"-v", "-n", "4", MOEBENCH_CLI, "run", kTiny, "--db", path("srun.db"),
                                                  "--out", path("srun-out")});
    QVERIFY2(s.code == 0, qPrintable(s.err));
    QVERIFY2(s.out.contains(QStringLiteral("distributed: 4 ranks")), qPrintable(s.out));
    const QRegularExpressionMatch job = QRegularExpression(QStringLiteral("srun: jobid (\\d+)")).match(s.err);
    QVERIFY2(job.hasMatch(), qPrintable(s.err));
    const Result m = run(MOEBENCH_CLI, {"run", kTiny, "--ranks", "4", "--db", path("mpirun.db"), "--out",
                                        path("mpirun-out")});
    QVERIFY2(m.code == 0, qPrintable(m.err));

    const std::vector<double> a = losses(path("srun.db")), b = losses(path("mpirun.db"));
    QCOMPARE(a.size(), size_t(12));
    QCOMPARE(a, b);  // bit for bit: the same ranks, the same reductions

    RunStore store(path("srun.db").toStdString());
    const moebench::RunInfo runInfo = store.list_runs().at(0);
    QCOMPARE(runInfo.status, RunStatus::finished);
    auto tags = tags_of(store, runInfo.id);
    QCOMPARE(QString::fromStdString(tags["launcher"]), QStringLiteral("srun"));
    QCOMPARE(QString::fromStdString(tags["slurm_job_id"]), job.captured(1));
    QCOMPARE(QString::fromStdString(tags["slurm_step_id"]), QStringLiteral("0"));
    QCOMPARE(QString::fromStdString(tags["slurm_ntasks"]), QStringLiteral("4"));
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    QCOMPARE(QString::fromStdString(tags["slurm_nodelist"]), QString::fromUtf8(host).section('.', 0, 0));

    RunStore local(path("mpirun.db").toStdString());
    tags = tags_of(local, local.list_runs().at(0).id);
    QCOMPARE(QString::fromStdString(tags["launcher"]), QStringLiteral("mpirun"));
    QVERIFY(!tags.count("slurm_job_id"));
  }

  // The documented job script, submitted as a user would (the config and store by --export).
  void sbatchJobScriptTrains() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const QString exports = QStringLiteral("ALL,CONFIG=%1,MOEBENCH=%2,DB=%3,OUT=%4,MOEBENCH_ARGS=--steps 6")
                                .arg(kTiny, QStringLiteral(MOEBENCH_CLI), path("sbatch.db"), path("sbatch-out"));
    const Result r = run(QStringLiteral("sbatch"), {"--wait", "--export=" + exports, "-o", path("sbatch-%j.out"),
                                                    kJobScript});
    const QRegularExpressionMatch job = QRegularExpression(QStringLiteral("Submitted batch job (\\d+)")).match(r.out);
    QVERIFY2(job.hasMatch(), qPrintable(r.out + r.err));
    QFile log(path("sbatch-" + job.captured(1) + ".out"));
    QVERIFY(log.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(log.readAll());
    QVERIFY2(r.code == 0, qPrintable(r.err + text));
    QVERIFY2(text.contains(QStringLiteral("done: 6 steps")), qPrintable(text));
    RunStore store(path("sbatch.db").toStdString());
    const auto runs = store.list_runs();
    QCOMPARE(runs.size(), size_t(1));
    QCOMPARE(runs[0].status, RunStatus::finished);
    auto tags = tags_of(store, runs[0].id);
    QCOMPARE(QString::fromStdString(tags["slurm_job_id"]), job.captured(1));
    QCOMPARE(QString::fromStdString(tags["launcher"]), QStringLiteral("srun"));
    QCOMPARE(store.metrics(runs[0].id, "loss").size(), size_t(6));
    QVERIFY(QFileInfo::exists(path("sbatch-out/checkpoints/step_000006")));
  }

  // Several ranks in an allocation without srun: refused, one message saying what to do, exit 2,
  // nothing started (no store, no output folder); under salloc and in a batch script alike.
  void allocationWithoutSrunIsRefused() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const Result r = run(QStringLiteral("salloc"), {"-n", "4", MOEBENCH_CLI, "run", kTiny, "--ranks", "4", "--db",
                                                    path("alloc.db"), "--out", path("alloc-out")});
    QCOMPARE(r.code, 2);
    QCOMPARE(moebench_lines(r.err), 1);
    QVERIFY2(QRegularExpression(QStringLiteral("moebench: --ranks 4 inside Slurm job \\d+ \\(4 tasks\\) without "
                                               "srun: start the ranks with `srun -n 4 moebench run "))
                 .match(r.err)
                 .hasMatch(),
             qPrintable(r.err));
    QVERIFY(!QFileInfo::exists(path("alloc.db")));
    QVERIFY(!QFileInfo::exists(path("alloc-out")));

    QFile script(path("no-srun.sbatch"));
    QVERIFY(script.open(QIODevice::WriteOnly));
    script.write(QStringLiteral("#!/bin/bash\n#SBATCH --ntasks=4\nexec %1 run %2 --ranks 4 --db %3 --out %4\n")
                     .arg(MOEBENCH_CLI, kTiny, path("batch.db"), path("batch-out"))
                     .toUtf8());
    script.close();
    const Result b = run(QStringLiteral("sbatch"), {"--wait", "-o", path("no-srun.out"), script.fileName()});
    QVERIFY2(b.code != 0, qPrintable(b.out));
    QFile log(path("no-srun.out"));
    QVERIFY(log.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(log.readAll());
    QCOMPARE(moebench_lines(text), 1);
    QVERIFY2(text.contains(QStringLiteral("without srun: start the ranks with `srun -n 4 moebench run")), qPrintable(text));
    QVERIFY(!QFileInfo::exists(path("batch.db")));

    // One rank needs no launcher: it trains inside the allocation and records the job.
    const Result one = run(QStringLiteral("salloc"), {"-n", "4", MOEBENCH_CLI, "run", kTiny, "--ranks", "1", "--steps",
                                                      "3", "--db", path("one.db"), "--out", path("one-out")});
    QVERIFY2(one.code == 0, qPrintable(one.err));
    RunStore store(path("one.db").toStdString());
    const auto runs = store.list_runs();
    QCOMPARE(runs.size(), size_t(1));
    QCOMPARE(runs[0].status, RunStatus::finished);
    const auto tags = tags_of(store, runs[0].id);
    QVERIFY(tags.count("slurm_job_id"));
    QVERIFY(!tags.count("launcher"));
  }

  // srun --mpi=none: the tasks could not form one MPI job; said once, by task 0, before MPI starts.
  void srunWithoutMpiPluginIsRefused() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const Result r = run(QStringLiteral("srun"), {"-n", "2", "--mpi=none", MOEBENCH_CLI, "run", kTiny, "--db",
                                                  path("none.db"), "--out", path("none-out")});
    QVERIFY2(r.code == 2, qPrintable(r.err));
    QCOMPARE(moebench_lines(r.err), 1);
    QVERIFY2(r.err.contains(QStringLiteral("moebench: srun started 2 tasks without an MPI plugin")), qPrintable(r.err));
    QVERIFY2(r.err.contains(QStringLiteral("`srun --mpi=pmix -n 2 moebench run ")), qPrintable(r.err));
    QVERIFY(!r.err.contains(QStringLiteral("MPI_Init")));
    QVERIFY(!QFileInfo::exists(path("none.db")));
  }

  // A rank that fails under srun: its one message, the job ends (no hang), the run FAILED with the
  // failing rank's message (rank 0 is killed with the step: the failing rank marks it).
  void failingRankUnderSrunEndsTheJob() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const Result r = run(QStringLiteral("srun"), {"-n", "4", MOEBENCH_CLI, "run", kTiny, "--db", path("fault.db"),
                                                  "--out", path("fault-out")},
                         {QStringLiteral("MOEBENCH_FAULT=2:3")}, 120000);
    QVERIFY2(r.code > 0, qPrintable(r.err));
    QCOMPARE(moebench_lines(r.err), 1);
    QVERIFY2(r.err.contains(QStringLiteral("moebench: rank 2 of 4 failed: fault injected by MOEBENCH_FAULT at step 3")),
             qPrintable(r.err));
    RunStore store(path("fault.db").toStdString());
    const auto runs = store.list_runs();
    QCOMPARE(runs.size(), size_t(1));
    QCOMPARE(runs[0].status, RunStatus::failed);
    const auto tags = tags_of(store, runs[0].id);
    QVERIFY2(tags.count("failure") && tags.at("failure").find("rank 2: fault injected") == 0,
             tags.count("failure") ? tags.at("failure").c_str() : "no failure tag");
    // Nothing of the job is left running.
    QTRY_VERIFY_WITH_TIMEOUT(run(QStringLiteral("squeue"), {"-h"}).out.trimmed().isEmpty(), 30000);
  }
};

QTEST_GUILESS_MAIN(TestSlurm)
#include "tst_slurm.moc"
