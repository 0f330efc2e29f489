#include "app/gui/pruningcontroller.h"

#include "app/gui/modelcontroller.h"
#include "app/gui/workspace.h"
#include "core/compressed_tensors.h"
#include "gpu/device.h"
#include "gpu/evaluation_run.h"
#include "gpu/model_config.h"
#include "gpu/pruning.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <variant>
#include <vector>

namespace sdw::app {

namespace {

namespace fs = std::filesystem;

struct PruneOutcome {
  QStringList records;
  widgets::PruningRecordData last;  // the last record, read back from its file
};

struct EvaluateOutcome {
  widgets::QualityData data;
};

}  // namespace
}  // namespace sdw::app

Q_DECLARE_METATYPE(sdw::app::PruneOutcome)
Q_DECLARE_METATYPE(sdw::app::EvaluateOutcome)

namespace sdw::app {

namespace {

// What the pruning job reports while it runs, in order: a calibration run
// begins, the layer being worked on changes, a module is done, a run's
// record is complete.
struct RunBegins {
  QString what;
  QVector<int> modulesPerLayer;
};
struct LayerNow {
  int layer = -1;
  QString stage;
};
struct RunDone {
  QString record;
};
using PruneEvent = std::variant<RunBegins, LayerNow, widgets::PruneModuleData, RunDone>;

template <typename... F>
struct Overloaded : F... {
  using F::operator()...;
};

QString samplesFile(const QString& rel) {
  // The sample model sits in <samples>/model/brown-llama.
  return QDir::cleanPath(QDir(sampleModelDir()).filePath(QStringLiteral("../../") + rel));
}

// "sparsegpt 2:4", "duogpt 2:4 p_x 0.50": the method as the job's texts name it.
QString methodText(const widgets::PruneForm& form) {
  QString text = QStringLiteral("%1 %2").arg(form.method, form.pattern);
  if (form.method == QLatin1String("duogpt"))
    text += QLatin1Char(' ') + widgets::activationSparsityText(form.activationSparsity);
  return text;
}

// DuoGPT always prunes in sequential order.
QString orderOf(const widgets::PruneForm& form) {
  return form.method == QLatin1String("duogpt") ? QStringLiteral("sequential") : form.order;
}

// Which decoder layer each projection belongs to, in checkpoint order (the
// order the engine solves them in).
std::vector<int> moduleLayers(const QString& model) {
  const gpu::ModelConfig config = gpu::loadModelConfig(toPath(model));
  std::vector<int> out;
  for (const gpu::ModuleInfo& m : gpu::projectionModules(config, "float32"))
    if (m.layer >= 0) out.push_back(m.layer);
  return out;
}

}  // namespace

QString sampleHeldoutTextFile() { return samplesFile(QStringLiteral("corpus/brown-heldout.txt")); }
QString sampleHeldoutPromptsFile() { return samplesFile(QStringLiteral("prompts/brown-heldout.jsonl")); }

PruningController::PruningController(JobManager* jobs, QObject* parent) : QObject(parent), jobs_(jobs) {
  qRegisterMetaType<sdw::widgets::PruneForm>("sdw::widgets::PruneForm");
  qRegisterMetaType<sdw::widgets::EvaluateForm>("sdw::widgets::EvaluateForm");
  qRegisterMetaType<sdw::widgets::PruneModuleData>("sdw::widgets::PruneModuleData");
  qRegisterMetaType<sdw::widgets::PruningRecordData>("sdw::widgets::PruningRecordData");
  qRegisterMetaType<sdw::widgets::QualityData>("sdw::widgets::QualityData");
  qRegisterMetaType<sdw::app::PruningInputs>("sdw::app::PruningInputs");
}

void PruningController::attach(widgets::PruningPanel* panel) {
  const gpu::DeviceInfo& dev = gpu::deviceInfo();
  panel->setCudaAvailable(dev.cudaAvailable, qs(dev.reason));
  panel->setSampleModel(sampleModelDir());
  panel->setEvaluationDefaults(sampleHeldoutTextFile(), sampleHeldoutPromptsFile());
  if (!workspace_.isEmpty()) panel->setWorkspace(workspace_);
  connect(panel, &widgets::PruningPanel::pruneRequested, this, [this](const widgets::PruneForm& f) { prune(f); });
  connect(panel, &widgets::PruningPanel::cancelRequested, this, &PruningController::cancel);
  connect(panel, &widgets::PruningPanel::openRecordRequested, this, [this](const QString& p) { openRecord(p); });
  connect(panel, &widgets::PruningPanel::openEvaluationRequested, this,
          [this](const QString& p) { openEvaluation(p); });
  connect(panel, &widgets::PruningPanel::evaluateRequested, this,
          [this](const widgets::EvaluateForm& f) { evaluate(f); });

  connect(this, &PruningController::inputsFound, panel, [panel](const PruningInputs& in, bool defaults) {
    panel->setWorkspace(in.dir);
    panel->setCalibrationRuns(in.calibrationRuns, defaults ? in.defaultCalibration : QString());
    panel->setPruningRecords(in.records);
    panel->setEvaluationRuns(in.evaluations);
  });
  connect(this, &PruningController::jobStarted, panel, &widgets::PruningPanel::beginJob);
  connect(this, &PruningController::pruneRunStarted, panel, &widgets::PruningPanel::beginPruneRun);
  connect(this, &PruningController::moduleFinished, panel, &widgets::PruningPanel::addModuleRow);
  connect(this, &PruningController::layerState, panel, &widgets::PruningPanel::setLayerState);
  connect(this, &PruningController::jobProgress, panel, &widgets::PruningPanel::setJobProgress);
  connect(this, &PruningController::jobEnded, panel, &widgets::PruningPanel::endJob);
  connect(this, &PruningController::recordReady, panel, &widgets::PruningPanel::showRecord);
  connect(this, &PruningController::recordFailed, panel, &widgets::PruningPanel::showModulesError);
  connect(this, &PruningController::qualityReady, panel, &widgets::PruningPanel::showQuality);
  connect(this, &PruningController::qualityFailed, panel, &widgets::PruningPanel::showQualityError);
}

JobId PruningController::setWorkspace(const QString& dir) {
  if (!jobs_) return 0;
  workspace_ = dir;
  return jobs_->start(Job<PruningInputs>{
      .name = tr("Find pruning inputs"),
      .slot = &scan_,
      .context = this,
      .work =
          [dir](const sdw::ProgressFn&) {
            PruningInputs in = findPruningInputs(dir);
            // Something to look at from the start, even in an empty workspace.
            const QDir samples(sampleWorkspaceDir());
            if (in.record.isEmpty() &&
                QFileInfo::exists(samples.filePath(QStringLiteral("pruning-sgpt24-fixed.sdw.h5"))))
              in.record = samples.filePath(QStringLiteral("pruning-sgpt24-fixed.sdw.h5"));
            if (in.evaluation.isEmpty() && QFileInfo::exists(samples.filePath(QStringLiteral("eval-sample.sdw.h5"))))
              in.evaluation = samples.filePath(QStringLiteral("eval-sample.sdw.h5"));
            return in;
          },
      .finished =
          [this](const PruningInputs& in) {
            if (in.dir != workspace_) return;
            const bool defaults = in.dir != defaultsDir_;
            defaultsDir_ = in.dir;
            Q_EMIT inputsFound(in, defaults);
            if (!recordShown_ && !in.record.isEmpty() && !openRecord_.busy() && !prune_.busy()) openRecord(in.record);
            if (!qualityShown_ && !in.evaluation.isEmpty() && !openEvaluation_.busy() && !evaluate_.busy())
              openEvaluation(in.evaluation);
          },
      .failed = [this](const QString& m) { Q_EMIT error(tr("cannot list the workspace's runs: %1").arg(m)); },
  });
}

PruningController::Target PruningController::targetFor(const widgets::PruneForm& form, const QString& calibrationRun,
                                                       const QStringList& taken) const {
  QString parent = form.outputDir;
  if (parent.isEmpty() && !workspace_.isEmpty()) parent = QDir(workspace_).filePath(QStringLiteral("pruned"));
  const QString base =
      widgets::defaultPruneFolderName(form.method, form.pattern, calibrationRun, form.activationSparsity);
  Target t;
  for (int n = 1;; ++n) {
    const QString name = n == 1 ? base : QStringLiteral("%1-%2").arg(base).arg(n);
    t.out = QDir(parent).filePath(name);
    t.record = workspace_.isEmpty() ? QString()
                                    : QDir(workspace_).filePath(QStringLiteral("pruning-%1.sdw.h5").arg(name));
    const bool used = taken.contains(t.out) || QFileInfo::exists(QDir(t.out).filePath(QStringLiteral("model.safetensors"))) ||
                      (!t.record.isEmpty() && (QFileInfo::exists(t.record) ||
                                               QFileInfo::exists(t.record + QStringLiteral(".partial"))));
    if (!used) return t;
  }
}

void PruningController::refuse(const QString& why) {
  Q_EMIT error(why);
  Q_EMIT jobEnded(why, widgets::PruningPanel::Outcome::Failed);
}

JobId PruningController::prune(const widgets::PruneForm& form) {
  if (!jobs_) return 0;
  if (isBusy()) {
    Q_EMIT error(tr("cannot prune: a pruning or evaluation is already running"));
    return 0;
  }
  if (form.model.isEmpty()) {
    refuse(tr("Cannot prune: choose the dense model."));
    return 0;
  }
  if (form.calibrationRuns.isEmpty()) {
    refuse(tr("Cannot prune: check at least one calibration run."));
    return 0;
  }
  if (form.outputDir.isEmpty() && workspace_.isEmpty()) {
    refuse(tr("Cannot prune: choose an output folder."));
    return 0;
  }
  struct Step {
    gpu::PruneSettings settings;
    QString name;  // the calibration run's file name
  };
  std::vector<Step> steps;
  QStringList taken;
  for (const QString& run : form.calibrationRuns) {
    const Target t = targetFor(form, run, taken);
    taken << t.out;
    Step s;
    s.settings.model = toPath(form.model);
    s.settings.calibration = toPath(run);
    s.settings.pattern = form.pattern.toStdString();
    s.settings.percdamp = form.percdamp;
    s.settings.blocksize = form.blocksize;
    s.settings.activationSparsity = form.activationSparsity;
    s.settings.device = form.device.toStdString();
    s.settings.out = toPath(t.out);
    s.settings.record = t.record.isEmpty() ? fs::path() : toPath(t.record);
    try {
      s.settings.method = gpu::parsePruneMethod(form.method.toStdString());
      s.settings.order = gpu::parsePruneOrder(orderOf(form).toStdString());
      gpu::validatePruneSettings(s.settings);
    } catch (const std::exception& e) {
      refuse(tr("Cannot prune %1: %2").arg(QFileInfo(run).fileName(), QString::fromUtf8(e.what())));
      return 0;
    }
    s.name = QFileInfo(run).fileName();
    steps.push_back(std::move(s));
  }

  written_.clear();
  currentRun_.clear();
  const QString model = form.model;
  const JobId id = jobs_->start(Job<PruneOutcome, PruneEvent>{
      .name = tr("Pruning (%1)").arg(methodText(form)),
      .slot = &prune_,
      .context = this,
      .work =
          [steps, model, exportCt = form.exportCompressedTensors](const sdw::ProgressFn& p,
                                                                 const JobChannel<PruneEvent>& channel) {
            const std::vector<int> layerOf = moduleLayers(model);
            const int perRun = static_cast<int>(layerOf.size());
            const int layers = layerOf.empty() ? 0 : *std::max_element(layerOf.begin(), layerOf.end()) + 1;
            QVector<int> modulesPerLayer(layers, 0);
            for (int l : layerOf) ++modulesPerLayer[l];
            const int runs = static_cast<int>(steps.size());
            PruneOutcome outcome;
            for (int i = 0; i < runs; ++i) {
              const Step& step = steps[static_cast<std::size_t>(i)];
              const QString what =
                  runs > 1 ? QStringLiteral("run %1/%2: %3").arg(i + 1).arg(runs).arg(step.name) : step.name;
              channel.send(RunBegins{what, modulesPerLayer});
              int done = 0;          // modules of this run finished
              int shownLayer = -2;   // what the chart was last told
              QString shownStage;
              const auto progress = [&](const sdw::Progress& q) {
                const bool recapture = q.phase == "recapture";
                const int layer = perRun > 0 ? layerOf[static_cast<std::size_t>(std::min(done, perRun - 1))] : -1;
                QString stage = recapture ? QStringLiteral("re-capturing") : QStringLiteral("solving");
                if (done >= perRun) stage = QStringLiteral("writing");
                if (layer != shownLayer || stage != shownStage) {
                  shownLayer = layer;
                  shownStage = stage;
                  channel.send(LayerNow{layer, stage});
                }
                sdw::Progress out;
                out.done = static_cast<double>(i * perRun + done);
                out.total = static_cast<double>(runs * perRun);
                out.unit = "modules";
                QString text = QStringLiteral("%1 · layer %2/%3 · %4").arg(what).arg(layer + 1).arg(layers).arg(stage);
                if (recapture && q.total > 0) text += QStringLiteral(" %1%").arg(100.0 * q.done / q.total, 0, 'f', 0);
                out.stage = text.toStdString();
                return !p || p(out);
              };
              const auto onModule = [&](const gpu::ModulePruneRow& row) {
                ++done;
                channel.send(pruneModuleData(row));
              };
              const gpu::PruneResult r = gpu::pruneModel(step.settings, progress, onModule);
              if (exportCt) {  // <pruned>/compressed-tensors, as `sdw-cli prune --export compressed-tensors`
                const gpu::PruningPattern pat = gpu::parsePruningPattern(step.settings.pattern);
                const std::string pattern = pat.name();
                const fs::path dst = step.settings.out / "compressed-tensors";
                if (fs::exists(dst)) fs::remove_all(dst);
                // column N:M is no structure the format names: declared unstructured
                ct::exportCompressedTensors(step.settings.out, dst,
                                            pattern == "2:4" ? ct::Format::Sparse24Bitmask : ct::Format::SparseBitmask,
                                            pat.unstructured || pat.alongColumns ? "unstructured" : pattern);
              }
              const QString record = fromPath(r.record);
              outcome.records << record;
              channel.send(RunDone{record});
            }
            if (!outcome.records.isEmpty()) outcome.last = readPruningRecord(outcome.records.back());
            return outcome;
          },
      .progress = [this](const JobUpdate& u) { showProgress(u); },
      .data =
          [this](const std::vector<PruneEvent>& events) {
            for (const PruneEvent& e : events)
              std::visit(Overloaded{[this](const RunBegins& r) {
                                      currentRun_ = r.what;
                                      Q_EMIT pruneRunStarted(tr("Pruning %1…").arg(r.what), r.modulesPerLayer);
                                    },
                                    [this](const LayerNow& l) { Q_EMIT layerState(l.layer, l.stage); },
                                    [this](const widgets::PruneModuleData& d) { Q_EMIT moduleFinished(d); },
                                    [this](const RunDone& d) {
                                      written_ << d.record;
                                      Q_EMIT runWritten(d.record);
                                    }},
                         e);
          },
      .finished =
          [this](const PruneOutcome& o) {
            recordShown_ = true;
            if (!o.records.isEmpty()) Q_EMIT recordReady(o.last);
            const QString msg = tr("Complete: %n model(s) pruned — %1", nullptr, static_cast<int>(o.records.size()))
                                    .arg(o.last.summaryLine());
            Q_EMIT jobEnded(msg, widgets::PruningPanel::Outcome::Complete);
            Q_EMIT info(tr("pruning complete: %1").arg(o.records.join(QStringLiteral(", "))));
            if (!workspace_.isEmpty()) setWorkspace(workspace_);  // the pickers list the new records
          },
      .failed =
          [this](const QString& message) {
            QString m = tr("Pruning %1 failed: %2").arg(currentRun_, message);
            if (!written_.isEmpty())
              m += tr(" (%n earlier model(s) complete and kept)", nullptr, static_cast<int>(written_.size()));
            Q_EMIT jobEnded(m, widgets::PruningPanel::Outcome::Failed);
            Q_EMIT error(m);
          },
      .cancelled =
          [this] {
            QString m = tr("Cancelled: nothing of %1 was written.")
                            .arg(currentRun_.isEmpty() ? tr("the pruning") : currentRun_);
            if (!written_.isEmpty())
              m += tr(" %n earlier model(s) complete and kept.", nullptr, static_cast<int>(written_.size()));
            Q_EMIT layerState(-1, QString());
            Q_EMIT jobEnded(m, widgets::PruningPanel::Outcome::Cancelled);
            Q_EMIT info(m);
          },
  });
  QStringList names;
  for (const Step& s : steps) names << s.name;
  Q_EMIT jobStarted(
      tr("Pruning %1 with %2 (%3)…").arg(names.join(QStringLiteral(", ")), methodText(form), orderOf(form)));
  Q_EMIT info(tr("pruning started: %1 %2 of %3 from %4")
                  .arg(methodText(form), orderOf(form), form.model, names.join(QStringLiteral(", "))));
  return id;
}

JobId PruningController::evaluate(const widgets::EvaluateForm& form) {
  if (!jobs_) return 0;
  if (isBusy()) {
    Q_EMIT error(tr("cannot evaluate: a pruning or evaluation is already running"));
    return 0;
  }
  QString refusal;
  const QList<quint64> seeds = form.seedList();
  if (form.dense.isEmpty()) refusal = tr("choose the dense model");
  else if (form.models.isEmpty()) refusal = tr("choose at least one pruned model");
  else if (seeds.isEmpty()) refusal = tr("seeds must be a comma-separated list of numbers");
  else if (!form.activationThresholds.isEmpty() && !(form.activationSparsity > 0))
    refusal = tr("activation thresholds need p_x > 0 (the share of entries below them)");
  else if (form.output.isEmpty() && workspace_.isEmpty()) refusal = tr("open a workspace to write the run into");
  if (!refusal.isEmpty()) {
    refuse(tr("Cannot evaluate: %1").arg(refusal));
    return 0;
  }
  gpu::EvaluationSettings s;
  s.dense = toPath(form.dense);
  for (const QString& m : form.models) s.models.push_back(toPath(m));
  s.text = toPath(form.text);
  s.prompts = toPath(form.prompts);
  s.seeds.assign(seeds.begin(), seeds.end());
  s.maxNewTokens = form.maxNewTokens;
  s.maxPrompts = form.maxPrompts;
  s.windows = form.windows;
  s.window = form.window;
  s.sideBySidePrompts = form.sideBySide;
  s.temperature = form.temperature;
  s.topK = form.topK;
  s.topP = form.topP;
  s.activationSparsity = form.activationSparsity;
  s.activationThresholds = toPath(form.activationThresholds);  // read in the job: a run without samples fails it
  s.device = form.device.toStdString();
  QString out = form.output;
  if (out.isEmpty()) {
    // eval-<time>.sdw.h5; "-2", "-3" for a second evaluation in the same second.
    const QString stem =
        QStringLiteral("eval-%1").arg(QDateTime::currentDateTimeUtc().toString(QStringLiteral("yyyyMMdd-HHmmss")));
    for (int n = 1;; ++n) {
      out = QDir(workspace_)
                .filePath((n == 1 ? stem : QStringLiteral("%1-%2").arg(stem).arg(n)) + QStringLiteral(".sdw.h5"));
      if (!QFileInfo::exists(out) && !QFileInfo::exists(out + QStringLiteral(".partial"))) break;
    }
  }
  const JobId id = jobs_->start(Job<EvaluateOutcome>{
      .name = tr("Evaluation"),
      .slot = &evaluate_,
      .context = this,
      .work =
          [s, out](const sdw::ProgressFn& p) {
            const gpu::EvaluationResult r = gpu::evaluate(s, p);
            EvaluateOutcome o;
            o.data = readEvaluationRun(fromPath(gpu::writeEvaluationRun(r, toPath(out))));
            return o;
          },
      .progress = [this](const JobUpdate& u) { showProgress(u); },
      .finished =
          [this](const EvaluateOutcome& o) {
            qualityShown_ = true;
            Q_EMIT qualityReady(o.data);
            const QString msg = tr("Evaluation saved to %1").arg(QFileInfo(o.data.path).fileName());
            Q_EMIT jobEnded(msg, widgets::PruningPanel::Outcome::Complete);
            Q_EMIT info(msg);
            Q_EMIT runWritten(o.data.path);
            if (!workspace_.isEmpty()) setWorkspace(workspace_);
          },
      .failed =
          [this](const QString& message) {
            const QString m = tr("Evaluation failed: %1").arg(message);
            Q_EMIT jobEnded(m, widgets::PruningPanel::Outcome::Failed);
            Q_EMIT error(m);
          },
      .cancelled =
          [this] {
            Q_EMIT jobEnded(tr("Evaluation cancelled; no run written."), widgets::PruningPanel::Outcome::Cancelled);
          },
  });
  QString evaluating = tr("Evaluating %n pruned model(s) against %1", nullptr, static_cast<int>(form.models.size()))
                           .arg(QFileInfo(form.dense).fileName());
  if (form.activationSparsity > 0)
    evaluating += tr(" at activation sparsity %1")
                      .arg(widgets::activationSparsityText(form.activationSparsity, form.activationThresholds));
  Q_EMIT jobStarted(evaluating + QStringLiteral("…"));
  Q_EMIT info(tr("evaluation started: %1 vs %2 -> %3").arg(form.dense, form.models.join(QStringLiteral(", ")), out));
  return id;
}

JobId PruningController::openRecord(const QString& path) {
  if (!jobs_) return 0;
  return jobs_->start(Job<widgets::PruningRecordData>{
      .name = tr("Open %1").arg(QFileInfo(path).fileName()),
      .slot = &openRecord_,
      .context = this,
      .work = [path](const sdw::ProgressFn&) { return readPruningRecord(path); },
      .finished =
          [this](const widgets::PruningRecordData& d) {
            recordShown_ = true;
            Q_EMIT recordReady(d);
            Q_EMIT info(tr("opened %1: %2").arg(QFileInfo(d.path).fileName(), d.summaryLine()));
          },
      .failed =
          [this](const QString& message) {
            const QString m = tr("Cannot open the pruning record: %1").arg(message);
            Q_EMIT recordFailed(m);
            Q_EMIT error(m);
          },
  });
}

JobId PruningController::openEvaluation(const QString& path) {
  if (!jobs_) return 0;
  return jobs_->start(Job<widgets::QualityData>{
      .name = tr("Open %1").arg(QFileInfo(path).fileName()),
      .slot = &openEvaluation_,
      .context = this,
      .work = [path](const sdw::ProgressFn&) { return readEvaluationRun(path); },
      .finished =
          [this](const widgets::QualityData& d) {
            qualityShown_ = true;
            Q_EMIT qualityReady(d);
            Q_EMIT info(tr("opened %1").arg(d.summaryLine()));
          },
      .failed =
          [this](const QString& message) {
            const QString m = tr("Cannot open the evaluation run: %1").arg(message);
            Q_EMIT qualityFailed(m);
            Q_EMIT error(m);
          },
  });
}

void PruningController::cancel() {
  if (!jobs_) return;
  jobs_->cancel(prune_.id());
  jobs_->cancel(evaluate_.id());
}

void PruningController::showProgress(const JobUpdate& u) {
  Q_EMIT jobProgress(u.fraction, u.stage, u.elapsedSeconds, u.etaSeconds);
}

}  // namespace sdw::app
