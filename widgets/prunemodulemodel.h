#pragma once
// Table of the pruned modules of one pruning: module, layer, rows x cols,
// loss, output loss, relative output error, sparsity, damping used (and
// ladder steps), seconds. Rows arrive all at once (an opened record) or one
// by one (a running pruning). Display text is formatted; ValueRole carries
// the raw number for sorting (QSortFilterProxyModel::setSortRole).

#include "widgets/prunedata.h"

#include <QAbstractTableModel>

namespace sdw::widgets {

class PruneModuleModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Module = 0, Layer, Shape, Loss, OutputLoss, RelError, Sparsity, Damping, Seconds, ColumnCount };
  static constexpr int ValueRole = Qt::UserRole;

  using QAbstractTableModel::QAbstractTableModel;

  void setRows(const QVector<PruneModuleData>& rows);
  void appendRow(const PruneModuleData& row);
  void clear();
  const PruneModuleData* rowAt(int r) const;
  const QVector<PruneModuleData>& rows() const { return rows_; }

  // Every column, raw values (module by its full name).
  QString toCsv() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  QVector<PruneModuleData> rows_;
};

}  // namespace sdw::widgets
