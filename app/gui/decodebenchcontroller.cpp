#include "app/gui/decodebenchcontroller.h"

#include "app/gui/benchmarkcontroller.h"  // bench::modelTitle: one catalog of model names
#include "core/json_limits.h"
#include "gpu/bench.h"
#include "gpu/bench_decode.h"
#include "gpu/bench_decode_report.h"
#include "gpu/device.h"
#include "gpu/spmv.h"
#include "widgets/decoderesultsmodel.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace sdw::app {

// What the run job sends while it runs: a timed step of the cell under way,
// or (rows not empty) the rows of a cell that finished.
struct DecodeEvent {
  QString cell;
  QString linear, pattern;
  int batch = 0;
  double ms = 0;
  std::vector<nlohmann::json> rows;
  std::string device;
};

struct DecodeRunOutcome {
  std::string device;
  double readGBs = 0;
  int cells = 0;
  std::vector<std::string> failures;  // "cell: why" of each cell that failed (the run went on)
};

}  // namespace sdw::app

Q_DECLARE_METATYPE(sdw::app::DecodeRunOutcome)
Q_DECLARE_METATYPE(sdw::app::decode::Results)

namespace sdw::app {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

// A field of a row or of a file's top level: what a file holds is checked
// where it is read, so a missing or mistyped field reads as the fallback.
double number(const nlohmann::json& object, const char* key, double fallback = 0) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->get<double>() : fallback;
}

QString text(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? qs(it->get<std::string>()) : QString();
}

}  // namespace

namespace decode {

namespace {

namespace fs = std::filesystem;

const fs::path kConfigsDir = fs::path(SDW_SOURCE_DIR) / "resources" / "configs";

QString groupLabel(const std::string& config, int batch) {
  return QObject::tr("%1\nbatch %2").arg(qs(config)).arg(batch);
}

QString linearTitle(const std::string& linear) {
  if (linear == "dense") return QObject::tr("our dense engine");
  if (linear == "cublas") return QObject::tr("cuBLAS");
  return qs(linear);
}

// The patterns (keys) of a summary's "sparse" object in the usual order of
// the patterns, whatever order the JSON object keeps them in ("16:32" sorts
// before "2:4" as text).
std::vector<std::string> sortedPatterns(const nlohmann::json& sparse) {
  static const char* const kOrder[] = {"2:4", "4:8", "8:16", "16:32", "col2:4", "col4:8"};
  const auto rank = [](const std::string& p) {
    for (int i = 0; i < 6; ++i)
      if (p == kOrder[i]) return i;
    return 6;
  };
  std::vector<std::string> out;
  for (const auto& [p, e] : sparse.items()) out.push_back(p);
  std::stable_sort(out.begin(), out.end(),
                   [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
  return out;
}

// A catalog entry's one-line description, from its config.
QString configDetail(const gpu::ModelConfig& c) {
  return QObject::tr("%1, %2 layers, hidden %3, %4B parameters")
      .arg(qs(c.architectureName))
      .arg(c.numLayers)
      .arg(c.hiddenSize)
      .arg(static_cast<double>(c.parameterCount()) / 1e9, 0, 'f', c.parameterCount() < 1'000'000'000 ? 3 : 2);
}

}  // namespace

gpu::ModelConfig resolveConfig(const std::string& name, std::string& reportName) {
  // The CLI's rules, so a grid run here and `sdw-cli bench decode` name their rows alike.
  return gpu::resolveShapeConfig(name, kConfigsDir, reportName);
}

QVector<widgets::DecodeConfigChoice> configCatalog() {
  QVector<widgets::DecodeConfigChoice> out;
  std::vector<std::string> covered;  // names and report names already offered
  const auto add = [&](const std::string& name, const QString& title) {
    try {
      std::string reportName;
      const gpu::ModelConfig c = resolveConfig(name, reportName);
      out.push_back({qs(name), title, configDetail(c)});
      covered.push_back(name);
      covered.push_back(reportName);
    } catch (const std::exception&) {
      // A kernel-page model without a decode config is not offered here.
    }
  };
  for (const std::string& m : gpu::knownModels()) add(m, bench::modelTitle(m));
  std::vector<std::string> shipped;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(kConfigsDir, ec))
    if (e.path().extension() == ".json") shipped.push_back(e.path().stem().string());
  std::sort(shipped.begin(), shipped.end());
  for (const std::string& name : shipped)
    if (std::find(covered.begin(), covered.end(), name) == covered.end()) add(name, qs(name));
  return out;
}

QString cellName(const QString& config, const QString& linear, const QString& pattern, int batch) {
  const QString engine = pattern.isEmpty() ? linear : QStringLiteral("%1 %2").arg(linear, pattern);
  return QStringLiteral("%1 · %2 · batch %3").arg(config, engine).arg(batch);
}

widgets::DecodeRowData rowData(const nlohmann::json& r) {
  widgets::DecodeRowData d;
  d.config = text(r, "config");
  d.architecture = text(r, "architecture");
  d.linear = text(r, "linear");
  d.pattern = text(r, "pattern");
  d.engine = text(r, "engine");
  d.dtype = text(r, "dtype");
  d.batch = static_cast<int>(number(r, "batch", 1));
  d.context = static_cast<int>(number(r, "context"));
  d.warmup = static_cast<int>(number(r, "warmup_steps"));
  d.timedSteps = static_cast<int>(number(r, "timed_steps"));
  d.parameters = static_cast<qint64>(number(r, "parameters"));
  d.medianMs = number(r, "median_ms");
  d.p10Ms = number(r, "p10_ms");
  d.p90Ms = number(r, "p90_ms");
  d.tokensPerSecond = number(r, "tokens_per_second");
  d.gbs = number(r, "gb_per_s", number(r, "achieved_gb_per_s"));
  d.limitTokensPerSecond = number(r, "limit_tokens_per_second", number(r, "bandwidth_limit_tokens_per_second"));
  d.ratioToLimit = number(r, "ratio_to_bandwidth_limit");
  d.bytesPerStep = number(r, "bytes_per_step");
  d.memoryBytes = number(r, "gpu_memory_bytes");
  d.packedProjections = static_cast<int>(number(r, "packed_projections"));
  d.engineLaunches = static_cast<int>(number(r, "engine_launches", -1));
  d.stepEntryLaunches = static_cast<int>(number(r, "step_entry_launches", -1));
  if (const auto it = r.find("step_ms"); it != r.end() && it->is_array())
    for (const auto& v : *it)
      if (v.is_number()) d.stepMs.push_back(v.get<double>());
  return d;
}

QVector<widgets::DecodeRowData> rowData(const std::vector<nlohmann::json>& rows) {
  QVector<widgets::DecodeRowData> out;
  out.reserve(static_cast<qsizetype>(rows.size()));
  for (const auto& r : rows) out.push_back(rowData(r));
  return out;
}

QVector<widgets::DecodeStepPoint> stepPoints(const std::vector<nlohmann::json>& rows, int firstIndex) {
  QVector<widgets::DecodeStepPoint> out;
  int index = firstIndex;
  for (const auto& r : rows) {
    const widgets::DecodeRowData d = rowData(r);
    const QString cell = cellName(d.config, d.linear, d.pattern, d.batch);
    for (double ms : d.stepMs)
      out.push_back({cell, d.linear, d.pattern, d.batch, index++, ms, ms > 0 ? d.batch * 1000.0 / ms : 0.0});
  }
  return out;
}

widgets::DecodeSpeedupBars speedupBars(const nlohmann::json& summary, widgets::DecodeBaseline baseline) {
  const bool best = baseline == widgets::DecodeBaseline::BestDense;
  widgets::DecodeSpeedupBars bars;
  if (!summary.is_array()) return bars;
  nlohmann::json all = nlohmann::json::object();
  for (const auto& s : summary)
    if (const auto sp = s.find("sparse"); sp != s.end() && sp->is_object())
      for (const auto& [p, e] : sp->items()) all[p] = true;
  const std::vector<std::string> patterns = sortedPatterns(all);
  for (const auto& p : patterns) bars.patterns << qs(p);
  bars.speedups = QVector<QVector<double>>(bars.patterns.size());
  for (const auto& s : summary) {
    const auto sp = s.find("sparse");
    if (sp == s.end() || !sp->is_object()) continue;
    const std::string config = s.value("config", std::string());
    const int batch = s.value("batch", 1);
    bool overOwn = false;
    double limit = 0;
    std::vector<double> values(patterns.size(), 0.0);
    for (std::size_t i = 0; i < patterns.size(); ++i) {
      const auto e = sp->find(patterns[i]);
      if (e == sp->end()) continue;
      // Over our dense engine when it ran (and asked for); else over the best dense engine that did.
      if (const double v = best ? 0.0 : number(*e, "speedup_over_dense_engine"); v > 0) {
        values[i] = v;
        overOwn = true;
      } else {
        values[i] = number(*e, "speedup_over_best_dense");
      }
      limit = std::max(limit, number(*e, "speedup_limit"));
    }
    if (std::none_of(values.begin(), values.end(), [](double v) { return v > 0; })) continue;  // no dense run
    bars.groups << groupLabel(config, batch);
    for (std::size_t i = 0; i < patterns.size(); ++i) bars.speedups[static_cast<qsizetype>(i)] << values[i];
    bars.limits << limit;
    bars.baselines
        << (overOwn
                ? QObject::tr("our dense engine")
                : QObject::tr("%1 (the best dense run)").arg(linearTitle(s.value("best_dense_linear", std::string()))));
  }
  return bars;
}

// A grid of more than this many (configuration, batch) groups is summed up one line per
// configuration (the bars and the table hold the rest); up to it, every pattern of every group.
constexpr int kSummaryGroupsInFull = 4;

QString summaryLine(const nlohmann::json& summary, double readGBs, widgets::DecodeBaseline baseline) {
  if (!summary.is_array() || summary.empty()) return {};
  const bool best = baseline == widgets::DecodeBaseline::BestDense;
  struct Group {  // one (configuration, batch): its speed-ups by pattern over one baseline
    QString config, over;
    int batch = 1;
    QStringList parts;
    double lo = 0, hi = 0, limitLo = 0, limitHi = 0;
  };
  std::vector<Group> groups;
  QStringList patternNames;
  bool anySparse = false;
  for (const auto& s : summary) {
    const auto sp = s.find("sparse");
    if (sp == s.end() || !sp->is_object()) continue;
    anySparse = true;
    Group g;
    g.config = qs(s.value("config", std::string()));
    g.batch = s.value("batch", 1);
    for (const std::string& p : sortedPatterns(*sp)) {
      const nlohmann::json& e = (*sp)[p];
      double v = best ? 0.0 : number(e, "speedup_over_dense_engine");
      QString base = QObject::tr("our dense engine");
      if (v <= 0) {
        v = number(e, "speedup_over_best_dense");
        base = linearTitle(s.value("best_dense_linear", std::string()));
      }
      if (v <= 0) continue;
      g.over = base;
      if (!patternNames.contains(qs(p))) patternNames << qs(p);
      const double limit = number(e, "speedup_limit");
      g.parts << (limit > 0 ? QObject::tr("%1 %2x (limit %3x)").arg(qs(p)).arg(v, 0, 'f', 2).arg(limit, 0, 'f', 2)
                            : QObject::tr("%1 %2x").arg(qs(p)).arg(v, 0, 'f', 2));
      g.lo = g.parts.size() == 1 ? v : std::min(g.lo, v), g.hi = std::max(g.hi, v);
      if (limit > 0)
        g.limitLo = g.limitLo > 0 ? std::min(g.limitLo, limit) : limit, g.limitHi = std::max(g.limitHi, limit);
    }
    groups.push_back(g);
  }
  QString line =
      readGBs > 0 ? QObject::tr("Read bandwidth %1 GB/s. ").arg(readGBs, 0, 'f', readGBs < 100 ? 1 : 0) : QString();
  if (!anySparse)
    return line + QObject::tr("No sparse engine measured: speed-ups need the sparse engine and a dense one.");
  const auto range = [](double lo, double hi) {
    const QString a = QString::number(lo, 'f', 2), b = QString::number(hi, 'f', 2);
    return a == b ? b + QLatin1Char('x') : QStringLiteral("%1-%2x").arg(a, b);
  };

  QStringList out;
  if (static_cast<int>(groups.size()) <= kSummaryGroupsInFull) {
    for (const Group& g : groups) {
      const QString where = QObject::tr("%1 batch %2").arg(g.config).arg(g.batch);
      out << (g.parts.isEmpty()
                  ? QObject::tr("%1: no dense engine to compare with").arg(where)
                  : QObject::tr("%1, over %2: %3").arg(where, g.over, g.parts.join(QStringLiteral(" · "))));
    }
    return line + QObject::tr("Sparse speed-up (median step) — %1.").arg(out.join(QStringLiteral("; ")));
  }
  // One line per configuration: each batch's range over the patterns, and over which dense engine
  // where that is not the same for every batch.
  QStringList configs;
  for (const Group& g : groups)
    if (!configs.contains(g.config)) configs << g.config;
  for (const QString& c : configs) {
    QStringList batches, overs;
    double limitLo = 0, limitHi = 0;
    for (const Group& g : groups)
      if (g.config == c && !g.parts.isEmpty() && !overs.contains(g.over)) overs << g.over;
    for (const Group& g : groups) {
      if (g.config != c) continue;
      if (g.parts.isEmpty()) {
        batches << QObject::tr("batch %1 no dense engine").arg(g.batch);
        continue;
      }
      batches << QObject::tr("batch %1 %2").arg(g.batch).arg(range(g.lo, g.hi)) +
                     (overs.size() > 1 ? QObject::tr(" (over %1)").arg(g.over) : QString());
      if (g.limitHi > 0)
        limitLo = limitLo > 0 ? std::min(limitLo, g.limitLo) : g.limitLo, limitHi = std::max(limitHi, g.limitHi);
    }
    const QString over = overs.size() == 1 ? overs.front() : QObject::tr("the best dense run");
    out << QObject::tr("%1 over %2: %3").arg(c, over, batches.join(QStringLiteral(", "))) +
               (limitHi > 0 ? QObject::tr(" (limit %1)").arg(range(limitLo, limitHi)) : QString());
  }
  return line + QObject::tr("Sparse speed-up (median step, the range over %1) — %2.")
                    .arg(patternNames.join(QStringLiteral(", ")), out.join(QStringLiteral("; ")));
}

Results parseResults(const nlohmann::json& doc, const std::string& source) {
  if (!doc.is_object()) throw std::runtime_error(source + ": not a JSON object");
  Results out;
  std::vector<nlohmann::json> rows;
  const auto rowsIt = doc.find("rows");
  if (rowsIt != doc.end()) {
    if (!rowsIt->is_array()) throw std::runtime_error(source + ": \"rows\" is not a list");
    rows.assign(rowsIt->begin(), rowsIt->end());
    for (const auto& [k, v] : doc.items())
      if (k != "rows" && k != "summary") out.meta[k] = v;
  } else if (doc.contains("tokens_per_second")) {
    // One cell: the row's own fields at the top level. The run's fields go to meta.
    nlohmann::json row = doc;
    for (const char* k : {"benchmark", "device", "command", "machine", "date", "measured_copy_gb_per_s"}) {
      if (const auto it = doc.find(k); it != doc.end()) out.meta[k] = *it;
      row.erase(k);
    }
    for (const char* k : {"dtype", "context", "warmup_steps", "timed_steps", "measured_read_gb_per_s"})
      if (const auto it = doc.find(k); it != doc.end()) out.meta[k] = *it;
    rows.push_back(std::move(row));
  } else {
    throw std::runtime_error(source +
                             ": not a decode benchmark result (no \"rows\", no \"tokens_per_second\"; "
                             "expected the JSON of sdw-cli bench decode --json)");
  }
  out.meta["benchmark"] = "decode-e2e";
  if (rows.empty()) throw std::runtime_error(source + ": no rows");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    nlohmann::json& r = rows[i];
    const std::string where = source + ": row " + std::to_string(i + 1);
    if (!r.is_object()) throw std::runtime_error(where + " is not an object");
    const auto need = [&](const char* key, bool (nlohmann::json::*is)() const noexcept, const char* what) {
      const auto it = r.find(key);
      if (it == r.end() || !((*it).*is)())
        throw std::runtime_error(where + ": \"" + key + "\" missing or not " + what +
                                 " (is this the JSON of sdw-cli bench decode?)");
    };
    need("config", &nlohmann::json::is_string, "text");
    need("batch", &nlohmann::json::is_number_integer, "a whole number");
    need("tokens_per_second", &nlohmann::json::is_number, "a number");
    if (r["batch"].get<std::int64_t>() < 1) throw std::runtime_error(where + ": batch below 1");
    // Rows written before the engine could choose a linear ran the eager forward pass.
    if (!r.contains("linear") || r["linear"].is_null()) {
      const std::string method = text(r, "method").toStdString();
      r["linear"] = method.find("eager") != std::string::npos ? "eager" : "cublas";
    }
    if (!r.contains("pattern") || r["pattern"].is_null()) r["pattern"] = "";
    if (!r.contains("ratio_to_bandwidth_limit")) r["ratio_to_bandwidth_limit"] = 0.0;
    if (!r.contains("bytes_per_step")) r["bytes_per_step"] = 0;
    need("linear", &nlohmann::json::is_string, "text");
    need("pattern", &nlohmann::json::is_string, "text");
    need("ratio_to_bandwidth_limit", &nlohmann::json::is_number, "a number");
    need("bytes_per_step", &nlohmann::json::is_number, "a number");
    if (r["bytes_per_step"].get<double>() < 0) throw std::runtime_error(where + ": negative bytes_per_step");
  }
  out.rows = std::move(rows);
  return out;
}

nlohmann::json resultsJson(const Results& results) {
  nlohmann::json j = results.meta.is_object() ? results.meta : nlohmann::json::object();
  j["benchmark"] = "decode-e2e";
  j["rows"] = results.rows;
  j["summary"] = gpu::decodeSummaryJson(results.rows);
  return j;
}

}  // namespace decode

namespace {

QString deviceLine() {
  const gpu::DeviceInfo& d = gpu::deviceInfo();
  if (d.cudaAvailable) return QObject::tr("GPU: %1").arg(QString::fromStdString(gpu::describeDevice(d)));
  return QObject::tr("no GPU: decoding on the CPU (%1)").arg(QString::fromStdString(d.reason));
}

std::filesystem::path toPath(const QString& s) { return std::filesystem::path(QFile::encodeName(s).toStdString()); }

// One model the grid builds: a config (random weights) or a checkpoint.
struct Cell {
  std::string name;  // as reported
  gpu::ModelConfig config;
  std::filesystem::path checkpoint;
  std::string linear;   // cublas, dense, sparse, eager
  std::string pattern;  // sparse from a config: the pattern to prune to; else ""
};

// The equivalent command line, where there is one: shapes (--config) or a
// checkpoint (--model), not both (the CLI takes one or the other).
std::string commandLine(const widgets::DecodeBenchRequest& r) {
  const auto join = [](const QStringList& l) { return l.join(QLatin1Char(',')).toStdString(); };
  QStringList batches;
  for (int b : r.batches) batches << QString::number(b);
  std::string cmd = "sdw-cli bench decode " +
                    (r.checkpoint.isEmpty() ? "--config " + join(r.configs) : "--model " + r.checkpoint.toStdString()) +
                    " --linear " + join(r.linears);
  if (!r.patterns.isEmpty() && r.linears.contains(QLatin1String("sparse")) && r.checkpoint.isEmpty())
    cmd += " --patterns " + join(r.patterns);
  cmd += " --batch " + join(batches) + " --context " + std::to_string(r.context) + " --tokens " +
         std::to_string(r.tokens) + " --warmup " + std::to_string(r.warmup) + " --device " + r.device.toStdString() +
         " --dtype " + r.dtype.toStdString();
  if (r.activationSparsity > 0)
    cmd += " --activation-sparsity " + QString::number(r.activationSparsity, 'g', 4).toStdString();
  if (r.activationSparsity > 0 && r.activationThresholds) cmd += " --activation-selection thresholds";
  cmd += " --json";
  return cmd;
}

}  // namespace

DecodeBenchController::DecodeBenchController(JobManager* jobs, QObject* parent) : QObject(parent), jobs_(jobs) {
  qRegisterMetaType<sdw::app::DecodeRunOutcome>();
  qRegisterMetaType<sdw::app::decode::Results>();
  qRegisterMetaType<QVector<sdw::widgets::DecodeStepPoint>>();
  qRegisterMetaType<QVector<sdw::widgets::DecodeRowData>>();
  qRegisterMetaType<sdw::widgets::DecodeSpeedupBars>();
}

void DecodeBenchController::attach(widgets::DecodeBenchView* view) {
  view->setDevice(gpu::deviceInfo().cudaAvailable, deviceLine());
  view->setConfigCatalog(decode::configCatalog());
  connect(view, &widgets::DecodeBenchView::startRequested, this,
          [this](const widgets::DecodeBenchRequest& r) { start(r); });
  connect(view, &widgets::DecodeBenchView::cancelRequested, this, &DecodeBenchController::cancel);
  connect(view, &widgets::DecodeBenchView::openResultsRequested, this,
          [this](const QString& path) { openResults(path); });
  connect(view, &widgets::DecodeBenchView::saveResultsRequested, this, [this, view](const QString& path) {
    const QString err = saveResults(path);
    if (err.isEmpty()) Q_EMIT info(tr("saved %1 decode benchmark rows to %2").arg(results_.rows.size()).arg(path));
    else Q_EMIT error(err);
    view->showMessage(err.isEmpty() ? tr("Saved %1").arg(path) : err, !err.isEmpty());
  });
  connect(this, &DecodeBenchController::runStarted, view, &widgets::DecodeBenchView::beginRun);
  connect(this, &DecodeBenchController::stepsMeasured, view, &widgets::DecodeBenchView::addSteps);
  connect(this, &DecodeBenchController::rowsMeasured, view, &widgets::DecodeBenchView::addRows);
  connect(this, &DecodeBenchController::barsChanged, view, &widgets::DecodeBenchView::setSpeedupBars);
  connect(this, &DecodeBenchController::summaryChanged, view, &widgets::DecodeBenchView::setSummary);
  connect(view, &widgets::DecodeBenchView::baselineChanged, this, &DecodeBenchController::setBaseline);
  setBaseline(view->baseline());
  connect(this, &DecodeBenchController::progressed, view, &widgets::DecodeBenchView::setProgress);
  connect(this, &DecodeBenchController::runEnded, view, &widgets::DecodeBenchView::endRun);
  connect(this, &DecodeBenchController::resultLoaded, view, &widgets::DecodeBenchView::showResult);
}

JobId DecodeBenchController::start(const widgets::DecodeBenchRequest& request) {
  if (!jobs_) return 0;
  if (run_.busy()) {
    Q_EMIT error(tr("a decode benchmark is already running"));
    return 0;
  }
  const gpu::DeviceInfo& dev = gpu::deviceInfo();
  std::vector<Cell> cells;
  QStringList notes;
  QString problem;
  const bool sparse = request.linears.contains(QLatin1String("sparse"));
  try {
    if (request.configs.isEmpty() && request.checkpoint.isEmpty())
      throw std::invalid_argument(tr("choose at least one model shape or a checkpoint folder").toStdString());
    if (request.linears.isEmpty()) throw std::invalid_argument(tr("choose at least one engine").toStdString());
    if (sparse && request.patterns.isEmpty() && !request.configs.isEmpty())
      throw std::invalid_argument(tr("choose at least one pattern for the sparse engine").toStdString());
    for (const QString& p : request.patterns) gpu::checkDecodePattern(p.toStdString());
    if (!(request.activationSparsity >= 0 && request.activationSparsity < 1))
      throw std::invalid_argument(tr("activation sparsity must be in [0, 1)").toStdString());
    if (request.batches.isEmpty()) throw std::invalid_argument(tr("choose at least one batch size").toStdString());
    if (request.device != QLatin1String("cpu") && !dev.cudaAvailable)
      throw std::invalid_argument(
          tr("no GPU: %1 (choose the cpu device)").arg(QString::fromStdString(dev.reason)).toStdString());
    for (const QString& l : request.linears)
      if (l != QLatin1String("eager")) (void)gpu::parseLinear(l.toStdString());  // names the accepted ones
    (void)gpu::canonicalDtype(request.dtype.toStdString());
    const auto addCells = [&](const std::string& name, const gpu::ModelConfig& c, const std::filesystem::path& ck) {
      if (request.context + 1 > c.maxPositionEmbeddings)
        throw std::invalid_argument(tr("context %1 is more than %2 holds (%3 positions)")
                                        .arg(request.context)
                                        .arg(QString::fromStdString(name))
                                        .arg(c.maxPositionEmbeddings)
                                        .toStdString());
      for (const QString& l : request.linears) {
        if (l != QLatin1String("sparse")) {
          cells.push_back({name, c, ck, l.toStdString(), ""});
        } else if (!ck.empty()) {
          // A checkpoint decodes sparse from its own packed file, in its own pattern.
          if (std::filesystem::exists(ck / "model.sdwsparse")) cells.push_back({name, c, ck, "sparse", ""});
          else notes << tr("%1 has no model.sdwsparse: no sparse engine for it").arg(QString::fromStdString(name));
        } else {
          for (const QString& p : request.patterns) cells.push_back({name, c, ck, "sparse", p.toStdString()});
        }
      }
    };
    for (const QString& name : request.configs) {
      std::string reportName;
      const gpu::ModelConfig c = decode::resolveConfig(name.toStdString(), reportName);
      addCells(reportName, c, {});
    }
    if (!request.checkpoint.isEmpty()) {
      const QFileInfo info(request.checkpoint);
      if (!info.isDir()) throw std::invalid_argument(tr("%1: no such folder").arg(request.checkpoint).toStdString());
      const std::filesystem::path dir = toPath(info.absoluteFilePath());
      addCells(info.fileName().toStdString(), gpu::loadModelConfig(dir), dir);
    }
    if (cells.empty()) throw std::invalid_argument(tr("nothing to run").toStdString());
  } catch (const std::exception& e) {
    problem = QString::fromUtf8(e.what());
  }
  if (!problem.isEmpty()) {
    Q_EMIT runEnded(tr("Cannot start: %1").arg(problem), true);
    Q_EMIT error(tr("decode benchmark: %1").arg(problem));
    return 0;
  }
  for (const QString& n : notes) Q_EMIT info(tr("decode benchmark: %1").arg(n));

  gpu::DecodeBenchOptions o;
  o.device = request.device.toStdString();
  o.dtype = gpu::canonicalDtype(request.dtype.toStdString());
  o.context = request.context;
  o.tokens = request.tokens;
  o.warmup = request.warmup;
  o.activationSparsity = request.activationSparsity;
  o.activationThresholds = request.activationSparsity > 0 && request.activationThresholds;
  o.bandwidthBytes = probeBytes_;
  // The shipped tuning table of this GPU, as the CLI uses by default: without
  // it our kernels run on heuristics, well below their speed.
  if (o.device != "cpu")
    o.tuningFile = gpu::defaultTuningPath(std::filesystem::path(SDW_SOURCE_DIR) / "resources", dev.name);
  const std::vector<int> batches(request.batches.begin(), request.batches.end());

  results_ = {};
  results_.meta = {{"benchmark", "decode-e2e"},
                   {"tool", "sdw (Benchmark panel, End-to-end decode)"},
                   {"device", o.device == "cpu" ? std::string("cpu") : gpu::describeDevice(dev)},
                   {"dtype", o.dtype},
                   {"context", o.context},
                   {"warmup_steps", o.warmup},
                   {"timed_steps", o.tokens},
                   {"activation_sparsity", o.activationSparsity},
                   {"activation_selection", gpu::activationSelectionName(o)},
                   {"measured_read_gb_per_s", 0.0},
                   {"cuda_graph", o.graph},
                   {"programmatic_dependent_launch", o.pdl},
                   {"tuning", o.tuningFile.string()}};
  if (request.configs.isEmpty() || request.checkpoint.isEmpty()) results_.meta["command"] = commandLine(request);
  if (!request.checkpoint.isEmpty()) results_.meta["checkpoint"] = toPath(request.checkpoint).string();
  steps_ = 0;

  const int n = static_cast<int>(cells.size());
  const JobId id = jobs_->start(Job<DecodeRunOutcome, DecodeEvent>{
      .name = tr("Benchmark decode"),
      .slot = &run_,
      .context = this,
      .work =
          [cells, batches, o](const sdw::ProgressFn& progress, const JobChannel<DecodeEvent>& channel) {
            const double perCell = static_cast<double>(o.warmup + o.tokens) * static_cast<double>(batches.size());
            const double total = perCell * static_cast<double>(cells.size());
            reportOrThrow(progress, {0, total, "steps", "bandwidth probe"});
            DecodeRunOutcome out;
            gpu::DecodeBenchOptions opt = o;
            // One measurement for the whole grid, before any model is on the device (as the CLI).
            opt.readGBs = gpu::measureReadBandwidth(opt.device, opt.bandwidthBytes).first;
            out.readGBs = opt.readGBs;
            for (std::size_t i = 0; i < cells.size(); ++i) {
              const Cell& cell = cells[i];
              opt.config = cell.config;
              opt.configName = cell.name;
              opt.checkpoint = cell.checkpoint;
              opt.eager = cell.linear == "eager";
              opt.linear = opt.eager ? gpu::Linear::Cublas : gpu::parseLinear(cell.linear);
              opt.pattern = cell.pattern.empty() ? "2:4" : cell.pattern;
              const QString config = QString::fromStdString(cell.name);
              const QString linear = QString::fromStdString(cell.linear);
              const QString pattern = QString::fromStdString(cell.pattern);
              // Every timed step as it happens, on this thread: the channel carries it over.
              opt.onStep = [&](int batch, int, double ms) {
                channel.send({decode::cellName(config, linear, pattern, batch), linear, pattern, batch, ms, {}, {}});
              };
              const std::string label =
                  cell.name + " · " + (cell.pattern.empty() ? cell.linear : cell.linear + " " + cell.pattern);
              const std::string of = " (" + std::to_string(i + 1) + "/" + std::to_string(cells.size()) + ")";
              const double before = perCell * static_cast<double>(i);
              std::vector<gpu::DecodeBenchResult> rs;
              try {
                rs = gpu::runDecodeBenchBatches(opt, batches, [&](const Progress& p) {
                  Progress q = p;
                  q.done = before + p.done;
                  q.total = total;
                  q.unit = "steps";
                  q.stage = label + of + ": " + p.stage;
                  return !progress || progress(q);
                });
              } catch (const sdw::Cancelled&) {
                throw;
              } catch (const std::exception& e) {
                // The grid goes on (as the CLI's): a cell out of device memory, say, loses only itself.
                out.failures.push_back(label + ": " + e.what());
                continue;
              }
              DecodeEvent done;
              for (const auto& r : rs) done.rows.push_back(gpu::decodeRowJson(r, cell.config.architectureName));
              done.device = rs.empty() ? std::string() : rs.front().device;
              out.device = done.device;
              channel.send(std::move(done));
              ++out.cells;
            }
            return out;
          },
      .progress =
          [this](const JobUpdate& u) {
            const QString text =
                u.total > 0 ? tr("%1 (%2/%3 steps)").arg(u.stage).arg(u.done, 0, 'f', 0).arg(u.total, 0, 'f', 0)
                            : u.stage;
            Q_EMIT progressed(u.fraction, text);
          },
      .data =
          [this](const std::vector<DecodeEvent>& events) {
            QVector<widgets::DecodeStepPoint> points;
            const auto flush = [&] {
              if (!points.isEmpty()) Q_EMIT stepsMeasured(std::exchange(points, {}));
            };
            for (const DecodeEvent& e : events) {
              if (e.rows.empty()) {
                points.push_back(
                    {e.cell, e.linear, e.pattern, e.batch, steps_++, e.ms, e.ms > 0 ? e.batch * 1000.0 / e.ms : 0.0});
                continue;
              }
              flush();
              if (!e.device.empty()) results_.meta["device"] = e.device;
              results_.meta["measured_read_gb_per_s"] = number(e.rows.front(), "measured_read_gb_per_s");
              results_.rows.insert(results_.rows.end(), e.rows.begin(), e.rows.end());
              Q_EMIT rowsMeasured(decode::rowData(e.rows));
              publishDerived();
            }
            flush();
          },
      .dataIntervalMs = drainMs_,
      .finished =
          [this](const DecodeRunOutcome& r) {
            results_.meta["measured_read_gb_per_s"] = r.readGBs;
            if (!r.device.empty()) results_.meta["device"] = r.device;
            publishDerived();
            QString msg = tr("Done: %1 rows from %2 engine cell(s) on %3; read bandwidth %4 GB/s.")
                              .arg(results_.rows.size())
                              .arg(r.cells)
                              .arg(QString::fromStdString(r.device))
                              .arg(r.readGBs, 0, 'f', r.readGBs < 100 ? 1 : 0);
            QStringList failed;
            for (const std::string& f : r.failures) failed << QString::fromStdString(f);
            if (r.cells == 0 && !failed.isEmpty())
              msg = tr("Decode benchmark failed: %1").arg(failed.join(QStringLiteral("; ")));
            else if (!failed.isEmpty())
              msg += QLatin1Char(' ') + tr("%n cell(s) failed: %1", nullptr, static_cast<int>(failed.size()))
                                            .arg(failed.join(QStringLiteral("; ")));
            // Progress reports are throttled: the last one may be well short of the end.
            Q_EMIT progressed(1.0, msg);
            Q_EMIT runEnded(msg, !failed.isEmpty());
            if (failed.isEmpty()) Q_EMIT info(tr("decode benchmark: %1").arg(msg));
            else Q_EMIT error(tr("decode benchmark: %1").arg(msg));
          },
      .failed =
          [this](const QString& message) {
            const QString m = tr("Decode benchmark failed: %1").arg(message);
            Q_EMIT runEnded(m, true);
            Q_EMIT error(m);
          },
      .cancelled =
          [this] {
            const QString m = tr("Cancelled after %1 rows.").arg(results_.rows.size());
            Q_EMIT runEnded(m, false);
            Q_EMIT info(tr("decode benchmark: %1").arg(m));
          },
  });
  QStringList models = request.configs;
  if (!request.checkpoint.isEmpty()) models << QFileInfo(request.checkpoint).fileName();
  const QString title = tr("Decoding %1: %2 engine cell(s) × %3 batch size(s) on %4…")
                            .arg(models.join(QStringLiteral(", ")))
                            .arg(n)
                            .arg(batches.size())
                            .arg(o.device == "cpu" ? tr("the CPU") : tr("the GPU"));
  Q_EMIT runStarted(title);
  Q_EMIT info(title);
  return id;
}

void DecodeBenchController::cancel() {
  if (jobs_) jobs_->cancel(run_.id());
}

JobId DecodeBenchController::openResults(const QString& path) {
  if (!jobs_) return 0;
  if (run_.busy()) {
    Q_EMIT error(tr("a decode benchmark is running: cancel it before opening results"));
    return 0;
  }
  return jobs_->start(Job<decode::Results>{
      .name = tr("Open %1").arg(QFileInfo(path).fileName()),
      .slot = &open_,
      .context = this,
      .work =
          [path](const sdw::ProgressFn&) {
            const std::filesystem::path file = toPath(path);
            decode::Results r =
                decode::parseResults(readJsonFileBounded(file), QFileInfo(path).fileName().toStdString());
            (void)gpu::decodeSummaryJson(r.rows);  // the rows hold what it reads: any surprise fails here, not later
            return r;
          },
      .finished =
          [this, path](const decode::Results& loaded) {
            results_ = loaded;
            steps_ = 0;
            QString device = text(results_.meta, "device");
            if (device.isEmpty()) device = tr("an unnamed device");
            const QString command = text(results_.meta, "command");
            const QString title = tr("%1: %2 rows from %3 (%4)")
                                      .arg(QFileInfo(path).fileName())
                                      .arg(results_.rows.size())
                                      .arg(device, command.isEmpty() ? tr("no command recorded") : command);
            Q_EMIT resultLoaded(title, decode::rowData(results_.rows), decode::stepPoints(results_.rows));
            publishDerived();
            Q_EMIT info(tr("opened decode benchmark results %1 (%2 rows)").arg(path).arg(results_.rows.size()));
          },
      .failed =
          [this](const QString& message) {
            const QString m = tr("Cannot open decode benchmark results: %1").arg(message);
            Q_EMIT runEnded(m, true);
            Q_EMIT error(m);
          },
  });
}

QString DecodeBenchController::saveResults(const QString& path) const {
  if (results_.rows.empty()) return tr("nothing to save: no decode benchmark rows yet");
  QByteArray bytes;
  const QString lower = path.toLower();
  if (lower.endsWith(QLatin1String(".csv"))) {
    widgets::DecodeResultsModel table;
    table.appendRows(decode::rowData(results_.rows));
    bytes = table.toCsv().toUtf8();
  } else if (lower.endsWith(QLatin1String(".json"))) {
    bytes = QByteArray::fromStdString(decode::resultsJson(results_).dump(2) + "\n");
  } else {
    return tr("unknown format for %1 (use .json or .csv)").arg(path);
  }
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size() || !f.commit())
    return tr("could not write %1: %2").arg(path, f.errorString());
  return {};
}

void DecodeBenchController::publishDerived() {
  nlohmann::json summary = nlohmann::json::array();
  try {
    summary = gpu::decodeSummaryJson(results_.rows);
  } catch (const std::exception& e) {
    // Rows are checked where they come in; this is a bug, not bad input.
    Q_EMIT error(tr("decode benchmark summary: %1").arg(QString::fromUtf8(e.what())));
  }
  Q_EMIT barsChanged(decode::speedupBars(summary, baseline_));
  Q_EMIT summaryChanged(decode::summaryLine(summary, number(results_.meta, "measured_read_gb_per_s"), baseline_));
}

void DecodeBenchController::setBaseline(widgets::DecodeBaseline baseline) {
  if (baseline == baseline_) return;
  baseline_ = baseline;
  publishDerived();
}

}  // namespace sdw::app
