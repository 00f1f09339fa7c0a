#pragma once
// ConfigEditor: the "Config" page — a TOML config as a form of the common keys
// (ConfigFieldsModel) beside its raw text (TomlTextEdit), with the core validator's issues
// (ConfigIssuesModel) below. Toolbar: Open, Save, Save As.
//   Form -> text: a form edit rewrites only that value in the text (set_config_value), as one
//     undo step, and validates at once.
//   Text -> form: typing re-validates 300 ms after the last key stroke; when the text is
//     well-formed TOML the form re-reads its values. Lines with issues are highlighted;
//     clicking an issue moves the text cursor to its line.
//   Validation is parse_config with the file's folder as base_dir, as `moebench run` does.
//   File errors (unreadable, not UTF-8, cannot write) are shown above the editor with the
//   path and the reason; the functions return false.
#include <QString>
#include <QTimer>
#include <QWidget>

class QAction;
class QLabel;
class QModelIndex;
class QPlainTextEdit;
class QTableView;
class ConfigDocument;
class ConfigFieldsModel;
class ConfigIssuesModel;
class TomlTextEdit;

class ConfigEditor : public QWidget {
  Q_OBJECT

 public:
  explicit ConfigEditor(QWidget* parent = nullptr);

  bool openFile(const QString& path);
  bool saveFile(const QString& path);  // emits saved(path) on success
  QString filePath() const;            // absolute; "" for a text never saved
  QString text() const;
  // Replaces the whole text (file path kept; the document becomes modified) and validates.
  void setText(const QString& text);
  // A new unsaved document holding `text` (e.g. a run's config from the run store), validated;
  // `origin` is shown as where it came from. Drops unsaved changes: callers ask first.
  void openText(const QString& text, const QString& origin);
  bool isModified() const;
  QString errorText() const { return m_error; }  // the last file error, "" after a success

  ConfigIssuesModel* issuesModel() const { return m_issues; }
  ConfigFieldsModel* fieldsModel() const { return m_fields; }
  ConfigDocument* document() const { return m_doc; }
  QPlainTextEdit* textEdit() const;
  QTableView* formView() const { return m_formView; }
  QTableView* issuesView() const { return m_issuesView; }

 public slots:
  void validateNow();  // validate without waiting for the typing pause
  void open();         // file dialog (asks before dropping unsaved changes)
  void save();         // to filePath(), else like saveAs()
  void saveAs();       // file dialog

 signals:
  void saved(const QString& path);
  void modifiedChanged(bool modified);
  void filePathChanged(const QString& path);

 private:
  void buildUi();
  void onTextEdited();                        // the user typed in the raw text
  void onFormEdited(const QString& newText);  // the form rewrote the text
  void replaceEditorText(const QString& newText);
  void goToIssue(const QModelIndex& index);
  void showError(const QString& message);
  void showInfo(const QString& message);
  void updateTitle();

  ConfigDocument* m_doc = nullptr;
  ConfigFieldsModel* m_fields = nullptr;
  ConfigIssuesModel* m_issues = nullptr;
  TomlTextEdit* m_text = nullptr;
  QTableView* m_formView = nullptr;
  QTableView* m_issuesView = nullptr;
  QLabel* m_pathLabel = nullptr;
  QLabel* m_message = nullptr;
  QLabel* m_summary = nullptr;
  QAction* m_saveAction = nullptr;
  QTimer m_validateTimer;
  bool m_syncing = false;  // the editor's text is being set by code, not typed
  QString m_error;
};
