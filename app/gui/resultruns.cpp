#include "app/gui/resultruns.h"

#include "app/gui/workspace.h"
#include "core/paths.h"
#include "core/runstore.h"
#include "gpu/evaluation_run.h"
#include "gpu/pruning_run.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <filesystem>
#include <stdexcept>

namespace sdw::app {

namespace {

namespace rs = sdw::runstore;
namespace fs = std::filesystem;

QString recordLabel(const gpu::PruneSettings& s, const QString& source) {
  QString order = qs(gpu::pruneOrderName(s.order));
  if (s.method == gpu::PruneMethod::DuoGpt)
    order += QLatin1Char(' ') + widgets::activationSparsityText(s.activationSparsity);
  return QStringLiteral("%1 %2 %3, %4")
      .arg(qs(gpu::pruneMethodName(s.method)), qs(s.pattern), order, source.isEmpty() ? QStringLiteral("?") : source);
}

QStringList qsList(const std::vector<std::string>& v) {
  QStringList out;
  for (const auto& s : v) out << qs(s);
  return out;
}

// Recorded relative to the repository where they lie inside it (core/paths.h).
QString resolved(const fs::path& recorded, const QString& runFile) {
  return qs(resolveRecordedPath(recorded.string(), toPath(runFile)).string());
}

}  // namespace

widgets::PruneModuleData pruneModuleData(const gpu::ModulePruneRow& r) {
  widgets::PruneModuleData d;
  d.module = qs(r.name);
  d.layer = r.layer;
  d.rows = r.rows;
  d.cols = r.cols;
  d.loss = r.loss;
  d.outputLoss = r.outputLoss;
  d.relOutputError = r.relOutputError;
  d.sparsity = r.sparsity;
  d.percdampUsed = r.percdampUsed;
  d.dampingSteps = r.dampingSteps;
  d.deadInputs = r.deadInputs;
  d.seconds = r.seconds;
  d.packed = r.packed;
  return d;
}

widgets::PruningRecordData readPruningRecord(const QString& path) {
  const gpu::PruningRun run = gpu::readPruningRun(toPath(path));
  const gpu::PruneSettings& s = run.settings;
  widgets::PruningRecordData d;
  d.path = path;
  d.method = qs(gpu::pruneMethodName(s.method));
  d.pattern = qs(s.pattern);
  d.order = qs(gpu::pruneOrderName(s.order));
  d.device = qs(s.device);
  d.percdamp = s.percdamp;
  d.blocksize = s.blocksize;
  d.activationSparsity = s.method == gpu::PruneMethod::DuoGpt ? s.activationSparsity : 0.0;
  d.modelDir = qs(s.model.string());
  d.calibrationRun = qs(s.calibration.string());
  d.calibrationSource = qs(run.info.calibrationSource);
  d.calibrationTokens = run.info.calibrationTokens;
  d.outDir = resolved(s.out, path);
  d.checkpoint = resolved(run.result.checkpoint, path);
  d.sparseFile = resolved(run.result.sparseFile, path);
  d.checkpointExists = !d.checkpoint.isEmpty() && QFileInfo::exists(d.checkpoint);
  d.totalSeconds = run.result.seconds;
  d.recaptureSeconds = run.result.recaptureSeconds;
  d.modules.reserve(static_cast<qsizetype>(run.result.modules.size()));
  for (const gpu::ModulePruneRow& row : run.result.modules) d.modules.push_back(pruneModuleData(row));
  return d;
}

widgets::QualityData readEvaluationRun(const QString& path) {
  const gpu::EvaluationResult r = gpu::readEvaluationRun(toPath(path));
  const gpu::EvaluationSettings& s = r.settings;
  widgets::QualityData d;
  d.path = path;
  d.denseDir = qs(s.dense.string());
  d.textFile = qs(s.text.string());
  d.promptsFile = qs(s.prompts.string());
  d.prompts = r.prompts;
  d.windows = r.windows;
  d.maxNewTokens = s.maxNewTokens;
  d.temperature = s.temperature;
  d.topK = s.topK;
  d.topP = s.topP;
  d.decoding = qs(s.decoding().describe());
  d.activationSparsity = s.activationSparsity;
  d.activationThresholds = qs(s.activationThresholds.string());
  d.activationThresholdsRunId = qs(r.activationThresholdsRunId);
  d.warnings = qsList(r.warnings);
  d.notes = qsList(r.notes);
  d.seconds = r.seconds;
  for (const gpu::ModelEvaluation& m : r.models) {
    widgets::QualityModelData x;
    x.label = qs(m.label);
    x.dir = qs(m.dir.string());
    x.dense = m.isDense;
    x.pplText = m.pplText;
    x.pplDenseGen = m.pplDenseGen;
    x.tokensText = m.tokensText;
    x.tokensDenseGen = m.tokensDenseGen;
    x.kl = {m.kl.mean, m.kl.std};
    x.agreement = {m.agreement.mean, m.agreement.std};
    x.firstDivergence = {m.firstDivergence.mean, m.firstDivergence.std};
    x.seeds = static_cast<int>(m.seeds.size());
    d.models.push_back(std::move(x));
  }
  for (const gpu::SideBySide& sb : r.sideBySide)
    d.sideBySide.push_back({qs(sb.promptId), qs(sb.prompt), qsList(sb.texts)});
  return d;
}

PruningInputs findPruningInputs(const QString& dir) {
  PruningInputs out;
  out.dir = dir;
  if (!QFileInfo(dir).isDir()) return out;
  QString newestRecord, newestRecordTime, newestEval, newestEvalTime;
  for (const rs::WorkspaceEntry& e : rs::listWorkspace(toPath(dir))) {
    if (!e.summary || e.partial) continue;
    const QString path = fromPath(e.path);
    const QString name = QFileInfo(path).fileName();
    const QString created = qs(e.summary->provenance.createdUtc);
    try {
      if (e.summary->kind == "calibration") {
        out.calibrationRuns.push_back(readCalibrationChoice(e.path));
      } else if (e.summary->kind == "pruning" && e.summary->complete()) {
        const gpu::PruningRun run = gpu::readPruningRun(e.path);
        widgets::PruningRecordChoice c;
        c.path = path;
        c.label = recordLabel(run.settings, qs(run.info.calibrationSource));
        c.outDir = resolved(run.settings.out, path);
        c.checkpointExists = fs::exists(resolveRecordedPath(run.result.checkpoint.string(), e.path));
        out.records.push_back(c);
        if (name == QLatin1String("pruning-sgpt24-fixed.sdw.h5")) out.record = path;
        if (newestRecord.isEmpty() || created > newestRecordTime) {
          newestRecord = path;
          newestRecordTime = created;
        }
      } else if (e.summary->kind == "evaluation" && e.summary->complete()) {
        out.evaluations << path;
        if (name == QLatin1String("eval-sample.sdw.h5")) out.evaluation = path;
        if (newestEval.isEmpty() || created > newestEvalTime) {
          newestEval = path;
          newestEvalTime = created;
        }
      }
    } catch (const std::exception&) {
      // unreadable runs are the browser's business; they are simply not offered
    }
  }
  if (out.record.isEmpty()) out.record = newestRecord;
  if (out.evaluation.isEmpty()) out.evaluation = newestEval;

  for (const auto& c : out.calibrationRuns)
    if (c.status == QLatin1String("complete") && !isReferenceRun(c.path) && c.source == QLatin1String("fixed")) {
      out.defaultCalibration = c.path;
      break;
    }
  if (out.defaultCalibration.isEmpty())
    for (const auto& c : out.calibrationRuns)
      if (c.status == QLatin1String("complete") && !isReferenceRun(c.path)) {
        out.defaultCalibration = c.path;
        break;
      }
  return out;
}

}  // namespace sdw::app
