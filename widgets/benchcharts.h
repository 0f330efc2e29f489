#pragma once
// The Benchmark panel's charts: time per call and GB/s per kernel as rolling
// series (x = measurement index, one graph per kernel), and per-shape bars of
// speedup over dense with the bandwidth limit drawn as a labelled line.
// Display only: measurements and speedups arrive computed; replots are
// coalesced by a short single-shot timer.

#include <QString>
#include <QStringList>
#include <QTimer>
#include <QVector>
#include <QWidget>

#include <map>

class QCPBars;
class QCPGraph;
class QCPItemStraightLine;
class QCPItemText;

namespace sdw::widgets {

class PlotView;

// One timed kernel as the rolling charts show it.
struct BenchMeasurement {
  int index = 0;    // position in the run
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
  // Points kept per rolling series (older ones scroll out).
  void setRollingWindow(int points) { window_ = points; }

  PlotView* timeView() const { return timeView_; }
  PlotView* bandwidthView() const { return bwView_; }
  PlotView* speedupView() const { return speedupView_; }

  // For tests and exports.
  QStringList kernelSeries() const;
  int pointCount(const QString& kernel) const;  // in the time chart
  int barCount() const;                          // bars with a value
  double bandwidthLimit() const { return limit_; }
  QString bandwidthLimitLabel() const;
  const SpeedupBars& speedupBars() const { return bars_; }
  // shape,series,batch,baseline,speedup: one line per bar.
  QString speedupCsv() const;

 private:
  void scheduleReplot();
  void replotNow();
  QCPGraph* graphFor(PlotView* view, std::map<QString, QCPGraph*>& graphs, const QString& kernel);

  PlotView* timeView_;
  PlotView* bwView_;
  PlotView* speedupView_;
  std::map<QString, QCPGraph*> timeGraphs_, bwGraphs_;
  QVector<QCPBars*> barPlottables_;
  QCPItemStraightLine* limitLine_ = nullptr;
  QCPItemStraightLine* unitLine_ = nullptr;
  QCPItemText* limitText_ = nullptr;
  SpeedupBars bars_;
  double limit_ = 1.78;
  int window_ = 400;
  int lastIndex_ = -1;
  QTimer replotTimer_;
};

}  // namespace sdw::widgets
