#include "app/gui/calibrationcontroller.h"
#include "app/gui/workspace.h"

#include "app/gui/modelcontroller.h"
#include "core/decoding.h"
#include "core/runstore.h"
#include "gpu/calibration.h"
#include "gpu/device.h"
#include "gpu/model_config.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLocale>
#include <QStorageInfo>

#include <filesystem>
#include <stdexcept>

namespace sdw::app {

struct CalibrationOutcome {
  QString path;
  bool complete = false;
  qint64 collected = 0;
  qint64 budget = 0;
  double seconds = 0;
  double tokensPerSecond = 0;
  quint64 fileBytes = 0;
};

}  // namespace sdw::app

Q_DECLARE_METATYPE(sdw::app::CalibrationOutcome)

namespace sdw::app {

namespace {

namespace fs = std::filesystem;

QString tokens(double t) { return QLocale(QLocale::English).toString(static_cast<qint64>(t)); }

QString samplesFile(const QString& rel) {
  // The sample model sits in <samples>/model/brown-llama.
  return QDir::cleanPath(QDir(sampleModelDir()).filePath(QStringLiteral("../../") + rel));
}

CalibrationOutcome outcomeOf(const gpu::CalibrationResult& r) {
  CalibrationOutcome o;
  o.path = fromPath(r.run);
  o.complete = r.complete;
  o.collected = r.tokensCollected;
  o.budget = r.tokenBudget;
  o.seconds = r.seconds;
  o.tokensPerSecond = r.tokensPerSecond;
  o.fileBytes = r.fileBytes;
  return o;
}

}  // namespace

gpu::CalibrationSettings calibrationSettings(const widgets::CalibrationForm& f) {
  gpu::CalibrationSettings s;
  s.source = gpu::parseCalibrationSource(f.source.toStdString());
  s.model = toPath(f.model);
  s.corpus = toPath(f.corpus);
  s.prompts = toPath(f.prompts);
  s.crossModel = toPath(f.crossModel);
  s.tokenBudget = f.tokenBudget;
  s.window = f.window;
  s.maxNewTokens = f.maxNewTokens;
  s.batch = f.batch;
  s.capture = gpu::parseCaptureMode(f.capture.toStdString());
  s.includePrefill = f.includePrefill;
  s.sampling.temperature = f.temperature;
  s.sampling.topK = f.topK;
  s.sampling.topP = f.topP;
  s.seed = f.seed;
  s.sampling.seed = f.seed;
  s.device = f.device.toStdString();
  s.dtype = f.dtype.toStdString();
  s.storage = gpu::parseStatsStorage(f.storage.toStdString());
  s.topK = f.storageK;
  s.sampleRows = f.sampleRows;
  return s;
}

QString sampleCorpusFile() { return samplesFile(QStringLiteral("corpus/brown-calib.txt")); }
QString samplePromptsFile() { return samplesFile(QStringLiteral("prompts/brown-calib.jsonl")); }

CalibrationController::CalibrationController(JobManager* jobs, QObject* parent) : QObject(parent), jobs_(jobs) {
  qRegisterMetaType<sdw::widgets::CalibrationForm>("sdw::widgets::CalibrationForm");
  qRegisterMetaType<sdw::widgets::CalibrationEstimateView>("sdw::widgets::CalibrationEstimateView");
}

void CalibrationController::attach(widgets::CalibrationPanel* panel) {
  const gpu::DeviceInfo& dev = gpu::deviceInfo();
  panel->setCudaAvailable(dev.cudaAvailable, QString::fromStdString(dev.reason));
  panel->setSampleDefaults(sampleModelDir(), sampleCorpusFile(), samplePromptsFile());
  if (!workspace_.isEmpty()) panel->setOutputDir(workspace_);
  connect(panel, &widgets::CalibrationPanel::settingsChanged, this,
          [this](const widgets::CalibrationForm& f) { Q_EMIT estimateReady(estimate(f)); });
  connect(panel, &widgets::CalibrationPanel::startRequested, this,
          [this](const widgets::CalibrationForm& f) { start(f); });
  connect(panel, &widgets::CalibrationPanel::cancelRequested, this, &CalibrationController::cancel);
  connect(panel, &widgets::CalibrationPanel::resumeRequested, this, [this](const QString& p) { resume(p); });
  connect(this, &CalibrationController::estimateReady, panel, &widgets::CalibrationPanel::setEstimate);
  connect(this, &CalibrationController::runStarted, panel, &widgets::CalibrationPanel::beginRun);
  connect(this, &CalibrationController::runProgress, panel, &widgets::CalibrationPanel::setRunProgress);
  connect(this, &CalibrationController::layerProgress, panel, &widgets::CalibrationPanel::setLayerProgress);
  connect(this, &CalibrationController::runEnded, panel, &widgets::CalibrationPanel::endRun);
  connect(this, &CalibrationController::resumable, panel, &widgets::CalibrationPanel::setResumePath);
  connect(this, &CalibrationController::runWritten, panel, [this, panel] {
    if (!workspace_.isEmpty()) panel->setOutputDir(workspace_);  // the next default name moves on
  });
  panel->setEstimate(estimate(panel->form()));
}

void CalibrationController::setWorkspace(const QString& dir) { workspace_ = dir; }

widgets::CalibrationEstimateView CalibrationController::estimate(const widgets::CalibrationForm& form) const {
  widgets::CalibrationEstimateView v;
  gpu::CalibrationSettings s;
  try {
    s = calibrationSettings(form);
  } catch (const std::exception& ex) {
    v.error = QString::fromUtf8(ex.what());
    return v;
  }
  if (s.source != gpu::CalibrationSource::Fixed) {
    const Decoding d{form.temperature, form.topK, form.topP};
    v.decoding = QString::fromStdString(d.describe()) +
                 (sameDecoding(d, kDefaultDecoding) ? tr(" (the default protocol)")
                                                    : tr(" (the default is %1)").arg(QString::fromStdString(
                                                          kDefaultDecoding.describe())));
    const QString generator = s.source == gpu::CalibrationSource::CrossModel ? form.crossModel : form.model;
    if (!generator.isEmpty()) v.decodingNote = QString::fromStdString(generationConfigNote(toPath(generator), d));
  }
  if (form.model.isEmpty()) {
    v.error = tr("choose a model");
    return v;
  }
  try {
    const gpu::ModelConfig config = gpu::loadModelConfig(toPath(form.model));
    const gpu::CalibrationEstimate e = gpu::estimateCalibration(config, s);
    v.valid = true;
    v.inputs = e.inputs;
    v.accumulatorBytes = e.accumulatorBytes;
    v.bufferBytes = e.bufferBytes;
    v.modelBytes = e.modelBytes;
    v.deviceBytes = e.deviceBytes;
    v.fileBytes = e.fileBytes;
    v.fileBytesFull = e.fileBytesFull;
    v.fileBytesTopk = e.fileBytesTopk;
  } catch (const std::exception& ex) {
    v.error = QString::fromUtf8(ex.what());
    return v;
  }
  // The volume the run goes to: the output's folder, or its nearest existing parent.
  QString dir = form.output.isEmpty() ? workspace_ : QFileInfo(form.output).absolutePath();
  while (!dir.isEmpty() && !QFileInfo(dir).isDir()) {
    const QString up = QFileInfo(dir).absolutePath();
    if (up == dir) break;
    dir = up;
  }
  if (!dir.isEmpty()) {
    const QStorageInfo storage(dir);
    if (storage.isValid() && storage.bytesAvailable() > 0) {
      v.freeBytes = static_cast<quint64>(storage.bytesAvailable());
      v.diskShort = v.fileBytes + runstore::kDefaultMinFreeSpace > v.freeBytes;
    }
  }
  return v;
}

JobId CalibrationController::start(const widgets::CalibrationForm& form) {
  if (!jobs_) return 0;
  if (run_.busy()) {
    Q_EMIT error(tr("a calibration is already running"));
    return 0;
  }
  widgets::CalibrationForm f = form;
  if (f.output.isEmpty() && !workspace_.isEmpty())
    f.output = QDir(workspace_).filePath(QStringLiteral("calib-%1-%2.sdw.h5").arg(f.source).arg(f.tokenBudget));
  if (f.output.isEmpty()) {
    Q_EMIT runEnded(tr("Cannot start: choose an output run file."), widgets::CalibrationPanel::Outcome::Failed);
    return 0;
  }
  gpu::CalibrationSettings s;
  try {
    s = calibrationSettings(f);
  } catch (const std::invalid_argument& ex) {
    Q_EMIT runEnded(tr("Cannot start: %1").arg(QString::fromUtf8(ex.what())), widgets::CalibrationPanel::Outcome::Failed);
    return 0;
  }
  const fs::path out = toPath(f.output);
  path_ = f.output;
  existedBefore_ = QFileInfo::exists(f.output) || QFileInfo::exists(f.output + QStringLiteral(".partial"));
  lastDone_ = 0;
  lastTotal_ = static_cast<double>(f.tokenBudget);
  clock_.start();
  lastChartMs_ = -1000;
  const JobId id = startRun(tr("Calibration (%1)").arg(f.source), [s, out](const sdw::ProgressFn& p) {
    return outcomeOf(gpu::runCalibration(s, out, p));
  });
  Q_EMIT runStarted(tr("Calibrating %1 from %2 into %3…")
                        .arg(QFileInfo(f.model).fileName(), f.source, QFileInfo(f.output).fileName()),
                    f.tokenBudget);
  Q_EMIT info(tr("calibration started: %1, %2 tokens, %3").arg(f.source, tokens(double(f.tokenBudget)), f.output));
  return id;
}

JobId CalibrationController::resume(const QString& path) {
  if (!jobs_) return 0;
  if (run_.busy()) {
    Q_EMIT error(tr("a calibration is already running"));
    return 0;
  }
  path_ = path;
  existedBefore_ = false;  // resuming: the file is the run itself
  lastDone_ = 0;
  lastTotal_ = 0;
  clock_.start();
  lastChartMs_ = -1000;
  const fs::path p = toPath(path);
  const JobId id = startRun(tr("Resume calibration"), [p](const sdw::ProgressFn& progress) {
    return outcomeOf(gpu::resumeCalibration(p, progress));
  });
  Q_EMIT runStarted(tr("Resuming %1…").arg(QFileInfo(path).fileName()), 0);
  Q_EMIT info(tr("calibration resumed: %1").arg(path));
  return id;
}

void CalibrationController::cancel() {
  if (jobs_) jobs_->cancel(run_.id());
}

JobId CalibrationController::startRun(const QString& name,
                                       std::function<CalibrationOutcome(const sdw::ProgressFn&)> work) {
  return jobs_->start(Job<CalibrationOutcome>{
      .name = name,
      .slot = &run_,
      .context = this,
      .work = std::move(work),
      .progress = [this](const JobUpdate& u) { showProgress(u); },
      .finished =
          [this](const CalibrationOutcome& o) {
            const QString msg = tr("Complete: %1 — %2 tokens in %3 s (%4 tokens/s), %5 MiB")
                                    .arg(QFileInfo(o.path).fileName(), tokens(double(o.collected)))
                                    .arg(o.seconds, 0, 'f', 1)
                                    .arg(o.tokensPerSecond, 0, 'f', 0)
                                    .arg(double(o.fileBytes) / (1024.0 * 1024.0), 0, 'f', 1);
            Q_EMIT runEnded(msg, o.complete ? widgets::CalibrationPanel::Outcome::Complete
                                            : widgets::CalibrationPanel::Outcome::Incomplete);
            Q_EMIT info(tr("calibration finished: %1").arg(o.path));
            Q_EMIT runWritten(o.path);
          },
      .failed =
          [this](const QString& message) {
            const QString m = tr("Calibration failed: %1").arg(message);
            Q_EMIT runEnded(m, widgets::CalibrationPanel::Outcome::Failed);
            Q_EMIT error(m);
            keptIncomplete();
          },
      .cancelled =
          [this] {
            const bool exists = !existedBefore_ && QFileInfo::exists(path_);
            const QString msg =
                exists ? tr("Cancelled: %1 is kept as an incomplete run (%2 of %3 tokens). Resume continues it.")
                             .arg(QFileInfo(path_).fileName(), tokens(lastDone_), tokens(lastTotal_))
                       : tr("Cancelled before anything was written.");
            Q_EMIT runEnded(msg, exists ? widgets::CalibrationPanel::Outcome::Incomplete
                                        : widgets::CalibrationPanel::Outcome::Failed);
            Q_EMIT info(msg);
            if (exists) keptIncomplete();
          },
  });
}

void CalibrationController::showProgress(const JobUpdate& u) {
  lastDone_ = u.done;
  if (u.total > 0) lastTotal_ = u.total;
  const qint64 now = clock_.elapsed();
  double elapsed = -1;  // no chart point
  if (u.ratePerSecond > 0 && now - lastChartMs_ >= 500) {
    lastChartMs_ = now;
    elapsed = now / 1000.0;
  }
  Q_EMIT runProgress(u.done, u.total, u.ratePerSecond, elapsed, u.stage);
  if (u.parts > 0) Q_EMIT layerProgress(u.part, u.parts, u.partLabel);
}

void CalibrationController::keptIncomplete() {
  // The engine keeps a stopped run under its final name; a failure before the
  // first write leaves nothing (or only a .partial).
  if (existedBefore_) return;  // e.g. refused because the name was taken
  const QString partial = path_ + QStringLiteral(".partial");
  const QString kept = QFileInfo::exists(path_) ? path_ : (QFileInfo::exists(partial) ? partial : QString());
  if (kept.isEmpty()) return;
  Q_EMIT resumable(kept);
  Q_EMIT runWritten(kept);
}

}  // namespace sdw::app
