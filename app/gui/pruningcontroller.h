#pragma once
// Jobs behind the Pruning views; wiring between JobManager and the panel.

#include "app/jobmanager.h"
#include "widgets/pruningpanel.h"

#include <QObject>
#include <QPointer>
#include <QString>

namespace sdw::app {

class PruningController : public QObject {
  Q_OBJECT
 public:
  explicit PruningController(JobManager* jobs, QObject* parent = nullptr);
  void attach(widgets::PruningPanel* panel);
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
