#include "app/gui/benchmarkcontroller.h"

#include "core/stats.h"
#include "gpu/bench_summary.h"
#include "gpu/device.h"
#include "gpu/kernel_id.h"
#include "gpu/spmv.h"
#include "widgets/benchresultsmodel.h"

#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

Q_DECLARE_METATYPE(sdw::gpu::BenchResult)

namespace sdw::app {

// A results file as read by the open job.
struct LoadedBench {
  gpu::BenchResult result;
  gpu::BenchSettings settings;
  QString command;
};

}  // namespace sdw::app

Q_DECLARE_METATYPE(sdw::app::LoadedBench)

namespace sdw::app {

namespace bench {

namespace {
// Speed-ups and kernel identities come from gpu/ (gpu/bench_summary.h,
// gpu/kernel_id.h); this file only arranges them for the views.
std::string key(const gpu::BenchRow& r) {
  return r.model + "|" + r.module + "|" + std::to_string(r.rows) + "x" + std::to_string(r.cols) + "|" +
         std::to_string(r.batch);
}
bool isSparse(const gpu::BenchRow& r) { return gpu::kernelInfo(r.id).sparse; }
double median(const std::vector<double>& v) { return stats::median(v, 0.0); }
int barBatch(const QVector<gpu::BenchRow>& rows) {
  int b = 0;
  for (const auto& r : rows)
    if (b == 0 || r.batch < b) b = r.batch;
  return b == 0 ? 1 : b;
}
const char* const kPatternOrder[] = {"2:4", "4:8", "8:16", "16:32"};
int patternRank(const std::string& p) {
  for (int i = 0; i < 4; ++i)
    if (p == kPatternOrder[i]) return i;
  return 4;
}
gpu::BaselineTimes baselines(const QVector<gpu::BenchRow>& rows) {
  gpu::BaselineTimes t;
  for (const auto& r : rows) t.add(r);
  return t;
}
bool hasKernel(const QVector<gpu::BenchRow>& rows, gpu::KernelId id) {
  return std::any_of(rows.begin(), rows.end(), [id](const gpu::BenchRow& r) { return r.id == id; });
}
// The baseline the views compare against: cuBLAS where measured, else our dense GEMV.
gpu::Baseline mainBaseline(const QVector<gpu::BenchRow>& rows) {
  return hasKernel(rows, gpu::KernelId::Cublas) ? gpu::Baseline::Cublas : gpu::Baseline::OwnDense;
}
}  // namespace

QString modelTitle(const std::string& model) {
  QFile f(QStringLiteral(SDW_SOURCE_DIR "/resources/shapes/%1.json").arg(QString::fromStdString(model)));
  if (f.open(QIODevice::ReadOnly)) {
    const QString t = QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("model")).toString();
    if (!t.isEmpty()) return t;
  }
  return QString::fromStdString(model);
}

QString seriesName(const gpu::BenchRow& r) {
  const auto& k = gpu::kernelInfo(r.id);
  const QString label = QString::fromUtf8(k.label.data(), static_cast<qsizetype>(k.label.size()));
  const QString p = QString::fromStdString(r.pattern);
  if (r.id == gpu::KernelId::Sparse || r.id == gpu::KernelId::Cusparselt) return label + QLatin1Char(' ') + p;
  if (r.id == gpu::KernelId::SparseCpu) return QStringLiteral("sparse %1 (CPU)").arg(p);
  if ((r.id == gpu::KernelId::Spmspv || r.id == gpu::KernelId::SpmspvCpu) && r.activationSparsity) {
    QString name = QStringLiteral("spmspv p_x %1").arg(*r.activationSparsity, 0, 'g', 3);
    if (r.pattern != gpu::kSpmspvUnstructuredPattern) name += QLatin1Char(' ') + QString::fromStdString(r.pattern);
    return r.id == gpu::KernelId::SpmspvCpu ? name + QStringLiteral(" (CPU)") : name;
  }
  return label;
}

widgets::BenchRowData benchRowData(const gpu::BenchRow& r) {
  widgets::BenchRowData d;
  d.model = QString::fromStdString(r.model);
  d.module = QString::fromStdString(r.module);
  d.layer = gpu::isLayerSequence(r);
  d.rows = r.rows;
  d.cols = r.cols;
  d.pattern = QString::fromStdString(r.pattern);
  d.batch = r.batch;
  d.kernel = QString::fromStdString(r.kernel);
  d.us = r.us;
  d.usChained = r.usChained;
  d.bytes = r.bytes;
  d.gbs = r.gbs;
  d.fractionHbm = r.fractionHbm;
  d.speedupVsCublas = r.speedupVsCublas;
  d.speedupVsDense = r.speedupVsDense;
  d.config = QString::fromStdString(r.config);
  d.activationSparsity = r.activationSparsity.value_or(-1.0);
  return d;
}

QVector<widgets::BenchRowData> benchRowData(const QVector<gpu::BenchRow>& rows) {
  QVector<widgets::BenchRowData> out;
  out.reserve(rows.size());
  for (const gpu::BenchRow& r : rows) out.push_back(benchRowData(r));
  return out;
}

QString baselineName(const QVector<gpu::BenchRow>& rows) {
  if (hasKernel(rows, gpu::KernelId::Cublas)) return QStringLiteral("cuBLAS");
  if (hasKernel(rows, gpu::KernelId::Dense)) return QStringLiteral("our dense GEMV");
  if (hasKernel(rows, gpu::KernelId::DenseCpu)) return QStringLiteral("dense GEMV (CPU)");
  return QStringLiteral("dense");
}

QVector<double> speedups(const QVector<gpu::BenchRow>& rows) {
  const gpu::BaselineTimes base = baselines(rows);
  QVector<double> out;
  out.reserve(rows.size());
  for (const auto& r : rows) {
    const double overCublas = base.speedup(r, gpu::Baseline::Cublas);
    out.push_back(overCublas > 0 ? overCublas : base.speedup(r, gpu::Baseline::OwnDense));
  }
  return out;
}

widgets::SpeedupBars speedupBars(const QVector<gpu::BenchRow>& rows) {
  widgets::SpeedupBars bars;
  bars.baseline = baselineName(rows);
  bars.batch = barBatch(rows);
  const bool overLibrary = mainBaseline(rows) == gpu::Baseline::Cublas;
  const QVector<double> sp = speedups(rows);
  // shapes in run order, whole-layer sequences after the projections
  QStringList projections, layers;
  std::vector<std::pair<int, QString>> series;  // (rank, name)
  for (int i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (r.batch != bars.batch) continue;
    const QString shape = widgets::BenchResultsModel::shapeLabel(benchRowData(r));
    QStringList& list = gpu::isLayerSequence(r) ? layers : projections;
    if (!list.contains(shape)) list << shape;
    int rank = -1;
    if (isSparse(r)) rank = patternRank(r.pattern);
    else if (overLibrary && r.id == gpu::KernelId::Dense) rank = 10;
    else if (r.id == gpu::KernelId::Cusparselt) rank = 11;
    if (rank < 0) continue;
    const QString name = seriesName(r);
    if (std::none_of(series.begin(), series.end(), [&](const auto& s) { return s.second == name; }))
      series.emplace_back(rank, name);
  }
  std::stable_sort(series.begin(), series.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  bars.shapes = projections + layers;
  for (const auto& s : series) bars.series << s.second;
  bars.values = QVector<QVector<double>>(bars.series.size(), QVector<double>(bars.shapes.size(), 0.0));
  for (int i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (r.batch != bars.batch || sp[i] <= 0) continue;
    const int s = static_cast<int>(bars.series.indexOf(seriesName(r)));
    const int x = static_cast<int>(bars.shapes.indexOf(widgets::BenchResultsModel::shapeLabel(benchRowData(r))));
    if (s >= 0 && x >= 0) bars.values[s][x] = sp[i];
  }
  return bars;
}

widgets::ActivationSpeedups activationSpeedups(const QVector<gpu::BenchRow>& rows) {
  widgets::ActivationSpeedups out;
  gpu::BenchResult run;
  run.rows.assign(rows.begin(), rows.end());
  gpu::summarise(run, "");
  if (run.activationSummary.empty()) return out;
  out.baseline =
      hasKernel(rows, gpu::KernelId::Dense) ? QStringLiteral("our dense GEMV") : QStringLiteral("dense GEMV (CPU)");
  // summarise() keys its medians by the rows' own values: exact matches below.
  for (const gpu::ActivationSummary& a : run.activationSummary)
    if (!out.sparsities.contains(a.activationSparsity)) out.sparsities.push_back(a.activationSparsity);
  std::sort(out.sparsities.begin(), out.sparsities.end());
  out.median.fill(0.0, out.sparsities.size());
  out.bytesLimit.fill(0.0, out.sparsities.size());
  // The medians and bytes limits (dense bytes / spMspV bytes, median over the shapes) per layout.
  for (const gpu::ActivationSummary& a : run.activationSummary) {
    const auto k = out.sparsities.indexOf(a.activationSparsity);
    if (a.pattern == gpu::kSpmspvUnstructuredPattern) {
      out.median[k] = a.medianVsDense;
      out.bytesLimit[k] = a.medianBytesLimit;
      continue;
    }
    const QString pattern = QString::fromStdString(a.pattern);
    auto l = std::find_if(out.layouts.begin(), out.layouts.end(), [&](const auto& x) { return x.pattern == pattern; });
    if (l == out.layouts.end())
      l = out.layouts.insert(out.layouts.end(), {pattern, QVector<double>(out.sparsities.size(), 0.0),
                                                 QVector<double>(out.sparsities.size(), 0.0)});
    l->median[k] = a.medianVsDense;
    l->bytesLimit[k] = a.medianBytesLimit;
  }
  const gpu::BaselineTimes base = baselines(rows);
  for (const auto& r : rows) {
    if (!r.activationSparsity || r.batch != 1 || gpu::isLayerSequence(r)) continue;
    const auto k = out.sparsities.indexOf(*r.activationSparsity);
    if (k < 0) continue;
    const bool main = r.pattern == gpu::kSpmspvUnstructuredPattern;
    const QString layout = main ? QString() : QString::fromStdString(r.pattern);
    QString shape = widgets::BenchResultsModel::shapeLabel(benchRowData(r));
    if (!main) shape += QLatin1Char(' ') + layout;
    auto s = out.shapes.indexOf(shape);
    if (s < 0) {
      s = out.shapes.size();
      out.shapes << shape;
      out.shapePatterns << layout;
      out.values.push_back(QVector<double>(out.sparsities.size(), 0.0));
    }
    const double overDense = base.speedup(r, gpu::Baseline::OwnDense);
    out.values[s][k] = overDense > 0 ? overDense : r.speedupVsDense;
  }
  return out;
}

QString summaryLine(const QVector<gpu::BenchRow>& rows, const gpu::BenchResult& meta) {
  if (rows.isEmpty()) return {};
  const int batch = barBatch(rows);
  const QString baseline = baselineName(rows);
  const gpu::Baseline main = mainBaseline(rows);
  const bool overLibrary = main == gpu::Baseline::Cublas;
  const gpu::BaselineTimes base = baselines(rows);
  struct Acc {
    std::vector<double> base, ownDense, csl, hbm, chained;  // chained: over the baseline, chained times
  };
  std::map<int, std::pair<std::string, Acc>> byPattern;
  std::vector<std::string> shapes;
  const auto push = [](std::vector<double>& v, double x) {
    if (x > 0) v.push_back(x);
  };
  for (const auto& r : rows) {
    if (r.batch != batch || gpu::isLayerSequence(r) || !isSparse(r)) continue;
    auto& [name, acc] = byPattern[patternRank(r.pattern)];
    name = r.pattern;
    const double overMain = base.speedup(r, main);
    push(acc.base, overMain > 0 ? overMain : base.speedup(r, gpu::Baseline::OwnDense));
    if (overLibrary) push(acc.ownDense, base.speedup(r, gpu::Baseline::OwnDense));
    push(acc.csl, base.speedup(r, gpu::Baseline::Cusparselt));
    if (r.fractionHbm > 0) acc.hbm.push_back(100.0 * r.fractionHbm);
    push(acc.chained, base.speedup(r, main, /*chained=*/true));
    if (std::find(shapes.begin(), shapes.end(), key(r)) == shapes.end()) shapes.push_back(key(r));
  }
  if (byPattern.empty()) return QObject::tr("No sparse kernel measured yet at batch %1.").arg(batch);
  QStringList parts, own, csl, hbm, chained;
  for (const auto& [rank, entry] : byPattern) {
    const auto& [name, acc] = entry;
    const QString p = QString::fromStdString(name);
    parts << QStringLiteral("%1 %2x").arg(p).arg(median(acc.base), 0, 'f', 2);
    if (!acc.ownDense.empty()) own << QStringLiteral("%1 %2x").arg(p).arg(median(acc.ownDense), 0, 'f', 2);
    if (!acc.csl.empty()) csl << QStringLiteral("%1 %2x").arg(p).arg(median(acc.csl), 0, 'f', 2);
    if (!acc.hbm.empty()) hbm << QStringLiteral("%1 %2%").arg(p).arg(median(acc.hbm), 0, 'f', 0);
    if (!acc.chained.empty()) chained << QStringLiteral("%1 %2x").arg(p).arg(median(acc.chained), 0, 'f', 2);
  }
  QString line = QObject::tr("Batch %1 medians over %2 shape(s) — speedup over %3: %4")
                     .arg(batch)
                     .arg(shapes.size())
                     .arg(baseline, parts.join(QStringLiteral(" · ")));
  if (!own.isEmpty()) line += QObject::tr("; over our dense GEMV: %1").arg(own.join(QStringLiteral(" · ")));
  if (!csl.isEmpty()) line += QObject::tr("; over cuSPARSELt 2:4: %1").arg(csl.join(QStringLiteral(" · ")));
  if (!hbm.isEmpty()) {
    const QString of = meta.hbmReadGBs > 0 ? QObject::tr(" of %1 GB/s").arg(meta.hbmReadGBs, 0, 'f', 0) : QString();
    line += QObject::tr("; sparse reads at %1%2").arg(hbm.join(QStringLiteral(" · ")), of);
  }
  if (!chained.isEmpty())
    line += QObject::tr("; launched chained (programmatic dependent launch), over %1: %2")
                .arg(baseline, chained.join(QStringLiteral(" · ")));
  line += QObject::tr(". Bandwidth limit 1.78x (2 / 1.125 bytes per weight).");
  return line;
}

}  // namespace bench

namespace {

QString deviceLine() {
  const gpu::DeviceInfo& d = gpu::deviceInfo();
  if (d.cudaAvailable) return QObject::tr("GPU: %1").arg(QString::fromStdString(gpu::describeDevice(d)));
  return QObject::tr("no GPU: benchmarking the CPU kernels (%1)").arg(QString::fromStdString(d.reason));
}

LoadedBench readResults(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) throw std::runtime_error(path.toStdString() + ": " + f.errorString().toStdString());
  const QByteArray bytes = f.readAll();
  LoadedBench out;
  try {
    out.result = gpu::fromJson(bytes.toStdString());
  } catch (const std::exception& e) {
    throw std::runtime_error(QFileInfo(path).fileName().toStdString() + ": " + e.what());
  }
  // The settings block is informational; keep it so an export writes it back.
  const QJsonObject j = QJsonDocument::fromJson(bytes).object();
  const QJsonObject s = j.value(QStringLiteral("settings")).toObject();
  out.command = j.value(QStringLiteral("command")).toString();
  out.settings.dtype = s.value(QStringLiteral("dtype")).toString(QStringLiteral("bf16")).toStdString();
  out.settings.repeats = s.value(QStringLiteral("repeats")).toInt(out.settings.repeats);
  if (s.contains(QStringLiteral("patterns"))) {
    out.settings.patterns.clear();
    for (const auto& p : s.value(QStringLiteral("patterns")).toArray())
      out.settings.patterns.push_back(p.toString().toStdString());
  }
  if (s.contains(QStringLiteral("batches"))) {
    out.settings.batches.clear();
    for (const auto& b : s.value(QStringLiteral("batches")).toArray()) out.settings.batches.push_back(b.toInt());
  }
  for (const auto& p : s.value(QStringLiteral("activation_sparsities")).toArray())
    out.settings.activationSparsities.push_back(p.toDouble());
  for (const auto& l : s.value(QStringLiteral("spmspv_layouts")).toArray())
    out.settings.spmspvLayouts.push_back(l.toString().toStdString());
  return out;
}

QVector<widgets::BenchMeasurement> pointsFor(const QVector<gpu::BenchRow>& rows, int firstIndex) {
  QVector<widgets::BenchMeasurement> points;
  points.reserve(rows.size());
  for (int i = 0; i < rows.size(); ++i)
    points.push_back({firstIndex + i, bench::seriesName(rows[i]), rows[i].us, rows[i].gbs});
  return points;
}

}  // namespace

BenchmarkController::BenchmarkController(JobManager* jobs, QObject* parent) : QObject(parent), jobs_(jobs) {
  qRegisterMetaType<sdw::gpu::BenchResult>();
  qRegisterMetaType<sdw::app::LoadedBench>();
}

void BenchmarkController::attach(widgets::BenchmarkPanel* panel) {
  panel->setDevice(gpu::deviceInfo().cudaAvailable, deviceLine());
  QVector<widgets::ShapeGroup> groups;
  for (const std::string& m : gpu::knownModels()) {
    widgets::ShapeGroup g{QString::fromStdString(m), bench::modelTitle(m), {}};
    for (const auto& s : gpu::modelShapes(m)) g.shapes.push_back(s);
    groups.push_back(g);
  }
  panel->setShapeCatalog(groups);
  connect(panel, &widgets::BenchmarkPanel::startRequested, this, [this](const widgets::BenchRequest& r) { start(r); });
  connect(panel, &widgets::BenchmarkPanel::cancelRequested, this, &BenchmarkController::cancel);
  connect(panel, &widgets::BenchmarkPanel::openResultsRequested, this,
          [this](const QString& path) { openResults(path); });
  connect(panel, &widgets::BenchmarkPanel::exportRequested, this, [this, panel](const QString& path) {
    const QString err = exportTable(path);
    if (err.isEmpty()) Q_EMIT info(tr("exported %1 benchmark rows to %2").arg(rows_.size()).arg(path));
    else Q_EMIT error(err);
    panel->showMessage(err.isEmpty() ? tr("Exported %1").arg(path) : err, !err.isEmpty());
  });
  connect(this, &BenchmarkController::runStarted, panel, &widgets::BenchmarkPanel::beginRun);
  connect(this, &BenchmarkController::measured, panel, &widgets::BenchmarkPanel::addMeasurements);
  connect(this, &BenchmarkController::speedupsChanged, panel, &widgets::BenchmarkPanel::setSpeedups);
  connect(this, &BenchmarkController::barsChanged, panel, &widgets::BenchmarkPanel::setSpeedupBars);
  connect(this, &BenchmarkController::activationChanged, panel, &widgets::BenchmarkPanel::setActivationSpeedups);
  connect(this, &BenchmarkController::summaryChanged, panel, &widgets::BenchmarkPanel::setSummary);
  connect(this, &BenchmarkController::progressed, panel, &widgets::BenchmarkPanel::setProgress);
  connect(this, &BenchmarkController::runEnded, panel, &widgets::BenchmarkPanel::endRun);
  connect(this, &BenchmarkController::resultLoaded, panel, &widgets::BenchmarkPanel::showResult);
}

JobId BenchmarkController::start(const widgets::BenchRequest& request) {
  if (!jobs_) return 0;
  if (run_.busy()) {
    Q_EMIT error(tr("a benchmark is already running"));
    return 0;
  }
  gpu::BenchSettings s = request.settings;
  QString problem;
  try {
    if (!request.customShapes.isEmpty())
      for (auto& sh : gpu::parseShapes(request.customShapes.toStdString())) s.shapes.push_back(sh);
  } catch (const std::exception& e) {
    problem = tr("custom shapes: %1").arg(QString::fromUtf8(e.what()));
  }
  try {
    // The same list and parser as sdw-cli bench kernels --activation-sparsity.
    if (!request.activationSparsities.isEmpty())
      s.activationSparsities = gpu::parseActivationSparsities(request.activationSparsities.toStdString());
  } catch (const std::exception& e) {
    if (problem.isEmpty()) problem = tr("activation sparsity: %1").arg(QString::fromUtf8(e.what()));
  }
  if (problem.isEmpty() && !s.activationSparsities.empty()) {
    if (request.spmspvLayouts.isEmpty()) {
      problem = tr("choose at least one spMspV layout, or clear the activation sparsity");
    } else {
      try {  // the same names as sdw-cli bench kernels --spmspv-layouts
        s.spmspvLayouts = gpu::parseSpmspvLayouts(request.spmspvLayouts.join(QLatin1Char(',')).toStdString());
      } catch (const std::exception& e) {
        problem = tr("spMspV layouts: %1").arg(QString::fromUtf8(e.what()));
      }
    }
  }
  if (problem.isEmpty() && s.shapes.empty()) problem = tr("choose at least one shape");
  else if (problem.isEmpty() && s.patterns.empty()) problem = tr("choose at least one pattern");
  else if (problem.isEmpty() && s.batches.empty()) problem = tr("choose at least one batch size");
  if (!problem.isEmpty()) {
    Q_EMIT runEnded(tr("Cannot start: %1").arg(problem), true);
    Q_EMIT error(tr("benchmark: %1").arg(problem));
    return 0;
  }

  // The shipped tuning table of this GPU, as `sdw-cli bench kernels` uses by
  // default: without it the kernels run on heuristics, well below their speed.
  if (s.tuningIn.empty())
    s.tuningIn = gpu::defaultTuningPath(std::filesystem::path(SDW_SOURCE_DIR) / "resources", gpu::deviceInfo().name);

  settings_ = s;
  rows_.clear();
  meta_ = {};
  const bool gpu = !s.forceCpu && gpu::deviceInfo().cudaAvailable;
  meta_.backend = gpu ? "cuda" : "cpu";
  meta_.device = gpu ? gpu::deviceInfo().name : "CPU";
  const JobId id = jobs_->start(Job<gpu::BenchResult, gpu::BenchRow>{
      .name = tr("Benchmark kernels"),
      .slot = &run_,
      .context = this,
      .work =
          [s](const sdw::ProgressFn& p, const JobChannel<gpu::BenchRow>& rows) {
            return gpu::runKernelBench(s, p, [&rows](const gpu::BenchRow& row) { rows.send(row); });
          },
      .progress =
          [this](const JobUpdate& u) {
            const QString text = u.total > 0 ? tr("%1 (%2/%3 kernels)").arg(u.stage).arg(u.done).arg(u.total) : u.stage;
            Q_EMIT progressed(u.fraction, text);
          },
      .data =
          [this](const std::vector<gpu::BenchRow>& rows) {
            addRows(rows);
            publishDerived();
          },
      .dataIntervalMs = drainMs_,
      .finished =
          [this](const gpu::BenchResult& r) {
            meta_ = r;
            meta_.rows.clear();
            // Normally every row came through the channel; keep any that did not.
            if (r.rows.size() > static_cast<std::size_t>(rows_.size()))
              addRows(std::vector<gpu::BenchRow>(r.rows.begin() + rows_.size(), r.rows.end()));
            publishDerived();
            const QString msg = tr("Done: %1 measurements on %2; read bandwidth %3 GB/s.")
                                    .arg(rows_.size())
                                    .arg(QString::fromStdString(r.device))
                                    .arg(r.hbmReadGBs, 0, 'f', 0);
            // Progress reports are throttled: the last one may be well short of the end.
            Q_EMIT progressed(1.0, msg);
            Q_EMIT runEnded(msg, false);
            Q_EMIT info(tr("benchmark: %1").arg(msg));
            for (const auto& n : r.notes) Q_EMIT info(tr("benchmark note: %1").arg(QString::fromStdString(n)));
          },
      .failed =
          [this](const QString& message) {
            const QString m = tr("Benchmark failed: %1").arg(message);
            Q_EMIT runEnded(m, true);
            Q_EMIT error(m);
          },
      .cancelled =
          [this] {
            const QString m = tr("Cancelled after %1 measurements.").arg(rows_.size());
            Q_EMIT runEnded(m, false);
            Q_EMIT info(tr("benchmark: %1").arg(m));
          },
  });
  const QString title = tr("Benchmarking %1 shape(s) × %2 batch size(s) on %3…")
                            .arg(s.shapes.size())
                            .arg(s.batches.size())
                            .arg(gpu ? tr("the GPU") : tr("the CPU kernels"));
  Q_EMIT runStarted(title);
  Q_EMIT info(title);
  return id;
}

void BenchmarkController::cancel() {
  if (jobs_) jobs_->cancel(run_.id());
}

JobId BenchmarkController::openResults(const QString& path) {
  if (!jobs_) return 0;
  if (run_.busy()) {
    Q_EMIT error(tr("a benchmark is running: cancel it before opening results"));
    return 0;
  }
  return jobs_->start(Job<LoadedBench>{
      .name = tr("Open %1").arg(QFileInfo(path).fileName()),
      .slot = &open_,
      .context = this,
      .work = [path](const sdw::ProgressFn&) { return readResults(path); },
      .finished =
          [this, path](const LoadedBench& loaded) {
            settings_ = loaded.settings;
            meta_ = loaded.result;
            meta_.rows.clear();
            rows_ = QVector<gpu::BenchRow>(loaded.result.rows.begin(), loaded.result.rows.end());
            const QString title = tr("%1: %2 rows from %3 (%4)")
                                      .arg(QFileInfo(path).fileName())
                                      .arg(rows_.size())
                                      .arg(QString::fromStdString(meta_.device.empty() ? meta_.backend : meta_.device),
                                           loaded.command.isEmpty() ? tr("no command recorded") : loaded.command);
            Q_EMIT resultLoaded(title, bench::benchRowData(rows_), pointsFor(rows_, 0));
            publishDerived();
            Q_EMIT info(tr("opened benchmark results %1 (%2 rows)").arg(path).arg(rows_.size()));
          },
      .failed =
          [this](const QString& message) {
            const QString m = tr("Cannot open benchmark results: %1").arg(message);
            Q_EMIT runEnded(m, true);
            Q_EMIT error(m);
          },
  });
}

QString BenchmarkController::exportTable(const QString& path) const {
  QByteArray bytes;
  const QString lower = path.toLower();
  if (lower.endsWith(QLatin1String(".csv"))) {
    widgets::BenchResultsModel table;
    table.appendRows(bench::benchRowData(rows_));
    table.setSpeedups(bench::speedups(rows_));
    bytes = table.toCsv().toUtf8();
  } else if (lower.endsWith(QLatin1String(".json"))) {
    gpu::BenchResult r = meta_;
    r.rows.assign(rows_.begin(), rows_.end());
    gpu::summarise(r, settings_.dtype);
    bytes = QByteArray::fromStdString(gpu::toJson(r, "sdw (Benchmark panel)", settings_) + "\n");
  } else {
    return tr("unknown export format for %1 (use .csv or .json)").arg(path);
  }
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size() || !f.commit())
    return tr("could not write %1: %2").arg(path, f.errorString());
  return {};
}

void BenchmarkController::addRows(const std::vector<gpu::BenchRow>& batch) {
  const QVector<gpu::BenchRow> rows(batch.begin(), batch.end());
  const QVector<widgets::BenchMeasurement> points = pointsFor(rows, static_cast<int>(rows_.size()));
  rows_ += rows;
  Q_EMIT measured(bench::benchRowData(rows), points);
}

void BenchmarkController::publishDerived() {
  Q_EMIT speedupsChanged(bench::speedups(rows_), bench::baselineName(rows_));
  Q_EMIT barsChanged(bench::speedupBars(rows_));
  Q_EMIT activationChanged(bench::activationSpeedups(rows_));
  Q_EMIT summaryChanged(bench::summaryLine(rows_, meta_));
}

}  // namespace sdw::app
