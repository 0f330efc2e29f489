#pragma once
// Table of one drift mode per layer: the plateaus of model A and model B,
// their ratio A / B, and the first step reaching 90% of the plateau for A and
// B. Display text is formatted; ValueRole carries the raw number (for
// sorting).

#include "widgets/driftdata.h"

#include <QAbstractTableModel>

namespace sdw::widgets {

class DriftLayerModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Layer = 0, PlateauA, PlateauB, PlateauRatio, Step90A, Step90B, ColumnCount };
  static constexpr int ValueRole = Qt::UserRole;

  using QAbstractTableModel::QAbstractTableModel;

  // Models A and B are the run's first two; a run with one model leaves the
  // B columns empty.
  void setData(const DriftData& data, int mode);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    int layer = 0;
    double plateau[2] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
    int step90[2] = {-1, -1};
    double ratio = std::numeric_limits<double>::quiet_NaN();
  };
  QVector<Row> rows_;
  QString labels_[2] = {QStringLiteral("A"), QStringLiteral("B")};
};

}  // namespace sdw::widgets
