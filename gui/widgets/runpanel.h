#pragma once
// RunPanel: one run's panel in a view that shows the selected runs side by side (RunPanelsView):
// a header "#id name · measured|predicted|emulated" in the run's colour (bold, never elided:
// it wraps), then either the panel's content or a message in its place (this run's error, or
// why it has nothing to show, e.g. no rows in the chosen step).
#include <QColor>
#include <QFrame>

#include <cstdint>

class QLabel;
class QStackedWidget;

class RunPanel : public QFrame {
  Q_OBJECT

 public:
  RunPanel(int64_t runId, const QString& title, const QColor& colour, QWidget* parent = nullptr);
  ~RunPanel() override;

  int64_t runId() const { return m_runId; }
  QString title() const;  // the header's text
  QLabel* header() const { return m_header; }
  QColor colour() const { return m_colour; }
  // The content (owned from here on), shown unless a message is set.
  void setContent(QWidget* content);
  QWidget* content() const { return m_content; }
  // Shows text in place of the content; an empty text shows the content again.
  void setMessage(const QString& text);
  QString message() const;  // empty while the content is shown

 private:
  int64_t m_runId;
  QColor m_colour;
  QLabel* m_header = nullptr;
  QStackedWidget* m_stack = nullptr;
  QLabel* m_message = nullptr;
  QWidget* m_content = nullptr;
};
