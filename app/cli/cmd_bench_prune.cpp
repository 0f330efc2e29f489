// sdw-cli bench prune: time SparseGPT over every projection of a model shape
// (random weights, synthetic SPD Hessians generated on the device).

#include "app/cli/bench_modes.h"
#include "app/cli/cli_util.h"
#include "gpu/bench_prune.h"
#include "gpu/device.h"
#include "gpu/model_config.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace sdw::cli {
namespace {

namespace fs = std::filesystem;


int runBenchPrune(const Args& a) {
  const std::string device = a.get("device", "cuda");
  if (device != "cpu" && !gpu::deviceInfo().cudaAvailable) {
    std::cerr << "sdw-cli bench prune: error: no GPU: " << gpu::deviceInfo().reason
              << " (use --device cpu for a small CPU run)\n";
    return 1;
  }
  gpu::PruneBenchOptions o;
  o.device = device;
  o.config = resolveModelConfig(a.get("config", device == "cpu" ? "bench-tiny" : "llama3-8b"), o.configName);
  o.pattern = a.get("pattern", "2:4");
  o.hessianTokens = a.getInt("tokens", 4096);
  o.layers = static_cast<int>(a.getInt("layers", 0));
  o.blocksize = static_cast<int>(a.getInt("blocksize", 128));
  o.seed = static_cast<std::uint64_t>(a.getInt("seed", 0));
  if (o.hessianTokens < 1 || o.layers < 0 || o.blocksize < 1)
    throw UsageError("--tokens and --blocksize must be >= 1, --layers >= 0");
  const bool json = a.has("json");

  const auto r = gpu::runPruneBench(o, [&](const Progress& p) {
    if (!json) std::fprintf(stderr, "\r  %-14s %5.0f / %.0f modules", p.stage.c_str(), p.done, p.total);
    return true;
  });
  if (!json) std::fprintf(stderr, "\n");

  nlohmann::json kinds = nlohmann::json::array();
  for (const auto& k : r.perKind)
    kinds.push_back({{"kind", k.kind}, {"rows", k.rows}, {"cols", k.cols}, {"median_seconds", k.medianSeconds}});
  const nlohmann::json j = {{"benchmark", "prune"},
                            {"method", "sparsegpt"},
                            {"device", r.device},
                            {"device_name", gpu::describeDevice(gpu::deviceInfo())},
                            {"config", r.configName},
                            {"pattern", r.pattern},
                            {"blocksize", o.blocksize},
                            {"hessian_tokens", o.hessianTokens},
                            {"layers", r.layers},
                            {"modules", r.modules},
                            {"total_seconds", r.totalSeconds},
                            {"hessian_seconds", r.hessianSeconds},
                            {"median_layer_seconds", r.medianLayerSeconds},
                            {"min_layer_seconds", r.minLayerSeconds},
                            {"max_layer_seconds", r.maxLayerSeconds},
                            {"layer_seconds", r.layerSeconds},
                            {"per_kind", kinds},
                            {"mean_rel_output_error", r.meanRelOutputError},
                            {"damping_steps", r.dampingSteps},
                            {"command", benchCommandLine("prune", a)}};
  if (emitJson(a, j.dump(2))) return 0;
  std::printf("SparseGPT %s pruning benchmark: %s, %d layers, %d projections, %s\n", r.pattern.c_str(),
              r.configName.c_str(), r.layers, r.modules, r.device.c_str());
  std::printf("total:            %.2f s (synthetic Hessians: %.2f s more, not counted)\n", r.totalSeconds,
              r.hessianSeconds);
  std::printf("per layer:        median %.3f s (min %.3f, max %.3f)\n", r.medianLayerSeconds, r.minLayerSeconds,
              r.maxLayerSeconds);
  for (const auto& k : r.perKind)
    std::printf("  %-10s [%6lld x %6lld] median %.3f s\n", k.kind.c_str(), static_cast<long long>(k.rows),
                static_cast<long long>(k.cols), k.medianSeconds);
  std::printf("mean relative output error %.4f, damping ladder steps %d\n", r.meanRelOutputError, r.dampingSteps);
  return 0;
}

const RegisterBenchMode regPrune{BenchMode{
    "prune",
    "time SparseGPT over every projection of a model shape (random weights, synthetic Hessians)",
    "bench prune [--config llama3-8b|NAME|FILE] [--pattern 2:4] [--layers N] [--tokens 4096] "
    "[--device cuda|cpu] [--json]",
    {{"config", "NAME|FILE", "model shape: llama3-8b, a name in resources/configs/ or a config.json", ""},
     {"pattern", "P", "2:4, 4:8, 8:16, 16:32 or unstructured50", "2:4"},
     {"layers", "N", "prune only the first N layers (0: all)", "0"},
     {"tokens", "N", "rows of the random X behind each synthetic Hessian", "4096"},
     {"blocksize", "N", "SparseGPT columns per block", "128"},
     {"device", "DEV", "cuda or cpu (cpu defaults to the bench-tiny shape)", "cuda"},
     {"seed", "S", "seed of the random weights and Hessians", "0"},
     {"out", "FILE", "also write the JSON report to FILE", ""},
     {"json", "", "machine-readable output", ""}},
    0,
    runBenchPrune}};

}  // namespace
}  // namespace sdw::cli
