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

// The spMspV rows of a run, arranged per activation sparsity (batch 1). The main weight
// layout's rows (50% unstructured) are the thin lines and the median; each other layout
// (pattern "col2:4", "col4:8", "dense", ...) has lines of its own, their shape named with the
// pattern ("llama3-8b q_proj col2:4"), drawn dashed, dotted or dash-dot in that order
// (the legend's median entries show which), and its own median.
struct ActivationSpeedups {
  struct Layout {
    QString pattern;        // "col2:4"
    QVector<double> median;  // per p_x: median over its shapes (0: none)
    // Per p_x: dense bytes / its bytes, median over its shapes (0: unknown). Drawn as a line of
    // its own where it differs from the main layout's by more than 15% (the dense layout's).
    QVector<double> bytesLimit{};
  };
  QVector<double> sparsities;       // p_x, ascending: the x of every line
  QStringList shapes;               // one line each: "llama3-8b q_proj", "1024x4096", "llama3-8b q_proj col2:4"
  QStringList shapePatterns;        // per line: "" for the main layout, else its Layout's pattern
  QVector<QVector<double>> values;  // values[s][k]: shape s at sparsities[k] (0: not measured)
  QVector<double> median;           // per p_x: median over the main layout's shapes (the run's activation summary; 0: none)
  QVector<Layout> layouts;          // the other layouts, in the run's order
  QVector<double> bytesLimit;       // per p_x: dense bytes / spMspV bytes of the main layout, median over the shapes
                                    // (0: unknown)
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
  static QString medianName(const QString& layout = {});  // another layout's: "median, col2:4"
  static QString limitName(const QString& layout = {});   // another layout's: "bytes limit, dense"
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
