// JobManager: jobs run off the calling thread, report throttled progress,
// deliver typed results, fail with messages, and cancel promptly.

#include "app/jobmanager.h"
#include "core/runstore.h"

#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include <atomic>
#include <filesystem>
#include <thread>

using sdw::app::JobId;
using sdw::app::JobManager;
using sdw::app::JobUpdate;

struct SumResult {
  long long sum = 0;
  bool offMainThread = false;
};
Q_DECLARE_METATYPE(SumResult)

class TestJobs : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void deliversTypedResultOffThread() {
    JobManager jobs;
    QSignalSpy started(&jobs, &JobManager::started);
    QSignalSpy finished(&jobs, &JobManager::finished);
    QThread* mainThread = QThread::currentThread();
    const JobId id = jobs.startTyped<SumResult>(QStringLiteral("sum"), [mainThread](const sdw::ProgressFn& p) {
      SumResult r;
      for (int i = 1; i <= 100; ++i) {
        r.sum += i;
        sdw::reportOrThrow(p, {double(i), 100, "items", "summing"});
      }
      r.offMainThread = QThread::currentThread() != mainThread;
      return r;
    });
    QCOMPARE(started.count(), 1);
    QCOMPARE(started.at(0).at(0).value<JobId>(), id);
    QCOMPARE(started.at(0).at(1).toString(), QStringLiteral("sum"));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 5000);
    QCOMPARE(finished.at(0).at(0).value<JobId>(), id);
    const auto r = finished.at(0).at(1).value<SumResult>();
    QCOMPARE(r.sum, 5050LL);
    QVERIFY(r.offMainThread);
    QCOMPARE(jobs.runningCount(), 0);
    QVERIFY(!jobs.isRunning(id));
  }

  void idsAreDistinct() {
    JobManager jobs;
    QSignalSpy finished(&jobs, &JobManager::finished);
    const JobId a = jobs.start(QStringLiteral("a"), [](const sdw::ProgressFn&) { return QVariant(1); });
    const JobId b = jobs.start(QStringLiteral("b"), [](const sdw::ProgressFn&) { return QVariant(2); });
    QVERIFY(a != b);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 5000);
    QMap<JobId, int> byId;
    for (const auto& args : finished) byId[args.at(0).value<JobId>()] = args.at(1).toInt();
    QCOMPARE(byId.value(a), 1);
    QCOMPARE(byId.value(b), 2);
  }

  void progressIsThrottledAndCarriesRate() {
    JobManager jobs;
    jobs.setProgressInterval(40);
    QSignalSpy progress(&jobs, &JobManager::progressed);
    QSignalSpy finished(&jobs, &JobManager::finished);
    jobs.start(QStringLiteral("slow"), [](const sdw::ProgressFn& p) {
      for (int i = 1; i <= 400; ++i) {  // ~0.4 s, 400 samples
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        sdw::reportOrThrow(p, {double(i), 400, "tokens", "decode"});
      }
      return QVariant();
    });
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 5000);
    // One signal per 40 ms at most: far fewer than the 400 samples.
    QVERIFY2(progress.count() >= 2 && progress.count() <= 40, qPrintable(QString::number(progress.count())));
    const auto last = progress.last().at(0).value<JobUpdate>();
    QCOMPARE(last.unit, QStringLiteral("tokens"));
    QCOMPARE(last.stage, QStringLiteral("decode"));
    QVERIFY(last.fraction > 0 && last.fraction <= 1.0);
    QVERIFY(last.ratePerSecond > 50);   // ~1000/s nominal, generous bounds for slow CI
    QVERIFY(last.etaSeconds >= 0);
  }

  void failureCarriesMessage() {
    JobManager jobs;
    QSignalSpy failed(&jobs, &JobManager::failed);
    QSignalSpy finished(&jobs, &JobManager::finished);
    const JobId id = jobs.start(QStringLiteral("bad"), [](const sdw::ProgressFn&) -> QVariant {
      throw std::runtime_error("shape mismatch: [4, 8] vs [8, 4]");
    });
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 5000);
    QCOMPARE(failed.at(0).at(0).value<JobId>(), id);
    QCOMPARE(failed.at(0).at(1).toString(), QStringLiteral("shape mismatch: [4, 8] vs [8, 4]"));
    QCOMPARE(finished.count(), 0);
  }

  void cancelIsPrompt() {
    JobManager jobs;
    QSignalSpy cancelled(&jobs, &JobManager::cancelled);
    QSignalSpy finished(&jobs, &JobManager::finished);
    std::atomic<bool> running{false};
    const JobId id = jobs.start(QStringLiteral("endless"), [&running](const sdw::ProgressFn& p) -> QVariant {
      running = true;
      for (long long i = 0;; ++i) {  // polls every ~5 ms, would run forever
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        sdw::reportOrThrow(p, {double(i), 0, "steps", ""});
      }
    });
    QTRY_VERIFY_WITH_TIMEOUT(running.load(), 5000);
    QElapsedTimer t;
    t.start();
    jobs.cancel(id);
    QTRY_COMPARE_WITH_TIMEOUT(cancelled.count(), 1, 2000);
    QVERIFY2(t.elapsed() < 1000, qPrintable(QStringLiteral("cancel took %1 ms").arg(t.elapsed())));
    QCOMPARE(cancelled.at(0).at(0).value<JobId>(), id);
    QCOMPARE(finished.count(), 0);
    QVERIFY(!jobs.isRunning(id));
  }

  void cancelledWriterLeavesNoFile() {
    // A job writing a run file is cancelled half-way: neither the final file
    // nor a half-written one may remain once the job discards its work.
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::filesystem::path final = std::filesystem::path(dir.path().toStdString()) / "run.sdw.h5";
    JobManager jobs;
    QSignalSpy cancelled(&jobs, &JobManager::cancelled);
    std::atomic<int> rowsWritten{0};
    const JobId id = jobs.start(QStringLiteral("write"), [&](const sdw::ProgressFn& p) -> QVariant {
      auto w = sdw::runstore::RunWriter::create(final, sdw::Provenance::capture(), "test");
      std::vector<float> row(256, 1.0f);
      sdw::runstore::DatasetOptions opts;
      opts.extendible = true;
      w.writeDataset<float>("/data/x", row, {1, 256}, opts);
      try {
        for (int i = 0; i < 100000; ++i) {
          w.append<float>("/data/x", row);
          ++rowsWritten;
          if (i % 16 == 0) w.checkpoint();
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          sdw::reportOrThrow(p, {double(i), 100000, "rows", ""});
        }
      } catch (const sdw::Cancelled&) {
        w.discard();
        throw;
      }
      w.commit();
      return QVariant();
    });
    QTRY_VERIFY_WITH_TIMEOUT(rowsWritten.load() > 20, 10000);
    jobs.cancel(id);
    QTRY_COMPARE_WITH_TIMEOUT(cancelled.count(), 1, 2000);
    QVERIFY(!std::filesystem::exists(final));
    QVERIFY(!std::filesystem::exists(final.string() + ".partial"));
    QVERIFY(QDir(dir.path()).entryList(QDir::Files).isEmpty());
  }

  void destructorCancelsRunningJobs() {
    std::atomic<bool> stopped{false};
    QElapsedTimer t;
    {
      JobManager jobs;
      std::atomic<bool> running{false};
      jobs.start(QStringLiteral("endless"), [&](const sdw::ProgressFn& p) -> QVariant {
        running = true;
        try {
          for (;;) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            sdw::reportOrThrow(p, {});
          }
        } catch (const sdw::Cancelled&) {
          stopped = true;
          throw;
        }
      });
      QTRY_VERIFY_WITH_TIMEOUT(running.load(), 5000);
      t.start();
    }
    QVERIFY(stopped.load());
    QVERIFY(t.elapsed() < 1000);
  }
};

QTEST_GUILESS_MAIN(TestJobs)
#include "test_jobs.moc"
