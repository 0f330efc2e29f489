#include "app/gui/storydriver.h"

#include "app/gui/analysiscontroller.h"
#include "app/gui/benchmarkcontroller.h"
#include "app/gui/calibrationcontroller.h"
#include "app/gui/driftcontroller.h"
#include "app/gui/mainwindow.h"
#include "app/gui/modelcontroller.h"
#include "app/gui/pruningcontroller.h"
#include "app/gui/storyfindings.h"
#include "gpu/bench.h"
#include "gpu/device.h"
#include "widgets/analysispanel.h"
#include "widgets/benchmarkpanel.h"
#include "widgets/calibrationpanel.h"
#include "widgets/driftpage.h"
#include "widgets/epsilonpage.h"
#include "widgets/modelpanel.h"
#include "widgets/pruningpanel.h"
#include "widgets/qualitydialog.h"
#include "widgets/qualitypage.h"

#include <QAbstractButton>
#include <QComboBox>
#include <QDateTime>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPushButton>
#include <QStandardPaths>
#include <QTimer>

#include <algorithm>

namespace sdw::app {

namespace {

// The epsilon analysis keeps this many directions of H_D; the reference run
// stores twice as many eigenpairs so the analysis never runs short.
constexpr int kEpsilonK = 64;
constexpr int kReferenceTopK = 128;

// "cuda:0" and "cuda" are the same device for the story.
QString deviceKind(const QString& device) {
  return device.startsWith(QLatin1String("cuda")) ? QStringLiteral("cuda") : device;
}

// The first prompt of the AR calibration prompts: what the generate step
// decodes is what AR calibration collects from.
QString firstCalibrationPrompt() {
  QFile f(samplePromptsFile());
  if (f.open(QIODevice::ReadOnly | QIODevice::Text)) {
    const QJsonObject o = QJsonDocument::fromJson(f.readLine()).object();
    const QString p = o.value(QStringLiteral("prompt")).toString();
    if (!p.isEmpty()) return p;
  }
  return QStringLiteral("The jury said");
}

QVector<StoryStepInfo> storySteps() {
  const auto step = [](const char* id, const char* panel, const char* action, const QString& title,
                       const QString& explanation) {
    return StoryStepInfo{QString::fromUtf8(id), QString::fromUtf8(panel), QString::fromUtf8(action), title,
                         explanation};
  };
  return {
      step("load", "Model", "Load", QObject::tr("Load the dense model"),
           QObject::tr("The sample model (brown-llama, a small Llama trained on the Brown corpus) is loaded on the "
                       "story's device. The module tree lists every projection the story calibrates, prunes to 2:4 "
                       "and measures: q, k, v, o, gate, up and down in each decoder layer.")),
      step("generate", "Model", "Generate", QObject::tr("Watch the dense model decode"),
           QObject::tr("The dense model continues the first calibration prompt token by token at batch 1, the way "
                       "decoding runs. These self-generated tokens are what AR calibration reads; fixed-text "
                       "calibration never sees them. Look at the tokens/s next to the Stop button.")),
      step("calibrate-fixed", "Calibration", "Start", QObject::tr("Calibrate on fixed text (the classic protocol)"),
           QObject::tr("Random windows of the Brown calibration text are fed teacher-forced and every position's "
                       "projection inputs are accumulated into H = 2 X X^T / N, the statistic SparseGPT prunes with. "
                       "This plays the part of C4 in the usual protocol. Watch tokens/s and the per-layer cells.")),
      step("calibrate-ar-exact", "Calibration", "Start", QObject::tr("AR calibration, exact capture"),
           QObject::tr("The dense model decodes the calibration prompts with its KV cache and the inputs of every "
                       "decode step are captured as they happen; the prefill over the prompt is discarded. It is "
                       "exactly what decoding computes, and slow: compare its tokens/s with the next step.")),
      step("calibrate-ar", "Calibration", "Start", QObject::tr("AR calibration, fast re-forward"),
           QObject::tr("The same decoding, generated first; then one teacher-forced pass over prompt + generated "
                       "tokens keeps only the generated positions. With causal attention the inputs equal exact "
                       "capture's up to rounding. Its budget equals the fixed-text run's, so the two compare fairly.")),
      step("calibrate-reference", "Calibration", "Start", QObject::tr("Decode-time reference on held-out prompts"),
           QObject::tr("The dense model decodes held-out prompts that neither calibration saw, and the top "
                       "eigenpairs of this decode-time H_D are stored. It is the yardstick of the next step: what "
                       "the projections actually read at decode time.")),
      step("epsilon", "Analysis/Epsilon", "Analyze", QObject::tr("Calibration discrepancy epsilon"),
           QObject::tr("For each projection input, eps_k compares a calibration's H with H_D in the reference's top "
                       "k directions; 0 means the calibration objective matches decode time there. Bars compare "
                       "fixed text (C4) and AR per layer; in the scatter, points above the diagonal are inputs where "
                       "AR is closer. The finding says what this sample shows.")),
      step("prune-fixed", "Pruning", "Prune", QObject::tr("Prune SparseGPT 2:4 from the fixed-text run"),
           QObject::tr("SparseGPT drops two of every four weights in each group and updates the rest to compensate, "
                       "using the fixed-text statistics. Each layer's bar fills as its modules are solved; the "
                       "table shows each module's relative output error on its calibration data.")),
      step("prune-ar", "Pruning", "Prune", QObject::tr("Prune SparseGPT 2:4 from the AR run"),
           QObject::tr("The same solver with the same settings, from the AR statistics: only the source of X "
                       "changes. The relative errors are measured on each run's own calibration data, so compare "
                       "the two models in the next steps rather than here.")),
      step("evaluate", "Pruning/Quality", "Evaluate…", QObject::tr("Quality: dense against both pruned models"),
           QObject::tr("Perplexity on held-out Brown text and on the dense model's held-out generations, and "
                       "on-policy agreement: each pruned model decodes its own continuation of the held-out prompts "
                       "and the dense model scores it (KL, greedy agreement, first divergence). Lower KL and higher "
                       "agreement mean closer to the dense model.")),
      step("drift", "Analysis/Drift", "Run drift analysis", QObject::tr("Activation drift by decode step"),
           QObject::tr("Dense and pruned models decode the held-out prompts; for each decode step and layer the "
                       "plot shows how far the pruned model's layer input is from the dense one. Own trajectory: "
                       "errors compound; shared: the pruned model reads the dense tokens. Markers show where each "
                       "layer reaches 90% of its plateau.")),
      step("bench", "Benchmark", "Start", QObject::tr("Sparse kernel against dense"),
           QObject::tr("The bitmask 2:4 matrix-vector kernel is timed against our dense GEMV and, on a GPU, cuBLAS, "
                       "at batch 1. A 2:4 weight costs 1.125 bytes against 2, so 1.78x is the bandwidth limit (the "
                       "dashed line). On the CPU the CPU kernels are timed, which says nothing about a GPU.")),
  };
}

}  // namespace

StoryOptions gpuStoryOptions() {
  StoryOptions o;
  o.device = QStringLiteral("cuda");
  o.dtype = QStringLiteral("bfloat16");
  o.calibrationTokens = 20000;
  o.exactTokens = 5000;
  o.referenceTokens = 10000;
  o.maxNewTokens = 128;
  o.evalSeeds = 3;
  o.evalMaxNewTokens = 64;
  o.driftSteps = 128;
  o.generateTokens = 64;
  o.benchShapes = QStringLiteral("llama3-8b");
  o.benchRepeats = 20;
  return o;
}

QString storyOutcomeName(StoryOutcome outcome) {
  switch (outcome) {
    case StoryOutcome::Ok: return QStringLiteral("ok");
    case StoryOutcome::Failed: return QStringLiteral("failed");
    case StoryOutcome::Cancelled: return QStringLiteral("cancelled");
  }
  return {};
}

StoryDriver::StoryDriver(MainWindow* window, StoryOptions options, QObject* parent)
    : QObject(parent), window_(window), options_(std::move(options)), steps_(storySteps()) {
  qRegisterMetaType<sdw::app::StoryStepResult>("sdw::app::StoryStepResult");
  options_.device = deviceKind(options_.device);
  if (options_.workDir.isEmpty())
    options_.workDir = QDir(QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation))
                           .filePath(QStringLiteral("walkthrough-%1")
                                         .arg(QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"))));
  options_.workDir = QDir::cleanPath(QFileInfo(options_.workDir).absoluteFilePath());
  // The manager signals a job's end before the job's own callbacks run (the
  // controller reports it there); endLater decides once both have run.
  connect(window_->jobs(), &JobManager::cancelled, this, [this](JobId id) {
    if (id != 0 && id == job_) jobCancelled_ = true;
  });
}

StoryDriver::~StoryDriver() { dropConnections(); }

// ---------------------------------------------------------------- control

void StoryDriver::runStep(int index) {
  if (current_ >= 0 || index < 0 || index >= steps_.size()) return;
  begin(index);
}

void StoryDriver::runAll() {
  if (isRunning()) return;
  results_.clear();
  all_ = true;
  stopAll_ = false;
  begin(0);
}

void StoryDriver::cancel() {
  if (current_ < 0) {
    if (all_) {  // between two steps of runAll
      all_ = false;
      Q_EMIT allFinished(false);
    }
    return;
  }
  stopAll_ = true;  // whatever the step's end, nothing follows it
  if (job_ == 0) {  // waiting for another job of the panel, or not started
    finish(StoryOutcome::Cancelled, tr("Cancelled before the step's job started."), {}, device_);
    return;
  }
  QAbstractButton* b = cancelButton();
  if (b && b->isEnabled()) b->click();
  else window_->jobs()->cancel(job_);
}

void StoryDriver::begin(int index) {
  current_ = index;
  ++serial_;
  job_ = 0;
  jobCancelled_ = false;
  device_ = options_.device;
  clock_.start();
  dropConnections();
  Q_EMIT stepStarted(index);
  ensureWorkspace();
  switch (index) {
    case Load: startLoad(); break;
    case Generate: startGenerate(); break;
    case CalibrateFixed:
    case CalibrateArExact:
    case CalibrateAr:
    case CalibrateReference: startCalibration(index); break;
    case Epsilon: startEpsilon(); break;
    case PruneFixed:
    case PruneAr: startPrune(index); break;
    case Evaluate: startEvaluate(); break;
    case Drift: startDrift(); break;
    case Bench: startBench(); break;
    default: refuse(tr("unknown step %1").arg(index));
  }
}

void StoryDriver::endLater(const End& end) {
  const quint64 serial = serial_;
  // The job manager is still telling the other listeners about this job;
  // decide once it is done, when a cancel of it is known.
  QTimer::singleShot(0, this, [this, serial, end] {
    if (serial != serial_ || current_ < 0) return;
    const QString ran = end.device.isEmpty() ? device_ : deviceKind(end.device);
    if (jobCancelled_) finish(StoryOutcome::Cancelled, end.message, end.finding, ran);
    else if (!end.ok) finish(StoryOutcome::Failed, end.message, end.finding, ran);
    else if (ran != options_.device)
      finish(StoryOutcome::Failed,
             tr("%1 (ran on %2, but the story runs on %3)").arg(end.message, ran, options_.device), end.finding, ran);
    else finish(StoryOutcome::Ok, end.message, end.finding, ran);
  });
}

void StoryDriver::finish(StoryOutcome outcome, const QString& message, const QString& finding, const QString& device) {
  const int index = current_;
  if (index < 0) return;
  dropConnections();
  StoryStepResult r;
  const StoryStepInfo& info = steps_[index];
  r.id = info.id;
  r.panel = info.panel;
  r.action = info.action;
  r.device = device;
  r.seconds = clock_.isValid() ? static_cast<double>(clock_.nsecsElapsed()) / 1e9 : 0.0;
  r.outcome = outcome;
  r.message = message;
  r.finding = finding;
  results_.push_back(r);
  current_ = -1;
  job_ = 0;
  ++serial_;
  Q_EMIT stepFinished(index, r);
  if (!all_) return;
  if (outcome != StoryOutcome::Ok || stopAll_ || index + 1 >= steps_.size()) {
    all_ = false;
    Q_EMIT allFinished(outcome == StoryOutcome::Ok && !stopAll_);
    return;
  }
  // The next step starts from the event loop, not inside this step's end.
  QTimer::singleShot(0, this, [this, next = index + 1] {
    if (all_ && current_ < 0) begin(next);
  });
}

void StoryDriver::refuse(const QString& why) {
  const quint64 serial = serial_;
  // Reported from the event loop, so stepFinished never comes before the
  // caller of runStep got control back.
  QTimer::singleShot(0, this, [this, serial, why] {
    if (serial == serial_) finish(StoryOutcome::Failed, why, {}, device_);
  });
}

template <typename Sender, typename Signal>
void StoryDriver::retryAfter(Sender* sender, Signal signal) {
  const quint64 serial = serial_;
  connections_ << connect(sender, signal, this, [this, serial] {
    QTimer::singleShot(0, this, [this, serial] {
      if (serial != serial_ || current_ < 0 || job_ != 0) return;
      dropConnections();
      switch (current_) {
        case Load: startLoad(); break;
        case Generate: startGenerate(); break;
        case Epsilon: startEpsilon(); break;
        case Drift: startDrift(); break;
        default: break;
      }
    });
  });
}

bool StoryDriver::press(QAbstractButton* button, const QString& what) {
  if (!button) {
    refuse(tr("the %1 button is missing").arg(what));
    return false;
  }
  if (!button->isEnabled()) {
    refuse(tr("the %1 button is disabled%2")
               .arg(what, button->toolTip().isEmpty() ? QString() : QStringLiteral(": ") + button->toolTip()));
    return false;
  }
  button->click();
  return true;
}

QAbstractButton* StoryDriver::cancelButton() const {
  const auto find = [](QWidget* w, const char* name) { return w->findChild<QAbstractButton*>(QLatin1String(name)); };
  switch (current_) {
    case Load: return find(window_->modelPanel(), "loadModel");  // "Cancel" while loading
    case Generate: return find(window_->modelPanel(), "stop");
    case CalibrateFixed:
    case CalibrateArExact:
    case CalibrateAr:
    case CalibrateReference: return find(window_->calibrationPanel(), "cancelCalibration");
    case Epsilon: return find(window_->analysisPanel(), "cancelAnalysis");
    case PruneFixed:
    case PruneAr:
    case Evaluate: return find(window_->pruningPanel(), "cancelPrune");
    case Drift: return find(window_->analysisPanel(), "driftCancel");
    case Bench: return find(window_->benchmarkPanel(), "BenchCancel");
    default: return nullptr;
  }
}

void StoryDriver::dropConnections() {
  for (const auto& c : connections_) disconnect(c);
  connections_.clear();
}

bool StoryDriver::checkDevice(const QString& panelDevice, const QString& panel) {
  device_ = deviceKind(panelDevice);
  if (device_ == options_.device) return true;
  const gpu::DeviceInfo& d = gpu::deviceInfo();
  refuse(tr("the %1 panel cannot run on %2 here (it offers %3)%4")
             .arg(panel, options_.device, device_,
                  d.cudaAvailable ? QString() : QStringLiteral(": ") + QString::fromStdString(d.reason)));
  return false;
}

void StoryDriver::ensureWorkspace() {
  QDir().mkpath(options_.workDir);
  const QString current = window_->workspace().isEmpty()
                              ? QString()
                              : QDir::cleanPath(QFileInfo(window_->workspace()).absoluteFilePath());
  if (current != options_.workDir) window_->openWorkspace(options_.workDir);
}

QString StoryDriver::freePath(const QString& fileName) const {
  const QDir dir(options_.workDir);
  QString path = dir.filePath(fileName);
  const QString stem = fileName.endsWith(QLatin1String(".sdw.h5")) ? fileName.chopped(7) : fileName;
  for (int n = 2; QFileInfo::exists(path) || QFileInfo::exists(path + QStringLiteral(".partial")); ++n)
    path = dir.filePath(QStringLiteral("%1-%2.sdw.h5").arg(stem).arg(n));
  return path;
}

QString StoryDriver::existing(const QString& produced, const QString& fileName) const {
  if (!produced.isEmpty() && QFileInfo::exists(produced)) return produced;
  const QString path = QDir(options_.workDir).filePath(fileName);
  return QFileInfo::exists(path) ? path : QString();
}

// ---------------------------------------------------------------- steps

void StoryDriver::startLoad() {
  ModelController* ctrl = window_->modelController();
  widgets::ModelPanel* panel = window_->modelPanel();
  window_->selectPanel(QStringLiteral("Model"));
  if (ctrl->isLoading()) {
    // Another load (the window's start-up one) is running and the Load
    // button is its Cancel now: load once it has ended.
    retryAfter(ctrl, &ModelController::modelLoaded);
    retryAfter(ctrl, &ModelController::loadEnded);
    return;
  }
  panel->setModelDir(sampleModelDir());
  panel->setDevice(options_.device);
  panel->setDtype(options_.dtype);
  const auto* device = panel->findChild<QComboBox*>(QStringLiteral("device"));
  if (!checkDevice(device ? device->currentData().toString() : QString(), tr("Model"))) return;
  connections_ << connect(ctrl, &ModelController::modelLoaded, this,
                          [this](const widgets::ModelSummary& s, const QVector<widgets::ModuleRow>&) {
                            const double seconds = static_cast<double>(clock_.nsecsElapsed()) / 1e9;
                            endLater({true, window_->modelPanel()->statusText(), findings::modelLoaded(s, seconds),
                                      s.device});
                          });
  connections_ << connect(ctrl, &ModelController::loadEnded, this,
                          [this](const QString& message, bool) { endLater({false, message, {}, {}}); });
  if (!press(panel->findChild<QAbstractButton*>(QStringLiteral("loadModel")), tr("Load"))) return;
  job_ = ctrl->loadJob();
}

void StoryDriver::startGenerate() {
  ModelController* ctrl = window_->modelController();
  widgets::ModelPanel* panel = window_->modelPanel();
  window_->selectPanel(QStringLiteral("Model"));
  if (ctrl->isLoading()) {  // generate with the model being loaded, not the one before it
    retryAfter(ctrl, &ModelController::modelLoaded);
    retryAfter(ctrl, &ModelController::loadEnded);
    return;
  }
  if (ctrl->isGenerating()) {
    refuse(tr("a generation is already running"));
    return;
  }
  if (!ctrl->hasModel()) {
    refuse(tr("no model is loaded: run the load step first"));
    return;
  }
  if (!checkDevice(ctrl->summary().device, tr("Model"))) return;
  widgets::GenerateSettings g;
  g.prompt = firstCalibrationPrompt();
  g.maxNewTokens = options_.generateTokens;
  g.temperature = options_.decoding.temperature;
  g.topK = options_.decoding.topK;
  g.topP = options_.decoding.topP;
  g.seed = 0;
  g.chatFormat = false;  // the prompt as AR calibration reads it
  panel->setGenerateSettings(g);
  connections_ << connect(ctrl, &ModelController::generationEnded, this,
                          [this](const QString&, bool isError) {
                            widgets::ModelPanel* p = window_->modelPanel();
                            endLater({!isError, p->generationStatusText(),
                                      findings::generated(p->tokenCount(), p->tokensPerSecond(),
                                                          options_.decoding, device_),
                                      window_->modelController()->summary().device});
                          });
  if (!press(panel->findChild<QAbstractButton*>(QStringLiteral("generate")), tr("Generate"))) return;
  job_ = ctrl->generateJob();
}

void StoryDriver::startCalibration(int step) {
  CalibrationController* ctrl = window_->calibrationController();
  widgets::CalibrationPanel* panel = window_->calibrationPanel();
  window_->selectPanel(QStringLiteral("Calibration"));
  if (ctrl->isRunning()) {
    refuse(tr("a calibration is already running"));
    return;
  }
  widgets::CalibrationForm f = panel->form();
  f.model = sampleModelDir();
  f.corpus = sampleCorpusFile();
  f.prompts = step == CalibrateReference ? sampleHeldoutPromptsFile() : samplePromptsFile();
  f.source = step == CalibrateFixed ? QStringLiteral("fixed") : QStringLiteral("ar");
  f.capture = step == CalibrateArExact ? QStringLiteral("exact") : QStringLiteral("reforward");
  f.tokenBudget = step == CalibrateArExact     ? options_.exactTokens
                  : step == CalibrateReference ? options_.referenceTokens
                                               : options_.calibrationTokens;
  f.window = 256;
  f.maxNewTokens = options_.maxNewTokens;
  f.batch = 8;
  f.includePrefill = false;
  f.temperature = options_.decoding.temperature;
  f.topK = options_.decoding.topK;
  f.topP = options_.decoding.topP;
  f.seed = 0;
  f.device = options_.device;
  f.dtype = options_.dtype;
  f.storage = step == CalibrateReference ? QStringLiteral("topk") : QStringLiteral("full");
  f.storageK = kReferenceTopK;
  const QString name = step == CalibrateFixed       ? QStringLiteral("calib-fixed.sdw.h5")
                       : step == CalibrateArExact   ? QStringLiteral("calib-ar-exact.sdw.h5")
                       : step == CalibrateAr        ? QStringLiteral("calib-ar.sdw.h5")
                                                    : QStringLiteral("reference-heldout.sdw.h5");
  f.output = freePath(name);
  panel->setForm(f);
  if (!checkDevice(panel->form().device, tr("Calibration"))) return;

  const QString label = step == CalibrateFixed       ? tr("fixed text")
                        : step == CalibrateArExact   ? tr("AR, exact capture")
                        : step == CalibrateAr        ? tr("AR, re-forward")
                                                     : tr("decode-time reference (held-out prompts, top-%1)")
                                                           .arg(kReferenceTopK);
  connections_ << connect(
      ctrl, &CalibrationController::runEnded, this,
      [this, step, label](const QString& message, widgets::CalibrationPanel::Outcome outcome) {
        const bool ok = outcome == widgets::CalibrationPanel::Outcome::Complete;
        const QString path = window_->calibrationController()->runPath();
        QString finding = ok ? findings::calibration(label, message) : QString();
        if (ok) {
          const double rate = findings::tokensPerSecond(message);
          switch (step) {
            case CalibrateFixed: runFixed_ = path; break;
            case CalibrateArExact:
              runArExact_ = path;
              exactRate_ = rate;
              break;
            case CalibrateAr: {
              runAr_ = path;
              const QString c = findings::captureComparison(rate, exactRate_);
              if (!c.isEmpty()) finding += QStringLiteral("; ") + c;
              break;
            }
            default: runReference_ = path; break;
          }
        }
        endLater({ok, message, finding, {}});
      });
  if (!press(panel->findChild<QAbstractButton*>(QStringLiteral("startCalibration")), tr("Start"))) return;
  job_ = ctrl->job();
}

void StoryDriver::startEpsilon() {
  AnalysisController* ctrl = window_->analysisController();
  widgets::AnalysisPanel* panel = window_->analysisPanel();
  window_->selectPanel(QStringLiteral("Analysis/Epsilon"));
  const QString reference = existing(runReference_, QStringLiteral("reference-heldout.sdw.h5"));
  const QString fixed = existing(runFixed_, QStringLiteral("calib-fixed.sdw.h5"));
  const QString ar = existing(runAr_, QStringLiteral("calib-ar.sdw.h5"));
  if (reference.isEmpty() || fixed.isEmpty() || ar.isEmpty()) {
    refuse(tr("the reference, fixed-text and AR runs are needed: run the calibration steps first"));
    return;
  }
  if (ctrl->isBusy()) {
    // An analysis being opened would end after ours and replace it on the page.
    retryAfter(ctrl, &AnalysisController::analysisEnded);
    return;
  }
  panel->setRunPaths(reference, fixed, ar);
  panel->setK(kEpsilonK);
  panel->setDevice(options_.device);
  if (!checkDevice(panel->device(), tr("Analysis"))) return;
  connections_ << connect(ctrl, &AnalysisController::analysisEnded, this,
                          [this](const QString& message, bool isError) {
                            const widgets::EpsilonData& d = window_->analysisPanel()->page()->data();
                            const bool ok = !isError && d.hasPair;
                            endLater({ok, message, ok ? findings::epsilon(d) : QString(), {}});
                          });
  if (!press(panel->findChild<QAbstractButton*>(QStringLiteral("analyze")), tr("Analyze"))) return;
  job_ = ctrl->analyzeJob();
}

void StoryDriver::startPrune(int step) {
  PruningController* ctrl = window_->pruningController();
  widgets::PruningPanel* panel = window_->pruningPanel();
  window_->selectPanel(QStringLiteral("Pruning/Modules"));
  const QString run = step == PruneFixed ? existing(runFixed_, QStringLiteral("calib-fixed.sdw.h5"))
                                         : existing(runAr_, QStringLiteral("calib-ar.sdw.h5"));
  if (run.isEmpty()) {
    refuse(tr("the %1 calibration run is needed: run its calibration step first")
               .arg(step == PruneFixed ? tr("fixed-text") : tr("AR")));
    return;
  }
  if (ctrl->isBusy()) {
    refuse(tr("a pruning or evaluation is already running"));
    return;
  }
  widgets::PruneForm f = panel->form();
  f.model = sampleModelDir();
  f.calibrationRuns = QStringList{run};
  f.method = QStringLiteral("sparsegpt");
  f.pattern = QStringLiteral("2:4");
  f.order = QStringLiteral("parallel");
  f.percdamp = 0.01;
  f.blocksize = 128;
  f.device = options_.device;
  f.outputDir = QDir(options_.workDir).filePath(QStringLiteral("pruned"));
  panel->setForm(f);
  if (!checkDevice(panel->form().device, tr("Pruning"))) return;
  connections_ << connect(ctrl, &PruningController::jobEnded, this,
                          [this, step, run](const QString& message, widgets::PruningPanel::Outcome outcome) {
                            const widgets::PruningRecordData r = window_->pruningPanel()->shownRecord();
                            const bool ok = outcome == widgets::PruningPanel::Outcome::Complete &&
                                            QFileInfo(r.calibrationRun).fileName() == QFileInfo(run).fileName();
                            if (ok) (step == PruneFixed ? prunedFixed_ : prunedAr_) = r.outDir;
                            endLater({ok, message, ok ? findings::pruning(r) : QString(), ok ? r.device : QString()});
                          });
  if (!press(panel->findChild<QAbstractButton*>(QStringLiteral("prune")), tr("Prune"))) return;
  job_ = ctrl->pruneJob();
}

std::pair<QString, QString> StoryDriver::prunedCheckpoints() const {
  const auto checkpoint = [this](const QString& produced, const QString& folder) {
    const QString dir = !produced.isEmpty() ? produced : QDir(options_.workDir).filePath(QStringLiteral("pruned/") + folder);
    return QFileInfo::exists(QDir(dir).filePath(QStringLiteral("config.json"))) ? dir : QString();
  };
  return {checkpoint(prunedFixed_, QStringLiteral("sparsegpt24-calib-fixed")),
          checkpoint(prunedAr_, QStringLiteral("sparsegpt24-calib-ar"))};
}

void StoryDriver::startEvaluate() {
  PruningController* ctrl = window_->pruningController();
  widgets::PruningPanel* panel = window_->pruningPanel();
  window_->selectPanel(QStringLiteral("Pruning/Quality"));
  const auto [fixed, ar] = prunedCheckpoints();
  if (fixed.isEmpty() || ar.isEmpty()) {
    refuse(tr("both pruned models are needed: run the two pruning steps first"));
    return;
  }
  if (ctrl->isBusy()) {
    refuse(tr("a pruning or evaluation is already running"));
    return;
  }
  widgets::EvaluateForm f = panel->evaluateDefaults();
  f.dense = sampleModelDir();
  f.models = QStringList{fixed, ar};
  f.text = sampleHeldoutTextFile();
  f.prompts = sampleHeldoutPromptsFile();
  QStringList seeds;
  for (int s = 0; s < std::max(1, options_.evalSeeds); ++s) seeds << QString::number(s);
  f.seeds = seeds.join(QLatin1Char(','));
  f.maxNewTokens = options_.evalMaxNewTokens;
  f.temperature = options_.decoding.temperature;
  f.topK = options_.decoding.topK;
  f.topP = options_.decoding.topP;
  f.device = options_.device;
  f.output = freePath(QStringLiteral("eval-story.sdw.h5"));

  // Evaluate… opens the dialog; it is filled and accepted like a user would.
  if (!press(panel->qualityPage()->findChild<QAbstractButton*>(QStringLiteral("evaluate")), tr("Evaluate…"))) return;
  widgets::EvaluateDialog* dialog = panel->evaluateDialog();
  if (!dialog) {
    refuse(tr("the Evaluate dialog did not open"));
    return;
  }
  dialog->setForm(f);
  if (!checkDevice(dialog->form().device, tr("Evaluate"))) {
    dialog->reject();
    return;
  }
  connections_ << connect(ctrl, &PruningController::jobEnded, this,
                          [this, fixed, ar](const QString& message, widgets::PruningPanel::Outcome outcome) {
                            const widgets::QualityData& d = window_->pruningPanel()->qualityPage()->data();
                            const bool ok = outcome == widgets::PruningPanel::Outcome::Complete;
                            endLater({ok, message, ok ? findings::quality(d, fixed, ar) : QString(), {}});
                          });
  auto* box = dialog->findChild<QDialogButtonBox*>();
  if (!press(box ? box->button(QDialogButtonBox::Ok) : nullptr, tr("Evaluate"))) return;
  job_ = ctrl->evaluateJob();
}

void StoryDriver::startDrift() {
  DriftController* ctrl = window_->driftController();
  widgets::DriftPage* page = window_->analysisPanel()->driftPage();
  window_->selectPanel(QStringLiteral("Analysis/Drift"));
  const auto [fixed, ar] = prunedCheckpoints();
  if (fixed.isEmpty() || ar.isEmpty()) {
    refuse(tr("both pruned models are needed: run the two pruning steps first"));
    return;
  }
  if (ctrl->isBusy()) {
    // A drift run being opened would end after ours and replace it on the page.
    retryAfter(ctrl, &DriftController::jobEnded);
    return;
  }
  widgets::DriftRequest r = page->request();
  r.dense = sampleModelDir();
  r.pruned = QStringList{fixed, ar};
  r.prompts = sampleHeldoutPromptsFile();
  r.steps = options_.driftSteps;
  r.maxPrompts = 0;
  r.modes = QStringList{QStringLiteral("own"), QStringLiteral("shared")};
  r.temperature = options_.decoding.temperature;
  r.topK = options_.decoding.topK;
  r.topP = options_.decoding.topP;
  r.seed = 0;
  r.device = options_.device;
  page->setRequest(r);
  if (!checkDevice(page->request().device, tr("Drift"))) return;
  connections_ << connect(ctrl, &DriftController::jobEnded, this,
                          [this, fixed, ar](const QString& message, bool isError) {
                            const widgets::DriftData& d = window_->analysisPanel()->driftPage()->data();
                            const bool ok = !isError && !d.isEmpty();
                            endLater({ok, message, ok ? findings::drift(d, fixed, ar) : QString(), {}});
                          });
  if (!press(page->findChild<QAbstractButton*>(QStringLiteral("driftAnalyze")), tr("Run drift analysis"))) return;
  job_ = ctrl->analyzeJob();
}

void StoryDriver::startBench() {
  BenchmarkController* ctrl = window_->benchmarkController();
  widgets::BenchmarkPanel* panel = window_->benchmarkPanel();
  window_->selectPanel(QStringLiteral("Benchmark"));
  if (ctrl->isRunning()) {
    refuse(tr("a benchmark is already running"));
    return;
  }
  const bool cuda = options_.device == QLatin1String("cuda");
  if (cuda && !gpu::gpuUsable()) {
    refuse(tr("the Benchmark panel cannot run on cuda here: %1")
               .arg(QString::fromStdString(gpu::deviceInfo().reason)));
    return;
  }
  widgets::BenchRequest r;
  gpu::BenchSettings& s = r.settings;
  QStringList custom;
  if (cuda && !options_.benchShapes.isEmpty()) {
    const auto known = gpu::knownModels();
    for (const QString& part : options_.benchShapes.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
      const std::string name = part.trimmed().toStdString();
      if (std::find(known.begin(), known.end(), name) != known.end())
        for (const auto& shape : gpu::modelShapes(name)) s.shapes.push_back(shape);
      else
        custom << part.trimmed();
    }
  } else {
    // Small shapes: seconds on a CPU, and a real matrix-vector product on a GPU.
    custom << (cuda ? QStringLiteral("4096x4096,1024x4096") : QStringLiteral("1024x1024,1024x2048"));
  }
  r.customShapes = custom.join(QLatin1Char(','));
  s.patterns = {"2:4"};
  s.batches = {1};
  s.dtype = "bf16";
  s.repeats = std::max(1, options_.benchRepeats);
  s.library = cuda;  // cuBLAS: there is no library baseline among the CPU kernels
  s.ownDense = true;
  // On a GPU the baselines of the kernel story: cuSPARSELt's 2:4 at batch 1,
  // and the seven projections of a layer back to back.
  s.cusparselt = cuda;
  s.layer = cuda;
  s.forceCpu = !cuda;
  panel->setRequest(r);
  connections_ << connect(ctrl, &BenchmarkController::runEnded, this, [this](const QString& message, bool isError) {
    BenchmarkController* c = window_->benchmarkController();
    const QString backend = QString::fromStdString(c->result().backend);
    const bool ok = !isError && !c->rows().isEmpty();
    endLater({ok, message, ok ? findings::bench(c->rows(), backend) : QString(), backend});
  });
  if (!press(panel->findChild<QAbstractButton*>(QStringLiteral("benchStart")), tr("Start"))) return;
  job_ = ctrl->runJob();
}

}  // namespace sdw::app
