// sdw-cli bench: the mode dispatcher (bench_modes.h), and `bench decode`:
// decode tokens/s of the model runtime on a model with random weights built
// from a config, against the HBM bandwidth limit measured in the same run.

#include "app/cli/bench_modes.h"
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

// ---------------------------------------------------------------- dispatcher
namespace {

std::vector<BenchMode>& benchModes() {
  static std::vector<BenchMode> modes;
  return modes;
}

int runBench(const Args& a) {
  const auto& modes = benchModes();
  std::string names;
  for (const auto& m : modes) names += (names.empty() ? "" : ", ") + m.name;
  if (a.positional.empty()) throw UsageError("missing MODE (one of: " + names + ")");
  const auto it = std::find_if(modes.begin(), modes.end(), [&](const BenchMode& m) { return m.name == a.positional[0]; });
  if (it == modes.end()) throw UsageError("unknown bench mode '" + a.positional[0] + "' (one of: " + names + ")");
  Args own;
  own.positional.assign(a.positional.begin() + 1, a.positional.end());
  if (static_cast<int>(own.positional.size()) > it->maxPositional)
    throw UsageError("unexpected argument '" + own.positional[static_cast<std::size_t>(it->maxPositional)] +
                     "'; usage: sdw-cli " + it->usage);
  for (const auto& [name, value] : a.values) {
    const bool mine = std::any_of(it->options.begin(), it->options.end(), [&](const OptionSpec& o) { return o.name == name; });
    if (!mine) throw UsageError("--" + name + " is not an option of 'bench " + it->name + "'; usage: sdw-cli " + it->usage);
    own.values[name] = value;
  }
  for (const auto& o : it->options)
    if (!o.defaultValue.empty() && !own.has(o.name)) own.values[o.name] = o.defaultValue;
  return it->run(own);
}

}  // namespace

RegisterBenchMode::RegisterBenchMode(BenchMode mode) {
  auto& cmds = registry();
  auto cmd = std::find_if(cmds.begin(), cmds.end(), [](const Command& c) { return c.name == "bench"; });
  if (cmd == cmds.end()) {
    cmds.push_back(Command{"bench", "benchmarks (modes: see bench --help)", "bench MODE [OPTIONS]",
                           "Runs a benchmark family; MODE picks it. Options belong to one mode each.\n\nmodes:", {},
                           1, 1, runBench});
    cmd = cmds.end() - 1;
  }
  cmd->description += "\n  " + mode.usage + "\n      " + mode.summary;
  cmd->maxPositional = std::max(cmd->maxPositional, 1 + mode.maxPositional);
  std::string modes;
  for (const auto& m : benchModes()) modes += m.name + ", ";
  cmd->summary = "benchmarks: " + modes + mode.name;
  for (const auto& o : mode.options) {
    const bool known = std::any_of(cmd->options.begin(), cmd->options.end(), [&](const OptionSpec& s) { return s.name == o.name; });
    // Defaults are applied per mode by the dispatcher, never by the shared parser.
    if (!known) cmd->options.push_back({o.name, o.valueName, "[" + mode.name + "] " + o.help + (o.defaultValue.empty() ? "" : " (default: " + o.defaultValue + ")"), ""});
  }
  benchModes().push_back(std::move(mode));
}

// ---------------------------------------------------------------- bench decode
namespace {

gpu::ModelConfig resolveConfig(const std::string& spec, std::string& name) {
  namespace fs = std::filesystem;
  if (spec == "llama3-8b" || spec == "llama-3.1-8b") {
    name = "llama-3.1-8b";
    return gpu::llama31_8bConfig();
  }
  if (fs::is_regular_file(spec)) {
    name = fs::path(spec).stem().string();
    return gpu::loadModelConfigFile(spec);
  }
  if (fs::is_directory(spec) && fs::exists(fs::path(spec) / "config.json")) {
    name = fs::path(spec).filename().string();
    return gpu::loadModelConfigFile(fs::path(spec) / "config.json");
  }
  const fs::path shipped = fs::path(SDW_SOURCE_DIR) / "resources/configs" / (spec + ".json");
  if (fs::exists(shipped)) {
    name = spec;
    return gpu::loadModelConfigFile(shipped);
  }
  throw UsageError("--config '" + spec + "': not llama3-8b, a config file, or a name in resources/configs/");
}

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
  o.config = resolveConfig(spec, o.configName);
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
  if (a.has("out")) {
    std::ofstream out(a.get("out"));
    if (!out) throw std::runtime_error("cannot write " + a.get("out"));
    out << j.dump(2) << "\n";
  }
  if (json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
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
