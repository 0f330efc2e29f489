#pragma once
// Drift runs (docs/run-format.md "Drift runs") as the drift page shows them:
// read by the engine's reader (gpu/drift_run.h) and adapted here; and what a
// workspace offers the page. Runs inside jobs, off the GUI thread; each call
// opens its own RunReader.

#include "widgets/driftdata.h"
#include "widgets/runchoice.h"

#include <QString>
#include <QStringList>
#include <QVector>

namespace sdw::app {

// Reads a drift run. Throws std::runtime_error with a message naming the
// file when it is not a readable drift run (wrong kind, missing datasets,
// shapes that do not agree).
widgets::DriftData readDriftRun(const QString& path);

// Short labels telling pruned models apart: the labels without the prefix
// and suffix they share ("sgpt24-fixed", "sgpt24-ar" -> "fixed", "AR").
QStringList distinguishingLabels(const QStringList& labels);

// What a workspace offers the drift page.
struct DriftInputs {
  QString dir;
  QVector<widgets::DriftRunChoice> runs;  // complete drift runs, newest first
  QStringList prunedDirs;                 // checkpoint folders under <dir>/pruned, by name
  QVector<widgets::RunChoice> calibrationRuns;  // for the activation thresholds picker
};
DriftInputs findDriftInputs(const QString& dir);

}  // namespace sdw::app

Q_DECLARE_METATYPE(sdw::app::DriftInputs)
