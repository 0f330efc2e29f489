#include "app/jobmanager.h"

#include <QMetaObject>
#include <QPointer>
#include <QRunnable>
#include <QTimer>

#include <chrono>
#include <exception>
#include <mutex>

namespace sdw::app {

struct JobManager::State {
  using Clock = std::chrono::steady_clock;
  JobId id = 0;
  QString name;
  std::atomic<bool> stop{false};
  // Only the worker thread touches the meter and lastEmit.
  sdw::ProgressMeter meter;
  Clock::time_point lastEmit{};
  // The rest only on the manager's thread.
  Hooks hooks;
  bool guarded = false;       // started with a context
  QPointer<QObject> context;
  std::weak_ptr<JobId> slot;  // the slot's id, which may have moved on to a newer job
  bool replaced = false;
  bool ended = false;
  QMetaObject::Connection contextGone;
  Clock::time_point lastDelivery{};

  // Whether the job's callbacks still want to hear of it.
  bool heard() const { return !replaced && (!guarded || context); }
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

JobId JobManager::launch(const QString& name, Work work, Hooks hooks) {
  auto state = std::make_shared<State>();
  state->id = nextId_.fetch_add(1);
  state->name = name;
  const JobId id = state->id;
  if (hooks.context) {
    state->guarded = true;
    state->context = hooks.context;
    state->contextGone = connect(hooks.context, &QObject::destroyed, this, [this, id] { cancel(id); });
  }
  if (hooks.slot) {
    if (const auto old = jobs_.find(hooks.slot->id()); old != jobs_.end()) {
      old->second->replaced = true;
      old->second->stop.store(true);
    }
    *hooks.slot->id_ = id;
    state->slot = hooks.slot->id_;
  }

  // Runs on pool threads. Everything is posted to the manager's thread, so
  // bookkeeping stays single-threaded and order is preserved.
  QPointer<JobManager> self(this);
  const auto post = [this, self](std::function<void()> fn) {
    if (self) QMetaObject::invokeMethod(this, std::move(fn), Qt::QueuedConnection);
  };
  if (hooks.channel) {
    hooks.channel->wake = [this, post, weak = std::weak_ptr<State>(state)] {
      post([this, weak] {
        if (const auto s = weak.lock()) scheduleDelivery(s);
      });
    };
  }
  state->hooks = std::move(hooks);
  jobs_[id] = state;
  Q_EMIT started(id, name);

  pool_.start([this, post, state, work = std::move(work)]() {
    const sdw::ProgressFn progress = [&](const sdw::Progress& p) {
      if (state->stop.load(std::memory_order_relaxed)) return false;
      const auto now = State::Clock::now();
      const sdw::ProgressStatus s = state->meter.update(p, now);
      if (now - state->lastEmit >= std::chrono::milliseconds(progressIntervalMs_.load())) {
        state->lastEmit = now;
        post([this, state, u = toUpdate(state->name, state->id, s)] {
          if (state->ended) return;
          Q_EMIT progressed(u);
          if (state->heard() && state->hooks.progress) state->hooks.progress(u);
        });
      }
      return !state->stop.load(std::memory_order_relaxed);
    };
    const auto fail = [this, post, state](const QString& msg) {
      post([this, state, msg] {
        end(state, [&] { Q_EMIT failed(state->id, msg); }, [&](const Hooks& h) {
          if (h.failed) h.failed(msg);
        });
      });
    };
    try {
      QVariant result = work(progress);
      post([this, state, result = std::move(result)] {
        end(state, [&] { Q_EMIT finished(state->id, result); }, [&](const Hooks& h) {
          if (h.finished) h.finished(result);
        });
      });
    } catch (const sdw::Cancelled&) {
      post([this, state] {
        end(state, [&] { Q_EMIT cancelled(state->id); }, [](const Hooks& h) {
          if (h.cancelled) h.cancelled();
        });
      });
    } catch (const std::exception& e) {
      fail(QString::fromUtf8(e.what()));
    } catch (...) {
      fail(QStringLiteral("unknown error"));
    }
  });
  return id;
}

void JobManager::scheduleDelivery(const std::shared_ptr<State>& s) {
  if (s->ended) return;
  using namespace std::chrono;
  const auto since = duration_cast<milliseconds>(State::Clock::now() - s->lastDelivery).count();
  const auto wait = s->hooks.dataIntervalMs - since;
  if (wait <= 0) deliver(s);
  else QTimer::singleShot(static_cast<int>(wait), this, [this, s] { deliver(s); });
}

void JobManager::deliver(const std::shared_ptr<State>& s) {
  if (s->ended || !s->hooks.deliver) return;
  s->lastDelivery = State::Clock::now();
  s->hooks.deliver(s->heard());
}

void JobManager::end(const std::shared_ptr<State>& s, const std::function<void()>& signal,
                     const std::function<void(const Hooks&)>& callback) {
  deliver(s);  // what the job sent before it ended comes first
  s->ended = true;
  jobs_.erase(s->id);
  disconnect(s->contextGone);
  if (const auto slot = s->slot.lock(); slot && *slot == s->id) *slot = 0;
  signal();
  const bool heard = s->heard();
  const Hooks hooks = std::exchange(s->hooks, {});
  if (heard) callback(hooks);
}

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
