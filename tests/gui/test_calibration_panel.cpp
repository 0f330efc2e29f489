// The Calibration panel offscreen, driven through its controller on the
// sample model: the memory/disk estimate follows the settings (against
// gpu::estimateCalibration), the disk warning blocks Start, a 300-token
// fixed-text calibration writes a complete run with exactly the budget, and a
// cancelled run is kept incomplete (the panel says so) and can be resumed;
// "Keep activation samples" reaches the settings (sampleRows), the estimate
// and the run file.

#include "app/gui/calibrationcontroller.h"
#include "app/gui/modelcontroller.h"
#include "app/jobmanager.h"
#include "core/decoding.h"
#include "core/runstore.h"
#include "gpu/calibration.h"
#include "gpu/model_config.h"
#include "widgets/calibrationpanel.h"
#include "widgets/layerprogressview.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QLineEdit>
#include <QPushButton>
#include <QSet>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>

using sdw::app::CalibrationController;
using sdw::app::JobManager;
using sdw::widgets::CalibrationEstimateView;
using sdw::widgets::CalibrationForm;
using sdw::widgets::CalibrationPanel;

namespace {

namespace rs = sdw::runstore;

QPushButton* button(QWidget* w, const char* name) { return w->findChild<QPushButton*>(QLatin1String(name)); }
template <typename T>
T* child(QWidget* w, const char* name) {
  return w->findChild<T*>(QLatin1String(name));
}

sdw::gpu::CalibrationSettings settingsOf(const CalibrationForm& f) {
  sdw::gpu::CalibrationSettings s;
  s.source = sdw::gpu::parseCalibrationSource(f.source.toStdString());
  s.model = f.model.toStdString();
  s.tokenBudget = f.tokenBudget;
  s.window = f.window;
  s.maxNewTokens = f.maxNewTokens;
  s.batch = f.batch;
  s.capture = sdw::gpu::parseCaptureMode(f.capture.toStdString());
  s.includePrefill = f.includePrefill;
  s.device = f.device.toStdString();
  s.dtype = f.dtype.toStdString();
  s.storage = sdw::gpu::parseStatsStorage(f.storage.toStdString());
  s.topK = f.storageK;
  s.sampleRows = f.sampleRows;
  return s;
}

}  // namespace

class TestCalibrationPanel : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir dir_;
  std::unique_ptr<JobManager> jobs_;
  std::unique_ptr<CalibrationPanel> panel_;
  std::unique_ptr<CalibrationController> controller_;

  // Waits for the debounced settings signal and the estimate it produces.
  CalibrationEstimateView nextEstimate() {
    QSignalSpy spy(controller_.get(), &CalibrationController::estimateReady);
    if (!spy.wait(5000)) return {};
    return spy.last().at(0).value<CalibrationEstimateView>();
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY2(QFileInfo(QDir(sdw::app::sampleModelDir()).filePath(QStringLiteral("config.json"))).exists(),
             qPrintable(sdw::app::sampleModelDir()));
    jobs_ = std::make_unique<JobManager>();
    jobs_->setProgressInterval(5);
    panel_ = std::make_unique<CalibrationPanel>();
    panel_->resize(1200, 800);
    panel_->show();
    controller_ = std::make_unique<CalibrationController>(jobs_.get());
    controller_->setWorkspace(dir_.path());
    controller_->attach(panel_.get());
  }

  void cleanupTestCase() {
    controller_.reset();
    jobs_->waitForDone(30000);
    panel_.reset();
    jobs_.reset();
  }

  void defaults() {
    const CalibrationForm f = panel_->form();
    QCOMPARE(f.model, sdw::app::sampleModelDir());
    QVERIFY2(QFileInfo::exists(f.corpus), qPrintable(f.corpus));
    QVERIFY2(QFileInfo::exists(f.prompts), qPrintable(f.prompts));
    QVERIFY(f.corpus.endsWith(QStringLiteral("corpus/brown-calib.txt")));
    QVERIFY(f.prompts.endsWith(QStringLiteral("prompts/brown-calib.jsonl")));
    QCOMPARE(QFileInfo(f.output).absolutePath(), QFileInfo(dir_.path()).absoluteFilePath());
    QVERIFY(f.output.endsWith(QStringLiteral(".sdw.h5")));
    QVERIFY2(panel_->estimateText().contains(QStringLiteral("run file")), qPrintable(panel_->estimateText()));
    // AR decodes with the workbench's one protocol, not the checkpoint's generation_config.json
    QCOMPARE(f.temperature, sdw::kDefaultDecoding.temperature);
    QCOMPARE(f.topK, sdw::kDefaultDecoding.topK);
    QCOMPARE(f.topP, sdw::kDefaultDecoding.topP);
  }

  // Choosing AR shows the decoding and notes what the sample checkpoint's
  // generation_config.json (do_sample false) would have asked for.
  void decodingNoteForAr() {
    auto* source = child<QComboBox>(panel_.get(), "source");
    source->setCurrentIndex(source->findData(QStringLiteral("ar")));
    const CalibrationEstimateView e = nextEstimate();
    QCOMPARE(e.decoding, QStringLiteral("sampled, T=1.0, top-k off, top-p 1.0 (the default protocol)"));
    QVERIFY2(e.decodingNote.contains(QStringLiteral("generation_config.json asks for greedy decoding")),
             qPrintable(e.decodingNote));
    QVERIFY2(panel_->decodingText().startsWith(QStringLiteral("Decoding: sampled, T=1.0")), qPrintable(panel_->decodingText()));
    auto* temperature = child<QDoubleSpinBox>(panel_.get(), "temperature");
    temperature->setValue(0);  // greedy agrees with that file: no note
    const CalibrationEstimateView greedy = nextEstimate();
    QVERIFY(greedy.decoding.startsWith(QStringLiteral("greedy")));
    QVERIFY(greedy.decodingNote.isEmpty());
    temperature->setValue(sdw::kDefaultDecoding.temperature);
    (void)nextEstimate();
    source->setCurrentIndex(source->findData(QStringLiteral("fixed")));
    QVERIFY(nextEstimate().decoding.isEmpty());  // fixed text decodes nothing
    QCOMPARE(panel_->decodingText(), QString());
  }

  void estimateFollowsBudget() {
    auto* source = child<QComboBox>(panel_.get(), "source");
    auto* budget = child<QSpinBox>(panel_.get(), "tokenBudget");
    QVERIFY(source && budget);
    source->setCurrentIndex(source->findData(QStringLiteral("ar")));
    budget->setValue(1000);
    const CalibrationEstimateView small = nextEstimate();
    QVERIFY2(small.valid, qPrintable(small.error));
    const QString smallText = panel_->estimateText();

    budget->setValue(5000000);
    const CalibrationEstimateView large = nextEstimate();
    QVERIFY(large.valid);
    QVERIFY(large.fileBytes > small.fileBytes);  // AR stores its generations
    QVERIFY(panel_->estimateText() != smallText);

    // the same numbers as the engine's own estimate
    const auto config = sdw::gpu::loadModelConfig(sdw::app::sampleModelDir().toStdString());
    const auto e = sdw::gpu::estimateCalibration(config, settingsOf(panel_->form()));
    QCOMPARE(large.fileBytes, quint64(e.fileBytes));
    QCOMPARE(large.deviceBytes, quint64(e.deviceBytes));
    QCOMPARE(large.inputs, e.inputs);
    QVERIFY(large.freeBytes > 0);

    // storage top-k changes the file size
    auto* storage = child<QComboBox>(panel_.get(), "storage");
    storage->setCurrentIndex(storage->findData(QStringLiteral("topk")));
    const CalibrationEstimateView topk = nextEstimate();
    QCOMPARE(topk.fileBytes, topk.fileBytesTopk);
    storage->setCurrentIndex(storage->findData(QStringLiteral("full")));
    source->setCurrentIndex(source->findData(QStringLiteral("fixed")));
    nextEstimate();
  }

  void diskWarningBlocksStart() {
    CalibrationEstimateView v;
    v.valid = true;
    v.fileBytes = 40ull << 30;
    v.freeBytes = 1ull << 30;
    v.diskShort = true;
    panel_->setEstimate(v);
    QVERIFY(panel_->diskWarningShown());
    QVERIFY(!button(panel_.get(), "startCalibration")->isEnabled());
    panel_->setEstimate(controller_->estimate(panel_->form()));
    QVERIFY(!panel_->diskWarningShown());
    QVERIFY(button(panel_.get(), "startCalibration")->isEnabled());
  }

  // "Keep activation samples": off by default (no samples); ticked, the rows
  // box (256 by default) is what the engine gets as sampleRows, and the
  // estimate grows by the samples' bytes.
  void sampleRowsOption() {
    auto* keep = child<QCheckBox>(panel_.get(), "keepActivationSamples");
    auto* rows = child<QSpinBox>(panel_.get(), "calibrationSampleRows");
    QVERIFY(keep && rows);
    QVERIFY(!keep->isChecked());
    QVERIFY(!rows->isEnabled());
    QCOMPARE(rows->minimum(), 0);
    QCOMPARE(rows->maximum(), 100000);
    QCOMPARE(rows->value(), 256);
    QVERIFY2(rows->toolTip().contains(QStringLiteral("Analysis panel's activation plots")), qPrintable(rows->toolTip()));
    QCOMPARE(panel_->form().sampleRows, 0);
    QCOMPARE(sdw::app::calibrationSettings(panel_->form()).sampleRows, 0);

    auto* source = child<QComboBox>(panel_.get(), "source");
    auto* budget = child<QSpinBox>(panel_.get(), "tokenBudget");
    source->setCurrentIndex(source->findData(QStringLiteral("fixed")));
    budget->setValue(4000);
    const CalibrationEstimateView without = nextEstimate();
    QVERIFY2(without.valid, qPrintable(without.error));

    keep->setChecked(true);
    QVERIFY(rows->isEnabled());
    QCOMPARE(panel_->form().sampleRows, 256);
    QCOMPARE(sdw::app::calibrationSettings(panel_->form()).sampleRows, 256);
    rows->setValue(64);
    const CalibrationEstimateView with = nextEstimate();
    QVERIFY2(with.valid, qPrintable(with.error));
    QCOMPARE(panel_->form().sampleRows, 64);
    const sdw::gpu::CalibrationSettings s = sdw::app::calibrationSettings(panel_->form());
    QCOMPARE(s.sampleRows, 64);
    // 64 rows of sum(d_in) = 6 x (256 + 256 + 256 + 768) floats, and four labels per row
    const auto config = sdw::gpu::loadModelConfig(sdw::app::sampleModelDir().toStdString());
    QCOMPARE(sdw::gpu::estimateCalibration(config, s).sumDIn, std::int64_t(9216));
    QCOMPARE(with.fileBytes - without.fileBytes, quint64(64) * (9216 * 4 + 24));
    QCOMPARE(with.fileBytes, quint64(sdw::gpu::estimateCalibration(config, settingsOf(panel_->form())).fileBytes));

    rows->setValue(0);  // ticked with 0 rows: none
    QCOMPARE(panel_->form().sampleRows, 0);
    rows->setValue(64);
    keep->setChecked(false);  // unticked: none, whatever the box says
    QVERIFY(!rows->isEnabled());
    QCOMPARE(panel_->form().sampleRows, 0);
    QCOMPARE(sdw::app::calibrationSettings(panel_->form()).sampleRows, 0);

    CalibrationForm f = panel_->form();
    f.sampleRows = 128;
    panel_->setForm(f);
    QVERIFY(keep->isChecked());
    QCOMPARE(rows->value(), 128);
    QCOMPARE(panel_->form().sampleRows, 128);
    f.sampleRows = 0;
    panel_->setForm(f);
    QVERIFY(!keep->isChecked());
    QCOMPARE(panel_->form().sampleRows, 0);
    (void)nextEstimate();
  }

  void tinyCalibrationCompletes() {
    CalibrationForm f = panel_->form();
    f.source = QStringLiteral("fixed");
    f.tokenBudget = 300;
    f.window = 64;
    f.batch = 2;
    f.sampleRows = 32;  // the option travels to the run file
    f.output = QDir(dir_.path()).filePath(QStringLiteral("tiny-fixed.sdw.h5"));
    panel_->setForm(f);
    QSignalSpy ended(controller_.get(), &CalibrationController::runEnded);
    QSignalSpy written(controller_.get(), &CalibrationController::runWritten);
    QSignalSpy layers(controller_.get(), &CalibrationController::layerProgress);
    button(panel_.get(), "startCalibration")->click();
    QVERIFY(controller_->isRunning());
    QVERIFY(panel_->isRunning());
    QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 1, 180000);
    QCOMPARE(ended.first().at(1).value<CalibrationPanel::Outcome>(), CalibrationPanel::Outcome::Complete);

    // Per-layer progress: the sample model's 6 layers, passes of capture and
    // the final write, every report within range; the view ends full.
    const int modelLayers = 6;
    QVERIFY(layers.count() >= 2);
    QSet<QString> labels;
    for (const auto& e : layers) {
      QCOMPARE(e.at(1).toInt(), modelLayers);
      QVERIFY(e.at(0).toInt() >= 1 && e.at(0).toInt() <= modelLayers);
      labels.insert(e.at(2).toString());
    }
    QVERIFY2(labels.contains(QStringLiteral("capture")), qPrintable(QStringList(labels.values()).join(',')));
    QVERIFY2(labels.contains(QStringLiteral("writing")), qPrintable(QStringList(labels.values()).join(',')));
    QCOMPARE(panel_->layerProgress()->layerCount(), modelLayers);
    QCOMPARE(panel_->layerProgress()->layersDone(), modelLayers);
    QVERIFY(panel_->layerProgress()->passes() >= 2);
    QCOMPARE(written.count(), 1);
    QCOMPARE(written.first().at(0).toString(), f.output);
    QVERIFY2(panel_->statusText().startsWith(QStringLiteral("Complete")), qPrintable(panel_->statusText()));

    const rs::RunSummary s = rs::inspectRun(f.output.toStdString());
    QCOMPARE(QString::fromStdString(s.kind), QStringLiteral("calibration"));
    QVERIFY(s.complete());
    const rs::RunReader r = rs::RunReader::open(f.output.toStdString());
    QCOMPARE(r.readIntAttribute("/calibration", "tokens_collected"), std::int64_t(300));
    QCOMPARE(r.readStringAttribute("/calibration", "source"), std::string("fixed"));
    QCOMPARE(r.readIntAttribute("/calibration/samples", "rows"), std::int64_t(32));
    const auto sampled = r.shape("/calibration/inputs/model.layers.0.mlp.down_proj/sample_rows");
    QCOMPARE(sampled.size(), std::size_t(2));
    QCOMPARE(sampled[0], hsize_t(32));
    QCOMPARE(sampled[1], hsize_t(768));
    QVERIFY(!panel_->isRunning());

    // the same output again: refused, and the complete run is not offered for resume
    ended.clear();
    written.clear();
    button(panel_.get(), "startCalibration")->click();
    QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 1, 60000);
    QCOMPARE(ended.first().at(1).value<CalibrationPanel::Outcome>(), CalibrationPanel::Outcome::Failed);
    QVERIFY2(panel_->statusText().contains(QStringLiteral("tiny-fixed.sdw.h5")), qPrintable(panel_->statusText()));
    QCOMPARE(written.count(), 0);
    QCOMPARE(panel_->resumePath(), QString());
    QVERIFY(rs::inspectRun(f.output.toStdString()).complete());
  }

  void cancelKeepsIncompleteAndResumes() {
    CalibrationForm f = panel_->form();
    f.source = QStringLiteral("fixed");
    f.tokenBudget = 50000000;  // never reached: cancelled
    f.sampleRows = 0;
    f.window = 64;
    f.batch = 2;
    f.output = QDir(dir_.path()).filePath(QStringLiteral("cancelled-fixed.sdw.h5"));
    panel_->setForm(f);
    QSignalSpy progress(controller_.get(), &CalibrationController::runProgress);
    QSignalSpy ended(controller_.get(), &CalibrationController::runEnded);
    button(panel_.get(), "startCalibration")->click();
    // wait until tokens are being counted, then cancel
    QTRY_VERIFY_WITH_TIMEOUT(!progress.isEmpty() && progress.last().at(0).toDouble() > 0, 120000);
    button(panel_.get(), "cancelCalibration")->click();
    QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 1, 60000);
    QCOMPARE(ended.first().at(1).value<CalibrationPanel::Outcome>(), CalibrationPanel::Outcome::Incomplete);
    QVERIFY2(panel_->statusText().contains(QStringLiteral("incomplete")), qPrintable(panel_->statusText()));
    QVERIFY(QFileInfo::exists(f.output));
    const rs::RunSummary s = rs::inspectRun(f.output.toStdString());
    QCOMPARE(QString::fromStdString(s.status), QStringLiteral("incomplete"));
    const std::int64_t collected = rs::RunReader::open(f.output.toStdString()).readIntAttribute("/calibration", "tokens_collected");
    QVERIFY(collected > 0);
    QVERIFY(collected < f.tokenBudget);
    QCOMPARE(panel_->resumePath(), f.output);

    // Resume continues it (and is cancelled again: the budget is large)
    progress.clear();
    ended.clear();
    button(panel_.get(), "resumeCalibration")->click();
    QVERIFY(controller_->isRunning());
    QTRY_VERIFY_WITH_TIMEOUT(!progress.isEmpty() && progress.last().at(0).toDouble() > double(collected), 120000);
    controller_->cancel();
    QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 1, 60000);
    QCOMPARE(ended.first().at(1).value<CalibrationPanel::Outcome>(), CalibrationPanel::Outcome::Incomplete);
    const std::int64_t after = rs::RunReader::open(f.output.toStdString()).readIntAttribute("/calibration", "tokens_collected");
    QVERIFY(after > collected);
    QCOMPARE(QString::fromStdString(rs::inspectRun(f.output.toStdString()).status), QStringLiteral("incomplete"));
  }
};

QTEST_MAIN(TestCalibrationPanel)
#include "test_calibration_panel.moc"
