#pragma once
// A grouped bar chart of a study with 95% confidence intervals: groups along
// x (solver and pattern, or decoding), one bar per series in each group
// (source and decoding), error bars for the intervals, and an optional
// horizontal guide line (e.g. 0.5: no preference). The legend sits in a row
// above the axes. Display only: bars, intervals, tips and the CSV arrive
// ready in StudyChartData.

#include "widgets/plotview.h"
#include "widgets/studydata.h"

class QCPBars;
class QCPErrorBars;
class QCPItemStraightLine;
class QCPGraph;
class QCPTextElement;

namespace sdw::widgets {

class StudyChart : public PlotView {
  Q_OBJECT
 public:
  explicit StudyChart(const QString& title, QWidget* parent = nullptr);

  void setChart(const StudyChartData& chart);
  const StudyChartData& chart() const { return chart_; }

  // What is drawn, for tests: bars over all series, the bar heights and the
  // error bars' half widths in series order, the legend's names, the guide.
  int barCount() const;
  QVector<double> barValues() const;
  QVector<double> errorValues() const;
  QStringList legendNames() const;
  QStringList groupLabels() const;
  bool hasReferenceLine() const;
  double referenceValue() const;
  // Pixel centre of bar `group` of series `series` (for hover tests); (-1,-1) when absent.
  QPoint barPixel(int series, int group) const;

 private:
  StudyChartData chart_;
  QVector<QCPBars*> bars_;
  QVector<QCPErrorBars*> errors_;
  QVector<QVector<int>> barGroups_;  // per series: data index -> group
  QCPItemStraightLine* reference_ = nullptr;
  QCPGraph* referenceLegend_ = nullptr;  // the guide's legend entry (a line has none of its own)
};

// Series colours: fixed text blue, AR red, cross-model green (as in the
// epsilon plots); a later decoding of the same source a lighter shade.
QColor studySeriesColor(const QString& source, int shade);

}  // namespace sdw::widgets
