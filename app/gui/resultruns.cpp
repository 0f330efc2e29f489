#include "app/gui/resultruns.h"

#include "app/gui/workspace.h"
#include "core/decoding.h"
#include "core/paths.h"
#include "core/runstore.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <filesystem>
#include <stdexcept>

namespace sdw::app {

namespace {

namespace rs = sdw::runstore;
namespace fs = std::filesystem;


rs::RunReader openKind(const QString& path, const char* kind) {
  rs::RunReader r = rs::RunReader::open(toPath(path));
  if (r.kind() != kind)
    throw std::runtime_error(QFileInfo(path).fileName().toStdString() + " is a run of kind '" + r.kind() +
                             "', not " + kind);
  if (r.status() != rs::kStatusComplete)
    throw std::runtime_error(QFileInfo(path).fileName().toStdString() + " is incomplete");
  return r;
}

QString stringAttr(const rs::RunReader& r, const char* obj, const char* name) {
  return r.hasAttribute(obj, name) ? qs(r.readStringAttribute(obj, name)) : QString();
}
double doubleAttr(const rs::RunReader& r, const char* obj, const char* name) {
  return r.hasAttribute(obj, name) ? r.readDoubleAttribute(obj, name) : 0.0;
}
qint64 intAttr(const rs::RunReader& r, const char* obj, const char* name) {
  return r.hasAttribute(obj, name) ? r.readIntAttribute(obj, name) : 0;
}

void requireSize(std::size_t got, std::size_t want, const std::string& what) {
  if (got != want)
    throw std::runtime_error(what + " has " + std::to_string(got) + " entries, expected " + std::to_string(want));
}

QString recordLabel(const QString& method, const QString& pattern, const QString& order, const QString& source) {
  return QStringLiteral("%1 %2 %3, %4").arg(method, pattern, order, source.isEmpty() ? QStringLiteral("?") : source);
}

}  // namespace

widgets::PruningRecordData readPruningRecord(const QString& path) {
  const rs::RunReader r = openKind(path, "pruning");
  constexpr const char* g = "/pruning";
  if (r.objectKind(g) != rs::ObjectKind::Group) throw std::runtime_error(path.toStdString() + " has no /pruning group");
  widgets::PruningRecordData d;
  d.path = path;
  d.method = stringAttr(r, g, "method");
  d.pattern = stringAttr(r, g, "pattern");
  d.order = stringAttr(r, g, "order");
  d.device = stringAttr(r, g, "device");
  d.percdamp = doubleAttr(r, g, "percdamp");
  d.blocksize = intAttr(r, g, "blocksize");
  d.modelDir = stringAttr(r, g, "model_dir");
  d.calibrationRun = stringAttr(r, g, "calibration_run");
  d.calibrationSource = stringAttr(r, g, "calibration_source");
  d.calibrationTokens = intAttr(r, g, "calibration_tokens");
  // Recorded relative to the repository where they lie inside it (core/paths.h).
  const auto resolved = [&](const char* name) {
    return QString::fromStdString(resolveRecordedPath(stringAttr(r, g, name).toStdString(), toPath(path)).string());
  };
  d.outDir = resolved("out_dir");
  d.checkpoint = resolved("checkpoint");
  d.sparseFile = resolved("sparse_file");
  d.checkpointExists = !d.checkpoint.isEmpty() && QFileInfo::exists(d.checkpoint);
  d.totalSeconds = doubleAttr(r, g, "total_seconds");
  d.recaptureSeconds = doubleAttr(r, g, "recapture_seconds");

  const std::string m = "/pruning/modules/";
  const auto names = r.readStrings(m + "name");
  const std::size_t n = names.size();
  const auto layer = r.readInt64(m + "layer").data;
  const auto rows = r.readInt64(m + "rows").data;
  const auto cols = r.readInt64(m + "cols").data;
  const auto loss = r.readFloat64(m + "loss").data;
  const auto outputLoss = r.readFloat64(m + "output_loss").data;
  const auto rel = r.readFloat64(m + "rel_output_error").data;
  const auto sparsity = r.readFloat64(m + "sparsity").data;
  const auto percdamp = r.readFloat64(m + "percdamp_used").data;
  const auto steps = r.readInt64(m + "damping_steps").data;
  const auto dead = r.readInt64(m + "dead_inputs").data;
  const auto seconds = r.readFloat64(m + "seconds").data;
  const auto packed = r.readInt64(m + "packed").data;
  for (const auto& [size, what] :
       {std::pair{layer.size(), "layer"}, {rows.size(), "rows"}, {cols.size(), "cols"}, {loss.size(), "loss"},
        {outputLoss.size(), "output_loss"}, {rel.size(), "rel_output_error"}, {sparsity.size(), "sparsity"},
        {percdamp.size(), "percdamp_used"}, {steps.size(), "damping_steps"}, {dead.size(), "dead_inputs"},
        {seconds.size(), "seconds"}, {packed.size(), "packed"}})
    requireSize(size, n, m + what);
  d.modules.reserve(static_cast<qsizetype>(n));
  for (std::size_t i = 0; i < n; ++i) {
    widgets::PruneModuleData x;
    x.module = qs(names[i]);
    x.layer = static_cast<int>(layer[i]);
    x.rows = rows[i];
    x.cols = cols[i];
    x.loss = loss[i];
    x.outputLoss = outputLoss[i];
    x.relOutputError = rel[i];
    x.sparsity = sparsity[i];
    x.percdampUsed = percdamp[i];
    x.dampingSteps = static_cast<int>(steps[i]);
    x.deadInputs = static_cast<int>(dead[i]);
    x.seconds = seconds[i];
    x.packed = packed[i] != 0;
    d.modules.push_back(std::move(x));
  }
  return d;
}

widgets::QualityData readEvaluationRun(const QString& path) {
  const rs::RunReader r = openKind(path, "evaluation");
  constexpr const char* g = "/evaluation";
  if (r.objectKind(g) != rs::ObjectKind::Group)
    throw std::runtime_error(path.toStdString() + " has no /evaluation group");
  widgets::QualityData d;
  d.path = path;
  d.denseDir = stringAttr(r, g, "dense_dir");
  d.textFile = stringAttr(r, g, "text_file");
  d.promptsFile = stringAttr(r, g, "prompts_file");
  d.prompts = static_cast<int>(intAttr(r, g, "prompts"));
  d.windows = static_cast<int>(intAttr(r, g, "windows"));
  d.maxNewTokens = static_cast<int>(intAttr(r, g, "max_new_tokens"));
  d.temperature = doubleAttr(r, g, "temperature");
  d.topK = static_cast<int>(intAttr(r, g, "top_k"));
  d.topP = r.hasAttribute(g, "top_p") ? r.readDoubleAttribute(g, "top_p") : 1.0;
  d.decoding = r.hasAttribute(g, "decoding") ? stringAttr(r, g, "decoding")
                                             : qs(Decoding{d.temperature, d.topK, d.topP}.describe());
  // Runs written before the checks were recorded have neither.
  const auto lines = [&](const char* name) {
    QStringList out;
    if (r.exists(std::string(g) + "/" + name))
      for (const auto& s : r.readStrings(std::string(g) + "/" + name)) out << qs(s);
    return out;
  };
  d.warnings = lines("warnings");
  d.notes = lines("notes");
  d.seconds = doubleAttr(r, g, "seconds");

  const std::string e = "/evaluation/";
  const auto dirs = r.readStrings(e + "model_dirs");
  const auto labels = r.readStrings(e + "model_labels");
  const std::size_t m = labels.size();
  requireSize(dirs.size(), m, e + "model_dirs");
  const auto pplText = r.readFloat64(e + "ppl_text").data;
  const auto pplGen = r.readFloat64(e + "ppl_dense_gen").data;
  const auto tokText = r.readInt64(e + "tokens_text").data;
  const auto tokGen = r.readInt64(e + "tokens_dense_gen").data;
  requireSize(pplText.size(), m, e + "ppl_text");
  requireSize(pplGen.size(), m, e + "ppl_dense_gen");
  requireSize(tokText.size(), m, e + "tokens_text");
  requireSize(tokGen.size(), m, e + "tokens_dense_gen");
  const auto summary = r.readFloat64(e + "summary");  // {M, 3, 4}: KL, agreement, first divergence x mean, std, min, max
  if (summary.shape != std::vector<hsize_t>{m, 3, 4})
    throw std::runtime_error(e + "summary does not have the shape {models, 3, 4}");
  const std::size_t seeds = r.readInt64(e + "onpolicy/seeds").data.size();
  const auto at = [&](std::size_t model, std::size_t row) {
    return widgets::SeedSpread{summary.data[model * 12 + row * 4 + 0], summary.data[model * 12 + row * 4 + 1]};
  };
  for (std::size_t i = 0; i < m; ++i) {
    widgets::QualityModelData x;
    x.label = qs(labels[i]);
    x.dir = qs(dirs[i]);
    x.dense = i == 0;
    x.pplText = pplText[i];
    x.pplDenseGen = pplGen[i];
    x.tokensText = tokText[i];
    x.tokensDenseGen = tokGen[i];
    x.kl = at(i, 0);
    x.agreement = at(i, 1);
    x.firstDivergence = at(i, 2);
    x.seeds = static_cast<int>(seeds);
    d.models.push_back(std::move(x));
  }

  const std::string s = e + "side_by_side/";
  if (r.exists(s + "prompts")) {
    const auto ids = r.readStrings(s + "prompt_ids");
    const auto prompts = r.readStrings(s + "prompts");
    const auto texts = r.readStrings(s + "texts");
    requireSize(ids.size(), prompts.size(), s + "prompt_ids");
    requireSize(texts.size(), prompts.size() * m, s + "texts");
    for (std::size_t n = 0; n < prompts.size(); ++n) {
      widgets::SideBySideData x;
      x.promptId = qs(ids[n]);
      x.prompt = qs(prompts[n]);
      for (std::size_t k = 0; k < m; ++k) x.texts << qs(texts[n * m + k]);
      d.sideBySide.push_back(std::move(x));
    }
  }
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
        const rs::RunReader r = rs::RunReader::open(e.path);
        widgets::PruningRecordChoice c;
        c.path = path;
        c.label = recordLabel(stringAttr(r, "/pruning", "method"), stringAttr(r, "/pruning", "pattern"),
                              stringAttr(r, "/pruning", "order"), stringAttr(r, "/pruning", "calibration_source"));
        c.outDir = QString::fromStdString(
            resolveRecordedPath(stringAttr(r, "/pruning", "out_dir").toStdString(), e.path).string());
        c.checkpointExists = fs::exists(resolveRecordedPath(stringAttr(r, "/pruning", "checkpoint").toStdString(), e.path));
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
