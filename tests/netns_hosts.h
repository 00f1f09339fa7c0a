#pragma once
// Several "hosts" on this machine for QtTest suites: tests/cluster/netns-hosts.sh brings hosts
// PREFIX1..PREFIXn up (a network + UTS namespace each, a veth on a bridge, an sshd) in a
// temporary folder, and the destructor takes them down again (sshds, every process left in the
// namespaces, the namespaces, veths and bridge). A suite asks skip_reason() first: where the
// hosts cannot exist here (not root, iproute2 or openssh missing, no namespaces in this
// container) it QSKIPs naming why; any other failure to come up is why_failed().
// Use a prefix of your suite's own (letters only): sets of different prefixes get different
// names and subnets, so suites can run at the same time.
#include <QDir>
#include <QFile>
#include <QMap>
#include <QProcess>
#include <QRegularExpression>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>

#include <memory>

namespace moebench::test {

struct HostCommand {
  int code;  // -1: it did not end within the time given (it was killed)
  QString out, err;
};

class NetnsHosts {
 public:
  NetnsHosts(int n, const QString& prefix) : prefix_(prefix), n_(n) {
    if (!dir_.isValid()) {
      why_failed_ = QStringLiteral("cannot create a temporary folder");
      return;
    }
    QProcess p;
    p.start(script(), {QStringLiteral("up"), dir_.path(), QString::number(n), prefix});
    if (!p.waitForFinished(120000)) {
      p.kill();
      p.waitForFinished(5000);
      why_failed_ = QStringLiteral("netns-hosts.sh up did not end within 120 s");
      return;
    }
    const QString err = QString::fromUtf8(p.readAllStandardError()).trimmed();
    if (p.exitStatus() != QProcess::NormalExit || p.exitCode() == 1) why_failed_ = err;
    else if (p.exitCode() != 0) skip_reason_ = err.isEmpty() ? QStringLiteral("netns-hosts.sh up failed") : err;
    else read_env();
  }
  ~NetnsHosts() { down(); }
  NetnsHosts(const NetnsHosts&) = delete;
  NetnsHosts& operator=(const NetnsHosts&) = delete;

  bool up() const { return skip_reason_.isEmpty() && why_failed_.isEmpty(); }
  QString skip_reason() const { return skip_reason_; }  // cannot exist here: QSKIP with it
  QString why_failed() const { return why_failed_; }    // should have come up: a failure

  // Takes the hosts down (idempotent); true when the script said so.
  bool down() {
    if (downed_ || !dir_.isValid()) return true;
    downed_ = true;
    return QProcess::execute(script(), {QStringLiteral("down"), dir_.path()}) == 0;
  }

  QString dir() const { return dir_.path(); }
  QString prefix() const { return prefix_; }
  QString name(int i) const { return prefix_ + QString::number(i); }  // 1-based
  QString network_namespace(const QString& host) const { return QStringLiteral("mbh-") + host; }
  QString address(const QString& host) const { return env_.value(QStringLiteral("ADDR_") + host); }
  QString subnet() const { return env_.value(QStringLiteral("SUBNET")); }  // a.b.c.0/24
  QString ssh_config() const { return dir_.filePath(QStringLiteral("ssh_config")); }
  // The command that reaches `host` as root over ssh: ssh -F DIR/ssh_config HOST.
  QStringList ssh(const QString& host) const {
    return {QStringLiteral("ssh"), QStringLiteral("-F"), ssh_config(), host};
  }

  // `command` run by the shell of `host` (as over `ssh host command`).
  HostCommand run(const QString& host, const QString& command, int timeout_ms = 120000) const {
    QProcess p;
    QStringList args = ssh(host);
    const QString program = args.takeFirst();
    p.start(program, args << command);
    if (!p.waitForFinished(timeout_ms)) {
      p.kill();
      p.waitForFinished(5000);
      return {-1, QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
    }
    return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
  }

  // The processes in the host's network namespace (`ip netns pids`).
  QList<qint64> pids(const QString& host) const {
    QProcess p;
    p.start(QStringLiteral("ip"), {QStringLiteral("netns"), QStringLiteral("pids"), network_namespace(host)});
    p.waitForFinished(10000);
    QList<qint64> out;
    for (const QString& line : QString::fromUtf8(p.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts))
      out << line.trimmed().toLongLong();
    return out;
  }

  // Bytes received + sent by the host's eth0 (its veth end), from its kernel counters.
  qint64 veth_bytes(const QString& host) const {
    QProcess p;
    p.start(QStringLiteral("ip"), {QStringLiteral("netns"), QStringLiteral("exec"), network_namespace(host),
                                   QStringLiteral("cat"), QStringLiteral("/sys/class/net/eth0/statistics/rx_bytes"),
                                   QStringLiteral("/sys/class/net/eth0/statistics/tx_bytes")});
    p.waitForFinished(10000);
    qint64 sum = 0;
    for (const QString& line : QString::fromUtf8(p.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts))
      sum += line.trimmed().toLongLong();
    return sum;
  }

  // Takes the host's link to the others down or up again.
  bool set_link(const QString& host, bool on) const {
    return QProcess::execute(QStringLiteral("ip"), {QStringLiteral("-n"), network_namespace(host), QStringLiteral("link"),
                                                    QStringLiteral("set"), QStringLiteral("eth0"),
                                                    on ? QStringLiteral("up") : QStringLiteral("down")}) == 0;
  }

  static QString script() { return QStringLiteral(MOEBENCH_SOURCE_DIR "/tests/cluster/netns-hosts.sh"); }

 private:
  void read_env() {
    QFile f(dir_.filePath(QStringLiteral("hosts.env")));
    if (!f.open(QIODevice::ReadOnly)) {
      why_failed_ = QStringLiteral("netns-hosts.sh wrote no hosts.env");
      return;
    }
    for (const QString& line : QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts)) {
      const int eq = line.indexOf('=');
      if (eq > 0) env_.insert(line.left(eq), line.mid(eq + 1).remove('"'));
    }
  }

  QString prefix_;
  int n_;
  QTemporaryDir dir_;
  QMap<QString, QString> env_;
  QString skip_reason_, why_failed_;
  bool downed_ = false;
};

}  // namespace moebench::test
