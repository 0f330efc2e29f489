#pragma once
// The drift plot (paper Fig. 1a), a PlotView (hover values, PNG/PDF/CSV
// export): per shown model, the relative drift of every layer's input by
// decode step (thin, shades of the model's colour), the median across layers
// (thick) inside the inter-quartile band, and per layer a marker where the
// curve first reaches 90% of its plateau. With one layer selected its
// plateau level shows as a dotted line over the steps it is averaged on.
// Display only.

#include "widgets/driftdata.h"
#include "widgets/plotview.h"

#include <QHash>
#include <QPointF>

namespace sdw::widgets {

// What the controls ask for.
struct DriftView {
  enum Models { ModelA = 0, ModelB = 1, Both = 2 };
  int mode = 0;          // index into DriftData::modes
  int models = Both;
  bool layerCurves = true;
  bool logSteps = false; // log axis: keys are step + 1 (step 0 has no log)
  int layer = -1;        // -1: every layer
};

class DriftPlot : public PlotView {
  Q_OBJECT
 public:
  enum Role { LayerCurve, Median, Q1, Q3, Step90, Plateau };
  // What each graph is, by graph index.
  struct Series {
    int model = 0;
    Role role = LayerCurve;
    int layer = -1;  // -1 for the across-layer series
  };

  explicit DriftPlot(QWidget* parent = nullptr);
  void setData(const DriftData& data, const DriftView& view);
  void clear();

  const DriftView& view() const { return view_; }
  QVector<int> shownModels() const;
  const QVector<Series>& series() const { return series_; }
  // -1 when that graph is not drawn.
  int graphIndex(int model, Role role, int layer = -1) const;
  // The graph's points as drawn (keys are step + stepOffset()).
  QVector<QPointF> seriesPoints(int graph) const;
  double stepOffset() const { return view_.logSteps ? 1.0 : 0.0; }
  bool logStepAxis() const;  // the x axis' scale type
  QString stepAxisLabel() const;
  // Pixel position of a point in plot coordinates (for tests: hover).
  QPoint pixelOf(double key, double value) const;

  // model,mode,layer,step,ratio: the shown models and mode, every layer the
  // filter lets through (also when the thin curves are hidden), then the
  // median, q1 and q3 rows (layer column "median", "q1", "q3"). Steps are
  // 0-based decode steps on either axis.
  QString curvesCsv() const;

 private:
  QString hoverText(const QString& name, int index, double key, double value) const;

  DriftData data_;
  DriftView view_;
  QVector<Series> series_;
  QHash<QString, int> byName_;
};

}  // namespace sdw::widgets
