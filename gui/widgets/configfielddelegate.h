#pragma once
// ConfigFieldDelegate: the editor of the config form's Value cells. A key with a list of
// allowed values (ConfigFieldsModel::ChoicesRole, e.g. strategy.name) is edited with a combo
// box of them (a value the text already has that is not in the list stays selectable); every
// other key with the default line edit.
// aboutToCommit() comes before each write to the model.
#include <QStyledItemDelegate>

class ConfigFieldDelegate : public QStyledItemDelegate {
  Q_OBJECT

 public:
  explicit ConfigFieldDelegate(QObject* parent = nullptr);

  QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem& option,
                        const QModelIndex& index) const override;
  void setEditorData(QWidget* editor, const QModelIndex& index) const override;
  void setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const override;

 signals:
  // Emitted before an edited value is written to the model, so that the owner can bring the
  // model up to date with text typed just before (ConfigEditor flushes its pending validation).
  void aboutToCommit() const;
};
