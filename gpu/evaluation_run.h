#pragma once
// The evaluation run (run_kind "evaluation", docs/run-format.md "Evaluation
// runs"): writer and reader of what gpu/evaluation.h computes, together so
// that the layout has one home. Plain types, no torch, no Qt.
//
// Crossing to the GUI (rule for every run kind): gpu/ result types stay plain
// std structs; widgets display their own Qt value types (widgets/*data.h);
// app/gui converts one into the other in one adapter per type. Widgets never
// include this header.
//
//   writeEvaluationRun(evaluate(settings), "workspace/eval.sdw.h5");
//   const EvaluationResult r = readEvaluationRun("workspace/eval.sdw.h5");

#include "gpu/evaluation.h"

#include <filesystem>

namespace sdw::gpu {

// Writes a run of kind "evaluation". Returns the final path.
std::filesystem::path writeEvaluationRun(const EvaluationResult& result, const std::filesystem::path& out,
                                         bool overwrite = false);

// Reads a complete evaluation run back into the result it was written from.
// Paths come back as recorded (core/paths.h); the settings the /evaluation
// group does not hold (windows asked for, text seed, max prompts, stop at
// EOS, device, dtype) from /provenance@settings_json; side-by-side prompts
// are as many as stored.
// Not stored, so left empty: denseGenerationIds, and calibrations (the file
// keeps them only as words in calibration_runs / calibration_decodings, for
// other readers). Runs written before decoding, warnings and notes were
// recorded read as greedy with none. Throws std::runtime_error naming the
// file when it is not a complete evaluation run or its tables disagree.
EvaluationResult readEvaluationRun(const std::filesystem::path& path);

}  // namespace sdw::gpu
