#pragma once
// The cells of a study as a table: one row per source x decoding x solver x
// pattern, each figure as "mean ± CI" over the seeds (95%, Student's t).
// ValueRole carries the mean (numbers sort as numbers), CiRole the half
// width.

#include "widgets/studydata.h"

#include <QAbstractTableModel>

namespace sdw::widgets {

class StudyCellModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    Source = 0,
    Decoding,
    Solver,
    Pattern,
    Kl,
    Agreement,
    FirstDivergence,
    PplDenseGen,
    PplText,
    RelError,
    Seeds,
    ColumnCount
  };
  static constexpr int ValueRole = Qt::UserRole;
  static constexpr int CiRole = Qt::UserRole + 1;

  using QAbstractTableModel::QAbstractTableModel;

  void setCells(const QVector<StudyCellData>& cells);
  const StudyCellData* rowAt(int r) const;

  // One line per cell; mean, ci95 and n of each figure in columns of their own.
  QString toCsv() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  QVector<StudyCellData> rows_;
};

}  // namespace sdw::widgets
