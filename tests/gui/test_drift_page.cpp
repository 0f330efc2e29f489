// The Analysis panel's drift page offscreen, driven through its controller:
// the sample drift run opens on start and its plot, summary and per-layer
// table agree with the file read back through RunReader (medians, quartile
// band, step90 markers, both modes); the view controls (models, layer
// filter, per-layer curves, log step axis); CSV/PNG/PDF exports; clear
// errors for bad files; and a real drift job on the sample model against a
// magnitude-pruned copy and against itself (drift exactly 0), with progress,
// a readable run file and cancellation; and the pruned models' run-time
// activation sparsity p_x from the page's field into the run and its header,
// per token's top-k or with thresholds from a calibration run of the
// workspace (a run without activation samples failing the job visibly).

#include "app/gui/driftcontroller.h"
#include "app/gui/driftrun.h"
#include "app/gui/mainwindow.h"
#include "app/gui/workspace.h"
#include "app/jobmanager.h"
#include "app/settings.h"
#include "core/decoding.h"
#include "core/runstore.h"
#include "gpu/activation_thresholds.h"
#include "gpu/calibration.h"
#include "gpu/pruning.h"
#include "tests/gui/sample_calibration.h"
#include "widgets/analysispanel.h"
#include "widgets/driftdata.h"
#include "widgets/driftlayermodel.h"
#include "widgets/driftpage.h"
#include "widgets/driftplot.h"

#include <QAbstractItemModelTester>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <memory>

using sdw::app::DriftController;
using sdw::app::JobManager;
using sdw::widgets::AnalysisPanel;
using sdw::widgets::DriftData;
using sdw::widgets::DriftPage;
using sdw::widgets::DriftPlot;
using sdw::widgets::DriftView;

namespace {

namespace rs = sdw::runstore;

// One mode of the sample file, as stored.
struct Stored {
  std::vector<double> ratio, plateau, median, q1, q3;
  std::vector<std::int64_t> step90;
};

Stored readStored(const QString& path, const std::string& mode) {
  const rs::RunReader r = rs::RunReader::open(path.toStdString());
  const std::string g = "/drift/" + mode;
  Stored s;
  s.ratio = r.read<double>(g + "/ratio").data;
  s.plateau = r.read<double>(g + "/plateau").data;
  s.median = r.read<double>(g + "/median").data;
  s.q1 = r.read<double>(g + "/q1").data;
  s.q3 = r.read<double>(g + "/q3").data;
  s.step90 = r.read<std::int64_t>(g + "/step90").data;
  return s;
}

int countRole(const DriftPlot* plot, DriftPlot::Role role) {
  const auto& s = plot->series();
  return static_cast<int>(std::count_if(s.begin(), s.end(), [role](const DriftPlot::Series& x) { return x.role == role; }));
}

QStringList lines(const QString& text) { return text.split(QLatin1Char('\n'), Qt::SkipEmptyParts); }

}  // namespace

class TestDriftPage : public QObject {
  Q_OBJECT
 private:
  static constexpr int T = 128, L = 6, K = 2;
  QTemporaryDir dir_;
  QString sample_, pruned_;
  std::unique_ptr<JobManager> jobs_;
  std::unique_ptr<AnalysisPanel> panel_;
  std::unique_ptr<DriftController> controller_;
  std::unique_ptr<QAbstractItemModelTester> tester_;
  Stored own_, shared_;

  DriftPage* page() const { return panel_->driftPage(); }
  DriftPlot* plot() const { return page()->plot(); }
  QComboBox* combo(const char* name) const { return page()->findChild<QComboBox*>(QLatin1String(name)); }
  QCheckBox* check(const char* name) const { return page()->findChild<QCheckBox*>(QLatin1String(name)); }
  void showView(const DriftView& v) { page()->setView(v); }

  // Waits until no job of the controller runs; the page is idle too.
  bool settle(int ms = 20000) {
    QElapsedTimer t;
    t.start();
    while ((controller_->isBusy() || controller_->scanJob() || page()->isBusy()) && t.elapsed() < ms)
      QTest::qWait(20);
    return !controller_->isBusy() && !page()->isBusy();
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    sample_ = QDir(sdw::app::sampleWorkspaceDir()).filePath(QStringLiteral("drift-sample.sdw.h5"));
    QVERIFY2(QFileInfo::exists(sample_), qPrintable(sample_));
    own_ = readStored(sample_, "own");
    shared_ = readStored(sample_, "shared");
    QCOMPARE(own_.median.size(), std::size_t(K * T));
    QCOMPARE(own_.ratio.size(), std::size_t(K * T * L));

    // A pruned checkpoint of the sample model where the workspace keeps them:
    // magnitude 2:4 (the calibration run, a small one made here, only feeds
    // the reported losses).
    sdw::gpu::CalibrationSettings cs;
    cs.source = sdw::gpu::CalibrationSource::Fixed;
    cs.model = DriftController::sampleDenseModel().toStdString();
    cs.corpus = std::string(SDW_SOURCE_DIR) + "/samples/corpus/brown-calib.txt";
    cs.tokenBudget = 64;
    cs.window = 32;
    const std::string calibration = dir_.filePath(QStringLiteral("calib-small.sdw.h5")).toStdString();
    sdw::gpu::runCalibration(cs, calibration);
    pruned_ = dir_.filePath(QStringLiteral("pruned/mag24"));
    sdw::gpu::PruneSettings ps;
    ps.model = DriftController::sampleDenseModel().toStdString();
    ps.calibration = calibration;
    ps.method = sdw::gpu::PruneMethod::Magnitude;
    ps.pattern = "2:4";
    ps.out = pruned_.toStdString();
    ps.record = dir_.filePath(QStringLiteral("pruned/mag24-pruning.sdw.h5")).toStdString();
    sdw::gpu::pruneModel(ps);
    QVERIFY(QFileInfo::exists(pruned_ + QStringLiteral("/config.json")));

    jobs_ = std::make_unique<JobManager>();
    jobs_->setProgressInterval(1);
    panel_ = std::make_unique<AnalysisPanel>();
    panel_->resize(1400, 880);
    panel_->innerTabs()->setCurrentWidget(page());
    panel_->show();
    tester_ = std::make_unique<QAbstractItemModelTester>(page()->layerModel(),
                                                         QAbstractItemModelTester::FailureReportingMode::QtTest);
    controller_ = std::make_unique<DriftController>(jobs_.get());
    controller_->attach(panel_.get());
  }

  void cleanupTestCase() {
    controller_.reset();
    jobs_->waitForDone(20000);
    tester_.reset();
    panel_.reset();
    jobs_.reset();
  }

  void opensTheSampleOnStart() {
    QSignalSpy found(controller_.get(), &DriftController::runsFound);
    QSignalSpy ready(controller_.get(), &DriftController::driftReady);
    controller_->setWorkspace(dir_.path());
    QVERIFY(found.wait(20000));
    QCOMPARE(found.first().at(0).value<QVector<sdw::widgets::DriftRunChoice>>().size(), 0);
    QCOMPARE(found.first().at(1).toStringList(), QStringList{pruned_});
    QVERIFY(ready.count() > 0 || ready.wait(20000));
    QVERIFY(settle());
    QCOMPARE(page()->currentRunPath(), sample_);

    // defaults of a new analysis: the workspace's pruned checkpoint, the
    // sample dense model and held-out prompts
    const sdw::widgets::DriftRequest req = page()->request();
    QCOMPARE(req.pruned, QStringList{pruned_});
    QCOMPARE(QFileInfo(req.dense).fileName(), QStringLiteral("brown-llama"));
    QCOMPARE(QFileInfo(req.prompts).fileName(), QStringLiteral("brown-heldout.jsonl"));
    QCOMPARE(req.steps, 128);
    QCOMPARE(req.device, QStringLiteral("cpu"));
    // the workbench's one decoding protocol, not a literal of this page
    QCOMPARE(req.temperature, sdw::kDefaultDecoding.temperature);
    QCOMPARE(req.topK, sdw::kDefaultDecoding.topK);
    QCOMPARE(req.topP, sdw::kDefaultDecoding.topP);
    QCOMPARE(req.seed, quint64{0});
    // dense inputs unless asked for
    QCOMPARE(req.activationSparsity, 0.0);
    auto* px = page()->findChild<QDoubleSpinBox*>(QStringLiteral("driftActivationSparsity"));
    QVERIFY(px);
    QCOMPARE(px->value(), 0.0);
    QCOMPARE(px->minimum(), 0.0);
    QCOMPARE(px->maximum(), 0.95);
    QCOMPARE(px->singleStep(), 0.05);

    const DriftData& d = page()->data();
    QCOMPARE(d.steps, T);
    QCOMPARE(d.layers, L);
    QCOMPARE(d.models.size(), K);
    QCOMPARE(d.prompts, 40);
    QCOMPARE(d.modes, (QStringList{"own", "shared"}));
    QCOMPARE(d.models[0].label, QStringLiteral("sgpt24-fixed"));
    QCOMPARE(d.models[0].shortLabel, QStringLiteral("fixed"));
    QCOMPARE(d.models[1].shortLabel, QStringLiteral("AR"));
    QVERIFY(page()->titleText().contains(QStringLiteral("drift-sample.sdw.h5")));
    // The sample run predates recorded decodings: it was greedy, and says so.
    QCOMPARE(d.decoding, QStringLiteral("greedy"));
    QVERIFY(page()->titleText().contains(QStringLiteral("decode steps, greedy;")));
  }

  void plotMatchesTheFile() {
    // Default view: own trajectory, both models overlaid, per-layer curves, linear axis.
    const DriftView v = page()->view();
    QCOMPARE(v.mode, 0);
    QCOMPARE(v.models, int(DriftView::Both));
    QVERIFY(v.layerCurves);
    QVERIFY(!v.logSteps);
    QVERIFY(!plot()->logStepAxis());
    // per model: 6 layer curves, the median, the band (q1 and q3), the step90 markers
    QCOMPARE(plot()->seriesCount(), K * (L + 4));
    QCOMPARE(countRole(plot(), DriftPlot::LayerCurve), K * L);
    QCOMPARE(countRole(plot(), DriftPlot::Median), K);
    QCOMPARE(countRole(plot(), DriftPlot::Q1), K);
    QCOMPARE(countRole(plot(), DriftPlot::Q3), K);
    QCOMPARE(countRole(plot(), DriftPlot::Step90), K);

    for (int k = 0; k < K; ++k) {
      const QVector<QPointF> med = plot()->seriesPoints(plot()->graphIndex(k, DriftPlot::Median));
      QCOMPARE(med.size(), T);
      for (int t = 0; t < T; ++t) {
        QCOMPARE(med[t].x(), double(t));
        QCOMPARE(med[t].y(), own_.median[std::size_t(k * T + t)]);
      }
      const QVector<QPointF> q3 = plot()->seriesPoints(plot()->graphIndex(k, DriftPlot::Q3));
      QCOMPARE(q3[17].y(), own_.q3[std::size_t(k * T + 17)]);
      const QVector<QPointF> layer4 = plot()->seriesPoints(plot()->graphIndex(k, DriftPlot::LayerCurve, 4));
      QCOMPARE(layer4[9].y(), own_.ratio[std::size_t((k * T + 9) * L + 4)]);

      // the 90%-plateau markers sit at the file's step90, on the layer's curve
      QVector<QPointF> expected;
      for (int l = 0; l < L; ++l) {
        const auto s = own_.step90[std::size_t(k * L + l)];
        if (s >= 0) expected << QPointF(double(s), own_.ratio[std::size_t((k * T + s) * L + l)]);
      }
      QVERIFY(!expected.isEmpty());
      QVector<QPointF> marks = plot()->seriesPoints(plot()->graphIndex(k, DriftPlot::Step90));
      const auto byXY = [](const QPointF& a, const QPointF& b) { return a.x() != b.x() ? a.x() < b.x() : a.y() < b.y(); };
      std::sort(expected.begin(), expected.end(), byXY);
      std::sort(marks.begin(), marks.end(), byXY);
      QCOMPARE(marks, expected);
    }

    // summary: median plateau of each model and the step90 range
    const QString summary = page()->summaryText();
    QVERIFY2(summary.startsWith(QStringLiteral("own trajectory: median plateau ")), qPrintable(summary));
    std::vector<double> pf(own_.plateau.begin(), own_.plateau.begin() + L);
    std::sort(pf.begin(), pf.end());
    const double medFixed = (pf[2] + pf[3]) / 2;
    QVERIFY2(summary.contains(sdw::widgets::formatDrift(medFixed) + QStringLiteral(" (fixed)")), qPrintable(summary));
    QVERIFY2(summary.contains(QStringLiteral("(AR)")), qPrintable(summary));
    const auto [lo, hi] = std::minmax_element(own_.step90.begin(), own_.step90.end());
    QVERIFY2(summary.contains(QStringLiteral("%1–%2").arg(*lo).arg(*hi)) ||
                 (*lo == *hi && summary.contains(QStringLiteral("step %1").arg(*lo))),
             qPrintable(summary));
  }

  void tableHasPlateausAndRatios() {
    auto* m = page()->layerModel();
    QCOMPARE(m->rowCount(), L);
    QCOMPARE(m->columnCount(), int(sdw::widgets::DriftLayerModel::ColumnCount));
    QCOMPARE(m->headerData(sdw::widgets::DriftLayerModel::PlateauA, Qt::Horizontal).toString(),
             QStringLiteral("fixed\nplateau"));
    for (int l = 0; l < L; ++l) {
      const auto val = [&](int col) { return m->data(m->index(l, col), sdw::widgets::DriftLayerModel::ValueRole); };
      QCOMPARE(val(sdw::widgets::DriftLayerModel::Layer).toInt(), l);
      const double a = own_.plateau[std::size_t(l)], b = own_.plateau[std::size_t(L + l)];
      QCOMPARE(val(sdw::widgets::DriftLayerModel::PlateauA).toDouble(), a);
      QCOMPARE(val(sdw::widgets::DriftLayerModel::PlateauB).toDouble(), b);
      QCOMPARE(val(sdw::widgets::DriftLayerModel::Step90A).toInt(), int(own_.step90[std::size_t(l)]));
      QCOMPARE(val(sdw::widgets::DriftLayerModel::Step90B).toInt(), int(own_.step90[std::size_t(L + l)]));
      QCOMPARE(val(sdw::widgets::DriftLayerModel::PlateauRatio).toDouble(), a / b);
    }
    // sortable: by ratio, descending, the first row has the largest ratio
    QTableView* view = page()->layerView();
    view->sortByColumn(sdw::widgets::DriftLayerModel::PlateauRatio, Qt::DescendingOrder);
    double best = 0;
    for (int l = 0; l < L; ++l) best = std::max(best, own_.plateau[std::size_t(l)] / own_.plateau[std::size_t(L + l)]);
    QCOMPARE(view->model()->index(0, sdw::widgets::DriftLayerModel::PlateauRatio).data(sdw::widgets::DriftLayerModel::ValueRole).toDouble(), best);
    view->sortByColumn(sdw::widgets::DriftLayerModel::Layer, Qt::AscendingOrder);
  }

  void sharedModeShowsTheSharedGroup() {
    QComboBox* mode = combo("driftMode");
    QVERIFY(mode);
    QCOMPARE(mode->count(), 2);
    mode->setCurrentIndex(1);
    QCOMPARE(page()->view().mode, 1);
    for (int k = 0; k < K; ++k) {
      const QVector<QPointF> med = plot()->seriesPoints(plot()->graphIndex(k, DriftPlot::Median));
      QCOMPARE(med.size(), T);
      for (int t = 0; t < T; t += 13) QCOMPARE(med[t].y(), shared_.median[std::size_t(k * T + t)]);
    }
    QVERIFY(shared_.median[5] != own_.median[5]);
    QVERIFY(page()->summaryText().startsWith(QStringLiteral("shared trajectory")));
    QCOMPARE(page()->layerModel()->data(page()->layerModel()->index(2, sdw::widgets::DriftLayerModel::PlateauA),
                                        sdw::widgets::DriftLayerModel::ValueRole).toDouble(),
             shared_.plateau[2]);
    mode->setCurrentIndex(0);
    QCOMPARE(plot()->seriesPoints(plot()->graphIndex(0, DriftPlot::Median))[5].y(), own_.median[5]);
  }

  void logAxisPlotsStepPlusOne() {
    QCheckBox* log = check("driftLogSteps");
    QVERIFY(log);
    log->setChecked(true);
    QVERIFY(plot()->logStepAxis());
    QVERIFY(plot()->stepAxisLabel().contains(QStringLiteral("decode step + 1")));
    const QVector<QPointF> med = plot()->seriesPoints(plot()->graphIndex(1, DriftPlot::Median));
    QCOMPARE(med.front().x(), 1.0);
    QCOMPARE(med.back().x(), double(T));
    QCOMPARE(med.front().y(), own_.median[std::size_t(T)]);
    log->setChecked(false);
    QVERIFY(!plot()->logStepAxis());
    QCOMPARE(plot()->seriesPoints(plot()->graphIndex(1, DriftPlot::Median)).front().x(), 0.0);
  }

  void modelsLayersAndFilter() {
    QComboBox* models = combo("driftModels");
    QVERIFY(models);
    QCOMPARE(models->count(), 3);
    models->setCurrentIndex(DriftView::ModelB);
    QCOMPARE(plot()->shownModels(), QVector<int>{1});
    QCOMPARE(plot()->seriesCount(), L + 4);
    QCOMPARE(plot()->graphIndex(0, DriftPlot::Median), -1);
    QVERIFY(page()->summaryText().contains(QStringLiteral("(AR)")));
    QVERIFY(!page()->summaryText().contains(QStringLiteral("(fixed)")));
    models->setCurrentIndex(DriftView::Both);

    check("driftLayerCurves")->setChecked(false);
    QCOMPARE(countRole(plot(), DriftPlot::LayerCurve), 0);
    QCOMPARE(plot()->seriesCount(), K * 4);
    check("driftLayerCurves")->setChecked(true);

    // one layer: its curve, its marker and its plateau level per model
    combo("driftLayer")->setCurrentIndex(3 + 1);
    QCOMPARE(page()->view().layer, 3);
    QCOMPARE(countRole(plot(), DriftPlot::LayerCurve), K);
    QCOMPARE(countRole(plot(), DriftPlot::Plateau), K);
    const QVector<QPointF> level = plot()->seriesPoints(plot()->graphIndex(0, DriftPlot::Plateau, 3));
    QCOMPARE(level.size(), 2);
    QCOMPARE(level[0].y(), own_.plateau[3]);
    QCOMPARE(level[0].x(), double(T / 2));
    QCOMPARE(plot()->seriesPoints(plot()->graphIndex(0, DriftPlot::Step90)).size(), own_.step90[3] >= 0 ? 1 : 0);
    // the table follows the filter; choosing a row there filters too
    QCOMPARE(page()->layerView()->currentIndex().row(), 3);
    page()->layerView()->setCurrentIndex(page()->layerView()->model()->index(1, 0));
    QCOMPARE(page()->view().layer, 1);
    combo("driftLayer")->setCurrentIndex(0);
    QCOMPARE(plot()->seriesCount(), K * (L + 4));
  }

  void hoverNamesModelLayerStepAndValue() {
    QTest::qWait(100);  // the queued replot lays the axes out
    const int step = 64;
    const double y = own_.ratio[std::size_t((0 * T + step) * L + 5)];
    const QString text = plot()->hoverTextAt(plot()->pixelOf(step, y));
    QVERIFY2(text.contains(QStringLiteral("sgpt24-")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("decode step %1").arg(step)), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("own trajectory")), qPrintable(text));
    // far outside the data: nothing
    QVERIFY(plot()->hoverTextAt(QPoint(-500, -500)).isEmpty());
  }

  void csvExport() {
    const QString csv = plot()->toCsv();
    const QStringList rows = lines(csv);
    QCOMPARE(rows.front(), QStringLiteral("model,mode,layer,step,ratio"));
    QCOMPARE(rows.size(), 1 + K * T * (L + 3));
    // a layer row and a median row, against the file
    // rows: model, layer, step; then per model its median, q1 and q3 rows
    const QStringList layerRow = rows[1 + 0 * T + 10].split(QLatin1Char(','));  // model 0, layer 0, step 10
    QCOMPARE(layerRow.mid(0, 4), (QStringList{"sgpt24-fixed", "own", "0", "10"}));
    QCOMPARE(layerRow[4].toDouble(), own_.ratio[std::size_t(10 * L + 0)]);
    const QStringList q1Row = rows[1 + K * T * L + T + 7].split(QLatin1Char(','));  // model 0, q1, step 7
    QCOMPARE(q1Row.mid(0, 4), (QStringList{"sgpt24-fixed", "own", "q1", "7"}));
    QCOMPARE(q1Row[4].toDouble(), own_.q1[7]);
    const QStringList last = rows.back().split(QLatin1Char(','));
    QCOMPARE(last.mid(0, 4), (QStringList{"sgpt24-ar", "own", "q3", QString::number(T - 1)}));
    QCOMPARE(last[4].toDouble(), own_.q3[std::size_t(2 * T - 1)]);

    // written through the export path; one layer only
    combo("driftLayer")->setCurrentIndex(2 + 1);
    const QString file = dir_.filePath(QStringLiteral("drift.csv"));
    QCOMPARE(page()->exportTo(file), QString());
    QFile f(file);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(lines(QString::fromUtf8(f.readAll())).size(), 1 + K * T * (1 + 3));
    combo("driftLayer")->setCurrentIndex(0);
  }

  void pngAndPdfExports() {
    for (const char* name : {"drift.png", "drift.pdf"}) {
      const QString file = dir_.filePath(QLatin1String(name));
      QCOMPARE(page()->exportTo(file), QString());
      QVERIFY(QFileInfo(file).size() > 1000);
    }
    // on a log step axis too
    check("driftLogSteps")->setChecked(true);
    const QString logPng = dir_.filePath(QStringLiteral("drift-log.png"));
    QCOMPARE(page()->exportTo(logPng), QString());
    QVERIFY(QFileInfo(logPng).size() > 1000);
    check("driftLogSteps")->setChecked(false);
    QVERIFY(!page()->exportTo(dir_.filePath(QStringLiteral("drift.txt"))).isEmpty());
    auto* exportButton = page()->findChild<QPushButton*>(QStringLiteral("driftExport"));
    QVERIFY(exportButton && exportButton->isEnabled());
  }

  void badFilesShowAnError() {
    const QString noise = dir_.filePath(QStringLiteral("noise.sdw.h5"));
    {
      QFile f(noise);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QByteArray(2048, 'x'));
    }
    QSignalSpy errors(controller_.get(), &DriftController::error);
    controller_->open(noise);
    QVERIFY(errors.wait(20000));
    QVERIFY(settle());
    QVERIFY2(page()->statusText().startsWith(QStringLiteral("Cannot open the drift run")), qPrintable(page()->statusText()));
    QCOMPARE(page()->currentRunPath(), sample_);  // what was shown stays

    // a valid run of another kind
    const QString epsilon = QDir(sdw::app::sampleWorkspaceDir()).filePath(QStringLiteral("epsilon-sample.sdw.h5"));
    controller_->open(epsilon);
    QVERIFY(errors.wait(20000));
    QVERIFY(settle());
    QVERIFY2(errors.last().at(0).toString().contains(QStringLiteral("not a drift run")),
             qPrintable(errors.last().at(0).toString()));

    // a missing file
    controller_->open(dir_.filePath(QStringLiteral("missing.sdw.h5")));
    QVERIFY(errors.wait(20000));
    QVERIFY(settle());
    QCOMPARE(errors.count(), 3);
    QCOMPARE(page()->currentRunPath(), sample_);
  }

  void driftJobWritesAReadableRun() {
    sdw::widgets::DriftRequest r = page()->request();
    r.pruned = {pruned_, DriftController::sampleDenseModel()};  // B: the dense model itself, drift 0
    r.steps = 6;
    r.maxPrompts = 2;
    r.modes = {QStringLiteral("own"), QStringLiteral("shared")};
    r.device = QStringLiteral("cpu");
    r.seed = 3;
    page()->setRequest(r);
    QCOMPARE(page()->request().pruned, r.pruned);
    QCOMPARE(page()->request().seed, quint64{3});
    QCOMPARE(page()->request().temperature, sdw::kDefaultDecoding.temperature);

    QSignalSpy written(controller_.get(), &DriftController::runWritten);
    QSignalSpy progress(controller_.get(), &DriftController::jobProgress);
    auto* run = page()->findChild<QPushButton*>(QStringLiteral("driftAnalyze"));
    QVERIFY(run && run->isEnabled());
    run->click();
    QVERIFY(controller_->analyzeJob() != 0);
    QVERIFY(page()->isBusy());
    QVERIFY(written.wait(120000));
    QVERIFY(settle());
    QVERIFY(progress.count() > 0);
    const QString path = written.first().at(0).toString();
    QCOMPARE(QFileInfo(path).dir().absolutePath(), QDir(dir_.path()).absolutePath());
    QVERIFY(QFileInfo(path).fileName().startsWith(QStringLiteral("drift-")));
    QVERIFY2(page()->statusText().startsWith(QStringLiteral("Drift run saved to")), qPrintable(page()->statusText()));

    // the page shows the new run; the file reads back
    QCOMPARE(page()->currentRunPath(), path);
    const DriftData d = sdw::app::readDriftRun(path);
    QCOMPARE(d.steps, 6);
    QCOMPARE(d.prompts, 2);
    QCOMPARE(d.layers, L);
    QCOMPARE(d.modes, (QStringList{"own", "shared"}));
    QCOMPARE(d.models.size(), 2);
    QCOMPARE(d.models[0].label, QStringLiteral("mag24"));
    // sampled with the default decoding and the seed asked for, recorded in the run
    QCOMPARE(d.temperature, sdw::kDefaultDecoding.temperature);
    QCOMPARE(d.topK, sdw::kDefaultDecoding.topK);
    QCOMPARE(d.topP, sdw::kDefaultDecoding.topP);
    QCOMPARE(d.seed, qint64{3});
    QCOMPARE(d.decoding, QStringLiteral("sampled, T=1.0, top-k off, top-p 1.0"));
    QVERIFY(page()->titleText().contains(d.decoding));
    QCOMPARE(d.activationSparsity, 0.0);  // none asked for: none recorded, none shown
    QVERIFY2(!page()->titleText().contains(QStringLiteral("p_x")), qPrintable(page()->titleText()));
    // mag24's calibration (fixed text, found through the provenance in its
    // weights; the record lives elsewhere) did not decode: nothing to warn
    // about. The dense folder has no provenance: a note says it was not checked.
    QVERIFY(d.warnings.isEmpty());
    const QString notes = d.notes.join(QLatin1Char(' '));
    QVERIFY2(notes.contains(QStringLiteral("mag24: calib-small.sdw.h5, fixed text (no decoding)")), qPrintable(notes));
    QVERIFY2(notes.contains(QStringLiteral("brown-llama: its calibration is not known")), qPrintable(notes));
    for (int m = 0; m < 2; ++m) {
      double maxPruned = 0;
      for (int t = 0; t < 6; ++t)
        for (int l = 0; l < L; ++l) {
          maxPruned = std::max(maxPruned, d.ratio(0, m, t, l));
          QVERIFY(d.ratio(1, m, t, l) == 0.0);  // the dense model against itself
        }
      QVERIFY(maxPruned > 1e-3);
      QCOMPARE(d.curves(1, m)->step90, QVector<int>(L, -1));
    }
    QCOMPARE(page()->plot()->seriesPoints(page()->plot()->graphIndex(0, DriftPlot::Median)).size(), 6);
    QCOMPARE(page()->plot()->seriesPoints(page()->plot()->graphIndex(0, DriftPlot::Median))[3].y(),
             d.curves(0, 0)->median[3]);

    // the run is offered by a rescan of the workspace
    QSignalSpy found(controller_.get(), &DriftController::runsFound);
    controller_->setWorkspace(dir_.path());
    QVERIFY(found.wait(20000));
    const auto runs = found.first().at(0).value<QVector<sdw::widgets::DriftRunChoice>>();
    QCOMPARE(runs.size(), 1);
    QCOMPARE(runs.front().path, path);
    QCOMPARE(combo("driftRuns")->currentData().toString(), path);
  }

  void cancelReportsCancelled() {
    sdw::widgets::DriftRequest r = page()->request();
    r.steps = 16;
    r.maxPrompts = 2;
    QSignalSpy ended(controller_.get(), &DriftController::jobEnded);
    QSignalSpy written(controller_.get(), &DriftController::runWritten);
    QVERIFY(controller_->analyze(r) != 0);
    page()->findChild<QPushButton*>(QStringLiteral("driftCancel"))->click();
    QTRY_VERIFY_WITH_TIMEOUT(ended.count() > 0, 60000);
    QCOMPARE(ended.last().at(0).toString(), QStringLiteral("Drift analysis cancelled."));
    QCOMPARE(ended.last().at(1).toBool(), false);
    QCOMPARE(written.count(), 0);
    QCOMPARE(page()->statusText(), QStringLiteral("Drift analysis cancelled."));
    QVERIFY(!page()->isBusy());
    // nothing left behind but the run of the previous test
    QCOMPARE(QDir(dir_.path()).entryList({QStringLiteral("drift-*.sdw.h5*")}).size(), 1);
  }

  // p_x from the page's field reaches DriftSettings, is recorded in the run
  // and shown with it: the dense model against itself now drifts, as the
  // "pruned" copy decodes with sparsified projection inputs.
  void activationSparsityReachesTheRun() {
    sdw::widgets::DriftRequest r = page()->request();
    r.pruned = {pruned_, DriftController::sampleDenseModel()};
    r.steps = 6;
    r.maxPrompts = 2;
    r.modes = {QStringLiteral("own"), QStringLiteral("shared")};
    r.device = QStringLiteral("cpu");
    r.seed = 3;
    r.activationSparsity = 0;
    page()->setRequest(r);
    QCOMPARE(page()->request().activationSparsity, 0.0);
    auto* px = page()->findChild<QDoubleSpinBox*>(QStringLiteral("driftActivationSparsity"));
    QVERIFY(px);
    px->setValue(0.5);
    QCOMPARE(page()->request().activationSparsity, 0.5);
    r.activationSparsity = 0.25;  // and back through setRequest
    page()->setRequest(r);
    QCOMPARE(px->value(), 0.25);
    px->setValue(0.5);

    // out of range through the controller: refused, says why
    {
      sdw::widgets::DriftRequest bad = page()->request();
      bad.activationSparsity = 1.0;
      QSignalSpy errors(controller_.get(), &DriftController::error);
      QCOMPARE(controller_->analyze(bad), sdw::app::JobId(0));
      QCOMPARE(errors.count(), 1);
      QVERIFY2(errors.first().at(0).toString().contains(QStringLiteral("p_x")), qPrintable(errors.first().at(0).toString()));
    }

    QSignalSpy written(controller_.get(), &DriftController::runWritten);
    QSignalSpy infos(controller_.get(), &DriftController::info);
    auto* run = page()->findChild<QPushButton*>(QStringLiteral("driftAnalyze"));
    QVERIFY(run && run->isEnabled());
    run->click();
    QVERIFY(written.wait(120000));
    QVERIFY(settle());
    bool logged = false;
    for (const auto& i : infos)
      logged = logged || i.at(0).toString().contains(QStringLiteral("at activation sparsity p_x 0.50"));
    QVERIFY(logged);
    const QString path = written.first().at(0).toString();
    QCOMPARE(page()->currentRunPath(), path);

    const DriftData d = sdw::app::readDriftRun(path);
    QCOMPARE(d.activationSparsity, 0.5);
    QCOMPARE(page()->data().activationSparsity, 0.5);
    QCOMPARE(d.steps, 6);
    QCOMPARE(d.prompts, 2);
    QCOMPARE(d.models.size(), 2);
    const QString title = page()->titleText();
    QVERIFY2(title.contains(QStringLiteral("pruned models at activation sparsity p_x 0.50")), qPrintable(title));
    QVERIFY2(title.contains(QStringLiteral("decode steps, sampled, T=1.0, top-k off, top-p 1.0; pruned models")),
             qPrintable(title));
    // the dense model's own copy, sparsified, no longer matches the dense model
    double maxSelf = 0;
    for (int t = 0; t < 6; ++t)
      for (int l = 0; l < L; ++l) maxSelf = std::max(maxSelf, d.ratio(1, 0, t, l));
    QVERIFY2(maxSelf > 1e-3, qPrintable(QString::number(maxSelf)));

    // the run picker's description carries it too
    QSignalSpy found(controller_.get(), &DriftController::runsFound);
    controller_->setWorkspace(dir_.path());
    QVERIFY(found.wait(20000));
    QVERIFY(settle());
    const auto runs = found.first().at(0).value<QVector<sdw::widgets::DriftRunChoice>>();
    QCOMPARE(runs.size(), 2);
    bool described = false;
    for (const auto& c : runs)
      if (c.path == path) described = c.description.endsWith(QStringLiteral(", p_x 0.50"));
    QVERIFY(described);
    px->setValue(0);
  }

  // Thresholds from a calibration run instead of each token's top-k: the
  // picker lists the workspace's calibration runs (calib-small keeps no
  // samples), is off at p_x 0 and for top-k; the run chosen reaches
  // DriftSettings, is recorded in the run and named in its title; a run
  // without samples fails the job with its error, the run shown stays.
  void activationThresholdsReachTheRun() {
    const QString samples = dir_.filePath(QStringLiteral("calib-samples.sdw.h5"));
    const QString plain = dir_.filePath(QStringLiteral("calib-small.sdw.h5"));
    sdw::testing::calibrateSampleModel(samples.toStdString(), 32);
    QSignalSpy found(controller_.get(), &DriftController::calibrationRunsFound);
    controller_->setWorkspace(dir_.path());
    QVERIFY(found.wait(20000));
    QVERIFY(settle());
    QCOMPARE(found.first().at(0).value<QVector<sdw::widgets::RunChoice>>().size(), 2);
    QComboBox* selection = combo("driftActivationSelection");
    QComboBox* run = combo("driftThresholdsRun");
    auto* px = page()->findChild<QDoubleSpinBox*>(QStringLiteral("driftActivationSparsity"));
    QVERIFY(selection && run && px);
    QCOMPARE(run->count(), 2);
    QCOMPARE(run->currentData().toString(), samples);
    QCOMPARE(run->itemText(run->findData(plain)), QStringLiteral("calib-small.sdw.h5 (no samples)"));

    QCOMPARE(px->value(), 0.0);
    QCOMPARE(selection->currentData().toString(), QStringLiteral("topk"));
    QVERIFY(!run->isEnabled());
    selection->setCurrentIndex(1);
    QVERIFY(!run->isEnabled());  // p_x 0
    QCOMPARE(page()->request().activationThresholds, QString());
    px->setValue(0.5);
    QVERIFY(run->isEnabled());
    QCOMPARE(page()->request().activationThresholds, samples);
    selection->setCurrentIndex(0);
    QVERIFY(!run->isEnabled());
    QCOMPARE(page()->request().activationThresholds, QString());

    // Through setRequest too, with a short analysis of the pruned model.
    sdw::widgets::DriftRequest r = page()->request();
    r.pruned = {pruned_};
    r.steps = 4;
    r.maxPrompts = 1;
    r.modes = {QStringLiteral("own")};
    r.device = QStringLiteral("cpu");
    r.activationSparsity = 0.5;
    r.activationThresholds = samples;
    page()->setRequest(r);
    QCOMPARE(selection->currentData().toString(), QStringLiteral("thresholds"));
    QCOMPARE(page()->request().activationThresholds, samples);
    QCOMPARE(page()->request().activationSparsity, 0.5);

    // Thresholds at p_x 0 through the controller: refused, says why.
    {
      sdw::widgets::DriftRequest bad = page()->request();
      bad.activationSparsity = 0;
      QSignalSpy errors(controller_.get(), &DriftController::error);
      QCOMPARE(controller_->analyze(bad), sdw::app::JobId(0));
      QCOMPARE(errors.count(), 1);
      QVERIFY2(errors.first().at(0).toString().contains(QStringLiteral("thresholds need p_x > 0")),
               qPrintable(errors.first().at(0).toString()));
    }

    QSignalSpy written(controller_.get(), &DriftController::runWritten);
    QSignalSpy infos(controller_.get(), &DriftController::info);
    auto* analyze = page()->findChild<QPushButton*>(QStringLiteral("driftAnalyze"));
    QVERIFY(analyze && analyze->isEnabled());
    analyze->click();
    QVERIFY(written.wait(120000));
    QVERIFY(settle());
    bool logged = false;
    for (const auto& i : infos)
      logged = logged ||
               i.at(0).toString().contains(QStringLiteral("at activation sparsity p_x 0.50 (thresholds: calib-samples)"));
    QVERIFY(logged);
    const QString path = written.first().at(0).toString();
    QCOMPARE(page()->currentRunPath(), path);
    const sdw::gpu::ActivationThresholds expected = sdw::gpu::activationThresholdsFromRun(samples.toStdString(), 0.5);
    const DriftData d = sdw::app::readDriftRun(path);
    QCOMPARE(d.activationSparsity, 0.5);
    QCOMPARE(QFileInfo(d.activationThresholds).fileName(), QStringLiteral("calib-samples.sdw.h5"));
    QCOMPARE(d.activationThresholdsRunId, QString::fromStdString(expected.runId));
    QCOMPARE(page()->data().activationThresholdsRunId, QString::fromStdString(expected.runId));
    const QString title = page()->titleText();
    QVERIFY2(title.contains(QStringLiteral("pruned models at activation sparsity p_x 0.50 (thresholds: calib-samples)")),
             qPrintable(title));
    auto* titleLabel = page()->findChild<QLabel*>(QStringLiteral("driftTitle"));
    QVERIFY(titleLabel);
    QVERIFY2(titleLabel->toolTip().contains(QString::fromStdString(expected.runId)), qPrintable(titleLabel->toolTip()));

    // A run without samples: the job fails with the run's error, in red.
    run->setCurrentIndex(run->findData(plain));
    QCOMPARE(page()->request().activationThresholds, plain);
    QSignalSpy ended(controller_.get(), &DriftController::jobEnded);
    analyze->click();
    QVERIFY(ended.wait(120000));
    QVERIFY(settle());
    QCOMPARE(ended.last().at(1).toBool(), true);
    QVERIFY2(page()->statusText().contains(
                 QStringLiteral("calib-small.sdw.h5 has no activation samples: calibrate with --sample-rows N first")),
             qPrintable(page()->statusText()));
    QVERIFY(page()->findChild<QLabel*>(QStringLiteral("driftStatus"))->styleSheet().contains(QStringLiteral("#b00020")));
    QCOMPARE(page()->currentRunPath(), path);

    selection->setCurrentIndex(0);
    px->setValue(0);
    QCOMPARE(page()->request().activationThresholds, QString());
  }

  // The engine's warnings show under the summary, and go with the run.
  void warningsShowUnderTheSummary() {
    DriftData d = page()->data();
    QVERIFY(!d.isEmpty());
    d.warnings = QStringList{QStringLiteral("mag24 was calibrated on x.sdw.h5, decoded greedy, but this drift "
                                            "analysis decodes sampled, T=1.0, top-k off, top-p 1.0: ...")};
    page()->setData(d);
    QCOMPARE(page()->shownWarnings(), d.warnings);
    auto* label = page()->findChild<QLabel*>(QStringLiteral("driftChecks"));
    QVERIFY(label && label->isVisibleTo(page()));
    QVERIFY(label->text().startsWith(QStringLiteral("Warning: mag24 was calibrated")));
    d.warnings.clear();
    d.notes.clear();
    page()->setData(d);
    QCOMPARE(page()->shownWarnings(), QStringList());
    QVERIFY(!label->isVisibleTo(page()));
  }

  void refusesWithoutAPrunedModel() {
    sdw::widgets::DriftRequest r = page()->request();
    r.pruned.clear();
    QSignalSpy errors(controller_.get(), &DriftController::error);
    QCOMPARE(controller_->analyze(r), sdw::app::JobId(0));
    QCOMPARE(errors.count(), 1);
    QVERIFY(page()->statusText().contains(QStringLiteral("pruned checkpoint")));
  }

  void distinguishingLabels() {
    using sdw::app::distinguishingLabels;
    QCOMPARE(distinguishingLabels({"sgpt24-fixed", "sgpt24-ar"}), (QStringList{"fixed", "AR"}));
    QCOMPARE(distinguishingLabels({"llama-c4-sgpt", "llama-ar-sgpt"}), (QStringList{"C4", "AR"}));
    QCOMPARE(distinguishingLabels({"same", "same"}), (QStringList{"same", "same"}));
    QCOMPARE(distinguishingLabels({"only"}), QStringList{"only"});
  }

  void mainWindowSelectsTheDriftTab() {
    QTemporaryDir settingsDir;
    sdw::app::Settings settings(settingsDir.filePath(QStringLiteral("sdw.ini")));
    sdw::app::MainWindow w(&settings);
    w.setPersistState(false);
    w.setShowErrorDialogs(false);
    QVERIFY(w.selectPanel(QStringLiteral("Analysis/Drift")));
    QCOMPARE(w.currentPanel(), QStringLiteral("Analysis"));
    QCOMPARE(w.analysisPanel()->innerTabs()->currentWidget(), w.analysisPanel()->driftPage());
    QVERIFY(w.selectPanel(QStringLiteral("analysis/epsilon")));
    QCOMPARE(w.analysisPanel()->innerTabs()->currentIndex(), 0);
    QVERIFY(!w.selectPanel(QStringLiteral("Analysis/Nope")));
    QVERIFY(!w.selectPanel(QStringLiteral("Model/Drift")));
    w.jobs()->cancelAll();
    QVERIFY(w.jobs()->waitForDone(30000));
  }
};

QTEST_MAIN(TestDriftPage)
#include "test_drift_page.moc"
