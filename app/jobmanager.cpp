#include "app/jobmanager.h"

#include <QMetaObject>
#include <QPointer>
#include <QRunnable>

#include <chrono>
#include <exception>
#include <mutex>

namespace sdw::app {

struct JobManager::State {
  JobId id = 0;
  QString name;
  std::atomic<bool> stop{false};
  // Only the worker thread touches the meter and lastEmit.
  sdw::ProgressMeter meter;
  std::chrono::steady_clock::time_point lastEmit{};
};

namespace {
void registerTypes() {
  static std::once_flag once;
  std::call_once(once, [] {
    qRegisterMetaType<sdw::app::JobId>("sdw::app::JobId");
    qRegisterMetaType<sdw::app::JobUpdate>("sdw::app::JobUpdate");
  });
}

JobUpdate toUpdate(const QString& name, JobId id, const sdw::ProgressStatus& s) {
  JobUpdate u;
  u.id = id;
  u.name = name;
  u.stage = QString::fromStdString(s.progress.stage);
  u.unit = QString::fromStdString(s.progress.unit);
  u.done = s.progress.done;
  u.total = s.progress.total;
  u.fraction = s.fraction;
  u.ratePerSecond = s.ratePerSecond;
  u.etaSeconds = s.etaSeconds.value_or(-1.0);
  u.elapsedSeconds = s.elapsedSeconds;
  u.part = s.progress.part;
  u.parts = s.progress.parts;
  u.partLabel = QString::fromStdString(s.progress.partLabel);
  return u;
}
}  // namespace

JobManager::JobManager(QObject* parent, int maxThreads) : QObject(parent) {
  registerTypes();
  pool_.setMaxThreadCount(maxThreads);
}

JobManager::~JobManager() {
  cancelAll();
  pool_.waitForDone();
}

JobId JobManager::start(const QString& name, Work work) {
  auto state = std::make_shared<State>();
  state->id = nextId_.fetch_add(1);
  state->name = name;
  jobs_[state->id] = state;
  const JobId id = state->id;
  Q_EMIT started(id, name);

  QPointer<JobManager> self(this);
  pool_.start([this, self, state, work = std::move(work)]() {
    // Runs on a pool thread. Signals are posted to the manager's thread so
    // that bookkeeping stays single-threaded and order is preserved.
    auto post = [this, self](auto fn) {
      if (self) QMetaObject::invokeMethod(this, std::move(fn), Qt::QueuedConnection);
    };
    const sdw::ProgressFn progress = [&](const sdw::Progress& p) {
      if (state->stop.load(std::memory_order_relaxed)) return false;
      const auto now = std::chrono::steady_clock::now();
      const sdw::ProgressStatus s = state->meter.update(p, now);
      if (now - state->lastEmit >= std::chrono::milliseconds(progressIntervalMs_.load())) {
        state->lastEmit = now;
        post([this, u = toUpdate(state->name, state->id, s)] { Q_EMIT progressed(u); });
      }
      return !state->stop.load(std::memory_order_relaxed);
    };
    try {
      QVariant result = work(progress);
      post([this, id = state->id, result = std::move(result)] {
        retire(id);
        Q_EMIT finished(id, result);
      });
    } catch (const sdw::Cancelled&) {
      post([this, id = state->id] {
        retire(id);
        Q_EMIT cancelled(id);
      });
    } catch (const std::exception& e) {
      post([this, id = state->id, msg = QString::fromUtf8(e.what())] {
        retire(id);
        Q_EMIT failed(id, msg);
      });
    } catch (...) {
      post([this, id = state->id] {
        retire(id);
        Q_EMIT failed(id, QStringLiteral("unknown error"));
      });
    }
  });
  return id;
}

void JobManager::retire(JobId id) { jobs_.erase(id); }

void JobManager::cancel(JobId id) {
  const auto it = jobs_.find(id);
  if (it != jobs_.end()) it->second->stop.store(true);
}

void JobManager::cancelAll() {
  for (auto& [id, s] : jobs_) s->stop.store(true);
}

bool JobManager::isRunning(JobId id) const { return jobs_.count(id) != 0; }

int JobManager::runningCount() const { return static_cast<int>(jobs_.size()); }

bool JobManager::waitForDone(int msecs) { return pool_.waitForDone(msecs); }

}  // namespace sdw::app
