#include "app/gui/pruningcontroller.h"

namespace sdw::app {

PruningController::PruningController(JobManager* jobs, QObject* parent) : QObject(parent), jobs_(jobs) {}

void PruningController::attach(widgets::PruningPanel* panel) { (void)panel; }

void PruningController::setWorkspace(const QString& dir) { workspace_ = dir; }

}  // namespace sdw::app
