#include "models/runedits.h"

#include <QObject>

#include <map>
#include <set>

#include "moebench/config/config_json.h"
#include "moebench/config/config_loader.h"
#include "moebench/store/run_store.h"

namespace moebench::gui {

namespace {

template <class F>
QString edit(const QString& storePath, F&& change) {
  try {
    RunStore store(storePath.toStdString());
    change(store);
    return {};
  } catch (const std::exception& e) {
    return QObject::tr("cannot change %1: %2").arg(storePath, QString::fromUtf8(e.what()));
  }
}

}  // namespace

QString normalizeTags(const QString& text) {
  QStringList out;
  for (const QString& part : text.split(QLatin1Char(','))) {
    const QString t = part.trimmed();
    if (!t.isEmpty() && !out.contains(t)) out << t;
  }
  return out.join(QStringLiteral(", "));
}

QString renameRun(const QString& storePath, int64_t runId, const QString& name) {
  const QString trimmed = name.trimmed();
  if (trimmed.isEmpty()) return QObject::tr("a run name cannot be empty");
  return edit(storePath, [&](RunStore& s) { s.rename_run(runId, trimmed.toStdString()); });
}

QString setRunTags(const QString& storePath, int64_t runId, const QString& tags) {
  return edit(storePath, [&](RunStore& s) { s.set_tag(runId, "tags", normalizeTags(tags).toStdString()); });
}

QString setRunNote(const QString& storePath, int64_t runId, const QString& note) {
  return edit(storePath, [&](RunStore& s) { s.set_tag(runId, "note", note.trimmed().toStdString()); });
}

QString setRunTag(const QString& storePath, int64_t runId, const QString& key, const QString& value) {
  return edit(storePath, [&](RunStore& s) { s.set_tag(runId, key.toStdString(), value.toStdString()); });
}

QString deleteRuns(const QString& storePath, const std::vector<int64_t>& runIds) {
  return edit(storePath, [&](RunStore& s) {
    for (int64_t id : runIds) s.delete_run(id);
  });
}

QString runConfigToml(const std::string& configJson) {
  return QString::fromStdString(config_to_toml(config_from_json(configJson)));
}

std::vector<ParamDifference> diffParams(const std::vector<std::pair<std::string, std::string>>& a,
                                        const std::vector<std::pair<std::string, std::string>>& b) {
  std::map<std::string, std::string> ma(a.begin(), a.end()), mb(b.begin(), b.end());
  std::set<std::string> keys;
  for (const auto& [k, v] : ma) keys.insert(k);
  for (const auto& [k, v] : mb) keys.insert(k);
  const QString unset = QObject::tr("(not set)");
  std::vector<ParamDifference> out;
  for (const auto& k : keys) {
    auto ia = ma.find(k), ib = mb.find(k);
    if (ia != ma.end() && ib != mb.end() && ia->second == ib->second) continue;
    out.push_back({QString::fromStdString(k), ia == ma.end() ? unset : QString::fromStdString(ia->second),
                   ib == mb.end() ? unset : QString::fromStdString(ib->second)});
  }
  return out;
}

}  // namespace moebench::gui
