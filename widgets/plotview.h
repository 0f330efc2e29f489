#pragma once
// A QCustomPlot with the exports every plot needs (PNG, PDF, CSV), offered
// from a context menu. Replots are coalesced through a queued replot so a
// stream of addData calls does not redraw per sample.

#include <QVector>
#include <QWidget>

class QCustomPlot;

namespace sdw::widgets {

class PlotView : public QWidget {
  Q_OBJECT
 public:
  explicit PlotView(QWidget* parent = nullptr);

  QCustomPlot* plot() const { return plot_; }
  // Adds a line graph; returns its index. Convenience for simple series and
  // for code that must not include qcustomplot.h (QT_NO_KEYWORDS targets).
  int addSeries(const QString& name, const QVector<double>& keys, const QVector<double>& values);
  int seriesCount() const;
  void requestReplot();  // coalesced

  // Export by file extension: .png, .pdf or .csv. Returns an error message,
  // empty on success.
  QString exportTo(const QString& path) const;
  // CSV of every graph: columns graph,key,value.
  QString toCsv() const;

 private:
  void showExportDialog();
  QCustomPlot* plot_;
};

}  // namespace sdw::widgets
