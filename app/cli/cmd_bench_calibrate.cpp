// sdw-cli bench calibrate: AR calibration throughput (decode tokens/s) of a
// random-weight model in both capture modes, and the time 1M decode tokens
// would take, extrapolated from the measured run.

#include "app/cli/bench_modes.h"
#include "app/cli/cli_util.h"
#include "gpu/bench_calibrate.h"
#include "gpu/device.h"
#include "gpu/model_config.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace sdw::cli {
namespace {

int runBenchCalibrate(const Args& a) {
  const std::string device = a.get("device", "cuda");
  if (device != "cpu" && !gpu::deviceInfo().cudaAvailable) {
    std::cerr << "sdw-cli bench calibrate: error: no GPU: " << gpu::deviceInfo().reason
              << " (use --device cpu for a small CPU run)\n";
    return 1;
  }
  gpu::CalibrateBenchOptions o;
  o.device = device;
  o.checkpoint = a.get("model", "");
  if (!o.checkpoint.empty() && a.has("config")) throw UsageError("--model and --config: give one of them");
  if (o.checkpoint.empty())
    o.config = resolveModelConfig(a.get("config", device == "cpu" ? "bench-tiny" : "llama3-8b"), o.configName);
  else {
    const auto dir = std::filesystem::path(o.checkpoint).lexically_normal();
    o.configName = (dir.has_filename() ? dir : dir.parent_path()).filename().string();
  }
  o.dtype = gpu::canonicalDtype(a.get("dtype", device == "cpu" ? "float32" : "bfloat16"));
  o.tokens = a.getInt("tokens", 2048);
  o.exactTokens = a.getInt("exact-tokens", 256);
  o.batch = static_cast<int>(a.getInt("batch", 16));
  o.exactBatch = static_cast<int>(a.getInt("exact-batch", 1));
  o.maxNewTokens = static_cast<int>(a.getInt("max-new-tokens", 128));
  o.promptTokens = static_cast<int>(a.getInt("prompt-tokens", 32));
  o.seed = static_cast<std::uint64_t>(a.getInt("seed", 0));
  const std::string capture = a.get("capture", "both");
  if (capture != "both" && capture != "exact" && capture != "reforward")
    throw UsageError("--capture expects exact, reforward or both, got '" + capture + "'");
  o.exact = capture != "reforward";
  o.reforward = capture != "exact";
  o.checkAgreement = o.exact && !a.has("no-check");
  if (o.tokens < 1 || o.exactTokens < 1 || o.batch < 1 || o.exactBatch < 1 || o.promptTokens < 1 || o.maxNewTokens < 2)
    throw UsageError("--tokens, --exact-tokens, --batch, --exact-batch, --prompt-tokens must be >= 1, --max-new-tokens >= 2");
  const bool json = a.has("json");

  const auto r = gpu::runCalibrateBench(o, [&](const Progress& p) {
    if (!json) std::fprintf(stderr, "\r  %-10s %6.0f / %.0f decode tokens", p.stage.c_str(), p.done, p.total);
    return true;
  });
  if (!json) std::fprintf(stderr, "\n");

  nlohmann::json caps = nlohmann::json::array();
  for (const auto& c : r.captures)
    caps.push_back({{"capture", gpu::captureModeName(c.capture)},
                    {"batch", c.batch},
                    {"decode_tokens", c.tokens},
                    {"generations", c.generations},
                    {"seconds", c.seconds},
                    {"generate_seconds", c.generateSeconds},
                    {"generate_seconds_per_call", c.generateSecondsPerCall},
                    {"generate_phase_seconds",
                     {{"launch", c.launchSeconds}, {"readback", c.readbackSeconds}, {"sample", c.sampleSeconds}}},
                    {"engine", c.engine},
                    {"forward_seconds", c.forwardSeconds},
                    {"decode_tokens_per_second", c.tokensPerSecond},
                    {"extrapolated_seconds", c.extrapolatedSeconds}});
  nlohmann::json perInput = nlohmann::json::array();  // in the model's order
  for (const auto& [name, rel] : r.agreementPerInput) perInput.push_back({{"input", name}, {"rel_frobenius", rel}});
  nlohmann::json j = {{"benchmark", "calibrate"},
                      {"device", r.device},
                      {"config", r.configName},
                      {"parameters", r.parameters},
                      {"dtype", r.dtype},
                      {"max_new_tokens", o.maxNewTokens},
                      {"prompt_tokens", o.promptTokens},
                      {"accumulator_bytes", r.accumulatorBytes},
                      {"setup_seconds", r.setupSeconds},
                      {"extrapolate_tokens", r.extrapolateTokens},
                      {"captures", caps},
                      {"reforward_speedup_over_exact", r.speedup},
                      {"exact_vs_reforward_rel_frobenius", r.agreement},
                      {"exact_vs_reforward_per_input", perInput},
                      {"method", r.method},
                      {"command", benchCommandLine("calibrate", a)}};
  if (emitJson(a, j.dump(2))) return 0;
  std::printf("calibration benchmark: %s (%.2fB parameters), %s, %s\n", r.configName.c_str(),
              static_cast<double>(r.parameters) / 1e9, r.dtype.c_str(), r.device.c_str());
  std::printf("accumulators:      %.2f GB fp32 (sum x x^T + sum x^2, every shared input)\n",
              static_cast<double>(r.accumulatorBytes) / 1e9);
  for (const auto& c : r.captures)
    std::printf("%-10s batch %-3d %7lld decode tokens in %8.2f s: %9.1f tokens/s (generation %.2f s, re-forward %.2f s); "
                "%lld tokens: %s\n",
                gpu::captureModeName(c.capture).c_str(), c.batch, static_cast<long long>(c.tokens), c.seconds, c.tokensPerSecond,
                c.generateSeconds, c.forwardSeconds, static_cast<long long>(r.extrapolateTokens),
                humanDuration(c.extrapolatedSeconds).c_str());
  if (r.speedup > 0) std::printf("re-forward over exact: %.1fx\n", r.speedup);
  if (r.agreement >= 0)
    std::printf("exact vs re-forward of the same generations: max relative Frobenius %.2e\n", r.agreement);
  return 0;
}

const RegisterBenchMode regCalibrate{BenchMode{
    "calibrate",
    "AR calibration throughput (decode tokens/s) in exact and re-forward capture, extrapolated to 1M tokens",
    "bench calibrate [--config llama3-8b|NAME|FILE | --model DIR] [--tokens 2048] [--exact-tokens 256] [--batch 16] "
    "[--exact-batch 1] [--capture exact|reforward|both] [--device cuda|cpu] [--json]",
    {{"config", "NAME|FILE", "model shape: llama3-8b, a name in resources/configs/ or a config.json", ""},
     {"model", "DIR", "a checkpoint's own weights instead of random ones (prompts stay random token ids)", ""},
     {"tokens", "N", "decode tokens measured with re-forward capture (rounded to whole batches)", "2048"},
     {"exact-tokens", "N", "decode tokens measured with exact capture (rounded to whole batches)", "256"},
     {"batch", "N", "prompts per generation call (re-forward)", "16"},
     {"exact-batch", "N", "prompts per generation call (exact)", "1"},
     {"max-new-tokens", "N", "tokens generated per prompt", "128"},
     {"prompt-tokens", "N", "random prompt length", "32"},
     {"capture", "MODE", "exact, reforward or both", "both"},
     {"no-check", "", "skip re-forwarding the exact run to compare the sums", ""},
     {"dtype", "DTYPE", "float32, bfloat16 or float16 (default: bfloat16 on CUDA, float32 on CPU)", ""},
     {"device", "DEV", "cuda or cpu (cpu defaults to the bench-tiny shape)", "cuda"},
     {"seed", "S", "seed of the random weights and prompts", "0"},
     {"out", "FILE", "also write the JSON report to FILE", ""},
     {"json", "", "machine-readable output", ""}},
    0,
    runBenchCalibrate}};

}  // namespace
}  // namespace sdw::cli
