#pragma once
// The model runtime: a Llama / Mistral / Qwen2 / Qwen3 / Gemma 3 decoder loaded from a Hugging Face
// checkpoint (or built with random weights from a config), on CPU or CUDA.
// Plain types only; LibTorch stays behind the pimpl (engine code reaches the
// tensors through gpu/model_internal.h).
//
//   auto m = Model::load("samples/tiny-llama", {.device = "cuda", .dtype = "bfloat16"});
//   auto r = m->generate(promptIds, {.maxNewTokens = 60});
//
// Not thread-safe: one thread drives a Model at a time.

#include "core/progress.h"
#include "gpu/model_config.h"
#include "gpu/sampling.h"

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sdw::gpu {

// How a decode step runs each projection (gpu/decode_engine.cpp). On CUDA a
// decode step is one captured CUDA graph of fused kernels whatever the linear;
// on the CPU every linear is LibTorch's matmul except Sparse, which runs the CPU
// bitmask SpMV. Prefill and teacher-forced passes use cuBLAS (Sparse: each packed
// projection unpacked into a scratch matrix, then cuBLAS).
//   Cublas: cuBLAS (LibTorch's matmul)
//   Dense:  our dense GEMV (16-bit dtypes; cuBLAS in float32)
//   Sparse: our bitmask N:M SpMV over the packed projections of a model.sdwsparse
//           (no dense copy of them is kept), the rest as Dense
enum class Linear { Cublas, Dense, Sparse };

// The four projection inputs of a decoder layer, in forward order (the
// modules sharing one read it once): q|k|v, o, gate|up, down.
enum class ProjectionInput { Qkv = 0, O, GateUp, Down };
inline constexpr int kProjectionInputs = 4;
// Per layer, one magnitude threshold per projection input (index: ProjectionInput).
using InputThresholds = std::array<float, kProjectionInputs>;
std::string linearName(Linear l);
Linear parseLinear(std::string_view s);  // "cublas", "dense", "sparse"; throws std::invalid_argument

struct LoadOptions {
  std::string device = "cpu";     // "cpu", "cuda" or "cuda:N"
  std::string dtype = "float32";  // "float32", "bfloat16", "float16"
  Linear linear = Linear::Cublas;
  // Linear::Sparse with load(): the packed file (empty: <dir>/model.sdwsparse). It must
  // match the checkpoint: projection names and shapes, its values equal to the
  // checkpoint's weights (zeros where pruned), the dtype of the checkpoint's tensors.
  std::filesystem::path sparseFile{};
  // Linear::Sparse with randomInit(): every projection pruned by magnitude to this pattern
  // (a row N:M pattern of the bitmask SpMV, or col2:4 / col4:8 of the spMspV kernel).
  std::string randomPattern = "2:4";
  bool decodeEngine = true;       // CUDA decode steps through the engine; false: the eager forward pass (the reference)
  bool cudaGraph = true;          // capture the decode step (CUDA); false: the same kernels launched one by one
  bool pdl = true;                // programmatic dependent launch between the step's kernels (sm_90)
  int sparseTensorCores = -1;  // N:M on the tensor-core SpMV: 1 from batch 2, -1 spmvUseTensorCores's default, 0 never
  std::filesystem::path tuningFile{};  // launch configurations of our kernels (empty: heuristics)
  // Activation sparsity at run time (DuoGPT's p_x, TEAL): per token, every
  // projection's input keeps its round((1 - p) * d_in) largest-magnitude
  // entries, the rest are zero (ties at the threshold are kept). One p for
  // every layer, or per layer (activationSparsityPerLayer, one value per
  // layer, overrides it when not empty). 0: dense inputs. Observers see the
  // inputs before they are sparsified. On CUDA the decode engine applies it
  // too (a row kernel on each projection input, gpu/kernels/actsparse.cu).
  double activationSparsity = 0;
  std::vector<double> activationSparsityPerLayer{};
  // Activation sparsity by fixed thresholds instead (TEAL): an entry of a
  // projection input is kept iff |x| > the threshold of its layer and input
  // (a negative threshold keeps every entry), one entry per layer. Set from a
  // calibration run's activation samples (gpu/activation_thresholds.h); not
  // together with activationSparsity(PerLayer). Observers and the decode
  // engine as for activationSparsity.
  std::vector<InputThresholds> activationThresholds{};
};
// Throws std::invalid_argument unless every value is in [0, 1), a per-layer
// list has one value per layer, thresholds (one entry per layer, finite)
// come without a top-k p_x.
void validateActivationSparsity(const LoadOptions& options, int numLayers);

enum class Phase { Prefill, Decode };
const char* phaseName(Phase p);

// One projection input seen during a forward pass: `tokens` consecutive
// positions of one prompt starting at `position`, each a row of `dIn` values.
// Modules reading the same input (q/k/v; gate/up) come as one event.
struct ActivationEvent {
  std::vector<std::string> modules;  // checkpoint names, e.g. {"model.layers.0.self_attn.q_proj", ...k_proj, ...v_proj}
  int layer = 0;
  Phase phase = Phase::Prefill;
  int promptIndex = 0;  // index into the batch (0 for single-prompt calls)
  int position = 0;     // position of the first row (0 = first prompt token)
  int tokens = 0;
  std::int64_t dIn = 0;
};
// x: [tokens, dIn] row-major fp32 on the host (copied from the device for
// this observer only). lm_head's input is not observed (it is never pruned).
using ActivationObserver = std::function<void(const ActivationEvent&, std::span<const float> x)>;

struct GenerationOptions {
  int maxNewTokens = 32;
  SamplingOptions sampling;          // greedy by default
  std::vector<std::int32_t> stopIds; // generation ends after emitting one of these (it is kept)
  bool keepLogits = false;           // return the logit row each token was chosen from
};

enum class StopReason { MaxTokens, StopToken, Callback, ContextFull };
const char* stopReasonName(StopReason r);

struct GenerationResult {
  std::vector<std::int32_t> tokens;  // generated tokens only (a stop token included)
  StopReason stopReason = StopReason::MaxTokens;
  int promptTokens = 0;
  double prefillSeconds = 0;
  double decodeSeconds = 0;          // all decode steps of the call
  // Where the call's host time went, prefill and decode together (the same for every row):
  // issuing the steps, waiting for the device and copying the logits back, drawing tokens.
  double launchSeconds = 0;
  double readbackSeconds = 0;
  double sampleSeconds = 0;
  std::vector<float> logits;         // [tokens, vocab] fp32 with keepLogits, else empty
};

// RoPE inverse frequencies [headDim/2] as the model uses them (fp32, incl.
// the Llama-3 or linear scaling), for checks against the reference. local:
// Gemma 3's sliding layers (rope_local_base_freq, unscaled).
std::vector<float> ropeInvFreq(const ModelConfig& config, bool local = false);

class Model {
 public:
  // Reads config.json (+ generation_config.json) and the safetensors weights.
  // Progress in bytes; returning false cancels (throws sdw::Cancelled).
  // Errors name the file and tensor (missing, wrong shape, truncated).
  static std::unique_ptr<Model> load(const std::filesystem::path& dir, const LoadOptions& options = {},
                                     const ProgressFn& progress = {});
  // Random weights (normal(0, stddev), norms 1: Gemma's (1 + w) norms get w = 0) for benchmarks and tests.
  static std::unique_ptr<Model> randomInit(const ModelConfig& config, const LoadOptions& options = {},
                                           std::uint64_t seed = 0, double stddev = 0.02);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const;
  const LoadOptions& options() const;
  // On CPU, bf16/fp16 weights are rounded to that dtype but computed in fp32.
  std::string computeDtype() const;
  std::vector<ModuleInfo> modules() const;
  std::uint64_t parameterCount() const;
  std::uint64_t weightBytes() const;  // as stored (a tied lm_head counted once)
  // Bytes of every tensor the model holds now on its device: weights (packed where
  // packed), KV cache, rotary tables, the decode engine's buffers (each storage once).
  std::uint64_t deviceBytes() const;
  // One line on how decode steps run, e.g. "CUDA graph, bitmask SpMV 2:4 (224 of 224
  // projections packed), lm_head dense GEMV".
  std::string engineDescription() const;

  // Teacher-forced forward over `ids` (no cache). Returns [T, vocab] fp32, row-major.
  std::vector<float> logits(std::span<const std::int32_t> ids);

  // Prefill + decode with a static KV cache. onToken sees each new token;
  // returning false stops (StopReason::Callback).
  GenerationResult generate(std::span<const std::int32_t> promptIds, const GenerationOptions& options,
                            const std::function<bool(std::int32_t token)>& onToken = {});
  // Several prompts of different lengths at once (left padding with a key
  // mask and per-row positions). Rows stop independently. onToken gets the
  // prompt index; returning false stops every row.
  std::vector<GenerationResult> generateBatch(
      const std::vector<std::vector<std::int32_t>>& prompts, const GenerationOptions& options,
      const std::function<bool(int promptIndex, std::int32_t token)>& onToken = {});

  // Observers see every projection input of every later forward pass.
  // Without any, nothing is copied. Returns an id for removeObserver.
  int addObserver(ActivationObserver observer);
  void removeObserver(int id);

  // Engine-internal state (gpu/model_internal.h).
  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sdw::gpu
