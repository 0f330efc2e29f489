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

inline void calibrateSampleModel(const std::filesystem::path& out, int sampleRows, std::int64_t tokens = 128) {
  const std::filesystem::path samples = std::filesystem::path(SDW_SOURCE_DIR) / "samples";
  gpu::CalibrationSettings s;
  s.source = gpu::CalibrationSource::Fixed;
  s.model = samples / "model/brown-llama";
  s.corpus = samples / "corpus/brown-calib.txt";
  s.tokenBudget = tokens;
  s.window = 64;
  s.batch = 2;
  s.seed = 7;
  s.sampleRows = sampleRows;
  if (!gpu::runCalibration(s, out).complete) throw std::runtime_error("calibration incomplete: " + out.string());
}

}  // namespace sdw::testing
