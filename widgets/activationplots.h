#pragma once
// The three plots of the Activations tab, each a PlotView (hover values,
// PNG/PDF/CSV export), one curve per calibration run with samples, the same
// colour for a run in all three: the histogram of one input's sampled values,
// its mean |x| per channel, and the median L2 norm of its sampled rows by
// decode step (runs that decode: AR and cross-model). Display only.

#include "widgets/activationdata.h"
#include "widgets/plotview.h"

class QCPItemText;

namespace sdw::widgets {

// Sampled values of one input, one step curve per run, over 101 bins (by
// default) symmetric around 0 spanning the largest |x| of all runs.
class ActivationHistogramPlot : public PlotView {
  Q_OBJECT
 public:
  explicit ActivationHistogramPlot(QWidget* parent = nullptr);
  void setData(const ActivationInputData& data);
  void setLogCount(bool on);
  bool logCount() const { return log_; }
  void setBins(int bins);
  int bins() const { return bins_; }
  void clear();
  // Per curve, the histogram drawn (counts as counted, zeros included).
  const QVector<Histogram>& histograms() const { return histograms_; }
  QString histogramCsv() const;

 private:
  void redraw();
  ActivationInputData data_;
  QVector<Histogram> histograms_;
  int bins_ = 101;
  bool log_ = true;
};

// Mean |x| per channel (x: channel index), one curve per run.
class ChannelMagnitudePlot : public PlotView {
  Q_OBJECT
 public:
  explicit ChannelMagnitudePlot(QWidget* parent = nullptr);
  void setData(const ActivationInputData& data);
  void setLogScale(bool on);
  bool logScale() const { return log_; }
  void clear();
  QString channelCsv() const;

 private:
  void redraw();
  ActivationInputData data_;
  bool log_ = false;
};

// Median of the per-row L2 norm of the sampled rows grouped by decode step
// (bins of `stepsPerBin` steps, bins without rows left out); runs without
// decode steps (fixed text) have no curve, and a note says so when none has.
class DecodeStepPlot : public PlotView {
  Q_OBJECT
 public:
  explicit DecodeStepPlot(QWidget* parent = nullptr);
  void setData(const ActivationInputData& data);
  void setStepsPerBin(int steps);
  int stepsPerBin() const { return width_; }
  void clear();
  // Per curve: the run and its groups.
  const QVector<ActivationRunInfo>& curveRuns() const { return runs_; }
  const QVector<QVector<StepGroup>>& groups() const { return groups_; }
  QString noteText() const;
  QString stepCsv() const;

 private:
  void redraw();
  ActivationInputData data_;
  QVector<ActivationRunInfo> runs_;
  QVector<QVector<StepGroup>> groups_;
  QCPItemText* note_ = nullptr;
  int width_ = 1;
};

}  // namespace sdw::widgets
