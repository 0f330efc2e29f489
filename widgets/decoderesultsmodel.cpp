#include "widgets/decoderesultsmodel.h"

#include "widgets/csv.h"
#include "widgets/moduletreemodel.h"

#include <QTextStream>

namespace sdw::widgets {

DecodeResultsModel::DecodeResultsModel(QObject* parent) : QAbstractTableModel(parent) {}

int DecodeResultsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int DecodeResultsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant DecodeResultsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rows_.size() || index.column() >= ColumnCount) return {};
  const DecodeRowData& r = rows_[index.row()];
  const double percent = 100.0 * r.ratioToLimit;
  if (role == Qt::TextAlignmentRole)
    return index.column() == Config || index.column() == Linear || index.column() == Pattern || index.column() == Engine
               ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
               : QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole) {
    // The step-time spread says whether the median can be trusted.
    return tr("%1\nmedian step %2 ms (p10 %3, p90 %4) over %5 timed steps after %6 warm-up, context %7, %8")
        .arg(r.engine.isEmpty() ? r.linear : r.engine)
        .arg(r.medianMs, 0, 'f', 3)
        .arg(r.p10Ms, 0, 'f', 3)
        .arg(r.p90Ms, 0, 'f', 3)
        .arg(r.timedSteps)
        .arg(r.warmup)
        .arg(r.context)
        .arg(r.dtype);
  }
  if (role == SortRole) {
    switch (index.column()) {
      case Config: return r.config;
      case Linear: return r.linear;
      case Pattern: return r.pattern;
      case Batch: return r.batch;
      case TokensPerSecond: return r.tokensPerSecond;
      case GBs: return r.gbs;
      case LimitTokensPerSecond: return r.limitTokensPerSecond;
      case PercentOfLimit: return percent;
      case Memory: return r.memoryBytes;
      case StepTuned: return r.engineLaunches > 0 ? double(r.stepEntryLaunches) / r.engineLaunches : -1.0;
      case Engine: return r.engine;
    }
    return {};
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Config: return r.config;
    case Linear: return r.linear;
    case Pattern: return r.pattern.isEmpty() ? QStringLiteral("-") : r.pattern;
    case Batch: return r.batch;
    case TokensPerSecond: return QString::number(r.tokensPerSecond, 'f', r.tokensPerSecond < 100 ? 2 : 1);
    case GBs: return QString::number(r.gbs, 'f', r.gbs < 10 ? 2 : 0);
    case LimitTokensPerSecond:
      return r.limitTokensPerSecond > 0 ? QString::number(r.limitTokensPerSecond, 'f', 1) : QStringLiteral("-");
    case PercentOfLimit: return r.limitTokensPerSecond > 0 ? QString::number(percent, 'f', 1) : QStringLiteral("-");
    case Memory:
      return r.memoryBytes > 0 ? ModuleTreeModel::formatBytes(static_cast<quint64>(r.memoryBytes))
                               : QStringLiteral("-");
    case StepTuned:
      return r.engineLaunches >= 0 && r.stepEntryLaunches >= 0
                 ? QStringLiteral("%1 / %2").arg(r.stepEntryLaunches).arg(r.engineLaunches)
                 : QStringLiteral("-");
    case Engine: return r.engine;
  }
  return {};
}

QVariant DecodeResultsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case Linear:
        return tr(
            "cublas: cuBLAS; dense: our dense GEMV; sparse: our bitmask SpMV over packed N:M weights; "
            "eager: the LibTorch forward pass without the decode engine");
      case TokensPerSecond: return tr("batch / median step time");
      case GBs: return tr("bytes one step must read (weights as held, one embedding row, the KV cache) / median step");
      case LimitTokensPerSecond:
        return tr("tokens/s if every step read its bytes at the read bandwidth measured in the same run");
      case PercentOfLimit: return tr("tokens/s as a share of the bandwidth limit");
      case Memory:
        return tr(
            "what the model held on its device after the timed steps: weights (packed where packed), "
            "KV cache, engine buffers");
      case StepTuned:
        return tr(
            "decode engine: of its SpMV / GEMV launches per step, how many took the launch chosen in the "
            "whole step for that shape and batch (the tuning table's step entries, sdw-cli bench decode "
            "--tune-step); the others run kernel-level or heuristic launches");
      default: return {};
    }
  }
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case Config: return tr("Config");
    case Linear: return tr("Linear");
    case Pattern: return tr("Pattern");
    case Batch: return tr("Batch");
    case TokensPerSecond: return tr("Tokens/s");
    case GBs: return tr("GB/s");
    case LimitTokensPerSecond: return tr("Limit tokens/s");
    case PercentOfLimit: return tr("% of limit");
    case Memory: return tr("GPU memory");
    case StepTuned: return tr("Step-tuned launches");
    case Engine: return tr("Engine");
  }
  return {};
}

void DecodeResultsModel::clear() {
  beginResetModel();
  rows_.clear();
  endResetModel();
}

void DecodeResultsModel::appendRows(const QVector<DecodeRowData>& rows) {
  if (rows.isEmpty()) return;
  const int first = static_cast<int>(rows_.size());
  beginInsertRows({}, first, first + static_cast<int>(rows.size()) - 1);
  rows_ += rows;
  endInsertRows();
}

QString DecodeResultsModel::toCsv() const {
  QString out;
  QTextStream s(&out);
  s << "config,linear,pattern,batch,tokens_per_second,gb_per_s,limit_tokens_per_second,percent_of_limit,"
       "memory_bytes,median_ms,p10_ms,p90_ms,step_entry_launches,engine_launches,engine\n";
  for (const DecodeRowData& r : rows_)
    s << csvField(r.config) << ',' << csvField(r.linear) << ',' << csvField(r.pattern) << ',' << r.batch << ','
      << csvNumber(r.tokensPerSecond) << ',' << csvNumber(r.gbs) << ',' << csvNumber(r.limitTokensPerSecond) << ','
      << csvNumber(100.0 * r.ratioToLimit) << ',' << csvNumber(r.memoryBytes) << ',' << csvNumber(r.medianMs) << ','
      << csvNumber(r.p10Ms) << ',' << csvNumber(r.p90Ms) << ','
      << (r.stepEntryLaunches >= 0 ? QString::number(r.stepEntryLaunches) : QString()) << ','
      << (r.engineLaunches >= 0 ? QString::number(r.engineLaunches) : QString()) << ',' << csvField(r.engine) << '\n';
  return out;
}

}  // namespace sdw::widgets
