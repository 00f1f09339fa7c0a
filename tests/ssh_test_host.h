#pragma once
// A host to launch on over ssh, for the remote launch suites (tst_cli_launch, tst_launch_remote).
// Where network namespaces can be made (tests/netns_hosts.h: root, iproute2, openssh), it is one
// of those hosts: an sshd daemon at its own address in a network + UTS namespace, with a host
// name of its own (PREFIX1), reached as PREFIX1 with -o HostName=<its address> and its key.
// Where they cannot exist here, it falls back to an sshd started per connection as ssh's
// ProxyCommand (`sshd -i`, host "localhost": real ssh, scp, pty and login shell, no daemon, no
// port). Either way the host shares this machine's file system, so a suite checks the remote
// side's files directly. Needs openssh-server and openssh-client: setUp gives the reason to skip
// otherwise.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QString>
#include <QStringList>

#include <QSysInfo>

#include <unistd.h>

#include <memory>

#include "netns_hosts.h"

namespace moebench::test {

struct SshTestHost {
  QString host = QStringLiteral("localhost");
  QStringList options;  // ssh -o options, "Key=Value" each
  QString hostname;     // what `hostname` prints on the host (the run store's RunInfo::host)
  QString kind;         // "network namespace" or "ProxyCommand sshd", and why the fallback

  // "" when the host answers `hostname`; else why not. Tools missing: *skip says why (the suite
  // skips). `prefix`: the suite's own host name prefix (letters only).
  QString setUp(const QString& dir, QString* skip, const QString& prefix) {
    netns_ = std::make_unique<NetnsHosts>(1, prefix);
    if (netns_->up()) {
      host = netns_->name(1);
      hostname = host;
      options = {QStringLiteral("HostName=") + netns_->address(host), QStringLiteral("User=root"),
                 QStringLiteral("IdentityFile=") + netns_->dir() + QStringLiteral("/id_ed25519"),
                 QStringLiteral("IdentitiesOnly=yes"), QStringLiteral("StrictHostKeyChecking=no"),
                 QStringLiteral("UserKnownHostsFile=/dev/null"), QStringLiteral("LogLevel=ERROR"),
                 QStringLiteral("ConnectTimeout=10")};
      kind = QStringLiteral("network namespace host %1 at %2").arg(host, netns_->address(host));
      return check();
    }
    if (!netns_->why_failed().isEmpty()) return QStringLiteral("the namespace hosts did not come up: ") + netns_->why_failed();
    kind = QStringLiteral("ProxyCommand sshd (no namespace hosts here: %1)").arg(netns_->skip_reason());
    netns_.reset();
    hostname = QSysInfo::machineHostName();
    return setUpProxy(dir, skip);
  }

 private:
  std::unique_ptr<NetnsHosts> netns_;

  QString check() const {
    QStringList args;
    for (const QString& o : options) args << QStringLiteral("-o") << o;
    QProcess ssh;
    ssh.start(QStringLiteral("ssh"), args << QStringLiteral("-o") << QStringLiteral("BatchMode=yes") << host
                                          << QStringLiteral("hostname"));
    if (!ssh.waitForFinished(30000)) return QStringLiteral("ssh to the test host did not end");
    const QString got = QString::fromUtf8(ssh.readAllStandardOutput()).trimmed();
    if (got != hostname)
      return QStringLiteral("ssh to the test host %1 answered '%2' (%3)").arg(host, got, QString::fromUtf8(ssh.readAllStandardError()));
    return {};
  }

  QString setUpProxy(const QString& dir, QString* skip) {
    for (const char* tool : {"/usr/sbin/sshd", "/usr/bin/ssh", "/usr/bin/scp", "/usr/bin/ssh-keygen"})
      if (!QFileInfo(QString::fromUtf8(tool)).isExecutable()) {
        *skip = QStringLiteral("%1 is not installed (openssh-server / openssh-client): the remote launch is not exercised")
                    .arg(QString::fromUtf8(tool));
        return {};
      }
    if (geteuid() == 0 && !QFileInfo::exists(QStringLiteral("/run/sshd")))
      QDir().mkpath(QStringLiteral("/run/sshd"));  // sshd's privilege separation directory
    const QString hostKey = dir + QStringLiteral("/host_key"), clientKey = dir + QStringLiteral("/client_key");
    for (const QString& key : {hostKey, clientKey})
      if (!run(QStringLiteral("ssh-keygen"), {"-q", "-t", "ed25519", "-N", "", "-f", key})) return "ssh-keygen failed for " + key;
    if (!QFile::copy(clientKey + QStringLiteral(".pub"), dir + QStringLiteral("/authorized_keys"))) return "cannot write authorized_keys";
    const QString config = dir + QStringLiteral("/sshd_config");
    QFile f(config);
    if (!f.open(QIODevice::WriteOnly)) return "cannot write " + config;
    f.write(QStringLiteral("HostKey %1\nAuthorizedKeysFile %2\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n"
                           "KbdInteractiveAuthentication no\nPermitRootLogin yes\nPidFile none\nLogLevel ERROR\n")
                .arg(hostKey, dir + QStringLiteral("/authorized_keys"))
                .toUtf8());
    f.close();
    options = {QStringLiteral("ProxyCommand=/usr/sbin/sshd -i -f ") + config, QStringLiteral("StrictHostKeyChecking=no"),
               QStringLiteral("UserKnownHostsFile=/dev/null"), QStringLiteral("IdentityFile=") + clientKey,
               QStringLiteral("LogLevel=ERROR")};
    return check();
  }

 public:
  // --ssh-option OPT for each option (the arguments of `moebench launch`).
  QStringList launchOptions() const {
    QStringList out;
    for (const QString& o : options) out << QStringLiteral("--ssh-option") << o;
    return out;
  }

 private:
  static bool run(const QString& program, const QStringList& args) {
    QProcess p;
    p.start(program, args);
    return p.waitForFinished(30000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
  }
};

}  // namespace moebench::test
