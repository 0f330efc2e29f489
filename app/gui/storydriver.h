#pragma once
// The C4-vs-AR story of tools/make_sample_runs.sh, played on the window's
// own panels: each step selects its panel, fills the panel's fields through
// the panel's setters and widgets, and presses the panel's button, exactly as
// a user would; the step ends when the panel's controller reports the end of
// the job it started. Nothing here computes: what a step found is read from
// what the panel shows at the end and put into words (storyfindings.h).
//
// Steps, in order: load, generate, calibrate-fixed, calibrate-ar-exact,
// calibrate-ar, calibrate-reference, epsilon, prune-fixed, prune-ar,
// evaluate, drift, bench. Every job runs on options.device; a step whose
// job ran elsewhere ends Failed.

#include "app/jobmanager.h"
#include "core/decoding.h"

#include <QElapsedTimer>
#include <QList>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QVector>

#include <utility>

class QAbstractButton;

namespace sdw::app {

class MainWindow;

struct StoryOptions {
  QString device = QStringLiteral("cpu");      // "cpu" | "cuda": every job of the story runs here
  QString dtype = QStringLiteral("float32");   // model load / calibration dtype ("bfloat16" is what a GPU run uses)
  QString workDir;                             // folder for the story's runs and pruned checkpoints; the window opens it as its workspace
  qint64 calibrationTokens = 3000;             // fixed-text and AR (re-forward) calibration budget, equal for both
  qint64 exactTokens = 1000;                   // the AR exact-capture run's budget
  qint64 referenceTokens = 2000;               // held-out decode-time reference (AR on held-out prompts)
  int maxNewTokens = 64;                       // AR generation length
  // ONE decoding for the generate step, AR calibration, the reference,
  // evaluation and drift; recorded in every run. Greedy: on the sample model
  // that is the protocol under which the study (docs/study.md) finds AR
  // calibration ahead in every cell; sampled at T = 1 (the workbench's
  // default, core/decoding.h) it finds no difference on this model.
  Decoding decoding = kGreedyDecoding;
  int evalSeeds = 1;
  int evalMaxNewTokens = 32;
  int driftSteps = 32;
  int generateTokens = 32;                     // the Model panel's generate step
  QString benchShapes;                         // "" : small custom shapes (CPU); e.g. "llama3-8b" on a GPU
  int benchRepeats = 5;
};

// The sample story's budgets on a GPU (tools/make_sample_runs.sh's; cuda,
// bfloat16, the Llama-3.1-8B kernel shapes); the defaults above are the
// CPU's, small enough for a 2-core machine.
StoryOptions gpuStoryOptions();

enum class StoryOutcome { Ok, Failed, Cancelled };

struct StoryStepInfo {
  QString id, panel, action, title, explanation;
};

struct StoryStepResult {
  QString id, panel, action, device;   // device the job actually ran on ("cpu" / "cuda")
  double seconds = 0;
  StoryOutcome outcome = StoryOutcome::Failed;
  QString message;                      // the panel's end message or the error
  QString finding;                      // what this step measured, in words with numbers
};

// "ok", "failed", "cancelled".
QString storyOutcomeName(StoryOutcome outcome);

class StoryDriver : public QObject {
  Q_OBJECT
 public:
  StoryDriver(MainWindow* window, StoryOptions options, QObject* parent = nullptr);
  ~StoryDriver() override;

  const StoryOptions& options() const { return options_; }
  QVector<StoryStepInfo> steps() const { return steps_; }
  int currentStep() const { return current_; }  // -1 when idle
  bool isRunning() const { return current_ >= 0 || all_; }
  // Selects the step's panel, fills its fields, presses its button and
  // returns at once; the step ends asynchronously (stepFinished). Ignored
  // while a step runs.
  void runStep(int index);
  // Every step in order, the next when the previous ends Ok; stops at the
  // first that does not.
  void runAll();
  // Cancels the running job as the panel's Cancel button does (that step
  // ends Cancelled) and stops runAll.
  void cancel();
  QVector<StoryStepResult> results() const { return results_; }  // steps finished so far, in order

 Q_SIGNALS:
  void stepStarted(int index);
  void stepFinished(int index, const sdw::app::StoryStepResult& result);
  void allFinished(bool ok);

 private:
  enum Step {
    Load, Generate, CalibrateFixed, CalibrateArExact, CalibrateAr, CalibrateReference,
    Epsilon, PruneFixed, PruneAr, Evaluate, Drift, Bench, StepCount
  };
  // The panel's end, captured when the controller said so.
  struct End {
    bool ok = false;
    QString message;
    QString finding;
    QString device;  // where the job ran, as the end reports it ("" : as asked)
  };

  void begin(int index);
  void startLoad();
  void startGenerate();
  void startCalibration(int step);
  void startEpsilon();
  void startPrune(int step);
  void startEvaluate();
  void startDrift();
  void startBench();

  // Decides the step's outcome after the job manager has finished telling
  // everyone about the job (so a cancel is known), from what was captured.
  void endLater(const End& end);
  void finish(StoryOutcome outcome, const QString& message, const QString& finding, const QString& device);
  // The step could not start (a missing input, a refused device...).
  void refuse(const QString& why);
  // Runs the step again once `signal` fires: a job of the same controller is
  // in flight and would end (or replace what the panel shows) during ours.
  template <typename Sender, typename Signal>
  void retryAfter(Sender* sender, Signal signal);
  // Presses a panel's button; refuses the step when it is missing or disabled.
  bool press(QAbstractButton* button, const QString& what);
  // The panel's own cancel button for the running step.
  QAbstractButton* cancelButton() const;
  void dropConnections();
  bool checkDevice(const QString& panelDevice, const QString& panel);
  void ensureWorkspace();
  QString freePath(const QString& fileName) const;
  QString existing(const QString& produced, const QString& fileName) const;
  // The two pruned checkpoints (fixed, AR) where they exist, else "".
  std::pair<QString, QString> prunedCheckpoints() const;

  MainWindow* window_;
  StoryOptions options_;
  QVector<StoryStepInfo> steps_;
  QVector<StoryStepResult> results_;
  int current_ = -1;
  bool all_ = false;
  bool stopAll_ = false;      // cancel() during runAll: no further step
  quint64 serial_ = 0;        // of the running step: stale deferred calls are dropped
  JobId job_ = 0;             // the running step's job (0: not started yet)
  bool jobCancelled_ = false;
  QString device_;            // the device the step's panel was given
  QElapsedTimer clock_;
  QList<QMetaObject::Connection> connections_;
  // What earlier steps produced, read from the panels when they ended.
  QString runFixed_, runArExact_, runAr_, runReference_;
  QString prunedFixed_, prunedAr_;
  double exactRate_ = 0;      // tokens/s of the exact-capture run
};

}  // namespace sdw::app

Q_DECLARE_METATYPE(sdw::app::StoryStepResult)
