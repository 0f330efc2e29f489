#pragma once
// The workbench window: run browser, the six panels, jobs and log docks.
// Wiring only: panels display, the job manager runs work, the run store owns
// files.

#include "app/jobmanager.h"
#include "app/settings.h"

#include <QMainWindow>

class QTabWidget;
class QLabel;

namespace sdw::widgets {
class AnalysisPanel;
class CalibrationPanel;
class BenchmarkPanel;
class JobsView;
class LogView;
class ModelPanel;
class PruningPanel;
class RunBrowser;
class StudyPage;
}  // namespace sdw::widgets

namespace sdw::app {

class ActivationsController;
class AnalysisController;
class CalibrationController;
class BenchmarkController;
class DecodeBenchController;
class ModelController;
class PruningController;
class DriftController;
class StudyController;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(Settings* settings, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Starts a scan job; the browser fills when it finishes.
  JobId openWorkspace(const QString& dir);
  // Starts an inspect job; errors show in the details pane, log and a dialog.
  JobId openRunFile(const QString& path);
  bool selectPanel(const QString& name);  // "Model", "Calibration", ...
  QStringList panelNames() const;
  QString currentPanel() const;

  // Off for screenshots and tests: do not write window state on close.
  void setPersistState(bool on) { persist_ = on; }
  void setShowErrorDialogs(bool on) { errorDialogs_ = on; }

  JobManager* jobs() { return &jobs_; }
  widgets::RunBrowser* runBrowser() const { return browser_; }
  widgets::JobsView* jobsView() const { return jobsView_; }
  widgets::LogView* logView() const { return logView_; }
  widgets::ModelPanel* modelPanel() const { return modelPanel_; }
  ModelController* modelController() const { return modelController_; }
  widgets::CalibrationPanel* calibrationPanel() const { return calibrationPanel_; }
  CalibrationController* calibrationController() const { return calibrationController_; }
  widgets::AnalysisPanel* analysisPanel() const { return analysisPanel_; }
  AnalysisController* analysisController() const { return analysisController_; }
  widgets::PruningPanel* pruningPanel() const { return pruningPanel_; }
  PruningController* pruningController() const { return pruningController_; }
  DriftController* driftController() const { return driftController_; }
  ActivationsController* activationsController() const { return activationsController_; }
  widgets::BenchmarkPanel* benchmarkPanel() const { return benchmarkPanel_; }
  BenchmarkController* benchmarkController() const { return benchmarkController_; }
  DecodeBenchController* decodeBenchController() const { return decodeBenchController_; }
  widgets::StudyPage* studyPage() const { return studyPage_; }
  StudyController* studyController() const { return studyController_; }
  QString workspace() const { return workspace_; }
  QString lastError() const { return lastError_; }

 protected:
  void closeEvent(QCloseEvent* e) override;

 private:
  void buildMenus();
  void buildPanels();
  void buildDocks();
  void wireJobs();
  void buildControllers();
  // Attaches a controller to its panel; its messages go to the log (errors
  // to the status bar too), the run files it writes refresh the workspace.
  template <typename Controller, typename Panel>
  Controller* addController(Controller* controller, Panel* panel);
  void modelLoaded(const QString& dir);
  void runSelected(const QString& path);
  void rescanWorkspace();
  void restoreState();
  void logInfo(const QString& m);
  void logError(const QString& m);
  void reportError(const QString& m);
  void chooseWorkspace();
  void chooseRunFile();

  Settings* settings_;
  JobManager jobs_;
  QTabWidget* tabs_ = nullptr;
  widgets::RunBrowser* browser_ = nullptr;
  widgets::JobsView* jobsView_ = nullptr;
  widgets::LogView* logView_ = nullptr;
  widgets::ModelPanel* modelPanel_ = nullptr;
  ModelController* modelController_ = nullptr;
  widgets::CalibrationPanel* calibrationPanel_ = nullptr;
  CalibrationController* calibrationController_ = nullptr;
  widgets::AnalysisPanel* analysisPanel_ = nullptr;
  AnalysisController* analysisController_ = nullptr;
  widgets::PruningPanel* pruningPanel_ = nullptr;
  PruningController* pruningController_ = nullptr;
  DriftController* driftController_ = nullptr;
  ActivationsController* activationsController_ = nullptr;
  widgets::BenchmarkPanel* benchmarkPanel_ = nullptr;
  BenchmarkController* benchmarkController_ = nullptr;
  DecodeBenchController* decodeBenchController_ = nullptr;
  widgets::StudyPage* studyPage_ = nullptr;
  StudyController* studyController_ = nullptr;
  QLabel* deviceLabel_ = nullptr;
  QString workspace_;
  QString lastError_;
  JobSlot scan_;  // a new scan replaces the one running
  bool persist_ = true;
  bool errorDialogs_ = true;
};

// Routes qDebug/qWarning/... into the log dock (thread-safe).
void installLogHandler(widgets::LogView* view);

}  // namespace sdw::app
