#pragma once
// The Benchmark panel's activation-sparsity chart (spMspV: sparse weights x
// sparse activations): speed-up over our dense GEMV against the activation
// sparsity p_x, one thin line per shape (coloured by projection, named in the
// strip above), the median over the shapes as a thick line and, dashed, the
// speed-up the bytes alone would allow (dense bytes / spMspV bytes). Display
// only: every value arrives computed (app/gui/benchmarkcontroller.h).

#include <QPointF>
#include <QString>
#include <QStringList>
#include <QVector>
#include <QWidget>

class QCPItemStraightLine;
class QCPTextElement;

namespace sdw::widgets {

class LegendStrip;
class PlotView;

// The spMspV rows of a run, arranged per activation sparsity (batch 1). Rows of the
// column 2:4 layout (pattern "col2:4") are lines of their own, their shape named with
// the pattern ("llama3-8b q_proj col2:4"), and have their own median.
struct ActivationSpeedups {
  static constexpr const char* kColumnPattern = "col2:4";
  QVector<double> sparsities;       // p_x, ascending: the x of every line
  QStringList shapes;               // one line each: "llama3-8b q_proj", "1024x4096", "llama3-8b q_proj col2:4"
  QVector<QVector<double>> values;  // values[s][k]: shape s at sparsities[k] (0: not measured)
  QVector<double> median;           // per p_x: median over the 50% rows' shapes (the run's activation summary; 0: none)
  QVector<double> columnMedian;     // the same over the col2:4 rows (empty: none measured)
  QVector<double> bytesLimit;       // per p_x: dense bytes / spMspV bytes, median over the shapes (0: unknown)
  QString baseline;                 // the dense GEMV the speed-ups are over: "our dense GEMV", ...
  bool isEmpty() const { return sparsities.isEmpty(); }
};

class ActivationSparsityChart : public QWidget {
  Q_OBJECT
 public:
  explicit ActivationSparsityChart(QWidget* parent = nullptr);

  void setSpeedups(const ActivationSpeedups& s);  // empty: no lines, a note in the title
  const ActivationSpeedups& speedups() const { return data_; }

  PlotView* view() const { return view_; }
  LegendStrip* legendStrip() const { return strip_; }

  // The names of the lines that are not shapes.
  static QString medianName();
  static QString columnMedianName();  // "median over the shapes, col2:4"
  static QString limitName();
  // For tests and exports: a line's points as drawn (p_x, speed-up); its name
  // is a shape, medianName() or limitName(). Empty for a name not drawn.
  QVector<QPointF> points(const QString& series) const;
  QStringList seriesNames() const;
  // series,activation_sparsity,speedup,baseline: one line per point drawn.
  QString toCsv() const;

 private:
  void replot();

  PlotView* view_;
  LegendStrip* strip_;
  QCPTextElement* title_ = nullptr;
  QCPItemStraightLine* unitLine_ = nullptr;
  ActivationSpeedups data_;
};

}  // namespace sdw::widgets
