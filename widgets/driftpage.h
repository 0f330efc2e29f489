#pragma once
// The Analysis panel's Drift tab: activation drift by decode step of pruned
// models against their dense parent (DESIGN §1, paper Fig. 1a). A run picker
// (the workspace's drift runs, or browse), the view controls (mode, which
// model or both overlaid, per-layer curves, log or linear step axis, one
// layer), the drift plot with its summary line, a per-layer table of
// plateaus and step90, and the inputs of a new drift analysis. Display only:
// drift runs are read and computed in app/gui/driftcontroller and arrive as
// DriftData.

#include "widgets/driftdata.h"
#include "widgets/driftplot.h"
#include "widgets/runchoice.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSortFilterProxyModel;
class QSpinBox;
class QSplitter;
class QStackedWidget;
class QTableView;

namespace sdw::widgets {

class ActivationSelection;
class ChecksLabel;
class DriftLayerModel;

class DriftPage : public QWidget {
  Q_OBJECT
 public:
  explicit DriftPage(QWidget* parent = nullptr);

  // ---- the run shown
  void setData(const DriftData& data);
  void clear(const QString& message);  // no run: the plot hides, `message` says why
  const DriftData& data() const { return data_; }
  void setRuns(const QVector<DriftRunChoice>& runs);
  QString currentRunPath() const { return data_.path; }

  // ---- the view
  void setView(const DriftView& view);
  DriftView view() const;

  // ---- a new analysis
  void setWorkspace(const QString& dir) { workspace_ = dir; }  // where the file dialogs start
  void setDenseModel(const QString& dir);
  void setPrunedDirs(const QStringList& dirs);  // the first two fill A and B
  void setPromptsFile(const QString& path);
  void setRequest(const DriftRequest& request);
  DriftRequest request() const;
  void setCudaAvailable(bool available, const QString& reason);
  // The workspace's calibration runs: the activation thresholds picker.
  void setCalibrationRuns(const QVector<RunChoice>& runs);
  ActivationSelection* activationSelection() const { return selection_; }

  void beginJob(const QString& what);
  void setProgress(double fraction, const QString& text);  // fraction < 0: unknown
  void endJob(const QString& message, bool isError);
  bool isBusy() const { return busy_; }
  QString statusText() const;

  // Exports the plot (.png, .pdf, .csv); an error message, empty on success.
  QString exportTo(const QString& path) const { return plot_->exportTo(path); }

  DriftPlot* plot() const { return plot_; }
  DriftLayerModel* layerModel() const { return layers_; }
  QTableView* layerView() const { return table_; }
  QString summaryText() const;
  QString titleText() const;
  QStringList shownWarnings() const;  // the warning line(s) under the summary

 protected:
  void showEvent(QShowEvent* e) override;

 Q_SIGNALS:
  void openRequested(const QString& path);
  void analyzeRequested(const sdw::widgets::DriftRequest& request);
  void cancelRequested();

 private:
  QWidget* buildRunRow();
  QWidget* buildControls();
  QWidget* buildNewAnalysis();
  void refresh();  // plot, table and summary from data_ and the controls
  void sizeSplit();
  void chooseRun();
  void exportDialog();
  void setStatus(const QString& text, bool isError);
  void updateButtons();

  DriftData data_;
  QString workspace_;
  bool busy_ = false;

  QComboBox* runs_ = nullptr;
  QPushButton* export_ = nullptr;
  QComboBox* mode_ = nullptr;
  QComboBox* models_ = nullptr;
  QCheckBox* layerCurves_ = nullptr;
  QCheckBox* logSteps_ = nullptr;
  QComboBox* layer_ = nullptr;
  QStackedWidget* stack_ = nullptr;
  QLabel* empty_ = nullptr;
  QLabel* title_ = nullptr;
  QLabel* summary_ = nullptr;
  ChecksLabel* checks_ = nullptr;
  DriftPlot* plot_ = nullptr;
  DriftLayerModel* layers_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  QTableView* table_ = nullptr;
  QSplitter* split_ = nullptr;
  bool splitSized_ = false;

  QLineEdit* dense_ = nullptr;
  QLineEdit* prunedA_ = nullptr;
  QLineEdit* prunedB_ = nullptr;
  QLineEdit* prompts_ = nullptr;
  QSpinBox* steps_ = nullptr;
  QSpinBox* maxPrompts_ = nullptr;
  QComboBox* runModes_ = nullptr;
  QDoubleSpinBox* temperature_ = nullptr;
  QSpinBox* topK_ = nullptr;
  QDoubleSpinBox* topP_ = nullptr;
  QSpinBox* seed_ = nullptr;
  QDoubleSpinBox* activation_ = nullptr;
  ActivationSelection* selection_ = nullptr;
  QComboBox* device_ = nullptr;
  QPushButton* analyze_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QProgressBar* bar_ = nullptr;
  QLabel* status_ = nullptr;
};

}  // namespace sdw::widgets
