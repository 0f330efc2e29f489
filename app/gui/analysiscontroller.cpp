#include "app/gui/analysiscontroller.h"

#include "app/gui/workspace.h"
#include "core/runstore.h"
#include "gpu/device.h"
#include "gpu/epsilon_analysis.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

namespace sdw::app {

namespace {

namespace rs = sdw::runstore;
namespace fs = std::filesystem;

}  // namespace

struct AnalysisOutcome {
  widgets::EpsilonData data;
  QString written;  // a new analysis run, "" when opened or not saved
};

}  // namespace sdw::app

Q_DECLARE_METATYPE(sdw::app::AnalysisOutcome)

namespace sdw::app {

namespace {


QString lastComponent(const std::string& name) {
  const QString n = qs(name);
  return n.mid(n.lastIndexOf(QLatin1Char('.')) + 1);
}

QString inputType(const std::string& name) {
  const QString s = lastComponent(name);
  if (s == QLatin1String("q_proj")) return QStringLiteral("q/k/v");
  if (s == QLatin1String("o_proj")) return QStringLiteral("o");
  if (s == QLatin1String("gate_proj")) return QStringLiteral("gate/up");
  if (s == QLatin1String("down_proj")) return QStringLiteral("down");
  return s;
}

// Short label of a compared run: "C4" for fixed text, "AR" for the model's
// own decoding, else the file's stem.
QString runLabel(const gpu::EpsilonRunInfo& r) {
  if (r.source == "fixed") return QStringLiteral("C4");
  if (r.source == "ar") return QStringLiteral("AR");
  if (r.source == "cross-model") return QStringLiteral("cross");
  QString stem = QFileInfo(fromPath(r.path)).fileName();
  stem.chop(stem.endsWith(QLatin1String(".sdw.h5")) ? 7 : 0);
  return stem;
}

// Positive eigenvalues only: the plots use a log axis. The spectra are
// descending, so what is cut is the tail (rounding of a rank-deficient H).
QVector<double> positiveHead(const std::vector<float>& v) {
  QVector<double> out;
  out.reserve(static_cast<qsizetype>(v.size()));
  for (float x : v) {
    if (!(x > 0) || !std::isfinite(x)) break;
    out.push_back(x);
  }
  return out;
}

double at(const std::vector<double>& v, int i) {
  return i >= 0 && i < static_cast<int>(v.size()) ? v[static_cast<std::size_t>(i)] : widgets::kNoValue;
}

}  // namespace

widgets::EpsilonData epsilonDisplayData(const gpu::EpsilonResult& r, const QString& path) {
  widgets::EpsilonData d;
  d.path = path;
  d.k = r.kRequested;
  d.approximate = r.anyApproximate();
  int num = r.summary.numeratorRun;
  int den = r.summary.denominatorRun;
  if (num < 0 && !r.runs.empty()) num = 0;  // a single run: no ratio
  d.hasPair = num >= 0 && den >= 0;
  const auto fileOf = [](const gpu::EpsilonRunInfo& info) { return QFileInfo(fromPath(info.path)).fileName(); };
  if (num >= 0) {
    d.cLabel = runLabel(r.runs[static_cast<std::size_t>(num)]);
    d.cFile = fileOf(r.runs[static_cast<std::size_t>(num)]);
  }
  if (den >= 0) {
    d.arLabel = runLabel(r.runs[static_cast<std::size_t>(den)]);
    d.arFile = fileOf(r.runs[static_cast<std::size_t>(den)]);
    if (d.arLabel == d.cLabel) {
      d.cLabel += QStringLiteral(" #1");
      d.arLabel += QStringLiteral(" #2");
    }
  }
  d.referenceLabel = QStringLiteral("%1 (%2, %3 tokens)")
                         .arg(fileOf(r.reference), r.reference.source.empty() ? QStringLiteral("?") : qs(r.reference.source))
                         .arg(r.reference.tokens);

  d.inputs.reserve(static_cast<qsizetype>(r.inputs.size()));
  for (const gpu::EpsilonInput& in : r.inputs) {
    widgets::EpsilonInputData x;
    x.name = qs(in.name);
    x.type = inputType(in.name);
    for (const auto& m : in.modules) x.modules << qs(m);
    x.layer = in.layer;
    x.dIn = in.dIn;
    x.kUsed = in.kUsed;
    x.epsC = at(in.eps, num);
    x.epsAR = at(in.eps, den);
    x.noiseC = at(in.noise, num);
    x.noiseAR = at(in.noise, den);
    x.noiseReference = in.referenceNoise;
    x.spectrumReference = positiveHead(in.referenceSpectrum);
    if (num >= 0 && num < static_cast<int>(in.runSpectra.size()))
      x.spectrumC = positiveHead(in.runSpectra[static_cast<std::size_t>(num)]);
    if (den >= 0 && den < static_cast<int>(in.runSpectra.size()))
      x.spectrumAR = positiveHead(in.runSpectra[static_cast<std::size_t>(den)]);
    d.inputs.push_back(std::move(x));
  }
  d.modules.reserve(static_cast<qsizetype>(r.modules.size()));
  for (const gpu::EpsilonModuleRow& m : r.modules) {
    widgets::EpsilonModuleData x;
    x.module = qs(m.module);
    x.shortName = lastComponent(m.module);
    x.layer = m.layer;
    x.input = m.input;
    x.epsC = at(m.eps, num);
    x.epsAR = at(m.eps, den);
    x.ratio = d.hasPair ? m.ratio : widgets::kNoValue;
    x.noiseC = at(m.noise, num);
    x.noiseAR = at(m.noise, den);
    x.beyondNoise = d.hasPair ? m.beyondNoise : -1;
    d.modules.push_back(std::move(x));
  }
  d.summaryModules = r.summary.modules;
  d.summaryArLower = r.summary.arLower;
  d.noiseModules = r.summary.noise.modules;
  d.beyondNoise = r.summary.noise.beyond;
  d.arLowerBeyondNoise = r.summary.noise.arLowerBeyond;
  if (num >= 0) d.cNoiseNote = qs(r.runs[static_cast<std::size_t>(num)].noiseUnavailable);
  if (den >= 0) d.arNoiseNote = qs(r.runs[static_cast<std::size_t>(den)].noiseUnavailable);
  d.referenceNoiseNote = qs(r.reference.noiseUnavailable);
  for (const auto& w : r.warnings) d.warnings << qs(w);
  for (const auto& n : r.notes) d.notes << qs(n);
  d.shareArLower = r.summary.shareArLower;
  d.medianRatio = r.summary.medianRatio;
  d.ratioQ1 = r.summary.ratioQ1;
  d.ratioQ3 = r.summary.ratioQ3;
  return d;
}

AnalysisInputs findAnalysisInputs(const QString& dir) {
  AnalysisInputs out;
  out.dir = dir;
  if (!QFileInfo(dir).isDir()) return out;
  QString newestAnalysis;
  QString newestCreated;
  for (const rs::WorkspaceEntry& e : rs::listWorkspace(toPath(dir))) {
    if (!e.summary || e.partial) continue;
    const QString path = fromPath(e.path);
    const QString name = QFileInfo(path).fileName();
    try {
      if (e.summary->kind == "calibration") {
        out.runs.push_back(readCalibrationChoice(e.path));
      } else if (e.summary->kind == "analysis" && e.summary->complete() &&
                 rs::RunReader::open(e.path).exists("/analysis/epsilon")) {
        if (name == QLatin1String("epsilon-sample.sdw.h5")) {
          out.analysis = path;
        } else if (out.analysis.isEmpty() || !newestAnalysis.isEmpty()) {
          const QString created = qs(e.summary->provenance.createdUtc);
          if (newestAnalysis.isEmpty() || created > newestCreated) {
            newestAnalysis = path;
            newestCreated = created;
          }
        }
      }
    } catch (const std::exception&) {
      // unreadable runs are the browser's business; they are simply not offered
    }
  }
  if (out.analysis.isEmpty()) out.analysis = newestAnalysis;

  for (const auto& c : out.runs)
    if (QFileInfo(c.path).fileName() == QLatin1String("reference-heldout.sdw.h5")) out.reference = c.path;
  if (out.reference.isEmpty())
    for (const auto& c : out.runs)
      if (isReferenceRun(c.path) && c.status == QLatin1String("complete")) {
        out.reference = c.path;
        break;
      }
  for (const auto& c : out.runs) {
    if (c.path == out.reference || c.status != QLatin1String("complete") || isReferenceRun(c.path)) continue;
    if (out.fixedText.isEmpty() && c.source == QLatin1String("fixed")) out.fixedText = c.path;
    if (out.ar.isEmpty() && c.source == QLatin1String("ar")) out.ar = c.path;
  }
  return out;
}

AnalysisController::AnalysisController(JobManager* jobs, QObject* parent) : QObject(parent), jobs_(jobs) {
  qRegisterMetaType<sdw::widgets::EpsilonData>("sdw::widgets::EpsilonData");
  qRegisterMetaType<QVector<sdw::widgets::RunChoice>>("QVector<sdw::widgets::RunChoice>");
}

void AnalysisController::attach(widgets::AnalysisPanel* panel) {
  const gpu::DeviceInfo& dev = gpu::deviceInfo();
  panel->setCudaAvailable(dev.cudaAvailable, QString::fromStdString(dev.reason));
  connect(panel, &widgets::AnalysisPanel::analyzeRequested, this,
          [this](const QString& ref, const QString& c, const QString& ar, int k, const QString& device) {
            analyze(ref, c, ar, k, device);
          });
  connect(panel, &widgets::AnalysisPanel::openRequested, this,
          [this](const QString& path, int slot) { open(path, slot); });
  connect(panel, &widgets::AnalysisPanel::cancelRequested, this, &AnalysisController::cancel);
  connect(this, &AnalysisController::inputsFound, panel,
          [panel](const QVector<widgets::RunChoice>& runs, const QString& ref, const QString& c, const QString& ar,
                  bool defaults) {
            panel->setCalibrationRuns(runs);
            if (defaults) panel->setRunPaths(ref, c, ar);
          });
  connect(this, &AnalysisController::analysisStarted, panel, &widgets::AnalysisPanel::beginAnalysis);
  connect(this, &AnalysisController::analysisProgress, panel, &widgets::AnalysisPanel::setProgress);
  connect(this, &AnalysisController::analysisReady, panel, &widgets::AnalysisPanel::showAnalysis);
  connect(this, &AnalysisController::analysisEnded, panel, &widgets::AnalysisPanel::endAnalysis);
}

JobId AnalysisController::setWorkspace(const QString& dir) {
  if (!jobs_) return 0;
  workspace_ = dir;
  outputDir_ = dir;
  return jobs_->start(Job<AnalysisInputs>{
      .name = tr("Find calibration runs"),
      .slot = &scan_,
      .context = this,
      .work =
          [dir](const sdw::ProgressFn&) {
            AnalysisInputs in = findAnalysisInputs(dir);
            if (in.analysis.isEmpty()) {
              const QString sample = QDir(sampleWorkspaceDir()).filePath(QStringLiteral("epsilon-sample.sdw.h5"));
              if (QFileInfo::exists(sample)) in.analysis = sample;
            }
            return in;
          },
      .finished =
          [this](const AnalysisInputs& in) {
            if (in.dir != workspace_) return;
            const bool defaults = in.dir != defaultsDir_;
            defaultsDir_ = in.dir;
            Q_EMIT inputsFound(in.runs, in.reference, in.fixedText, in.ar, defaults);
            if (!shown_ && !in.analysis.isEmpty() && !isBusy()) open(in.analysis);
          },
      .failed = [this](const QString& m) { Q_EMIT error(tr("cannot list calibration runs: %1").arg(m)); },
  });
}

JobId AnalysisController::analyze(const QString& reference, const QString& fixedText, const QString& ar, int k,
                                  const QString& device) {
  if (!jobs_) return 0;
  QString refusal;
  if (analyze_.busy()) refusal = tr("an analysis is already running");
  else if (reference.trimmed().isEmpty()) refusal = tr("choose a reference run");
  else if (fixedText.trimmed().isEmpty() && ar.trimmed().isEmpty()) refusal = tr("choose at least one calibration run");
  if (!refusal.isEmpty()) {
    Q_EMIT error(tr("cannot analyze: %1").arg(refusal));
    if (!analyze_.busy()) Q_EMIT analysisEnded(tr("Cannot analyze: %1").arg(refusal), true);
    return 0;
  }
  gpu::EpsilonSettings s;
  s.reference = toPath(reference.trimmed());
  for (const QString& p : {fixedText.trimmed(), ar.trimmed()})
    if (!p.isEmpty()) s.runs.push_back(toPath(p));
  s.k = k;
  s.device = device.toStdString();
  QString out;
  if (!outputDir_.isEmpty())
    out = QDir(outputDir_).filePath(QStringLiteral("epsilon-k%1-%2.sdw.h5")
                                        .arg(k)
                                        .arg(QDateTime::currentDateTimeUtc().toString(QStringLiteral("yyyyMMdd-HHmmss"))));
  const JobId id = jobs_->start(Job<AnalysisOutcome>{
      .name = tr("Epsilon analysis"),
      .slot = &analyze_,
      .context = this,
      .work =
          [s, out](const sdw::ProgressFn& p) {
            const gpu::EpsilonResult r = gpu::analyzeEpsilon(s, p);
            AnalysisOutcome o;
            if (!out.isEmpty()) o.written = fromPath(gpu::writeEpsilonAnalysis(r, toPath(out)));
            o.data = epsilonDisplayData(r, o.written);
            return o;
          },
      .progress =
          [this](const JobUpdate& u) {
            Q_EMIT analysisProgress(u.fraction, tr("%1 / %2 inputs").arg(u.done).arg(u.total));
          },
      .finished = [this](const AnalysisOutcome& o) { showOutcome(o, true, widgets::AnalysisPanel::Main); },
      .failed = [this](const QString& m) { failed(m, true); },
      .cancelled = [this] { cancelled(true); },
  });
  QStringList names;
  for (const QString& p : {fixedText.trimmed(), ar.trimmed()})
    if (!p.isEmpty()) names << QFileInfo(p).fileName();
  Q_EMIT analysisStarted(tr("Analyzing %1 against %2 (k = %3)…")
                             .arg(names.join(QStringLiteral(", ")), QFileInfo(reference).fileName())
                             .arg(k));
  Q_EMIT info(tr("epsilon analysis started: reference %1, k = %2").arg(reference).arg(k));
  return id;
}

JobId AnalysisController::open(const QString& path, int slot) {
  if (!jobs_) return 0;
  const JobId id = jobs_->start(Job<AnalysisOutcome>{
      .name = tr("Open %1").arg(QFileInfo(path).fileName()),
      .slot = &open_,
      .context = this,
      .work =
          [path](const sdw::ProgressFn&) {
            AnalysisOutcome o;
            o.data = epsilonDisplayData(gpu::readEpsilonAnalysis(toPath(path)), path);
            return o;
          },
      .finished = [this, slot](const AnalysisOutcome& o) { showOutcome(o, false, slot); },
      .failed = [this](const QString& m) { failed(m, false); },
      .cancelled = [this] { cancelled(false); },
  });
  if (!analyze_.busy()) Q_EMIT analysisStarted(tr("Opening %1…").arg(QFileInfo(path).fileName()));
  return id;
}

void AnalysisController::cancel() {
  if (!jobs_) return;
  jobs_->cancel(analyze_.id());
  jobs_->cancel(open_.id());
}

void AnalysisController::showOutcome(const AnalysisOutcome& o, bool analyzed, int slot) {
  if (slot == widgets::AnalysisPanel::Main) shown_ = true;
  Q_EMIT analysisReady(o.data, slot);
  const QString what = o.data.hasPair ? o.data.summaryLine() : tr("%1 inputs").arg(o.data.inputs.size());
  QString msg;
  if (analyzed)
    msg = o.written.isEmpty() ? tr("Analysis done: %1").arg(what)
                              : tr("Analysis saved to %1: %2").arg(QFileInfo(o.written).fileName(), what);
  else
    msg = tr("Opened %1: %2").arg(QFileInfo(o.data.path).fileName(), what);
  if (!isBusy()) Q_EMIT analysisEnded(msg, false);
  Q_EMIT info(msg);
  if (!o.written.isEmpty()) Q_EMIT runWritten(o.written);
}

void AnalysisController::failed(const QString& message, bool analyzed) {
  const QString m = analyzed ? tr("Analysis failed: %1").arg(message) : tr("Cannot open the analysis: %1").arg(message);
  if (!isBusy()) Q_EMIT analysisEnded(m, true);
  Q_EMIT error(m);
}

void AnalysisController::cancelled(bool analyzed) {
  if (!isBusy()) Q_EMIT analysisEnded(analyzed ? tr("Analysis cancelled.") : tr("Opening cancelled."), false);
}

}  // namespace sdw::app
