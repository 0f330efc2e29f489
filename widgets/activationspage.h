#pragma once
// The Analysis panel's Activations tab: the activation samples that
// calibration runs keep (`--sample-rows N`, or "Keep activation samples" in
// the Calibration panel), every run of the workspace that has them side by
// side (fixed text against AR). Pick a projection input (shown by the modules
// it feeds); three plots of its samples, one curve per run: the histogram of
// the values (log count by default), the mean |x| per channel, and, for runs
// that decode, the median L2 norm of the rows by decode step. Each plot
// exports as PNG, PDF or CSV. Display only: the samples are read in
// app/gui/activationscontroller and arrive as ActivationCatalog and
// ActivationInputData.

#include "widgets/activationdata.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QSpinBox;
class QStackedWidget;
class QToolButton;

namespace sdw::widgets {

class ActivationHistogramPlot;
class ChannelMagnitudePlot;
class DecodeStepPlot;
class PlotView;

class ActivationsPage : public QWidget {
  Q_OBJECT
 public:
  explicit ActivationsPage(QWidget* parent = nullptr);

  // The runs with samples and their inputs. The input picked stays picked
  // when the new catalog has it; with no run that has samples, the hint shows.
  void setCatalog(const ActivationCatalog& catalog);
  const ActivationCatalog& catalog() const { return catalog_; }
  // One input's samples: the plots redraw.
  void setInputData(const ActivationInputData& data);
  const ActivationInputData& inputData() const { return data_; }

  void setWorkspace(const QString& dir) { workspace_ = dir; }  // where the export dialogs start
  void beginLoad(const QString& what);
  void endLoad(const QString& message, bool isError);

  QString currentInput() const;  // the input's name, "" when none
  bool selectInput(const QString& name);

  // Exports a plot (.png, .pdf, .csv); an error message, empty on success.
  enum Plot { Histogram = 0, Channels = 1, DecodeSteps = 2 };
  QString exportTo(Plot which, const QString& path) const;

  bool showsHint() const;
  QString hintText() const;
  QString runsText() const;
  QString statusText() const;
  QComboBox* inputPicker() const { return input_; }
  ActivationHistogramPlot* histogram() const { return histogram_; }
  ChannelMagnitudePlot* channels() const { return channels_; }
  DecodeStepPlot* decodeSteps() const { return steps_; }

  static QString noSamplesHint();

 Q_SIGNALS:
  void inputRequested(const QString& name);

 private:
  QWidget* buildControls();
  PlotView* plotOf(Plot which) const;
  void exportDialog(Plot which);
  void setStatus(const QString& text, bool isError);

  ActivationCatalog catalog_;
  ActivationInputData data_;
  QString workspace_;

  QComboBox* input_ = nullptr;
  QCheckBox* logCount_ = nullptr;
  QCheckBox* logChannels_ = nullptr;
  QSpinBox* stepBin_ = nullptr;
  QToolButton* export_ = nullptr;
  QLabel* runs_ = nullptr;
  QLabel* status_ = nullptr;
  QStackedWidget* stack_ = nullptr;
  QLabel* hint_ = nullptr;
  QLabel* histogramTitle_ = nullptr;
  QLabel* channelsTitle_ = nullptr;
  QLabel* stepsTitle_ = nullptr;
  ActivationHistogramPlot* histogram_ = nullptr;
  ChannelMagnitudePlot* channels_ = nullptr;
  DecodeStepPlot* steps_ = nullptr;
};

}  // namespace sdw::widgets
