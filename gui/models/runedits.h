#pragma once
// RunEdits: what the run browser changes in a run store (issue 35: tags, notes, rename, delete).
// Each call opens the store read-write for just that change (a run may be writing it: SQLite's
// WAL lets both), and returns "" or the error naming the store ("cannot change runs.db: ...").
// The GUI otherwise reads stores read-only. Tags and the note are run tags, as `moebench` and
// MLflow keep them: "tags" holds the user's labels ("baseline, rerun"; normalizeTags), "note" free
// text. An empty note or label list removes nothing but stores "" (shown as none).
#include <QString>
#include <QStringList>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace moebench::gui {

// "a, b,,a , c" -> "a, b, c": trimmed, empty and repeated labels dropped, order kept.
QString normalizeTags(const QString& text);

QString renameRun(const QString& storePath, int64_t runId, const QString& name);
QString setRunTags(const QString& storePath, int64_t runId, const QString& tags);
QString setRunNote(const QString& storePath, int64_t runId, const QString& note);
// Any tag (e.g. PredictionAccuracyModel's "pair_run" = the measured run's uuid).
QString setRunTag(const QString& storePath, int64_t runId, const QString& key, const QString& value);
QString deleteRuns(const QString& storePath, const std::vector<int64_t>& runIds);

// A run's config (its canonical JSON in the store) as the TOML the editor shows: every key,
// resolved (config_to_toml). Throws std::exception when the JSON cannot be read back.
QString runConfigToml(const std::string& configJson);

// The flattened config keys (params) whose values differ between two runs, sorted by key: a
// missing key is shown as "(not set)".
struct ParamDifference {
  QString key, a, b;
};
std::vector<ParamDifference> diffParams(const std::vector<std::pair<std::string, std::string>>& a,
                                        const std::vector<std::pair<std::string, std::string>>& b);

}  // namespace moebench::gui
