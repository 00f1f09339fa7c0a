#include "models/launchcommand.h"

#include "moebench/remote/remote_shell.h"

#include <QRegularExpression>
#include <stdexcept>

namespace moebench::gui {

namespace {
QString fromStd(const std::string& s) { return QString::fromStdString(s); }
}  // namespace

QString shellQuote(const QString& s) { return fromStd(remote::shell_quote(s.toStdString())); }

QStringList splitPrefix(const QString& prefix) {
  QStringList words;
  for (const std::string& w : remote::split_launcher_prefix(prefix.toStdString())) words << fromStd(w);
  return words;
}

QString validatePrefix(const QString& prefix) {
  try {
    splitPrefix(prefix);
    return {};
  } catch (const std::invalid_argument& e) {
    return QString::fromUtf8(e.what());
  }
}

void checkHost(const QString& host) { remote::check_ssh_host(host.toStdString()); }

QStringList sshOptionValues(const QString& options) {
  const QStringList words = splitPrefix(options);
  QStringList values;
  for (int i = 0; i < words.size(); ++i) {
    const QString& w = words[i];
    const QString value = w == QLatin1String("-o") ? words.value(i + 1) : w.startsWith(QLatin1String("-o")) ? w.mid(2) : QString();
    if (value.indexOf(QLatin1Char('=')) < 1)
      throw std::invalid_argument("ssh options: only -o Key=Value options are accepted (ssh and scp share them); "
                                  "'" + w.toStdString() + "' is not one");
    remote::check_ssh_option(value.toStdString());
    values << value;
    if (w == QLatin1String("-o")) ++i;
  }
  return values;
}

namespace {
// A path that starts with '-' would be read as an option: make it ./-name.
QString notAnOption(const QString& path) { return path.startsWith(QLatin1Char('-')) ? QStringLiteral("./") + path : path; }

void addCommonRunOptions(QStringList& a, const LaunchSpec& spec) {
  for (const QString& s : spec.sets) a << QStringLiteral("--set") << s;
  if (spec.steps > 0) a << QStringLiteral("--steps") << QString::number(spec.steps);
  if (spec.ranks > 0) a << QStringLiteral("--ranks") << QString::number(spec.ranks);
}
}  // namespace

QStringList runArguments(const LaunchSpec& spec) {
  QStringList a{QStringLiteral("run"), notAnOption(spec.configPath)};
  addCommonRunOptions(a, spec);
  if (!spec.db.isEmpty()) a << QStringLiteral("--db") << spec.db;
  if (!spec.experiment.isEmpty()) a << QStringLiteral("--experiment") << spec.experiment;
  if (!spec.outDir.isEmpty()) a << QStringLiteral("--out") << spec.outDir;
  if (spec.overwrite) a << QStringLiteral("--overwrite");
  return a;
}

Command buildLocalCommand(const LaunchSpec& spec) { return {spec.moebenchPath, runArguments(spec)}; }

QStringList launchArguments(const LaunchSpec& spec) {
  checkHost(spec.host);
  splitPrefix(spec.launcherPrefix);  // throws for a bad prefix
  // Options first, then "--" and the two positionals: a host or config starting with '-' is never
  // read as an option (the host is refused by checkHost anyway).
  QStringList options;
  if (!spec.remoteDir.isEmpty()) options << QStringLiteral("--dir") << spec.remoteDir;
  if (!spec.launcherPrefix.trimmed().isEmpty()) options << QStringLiteral("--prefix") << spec.launcherPrefix;
  if (!spec.remoteMoebench.isEmpty()) options << QStringLiteral("--remote-moebench") << spec.remoteMoebench;
  for (const QString& o : sshOptionValues(spec.sshOptions)) options << QStringLiteral("--ssh-option") << o;
  addCommonRunOptions(options, spec);
  if (!spec.experiment.isEmpty()) options << QStringLiteral("--experiment") << spec.experiment;
  if (!spec.outDir.isEmpty()) options << QStringLiteral("--out") << spec.outDir;
  if (spec.overwrite) options << QStringLiteral("--overwrite");
  if (!spec.localDbPath.isEmpty()) options << QStringLiteral("--db") << spec.localDbPath;
  return QStringList{QStringLiteral("launch")} + options + QStringList{QStringLiteral("--"), spec.host, spec.configPath};
}

Command buildRemoteCommand(const LaunchSpec& spec) { return {spec.moebenchPath, launchArguments(spec)}; }

QString displayCommand(const Command& command) {
  std::vector<std::string> words{command.program.toStdString()};
  for (const QString& w : command.arguments) words.push_back(w.toStdString());
  return fromStd(remote::display_command(words));
}

std::optional<ProgressLine> parseProgressLine(const QString& line) {
  static const QRegularExpression stepRe(
      QStringLiteral(R"(^\s*step\s+(\d+)\s*/\s*(\d+)\s*\|\s*loss\s+([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf)))"),
      QRegularExpression::CaseInsensitiveOption);
  static const QRegularExpression doneRe(QStringLiteral(R"(^\s*done:\s+(\d+)\s+steps\b)"));
  static const QRegularExpression finalLossRe(
      QStringLiteral(R"(final train loss\s+([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf)))"),
      QRegularExpression::CaseInsensitiveOption);
  if (const auto m = stepRe.match(line); m.hasMatch()) {
    ProgressLine p;
    p.step = m.captured(1).toLong();
    p.total = m.captured(2).toLong();
    p.loss = m.captured(3).toDouble();
    return p;
  }
  if (const auto m = doneRe.match(line); m.hasMatch()) {
    ProgressLine p;
    p.done = true;
    p.step = p.total = m.captured(1).toLong();
    if (const auto f = finalLossRe.match(line); f.hasMatch()) p.loss = f.captured(1).toDouble();
    return p;
  }
  return std::nullopt;
}

}  // namespace moebench::gui
