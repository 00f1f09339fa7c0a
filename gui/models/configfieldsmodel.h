#pragma once
// ConfigFieldsModel: the form of the config editor — one row per common key (commonKeys()),
// columns Key, Value, Type, Doc (type and doc from config_keys()).
//   Value shows what the text writes (string contents unquoted, arrays on one line); a key the
//   text does not write shows its resolved value (the `resolved` config given to setText, else
//   the default) in italics, with IsSetRole false.
//   Editing Value (setData, EditRole) turns what was typed into a TOML literal for the key's
//   type (config_value_literal) and edits the text with set_config_value: only that value (or
//   one inserted line / one appended section) changes. Then textEdited(newText) is emitted; a
//   value that is not a TOML value is refused with editFailed(message naming key and value).
//   Committing an unwritten key's shown value unchanged does not write it into the text.
//   While read-only (setReadOnly) nothing is editable.
// ChoicesRole lists the values a key can take when core has the list (strategy.name: the
// registered strategies), for a combo box editor.
#include <QAbstractTableModel>
#include <QString>
#include <QStringList>

#include <vector>

#include <nlohmann/json.hpp>

namespace moebench {
struct Config;
}

class ConfigFieldsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { KeyColumn, ValueColumn, TypeColumn, DocColumn, ColumnCount };
  enum Role {
    KeyRole = Qt::UserRole + 1,  // "moe.top_k" (any column)
    IsSetRole,                   // bool: the text writes the key
    LineRole,                    // int: 1-based line of the key in the text, 0 when not written
    LiteralRole,                 // QString: the TOML literal as written ("" when not written)
    ChoicesRole,                 // QStringList: allowed values, empty when free
  };

  // The rows, in this order.
  static const QStringList& commonKeys();

  explicit ConfigFieldsModel(QObject* parent = nullptr);

  QString text() const { return m_text; }
  // Re-reads every value from `text`. `resolved` (the config the text validates to, may be
  // null) gives the values shown for keys the text does not write; null: the defaults.
  void setText(const QString& text, const moebench::Config* resolved = nullptr);
  int rowForKey(const QString& key) const;  // -1 when not a row
  QString keyAt(int row) const;
  QString lastError() const { return m_lastError; }  // of the last refused setData
  // Read-only: no cell is editable and setData refuses (the editor sets it while the text is
  // not well-formed TOML, when the values shown are those of the last well-formed text).
  void setReadOnly(bool readOnly);
  bool isReadOnly() const { return m_readOnly; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

 signals:
  void textEdited(const QString& text);
  void editFailed(const QString& message);

 private:
  struct Row {
    QString key, type, doc;
    QStringList choices;
    bool written = false;
    QString literal;   // as written
    QString shown;     // display of the literal, or of the resolved/default value
    int line = 0;
  };
  // Reads literal/shown/line of every row from m_text (unwritten keys: from m_fallback).
  // Returns the rows that changed.
  std::vector<int> reread();

  std::vector<Row> m_rows;
  QString m_text;
  nlohmann::json m_fallback;  // config_to_json of the resolved config, or of the defaults
  QString m_lastError;
  bool m_readOnly = false;
};
