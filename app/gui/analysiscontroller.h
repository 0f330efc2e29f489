#pragma once
// Runs epsilon analyses for the Analysis panel: scans a workspace for
// calibration runs (the pickers and their defaults), runs analyzeEpsilon as a
// job ("Epsilon analysis", progress in inputs, cancellable) and saves the
// result as an analysis run in the workspace, and opens existing analysis
// runs. Results reach the panel as widgets::EpsilonData, built off the GUI
// thread. An open replaces the one still running (its result is dropped).

#include "app/jobmanager.h"
#include "widgets/analysispanel.h"
#include "widgets/epsilondata.h"

#include <QObject>
#include <QPointer>
#include <QString>
#include <QVector>

namespace sdw::gpu {
struct EpsilonResult;
}

namespace sdw::app {

// What a workspace offers the Analysis panel.
struct AnalysisInputs {
  QString dir;
  QVector<widgets::RunChoice> runs;  // calibration runs
  QString reference, fixedText, ar;  // defaults ("" when none fits)
  QString analysis;                  // an epsilon analysis to show first ("" when none)
};

// An epsilon analysis as the panel shows it; `path` is the analysis run file.
widgets::EpsilonData epsilonDisplayData(const gpu::EpsilonResult& result, const QString& path);

// Lists the calibration runs of `dir` (with their source) and picks the
// defaults: reference-heldout.sdw.h5 (else a run named like a reference), the
// first complete fixed-text and AR runs, and epsilon-sample.sdw.h5 (else the
// newest epsilon analysis run) to show.
AnalysisInputs findAnalysisInputs(const QString& dir);

struct AnalysisOutcome;  // an analysis run (new or opened) as the panel shows it

class AnalysisController : public QObject {
  Q_OBJECT
 public:
  explicit AnalysisController(JobManager* jobs, QObject* parent = nullptr);

  void attach(widgets::AnalysisPanel* panel);

  // Scans `dir`; the pickers fill, and its epsilon analysis (else the sample
  // workspace's) opens when nothing is shown yet.
  JobId setWorkspace(const QString& dir);
  // Where analyses are saved ("" : not saved). Defaults to the workspace.
  void setOutputDir(const QString& dir) { outputDir_ = dir; }

  JobId analyze(const QString& reference, const QString& fixedText, const QString& ar, int k = 64,
                const QString& device = QStringLiteral("cpu"));
  JobId open(const QString& path, int slot = widgets::AnalysisPanel::Main);
  void cancel();

  JobId analyzeJob() const { return analyze_.id(); }
  JobId openJob() const { return open_.id(); }
  JobId scanJob() const { return scan_.id(); }
  bool isBusy() const { return analyze_.busy() || open_.busy(); }

 Q_SIGNALS:
  // `defaults`: the workspace is new, so the pickers take the suggested runs;
  // a rescan of the same workspace keeps what the user picked.
  void inputsFound(const QVector<sdw::widgets::RunChoice>& runs, const QString& reference,
                   const QString& fixedText, const QString& ar, bool defaults);
  void analysisStarted(const QString& what);
  void analysisProgress(double fraction, const QString& text);
  void analysisReady(const sdw::widgets::EpsilonData& data, int slot);
  void analysisEnded(const QString& message, bool isError);
  // A new analysis run was written (the workspace listing is stale).
  void runWritten(const QString& path);
  void info(const QString& message);
  void error(const QString& message);

 private:
  // The end of an analysis (`analyzed`) or of opening one (shown on page `slot`).
  void showOutcome(const AnalysisOutcome& o, bool analyzed, int slot);
  void failed(const QString& message, bool analyzed);
  void cancelled(bool analyzed);

  QPointer<JobManager> jobs_;
  QString workspace_;
  QString outputDir_;
  QString defaultsDir_;  // the workspace whose defaults the pickers got
  JobSlot scan_;
  JobSlot analyze_;
  JobSlot open_;
  bool shown_ = false;  // something is on the main page
};

}  // namespace sdw::app

Q_DECLARE_METATYPE(sdw::app::AnalysisInputs)
