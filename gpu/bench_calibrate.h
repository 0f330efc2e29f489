#pragma once
// AR calibration throughput: a model with random weights built from a config
// (speed does not depend on values) generates from random prompts and its
// decode positions are accumulated into the full fp32 statistics, in both
// capture modes: exact (observed during KV-cache decoding, at the batch real
// decoding uses) and re-forward (batched generation, then one teacher-forced
// pass). Reports decode tokens/s, the time 1M decode tokens would take, and
// how closely the two modes agree on the measured exact run. Plain types.

#include "core/progress.h"
#include "gpu/calibration.h"
#include "gpu/model_config.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sdw::gpu {

struct CalibrateBenchOptions {
  ModelConfig config;
  std::string configName;
  std::string checkpoint;  // a checkpoint directory instead of random weights (config then ignored)
  std::string device = "cuda";
  std::string dtype = "bfloat16";
  // Decode tokens to measure, rounded to whole batches of batch x (maxNewTokens - 1).
  std::int64_t tokens = 2048;       // re-forward capture
  std::int64_t exactTokens = 256;   // exact capture
  int batch = 16;                   // prompts per generation call, re-forward
  int exactBatch = 1;               // prompts per generation call, exact
  int promptTokens = 32;            // random prompt length
  int maxNewTokens = 128;
  bool exact = true;
  bool reforward = true;
  bool checkAgreement = true;       // re-forward the exact run's generations and compare
  std::uint64_t seed = 0;
  std::int64_t extrapolateTokens = 1'000'000;
};

struct CaptureBenchResult {
  CaptureMode capture = CaptureMode::Reforward;
  int batch = 0;
  std::int64_t tokens = 0;          // decode positions accumulated
  std::int64_t generations = 0;
  double seconds = 0;               // wall time, device synchronised
  double generateSeconds = 0;
  std::vector<double> generateSecondsPerCall;  // each batch's generation, in order
  double forwardSeconds = 0;
  // The generation calls' host time by phase: issuing steps, waiting for the device and
  // copying logits back, drawing tokens (GenerationResult).
  double launchSeconds = 0, readbackSeconds = 0, sampleSeconds = 0;
  double tokensPerSecond = 0;
  std::string engine;               // how the generation decoded (Model::engineDescription)
  double extrapolatedSeconds = 0;   // for extrapolateTokens
};

struct CalibrateBenchResult {
  std::string device;
  std::string configName;
  std::string dtype;
  std::int64_t parameters = 0;
  std::uint64_t accumulatorBytes = 0;
  double setupSeconds = 0;
  std::vector<CaptureBenchResult> captures;
  double speedup = 0;               // re-forward tokens/s over exact tokens/s (both measured)
  double agreement = -1;            // max relative Frobenius, exact vs re-forward of the same generations; -1: not run
  // Per shared projection input, in the model's order: where the difference grows (its layer).
  std::vector<std::pair<std::string, double>> agreementPerInput;
  std::int64_t extrapolateTokens = 0;
  std::string method;
};

// Throws std::runtime_error (no GPU for "cuda", ...) and sdw::Cancelled.
CalibrateBenchResult runCalibrateBench(const CalibrateBenchOptions& options, const ProgressFn& progress = {});

}  // namespace sdw::gpu
