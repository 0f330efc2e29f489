// The workbench window offscreen: panels, run browser, jobs dock with cancel
// and finished jobs folding away, clear errors on bad run files, plot export,
// the Benchmark controls in full at the sizes a projector shows, and the
// --screenshot path with --size.

#include "app/gui/mainwindow.h"
#include "app/gui/workspace.h"
#include "widgets/jobsview.h"
#include "widgets/logview.h"
#include "widgets/plotview.h"
#include "widgets/runbrowser.h"

#include <QAbstractButton>
#include <QAbstractItemModelTester>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QDockWidget>
#include <QFile>
#include <QImage>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QRandomGenerator>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <functional>
#include <stdexcept>

#include <thread>

using sdw::app::MainWindow;

namespace {
const QString kSampleWorkspace = QStringLiteral(SDW_SOURCE_DIR "/samples/workspace");

QString firstSampleRun() {
  const QStringList runs = QDir(kSampleWorkspace).entryList({QStringLiteral("*.sdw.h5")}, QDir::Files, QDir::Name);
  return runs.isEmpty() ? QString() : QDir(kSampleWorkspace).filePath(runs.first());
}

// A job that only the Jobs dock follows.
sdw::app::JobId startPlain(sdw::app::JobManager& jobs, const QString& name,
                           std::function<QVariant(const sdw::ProgressFn&)> work) {
  return jobs.start(sdw::app::Job<QVariant>{.name = name, .work = std::move(work)});
}

// Runs `sdw ARGS` with its own settings folder; exit code, stdout and stderr.
struct Run {
  int code = -1;
  QString out, err;
};
Run runSdw(const QStringList& args, const QString& configDir) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert(QStringLiteral("XDG_CONFIG_HOME"), configDir);  // keep the user's settings out
  p.setProcessEnvironment(env);
  p.start(QStringLiteral(SDW_BINARY_DIR "/bin/sdw"), args);
  if (!p.waitForFinished(90000)) return {};
  return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
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

  void hasTheSixPanels() {
    MainWindow w(settings_.get());
    w.setShowErrorDialogs(false);
    QCOMPARE(w.panelNames(), (QStringList{"Model", "Calibration", "Analysis", "Pruning", "Benchmark", "Study"}));
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
    const auto id = startPlain(*w.jobs(), QStringLiteral("Long job"), [](const sdw::ProgressFn& p) -> QVariant {
      for (int i = 0;; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        sdw::reportOrThrow(p, {double(i), 1e6, "tokens", "decode"});
      }
    });
    QTRY_VERIFY_WITH_TIMEOUT(w.jobsView()->progressValue(id) >= 0, 5000);
    QTRY_VERIFY_WITH_TIMEOUT(w.jobsView()->statusText(id).contains(QStringLiteral("tokens/s")), 5000);
    QVERIFY(w.jobsView()->statusText(id).contains(QStringLiteral("ETA")));
    auto* cancel = w.jobsView()->findChild<QPushButton*>(QStringLiteral("cancel%1").arg(id));
    QVERIFY(cancel);
    QElapsedTimer t;
    t.start();
    cancel->click();
    QTRY_COMPARE_WITH_TIMEOUT(cancelled.count(), 1, 2000);
    QVERIFY(t.elapsed() < 1000);
    QCOMPARE(w.jobsView()->statusText(id), QStringLiteral("cancelled"));
  }

  void finishedJobsFoldAway() {
    sdw::widgets::JobsView view;
    view.setFinishedLinger(150);
    view.resize(800, 200);
    view.show();
    view.addJob(1, QStringLiteral("Load model"));
    view.addJob(2, QStringLiteral("Calibrate"));
    view.addJob(3, QStringLiteral("Prune"));
    view.addJob(4, QStringLiteral("Benchmark"));
    QCOMPARE(view.jobCount(), 4);
    QCOMPARE(view.summaryText(), QStringLiteral("4 running"));
    view.endJob(1, sdw::widgets::JobsView::End::Finished);
    view.endJob(2, sdw::widgets::JobsView::End::Failed, QStringLiteral("out of memory"));
    view.endJob(3, sdw::widgets::JobsView::End::Cancelled);
    // Ended rows stay a moment, so the user sees how they ended...
    QCOMPARE(view.jobCount(), 4);
    QCOMPARE(view.statusText(1), QStringLiteral("done"));
    // ... then the finished and the cancelled one fold into the summary line;
    // the failure stays, with its reason, and the running job with it.
    QTRY_COMPARE_WITH_TIMEOUT(view.jobCount(), 2, 3000);
    QCOMPARE(view.statusText(1), QString());
    QCOMPARE(view.statusText(3), QString());
    QCOMPARE(view.statusText(2), QStringLiteral("failed: out of memory"));
    QCOMPARE(view.foldedCount(), 2);
    QCOMPARE(view.summaryText(), QStringLiteral("1 running · 2 finished (1 cancelled) · 1 failed"));
    QTest::qWait(300);
    QCOMPARE(view.statusText(2), QStringLiteral("failed: out of memory"));  // not on a timer

    // The failed row's button dismisses it.
    auto* dismiss = view.findChild<QPushButton*>(QStringLiteral("cancel2"));
    QVERIFY(dismiss);
    QCOMPARE(dismiss->text(), QStringLiteral("Dismiss"));
    QVERIFY(dismiss->isEnabled());
    dismiss->click();
    QCOMPARE(view.jobCount(), 1);
    QCOMPARE(view.summaryText(), QStringLiteral("1 running · 2 finished (1 cancelled)"));

    view.endJob(4, sdw::widgets::JobsView::End::Finished);
    QTRY_COMPARE_WITH_TIMEOUT(view.jobCount(), 0, 3000);
    QCOMPARE(view.summaryText(), QStringLiteral("No running jobs · 3 finished (1 cancelled)"));
    view.clearEnded();
    QCOMPARE(view.foldedCount(), 0);
    QVERIFY(view.summaryText().startsWith(QStringLiteral("No jobs running.")));

    // Linger 0: a finished job never takes a row beyond its end.
    view.setFinishedLinger(0);
    view.addJob(5, QStringLiteral("Scan"));
    view.endJob(5, sdw::widgets::JobsView::End::Finished);
    QCOMPARE(view.jobCount(), 0);
    QCOMPARE(view.foldedCount(), 1);
  }

  void windowKeepsFailedJobsAndFoldsTheRest() {
    MainWindow w(settings_.get());
    w.setPersistState(false);
    w.setShowErrorDialogs(false);
    w.jobsView()->setFinishedLinger(100);
    QSignalSpy failed(w.jobs(), &sdw::app::JobManager::failed);
    const auto good = startPlain(*w.jobs(), QStringLiteral("Quick"), [](const sdw::ProgressFn&) { return QVariant(1); });
    const auto bad = startPlain(*w.jobs(), QStringLiteral("Doomed"), [](const sdw::ProgressFn&) -> QVariant {
      throw std::runtime_error("disk full");
    });
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 5000);
    QTRY_COMPARE_WITH_TIMEOUT(w.jobsView()->statusText(good), QString(), 5000);
    QTest::qWait(300);
    QCOMPARE(w.jobsView()->statusText(bad), QStringLiteral("failed: disk full"));
    QVERIFY(w.jobs()->waitForDone(20000));
  }

  void controlsFitTheWindow_data() {
    QTest::addColumn<QSize>("size");
    QTest::newRow("1440x900") << QSize(1440, 900);
    QTest::newRow("1920x1080") << QSize(1920, 1080);
  }

  void controlsFitTheWindow() {
    QFETCH(QSize, size);
    MainWindow w(settings_.get());
    w.setPersistState(false);
    w.setShowErrorDialogs(false);
    w.jobsView()->setFinishedLinger(0);
    w.resize(size);
    QVERIFY(w.selectPanel(QStringLiteral("Benchmark")));
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.jobs()->waitForDone(30000));
    QTest::qWait(200);  // the ended jobs' signals and the layout

    // The window keeps the size it was given: nothing in it needs more.
    QCOMPARE(w.size(), size);
    // The bottom docks leave the panels most of the height.
    auto* jobsDock = w.findChild<QDockWidget*>(QStringLiteral("jobsDock"));
    QVERIFY(jobsDock);
    QVERIFY2(jobsDock->height() <= 180, qPrintable(QString::number(jobsDock->height())));
    QCOMPARE(w.jobsView()->jobCount(), 0);

    // The Benchmark controls: no horizontal scrolling, no control cut off.
    auto* scroll = w.findChild<QScrollArea*>(QStringLiteral("benchSettingsScroll"));
    QVERIFY(scroll);
    QVERIFY(scroll->isVisible());
    QVERIFY(!scroll->horizontalScrollBar()->isVisible());
    QVERIFY2(scroll->widget()->minimumSizeHint().width() <= scroll->viewport()->width(),
             qPrintable(QStringLiteral("%1 > %2")
                            .arg(scroll->widget()->minimumSizeHint().width())
                            .arg(scroll->viewport()->width())));
    auto* column = w.findChild<QWidget*>(QStringLiteral("benchControls"));
    QVERIFY(column);
    int controls = 0;
    for (QWidget* c : column->findChildren<QWidget*>()) {
      if (!qobject_cast<QAbstractButton*>(c) && !qobject_cast<QComboBox*>(c) && !qobject_cast<QAbstractSpinBox*>(c) &&
          !qobject_cast<QLineEdit*>(c))
        continue;
      if (!c->isVisibleTo(column) || c->parentWidget()->inherits("QAbstractSpinBox")) continue;
      ++controls;
      // Inside the column, and inside the visible part of the scroll area.
      const QRect inColumn(c->mapTo(column, QPoint(0, 0)), c->size());
      QVERIFY2(column->rect().contains(inColumn), qPrintable(c->objectName() + QLatin1Char(' ') + c->metaObject()->className()));
      if (scroll->widget()->isAncestorOf(c)) {
        const QRect inView(c->mapTo(scroll->viewport(), QPoint(0, 0)), c->size());
        QVERIFY2(scroll->viewport()->rect().contains(inView),
                 qPrintable(QStringLiteral("%1 %2 at %3,%4 %5x%6")
                                .arg(c->metaObject()->className(), c->objectName())
                                .arg(inView.x())
                                .arg(inView.y())
                                .arg(inView.width())
                                .arg(inView.height())));
      }
    }
    QVERIFY2(controls >= 18, qPrintable(QString::number(controls)));  // patterns, batches, baselines, buttons, ...
  }

  void legendsStayOffTheData() {
    // Every plot of every panel with the sample workspace open, at the
    // screenshots' size: a legend shown is never drawn over the data.
    MainWindow w(settings_.get());
    w.setPersistState(false);
    w.setShowErrorDialogs(false);
    w.jobsView()->setFinishedLinger(0);
    w.resize(1440, 900);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.openWorkspace(kSampleWorkspace);
    QTest::qWait(200);
    QVERIFY(w.jobs()->waitForDone(30000));
    int checked = 0;
    for (const QString& panel :
         {QStringLiteral("Analysis"), QStringLiteral("Analysis/Drift"), QStringLiteral("Pruning"),
          QStringLiteral("Benchmark"), QStringLiteral("Benchmark/End-to-end decode"), QStringLiteral("Study")}) {
      QVERIFY(w.selectPanel(panel));
      QTest::qWait(300);  // layout, then the queued replots (and a second one where a legend re-wrapped)
      for (const auto* plot : w.findChildren<sdw::widgets::PlotView*>()) {
        if (!plot->isVisible() || plot->legendRect().isEmpty()) continue;
        ++checked;
        QVERIFY2(!plot->legendRect().intersects(plot->dataRect()),
                 qPrintable(QStringLiteral("%1 on %2").arg(plot->objectName(), panel)));
      }
    }
    // eps bars, spectra, drift, pruning layers, kernel speedup, decode speed-up
    QVERIFY2(checked >= 6, qPrintable(QString::number(checked)));
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
    const Run r = runSdw({QStringLiteral("--screenshot"), out, QStringLiteral("--panel"), QStringLiteral("Analysis")},
                         dir.path());
    QCOMPARE(r.code, 0);
    const QImage img(out);
    QVERIFY(!img.isNull());
    // The default size, exactly: no panel makes the window grow past it.
    QCOMPARE(img.size(), QSize(1440, 900));
    QVERIFY2(!r.err.contains(QStringLiteral("needs more than")), qPrintable(r.err));
    // Non-trivial: many distinct colours, not a blank window.
    QSet<QRgb> colours;
    for (int y = 0; y < img.height(); y += 3)
      for (int x = 0; x < img.width(); x += 3) colours.insert(img.pixel(x, y));
    QVERIFY2(colours.size() > 40, qPrintable(QString::number(colours.size())));
  }

  void screenshotAtAnotherSize() {
    QTemporaryDir dir;
    const QString out = dir.filePath(QStringLiteral("big.png"));
    const Run r = runSdw({QStringLiteral("--screenshot"), out, QStringLiteral("--panel"), QStringLiteral("Pruning/Quality"),
                          QStringLiteral("--size"), QStringLiteral("1920x1080")},
                         dir.path());
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.contains(QStringLiteral("(1920x1080)")), qPrintable(r.out));
    QCOMPARE(QImage(out).size(), QSize(1920, 1080));

    const Run bad = runSdw({QStringLiteral("--screenshot"), out, QStringLiteral("--size"), QStringLiteral("big")},
                           dir.path());
    QCOMPARE(bad.code, 2);
    QVERIFY2(bad.err.contains(QStringLiteral("--size wants WIDTHxHEIGHT")), qPrintable(bad.err));
    const Run help = runSdw({QStringLiteral("--help")}, dir.path());
    QVERIFY(help.out.contains(QStringLiteral("--size WxH")));
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
