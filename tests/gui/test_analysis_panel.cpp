// The Analysis panel's epsilon part offscreen, driven through its
// controller on small calibration fixtures written with RunWriter in the
// calibration layout: the summary line and every module's eps against
// gpu::analyzeEpsilon run directly, the per-module model under
// QAbstractItemModelTester, the scatter's CSV (one row per module), hover
// text, module selection -> spectra, the saved analysis run reopened side by
// side, clear errors, and the noise floors (table columns, error bars, the
// count in the summary; "unavailable" with the reason for runs without halves).
// The Activations tab on two small calibrations of the sample model that keep
// activation samples (fixed text and AR): 24 inputs, each run's histogram
// counting every sampled value, mean |x| per channel and the median row norm
// by decode step (AR only) against values computed here from the run files,
// the exports, and the hint for a workspace whose runs have no samples.

#include "app/gui/activationscontroller.h"
#include "app/gui/analysiscontroller.h"
#include "app/jobmanager.h"
#include "core/runstore.h"
#include "gpu/calibration.h"
#include "gpu/epsilon_analysis.h"
#include "tests/gui/sample_calibration.h"
#include "widgets/activationplots.h"
#include "widgets/activationspage.h"
#include "widgets/analysispanel.h"
#include "widgets/epsilondata.h"
#include "widgets/epsilonmodulemodel.h"
#include "widgets/epsilonpage.h"
#include "widgets/epsilonplots.h"

#include <QAbstractItemModelTester>
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QFileInfo>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

using sdw::app::ActivationsController;
using sdw::app::AnalysisController;
using sdw::app::JobManager;
using sdw::widgets::AnalysisPanel;
using sdw::widgets::EpsilonData;

namespace {

namespace fs = std::filesystem;
namespace rs = sdw::runstore;

struct ToyInput {
  std::string name, modules;
  int layer, dIn;
};

// Three decoder layers of a toy model: q/k/v share an input, gate/up share one.
std::vector<ToyInput> toyModel() {
  std::vector<ToyInput> out;
  for (int l = 0; l < 3; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    out.push_back({p + "self_attn.q_proj", "q_proj,k_proj,v_proj", l, 10});
    out.push_back({p + "self_attn.o_proj", "o_proj", l, 10});
    out.push_back({p + "mlp.gate_proj", "gate_proj,up_proj", l, 10});
    out.push_back({p + "mlp.down_proj", "down_proj", l, 16});
  }
  return out;
}

// x_t = (A + distortion * B) z_t with A, B fixed per input name (so runs of
// different sources share structure) and z ~ N(0, I) seeded per run. With
// halves, the first half of the positions is half a, the rest half b.
void writeCalibration(const fs::path& path, const std::string& source, double distortion, unsigned seed,
                      std::int64_t tokens = 400, bool halves = true) {
  sdw::Provenance prov = sdw::Provenance::capture();
  prov.modelId = "toy";
  rs::RunWriter w = rs::RunWriter::create(path, prov, "calibration");
  w.createGroup("/calibration");
  w.setStringAttribute("/calibration", "source", source);
  w.setStringAttribute("/calibration", "capture", source == "fixed" ? "teacher-forced" : "reforward");
  w.setIntAttribute("/calibration", "token_budget", tokens);
  w.setIntAttribute("/calibration", "tokens_collected", tokens);
  w.setStringAttribute("/calibration", "model_dir", "toy");
  w.setStringAttribute("/calibration", "storage", "full");
  w.setIntAttribute("/calibration", "halves", halves ? 1 : 0);
  for (const ToyInput& in : toyModel()) {
    const int d = in.dIn;
    std::seed_seq structure(in.name.begin(), in.name.end());
    std::mt19937 srng(structure);
    std::mt19937 rng(seed * 7919u + static_cast<unsigned>(in.layer * 31 + d));
    std::normal_distribution<double> nd(0.0, 1.0);
    std::vector<double> m(static_cast<std::size_t>(d) * static_cast<std::size_t>(d));
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j) m[std::size_t(i) * d + j] = nd(srng) * std::pow(10.0, -1.0 * j / d);
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j) m[std::size_t(i) * d + j] += distortion * 0.3 * nd(srng);
    const auto n = static_cast<std::size_t>(d);
    std::vector<double> xtx(n * n, 0.0), x(n), z(n);
    std::vector<double> xtxA(n * n, 0.0);
    for (std::int64_t t = 0; t < tokens; ++t) {
      for (auto& v : z) v = nd(rng);
      for (int i = 0; i < d; ++i) {
        double s = 0;
        for (int j = 0; j < d; ++j) s += m[std::size_t(i) * d + j] * z[std::size_t(j)];
        x[std::size_t(i)] = s;
      }
      for (int i = 0; i < d; ++i)
        for (int j = 0; j < d; ++j) {
          xtx[std::size_t(i) * d + j] += x[std::size_t(i)] * x[std::size_t(j)];
          if (t < tokens / 2) xtxA[std::size_t(i) * d + j] += x[std::size_t(i)] * x[std::size_t(j)];
        }
    }
    std::vector<float> f(xtx.size()), sq(n);
    for (std::size_t i = 0; i < xtx.size(); ++i) f[i] = static_cast<float>(xtx[i]);
    for (int i = 0; i < d; ++i) sq[std::size_t(i)] = f[std::size_t(i) * d + i];
    const std::string g = "/calibration/inputs/" + in.name;
    w.createGroup(g);
    w.setStringAttribute(g, "modules", in.modules);
    w.setIntAttribute(g, "layer", in.layer);
    w.setIntAttribute(g, "d_in", d);
    w.setIntAttribute(g, "tokens", tokens);
    w.writeDataset(g + "/xtx", f, {hsize_t(d), hsize_t(d)});
    w.writeDataset(g + "/sum_sq", sq, {hsize_t(d)});
    if (halves) {
      std::vector<float> fa(xtx.size()), fb(xtx.size());
      for (std::size_t i = 0; i < xtx.size(); ++i) {
        fa[i] = static_cast<float>(xtxA[i]);
        fb[i] = static_cast<float>(xtx[i] - xtxA[i]);
      }
      w.setIntAttribute(g, "tokens_a", tokens / 2);
      w.setIntAttribute(g, "tokens_b", tokens - tokens / 2);
      w.writeDataset(g + "/xtx_a", fa, {hsize_t(d), hsize_t(d)});
      w.writeDataset(g + "/xtx_b", fb, {hsize_t(d), hsize_t(d)});
    }
  }
  w.commit();
}

QPushButton* button(QWidget* w, const char* name) { return w->findChild<QPushButton*>(QLatin1String(name)); }

// A calibration of the sample model that keeps `rows` activation samples.
void calibrateWithSamples(const fs::path& out, sdw::gpu::CalibrationSource source, std::int64_t budget, int rows) {
  sdw::gpu::CalibrationSettings s = sdw::testing::sampleCalibrationSettings(source, budget, rows);
  s.window = 128;
  s.maxNewTokens = 24;
  s.seed = 5;
  const sdw::gpu::CalibrationResult r = sdw::gpu::runCalibration(s, out);
  if (!r.complete) throw std::runtime_error("calibration incomplete: " + out.string());
}

// The stored samples of one input: [n, d_in].
rs::Array<float> storedSamples(const QString& run, const std::string& input) {
  return rs::RunReader::open(run.toStdString()).readFloat32("/calibration/inputs/" + input + "/sample_rows");
}

double finiteSum(const QVector<QPointF>& points) {
  double t = 0;
  for (const QPointF& p : points)
    if (std::isfinite(p.y())) t += p.y();
  return t;
}

int csvLines(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly | QIODevice::Text)) return -1;
  return static_cast<int>(QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts).size());
}

}  // namespace

class TestAnalysisPanel : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir dir_;
  QString reference_, fixed_, ar_;
  std::unique_ptr<JobManager> jobs_;
  std::unique_ptr<AnalysisPanel> panel_;
  std::unique_ptr<AnalysisController> controller_;
  std::unique_ptr<ActivationsController> activations_;
  QTemporaryDir samplesDir_;  // calibrations of the sample model with activation samples
  std::unique_ptr<QAbstractItemModelTester> tester_;
  sdw::gpu::EpsilonResult expected_;
  QString written_;

  QString path(const char* name) const { return dir_.filePath(QLatin1String(name)); }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    reference_ = path("reference-heldout.sdw.h5");
    fixed_ = path("calib-fixed.sdw.h5");
    ar_ = path("calib-ar.sdw.h5");
    writeCalibration(reference_.toStdString(), "ar", 0.0, 1);
    writeCalibration(fixed_.toStdString(), "fixed", 1.0, 2);
    writeCalibration(ar_.toStdString(), "ar", 0.25, 3);

    sdw::gpu::EpsilonSettings s;
    s.reference = reference_.toStdString();
    s.runs = {fixed_.toStdString(), ar_.toStdString()};
    s.k = 64;
    expected_ = sdw::gpu::analyzeEpsilon(s);
    QVERIFY(expected_.summary.modules > 0);

    jobs_ = std::make_unique<JobManager>();
    jobs_->setProgressInterval(5);
    panel_ = std::make_unique<AnalysisPanel>();
    panel_->resize(1400, 900);
    panel_->show();
    tester_ = std::make_unique<QAbstractItemModelTester>(panel_->page()->moduleModel(),
                                                         QAbstractItemModelTester::FailureReportingMode::QtTest);
    controller_ = std::make_unique<AnalysisController>(jobs_.get());
    controller_->attach(panel_.get());
    activations_ = std::make_unique<ActivationsController>(jobs_.get());
    activations_->attach(panel_.get());
  }

  void cleanupTestCase() {
    activations_.reset();
    controller_.reset();
    jobs_->waitForDone(10000);
    tester_.reset();
    panel_.reset();
    jobs_.reset();
  }

  void workspaceDefaults() {
    QSignalSpy found(controller_.get(), &AnalysisController::inputsFound);
    controller_->setWorkspace(dir_.path());
    QVERIFY(found.wait(20000));
    // Without an analysis of its own the workspace shows the sample's (when
    // there is one): let that open first.
    QTRY_VERIFY_WITH_TIMEOUT(!controller_->isBusy() && !panel_->isBusy(), 20000);
    QCOMPARE(panel_->referencePath(), reference_);
    QCOMPARE(panel_->fixedTextPath(), fixed_);
    QCOMPARE(panel_->arPath(), ar_);
    QCOMPARE(panel_->k(), 64);
    QCOMPARE(panel_->innerTabs()->tabText(1), QStringLiteral("Drift"));
    QCOMPARE(panel_->innerTabs()->tabText(2), QStringLiteral("Activations"));

    // a rescan of the same workspace keeps what the user picked
    panel_->setRunPaths(reference_, ar_, fixed_);
    controller_->setWorkspace(dir_.path());
    QVERIFY(found.wait(20000));
    QCOMPARE(found.last().at(4).toBool(), false);
    QCOMPARE(panel_->fixedTextPath(), ar_);
    panel_->setRunPaths(reference_, fixed_, ar_);
  }

  void analyzeFillsSummary() {
    QSignalSpy ready(controller_.get(), &AnalysisController::analysisReady);
    QSignalSpy written(controller_.get(), &AnalysisController::runWritten);
    QPushButton* analyze = button(panel_.get(), "analyze");
    QVERIFY(analyze && analyze->isEnabled());
    analyze->click();
    QVERIFY(ready.wait(60000));
    QCOMPARE(ready.first().at(1).toInt(), 0);
    QCOMPARE(written.count(), 1);
    written_ = written.first().at(0).toString();
    QVERIFY(QFileInfo::exists(written_));
    QTRY_VERIFY(!panel_->isBusy());

    const EpsilonData& d = panel_->page()->data();
    QCOMPARE(d.cLabel, QStringLiteral("C4"));
    QCOMPARE(d.arLabel, QStringLiteral("AR"));
    QCOMPARE(d.summaryModules, expected_.summary.modules);
    QCOMPARE(d.summaryArLower, expected_.summary.arLower);
    const QString summary = panel_->page()->summaryText();
    const QString share = QString::number(expected_.summary.shareArLower * 100.0, 'f', 1) + QLatin1Char('%');
    QVERIFY2(summary.startsWith(QStringLiteral("AR lower on ") + share), qPrintable(summary));
    QVERIFY2(summary.contains(QStringLiteral("median ratio ") + sdw::widgets::formatEps(expected_.summary.medianRatio)),
             qPrintable(summary));
    QVERIFY2(summary.contains(QStringLiteral("(%1 of %2)").arg(expected_.summary.arLower).arg(expected_.summary.modules)),
             qPrintable(summary));

    // every module's numbers, in forward order
    const int num = expected_.summary.numeratorRun, den = expected_.summary.denominatorRun;
    QCOMPARE(num, 0);
    QCOMPARE(den, 1);
    QCOMPARE(d.modules.size(), qsizetype(expected_.modules.size()));
    QCOMPARE(d.modules.size(), qsizetype(3 * 7));
    for (int i = 0; i < d.modules.size(); ++i) {
      const auto& e = expected_.modules[std::size_t(i)];
      QCOMPARE(d.modules[i].module, QString::fromStdString(e.module));
      QCOMPARE(d.modules[i].epsC, e.eps[std::size_t(num)]);
      QCOMPARE(d.modules[i].epsAR, e.eps[std::size_t(den)]);
      QCOMPARE(d.modules[i].ratio, e.ratio);
    }
    // the table shows them
    auto* model = panel_->page()->moduleModel();
    QCOMPARE(model->rowCount(), int(expected_.modules.size()));
    QCOMPARE(model->data(model->index(0, sdw::widgets::EpsilonModuleModel::EpsC), Qt::UserRole).toDouble(),
             expected_.modules[0].eps[0]);
    QCOMPARE(model->headerData(sdw::widgets::EpsilonModuleModel::EpsAR, Qt::Horizontal).toString(),
             QStringLiteral("eps(AR)"));
  }

  // Next to every eps its noise floor; the summary counts the modules whose
  // two eps differ by more than both floors; the bars carry error bars.
  void noiseFloorsShown() {
    const EpsilonData& d = panel_->page()->data();
    const auto& s = expected_.summary;
    QVERIFY(s.noise.modules == s.modules && s.modules == 21);
    QCOMPARE(d.noiseModules, s.noise.modules);
    QCOMPARE(d.beyondNoise, s.noise.beyond);
    const QString summary = panel_->page()->summaryText();
    const QString count = QStringLiteral("; %1 of 21 beyond the noise floor (AR lower on %2)")
                              .arg(s.noise.beyond)
                              .arg(s.noise.arLowerBeyond);
    QVERIFY2(summary.contains(count), qPrintable(summary + QStringLiteral("\nwanted: ") + count));
    auto* model = panel_->page()->moduleModel();
    using M = sdw::widgets::EpsilonModuleModel;
    QCOMPARE(model->headerData(M::NoiseC, Qt::Horizontal).toString(), QStringLiteral("noise(C4)"));
    QCOMPARE(model->headerData(M::NoiseAR, Qt::Horizontal).toString(), QStringLiteral("noise(AR)"));
    int beyond = 0;
    for (int i = 0; i < model->rowCount(); ++i) {
      const auto& e = expected_.modules[std::size_t(i)];
      QVERIFY(e.noise[0] > 0 && e.noise[1] > 0);
      QCOMPARE(model->data(model->index(i, M::NoiseC), M::ValueRole).toDouble(), e.noise[0]);
      QCOMPARE(model->data(model->index(i, M::NoiseAR), M::ValueRole).toDouble(), e.noise[1]);
      QCOMPARE(model->data(model->index(i, M::NoiseC)).toString(), sdw::widgets::formatEps(e.noise[0]));
      QCOMPARE(model->data(model->index(i, M::Beyond), M::ValueRole).toInt(), e.beyondNoise);
      QCOMPARE(model->data(model->index(i, M::Beyond)).toString(), e.beyondNoise ? QStringLiteral("yes") : QStringLiteral("no"));
      beyond += e.beyondNoise;
    }
    QCOMPARE(beyond, s.noise.beyond);
    QCOMPARE(panel_->page()->bars()->errorBarSeries(), 2);
    const QString csv = path("bars-noise.csv");
    QCOMPARE(panel_->page()->bars()->exportTo(csv), QString());
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly | QIODevice::Text));
    const QStringList lines = QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(lines.first(), QStringLiteral("input,layer,type,eps_c,eps_ar,noise_c,noise_ar,noise_reference"));
    QCOMPARE(lines.at(1).split(QLatin1Char(',')).at(5).toDouble(), expected_.inputs[0].noise[0]);
    QCOMPARE(lines.at(1).split(QLatin1Char(',')).at(7).toDouble(), expected_.inputs[0].referenceNoise);

    // Runs without half statistics still show their eps; the floor is
    // unavailable, and the page says why.
    const QString oldFixed = path("old-fixed.sdw.h5"), oldAr = path("old-ar.sdw.h5");
    writeCalibration(oldFixed.toStdString(), "fixed", 1.0, 2, 400, /*halves=*/false);
    writeCalibration(oldAr.toStdString(), "ar", 0.25, 3, 400, /*halves=*/false);
    sdw::gpu::EpsilonSettings es;
    es.reference = reference_.toStdString();
    es.runs = {oldFixed.toStdString(), oldAr.toStdString()};
    es.k = 64;
    sdw::widgets::EpsilonPage page;
    page.setData(sdw::app::epsilonDisplayData(sdw::gpu::analyzeEpsilon(es), QString()));
    QVERIFY2(page.summaryText().endsWith(QStringLiteral("; noise floor unavailable")), qPrintable(page.summaryText()));
    QVERIFY2(page.titleText().contains(QStringLiteral("No noise floor (C4 and AR: collected without half statistics)")),
             qPrintable(page.titleText()));
    QCOMPARE(page.moduleModel()->data(page.moduleModel()->index(0, M::NoiseAR)).toString(), QStringLiteral("–"));
    QVERIFY(page.moduleModel()->data(page.moduleModel()->index(0, M::NoiseAR), Qt::ToolTipRole).toString()
                .contains(QStringLiteral("collected without half statistics")));
    QCOMPARE(page.moduleModel()->data(page.moduleModel()->index(0, M::Beyond)).toString(), QStringLiteral("–"));
    QCOMPARE(page.bars()->errorBarSeries(), 0);
    QCOMPARE(page.data().modules[0].epsC, expected_.modules[0].eps[0]);  // same runs, same eps
  }

  void scatterCsvHasOneRowPerModule() {
    auto* scatter = panel_->page()->scatter();
    const QString csv = path("scatter.csv");
    QCOMPARE(scatter->exportTo(csv), QString());
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly | QIODevice::Text));
    const QStringList lines = QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 1 + int(expected_.modules.size()));
    QCOMPARE(lines.first(), QStringLiteral("module,layer,input,eps_c,eps_ar,ratio,noise_c,noise_ar,beyond_noise"));
    const QStringList row = lines.at(1).split(QLatin1Char(','));
    QCOMPARE(row.at(0), QString::fromStdString(expected_.modules[0].module));
    QCOMPARE(row.at(3).toDouble(), expected_.modules[0].eps[0]);
    QCOMPARE(scatter->pointCount(), int(expected_.modules.size()));
    // PNG export too
    QCOMPARE(scatter->exportTo(path("scatter.png")), QString());
    QVERIFY(QFileInfo(path("scatter.png")).size() > 1000);
    QCOMPARE(panel_->page()->bars()->exportTo(path("bars.csv")), QString());
  }

  void hoverShowsNearestModule() {
    auto* scatter = panel_->page()->scatter();
    QTest::qWait(100);  // the queued replot lays the axes out
    const int m = 5;
    const QPoint px = scatter->pixelOf(m);
    const QString tip = scatter->hoverTextAt(px);
    // modules sharing an input share the point: the tip names one of them
    const QString input = panel_->page()->data().inputs[panel_->page()->data().modules[m].input].name;
    QVERIFY2(!tip.isEmpty(), qPrintable(QStringLiteral("%1,%2").arg(px.x()).arg(px.y())));
    QVERIFY2(tip.contains(input.left(input.lastIndexOf(QLatin1Char('.')))), qPrintable(tip));
    QVERIFY(tip.contains(sdw::widgets::formatEps(expected_.modules[std::size_t(m)].eps[0])));
    QCOMPARE(scatter->hoverTextAt(QPoint(-500, -500)), QString());
  }

  void selectingModuleShowsSpectra() {
    auto* page = panel_->page();
    auto* view = page->moduleView();
    const int target = 17;  // layer 2 down_proj or so: anything but the first
    const QModelIndex src = page->moduleModel()->index(target, 0);
    // the view's model is a sort proxy; select through it
    const QModelIndex idx = view->model()->index(target, 0);
    view->setCurrentIndex(idx);
    QCOMPARE(page->selectedModule(), target);
    const auto& m = page->data().modules[target];
    QCOMPARE(page->spectrum()->inputName(), page->data().inputs[m.input].name);
    QCOMPARE(src.data(sdw::widgets::EpsilonModuleModel::ValueRole).toString(), m.module);
    QVERIFY(m.module.endsWith(QStringLiteral(".") + src.data().toString()));  // shown without the layer prefix
    // three curves: H_D, H_C4, H_AR
    QCOMPARE(page->spectrum()->seriesCount(), 3);
    const QString csv = page->spectrum()->toCsv();
    QVERIFY(csv.contains(QStringLiteral("H_D (reference)")));
    QVERIFY(csv.contains(QStringLiteral("H_AR")));
  }

  void compareOpensSecondAnalysis() {
    QSignalSpy ready(controller_.get(), &AnalysisController::analysisReady);
    controller_->open(written_, AnalysisPanel::Comparison);
    QVERIFY(ready.wait(20000));
    QCOMPARE(ready.first().at(1).toInt(), int(AnalysisPanel::Comparison));
    QVERIFY(panel_->isComparing());
    QCOMPARE(panel_->page(AnalysisPanel::Comparison)->summaryText(), panel_->page()->summaryText());
    QCOMPARE(panel_->page(AnalysisPanel::Comparison)->data().modules.size(), panel_->page()->data().modules.size());
    button(panel_.get(), "closeComparison")->click();
    QVERIFY(!panel_->isComparing());
  }

  // The engine's decoding checks travel with the analysis and show under
  // the summary: here the runs decode alike (no warning), and the notes name
  // each run's decoding and prompt set.
  void decodingChecksShown() {
    const EpsilonData d = panel_->page()->data();
    QVERIFY(!d.isEmpty());
    QVERIFY2(d.warnings.isEmpty(), qPrintable(d.warnings.join(QLatin1Char('\n'))));
    QVERIFY2(d.notes.join(QLatin1Char(' ')).contains(QStringLiteral("Prompt sets: reference reference-heldout.sdw.h5")),
             qPrintable(d.notes.join(QLatin1Char('\n'))));
    EpsilonData warned = d;
    warned.warnings = QStringList{QStringLiteral("The AR run calib-ar.sdw.h5 decoded greedy, but the decode-time "
                                                 "reference reference-heldout.sdw.h5 decoded sampled, T=1.0, top-k "
                                                 "off, top-p 1.0: ...")};
    panel_->page()->setData(warned);
    QCOMPARE(panel_->page()->shownWarnings(), warned.warnings);
    panel_->page()->setData(d);
    QCOMPARE(panel_->page()->shownWarnings(), QStringList());
  }

  void errorsAreClear() {
    QSignalSpy ended(controller_.get(), &AnalysisController::analysisEnded);
    panel_->setRunPaths(QString(), fixed_, ar_);
    button(panel_.get(), "analyze")->click();
    QCOMPARE(ended.count(), 1);
    QCOMPARE(ended.first().at(1).toBool(), true);
    QVERIFY2(panel_->statusText().contains(QStringLiteral("reference")), qPrintable(panel_->statusText()));

    ended.clear();
    panel_->setRunPaths(reference_, path("missing.sdw.h5"), ar_);
    button(panel_.get(), "analyze")->click();
    QVERIFY(ended.wait(20000));
    QCOMPARE(ended.first().at(1).toBool(), true);
    QVERIFY2(panel_->statusText().contains(QStringLiteral("missing.sdw.h5")), qPrintable(panel_->statusText()));
    // the previous analysis stays on display
    QCOMPARE(panel_->page()->data().modules.size(), qsizetype(expected_.modules.size()));
  }

  // The toy workspace's calibration runs keep no samples: the Activations tab
  // says how to get them, and lists what it skipped.
  void activationsHintWithoutSamples() {
    QSignalSpy found(activations_.get(), &ActivationsController::catalogFound);
    activations_->setWorkspace(dir_.path());
    QVERIFY(found.wait(20000));
    const auto catalog = found.last().at(0).value<sdw::widgets::ActivationCatalog>();
    QVERIFY(catalog.runs.isEmpty());
    QVERIFY2(catalog.withoutSamples.contains(QStringLiteral("calib-fixed.sdw.h5")),
             qPrintable(catalog.withoutSamples.join(QLatin1Char(','))));
    QVERIFY(catalog.withoutSamples.contains(QStringLiteral("calib-ar.sdw.h5")));
    auto* page = panel_->activationsPage();
    QVERIFY(page->showsHint());
    QVERIFY2(page->hintText().startsWith(QStringLiteral(
                 "No activation samples: calibrate with --sample-rows N or tick 'Keep activation samples' in the "
                 "Calibration panel")),
             qPrintable(page->hintText()));
    QCOMPARE(page->inputPicker()->count(), 0);
    QVERIFY(!page->inputPicker()->isEnabled());
    QVERIFY2(page->runsText().contains(QStringLiteral("Without samples (not shown)")), qPrintable(page->runsText()));
  }

  // A fixed-text and an AR calibration of the sample model (64 samples each),
  // and a run without samples beside them.
  void activationsOfFixedAndAr() {
    QVERIFY(samplesDir_.isValid());
    const QString fixedRun = samplesDir_.filePath(QStringLiteral("act-fixed.sdw.h5"));
    const QString arRun = samplesDir_.filePath(QStringLiteral("act-ar.sdw.h5"));
    calibrateWithSamples(fixedRun.toStdString(), sdw::gpu::CalibrationSource::Fixed, 512, 64);
    calibrateWithSamples(arRun.toStdString(), sdw::gpu::CalibrationSource::Ar, 256, 64);
    writeCalibration(samplesDir_.filePath(QStringLiteral("plain.sdw.h5")).toStdString(), "fixed", 1.0, 2);

    QSignalSpy found(activations_.get(), &ActivationsController::catalogFound);
    QSignalSpy ready(activations_.get(), &ActivationsController::inputReady);
    activations_->setWorkspace(samplesDir_.path());
    QVERIFY(found.wait(20000));
    QVERIFY(ready.wait(20000));
    auto* page = panel_->activationsPage();
    QVERIFY(!page->showsHint());
    const sdw::widgets::ActivationCatalog& catalog = page->catalog();
    QCOMPARE(catalog.runs.size(), qsizetype(2));
    QCOMPARE(catalog.runs[0].path, arRun);  // by file name
    QCOMPARE(catalog.runs[1].path, fixedRun);
    QCOMPARE(catalog.runs[0].rows, 64);
    QCOMPARE(catalog.runs[1].rowsCounted, qint64(512));
    QCOMPARE(catalog.withoutSamples, QStringList{QStringLiteral("plain.sdw.h5")});

    // 4 inputs x 6 layers, in forward order, named by the modules they feed
    QComboBox* picker = page->inputPicker();
    QCOMPARE(picker->count(), 24);
    QCOMPARE(picker->itemText(0), QStringLiteral("layer 0 · q_proj, k_proj, v_proj"));
    QCOMPARE(picker->itemText(1), QStringLiteral("layer 0 · o_proj"));
    QCOMPARE(picker->itemText(23), QStringLiteral("layer 5 · down_proj"));
    const int gateUp = picker->findText(QStringLiteral("layer 3 · gate_proj, up_proj"));
    QCOMPARE(gateUp, 14);
    QCOMPARE(page->currentInput(), QStringLiteral("model.layers.0.self_attn.q_proj"));

    ready.clear();
    picker->setCurrentIndex(gateUp);
    QVERIFY(ready.wait(20000));
    const std::string input = "model.layers.3.mlp.gate_proj";
    QCOMPARE(page->inputData().input.name, QString::fromStdString(input));
    const int dIn = 256;
    QCOMPARE(page->inputData().input.dIn, dIn);

    // Histogram: one curve per run, legend "file (source)", 101 bins around 0,
    // every sampled value counted once.
    auto* hist = page->histogram();
    QCOMPARE(hist->seriesCount(), 2);
    QCOMPARE(hist->seriesName(0), QStringLiteral("act-ar.sdw.h5 (ar)"));
    QCOMPARE(hist->seriesName(1), QStringLiteral("act-fixed.sdw.h5 (fixed)"));
    QVERIFY(hist->logCount());
    for (int c = 0; c < 2; ++c) {
      QCOMPARE(hist->seriesPoints(c).size(), qsizetype(101));
      QCOMPARE(finiteSum(hist->seriesPoints(c)), double(64 * dIn));
      QCOMPARE(hist->histograms()[c].total(), double(64 * dIn));
      QVERIFY(std::abs(hist->histograms()[c].center(50)) < 1e-12);
    }
    // the range is the largest |x| of both runs
    double maxAbs = 0;
    for (const QString& run : {arRun, fixedRun})
      for (float v : storedSamples(run, input).data) maxAbs = std::max(maxAbs, std::abs(double(v)));
    QCOMPARE(hist->histograms()[0].lower, -maxAbs);
    page->findChild<QCheckBox*>(QStringLiteral("activationLogCount"))->setChecked(false);
    QVERIFY(!hist->logCount());
    for (int c = 0; c < 2; ++c) QCOMPARE(finiteSum(hist->seriesPoints(c)), double(64 * dIn));

    // Mean |x| per channel: d_in points per run; channel 0 as computed here.
    auto* channels = page->channels();
    QCOMPARE(channels->seriesCount(), 2);
    const QVector<QString> runs = {arRun, fixedRun};
    for (int c = 0; c < 2; ++c) {
      const rs::Array<float> x = storedSamples(runs[c], input);
      QCOMPARE(x.shape, (std::vector<hsize_t>{64, hsize_t(dIn)}));
      double sum0 = 0, sum7 = 0;
      for (std::size_t i = 0; i < 64; ++i) {
        sum0 += std::abs(double(x.data[i * dIn]));
        sum7 += std::abs(double(x.data[i * dIn + 7]));
      }
      const QVector<QPointF> pts = channels->seriesPoints(c);
      QCOMPARE(pts.size(), qsizetype(dIn));
      QCOMPARE(pts[0].x(), 0.0);
      QCOMPARE(pts[dIn - 1].x(), double(dIn - 1));
      QVERIFY(sum0 > 0);
      QCOMPARE(pts[0].y(), sum0 / 64.0);
      QCOMPARE(pts[7].y(), sum7 / 64.0);
    }

    // By decode step: the AR run only; its first step's median row norm as
    // computed here, and every sampled row (all decode positions) in a group.
    auto* steps = page->decodeSteps();
    QCOMPARE(steps->seriesCount(), 1);
    QCOMPARE(steps->seriesName(0), QStringLiteral("act-ar.sdw.h5 (ar)"));
    QCOMPARE(steps->curveRuns()[0].source, QStringLiteral("ar"));
    QCOMPARE(steps->noteText(), QString());
    const auto arStep = rs::RunReader::open(arRun.toStdString()).readInt32("/calibration/samples/decode_step").data;
    const auto fixedStep = rs::RunReader::open(fixedRun.toStdString()).readInt32("/calibration/samples/decode_step").data;
    QVERIFY(std::all_of(fixedStep.begin(), fixedStep.end(), [](std::int32_t v) { return v == -1; }));
    QVERIFY(std::all_of(arStep.begin(), arStep.end(), [](std::int32_t v) { return v >= 0 && v < 24; }));
    const auto& groups = steps->groups()[0];
    int counted = 0;
    for (const auto& g : groups) counted += g.rows;
    QCOMPARE(counted, 64);
    QCOMPARE(steps->seriesPoints(0).size(), groups.size());
    const int first = *std::min_element(arStep.begin(), arStep.end());
    QCOMPARE(groups.front().first, first);
    {
      const rs::Array<float> x = storedSamples(arRun, input);
      std::vector<double> norms;
      for (std::size_t i = 0; i < arStep.size(); ++i) {
        if (arStep[i] != first) continue;
        double sq = 0;
        for (int c = 0; c < dIn; ++c) sq += double(x.data[i * dIn + std::size_t(c)]) * double(x.data[i * dIn + std::size_t(c)]);
        norms.push_back(std::sqrt(sq));
      }
      std::sort(norms.begin(), norms.end());
      const std::size_t m = norms.size();
      const double median = m % 2 ? norms[m / 2] : 0.5 * (norms[m / 2 - 1] + norms[m / 2]);
      QCOMPARE(groups.front().rows, int(m));
      QCOMPARE(groups.front().median, median);
      QCOMPARE(steps->seriesPoints(0).front().y(), median);
    }
    // wider bins: fewer points, the same rows
    page->findChild<QSpinBox*>(QStringLiteral("activationStepBin"))->setValue(8);
    QVERIFY(steps->groups()[0].size() <= 3);
    counted = 0;
    for (const auto& g : steps->groups()[0]) counted += g.rows;
    QCOMPARE(counted, 64);

    // exports: PNG, PDF and CSV of each plot
    QCOMPARE(page->exportTo(sdw::widgets::ActivationsPage::Histogram, path("act-hist.csv")), QString());
    QCOMPARE(csvLines(path("act-hist.csv")), 1 + 2 * 101);
    QCOMPARE(page->exportTo(sdw::widgets::ActivationsPage::Channels, path("act-channels.csv")), QString());
    QCOMPARE(csvLines(path("act-channels.csv")), 1 + 2 * dIn);
    QCOMPARE(page->exportTo(sdw::widgets::ActivationsPage::DecodeSteps, path("act-steps.csv")), QString());
    QCOMPARE(csvLines(path("act-steps.csv")), 1 + int(steps->groups()[0].size()));
    QCOMPARE(page->exportTo(sdw::widgets::ActivationsPage::Histogram, path("act-hist.png")), QString());
    QVERIFY(QFileInfo(path("act-hist.png")).size() > 1000);
    QCOMPARE(page->exportTo(sdw::widgets::ActivationsPage::Channels, path("act-channels.pdf")), QString());
    QVERIFY(QFileInfo(path("act-channels.pdf")).size() > 500);

    // a rescan keeps the picked input
    ready.clear();
    activations_->setWorkspace(samplesDir_.path());
    QVERIFY(ready.wait(20000));
    QCOMPARE(page->currentInput(), QString::fromStdString(input));
    QCOMPARE(page->inputData().series.size(), qsizetype(2));
  }

  // Fixed text only: no decode-step curve, a note says why, and the empty
  // plot keeps its width (its hidden, empty legend does not narrow the axes).
  void decodeStepPlotWithoutArRuns() {
    sdw::widgets::ActivationSeries s;
    s.run.path = QStringLiteral("/runs/fixed.sdw.h5");
    s.run.source = QStringLiteral("fixed");
    s.rows = 2;
    s.dIn = 2;
    s.values = {1.0f, -2.0f, 0.5f, 4.0f};
    s.decodeStep = {-1, -1};
    s.rowNorm = {std::sqrt(5.0), std::sqrt(16.25)};
    s.channelMeanAbs = {0.75, 3.0};
    s.maxAbs = 4;
    sdw::widgets::ActivationInputData d;
    d.input.name = QStringLiteral("model.layers.0.mlp.down_proj");
    d.series << s;
    sdw::widgets::DecodeStepPlot plot;
    plot.resize(600, 300);
    plot.show();
    plot.setData(d);
    QTest::qWait(100);  // the queued replot lays the axes out
    QCOMPARE(plot.seriesCount(), 0);
    QVERIFY2(plot.noteText().contains(QStringLiteral("only AR and cross-model runs")), qPrintable(plot.noteText()));
    QVERIFY2(plot.dataRect().width() > 400, qPrintable(QString::number(plot.dataRect().width())));
    // the histogram: 101 bins over [-4, 4], the 4 values in their bins
    sdw::widgets::ActivationHistogramPlot hist;
    hist.setData(d);
    const auto& h = hist.histograms().front();
    QCOMPARE(h.counts.size(), qsizetype(101));
    QCOMPARE(h.total(), 4.0);
    QCOMPARE(h.lower, -4.0);
    QCOMPARE(h.width, 8.0 / 101);
    // bin = floor((x + 4) / w): -2 -> 25, 0.5 -> 56, 1 -> 63; x = 4 (the range's end) in the last bin
    for (int b : {25, 56, 63, 100}) QCOMPARE(h.counts[b], 1.0);
  }
};

QTEST_MAIN(TestAnalysisPanel)
#include "test_analysis_panel.moc"
