#include "widgets/tomltextedit.h"

#include <QFontDatabase>
#include <QHelpEvent>
#include <QPainter>
#include <QTextBlock>
#include <QToolTip>

namespace {
const QColor kIssueBackground(255, 221, 221);
const QColor kIssueNumber(190, 0, 0);
}  // namespace

// The margin left of the text that shows line numbers; paints through its editor.
class TomlLineNumberArea : public QWidget {
 public:
  explicit TomlLineNumberArea(TomlTextEdit* editor) : QWidget(editor), m_editor(editor) {}
  QSize sizeHint() const override { return {m_editor->lineNumberAreaWidth(), 0}; }

 protected:
  void paintEvent(QPaintEvent* event) override { m_editor->paintLineNumbers(event); }

 private:
  TomlTextEdit* m_editor;
};

TomlTextEdit::TomlTextEdit(QWidget* parent) : QPlainTextEdit(parent) {
  setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  setLineWrapMode(QPlainTextEdit::NoWrap);
  setTabChangesFocus(false);
  m_lineNumbers = new TomlLineNumberArea(this);
  connect(this, &QPlainTextEdit::blockCountChanged, this, [this] { updateMargin(); });
  connect(this, &QPlainTextEdit::updateRequest, this, [this](const QRect& rect, int dy) {
    if (dy) m_lineNumbers->scroll(0, dy);
    else m_lineNumbers->update(0, rect.y(), m_lineNumbers->width(), rect.height());
  });
  updateMargin();
}

int TomlTextEdit::lineNumberAreaWidth() const {
  int digits = 1;
  for (int n = qMax(1, blockCount()); n >= 10; n /= 10) ++digits;
  digits = qMax(digits, 3);
  return 8 + fontMetrics().horizontalAdvance(QLatin1Char('9')) * digits;
}

void TomlTextEdit::updateMargin() {
  setViewportMargins(lineNumberAreaWidth(), 0, 0, 0);
  const QRect cr = contentsRect();
  m_lineNumbers->setGeometry(QRect(cr.left(), cr.top(), lineNumberAreaWidth(), cr.height()));
}

void TomlTextEdit::resizeEvent(QResizeEvent* event) {
  QPlainTextEdit::resizeEvent(event);
  updateMargin();
}

void TomlTextEdit::paintLineNumbers(QPaintEvent* event) {
  QPainter painter(m_lineNumbers);
  painter.fillRect(event->rect(), palette().color(QPalette::AlternateBase));
  QTextBlock block = firstVisibleBlock();
  int top = qRound(blockBoundingGeometry(block).translated(contentOffset()).top());
  int bottom = top + qRound(blockBoundingRect(block).height());
  const int width = m_lineNumbers->width() - 4;
  while (block.isValid() && top <= event->rect().bottom()) {
    if (block.isVisible() && bottom >= event->rect().top()) {
      const int line = block.blockNumber() + 1;
      const bool issue = m_issues.contains(line);
      QFont f = font();
      f.setBold(issue);
      painter.setFont(f);
      painter.setPen(issue ? kIssueNumber : palette().color(QPalette::PlaceholderText));
      painter.drawText(0, top, width, fontMetrics().height(), Qt::AlignRight, QString::number(line));
    }
    block = block.next();
    top = bottom;
    bottom = top + qRound(blockBoundingRect(block).height());
  }
}

void TomlTextEdit::setIssueLines(const QMap<int, QStringList>& messagesByLine) {
  m_issues.clear();
  for (auto it = messagesByLine.begin(); it != messagesByLine.end(); ++it)
    if (it.key() >= 1 && it.key() <= blockCount()) m_issues.insert(it.key(), it.value());
  updateHighlights();
  m_lineNumbers->update();
}

void TomlTextEdit::updateHighlights() {
  QList<QTextEdit::ExtraSelection> selections;
  for (auto it = m_issues.begin(); it != m_issues.end(); ++it) {
    const QTextBlock block = document()->findBlockByNumber(it.key() - 1);
    if (!block.isValid()) continue;
    QTextEdit::ExtraSelection sel;
    sel.format.setBackground(kIssueBackground);
    sel.format.setProperty(QTextFormat::FullWidthSelection, true);
    sel.cursor = QTextCursor(block);
    selections << sel;
  }
  setExtraSelections(selections);
}

void TomlTextEdit::goToLine(int line) {
  const QTextBlock block = document()->findBlockByNumber(qBound(1, line, blockCount()) - 1);
  if (!block.isValid()) return;
  setTextCursor(QTextCursor(block));
  centerCursor();
}

bool TomlTextEdit::viewportEvent(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const int line = cursorForPosition(help->pos()).blockNumber() + 1;
    const auto it = m_issues.constFind(line);
    if (it != m_issues.constEnd()) QToolTip::showText(help->globalPos(), it.value().join(QLatin1Char('\n')), this);
    else QToolTip::hideText();
    return true;
  }
  return QPlainTextEdit::viewportEvent(event);
}
