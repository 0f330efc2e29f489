#pragma once
// Table of per-module eps of one epsilon analysis: module, layer, eps(C) and
// its noise floor, eps(AR) and its noise floor, ratio, and whether the two eps
// differ by more than both floors. Display text is formatted; Qt::UserRole
// carries the raw number (for sorting).

#include "widgets/epsilondata.h"

#include <QAbstractTableModel>

namespace sdw::widgets {

class EpsilonModuleModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Module = 0, Layer, EpsC, NoiseC, EpsAR, NoiseAR, Ratio, Beyond, ColumnCount };
  static constexpr int ValueRole = Qt::UserRole;
  static constexpr int InputRole = Qt::UserRole + 1;  // index into EpsilonData::inputs

  using QAbstractTableModel::QAbstractTableModel;

  void setData(const EpsilonData& data);
  const EpsilonModuleData* rowAt(int r) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  QVector<EpsilonModuleData> rows_;
  QString cLabel_ = QStringLiteral("C4");
  QString arLabel_ = QStringLiteral("AR");
  QString cNoiseNote_, arNoiseNote_;  // why a run has no noise floor
};

}  // namespace sdw::widgets
