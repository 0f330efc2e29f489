#include "app/gui/driftcontroller.h"

namespace sdw::app {

DriftController::DriftController(JobManager* jobs, QObject* parent) : QObject(parent), jobs_(jobs) {}

void DriftController::attach(widgets::AnalysisPanel* panel) { (void)panel; }

void DriftController::setWorkspace(const QString& dir) { workspace_ = dir; }

}  // namespace sdw::app
