// The guided walkthrough offscreen: the Help menu entry opens the walkthrough
// window with every step of the story listed and explained; the whole
// fixed-text vs AR story runs on a MainWindow's own panels on the CPU with
// small budgets (every step Ok, on the CPU, taking time, its finding in words
// with the numbers the panels show, its files in the story's folder, the
// budgets and the decoding recorded in the runs); and a calibration cancelled
// in the middle of runAll ends that step Cancelled, stops the story and
// leaves no .partial file.

#include "app/gui/calibrationcontroller.h"
#include "app/gui/mainwindow.h"
#include "app/gui/storydriver.h"
#include "app/gui/walkthrough.h"
#include "app/settings.h"
#include "core/decoding.h"
#include "core/runstore.h"
#include "gpu/device.h"
#include "widgets/analysispanel.h"
#include "widgets/benchmarkpanel.h"
#include "widgets/benchresultsmodel.h"
#include "widgets/driftpage.h"
#include "widgets/epsilonpage.h"
#include "widgets/modelpanel.h"
#include "widgets/pruningpanel.h"
#include "widgets/qualitypage.h"
#include "widgets/walkthroughview.h"

#include <QAbstractButton>
#include <QAction>
#include <QDir>
#include <QDirIterator>
#include <QFileInfo>
#include <QMenu>
#include <QMenuBar>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>

using sdw::app::MainWindow;
using sdw::app::StoryDriver;
using sdw::app::StoryOptions;
using sdw::app::StoryOutcome;
using sdw::app::StoryStepResult;

namespace {

namespace rs = sdw::runstore;

const QStringList kStepIds = {
    QStringLiteral("load"),        QStringLiteral("generate"),           QStringLiteral("calibrate-fixed"),
    QStringLiteral("calibrate-ar-exact"), QStringLiteral("calibrate-ar"), QStringLiteral("calibrate-reference"),
    QStringLiteral("epsilon"),     QStringLiteral("prune-fixed"),        QStringLiteral("prune-ar"),
    QStringLiteral("evaluate"),    QStringLiteral("drift"),              QStringLiteral("bench")};

// Small enough for a 2-core CI machine without a GPU.
StoryOptions smallCpuStory(const QString& dir) {
  StoryOptions o;
  o.device = QStringLiteral("cpu");
  o.dtype = QStringLiteral("float32");
  o.workDir = dir;
  o.calibrationTokens = 1500;
  o.exactTokens = 500;
  o.referenceTokens = 1000;
  o.maxNewTokens = 32;
  o.evalSeeds = 1;
  o.evalMaxNewTokens = 16;
  o.driftSteps = 16;
  o.generateTokens = 16;
  o.benchRepeats = 3;
  return o;
}

QStringList filesUnder(const QString& dir, const QString& pattern) {
  QStringList out;
  QDirIterator it(dir, {pattern}, QDir::Files, QDirIterator::Subdirectories);
  while (it.hasNext()) out << it.next();
  return out;
}

QString percentText(double fraction) { return QStringLiteral("%1%").arg(100.0 * fraction, 0, 'f', 1); }

}  // namespace

class TestWalkthrough : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir settingsDir_;
  QTemporaryDir work_;
  std::unique_ptr<sdw::app::Settings> settings_;
  std::unique_ptr<MainWindow> window_;


 private Q_SLOTS:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(settingsDir_.isValid());
    QVERIFY(work_.isValid());
    settings_ = std::make_unique<sdw::app::Settings>(settingsDir_.filePath(QStringLiteral("sdw.ini")));
    window_ = std::make_unique<MainWindow>(settings_.get());
    window_->setPersistState(false);
    window_->setShowErrorDialogs(false);
    window_->resize(1400, 900);
    window_->show();
  }

  void cleanupTestCase() {
    window_->jobs()->cancelAll();
    window_->jobs()->waitForDone(60000);
    window_.reset();
  }

  void helpMenuOpensTheWalkthrough() {
    QAction* action = nullptr;
    for (QAction* menu : window_->menuBar()->actions())
      if (menu->menu() && menu->text().remove(QLatin1Char('&')) == QLatin1String("Help"))
        for (QAction* a : menu->menu()->actions())
          if (a->text().remove(QLatin1Char('&')).startsWith(QLatin1String("Guided walkthrough: fixed text vs AR")))
            action = a;
    QVERIFY(action);
    action->trigger();
    auto* dialog = window_->findChild<sdw::app::WalkthroughDialog*>();
    QVERIFY(dialog);
    QVERIFY(dialog->isVisible());
    QVERIFY(!dialog->isModal());

    const QVector<sdw::app::StoryStepInfo> steps = dialog->driver()->steps();
    QCOMPARE(steps.size(), kStepIds.size());
    sdw::widgets::WalkthroughView* view = dialog->view();
    QCOMPARE(view->stepCount(), steps.size());
    for (int i = 0; i < steps.size(); ++i) {
      QCOMPARE(steps[i].id, kStepIds[i]);
      QVERIFY(!steps[i].title.isEmpty());
      QCOMPARE(view->stepTitle(i), steps[i].title);
      QCOMPARE(view->stepState(i), sdw::widgets::WalkthroughView::State::Pending);
      // two or three sentences on what the picture shows
      const int sentences = static_cast<int>(steps[i].explanation.count(QRegularExpression(QStringLiteral("[.:;] "))));
      QVERIFY2(sentences >= 1 && steps[i].explanation.size() > 120, qPrintable(steps[i].explanation));
      QVERIFY(window_->panelNames().contains(steps[i].panel.section(QLatin1Char('/'), 0, 0)));
    }
    QCOMPARE(view->currentStep(), 0);
    QCOMPARE(view->explanationText(), steps[0].explanation);
    view->setCurrentStep(6);
    QCOMPARE(view->explanationText(), steps[6].explanation);
    // the paper's figures are named as the paper's
    QVERIFY(steps[6].explanation.contains(QStringLiteral("this sample")));

    // the device it runs on, said in words; a fresh folder under the user's data
    const StoryOptions& o = dialog->driver()->options();
    if (sdw::gpu::gpuUsable()) {
      QCOMPARE(o.device, QStringLiteral("cuda"));
      QCOMPARE(o.dtype, QStringLiteral("bfloat16"));
      QVERIFY2(view->deviceText().startsWith(QStringLiteral("Runs on the GPU")), qPrintable(view->deviceText()));
    } else {
      QCOMPARE(o.device, QStringLiteral("cpu"));
      QCOMPARE(o.dtype, QStringLiteral("float32"));
      QVERIFY2(view->deviceText().startsWith(QStringLiteral("Runs on the CPU, float32")), qPrintable(view->deviceText()));
    }
    const QString data = QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation);
    QCOMPARE(QFileInfo(o.workDir).absolutePath(), QDir::cleanPath(QFileInfo(data).absoluteFilePath()));
    QVERIFY2(QFileInfo(o.workDir).fileName().startsWith(QStringLiteral("walkthrough-")), qPrintable(o.workDir));
    QVERIFY(view->deviceText().contains(QDir::toNativeSeparators(o.workDir)));
    QVERIFY(!QFileInfo::exists(o.workDir));  // made when a step runs, not on opening

    // Run step runs the selected step; the list shows its state and finding.
    if (!sdw::gpu::gpuUsable()) {
      QSignalSpy finished(dialog->driver(), &StoryDriver::stepFinished);
      view->setCurrentStep(0);
      view->findChild<QAbstractButton*>(QStringLiteral("walkthroughRunStep"))->click();
      QVERIFY(dialog->driver()->isRunning());
      QVERIFY(!view->findChild<QAbstractButton*>(QStringLiteral("walkthroughRunAll"))->isEnabled());
      QVERIFY(view->findChild<QAbstractButton*>(QStringLiteral("walkthroughCancel"))->isEnabled());
      QVERIFY(finished.wait(60000));
      const auto r = finished.first().at(1).value<StoryStepResult>();
      QCOMPARE(r.outcome, StoryOutcome::Ok);
      QCOMPARE(view->stepState(0), sdw::widgets::WalkthroughView::State::Done);
      QCOMPARE(view->stepFinding(0), r.finding);
      QCOMPARE(view->findingText(), QStringLiteral("Finding: ") + r.finding);
      QVERIFY2(view->stepStatusText(0).startsWith(QStringLiteral("done, ")), qPrintable(view->stepStatusText(0)));
      QVERIFY(view->stepStatusText(0).endsWith(QStringLiteral(" s on cpu")));
      QCOMPARE(view->stepFindingText(0), r.finding);  // next to the step in the list
      QCOMPARE(view->stepStatusText(1), QStringLiteral("—"));
      QVERIFY(view->findChild<QAbstractButton*>(QStringLiteral("walkthroughRunAll"))->isEnabled());
      QCOMPARE(QDir::cleanPath(window_->workspace()), o.workDir);  // the story's folder is the workspace now
      QTRY_COMPARE_WITH_TIMEOUT(window_->jobs()->runningCount(), 0, 60000);
      QVERIFY(QDir(o.workDir).removeRecursively());
    }

    // the same window comes back, and Close hides it
    action->trigger();
    QCOMPARE(window_->findChildren<sdw::app::WalkthroughDialog*>().size(), 1);
    view->findChild<QAbstractButton*>(QStringLiteral("walkthroughClose"))->click();
    QVERIFY(!dialog->isVisible());
  }

  void wholeStoryOnTheCpu() {
    const QString dir = QDir(work_.path()).filePath(QStringLiteral("story"));
    StoryDriver driver(window_.get(), smallCpuStory(dir));
    QSignalSpy started(&driver, &StoryDriver::stepStarted);
    QSignalSpy finished(&driver, &StoryDriver::stepFinished);
    QSignalSpy all(&driver, &StoryDriver::allFinished);
    QCOMPARE(driver.currentStep(), -1);
    driver.runAll();
    QVERIFY(driver.isRunning());
    QCOMPARE(driver.currentStep(), 0);
    QTRY_COMPARE_WITH_TIMEOUT(all.count(), 1, 540000);
    QCOMPARE(all.first().at(0).toBool(), true);
    QVERIFY(!driver.isRunning());
    QCOMPARE(driver.currentStep(), -1);
    QCOMPARE(started.count(), kStepIds.size());
    QCOMPARE(finished.count(), kStepIds.size());

    const QVector<StoryStepResult> results = driver.results();
    QCOMPARE(results.size(), kStepIds.size());
    const QRegularExpression number(QStringLiteral("[0-9]"));
    for (int i = 0; i < results.size(); ++i) {
      const StoryStepResult& r = results[i];
      qInfo().noquote() << QStringLiteral("%1 (%2 s, %3): %4").arg(r.id).arg(r.seconds, 0, 'f', 1).arg(r.device, r.finding);
      QCOMPARE(r.id, kStepIds[i]);
      QCOMPARE(finished.at(i).at(0).toInt(), i);
      QVERIFY2(r.outcome == StoryOutcome::Ok, qPrintable(r.id + QStringLiteral(": ") + r.message));
      QCOMPARE(r.device, QStringLiteral("cpu"));
      QVERIFY2(r.seconds > 0, qPrintable(r.id));
      QVERIFY2(!r.message.isEmpty(), qPrintable(r.id));
      QVERIFY2(r.finding.contains(number), qPrintable(r.id + QStringLiteral(": ") + r.finding));
    }
    const auto result = [&](const char* id) { return results[kStepIds.indexOf(QLatin1String(id))]; };
    QCOMPARE(QDir::cleanPath(window_->workspace()), QDir::cleanPath(dir));

    // The findings say what the panels show.
    QVERIFY(result("load").finding.contains(QStringLiteral("6 layers")));
    QVERIFY(result("load").finding.contains(QStringLiteral("float32 on cpu")));
    QCOMPARE(window_->modelPanel()->summary().device, QStringLiteral("cpu"));
    QVERIFY(window_->modelPanel()->tokenCount() > 0);
    QVERIFY(result("generate").finding.startsWith(QStringLiteral("%1 tokens at ").arg(window_->modelPanel()->tokenCount())));
    const sdw::Decoding storyDecoding = sdw::app::StoryOptions{}.decoding;  // the story's one decoding
    const QString decoding = QString::fromStdString(storyDecoding.describe());
    QCOMPARE(decoding, QStringLiteral("greedy"));
    QVERIFY(result("generate").finding.contains(decoding));
    QVERIFY(result("calibrate-fixed").finding.contains(QStringLiteral("1,500 tokens")));
    QVERIFY(result("calibrate-ar-exact").finding.contains(QStringLiteral("500 tokens")));
    QVERIFY(result("calibrate-ar").finding.contains(QStringLiteral("1,500 tokens")));
    QVERIFY(result("calibrate-ar").finding.contains(QStringLiteral("exact capture")));
    QVERIFY(result("calibrate-reference").finding.contains(QStringLiteral("1,000 tokens")));

    const sdw::widgets::EpsilonData& eps = window_->analysisPanel()->page()->data();
    QVERIFY(eps.hasPair);
    QCOMPARE(eps.summaryModules, 42);  // 6 layers x 7 projections
    QCOMPARE(QFileInfo(eps.path).absolutePath(), QDir::cleanPath(dir));
    const QString epsFinding = result("epsilon").finding;
    QVERIFY2(epsFinding.contains(QStringLiteral("AR lower on %1 of modules (%2 of 42)")
                                     .arg(percentText(eps.shareArLower))
                                     .arg(eps.summaryArLower)),
             qPrintable(epsFinding));
    QVERIFY(epsFinding.contains(QStringLiteral("The paper reports")));
    // the walkthrough's runs carry half statistics: every module has its noise floors
    QCOMPARE(eps.noiseModules, 42);
    QVERIFY2(epsFinding.contains(QStringLiteral("%1 of 42 modules differ beyond the runs' noise floors")
                                     .arg(eps.beyondNoise)),
             qPrintable(epsFinding));
    QVERIFY(window_->analysisPanel()->page()->summaryText().contains(QStringLiteral("beyond the noise floor")));
    QVERIFY(epsFinding.contains(eps.shareArLower >= 0.87 ? QStringLiteral("the share is at or above the paper's")
                                                         : QStringLiteral("the share is below the paper's")));
    // a verdict only where the numbers carry it
    if (eps.shareArLower > 0.5 && eps.medianRatio > 1)
      QVERIFY(epsFinding.contains(QStringLiteral("AR run matches decode time better")));
    else
      QVERIFY(!epsFinding.contains(QStringLiteral("AR run matches decode time better")));

    for (const char* id : {"prune-fixed", "prune-ar"}) {
      QVERIFY2(result(id).finding.contains(QStringLiteral("42 modules at 50.0% sparsity")), qPrintable(result(id).finding));
      QVERIFY(result(id).finding.startsWith(QStringLiteral("sparsegpt 2:4 from calib-")));
    }

    const sdw::widgets::QualityData& q = window_->pruningPanel()->qualityPage()->data();
    QCOMPARE(q.models.size(), 3);
    QCOMPARE(q.temperature, storyDecoding.temperature);  // the story's one decoding, recorded in the run
    QCOMPARE(q.topK, storyDecoding.topK);
    QCOMPARE(q.topP, storyDecoding.topP);
    QCOMPARE(q.decoding, decoding);
    // Calibration and evaluation decode alike and the prompts are held out: no warning.
    QVERIFY2(q.warnings.isEmpty(), qPrintable(q.warnings.join(QLatin1Char('\n'))));
    QCOMPARE(window_->pruningPanel()->qualityPage()->shownWarnings(), QStringList());
    QVERIFY2(eps.warnings.isEmpty(), qPrintable(eps.warnings.join(QLatin1Char('\n'))));
    QVERIFY(eps.notes.join(QLatin1Char(' ')).contains(QStringLiteral("decoded brown-heldout.jsonl")));
    QCOMPARE(q.maxNewTokens, 16);
    QCOMPARE(q.models[0].agreement.mean, 1.0);
    QCOMPARE(QFileInfo(q.path).fileName(), QStringLiteral("eval-story.sdw.h5"));
    QVERIFY(result("evaluate").finding.contains(QStringLiteral("KL %1").arg(q.models[1].kl.mean, 0, 'f', 4)));
    QVERIFY(result("evaluate").finding.contains(decoding));
    QVERIFY(!result("evaluate").finding.contains(QStringLiteral("Warning")));

    const sdw::widgets::DriftData& d = window_->analysisPanel()->driftPage()->data();
    QCOMPARE(d.models.size(), 2);
    QCOMPARE(d.steps, 16);
    QCOMPARE(d.modes, (QStringList{QStringLiteral("own"), QStringLiteral("shared")}));
    QCOMPARE(QFileInfo(d.path).absolutePath(), QDir::cleanPath(dir));
    QVERIFY(result("drift").finding.contains(QStringLiteral("16 decode steps (%1)").arg(decoding)));
    QCOMPARE(d.temperature, storyDecoding.temperature);  // drift decodes as the story does
    QVERIFY2(d.warnings.isEmpty(), qPrintable(d.warnings.join(QLatin1Char('\n'))));
    QVERIFY(result("drift").finding.contains(QStringLiteral("about 12 decode steps")));

    const auto& bench = window_->benchmarkPanel()->resultsModel()->rows();
    QCOMPARE(bench.size(), 4);  // 2 shapes x (our dense + sparse 2:4), CPU kernels
    for (const auto& row : bench) QVERIFY(row.kernel == "dense-cpu" || row.kernel == "sparse-cpu");
    QVERIFY(result("bench").finding.contains(QStringLiteral("2 shape(s) on the CPU kernels")));
    QVERIFY(result("bench").finding.contains(QStringLiteral("no library baseline on the CPU")));

    // The files, in the story's folder.
    const QDir d0(dir);
    for (const char* f : {"calib-fixed.sdw.h5", "calib-ar-exact.sdw.h5", "calib-ar.sdw.h5", "reference-heldout.sdw.h5",
                          "pruning-sparsegpt24-calib-fixed.sdw.h5", "pruning-sparsegpt24-calib-ar.sdw.h5",
                          "eval-story.sdw.h5", "pruned/sparsegpt24-calib-fixed/model.safetensors",
                          "pruned/sparsegpt24-calib-ar/model.safetensors"})
      QVERIFY2(QFileInfo::exists(d0.filePath(QLatin1String(f))), f);
    QCOMPARE(d0.entryList({QStringLiteral("epsilon-k64-*.sdw.h5")}, QDir::Files).size(), 1);
    QCOMPARE(d0.entryList({QStringLiteral("drift-*.sdw.h5")}, QDir::Files).size(), 1);
    QCOMPARE(filesUnder(dir, QStringLiteral("*.partial")), QStringList());

    // What the runs record: the budgets, exactly, and the one decoding. HDF5
    // has one owner at a time: the files are read once no job runs.
    QTRY_COMPARE_WITH_TIMEOUT(window_->jobs()->runningCount(), 0, 60000);
    const struct {
      const char* file;
      std::int64_t tokens;
      const char* source;
      const char* capture;
    } runs[] = {{"calib-fixed.sdw.h5", 1500, "fixed", nullptr},
                {"calib-ar-exact.sdw.h5", 500, "ar", "exact"},
                {"calib-ar.sdw.h5", 1500, "ar", "reforward"},
                {"reference-heldout.sdw.h5", 1000, "ar", "reforward"}};
    for (const auto& run : runs) {
      const auto r = rs::RunReader::open(d0.filePath(QLatin1String(run.file)).toStdString());
      QCOMPARE(r.readIntAttribute("/calibration", "tokens_collected"), run.tokens);
      QCOMPARE(r.readStringAttribute("/calibration", "source"), std::string(run.source));
      if (run.capture) QCOMPARE(r.readStringAttribute("/calibration", "capture"), std::string(run.capture));
      QCOMPARE(r.readStringAttribute("/calibration", "device"), std::string("cpu"));
      QCOMPARE(r.readDoubleAttribute("/calibration", "temperature"), storyDecoding.temperature);
      QCOMPARE(r.readIntAttribute("/calibration", "sampling_top_k"), std::int64_t{storyDecoding.topK});
      QCOMPARE(r.readDoubleAttribute("/calibration", "sampling_top_p"), storyDecoding.topP);
    }
    const auto reference = rs::RunReader::open(d0.filePath(QStringLiteral("reference-heldout.sdw.h5")).toStdString());
    QCOMPARE(reference.readStringAttribute("/calibration", "storage"), std::string("topk"));
    QVERIFY2(QString::fromStdString(reference.readStringAttribute("/calibration", "prompts")).endsWith(
                 QStringLiteral("brown-heldout.jsonl")),
             "the reference decodes the held-out prompts");
  }

  void cancelInTheMiddleOfACalibration() {
    const QString dir = QDir(work_.path()).filePath(QStringLiteral("cancelled"));
    StoryOptions o = smallCpuStory(dir);
    o.calibrationTokens = 400000;  // far more than the test waits for
    StoryDriver driver(window_.get(), o);
    QSignalSpy finished(&driver, &StoryDriver::stepFinished);
    QSignalSpy all(&driver, &StoryDriver::allFinished);
    // Cancel once the fixed-text calibration has collected tokens.
    bool asked = false;
    auto c = connect(window_->calibrationController(), &sdw::app::CalibrationController::runProgress, this,
                     [&](double done, double, double, double, const QString&) {
                       if (!asked && done > 0 && driver.currentStep() == 2) {
                         asked = true;
                         driver.cancel();
                       }
                     });
    driver.runAll();
    QTRY_COMPARE_WITH_TIMEOUT(all.count(), 1, 120000);
    disconnect(c);
    QVERIFY(asked);
    QCOMPARE(all.first().at(0).toBool(), false);  // runAll stopped
    const QVector<StoryStepResult> results = driver.results();
    QCOMPARE(results.size(), 3);  // load, generate, then the cancelled calibration
    QCOMPARE(results[0].outcome, StoryOutcome::Ok);
    QCOMPARE(results[1].outcome, StoryOutcome::Ok);
    const StoryStepResult& r = results[2];
    QCOMPARE(r.id, QStringLiteral("calibrate-fixed"));
    QCOMPARE(r.outcome, StoryOutcome::Cancelled);
    QCOMPARE(r.device, QStringLiteral("cpu"));
    QVERIFY(r.seconds > 0);
    QVERIFY2(r.message.startsWith(QStringLiteral("Cancelled")), qPrintable(r.message));
    QVERIFY(!driver.isRunning());
    QVERIFY(!window_->calibrationController()->isRunning());
    QCOMPARE(filesUnder(dir, QStringLiteral("*.partial")), QStringList());
    // Nothing beyond the cancelled step ran.
    QVERIFY(!QFileInfo::exists(QDir(dir).filePath(QStringLiteral("calib-ar-exact.sdw.h5"))));
    QTRY_COMPARE_WITH_TIMEOUT(window_->jobs()->runningCount(), 0, 60000);
    QCOMPARE(filesUnder(dir, QStringLiteral("*.partial")), QStringList());
  }
};

QTEST_MAIN(TestWalkthrough)
#include "test_walkthrough.moc"
