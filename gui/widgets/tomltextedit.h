#pragma once
// TomlTextEdit: the raw-text side of the config editor. A monospace QPlainTextEdit with a
// line-number margin; lines with validation issues get a full-width red background
// (QTextEdit::ExtraSelection), their number is drawn in red and hovering shows the messages.
#include <QList>
#include <QMap>
#include <QPlainTextEdit>
#include <QString>

class TomlTextEdit : public QPlainTextEdit {
  Q_OBJECT

 public:
  explicit TomlTextEdit(QWidget* parent = nullptr);

  // Marks lines (1-based) with their messages; replaces the previous marks. Lines outside the
  // text are ignored.
  void setIssueLines(const QMap<int, QStringList>& messagesByLine);
  QList<int> issueLines() const { return m_issues.keys(); }
  // Moves the cursor to the start of a 1-based line and scrolls it into view.
  void goToLine(int line);
  int lineNumberAreaWidth() const;

 protected:
  void resizeEvent(QResizeEvent* event) override;
  bool viewportEvent(QEvent* event) override;

 private:
  friend class TomlLineNumberArea;
  void paintLineNumbers(QPaintEvent* event);
  void updateMargin();
  void updateHighlights();

  QWidget* m_lineNumbers = nullptr;
  QMap<int, QStringList> m_issues;
};
