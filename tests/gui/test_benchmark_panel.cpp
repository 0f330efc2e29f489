// The Benchmark panel offscreen, driven through its controller: a CPU
// benchmark on tiny custom shapes end to end (table, rolling charts, speedup
// bars, summary), cancel within a second, a results JSON (the format of
// `sdw-cli bench kernels --out FILE`) shown the same way, exports, the
// speedup arithmetic against hand-computed values, and charts a reader can
// follow: legends clear of the data, an x axis from the run's start, shape
// labels that never run into each other. The activation-sparsity axis
// (spMspV): the settings field into the run, and the chart's points from a
// file and from a tiny CPU run.

#include "app/gui/benchmarkcontroller.h"
#include "app/jobmanager.h"
#include "gpu/bench.h"
#include "gpu/device.h"
#include "widgets/activationsparsitychart.h"
#include "widgets/benchcharts.h"
#include "widgets/benchmarkpanel.h"
#include "widgets/benchresultsmodel.h"
#include "widgets/legendstrip.h"
#include "widgets/plotview.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QCheckBox>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>

using sdw::app::BenchmarkController;
using sdw::app::JobManager;
using sdw::widgets::BenchmarkPanel;
using sdw::widgets::BenchRequest;
using sdw::widgets::BenchResultsModel;

namespace {

// Hand-written in the layout gpu/bench.cpp's toJson writes; times are round
// numbers of the size measured on an H200 (docs/kernels.md) so the expected
// speedups are easy to check by hand. Row order is the GPU runner's:
// cuSPARSELt before cuBLAS, so the controller must not rely on row order.
const char* const kFixture = R"({
 "tool": "sdw-cli bench kernels",
 "command": "sdw-cli bench kernels --shapes llama3-8b --json --out fixture.json",
 "machine": {"backend": "cuda", "device": "NVIDIA H200", "driver": "580", "torch": "2.11"},
 "hbm_read_gbs": 4640,
 "cusparselt": "ok",
 "settings": {"dtype": "bf16", "patterns": ["2:4", "4:8"], "batches": [1], "repeats": 7},
 "notes": [],
 "rows": [
  {"model": "llama3-8b", "module": "q_proj", "rows": 4096, "cols": 4096, "pattern": "2:4", "batch": 1, "kernel": "cusparselt", "us": 20.0, "bytes": 18874368, "gbs": 943.7, "fraction_hbm": 0.203, "speedup_vs_cublas": 0, "speedup_vs_dense": 0},
  {"model": "llama3-8b", "module": "q_proj", "rows": 4096, "cols": 4096, "pattern": "-", "batch": 1, "kernel": "cublas", "us": 12.0, "bytes": 33554432, "gbs": 2796, "fraction_hbm": 0.603, "speedup_vs_cublas": 1, "speedup_vs_dense": 0},
  {"model": "llama3-8b", "module": "q_proj", "rows": 4096, "cols": 4096, "pattern": "-", "batch": 1, "kernel": "dense", "us": 10.0, "bytes": 33554432, "gbs": 3355, "fraction_hbm": 0.723, "speedup_vs_cublas": 1.2, "speedup_vs_dense": 1},
  {"model": "llama3-8b", "module": "q_proj", "rows": 4096, "cols": 4096, "pattern": "2:4", "batch": 1, "kernel": "sparse", "us": 8.0, "us_chained": 7.5, "bytes": 18874368, "gbs": 2359, "fraction_hbm": 0.508, "speedup_vs_cublas": 1.5, "speedup_vs_dense": 1.25},
  {"model": "llama3-8b", "module": "q_proj", "rows": 4096, "cols": 4096, "pattern": "4:8", "batch": 1, "kernel": "sparse", "us": 7.5, "bytes": 18874368, "gbs": 2517, "fraction_hbm": 0.542, "speedup_vs_cublas": 1.6, "speedup_vs_dense": 1.333},
  {"model": "llama3-8b", "module": "k_proj", "rows": 1024, "cols": 4096, "pattern": "2:4", "batch": 1, "kernel": "cusparselt", "us": 16.0, "bytes": 4718592, "gbs": 295, "fraction_hbm": 0.064, "speedup_vs_cublas": 0, "speedup_vs_dense": 0},
  {"model": "llama3-8b", "module": "k_proj", "rows": 1024, "cols": 4096, "pattern": "-", "batch": 1, "kernel": "cublas", "us": 8.0, "bytes": 8388608, "gbs": 1049, "fraction_hbm": 0.226, "speedup_vs_cublas": 1, "speedup_vs_dense": 0},
  {"model": "llama3-8b", "module": "k_proj", "rows": 1024, "cols": 4096, "pattern": "-", "batch": 1, "kernel": "dense", "us": 6.0, "bytes": 8388608, "gbs": 1398, "fraction_hbm": 0.301, "speedup_vs_cublas": 1.333, "speedup_vs_dense": 1},
  {"model": "llama3-8b", "module": "k_proj", "rows": 1024, "cols": 4096, "pattern": "2:4", "batch": 1, "kernel": "sparse", "us": 5.0, "us_chained": 4.0, "bytes": 4718592, "gbs": 944, "fraction_hbm": 0.203, "speedup_vs_cublas": 1.6, "speedup_vs_dense": 1.2},
  {"model": "llama3-8b", "module": "k_proj", "rows": 1024, "cols": 4096, "pattern": "4:8", "batch": 1, "kernel": "sparse", "us": 4.0, "bytes": 4718592, "gbs": 1180, "fraction_hbm": 0.254, "speedup_vs_cublas": 2, "speedup_vs_dense": 1.5}
 ]
})";
constexpr int kFixtureRows = 10;

// The same layout with spMspV rows (sdw-cli bench kernels --activation-sparsity 0,0.5):
// per shape cuBLAS, our dense GEMV, sparse 2:4 and spMspV at p_x 0 and 0.5. Round numbers
// again: speedups over our dense GEMV q 10/12.5 = 0.8 and 10/5 = 2, k 6/7.5 = 0.8 and
// 6/4 = 1.5; bytes limits (dense / spMspV bytes) q 33554432/19922944 and 33554432/9961472,
// k 8388608/5242880 = 1.6 and 8388608/2621440 = 3.2.
const char* const kSpmspvFixture = R"({
 "tool": "sdw-cli bench kernels",
 "command": "sdw-cli bench kernels --shapes llama3-8b --patterns 2:4 --activation-sparsity 0,0.5 --json --out spmspv.json",
 "machine": {"backend": "cuda", "device": "NVIDIA H200", "driver": "580", "torch": "2.11"},
 "hbm_read_gbs": 4640,
 "cusparselt": "ok",
 "settings": {"dtype": "bf16", "patterns": ["2:4"], "batches": [1], "repeats": 7, "activation_sparsities": [0, 0.5]},
 "notes": [],
 "rows": [
  {"model": "llama3-8b", "module": "q_proj", "rows": 4096, "cols": 4096, "pattern": "-", "batch": 1, "kernel": "cublas", "us": 12.0, "bytes": 33554432, "gbs": 2796, "fraction_hbm": 0.603, "speedup_vs_cublas": 1, "speedup_vs_dense": 0},
  {"model": "llama3-8b", "module": "q_proj", "rows": 4096, "cols": 4096, "pattern": "-", "batch": 1, "kernel": "dense", "us": 10.0, "bytes": 33554432, "gbs": 3355, "fraction_hbm": 0.723, "speedup_vs_cublas": 1.2, "speedup_vs_dense": 1},
  {"model": "llama3-8b", "module": "q_proj", "rows": 4096, "cols": 4096, "pattern": "2:4", "batch": 1, "kernel": "sparse", "us": 8.0, "bytes": 18874368, "gbs": 2359, "fraction_hbm": 0.508, "speedup_vs_cublas": 1.5, "speedup_vs_dense": 1.25},
  {"model": "llama3-8b", "module": "k_proj", "rows": 1024, "cols": 4096, "pattern": "-", "batch": 1, "kernel": "cublas", "us": 8.0, "bytes": 8388608, "gbs": 1049, "fraction_hbm": 0.226, "speedup_vs_cublas": 1, "speedup_vs_dense": 0},
  {"model": "llama3-8b", "module": "k_proj", "rows": 1024, "cols": 4096, "pattern": "-", "batch": 1, "kernel": "dense", "us": 6.0, "bytes": 8388608, "gbs": 1398, "fraction_hbm": 0.301, "speedup_vs_cublas": 1.333, "speedup_vs_dense": 1},
  {"model": "llama3-8b", "module": "k_proj", "rows": 1024, "cols": 4096, "pattern": "2:4", "batch": 1, "kernel": "sparse", "us": 5.0, "bytes": 4718592, "gbs": 944, "fraction_hbm": 0.203, "speedup_vs_cublas": 1.6, "speedup_vs_dense": 1.2},
  {"model": "llama3-8b", "module": "q_proj", "rows": 4096, "cols": 4096, "pattern": "50%", "batch": 1, "kernel": "spmspv", "us": 12.5, "bytes": 19922944, "gbs": 1594, "fraction_hbm": 0.344, "speedup_vs_cublas": 0.96, "speedup_vs_dense": 0.8, "activation_sparsity": 0},
  {"model": "llama3-8b", "module": "q_proj", "rows": 4096, "cols": 4096, "pattern": "50%", "batch": 1, "kernel": "spmspv", "us": 5.0, "bytes": 9961472, "gbs": 1992, "fraction_hbm": 0.429, "speedup_vs_cublas": 2.4, "speedup_vs_dense": 2, "activation_sparsity": 0.5},
  {"model": "llama3-8b", "module": "k_proj", "rows": 1024, "cols": 4096, "pattern": "50%", "batch": 1, "kernel": "spmspv", "us": 7.5, "bytes": 5242880, "gbs": 699, "fraction_hbm": 0.151, "speedup_vs_cublas": 1.067, "speedup_vs_dense": 0.8, "activation_sparsity": 0},
  {"model": "llama3-8b", "module": "k_proj", "rows": 1024, "cols": 4096, "pattern": "50%", "batch": 1, "kernel": "spmspv", "us": 4.0, "bytes": 2621440, "gbs": 655, "fraction_hbm": 0.141, "speedup_vs_cublas": 2, "speedup_vs_dense": 1.5, "activation_sparsity": 0.5}
 ]
})";
constexpr int kSpmspvFixtureRows = 10;

int csvLines(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly | QIODevice::Text)) return -1;
  return static_cast<int>(QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts).size());
}

// True when no two of the rects overlap.
bool disjoint(const QVector<QRect>& rects) {
  for (int i = 0; i < rects.size(); ++i)
    for (int j = i + 1; j < rects.size(); ++j)
      if (rects[i].intersects(rects[j])) return false;
  return true;
}

int rowOf(const BenchResultsModel* m, const char* module, const char* kernel, const char* pattern) {
  for (int i = 0; i < m->rowCount(); ++i) {
    const auto& r = m->rows()[i];
    if (r.module == module && r.kernel == kernel && r.pattern == pattern) return i;
  }
  return -1;
}

}  // namespace

class TestBenchmarkPanel : public QObject {
  Q_OBJECT
 private:
  std::unique_ptr<JobManager> jobs_;
  std::unique_ptr<BenchmarkPanel> panel_;
  std::unique_ptr<BenchmarkController> controller_;
  std::unique_ptr<QAbstractItemModelTester> tester_, proxyTester_;
  QTemporaryDir tmp_;

  BenchRequest tinyCpuRequest() const {
    BenchRequest r;
    r.settings.patterns = {"2:4", "4:8"};
    r.settings.batches = {1, 2};
    r.settings.repeats = 3;
    r.settings.forceCpu = true;
    r.customShapes = QStringLiteral("64x128,96x64");
    return r;
  }

  bool loadFixture(const char* text = kFixture, const QString& name = QStringLiteral("fixture.json")) {
    const QString path = tmp_.filePath(name);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(text) < 0) return false;
    f.close();
    QSignalSpy loaded(controller_.get(), &BenchmarkController::resultLoaded);
    if (controller_->openResults(path) == 0) return false;
    return loaded.wait(10000) || loaded.count() == 1;
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    jobs_ = std::make_unique<JobManager>();
    jobs_->setProgressInterval(5);
    panel_ = std::make_unique<BenchmarkPanel>();
    panel_->resize(1400, 900);
    panel_->show();
    controller_ = std::make_unique<BenchmarkController>(jobs_.get());
    controller_->attach(panel_.get());
    using Mode = QAbstractItemModelTester::FailureReportingMode;
    tester_ = std::make_unique<QAbstractItemModelTester>(panel_->resultsModel(), Mode::QtTest);
    proxyTester_ = std::make_unique<QAbstractItemModelTester>(panel_->proxyModel(), Mode::QtTest);
  }

  void cleanupTestCase() {
    controller_->cancel();
    jobs_->cancelAll();
    QVERIFY(jobs_->waitForDone(10000));
  }

  void deviceLineSaysWhatRuns() {
    const sdw::gpu::DeviceInfo& d = sdw::gpu::deviceInfo();
    if (d.cudaAvailable) {
      QVERIFY2(panel_->deviceText().startsWith(QStringLiteral("GPU: ")), qPrintable(panel_->deviceText()));
    } else {
      QVERIFY2(panel_->deviceText().startsWith(QStringLiteral("no GPU: benchmarking the CPU kernels")),
               qPrintable(panel_->deviceText()));
      QVERIFY(panel_->deviceText().contains(QString::fromStdString(d.reason)));
    }
  }

  void invalidRequestIsRefused_data() {
    QTest::addColumn<QString>("shapes");
    QTest::addColumn<QString>("activation");
    QTest::addColumn<QString>("why");
    QTest::newRow("shape") << QStringLiteral("12xbanana") << QString() << QStringLiteral("Cannot start: custom shapes");
    QTest::newRow("p_x of 1") << QStringLiteral("64x128") << QStringLiteral("0.5,1")
                              << QStringLiteral("Cannot start: activation sparsity: activation sparsity 1 is outside");
    QTest::newRow("p_x not a number") << QStringLiteral("64x128") << QStringLiteral("0, half")
                                      << QStringLiteral(
                                             "Cannot start: activation sparsity: bad activation sparsity 'half'");
  }

  void invalidRequestIsRefused() {
    QFETCH(QString, shapes);
    QFETCH(QString, activation);
    QFETCH(QString, why);
    BenchRequest r = tinyCpuRequest();
    r.customShapes = shapes;
    r.activationSparsities = activation;
    QSignalSpy ended(controller_.get(), &BenchmarkController::runEnded);
    QCOMPARE(controller_->start(r), sdw::app::JobId(0));
    QCOMPARE(ended.count(), 1);
    QVERIFY(ended.first().at(1).toBool());
    QVERIFY2(panel_->statusText().startsWith(why), qPrintable(panel_->statusText()));
    QVERIFY(!controller_->isRunning());
  }

  void cpuRunFillsTableAndCharts() {
    QSignalSpy measured(controller_.get(), &BenchmarkController::measured);
    QSignalSpy started(jobs_.get(), &JobManager::started);
    QVERIFY(controller_->start(tinyCpuRequest()) != 0);
    QCOMPARE(started.count(), 1);
    QCOMPARE(started.first().at(1).toString(), QStringLiteral("Benchmark kernels"));
    QVERIFY(panel_->isRunning());
    QTRY_VERIFY_WITH_TIMEOUT(!controller_->isRunning(), 60000);
    QVERIFY(!panel_->isRunning());
    QVERIFY2(panel_->statusText().startsWith(QStringLiteral("Done: 12 measurements")),
             qPrintable(panel_->statusText()));
    // A finished run shows a full bar, whatever the last (throttled) report said.
    QCOMPARE(panel_->findChild<QProgressBar*>(QStringLiteral("benchProgress"))->value(), 1000);

    // 2 shapes x 2 batches x (our dense + 2 patterns)
    const BenchResultsModel* m = panel_->resultsModel();
    QCOMPARE(m->rowCount(), 12);
    QVERIFY(measured.count() >= 1);
    for (int i = 0; i < m->rowCount(); ++i) {
      const auto& r = m->rows()[i];
      QVERIFY(r.us > 0);
      QVERIFY(r.gbs > 0);
      QVERIFY(r.kernel == "dense-cpu" || r.kernel == "sparse-cpu");
      // speedup over the CPU dense GEMV of the same shape and batch
      double denseUs = 0;
      for (const auto& o : m->rows())
        if (o.kernel == "dense-cpu" && o.rows == r.rows && o.cols == r.cols && o.batch == r.batch) denseUs = o.us;
      QVERIFY(denseUs > 0);
      QCOMPARE(m->speedup(i), denseUs / r.us);
    }
    QCOMPARE(m->data(m->index(0, BenchResultsModel::Shape)).toString(), QStringLiteral("64x128"));

    auto* charts = panel_->charts();
    QCOMPARE(charts->kernelSeries().size(), 3);
    QVERIFY(charts->kernelSeries().contains(QStringLiteral("sparse 2:4 (CPU)")));
    QCOMPARE(charts->pointCount(QStringLiteral("dense GEMV (CPU)")), 4);  // 2 shapes x 2 batches
    QCOMPARE(charts->speedupBars().batch, 1);
    QCOMPARE(charts->speedupBars().shapes, (QStringList{QStringLiteral("64x128"), QStringLiteral("96x64")}));
    QCOMPARE(charts->barCount(), 4);  // 2 shapes x 2 patterns at batch 1
    QCOMPARE(charts->bandwidthLimit(), 1.78);
    QVERIFY(charts->bandwidthLimitLabel().contains(QStringLiteral("1.78x")));
    QVERIFY2(panel_->summaryText().startsWith(QStringLiteral("Batch 1 medians over 2 shape(s)")),
             qPrintable(panel_->summaryText()));
    QVERIFY(panel_->summaryText().contains(QStringLiteral("dense GEMV (CPU)")));

    // The time axis says what it counts and starts at the run's first kernel.
    for (sdw::widgets::PlotView* v : {charts->timeView(), charts->bandwidthView()}) {
      QCOMPARE(v->xAxisLabel(), QStringLiteral("kernels timed since the run started"));
      QTRY_VERIFY(v->xRange().first <= 0.0);
      QVERIFY(v->xRange().first > -1.0);
      QTRY_VERIFY(v->xRange().second >= 11.0);  // the 12th measurement, index 11, in view
      // Their series are named by the strip above both, not inside the axes.
      QVERIFY(v->legendRect().isEmpty());
    }
    QStringList strip = charts->legendStrip()->names();
    QStringList series = charts->kernelSeries();
    strip.sort();
    series.sort();
    QCOMPARE(strip, series);
    QVERIFY(charts->legendStrip()->isVisible());
    QVERIFY(charts->legendStrip()->height() >= charts->legendStrip()->heightForWidth(charts->legendStrip()->width()));

    // The bars' legend sits in a row of its own, off the data.
    sdw::widgets::PlotView* bars = charts->speedupView();
    QTRY_VERIFY(!bars->legendRect().isEmpty());
    QVERIFY2(!bars->legendRect().intersects(bars->dataRect()),
             qPrintable(QStringLiteral("legend %1,%2 %3x%4, data %5,%6 %7x%8")
                            .arg(bars->legendRect().x())
                            .arg(bars->legendRect().y())
                            .arg(bars->legendRect().width())
                            .arg(bars->legendRect().height())
                            .arg(bars->dataRect().x())
                            .arg(bars->dataRect().y())
                            .arg(bars->dataRect().width())
                            .arg(bars->dataRect().height())));
    QCOMPARE(charts->shapeTickLabels(), (QStringList{QStringLiteral("64x128"), QStringLiteral("96x64")}));
    QVERIFY(charts->shapeGroupLabels().isEmpty());
    QVERIFY(disjoint(charts->shapeLabelRects()));
    // No chained times on the CPU: the column is not shown.
    QVERIFY(panel_->tableView()->isColumnHidden(BenchResultsModel::ChainedUs));
  }

  void shapeLabelsNeverOverlap_data() {
    QTest::addColumn<int>("width");
    QTest::newRow("narrow") << 700;
    QTest::newRow("wide") << 1700;
  }

  void shapeLabelsNeverOverlap() {
    // The three models' projections and whole layers, as a GPU run has them.
    QFETCH(int, width);
    sdw::widgets::SpeedupBars b;
    const QStringList models = {QStringLiteral("llama3-8b"), QStringLiteral("qwen3-14b"), QStringLiteral("qwen3-32b")};
    const QStringList modules = {QStringLiteral("q_proj"),   QStringLiteral("k_proj"),    QStringLiteral("v_proj"),
                                 QStringLiteral("o_proj"),   QStringLiteral("gate_proj"), QStringLiteral("up_proj"),
                                 QStringLiteral("down_proj")};
    for (const QString& m : models)
      for (const QString& p : modules) b.shapes << m + QLatin1Char(' ') + p;
    for (const QString& m : models) b.shapes << QStringLiteral("layer (%1)").arg(m);
    b.series = {QStringLiteral("sparse 2:4"), QStringLiteral("sparse 4:8"), QStringLiteral("dense GEMV (ours)")};
    b.values = QVector<QVector<double>>(b.series.size(), QVector<double>(b.shapes.size(), 1.5));
    b.baseline = QStringLiteral("cuBLAS");

    sdw::widgets::BenchCharts charts;
    charts.resize(width, 600);
    charts.show();
    QVERIFY(QTest::qWaitForWindowExposed(&charts));
    charts.setSpeedupBars(b);
    QCOMPARE(charts.barCount(), 3 * 24);
    QCOMPARE(charts.shapeGroupLabels(), models);
    // Each model's projections by their short names, then its whole layer.
    const QStringList one = {QStringLiteral("q"),    QStringLiteral("k"),    QStringLiteral("v"),
                             QStringLiteral("o"),    QStringLiteral("gate"), QStringLiteral("up"),
                             QStringLiteral("down"), QStringLiteral("layer")};
    QCOMPARE(charts.shapeTickLabels(), one + one + one);
    // Laid out (and re-laid out, when the labels had to alternate lines).
    QTRY_VERIFY_WITH_TIMEOUT(disjoint(charts.shapeLabelRects()), 3000);
    QTest::qWait(100);
    QVERIFY(disjoint(charts.shapeLabelRects()));
    sdw::widgets::PlotView* v = charts.speedupView();
    QVERIFY(!v->legendRect().isEmpty());
    QVERIFY(!v->legendRect().intersects(v->dataRect()));
    for (const QRect& r : charts.shapeLabelRects()) QVERIFY(!r.intersects(v->dataRect()));
    // Whatever the display order, the CSV keeps the caller's.
    QVERIFY(charts.speedupCsv().split(QLatin1Char('\n'))[1].startsWith(QStringLiteral("\"llama3-8b q_proj\"")));
  }

  void cancelStopsWithinOneSecond() {
    BenchRequest r;
    r.settings.batches = {1, 2, 4, 8};
    r.settings.repeats = 30;
    r.settings.forceCpu = true;
    r.customShapes = QStringLiteral("1024x1024,1024x2048");
    const int total = 2 * 4 * 5;
    QVERIFY(controller_->start(r) != 0);
    QTRY_VERIFY_WITH_TIMEOUT(controller_->rows().size() >= 1, 60000);
    QElapsedTimer t;
    t.start();
    panel_->findChild<QPushButton*>(QStringLiteral("benchCancel"))->click();
    QTRY_VERIFY_WITH_TIMEOUT(!controller_->isRunning(), 1000);
    QVERIFY2(t.elapsed() < 1000, qPrintable(QString::number(t.elapsed())));
    QVERIFY(controller_->rows().size() < total);
    QCOMPARE(panel_->resultsModel()->rowCount(), controller_->rows().size());
    QVERIFY2(panel_->statusText().startsWith(QStringLiteral("Cancelled after")), qPrintable(panel_->statusText()));
    QVERIFY(jobs_->waitForDone(5000));
  }

  void resultsFileIsShownTheSameWay() {
    QVERIFY(loadFixture());
    const BenchResultsModel* m = panel_->resultsModel();
    QCOMPARE(m->rowCount(), kFixtureRows);
    QCOMPARE(controller_->result().hbmReadGBs, 4640.0);

    // cuSPARSELt came before cuBLAS in the file: its speedup is still over cuBLAS.
    QCOMPARE(m->speedup(rowOf(m, "q_proj", "cusparselt", "2:4")), 12.0 / 20.0);
    QCOMPARE(m->speedup(rowOf(m, "q_proj", "sparse", "2:4")), 12.0 / 8.0);
    QCOMPARE(m->speedup(rowOf(m, "k_proj", "sparse", "4:8")), 8.0 / 4.0);
    QCOMPARE(m->data(m->index(rowOf(m, "k_proj", "sparse", "4:8"), BenchResultsModel::Speedup)).toString(),
             QStringLiteral("2.00x"));
    QCOMPARE(m->data(m->index(rowOf(m, "q_proj", "dense", "-"), BenchResultsModel::PercentHbm)).toString(),
             QStringLiteral("72.3"));

    // bars: 2 shapes x (2 patterns + our dense + cuSPARSELt), over cuBLAS
    const auto& bars = panel_->charts()->speedupBars();
    QCOMPARE(bars.baseline, QStringLiteral("cuBLAS"));
    QCOMPARE(bars.shapes, (QStringList{QStringLiteral("llama3-8b q_proj"), QStringLiteral("llama3-8b k_proj")}));
    QCOMPARE(bars.series, (QStringList{QStringLiteral("sparse 2:4"), QStringLiteral("sparse 4:8"),
                                       QStringLiteral("dense GEMV (ours)"), QStringLiteral("cuSPARSELt 2:4")}));
    QCOMPARE(panel_->charts()->barCount(), 8);
    QCOMPARE(bars.values[0][0], 1.5);        // q_proj 2:4: 12 / 8
    QCOMPARE(bars.values[2][1], 8.0 / 6.0);  // k_proj our dense
    QCOMPARE(bars.values[3][1], 0.5);        // k_proj cuSPARSELt: 8 / 16
    QCOMPARE(panel_->charts()->pointCount(QStringLiteral("cuBLAS")), 2);

    // summary: medians of two values are their mean
    const QString s = panel_->summaryText();
    QVERIFY2(s.contains(QStringLiteral("speedup over cuBLAS: 2:4 1.55x · 4:8 1.80x")), qPrintable(s));
    QVERIFY2(s.contains(QStringLiteral("over our dense GEMV: 2:4 1.2")), qPrintable(s));  // (1.25 + 1.2) / 2
    QVERIFY2(s.contains(QStringLiteral("· 4:8 1.42x; over cuSPARSELt")), qPrintable(s));  // (4/3 + 1.5) / 2
    QVERIFY2(s.contains(QStringLiteral("over cuSPARSELt 2:4: 2:4 2.8")), qPrintable(s));  // (2.5 + 3.2) / 2
    QVERIFY2(s.contains(QStringLiteral("of 4640 GB/s")), qPrintable(s));
    // chained times (2:4 only in the file): over cuBLAS 12 / 7.5 and 8 / 4
    QVERIFY2(s.contains(QStringLiteral("launched chained (programmatic dependent launch), over cuBLAS: 2:4 1.80x.")),
             qPrintable(s));
    QCOMPARE(m->data(m->index(rowOf(m, "q_proj", "sparse", "2:4"), BenchResultsModel::ChainedUs)).toString(),
             QStringLiteral("7.50"));
    QCOMPARE(m->data(m->index(rowOf(m, "q_proj", "sparse", "4:8"), BenchResultsModel::ChainedUs)).toString(),
             QStringLiteral("-"));
    QVERIFY(!panel_->tableView()->isColumnHidden(BenchResultsModel::ChainedUs));

    // No spMspV rows: no activation-sparsity chart, and its empty state says why.
    const auto* activation = panel_->charts()->activationChart();
    QVERIFY(!activation->isVisible());
    QVERIFY(activation->speedups().isEmpty());
    QCOMPARE(activation->seriesNames(), QStringList());
    QVERIFY(activation->view()->xAxisLabel().startsWith(QStringLiteral("no spMspV rows")));

    // Model shapes: short labels under the model's name.
    QCOMPARE(panel_->charts()->shapeTickLabels(), (QStringList{QStringLiteral("q"), QStringLiteral("k")}));
    QCOMPARE(panel_->charts()->shapeGroupLabels(), QStringList{QStringLiteral("llama3-8b")});
    // A results file, too, is drawn from its first measurement.
    QTRY_COMPARE(panel_->charts()->timeView()->xRange().first, -0.5);
    QVERIFY(panel_->charts()->timeView()->xRange().second >= kFixtureRows - 1);

    // sortable: fastest first by median time
    QSortFilterProxyModel* proxy = panel_->proxyModel();
    proxy->sort(BenchResultsModel::MedianUs, Qt::AscendingOrder);
    QCOMPARE(proxy->data(proxy->index(0, BenchResultsModel::MedianUs)).toString(), QStringLiteral("4.00"));
    proxy->sort(BenchResultsModel::Speedup, Qt::DescendingOrder);
    QCOMPARE(proxy->data(proxy->index(0, BenchResultsModel::Speedup)).toString(), QStringLiteral("2.00x"));
    proxy->sort(-1);
  }

  void exportsOneRowPerResult() {
    QVERIFY(loadFixture());
    const QString csv = tmp_.filePath(QStringLiteral("table.csv"));
    QCOMPARE(controller_->exportTable(csv), QString());
    QCOMPARE(csvLines(csv), 1 + kFixtureRows);

    // JSON export reads back as the same rows
    const QString json = tmp_.filePath(QStringLiteral("table.json"));
    QCOMPARE(controller_->exportTable(json), QString());
    QFile f(json);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const sdw::gpu::BenchResult back = sdw::gpu::fromJson(f.readAll().toStdString());
    QCOMPARE(int(back.rows.size()), kFixtureRows);
    QCOMPARE(back.device, std::string("NVIDIA H200"));
    QCOMPARE(back.rows[3].us, 8.0);

    // each chart exports its data
    const QString bars = tmp_.filePath(QStringLiteral("bars.csv"));
    QCOMPARE(panel_->charts()->speedupView()->exportTo(bars), QString());
    QCOMPARE(csvLines(bars), 1 + 8);
    const QString times = tmp_.filePath(QStringLiteral("times.csv"));
    QCOMPARE(panel_->charts()->timeView()->exportTo(times), QString());
    QCOMPARE(csvLines(times), 1 + kFixtureRows);
    const QString png = tmp_.filePath(QStringLiteral("bars.png"));
    QCOMPARE(panel_->charts()->speedupView()->exportTo(png), QString());
    QVERIFY(QFileInfo(png).size() > 1000);
    // A picture of the time chart alone carries its legend; on screen it stays off.
    const QString timePng = tmp_.filePath(QStringLiteral("times.png"));
    QCOMPARE(panel_->charts()->timeView()->exportTo(timePng), QString());
    QVERIFY(QFileInfo(timePng).size() > 1000);
    QTRY_VERIFY(panel_->charts()->timeView()->legendRect().isEmpty());
    QCOMPARE(csvLines(times), 1 + kFixtureRows);
    QCOMPARE(controller_->exportTable(tmp_.filePath(QStringLiteral("table.txt"))).isEmpty(), false);
  }

  void activationSparsityFromResultsFile() {
    QVERIFY(loadFixture(kSpmspvFixture, QStringLiteral("spmspv.json")));
    QCOMPARE(panel_->resultsModel()->rowCount(), kSpmspvFixtureRows);
    QCOMPARE(controller_->settings().activationSparsities, (std::vector<double>{0.0, 0.5}));
    auto* charts = panel_->charts();
    const auto* chart = charts->activationChart();
    QTRY_VERIFY(chart->isVisible());

    // One line per shape over our dense GEMV, although cuBLAS was measured too.
    const QString q = QStringLiteral("llama3-8b q_proj"), k = QStringLiteral("llama3-8b k_proj");
    const QString median = sdw::widgets::ActivationSparsityChart::medianName();
    const QString limit = sdw::widgets::ActivationSparsityChart::limitName();
    QCOMPARE(chart->seriesNames(), (QStringList{q, k, median, limit}));
    QCOMPARE(chart->speedups().baseline, QStringLiteral("our dense GEMV"));
    QCOMPARE(chart->points(q), (QVector<QPointF>{{0.0, 0.8}, {0.5, 2.0}}));
    QCOMPARE(chart->points(k), (QVector<QPointF>{{0.0, 0.8}, {0.5, 1.5}}));
    // The median line is the file's activation summary: medians of two are means.
    QCOMPARE(chart->points(median), (QVector<QPointF>{{0.0, 0.8}, {0.5, 1.75}}));
    QCOMPARE(int(controller_->result().activationSummary.size()), 2);
    QCOMPARE(controller_->result().activationSummary[1].medianVsDense, 1.75);
    const double q0 = 33554432.0 / 19922944.0, q5 = 33554432.0 / 9961472.0;
    QCOMPARE(chart->points(limit), (QVector<QPointF>{{0.0, (q0 + 1.6) / 2}, {0.5, (q5 + 3.2) / 2}}));
    // The strip names the projections' colours, the median and the limit.
    QCOMPARE(chart->legendStrip()->names(), (QStringList{QStringLiteral("q"), QStringLiteral("k"), median, limit}));
    QCOMPARE(chart->view()->xAxisLabel(), QStringLiteral("activation sparsity p_x (batch 1, 50% weights)"));

    // In the live charts each p_x is a series of its own; the table says p_x too.
    QCOMPARE(charts->pointCount(QStringLiteral("spmspv p_x 0")), 2);
    QCOMPARE(charts->pointCount(QStringLiteral("spmspv p_x 0.5")), 2);
    // The strip names the layout once, a shade per p_x (the series' own colours, in p_x order).
    const QStringList stripNames = charts->legendStrip()->names();
    QCOMPARE(stripNames.count(QStringLiteral("spmspv · p_x 0, 0.5")), 1);
    QVERIFY(!stripNames.contains(QStringLiteral("spmspv p_x 0")));
    for (const auto& e : charts->legendStrip()->entries()) {
      if (e.name != QStringLiteral("spmspv · p_x 0, 0.5")) continue;
      QCOMPARE(e.shades.size(), 2);
      QCOMPARE(e.shades[0], charts->seriesColor(QStringLiteral("spmspv p_x 0")));
      QCOMPARE(e.shades[1], charts->seriesColor(QStringLiteral("spmspv p_x 0.5")));
    }
    const BenchResultsModel* m = panel_->resultsModel();
    QCOMPARE(m->data(m->index(7, BenchResultsModel::Pattern)).toString(), QStringLiteral("50%, p_x 0.5"));
    QCOMPARE(m->data(m->index(1, BenchResultsModel::Pattern)).toString(), QStringLiteral("-"));
    // spMspV is not an N:M pattern: the bars keep to the sparse 2:4 and our dense.
    QCOMPARE(charts->speedupBars().series,
             (QStringList{QStringLiteral("sparse 2:4"), QStringLiteral("dense GEMV (ours)")}));

    // Exports: the chart's CSV (one line per point), a picture, and a JSON that reads back.
    const QString csv = tmp_.filePath(QStringLiteral("activation.csv"));
    QCOMPARE(chart->view()->exportTo(csv), QString());
    QCOMPARE(csvLines(csv), 1 + 8);
    QVERIFY(chart->toCsv().contains(QStringLiteral("llama3-8b q_proj,0.5,2,our dense GEMV\n")));
    for (const char* ext : {"png", "pdf"}) {
      const QString pic = tmp_.filePath(QStringLiteral("activation.%1").arg(QLatin1String(ext)));
      QCOMPARE(chart->view()->exportTo(pic), QString());
      QVERIFY(QFileInfo(pic).size() > 1000);
    }
    const QString json = tmp_.filePath(QStringLiteral("spmspv-export.json"));
    QCOMPARE(controller_->exportTable(json), QString());
    QFile f(json);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const sdw::gpu::BenchResult back = sdw::gpu::fromJson(f.readAll().toStdString());
    QCOMPARE(int(back.rows.size()), kSpmspvFixtureRows);
    QCOMPARE(back.rows[7].activationSparsity.value_or(-1), 0.5);
    QCOMPARE(int(back.activationSummary.size()), 2);

    // A file without spMspV rows puts the panel back as it was.
    QVERIFY(loadFixture());
    QTRY_VERIFY(!chart->isVisible());
    QCOMPARE(chart->seriesNames(), QStringList());
    QCOMPARE(charts->pointCount(QStringLiteral("spmspv p_x 0.5")), 0);
  }

  void activationSparsityFieldReachesTheRun() {
    // Typed into the settings: it reaches BenchSettings and the CPU kernels time spMspV.
    auto* field = panel_->findChild<QLineEdit*>(QStringLiteral("benchActivationSparsity"));
    QVERIFY(field);
    QVERIFY(field->text().isEmpty());  // off unless asked for
    QTest::keyClicks(field, QStringLiteral(" 0, 0.5 "));
    BenchRequest r = panel_->request();
    QCOMPARE(r.activationSparsities, QStringLiteral("0, 0.5"));
    r.settings.shapes.clear();  // one tiny shape, not the catalog's models
    r.customShapes = QStringLiteral("64x128");
    r.settings.patterns = {"2:4"};
    r.settings.batches = {1};
    r.settings.repeats = 3;
    r.settings.forceCpu = true;
    QVERIFY(controller_->start(r) != 0);
    QTRY_VERIFY_WITH_TIMEOUT(!controller_->isRunning(), 60000);
    QCOMPARE(controller_->settings().activationSparsities, (std::vector<double>{0.0, 0.5}));
    QVERIFY2(panel_->statusText().startsWith(QStringLiteral("Done: 10 measurements")),
             qPrintable(panel_->statusText()));

    // dense, sparse 2:4, then spMspV at p_x 0 and 0.5 in the bitmask layout (50%), then in
    // the column 2:4, 4:8 and dense layouts
    const auto& rows = controller_->rows();
    QCOMPARE(rows.size(), 10);
    QCOMPARE(rows[0].id, sdw::gpu::KernelId::DenseCpu);
    const char* layouts[] = {"50%", "col2:4", "col4:8", "dense"};
    for (int i = 2; i < 10; ++i) {
      QCOMPARE(rows[i].id, sdw::gpu::KernelId::SpmspvCpu);
      QCOMPARE(rows[i].pattern, std::string(layouts[(i - 2) / 2]));
      QVERIFY(rows[i].us > 0 && rows[i].bytes > 0);
    }
    QCOMPARE(rows[2].activationSparsity.value_or(-1), 0.0);
    QCOMPARE(rows[3].activationSparsity.value_or(-1), 0.5);
    // Half of x skipped: fewer bytes to read.
    QVERIFY(rows[3].bytes < rows[2].bytes);

    const auto* chart = panel_->charts()->activationChart();
    QTRY_VERIFY(chart->isVisible());
    QCOMPARE(chart->speedups().baseline, QStringLiteral("dense GEMV (CPU)"));
    const QVector<QPointF> expected{{0.0, rows[0].us / rows[2].us}, {0.5, rows[0].us / rows[3].us}};
    QCOMPARE(chart->points(QStringLiteral("64x128")), expected);
    QCOMPARE(chart->points(sdw::widgets::ActivationSparsityChart::medianName()), expected);  // one shape
    const QVector<QPointF> column{{0.0, rows[0].us / rows[4].us}, {0.5, rows[0].us / rows[5].us}};
    QCOMPARE(chart->points(QStringLiteral("64x128 col2:4")), column);
    QCOMPARE(chart->points(sdw::widgets::ActivationSparsityChart::medianName(QStringLiteral("col2:4"))), column);
    const QVector<QPointF> wide{{0.0, rows[0].us / rows[6].us}, {0.5, rows[0].us / rows[7].us}};
    QCOMPARE(chart->points(QStringLiteral("64x128 col4:8")), wide);
    QCOMPARE(chart->points(sdw::widgets::ActivationSparsityChart::medianName(QStringLiteral("col4:8"))), wide);
    const QVector<QPointF> dense{{0.0, rows[0].us / rows[8].us}, {0.5, rows[0].us / rows[9].us}};
    QCOMPARE(chart->points(QStringLiteral("64x128 dense")), dense);
    // The dense layout's own bytes limit (it reads every weight of the kept columns): a line of its own.
    QCOMPARE(chart->points(sdw::widgets::ActivationSparsityChart::limitName(QStringLiteral("dense"))),
             (QVector<QPointF>{{0.0, rows[0].bytes / rows[8].bytes}, {0.5, rows[0].bytes / rows[9].bytes}}));
    QCOMPARE(chart->points(sdw::widgets::ActivationSparsityChart::limitName()),
             (QVector<QPointF>{{0.0, rows[0].bytes / rows[2].bytes}, {0.5, rows[0].bytes / rows[3].bytes}}));
    QCOMPARE(panel_->charts()->pointCount(QStringLiteral("spmspv p_x 0.5 (CPU)")), 1);
    field->clear();
  }

  void spmspvLayoutBoxesReachTheRun() {
    // The layout boxes (all checked) become the request's layouts; unchecked ones are not timed.
    auto* layoutRow = panel_->findChild<QWidget*>(QStringLiteral("benchSpmspvLayouts"));
    QVERIFY(layoutRow);
    const auto boxes = layoutRow->findChildren<QCheckBox*>();
    QCOMPARE(boxes.size(), 4);
    QCOMPARE(panel_->request().spmspvLayouts, BenchRequest::allSpmspvLayouts());
    for (QCheckBox* b : boxes) b->setChecked(b->text() == QStringLiteral("col4:8"));
    BenchRequest r = tinyCpuRequest();
    r.activationSparsities = QStringLiteral("0.5");
    r.spmspvLayouts = panel_->request().spmspvLayouts;
    QCOMPARE(r.spmspvLayouts, QStringList{QStringLiteral("col4:8")});
    r.customShapes = QStringLiteral("64x128");
    r.settings.patterns = {"2:4"};
    r.settings.batches = {1};
    QVERIFY(controller_->start(r) != 0);
    QTRY_VERIFY_WITH_TIMEOUT(!controller_->isRunning(), 60000);
    QCOMPARE(controller_->settings().spmspvLayouts, std::vector<std::string>{"col4:8"});
    int spmspv = 0;
    for (const auto& row : controller_->rows())
      if (row.id == sdw::gpu::KernelId::SpmspvCpu) {
        QCOMPARE(row.pattern, std::string("col4:8"));
        ++spmspv;
      }
    QCOMPARE(spmspv, 1);

    // None checked while p_x is asked for: refused, and the status says what to do.
    for (QCheckBox* b : boxes) b->setChecked(false);
    r.spmspvLayouts = panel_->request().spmspvLayouts;
    QVERIFY(r.spmspvLayouts.isEmpty());
    QCOMPARE(controller_->start(r), sdw::app::JobId(0));
    QVERIFY2(panel_->statusText().startsWith(QStringLiteral("Cannot start: choose at least one spMspV layout")),
             qPrintable(panel_->statusText()));
    // A results file's layouts check the same boxes back.
    BenchRequest fromFile;
    fromFile.settings.spmspvLayouts = {"50%", "dense"};
    panel_->setRequest(fromFile);
    for (QCheckBox* b : boxes)
      QCOMPARE(b->isChecked(), b->text() == QStringLiteral("50%") || b->text() == QStringLiteral("dense"));
    for (QCheckBox* b : boxes) b->setChecked(true);
  }

  void badResultsFileSaysWhy() {
    QVERIFY(loadFixture());
    const QString path = tmp_.filePath(QStringLiteral("bad.json"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"rows\": 3}");
    f.close();
    QSignalSpy ended(controller_.get(), &BenchmarkController::runEnded);
    QVERIFY(controller_->openResults(path) != 0);
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 10000);
    QVERIFY(ended.first().at(1).toBool());
    QVERIFY2(panel_->statusText().contains(QStringLiteral("bad.json")), qPrintable(panel_->statusText()));
    QCOMPARE(panel_->resultsModel()->rowCount(), kFixtureRows);  // what was shown stays
  }
};

QTEST_MAIN(TestBenchmarkPanel)
#include "test_benchmark_panel.moc"
