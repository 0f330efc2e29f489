#include "widgets/runlistmodel.h"

#include <QBrush>
#include <QColor>

namespace sdw::widgets {

void RunListModel::setRows(QVector<RunRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

int RunListModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : rows_.size(); }
int RunListModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant RunListModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rows_.size() || index.column() >= ColumnCount) return {};
  const RunRow& r = rows_[index.row()];
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case Name: return r.fileName;
        case Kind: return r.kind;
        case Status: return r.status;
        case Model: return r.model;
        case Created: return r.created;
        default: return {};
      }
    case Qt::ToolTipRole: return r.error.isEmpty() ? r.path : r.error;
    case Qt::ForegroundRole:
      if (!r.error.isEmpty()) return QBrush(QColor(0xb0, 0x00, 0x20));
      if (r.status != QLatin1String("complete")) return QBrush(QColor(0x8a, 0x6d, 0x00));
      return {};
    case PathRole: return r.path;
    case ErrorRole: return r.error;
    default: return {};
  }
}

QVariant RunListModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Name: return tr("Run file");
    case Kind: return tr("Kind");
    case Status: return tr("Status");
    case Model: return tr("Model");
    case Created: return tr("Created (UTC)");
    default: return {};
  }
}

}  // namespace sdw::widgets
