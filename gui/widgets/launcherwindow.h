#pragma once
// LauncherWindow: the "Launch" page. A form for one `moebench run` (local, or remote over ssh
// with an optional launcher prefix such as `srun -N2`), Start / Cancel, the exact command it
// will run (quoted as a shell line, updated as the form changes: `moebench run ...` locally,
// `moebench launch HOST ...` for a remote run), a progress bar and the live log (capped to
// kMaxLogLines lines; it follows the newest line unless scrolled up, and ends with the outcome).
// The config is a local file in both modes: a remote run uploads it, and its run is imported into
// the "Local store" (the open store by default). The process work is a moebench::gui::LaunchSession;
// this widget only turns the form into a LaunchSpec and shows what the session reports.
// Invalid input (no config, an empty host, a launcher prefix with shell metacharacters, a
// --set line that is not key=value, ...) is shown in red and nothing is started; the launcher
// prefix is checked as it is typed. When a run ends, runStoreUpdated(dbPath) names the local
// database that holds it (see LaunchSession for which file that is).
#include <QWidget>

#include <functional>

#include "models/launchcommand.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTimer;
class QGroupBox;
namespace moebench::gui {
class LaunchSession;
}

class LauncherWindow : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kMaxLogLines = 10000;

  explicit LauncherWindow(QWidget* parent = nullptr);

  // The form as a launch spec / the form filled from one.
  moebench::gui::LaunchSpec spec() const;
  void setSpec(const moebench::gui::LaunchSpec& spec);
  // What is wrong with the form ("" when it can be started).
  QString validationError() const;
  moebench::gui::LaunchSession* session() const { return m_session; }
  // Called by start() after validation; returning false starts nothing (the main window asks
  // to save an edited config first).
  void setBeforeStart(std::function<bool(const moebench::gui::LaunchSpec&)> check) { m_beforeStart = std::move(check); }

  // The moebench beside the GUI (applicationDirPath()/moebench), else the build tree's
  // (applicationDirPath()/../cli/moebench), else the one in PATH, else "moebench".
  static QString defaultMoebenchPath();

  QString commandText() const;  // the command shown (as a shell line)
  QString errorText() const;    // the validation / start error shown ("" when none)
  QString statusText() const;   // e.g. "finished (exit 0)"
  QPlainTextEdit* logView() const { return m_log; }
  QProgressBar* progressBar() const { return m_progress; }

 public slots:
  void setConfigPath(const QString& path);
  // The local store a remote run is imported into, when none was entered (the open store).
  void setLocalStore(const QString& path);
  // Validates and starts; false (with the reason shown) when nothing was started.
  bool start();
  void cancel();

 signals:
  void runStoreUpdated(const QString& dbPath);

 private:
  QWidget* buildRunForm();
  QWidget* buildRemoteForm();
  QWidget* withBrowse(QLineEdit* edit, bool save, const QString& filter);
  void updateMode();
  void updatePreview();
  void setRunning(bool running);
  void appendLog(const QString& line);
  void flushLog();
  void onProgress(int step, int total, double loss);
  void onFinished(int exitCode, const QString& status, const QString& dbPath);

  moebench::gui::LaunchSession* m_session = nullptr;
  QComboBox* m_mode = nullptr;
  QLineEdit* m_moebench = nullptr;
  QLineEdit* m_config = nullptr;
  QSpinBox* m_steps = nullptr;
  QSpinBox* m_ranks = nullptr;
  QPlainTextEdit* m_sets = nullptr;
  QLineEdit* m_db = nullptr;
  QLineEdit* m_experiment = nullptr;
  QCheckBox* m_overwrite = nullptr;
  QGroupBox* m_remoteBox = nullptr;
  QLineEdit* m_host = nullptr;
  QLineEdit* m_sshOptions = nullptr;
  QLineEdit* m_remoteDir = nullptr;
  QLineEdit* m_prefix = nullptr;
  QLabel* m_prefixError = nullptr;
  QLineEdit* m_remoteMoebench = nullptr;
  QLineEdit* m_localDb = nullptr;
  QLabel* m_command = nullptr;
  QLabel* m_error = nullptr;
  QLabel* m_status = nullptr;
  QPushButton* m_start = nullptr;
  QPushButton* m_cancel = nullptr;
  QProgressBar* m_progress = nullptr;
  QPlainTextEdit* m_log = nullptr;
  QStringList m_pendingLog;
  QTimer* m_logTimer = nullptr;
  bool m_followLog = true;  // the log is scrolled to its end: keep it there
  std::function<bool(const moebench::gui::LaunchSpec&)> m_beforeStart;
};
