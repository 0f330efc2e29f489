// sdw-cli bench decode:
// decode tokens/s of the model runtime on a model with random weights built
// from a config, against the HBM bandwidth limit measured in the same run.

#include "app/cli/bench_modes.h"
#include "app/cli/cli_util.h"
#include "gpu/bench_decode.h"
#include "gpu/device.h"
#include "gpu/model_config.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace sdw::cli {

// ---------------------------------------------------------------- bench decode
namespace {


double gb(std::uint64_t bytes) { return static_cast<double>(bytes) / 1e9; }

int runDecode(const Args& a) {
  const std::string device = a.get("device", "cuda");
  if (device != "cpu" && !gpu::deviceInfo().cudaAvailable) {
    std::cerr << "sdw-cli bench decode: error: no GPU: " << gpu::deviceInfo().reason
              << " (use --device cpu for a small CPU run)\n";
    return 1;
  }
  gpu::DecodeBenchOptions o;
  o.device = device;
  // On CPU the default is a tiny shape: an 8B model in fp32 does not fit a desk machine.
  const std::string spec = a.get("config", device == "cpu" ? "bench-tiny" : "llama3-8b");
  o.config = resolveModelConfig(spec, o.configName);
  o.dtype = gpu::canonicalDtype(a.get("dtype", device == "cpu" ? "float32" : "bfloat16"));
  o.context = static_cast<int>(a.getInt("context", 512));
  o.tokens = static_cast<int>(a.getInt("tokens", 50));
  o.warmup = static_cast<int>(a.getInt("warmup", 50));
  o.batch = static_cast<int>(a.getInt("batch", 1));
  o.seed = static_cast<std::uint64_t>(a.getInt("seed", 0));
  if (o.context < 1 || o.tokens < 1 || o.warmup < 0 || o.batch < 1)
    throw UsageError("--context, --tokens and --batch must be >= 1, --warmup >= 0");
  const bool json = a.has("json");

  const auto r = gpu::runDecodeBench(o, [&](const Progress& p) {
    if (!json) std::fprintf(stderr, "\r  %-16s %4.0f / %.0f steps", p.stage.c_str(), p.done, p.total);
    return true;
  });
  if (!json) std::fprintf(stderr, "\n");

  nlohmann::json j = {{"benchmark", "decode"},
                      {"device", r.device},
                      {"config", r.configName},
                      {"architecture", o.config.architectureName},
                      {"parameters", r.parameters},
                      {"dtype", r.dtype},
                      {"context", r.context},
                      {"batch", r.batch},
                      {"warmup_steps", r.warmup},
                      {"timed_steps", r.tokens},
                      {"median_ms", r.medianMs},
                      {"p10_ms", r.p10Ms},
                      {"p90_ms", r.p90Ms},
                      {"mean_ms", r.meanMs},
                      {"tokens_per_second", r.tokensPerSecond},
                      {"prefill_ms", r.prefillMs},
                      {"setup_seconds", r.setupSeconds},
                      {"weight_bytes_per_step", r.weightBytesPerStep},
                      {"kv_bytes_per_step", r.kvBytesPerStep},
                      {"bytes_per_step", r.bytesPerStep},
                      {"achieved_gb_per_s", r.achievedGBs},
                      {"measured_read_gb_per_s", r.measuredReadGBs},
                      {"measured_copy_gb_per_s", r.measuredCopyGBs},
                      {"bandwidth_limit_tokens_per_second", r.limitTokensPerSecond},
                      {"ratio_to_bandwidth_limit", r.ratioToLimit},
                      {"step_ms", r.stepMs},
                      {"method", r.method}};
  if (emitJson(a, j.dump(2))) return 0;
  std::printf("decode benchmark: %s (%s, %.2fB parameters), %s, context %d, batch %d\n", r.configName.c_str(),
              o.config.architectureName.c_str(), static_cast<double>(r.parameters) / 1e9, r.dtype.c_str(), r.context,
              r.batch);
  std::printf("device:            %s\n", r.device.c_str());
  std::printf("step time:         median %.3f ms (p10 %.3f, p90 %.3f) over %d steps after %d warm-up\n", r.medianMs,
              r.p10Ms, r.p90Ms, r.tokens, r.warmup);
  std::printf("tokens/s:          %.1f\n", r.tokensPerSecond);
  std::printf("bytes per step:    %.3f GB (weights %.3f GB + KV cache %.3f GB)\n", gb(r.bytesPerStep),
              gb(r.weightBytesPerStep), gb(r.kvBytesPerStep));
  std::printf("achieved:          %.1f GB/s\n", r.achievedGBs);
  std::printf("measured memory:   read %.1f GB/s (sum reduction), copy %.1f GB/s\n", r.measuredReadGBs,
              r.measuredCopyGBs);
  std::printf("bandwidth limit:   %.1f tokens/s; this run reaches %.1f%% of it\n", r.limitTokensPerSecond,
              100.0 * r.ratioToLimit);
  return 0;
}

const RegisterBenchMode regDecode{BenchMode{
    "decode",
    "decode tokens/s of the model runtime (random weights from a config) vs the HBM bandwidth limit",
    "bench decode [--config llama3-8b|NAME|FILE] [--context 512] [--tokens 50] [--warmup 50] [--batch 1] "
    "[--dtype bfloat16] [--device cuda|cpu] [--out FILE] [--json]",
    {{"config", "NAME|FILE", "model shape: llama3-8b, a name in resources/configs/ (qwen3-14b, qwen3-32b, bench-tiny) or a config.json", ""},
     {"context", "N", "tokens already in the KV cache", "512"},
     {"tokens", "N", "timed decode steps", "50"},
     {"warmup", "N", "untimed decode steps first", "50"},
     {"batch", "N", "sequences decoded together", "1"},
     {"dtype", "DTYPE", "float32, bfloat16 or float16 (default: bfloat16 on CUDA, float32 on CPU)", ""},
     {"device", "DEV", "cuda or cpu (cpu defaults to the bench-tiny shape)", "cuda"},
     {"seed", "S", "seed of the random weights and prompt", "0"},
     {"out", "FILE", "also write the JSON report to FILE", ""},
     {"json", "", "machine-readable output", ""}},
    0,
    runDecode}};

}  // namespace
}  // namespace sdw::cli
