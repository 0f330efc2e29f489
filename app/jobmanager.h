#pragma once
// Runs long work off the GUI thread and turns engine progress callbacks into
// Qt signals. Each job has an id; cancel sets an atomic flag that the job's
// progress callback reports as "stop" at its next poll.
//
// A job says, where it is started, what becomes of it (Job below): its
// progress, the values it sends while it runs (a typed channel, delivered in
// order and coalesced to a bounded rate when asked), and its end: exactly one
// of finished (with the result), failed or cancelled. A job started in a
// JobSlot replaces the slot's previous job, which is cancelled and heard of
// no more: its late values, progress and end never reach its callbacks (the
// way KDAB Hotspot's JobTracker drops superseded results). The signals
// report every job, for views of all of them (the Jobs dock).

#include "core/progress.h"

#include <QObject>
#include <QString>
#include <QThreadPool>
#include <QVariant>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

namespace sdw::app {

using JobId = quint64;

// One progress sample as the jobs view shows it. A value type.
struct JobUpdate {
  JobId id = 0;
  QString name;
  QString stage;
  QString unit;
  double done = 0;
  double total = 0;
  double fraction = -1;      // -1 when the total is unknown
  double ratePerSecond = 0;
  double etaSeconds = -1;    // -1 when unknown
  double elapsedSeconds = 0;
  int part = 0;              // sdw::Progress::part / parts / partLabel (parts 0: none)
  int parts = 0;
  QString partLabel;
};

namespace detail {
// What a JobChannel's values wait in between the job's thread and the
// manager's. `wake` asks the manager's thread for a delivery; it is set
// before the work starts and called once per delivery at most.
struct ChannelBase {
  virtual ~ChannelBase() = default;
  std::mutex mutex;
  bool woken = false;  // a delivery has been asked for and not made yet
  std::function<void()> wake;
};

template <typename D>
struct ChannelQueue : ChannelBase {
  std::vector<D> pending;
  std::vector<D> take() {
    std::lock_guard lock(mutex);
    woken = false;
    return std::exchange(pending, {});
  }
};
}  // namespace detail

// A running job's way to the GUI thread: what `send` gets reaches the job's
// `data` callback after everything sent before it, in batches of what came
// since the previous delivery. Whatever was sent before the work returned (or
// threw) is delivered before the job's end callback.
template <typename D>
class JobChannel {
 public:
  explicit JobChannel(std::shared_ptr<detail::ChannelQueue<D>> queue) : queue_(std::move(queue)) {}
  void send(D value) const {
    bool wake = false;
    {
      std::lock_guard lock(queue_->mutex);
      queue_->pending.push_back(std::move(value));
      wake = !std::exchange(queue_->woken, true);
    }
    if (wake) queue_->wake();
  }

 private:
  std::shared_ptr<detail::ChannelQueue<D>> queue_;
};

// A job that sends nothing while it runs.
struct NoData {};

// One kind of job of an owner ("the scan", "the load"): the id of the one
// running, 0 when none. Starting a job in a slot that holds one replaces it.
// Touched on the manager's thread only.
class JobSlot {
 public:
  JobSlot() = default;
  JobSlot(const JobSlot&) = delete;
  JobSlot& operator=(const JobSlot&) = delete;
  JobId id() const { return *id_; }
  bool busy() const { return *id_ != 0; }

 private:
  friend class JobManager;
  std::shared_ptr<JobId> id_ = std::make_shared<JobId>(0);
};

// A job and what becomes of it. Every callback is optional and runs on the
// manager's thread; with a context, only while the context lives (its
// destruction cancels the job). The slot is cleared before the end callback.
template <typename Result, typename Data = NoData>
struct Job {
  using Work = std::conditional_t<std::is_same_v<Data, NoData>, std::function<Result(const sdw::ProgressFn&)>,
                                  std::function<Result(const sdw::ProgressFn&, const JobChannel<Data>&)>>;
  QString name{};
  JobSlot* slot = nullptr;
  QObject* context = nullptr;
  Work work{};
  std::function<void(const JobUpdate&)> progress{};
  std::function<void(const std::vector<Data>&)> data{};
  int dataIntervalMs = 0;  // > 0: deliveries at least this far apart (high-rate values coalesce)
  std::function<void(const Result&)> finished{};
  std::function<void(const QString&)> failed{};
  std::function<void()> cancelled{};
};

class JobManager : public QObject {
  Q_OBJECT
 public:
  explicit JobManager(QObject* parent = nullptr, int maxThreads = 2);
  ~JobManager() override;  // cancels every job and waits for the threads

  // The work runs on a pool thread. It calls the ProgressFn now and then and
  // must stop (throw sdw::Cancelled, or return) when it answers false. The
  // result travels as QVariant::fromValue<Result> (a registered metatype).
  template <typename Result, typename Data>
  JobId start(Job<Result, Data> job);

  void cancel(JobId id);
  void cancelAll();
  bool isRunning(JobId id) const;
  int runningCount() const;
  // Blocks until every job has ended; false on timeout.
  bool waitForDone(int msecs = -1);

  // Minimum interval between two progress signals of one job (the final state
  // is always delivered through finished/failed/cancelled).
  void setProgressInterval(int msecs) { progressIntervalMs_ = msecs; }

 Q_SIGNALS:
  void started(sdw::app::JobId id, const QString& name);
  void progressed(const sdw::app::JobUpdate& update);
  void finished(sdw::app::JobId id, const QVariant& result);
  void failed(sdw::app::JobId id, const QString& error);
  void cancelled(sdw::app::JobId id);

 private:
  using Work = std::function<QVariant(const sdw::ProgressFn&)>;
  // A Job's callbacks with its types erased.
  struct Hooks {
    JobSlot* slot = nullptr;
    QObject* context = nullptr;
    std::function<void(const JobUpdate&)> progress;
    std::shared_ptr<detail::ChannelBase> channel;  // null: the job sends nothing
    std::function<void(bool hand)> deliver;         // takes what the channel holds; hands it over when `hand`
    int dataIntervalMs = 0;
    std::function<void(const QVariant&)> finished;
    std::function<void(const QString&)> failed;
    std::function<void()> cancelled;
  };
  struct State;
  JobId launch(const QString& name, Work work, Hooks hooks);
  void scheduleDelivery(const std::shared_ptr<State>& s);
  void deliver(const std::shared_ptr<State>& s);
  void end(const std::shared_ptr<State>& s, const std::function<void()>& signal,
           const std::function<void(const Hooks&)>& callback);

  QThreadPool pool_;
  std::map<JobId, std::shared_ptr<State>> jobs_;  // touched on this object's thread only
  std::atomic<JobId> nextId_{1};
  std::atomic<int> progressIntervalMs_{50};
};

template <typename Result, typename Data>
JobId JobManager::start(Job<Result, Data> job) {
  Hooks h;
  h.slot = job.slot;
  h.context = job.context;
  h.progress = std::move(job.progress);
  if (job.finished) h.finished = [f = std::move(job.finished)](const QVariant& v) { f(v.value<Result>()); };
  h.failed = std::move(job.failed);
  h.cancelled = std::move(job.cancelled);
  Work work;
  if constexpr (std::is_same_v<Data, NoData>) {
    work = [w = std::move(job.work)](const sdw::ProgressFn& p) { return QVariant::fromValue<Result>(w(p)); };
  } else {
    auto queue = std::make_shared<detail::ChannelQueue<Data>>();
    h.channel = queue;
    h.dataIntervalMs = job.dataIntervalMs;
    h.deliver = [queue, f = std::move(job.data)](bool hand) {
      const std::vector<Data> batch = queue->take();
      if (hand && f && !batch.empty()) f(batch);
    };
    work = [w = std::move(job.work), queue](const sdw::ProgressFn& p) {
      return QVariant::fromValue<Result>(w(p, JobChannel<Data>(queue)));
    };
  }
  return launch(job.name, std::move(work), std::move(h));
}

}  // namespace sdw::app

Q_DECLARE_METATYPE(sdw::app::JobUpdate)
