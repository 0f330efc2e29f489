#pragma once
// Runs calibrations for the Calibration panel: the memory/disk estimate of
// the panel's settings (gpu::estimateCalibration on the model's config.json,
// and the output volume's free space), runCalibration as a job
// ("Calibration", progress in tokens of the budget, cancellable: the engine
// keeps the run under its final name, marked incomplete), and resuming an
// incomplete run. The panel's tokens/s chart gets at most two points a second;
// its per-layer view follows the engine's passes over the layers.

#include "app/jobmanager.h"
#include "widgets/calibrationpanel.h"

#include <QElapsedTimer>
#include <QObject>
#include <QPointer>
#include <QString>

#include <functional>

namespace sdw::gpu {
struct CalibrationSettings;
}

namespace sdw::app {

// The engine's settings for the panel's form. Its choices are names
// (gpu/calibration.h): std::invalid_argument for one that is not.
gpu::CalibrationSettings calibrationSettings(const widgets::CalibrationForm& form);

// The corpus and prompt files shipped with the sample model.
QString sampleCorpusFile();
QString samplePromptsFile();

struct CalibrationOutcome;  // a finished calibration as the panel reports it

class CalibrationController : public QObject {
  Q_OBJECT
 public:
  explicit CalibrationController(JobManager* jobs, QObject* parent = nullptr);

  // Connects a panel both ways, gives it the sample defaults and CUDA state.
  void attach(widgets::CalibrationPanel* panel);
  // New runs go here by default.
  void setWorkspace(const QString& dir);

  // What the run would take; synchronous and cheap (reads config.json).
  widgets::CalibrationEstimateView estimate(const widgets::CalibrationForm& form) const;

  // Starts a calibration job; 0 (with runEnded saying why) when one is running.
  JobId start(const widgets::CalibrationForm& form);
  // Continues an incomplete run to its budget.
  JobId resume(const QString& path);
  void cancel();

  bool isRunning() const { return run_.busy(); }
  JobId job() const { return run_.id(); }
  QString runPath() const { return path_; }

 Q_SIGNALS:
  void estimateReady(const sdw::widgets::CalibrationEstimateView& estimate);
  void runStarted(const QString& what, qint64 budget);
  void runProgress(double done, double total, double rate, double elapsed, const QString& stage);
  // The current pass over the decoder layers: `done` of `layers` (capture
  // during forward passes, then eigendecomposition or writing at the end).
  void layerProgress(int done, int layers, const QString& label);
  void runEnded(const QString& message, sdw::widgets::CalibrationPanel::Outcome outcome);
  // An incomplete run that can be resumed (after a cancel or a failure).
  void resumable(const QString& path);
  // A run file was written or changed (complete or kept incomplete).
  void runWritten(const QString& path);
  void info(const QString& message);
  void error(const QString& message);

 private:
  // Runs `work` as the panel's calibration job (start and resume alike).
  JobId startRun(const QString& name, std::function<CalibrationOutcome(const sdw::ProgressFn&)> work);
  void showProgress(const JobUpdate& u);
  void keptIncomplete();

  QPointer<JobManager> jobs_;
  QString workspace_;
  JobSlot run_;
  QString path_;          // the run being written
  bool existedBefore_ = false;  // a file of that name was there already (not ours to offer)
  double lastDone_ = 0;
  double lastTotal_ = 0;
  QElapsedTimer clock_;
  qint64 lastChartMs_ = -1000;
};

}  // namespace sdw::app
