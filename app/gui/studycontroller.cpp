#include "app/gui/studycontroller.h"

#include "app/gui/modelcontroller.h"
#include "app/gui/workspace.h"
#include "gpu/device.h"
#include "gpu/study.h"
#include "widgets/studypage.h"

#include <QDir>
#include <QFileInfo>
#include <QLocale>
#include <QRegularExpression>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace sdw::app {

namespace {

struct StudyOutcome {
  widgets::StudyData data;
  QString written;
};

}  // namespace
}  // namespace sdw::app

Q_DECLARE_METATYPE(sdw::app::StudyOutcome)

namespace sdw::app {

namespace {

QString samplesFile(const QString& rel) {
  // The sample model sits in <samples>/model/brown-llama.
  return QDir::cleanPath(QDir(sampleModelDir()).filePath(QStringLiteral("../../") + rel));
}

QString count(qint64 n) { return QLocale(QLocale::English).toString(n); }

widgets::StudyCi ci(const stats::MeanCi& m) {
  widgets::StudyCi c;
  c.mean = m.mean;
  c.ci = m.n > 1 && std::isfinite(m.halfWidth) ? m.halfWidth : 0.0;
  c.n = m.n;
  return c;
}

QString percent(const widgets::StudyCi& v) {
  if (!v.valid()) return QStringLiteral("n/a");
  const QString mean = QString::number(100.0 * v.mean, 'f', 0) + QLatin1Char('%');
  return v.n > 1 ? QStringLiteral("%1 ± %2%").arg(mean, QString::number(100.0 * v.ci, 'f', 0)) : mean;
}

QString seedsText(int n) { return n == 1 ? QObject::tr("1 seed") : QObject::tr("%1 seeds").arg(n); }

QStringList names(const std::vector<std::string>& v, QString (*pretty)(const QString&) = nullptr) {
  QStringList out;
  for (const auto& s : v) out << (pretty ? pretty(qs(s)) : qs(s));
  return out;
}
// Settings choices by their names (gpu/calibration.h, gpu/pruning.h).
template <class E>
QStringList names(const std::vector<E>& v, std::string (*name)(E), QString (*pretty)(const QString&)) {
  QStringList out;
  for (const E e : v) out << pretty(qs(name(e)));
  return out;
}

// Values in first-seen order.
template <typename T, typename F>
QStringList ordered(const QVector<T>& rows, F key) {
  QStringList out;
  for (const T& r : rows)
    if (!out.contains(key(r))) out << key(r);
  return out;
}

const widgets::StudyCellData* findCell(const QVector<widgets::StudyCellData>& cells, const QString& source,
                                       const QString& decoding, const QString& solver, const QString& pattern) {
  for (const auto& c : cells)
    if (c.source == source && c.decoding == decoding && c.solver == solver && c.pattern == pattern) return &c;
  return nullptr;
}

// The sources in the order the charts and the summary use: fixed text first.
QStringList sourceOrder(const QVector<widgets::StudyCellData>& cells) {
  QStringList src = ordered(cells, [](const widgets::StudyCellData& c) { return c.source; });
  std::stable_partition(src.begin(), src.end(), [](const QString& s) { return s == QLatin1String("fixed"); });
  return src;
}

widgets::StudyChartData klChart(const QVector<widgets::StudyCellData>& cells) {
  widgets::StudyChartData chart;
  using C = widgets::StudyCellData;
  const QStringList decodings = ordered(cells, [](const C& c) { return c.decoding; });
  const QStringList sources = sourceOrder(cells);
  QVector<QPair<QString, QString>> groups;  // (solver, pattern)
  for (const C& c : cells)
    if (!groups.contains(qMakePair(c.solver, c.pattern))) groups << qMakePair(c.solver, c.pattern);
  for (const auto& [solver, pattern] : groups)
    chart.groups << widgets::studySolverName(solver) + QLatin1Char('\n') + widgets::studyPatternName(pattern);
  chart.yLabel = QObject::tr("KL, nats");
  chart.xLabel = QObject::tr("solver and pattern; bars: calibration source · decoding");
  QString csv = QStringLiteral("solver,pattern,source,decoding,kl_mean,kl_ci95,n\n");
  for (int d = 0; d < decodings.size(); ++d)
    for (const QString& src : sources) {
      widgets::StudyBarSeries s;
      s.name = QStringLiteral("%1 · %2").arg(widgets::studySourceName(src), decodings[d]);
      s.source = src;
      s.shade = d;
      bool any = false;
      for (const auto& [solver, pattern] : groups) {
        const C* c = findCell(cells, src, decodings[d], solver, pattern);
        const widgets::StudyCi v = c ? c->kl : widgets::StudyCi{};
        s.values << v.mean;
        s.ci << v.ci;
        any = any || v.valid();
        s.tips << (c ? QObject::tr("%1, %2 %3\nKL %4 nats (%5)\nagreement %6 · first divergence %7")
                           .arg(s.name, widgets::studySolverName(solver), widgets::studyPatternName(pattern),
                                widgets::formatStudyCi(v, 4), seedsText(v.n), widgets::formatStudyCi(c->agreement, 3),
                                widgets::formatStudyCi(c->firstDivergence, 1))
                     : QString());
        if (c)
          csv += QStringLiteral("%1,%2,%3,%4,%5,%6,%7\n")
                     .arg(solver, pattern, src, decodings[d])
                     .arg(v.mean, 0, 'g', 17)
                     .arg(v.ci, 0, 'g', 17)
                     .arg(v.n);
      }
      if (any) chart.series << s;
    }
  chart.csv = csv;
  return chart;
}

widgets::StudyChartData epsilonChart(const QVector<widgets::StudyEpsilonData>& eps) {
  widgets::StudyChartData chart;
  using E = widgets::StudyEpsilonData;
  const QStringList decodings = ordered(eps, [](const E& e) { return e.decoding; });
  const QStringList sources = ordered(eps, [](const E& e) { return e.source; });
  chart.groups = decodings;
  chart.yLabel = QObject::tr("share of modules");
  chart.xLabel = QObject::tr("decoding");
  chart.reference = 0.5;
  chart.referenceLabel = QObject::tr("0.5: no preference");
  chart.yMin = 0;
  chart.yMax = 1;
  QString csv = QStringLiteral(
      "source,decoding,share_lower_mean,share_lower_ci95,n,median_ratio_mean,"
      "median_ratio_ci95\n");
  for (const QString& src : sources) {
    widgets::StudyBarSeries s;
    s.name = widgets::studySourceName(src);
    s.source = src;
    for (const QString& dec : decodings) {
      const E* e = nullptr;
      for (const E& x : eps)
        if (x.source == src && x.decoding == dec) e = &x;
      const widgets::StudyCi v = e ? e->shareLower : widgets::StudyCi{};
      s.values << v.mean;
      s.ci << v.ci;
      s.tips << (e ? QObject::tr("%1, %2: eps(%1) < eps(fixed) on %3 of modules (%4)\nmedian eps(fixed)/eps(%1) %5")
                         .arg(s.name, dec, percent(v), seedsText(v.n), widgets::formatStudyCi(e->medianRatio, 3))
                   : QString());
      if (e)
        csv += QStringLiteral("%1,%2,%3,%4,%5,%6,%7\n")
                   .arg(src, dec)
                   .arg(v.mean, 0, 'g', 17)
                   .arg(v.ci, 0, 'g', 17)
                   .arg(v.n)
                   .arg(e->medianRatio.mean, 0, 'g', 17)
                   .arg(e->medianRatio.ci, 0, 'g', 17);
    }
    chart.series << s;
  }
  chart.csv = csv;
  return chart;
}

// "sampled: AR lower KL than fixed text in 5 of 6 cells (CIs apart in 3)"
// per decoding and source, then epsilon's share per decoding.
QString summaryOf(const widgets::StudyData& d) {
  using C = widgets::StudyCellData;
  QStringList parts;
  const QStringList decodings = ordered(d.cells, [](const C& c) { return c.decoding; });
  const QStringList sources = sourceOrder(d.cells);
  for (const QString& dec : decodings)
    for (const QString& src : sources) {
      if (src == QLatin1String("fixed")) continue;
      int cells = 0, lower = 0, apart = 0;
      bool intervals = true;
      for (const C& c : d.cells) {
        if (c.source != src || c.decoding != dec) continue;
        const C* f = findCell(d.cells, QStringLiteral("fixed"), dec, c.solver, c.pattern);
        if (!f || !f->kl.valid() || !c.kl.valid()) continue;
        ++cells;
        intervals = intervals && c.kl.n > 1 && f->kl.n > 1;
        if (c.kl.mean < f->kl.mean) {
          ++lower;
          if (c.kl.mean + c.kl.ci < f->kl.mean - f->kl.ci) ++apart;
        }
      }
      if (cells == 0) continue;
      QString line = QObject::tr("%1: %2 lower KL than fixed text in %3 of %4 %5")
                         .arg(dec, widgets::studySourceName(src))
                         .arg(lower)
                         .arg(cells)
                         .arg(cells == 1 ? QObject::tr("cell") : QObject::tr("cells"));
      line += intervals ? QObject::tr(" (CIs apart in %1)").arg(apart) : QObject::tr(" (one seed: no intervals)");
      parts << line;
    }
  QString text = parts.join(QStringLiteral("; "));
  QStringList eps;
  for (const QString& src : ordered(d.epsilon, [](const widgets::StudyEpsilonData& e) { return e.source; })) {
    QStringList per;
    for (const auto& e : d.epsilon)
      if (e.source == src)
        per << (per.isEmpty() ? QObject::tr("%1 of modules with %2") : QObject::tr("%1 with %2"))
                   .arg(percent(e.shareLower), e.decoding);
    eps << QObject::tr("eps(%1) below eps(fixed text) on %2")
               .arg(widgets::studySourceName(src), per.join(QStringLiteral(", ")));
  }
  if (!eps.isEmpty()) text += (text.isEmpty() ? QString() : QStringLiteral(". ")) + eps.join(QStringLiteral("; "));
  if (text.isEmpty()) return QObject::tr("No cell has figures to compare.");
  return text + QLatin1Char('.');
}

}  // namespace

QString StudyController::sampleStudy() {
  return QDir(sampleWorkspaceDir()).filePath(QStringLiteral("study-sample.sdw.h5"));
}

QString StudyController::emptyMessage() {
  return tr("No study open. Set the grid above and press Start, or open a study file.\n\nFrom the command line "
            "(about 30 s on a CPU with the sample model):\nbuild/bin/sdw-cli study --out %1 --decodings "
            "greedy,sampled --solvers sparsegpt --patterns 2:4 --seeds 0,1 --tokens 600 --reference-tokens 400 "
            "--max-new-tokens 32 --eval-max-new-tokens 8 --eval-prompts 4 --eval-windows 2 --k 16\n(saved there, "
            "it opens here at start-up)")
      .arg(QStringLiteral("samples/workspace/study-sample.sdw.h5"));
}

widgets::StudyRequest StudyController::sampleRequest() {
  widgets::StudyRequest r;
  r.model = sampleModelDir();
  r.corpus = samplesFile(QStringLiteral("corpus/brown-calib.txt"));
  r.prompts = samplesFile(QStringLiteral("prompts/brown-calib.jsonl"));
  r.heldoutPrompts = samplesFile(QStringLiteral("prompts/brown-heldout.jsonl"));
  r.heldoutText = samplesFile(QStringLiteral("corpus/brown-heldout.txt"));
  return r;
}

widgets::StudyData StudyController::toStudyData(const gpu::StudyResult& r, const QString& path) {
  widgets::StudyData d;
  d.path = path;
  for (const gpu::StudyCell& c : r.cells) {
    widgets::StudyCellData x;
    x.source = qs(c.source);
    x.decoding = qs(c.decoding);
    x.solver = qs(c.solver);
    x.pattern = qs(c.pattern);
    x.kl = ci(c.kl);
    x.agreement = ci(c.agreement);
    x.firstDivergence = ci(c.firstDivergence);
    x.pplDenseGen = ci(c.pplDenseGen);
    x.pplText = ci(c.pplText);
    x.meanRelError = ci(c.meanRelError);
    // A figure without a value for some seed counts fewer: the cell's seeds
    // are the most any figure has.
    for (const auto* f : {&x.kl, &x.agreement, &x.firstDivergence, &x.pplDenseGen, &x.pplText, &x.meanRelError})
      x.seeds = std::max(x.seeds, f->n);
    d.cells << x;
  }
  for (const gpu::StudyEpsilonCell& e : r.epsilonCells)
    d.epsilon << widgets::StudyEpsilonData{qs(e.source), qs(e.decoding), ci(e.shareLower), ci(e.medianRatio)};
  d.klChart = klChart(d.cells);
  d.epsilonChart = epsilonChart(d.epsilon);
  d.summary = summaryOf(d);

  const gpu::StudySettings& s = r.settings;
  std::vector<std::uint64_t> seeds = s.seeds;
  if (seeds.empty())  // a file from an older writer: the rows still say which
    for (const auto& row : r.seedRows)
      if (std::find(seeds.begin(), seeds.end(), row.seed) == seeds.end()) seeds.push_back(row.seed);
  d.seeds = static_cast<int>(seeds.size());
  QStringList seedList;
  for (auto v : seeds) seedList << QString::number(v);
  QStringList decodings;
  for (const auto& dec : s.decodings) decodings << qs(dec.name);
  d.seconds = r.seconds;
  d.workDir = fromPath(r.workDir);
  d.settingsText =
      tr("%1; sources %2; decodings %3; %4; %5; seeds %6; %7 calibration tokens per source, reference %8; %9 %10")
          .arg(QFileInfo(fromPath(s.model)).fileName(),
               names(s.sources, gpu::calibrationSourceName, widgets::studySourceName).join(QStringLiteral(", ")),
               decodings.join(QStringLiteral(", ")),
               names(s.solvers, gpu::pruneMethodName, widgets::studySolverName).join(QStringLiteral(", ")),
               names(s.patterns, widgets::studyPatternName).join(QStringLiteral(", ")),
               seedList.join(QStringLiteral(", ")), count(s.tokens), count(s.referenceTokens), qs(s.device))
          .arg(qs(s.dtype));
  if (r.seconds > 0) d.settingsText += tr("; %1 s").arg(r.seconds, 0, 'f', 0);
  d.settingsTip = tr("model: %1\ncross-model: %2\ncorpus: %3\nprompts: %4\nheld-out prompts: %5\nheld-out text: %6\n"
                     "generation %7 tokens, epsilon k %8, evaluation %9 tokens on %10 prompts, %11 text windows\n"
                     "work folder: %12")
                      .arg(fromPath(s.model), s.crossModel.empty() ? tr("none") : fromPath(s.crossModel),
                           fromPath(s.corpus), fromPath(s.prompts), fromPath(s.heldoutPrompts), fromPath(s.heldoutText))
                      .arg(s.maxNewTokens)
                      .arg(s.epsilonK)
                      .arg(s.evalMaxNewTokens)
                      .arg(s.evalPrompts > 0 ? QString::number(s.evalPrompts) : tr("all"))
                      .arg(s.evalWindows)
                      .arg(fromPath(r.workDir));
  return d;
}

gpu::StudySettings StudyController::toSettings(const widgets::StudyRequest& q) {
  gpu::StudySettings s;
  if (q.model.isEmpty()) throw std::invalid_argument(tr("choose the model").toStdString());
  s.model = toPath(q.model);
  s.sources = {gpu::CalibrationSource::Fixed};
  if (q.ar) s.sources.push_back(gpu::CalibrationSource::Ar);
  if (q.crossSource) {
    if (q.crossModel.isEmpty())
      throw std::invalid_argument(tr("choose the second model of the cross-model source").toStdString());
    s.sources.push_back(gpu::CalibrationSource::CrossModel);
    s.crossModel = toPath(q.crossModel);
  }
  if (s.sources.size() < 2)
    throw std::invalid_argument(tr("choose AR or cross-model as a source to compare with fixed text").toStdString());
  s.decodings.clear();
  for (const QString& d : q.decodings) s.decodings.push_back(gpu::parseStudyDecoding(d.toStdString()));
  if (s.decodings.empty()) throw std::invalid_argument(tr("choose at least one decoding").toStdString());
  s.solvers.clear();
  for (const QString& m : q.solvers) s.solvers.push_back(gpu::parsePruneMethod(m.toStdString()));
  if (s.solvers.empty()) throw std::invalid_argument(tr("choose at least one solver").toStdString());
  s.patterns.clear();
  for (const QString& p : q.patterns) s.patterns.push_back(p.toStdString());
  if (s.patterns.empty()) throw std::invalid_argument(tr("choose at least one pattern").toStdString());
  s.seeds.clear();
  for (const QString& part : q.seeds.split(QRegularExpression(QStringLiteral("[,\\s]+")), Qt::SkipEmptyParts)) {
    bool ok = false;
    const qulonglong v = part.toULongLong(&ok);
    if (!ok) throw std::invalid_argument(tr("seeds: '%1' is not a number (write e.g. 0,1,2)").arg(part).toStdString());
    if (std::find(s.seeds.begin(), s.seeds.end(), v) == s.seeds.end()) s.seeds.push_back(v);
  }
  if (s.seeds.empty()) throw std::invalid_argument(tr("give at least one seed (e.g. 0,1,2)").toStdString());
  s.tokens = q.tokens;
  s.referenceTokens = q.referenceTokens;
  s.maxNewTokens = q.maxNewTokens;
  s.epsilonK = q.epsilonK;
  s.evalMaxNewTokens = q.evalMaxNewTokens;
  s.evalPrompts = q.evalPrompts;
  s.evalWindows = q.evalWindows;
  s.corpus = toPath(q.corpus);
  s.prompts = toPath(q.prompts);
  s.heldoutPrompts = toPath(q.heldoutPrompts);
  s.heldoutText = toPath(q.heldoutText);
  s.device = q.device.toStdString();
  // The GPU computes in bfloat16 as the other panels' defaults do; the CPU
  // has no fast bfloat16 path.
  s.dtype = q.device.startsWith(QLatin1String("cuda")) ? "bfloat16" : "float32";
  return s;
}

StudyController::StudyController(JobManager* jobs, QObject* parent) : QObject(parent), jobs_(jobs) {
  qRegisterMetaType<sdw::widgets::StudyData>("sdw::widgets::StudyData");
  qRegisterMetaType<sdw::widgets::StudyRequest>("sdw::widgets::StudyRequest");
}

void StudyController::attach(widgets::StudyPage* page) {
  page_ = page;
  const gpu::DeviceInfo& dev = gpu::deviceInfo();
  page->setCudaAvailable(dev.cudaAvailable, QString::fromStdString(dev.reason));
  widgets::StudyRequest defaults = sampleRequest();
  defaults.out = page->output();
  page->setRequest(defaults);
  page->clear(emptyMessage());
  connect(page, &widgets::StudyPage::openRequested, this, [this](const QString& path) { open(path); });
  connect(page, &widgets::StudyPage::startRequested, this, [this](const widgets::StudyRequest& r) { run(r); });
  connect(page, &widgets::StudyPage::cancelRequested, this, &StudyController::cancel);
  connect(this, &StudyController::jobStarted, page, &widgets::StudyPage::beginJob);
  connect(this, &StudyController::jobProgress, page, &widgets::StudyPage::setProgress);
  connect(this, &StudyController::studyReady, page, &widgets::StudyPage::setData);
  connect(this, &StudyController::jobEnded, page, &widgets::StudyPage::endJob);
  connect(this, &StudyController::status, page, &widgets::StudyPage::showStatus);
  if (QFileInfo::exists(sampleStudy())) open(sampleStudy());
}

void StudyController::setWorkspace(const QString& dir) {
  workspace_ = dir;
  if (!page_) return;
  page_->setWorkspace(dir);
  const QString suggested = QDir(dir).filePath(QStringLiteral("study.sdw.h5"));
  if (page_->output().isEmpty() || page_->output() == defaultOut_) page_->setOutput(suggested);
  defaultOut_ = suggested;
}

void StudyController::setModel(const QString& dir) {
  if (page_ && !dir.isEmpty() && !run_.busy()) page_->setModelDir(dir);
}

JobId StudyController::open(const QString& path) {
  if (!jobs_) return 0;
  const JobId id = jobs_->start(Job<widgets::StudyData>{
      .name = tr("Open %1").arg(QFileInfo(path).fileName()),
      .slot = &open_,
      .context = this,
      .work = [path](const sdw::ProgressFn&) { return toStudyData(gpu::readStudy(toPath(path)), path); },
      .finished =
          [this](const widgets::StudyData& d) {
            shown_ = true;
            Q_EMIT studyReady(d);
            ended(tr("Opened %1 (%2 cells, %3)")
                      .arg(QFileInfo(d.path).fileName())
                      .arg(d.cells.size())
                      .arg(seedsText(d.seeds)),
                  false);
          },
      .failed = [this](const QString& m) { ended(tr("Cannot open the study: %1").arg(m), true); },
      .cancelled = [this] { ended(tr("Opening cancelled."), false); },
  });
  if (!run_.busy()) Q_EMIT jobStarted(tr("Opening %1…").arg(QFileInfo(path).fileName()));
  return id;
}

JobId StudyController::run(const widgets::StudyRequest& request) {
  if (!jobs_) return 0;
  QString refusal;
  gpu::StudySettings s;
  if (run_.busy()) refusal = tr("a study is already running");
  else if (request.out.isEmpty()) refusal = tr("choose the output file");
  else if (!request.out.endsWith(QLatin1String(".sdw.h5"))) refusal = tr("the output file must end in .sdw.h5");
  if (refusal.isEmpty()) {
    try {
      s = toSettings(request);
    } catch (const std::invalid_argument& e) {
      refusal = qs(e.what());
    }
  }
  if (!refusal.isEmpty()) {
    Q_EMIT error(tr("cannot run the study: %1").arg(refusal));
    if (!run_.busy()) Q_EMIT jobEnded(tr("Cannot run the study: %1").arg(refusal), true);
    return 0;
  }
  const QString out = request.out;
  runOut_ = out;
  const int steps = gpu::studySteps(s);
  const JobId id = jobs_->start(Job<StudyOutcome>{
      .name = tr("Study"),
      .slot = &run_,
      .context = this,
      .work =
          [s, out](const sdw::ProgressFn& p) {
            const gpu::StudyResult r = gpu::runStudy(s, toPath(out), p);
            StudyOutcome o;
            o.written = fromPath(gpu::writeStudy(r, toPath(out), true));
            // What is shown is what was written; only the steps reused (this
            // call's, not the study's) are not in the file.
            o.data = toStudyData(gpu::readStudy(toPath(o.written)), o.written);
            o.data.stepsReused = r.stepsReused;
            return o;
          },
      .progress =
          [this](const JobUpdate& u) {
            if (u.total <= 0) return;
            const int total = static_cast<int>(u.total);
            const int done = static_cast<int>(u.done);
            const QString text = done >= total ? tr("%1 steps done: writing the study").arg(total)
                                               : tr("step %1 of %2: %3").arg(done + 1).arg(total).arg(u.stage);
            Q_EMIT jobProgress(u.fraction, text);
          },
      .finished =
          [this](const StudyOutcome& o) {
            shown_ = true;
            Q_EMIT studyReady(o.data);
            ended(tr("Study saved to %1 (%2 cells in %3 s; %4 steps reused from %5)")
                      .arg(QFileInfo(o.written).fileName())
                      .arg(o.data.cells.size())
                      .arg(o.data.seconds, 0, 'f', 1)
                      .arg(o.data.stepsReused)
                      .arg(o.data.workDir),
                  false);
            Q_EMIT runWritten(o.written);
          },
      .failed =
          [this](const QString& m) {
            ended(tr("Study failed: %1 (finished steps stay in %2.work)").arg(m, runOut_), true);
          },
      .cancelled =
          [this] {
            ended(tr("Study cancelled: the finished steps stay in %1.work; Start with the same output resumes "
                     "from them.")
                      .arg(runOut_),
                  false);
          },
  });
  Q_EMIT jobStarted(
      tr("Running the study: %1 steps; intermediate runs in %2").arg(steps).arg(out + QStringLiteral(".work")));
  Q_EMIT jobProgress(0.0, tr("step 1 of %1").arg(steps));
  Q_EMIT info(tr("study started: model %1, %2 steps, output %3, device %4")
                  .arg(request.model)
                  .arg(steps)
                  .arg(out, request.device));
  return id;
}

void StudyController::cancel() {
  if (!jobs_) return;
  if (run_.busy()) {
    jobs_->cancel(run_.id());
    Q_EMIT status(tr("Cancelling: the study stops after the step under way…"), false);
  }
  jobs_->cancel(open_.id());
}

void StudyController::ended(const QString& message, bool isError) {
  if (!isBusy()) Q_EMIT jobEnded(message, isError);
  if (isError) Q_EMIT error(message);
  else Q_EMIT info(message);
}

}  // namespace sdw::app
