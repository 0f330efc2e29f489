#pragma once
// The runs the Pruning panel shows, in its display structs
// (widgets/prunedata.h): pruning records and evaluation runs, read by their
// engine readers (gpu/pruning_run.h, gpu/evaluation_run.h) and adapted here;
// and what a workspace offers the panel. Everything here touches HDF5 through
// sdw::runstore (which serialises access) and is meant to run inside a job,
// off the GUI thread. Readers throw std::exception with a message naming
// the file and what is wrong.

#include "widgets/prunedata.h"
#include "widgets/runchoice.h"

#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QVector>

namespace sdw::gpu {
struct ModulePruneRow;
}

namespace sdw::app {

// What a workspace offers the Pruning panel.
struct PruningInputs {
  QString dir;
  QVector<widgets::RunChoice> calibrationRuns;
  QString defaultCalibration;  // checked by default ("" when none fits)
  QVector<widgets::PruningRecordChoice> records;
  QStringList evaluations;     // evaluation runs
  QString record;              // the record to show first ("" when none)
  QString evaluation;          // the evaluation to show first ("" when none)
};

// Lists the complete calibration, pruning and evaluation runs of `dir`. The
// default calibration run is the first complete fixed-text run (else any
// complete run) not named like a decode-time reference; the record shown
// first is pruning-sgpt24-fixed.sdw.h5 (else the newest record), the
// evaluation eval-sample.sdw.h5 (else the newest). Unreadable files are
// skipped (the workspace browser reports them).
PruningInputs findPruningInputs(const QString& dir);

widgets::PruningRecordData readPruningRecord(const QString& path);
// One engine row as the panel shows it (records and live pruning alike).
widgets::PruneModuleData pruneModuleData(const gpu::ModulePruneRow& row);
widgets::QualityData readEvaluationRun(const QString& path);

}  // namespace sdw::app

Q_DECLARE_METATYPE(sdw::app::PruningInputs)
