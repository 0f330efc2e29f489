#pragma once
// The three plots of an epsilon analysis, each a PlotView (hover values,
// PNG/PDF/CSV export): per-input eps bars grouped by layer and projection
// type, the eps(C) vs eps(AR) scatter with the diagonal, and the
// eigen-spectra of one input on a log axis. Display only.

#include "widgets/epsilondata.h"
#include "widgets/plotview.h"

class QCPGraph;

namespace sdw::widgets {

// Two bars per projection input (eps of the fixed-text run and of the AR
// run), layers side by side, q/k/v, o, gate/up, down within a layer; each bar
// with an error bar of +-its noise floor where the run has one.
class EpsilonBarsPlot : public PlotView {
  Q_OBJECT
 public:
  explicit EpsilonBarsPlot(QWidget* parent = nullptr);
  void setData(const EpsilonData& data);
  // x position of an input's bar pair (layout only).
  double positionOf(int input) const { return input >= 0 && input < positions_.size() ? positions_[input] : -1; }
  int errorBarSeries() const { return errorBars_; }  // bar series drawn with noise-floor error bars

 private:
  EpsilonData data_;
  QVector<double> positions_;              // [inputs]
  QVector<QVector<int>> barInputs_;        // per bar series: data index -> input
  int errorBars_ = 0;
};

// One point per module: x = eps(C), y = eps(AR); points under the diagonal
// are modules where AR is lower. Log axes when every value is positive. The
// CSV export has one row per module.
class EpsilonScatterPlot : public PlotView {
  Q_OBJECT
 public:
  explicit EpsilonScatterPlot(QWidget* parent = nullptr);
  void setData(const EpsilonData& data);
  void setSelectedModule(int module);
  QString moduleCsv() const;
  int pointCount() const { return pointModules_.size(); }
  bool logAxes() const { return log_; }
  // Pixel position of a module's point (for tests: hover, click).
  QPoint pixelOf(int module) const;

 Q_SIGNALS:
  void moduleClicked(int module);

 private:
  EpsilonData data_;
  QVector<int> pointModules_;  // data index of the points graph -> module
  QCPGraph* points_ = nullptr;
  QCPGraph* diagonal_ = nullptr;
  QCPGraph* selected_ = nullptr;
  bool log_ = false;
};

// Eigenvalues of H_D, H_C and H_AR of one input, descending, log y.
class EpsilonSpectrumPlot : public PlotView {
  Q_OBJECT
 public:
  explicit EpsilonSpectrumPlot(QWidget* parent = nullptr);
  void setInput(const EpsilonInputData& input, const QString& cLabel, const QString& arLabel);
  void clear();
  QString inputName() const { return input_; }

 private:
  QString input_;
};

}  // namespace sdw::widgets
