#include "widgets/configfielddelegate.h"

#include <QComboBox>

#include "models/configfieldsmodel.h"

ConfigFieldDelegate::ConfigFieldDelegate(QObject* parent) : QStyledItemDelegate(parent) {}

QWidget* ConfigFieldDelegate::createEditor(QWidget* parent, const QStyleOptionViewItem& option,
                                           const QModelIndex& index) const {
  const QStringList choices = index.data(ConfigFieldsModel::ChoicesRole).toStringList();
  if (choices.isEmpty()) return QStyledItemDelegate::createEditor(parent, option, index);
  auto* combo = new QComboBox(parent);
  combo->addItems(choices);
  auto* self = const_cast<ConfigFieldDelegate*>(this);
  // A pick is committed at once, as a person expects from a drop-down.
  connect(combo, &QComboBox::activated, self, [self, combo] {
    emit self->commitData(combo);
    emit self->closeEditor(combo);
  });
  return combo;
}

void ConfigFieldDelegate::setEditorData(QWidget* editor, const QModelIndex& index) const {
  if (auto* combo = qobject_cast<QComboBox*>(editor)) {
    const QString current = index.data(Qt::EditRole).toString();
    if (combo->findText(current) < 0) combo->insertItem(0, current);
    combo->setCurrentIndex(combo->findText(current));
    return;
  }
  QStyledItemDelegate::setEditorData(editor, index);
}

void ConfigFieldDelegate::setModelData(QWidget* editor, QAbstractItemModel* model,
                                       const QModelIndex& index) const {
  emit aboutToCommit();
  if (auto* combo = qobject_cast<QComboBox*>(editor)) {
    model->setData(index, combo->currentText(), Qt::EditRole);
    return;
  }
  QStyledItemDelegate::setModelData(editor, model, index);
}
