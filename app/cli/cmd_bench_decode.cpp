// sdw-cli bench decode:
// decode tokens/s of the decode engine (or the eager forward) on models with
// random weights built from configs, per linear, N:M pattern and batch, against
// the HBM bandwidth limit measured in the same run; a grid of them in one run.

#include "app/cli/bench_modes.h"
#include "app/cli/cli_util.h"
#include "gpu/bench_decode.h"
#include "gpu/bench_decode_report.h"
#include "gpu/device.h"
#include "gpu/model_config.h"
#include "gpu/spmv.h"
#include "core/sparse_format.h"

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

struct Cell {
  std::string config;
  gpu::ModelConfig shape;
  std::string linear;  // cublas, dense, sparse, eager
  std::string pattern;
};

int runDecode(const Args& a) {
  const std::string device = a.get("device", "cuda");
  if (device != "cpu" && !gpu::deviceInfo().cudaAvailable) {
    std::cerr << "sdw-cli bench decode: error: no GPU: " << gpu::deviceInfo().reason
              << " (use --device cpu for a small CPU run)\n";
    return 1;
  }
  gpu::DecodeBenchOptions o;
  o.device = device;
  o.dtype = gpu::canonicalDtype(a.get("dtype", device == "cpu" ? "float32" : "bfloat16"));
  o.context = static_cast<int>(a.getInt("context", 512));
  o.tokens = static_cast<int>(a.getInt("tokens", 50));
  o.warmup = static_cast<int>(a.getInt("warmup", 50));
  o.seed = static_cast<std::uint64_t>(a.getInt("seed", 0));
  o.graph = !a.has("no-graph");
  o.pdl = !a.has("no-pdl");
  o.sparseTensorCores = a.has("tensor-cores") ? 1 : a.has("no-tensor-cores") ? 0 : -1;
  if (a.has("tuning")) o.tuningFile = a.get("tuning");
  else if (device != "cpu")
    o.tuningFile = gpu::defaultTuningPath(std::filesystem::path(SDW_SOURCE_DIR) / "resources", gpu::deviceInfo().name);
  if (a.has("tune-step")) o.tuneStepOut = a.get("tune-step");
  if (o.context < 1 || o.tokens < 1 || o.warmup < 0) throw UsageError("--context and --tokens must be >= 1, --warmup >= 0");
  std::vector<int> batches;
  for (const auto& b : splitComma(a.get("batch", "1"))) {
    int v = 0;
    try {
      v = std::stoi(b);
    } catch (const std::exception&) {
      throw UsageError("--batch expects numbers, got '" + b + "'");
    }
    if (v < 1 || v > 8) throw UsageError("--batch sizes must be 1..8, got " + b);
    batches.push_back(v);
  }
  const std::vector<std::string> linears = splitComma(a.get("linear", "cublas"));
  for (const auto& l : linears)
    if (l != "eager") (void)gpu::parseLinear(l);  // names the accepted ones
  const std::vector<std::string> patterns = splitComma(a.get("patterns", a.get("pattern", "2:4")));
  for (const auto& pat : patterns) gpu::checkDecodePattern(pat);
  if (a.has("activation-sparsity")) {
    const std::string v = a.get("activation-sparsity");
    std::size_t used = 0;
    try {
      o.activationSparsity = std::stod(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != v.size() || !(o.activationSparsity >= 0 && o.activationSparsity < 1))
      throw UsageError("--activation-sparsity expects a number in [0, 1), got '" + v + "'");
  }
  const std::string selection = a.get("activation-selection", a.has("activation-thresholds") ? "thresholds" : "topk");
  if (selection != "topk" && selection != "thresholds")
    throw UsageError("--activation-selection expects topk or thresholds, got '" + selection + "'");
  o.activationThresholds = selection == "thresholds";
  o.thresholdsRun = a.get("activation-thresholds");
  if (o.activationThresholds && !(o.activationSparsity > 0))
    throw UsageError("--activation-selection thresholds needs --activation-sparsity P > 0");
  if (!o.thresholdsRun.empty() && !o.activationThresholds)
    throw UsageError("--activation-thresholds RUN sets thresholds: not with --activation-selection topk");
  // On CPU the default is a tiny shape: an 8B model in fp32 does not fit a desk machine.
  std::vector<Cell> cells;
  // A real checkpoint (--model DIR) or shapes with random weights (--config).
  const std::filesystem::path checkpoint = a.get("model");
  std::vector<std::string> specs = splitComma(a.get("config", device == "cpu" ? "bench-tiny" : "llama3-8b"));
  if (!checkpoint.empty()) specs = {checkpoint.string()};
  o.checkpoint = checkpoint;
  for (const auto& spec : specs) {
    std::string name;
    const gpu::ModelConfig shape =
        checkpoint.empty() ? resolveModelConfig(spec, name) : gpu::loadModelConfig(checkpoint);
    if (!checkpoint.empty()) name = checkpoint.filename().string();
    for (const auto& l : linears) {
      if (l == "sparse")
        for (const auto& pat : checkpoint.empty() ? patterns : std::vector<std::string>{""})
          cells.push_back({name, shape, l, pat});
      else
        cells.push_back({name, shape, l, ""});
    }
  }
  const bool json = a.has("json");
  const bool grid = cells.size() > 1 || batches.size() > 1;

  // One bandwidth measurement for the whole run, before any model is on the device.
  if (grid) {
    if (!json) std::fprintf(stderr, "measuring read bandwidth...\n");
    o.readGBs = gpu::measureReadBandwidth(device, o.bandwidthBytes).first;
  }
  std::vector<nlohmann::json> rows;
  std::vector<gpu::DecodeBenchResult> results;
  // A grid goes on past a cell that fails (out of device memory, a checkpoint without its
  // packed file, ...): the rows measured are kept, the failed cells listed in the JSON's
  // failed_cells and on stderr, and the exit status is 1.
  nlohmann::json failed = nlohmann::json::array();
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const Cell& cell = cells[i];
    o.config = cell.shape;
    o.configName = cell.config;
    o.eager = cell.linear == "eager";
    o.linear = o.eager ? gpu::Linear::Cublas : gpu::parseLinear(cell.linear);
    o.pattern = cell.pattern.empty() ? "2:4" : cell.pattern;
    const std::string label = cell.config + " " + cell.linear + (cell.pattern.empty() ? "" : " " + cell.pattern);
    std::vector<gpu::DecodeBenchResult> rs;
    try {
      rs = gpu::runDecodeBenchBatches(o, batches, [&](const Progress& p) {
        if (!json)
          std::fprintf(stderr, "\r  [%zu/%zu] %-28s %-24s %5.0f / %.0f", i + 1, cells.size(), label.c_str(),
                       p.stage.c_str(), p.done, p.total);
        return true;
      });
    } catch (const std::exception& e) {
      if (!grid) throw;
      if (!json) std::fprintf(stderr, "\n");
      std::fprintf(stderr, "sdw-cli bench decode: %s failed: %s\n", label.c_str(), e.what());
      failed.push_back({{"config", cell.config},
                        {"linear", cell.linear},
                        {"pattern", cell.pattern},
                        {"error", std::string(e.what())}});
      continue;
    }
    if (!json) std::fprintf(stderr, "\n");
    for (auto& r : rs) {
      rows.push_back(gpu::decodeRowJson(r, cell.shape.architectureName));
      results.push_back(std::move(r));
    }
  }

  if (!grid) {
    const auto& r = results.front();
    nlohmann::json j = gpu::decodeRowJson(r, cells.front().shape.architectureName);
    j["benchmark"] = "decode";
    j["device"] = r.device;
    j["measured_copy_gb_per_s"] = r.measuredCopyGBs;
    j["command"] = benchCommandLine("decode", a);
    if (emitJson(a, j.dump(2))) return 0;
    std::printf("decode benchmark: %s (%s, %.2fB parameters), %s, context %d, batch %d\n", r.configName.c_str(),
                cells.front().shape.architectureName.c_str(), static_cast<double>(r.parameters) / 1e9, r.dtype.c_str(),
                r.context, r.batch);
    std::printf("device:            %s\n", r.device.c_str());
    std::printf("engine:            %s\n", r.engine.c_str());
    std::printf("step time:         median %.3f ms (p10 %.3f, p90 %.3f) over %d steps after %d warm-up\n", r.medianMs,
                r.p10Ms, r.p90Ms, r.tokens, r.warmup);
    std::printf("tokens/s:          %.1f\n", r.tokensPerSecond);
    std::printf("bytes per step:    %.3f GB (weights %.3f GB + KV cache %.3f GB)\n", gb(r.bytesPerStep),
                gb(r.weightBytesPerStep), gb(r.kvBytesPerStep));
    std::printf("device memory:     %.3f GB (weights as held, KV cache, engine buffers)\n", gb(r.gpuMemoryBytes));
    std::printf("achieved:          %.1f GB/s\n", r.achievedGBs);
    std::printf("measured memory:   read %.1f GB/s (sum reduction), copy %.1f GB/s\n", r.measuredReadGBs,
                r.measuredCopyGBs);
    std::printf("bandwidth limit:   %.1f tokens/s; this run reaches %.1f%% of it\n", r.limitTokensPerSecond,
                100.0 * r.ratioToLimit);
    return 0;
  }

  if (results.empty())
    throw std::runtime_error("every engine cell failed; the first: " + failed[0]["error"].get<std::string>());
  const auto failures = [&] {
    if (failed.empty()) return 0;
    std::fprintf(stderr, "sdw-cli bench decode: %zu of %zu engine cells failed (failed_cells in the JSON)\n",
                 failed.size(), cells.size());
    return 1;
  };
  const nlohmann::json summary = gpu::decodeSummaryJson(rows);
  nlohmann::json j = {{"benchmark", "decode-e2e"},
                      {"device", results.front().device},
                      {"dtype", o.dtype},
                      {"context", o.context},
                      {"warmup_steps", o.warmup},
                      {"timed_steps", o.tokens},
                      {"measured_read_gb_per_s", o.readGBs},
                      {"cuda_graph", o.graph},
                      {"programmatic_dependent_launch", o.pdl},
                      {"sparse_tensor_cores", o.sparseTensorCores},
                      {"activation_sparsity", o.activationSparsity},
                      {"activation_selection", results.front().activationSelection},
                      {"tuning", o.tuningFile.string()},
                      {"rows", rows},
                      {"summary", summary}};
  if (!failed.empty()) j["failed_cells"] = failed;
  j["command"] = benchCommandLine("decode", a);
  if (emitJson(a, j.dump(2))) return failures();
  std::printf("end-to-end decode: %s, %s, context %d, median of %d steps after %d warm-up; read bandwidth %.0f GB/s\n",
              results.front().device.c_str(), o.dtype.c_str(), o.context, o.tokens, o.warmup, o.readGBs);
  std::printf("%-12s %-7s %-6s %5s %10s %9s %9s %7s %10s\n", "config", "linear", "pattern", "batch", "tokens/s", "GB/s",
              "limit", "of lim", "memory GB");
  for (const auto& r : results)
    std::printf("%-12s %-7s %-6s %5d %10.1f %9.1f %9.1f %6.1f%% %10.2f\n", r.configName.c_str(), r.linear.c_str(),
                r.pattern.empty() ? "-" : r.pattern.c_str(), r.batch, r.tokensPerSecond, r.achievedGBs,
                r.limitTokensPerSecond, 100.0 * r.ratioToLimit, gb(r.gpuMemoryBytes));
  for (const auto& s : summary) {
    if (!s.contains("sparse")) continue;
    std::printf("%s batch %d:", s["config"].get<std::string>().c_str(), s["batch"].get<int>());
    for (const auto& [pat, e] : s["sparse"].items())
      if (e.contains("speedup_over_dense_engine"))
        std::printf("  %s %.2fx (limit %.2fx)", pat.c_str(), e["speedup_over_dense_engine"].get<double>(),
                    e.value("speedup_limit", 0.0));
    std::printf("\n");
  }
  return failures();
}

const RegisterBenchMode regDecode{BenchMode{
    "decode",
    "decode tokens/s of the model runtime (random weights from a config) vs the HBM bandwidth limit",
    "bench decode [--config llama3-8b,...] [--linear cublas,dense,sparse,eager] [--patterns 2:4,...] [--batch 1,2,...] "
    "[--model DIR] [--context 512] [--tokens 50] [--warmup 50] [--dtype bfloat16] [--device cuda|cpu] [--no-graph] "
    "[--no-pdl] [--tensor-cores|--no-tensor-cores] [--activation-sparsity P] [--activation-selection topk|thresholds] "
    "[--activation-thresholds RUN] [--tuning FILE] [--tune-step FILE] "
    "[--out FILE] [--json]",
    {{"config", "NAMES",
      "model shapes, comma-separated: llama3-8b, names in resources/configs/ (qwen3-14b, qwen3-32b, bench-tiny) or "
      "config.json files",
      ""},
     {"model", "DIR",
      "a real checkpoint instead of --config shapes (sparse: its model.sdwsparse or model.sdwcolumn; --patterns "
      "ignored)",
      ""},
     {"linear", "LIST",
      "engines: cublas, dense (our GEMV), sparse (our bitmask SpMV, per pattern), eager (LibTorch forward, no engine)",
      "cublas"},
     {"patterns", "LIST",
      "patterns of the sparse engine: N:M (2:4, 4:8, 8:16, 16:32; the bitmask SpMV) or col2:4, col4:8 (the spMspV "
      "kernel's column layouts)",
      "2:4"},
     {"activation-sparsity", "P",
      "run-time activation sparsity: each projection input keeps its largest 1 - P entries (the column layouts skip "
      "the rest's weight bytes)",
      "0"},
     {"activation-selection", "HOW",
      "topk: each token's largest entries (a selection launch per input); thresholds: fixed |x| thresholds per layer "
      "and input (TEAL), compared by the spMspV kernels themselves, from --activation-thresholds RUN or else from "
      "the model's own activations over a prefill of --context random tokens",
      "topk"},
     {"activation-thresholds", "RUN",
      "a calibration run with activation samples (calibrate --sample-rows N) to set the thresholds from", ""},
     {"no-graph", "", "launch the engine's kernels one by one instead of replaying a CUDA graph", ""},
     {"no-pdl", "", "no programmatic dependent launch between the engine's kernels", ""},
     {"tensor-cores", "",
      "every N:M pattern from batch 2: the sparse engine's SpMV on the tensor cores (default: 2:4 and 4:8 from "
      "batch 3, 8:16 and 16:32 from batch 5)",
      ""},
     {"no-tensor-cores", "", "every N:M pattern at every batch: the sparse engine's SpMV on the CUDA cores", ""},
     {"tuning", "FILE", "launch configurations of our kernels (default: resources/tuning/<gpu>.json)", ""},
     {"tune-step", "FILE",
      "each batch: first choose each projection's SpMV or dense GEMV launch (and lm_head's) by the whole step's "
      "time, run the timed steps with them, and write them into FILE (a tuning table; read first where it "
      "exists)",
      ""},
     {"context", "N", "tokens already in the KV cache", "512"},
     {"tokens", "N", "timed decode steps", "50"},
     {"warmup", "N", "untimed decode steps first", "50"},
     {"batch", "LIST", "sequences decoded together, comma-separated (1..8)", "1"},
     {"dtype", "DTYPE", "float32, bfloat16 or float16 (default: bfloat16 on CUDA, float32 on CPU)", ""},
     {"device", "DEV", "cuda or cpu (cpu defaults to the bench-tiny shape)", "cuda"},
     {"seed", "S", "seed of the random weights and prompt", "0"},
     {"out", "FILE", "also write the JSON report to FILE", ""},
     {"json", "", "machine-readable output", ""}},
    0,
    runDecode}};

}  // namespace
}  // namespace sdw::cli
