#pragma once
// Jobs behind the Drift tab of the Analysis panel: scans a workspace for
// drift runs and pruned checkpoints (the picker and the defaults), opens a
// drift run off the GUI thread (on start the workspace's newest, else the
// sample workspace's drift-sample.sdw.h5), and runs gpu::analyzeDrift as a
// cancellable job ("Drift analysis", progress in prompts) that writes
// drift-<timestamp>.sdw.h5 into the workspace and shows it. Results reach
// the page as widgets::DriftData. Superseded jobs' results are dropped.

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
  ~DriftController() override;

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

  JobId scanJob() const { return scanJob_; }
  JobId openJob() const { return openJob_; }
  JobId analyzeJob() const { return analyzeJob_; }
  bool isBusy() const { return openJob_ != 0 || analyzeJob_ != 0; }

  // samples/model/brown-llama and samples/prompts/brown-heldout.jsonl.
  static QString sampleDenseModel();
  static QString samplePrompts();

 Q_SIGNALS:
  // `defaults`: the workspace is new, so the pruned folders take its checkpoints.
  void runsFound(const QVector<sdw::widgets::DriftRunChoice>& runs, const QStringList& prunedDirs, bool defaults);
  void jobStarted(const QString& what);
  void jobProgress(double fraction, const QString& text);
  void driftReady(const sdw::widgets::DriftData& data);
  void jobEnded(const QString& message, bool isError);
  void runWritten(const QString& path);
  void info(const QString& message);
  void error(const QString& message);

 private:
  void onFinished(JobId id, const QVariant& result);
  void onFailed(JobId id, const QString& message);
  void onCancelled(JobId id);
  void onProgress(const JobUpdate& u);
  void endIfIdle(const QString& message, bool isError);

  QPointer<JobManager> jobs_;
  QPointer<widgets::DriftPage> page_;
  QString workspace_;
  QString outputDir_;
  QString defaultsDir_;
  JobId scanJob_ = 0;
  JobId openJob_ = 0;
  JobId analyzeJob_ = 0;
  bool shown_ = false;  // a run is on the page
};

}  // namespace sdw::app
