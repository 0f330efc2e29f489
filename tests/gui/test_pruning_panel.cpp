// The Pruning panel offscreen, driven through its controller: the
// per-module model under QAbstractItemModelTester and its numeric sort, the
// sample workspace's pruning record and evaluation run against what
// RunReader reads from the same files (module rows, quality table,
// side-by-side texts), a real pruning of the sample model from a small
// calibration run made here (rows arrive live, every layer reached, the
// checkpoint and the record written), a sequential pruning cancelled while
// it re-captures (reported, nothing left), a tiny evaluation of the pruned
// model written into the workspace, and clear errors for bad files. DuoGPT
// in the form (its p_x, the order it fixes, its folder names) and a pruning
// with it; an evaluation under run-time activation sparsity (the dialog's
// p_x recorded in the run and named in the quality table), and one with
// thresholds from a calibration run (the dialog's picker, the run recorded
// and named; a run without activation samples failing it visibly).

#include "app/gui/modelcontroller.h"
#include "app/gui/pruningcontroller.h"
#include "app/gui/resultruns.h"
#include "app/gui/workspace.h"
#include "app/jobmanager.h"
#include "core/decoding.h"
#include "core/runstore.h"
#include "gpu/activation_thresholds.h"
#include "gpu/calibration.h"
#include "gpu/device.h"
#include "tests/gui/sample_calibration.h"
#include "widgets/activationselection.h"
#include "widgets/prunelayerchart.h"
#include "widgets/prunemodulemodel.h"
#include "widgets/pruningpanel.h"
#include "widgets/qualitydialog.h"
#include "widgets/qualitymodel.h"
#include "widgets/qualitypage.h"

#include <QAbstractItemModelTester>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileInfo>
#include <QPushButton>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <memory>

using sdw::app::JobManager;
using sdw::app::PruningController;
using sdw::widgets::PruneForm;
using sdw::widgets::PruneModuleData;
using sdw::widgets::PruneModuleModel;
using sdw::widgets::PruningPanel;
using sdw::widgets::QualityModel;

namespace {

namespace fs = std::filesystem;
namespace rs = sdw::runstore;

QString sampleRun(const char* name) { return QDir(sdw::app::sampleWorkspaceDir()).filePath(QLatin1String(name)); }

PruneModuleData row(const QString& name, int layer, double loss) {
  PruneModuleData d;
  d.module = name;
  d.layer = layer;
  d.rows = 8;
  d.cols = 16;
  d.loss = loss;
  d.outputLoss = loss;
  d.relOutputError = loss / 10;
  d.sparsity = 0.5;
  d.seconds = 0.01;
  return d;
}

// The rows of /pruning/modules as RunReader sees them.
struct RecordRows {
  std::vector<std::string> names;
  std::vector<double> loss, outputLoss, rel, sparsity, seconds;
  std::vector<std::int64_t> layer;
};
RecordRows readRows(const QString& path) {
  const auto r = rs::RunReader::open(path.toStdString());
  RecordRows x;
  x.names = r.readStrings("/pruning/modules/name");
  x.loss = r.readFloat64("/pruning/modules/loss").data;
  x.outputLoss = r.readFloat64("/pruning/modules/output_loss").data;
  x.rel = r.readFloat64("/pruning/modules/rel_output_error").data;
  x.sparsity = r.readFloat64("/pruning/modules/sparsity").data;
  x.seconds = r.readFloat64("/pruning/modules/seconds").data;
  x.layer = r.readInt64("/pruning/modules/layer").data;
  return x;
}

void compareTable(const PruneModuleModel* m, const RecordRows& x) {
  QCOMPARE(m->rowCount(), int(x.names.size()));
  for (int i = 0; i < m->rowCount(); ++i) {
    const PruneModuleData* d = m->rowAt(i);
    QCOMPARE(d->module, QString::fromStdString(x.names[std::size_t(i)]));
    QCOMPARE(d->layer, int(x.layer[std::size_t(i)]));
    QCOMPARE(d->loss, x.loss[std::size_t(i)]);
    QCOMPARE(d->outputLoss, x.outputLoss[std::size_t(i)]);
    QCOMPARE(d->relOutputError, x.rel[std::size_t(i)]);
    QCOMPARE(d->sparsity, x.sparsity[std::size_t(i)]);
    QCOMPARE(m->data(m->index(i, PruneModuleModel::Loss), PruneModuleModel::ValueRole).toDouble(),
             x.loss[std::size_t(i)]);
  }
}

}  // namespace

class TestPruningPanel : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir dir_;
  QString calib_;
  QString pruned_;  // the checkpoint folder of the completed pruning
  QString duo_;     // ... of the DuoGPT pruning
  QString tinyEval_;  // the evaluation run evaluateTiny wrote
  QTemporaryDir samplesDir_;  // outside the workspace: a calibration that keeps activation samples
  QString samples_;
  std::unique_ptr<JobManager> jobs_;
  std::unique_ptr<PruningPanel> panel_;
  std::unique_ptr<PruningController> controller_;

  QString path(const char* name) const { return dir_.filePath(QLatin1String(name)); }

  // Waits for the job's end and returns its outcome.
  // The panel's evaluation defaults cut to a tiny run of `models`: one seed, 2 prompts of
  // 4 new tokens, 2 windows of 16, one side-by-side sample.
  sdw::widgets::EvaluateForm tinyEvaluation(const QStringList& models) const {
    sdw::widgets::EvaluateForm e = panel_->evaluateDefaults();
    e.models = models;
    e.seeds = QStringLiteral("0");
    e.maxNewTokens = 4;
    e.maxPrompts = 2;
    e.windows = 2;
    e.window = 16;
    e.sideBySide = 1;
    return e;
  }
  PruningPanel::Outcome waitEnd(QSignalSpy& ended, int ms) {
    if (ended.isEmpty() && !ended.wait(ms)) return PruningPanel::Outcome::Failed;
    return ended.last().at(1).value<PruningPanel::Outcome>();
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    // A small fixed-text calibration of the sample model: 64 positions.
    sdw::gpu::CalibrationSettings s;
    s.source = sdw::gpu::CalibrationSource::Fixed;
    s.model = sdw::app::sampleModelDir().toStdString();
    s.corpus = (fs::path(SDW_SOURCE_DIR) / "samples/corpus/brown-calib.txt");
    s.tokenBudget = 64;
    s.window = 32;
    s.batch = 2;
    calib_ = path("calib-tiny.sdw.h5");
    const auto r = sdw::gpu::runCalibration(s, calib_.toStdString());
    QVERIFY(r.complete);

    jobs_ = std::make_unique<JobManager>();
    jobs_->setProgressInterval(5);
    panel_ = std::make_unique<PruningPanel>();
    panel_->resize(1200, 800);
    panel_->show();
    controller_ = std::make_unique<PruningController>(jobs_.get());
    controller_->attach(panel_.get());
    QSignalSpy inputs(controller_.get(), &PruningController::inputsFound);
    controller_->setWorkspace(dir_.path());
    QVERIFY(inputs.wait(20000));
  }

  void cleanupTestCase() {
    jobs_->cancelAll();
    jobs_->waitForDone(60000);
    controller_.reset();
    panel_.reset();
    jobs_.reset();
  }

  void moduleModelUnderTester() {
    PruneModuleModel model;
    QSortFilterProxyModel proxy;
    proxy.setSourceModel(&model);
    proxy.setSortRole(PruneModuleModel::ValueRole);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester proxyTester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setRows({row("model.layers.0.self_attn.q_proj", 0, 3.0), row("model.layers.0.mlp.down_proj", 0, 0.5)});
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.columnCount(), int(PruneModuleModel::ColumnCount));
    proxy.sort(PruneModuleModel::Loss, Qt::AscendingOrder);
    model.appendRow(row("model.layers.1.self_attn.o_proj", 1, 1.5));  // live: lands in sorted place
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(proxy.data(proxy.index(0, PruneModuleModel::Loss), PruneModuleModel::ValueRole).toDouble(), 0.5);
    QCOMPARE(proxy.data(proxy.index(1, PruneModuleModel::Loss), PruneModuleModel::ValueRole).toDouble(), 1.5);
    QCOMPARE(proxy.data(proxy.index(2, PruneModuleModel::Loss), PruneModuleModel::ValueRole).toDouble(), 3.0);
    // display: the layer prefix dropped, shape and sparsity formatted
    QCOMPARE(model.data(model.index(0, PruneModuleModel::Module)).toString(), QStringLiteral("self_attn.q_proj"));
    QCOMPARE(model.data(model.index(0, PruneModuleModel::Shape)).toString(), QStringLiteral("8×16"));
    QCOMPARE(model.data(model.index(0, PruneModuleModel::Sparsity)).toString(), QStringLiteral("50.0%"));
    const QStringList csv = model.toCsv().trimmed().split(QLatin1Char('\n'));
    QCOMPARE(csv.size(), 4);
    QVERIFY(csv[0].startsWith(QStringLiteral("module,layer,rows,cols,loss")));
    QVERIFY(csv[1].startsWith(QStringLiteral("model.layers.0.self_attn.q_proj,0,8,16,3,")));
    model.clear();
    QCOMPARE(proxy.rowCount(), 0);
  }

  void opensSampleRecordAtStart() {
    const QString sample = sampleRun("pruning-sgpt24-fixed.sdw.h5");
    QTRY_COMPARE_WITH_TIMEOUT(panel_->shownRecord().path, sample, 20000);
    const RecordRows x = readRows(sample);
    QVERIFY(x.names.size() > 0);
    compareTable(panel_->moduleModel(), x);
    const auto r = rs::RunReader::open(sample.toStdString());
    const QString method = QString::fromStdString(r.readStringAttribute("/pruning", "method"));
    const QString pattern = QString::fromStdString(r.readStringAttribute("/pruning", "pattern"));
    QCOMPARE(panel_->shownRecord().method, method);
    QCOMPARE(panel_->shownRecord().calibrationTokens, r.readIntAttribute("/pruning", "calibration_tokens"));
    QVERIFY2(panel_->modulesSummary().startsWith(method + QLatin1Char(' ') + pattern), qPrintable(panel_->modulesSummary()));
    double mean = 0;
    for (double v : x.rel) mean += v;
    mean /= double(x.rel.size());
    QVERIFY(qAbs(panel_->shownRecord().meanRelError() - mean) <= 1e-12 * std::max(1.0, mean));
    // every layer complete in the per-layer chart
    int layers = 0;
    for (auto l : x.layer) layers = std::max(layers, int(l) + 1);
    QCOMPARE(panel_->layerChart()->layerCount(), layers);
    QCOMPARE(panel_->layerChart()->layersComplete(), layers);
  }

  void sortingByLossOrdersRows() {
    QSortFilterProxyModel* proxy = panel_->moduleProxy();
    const int n = proxy->rowCount();
    QVERIFY(n > 2);
    for (Qt::SortOrder order : {Qt::AscendingOrder, Qt::DescendingOrder}) {
      panel_->moduleTable()->sortByColumn(PruneModuleModel::Loss, order);
      QVector<double> seen;
      for (int i = 0; i < n; ++i)
        seen << proxy->data(proxy->index(i, PruneModuleModel::Loss), PruneModuleModel::ValueRole).toDouble();
      QVector<double> sorted = seen;
      std::sort(sorted.begin(), sorted.end());
      if (order == Qt::DescendingOrder) std::reverse(sorted.begin(), sorted.end());
      QCOMPARE(seen, sorted);
      QVERIFY(seen.first() != seen.last());
    }
    panel_->moduleTable()->sortByColumn(-1, Qt::AscendingOrder);
  }

  void qualityTableFromSample() {
    const QString sample = sampleRun("eval-sample.sdw.h5");
    sdw::widgets::QualityPage* page = panel_->qualityPage();
    QTRY_COMPARE_WITH_TIMEOUT(page->data().path, sample, 20000);
    const auto r = rs::RunReader::open(sample.toStdString());
    const auto labels = r.readStrings("/evaluation/model_labels");
    const auto ppl = r.readFloat64("/evaluation/ppl_text").data;
    const auto pplGen = r.readFloat64("/evaluation/ppl_dense_gen").data;
    const auto summary = r.readFloat64("/evaluation/summary");
    const auto seeds = r.readInt64("/evaluation/onpolicy/seeds").data;
    const QualityModel* m = page->model();
    QCOMPARE(m->rowCount(), int(labels.size()));
    QVERIFY(labels.size() >= 2);
    QCOMPARE(QString::fromStdString(labels[0]), QStringLiteral("dense"));
    for (int i = 0; i < m->rowCount(); ++i) {
      const auto at = [&](int c, int role) { return m->data(m->index(i, c), role); };
      QCOMPARE(at(QualityModel::Model, Qt::DisplayRole).toString(), QString::fromStdString(labels[std::size_t(i)]));
      QCOMPARE(at(QualityModel::PplText, QualityModel::ValueRole).toDouble(), ppl[std::size_t(i)]);
      QCOMPARE(at(QualityModel::PplDenseGen, QualityModel::ValueRole).toDouble(), pplGen[std::size_t(i)]);
      const std::size_t b = std::size_t(i) * 12;
      QCOMPARE(at(QualityModel::Kl, QualityModel::ValueRole).toDouble(), summary.data[b + 0]);
      QCOMPARE(at(QualityModel::Kl, QualityModel::StdRole).toDouble(), summary.data[b + 1]);
      QCOMPARE(at(QualityModel::Agreement, QualityModel::ValueRole).toDouble(), summary.data[b + 4]);
      QCOMPARE(at(QualityModel::Agreement, QualityModel::StdRole).toDouble(), summary.data[b + 5]);
      QCOMPARE(at(QualityModel::FirstDivergence, QualityModel::ValueRole).toDouble(), summary.data[b + 8]);
      QCOMPARE(at(QualityModel::FirstDivergence, QualityModel::StdRole).toDouble(), summary.data[b + 9]);
      QCOMPARE(at(QualityModel::Seeds, Qt::DisplayRole).toInt(), int(seeds.size()));
      QCOMPARE(at(QualityModel::Kl, Qt::DisplayRole).toString(),
               QStringLiteral("%1 ± %2").arg(summary.data[b], 0, 'f', 4).arg(summary.data[b + 1], 0, 'f', 4));
    }
    QAbstractItemModelTester tester(page->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    const QStringList csv = m->toCsv().trimmed().split(QLatin1Char('\n'));
    QCOMPARE(csv.size(), int(labels.size()) + 1);
    QVERIFY(csv[1].startsWith(QStringLiteral("dense,")));
    QVERIFY2(page->summaryText().contains(QStringLiteral("eval-sample.sdw.h5")), qPrintable(page->summaryText()));
  }

  void sideBySideTexts() {
    sdw::widgets::QualityPage* page = panel_->qualityPage();
    const auto r = rs::RunReader::open(sampleRun("eval-sample.sdw.h5").toStdString());
    const auto prompts = r.readStrings("/evaluation/side_by_side/prompts");
    const auto texts = r.readStrings("/evaluation/side_by_side/texts");
    const auto labels = r.readStrings("/evaluation/model_labels");
    const std::size_t m = labels.size();
    QVERIFY(!prompts.empty());
    QCOMPARE(page->promptCount(), int(prompts.size()));
    QCOMPARE(page->shownLabels().size(), int(m));
    for (std::size_t n = 0; n < prompts.size(); ++n) {
      page->selectPrompt(int(n));
      QCOMPARE(page->shownPrompt(), QString::fromStdString(prompts[n]));
      const QStringList shown = page->shownTexts();
      QCOMPARE(shown.size(), int(m));
      for (std::size_t k = 0; k < m; ++k) QCOMPARE(shown[int(k)], QString::fromStdString(texts[n * m + k]));
    }
    page->selectPrompt(0);
  }

  void formDefaults() {
    const PruneForm f = panel_->form();
    QCOMPARE(f.model, sdw::app::sampleModelDir());
    QCOMPARE(f.calibrationRuns, QStringList{calib_});  // the workspace's fixed-text run, checked by default
    QCOMPARE(f.outputDir, QDir(dir_.path()).filePath(QStringLiteral("pruned")));
    QCOMPARE(panel_->outputFolders(),
             QStringList{QDir(dir_.path()).filePath(QStringLiteral("pruned/sparsegpt24-calib-tiny"))});
    // cuda offered only where there is CUDA
    auto* device = panel_->findChild<QComboBox*>(QStringLiteral("pruneDevice"));
    QVERIFY(device);
    auto* items = qobject_cast<QStandardItemModel*>(device->model());
    QCOMPARE(items->item(1)->isEnabled(), sdw::gpu::deviceInfo().cudaAvailable);
    panel_->setModelDir(QStringLiteral("/elsewhere/model"));
    QCOMPARE(panel_->form().model, QStringLiteral("/elsewhere/model"));
    panel_->setModelDir(sdw::app::sampleModelDir());
    // the evaluation defaults point at the held-out samples
    const sdw::widgets::EvaluateForm e = panel_->evaluateDefaults();
    QVERIFY2(QFileInfo::exists(e.text) && e.text.endsWith(QStringLiteral("brown-heldout.txt")), qPrintable(e.text));
    QVERIFY2(QFileInfo::exists(e.prompts), qPrintable(e.prompts));
    QCOMPARE(e.seedList(), (QList<quint64>{0, 1, 2}));
    // ... and decode with the workbench's one protocol, which the dialog shows and returns
    QCOMPARE(e.temperature, sdw::kDefaultDecoding.temperature);
    QCOMPARE(e.topK, sdw::kDefaultDecoding.topK);
    QCOMPARE(e.topP, sdw::kDefaultDecoding.topP);
    sdw::widgets::EvaluateDialog dialog(e, {}, false);
    QCOMPARE(dialog.findChild<QDoubleSpinBox*>(QStringLiteral("evalTemperature"))->value(), e.temperature);
    sdw::widgets::EvaluateForm greedy = e;
    greedy.temperature = 0;
    greedy.topK = 40;
    greedy.topP = 0.9;
    dialog.setForm(greedy);
    QCOMPARE(dialog.form().temperature, 0.0);
    QCOMPARE(dialog.form().topK, 40);
    QCOMPARE(dialog.form().topP, 0.9);
  }

  void duoGptForm() {
    auto* method = panel_->findChild<QComboBox*>(QStringLiteral("pruneMethod"));
    auto* order = panel_->findChild<QComboBox*>(QStringLiteral("pruneOrder"));
    auto* px = panel_->findChild<QDoubleSpinBox*>(QStringLiteral("pruneActivationSparsity"));
    auto* percdamp = panel_->findChild<QDoubleSpinBox*>(QStringLiteral("prunePercdamp"));
    auto* blocksize = panel_->findChild<QSpinBox*>(QStringLiteral("pruneBlocksize"));
    QVERIFY(method && order && px && percdamp && blocksize);
    const int duo = method->findData(QStringLiteral("duogpt"));
    QVERIFY(duo >= 0);
    QCOMPARE(method->itemText(duo), QStringLiteral("DuoGPT"));
    QCOMPARE(px->minimum(), 0.0);
    QCOMPARE(px->maximum(), 0.95);
    QCOMPARE(px->singleStep(), 0.05);
    QCOMPARE(px->decimals(), 2);
    QCOMPARE(px->value(), 0.5);
    QCOMPARE(panel_->form().activationSparsity, 0.5);
    QVERIFY(!px->toolTip().isEmpty());

    // SparseGPT: p_x off, the order the user's
    method->setCurrentIndex(method->findData(QStringLiteral("sparsegpt")));
    order->setCurrentIndex(order->findData(QStringLiteral("parallel")));
    QVERIFY(!px->isEnabled());
    QVERIFY(order->isEnabled());
    QVERIFY(percdamp->isEnabled() && blocksize->isEnabled());
    const QString orderTip = order->toolTip();

    // DuoGPT: p_x on, SparseGPT's damping and block size kept, the order sequential and fixed
    method->setCurrentIndex(duo);
    QVERIFY(px->isEnabled());
    QVERIFY(percdamp->isEnabled() && blocksize->isEnabled());
    QCOMPARE(order->currentData().toString(), QStringLiteral("sequential"));
    QVERIFY(!order->isEnabled());
    QVERIFY2(order->toolTip().contains(QStringLiteral("DuoGPT prunes in sequential order")),
             qPrintable(order->toolTip()));
    PruneForm f = panel_->form();
    QCOMPARE(f.method, QStringLiteral("duogpt"));
    QCOMPARE(f.order, QStringLiteral("sequential"));
    px->setValue(0.3);
    QCOMPARE(panel_->form().activationSparsity, 0.3);
    // the folder names p_x: different p_x, different models
    QCOMPARE(panel_->outputFolders(),
             QStringList{QDir(dir_.path()).filePath(QStringLiteral("pruned/duogpt24-px30-calib-tiny"))});
    f = panel_->form();
    QCOMPARE(controller_->targetFor(f, calib_).out,
             QDir(dir_.path()).filePath(QStringLiteral("pruned/duogpt24-px30-calib-tiny")));
    f.activationSparsity = 0.5;
    QCOMPARE(controller_->targetFor(f, calib_).out,
             QDir(dir_.path()).filePath(QStringLiteral("pruned/duogpt24-px50-calib-tiny")));
    QCOMPARE(sdw::widgets::defaultPruneFolderName(QStringLiteral("duogpt"), QStringLiteral("4:8"),
                                                  QStringLiteral("/w/calib-ar.sdw.h5"), 0.75),
             QStringLiteral("duogpt48-px75-calib-ar"));
    // ... the other methods' names do not change with it
    QCOMPARE(sdw::widgets::defaultPruneFolderName(QStringLiteral("sparsegpt"), QStringLiteral("2:4"),
                                                  QStringLiteral("/w/calib-ar.sdw.h5"), 0.75),
             QStringLiteral("sparsegpt24-calib-ar"));
    QCOMPARE(sdw::widgets::defaultPruneFolderName(QStringLiteral("wanda"), QStringLiteral("2:4"),
                                                  QStringLiteral("/w/calib-ar.sdw.h5")),
             QStringLiteral("wanda24-calib-ar"));

    // Back to Wanda: the user's order again, p_x off, SparseGPT's fields off
    method->setCurrentIndex(method->findData(QStringLiteral("wanda")));
    QCOMPARE(order->currentData().toString(), QStringLiteral("parallel"));
    QVERIFY(order->isEnabled());
    QCOMPARE(order->toolTip(), orderTip);
    QVERIFY(!px->isEnabled());
    QVERIFY(!percdamp->isEnabled() && !blocksize->isEnabled());
    QCOMPARE(panel_->form().activationSparsity, 0.3);  // kept for the next DuoGPT pruning
    // ... and a sequential choice survives a visit to DuoGPT too
    order->setCurrentIndex(order->findData(QStringLiteral("sequential")));
    method->setCurrentIndex(duo);
    method->setCurrentIndex(method->findData(QStringLiteral("sparsegpt")));
    QCOMPARE(order->currentData().toString(), QStringLiteral("sequential"));
    QVERIFY(order->isEnabled());

    // form() / setForm() round-trip p_x; setForm with DuoGPT fixes the order too
    f = panel_->form();
    f.method = QStringLiteral("duogpt");
    f.order = QStringLiteral("parallel");
    f.activationSparsity = 0.65;
    f.percdamp = 0.02;
    f.blocksize = 64;
    panel_->setForm(f);
    PruneForm back = panel_->form();
    QCOMPARE(back.method, QStringLiteral("duogpt"));
    QCOMPARE(back.order, QStringLiteral("sequential"));
    QCOMPARE(back.activationSparsity, 0.65);
    QCOMPARE(px->value(), 0.65);
    QCOMPARE(back.percdamp, 0.02);
    QCOMPARE(back.blocksize, 64);
    QVERIFY(px->isEnabled());
    QVERIFY(!order->isEnabled());
    f.method = QStringLiteral("sparsegpt");
    f.order = QStringLiteral("parallel");
    f.activationSparsity = 0.5;
    f.percdamp = 0.01;
    f.blocksize = 128;
    panel_->setForm(f);
    back = panel_->form();
    QCOMPARE(back.method, QStringLiteral("sparsegpt"));
    QCOMPARE(back.order, QStringLiteral("parallel"));
    QCOMPARE(back.activationSparsity, 0.5);
    QVERIFY(order->isEnabled());
    QVERIFY(!px->isEnabled());
    QCOMPARE(panel_->outputFolders(),
             QStringList{QDir(dir_.path()).filePath(QStringLiteral("pruned/sparsegpt24-calib-tiny"))});
  }

  void pruneLive() {
    PruneForm f = panel_->form();
    f.method = QStringLiteral("sparsegpt");
    f.pattern = QStringLiteral("2:4");
    f.order = QStringLiteral("parallel");
    f.exportCompressedTensors = true;
    panel_->setForm(f);
    QVERIFY(panel_->findChild<QCheckBox*>(QStringLiteral("pruneExportCompressedTensors"))->isChecked());
    QSignalSpy ended(controller_.get(), &PruningController::jobEnded);
    QSignalSpy written(controller_.get(), &PruningController::runWritten);
    int rowsWhileRunning = 0;
    int rowsAtEnd = -1;
    auto c1 = connect(controller_.get(), &PruningController::moduleFinished, this,
                      [&] { rowsWhileRunning += controller_->isBusy() ? 1 : 0; });
    auto c2 = connect(controller_.get(), &PruningController::jobEnded, this,
                      [&] { rowsAtEnd = panel_->moduleModel()->rowCount(); });
    auto* prune = panel_->findChild<QPushButton*>(QStringLiteral("prune"));
    QVERIFY(prune && prune->isEnabled());
    prune->click();
    QVERIFY(controller_->isBusy());
    QVERIFY(!prune->isEnabled());
    QCOMPARE(waitEnd(ended, 180000), PruningPanel::Outcome::Complete);
    disconnect(c1);
    disconnect(c2);
    QVERIFY2(panel_->statusText().startsWith(QStringLiteral("Complete")), qPrintable(panel_->statusText()));

    pruned_ = QDir(dir_.path()).filePath(QStringLiteral("pruned/sparsegpt24-calib-tiny"));
    const QString record = QDir(dir_.path()).filePath(QStringLiteral("pruning-sparsegpt24-calib-tiny.sdw.h5"));
    QVERIFY(QFileInfo::exists(QDir(pruned_).filePath(QStringLiteral("model.safetensors"))));
    QVERIFY(QFileInfo::exists(QDir(pruned_).filePath(QStringLiteral("config.json"))));
    // The compressed-tensors export beside it: 2:4 as sparse-24-bitmask.
    QFile ctConfig(QDir(pruned_).filePath(QStringLiteral("compressed-tensors/config.json")));
    QVERIFY(ctConfig.open(QIODevice::ReadOnly));
    QVERIFY(ctConfig.readAll().contains("\"sparse-24-bitmask\""));
    QVERIFY(QFileInfo::exists(QDir(pruned_).filePath(QStringLiteral("compressed-tensors/model.safetensors"))));
    QVERIFY(QFileInfo::exists(record));
    QCOMPARE(written.size(), 1);
    QCOMPARE(written.first().at(0).toString(), record);

    const RecordRows x = readRows(record);
    QCOMPARE(x.names.size(), std::size_t(42));  // 6 layers x 7 projections
    QCOMPARE(rowsWhileRunning, 42);             // every row arrived while the job ran
    QCOMPARE(rowsAtEnd, 42);
    QCOMPARE(panel_->shownRecord().path, record);
    compareTable(panel_->moduleModel(), x);
    for (double s : x.sparsity) QCOMPARE(s, 0.5);
    QCOMPARE(panel_->layerChart()->layerCount(), 6);
    QCOMPARE(panel_->layerChart()->layersComplete(), 6);
    for (int l = 0; l < 6; ++l) QCOMPARE(panel_->layerChart()->modulesDone(l), 7);
    QCOMPARE(panel_->layerChart()->currentLayer(), -1);
    QCOMPARE(panel_->progressFraction(), 1.0);
    QVERIFY(prune->isEnabled());
    // the next default name moves on instead of overwriting
    QCOMPARE(controller_->targetFor(panel_->form(), calib_).out, pruned_ + QStringLiteral("-2"));
    // the rescan lists the new record
    auto* records = panel_->findChild<QComboBox*>(QStringLiteral("pruningRecords"));
    QTRY_VERIFY_WITH_TIMEOUT(records->findData(record) >= 0, 20000);
  }

  void cancelWhileRecapturing() {
    PruneForm f = panel_->form();
    f.order = QStringLiteral("sequential");
    f.method = QStringLiteral("wanda");
    panel_->setForm(f);
    const QString out = QDir(dir_.path()).filePath(QStringLiteral("pruned/wanda24-calib-tiny"));
    const QString record = QDir(dir_.path()).filePath(QStringLiteral("pruning-wanda24-calib-tiny.sdw.h5"));
    QCOMPARE(panel_->outputFolders(), QStringList{out});
    QSignalSpy ended(controller_.get(), &PruningController::jobEnded);
    QStringList stages;
    int recaptureLayer = -1;
    int rowsBeforeCancel = -1;
    auto c = connect(controller_.get(), &PruningController::layerState, this, [&](int layer, const QString& stage) {
      stages << stage;
      if (stage == QLatin1String("re-capturing") && recaptureLayer < 0) {
        recaptureLayer = layer;
        rowsBeforeCancel = panel_->moduleModel()->rowCount();
        QCOMPARE(panel_->layerChart()->currentStage(), stage);
        controller_->cancel();
      }
    });
    QVERIFY(controller_->prune(panel_->form()) != 0);
    QCOMPARE(waitEnd(ended, 180000), PruningPanel::Outcome::Cancelled);
    disconnect(c);
    QVERIFY2(stages.contains(QStringLiteral("solving")), qPrintable(stages.join(QLatin1Char(','))));
    QCOMPARE(recaptureLayer, 1);        // layer 0 solved from the run, layer 1 re-captured
    QCOMPARE(rowsBeforeCancel, 7);      // layer 0's projections arrived live
    QVERIFY2(panel_->statusText().startsWith(QStringLiteral("Cancelled")), qPrintable(panel_->statusText()));
    QVERIFY(!QFileInfo::exists(QDir(out).filePath(QStringLiteral("model.safetensors"))));
    QVERIFY(!QFileInfo::exists(QDir(out).filePath(QStringLiteral("model.sdwsparse"))));
    QVERIFY(!QFileInfo::exists(record));
    QVERIFY(!QFileInfo::exists(record + QStringLiteral(".partial")));
    QVERIFY(!controller_->isBusy());
    QVERIFY(panel_->findChild<QPushButton*>(QStringLiteral("prune"))->isEnabled());
    QCOMPARE(panel_->layerChart()->currentLayer(), -1);
    QVERIFY2(panel_->modulesSummary().contains(QStringLiteral("none of them was saved")),
             qPrintable(panel_->modulesSummary()));
    PruneForm back = panel_->form();
    back.order = QStringLiteral("parallel");
    back.method = QStringLiteral("sparsegpt");
    panel_->setForm(back);
  }

  void pruneDuoGpt() {
    PruneForm f = panel_->form();
    f.method = QStringLiteral("duogpt");
    f.pattern = QStringLiteral("2:4");
    f.order = QStringLiteral("parallel");  // DuoGPT's is sequential whatever the form says
    f.activationSparsity = 0.5;
    f.exportCompressedTensors = false;
    panel_->setForm(f);
    duo_ = QDir(dir_.path()).filePath(QStringLiteral("pruned/duogpt24-px50-calib-tiny"));
    const QString record = QDir(dir_.path()).filePath(QStringLiteral("pruning-duogpt24-px50-calib-tiny.sdw.h5"));
    QCOMPARE(panel_->outputFolders(), QStringList{duo_});
    QSignalSpy started(controller_.get(), &PruningController::jobStarted);
    QSignalSpy ended(controller_.get(), &PruningController::jobEnded);
    QVERIFY(controller_->prune(panel_->form()) != 0);
    QCOMPARE(started.size(), 1);
    QVERIFY2(started.first().at(0).toString().contains(QStringLiteral("duogpt 2:4 p_x 0.50 (sequential)")),
             qPrintable(started.first().at(0).toString()));
    QCOMPARE(waitEnd(ended, 300000), PruningPanel::Outcome::Complete);
    QVERIFY(QFileInfo::exists(QDir(duo_).filePath(QStringLiteral("model.safetensors"))));
    QVERIFY(QFileInfo::exists(record));
    const sdw::widgets::PruningRecordData& shown = panel_->shownRecord();
    QCOMPARE(shown.path, record);
    QCOMPARE(shown.method, QStringLiteral("duogpt"));
    QCOMPARE(shown.order, QStringLiteral("sequential"));
    QCOMPARE(shown.activationSparsity, 0.5);
    QCOMPARE(shown.modules.size(), 42);
    for (const PruneModuleData& m : shown.modules) QCOMPARE(m.sparsity, 0.5);
    const auto r = rs::RunReader::open(record.toStdString());
    QCOMPARE(r.readDoubleAttribute("/pruning", "activation_sparsity"), 0.5);
    QCOMPARE(QString::fromStdString(r.readStringAttribute("/pruning", "order")), QStringLiteral("sequential"));
    QVERIFY2(panel_->modulesSummary().startsWith(QStringLiteral("duogpt 2:4, sequential, p_x 0.50 · ")),
             qPrintable(panel_->modulesSummary()));
    auto* records = panel_->findChild<QComboBox*>(QStringLiteral("pruningRecords"));
    QTRY_VERIFY_WITH_TIMEOUT(records->findData(record) >= 0 &&
                                 records->itemText(records->findData(record)).contains(QStringLiteral("p_x 0.50")),
                             20000);
    QVERIFY2(
        records->itemText(records->findData(record)).endsWith(QStringLiteral("duogpt 2:4 sequential p_x 0.50, fixed")),
        qPrintable(records->itemText(records->findData(record))));
    PruneForm back = panel_->form();
    back.method = QStringLiteral("sparsegpt");
    back.order = QStringLiteral("parallel");
    panel_->setForm(back);
    QCOMPARE(panel_->form().order, QStringLiteral("parallel"));
  }

  void evaluateTiny() {
    QVERIFY(!pruned_.isEmpty());
    QVERIFY(panel_->prunedCandidates().contains(pruned_));  // offered by the Evaluate… dialog
    QVERIFY(panel_->evaluateDefaults().models.contains(pruned_));
    sdw::widgets::EvaluateForm e = tinyEvaluation({pruned_});
    QSignalSpy ended(controller_.get(), &PruningController::jobEnded);
    QVERIFY(controller_->evaluate(e) != 0);
    QCOMPARE(waitEnd(ended, 180000), PruningPanel::Outcome::Complete);
    const sdw::widgets::QualityData& d = panel_->qualityPage()->data();
    tinyEval_ = d.path;
    QCOMPARE(QFileInfo(d.path).absolutePath(), QFileInfo(dir_.path()).absoluteFilePath());
    const auto r = rs::RunReader::open(d.path.toStdString());
    QCOMPARE(r.kind(), std::string("evaluation"));
    const auto ppl = r.readFloat64("/evaluation/ppl_text").data;
    QCOMPARE(d.models.size(), 2);
    QCOMPARE(d.models[1].label, QStringLiteral("sparsegpt24-calib-tiny"));
    QCOMPARE(d.models[0].pplText, ppl[0]);
    QCOMPARE(d.models[1].pplText, ppl[1]);
    QCOMPARE(d.models[0].seeds, 1);
    QCOMPARE(panel_->qualityPage()->promptCount(), 1);
    QCOMPARE(panel_->qualityPage()->shownTexts().size(), 2);
    QVERIFY(d.models[0].agreement.mean == 1.0);  // the dense model agrees with itself
    // The run records the decoding (the default) and what the pruned model
    // was calibrated on: fixed text, so no decoding to disagree with.
    QCOMPARE(d.temperature, sdw::kDefaultDecoding.temperature);
    QCOMPARE(d.decoding, QString::fromStdString(sdw::kDefaultDecoding.describe()));
    QVERIFY(d.warnings.isEmpty());
    QVERIFY2(d.notes.join(QLatin1Char(' ')).contains(QStringLiteral("sparsegpt24-calib-tiny: calib-tiny.sdw.h5, fixed text")),
             qPrintable(d.notes.join(QLatin1Char('\n'))));
    QVERIFY(panel_->qualityPage()->summaryText().contains(d.decoding));

    // Warnings the run carries show under the summary.
    const sdw::widgets::QualityData shown = d;  // d is the page's own data: keep a copy
    sdw::widgets::QualityData warned = shown;
    warned.warnings = QStringList{QStringLiteral("x was calibrated on y.sdw.h5, decoded greedy, but this evaluation "
                                                 "decodes sampled, T=1.0, top-k off, top-p 1.0: ...")};
    panel_->qualityPage()->setData(warned);
    QCOMPARE(panel_->qualityPage()->shownWarnings(), warned.warnings);
    panel_->qualityPage()->setData(shown);
    QCOMPARE(panel_->qualityPage()->shownWarnings(), QStringList());
    // dense inputs: no p_x named
    QCOMPARE(d.activationSparsity, 0.0);
    QCOMPARE(panel_->qualityPage()->model()->headerData(QualityModel::Model, Qt::Horizontal).toString(),
             QStringLiteral("Model"));
    QVERIFY(!panel_->qualityPage()->summaryText().contains(QStringLiteral("p_x")));
  }

  void evaluateDialogActivationSparsity() {
    sdw::widgets::EvaluateForm e = panel_->evaluateDefaults();
    QCOMPARE(e.activationSparsity, 0.0);
    sdw::widgets::EvaluateDialog dialog(e, {}, false);
    auto* px = dialog.findChild<QDoubleSpinBox*>(QStringLiteral("qualityActivationSparsity"));
    QVERIFY(px);
    QCOMPARE(px->value(), 0.0);
    QCOMPARE(px->minimum(), 0.0);
    QCOMPARE(px->maximum(), 0.95);
    QVERIFY2(px->toolTip().contains(QStringLiteral("the dense reference stays dense")), qPrintable(px->toolTip()));
    QCOMPARE(dialog.form().activationSparsity, 0.0);
    px->setValue(0.4);
    QCOMPARE(dialog.form().activationSparsity, 0.4);
    e.activationSparsity = 0.25;
    dialog.setForm(e);
    QCOMPARE(px->value(), 0.25);
    QCOMPARE(dialog.form().activationSparsity, 0.25);
    sdw::widgets::EvaluateDialog opened(e, {}, false);
    QCOMPARE(opened.findChild<QDoubleSpinBox*>(QStringLiteral("qualityActivationSparsity"))->value(), 0.25);
  }

  void evaluateUnderActivationSparsity() {
    QVERIFY(!pruned_.isEmpty());
    QVERIFY(!duo_.isEmpty());
    sdw::widgets::EvaluateForm e = tinyEvaluation({pruned_, duo_});  // SparseGPT and DuoGPT under the same p_x
    e.activationSparsity = 0.5;
    QSignalSpy started(controller_.get(), &PruningController::jobStarted);
    QSignalSpy ended(controller_.get(), &PruningController::jobEnded);
    QVERIFY(controller_->evaluate(e) != 0);
    QVERIFY2(started.first().at(0).toString().contains(QStringLiteral("at activation sparsity p_x 0.50")),
             qPrintable(started.first().at(0).toString()));
    QCOMPARE(waitEnd(ended, 180000), PruningPanel::Outcome::Complete);
    const sdw::widgets::QualityData& d = panel_->qualityPage()->data();
    // a new run next to the first, even within the same second
    QVERIFY2(d.path != tinyEval_ && QFileInfo::exists(tinyEval_), qPrintable(d.path));
    QCOMPARE(QFileInfo(d.path).absolutePath(), QFileInfo(dir_.path()).absoluteFilePath());
    QCOMPARE(d.models.size(), 3);
    QCOMPARE(d.models[1].label, QStringLiteral("sparsegpt24-calib-tiny"));
    QCOMPARE(d.models[2].label, QStringLiteral("duogpt24-px50-calib-tiny"));
    // the dialog's p_x is the settings' value, recorded in the run and read back
    QCOMPARE(d.activationSparsity, 0.5);
    QCOMPARE(sdw::app::readEvaluationRun(d.path).activationSparsity, 0.5);
    const QualityModel* m = panel_->qualityPage()->model();
    QCOMPARE(m->activationSparsity(), 0.5);
    QCOMPARE(m->headerData(QualityModel::Model, Qt::Horizontal).toString(), QStringLiteral("Model (p_x 0.50)"));
    QVERIFY(m->headerData(QualityModel::Model, Qt::Horizontal, Qt::ToolTipRole)
                .toString()
                .contains(QStringLiteral("dense reference stays dense")));
    QVERIFY2(panel_->qualityPage()->summaryText().contains(
                 QStringLiteral("compared models at activation sparsity p_x 0.50 (dense reference dense)")),
             qPrintable(panel_->qualityPage()->summaryText()));
    const QStringList csv = m->toCsv().trimmed().split(QLatin1Char('\n'));
    QCOMPARE(csv.size(), 4);
    QVERIFY(csv[0].endsWith(QStringLiteral(",seeds,activation_sparsity")));
    QVERIFY2(csv[1].startsWith(QStringLiteral("dense,")) && csv[1].endsWith(QStringLiteral(",0")), qPrintable(csv[1]));
    QVERIFY2(csv[2].endsWith(QStringLiteral(",0.5")), qPrintable(csv[2]));
    QVERIFY2(csv[3].endsWith(QStringLiteral(",0.5")), qPrintable(csv[3]));
    // the dense reference is the same dense model: its figures do not change with p_x
    QCOMPARE(d.models[0].agreement.mean, 1.0);
  }

  // The Evaluate… dialog's selection: the panel hands it the workspace's
  // calibration runs (calib-tiny keeps no samples); on its own, the run
  // picker is off at p_x 0 and for top-k, and the run chosen is the form's.
  void evaluateDialogThresholds() {
    auto* evaluate = panel_->qualityPage()->findChild<QPushButton*>(QStringLiteral("evaluate"));
    QVERIFY(evaluate && evaluate->isEnabled());
    evaluate->click();
    sdw::widgets::EvaluateDialog* shown = panel_->evaluateDialog();
    QVERIFY(shown);
    auto* shownRun = shown->findChild<QComboBox*>(QStringLiteral("qualityThresholdsRun"));
    QVERIFY(shownRun);
    QCOMPARE(shownRun->count(), 1);
    QCOMPARE(shownRun->currentData().toString(), calib_);
    QCOMPARE(shownRun->itemText(0), QStringLiteral("calib-tiny.sdw.h5 (no samples)"));
    QCOMPARE(shown->form().activationThresholds, QString());
    shown->reject();

    QVERIFY(samplesDir_.isValid());
    samples_ = samplesDir_.filePath(QStringLiteral("calib-samples.sdw.h5"));
    sdw::testing::calibrateSampleModel(samples_.toStdString(), 32);
    sdw::widgets::EvaluateForm e = panel_->evaluateDefaults();
    QCOMPARE(e.activationThresholds, QString());
    sdw::widgets::EvaluateDialog dialog(e, {}, false);
    dialog.setCalibrationRuns({sdw::app::readCalibrationChoice(calib_.toStdString()),
                               sdw::app::readCalibrationChoice(samples_.toStdString())});
    auto* selection = dialog.findChild<QComboBox*>(QStringLiteral("qualityActivationSelection"));
    auto* run = dialog.findChild<QComboBox*>(QStringLiteral("qualityThresholdsRun"));
    auto* px = dialog.findChild<QDoubleSpinBox*>(QStringLiteral("qualityActivationSparsity"));
    QVERIFY(selection && run && px);
    QCOMPARE(run->count(), 2);
    QCOMPARE(run->currentData().toString(), samples_);  // the first run with samples
    QCOMPARE(run->itemText(1), QStringLiteral("calib-samples.sdw.h5"));
    QCOMPARE(selection->currentData().toString(), QStringLiteral("topk"));
    QVERIFY(!run->isEnabled());
    selection->setCurrentIndex(1);
    QVERIFY(!run->isEnabled());  // p_x 0
    QCOMPARE(dialog.form().activationThresholds, QString());
    px->setValue(0.5);
    QVERIFY(run->isEnabled());
    QCOMPARE(dialog.form().activationSparsity, 0.5);
    QCOMPARE(dialog.form().activationThresholds, samples_);
    selection->setCurrentIndex(0);
    QVERIFY(!run->isEnabled());
    QCOMPARE(dialog.form().activationThresholds, QString());

    // setForm and a new dialog carry the run, listed by its path.
    e.activationSparsity = 0.5;
    e.activationThresholds = samples_;
    dialog.setForm(e);
    QCOMPARE(selection->currentData().toString(), QStringLiteral("thresholds"));
    QCOMPARE(dialog.form().activationThresholds, samples_);
    sdw::widgets::EvaluateDialog opened(e, {}, false);
    QCOMPARE(opened.form().activationThresholds, samples_);
    QCOMPARE(opened.findChild<QComboBox*>(QStringLiteral("qualityThresholdsRun"))->currentText(),
             QStringLiteral("calib-samples.sdw.h5"));
  }

  // An evaluation with thresholds from the run above: recorded in the run
  // with its run id, named in the quality table's header and summary; a run
  // without activation samples fails the evaluation with its error.
  void evaluateUnderActivationThresholds() {
    QVERIFY(!pruned_.isEmpty());
    QVERIFY(!samples_.isEmpty());
    sdw::widgets::EvaluateForm e = tinyEvaluation({pruned_});
    e.activationSparsity = 0.5;
    e.activationThresholds = samples_;
    QSignalSpy started(controller_.get(), &PruningController::jobStarted);
    QSignalSpy ended(controller_.get(), &PruningController::jobEnded);
    QVERIFY(controller_->evaluate(e) != 0);
    QVERIFY2(started.first().at(0).toString().contains(
                 QStringLiteral("at activation sparsity p_x 0.50 (thresholds: calib-samples)")),
             qPrintable(started.first().at(0).toString()));
    QCOMPARE(waitEnd(ended, 180000), PruningPanel::Outcome::Complete);
    const sdw::gpu::ActivationThresholds expected = sdw::gpu::activationThresholdsFromRun(samples_.toStdString(), 0.5);
    const sdw::widgets::QualityData d = panel_->qualityPage()->data();
    QCOMPARE(d.models.size(), 2);
    QCOMPARE(d.activationSparsity, 0.5);
    QCOMPARE(QFileInfo(d.activationThresholds).fileName(), QStringLiteral("calib-samples.sdw.h5"));
    QCOMPARE(d.activationThresholdsRunId, QString::fromStdString(expected.runId));
    QCOMPARE(sdw::app::readEvaluationRun(d.path).activationThresholdsRunId, QString::fromStdString(expected.runId));
    const QualityModel* m = panel_->qualityPage()->model();
    QCOMPARE(m->headerData(QualityModel::Model, Qt::Horizontal).toString(),
             QStringLiteral("Model (p_x 0.50, thresholds: calib-samples)"));
    QVERIFY(m->headerData(QualityModel::Model, Qt::Horizontal, Qt::ToolTipRole)
                .toString()
                .contains(QString::fromStdString(expected.runId)));
    QVERIFY2(panel_->qualityPage()->summaryText().contains(QStringLiteral(
                 "compared models at activation sparsity p_x 0.50 (thresholds: calib-samples; dense reference dense)")),
             qPrintable(panel_->qualityPage()->summaryText()));

    // Thresholds at p_x 0: refused, says why.
    sdw::widgets::EvaluateForm zero = e;
    zero.activationSparsity = 0;
    QCOMPARE(controller_->evaluate(zero), sdw::app::JobId(0));
    QVERIFY2(panel_->statusText().contains(QStringLiteral("thresholds need p_x > 0")), qPrintable(panel_->statusText()));

    // A run without activation samples: the evaluation fails with its error.
    e.activationThresholds = calib_;
    ended.clear();
    QVERIFY(controller_->evaluate(e) != 0);
    QCOMPARE(waitEnd(ended, 180000), PruningPanel::Outcome::Failed);
    const QString why = QStringLiteral("calib-tiny.sdw.h5 has no activation samples: calibrate with --sample-rows N first");
    QVERIFY2(ended.last().at(0).toString().contains(why), qPrintable(ended.last().at(0).toString()));
    QVERIFY2(panel_->statusText().contains(why), qPrintable(panel_->statusText()));
    QCOMPARE(panel_->qualityPage()->data().path, d.path);  // the evaluation shown stays
  }

  void badFilesShowErrors() {
    const QString bad = path("bad.sdw.h5");
    {
      QFile f(bad);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("this is not an HDF5 file\n");
    }
    QSignalSpy failed(controller_.get(), &PruningController::recordFailed);
    QSignalSpy errors(controller_.get(), &PruningController::error);
    const QString before = panel_->shownRecord().path;
    controller_->openRecord(bad);
    QVERIFY(failed.wait(20000));
    QVERIFY2(panel_->modulesError().contains(QStringLiteral("Cannot open the pruning record")),
             qPrintable(panel_->modulesError()));
    QVERIFY(!errors.isEmpty());
    QCOMPARE(panel_->shownRecord().path, before);  // what was shown stays

    // a valid run of another kind, as a record and as an evaluation
    controller_->openRecord(calib_);
    QVERIFY(failed.wait(20000));
    QVERIFY2(failed.last().at(0).toString().contains(QStringLiteral("not pruning")),
             qPrintable(failed.last().at(0).toString()));
    QSignalSpy qualityFailed(controller_.get(), &PruningController::qualityFailed);
    controller_->openEvaluation(bad);
    QVERIFY(qualityFailed.wait(20000));
    QVERIFY2(panel_->qualityPage()->statusText().contains(QStringLiteral("Cannot open the evaluation run")),
             qPrintable(panel_->qualityPage()->statusText()));
    QVERIFY_THROWS_EXCEPTION(std::exception, sdw::app::readEvaluationRun(calib_));

    // refusals are reported, not run
    QSignalSpy ended(controller_.get(), &PruningController::jobEnded);
    PruneForm none = panel_->form();
    none.calibrationRuns.clear();
    QCOMPARE(controller_->prune(none), sdw::app::JobId(0));
    QCOMPARE(ended.size(), 1);
    QCOMPARE(ended.last().at(1).value<PruningPanel::Outcome>(), PruningPanel::Outcome::Failed);
  }
};

QTEST_MAIN(TestPruningPanel)
#include "test_pruning_panel.moc"
