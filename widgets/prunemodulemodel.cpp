#include "widgets/prunemodulemodel.h"

#include "widgets/csv.h"

#include <QRegularExpression>
#include <QTextStream>

#include <cmath>

namespace sdw::widgets {

namespace {

QString number(double v) {
  if (v == 0) return QStringLiteral("0");
  const double a = std::abs(v);
  return (a >= 1e-3 && a < 1e5) ? QString::number(v, 'g', 4) : QString::number(v, 'e', 2);
}

}  // namespace

void PruneModuleModel::setRows(const QVector<PruneModuleData>& rows) {
  beginResetModel();
  rows_ = rows;
  endResetModel();
}

void PruneModuleModel::appendRow(const PruneModuleData& row) {
  const int n = static_cast<int>(rows_.size());
  beginInsertRows({}, n, n);
  rows_.push_back(row);
  endInsertRows();
}

void PruneModuleModel::clear() { setRows({}); }

const PruneModuleData* PruneModuleModel::rowAt(int r) const {
  return (r >= 0 && r < rows_.size()) ? &rows_[r] : nullptr;
}

int PruneModuleModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int PruneModuleModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant PruneModuleModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const PruneModuleData& r = rows_[index.row()];
  const int c = index.column();
  if (role == Qt::TextAlignmentRole)
    return c == Module ? QVariant() : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
  if (role == Qt::ToolTipRole) {
    if (c == Module) return r.module;
    if (c == Damping)
      return tr("damping %1 of mean(diag H) after %2 ladder step(s); %3 dead input(s)")
          .arg(r.percdampUsed, 0, 'g', 4)
          .arg(r.dampingSteps)
          .arg(r.deadInputs);
    if (c == Shape)
      return r.packed ? tr("in the packed file (model.sdwsparse or model.sdwcolumn)") : tr("not in a packed file");
    return {};
  }
  if (role == ValueRole) {
    switch (c) {
      case Module: return r.module;
      case Layer: return r.layer;
      case Shape: return static_cast<double>(r.rows) * static_cast<double>(r.cols);
      case Loss: return r.loss;
      case OutputLoss: return r.outputLoss;
      case RelError: return r.relOutputError;
      case Sparsity: return r.sparsity;
      case Damping: return r.percdampUsed;
      case Seconds: return r.seconds;
      default: return {};
    }
  }
  if (role != Qt::DisplayRole) return {};
  switch (c) {
    case Module: {
      // "model.layers.3.self_attn.q_proj" -> "self_attn.q_proj": the layer has its own column
      static const QRegularExpression layerPrefix(QStringLiteral("^.*layers\\.\\d+\\."));
      QString shown = r.module;
      shown.remove(layerPrefix);
      return shown;
    }
    case Layer: return r.layer;
    case Shape: return QStringLiteral("%1×%2").arg(r.rows).arg(r.cols);
    case Loss: return number(r.loss);
    case OutputLoss: return number(r.outputLoss);
    case RelError: return number(r.relOutputError);
    case Sparsity: return QStringLiteral("%1%").arg(100.0 * r.sparsity, 0, 'f', 1);
    case Damping:
      if (r.percdampUsed == 0 && r.dampingSteps == 0) return QStringLiteral("–");
      return r.dampingSteps > 0 ? QStringLiteral("%1 (+%2)").arg(r.percdampUsed, 0, 'g', 3).arg(r.dampingSteps)
                                : QString::number(r.percdampUsed, 'g', 3);
    case Seconds: return QString::number(r.seconds, 'f', 3);
    default: return {};
  }
}

QVariant PruneModuleModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal) return QAbstractTableModel::headerData(section, o, role);
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case Loss:
        return tr(
            "SparseGPT: sum (w - q)^2 / Hinv_jj^2 / 2; DuoGPT: its damped objective's increase over the "
            "unconstrained minimum; Wanda, magnitude: the output loss");
      case OutputLoss: return tr("tr(dW H dW^T) / 2 with the undamped H: comparable across methods");
      case RelError:
        return tr("||(W - W_pruned) X||^2 / ||W X||^2; DuoGPT: ||W X_dense - W_pruned X_sparse||^2 / ||W X_dense||^2");
      case Damping: return tr("SparseGPT / DuoGPT damping used (fraction of mean(diag H)); (+n): ladder steps taken");
      default: return {};
    }
  }
  if (role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  switch (section) {
    case Module: return tr("Module");
    case Layer: return tr("Layer");
    case Shape: return tr("Rows×cols");
    case Loss: return tr("Loss");
    case OutputLoss: return tr("Out. loss");
    case RelError: return tr("Rel. error");
    case Sparsity: return tr("Sparsity");
    case Damping: return tr("Damping");
    case Seconds: return tr("Time (s)");
    default: return {};
  }
}

QString PruneModuleModel::toCsv() const {
  QString out;
  QTextStream s(&out);
  s << "module,layer,rows,cols,loss,output_loss,rel_output_error,sparsity,percdamp_used,damping_steps,dead_inputs,"
       "seconds,packed\n";
  for (const PruneModuleData& r : rows_)
    s << csvField(r.module) << ',' << r.layer << ',' << r.rows << ',' << r.cols << ',' << csvNumber(r.loss) << ','
      << csvNumber(r.outputLoss) << ',' << csvNumber(r.relOutputError) << ',' << csvNumber(r.sparsity) << ','
      << csvNumber(r.percdampUsed) << ',' << r.dampingSteps << ',' << r.deadInputs << ',' << csvNumber(r.seconds)
      << ',' << (r.packed ? 1 : 0) << '\n';
  return out;
}

}  // namespace sdw::widgets
