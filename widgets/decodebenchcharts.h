#pragma once
// The End-to-end decode view's charts: tokens/s of every timed decode step,
// one line per engine cell (config, linear, pattern, batch), against the
// timed steps since the run started (cells run one after another, so each
// line has its own stretch of the axis); while a run is live the axis
// scrolls with the newest step. Below, per (config, batch) each sparse
// pattern's speed-up over the dense baseline as bars, with the bandwidth
// limit of that speed-up drawn as a dashed line over the group. Display only:
// points and speed-ups arrive computed; replots are coalesced by a short
// single-shot timer.

#include "widgets/decodebenchdata.h"

#include <QColor>
#include <QPair>
#include <QPointF>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <QVector>
#include <QWidget>

#include <map>

class QCPAxis;
class QCPBars;
class QCPGraph;
class QCPItemLine;
class QCPItemStraightLine;

namespace sdw::widgets {

class LegendStrip;
class PlotView;

class DecodeBenchCharts : public QWidget {
  Q_OBJECT
 public:
  explicit DecodeBenchCharts(QWidget* parent = nullptr);

  void clear();
  void addSteps(const QVector<DecodeStepPoint>& points);
  // While following, the step axis shows the newest `scrollWindow` steps;
  // otherwise the whole run.
  void setFollowing(bool on);
  void setScrollWindow(int steps);
  void setSpeedupBars(const DecodeSpeedupBars& bars);

  PlotView* stepView() const { return stepView_; }
  PlotView* speedupView() const { return speedupView_; }
  LegendStrip* legendStrip() const { return strip_; }

  // For tests and exports.
  QStringList cellSeries() const;  // in the order they first appeared
  int pointCount(const QString& cell) const;
  QVector<QPointF> points(const QString& cell) const;  // (step index, tokens/s)
  QColor seriesColor(const QString& cell) const;       // its line's colour (invalid if none)
  QStringList pictureLegend() const;                   // the step chart's legend in an exported picture, in order
  bool isFollowing() const { return following_; }
  int barCount() const;  // bars with a value
  QVector<QColor> barColors() const;  // each pattern's bars, in the legend's order
  const DecodeSpeedupBars& speedupBars() const { return bars_; }
  // The limit lines as drawn: one per group with a known limit, its height.
  QVector<double> limitLineValues() const;
  QStringList groupTickLabels() const;  // the groups as given ("CONFIG\nbatch N")
  // As drawn: under each slot its batch ("batch N"), and on a second axis below each config's
  // name once, centred under its run of slots (so long names do not run into each other).
  QStringList drawnTickLabels() const;
  QStringList configAxisLabels() const;
  // The pixel columns [left, right) each drawn label takes on its row (after a replot):
  // the slot labels (configRow false) or the config names.
  QVector<QPair<int, int>> drawnLabelSpans(bool configRow) const;
  // The pixel rows of the value axis' drawn tick labels, top to bottom (after a replot), of the
  // speed-up chart (or of the steps chart), and the height of one such label.
  QVector<int> valueLabelRows(bool speedup = true) const;
  int valueLabelHeight() const;
  // group,pattern,baseline,speedup,speedup_limit: one line per bar.
  QString speedupCsv() const;

 private:
  void scheduleReplot();
  void replotNow();
  QCPGraph* graphFor(const DecodeStepPoint& p);

  PlotView* stepView_;
  PlotView* speedupView_;
  LegendStrip* strip_ = nullptr;
  std::map<QString, QCPGraph*> graphs_;
  QStringList cells_;
  // The legend: per engine (in the order they first ran) its batches and their shades.
  QStringList legendEngines_;
  std::map<QString, std::map<int, QColor>> legendShades_;
  // A picture of the step chart alone carries the strip's entries as its legend: one empty
  // graph per engine, named as the strip names it (the cells' own graphs stay out of it).
  std::map<QString, QCPGraph*> legendGraphs_;
  QVector<QCPBars*> barPlottables_;
  QVector<QCPItemLine*> limitLines_;
  QVector<double> limitValues_;
  QCPGraph* limitLegend_ = nullptr;  // no data: the limit lines' entry in the legend
  QCPItemStraightLine* unitLine_ = nullptr;
  DecodeSpeedupBars bars_;
  QStringList tickLabels_;
  QCPAxis* configAxis_ = nullptr;  // second bottom axis: config names under their slots
  int lastIndex_ = -1;
  int window_ = 250;
  bool following_ = false;
  QTimer replotTimer_;
};

}  // namespace sdw::widgets
