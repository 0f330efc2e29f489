#pragma once
// Jobs behind the Study panel: opens a study run off the GUI thread (on
// start the sample workspace's study-sample.sdw.h5 when it exists), and runs
// gpu::runStudy + gpu::writeStudy as a cancellable job ("Study", progress in
// steps of the grid) whose result opens when it is written. A cancel stops
// after the step under way and keeps the work folder (<out>.work), so a
// second Start with the same output resumes. Results reach the page as
// widgets::StudyData, converted here together with the chart values and the
// summary in words. An open replaces the one still running (its result is
// dropped).

#include "app/jobmanager.h"
#include "widgets/studydata.h"

#include <QObject>
#include <QPointer>
#include <QString>

namespace sdw::gpu {
struct StudyResult;
struct StudySettings;
}  // namespace sdw::gpu

namespace sdw::widgets {
class StudyPage;
}

namespace sdw::app {

class StudyController : public QObject {
  Q_OBJECT
 public:
  explicit StudyController(JobManager* jobs, QObject* parent = nullptr);

  void attach(widgets::StudyPage* page);
  // The default output (<dir>/study.sdw.h5) follows the workspace until the
  // user picks another.
  void setWorkspace(const QString& dir);
  // The dense model of a new study (the model loaded in the Model panel).
  void setModel(const QString& dir);

  JobId open(const QString& path);
  JobId run(const widgets::StudyRequest& request);
  void cancel();

  JobId openJob() const { return open_.id(); }
  JobId runJob() const { return run_.id(); }
  bool isBusy() const { return open_.busy() || run_.busy(); }

  // samples/workspace/study-sample.sdw.h5 (it may not exist).
  static QString sampleStudy();
  // What the page shows when no study is open.
  static QString emptyMessage();
  // The sample files a new study starts from (model, texts, prompts).
  static widgets::StudyRequest sampleRequest();
  // A study result as the page shows it: cells, charts, the settings and the
  // summary in words. `path`: the file it came from.
  static widgets::StudyData toStudyData(const gpu::StudyResult& r, const QString& path);
  // The page's request as engine settings; throws std::invalid_argument with
  // the reason (no model, bad seeds, an empty axis, ...).
  static gpu::StudySettings toSettings(const widgets::StudyRequest& request);

 Q_SIGNALS:
  void jobStarted(const QString& what);
  void jobProgress(double fraction, const QString& text);
  void studyReady(const sdw::widgets::StudyData& data);
  void jobEnded(const QString& message, bool isError);
  void status(const QString& message, bool isError);
  void runWritten(const QString& path);
  void info(const QString& message);
  void error(const QString& message);

 private:
  // A job ended: the page hears once neither job runs, the log at once.
  void ended(const QString& message, bool isError);

  QPointer<JobManager> jobs_;
  QPointer<widgets::StudyPage> page_;
  QString workspace_;
  QString defaultOut_;  // the output the workspace suggested; replaced only while the field still shows it
  QString runOut_;
  JobSlot open_;
  JobSlot run_;
  bool shown_ = false;
};

}  // namespace sdw::app
