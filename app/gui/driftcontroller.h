#pragma once
// Jobs behind the Drift views; wiring between JobManager and the panel.

#include "app/jobmanager.h"
#include "widgets/analysispanel.h"

#include <QObject>
#include <QPointer>
#include <QString>

namespace sdw::app {

class DriftController : public QObject {
  Q_OBJECT
 public:
  explicit DriftController(JobManager* jobs, QObject* parent = nullptr);
  void attach(widgets::AnalysisPanel* panel);
  void setWorkspace(const QString& dir);

 Q_SIGNALS:
  void runWritten(const QString& path);
  void info(const QString& message);
  void error(const QString& message);

 private:
  QPointer<JobManager> jobs_;
  QString workspace_;
};

}  // namespace sdw::app
