// The Benchmark panel's End-to-end decode tab offscreen, driven through its
// controller: a CPU grid on the bench-tiny shape (dense and sparse 2:4,
// batches 1 and 2) end to end (table, live tokens/s per timed step, speed-up
// bars with their bandwidth limit, summary), cancel within a few seconds,
// results saved and opened again unchanged, files written by `sdw-cli bench
// decode` (a grid and the committed single-row H200 result) shown the same
// way, a real (pruned) checkpoint decoded from its own model.sdwsparse, the
// fall-back to the best dense engine, and the scrolling step axis.

#include "app/gui/decodebenchcontroller.h"
#include "app/jobmanager.h"
#include "gpu/bench_decode.h"
#include "gpu/bench_decode_report.h"
#include "gpu/device.h"
#include "tests/gpu/sparse_fixture.h"
#include "widgets/benchmarkpanel.h"
#include "widgets/decodebenchcharts.h"
#include "widgets/decodebenchview.h"
#include "widgets/decoderesultsmodel.h"
#include "widgets/legendstrip.h"
#include "widgets/plotview.h"

#include <nlohmann/json.hpp>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QListWidget>
#include <QMap>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <memory>

using sdw::app::DecodeBenchController;
using sdw::app::JobManager;
using sdw::widgets::DecodeBaseline;
using sdw::widgets::DecodeBenchCharts;
using sdw::widgets::DecodeBenchRequest;
using sdw::widgets::DecodeBenchView;
using sdw::widgets::DecodeResultsModel;
using sdw::widgets::DecodeRowData;

namespace {

constexpr int kTimed = 6;  // timed steps per cell of the CPU grid

bool near(double a, double b, double rel = 1e-9) { return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b)); }

QPushButton* button(QWidget* w, const char* name) { return w->findChild<QPushButton*>(QLatin1String(name)); }

nlohmann::json readJson(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return nlohmann::json::parse(f.readAll().toStdString(), nullptr, false);
}

bool writeText(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(bytes) == bytes.size();
}

// The row of (linear, pattern, batch) in the controller's JSON rows.
const nlohmann::json* findRow(const std::vector<nlohmann::json>& rows, const char* linear, const char* pattern,
                              int batch) {
  for (const auto& r : rows)
    if (r["linear"] == linear && r["pattern"] == pattern && r["batch"] == batch) return &r;
  return nullptr;
}

DecodeBenchRequest tinyCpuGrid() {
  DecodeBenchRequest r;
  r.configs = {QStringLiteral("bench-tiny")};
  r.linears = {QStringLiteral("dense"), QStringLiteral("sparse")};
  r.patterns = {QStringLiteral("2:4")};
  r.batches = {1, 2};
  r.context = 32;
  r.warmup = 2;
  r.tokens = kTimed;
  r.device = QStringLiteral("cpu");
  r.dtype = QStringLiteral("float32");
  return r;
}

// A hand-made result in the CLI's layout: cuBLAS and two sparse patterns, no
// "dense" row, so the bars fall back to the best dense engine (cuBLAS).
// withDense: our dense engine too, slower than cuBLAS (12.5 ms, 80 tokens/s).
QByteArray cublasOnlyGrid(bool withDense = false) {
  std::vector<nlohmann::json> rows;
  const auto add = [&](const char* linear, const char* pattern, double ms, std::uint64_t bytes) {
    sdw::gpu::DecodeBenchResult r;
    r.device = "NVIDIA H200 (sm_90, 139.8 GiB)";
    r.configName = "llama-3.1-8b";
    r.dtype = "bfloat16";
    r.linear = linear;
    r.pattern = pattern;
    r.engine = std::string("CUDA graph of fused kernels, ") + linear;
    r.context = 512;
    r.tokens = 4;
    r.warmup = 4;
    r.batch = 1;
    r.stepMs = {ms, ms, ms, ms};
    r.medianMs = r.p10Ms = r.p90Ms = r.meanMs = ms;
    r.tokensPerSecond = 1000.0 / ms;
    r.bytesPerStep = bytes;
    r.achievedGBs = static_cast<double>(bytes) / (ms * 1e6);
    r.measuredReadGBs = 4000;
    r.limitTokensPerSecond = 4000e9 / static_cast<double>(bytes);
    r.ratioToLimit = r.tokensPerSecond / r.limitTokensPerSecond;
    r.gpuMemoryBytes = bytes + 1000;
    rows.push_back(sdw::gpu::decodeRowJson(r, "LlamaForCausalLM"));
  };
  add("cublas", "", 10.0, 16'000'000'000ull);   // 100 tokens/s
  if (withDense) add("dense", "", 12.5, 16'000'000'000ull);  // 80 tokens/s
  add("sparse", "2:4", 8.0, 9'000'000'000ull);  // 125 tokens/s: 1.25x, limit 16/9
  add("sparse", "4:8", 5.0, 9'000'000'000ull);  // 200 tokens/s: 2x
  const nlohmann::json j = {{"benchmark", "decode-e2e"},
                            {"device", "NVIDIA H200 (sm_90, 139.8 GiB)"},
                            {"dtype", "bfloat16"},
                            {"context", 512},
                            {"warmup_steps", 4},
                            {"timed_steps", 4},
                            {"measured_read_gb_per_s", 4000.0},
                            {"cuda_graph", true},
                            {"tuning", "resources/tuning/nvidia-h200.json"},
                            {"rows", rows},
                            {"summary", sdw::gpu::decodeSummaryJson(rows)}};
  return QByteArray::fromStdString(j.dump(2));
}

}  // namespace

class TestDecodeView : public QObject {
  Q_OBJECT
 private:
  std::unique_ptr<JobManager> jobs_;
  std::unique_ptr<sdw::widgets::BenchmarkPanel> panel_;
  DecodeBenchView* view_ = nullptr;
  std::unique_ptr<DecodeBenchController> controller_;
  std::unique_ptr<QAbstractItemModelTester> tester_;
  QTemporaryDir tmp_;
  QVector<DecodeRowData> gridRows_;  // the CPU grid's table and live points, for the save / open round trip
  QMap<QString, QVector<QPointF>> gridPoints_;

  bool open(const QString& path) {
    QSignalSpy loaded(controller_.get(), &DecodeBenchController::resultLoaded);
    if (controller_->openResults(path) == 0) return false;
    if (!(loaded.wait(20000) || loaded.count() == 1)) return false;
    QTest::qWait(80);  // the charts' coalesced replot
    return true;
  }

  // Runs the request through the view's Start button; the runEnded arguments.
  QList<QVariant> run(const DecodeBenchRequest& r, int timeoutMs = 180000) {
    QSignalSpy ended(controller_.get(), &DecodeBenchController::runEnded);
    view_->setRequest(r);
    button(view_, "decodeStart")->click();
    if (!ended.wait(timeoutMs) && ended.isEmpty()) return {};
    QTest::qWait(80);
    return ended.first();
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    jobs_ = std::make_unique<JobManager>();
    jobs_->setProgressInterval(5);
    panel_ = std::make_unique<sdw::widgets::BenchmarkPanel>();
    panel_->resize(1400, 900);
    panel_->show();
    view_ = panel_->decodeView();
    QVERIFY(view_);
    panel_->innerTabs()->setCurrentWidget(view_);
    controller_ = std::make_unique<DecodeBenchController>(jobs_.get());
    controller_->setBandwidthProbeBytes(16ull << 20);  // the CPU probe, small: the test is about the view
    controller_->attach(view_);
    tester_ = std::make_unique<QAbstractItemModelTester>(view_->resultsModel(),
                                                         QAbstractItemModelTester::FailureReportingMode::QtTest);
  }

  void cleanupTestCase() {
    controller_->cancel();
    jobs_->cancelAll();
    QVERIFY(jobs_->waitForDone(20000));
  }

  void catalogAndDefaults() {
    // A tab of the Benchmark panel, next to the kernels.
    QCOMPARE(panel_->innerTabs()->count(), 2);
    QCOMPARE(panel_->innerTabs()->tabText(0), QStringLiteral("Kernels"));
    QCOMPARE(panel_->innerTabs()->tabText(1), QStringLiteral("End-to-end decode"));

    // The kernel page's models with its titles, then the shipped configs that are none of them.
    auto* list = view_->findChild<QListWidget*>(QStringLiteral("decodeConfigs"));
    QVERIFY(list);
    QStringList names;
    for (int i = 0; i < list->count(); ++i) names << list->item(i)->data(Qt::UserRole).toString();
    QCOMPARE(names, (QStringList{"llama3-8b", "qwen3-14b", "qwen3-32b", "bench-tiny"}));
    QCOMPARE(list->item(0)->text(), QStringLiteral("Llama-3.1-8B (llama3-8b)"));
    QVERIFY2(list->item(0)->toolTip().contains(QStringLiteral("32 layers")), qPrintable(list->item(0)->toolTip()));

    std::string name;
    const auto llama = sdw::app::decode::resolveConfig("llama3-8b", name);
    QVERIFY(name == "llama-3.1-8b");  // as the CLI names its rows
    QCOMPARE(llama.hiddenSize, qint64(4096));
    QCOMPARE(sdw::app::decode::resolveConfig("bench-tiny", name).hiddenSize, qint64(256));
    QVERIFY(name == "bench-tiny");
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sdw::app::decode::resolveConfig("no-such-model", name));

    const DecodeBenchRequest r = view_->request();
    QCOMPARE(r.context, 512);
    QCOMPARE(r.warmup, 50);
    QCOMPARE(r.tokens, 50);
    QCOMPARE(r.batches, QVector<int>{1});
    QCOMPARE(r.linears, (QStringList{"cublas", "dense", "sparse"}));
    QCOMPARE(r.patterns, QStringList{"2:4"});
    if (sdw::gpu::deviceInfo().cudaAvailable) {
      QCOMPARE(r.device, QStringLiteral("cuda"));
      QCOMPARE(r.dtype, QStringLiteral("bfloat16"));
      QCOMPARE(r.configs, QStringList{"llama3-8b"});
    } else {
      // The CLI's CPU defaults: the tiny shape in float32; cuda says why it is off.
      QCOMPARE(r.device, QStringLiteral("cpu"));
      QCOMPARE(r.dtype, QStringLiteral("float32"));
      QCOMPARE(r.configs, QStringList{"bench-tiny"});
      QVERIFY(view_->deviceText().startsWith(QStringLiteral("no GPU")));
    }
    // Patterns belong to the sparse engine: off without it.
    auto* sparse = view_->findChild<QCheckBox*>(QStringLiteral("decodeLinear_sparse"));
    auto* p24 = view_->findChild<QCheckBox*>(QStringLiteral("decodePattern_2_4"));
    QVERIFY(sparse && p24);
    QVERIFY(p24->isEnabled());
    sparse->setChecked(false);
    QVERIFY(!p24->isEnabled());
    QVERIFY(view_->request().patterns.isEmpty());
    sparse->setChecked(true);
    QVERIFY(!button(view_, "decodeSave")->isEnabled());  // nothing to save yet
  }

  void refusesWhatCannotRun_data() {
    QTest::addColumn<QString>("what");
    QTest::addColumn<QString>("expected");
    QTest::newRow("no model") << "no model"
                              << "choose at least one model shape";
    QTest::newRow("no engine") << "no engine"
                               << "choose at least one engine";
    QTest::newRow("no pattern") << "no pattern"
                                << "pattern for the sparse engine";
    QTest::newRow("no batch") << "no batch"
                              << "batch size";
    QTest::newRow("context too long") << "context"
                                      << "2048 positions";
    QTest::newRow("missing checkpoint") << "checkpoint"
                                        << "no such folder";
  }
  void refusesWhatCannotRun() {
    QFETCH(QString, what);
    QFETCH(QString, expected);
    DecodeBenchRequest r = tinyCpuGrid();
    if (what == QLatin1String("no model")) r.configs.clear();
    if (what == QLatin1String("no engine")) r.linears.clear();
    if (what == QLatin1String("no pattern")) r.patterns.clear();
    if (what == QLatin1String("no batch")) r.batches.clear();
    if (what == QLatin1String("context")) r.context = 4096;
    if (what == QLatin1String("checkpoint")) r.checkpoint = tmp_.filePath(QStringLiteral("not-here"));
    QSignalSpy ended(controller_.get(), &DecodeBenchController::runEnded);
    QSignalSpy started(jobs_.get(), &JobManager::started);
    QCOMPARE(controller_->start(r), sdw::app::JobId(0));
    QCOMPARE(started.count(), 0);
    QCOMPARE(ended.count(), 1);
    QCOMPARE(ended.first().at(1).toBool(), true);
    const QString message = ended.first().at(0).toString();
    QVERIFY2(message.startsWith(QStringLiteral("Cannot start")) && message.contains(expected), qPrintable(message));
    QVERIFY2(view_->statusText().contains(expected), qPrintable(view_->statusText()));
    QVERIFY(!view_->isRunning());
  }

  void runsTheGridOnTheCpu() {
    // The order things reach the view: steps of a cell before its rows.
    QStringList order;
    int stepSignals = 0;
    auto c1 = connect(controller_.get(), &DecodeBenchController::stepsMeasured, this, [&] {
      ++stepSignals;
      if (order.isEmpty() || order.last() != QLatin1String("steps")) order << QStringLiteral("steps");
    });
    auto c2 = connect(controller_.get(), &DecodeBenchController::rowsMeasured, this,
                      [&] { order << QStringLiteral("rows"); });
    bool runningSeen = false;
    auto c3 = connect(controller_.get(), &DecodeBenchController::stepsMeasured, this,
                      [&] { runningSeen = runningSeen || (view_->isRunning() && view_->charts()->isFollowing()); });
    QSignalSpy started(jobs_.get(), &JobManager::started);
    const QList<QVariant> ended = run(tinyCpuGrid());
    disconnect(c1);
    disconnect(c2);
    disconnect(c3);
    QVERIFY(!ended.isEmpty());
    QVERIFY2(!ended.at(1).toBool(), qPrintable(ended.at(0).toString()));
    QVERIFY2(ended.at(0).toString().startsWith(QStringLiteral("Done: 4 rows from 2 engine cell(s)")),
             qPrintable(ended.at(0).toString()));
    QCOMPARE(started.first().at(1).toString(), QStringLiteral("Benchmark decode"));
    QVERIFY(!view_->isRunning());
    QVERIFY(button(view_, "decodeStart")->isEnabled());
    QVERIFY(!button(view_, "decodeCancel")->isEnabled());
    QVERIFY(button(view_, "decodeSave")->isEnabled());
    QCOMPARE(view_->findChild<QProgressBar*>(QStringLiteral("decodeProgress"))->value(), 1000);

    // Live: steps arrived while the run went on, each cell's before its rows.
    QVERIFY(stepSignals >= 2);
    QVERIFY(runningSeen);
    QCOMPARE(order.first(), QStringLiteral("steps"));
    QCOMPARE(order.count(QStringLiteral("rows")), 2);  // one per model built: dense, sparse 2:4
    QCOMPARE(order.indexOf(QStringLiteral("rows")), 1);

    // The table: one row per (linear, pattern, batch), in run order, as the JSON rows hold them.
    const std::vector<nlohmann::json>& json = controller_->rows();
    QCOMPARE(int(json.size()), 4);
    const DecodeResultsModel* m = view_->resultsModel();
    QCOMPARE(m->rowCount(), 4);
    const char* const linears[] = {"dense", "dense", "sparse", "sparse"};
    const char* const patterns[] = {"", "", "2:4", "2:4"};
    const int batches[] = {1, 2, 1, 2};
    for (int i = 0; i < 4; ++i) {
      const DecodeRowData& r = m->rows()[i];
      const nlohmann::json& j = json[static_cast<std::size_t>(i)];
      QCOMPARE(r.config, QStringLiteral("bench-tiny"));
      QCOMPARE(r.linear, QLatin1String(linears[i]));
      QCOMPARE(r.pattern, QLatin1String(patterns[i]));
      QCOMPARE(r.batch, batches[i]);
      QCOMPARE(r.context, 32);
      QCOMPARE(r.timedSteps, kTimed);
      QCOMPARE(r.stepMs.size(), kTimed);
      QVERIFY(r.tokensPerSecond > 0);
      QCOMPARE(r.tokensPerSecond, j["tokens_per_second"].get<double>());
      QVERIFY(near(r.tokensPerSecond, r.batch * 1000.0 / r.medianMs));
      QVERIFY(near(r.gbs, r.bytesPerStep / (r.medianMs * 1e6)));
      QVERIFY(r.limitTokensPerSecond > 0);
      QVERIFY(near(r.ratioToLimit, r.tokensPerSecond / r.limitTokensPerSecond));
      QVERIFY(r.memoryBytes > 0);
      QCOMPARE(m->index(i, DecodeResultsModel::PercentOfLimit).data().toString(),
               QString::number(100.0 * r.ratioToLimit, 'f', 1));
      QCOMPARE(m->index(i, DecodeResultsModel::Pattern).data().toString(),
               r.pattern.isEmpty() ? QStringLiteral("-") : r.pattern);
      // The engine as the runtime describes it: the CPU bitmask SpMV for the sparse rows.
      QVERIFY2(r.engine.contains(QStringLiteral("bitmask SpMV")) == (r.linear == QLatin1String("sparse")),
               qPrintable(r.engine));
    }
    // The sparse model holds its projections packed: fewer bytes per step than dense.
    QVERIFY(m->rows()[2].bytesPerStep < m->rows()[0].bytesPerStep);

    // The live chart: one line per cell, one point per timed step, x counting
    // the run's timed steps in order, y = batch / step time.
    DecodeBenchCharts* charts = view_->charts();
    QVERIFY(!charts->isFollowing());
    const QStringList cells = charts->cellSeries();
    QCOMPARE(cells, (QStringList{"bench-tiny · dense · batch 1", "bench-tiny · dense · batch 2",
                                 "bench-tiny · sparse 2:4 · batch 1", "bench-tiny · sparse 2:4 · batch 2"}));
    // The legend names each engine once with its batches, a shade per batch (the configs
    // share their colours): the shades are the lines' colours, in batch order.
    QCOMPARE(charts->legendStrip()->names(), (QStringList{"dense · batch 1, 2", "sparse 2:4 · batch 1, 2"}));
    for (int e = 0; e < 2; ++e) {
      const auto& entry = charts->legendStrip()->entries()[e];
      QCOMPARE(entry.shades.size(), 2);
      for (int b = 0; b < 2; ++b) QCOMPARE(entry.shades[b], charts->seriesColor(cells[2 * e + b]));
      QVERIFY(entry.shades[0] != entry.shades[1]);
    }
    int x = 0;
    for (int i = 0; i < 4; ++i) {
      const QVector<QPointF> pts = charts->points(cells[i]);
      QCOMPARE(pts.size(), kTimed);
      const DecodeRowData& r = m->rows()[i];
      for (int k = 0; k < kTimed; ++k) {
        QCOMPARE(pts[k].x(), double(x++));
        QVERIFY(near(pts[k].y(), r.batch * 1000.0 / r.stepMs[k]));
      }
    }
    // After the run the whole of it is in view.
    QCOMPARE(charts->stepView()->xRange().first, -0.5);
    QVERIFY(charts->stepView()->xRange().second >= 4 * kTimed - 0.5);

    // The bars: per batch, sparse 2:4 over our dense engine, under the limit
    // dense bytes / sparse bytes of that batch.
    QCOMPARE(charts->barCount(), 2);
    const auto& bars = charts->speedupBars();
    QCOMPARE(bars.patterns, QStringList{"2:4"});
    QCOMPARE(bars.groups, (QStringList{"bench-tiny\nbatch 1", "bench-tiny\nbatch 2"}));
    QCOMPARE(bars.baselines, (QStringList{"our dense engine", "our dense engine"}));
    QCOMPARE(charts->groupTickLabels(), bars.groups);
    const QVector<double> limits = charts->limitLineValues();
    QCOMPARE(limits.size(), 2);
    for (int b = 0; b < 2; ++b) {
      const DecodeRowData& dense = m->rows()[b];
      const DecodeRowData& sparse = m->rows()[2 + b];
      QVERIFY(near(bars.speedups[0][b], sparse.tokensPerSecond / dense.tokensPerSecond));
      QVERIFY(near(limits[b], dense.bytesPerStep / sparse.bytesPerStep));
      QVERIFY(limits[b] > 1.3);  // 32 bits of fp32 per weight against 16 + 1 (half the values and a mask bit)
    }
    QVERIFY(limits[0] > limits[1]);  // batch 2 reads twice the KV cache: a smaller share saved
    const QString summary = view_->summaryText();
    QVERIFY2(
        summary.contains(QStringLiteral("over our dense engine: 2:4")) && summary.contains(QStringLiteral("limit")),
        qPrintable(summary));
    QVERIFY(summary.startsWith(QStringLiteral("Read bandwidth")));
    gridRows_ = m->rows();
    for (const QString& c : cells) gridPoints_[c] = charts->points(c);

    // The charts export as the other plots do.
    const QString csv = tmp_.filePath(QStringLiteral("bars.csv"));
    QCOMPARE(charts->speedupView()->exportTo(csv), QString());
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 3);
    QCOMPARE(lines[0], QStringLiteral("group,pattern,baseline,speedup,speedup_limit"));
    QVERIFY(lines[1].startsWith(QStringLiteral("bench-tiny batch 1,2:4,our dense engine,")));
    const QString png = tmp_.filePath(QStringLiteral("steps.png"));
    QCOMPARE(charts->stepView()->exportTo(png), QString());
    QVERIFY(!QImage(png).isNull());
    const QString stepsCsv = tmp_.filePath(QStringLiteral("steps.csv"));
    QCOMPARE(charts->stepView()->exportTo(stepsCsv), QString());
    QFile sf(stepsCsv);
    QVERIFY(sf.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(sf.readAll()).count(QLatin1Char('\n')), 1 + 4 * kTimed);
  }

  void saveThenOpenGivesTheSameRows() {
    QVERIFY(!gridRows_.isEmpty());
    const QString path = tmp_.filePath(QStringLiteral("decode.json"));
    QCOMPARE(controller_->saveResults(path), QString());

    // The CLI's layout.
    const nlohmann::json j = readJson(path);
    QVERIFY(j.is_object());
    QVERIFY(j["benchmark"] == "decode-e2e");
    QVERIFY(j["device"] == "cpu");
    QVERIFY(j["dtype"] == "float32");
    QVERIFY(j["context"] == 32);
    QVERIFY(j["warmup_steps"] == 2);
    QVERIFY(j["timed_steps"] == kTimed);
    QVERIFY(j["measured_read_gb_per_s"].get<double>() > 0);
    QVERIFY(QString::fromStdString(j["command"].get<std::string>())
                .startsWith(QStringLiteral(
                    "sdw-cli bench decode --config bench-tiny --linear dense,sparse --patterns 2:4 --batch 1,2")));
    QCOMPARE(j["rows"].size(), std::size_t(4));
    QCOMPARE(j["summary"].size(), std::size_t(2));
    const auto& e = j["summary"][0]["sparse"]["2:4"];
    QVERIFY(near(e["speedup_over_dense_engine"].get<double>(),
                 gridRows_[2].tokensPerSecond / gridRows_[0].tokensPerSecond));
    QVERIFY(near(e["speedup_limit"].get<double>(), gridRows_[0].bytesPerStep / gridRows_[2].bytesPerStep));
    const auto* row = findRow(controller_->rows(), "sparse", "2:4", 2);
    QVERIFY(row);
    QVERIFY(j["rows"][3] == *row);

    // Opened again: the same rows, bars and steps.
    const QVector<double> barsBefore = view_->charts()->speedupBars().speedups.value(0);
    const QVector<double> limitsBefore = view_->charts()->limitLineValues();
    QVERIFY(open(path));
    const QVector<DecodeRowData>& again = view_->resultsModel()->rows();
    QCOMPARE(again.size(), gridRows_.size());
    for (int i = 0; i < again.size(); ++i) {
      const DecodeRowData& a = again[i];
      const DecodeRowData& b = gridRows_[i];
      QCOMPARE(a.config, b.config);
      QCOMPARE(a.linear, b.linear);
      QCOMPARE(a.pattern, b.pattern);
      QCOMPARE(a.batch, b.batch);
      QCOMPARE(a.tokensPerSecond, b.tokensPerSecond);
      QCOMPARE(a.gbs, b.gbs);
      QCOMPARE(a.limitTokensPerSecond, b.limitTokensPerSecond);
      QCOMPARE(a.ratioToLimit, b.ratioToLimit);
      QCOMPARE(a.memoryBytes, b.memoryBytes);
      QCOMPARE(a.engine, b.engine);
      QCOMPARE(a.stepMs, b.stepMs);
    }
    QCOMPARE(view_->charts()->speedupBars().speedups.value(0), barsBefore);
    QCOMPARE(view_->charts()->limitLineValues(), limitsBefore);
    // The live chart drawn again from the file's step times: the same points.
    QStringList cells = view_->charts()->cellSeries();
    cells.sort();
    QCOMPARE(cells, QStringList(gridPoints_.keys()));
    for (const QString& c : gridPoints_.keys()) {
      const QVector<QPointF> pts = view_->charts()->points(c);
      QCOMPARE(pts.size(), gridPoints_[c].size());
      for (int k = 0; k < pts.size(); ++k) {
        QCOMPARE(pts[k].x(), gridPoints_[c][k].x());
        QVERIFY(near(pts[k].y(), gridPoints_[c][k].y()));
      }
    }
    QVERIFY2(view_->statusText().startsWith(QStringLiteral("decode.json: 4 rows from cpu (sdw-cli bench decode")),
             qPrintable(view_->statusText()));

    // The table as CSV.
    const QString csv = tmp_.filePath(QStringLiteral("decode.csv"));
    QCOMPARE(controller_->saveResults(csv), QString());
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 5);
    QVERIFY(lines[3].startsWith(QStringLiteral("bench-tiny,sparse,2:4,1,")));
    QVERIFY(!controller_->saveResults(tmp_.filePath(QStringLiteral("decode.txt"))).isEmpty());
  }

  void opensAGridWrittenByTheCli() {
    // sdw-cli bench decode itself, on the CPU: the view reads what it writes.
    const QString out = tmp_.filePath(QStringLiteral("cli.json"));
    QProcess p;
    p.start(QStringLiteral(SDW_BINARY_DIR "/bin/sdw-cli"),
            {"bench",         "decode",     "--device", "cpu",     "--config", "bench-tiny", "--linear",
             "cublas,sparse", "--patterns", "2:4",      "--batch", "1",        "--context",  "16",
             "--tokens",      "3",          "--warmup", "1",       "--json",   "--out",      out});
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    QVERIFY(open(out));
    const QVector<DecodeRowData>& rows = view_->resultsModel()->rows();
    QCOMPARE(rows.size(), 2);
    QCOMPARE(rows[0].linear, QStringLiteral("cublas"));
    QCOMPARE(rows[1].pattern, QStringLiteral("2:4"));
    QCOMPARE(view_->charts()->pointCount(QStringLiteral("bench-tiny · cublas · batch 1")), 3);
    // No "dense" run: over the best dense engine that ran, cuBLAS.
    QCOMPARE(view_->charts()->barCount(), 1);
    QCOMPARE(view_->charts()->speedupBars().baselines, QStringList{"cuBLAS (the best dense run)"});
    QVERIFY(near(view_->charts()->speedupBars().speedups[0][0], rows[1].tokensPerSecond / rows[0].tokensPerSecond));
    QCOMPARE(view_->charts()->limitLineValues().size(), 1);
  }

  // "Speed-up over": our dense engine by default, the best dense engine of the group when
  // asked (cuBLAS here, faster than our dense engine); the bars, their baselines and the
  // summary follow the choice both ways.
  void comparesWithTheBestDenseWhenAsked() {
    const QString path = tmp_.filePath(QStringLiteral("grid-with-dense.json"));
    QVERIFY(writeText(path, cublasOnlyGrid(true)));
    QVERIFY(open(path));
    QVERIFY(view_->baseline() == DecodeBaseline::OwnDense);
    const auto bars = [&] { return view_->charts()->speedupBars(); };
    QCOMPARE(bars().baselines, QStringList{"our dense engine"});
    QVERIFY(near(bars().speedups[0][0], 125.0 / 80.0));
    QVERIFY(near(bars().speedups[1][0], 200.0 / 80.0));
    QVERIFY2(view_->summaryText().contains(QStringLiteral("over our dense engine: 2:4 1.56x")),
             qPrintable(view_->summaryText()));

    view_->baselineBox()->setCurrentIndex(1);  // as a user picks it
    QVERIFY(controller_->baseline() == DecodeBaseline::BestDense);
    QCOMPARE(bars().baselines, QStringList{"cuBLAS (the best dense run)"});
    QVERIFY(near(bars().speedups[0][0], 1.25));
    QVERIFY(near(bars().speedups[1][0], 2.0));
    QVERIFY2(view_->summaryText().contains(QStringLiteral("over cuBLAS: 2:4 1.25x (limit 1.78x) · 4:8 2.00x")),
             qPrintable(view_->summaryText()));
    QCOMPARE(view_->charts()->limitLineValues().size(), 1);  // the limit does not depend on the baseline

    view_->setBaseline(DecodeBaseline::OwnDense);
    QVERIFY(controller_->baseline() == DecodeBaseline::OwnDense);
    QVERIFY(near(bars().speedups[0][0], 125.0 / 80.0));
  }

  void fallsBackToTheBestDense() {
    const QString path = tmp_.filePath(QStringLiteral("h200-grid.json"));
    QVERIFY(writeText(path, cublasOnlyGrid()));
    QVERIFY(open(path));
    QCOMPARE(view_->resultsModel()->rowCount(), 3);
    const auto& bars = view_->charts()->speedupBars();
    QCOMPARE(bars.patterns, (QStringList{"2:4", "4:8"}));
    QCOMPARE(bars.groups, QStringList{"llama-3.1-8b\nbatch 1"});
    QCOMPARE(bars.baselines, QStringList{"cuBLAS (the best dense run)"});
    QCOMPARE(bars.speedups[0][0], 1.25);
    QCOMPARE(bars.speedups[1][0], 2.0);
    QCOMPARE(view_->charts()->barCount(), 2);
    QCOMPARE(view_->charts()->limitLineValues().size(), 1);
    QVERIFY(near(view_->charts()->limitLineValues()[0], 16.0 / 9.0));
    const QString summary = view_->summaryText();
    QVERIFY2(summary.contains(QStringLiteral("Read bandwidth 4000 GB/s")) &&
                 summary.contains(QStringLiteral("over cuBLAS: 2:4 1.25x (limit 1.78x) · 4:8 2.00x (limit 1.78x)")),
             qPrintable(summary));
    // Rows show what they measured against the limit.
    const DecodeResultsModel* m = view_->resultsModel();
    QCOMPARE(m->index(0, DecodeResultsModel::TokensPerSecond).data().toString(), QStringLiteral("100.0"));
    QCOMPARE(m->index(0, DecodeResultsModel::LimitTokensPerSecond).data().toString(), QStringLiteral("250.0"));
    QCOMPARE(m->index(0, DecodeResultsModel::PercentOfLimit).data().toString(), QStringLiteral("40.0"));
    QCOMPARE(m->index(0, DecodeResultsModel::GBs).data().toString(), QStringLiteral("1600"));
  }

  // A whole grid (three shapes x four batches x four patterns) is summed up one line per shape,
  // each batch's range over the patterns, so the text stays a few lines under the bars.
  void summarisesAWholeGridPerShape() {
    QVERIFY(open(QStringLiteral(SDW_SOURCE_DIR "/bench/results/engine/h100-decode-e2e-f62ad7d.json")));
    const QString own = view_->summaryText();
    QVERIFY2(own.contains(QStringLiteral("(median step, the range over 2:4, 4:8, 8:16, 16:32)")), qPrintable(own));
    QVERIFY2(own.contains(QStringLiteral("llama-3.1-8b over our dense engine: batch 1 1.47x, batch 2 1.32-1.33x, "
                                         "batch 4 1.08-1.25x, batch 8 1.05-1.32x (limit 1.65-1.68x)")),
             qPrintable(own));
    QVERIFY2(own.count(QStringLiteral("; ")) == 2, qPrintable(own));  // three shapes
    QVERIFY(!own.contains(QStringLiteral("2:4 1.47x (limit")));
    view_->setBaseline(DecodeBaseline::BestDense);
    const QString best = view_->summaryText();
    QVERIFY2(best.contains(QStringLiteral("llama-3.1-8b over the best dense run: batch 1 1.47x (over ")) &&
                 best.contains(QStringLiteral("batch 8 0.93-1.18x (over cuBLAS)")),
             qPrintable(best));
    view_->setBaseline(DecodeBaseline::OwnDense);
    // The strip names the grid's six engines on two lines at the main window's width, each
    // with its four batch shades; a picture of the step chart carries the same six entries
    // as its legend (not one per cell: 72 would leave the axes no height).
    DecodeBenchCharts* charts = view_->charts();
    const QStringList engines = charts->legendStrip()->names();
    QCOMPARE(engines.size(), 6);
    QCOMPARE(engines[2], QStringLiteral("sparse 2:4 · batch 1, 2, 4, 8"));
    for (const auto& e : charts->legendStrip()->entries()) QCOMPARE(e.shades.size(), 4);
    QStringList picture;
    for (const QString& e : engines) picture << e + QStringLiteral(" (light to dark)");
    QCOMPARE(charts->pictureLegend(), picture);
    const QString png = tmp_.filePath(QStringLiteral("grid-steps.png"));
    QCOMPARE(charts->stepView()->exportTo(png), QString());
    QVERIFY(!QImage(png).isNull());
    QCOMPARE(charts->pictureLegend(), picture);
    // CSV: every cell's steps, nothing from the legend's empty graphs.
    const QString csv = tmp_.filePath(QStringLiteral("grid-steps.csv"));
    QCOMPARE(charts->stepView()->exportTo(csv), QString());
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly));
    int points = 0;
    for (const QString& c : charts->cellSeries()) points += charts->pointCount(c);
    QCOMPARE(charts->cellSeries().size(), 72);
    QCOMPARE(QString::fromUtf8(f.readAll()).count(QLatin1Char('\n')), 1 + points);
  }

  void opensTheCommittedSingleRowResult() {
    // The single-cell form, written before the engine's linears: the eager forward pass.
    QVERIFY(open(QStringLiteral(SDW_SOURCE_DIR "/bench/results/engine/h200-decode-llama3-8b.json")));
    const QVector<DecodeRowData>& rows = view_->resultsModel()->rows();
    QCOMPARE(rows.size(), 1);
    QCOMPARE(rows[0].config, QStringLiteral("llama-3.1-8b"));
    QCOMPARE(rows[0].linear, QStringLiteral("eager"));
    QCOMPARE(rows[0].batch, 1);
    QVERIFY(near(rows[0].tokensPerSecond, 64.7125869325288));
    QVERIFY(near(rows[0].limitTokensPerSecond, 279.6059213623388));
    QCOMPARE(view_->resultsModel()->index(0, DecodeResultsModel::Memory).data().toString(), QStringLiteral("-"));
    QCOMPARE(view_->charts()->pointCount(QStringLiteral("llama-3.1-8b · eager · batch 1")), 50);
    QCOMPARE(view_->charts()->barCount(), 0);
    QVERIFY(view_->charts()->limitLineValues().isEmpty());
    QVERIFY2(view_->summaryText().contains(QStringLiteral("No sparse engine measured")),
             qPrintable(view_->summaryText()));
    QVERIFY(view_->statusText().contains(QStringLiteral("NVIDIA H200")));
    // Saved, it becomes a grid of one row.
    const QString path = tmp_.filePath(QStringLiteral("single.json"));
    QCOMPARE(controller_->saveResults(path), QString());
    const nlohmann::json j = readJson(path);
    QVERIFY(j["benchmark"] == "decode-e2e");
    QVERIFY(j["rows"][0]["linear"] == "eager");
    QVERIFY(!j["rows"][0].contains("benchmark"));
  }

  // A run with the launches chosen in the step (bench decode --tune-step): one row, its
  // step_tuning kept in the JSON rows the benchmark writes and absent elsewhere.
  void opensAStepTunedRun() {
    const QString path =
        QStringLiteral(SDW_SOURCE_DIR "/bench/results/engine/h100-decode-tune-step-llama3-8b-ed3e724.json");
    QVERIFY(open(path));
    const QVector<DecodeRowData>& rows = view_->resultsModel()->rows();
    QCOMPARE(rows.size(), 1);
    QCOMPARE(rows[0].linear, QStringLiteral("sparse"));
    QCOMPARE(rows[0].pattern, QStringLiteral("2:4"));
    QVERIFY(near(rows[0].tokensPerSecond, 268.1195125462399, 1e-9));
    QVERIFY(readJson(path)["step_tuning"].get<std::string>().find("4096x4096") != std::string::npos);
    sdw::gpu::DecodeBenchResult r;
    r.configName = "x";
    QVERIFY(!sdw::gpu::decodeRowJson(r, "LlamaForCausalLM").contains("step_tuning"));
    r.stepTuning = "4096x4096 w16 u1 s1 c0 pdl -> w8 u42 s2 c1 pdl: 3849.8 -> 3729.5 us (77 launches)";
    QVERIFY(sdw::gpu::decodeRowJson(r, "LlamaForCausalLM")["step_tuning"] == r.stepTuning);
    // An engine row says how many of its launches the table's step entries set; others do not.
    QVERIFY(!sdw::gpu::decodeRowJson(r, "LlamaForCausalLM").contains("step_entry_launches"));
    r.engineLaunches = 129, r.stepEntryLaunches = 128;
    const auto j = sdw::gpu::decodeRowJson(r, "LlamaForCausalLM");
    QCOMPARE(j["engine_launches"].get<int>(), 129);
    QCOMPARE(j["step_entry_launches"].get<int>(), 128);
  }

  // A grid whose engine rows say how many of their launches the table's step entries set: the
  // results table shows it per row ("-" for cuBLAS), and the CSV export carries both counts.
  void showsStepTunedLaunches() {
    QVERIFY(open(QStringLiteral(SDW_SOURCE_DIR "/bench/results/engine/h100-decode-e2e-step-m16-5d71683.json")));
    const auto* m = view_->resultsModel();
    QCOMPARE(m->rowCount(), 72);
    QMap<QString, QString> tuned;
    for (int i = 0; i < m->rowCount(); ++i) {
      const DecodeRowData& r = m->rows()[i];
      tuned[QStringLiteral("%1 %2 %3 %4").arg(r.config, r.linear, r.pattern).arg(r.batch)] =
          m->index(i, DecodeResultsModel::StepTuned).data().toString();
    }
    QCOMPARE(tuned.value("llama-3.1-8b cublas  1"), QStringLiteral("-"));
    QCOMPARE(tuned.value("llama-3.1-8b dense  8"), QStringLiteral("129 / 129"));
    QCOMPARE(tuned.value("llama-3.1-8b sparse 2:4 4"), QStringLiteral("128 / 128"));
    // 16:32 at batch 4 runs on the CUDA cores, where the table has no step entry for it.
    QCOMPARE(tuned.value("llama-3.1-8b sparse 16:32 4"), QStringLiteral("0 / 128"));
    // Qwen3-32B's dense engine: only its lm_head's entry (the projections' were not kept).
    QCOMPARE(tuned.value("qwen3-32b dense  1"), QStringLiteral("1 / 257"));
    const QStringList csv = m->toCsv().split('\n', Qt::SkipEmptyParts);
    QVERIFY(csv[0].endsWith(QStringLiteral("p90_ms,step_entry_launches,engine_launches,engine")));
    QVERIFY2(csv[1].startsWith(QStringLiteral("llama-3.1-8b,cublas,,1,")), qPrintable(csv[1]));
    QVERIFY2(csv[1].contains(QStringLiteral(",,,")), qPrintable(csv[1]));  // no counts for cuBLAS
  }

  void opensTheCommittedGrid() {
    // The H200 grid of bench/results: 3 shapes x (cuBLAS, dense, 4 patterns) x 4 batches.
    QVERIFY(open(QStringLiteral(SDW_SOURCE_DIR "/bench/results/h200-decode-e2e.json")));
    const QVector<DecodeRowData>& rows = view_->resultsModel()->rows();
    QCOMPARE(rows.size(), 72);
    // One bar per (config, batch, pattern) with its limit line per (config, batch).
    QCOMPARE(view_->charts()->barCount(), 3 * 4 * 4);
    QCOMPARE(view_->charts()->limitLineValues().size(), 3 * 4);
    for (const double limit : view_->charts()->limitLineValues()) QVERIFY(limit > 1.6 && limit < 1.8);
    QVERIFY(view_->statusText().contains(QStringLiteral("NVIDIA H200")));
    // Under each slot its batch; each config once, under its four slots; at the width the
    // main window gives the view at 1440x900 no label runs into its neighbour.
    DecodeBenchCharts* charts = view_->charts();
    QStringList batches;
    for (int k = 0; k < 3; ++k)
      batches << "batch 1"
              << "batch 2"
              << "batch 4"
              << "batch 8";
    QCOMPARE(charts->drawnTickLabels(), batches);
    QCOMPARE(charts->configAxisLabels(), (QStringList{"llama-3.1-8b", "qwen3-14b", "qwen3-32b"}));
    panel_->resize(1000, 700);
    for (int k = 0; k < 2; ++k) {
      charts->speedupView()->requestReplot();
      charts->stepView()->requestReplot();
      QTest::qWait(100);
    }
    // Both charts' value labels keep a label's height apart, under the grid's tall legend strip.
    for (const bool speedup : {false, true}) {
      const QVector<int> at = charts->valueLabelRows(speedup);
      QVERIFY(at.size() >= 3);
      for (int k = 1; k < at.size(); ++k)
        QVERIFY2(at[k] - at[k - 1] >= charts->valueLabelHeight(),
                 qPrintable(QStringLiteral("%1 chart: value labels at rows %2 and %3")
                                .arg(speedup ? "speed-up" : "steps")
                                .arg(at[k - 1])
                                .arg(at[k])));
    }
    for (const bool configRow : {false, true}) {
      const auto spans = charts->drawnLabelSpans(configRow);
      QCOMPARE(spans.size(), configRow ? 3 : 12);
      for (int k = 1; k < spans.size(); ++k)
        QVERIFY2(spans[k - 1].second + 4 <= spans[k].first,
                 qPrintable(QStringLiteral("%1 labels %2 and %3 overlap: %4-%5 and %6-%7")
                                .arg(configRow ? "config" : "batch")
                                .arg(k - 1)
                                .arg(k)
                                .arg(spans[k - 1].first)
                                .arg(spans[k - 1].second)
                                .arg(spans[k].first)
                                .arg(spans[k].second)));
    }
    panel_->resize(1400, 900);
  }

  void opensADualSparseRun() {
    // The H100 dual-sparse decode (thresholds): limits near 3.1x lift the speed-up axis to
    // about 3.5; at the size the main window gives the view at 1440x900 its value labels
    // keep a label's height apart (eight of them at 0.5 steps once overlapped).
    QVERIFY(
        open(QStringLiteral(SDW_SOURCE_DIR "/bench/results/engine/h100-dual-qwen3-14b-px0.5-thresholds-cf22e54.json")));
    DecodeBenchCharts* charts = view_->charts();
    QCOMPARE(charts->barCount(), 3);
    QCOMPARE(charts->limitLineValues().size(), 1);
    QVERIFY(charts->limitLineValues().front() > 3.0);
    // 2:4, col2:4 and col4:8 each in a colour of its own (col2:4 and col4:8 once shared one)
    const QVector<QColor> colors = charts->barColors();
    QCOMPARE(colors.size(), 3);
    QVERIFY(colors[0] != colors[1] && colors[1] != colors[2] && colors[0] != colors[2]);
    panel_->resize(1000, 700);
    charts->speedupView()->requestReplot();
    QTest::qWait(100);
    charts->speedupView()->requestReplot();
    QTest::qWait(100);
    const QVector<int> rows = charts->valueLabelRows();
    QVERIFY2(rows.size() >= 3, qPrintable(QStringLiteral("%1 value labels").arg(rows.size())));
    for (int k = 1; k < rows.size(); ++k)
      QVERIFY2(rows[k] - rows[k - 1] >= charts->valueLabelHeight(),
               qPrintable(QStringLiteral("value labels %1 and %2 at rows %3 and %4, %5 px high")
                              .arg(k - 1)
                              .arg(k)
                              .arg(rows[k - 1])
                              .arg(rows[k])
                              .arg(charts->valueLabelHeight())));
    panel_->resize(1400, 900);
  }

  void runsACheckpoint() {
    // A real checkpoint instead of random weights: the sample pruned 2:4, whose
    // sparse cell decodes its own model.sdwsparse (the pattern comes from the file).
    const QString pruned = tmp_.filePath(QStringLiteral("pruned-2-4"));
    sdw::testing::writeNmPruned(QFile::encodeName(pruned).toStdString(), {2, 4});
    DecodeBenchRequest r = tinyCpuGrid();
    r.configs.clear();
    r.checkpoint = pruned;
    r.patterns = {QStringLiteral("4:8")};  // ignored for a checkpoint
    r.batches = {1};
    r.context = 16;
    const QList<QVariant> ended = run(r);
    QVERIFY(!ended.isEmpty());
    QVERIFY2(!ended.at(1).toBool(), qPrintable(ended.at(0).toString()));
    const QVector<DecodeRowData>& rows = view_->resultsModel()->rows();
    QCOMPARE(rows.size(), 2);
    QCOMPARE(rows[0].config, QStringLiteral("pruned-2-4"));
    QCOMPARE(rows[0].linear, QStringLiteral("dense"));
    QCOMPARE(rows[1].linear, QStringLiteral("sparse"));
    QCOMPARE(rows[1].pattern, QStringLiteral("2:4"));
    QCOMPARE(rows[1].packedProjections, 42);  // the sample's 6 layers x 7 projections
    QVERIFY2(rows[1].engine.contains(QStringLiteral("bitmask SpMV 2:4 (42 of 42 projections packed)")),
             qPrintable(rows[1].engine));
    QCOMPARE(view_->charts()->barCount(), 1);
    QCOMPARE(view_->charts()->speedupBars().groups, QStringList{"pruned-2-4\nbatch 1"});
    const std::string command = controller_->meta().value("command", std::string());
    QVERIFY2(command.find("--model " + pruned.toStdString()) != std::string::npos, command.c_str());

    // A checkpoint without a packed file: no sparse cell, and the log says why.
    QSignalSpy infos(controller_.get(), &DecodeBenchController::info);
    r.checkpoint = QStringLiteral(SDW_SOURCE_DIR "/samples/model/brown-llama");
    const QList<QVariant> again = run(r);
    QVERIFY(!again.isEmpty());
    QVERIFY2(!again.at(1).toBool(), qPrintable(again.at(0).toString()));
    QCOMPARE(view_->resultsModel()->rowCount(), 1);
    QCOMPARE(view_->resultsModel()->rows()[0].config, QStringLiteral("brown-llama"));
    bool said = false;
    for (const auto& i : infos) said = said || i.at(0).toString().contains(QStringLiteral("has no model.sdwsparse"));
    QVERIFY(said);
  }

  // A cell that fails while it runs (here a checkpoint whose model.sdwsparse is not a packed
  // file) loses only itself: the grid goes on, the other cells' rows stay, and the run ends as
  // an error that names the cell.
  void aFailingCellLosesOnlyItself() {
    const QString broken = tmp_.filePath(QStringLiteral("broken"));
    QVERIFY(QDir().mkpath(broken));
    const QDir sample(QStringLiteral(SDW_SOURCE_DIR "/samples/model/brown-llama"));
    for (const QString& f : sample.entryList(QDir::Files)) {
      QFile::remove(broken + QLatin1Char('/') + f);
      QVERIFY(QFile::copy(sample.filePath(f), broken + QLatin1Char('/') + f));
    }
    QVERIFY(writeText(broken + QStringLiteral("/model.sdwsparse"), QByteArray("not a packed file")));
    DecodeBenchRequest r = tinyCpuGrid();
    r.batches = {1};
    r.checkpoint = broken;
    const QList<QVariant> ended = run(r);
    QVERIFY(!ended.isEmpty());
    QVERIFY2(ended.at(1).toBool(), qPrintable(ended.at(0).toString()));
    const QString msg = ended.at(0).toString();
    qInfo("%s", qPrintable(msg));
    QVERIFY2(msg.startsWith(QStringLiteral("Done: 3 rows")) && msg.contains(QStringLiteral("1 cell(s) failed: broken")),
             qPrintable(msg));
    QCOMPARE(view_->resultsModel()->rowCount(), 3);
    QCOMPARE(view_->resultsModel()->rows().last().config, QStringLiteral("broken"));
    QCOMPARE(view_->resultsModel()->rows().last().linear, QStringLiteral("dense"));
  }

  void badFilesSayWhy_data() {
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<QString>("expected");
    QTest::newRow("not JSON") << QByteArray("{ rows: [") << "not valid JSON";
    QTest::newRow("kernel results") << QByteArray(R"({"rows": [{"model": "llama3-8b", "us": 10}]})")
                                    << "row 1: \"config\" missing";
    QTest::newRow("no rows") << QByteArray(R"({"benchmark": "decode-e2e", "rows": []})") << "no rows";
    QTest::newRow("bad batch") << QByteArray(R"({"rows": [{"config": "x", "batch": "one", "tokens_per_second": 1}]})")
                               << "\"batch\" missing or not a whole number";
    QTest::newRow("something else") << QByteArray(R"({"hello": 1})") << "not a decode benchmark result";
  }
  void badFilesSayWhy() {
    QFETCH(QByteArray, content);
    QFETCH(QString, expected);
    const int before = view_->resultsModel()->rowCount();
    const QString path = tmp_.filePath(QStringLiteral("bad.json"));
    QVERIFY(writeText(path, content));
    QSignalSpy ended(controller_.get(), &DecodeBenchController::runEnded);
    QVERIFY(controller_->openResults(path) != 0);
    QVERIFY(ended.wait(10000) || ended.count() == 1);
    QCOMPARE(ended.first().at(1).toBool(), true);
    QVERIFY2(ended.first().at(0).toString().contains(expected), qPrintable(ended.first().at(0).toString()));
    QCOMPARE(view_->resultsModel()->rowCount(), before);  // what was shown stays
  }

  void cancelStopsPromptly() {
    DecodeBenchRequest r = tinyCpuGrid();
    r.linears = {QStringLiteral("dense")};
    r.batches = {1};
    r.warmup = 0;
    r.tokens = 100000;  // minutes of steps
    QSignalSpy ended(controller_.get(), &DecodeBenchController::runEnded);
    QSignalSpy cancelled(jobs_.get(), &JobManager::cancelled);
    controller_->setDrainInterval(5);
    view_->setRequest(r);
    button(view_, "decodeStart")->click();
    QVERIFY(view_->isRunning());
    QVERIFY(button(view_, "decodeCancel")->isEnabled());
    QVERIFY(!button(view_, "decodeOpen")->isEnabled());
    const QString cell = QStringLiteral("bench-tiny · dense · batch 1");
    QTRY_VERIFY_WITH_TIMEOUT(view_->charts()->pointCount(cell) >= 20, 60000);
    QVERIFY(view_->charts()->isFollowing());
    QElapsedTimer t;
    t.start();
    button(view_, "decodeCancel")->click();
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 5000);
    controller_->setDrainInterval(40);
    QVERIFY2(t.elapsed() < 5000, qPrintable(QString::number(t.elapsed())));
    QCOMPARE(cancelled.count(), 1);
    QCOMPARE(ended.first().at(1).toBool(), false);
    QVERIFY2(ended.first().at(0).toString().startsWith(QStringLiteral("Cancelled")),
             qPrintable(ended.first().at(0).toString()));
    QVERIFY(!view_->isRunning());
    QVERIFY(view_->charts()->pointCount(cell) < 100000);
    QCOMPARE(view_->resultsModel()->rowCount(), 0);  // the cell never finished
    QVERIFY(button(view_, "decodeStart")->isEnabled());
  }

  // The dual-sparse engine from the view: col2:4 with activation sparsity 0.5 reaches the
  // run (the spMspV reference on the CPU), and its rows and the command say so.
  void runsTheDualSparseEngine() {
    DecodeBenchRequest r = tinyCpuGrid();
    r.linears = {QStringLiteral("sparse")};
    r.patterns = {QStringLiteral("col2:4")};
    r.batches = {1};
    r.activationSparsity = 0.5;
    view_->setRequest(r);
    auto* spin = view_->findChild<QDoubleSpinBox*>(QStringLiteral("decodeActivationSparsity"));
    QVERIFY(spin);
    QCOMPARE(spin->value(), 0.5);
    QVERIFY(view_->findChild<QCheckBox*>(QStringLiteral("decodePattern_col2_4")));
    QCOMPARE(view_->request().activationSparsity, 0.5);
    QCOMPARE(view_->request().patterns, QStringList{QStringLiteral("col2:4")});
    const QList<QVariant> ended = run(r);
    QVERIFY(!ended.isEmpty());
    QVERIFY2(!ended.at(1).toBool(), qPrintable(ended.at(0).toString()));
    const std::vector<nlohmann::json>& json = controller_->rows();
    QCOMPARE(int(json.size()), 1);
    QCOMPARE(json[0].at("pattern").get<std::string>(), std::string("col2:4"));
    QCOMPARE(json[0].at("activation_sparsity").get<double>(), 0.5);
    QVERIFY2(json[0].at("engine").get<std::string>().find("CPU spMspV col2:4") != std::string::npos,
             json[0].at("engine").get<std::string>().c_str());
    QCOMPARE(json[0].at("activation_selection").get<std::string>(), std::string("top-k"));

    // Fixed thresholds from the prefill (TEAL): the box enables with p_x, the request, the
    // rows and the command carry it.
    auto* thresholds = view_->findChild<QCheckBox*>(QStringLiteral("decodeActivationThresholds"));
    QVERIFY(thresholds && thresholds->isEnabled());
    r.activationThresholds = true;
    view_->setRequest(r);
    QVERIFY(thresholds->isChecked());
    QVERIFY(view_->request().activationThresholds);
    const QList<QVariant> teal = run(r);
    QVERIFY(!teal.isEmpty());
    QVERIFY2(!teal.at(1).toBool(), qPrintable(teal.at(0).toString()));
    const std::vector<nlohmann::json>& tealRows = controller_->rows();
    QCOMPARE(int(tealRows.size()), 1);
    QCOMPARE(tealRows[0].at("activation_selection").get<std::string>(), std::string("thresholds (prefill)"));
    QCOMPARE(controller_->meta().at("activation_selection").get<std::string>(), std::string("thresholds (prefill)"));
    QVERIFY2(controller_->meta().at("command").get<std::string>().find("--activation-selection thresholds") !=
                 std::string::npos,
             controller_->meta().dump().c_str());
    spin->setValue(0.0);
    QVERIFY(!thresholds->isEnabled());
    QVERIFY(!view_->request().activationThresholds);
    thresholds->setChecked(false);
  }

  void stepAxisScrollsWhileLive() {
    DecodeBenchCharts charts;
    charts.resize(600, 500);
    charts.setScrollWindow(10);
    charts.setFollowing(true);
    QVector<sdw::widgets::DecodeStepPoint> points;
    for (int i = 0; i < 30; ++i)
      points.push_back({QStringLiteral("c"), QStringLiteral("dense"), QString(), 1, i, 2.0, 500.0 + i});
    charts.addSteps(points);
    QTest::qWait(100);
    QCOMPARE(charts.stepView()->xRange(), (std::pair<double, double>(19.5, 29.5)));
    charts.setFollowing(false);
    QTest::qWait(100);
    QCOMPARE(charts.stepView()->xRange(), (std::pair<double, double>(-0.5, 29.5)));
  }
};

QTEST_MAIN(TestDecodeView)
#include "test_decode_view.moc"
