#pragma once
// Jobs behind the Drift tab of the Analysis panel: scans a workspace for
// drift runs and pruned checkpoints (the picker and the defaults), opens a
// drift run off the GUI thread (on start the workspace's newest, else the
// sample workspace's drift-sample.sdw.h5), and runs gpu::analyzeDrift as a
// cancellable job ("Drift analysis", progress in prompts) that writes
// drift-<timestamp>.sdw.h5 into the workspace and shows it. Results reach
// the page as widgets::DriftData. An open replaces the one still running
// (its result is dropped).

#include "app/gui/driftrun.h"
#include "app/jobmanager.h"
#include "widgets/analysispanel.h"
#include "widgets/driftdata.h"

#include <QObject>
#include <QPointer>
#include <QString>

namespace sdw::widgets {
class DriftPage;
}

namespace sdw::app {

class DriftController : public QObject {
  Q_OBJECT
 public:
  explicit DriftController(JobManager* jobs, QObject* parent = nullptr);

  void attach(widgets::AnalysisPanel* panel);
  // Scans `dir`: the run picker fills, the pruned checkpoints under
  // <dir>/pruned become the default models, and the newest drift run (else
  // the sample's) opens when nothing is shown yet. New runs are written here.
  JobId setWorkspace(const QString& dir);
  void setOutputDir(const QString& dir) { outputDir_ = dir; }
  // The dense model of a new analysis (the model loaded in the Model panel).
  void setDenseModel(const QString& dir);

  JobId open(const QString& path);
  JobId analyze(const widgets::DriftRequest& request);
  void cancel();

  JobId scanJob() const { return scan_.id(); }
  JobId openJob() const { return open_.id(); }
  JobId analyzeJob() const { return analyze_.id(); }
  bool isBusy() const { return open_.busy() || analyze_.busy(); }

  // samples/model/brown-llama and samples/prompts/brown-heldout.jsonl.
  static QString sampleDenseModel();
  static QString samplePrompts();

 Q_SIGNALS:
  // `defaults`: the workspace is new, so the pruned folders take its checkpoints.
  void runsFound(const QVector<sdw::widgets::DriftRunChoice>& runs, const QStringList& prunedDirs, bool defaults);
  // The workspace's calibration runs, for the activation thresholds picker.
  void calibrationRunsFound(const QVector<sdw::widgets::RunChoice>& runs);
  void jobStarted(const QString& what);
  void jobProgress(double fraction, const QString& text);
  void driftReady(const sdw::widgets::DriftData& data);
  void jobEnded(const QString& message, bool isError);
  void runWritten(const QString& path);
  void info(const QString& message);
  void error(const QString& message);

 private:
  // A job ended: the page hears once neither job runs, the log at once.
  void ended(const QString& message, bool isError);

  QPointer<JobManager> jobs_;
  QPointer<widgets::DriftPage> page_;
  QString workspace_;
  QString outputDir_;
  QString defaultsDir_;
  JobSlot scan_;
  JobSlot open_;
  JobSlot analyze_;
  bool shown_ = false;  // a run is on the page
};

}  // namespace sdw::app
