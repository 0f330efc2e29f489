#pragma once
// Runs long work off the GUI thread and turns engine progress callbacks into
// Qt signals. Each job has an id; cancel sets an atomic flag that the job's
// progress callback reports as "stop" at its next poll.

#include "core/progress.h"

#include <QObject>
#include <QString>
#include <QThreadPool>
#include <QVariant>

#include <atomic>
#include <functional>
#include <map>
#include <memory>

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

class JobManager : public QObject {
  Q_OBJECT
 public:
  // The work runs on a pool thread. It calls the ProgressFn now and then and
  // must stop (throw sdw::Cancelled, or return) when it answers false.
  using Work = std::function<QVariant(const sdw::ProgressFn&)>;

  explicit JobManager(QObject* parent = nullptr, int maxThreads = 2);
  ~JobManager() override;  // cancels every job and waits for the threads

  JobId start(const QString& name, Work work);

  // Typed convenience: the result travels as QVariant::fromValue<T>.
  template <typename T>
  JobId startTyped(const QString& name, std::function<T(const sdw::ProgressFn&)> work) {
    return start(name, [w = std::move(work)](const sdw::ProgressFn& p) {
      return QVariant::fromValue<T>(w(p));
    });
  }

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
  struct State;
  void retire(JobId id);

  QThreadPool pool_;
  std::map<JobId, std::shared_ptr<State>> jobs_;  // touched on this object's thread only
  std::atomic<JobId> nextId_{1};
  std::atomic<int> progressIntervalMs_{50};
};

}  // namespace sdw::app

Q_DECLARE_METATYPE(sdw::app::JobUpdate)
