#include "gpu/bench_prune.h"

#include "gpu/model_internal.h"
#include "gpu/prune_ops.h"

#include "core/stats.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#ifdef SDW_TORCH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

#include <algorithm>
#include <chrono>
#include <map>
#include <stdexcept>

namespace sdw::gpu {
namespace {

using Clock = std::chrono::steady_clock;

void sync(const c10::Device& d) {
#ifdef SDW_TORCH_CUDA
  if (d.is_cuda()) c10::cuda::device_synchronize();
#else
  (void)d;
#endif
}

}  // namespace

PruneBenchResult runPruneBench(const PruneBenchOptions& o, const ProgressFn& progress) {
  c10::NoGradGuard noGrad;
  const c10::Device dev = parseDevice(o.device);
  const PruningPattern pattern = parsePruningPattern(o.pattern);
  SparseGptOptions so;
  so.percdamp = o.percdamp;
  so.blocksize = o.blocksize;
  so.device = o.device;
  const ModelConfig& c = o.config;
  const int layers = o.layers > 0 ? std::min<int>(o.layers, static_cast<int>(c.numLayers)) : static_cast<int>(c.numLayers);

  PruneBenchResult r;
  r.device = o.device;
  r.configName = o.configName;
  r.pattern = pattern.name();
  r.layers = layers;
  at::manual_seed(o.seed);
  const auto fopts = at::TensorOptions().dtype(at::kFloat).device(dev);

  // The projections of one layer in checkpoint order, with the input they read.
  std::vector<ModuleInfo> mods;
  for (const auto& m : projectionModules(c, "float32"))
    if (m.layer == 0) mods.push_back(m);
  std::map<std::string, std::vector<double>> kindSeconds;
  double relSum = 0;
  const double total = static_cast<double>(layers) * static_cast<double>(mods.size());
  for (int l = 0; l < layers; ++l) {
    // Synthetic Hessians, one per distinct input width (the shared inputs of
    // a layer: hidden for q/k/v/o/gate/up, intermediate for down): X with
    // uneven column scales and a shared component, like real activations.
    const auto th = Clock::now();
    std::map<std::int64_t, at::Tensor> hs;
    for (const auto& m : mods) {
      if (hs.count(m.inFeatures)) continue;
      const std::int64_t d = m.inFeatures;
      const at::Tensor scale = at::randn({1, d}, fopts).mul_(0.5).exp_();
      const at::Tensor x = (at::randn({o.hessianTokens, d}, fopts) + 0.5 * at::randn({o.hessianTokens, 1}, fopts)) * scale;
      hs[d] = x.t().matmul(x).mul_(2.0 / static_cast<double>(o.hessianTokens));
    }
    sync(dev);
    r.hessianSeconds += std::chrono::duration<double>(Clock::now() - th).count();

    double layerSec = 0;
    for (const auto& m : mods) {
      const at::Tensor w = at::randn({m.outFeatures, m.inFeatures}, fopts).mul_(0.02);
      sync(dev);
      const auto t0 = Clock::now();
      const SparseGptOutcome out = sparseGptPrune(w, hs.at(m.inFeatures), pattern, so);
      sync(dev);
      const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
      SolveResult metrics;
      fillErrorMetrics(metrics, w, out.w, hs.at(m.inFeatures));
      relSum += metrics.relOutputError;
      r.dampingSteps += out.dampingSteps;
      layerSec += sec;
      kindSeconds[m.kind].push_back(sec);
      ++r.modules;
      reportOrThrow(progress, Progress{static_cast<double>(r.modules), total, "modules",
                                       "layer " + std::to_string(l + 1) + "/" + std::to_string(layers)});
    }
    r.layerSeconds.push_back(layerSec);
    r.totalSeconds += layerSec;
  }
  r.medianLayerSeconds = stats::median(r.layerSeconds, 0.0);
  r.minLayerSeconds = *std::min_element(r.layerSeconds.begin(), r.layerSeconds.end());
  r.maxLayerSeconds = *std::max_element(r.layerSeconds.begin(), r.layerSeconds.end());
  r.meanRelOutputError = r.modules ? relSum / r.modules : 0;
  for (const auto& m : mods)
    r.perKind.push_back({m.kind, m.outFeatures, m.inFeatures, stats::median(kindSeconds[m.kind], 0.0)});
  return r;
}

}  // namespace sdw::gpu
