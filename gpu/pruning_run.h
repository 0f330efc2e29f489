#pragma once
// The pruning record (run_kind "pruning", docs/run-format.md "Pruning runs"):
// what pruneModel was asked, which calibration it read, and one row per
// pruned projection. Writer and reader live together so that the layout has
// one home. Plain types, no torch, no Qt.
//
// Crossing to the GUI (rule for every run kind, and for the kernel
// benchmark's rows): gpu/ result types stay plain std structs; widgets
// display their own Qt value types (widgets/*data.h; gpu::BenchRow as
// widgets::BenchRowData, adapted by bench::benchRowData in
// app/gui/benchmarkcontroller.cpp); app/gui converts one into the other in
// one adapter per type. Widgets never include this header, nor gpu/bench.h
// for results.
//
//   writePruningRun({settings, info, result}, "pruned/pruning.sdw.h5");
//   const PruningRun r = readPruningRun("pruned/pruning.sdw.h5");

#include "core/run_decoding.h"
#include "gpu/pruning.h"

#include <cstdint>
#include <filesystem>
#include <string>

namespace sdw::gpu {

// What the record says about the calibration run the statistics came from.
struct PruneRecordInfo {
  std::string calibrationRunId, calibrationSource;
  std::string calibrationModelDir;  // not stored in the record
  std::int64_t calibrationTokens = 0;
  // What the calibration decoded (and from which prompts): recorded in the
  // record and the checkpoint's metadata, so that an evaluation or a drift
  // analysis of the pruned model can compare it with its own decoding.
  RunDecoding calibration;
};

struct PruningRun {
  // model, calibration, method, pattern, order, percdamp, blocksize, device,
  // out. Read back: paths as recorded (core/paths.h), the pattern as its
  // name ("2:4"); record is the file read, overwrite false.
  PruneSettings settings;
  PruneRecordInfo info;
  // modules, checkpoint, sparseFile (as recorded), seconds, recaptureSeconds.
  // Read back: record is the file read, calibrationRunId the info's.
  PruneResult result;
};

// Writes the record to `file` (settings.overwrite replaces an existing one).
void writePruningRun(const PruningRun& run, const std::filesystem::path& file);

// Reads a complete record. Attributes a record lacks keep their defaults;
// throws std::runtime_error naming the file when it is not a complete
// pruning run or its module tables differ in length.
PruningRun readPruningRun(const std::filesystem::path& file);

}  // namespace sdw::gpu
