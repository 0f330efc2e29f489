#pragma once
// A small fixed-text calibration of the sample model for the GUI tests of the
// activation thresholds pickers (Model panel, Drift tab, Evaluate… dialog):
// with `sampleRows` > 0 it keeps that many activation samples per input, what
// gpu::activationThresholdsFromRun reads; with 0 it keeps none, and
// thresholds from it fail with the run's own error.

#include "gpu/calibration.h"

#include <cstdint>
#include <filesystem>
#include <stdexcept>

namespace sdw::testing {

// The sample model with its calibration corpus and prompts, `source`, `tokens`, `sampleRows`;
// the rest as gpu::CalibrationSettings defaults.
inline gpu::CalibrationSettings sampleCalibrationSettings(gpu::CalibrationSource source, std::int64_t tokens,
                                                          int sampleRows) {
  const std::filesystem::path samples = std::filesystem::path(SDW_SOURCE_DIR) / "samples";
  gpu::CalibrationSettings s;
  s.source = source;
  s.model = samples / "model/brown-llama";
  s.corpus = samples / "corpus/brown-calib.txt";
  s.prompts = samples / "prompts/brown-calib.jsonl";
  s.tokenBudget = tokens;
  s.sampleRows = sampleRows;
  return s;
}

inline void calibrateSampleModel(const std::filesystem::path& out, int sampleRows, std::int64_t tokens = 128) {
  gpu::CalibrationSettings s = sampleCalibrationSettings(gpu::CalibrationSource::Fixed, tokens, sampleRows);
  s.window = 64;
  s.batch = 2;
  s.seed = 7;
  if (!gpu::runCalibration(s, out).complete) throw std::runtime_error("calibration incomplete: " + out.string());
}

}  // namespace sdw::testing
