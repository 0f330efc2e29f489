#pragma once
// Table model of the run files in a workspace. Rows are plain values built by
// the application from the run store; invalid files are rows too, with their
// error, so a broken file is visible rather than silently skipped.

#include <QAbstractTableModel>
#include <QVector>

namespace sdw::widgets {

struct RunRow {
  QString path;
  QString fileName;
  QString kind;       // "calibration", "pruning", ...; empty when unreadable
  QString status;     // "complete", "incomplete", "partial", "invalid"
  QString model;
  QString created;    // ISO-8601 UTC
  QString error;      // non-empty for unreadable files
  QString detailsHtml;
};

class RunListModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Name = 0, Kind, Status, Model, Created, ColumnCount };
  static constexpr int PathRole = Qt::UserRole + 1;
  static constexpr int ErrorRole = Qt::UserRole + 2;

  using QAbstractTableModel::QAbstractTableModel;

  void setRows(QVector<RunRow> rows);
  const QVector<RunRow>& rows() const { return rows_; }
  const RunRow* rowAt(int r) const { return (r >= 0 && r < rows_.size()) ? &rows_[r] : nullptr; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  QVector<RunRow> rows_;
};

}  // namespace sdw::widgets
