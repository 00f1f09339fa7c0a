#pragma once
// ConfigDocument: one config being edited, without widgets. Holds the TOML text, the file it
// came from, the dirty flag and the result of the last validation.
//   load()/save(): UTF-8 files; a file whose every line ends in CRLF is edited with '\n' and
//     written back with CRLF, so an unchanged document saves byte-identical.
//   validate(): parse_config(text, file name, {}, the file's folder) — the same resolution of
//     relative data paths as `moebench run <file>`; an unsaved document resolves against the
//     current directory. Keeps the ConfigIssues (file, line, key, message) or the resolved
//     Config, and whether the text is well-formed TOML at all.
#include <QObject>
#include <QString>

#include <optional>
#include <vector>

#include "moebench/config/config.h"
#include "moebench/config/config_loader.h"

class ConfigDocument : public QObject {
  Q_OBJECT

 public:
  explicit ConfigDocument(QObject* parent = nullptr);

  QString text() const { return m_text; }
  // Replaces the text; the document becomes dirty when it differs. Does not validate.
  void setText(const QString& text);
  QString filePath() const { return m_path; }
  bool isDirty() const { return m_dirty; }

  // Reads `path`; on failure returns false, keeps the document as it was and sets
  // errorString() to "Cannot open <path>: <reason>".
  bool load(const QString& path);
  // Writes the text to `path` (atomically); on success it becomes filePath() and the document
  // is clean; on failure returns false with errorString() "Cannot save <path>: <reason>".
  bool save(const QString& path);
  QString errorString() const { return m_error; }
  // An unsaved document holding `text` (no file path: saving asks for one); dirty when not empty.
  void newDocument(const QString& text);

  // Validates the current text (see above) and emits validated().
  void validate();
  const std::vector<moebench::ConfigIssue>& issues() const { return m_issues; }
  bool isValid() const { return m_config.has_value(); }
  bool hasSyntaxError() const { return !m_syntaxError.isEmpty(); }
  // The resolved config of the last validate(), when it had no issues.
  const moebench::Config* config() const { return m_config ? &*m_config : nullptr; }
  QString sourceName() const;  // the file's name, "untitled.toml" before the first save
  QString baseDir() const;     // the file's folder, else the current directory

 signals:
  void textChanged(const QString& text);
  void dirtyChanged(bool dirty);
  void filePathChanged(const QString& path);
  void validated();

 private:
  void setDirty(bool dirty);

  QString m_text;
  QString m_path;
  bool m_dirty = false;
  bool m_crlf = false;  // the file's lines end in "\r\n"
  QString m_error;
  std::vector<moebench::ConfigIssue> m_issues;
  std::optional<moebench::Config> m_config;
  QString m_syntaxError;
};
