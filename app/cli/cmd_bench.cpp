// sdw-cli bench kernels: the bitmask N:M SpMV against dense and 2:4 baselines
// (gpu/bench.h). Without a GPU the CPU kernels are benchmarked, and the output
// says so.

#include "app/cli/bench_modes.h"
#include "app/cli/cli_util.h"
#include "gpu/bench.h"
#include "gpu/device.h"
#include "gpu/spmv.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace sdw::cli {
namespace {

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

int runKernels(const Args& a) {
  gpu::BenchSettings s;
  try {
    s.shapes = gpu::parseShapes(a.get("shapes", "llama3-8b,qwen3-14b"));
    s.patterns = splitList(a.get("patterns", "2:4,4:8,8:16,16:32"));
    s.batches.clear();
    for (const auto& b : splitList(a.get("batch", "1"))) s.batches.push_back(std::stoi(b));
    if (a.has("activation-sparsity"))
      s.activationSparsities = gpu::parseActivationSparsities(a.get("activation-sparsity"));
    if (a.has("spmspv-layouts")) s.spmspvLayouts = gpu::parseSpmspvLayouts(a.get("spmspv-layouts"));
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  s.dtype = a.get("dtype", "bf16");
  s.repeats = static_cast<int>(a.getInt("repeats", 7));
  s.tune = a.has("tune");
  s.sparseTensorCores = a.has("tensor-cores") ? 1 : a.has("no-tensor-cores") ? 0 : -1;
  s.forceCpu = a.has("cpu");
  s.layer = !a.has("no-layer");
  s.cusparselt = !a.has("no-cusparselt");
  s.tuningIn = a.has("tuning") ? a.get("tuning") : gpu::defaultTuningPath(std::filesystem::path(SDW_SOURCE_DIR) / "resources", gpu::deviceInfo().name);
  s.tuningOut = a.get("tuning-out", "tuning.json");
  if (a.has("threads")) s.cpuThreads = static_cast<int>(a.getInt("threads", 0));

  const bool json = a.has("json");
  ProgressFn progress = [&](const Progress& p) {
    if (!json) std::fprintf(stderr, "\r[%4.0f/%4.0f] %-60s", p.done, p.total, p.stage.c_str());
    return true;
  };
  gpu::BenchResult r;
  try {
    r = gpu::runKernelBench(s, progress);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (!json) std::fprintf(stderr, "\n");
  const std::string text = gpu::toJson(r, benchCommandLine("kernels", a), s);
  if (a.has("out")) {
    std::ofstream out(a.get("out"));
    if (!out) {
      std::cerr << "sdw-cli bench: error: cannot write " << a.get("out") << "\n";
      return 1;
    }
    out << text << "\n";
  }
  if (json) {
    std::cout << text << "\n";
    return 0;
  }
  std::printf("backend: %s (%s)  %s  torch %s\n", r.backend.c_str(), r.device.c_str(), r.driver.c_str(),
              r.torchVersion.c_str());
  std::printf("measured read bandwidth: %.0f GB/s; cuSPARSELt: %s\n", r.hbmReadGBs, r.cusparseltStatus.c_str());
  for (const auto& n : r.notes) std::printf("note: %s\n", n.c_str());
  std::printf("%-10s %-9s %-12s %-5s %2s %-10s %9s %9s %7s %5s %6s %6s  %s\n", "model", "module", "shape", "pat", "b",
              "kernel", "us", "chained", "GB/s", "%bw", "xcuBLAS", "xdense", "config");
  for (const auto& row : r.rows) {
    const std::string shape = row.rows ? std::to_string(row.rows) + "x" + std::to_string(row.cols) : "-";
    char chained[16] = "-";
    if (row.usChained > 0) std::snprintf(chained, sizeof chained, "%.2f", row.usChained);
    std::printf("%-10s %-9s %-12s %-5s %2d %-10s %9.2f %9s %7.0f %5.1f %6.2f %6.2f  %s\n", row.model.c_str(),
                row.module.c_str(), shape.c_str(), row.pattern.c_str(), row.batch, row.kernel.c_str(), row.us, chained,
                row.gbs, 100 * row.fractionHbm, row.speedupVsCublas, row.speedupVsDense, row.config.c_str());
  }
  std::printf("\nsummary (batch 1, %s, llama3-8b + qwen3-14b projections, medians):\n", s.dtype.c_str());
  for (const auto& sm : r.summary)
    std::printf("  %-5s  vs cuBLAS %.2fx  vs our dense %.2fx  vs cuSPARSELt 2:4 %.2fx  (%d shapes)\n",
                sm.pattern.c_str(), sm.medianVsCublas, sm.medianVsDense, sm.medianVsCusparselt, sm.count);
  std::printf("  pattern spread (vs our dense): %.1f%%\n", r.patternSpreadPercent);
  bool anyChained = false;
  for (const auto& sm : r.summary) anyChained = anyChained || sm.medianVsDenseChained > 0;
  if (anyChained) {
    std::printf("chained (our kernels as programmatic dependent launches of one another; cuBLAS and cuSPARSELt as "
                "LibTorch launches them):\n");
    for (const auto& sm : r.summary)
      std::printf("  %-5s  vs cuBLAS %.2fx  vs our dense %.2fx  vs cuSPARSELt 2:4 %.2fx\n", sm.pattern.c_str(),
                  sm.medianVsCublasChained, sm.medianVsDenseChained, sm.medianVsCusparseltChained);
    std::printf("  pattern spread (vs our dense, chained): %.1f%%\n", r.patternSpreadChainedPercent);
  }
  if (!r.activationSummary.empty()) {
    std::printf("\nspMspV (50%% unstructured weights, x skipped below the threshold; GB/s of the bytes it reads):\n");
    std::printf("  %-10s %-9s %-12s %5s %9s %7s %5s %7s %7s\n", "model", "module", "shape", "p_x", "us", "GB/s", "%bw",
                "xdense", "xcuBLAS");
    for (const auto& row : r.rows) {
      if (!row.activationSparsity) continue;
      const std::string shape = std::to_string(row.rows) + "x" + std::to_string(row.cols);
      std::printf("  %-10s %-9s %-12s %5.2f %9.2f %7.0f %5.1f %7.2f %7.2f\n", row.model.c_str(), row.module.c_str(),
                  shape.c_str(), *row.activationSparsity, row.us, row.gbs, 100 * row.fractionHbm, row.speedupVsDense,
                  row.speedupVsCublas);
    }
    for (const auto& as : r.activationSummary)
      std::printf("  p_x %.2f: median vs our dense %.2fx  vs cuBLAS %.2fx  %.0f GB/s (%.0f%% of read bandwidth)  (%d shapes)\n",
                  as.activationSparsity, as.medianVsDense, as.medianVsCublas, as.medianGbs, 100 * as.medianFractionHbm,
                  as.count);
  }
  return 0;
}

const RegisterBenchMode regKernels{BenchMode{
    "kernels",
    "the bitmask N:M SpMV kernels against dense and 2:4 baselines",
    "bench kernels [--shapes llama3-8b,qwen3-14b,qwen3-32b|RxC] [--patterns 2:4,...] [--batch 1,2,4,8] "
    "[--dtype bf16|fp16] [--repeats N] [--activation-sparsity 0,0.25,0.5,0.75] [--spmspv-layouts LIST] [--tune] "
    "[--tensor-cores|--no-tensor-cores] [--json] "
    "[--out FILE]",
    {{"shapes", "LIST",
      "models (llama3-8b, qwen3-14b, qwen3-32b; NAME:engine: the decode engine's fused launches) or ROWSxCOLS shapes",
      "llama3-8b,qwen3-14b"},
     {"patterns", "LIST", "N:M patterns", "2:4,4:8,8:16,16:32"},
     {"batch", "LIST", "batch sizes, 1..8", "1"},
     {"dtype", "T", "value dtype: bf16 or fp16", "bf16"},
     {"repeats", "N", "timed repeats per kernel (median)", "7"},
     {"activation-sparsity", "LIST",
      "also time the spMspV kernels (batch 1; weights 50% unstructured, pattern 50%; 2 of every 4 or 4 of every "
      "8 rows of each column, patterns col2:4 and col4:8; every weight column-major, pattern dense) skipping these "
      "fractions of x, in [0, 1)",
      ""},
     {"spmspv-layouts", "LIST", "with --activation-sparsity: the spMspV weight layouts to time",
      "50%,col2:4,col4:8,dense"},
     {"tune", "", "sweep launch configurations and write a tuning table", ""},
     {"tensor-cores", "",
      "every N:M pattern from batch 2: our SpMV on the tensor cores (default: 2:4 and 4:8 from batch 4, 8:16 and 16:32 "
      "from batch 5)",
      ""},
     {"no-tensor-cores", "", "every N:M pattern at every batch: our SpMV on the CUDA cores", ""},
     {"tuning", "FILE", "tuning table to use (default: resources/tuning/<gpu>.json)", ""},
     {"tuning-out", "FILE", "where --tune writes its table", "tuning.json"},
     {"cpu", "", "benchmark the CPU kernels even when a GPU is present", ""},
     {"threads", "N", "CPU threads (0: all)", ""},
     {"no-layer", "", "skip the whole-layer sequences", ""},
     {"no-cusparselt", "", "skip the cuSPARSELt baseline", ""},
     {"json", "", "machine-readable output", ""},
     {"out", "FILE", "also write the JSON to FILE", ""}},
    0,
    runKernels}};

}  // namespace
}  // namespace sdw::cli
