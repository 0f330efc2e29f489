#pragma once
// Jobs behind the Pruning panel; wiring between JobManager and the panel.
//
//  - setWorkspace scans the folder (resultruns.h) for calibration runs,
//    pruning records and evaluation runs; the first time, it opens a record
//    and an evaluation (the sample workspace's when the folder has none).
//  - prune runs gpu::pruneModel for each checked calibration run in turn as
//    one job ("Pruning", progress in modules of all runs, cancellable after
//    any module). Finished module rows and the layer being worked on travel
//    on the job's channel as they happen, so the table and the per-layer
//    chart fill live.
//  - evaluate runs gpu::evaluate, writes the evaluation run into the
//    workspace (eval-<time>.sdw.h5) and shows it.
//  - openRecord / openEvaluation read run files off the GUI thread.
//
// Where a pruning goes: run r is pruned into <outputDir>/<method><pattern>-<stem
// of r> (DuoGPT: <method><pattern>-px<p_x in percent>-<stem of r>; a "-2",
// "-3" suffix when that name is taken), and its record is
// written into the workspace as pruning-<folder name>.sdw.h5 rather than the
// engine's default <out>/pruning.sdw.h5: the workspace browser and this
// panel's record picker list the workspace folder only, so a record inside
// the checkpoint folder would be invisible there. The record names the
// checkpoint folder (out_dir), so nothing is lost. Without a workspace the
// engine's default is kept.

#include "app/gui/resultruns.h"
#include "app/jobmanager.h"
#include "widgets/pruningpanel.h"

#include <QObject>
#include <QPointer>
#include <QString>
#include <QStringList>

namespace sdw::app {

// The held-out files shipped with the sample model (evaluation defaults).
QString sampleHeldoutTextFile();
QString sampleHeldoutPromptsFile();

class PruningController : public QObject {
  Q_OBJECT
 public:
  explicit PruningController(JobManager* jobs, QObject* parent = nullptr);

  // Connects a panel both ways; gives it the sample defaults and CUDA state.
  void attach(widgets::PruningPanel* panel);
  // Scans `dir`; the pickers fill, and a record and an evaluation open when
  // nothing is shown yet.
  JobId setWorkspace(const QString& dir);

  // Starts pruning every checked calibration run; 0 (with jobEnded saying
  // why) when refused.
  JobId prune(const widgets::PruneForm& form);
  JobId evaluate(const widgets::EvaluateForm& form);
  JobId openRecord(const QString& path);
  JobId openEvaluation(const QString& path);
  // Stops the running pruning or evaluation.
  void cancel();

  // The folder and record a calibration run is pruned into (free names).
  struct Target {
    QString out;
    QString record;  // "" : <out>/pruning.sdw.h5
  };
  Target targetFor(const widgets::PruneForm& form, const QString& calibrationRun,
                   const QStringList& taken = {}) const;

  bool isBusy() const { return prune_.busy() || evaluate_.busy(); }
  JobId pruneJob() const { return prune_.id(); }
  JobId evaluateJob() const { return evaluate_.id(); }
  JobId scanJob() const { return scan_.id(); }
  JobId openRecordJob() const { return openRecord_.id(); }
  JobId openEvaluationJob() const { return openEvaluation_.id(); }

 Q_SIGNALS:
  // `defaults`: the workspace is new, so the pickers take the suggestions.
  void inputsFound(const sdw::app::PruningInputs& inputs, bool defaults);
  void jobStarted(const QString& what);
  // One calibration run's pruning begins (table and layer chart restart).
  void pruneRunStarted(const QString& what, const QVector<int>& modulesPerLayer);
  void moduleFinished(const sdw::widgets::PruneModuleData& row);
  void layerState(int layer, const QString& stage);
  void jobProgress(double fraction, const QString& text, double elapsed, double eta);
  void jobEnded(const QString& message, sdw::widgets::PruningPanel::Outcome outcome);
  void recordReady(const sdw::widgets::PruningRecordData& record);
  void recordFailed(const QString& message);
  void qualityReady(const sdw::widgets::QualityData& data);
  void qualityFailed(const QString& message);
  // A run file was written (the workspace listing is stale).
  void runWritten(const QString& path);
  void info(const QString& message);
  void error(const QString& message);

 private:
  void showProgress(const JobUpdate& u);
  void refuse(const QString& why);

  QPointer<JobManager> jobs_;
  QString workspace_;
  QString defaultsDir_;  // the workspace whose defaults the panel got
  JobSlot scan_;
  JobSlot prune_;
  JobSlot evaluate_;
  JobSlot openRecord_;
  JobSlot openEvaluation_;
  QStringList written_;       // records of the running pruning already complete
  QString currentRun_;        // the calibration run being pruned
  bool recordShown_ = false;
  bool qualityShown_ = false;
};

}  // namespace sdw::app
