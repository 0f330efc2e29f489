#include "app/gui/activationscontroller.h"

#include "app/gui/workspace.h"
#include "core/runstore.h"
#include "widgets/activationspage.h"
#include "widgets/analysispanel.h"

#include <QFileInfo>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace sdw::app {

namespace {

namespace rs = sdw::runstore;

constexpr const char* kSamples = "/calibration/samples";
constexpr const char* kInputs = "/calibration/inputs";

// Order of the projection inputs within a layer: q/k/v, o, gate/up, down.
int typeRank(const QString& name) {
  static const QStringList order = {QStringLiteral("q_proj"), QStringLiteral("o_proj"), QStringLiteral("gate_proj"),
                                    QStringLiteral("down_proj")};
  const int i = static_cast<int>(order.indexOf(widgets::shortModuleName(name)));
  return i < 0 ? static_cast<int>(order.size()) : i;
}

std::string inputGroup(const QString& name) { return std::string(kInputs) + "/" + name.toStdString(); }

widgets::ActivationInputInfo readInputInfo(const rs::RunReader& r, const std::string& name) {
  const std::string g = std::string(kInputs) + "/" + name;
  widgets::ActivationInputInfo in;
  in.name = qs(name);
  if (r.hasAttribute(g, "modules"))
    for (const QString& m : qs(r.readStringAttribute(g, "modules")).split(QLatin1Char(','), Qt::SkipEmptyParts))
      in.modules << widgets::shortModuleName(m.trimmed());
  if (in.modules.isEmpty()) in.modules << widgets::shortModuleName(in.name);
  in.layer = r.hasAttribute(g, "layer") ? static_cast<int>(r.readIntAttribute(g, "layer")) : 0;
  const std::vector<hsize_t> shape = r.shape(g + "/sample_rows");
  in.dIn = r.hasAttribute(g, "d_in") ? static_cast<int>(r.readIntAttribute(g, "d_in"))
                                     : (shape.size() == 2 ? static_cast<int>(shape[1]) : 0);
  return in;
}

}  // namespace

widgets::ActivationCatalog findActivationRuns(const QString& dir) {
  widgets::ActivationCatalog out;
  out.dir = dir;
  if (!QFileInfo(dir).isDir()) return out;
  for (const rs::WorkspaceEntry& e : rs::listWorkspace(toPath(dir))) {
    if (!e.summary || e.summary->kind != "calibration") continue;
    const QString path = fromPath(e.path);
    const QString file = QFileInfo(path).fileName();
    try {
      if (e.partial || !e.summary->complete()) {
        out.withoutSamples << file;  // samples are taken when a run completes
        continue;
      }
      const rs::RunReader r = rs::RunReader::open(e.path);
      const std::int64_t rows =
          r.exists(kSamples) && r.hasAttribute(kSamples, "rows") ? r.readIntAttribute(kSamples, "rows") : 0;
      if (rows <= 0) {
        out.withoutSamples << file;
        continue;
      }
      widgets::ActivationRunInfo run;
      run.path = path;
      run.source =
          r.hasAttribute("/calibration", "source") ? qs(r.readStringAttribute("/calibration", "source")) : QString();
      run.rows = static_cast<int>(rows);
      run.rowsCounted = r.hasAttribute(kSamples, "rows_counted") ? r.readIntAttribute(kSamples, "rows_counted") : 0;
      QVector<widgets::ActivationInputInfo> inputs;
      for (const std::string& name : r.listGroup(kInputs))
        if (r.exists(std::string(kInputs) + "/" + name + "/sample_rows")) inputs << readInputInfo(r, name);
      if (inputs.isEmpty()) {
        out.withoutSamples << file;
        continue;
      }
      for (const widgets::ActivationInputInfo& in : inputs)
        if (out.inputIndex(in.name) < 0) out.inputs << in;
      out.runs << run;
    } catch (const std::exception&) {
      // unreadable runs are the browser's business; they are simply not offered
    }
  }
  std::stable_sort(out.inputs.begin(), out.inputs.end(),
                   [](const widgets::ActivationInputInfo& a, const widgets::ActivationInputInfo& b) {
                     if (a.layer != b.layer) return a.layer < b.layer;
                     const int ra = typeRank(a.name), rb = typeRank(b.name);
                     return ra != rb ? ra < rb : a.name < b.name;
                   });
  return out;
}

widgets::ActivationInputData readActivationInput(const QVector<widgets::ActivationRunInfo>& runs, const QString& input,
                                                 const sdw::ProgressFn& progress) {
  widgets::ActivationInputData out;
  const std::string group = inputGroup(input);
  for (qsizetype k = 0; k < runs.size(); ++k) {
    if (progress && !progress(sdw::Progress(double(k), double(runs.size()), "runs"))) throw sdw::Cancelled();
    const widgets::ActivationRunInfo& run = runs[k];
    const QString file = QFileInfo(run.path).fileName();
    try {
      const rs::RunReader r = rs::RunReader::open(toPath(run.path));
      if (!r.exists(group + "/sample_rows")) continue;
      if (out.input.name.isEmpty()) out.input = readInputInfo(r, input.toStdString());
      const rs::Array<float> x = r.readFloat32(group + "/sample_rows");
      if (x.shape.size() != 2) throw std::runtime_error("sample_rows is not a matrix");
      const auto n = static_cast<qsizetype>(x.shape[0]);
      const auto d = static_cast<qsizetype>(x.shape[1]);
      const rs::Array<std::int32_t> steps = r.readInt32(std::string(kSamples) + "/decode_step");
      if (static_cast<qsizetype>(steps.data.size()) != n)
        throw std::runtime_error("decode_step has " + std::to_string(steps.data.size()) + " rows, sample_rows " +
                                 std::to_string(n));
      widgets::ActivationSeries s;
      s.run = run;
      s.rows = static_cast<int>(n);
      s.dIn = static_cast<int>(d);
      s.values = QVector<float>(x.data.begin(), x.data.end());
      s.decodeStep = QVector<int>(steps.data.begin(), steps.data.end());
      QVector<double> sumAbs(d, 0.0);
      s.rowNorm = QVector<double>(n, 0.0);
      double maxAbs = 0;
      for (qsizetype i = 0; i < n; ++i) {
        const float* row = x.data.data() + i * d;
        double sq = 0;
        for (qsizetype c = 0; c < d; ++c) {
          const double v = row[c];
          if (!std::isfinite(v)) continue;
          sumAbs[c] += std::abs(v);
          sq += v * v;
          maxAbs = std::max(maxAbs, std::abs(v));
        }
        s.rowNorm[i] = std::sqrt(sq);
      }
      s.channelMeanAbs = QVector<double>(d, 0.0);
      for (qsizetype c = 0; c < d && n > 0; ++c) s.channelMeanAbs[c] = sumAbs[c] / double(n);
      s.maxAbs = maxAbs;
      out.series << s;
    } catch (const sdw::Cancelled&) {
      throw;
    } catch (const std::exception& ex) {
      throw std::runtime_error(file.toStdString() + ": " + ex.what());
    }
  }
  if (out.input.name.isEmpty()) out.input.name = input;
  return out;
}

ActivationsController::ActivationsController(JobManager* jobs, QObject* parent) : QObject(parent), jobs_(jobs) {
  qRegisterMetaType<sdw::widgets::ActivationCatalog>("sdw::widgets::ActivationCatalog");
  qRegisterMetaType<sdw::widgets::ActivationInputData>("sdw::widgets::ActivationInputData");
}

void ActivationsController::attach(widgets::AnalysisPanel* panel) {
  widgets::ActivationsPage* page = panel->activationsPage();
  page_ = page;
  connect(page, &widgets::ActivationsPage::inputRequested, this, [this](const QString& input) { load(input); });
  connect(this, &ActivationsController::catalogFound, page, &widgets::ActivationsPage::setCatalog);
  connect(this, &ActivationsController::loadStarted, page, &widgets::ActivationsPage::beginLoad);
  connect(this, &ActivationsController::inputReady, page, &widgets::ActivationsPage::setInputData);
  connect(this, &ActivationsController::loadEnded, page, &widgets::ActivationsPage::endLoad);
}

JobId ActivationsController::setWorkspace(const QString& dir) {
  if (!jobs_) return 0;
  workspace_ = dir;
  if (page_) page_->setWorkspace(dir);
  return jobs_->start(Job<widgets::ActivationCatalog>{
      .name = tr("Find activation samples"),
      .slot = &scan_,
      .context = this,
      .work = [dir](const sdw::ProgressFn&) { return findActivationRuns(dir); },
      .finished =
          [this](const widgets::ActivationCatalog& c) {
            if (c.dir != workspace_) return;
            catalog_ = c;
            Q_EMIT catalogFound(c);
            if (c.isEmpty()) {
              Q_EMIT loadEnded(QString(), false);
              return;
            }
            QString input = page_ ? page_->currentInput() : QString();
            if (c.inputIndex(input) < 0) input = c.inputs.front().name;
            load(input);
          },
      .failed = [this](const QString& m) { Q_EMIT error(tr("cannot list activation samples: %1").arg(m)); },
  });
}

JobId ActivationsController::load(const QString& input) {
  if (!jobs_ || input.isEmpty() || catalog_.runs.isEmpty()) return 0;
  const QVector<widgets::ActivationRunInfo> runs = catalog_.runs;
  const JobId id = jobs_->start(Job<widgets::ActivationInputData>{
      .name = tr("Read activation samples"),
      .slot = &load_,
      .context = this,
      .work = [runs, input](const sdw::ProgressFn& p) { return readActivationInput(runs, input, p); },
      .finished =
          [this](const widgets::ActivationInputData& d) {
            Q_EMIT inputReady(d);
            Q_EMIT loadEnded(QString(), false);
          },
      .failed =
          [this](const QString& m) {
            const QString msg = tr("Cannot read the activation samples: %1").arg(m);
            Q_EMIT loadEnded(msg, true);
            Q_EMIT error(msg);
          },
      .cancelled = [this] { Q_EMIT loadEnded(QString(), false); },
  });
  const int i = catalog_.inputIndex(input);
  Q_EMIT loadStarted(tr("Reading the samples of %1…").arg(i >= 0 ? catalog_.inputs[i].label() : input));
  return id;
}

}  // namespace sdw::app
