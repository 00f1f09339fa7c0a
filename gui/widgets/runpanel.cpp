#include "runpanel.h"

#include <QLabel>
#include <QStackedWidget>
#include <QVBoxLayout>

RunPanel::RunPanel(int64_t runId, const QString& title, const QColor& colour, QWidget* parent)
    : QFrame(parent), m_runId(runId), m_colour(colour) {
  setObjectName(QStringLiteral("runPanel%1").arg(runId));
  setFrameShape(QFrame::StyledPanel);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  m_header = new QLabel(title, this);
  m_header->setObjectName(QStringLiteral("runHeader"));
  m_header->setWordWrap(true);
  m_header->setTextFormat(Qt::PlainText);
  m_header->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont bold = m_header->font();
  bold.setBold(true);
  m_header->setFont(bold);
  QPalette pal = m_header->palette();
  pal.setColor(QPalette::WindowText, colour);
  m_header->setPalette(pal);
  // a rule in the run's colour under the header
  auto* rule = new QFrame(this);
  rule->setFixedHeight(3);
  rule->setAutoFillBackground(true);
  QPalette rulePal = rule->palette();
  rulePal.setColor(QPalette::Window, colour);
  rule->setPalette(rulePal);
  m_stack = new QStackedWidget(this);
  m_message = new QLabel(m_stack);
  m_message->setObjectName(QStringLiteral("panelMessage"));
  m_message->setAlignment(Qt::AlignCenter);
  m_message->setWordWrap(true);
  m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_stack->addWidget(m_message);
  layout->addWidget(m_header);
  layout->addWidget(rule);
  layout->addWidget(m_stack, 1);
}

RunPanel::~RunPanel() = default;

QString RunPanel::title() const { return m_header->text(); }

void RunPanel::setContent(QWidget* content) {
  if (m_content) {
    m_stack->removeWidget(m_content);
    delete m_content;
  }
  m_content = content;
  m_stack->addWidget(content);
  m_stack->setCurrentWidget(m_message->text().isEmpty() ? content : static_cast<QWidget*>(m_message));
}

void RunPanel::setMessage(const QString& text) {
  m_message->setText(text);
  m_stack->setCurrentWidget(text.isEmpty() && m_content ? m_content : static_cast<QWidget*>(m_message));
}

QString RunPanel::message() const { return m_stack->currentWidget() == m_message ? m_message->text() : QString(); }
