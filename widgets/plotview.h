#pragma once
// A QCustomPlot with the exports every plot needs (PNG, PDF, CSV), offered
// from a context menu. Replots are coalesced through a queued replot so a
// stream of addData calls does not redraw per sample.

#include <QPointF>
#include <QRect>
#include <QVector>
#include <QWidget>

#include <functional>
#include <utility>

class QCustomPlot;
class QMouseEvent;

class QCPAxis;

namespace sdw::widgets {

// Log (powers of ten) or linear scale with the matching ticks and number format.
void setLogAxis(QCPAxis* axis, bool log);

class PlotView : public QWidget {
  Q_OBJECT
 public:
  explicit PlotView(QWidget* parent = nullptr);

  QCustomPlot* plot() const { return plot_; }
  // Adds a line graph; returns its index. Convenience for simple series and
  // for code that must not include qcustomplot.h (QT_NO_KEYWORDS targets).
  int addSeries(const QString& name, const QVector<double>& keys, const QVector<double>& values);
  int seriesCount() const;
  // A line graph's name and points (key, value) as drawn, NaN gaps included;
  // empty for an index out of range. For tests and exports.
  QString seriesName(int index) const;
  QVector<QPointF> seriesPoints(int index) const;
  void requestReplot();  // coalesced

  // Moves the legend out of the axes into a row of its own right above the
  // axis rect (under a title row, if any), wrapped into as many columns as
  // the plot's width holds, re-wrapped when the width or the entries change:
  // a legend inside the axes hides data sooner or later.
  void placeLegendAbove();
  // Where the legend and the axes' data area are, in plot pixels, as of the
  // last layout; the legend's rect is empty while it is hidden. For tests
  // that check the legend never covers data.
  QRect legendRect() const;
  QRect dataRect() const;
  // For a plot whose legend is hidden because a strip beside it explains the
  // colours: PNG and PDF exports draw the legend above the axes anyway.
  void setLegendInPictures(bool on) { legendInPictures_ = on; }
  // The bottom axis as a reader sees it: its label and its shown range.
  QString xAxisLabel() const;
  std::pair<double, double> xRange() const;

  // Export by file extension: .png, .pdf or .csv. Returns an error message,
  // empty on success.
  QString exportTo(const QString& path) const;
  // CSV of every graph: columns graph,key,value; or, when a provider is
  // set, whatever it returns (plots whose rows are not graph points, e.g. one
  // row per module of a scatter).
  QString toCsv() const;
  void setCsvProvider(std::function<QString()> provider) { csvProvider_ = std::move(provider); }

  // Hover: on mouse move, the data point nearest to the cursor (graphs and
  // bars, within `radiusPx`) is shown in a tool tip. The formatter gets the
  // plottable's name, the point's index in its data and its key and value;
  // an empty answer skips that plottable (e.g. a guide line).
  using HoverFormatter = std::function<QString(const QString& series, int index, double key, double value)>;
  void enableHover(HoverFormatter formatter = {}, double radiusPx = 24.0);
  // What the tool tip would say with the cursor at `pos` (plot coordinates,
  // pixels); empty when no point is near. For tests and for the tip itself.
  QString hoverTextAt(const QPoint& pos) const;

 private:
  void showExportDialog();
  void onMouseMove(QMouseEvent* e);
  void fitLegend();
  QCustomPlot* plot_;
  std::function<QString()> csvProvider_;
  HoverFormatter hoverFormatter_;
  double hoverRadius_ = 24.0;
  bool hoverOn_ = false;
  bool legendInPictures_ = false;
};

}  // namespace sdw::widgets
