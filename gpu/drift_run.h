#pragma once
// The drift run (run_kind "drift", docs/run-format.md "Drift runs"): writer
// and reader of what gpu/drift.h computes, together so that the layout has
// one home. Plain types, no torch, no Qt.
//
// Crossing to the GUI (rule for every run kind): gpu/ result types stay plain
// std structs; widgets display their own Qt value types (widgets/*data.h);
// app/gui converts one into the other in one adapter per type. Widgets never
// include this header.
//
//   writeDriftRun(analyzeDrift(settings), "workspace/drift.sdw.h5");
//   const DriftResult r = readDriftRun("workspace/drift.sdw.h5");

#include "gpu/drift.h"

#include <filesystem>

namespace sdw::gpu {

// Writes a run of kind "drift". Returns the final path.
std::filesystem::path writeDriftRun(const DriftResult& result, const std::filesystem::path& out,
                                    bool overwrite = false);

// Reads a drift run (complete or not) back into the result it was written
// from. Paths come back as recorded (core/paths.h); max prompts, device and
// dtype from /provenance@settings_json; the modes stored, own before shared
// (settings.modes and every model's curves in that order); values stored as
// float32 come back rounded to it. Not stored, so left empty: calibrations
// and the traces. Runs written before the decoding was recorded read as
// greedy, seed 0. Throws std::runtime_error naming the file when it is not a
// drift run, has no pruned model or no curves, or its shapes disagree.
DriftResult readDriftRun(const std::filesystem::path& path);

}  // namespace sdw::gpu
