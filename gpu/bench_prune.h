#pragma once
// Time to prune a whole model with SparseGPT: random weights of a model shape
// (e.g. Llama-3.1-8B) and synthetic SPD Hessians H = 2 X^T X / T of random X
// generated on the device, for every attention and MLP projection. Speed does
// not depend on the values; the solver is the one pruneModel runs.

#include "core/progress.h"
#include "gpu/model_config.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sdw::gpu {

struct PruneBenchOptions {
  ModelConfig config;
  std::string configName;
  std::string pattern = "2:4";
  std::string device = "cuda";
  std::int64_t hessianTokens = 4096;  // rows of the random X behind each H
  int layers = 0;                      // 0: every layer of the config
  double percdamp = 0.01;
  int blocksize = 128;
  std::uint64_t seed = 0;
};

struct PruneBenchModule {
  std::string kind;  // "q_proj", ...
  std::int64_t rows = 0, cols = 0;
  double medianSeconds = 0;  // over layers
};

struct PruneBenchResult {
  std::string device, configName, pattern;
  int layers = 0, modules = 0;
  double totalSeconds = 0;        // SparseGPT over every module (synchronised), Hessian generation excluded
  double hessianSeconds = 0;      // generating the synthetic Hessians
  double medianLayerSeconds = 0;
  double minLayerSeconds = 0, maxLayerSeconds = 0;
  std::vector<double> layerSeconds;
  std::vector<PruneBenchModule> perKind;
  double meanRelOutputError = 0;  // sanity: of the random problems
  int dampingSteps = 0;           // summed over modules
};

PruneBenchResult runPruneBench(const PruneBenchOptions& options, const ProgressFn& progress = {});

}  // namespace sdw::gpu
