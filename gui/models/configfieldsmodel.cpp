#include "models/configfieldsmodel.h"

#include <QBrush>
#include <QColor>
#include <QFont>

#include <stdexcept>

#include "moebench/config/config_loader.h"
#include "moebench/config/config_text_edit.h"
#include "moebench/config/strategy_spec.h"

namespace {

const moebench::ConfigKeyInfo* keyInfo(const QString& key) {
  const std::string k = key.toStdString();
  for (const auto& info : moebench::config_keys())
    if (info.name == k) return &info;
  return nullptr;
}

// "quickstart", "[1, 3]", "0.003" — a resolved value as the form shows it.
QString jsonDisplay(const nlohmann::json& v) {
  if (v.is_string()) return QString::fromStdString(v.get<std::string>());
  if (v.is_array()) {
    QString out = QStringLiteral("[");
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += QStringLiteral(", ");
      out += jsonDisplay(v[i]);
    }
    return out + QStringLiteral("]");
  }
  return QString::fromStdString(v.dump());
}

// The defaults as config_to_json gives them; moe.experts as one block's default count (the
// dense default config has no MoE block, so its list would be empty).
const nlohmann::json& defaultsJson() {
  static const nlohmann::json defaults = [] {
    nlohmann::json j;
    try {
      j = moebench::config_to_json(moebench::parse_config("", "defaults"));
      const moebench::Config one = moebench::parse_config("[moe]\nmoe_layers = [0]\n", "defaults");
      if (!one.moe.experts.empty()) j["moe"]["experts"] = one.moe.experts.front();
    } catch (const std::exception&) {
      j = moebench::config_to_json(moebench::Config{});
    }
    return j;
  }();
  return defaults;
}

// The value of `key` ("strategy.data_centric.credits") in the nested config JSON.
QString fallbackOf(const nlohmann::json& config, const QString& key) {
  const nlohmann::json* node = &config;
  for (const QString& part : key.split(QLatin1Char('.'))) {
    if (!node->is_object()) return {};
    const auto it = node->find(part.toStdString());
    if (it == node->end()) return {};
    node = &*it;
  }
  return jsonDisplay(*node);
}

}  // namespace

const QStringList& ConfigFieldsModel::commonKeys() {
  static const QStringList keys = {
      QStringLiteral("run.name"),          QStringLiteral("run.ranks"),
      QStringLiteral("run.seed"),          QStringLiteral("cluster.nodes"),
      QStringLiteral("strategy.name"),     QStringLiteral("model.hidden"),
      QStringLiteral("model.layers"),      QStringLiteral("model.heads"),
      QStringLiteral("model.ffn_mult"),    QStringLiteral("model.seq_len"),
      QStringLiteral("model.vocab_size"),  QStringLiteral("moe.moe_layers"),
      QStringLiteral("moe.experts"),       QStringLiteral("moe.top_k"),
      QStringLiteral("moe.capacity_factor"), QStringLiteral("data.source"),
      QStringLiteral("train.steps"),       QStringLiteral("train.batch_size"),
      QStringLiteral("train.lr"),
  };
  return keys;
}

ConfigFieldsModel::ConfigFieldsModel(QObject* parent) : QAbstractTableModel(parent) {
  for (const QString& key : commonKeys()) {
    const moebench::ConfigKeyInfo* info = keyInfo(key);
    if (!info) continue;  // a key core no longer has: no row rather than a broken one
    Row row;
    row.key = key;
    row.type = QString::fromStdString(info->type);
    row.doc = QString::fromStdString(info->doc);
    if (key == QLatin1String("strategy.name"))
      for (const auto& name : moebench::strategy_names()) row.choices << QString::fromStdString(name);
    m_rows.push_back(row);
  }
  m_fallback = defaultsJson();
  reread();
}

std::vector<int> ConfigFieldsModel::reread() {
  std::vector<int> changed;
  const std::string text = m_text.toStdString();
  for (size_t r = 0; r < m_rows.size(); ++r) {
    Row& row = m_rows[r];
    Row next = row;
    const auto loc = moebench::find_config_value(text, row.key.toStdString());
    next.written = loc.has_value();
    next.literal = loc ? QString::fromStdString(loc->literal) : QString();
    next.line = loc ? loc->line : 0;
    next.shown = loc ? QString::fromStdString(moebench::config_literal_display(loc->literal))
                     : fallbackOf(m_fallback, row.key);
    if (next.written != row.written || next.literal != row.literal || next.line != row.line ||
        next.shown != row.shown)
      changed.push_back(int(r));
    row = next;
  }
  return changed;
}

void ConfigFieldsModel::setText(const QString& text, const moebench::Config* resolved) {
  m_text = text;
  m_fallback = resolved ? moebench::config_to_json(*resolved) : defaultsJson();
  // One signal per changed row: a range would also reach the rows in between, and a view
  // refreshes an open editor on dataChanged (the value being typed would be replaced).
  for (int row : reread()) emit dataChanged(index(row, 0), index(row, ColumnCount - 1));
}

void ConfigFieldsModel::setReadOnly(bool readOnly) {
  if (readOnly == m_readOnly) return;
  m_readOnly = readOnly;
  // Only flags() changes, which views ask for when an edit starts: no dataChanged, which would
  // also reset an editor that is open (QAbstractItemView refreshes editors on any dataChanged).
}

int ConfigFieldsModel::rowForKey(const QString& key) const {
  for (size_t r = 0; r < m_rows.size(); ++r)
    if (m_rows[r].key == key) return int(r);
  return -1;
}

QString ConfigFieldsModel::keyAt(int row) const {
  return row >= 0 && row < int(m_rows.size()) ? m_rows[size_t(row)].key : QString();
}

int ConfigFieldsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(m_rows.size());
}

int ConfigFieldsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant ConfigFieldsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const Row& row = m_rows[size_t(index.row())];
  switch (role) {
    case Qt::DisplayRole:
    case Qt::EditRole:
      switch (index.column()) {
        case KeyColumn: return row.key;
        case ValueColumn: return row.shown;
        case TypeColumn: return row.type;
        case DocColumn: return row.doc;
      }
      return {};
    case Qt::ToolTipRole:
      if (index.column() == ValueColumn) {
        if (row.written) return tr("line %1: %2 = %3").arg(row.line).arg(row.key, row.literal);
        return tr("not in the file: %1 is used").arg(row.shown);
      }
      return row.doc;
    case Qt::FontRole:
      if (index.column() == ValueColumn && !row.written) {
        QFont font;
        font.setItalic(true);
        return font;
      }
      return {};
    case Qt::ForegroundRole:
      if (index.column() == ValueColumn && !row.written) return QBrush(QColor(Qt::darkGray));
      return {};
    case KeyRole: return row.key;
    case IsSetRole: return row.written;
    case LineRole: return row.line;
    case LiteralRole: return row.literal;
    case ChoicesRole: return row.choices;
  }
  return {};
}

QVariant ConfigFieldsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case KeyColumn: return tr("Key");
    case ValueColumn: return tr("Value");
    case TypeColumn: return tr("Type");
    case DocColumn: return tr("Meaning");
  }
  return {};
}

Qt::ItemFlags ConfigFieldsModel::flags(const QModelIndex& index) const {
  if (!index.isValid() || !checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
  if (index.column() == ValueColumn && !m_readOnly) f |= Qt::ItemIsEditable;
  return f;
}

bool ConfigFieldsModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (m_readOnly || role != Qt::EditRole || index.column() != ValueColumn ||
      !index.isValid() || !checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return false;
  const Row& row = m_rows[size_t(index.row())];
  const QString typed = value.toString();
  if (!row.written && typed == row.shown) return true;  // the shown default, committed unchanged
  std::string newText;
  try {
    const std::string key = row.key.toStdString();
    const std::string literal = moebench::config_value_literal(key, typed.toStdString());
    if (row.written && QString::fromStdString(literal) == row.literal) return true;
    newText = moebench::set_config_value(m_text.toStdString(), key, literal);
  } catch (const std::invalid_argument& e) {
    m_lastError = QString::fromStdString(e.what());
    emit editFailed(m_lastError);
    return false;
  }
  m_lastError.clear();
  m_text = QString::fromStdString(newText);
  const std::vector<int> changed = reread();
  if (!changed.empty())
    emit dataChanged(this->index(changed.front(), 0), this->index(changed.back(), ColumnCount - 1));
  emit textEdited(m_text);
  return true;
}
