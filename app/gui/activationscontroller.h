#pragma once
// Feeds the Analysis panel's Activations tab: scans a workspace for the
// calibration runs that keep activation samples (docs/run-format.md,
// "/calibration/samples") and their projection inputs, and reads one input's
// samples from every such run as a job ("Read activation samples"), with the
// mean |x| per channel and each row's L2 norm. Results reach the page as
// widgets::ActivationCatalog and widgets::ActivationInputData, built off the
// GUI thread. Picking another input replaces the read still running.

#include "app/jobmanager.h"
#include "core/progress.h"
#include "widgets/activationdata.h"

#include <QObject>
#include <QPointer>
#include <QString>
#include <QVector>

namespace sdw::widgets {
class ActivationsPage;
class AnalysisPanel;
}  // namespace sdw::widgets

namespace sdw::app {

// The complete calibration runs of `dir` that hold samples (by file name),
// the inputs they sample (in forward order: layer, then q/k/v, o, gate/up,
// down), and the names of the other calibration runs. Unreadable files are
// left out.
widgets::ActivationCatalog findActivationRuns(const QString& dir);

// The samples of `input` in each of `runs` that has them (runs without that
// input are skipped). Throws std::runtime_error naming the file when a run's
// samples do not agree with their labels. Answers `progress` once per run;
// a false answer stops it (sdw::Cancelled).
widgets::ActivationInputData readActivationInput(const QVector<widgets::ActivationRunInfo>& runs, const QString& input,
                                                 const sdw::ProgressFn& progress = {});

class ActivationsController : public QObject {
  Q_OBJECT
 public:
  explicit ActivationsController(JobManager* jobs, QObject* parent = nullptr);

  void attach(widgets::AnalysisPanel* panel);

  // Scans `dir`; the page's picker fills and the picked input (the first one
  // when none is) is read.
  JobId setWorkspace(const QString& dir);
  // Reads `input` of the catalog's runs.
  JobId load(const QString& input);

  const widgets::ActivationCatalog& catalog() const { return catalog_; }
  JobId scanJob() const { return scan_.id(); }
  JobId loadJob() const { return load_.id(); }
  bool isBusy() const { return scan_.busy() || load_.busy(); }

 Q_SIGNALS:
  void catalogFound(const sdw::widgets::ActivationCatalog& catalog);
  void loadStarted(const QString& what);
  void inputReady(const sdw::widgets::ActivationInputData& data);
  void loadEnded(const QString& message, bool isError);
  void info(const QString& message);
  void error(const QString& message);

 private:
  QPointer<JobManager> jobs_;
  QPointer<widgets::ActivationsPage> page_;
  QString workspace_;
  widgets::ActivationCatalog catalog_;
  JobSlot scan_;
  JobSlot load_;
};

}  // namespace sdw::app
