#include "widgets/epsilonmodulemodel.h"

#include <QRegularExpression>

namespace sdw::widgets {

void EpsilonModuleModel::setData(const EpsilonData& data) {
  beginResetModel();
  rows_ = data.modules;
  cLabel_ = data.cLabel.isEmpty() ? QStringLiteral("C") : data.cLabel;
  arLabel_ = data.arLabel;
  cNoiseNote_ = data.cNoiseNote;
  arNoiseNote_ = data.arNoiseNote;
  endResetModel();
  Q_EMIT headerDataChanged(Qt::Horizontal, 0, ColumnCount - 1);
}

const EpsilonModuleData* EpsilonModuleModel::rowAt(int r) const {
  return (r >= 0 && r < rows_.size()) ? &rows_[r] : nullptr;
}

int EpsilonModuleModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int EpsilonModuleModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant EpsilonModuleModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const EpsilonModuleData& r = rows_[index.row()];
  const auto number = [&](double v) -> QVariant {
    if (role == Qt::DisplayRole) return formatEps(v);
    return v;
  };
  if (role == InputRole) return r.input;
  if (role == Qt::TextAlignmentRole)
    return index.column() == Module ? QVariant() : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
  if (role == Qt::ToolTipRole && index.column() == Module) return r.module;
  if (role == Qt::ToolTipRole && (index.column() == NoiseC || index.column() == NoiseAR)) {
    const QString& why = index.column() == NoiseC ? cNoiseNote_ : arNoiseNote_;
    if (!why.isEmpty()) return tr("No noise floor: %1").arg(why);
    return tr("eps between two runs of this run's process at its token budget, from its two halves");
  }
  if (role == Qt::ToolTipRole && index.column() == Beyond)
    return tr("yes: |eps(%1) - eps(%2)| > (noise(%1) + noise(%2)) / sqrt(2): the noise-free eps are ordered as "
              "measured")
        .arg(cLabel_, arLabel_);
  if (role != Qt::DisplayRole && role != ValueRole) return {};
  switch (index.column()) {
    case Module: {
      if (role != Qt::DisplayRole) return r.module;
      // "model.layers.3.self_attn.q_proj" -> "self_attn.q_proj": the layer has its own column
      static const QRegularExpression layerPrefix(QStringLiteral("^.*layers\\.\\d+\\."));
      QString shown = r.module;
      shown.remove(layerPrefix);
      return shown;
    }
    case Layer: return r.layer;
    case EpsC: return number(r.epsC);
    case NoiseC: return number(r.noiseC);
    case EpsAR: return number(r.epsAR);
    case NoiseAR: return number(r.noiseAR);
    case Ratio: return number(r.ratio);
    case Beyond:
      if (role == ValueRole) return r.beyondNoise;
      return r.beyondNoise < 0 ? QStringLiteral("–") : r.beyondNoise ? tr("yes") : tr("no");
    default: return {};
  }
}

QVariant EpsilonModuleModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  switch (section) {
    case Module: return tr("Module");
    case Layer: return tr("Layer");
    case EpsC: return tr("eps(%1)").arg(cLabel_);
    case NoiseC: return tr("noise(%1)").arg(cLabel_);
    case EpsAR: return arLabel_.isEmpty() ? tr("eps(–)") : tr("eps(%1)").arg(arLabel_);
    case NoiseAR: return arLabel_.isEmpty() ? tr("noise(–)") : tr("noise(%1)").arg(arLabel_);
    case Ratio: return tr("ratio");
    case Beyond: return tr("beyond noise");
    default: return {};
  }
}

}  // namespace sdw::widgets
