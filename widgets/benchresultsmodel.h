#pragma once
// The Benchmark panel's results table: one row per measured kernel (shape,
// pattern, batch, kernel, median time, GB/s, share of the read bandwidth,
// speedup over dense). Display only: the rows come measured, the speedups
// come computed (the baseline of a row may arrive after the row itself).

#include "widgets/benchrowdata.h"

#include <QAbstractTableModel>
#include <QVector>

namespace sdw::widgets {

class BenchResultsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Shape, Rows, Cols, Pattern, Batch, Kernel, MedianUs, ChainedUs, GBs, PercentHbm, Speedup, ColumnCount };
  // Numbers for sorting (the display role holds formatted text).
  static constexpr int SortRole = Qt::UserRole;

  explicit BenchResultsModel(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  void clear();
  void appendRows(const QVector<BenchRowData>& rows);
  // One speedup per row (0: no baseline yet); extra or missing entries are ignored.
  void setSpeedups(const QVector<double>& speedups);
  void setSpeedupBaseline(const QString& text) { baseline_ = text; }

  const QVector<BenchRowData>& rows() const { return rows_; }
  double speedup(int row) const { return row < speedups_.size() ? speedups_[row] : 0.0; }
  // "llama3-8b q_proj", "layer (qwen3-14b)", "256x512".
  static QString shapeLabel(const BenchRowData& r);
  // "2:4", "-", or for spMspV rows the weights' sparsity and p_x: "50%, p_x 0.5".
  static QString patternLabel(const BenchRowData& r);
  // One line per row, in model order:
  // model,module,rows,cols,pattern,batch,kernel,median_us,chained_us,gbs,percent_hbm,speedup,config,
  // activation_sparsity (empty but for spMspV rows)
  QString toCsv() const;

 private:
  QVector<BenchRowData> rows_;
  QVector<double> speedups_;
  QString baseline_;
};

}  // namespace sdw::widgets
