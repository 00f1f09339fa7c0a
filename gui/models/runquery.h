#pragma once
// RunQuery: the run browser's filter (MLflow's search syntax, smaller).
//
//   query   := clause { ("and" | "or") clause }     "and" binds tighter than "or"; no parentheses
//   clause  := KEY OP VALUE | WORD
//   OP      := = (also ==)  !=  <  <=  >  >=  ~ (contains)  !~ (does not contain)
//   VALUE   := a word, or "..." / '...' for text with spaces
//
// KEY names, in this order: a column of the browser (name, status, strategy, experiment, id, steps,
// loss, ms_per_step, tokens_per_s, tags, note), a param (any flattened config key, e.g.
// strategy.name, train.steps; "param.KEY" says so explicitly), a tag (e.g. ablation.variant;
// "tag.KEY" explicitly). Both sides numbers: compared as numbers, else as text without case. A
// key the run does not have fails every clause about it. A WORD alone (text without an operator)
// matches when it is part of the run's name, strategy, experiment, status, tags, note or ablation
// variant, without case: "hier" finds every hier_a2a variant.
#include <QString>

#include <memory>
#include <vector>

#include "models/runlistmodel.h"

namespace moebench::gui {

class RunQuery {
 public:
  RunQuery() = default;  // matches every run
  // Parses `text`; on a syntax error isValid() is false and error() says what and where.
  explicit RunQuery(const QString& text);

  bool isValid() const { return m_error.isEmpty(); }
  bool isEmpty() const { return m_any.empty(); }
  QString error() const { return m_error; }
  // Whether the run matches (an invalid or empty query matches every run).
  bool matches(const QString& experiment, const RunListModel::RunRow& row) const;

 private:
  struct Clause {
    QString key, op, value;  // op empty: free text `value`
  };
  std::vector<std::vector<Clause>> m_any;  // or of ands
  QString m_error;
  static bool matchClause(const Clause& c, const QString& experiment, const RunListModel::RunRow& row);
};

}  // namespace moebench::gui
