#pragma once
// Bridges the run store (core) and the run browser (widgets): scans a
// workspace folder into display rows. Runs inside a job, off the GUI thread.

#include "core/progress.h"
#include "widgets/runchoice.h"
#include "widgets/runlistmodel.h"

#include <QMetaType>
#include <QString>
#include <QVector>

#include <filesystem>
#include <string>

namespace sdw::app {

// File names between Qt and the engine, in the local 8-bit encoding both ways.
std::filesystem::path toPath(const QString& s);
QString fromPath(const std::filesystem::path& p);
inline QString qs(const std::string& s) { return QString::fromStdString(s); }

struct WorkspaceScan {
  QString dir;
  QVector<sdw::widgets::RunRow> rows;
};

// Lists and validates every run file in `dir`. Unreadable files become rows
// with an error. Calls `progress` once per file.
WorkspaceScan scanWorkspace(const QString& dir, const sdw::ProgressFn& progress);

// Opens one run file by path (validated); the row carries the error if any.
sdw::widgets::RunRow inspectRunRow(const QString& path);

// A calibration run as the pickers offer it: path, status, source,
// tokens counted and activation sample rows, read from the run file. Throws
// on an unreadable file.
sdw::widgets::RunChoice readCalibrationChoice(const std::filesystem::path& run);

// The calibration runs of `dir` (not partial), as the pickers offer them, in
// the workspace's order; unreadable files are left out (the browser reports
// them).
QVector<sdw::widgets::RunChoice> findCalibrationRuns(const QString& dir);

// A decode-time reference run by its name ("reference", "heldout"): the
// pickers do not offer it as a calibration to prune or compare.
bool isReferenceRun(const QString& path);

// The embedded sample workspace shipped in samples/workspace.
QString sampleWorkspaceDir();

}  // namespace sdw::app

Q_DECLARE_METATYPE(sdw::app::WorkspaceScan)
Q_DECLARE_METATYPE(sdw::widgets::RunRow)
