// ctest-labels: unit mpi slow
// Several hosts on this machine (tests/netns_hosts.h: network + UTS namespaces, veths, an sshd
// each): from host mh1, as a user on a login node, `mpirun --host mh1:2,mh2:2 moebench run`
// (and the --hostfile form) trains over TCP on the hosts' subnet only. The topology is detected
// from the hosts (2 nodes x 2 devices), traffic between hosts is booked inter_node and within a
// host intra_node, the node-shared cache of data_centric stays within a host, the losses equal
// those of the one-host run (--ranks 4, virtual 2 x 2), and the bytes went over the veths.
// Killing mh2's ranks, or taking mh2's link down, ends the ranks on mh1 within 30 s with one
// moebench line naming the lost ranks and host, and the store says FAILED (rank 0 killed: rank 1
// says it; a rank failing by itself: only its own line). Skips, naming why,
// where namespaces cannot be made; leaves no namespace or process behind.
#include <QtTest>

#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QMap>
#include <QProcess>
#include <QRegularExpression>
#include <QThread>

#include <cmath>
#include <csignal>
#include <memory>

#include "cli_support.h"
#include "netns_hosts.h"
#include "store_support.h"

using namespace Qt::StringLiterals;
using moebench::test::HostCommand;
using moebench::test::NetnsHosts;
using moebench::test::raw_one;
using moebench::test::raw_rows;

namespace {

// 2 nodes x 2 devices, experts over all 4 ranks: tokens cross hosts every step.
constexpr const char* kConfig = R"(
[run]
name = "multihost"
seed = 11
threads = 1
[cluster]
nodes = 2
devices_per_node = 2
[parallel]
ep = 0
[strategy]
name = "expert_centric"
[model]
vocab_size = 64
seq_len = 32
hidden = 64
layers = 2
heads = 4
ffn_mult = 2
[moe]
moe_layers = [1]
experts = 4
top_k = 2
[data]
corpus_tokens = 40000
[train]
steps = 10
batch_size = 16
warmup_steps = 2
eval_every = 5
eval_batches = 2
)";

QString moebench_path() { return QFileInfo(QStringLiteral(MOEBENCH_CLI)).canonicalFilePath(); }

// The executable of process pid, "" when it is gone.
QString exe_of(qint64 pid) { return QFileInfo(u"/proc/%1/exe"_s.arg(pid)).canonicalFilePath(); }

int world_rank_of(qint64 pid) {
  QFile env(u"/proc/%1/environ"_s.arg(pid));
  if (!env.open(QIODevice::ReadOnly)) return -1;
  for (const QByteArray& kv : env.readAll().split('\0'))
    if (kv.startsWith("OMPI_COMM_WORLD_RANK=")) return kv.mid(21).toInt();
  return -1;
}

// Processes whose command line mentions `text` (and are not zombies).
QList<qint64> processes_mentioning(const QString& text) {
  QList<qint64> out;
  for (const QString& entry : QDir(u"/proc"_s).entryList(QDir::Dirs)) {
    bool num = false;
    const qint64 pid = entry.toLongLong(&num);
    if (!num || pid == QCoreApplication::applicationPid()) continue;
    QFile cmd(u"/proc/%1/cmdline"_s.arg(pid));
    if (!cmd.open(QIODevice::ReadOnly)) continue;
    const QByteArray line = cmd.readAll().replace('\0', ' ');
    if (!line.contains(text.toUtf8())) continue;
    QFile stat(u"/proc/%1/stat"_s.arg(pid));
    if (stat.open(QIODevice::ReadOnly)) {
      const QString s = QString::fromUtf8(stat.readAll());
      if (s.mid(s.lastIndexOf(u')') + 2, 1) == u"Z"_s) continue;
    }
    out << pid;
  }
  return out;
}

QStringList moebench_lines(const QString& text) {
  QStringList out;
  for (const QString& line : text.split('\n'))
    if (line.startsWith(u"moebench:"_s)) out << line;
  return out;
}

}  // namespace

class TstMultihost : public QObject {
  Q_OBJECT

  std::unique_ptr<NetnsHosts> hosts_;
  QTemporaryDir work_;  // the "shared file system": configs, stores, outputs
  QString config_;
  QMap<int, QString> host_of_rank_;  // where `--host mh1:2,mh2:2` puts each rank
  int runs_ = 0;

  QString h1() const { return hosts_->name(1); }
  QString h2() const { return hosts_->name(2); }

  // The mpirun line typed on mh1: ssh with the hosts' config, TCP (and UCX, for one-sided
  // windows) on the hosts' subnet only.
  // This process's OPENBLAS_* settings (e.g. OPENBLAS_CORETYPE) go to every rank, as a cluster
  // sets its BLAS alike on every host: another kernel would round differently than the one-host
  // run the losses are compared with.
  // extra_env: NAME=VALUE pairs (no quotes) the ranks get too.
  QString mpirun(const QString& placement, const QString& program, const QStringList& extra_env = {}) const {
    const QString subnet = hosts_->subnet();
    QString exports, forward;
    for (const QString& kv : extra_env) {
      exports += u" "_s + kv;
      forward += u" -x "_s + kv.section(u'=', 0, 0);
    }
    const QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const QString& key : env.keys())
      if (key.startsWith(u"OPENBLAS_"_s) && !env.value(key).contains(u'\'')) {
        exports += u" %1='%2'"_s.arg(key, env.value(key));
        forward += u" -x "_s + key;
      }
    return u"cd %1 && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 UCX_TLS=self,tcp "
           "UCX_NET_DEVICES=eth0%6 && exec mpirun %2 -x UCX_TLS -x UCX_NET_DEVICES%7 --mca plm_rsh_agent 'ssh -F %3' "
           "--mca pml ob1 --mca btl self,vader,tcp --mca osc sm,ucx --mca mpi_yield_when_idle 1 "
           "--mca btl_tcp_if_include %4 --mca oob_tcp_if_include %4 %5"_s
        .arg(work_.path(), placement, hosts_->ssh_config(), subnet, program, exports, forward);
  }
  QString placement() const { return u"--host %1:2,%2:2"_s.arg(h1(), h2()); }

  // `moebench run CONFIG --db DB --out OUT extra` under mpirun on mh1; the store path.
  QString moebench_run(const QString& db, const QString& extra) const {
    return u"%1 run %2 --db %3 --out %4 %5"_s.arg(moebench_path(), config_, db, work_.filePath(QFileInfo(db).baseName()),
                                                  extra);
  }

  QString db(const QString& name) { return work_.filePath(u"%1-%2.db"_s.arg(name).arg(++runs_)); }

  // The one-host run of the same config: `moebench run CONFIG --ranks 4` (virtual 2 x 2).
  QString single_host_run(const QStringList& extra) {
    const QString store = db(u"single"_s);
    const auto r = moebench::test::run_cli(QStringList{u"run"_s, config_, u"--ranks"_s, u"4"_s, u"--db"_s, store,
                                                       u"--out"_s, work_.filePath(QFileInfo(store).baseName())} +
                                           extra);
    if (r.code != 0) qWarning().noquote() << r.err;
    return r.code == 0 ? store : QString();
  }

  static QStringList losses(const QString& store) {
    return raw_rows(store.toStdString(), "SELECT printf('%.17g', value) FROM metrics WHERE run = 1 AND key = 'loss' "
                                         "ORDER BY step");
  }

  // The moebench ranks in the host's namespace, by world rank.
  QMap<int, qint64> ranks_on(const QString& host) const {
    QMap<int, qint64> out;
    for (qint64 pid : hosts_->pids(host))
      if (exe_of(pid) == moebench_path()) out.insert(world_rank_of(pid), pid);
    return out;
  }

  // A run of 100000 steps started on mh1, back when it has logged 3 steps.
  void start_long_run(QProcess& job, const QString& store) {
    QStringList args = hosts_->ssh(h1());
    const QString program = args.takeFirst();
    job.start(program, args << mpirun(placement(), moebench_run(store, u"--steps 100000"_s)));
    QVERIFY(job.waitForStarted());
    // Running: the ranks on mh2 exist and the run logs steps.
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < 60000 &&
           (ranks_on(h2()).size() < 2 ||
            raw_one(store.toStdString(), "SELECT count(*) FROM metrics WHERE key = 'loss'").toInt() < 3))
      QThread::msleep(100);
    QVERIFY2(ranks_on(h2()).size() == 2, qPrintable(u"no ranks on %1: "_s.arg(h2()) +
                                                    QString::fromUtf8(job.readAllStandardError())));
  }

  // Waits (up to limit_ms) until the host runs no moebench rank; the time it took, -1 past it.
  qint64 wait_ranks_gone(const QString& host, int limit_ms) const {
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < limit_ms) {
      if (ranks_on(host).isEmpty()) return t.elapsed();
      QThread::msleep(100);
    }
    return -1;
  }

 private slots:
  void initTestCase() {
    if (geteuid() != 0) QSKIP("needs root (network namespaces, veth pairs, sshd)");
    hosts_ = std::make_unique<NetnsHosts>(2, u"mh"_s);
    if (!hosts_->skip_reason().isEmpty()) QSKIP(qPrintable(hosts_->skip_reason()));
    QVERIFY2(hosts_->up(), qPrintable(hosts_->why_failed()));
    QVERIFY(work_.isValid());
    config_ = moebench::test::write_file(work_, u"multihost.toml"_s, kConfig);
    // Where Open MPI puts the ranks of `--host mh1:2,mh2:2`, as the ranks themselves see it.
    const HostCommand where =
        hosts_->run(h1(), mpirun(placement(), u"sh -c 'echo $OMPI_COMM_WORLD_RANK $(hostname)'"_s));
    QVERIFY2(where.code == 0, qPrintable(where.err));
    for (const QString& line : where.out.split('\n', Qt::SkipEmptyParts))
      host_of_rank_.insert(line.section(' ', 0, 0).toInt(), line.section(' ', 1, 1).trimmed());
    QCOMPARE(host_of_rank_.size(), 4);
    QCOMPARE(host_of_rank_.values(), (QList<QString>{h1(), h1(), h2(), h2()}));
  }

  // --host form, expert_centric: detected topology, link classes, losses, bytes over the veths.
  void trains_across_hosts() {
    const QString store = db(u"hosts"_s);
    const qint64 veth_before = hosts_->veth_bytes(h2());
    const HostCommand r = hosts_->run(h1(), mpirun(placement(), moebench_run(store, {})));
    const qint64 veth_bytes = hosts_->veth_bytes(h2()) - veth_before;
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const std::string s = store.toStdString();
    QCOMPARE(raw_one(s, "SELECT status FROM runs WHERE id = 1"), u"FINISHED"_s);
    QCOMPARE(raw_one(s, "SELECT host FROM runs WHERE id = 1"), h1());  // rank 0 records
    QVERIFY2(raw_one(s, "SELECT topology FROM runs WHERE id = 1").contains(u"2 nodes x 2 devices (detected)"_s),
             qPrintable(raw_one(s, "SELECT topology FROM runs WHERE id = 1")));

    // Every traffic row's class is what the ranks' hosts say; both kinds carry bytes.
    const QStringList rows = raw_rows(s, "SELECT rank || ' ' || peer || ' ' || link || ' ' || bytes FROM traffic");
    QVERIFY(!rows.isEmpty());
    qint64 intra = 0, inter = 0;
    for (const QString& row : rows) {
      const QStringList f = row.split(' ');
      const bool same = host_of_rank_.value(f[0].toInt()) == host_of_rank_.value(f[1].toInt());
      QCOMPARE(f[2], same ? u"intra_node"_s : u"inter_node"_s);
      (same ? intra : inter) += f[3].toLongLong();
    }
    QVERIFY(intra > 0);
    QVERIFY(inter > 0);

    // The inter-node bytes crossed mh2's veth, and they are far more than the ssh around them.
    const qint64 ssh_before = hosts_->veth_bytes(h2());
    QCOMPARE(hosts_->run(h1(), u"ssh -F %1 %2 true"_s.arg(hosts_->ssh_config(), h2())).code, 0);
    const qint64 ssh_bytes = hosts_->veth_bytes(h2()) - ssh_before;
    qInfo().noquote() << u"mh2's veth: %1 bytes during the run, store's inter_node bytes %2, one ssh session %3"_s.arg(
        veth_bytes).arg(inter).arg(ssh_bytes);
    QVERIFY(veth_bytes >= inter);
    QVERIFY(inter > 20 * ssh_bytes);

    // The same losses as the one-host run.
    const QString single = single_host_run({});
    QVERIFY(!single.isEmpty());
    QVERIFY(raw_one(single.toStdString(), "SELECT topology FROM runs WHERE id = 1").contains(u"(virtual)"_s));
    QCOMPARE(losses(store).size(), 10);
    QCOMPARE(losses(store), losses(single));
  }

  // data_centric, hierarchical: each host pulls an expert of the other host once into its
  // node-shared cache and both of its ranks compute with it. Observable: per step and host,
  // every used external expert has exactly one janus.pull_node, by a rank of that host, from a
  // rank of the other host; node syncs pair ranks of one host; and the losses equal the one-host
  // run's (1e-5), so the rank that did not pull read the puller's copy through the shared window.
  void node_windows_stay_within_a_host() {
    const QString extra = u"--set strategy.name=data_centric --set strategy.data_centric.hierarchical=true"_s;
    const QString store = db(u"windows"_s);
    const HostCommand r = hosts_->run(h1(), mpirun(placement(), moebench_run(store, extra)));
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const std::string s = store.toStdString();
    QCOMPARE(raw_one(s, "SELECT status FROM runs WHERE id = 1"), u"FINISHED"_s);
    const QStringList pulls = raw_rows(s, "SELECT step || ' ' || rank || ' ' || peer || ' ' || expert FROM spans "
                                          "WHERE name = 'janus.pull_node'");
    QVERIFY(!pulls.isEmpty());
    QMap<QString, int> pulled;  // "step host expert" -> pulls
    for (const QString& row : pulls) {
      const QStringList f = row.split(' ');
      const QString puller = host_of_rank_.value(f[1].toInt()), owner = host_of_rank_.value(f[2].toInt());
      QVERIFY2(puller != owner, qPrintable(row));
      ++pulled[f[0] + ' ' + puller + ' ' + f[3]];
    }
    for (auto it = pulled.begin(); it != pulled.end(); ++it) QVERIFY2(it.value() == 1, qPrintable(it.key()));
    // Every expert a host's rank routed to on the other host was pulled for that host.
    const QStringList used = raw_rows(s, "SELECT DISTINCT r.step || ' ' || r.source_rank || ' ' || r.expert FROM routing r "
                                         "WHERE r.tokens > 0");
    const QStringList owners = raw_rows(s, "SELECT DISTINCT expert || ' ' || peer FROM spans WHERE name = 'janus.pull_node'");
    QMap<int, QString> owner_host;
    for (const QString& o : owners) owner_host.insert(o.section(' ', 0, 0).toInt(), host_of_rank_.value(o.section(' ', 1, 1).toInt()));
    int external_uses = 0;
    for (const QString& u : used) {
      const QStringList f = u.split(' ');
      const QString host = host_of_rank_.value(f[1].toInt());
      if (!owner_host.contains(f[2].toInt()) || owner_host.value(f[2].toInt()) == host) continue;
      ++external_uses;
      QVERIFY2(pulled.value(f[0] + ' ' + host + ' ' + f[2]) == 1, qPrintable(u"not pulled for its host: "_s + u));
    }
    QVERIFY(external_uses > 0);
    for (const QString& row : raw_rows(s, "SELECT rank || ' ' || peer FROM spans WHERE name = 'janus.node_sync'")) {
      const QStringList f = row.split(' ');
      QCOMPARE(host_of_rank_.value(f[1].toInt()), host_of_rank_.value(f[0].toInt()));
    }
    // data_centric's gradient accumulates into the owners arrive in any order (one host too:
    // repeated one-host runs differ in the last bits), so equal as tst_data_centric has it.
    const QString single = single_host_run(extra.split(' '));
    QVERIFY(!single.isEmpty());
    const QStringList got = losses(store), want = losses(single);
    QCOMPARE(got.size(), want.size());
    for (int i = 0; i < got.size(); ++i)
      QVERIFY2(std::abs(got[i].toDouble() - want[i].toDouble()) <= 1e-5 * std::abs(want[i].toDouble()),
               qPrintable(u"step %1: %2 across hosts, %3 on one"_s.arg(i + 1).arg(got[i], want[i])));
  }

  void hostfile_form() {
    const QString hostfile =
        moebench::test::write_file(work_, u"hostfile"_s, u"%1 slots=2\n%2 slots=2\n"_s.arg(h1(), h2()).toUtf8());
    const QString store = db(u"hostfile"_s);
    const HostCommand r = hosts_->run(h1(), mpirun(u"--hostfile %1 -np 4"_s.arg(hostfile), moebench_run(store, {})));
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const std::string s = store.toStdString();
    QCOMPARE(raw_one(s, "SELECT status FROM runs WHERE id = 1"), u"FINISHED"_s);
    QVERIFY(raw_one(s, "SELECT topology FROM runs WHERE id = 1").contains(u"2 nodes x 2 devices (detected)"_s));
    QCOMPARE(raw_one(s, "SELECT count(*) FROM metrics WHERE key = 'loss'"), u"10"_s);
  }

  // SIGKILL of mh2's ranks: mh1's ranks end within 30 s, one moebench line, FAILED.
  void lost_host_fails_the_run() {
    const QString store = db(u"killed"_s);
    QProcess job;
    start_long_run(job, store);
    if (QTest::currentTestFailed()) return;
    const QMap<int, qint64> victims = ranks_on(h2());
    QVERIFY(!ranks_on(h1()).isEmpty());
    for (qint64 pid : victims) ::kill((pid_t)pid, SIGKILL);
    const qint64 took = wait_ranks_gone(h1(), 30000);
    QVERIFY2(took >= 0, "the ranks on mh1 still run 30 s after mh2's ranks were killed");
    QVERIFY(job.waitForFinished(30000));
    const QString err = QString::fromUtf8(job.readAllStandardError()) + QString::fromUtf8(job.readAllStandardOutput());
    QVERIFY(job.exitCode() != 0);
    const QStringList lines = moebench_lines(err);
    QCOMPARE(lines.size(), 1);
    QStringList ranks;
    for (int r : victims.keys()) ranks << QString::number(r);
    QVERIFY2(lines[0].startsWith(u"moebench: rank 0 of 4: lost ranks %1 on host %2 ("_s.arg(ranks.join(u", "_s), h2())),
             qPrintable(lines[0]));
    const std::string s = store.toStdString();
    QCOMPARE(raw_one(s, "SELECT status FROM runs WHERE id = 1"), u"FAILED"_s);
    QVERIFY(raw_one(s, "SELECT value FROM tags WHERE run = 1 AND key = 'failure'").contains(u"lost ranks"_s));
    qInfo().noquote() << u"ranks on %1 gone %2 ms after the kill: %3"_s.arg(h1()).arg(took).arg(lines[0]);
  }

  // Rank 0 lost (it writes the store): rank 1 says it, once, and marks the run FAILED.
  void lost_rank_zero_is_said_by_rank_one() {
    const QString store = db(u"rank0"_s);
    QProcess job;
    start_long_run(job, store);
    if (QTest::currentTestFailed()) return;
    const QMap<int, qint64> on_h1 = ranks_on(h1());
    QVERIFY(on_h1.contains(0));
    ::kill((pid_t)on_h1.value(0), SIGKILL);
    QVERIFY2(wait_ranks_gone(h2(), 30000) >= 0, "the ranks on mh2 still run 30 s after rank 0 was killed");
    QVERIFY(job.waitForFinished(30000));
    const QStringList lines = moebench_lines(QString::fromUtf8(job.readAllStandardError()));
    QCOMPARE(lines.size(), 1);
    QVERIFY2(lines[0].startsWith(u"moebench: rank 1 of 4: lost rank 0 on host %1 ("_s.arg(h1())), qPrintable(lines[0]));
    const std::string s = store.toStdString();
    QCOMPARE(raw_one(s, "SELECT status FROM runs WHERE id = 1"), u"FAILED"_s);
    QVERIFY(raw_one(s, "SELECT value FROM tags WHERE run = 1 AND key = 'failure'").startsWith(u"rank 1: lost rank 0"_s));
  }

  // A rank on mh2 that fails by itself says so; its end is not also reported as a lost rank. Only
  // ranks on rank 0's host write the store: the FAILED mark and the message come through rank 0.
  void own_failure_is_said_once() {
    int victim = -1;
    for (auto it = host_of_rank_.begin(); it != host_of_rank_.end() && victim < 0; ++it)
      if (it.value() == h2()) victim = it.key();
    QVERIFY(victim > 0);
    const QString store = db(u"fault"_s);
    const HostCommand r = hosts_->run(h1(), mpirun(placement(), moebench_run(store, {}),
                                                   {u"MOEBENCH_FAULT=%1:3"_s.arg(victim)}));
    QVERIFY(r.code != 0);
    const QStringList lines = moebench_lines(r.err);
    QCOMPARE(lines.size(), 1);
    QVERIFY2(lines[0].startsWith(u"moebench: rank %1 of 4 failed: fault injected"_s.arg(victim)), qPrintable(lines[0]));
    QCOMPARE(raw_one(store.toStdString(), "SELECT status FROM runs WHERE id = 1"), u"FAILED"_s);
    const QString failure = raw_one(store.toStdString(), "SELECT value FROM tags WHERE run = 1 AND key = 'failure'");
    QVERIFY2(failure.startsWith(u"rank %1: fault injected"_s.arg(victim)), qPrintable(failure));
  }

  // mh2's link down: no connection closes; the heartbeat's silence (10 s) ends mh1's ranks.
  // mpirun itself then waits for mh2's daemon (Open MPI's keepalive: minutes): it is left to
  // the hosts' teardown.
  void host_down_fails_the_run() {
    const QString store = db(u"down"_s);
    QProcess job;
    start_long_run(job, store);
    if (QTest::currentTestFailed()) return;
    QVERIFY(hosts_->set_link(h2(), false));
    const qint64 took = wait_ranks_gone(h1(), 30000);
    QVERIFY2(took >= 0, "the ranks on mh1 still run 30 s after mh2's link went down");
    const std::string s = store.toStdString();
    QCOMPARE(raw_one(s, "SELECT status FROM runs WHERE id = 1"), u"FAILED"_s);
    QVERIFY(raw_one(s, "SELECT value FROM tags WHERE run = 1 AND key = 'failure'").contains(u"no heartbeat"_s));
    // The line travels through orted, mpirun and ssh: wait for it (mpirun itself does not end).
    QString err;
    for (QElapsedTimer t; !t.isValid() || (t.elapsed() < 30000 && moebench_lines(err).isEmpty());) {
      if (!t.isValid()) t.start();
      job.waitForReadyRead(500);
      err += QString::fromUtf8(job.readAllStandardError());
    }
    job.waitForFinished(1000);
    err += QString::fromUtf8(job.readAllStandardError());
    const QStringList lines = moebench_lines(err);
    QCOMPARE(lines.size(), 1);
    QVERIFY2(lines[0].startsWith(u"moebench: rank 0 of 4: lost ranks"_s), qPrintable(lines[0]));
    qInfo().noquote() << u"ranks on %1 gone %2 ms after the link went down: %3"_s.arg(h1()).arg(took).arg(lines[0]);
    job.kill();
    job.waitForFinished(5000);
    QVERIFY(hosts_->set_link(h2(), true));
  }

  void cleanupTestCase() {
    if (!hosts_) return;
    const QString dir = hosts_->dir(), prefix = hosts_->prefix();
    const bool downed = hosts_->down();
    hosts_.reset();
    QVERIFY(downed);
    QProcess ns;
    ns.start(u"ip"_s, {u"netns"_s, u"list"_s});
    ns.waitForFinished(10000);
    QVERIFY2(!QString::fromUtf8(ns.readAllStandardOutput()).contains(u"mbh-"_s + prefix),
             "a namespace of the hosts is left");
    QVERIFY2(processes_mentioning(dir).isEmpty(), "a process of the hosts (sshd, ssh, mpirun, orted) is left");
    if (work_.isValid()) QVERIFY2(processes_mentioning(work_.path()).isEmpty(), "a rank is left");
    QVERIFY(!QFileInfo::exists(u"/etc/netns/mbh-"_s + prefix + u"1"_s));
  }
};

QTEST_GUILESS_MAIN(TstMultihost)
#include "tst_multihost.moc"
