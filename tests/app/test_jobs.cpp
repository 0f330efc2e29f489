// JobManager: jobs run off the calling thread, report throttled progress,
// deliver typed results, fail with messages, and cancel promptly. A job's own
// callbacks: its channel keeps order (coalesced when asked) and delivers
// before the end; exactly one end callback fires; a job replaced in its slot,
// or whose context is gone, is heard of no more.

#include "app/jobmanager.h"
#include "core/runstore.h"

#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

using sdw::app::Job;
using sdw::app::JobChannel;
using sdw::app::JobId;
using sdw::app::JobManager;
using sdw::app::JobSlot;
using sdw::app::JobUpdate;

struct SumResult {
  long long sum = 0;
  bool offMainThread = false;
};
Q_DECLARE_METATYPE(SumResult)

namespace {
// A job that only the signals report.
JobId startPlain(JobManager& jobs, const QString& name, std::function<QVariant(const sdw::ProgressFn&)> work) {
  return jobs.start(Job<QVariant>{.name = name, .work = std::move(work)});
}

// What a job's callbacks saw, in order.
struct Heard {
  std::vector<int> data;
  int batches = 0;
  int progress = 0;
  int finished = 0;
  int failed = 0;
  int cancelled = 0;
  int result = 0;
  std::size_t dataAtEnd = 0;  // values delivered when the end callback ran
  int ends() const { return finished + failed + cancelled; }
};

// A Job<int, int> whose callbacks record into `heard`.
Job<int, int> recorded(Heard& heard, const QString& name, Job<int, int>::Work work) {
  return Job<int, int>{
      .name = name,
      .work = std::move(work),
      .progress = [&heard](const JobUpdate&) { ++heard.progress; },
      .data =
          [&heard](const std::vector<int>& batch) {
            ++heard.batches;
            heard.data.insert(heard.data.end(), batch.begin(), batch.end());
          },
      .finished =
          [&heard](const int& r) {
            ++heard.finished;
            heard.result = r;
            heard.dataAtEnd = heard.data.size();
          },
      .failed =
          [&heard](const QString&) {
            ++heard.failed;
            heard.dataAtEnd = heard.data.size();
          },
      .cancelled =
          [&heard] {
            ++heard.cancelled;
            heard.dataAtEnd = heard.data.size();
          },
  };
}

std::vector<int> iota(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  return v;
}
}  // namespace

class TestJobs : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void deliversTypedResultOffThread() {
    JobManager jobs;
    QSignalSpy started(&jobs, &JobManager::started);
    QSignalSpy finished(&jobs, &JobManager::finished);
    QThread* mainThread = QThread::currentThread();
    const JobId id = jobs.start(Job<SumResult>{.name = QStringLiteral("sum"),
                                               .work = [mainThread](const sdw::ProgressFn& p) {
                                                 SumResult r;
                                                 for (int i = 1; i <= 100; ++i) {
                                                   r.sum += i;
                                                   sdw::reportOrThrow(p, {double(i), 100, "items", "summing"});
                                                 }
                                                 r.offMainThread = QThread::currentThread() != mainThread;
                                                 return r;
                                               }});
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
    const JobId a = startPlain(jobs, QStringLiteral("a"), [](const sdw::ProgressFn&) { return QVariant(1); });
    const JobId b = startPlain(jobs, QStringLiteral("b"), [](const sdw::ProgressFn&) { return QVariant(2); });
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
    startPlain(jobs, QStringLiteral("slow"), [](const sdw::ProgressFn& p) {
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
    const JobId id = startPlain(jobs, QStringLiteral("bad"), [](const sdw::ProgressFn&) -> QVariant {
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
    const JobId id = startPlain(jobs, QStringLiteral("endless"), [&running](const sdw::ProgressFn& p) -> QVariant {
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

  void channelKeepsOrder_data() {
    QTest::addColumn<int>("intervalMs");
    QTest::newRow("every value") << 0;
    QTest::newRow("coalesced every 25 ms") << 25;
  }

  void channelKeepsOrder() {
    // Values arrive in the order sent, all of them, before the end callback;
    // with an interval, many values share one delivery.
    QFETCH(int, intervalMs);
    JobManager jobs;
    Heard heard;
    const int n = 300;
    Job<int, int> job = recorded(heard, QStringLiteral("stream"), [n](const sdw::ProgressFn& p,
                                                                       const JobChannel<int>& channel) {
      for (int i = 0; i < n; ++i) {
        channel.send(i);
        if (i % 10 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        sdw::reportOrThrow(p, {double(i), double(n), "values", "sending"});
      }
      return n;
    });
    job.dataIntervalMs = intervalMs;
    QElapsedTimer t;
    t.start();
    jobs.start(std::move(job));
    QTRY_COMPARE_WITH_TIMEOUT(heard.ends(), 1, 5000);
    const qint64 ms = t.elapsed();
    QCOMPARE(heard.finished, 1);
    QCOMPARE(heard.result, n);
    QVERIFY(heard.data == iota(n));
    QCOMPARE(heard.dataAtEnd, std::size_t(n));
    QVERIFY(heard.progress >= 1);
    if (intervalMs > 0)  // at most one delivery per interval, plus the first and the last
      QVERIFY2(heard.batches <= ms / intervalMs + 2, qPrintable(QStringLiteral("%1 in %2 ms").arg(heard.batches).arg(ms)));
  }

  void endCallbacksFireOnce() {
    JobManager jobs;
    JobSlot slot;
    Heard good, bad;
    bool slotFreeAtEnd = false;
    Job<int, int> ok = recorded(good, QStringLiteral("ok"), [](const sdw::ProgressFn&, const JobChannel<int>& c) {
      c.send(1);
      return 5;
    });
    ok.slot = &slot;
    const auto record = ok.finished;
    ok.finished = [&](const int& r) {
      slotFreeAtEnd = !slot.busy();
      record(r);
    };
    const JobId id = jobs.start(std::move(ok));
    QCOMPARE(slot.id(), id);
    QVERIFY(slot.busy());
    jobs.start(recorded(bad, QStringLiteral("bad"), [](const sdw::ProgressFn&, const JobChannel<int>& c) -> int {
      c.send(2);
      throw std::runtime_error("no such file");
    }));
    QTRY_VERIFY_WITH_TIMEOUT(good.ends() == 1 && bad.ends() == 1, 5000);
    QTest::qWait(50);  // nothing more comes
    QCOMPARE(good.finished, 1);
    QCOMPARE(good.ends(), 1);
    QCOMPARE(good.result, 5);
    QVERIFY(good.data == std::vector<int>{1});
    QVERIFY(slotFreeAtEnd);
    QVERIFY(!slot.busy());
    QCOMPARE(bad.failed, 1);
    QCOMPARE(bad.ends(), 1);
    QVERIFY(bad.data == std::vector<int>{2});
    QCOMPARE(bad.dataAtEnd, std::size_t(1));
  }

  void cancelDeliversWhatWasSentThenCancelled() {
    JobManager jobs;
    Heard heard;
    std::atomic<bool> sent{false};
    const JobId id = jobs.start(recorded(heard, QStringLiteral("endless"),
                                         [&sent](const sdw::ProgressFn& p, const JobChannel<int>& c) -> int {
                                           for (int i = 0; i < 10; ++i) c.send(i);
                                           sent = true;
                                           for (;;) {
                                             std::this_thread::sleep_for(std::chrono::milliseconds(2));
                                             sdw::reportOrThrow(p, {});
                                           }
                                         }));
    QTRY_VERIFY_WITH_TIMEOUT(sent.load(), 5000);
    jobs.cancel(id);
    QTRY_COMPARE_WITH_TIMEOUT(heard.ends(), 1, 2000);
    QCOMPARE(heard.cancelled, 1);
    QVERIFY(heard.data == iota(10));
    QCOMPARE(heard.dataAtEnd, std::size_t(10));
  }

  void replacedJobIsHeardOfNoMore() {
    // A second job in the same slot cancels the first; what the first sends
    // after that, and its end, never reach its callbacks.
    JobManager jobs;
    QSignalSpy finished(&jobs, &JobManager::finished);
    JobSlot slot;
    Heard first, second;
    std::atomic<bool> stopSeen{false};
    Job<int, int> a = recorded(first, QStringLiteral("first"), [&](const sdw::ProgressFn& p, const JobChannel<int>& c) {
      c.send(1);
      while (!stopSeen) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        stopSeen = p && !p({});
      }
      c.send(2);  // late: the job has been replaced
      return 7;   // and it ends well, as a job that stops at a boundary may
    });
    a.slot = &slot;
    const JobId idA = jobs.start(std::move(a));
    QTRY_COMPARE_WITH_TIMEOUT(first.data.size(), std::size_t(1), 5000);
    Job<int, int> b = recorded(second, QStringLiteral("second"), [](const sdw::ProgressFn&, const JobChannel<int>& c) {
      c.send(3);
      return 42;
    });
    b.slot = &slot;
    const JobId idB = jobs.start(std::move(b));
    QVERIFY(idB != idA);
    QCOMPARE(slot.id(), idB);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 5000);
    QVERIFY(stopSeen.load());
    QTest::qWait(50);
    QVERIFY(first.data == std::vector<int>{1});
    QCOMPARE(first.ends(), 0);
    QCOMPARE(second.finished, 1);
    QCOMPARE(second.result, 42);
    QVERIFY(second.data == std::vector<int>{3});
    QVERIFY(!slot.busy());
  }

  void goneContextCancelsAndSilences() {
    JobManager jobs;
    QSignalSpy cancelled(&jobs, &JobManager::cancelled);
    Heard heard;
    auto context = std::make_unique<QObject>();
    std::atomic<bool> running{false};
    Job<int, int> job = recorded(heard, QStringLiteral("owned"), [&](const sdw::ProgressFn& p, const JobChannel<int>&) -> int {
      running = true;
      for (;;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        sdw::reportOrThrow(p, {});
      }
    });
    job.context = context.get();
    jobs.start(std::move(job));
    QTRY_VERIFY_WITH_TIMEOUT(running.load(), 5000);
    context.reset();
    QTRY_COMPARE_WITH_TIMEOUT(cancelled.count(), 1, 2000);
    QTest::qWait(20);
    QCOMPARE(heard.ends(), 0);
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
    const JobId id = startPlain(jobs, QStringLiteral("write"), [&](const sdw::ProgressFn& p) -> QVariant {
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
      startPlain(jobs, QStringLiteral("endless"), [&](const sdw::ProgressFn& p) -> QVariant {
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
