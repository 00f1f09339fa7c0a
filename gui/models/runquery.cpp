#include "models/runquery.h"

#include <QLocale>

#include <cmath>
#include <optional>

namespace moebench::gui {

namespace {

struct Token {
  QString text;
  bool quoted = false;
  int pos = 0;
};

const QStringList kOps = {QStringLiteral("=="), QStringLiteral("!="), QStringLiteral("<="), QStringLiteral(">="),
                          QStringLiteral("!~"), QStringLiteral("="),  QStringLiteral("<"),  QStringLiteral(">"),
                          QStringLiteral("~")};

// Splits into words, quoted strings and operators; an operator may touch its neighbours
// ("train.steps>100").
std::vector<Token> tokenize(const QString& s, QString* error) {
  std::vector<Token> out;
  int i = 0;
  while (i < s.size()) {
    if (s[i].isSpace()) {
      ++i;
      continue;
    }
    if (s[i] == '"' || s[i] == '\'') {
      const QChar q = s[i];
      const int end = s.indexOf(q, i + 1);
      if (end < 0) {
        *error = QObject::tr("unterminated quote at column %1").arg(i + 1);
        return {};
      }
      out.push_back({s.mid(i + 1, end - i - 1), true, i});
      i = end + 1;
      continue;
    }
    bool op = false;
    for (const QString& o : kOps)
      if (s.mid(i, o.size()) == o) {
        out.push_back({o, false, i});
        i += int(o.size());
        op = true;
        break;
      }
    if (op) continue;
    const int start = i;
    while (i < s.size() && !s[i].isSpace() && s[i] != '"' && s[i] != '\'' && !QStringLiteral("=!<>~").contains(s[i])) ++i;
    if (i == start) {  // a lone '!'
      *error = QObject::tr("unexpected '%1' at column %2").arg(s[i]).arg(i + 1);
      return {};
    }
    out.push_back({s.mid(start, i - start), false, start});
  }
  return out;
}

bool isOp(const Token& t) { return !t.quoted && kOps.contains(t.text); }
bool isWord(const Token& t, const char* w) { return !t.quoted && t.text.compare(QLatin1String(w), Qt::CaseInsensitive) == 0; }

std::optional<double> number(const QString& s) {
  bool ok = false;
  const double v = s.trimmed().toDouble(&ok);
  if (!ok) return std::nullopt;
  return v;
}

QString formatNumber(double v) { return std::isnan(v) ? QString() : QString::number(v, 'g', 10); }

// The value of `key` for the run, or nullopt when it has none.
std::optional<QString> lookup(const QString& key, const QString& experiment, const RunListModel::RunRow& row) {
  const auto& info = row.info;
  const QString k = key.toLower();
  auto text = [](const std::string& s) { return std::optional<QString>(QString::fromStdString(s)); };
  auto num = [](double v) { return std::isnan(v) ? std::optional<QString>() : std::optional<QString>(formatNumber(v)); };
  if (k == "name") return text(info.name);
  if (k == "status") return QString::fromLatin1(moebench::run_status_name(info.status));
  if (k == "strategy") return text(info.strategy);
  if (k == "experiment") return experiment;
  if (k == "id") return QString::number(info.id);
  if (k == "steps") return QString::number(row.steps);
  if (k == "loss" || k == "final_loss") return num(row.finalLoss);
  if (k == "ms_per_step" || k == "step_ms") return num(row.stepMs);
  if (k == "tokens_per_s") return num(row.tokensPerS);
  if (k == "tags") return row.userTags;
  if (k == "note") return row.note;
  QString name = key;
  bool paramOnly = false, tagOnly = false;
  if (name.startsWith(QLatin1String("param."))) {
    name = name.mid(6);
    paramOnly = true;
  } else if (name.startsWith(QLatin1String("tag."))) {
    name = name.mid(4);
    tagOnly = true;
  }
  const std::string n = name.toStdString();
  if (!tagOnly)
    if (auto it = row.params.find(n); it != row.params.end()) return text(it->second);
  if (!paramOnly)
    if (auto it = row.tags.find(n); it != row.tags.end()) return text(it->second);
  return std::nullopt;
}

}  // namespace

RunQuery::RunQuery(const QString& text) {
  const std::vector<Token> tokens = tokenize(text, &m_error);
  if (!m_error.isEmpty()) return;
  std::vector<Clause> all;
  size_t i = 0;
  bool expectClause = true;
  while (i < tokens.size()) {
    const Token& t = tokens[i];
    if (!expectClause) {
      if (isWord(t, "and")) {
        expectClause = true;
        ++i;
        continue;
      }
      if (isWord(t, "or")) {
        m_any.push_back(std::move(all));
        all.clear();
        expectClause = true;
        ++i;
        continue;
      }
      // Two clauses side by side: an implicit "and" (several free words all have to match).
    }
    if (isOp(t)) {
      m_error = QObject::tr("'%1' at column %2 needs a key before it").arg(t.text).arg(t.pos + 1);
      m_any.clear();
      return;
    }
    if (i + 1 < tokens.size() && isOp(tokens[i + 1])) {
      if (i + 2 >= tokens.size() || isOp(tokens[i + 2])) {
        m_error = QObject::tr("'%1 %2' at column %3 needs a value after it").arg(t.text, tokens[i + 1].text).arg(t.pos + 1);
        m_any.clear();
        return;
      }
      QString op = tokens[i + 1].text;
      if (op == "==") op = "=";
      all.push_back({t.text, op, tokens[i + 2].text});
      i += 3;
    } else {
      if (!t.quoted && (isWord(t, "and") || isWord(t, "or"))) {
        m_error = QObject::tr("'%1' at column %2 needs a condition before it").arg(t.text).arg(t.pos + 1);
        m_any.clear();
        return;
      }
      all.push_back({QString(), QString(), t.text});
      ++i;
    }
    expectClause = false;
  }
  if (expectClause && !tokens.empty()) {
    m_error = QObject::tr("the query ends with '%1': a condition must follow").arg(tokens.back().text);
    m_any.clear();
    return;
  }
  if (!all.empty()) m_any.push_back(std::move(all));
}

bool RunQuery::matchClause(const Clause& c, const QString& experiment, const RunListModel::RunRow& row) {
  if (c.op.isEmpty()) {
    auto variant = row.tags.find("ablation.variant");
    const QStringList fields = {QString::fromStdString(row.info.name), QString::fromStdString(row.info.strategy),
                                experiment, QString::fromLatin1(moebench::run_status_name(row.info.status)),
                                row.userTags, row.note,
                                variant == row.tags.end() ? QString() : QString::fromStdString(variant->second)};
    for (const QString& f : fields)
      if (f.contains(c.value, Qt::CaseInsensitive)) return true;
    return false;
  }
  const std::optional<QString> have = lookup(c.key, experiment, row);
  if (!have) return false;
  if (c.op == "~") return have->contains(c.value, Qt::CaseInsensitive);
  if (c.op == "!~") return !have->contains(c.value, Qt::CaseInsensitive);
  int cmp = 0;
  const auto a = number(*have), b = number(c.value);
  if (a && b) cmp = *a < *b ? -1 : (*a > *b ? 1 : 0);
  else cmp = QString::compare(*have, c.value, Qt::CaseInsensitive);
  if (c.op == "=") return cmp == 0;
  if (c.op == "!=") return cmp != 0;
  if (c.op == "<") return cmp < 0;
  if (c.op == "<=") return cmp <= 0;
  if (c.op == ">") return cmp > 0;
  return cmp >= 0;  // ">="
}

bool RunQuery::matches(const QString& experiment, const RunListModel::RunRow& row) const {
  if (m_any.empty()) return true;
  for (const auto& all : m_any) {
    bool ok = true;
    for (const Clause& c : all) ok = ok && matchClause(c, experiment, row);
    if (ok) return true;
  }
  return false;
}

}  // namespace moebench::gui
