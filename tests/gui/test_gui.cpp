// The workbench window offscreen: panels, run browser, jobs dock with cancel,
// clear errors on bad run files, plot export, and the --screenshot path.

#include "app/gui/mainwindow.h"
#include "app/gui/workspace.h"
#include "widgets/jobsview.h"
#include "widgets/logview.h"
#include "widgets/plotview.h"
#include "widgets/runbrowser.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QFile>
#include <QImage>
#include <QProcess>
#include <QPushButton>
#include <QRandomGenerator>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <thread>

using sdw::app::MainWindow;

namespace {
const QString kSampleWorkspace = QStringLiteral(SDW_SOURCE_DIR "/samples/workspace");

QString firstSampleRun() {
  const QStringList runs = QDir(kSampleWorkspace).entryList({QStringLiteral("*.sdw.h5")}, QDir::Files, QDir::Name);
  return runs.isEmpty() ? QString() : QDir(kSampleWorkspace).filePath(runs.first());
}
}  // namespace

class TestGui : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir settingsDir_;
  std::unique_ptr<sdw::app::Settings> settings_;

 private Q_SLOTS:
  void initTestCase() {
    settings_ = std::make_unique<sdw::app::Settings>(settingsDir_.filePath(QStringLiteral("sdw.ini")));
  }

  void hasTheFivePanels() {
    MainWindow w(settings_.get());
    w.setShowErrorDialogs(false);
    QCOMPARE(w.panelNames(), (QStringList{"Model", "Calibration", "Analysis", "Pruning", "Benchmark"}));
    QVERIFY(w.selectPanel(QStringLiteral("pruning")));
    QCOMPARE(w.currentPanel(), QStringLiteral("Pruning"));
    QVERIFY(!w.selectPanel(QStringLiteral("Nope")));
  }

  void browsesAWorkspaceWithABadFile() {
    QTemporaryDir ws;
    QVERIFY(QFile::copy(firstSampleRun(), ws.filePath(QStringLiteral("good.sdw.h5"))));
    {
      QFile f(ws.filePath(QStringLiteral("noise.sdw.h5")));
      QVERIFY(f.open(QIODevice::WriteOnly));
      QByteArray bytes(4096, '\0');
      for (auto& b : bytes) b = static_cast<char>(QRandomGenerator::global()->bounded(256));
      f.write(bytes);
    }
    MainWindow w(settings_.get());
    w.setPersistState(false);
    w.setShowErrorDialogs(false);
    QAbstractItemModelTester tester(w.runBrowser()->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy finished(w.jobs(), &sdw::app::JobManager::finished);
    w.openWorkspace(ws.path());
    QTRY_COMPARE_WITH_TIMEOUT(w.runBrowser()->model()->rowCount(), 2, 10000);
    const auto& rows = w.runBrowser()->model()->rows();
    QCOMPARE(rows[0].fileName, QStringLiteral("good.sdw.h5"));
    QCOMPARE(rows[0].status, QStringLiteral("complete"));
    QVERIFY(rows[0].error.isEmpty());
    QCOMPARE(rows[1].fileName, QStringLiteral("noise.sdw.h5"));
    QCOMPARE(rows[1].status, QStringLiteral("invalid"));
    QVERIFY2(rows[1].error.contains(QStringLiteral("not an HDF5 file")), qPrintable(rows[1].error));
    QVERIFY(w.logView()->plainText().contains(QStringLiteral("noise.sdw.h5")));
    // The first row is selected and its provenance shown.
    QTRY_VERIFY(w.runBrowser()->detailsText().contains(QStringLiteral("SparseDecoding Workbench")));
  }

  void openingATruncatedRunShowsTheReason() {
    QTemporaryDir dir;
    QFile src(firstSampleRun());
    QVERIFY(src.open(QIODevice::ReadOnly));
    const QByteArray all = src.readAll();
    const QString path = dir.filePath(QStringLiteral("cut.sdw.h5"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(all.left(all.size() / 3));
    f.close();

    MainWindow w(settings_.get());
    w.setPersistState(false);
    w.setShowErrorDialogs(false);
    w.openRunFile(path);
    QTRY_VERIFY_WITH_TIMEOUT(!w.lastError().isEmpty(), 10000);
    QVERIFY2(w.lastError().contains(QStringLiteral("truncated or corrupt")), qPrintable(w.lastError()));
    QVERIFY(w.runBrowser()->detailsText().contains(QStringLiteral("Cannot open this run")));
  }

  void jobsDockShowsProgressAndCancels() {
    MainWindow w(settings_.get());
    w.setPersistState(false);
    w.jobs()->setProgressInterval(10);
    QSignalSpy cancelled(w.jobs(), &sdw::app::JobManager::cancelled);
    const auto id = w.jobs()->start(QStringLiteral("Long job"), [](const sdw::ProgressFn& p) -> QVariant {
      for (int i = 0;; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        sdw::reportOrThrow(p, {double(i), 1e6, "tokens", "decode"});
      }
    });
    QTRY_VERIFY_WITH_TIMEOUT(w.jobsView()->progressValue(id) >= 0, 5000);
    QTRY_VERIFY_WITH_TIMEOUT(w.jobsView()->statusText(id).contains(QStringLiteral("tokens/s")), 5000);
    QVERIFY(w.jobsView()->statusText(id).contains(QStringLiteral("ETA")));
    auto* cancel = w.jobsView()->findChild<QPushButton*>(QStringLiteral("cancel-%1").arg(id));
    QVERIFY(cancel);
    QElapsedTimer t;
    t.start();
    cancel->click();
    QTRY_COMPARE_WITH_TIMEOUT(cancelled.count(), 1, 2000);
    QVERIFY(t.elapsed() < 1000);
    QCOMPARE(w.jobsView()->statusText(id), QStringLiteral("cancelled"));
  }

  void settingsPersistPanel() {
    {
      MainWindow w(settings_.get());
      w.selectPanel(QStringLiteral("Benchmark"));
      w.close();
    }
    MainWindow again(settings_.get());
    QCOMPARE(again.currentPanel(), QStringLiteral("Benchmark"));
    QVERIFY(!settings_->windowState().isEmpty());
  }

  void plotExports() {
    sdw::widgets::PlotView view;
    QCOMPARE(view.addSeries(QStringLiteral("eps"), {1, 2, 3}, {0.5, 0.25, 0.125}), 0);
    QCOMPARE(view.seriesCount(), 1);
    view.resize(400, 300);
    QTemporaryDir dir;
    QCOMPARE(view.exportTo(dir.filePath(QStringLiteral("p.png"))), QString());
    QCOMPARE(view.exportTo(dir.filePath(QStringLiteral("p.pdf"))), QString());
    QCOMPARE(view.exportTo(dir.filePath(QStringLiteral("p.csv"))), QString());
    QVERIFY(!view.exportTo(dir.filePath(QStringLiteral("p.bmpx"))).isEmpty());
    QVERIFY(!QImage(dir.filePath(QStringLiteral("p.png"))).isNull());
    QVERIFY(QFileInfo(dir.filePath(QStringLiteral("p.pdf"))).size() > 500);
    QFile csv(dir.filePath(QStringLiteral("p.csv")));
    QVERIFY(csv.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(csv.readAll()),
             QStringLiteral("graph,key,value\n\"eps\",1,0.5\n\"eps\",2,0.25\n\"eps\",3,0.125\n"));
  }

  void screenshotCommand() {
    QTemporaryDir dir;
    const QString out = dir.filePath(QStringLiteral("shot.png"));
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), dir.path());  // keep the user's settings out
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(SDW_BINARY_DIR "/bin/sdw"),
            {QStringLiteral("--screenshot"), out, QStringLiteral("--panel"), QStringLiteral("Analysis")});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    const QImage img(out);
    QVERIFY(!img.isNull());
    QVERIFY(img.width() >= 1200 && img.height() >= 700);
    // Non-trivial: many distinct colours, not a blank window.
    QSet<QRgb> colours;
    for (int y = 0; y < img.height(); y += 3)
      for (int x = 0; x < img.width(); x += 3) colours.insert(img.pixel(x, y));
    QVERIFY2(colours.size() > 40, qPrintable(QString::number(colours.size())));
  }

  void noDisplayGivesAdvice() {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove(QStringLiteral("DISPLAY"));
    env.remove(QStringLiteral("WAYLAND_DISPLAY"));
    env.remove(QStringLiteral("QT_QPA_PLATFORM"));
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(SDW_BINARY_DIR "/bin/sdw"), {});
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 3);
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY(err.contains(QStringLiteral("no display")));
    QVERIFY(err.contains(QStringLiteral("sdw-cli")));
  }
};

QTEST_MAIN(TestGui)
#include "test_gui.moc"
