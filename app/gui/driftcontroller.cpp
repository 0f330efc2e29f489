#include "app/gui/driftcontroller.h"

#include "app/gui/workspace.h"
#include "gpu/device.h"
#include "gpu/drift_run.h"
#include "widgets/driftpage.h"
#include "widgets/prunedata.h"  // activationSparsityText

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <filesystem>

namespace sdw::app {

namespace {

struct DriftOutcome {
  widgets::DriftData data;
  QString written;
};

}  // namespace
}  // namespace sdw::app

Q_DECLARE_METATYPE(sdw::app::DriftOutcome)

namespace sdw::app {

namespace {

namespace fs = std::filesystem;


QString samplePath(const QString& rel) {
  return QDir::cleanPath(QDir(sampleWorkspaceDir()).filePath(QStringLiteral("../") + rel));
}

// drift-<timestamp>.sdw.h5 in `dir`, not yet taken.
QString newRunPath(const QString& dir) {
  const QString stamp = QDateTime::currentDateTimeUtc().toString(QStringLiteral("yyyyMMdd-HHmmss"));
  QString path = QDir(dir).filePath(QStringLiteral("drift-%1.sdw.h5").arg(stamp));
  for (int i = 2; QFileInfo::exists(path); ++i)
    path = QDir(dir).filePath(QStringLiteral("drift-%1-%2.sdw.h5").arg(stamp).arg(i));
  return path;
}

}  // namespace

QString DriftController::sampleDenseModel() { return samplePath(QStringLiteral("model/brown-llama")); }
QString DriftController::samplePrompts() { return samplePath(QStringLiteral("prompts/brown-heldout.jsonl")); }

DriftController::DriftController(JobManager* jobs, QObject* parent) : QObject(parent), jobs_(jobs) {
  qRegisterMetaType<sdw::widgets::DriftData>("sdw::widgets::DriftData");
  qRegisterMetaType<sdw::widgets::DriftRequest>("sdw::widgets::DriftRequest");
  qRegisterMetaType<QVector<sdw::widgets::DriftRunChoice>>("QVector<sdw::widgets::DriftRunChoice>");
  qRegisterMetaType<QVector<sdw::widgets::RunChoice>>("QVector<sdw::widgets::RunChoice>");
}

void DriftController::attach(widgets::AnalysisPanel* panel) {
  widgets::DriftPage* page = panel->driftPage();
  page_ = page;
  const gpu::DeviceInfo& dev = gpu::deviceInfo();
  page->setCudaAvailable(dev.cudaAvailable, QString::fromStdString(dev.reason));
  page->setDenseModel(sampleDenseModel());
  page->setPromptsFile(samplePrompts());
  connect(page, &widgets::DriftPage::openRequested, this, [this](const QString& path) { open(path); });
  connect(page, &widgets::DriftPage::analyzeRequested, this,
          [this](const widgets::DriftRequest& r) { analyze(r); });
  connect(page, &widgets::DriftPage::cancelRequested, this, &DriftController::cancel);
  connect(this, &DriftController::runsFound, page,
          [page](const QVector<widgets::DriftRunChoice>& runs, const QStringList& pruned, bool defaults) {
            page->setRuns(runs);
            if (defaults && !pruned.isEmpty()) page->setPrunedDirs(pruned);
          });
  connect(this, &DriftController::calibrationRunsFound, page, &widgets::DriftPage::setCalibrationRuns);
  connect(this, &DriftController::jobStarted, page, &widgets::DriftPage::beginJob);
  connect(this, &DriftController::jobProgress, page, &widgets::DriftPage::setProgress);
  connect(this, &DriftController::driftReady, page, &widgets::DriftPage::setData);
  connect(this, &DriftController::jobEnded, page, [page](const QString& message, bool isError) {
    page->endJob(message, isError);
    if (isError && page->data().isEmpty()) page->clear(message);
  });
}

void DriftController::setDenseModel(const QString& dir) {
  if (page_ && !dir.isEmpty()) page_->setDenseModel(dir);
}

JobId DriftController::setWorkspace(const QString& dir) {
  if (!jobs_) return 0;
  workspace_ = dir;
  outputDir_ = dir;
  if (page_) page_->setWorkspace(dir);
  return jobs_->start(Job<DriftInputs>{
      .name = tr("Find drift runs"),
      .slot = &scan_,
      .context = this,
      .work = [dir](const sdw::ProgressFn&) { return findDriftInputs(dir); },
      .finished =
          [this](const DriftInputs& in) {
            if (in.dir != workspace_) return;
            const bool defaults = in.dir != defaultsDir_;
            defaultsDir_ = in.dir;
            Q_EMIT runsFound(in.runs, in.prunedDirs, defaults);
            Q_EMIT calibrationRunsFound(in.calibrationRuns);
            if (shown_ || isBusy()) return;
            QString first = in.runs.isEmpty() ? QString() : in.runs.front().path;
            if (first.isEmpty()) {
              const QString sample = QDir(sampleWorkspaceDir()).filePath(QStringLiteral("drift-sample.sdw.h5"));
              if (QFileInfo::exists(sample)) first = sample;
            }
            if (!first.isEmpty()) open(first);
          },
      .failed = [this](const QString& m) { Q_EMIT error(tr("cannot list drift runs: %1").arg(m)); },
  });
}

JobId DriftController::open(const QString& path) {
  if (!jobs_) return 0;
  const JobId id = jobs_->start(Job<widgets::DriftData>{
      .name = tr("Open %1").arg(QFileInfo(path).fileName()),
      .slot = &open_,
      .context = this,
      .work = [path](const sdw::ProgressFn&) { return readDriftRun(path); },
      .finished =
          [this](const widgets::DriftData& d) {
            shown_ = true;
            Q_EMIT driftReady(d);
            ended(tr("Opened %1").arg(QFileInfo(d.path).fileName()), false);
          },
      .failed = [this](const QString& m) { ended(tr("Cannot open the drift run: %1").arg(m), true); },
      .cancelled = [this] { ended(tr("Opening cancelled."), false); },
  });
  if (!analyze_.busy()) Q_EMIT jobStarted(tr("Opening %1…").arg(QFileInfo(path).fileName()));
  return id;
}

JobId DriftController::analyze(const widgets::DriftRequest& request) {
  if (!jobs_) return 0;
  QString refusal;
  if (analyze_.busy()) refusal = tr("a drift analysis is already running");
  else if (request.dense.isEmpty()) refusal = tr("choose the dense model");
  else if (request.pruned.isEmpty()) refusal = tr("choose at least one pruned checkpoint");
  else if (request.pruned.size() > 2) refusal = tr("choose at most two pruned checkpoints");
  else if (request.prompts.isEmpty()) refusal = tr("choose a prompts file");
  else if (request.modes.isEmpty()) refusal = tr("choose a mode");
  else if (!(request.activationSparsity >= 0 && request.activationSparsity < 1))
    refusal = tr("the activation sparsity p_x must be in [0, 1)");
  else if (!request.activationThresholds.isEmpty() && !(request.activationSparsity > 0))
    refusal = tr("activation thresholds need p_x > 0 (the share of entries below them)");
  else if (outputDir_.isEmpty()) refusal = tr("open a workspace first (the run is written there)");
  if (!refusal.isEmpty()) {
    Q_EMIT error(tr("cannot run the drift analysis: %1").arg(refusal));
    if (!analyze_.busy()) Q_EMIT jobEnded(tr("Cannot run the drift analysis: %1").arg(refusal), false);
    return 0;
  }
  gpu::DriftSettings s;
  s.dense = toPath(request.dense);
  for (const QString& p : request.pruned) s.pruned.push_back(toPath(p));
  s.prompts = toPath(request.prompts);
  s.steps = request.steps;
  s.maxPrompts = request.maxPrompts;
  s.modes.clear();
  for (const QString& m : request.modes) s.modes.push_back(m == QLatin1String("shared") ? gpu::DriftMode::Shared : gpu::DriftMode::Own);
  s.decoding = Decoding{request.temperature, request.topK, request.topP};
  s.seed = request.seed;
  s.device = request.device.toStdString();
  s.activationSparsity = request.activationSparsity;
  s.activationThresholds = toPath(request.activationThresholds);  // read in the job: a run without samples fails it
  const QString out = newRunPath(outputDir_);
  const JobId id = jobs_->start(Job<DriftOutcome>{
      .name = tr("Drift analysis"),
      .slot = &analyze_,
      .context = this,
      .work =
          [s, out](const sdw::ProgressFn& p) {
            const gpu::DriftResult r = gpu::analyzeDrift(s, p);
            DriftOutcome o;
            o.written = fromPath(gpu::writeDriftRun(r, toPath(out)));
            o.data = readDriftRun(o.written);  // what is shown is what was written
            return o;
          },
      .progress =
          [this](const JobUpdate& u) {
            Q_EMIT jobProgress(u.fraction, tr("%1 / %2 prompts").arg(u.done).arg(u.total));
          },
      .finished =
          [this](const DriftOutcome& o) {
            shown_ = true;
            Q_EMIT driftReady(o.data);
            ended(tr("Drift run saved to %1 (%2 prompts, %3 s)")
                      .arg(QFileInfo(o.written).fileName())
                      .arg(o.data.prompts)
                      .arg(o.data.seconds, 0, 'f', 1),
                  false);
            Q_EMIT runWritten(o.written);
          },
      .failed = [this](const QString& m) { ended(tr("Drift analysis failed: %1").arg(m), true); },
      .cancelled = [this] { ended(tr("Drift analysis cancelled."), false); },
  });
  QStringList names;
  for (const QString& p : request.pruned) names << QFileInfo(p).fileName();
  Q_EMIT jobStarted(tr("Measuring the drift of %1 against %2 (%3 decode steps)…")
                        .arg(names.join(tr(" and ")), QFileInfo(request.dense).fileName())
                        .arg(request.steps));
  Q_EMIT info(tr("drift analysis started: dense %1, pruned %2%3, prompts %4, %5 steps, decoding %6, device %7")
                  .arg(request.dense, request.pruned.join(QStringLiteral(", ")),
                       request.activationSparsity > 0
                           ? tr(" at activation sparsity %1")
                                 .arg(widgets::activationSparsityText(request.activationSparsity,
                                                                      request.activationThresholds))
                           : QString(),
                       request.prompts)
                  .arg(request.steps)
                  .arg(QString::fromStdString(s.decoding.describe()), request.device));
  return id;
}

void DriftController::cancel() {
  if (!jobs_) return;
  jobs_->cancel(analyze_.id());
  jobs_->cancel(open_.id());
}

void DriftController::ended(const QString& message, bool isError) {
  if (!isBusy()) Q_EMIT jobEnded(message, isError);
  if (isError) Q_EMIT error(message);
  else Q_EMIT info(message);
}

}  // namespace sdw::app
