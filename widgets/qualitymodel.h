#pragma once
// The quality table of one evaluation run: one row per model (dense first,
// then the pruned ones), columns PPL on held-out text, PPL of the dense
// model's generations, and the on-policy figures over seeds (KL, greedy
// agreement, first-divergence median) as mean ± std. ValueRole carries the
// mean (for sorting), StdRole the spread. A run whose compared models ran
// with activation sparsity names its p_x in the Model column's header (and
// the calibration run of its thresholds, where they came from one).

#include "widgets/prunedata.h"

#include <QAbstractTableModel>

namespace sdw::widgets {

class QualityModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Model = 0, PplText, PplDenseGen, Kl, Agreement, FirstDivergence, Seeds, ColumnCount };
  static constexpr int ValueRole = Qt::UserRole;
  static constexpr int StdRole = Qt::UserRole + 1;

  using QAbstractTableModel::QAbstractTableModel;

  void setData(const QualityData& data);
  const QualityModelData* rowAt(int r) const;

  // The compared models' run-time activation sparsity (0: dense inputs).
  double activationSparsity() const { return activationSparsity_; }
  // The calibration run their thresholds came from ("": each token's top-k).
  QString activationThresholds() const { return activationThresholds_; }

  // One line per model; mean and std in separate columns; the last column
  // the p_x the model ran with.
  QString toCsv() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  QVector<QualityModelData> rows_;
  double activationSparsity_ = 0;
  QString activationThresholds_;
  QString activationThresholdsRunId_;
};

}  // namespace sdw::widgets
