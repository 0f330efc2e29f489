#pragma once
// Decode-speed benchmark of the model runtime: a model built from a config
// with random weights (speed does not depend on values), its KV cache filled
// to a context length by a real prefill, then N timed decode steps at that
// context (each step writes and reads slot `context`, so every step sees the
// same number of keys), measured with CUDA events after warm-up. Reports
// tokens/s against the bandwidth limit: bytes one token must read (weights,
// one embedding row, the KV cache) over a measured HBM read bandwidth taken
// in the same run. Plain types.

#include "core/progress.h"
#include "gpu/activation_thresholds.h"
#include "gpu/model.h"  // Linear
#include "gpu/model_config.h"

#include <filesystem>
#include <functional>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sdw::gpu {

// Throws std::invalid_argument unless `pattern` is one the sparse engine packs random weights
// to: a supported row N:M (2:4 ... 16:32) or col2:4 / col4:8.
void checkDecodePattern(const std::string& pattern);

struct DecodeBenchOptions {
  ModelConfig config;
  std::string configName;           // for the report
  std::string device = "cuda";
  std::string dtype = "bfloat16";
  int context = 512;
  int tokens = 50;                  // timed steps
  int warmup = 50;
  int batch = 1;
  std::uint64_t seed = 0;
  std::uint64_t bandwidthBytes = 4ull << 30;  // buffer read by the bandwidth probe (CUDA)
  double readGBs = 0;               // > 0: the read bandwidth measured before (no probe this time)
  // The engine: on CUDA each step is the decode engine's captured graph (gpu/decode_engine.cpp)
  // unless `eager`; Linear::Sparse prunes every projection to `pattern` by magnitude and keeps
  // only the packed form.
  Linear linear = Linear::Cublas;
  std::string pattern = "2:4";  // a row N:M pattern, or col2:4 / col4:8 (the spMspV kernel's column layouts)
  // Run-time activation sparsity p_x (LoadOptions::activationSparsity): every projection
  // input keeps its largest 1 - p_x; the column layouts then skip the dropped columns'
  // weight bytes, which the bytes per step (and so the limit) account for. 0: off.
  double activationSparsity = 0;
  // How the inputs drop that share: per-token top-k (false), or fixed |x| thresholds per layer
  // and input (TEAL; the spMspV kernels compare them as they build their column lists, no
  // selection launch): from `thresholdsRun`'s activation samples when given, else from this
  // model's own activations over a batch-1 prefill of `context` random tokens (the layers
  // before each input under top-k at p_x), ranked as a run's samples are
  // (gpu/activation_thresholds.h).
  bool activationThresholds = false;
  std::filesystem::path thresholdsRun;
  bool eager = false;               // the eager LibTorch forward pass instead of the engine
  bool graph = true;                // capture the step (false: the engine's kernels launched one by one)
  bool pdl = true;                  // programmatic dependent launch between the step's kernels
  int sparseTensorCores = -1;  // N:M on the tensor-core SpMV: 1 from batch 2, -1 spmvUseTensorCores's default, 0 never
  std::filesystem::path tuningFile; // our kernels' launch configurations (empty: heuristics)
  // Per batch: before the warm-up, each projection's SpMV or dense GEMV launch (and lm_head's)
  // chosen by the whole step's time (engineTuneStep); the timed steps run the winners, which go
  // into this table as TuningEntry::sparseStep / denseStep of that batch (read first where the
  // file exists, else the model's table). Empty: off.
  std::filesystem::path tuneStepOut;
  // A real checkpoint instead of random weights from `config` (then `config` is read from it;
  // Linear::Sparse reads its model.sdwsparse).
  std::filesystem::path checkpoint;
  // Called after every timed step (on the benchmark's thread): batch, step index, milliseconds.
  std::function<void(int batch, int step, double ms)> onStep;
};

struct DecodeBenchResult {
  std::string device;               // "NVIDIA H200 (sm_90, ...)" or "cpu"
  std::string configName;
  std::string dtype;
  std::string linear;               // "cublas", "dense", "sparse" ("eager" for the eager forward)
  std::string pattern;              // sparse: "2:4"..., "col2:4", "col4:8"; else ""
  double activationSparsity = 0;    // run-time p_x (0: off)
  std::string activationSelection;  // with p_x: "top-k", "thresholds (prefill)" or "thresholds (RUN's file name)"
  double thresholdsAchieved = 0;    // thresholds: mean over the inputs of the ranked entries' share at or below them
  std::string engine;               // Model::engineDescription()
  std::string stepTuning;           // tuneStepOut: per projection shape, the launch before -> after and the step's us
  int stepEntryLaunches = 0;        // engine: launches of ours set by the table's step entries (engineStepEntriesUsed)
  int engineLaunches = 0;           // engine: its SpMV / dense GEMV launches per step (projections, lm_head)
  std::uint64_t gpuMemoryBytes = 0; // Model::deviceBytes() after the timed steps (weights, packed, cache, buffers)
  int packedProjections = 0;
  int context = 0, tokens = 0, warmup = 0, batch = 0;
  std::int64_t parameters = 0;
  double setupSeconds = 0;          // random init
  double prefillMs = 0;
  std::vector<double> stepMs;       // timed steps, in order
  double medianMs = 0, p10Ms = 0, p90Ms = 0, meanMs = 0;
  double tokensPerSecond = 0;       // batch / median step
  std::uint64_t weightBytesPerStep = 0;  // every weight read once, packed projections as packed (values + masks),
                                         // + one embedding row per sequence
  std::uint64_t kvBytesPerStep = 0;      // K and V of `context + 1` positions, all layers, all rows
  std::uint64_t bytesPerStep = 0;
  double achievedGBs = 0;           // bytesPerStep / median step
  double measuredReadGBs = 0;       // sum reduction over a large buffer
  double measuredCopyGBs = 0;       // device-to-device copy, (read + write) / time
  double limitTokensPerSecond = 0;  // batch x measuredReadGBs / bytesPerStep
  double ratioToLimit = 0;          // tokensPerSecond / limitTokensPerSecond
  std::string method;               // one line on how it was timed
};

// Throws std::runtime_error (e.g. no GPU for device "cuda"), sdw::Cancelled.
DecodeBenchResult runDecodeBench(const DecodeBenchOptions& options, const ProgressFn& progress = {});
// One model, several batch sizes in turn (options.batch ignored): one result per batch.
std::vector<DecodeBenchResult> runDecodeBenchBatches(const DecodeBenchOptions& options, const std::vector<int>& batches,
                                                     const ProgressFn& progress = {});

// What a run of `options` records as its activation selection: "" without p_x, "top-k",
// "thresholds (prefill)" or "thresholds (RUN's file name)".
std::string activationSelectionName(const DecodeBenchOptions& options);

// The thresholds DecodeBenchOptions::activationThresholds sets without a run: a batch-1
// prefill of options.context random tokens (options.seed + 1) through `model` as it is
// (its top-k before each input), each projection input's threshold ranked over its
// context x d_in entries at options.activationSparsity (rankInputThreshold). `run` is
// "prefill". Throws std::runtime_error where an input was not observed.
ActivationThresholds prefillActivationThresholds(Model& model, const DecodeBenchOptions& options);

// Read and copy bandwidth (GB/s) of `device` over a buffer of `bytes` (CUDA: bf16 sum reduction
// and device copy; CPU: fp32, at most 256 MiB).
std::pair<double, double> measureReadBandwidth(const std::string& device, std::uint64_t bytes);

}  // namespace sdw::gpu
