#include "widgets/configeditor.h"

#include <QAction>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QMap>
#include <QMessageBox>
#include <QSplitter>
#include <QTableView>
#include <QTextBlock>
#include <QTextCursor>
#include <QToolBar>
#include <QVBoxLayout>

#include "models/configdocument.h"
#include "models/configfieldsmodel.h"
#include "models/configissuesmodel.h"
#include "widgets/configfielddelegate.h"
#include "widgets/tomltextedit.h"

namespace {
constexpr int kValidateDelayMs = 300;  // after the last key stroke
}

ConfigEditor::ConfigEditor(QWidget* parent) : QWidget(parent) {
  m_doc = new ConfigDocument(this);
  m_fields = new ConfigFieldsModel(this);
  m_issues = new ConfigIssuesModel(this);
  m_validateTimer.setSingleShot(true);
  m_validateTimer.setInterval(kValidateDelayMs);
  connect(&m_validateTimer, &QTimer::timeout, this, &ConfigEditor::validateNow);
  buildUi();

  connect(m_text, &QPlainTextEdit::textChanged, this, &ConfigEditor::onTextEdited);
  connect(m_fields, &ConfigFieldsModel::textEdited, this, &ConfigEditor::onFormEdited);
  connect(m_fields, &ConfigFieldsModel::editFailed, this, &ConfigEditor::showError);
  connect(m_issuesView, &QTableView::clicked, this, &ConfigEditor::goToIssue);
  connect(m_issuesView, &QTableView::activated, this, &ConfigEditor::goToIssue);
  connect(m_formView, &QTableView::clicked, this, [this](const QModelIndex& index) {
    const int line = index.data(ConfigFieldsModel::LineRole).toInt();
    if (line > 0) m_text->goToLine(line);
  });
  connect(m_doc, &ConfigDocument::dirtyChanged, this, [this](bool dirty) {
    updateTitle();
    emit modifiedChanged(dirty);
  });
  connect(m_doc, &ConfigDocument::filePathChanged, this, [this](const QString& path) {
    updateTitle();
    emit filePathChanged(path);
  });
  updateTitle();
  validateNow();
}

void ConfigEditor::buildUi() {
  auto* toolbar = new QToolBar(this);
  toolbar->setToolButtonStyle(Qt::ToolButtonTextOnly);
  auto* openAction = toolbar->addAction(tr("Open…"), this, &ConfigEditor::open);
  m_saveAction = toolbar->addAction(tr("Save"), this, &ConfigEditor::save);
  auto* saveAsAction = toolbar->addAction(tr("Save As…"), this, &ConfigEditor::saveAs);
  openAction->setToolTip(tr("Open a TOML config"));
  m_saveAction->setToolTip(tr("Save the config (Ctrl+S while editing)"));
  saveAsAction->setToolTip(tr("Save the config under a new name"));
  // Ctrl+O is left to the main window (File > Open run store): an editor-wide Ctrl+O would
  // make that shortcut ambiguous while the editor has focus.
  m_saveAction->setShortcut(QKeySequence::Save);
  saveAsAction->setShortcut(QKeySequence::SaveAs);
  for (QAction* a : {m_saveAction, saveAsAction}) {
    a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    addAction(a);
  }
  toolbar->addSeparator();
  m_pathLabel = new QLabel(toolbar);
  m_pathLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
  toolbar->addWidget(m_pathLabel);

  m_message = new QLabel(this);
  m_message->setWordWrap(true);
  m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_message->hide();

  m_formView = new QTableView(this);
  m_formView->setModel(m_fields);
  auto* delegate = new ConfigFieldDelegate(m_formView);
  m_formView->setItemDelegateForColumn(ConfigFieldsModel::ValueColumn, delegate);
  // Text typed just before a form edit is validated first, so the edit applies to it.
  connect(delegate, &ConfigFieldDelegate::aboutToCommit, this, [this] {
    if (m_validateTimer.isActive()) validateNow();
  });
  m_formView->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_formView->setSelectionMode(QAbstractItemView::SingleSelection);
  m_formView->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                              QAbstractItemView::AnyKeyPressed);
  m_formView->verticalHeader()->hide();
  m_formView->setWordWrap(false);
  m_formView->horizontalHeader()->setStretchLastSection(true);
  m_formView->resizeColumnsToContents();
  m_formView->setColumnWidth(ConfigFieldsModel::ValueColumn,
                             qMax(m_formView->columnWidth(ConfigFieldsModel::ValueColumn), 140));

  m_text = new TomlTextEdit(this);
  m_text->setPlaceholderText(tr("# TOML config: [run] [cluster] [parallel] [strategy] [model] [moe] [data] [train] [store]"));

  auto* sides = new QSplitter(Qt::Horizontal, this);
  sides->addWidget(m_formView);
  sides->addWidget(m_text);
  sides->setStretchFactor(0, 1);
  sides->setStretchFactor(1, 1);

  auto* issuesBox = new QWidget(this);
  auto* issuesLayout = new QVBoxLayout(issuesBox);
  issuesLayout->setContentsMargins(0, 0, 0, 0);
  m_summary = new QLabel(issuesBox);
  m_issuesView = new QTableView(issuesBox);
  m_issuesView->setModel(m_issues);
  m_issuesView->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_issuesView->setSelectionMode(QAbstractItemView::SingleSelection);
  m_issuesView->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_issuesView->verticalHeader()->hide();
  m_issuesView->horizontalHeader()->setStretchLastSection(true);
  m_issuesView->setColumnWidth(ConfigIssuesModel::LineColumn, 50);
  m_issuesView->setColumnWidth(ConfigIssuesModel::KeyColumn, 160);
  issuesLayout->addWidget(m_summary);
  issuesLayout->addWidget(m_issuesView);

  auto* vertical = new QSplitter(Qt::Vertical, this);
  vertical->addWidget(sides);
  vertical->addWidget(issuesBox);
  vertical->setStretchFactor(0, 4);
  vertical->setStretchFactor(1, 1);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(toolbar);
  layout->addWidget(m_message);
  layout->addWidget(vertical, 1);
}

QPlainTextEdit* ConfigEditor::textEdit() const { return m_text; }
QString ConfigEditor::filePath() const { return m_doc->filePath(); }
QString ConfigEditor::text() const { return m_doc->text(); }
bool ConfigEditor::isModified() const { return m_doc->isDirty(); }

bool ConfigEditor::openFile(const QString& path) {
  if (!m_doc->load(path)) {
    showError(m_doc->errorString());
    return false;
  }
  m_syncing = true;
  m_text->setPlainText(m_doc->text());
  m_syncing = false;
  showInfo({});
  validateNow();
  return true;
}

bool ConfigEditor::saveFile(const QString& path) {
  if (!m_doc->save(path)) {
    showError(m_doc->errorString());
    return false;
  }
  showInfo(tr("Saved %1").arg(QDir::toNativeSeparators(m_doc->filePath())));
  validateNow();  // relative data paths now resolve against the new folder
  emit saved(m_doc->filePath());
  return true;
}

void ConfigEditor::openText(const QString& text, const QString& origin) {
  m_doc->newDocument(text);
  m_syncing = true;
  m_text->setPlainText(text);
  m_syncing = false;
  showInfo(origin);
  validateNow();
}

void ConfigEditor::setText(const QString& text) {
  m_doc->setText(text);
  m_syncing = true;
  m_text->setPlainText(text);
  m_syncing = false;
  validateNow();
}

void ConfigEditor::onTextEdited() {
  if (m_syncing) return;
  m_doc->setText(m_text->toPlainText());
  m_validateTimer.start();
}

void ConfigEditor::onFormEdited(const QString& newText) {
  showInfo({});
  replaceEditorText(newText);
  m_doc->setText(newText);
  // Not from inside the model's setData: validating refreshes the model.
  m_validateTimer.stop();
  QMetaObject::invokeMethod(this, &ConfigEditor::validateNow, Qt::QueuedConnection);
}

// Replaces only the span that differs, as one undo step, so the user's cursor, scroll
// position and undo history survive a form edit.
void ConfigEditor::replaceEditorText(const QString& newText) {
  const QString old = m_text->toPlainText();
  qsizetype prefix = 0;
  const qsizetype common = qMin(old.size(), newText.size());
  while (prefix < common && old[prefix] == newText[prefix]) ++prefix;
  qsizetype suffix = 0;
  while (suffix < common - prefix && old[old.size() - 1 - suffix] == newText[newText.size() - 1 - suffix])
    ++suffix;
  m_syncing = true;
  QTextCursor cursor(m_text->document());
  cursor.beginEditBlock();
  cursor.setPosition(int(prefix));
  cursor.setPosition(int(old.size() - suffix), QTextCursor::KeepAnchor);
  cursor.insertText(newText.mid(prefix, newText.size() - suffix - prefix));
  cursor.endEditBlock();
  m_syncing = false;
}

void ConfigEditor::validateNow() {
  m_validateTimer.stop();
  m_doc->validate();
  m_issues->setIssues(m_doc->issues());
  QMap<int, QStringList> byLine;
  for (const auto& issue : m_doc->issues())
    if (issue.line > 0) {
      QString what = QString::fromStdString(issue.message);
      if (!issue.key.empty()) what = QString::fromStdString(issue.key) + QStringLiteral(": ") + what;
      byLine[issue.line] << what;
    }
  m_text->setIssueLines(byLine);
  // The form shows (and edits) the text only while it is well-formed TOML.
  const bool syntaxError = m_doc->hasSyntaxError();
  if (!syntaxError) m_fields->setText(m_doc->text(), m_doc->config());
  m_fields->setReadOnly(syntaxError);
  const int n = int(m_doc->issues().size());
  QString summary = n == 0   ? tr("No problems: the config validates.")
                    : n == 1 ? tr("1 problem found by the validator:")
                             : tr("%1 problems found by the validator:").arg(n);
  if (syntaxError) summary += tr(" The form is read-only until the TOML syntax error is fixed.");
  m_summary->setText(summary);
}

void ConfigEditor::goToIssue(const QModelIndex& index) {
  const int line = m_issues->lineAt(index.row());
  if (line <= 0) return;
  m_text->goToLine(line);
  m_text->setFocus();
}

void ConfigEditor::open() {
  if (m_doc->isDirty()) {
    const auto answer = QMessageBox::question(
        this, tr("Unsaved changes"),
        tr("Discard the unsaved changes to %1?").arg(m_doc->sourceName()),
        QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Cancel);
    if (answer != QMessageBox::Discard) return;
  }
  const QString start = m_doc->filePath().isEmpty() ? QDir::currentPath() : QFileInfo(m_doc->filePath()).absolutePath();
  const QString path = QFileDialog::getOpenFileName(this, tr("Open config"), start,
                                                    tr("TOML configs (*.toml);;All files (*)"));
  if (!path.isEmpty()) openFile(path);
}

void ConfigEditor::save() {
  if (m_doc->filePath().isEmpty()) saveAs();
  else saveFile(m_doc->filePath());
}

void ConfigEditor::saveAs() {
  const QString start = m_doc->filePath().isEmpty() ? QDir::currentPath() + QStringLiteral("/config.toml")
                                                    : m_doc->filePath();
  const QString path = QFileDialog::getSaveFileName(this, tr("Save config as"), start,
                                                    tr("TOML configs (*.toml);;All files (*)"));
  if (!path.isEmpty()) saveFile(path);
}

void ConfigEditor::showError(const QString& message) {
  m_error = message;
  m_message->setStyleSheet(QStringLiteral("color: #b00000;"));
  m_message->setText(message);
  m_message->setVisible(!message.isEmpty());
}

void ConfigEditor::showInfo(const QString& message) {
  m_error.clear();
  m_message->setStyleSheet({});
  m_message->setText(message);
  m_message->setVisible(!message.isEmpty());
}

void ConfigEditor::updateTitle() {
  const QString path = m_doc->filePath();
  QString title = path.isEmpty() ? tr("untitled (not saved yet)") : QDir::toNativeSeparators(path);
  if (m_doc->isDirty()) title += tr("  (modified)");
  m_pathLabel->setText(title);
}
