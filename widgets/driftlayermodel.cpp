#include "widgets/driftlayermodel.h"

#include <cmath>

namespace sdw::widgets {

void DriftLayerModel::setData(const DriftData& data, int mode) {
  beginResetModel();
  rows_.clear();
  for (int k = 0; k < 2; ++k)
    labels_[k] = k < data.models.size() ? data.models[k].shortLabel : QString(QLatin1Char(char('A' + k)));
  for (int l = 0; l < data.layers; ++l) {
    Row r;
    r.layer = l;
    for (int k = 0; k < 2; ++k) {
      const DriftCurveSet* c = data.curves(k, mode);
      if (!c) continue;
      if (l < c->plateau.size()) r.plateau[k] = c->plateau[l];
      if (l < c->step90.size()) r.step90[k] = c->step90[l];
    }
    if (std::isfinite(r.plateau[0]) && std::isfinite(r.plateau[1]) && r.plateau[1] != 0)
      r.ratio = r.plateau[0] / r.plateau[1];
    rows_.push_back(r);
  }
  endResetModel();
  Q_EMIT headerDataChanged(Qt::Horizontal, 0, ColumnCount - 1);
}

int DriftLayerModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int DriftLayerModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant DriftLayerModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const Row& r = rows_[index.row()];
  if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole && role != ValueRole) return {};
  const bool display = role == Qt::DisplayRole;
  const auto number = [&](double v) -> QVariant { return display ? QVariant(formatDrift(v)) : QVariant(v); };
  const auto step = [&](int s) -> QVariant {
    if (!display) return s;
    return s < 0 ? QStringLiteral("–") : QString::number(s);
  };
  switch (index.column()) {
    case Layer: return r.layer;
    case PlateauA: return number(r.plateau[0]);
    case Step90A: return step(r.step90[0]);
    case PlateauB: return number(r.plateau[1]);
    case Step90B: return step(r.step90[1]);
    case PlateauRatio: return number(r.ratio);
    default: return {};
  }
}

QVariant DriftLayerModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal) return QAbstractTableModel::headerData(section, o, role);
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case PlateauA:
      case PlateauB: return tr("Mean drift over the last half of the decode steps");
      case Step90A:
      case Step90B: return tr("First decode step reaching 90% of the plateau");
      case PlateauRatio: return tr("Plateau of %1 / plateau of %2").arg(labels_[0], labels_[1]);
      default: return {};
    }
  }
  if (role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  // Two lines: the model, then the figure (keeps the columns narrow).
  switch (section) {
    case Layer: return tr("Layer");
    case PlateauA: return tr("%1\nplateau").arg(labels_[0]);
    case Step90A: return tr("%1\nstep90").arg(labels_[0]);
    case PlateauB: return tr("%1\nplateau").arg(labels_[1]);
    case Step90B: return tr("%1\nstep90").arg(labels_[1]);
    case PlateauRatio: return tr("%1 /\n%2").arg(labels_[0], labels_[1]);
    default: return {};
  }
}

}  // namespace sdw::widgets
