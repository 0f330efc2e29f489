// The user's story on a GPU, driven through the GUI: the workbench window
// (offscreen) with the story driver operating the panels' own widgets on
// `cuda` in bf16 — load and generate, calibrate from fixed text and from the
// model's own decoding (exact and re-forward capture) with per-layer
// progress, the held-out reference, epsilon, SparseGPT 2:4 from both
// calibrations, evaluation, drift, and a live kernel benchmark on the
// Llama-3.1-8B shapes whose charts must grow while it runs and whose table
// must hold our GPU kernels and the library baselines.
//
// Writes, into $SDW_STORY_OUT (default <build>/story): gui-session.json
// (device and one entry per step: panel, action, device, seconds, outcome,
// finding) and a PNG of the window at the end of each step. QSKIPs without a
// usable GPU.

#include "app/gui/mainwindow.h"
#include "app/gui/storydriver.h"
#include "app/settings.h"
#include "gpu/bench.h"
#include "gpu/device.h"
#include "widgets/benchcharts.h"
#include "widgets/benchmarkpanel.h"
#include "widgets/benchresultsmodel.h"
#include "widgets/calibrationpanel.h"
#include "widgets/jobsview.h"
#include "widgets/layerprogressview.h"

#include <QDateTime>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSet>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <memory>
#include <optional>

using sdw::app::StoryDriver;
using sdw::app::StoryOptions;
using sdw::app::StoryOutcome;
using sdw::app::StoryStepResult;

namespace {

// What the live charts and the progress views showed while a step ran.
struct Watch {
  int maxLayerPasses = 0;   // calibration: per-layer passes seen
  int maxLayersDone = 0;
  QVector<int> benchPoints; // benchmark: total points in the time chart, sampled
};

}  // namespace

class TestGpuStory : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir settingsDir_;
  QString out_;
  std::unique_ptr<sdw::app::Settings> settings_;
  std::unique_ptr<sdw::app::MainWindow> window_;
  std::unique_ptr<StoryDriver> driver_;
  QJsonArray steps_;

  int totalBenchPoints() const {
    const auto* charts = window_->benchmarkPanel()->charts();
    int n = 0;
    for (const QString& k : charts->kernelSeries()) n += charts->pointCount(k);
    return n;
  }

  // Runs one step, sampling the panels every 50 ms until it ends.
  StoryStepResult runStep(int index, Watch& watch, int timeoutMs) {
    // A direct connection: the result arrives as the value type it is.
    std::optional<StoryStepResult> result;
    const auto conn = connect(driver_.get(), &StoryDriver::stepFinished, this,
                              [&result](int, const StoryStepResult& r) { result = r; });
    driver_->runStep(index);
    QElapsedTimer t;
    t.start();
    while (!result && t.elapsed() < timeoutMs) {
      QTest::qWait(50);
      const auto* layers = window_->calibrationPanel()->layerProgress();
      watch.maxLayerPasses = std::max(watch.maxLayerPasses, layers->passes());
      watch.maxLayersDone = std::max(watch.maxLayersDone, layers->layersDone());
      if (window_->benchmarkPanel()->isRunning()) {
        const int n = totalBenchPoints();
        if (watch.benchPoints.isEmpty() || watch.benchPoints.back() != n) watch.benchPoints << n;
      }
    }
    if (!result) {
      driver_->cancel();
      QElapsedTimer grace;
      grace.start();
      while (!result && grace.elapsed() < 30000) QTest::qWait(50);
      if (!result) result = StoryStepResult{};
      result->outcome = StoryOutcome::Failed;
      result->message = QStringLiteral("timed out after %1 s").arg(timeoutMs / 1000);
    }
    disconnect(conn);
    return *result;
  }

  void record(const StoryStepResult& r, const QString& png) {
    QJsonObject o{{QStringLiteral("id"), r.id},
                  {QStringLiteral("panel"), r.panel},
                  {QStringLiteral("action"), r.action},
                  {QStringLiteral("device"), r.device},
                  {QStringLiteral("seconds"), r.seconds},
                  {QStringLiteral("outcome"), sdw::app::storyOutcomeName(r.outcome)},
                  {QStringLiteral("message"), r.message},
                  {QStringLiteral("finding"), r.finding},
                  {QStringLiteral("screenshot"), png}};
    steps_.append(o);
  }

  void writeSession() {
    const auto& dev = sdw::gpu::deviceInfo();
    QJsonObject root{{QStringLiteral("device"), QString::fromStdString(dev.name)},
                     {QStringLiteral("device_summary"), QString::fromStdString(sdw::gpu::describeDevice(dev))},
                     {QStringLiteral("torch_version"), QString::fromStdString(dev.torchVersion)},
                     {QStringLiteral("date"), QDateTime::currentDateTimeUtc().toString(Qt::ISODate)},
                     {QStringLiteral("window"), QStringLiteral("1440x900, offscreen")},
                     {QStringLiteral("command"),
                      QStringLiteral("tools/gpu/check.sh (ctest -L gpu runs test_gpu_story)")},
                     {QStringLiteral("steps"), steps_}};
    QFile f(QDir(out_).filePath(QStringLiteral("gui-session.json")));
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(QJsonDocument(root).toJson(QJsonDocument::Indented));
  }

 private Q_SLOTS:
  void initTestCase() {
    if (!sdw::gpu::gpuUsable())
      QSKIP(qPrintable(QStringLiteral("no GPU: ") + QString::fromStdString(sdw::gpu::deviceInfo().reason)));
    QVERIFY(settingsDir_.isValid());
    out_ = qEnvironmentVariable("SDW_STORY_OUT", QStringLiteral(SDW_BINARY_DIR "/story"));
    QDir(out_).removeRecursively();
    QVERIFY(QDir().mkpath(out_ + QStringLiteral("/work")));
    settings_ = std::make_unique<sdw::app::Settings>(settingsDir_.filePath(QStringLiteral("sdw.ini")));
    window_ = std::make_unique<sdw::app::MainWindow>(settings_.get());
    window_->setPersistState(false);
    window_->setShowErrorDialogs(false);
    window_->resize(1440, 900);
    window_->jobsView()->setFinishedLinger(0);  // the screenshots show the settled window
    window_->show();
    qInfo("device: %s", sdw::gpu::describeDevice(sdw::gpu::deviceInfo()).c_str());

    // The walkthrough's GPU story: the sample workspace's budgets (tools/make_sample_runs.sh).
    StoryOptions o = sdw::app::gpuStoryOptions();
    o.workDir = out_ + QStringLiteral("/work");
    driver_ = std::make_unique<StoryDriver>(window_.get(), o);
  }

  void story() {
    const auto steps = driver_->steps();
    QVERIFY(steps.size() >= 12);
    QSet<QString> ids;
    for (int i = 0; i < steps.size(); ++i) {
      const auto& info = steps[i];
      ids << info.id;
      Watch watch;
      const int timeoutMs = info.id == QLatin1String("bench") ? 300000 : 240000;
      const StoryStepResult r = runStep(i, watch, timeoutMs);
      const QString png = QStringLiteral("gpu-%1.png").arg(info.id);
      QTest::qWait(200);  // the coalesced replots
      QVERIFY(window_->grab().save(QDir(out_).filePath(png), "PNG"));
      record(r, png);
      qInfo("step %s: %s on %s in %.1f s: %s | %s", qPrintable(info.id), qPrintable(sdw::app::storyOutcomeName(r.outcome)),
            qPrintable(r.device), r.seconds, qPrintable(r.message), qPrintable(r.finding));
      writeSession();  // after every step: a failure later still leaves the steps before it
      QCOMPARE(sdw::app::storyOutcomeName(r.outcome), QStringLiteral("ok"));
      QCOMPARE(r.device, QStringLiteral("cuda"));
      QVERIFY(r.seconds > 0);
      if (info.id.startsWith(QLatin1String("calibrate"))) {
        // Per-layer progress followed the engine's passes over the decoder layers.
        QVERIFY2(watch.maxLayerPasses >= 1, qPrintable(info.id));
        QVERIFY2(watch.maxLayersDone >= 1, qPrintable(info.id));
      }
      if (info.id == QLatin1String("bench")) {
        // The live charts grew while the job ran: several distinct sizes, increasing.
        QVERIFY2(watch.benchPoints.size() >= 3, qPrintable(QStringLiteral("samples: %1").arg(watch.benchPoints.size())));
        QVERIFY(std::is_sorted(watch.benchPoints.begin(), watch.benchPoints.end()));
        QVERIFY(watch.benchPoints.back() > watch.benchPoints.front());
        // The table holds our GPU kernels and the library baselines, measured on the GPU.
        QSet<QString> kernels;
        for (const auto& row : window_->benchmarkPanel()->resultsModel()->rows()) {
          kernels << row.kernel;
          QVERIFY(row.us > 0);
        }
        for (const char* k : {"sparse", "dense", "cublas", "cusparselt"})
          QVERIFY2(kernels.contains(QLatin1String(k)), k);
        QVERIFY(!kernels.contains(QStringLiteral("sparse-cpu")));
        QVERIFY(window_->benchmarkPanel()->deviceText().contains(QStringLiteral("GPU")));
      }
    }
    for (const char* id : {"load", "generate", "calibrate-fixed", "calibrate-ar-exact", "calibrate-ar",
                           "calibrate-reference", "epsilon", "prune-fixed", "prune-ar", "evaluate", "drift",
                           "bench"})
      QVERIFY2(ids.contains(QLatin1String(id)), id);
  }

  void cleanupTestCase() {
    if (driver_ && driver_->isRunning()) driver_->cancel();
    driver_.reset();
    window_.reset();
  }
};

QTEST_MAIN(TestGpuStory)
#include "test_gpu_story.moc"
