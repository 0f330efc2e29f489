#include "widgets/benchresultsmodel.h"

#include "widgets/csv.h"

#include <QTextStream>

namespace sdw::widgets {

BenchResultsModel::BenchResultsModel(QObject* parent) : QAbstractTableModel(parent) {}

int BenchResultsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int BenchResultsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QString BenchResultsModel::shapeLabel(const BenchRowData& r) {
  if (r.layer) return QStringLiteral("layer (%1)").arg(r.model);
  if (r.model == QLatin1String("custom") || r.model.isEmpty()) return QStringLiteral("%1x%2").arg(r.rows).arg(r.cols);
  return QStringLiteral("%1 %2").arg(r.model, r.module);
}

QString BenchResultsModel::patternLabel(const BenchRowData& r) {
  if (r.activationSparsity < 0) return r.pattern;
  return QStringLiteral("%1, p_x %2").arg(r.pattern).arg(r.activationSparsity, 0, 'g', 3);
}

QVariant BenchResultsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rows_.size() || index.column() >= ColumnCount) return {};
  const BenchRowData& r = rows_[index.row()];
  const double sp = speedup(index.row());
  if (role == Qt::TextAlignmentRole)
    return index.column() == Shape || index.column() == Kernel || index.column() == Pattern
               ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
               : QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole) {
    if (index.column() == Speedup && !baseline_.isEmpty()) return tr("time of %1 / time of this kernel").arg(baseline_);
    if (index.column() == ChainedUs)
      return tr("median time per call when each call is a programmatic dependent launch of the previous one");
    if (!r.config.isEmpty()) return tr("launch configuration: %1").arg(r.config);
    return {};
  }
  if (role == SortRole) {
    switch (index.column()) {
      case Shape: return shapeLabel(r);
      case Rows: return static_cast<qlonglong>(r.rows);
      case Cols: return static_cast<qlonglong>(r.cols);
      case Pattern: return patternLabel(r);
      case Batch: return r.batch;
      case Kernel: return r.kernel;
      case MedianUs: return r.us;
      case ChainedUs: return r.usChained;
      case GBs: return r.gbs;
      case PercentHbm: return 100.0 * r.fractionHbm;
      case Speedup: return sp;
    }
    return {};
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Shape: return shapeLabel(r);
    case Rows: return r.rows ? QVariant(static_cast<qlonglong>(r.rows)) : QVariant(QStringLiteral("-"));
    case Cols: return r.cols ? QVariant(static_cast<qlonglong>(r.cols)) : QVariant(QStringLiteral("-"));
    case Pattern: return patternLabel(r);
    case Batch: return r.batch;
    case Kernel: return r.kernel;
    case MedianUs: return QString::number(r.us, 'f', r.us < 100 ? 2 : 1);
    case ChainedUs:
      return r.usChained > 0 ? QString::number(r.usChained, 'f', r.usChained < 100 ? 2 : 1) : QStringLiteral("-");
    case GBs: return QString::number(r.gbs, 'f', 0);
    case PercentHbm: return r.fractionHbm > 0 ? QString::number(100.0 * r.fractionHbm, 'f', 1) : QStringLiteral("-");
    case Speedup: return sp > 0 ? QStringLiteral("%1x").arg(sp, 0, 'f', 2) : QStringLiteral("-");
  }
  return {};
}

QVariant BenchResultsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole && section == Speedup)
    return baseline_.isEmpty() ? tr("speedup over dense") : tr("speedup over %1").arg(baseline_);
  if (role == Qt::ToolTipRole && section == ChainedUs)
    return tr("our kernels launched back to back as programmatic dependent launches (sm_90): each call's "
              "start and first weight loads overlap the previous call; '-': not measured");
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case Shape: return tr("Shape");
    case Rows: return tr("Rows");
    case Cols: return tr("Cols");
    case Pattern: return tr("Pattern");
    case Batch: return tr("Batch");
    case Kernel: return tr("Kernel");
    case MedianUs: return tr("Median µs");
    case ChainedUs: return tr("Chained µs");
    case GBs: return tr("GB/s");
    case PercentHbm: return tr("% of HBM");
    case Speedup: return tr("Speedup");
  }
  return {};
}

void BenchResultsModel::clear() {
  beginResetModel();
  rows_.clear();
  speedups_.clear();
  endResetModel();
}

void BenchResultsModel::appendRows(const QVector<BenchRowData>& rows) {
  if (rows.isEmpty()) return;
  const int first = static_cast<int>(rows_.size());
  beginInsertRows({}, first, first + static_cast<int>(rows.size()) - 1);
  rows_ += rows;
  speedups_.resize(rows_.size(), 0.0);
  endInsertRows();
}

void BenchResultsModel::setSpeedups(const QVector<double>& speedups) {
  int lo = -1, hi = -1;
  for (int i = 0; i < rows_.size() && i < speedups.size(); ++i)
    if (speedups_[i] != speedups[i]) {
      speedups_[i] = speedups[i];
      if (lo < 0) lo = i;
      hi = i;
    }
  if (lo >= 0) Q_EMIT dataChanged(index(lo, Speedup), index(hi, Speedup));
}

QString BenchResultsModel::toCsv() const {
  QString out;
  QTextStream s(&out);
  s << "model,module,rows,cols,pattern,batch,kernel,median_us,chained_us,gbs,percent_hbm,speedup,config,"
       "activation_sparsity\n";
  for (int i = 0; i < rows_.size(); ++i) {
    const BenchRowData& r = rows_[i];
    s << csvField(r.model) << ',' << csvField(r.module) << ',' << r.rows << ',' << r.cols << ',' << csvField(r.pattern)
      << ',' << r.batch << ',' << csvField(r.kernel) << ',' << QString::number(r.us, 'g', 10) << ','
      << QString::number(r.usChained, 'g', 10) << ',' << QString::number(r.gbs, 'g', 10) << ','
      << QString::number(100.0 * r.fractionHbm, 'g', 6) << ',' << QString::number(speedup(i), 'g', 6) << ','
      << csvField(r.config) << ',' << (r.activationSparsity < 0 ? QString() : csvNumber(r.activationSparsity)) << '\n';
  }
  return out;
}

}  // namespace sdw::widgets
