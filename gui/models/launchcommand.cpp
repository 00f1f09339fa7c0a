#include "models/launchcommand.h"

#include <QRegularExpression>
#include <stdexcept>

namespace moebench::gui {

QString shellQuote(const QString& s) {
  QString out;
  out.reserve(s.size() + 2);
  out += QLatin1Char('\'');
  for (QChar c : s) {
    if (c == QLatin1Char('\''))
      out += QStringLiteral("'\\''");
    else
      out += c;
  }
  out += QLatin1Char('\'');
  return out;
}

namespace {
bool isMeta(QChar c) {
  static const QString meta = QStringLiteral(";|&`$()<>\\\n\r");
  return meta.contains(c);
}
}  // namespace

QStringList splitPrefix(const QString& prefix) {
  QStringList words;
  QString cur;
  bool inWord = false;
  QChar quote;  // null when not inside quotes
  for (QChar c : prefix) {
    if (isMeta(c))
      throw std::invalid_argument(
          QStringLiteral("launcher prefix contains the shell metacharacter '%1'; only plain words "
                         "and simple '...' or \"...\" quoting are allowed")
              .arg(c == QLatin1Char('\n') ? QStringLiteral("\\n") : QString(c))
              .toStdString());
    if (!quote.isNull()) {
      if (c == quote)
        quote = QChar();
      else
        cur += c;
      continue;
    }
    if (c == QLatin1Char('\'') || c == QLatin1Char('"')) {
      quote = c;
      inWord = true;
    } else if (c.isSpace()) {
      if (inWord) words << cur;
      cur.clear();
      inWord = false;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (!quote.isNull())
    throw std::invalid_argument(
        QStringLiteral("launcher prefix has an unterminated %1 quote").arg(quote).toStdString());
  if (inWord) words << cur;
  return words;
}

QString validatePrefix(const QString& prefix) {
  try {
    splitPrefix(prefix);
    return {};
  } catch (const std::invalid_argument& e) {
    return QString::fromStdString(e.what());
  }
}

QStringList runArguments(const LaunchSpec& spec) {
  // A config path that starts with '-' would be read as an option: make it ./-name.
  const QString config = spec.configPath.startsWith(QLatin1Char('-')) ? QStringLiteral("./") + spec.configPath : spec.configPath;
  QStringList a{QStringLiteral("run"), config};
  for (const QString& s : spec.sets) a << QStringLiteral("--set") << s;
  if (spec.steps > 0) a << QStringLiteral("--steps") << QString::number(spec.steps);
  if (spec.ranks > 0) a << QStringLiteral("--ranks") << QString::number(spec.ranks);
  if (!spec.db.isEmpty()) a << QStringLiteral("--db") << spec.db;
  if (!spec.experiment.isEmpty()) a << QStringLiteral("--experiment") << spec.experiment;
  if (!spec.outDir.isEmpty()) a << QStringLiteral("--out") << spec.outDir;
  if (spec.overwrite) a << QStringLiteral("--overwrite");
  return a;
}

Command buildLocalCommand(const LaunchSpec& spec) { return {spec.moebenchPath, runArguments(spec)}; }

QString quoteRemotePath(const QString& path) {
  if (path == QLatin1String("~")) return path;
  if (path.startsWith(QLatin1String("~/")))
    return path.size() == 2 ? path : QStringLiteral("~/") + shellQuote(path.mid(2));
  return shellQuote(path);
}

QString remoteShellCommand(const LaunchSpec& spec) {
  QStringList words;
  for (const QString& w : splitPrefix(spec.launcherPrefix)) words << shellQuote(w);
  words << shellQuote(spec.remoteMoebench.isEmpty() ? QStringLiteral("moebench") : spec.remoteMoebench);
  for (const QString& a : runArguments(spec)) words << shellQuote(a);
  QString cmd = words.join(QLatin1Char(' '));
  if (!spec.remoteDir.isEmpty()) cmd = QStringLiteral("cd ") + quoteRemotePath(spec.remoteDir) + QStringLiteral(" && ") + cmd;
  return cmd;
}

void checkHost(const QString& host) {
  if (host.trimmed().isEmpty()) throw std::invalid_argument("remote launch needs a host");
  if (host.startsWith(QLatin1Char('-')))
    throw std::invalid_argument("remote host must not start with '-'");
}

QStringList sshOptionWords(const QString& options) {
  const QStringList words = splitPrefix(options);
  for (int i = 0; i < words.size(); ++i) {
    const QString& w = words[i];
    const QString value = w == QLatin1String("-o") ? words.value(i + 1) : w.startsWith(QLatin1String("-o")) ? w.mid(2) : QString();
    if (value.indexOf(QLatin1Char('=')) < 1)
      throw std::invalid_argument("ssh options: only -o Key=Value options are accepted (ssh and scp share them); "
                                  "'" + w.toStdString() + "' is not one");
    if (w == QLatin1String("-o")) ++i;
  }
  return words;
}

Command buildRemoteCommand(const LaunchSpec& spec) {
  checkHost(spec.host);
  QStringList args{QStringLiteral("-tt"), QStringLiteral("-o"), QStringLiteral("BatchMode=yes")};
  args << sshOptionWords(spec.sshOptions) << spec.host << QStringLiteral("--") << remoteShellCommand(spec);
  return {QStringLiteral("ssh"), args};
}

QString remoteDbPath(const LaunchSpec& spec) {
  const QString db = spec.db.isEmpty() ? QStringLiteral("runs.db") : spec.db;
  if (db.startsWith(QLatin1Char('/')) || spec.remoteDir.isEmpty()) return db;
  QString dir = spec.remoteDir;
  if (!dir.endsWith(QLatin1Char('/'))) dir += QLatin1Char('/');
  return dir + db;
}

Command buildFetchDbCommand(const LaunchSpec& spec, const QString& localPath) {
  checkHost(spec.host);
  QStringList args{QStringLiteral("-O"), QStringLiteral("-T"), QStringLiteral("-o"), QStringLiteral("BatchMode=yes")};
  args << sshOptionWords(spec.sshOptions) << spec.host + QLatin1Char(':') + quoteRemotePath(remoteDbPath(spec))
       << localPath;
  return {QStringLiteral("scp"), args};
}

QString displayCommand(const Command& command) {
  static const QRegularExpression plain(QStringLiteral(R"(^[A-Za-z0-9_./=:@%+,-]+$)"));
  QStringList words;
  for (const QString& w : QStringList{command.program} + command.arguments)
    words << (plain.match(w).hasMatch() ? w : shellQuote(w));
  return words.join(QLatin1Char(' '));
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
