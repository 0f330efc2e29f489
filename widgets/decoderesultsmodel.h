#pragma once
// The End-to-end decode view's results table: one row per (config, linear,
// pattern, batch) with tokens/s, the bandwidth it reached, the bandwidth
// limit in tokens/s and the share of it, the memory the model held, and how
// many of the engine's launches came from the tuning table's step entries.
// Display only: rows arrive measured or read from a file.

#include "widgets/decodebenchdata.h"

#include <QAbstractTableModel>
#include <QVector>

namespace sdw::widgets {

class DecodeResultsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    Config,
    Linear,
    Pattern,
    Batch,
    TokensPerSecond,
    GBs,
    LimitTokensPerSecond,
    PercentOfLimit,
    Memory,
    StepTuned,
    Engine,
    ColumnCount
  };
  // Numbers for sorting (the display role holds formatted text).
  static constexpr int SortRole = Qt::UserRole;

  explicit DecodeResultsModel(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  void clear();
  void appendRows(const QVector<DecodeRowData>& rows);
  const QVector<DecodeRowData>& rows() const { return rows_; }

  // One line per row, in model order:
  // config,linear,pattern,batch,tokens_per_second,gb_per_s,limit_tokens_per_second,
  // percent_of_limit,memory_bytes,median_ms,p10_ms,p90_ms,step_entry_launches,engine_launches,engine
  // (the launch counts empty where the row has none)
  QString toCsv() const;

 private:
  QVector<DecodeRowData> rows_;
};

}  // namespace sdw::widgets
