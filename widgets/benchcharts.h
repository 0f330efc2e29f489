#pragma once
// The Benchmark panel's charts: time per call and GB/s per kernel as series
// that grow with the run (x = kernels timed since the run started, from 0;
// one graph per kernel), and per-shape bars of speedup over dense with the
// bandwidth limit drawn as a line. Shapes of a known model are grouped under
// its name and labelled by projection, horizontally. Beside the bars, shown
// only when the run has spMspV rows, the activation-sparsity chart
// (widgets/activationsparsitychart.h). Legends sit outside the axes: one
// strip above time and bandwidth, a row above the bars. Display only:
// measurements and speedups arrive computed; replots are coalesced by a short
// single-shot timer.

#include "widgets/activationsparsitychart.h"

#include <QColor>
#include <QPen>
#include <QRect>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <QVector>
#include <QWidget>

#include <map>
#include <utility>

class QSplitter;
class QCPAxis;
class QCPBars;
class QCPGraph;
class QCPItemStraightLine;
class QCPTextElement;
class QCustomPlot;

namespace sdw::widgets {

class LegendStrip;
class PlotView;

// Shared by the panel's charts: a bold title in a row above the axes, and the
// pen of a limit line (dashed red).
QCPTextElement* addChartTitle(QCustomPlot* plot, const QString& title);
QPen limitLinePen();

// A second text axis below `xAxis` (bold labels, no line or ticks, following its range): group
// names once under their slots, where the slot labels above stay short.
QCPAxis* addGroupAxisBelow(QCPAxis* xAxis);

// Side-by-side bars on `axis` (its key axis x, value axis y): series s at
// centers[i] + its offset within a group of width 0.8, values[s][i] > 0 only
// (0: not measured), coloured by color(name). Returns the bars in series order.
QVector<QCPBars*> addSideBySideBars(QCPAxis* xAxis, QCPAxis* yAxis, const QStringList& names,
                                    const QVector<QVector<double>>& values, const QVector<double>& centers,
                                    QColor (*color)(const QString& name));

// One timed kernel as the time and bandwidth charts show it.
struct BenchMeasurement {
  int index = 0;    // position in the run, from 0
  QString kernel;   // series name: "sparse 2:4", "dense (ours)", "cuBLAS", ...
  double us = 0;    // median time per call
  double gbs = 0;
};

// Per-shape speedups, computed by the caller: values[s][i] is series s on
// shape i (0: not measured).
struct SpeedupBars {
  QStringList shapes;
  QStringList series;
  QVector<QVector<double>> values;
  QString baseline;  // "cuBLAS", "our dense GEMV", ...
  int batch = 1;
};

class BenchCharts : public QWidget {
  Q_OBJECT
 public:
  explicit BenchCharts(QWidget* parent = nullptr);

  void clear();
  void addMeasurements(const QVector<BenchMeasurement>& ms);
  void setSpeedupBars(const SpeedupBars& bars);
  void setBandwidthLimit(double speedup);  // default 1.78
  // The spMspV rows by activation sparsity; the chart is shown only when there are some.
  void setActivationSpeedups(const ActivationSpeedups& s);

  PlotView* timeView() const { return timeView_; }
  PlotView* bandwidthView() const { return bwView_; }
  PlotView* speedupView() const { return speedupView_; }
  ActivationSparsityChart* activationChart() const { return activation_; }
  LegendStrip* legendStrip() const { return strip_; }  // names the series of time and bandwidth

  // For tests and exports.
  QStringList kernelSeries() const;
  int pointCount(const QString& kernel) const;  // in the time chart
  QColor seriesColor(const QString& kernel) const;  // its points' colour in the time chart (invalid if none)
  int barCount() const;                          // bars with a value
  double bandwidthLimit() const { return limit_; }
  QString bandwidthLimitLabel() const;
  const SpeedupBars& speedupBars() const { return bars_; }
  // shape,series,batch,baseline,speedup: one line per bar.
  QString speedupCsv() const;

  // The speedup chart's shape axis as drawn: one label per shape in display
  // order ("q", "gate", "layer", "1024x4096"), the model names under them,
  // and where each label's text lies in plot pixels (as of the last layout),
  // so a test can check that no two overlap.
  QStringList shapeTickLabels() const;
  QStringList shapeGroupLabels() const;
  QVector<QRect> shapeLabelRects() const;

  // A shape label as the bars' axis shows it: {model group, short label}.
  static std::pair<QString, QString> splitShapeLabel(const QString& shape);

 private:
  void scheduleReplot();
  void replotNow();
  void applyShapeTicks();
  void fitShapeLabels();
  QCPGraph* graphFor(PlotView* view, std::map<QString, QCPGraph*>& graphs, const QString& kernel);

  PlotView* timeView_;
  PlotView* bwView_;
  PlotView* speedupView_;
  ActivationSparsityChart* activation_;
  QSplitter* bottom_ = nullptr;  // the bars | the activation chart
  LegendStrip* strip_ = nullptr;
  std::map<QString, QCPGraph*> timeGraphs_, bwGraphs_;
  // The strip's entries in the order they first appeared: a kernel's name, or for the spMspV
  // kernels one family per layout ("spmspv col2:4") with its p_x values and their shades.
  QStringList stripKeys_;
  std::map<QString, std::map<double, std::pair<QString, QColor>>> spmspvShades_;
  QVector<QCPBars*> barPlottables_;
  QCPAxis* groupAxis_ = nullptr;     // a second bottom axis under the shapes: model names
  QCPGraph* limitLegend_ = nullptr;  // no data: the limit line's entry in the legend
  QCPItemStraightLine* limitLine_ = nullptr;
  QCPItemStraightLine* unitLine_ = nullptr;
  SpeedupBars bars_;
  // Display order of the shapes: bars_.shapes[order_[k]] is drawn k-th, at
  // positions_[k]; groups are runs of one model with a gap between them.
  QVector<int> order_;
  QVector<double> positions_;
  QStringList tickLabels_;  // in display order
  QStringList groupNames_;
  QVector<double> groupCenters_;
  bool staggered_ = false;  // labels too wide for their slot alternate between two lines
  double limit_ = 1.78;
  int lastIndex_ = -1;
  QTimer replotTimer_;
};

}  // namespace sdw::widgets
