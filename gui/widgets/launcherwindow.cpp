#include "widgets/launcherwindow.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QRegularExpression>
#include <QPushButton>
#include <QScrollBar>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTimer>
#include <QVBoxLayout>
#include <stdexcept>

#include "models/launchsession.h"

using moebench::gui::LaunchSpec;

namespace {
bool isExecutableFile(const QString& path) {
  const QFileInfo fi(path);
  return fi.isFile() && fi.isExecutable();
}

QStringList setLines(const QString& text) {
  QStringList out;
  for (const QString& line : text.split(QLatin1Char('\n'))) {
    const QString t = line.trimmed();
    if (!t.isEmpty()) out << t;
  }
  return out;
}

constexpr int kRemote = 1;  // m_mode index
}  // namespace

QString LauncherWindow::defaultMoebenchPath() {
  const QString dir = QCoreApplication::applicationDirPath();
  for (const QString& candidate : {dir + QStringLiteral("/moebench"), dir + QStringLiteral("/../cli/moebench")})
    if (isExecutableFile(candidate)) return QFileInfo(candidate).canonicalFilePath();
  const QString inPath = QStandardPaths::findExecutable(QStringLiteral("moebench"));
  return inPath.isEmpty() ? QStringLiteral("moebench") : inPath;
}

LauncherWindow::LauncherWindow(QWidget* parent)
    : QWidget(parent), m_session(new moebench::gui::LaunchSession(this)), m_logTimer(new QTimer(this)) {
  auto* forms = new QHBoxLayout;
  forms->addWidget(buildRunForm(), 1);
  forms->addWidget(buildRemoteForm(), 1);

  const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  m_command = new QLabel;
  m_command->setObjectName(QStringLiteral("command"));
  m_command->setFont(mono);
  m_command->setWordWrap(true);
  m_command->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_command->setToolTip(tr("The exact command the launcher runs (as a shell line)"));
  m_error = new QLabel;
  m_error->setObjectName(QStringLiteral("error"));
  m_error->setWordWrap(true);
  m_error->setStyleSheet(QStringLiteral("color: #c62828;"));

  m_start = new QPushButton(tr("Start"));
  m_start->setObjectName(QStringLiteral("start"));
  m_cancel = new QPushButton(tr("Cancel"));
  m_cancel->setObjectName(QStringLiteral("cancel"));
  m_cancel->setEnabled(false);
  m_progress = new QProgressBar;
  m_progress->setRange(0, 1);
  m_progress->setValue(0);
  m_progress->setFormat(tr("not started"));
  m_status = new QLabel(tr("idle"));
  m_status->setObjectName(QStringLiteral("status"));
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(m_start);
  buttons->addWidget(m_cancel);
  buttons->addWidget(m_progress, 1);
  buttons->addWidget(m_status);

  m_log = new QPlainTextEdit;
  m_log->setObjectName(QStringLiteral("log"));
  m_log->setReadOnly(true);
  m_log->setFont(mono);
  m_log->setMaximumBlockCount(kMaxLogLines);
  m_log->setLineWrapMode(QPlainTextEdit::NoWrap);
  // The log follows the output while it is scrolled to its end; scrolling up stops that,
  // scrolling back to the end resumes it. (Appending only moves the range, not the value, so
  // the value changes only by the user's scrolling or by flushLog's own follow.)
  connect(m_log->verticalScrollBar(), &QScrollBar::valueChanged, this,
          [this](int value) { m_followLog = value >= m_log->verticalScrollBar()->maximum(); });

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(forms);
  layout->addWidget(m_command);
  layout->addWidget(m_error);
  layout->addLayout(buttons);
  layout->addWidget(m_log, 1);

  m_logTimer->setInterval(50);
  m_logTimer->setSingleShot(true);
  connect(m_logTimer, &QTimer::timeout, this, &LauncherWindow::flushLog);
  connect(m_start, &QPushButton::clicked, this, [this] { start(); });
  connect(m_cancel, &QPushButton::clicked, this, &LauncherWindow::cancel);
  connect(m_session, &moebench::gui::LaunchSession::started, this, [this](const QString& command) {
    m_command->setText(command);  // a remote run's: with its run folder
    appendLog(QStringLiteral("$ ") + command);
  });
  connect(m_session, &moebench::gui::LaunchSession::outputLine, this, &LauncherWindow::appendLog);
  connect(m_session, &moebench::gui::LaunchSession::progress, this, &LauncherWindow::onProgress);
  connect(m_session, &moebench::gui::LaunchSession::finished, this, &LauncherWindow::onFinished);

  for (QLineEdit* e : {m_moebench, m_config, m_db, m_experiment, m_host, m_sshOptions, m_remoteDir, m_prefix, m_remoteMoebench, m_localDb})
    connect(e, &QLineEdit::textChanged, this, &LauncherWindow::updatePreview);
  for (QSpinBox* s : {m_steps, m_ranks}) connect(s, &QSpinBox::valueChanged, this, &LauncherWindow::updatePreview);
  connect(m_sets, &QPlainTextEdit::textChanged, this, &LauncherWindow::updatePreview);
  connect(m_overwrite, &QCheckBox::toggled, this, &LauncherWindow::updatePreview);
  connect(m_mode, &QComboBox::currentIndexChanged, this, &LauncherWindow::updateMode);
  updateMode();
}

QWidget* LauncherWindow::withBrowse(QLineEdit* edit, bool save, const QString& filter) {
  auto* box = new QWidget;
  auto* row = new QHBoxLayout(box);
  row->setContentsMargins(0, 0, 0, 0);
  row->addWidget(edit, 1);
  auto* browse = new QPushButton(tr("Browse..."));
  row->addWidget(browse);
  connect(browse, &QPushButton::clicked, this, [this, edit, save, filter] {
    const QString start = edit->text().isEmpty() ? QDir::currentPath() : edit->text();
    const QString path = save ? QFileDialog::getSaveFileName(this, tr("Choose a file"), start, filter,
                                                             nullptr, QFileDialog::DontConfirmOverwrite)
                              : QFileDialog::getOpenFileName(this, tr("Choose a file"), start, filter);
    if (!path.isEmpty()) edit->setText(path);
  });
  return box;
}

QWidget* LauncherWindow::buildRunForm() {
  auto* box = new QGroupBox(tr("Run"));
  auto* form = new QFormLayout(box);
  m_mode = new QComboBox;
  m_mode->setObjectName(QStringLiteral("mode"));
  m_mode->addItems({tr("Local"), tr("Remote (ssh)")});
  form->addRow(tr("Where"), m_mode);
  m_moebench = new QLineEdit(defaultMoebenchPath());
  m_moebench->setObjectName(QStringLiteral("moebench"));
  m_moebench->setToolTip(tr("The local moebench executable"));
  form->addRow(tr("moebench"), withBrowse(m_moebench, false, {}));
  m_config = new QLineEdit;
  m_config->setObjectName(QStringLiteral("config"));
  m_config->setPlaceholderText(tr("config .toml (remote: uploaded with the files it names)"));
  m_config->setToolTip(tr("The config to run, a file here. A remote run uploads it, and every file it names "
                          "(cluster.file, data.path, ...), into a new folder moebench-runs/<run-id> "
                          "in the host's directory and runs that copy."));
  form->addRow(tr("Config"), withBrowse(m_config, false, tr("TOML configs (*.toml);;All files (*)")));
  m_steps = new QSpinBox;
  m_steps->setObjectName(QStringLiteral("steps"));
  m_steps->setRange(0, 100000000);
  m_steps->setSpecialValueText(tr("from config"));
  form->addRow(tr("Steps"), m_steps);
  m_ranks = new QSpinBox;
  m_ranks->setObjectName(QStringLiteral("ranks"));
  m_ranks->setRange(0, 100000);
  m_ranks->setSpecialValueText(tr("from config"));
  m_ranks->setToolTip(tr("Local ranks moebench starts through mpirun (--ranks); with a launcher prefix "
                         "the prefix decides"));
  form->addRow(tr("Ranks"), m_ranks);
  m_sets = new QPlainTextEdit;
  m_sets->setObjectName(QStringLiteral("sets"));
  m_sets->setPlaceholderText(tr("key=value, one per line (--set), e.g. train.lr=1e-3"));
  m_sets->setTabChangesFocus(true);
  m_sets->setMaximumHeight(4 * m_sets->fontMetrics().lineSpacing() + 12);
  form->addRow(tr("Overrides"), m_sets);
  m_db = new QLineEdit;
  m_db->setObjectName(QStringLiteral("db"));
  m_db->setPlaceholderText(tr("runs.db (the config's [store] db)"));
  m_db->setToolTip(tr("--db: the run database (remote: on the host, relative to its directory)"));
  form->addRow(tr("Database"), withBrowse(m_db, true, tr("Run databases (*.db);;All files (*)")));
  m_experiment = new QLineEdit;
  m_experiment->setObjectName(QStringLiteral("experiment"));
  m_experiment->setPlaceholderText(tr("the config's [store] experiment"));
  form->addRow(tr("Experiment"), m_experiment);
  m_overwrite = new QCheckBox(tr("Replace the checkpoints an earlier run left in the output directory"));
  m_overwrite->setObjectName(QStringLiteral("overwrite"));
  m_overwrite->setToolTip(tr("--overwrite: without it, a run refuses an output directory that holds checkpoints"));
  form->addRow(tr("Overwrite"), m_overwrite);
  return box;
}

QWidget* LauncherWindow::buildRemoteForm() {
  m_remoteBox = new QGroupBox(tr("Remote host"));
  auto* form = new QFormLayout(m_remoteBox);
  m_host = new QLineEdit;
  m_host->setObjectName(QStringLiteral("host"));
  m_host->setPlaceholderText(tr("user@cluster (key login: ssh runs with BatchMode=yes)"));
  form->addRow(tr("Host"), m_host);
  m_sshOptions = new QLineEdit;
  m_sshOptions->setObjectName(QStringLiteral("sshOptions"));
  m_sshOptions->setPlaceholderText(tr("optional, e.g. -o Port=2222 -o ProxyJump=gateway"));
  form->addRow(tr("ssh options"), m_sshOptions);
  m_remoteDir = new QLineEdit;
  m_remoteDir->setObjectName(QStringLiteral("remoteDir"));
  m_remoteDir->setPlaceholderText(tr("working directory (empty: the login directory)"));
  form->addRow(tr("Directory"), m_remoteDir);
  m_prefix = new QLineEdit;
  m_prefix->setObjectName(QStringLiteral("prefix"));
  m_prefix->setPlaceholderText(tr("optional, e.g. srun -N2 or mpirun -np 16"));
  m_prefixError = new QLabel;
  m_prefixError->setObjectName(QStringLiteral("prefixError"));
  m_prefixError->setWordWrap(true);
  m_prefixError->setStyleSheet(QStringLiteral("color: #c62828;"));
  m_prefixError->hide();
  auto* prefixBox = new QWidget;
  auto* prefixRows = new QVBoxLayout(prefixBox);
  prefixRows->setContentsMargins(0, 0, 0, 0);
  prefixRows->addWidget(m_prefix);
  prefixRows->addWidget(m_prefixError);
  form->addRow(tr("Launcher prefix"), prefixBox);
  m_remoteMoebench = new QLineEdit(QStringLiteral("moebench"));
  m_remoteMoebench->setObjectName(QStringLiteral("remoteMoebench"));
  form->addRow(tr("Remote moebench"), m_remoteMoebench);
  m_localDb = new QLineEdit;
  m_localDb->setObjectName(QStringLiteral("localDb"));
  m_localDb->setPlaceholderText(tr("local run store the run is imported into"));
  m_localDb->setToolTip(tr("moebench launch --db: when the run ends (also when it fails or is cancelled) its "
                           "run folder's store is fetched and imported into this local store (created when "
                           "missing); the open store by default"));
  form->addRow(tr("Local store"), withBrowse(m_localDb, true, tr("Run databases (*.db);;All files (*)")));
  return m_remoteBox;
}

LaunchSpec LauncherWindow::spec() const {
  LaunchSpec s;
  s.moebenchPath = m_moebench->text().trimmed();
  s.configPath = m_config->text().trimmed();
  s.sets = setLines(m_sets->toPlainText());
  s.steps = m_steps->value();
  s.ranks = m_ranks->value();
  s.db = m_db->text().trimmed();
  s.experiment = m_experiment->text().trimmed();
  s.overwrite = m_overwrite->isChecked();
  s.remote = m_mode->currentIndex() == kRemote;
  s.host = m_host->text().trimmed();
  s.sshOptions = m_sshOptions->text().trimmed();
  s.remoteDir = m_remoteDir->text().trimmed();
  s.launcherPrefix = m_prefix->text().trimmed();
  s.remoteMoebench = m_remoteMoebench->text().trimmed();
  if (s.remoteMoebench.isEmpty()) s.remoteMoebench = QStringLiteral("moebench");
  s.localDbPath = m_localDb->text().trimmed();
  return s;
}

void LauncherWindow::setSpec(const LaunchSpec& s) {
  m_moebench->setText(s.moebenchPath);
  m_config->setText(s.configPath);
  m_sets->setPlainText(s.sets.join(QLatin1Char('\n')));
  m_steps->setValue(s.steps);
  m_ranks->setValue(s.ranks);
  m_db->setText(s.db);
  m_experiment->setText(s.experiment);
  m_overwrite->setChecked(s.overwrite);
  m_host->setText(s.host);
  m_sshOptions->setText(s.sshOptions);
  m_remoteDir->setText(s.remoteDir);
  m_prefix->setText(s.launcherPrefix);
  m_remoteMoebench->setText(s.remoteMoebench);
  m_localDb->setText(s.localDbPath);
  m_mode->setCurrentIndex(s.remote ? kRemote : 0);
  updateMode();
}

void LauncherWindow::setConfigPath(const QString& path) { m_config->setText(path); }

void LauncherWindow::setLocalStore(const QString& path) {
  if (m_localDb->text().trimmed().isEmpty()) m_localDb->setText(path);
}

QString LauncherWindow::validationError() const {
  const LaunchSpec s = spec();
  if (s.configPath.isEmpty()) return tr("No config file: choose one (Config).");
  const QStringList lines = m_sets->toPlainText().split(QLatin1Char('\n'));
  for (int i = 0; i < lines.size(); ++i) {
    const QString t = lines[i].trimmed();
    if (!t.isEmpty() && t.indexOf(QLatin1Char('=')) < 1)
      return tr("Override line %1 (\"%2\") is not key=value.").arg(i + 1).arg(t);
  }
  if (!QFileInfo::exists(s.configPath)) return tr("Config file %1 does not exist.").arg(s.configPath);
  if (!s.remote) {
    if (s.moebenchPath.isEmpty()) return tr("No moebench executable given.");
    return {};
  }
  if (s.host.isEmpty()) return tr("No remote host: enter the ssh destination, e.g. user@cluster.");
  if (s.host.startsWith(QLatin1Char('-'))) return tr("Remote host must not start with '-'.");
  if (s.host.contains(QRegularExpression(QStringLiteral("\\s"))))
    return tr("Remote host \"%1\" contains whitespace.").arg(s.host);
  if (const QString e = moebench::gui::validatePrefix(s.launcherPrefix); !e.isEmpty())
    return tr("Bad launcher prefix: %1.").arg(e);
  try {
    moebench::gui::sshOptionValues(s.sshOptions);
  } catch (const std::invalid_argument& e) {
    return tr("Bad ssh options: %1.").arg(QString::fromUtf8(e.what()));
  }
  if (s.moebenchPath.isEmpty()) return tr("No moebench executable given (a remote run is started by moebench launch).");
  if (s.localDbPath.isEmpty()) return tr("No local store to import the run into (Local store).");
  return {};
}

QString LauncherWindow::commandText() const { return m_command->text(); }
QString LauncherWindow::errorText() const { return m_error->text(); }
QString LauncherWindow::statusText() const { return m_status->text(); }

void LauncherWindow::updateMode() {
  const bool remote = m_mode->currentIndex() == kRemote;
  m_remoteBox->setEnabled(remote && !m_session->isRunning());
  m_db->parentWidget()->setEnabled(!remote && !m_session->isRunning());  // a remote run's store: Local store
  updatePreview();
}

void LauncherWindow::updatePreview() {
  const QString prefixError = moebench::gui::validatePrefix(m_prefix->text());
  m_prefixError->setText(prefixError);
  m_prefixError->setVisible(!prefixError.isEmpty());
  if (m_session->isRunning()) return;  // keep showing what runs
  const LaunchSpec s = spec();
  try {
    m_command->setText(moebench::gui::displayCommand(s.remote ? moebench::gui::buildRemoteCommand(s)
                                                              : moebench::gui::buildLocalCommand(s)));
  } catch (const std::invalid_argument&) {
    m_command->setText(QString());
  }
  if (!m_error->text().isEmpty()) m_error->setText(validationError());  // clears once fixed
}

bool LauncherWindow::start() {
  if (m_session->isRunning()) {
    m_error->setText(tr("A run is in progress: cancel it first."));
    return false;
  }
  const QString error = validationError();
  m_error->setText(error);
  if (!error.isEmpty()) return false;
  if (m_beforeStart && !m_beforeStart(spec())) return false;
  updatePreview();
  const LaunchSpec s = spec();
  m_progress->setRange(0, s.steps > 0 ? s.steps : 1);
  m_progress->setValue(0);
  m_progress->setFormat(QStringLiteral("step %v / %m"));
  if (!m_log->document()->isEmpty() || !m_pendingLog.isEmpty()) appendLog(QString());
  const bool started = m_session->start(s);  // started(): "$ command" into the log
  flushLog();
  if (!started) {
    m_status->setText(tr("not started"));
    return false;  // finished() with the reason follows
  }
  if (!m_session->isRunning()) return false;  // failed at once: finished() has already reported it
  m_status->setText(tr("running"));
  setRunning(true);
  return true;
}

void LauncherWindow::cancel() {
  if (!m_session->isRunning()) return;
  m_status->setText(tr("cancelling..."));
  m_session->cancel();
}

void LauncherWindow::setRunning(bool running) {
  m_start->setEnabled(!running);
  m_cancel->setEnabled(running);
  const std::initializer_list<QWidget*> form = {m_mode,  m_config->parentWidget(), m_steps,
                                                m_ranks, m_db->parentWidget(),     m_experiment,
                                                m_overwrite};
  for (QWidget* w : form) w->setEnabled(!running);
  m_sets->setReadOnly(running);
  updateMode();
}

void LauncherWindow::appendLog(const QString& line) {
  m_pendingLog << line;
  if (m_pendingLog.size() > kMaxLogLines) m_pendingLog.erase(m_pendingLog.begin(), m_pendingLog.end() - kMaxLogLines);
  if (!m_logTimer->isActive()) m_logTimer->start();
}

void LauncherWindow::flushLog() {
  m_logTimer->stop();
  if (m_pendingLog.isEmpty()) return;
  const bool follow = m_followLog;
  m_log->appendPlainText(m_pendingLog.join(QLatin1Char('\n')));
  m_pendingLog.clear();
  if (follow) {
    QScrollBar* bar = m_log->verticalScrollBar();
    bar->setValue(bar->maximum());
    m_followLog = true;  // (also when the range did not move)
  }
}

void LauncherWindow::onProgress(int step, int total, double loss) {
  if (total > 0 && m_progress->maximum() != total) m_progress->setRange(0, total);
  m_progress->setValue(step);
  m_status->setText(tr("step %1/%2, loss %3").arg(step).arg(total).arg(loss, 0, 'f', 4));
}

void LauncherWindow::onFinished(int exitCode, const QString& status, const QString& dbPath) {
  // The outcome as the log's last line, so what failed is read where the output is.
  appendLog(QStringLiteral("moebench-gui: ") + (exitCode >= 0 ? tr("%1 (exit %2)").arg(status).arg(exitCode) : status));
  flushLog();
  if (status == QLatin1String("finished")) m_progress->setValue(m_progress->maximum());
  m_status->setText(exitCode >= 0 ? tr("%1 (exit %2)").arg(status).arg(exitCode) : status);
  setRunning(false);  // (re-validates the form: set the error after it)
  if (status.startsWith(QLatin1String("could not start")) || status == QLatin1String("bad config"))
    m_error->setText(status == QLatin1String("bad config") ? tr("Bad config: see the log.") : status);
  if (!dbPath.isEmpty()) emit runStoreUpdated(dbPath);
}
