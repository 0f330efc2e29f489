#pragma once
// A decoder's shape and hyper-parameters, parsed from a Hugging Face
// `config.json` (+ `generation_config.json`). Plain types, torch-free.
//
// Supported: LlamaForCausalLM (incl. the Llama-3 "llama3" RoPE scaling),
// MistralForCausalLM (sliding window), Qwen2ForCausalLM (q/k/v biases),
// Qwen3ForCausalLM (per-head q/k RMSNorm, head_dim may differ from
// hidden/heads) and Gemma3ForCausalLM (text only: (1 + w) RMSNorms around
// attention and MLP, GELU-tanh, per-layer sliding/global attention with two
// RoPE bases). Anything else is refused with a message that names it.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace sdw::gpu {

enum class Architecture { Llama, Qwen3, Qwen2, Mistral, Gemma3 };

struct RopeScaling {
  std::string type;  // "" (none), "llama3" or "linear" (positions divided by factor)
  double factor = 1.0;
  double lowFreqFactor = 1.0;
  double highFreqFactor = 4.0;
  std::int64_t originalMaxPositionEmbeddings = 8192;
};

// Sampling defaults a checkpoint ships in generation_config.json.
struct GenerationDefaults {
  bool present = false;
  std::optional<bool> doSample;
  std::optional<double> temperature;
  std::optional<int> topK;
  std::optional<double> topP;
  std::vector<std::int32_t> eosTokenIds;
  std::optional<std::int32_t> bosTokenId;
};

struct ModelConfig {
  Architecture architecture = Architecture::Llama;
  std::string architectureName = "LlamaForCausalLM";
  std::string modelType = "llama";
  std::int64_t vocabSize = 0;
  std::int64_t hiddenSize = 0;
  std::int64_t intermediateSize = 0;
  std::int64_t numLayers = 0;
  std::int64_t numHeads = 0;
  std::int64_t numKvHeads = 0;
  std::int64_t headDim = 0;
  std::int64_t maxPositionEmbeddings = 2048;
  double rmsNormEps = 1e-6;
  double ropeTheta = 10000.0;
  RopeScaling ropeScaling;
  bool tieWordEmbeddings = false;
  std::string torchDtype;  // as declared ("bfloat16", ...); may be empty
  std::optional<std::int32_t> bosTokenId;
  std::vector<std::int32_t> eosTokenIds;
  GenerationDefaults generation;

  // Upper bounds validate() holds every field to (see model_config.cpp).
  static constexpr std::int64_t kMaxVocabSize = std::int64_t{1} << 24;
  static constexpr std::int64_t kMaxHiddenSize = std::int64_t{1} << 16;
  static constexpr std::int64_t kMaxIntermediateSize = std::int64_t{1} << 18;
  static constexpr std::int64_t kMaxLayers = 1024;
  static constexpr std::int64_t kMaxHeads = 1024;
  static constexpr std::int64_t kMaxHeadDim = 1024;
  static constexpr std::int64_t kMaxPositions = std::int64_t{1} << 24;
  static constexpr std::int64_t kMaxParameters = std::int64_t{1} << 42;  // 4.4 T

  bool qkvBias = false;             // q/k/v projections carry biases (Qwen2)
  std::int64_t slidingWindow = 0;   // > 0: a query of a sliding layer sees its last `slidingWindow` positions

  // Per layer: true where the layer attends through the sliding window and uses
  // the local RoPE (Gemma 3's layer_types "sliding_attention"). Empty: every
  // layer is sliding when slidingWindow > 0 (Mistral).
  std::vector<bool> slidingLayers{};
  // Gemma 3's local RoPE (its sliding layers): base and scaling. ropeLocalTheta 0: one RoPE for all layers.
  double ropeLocalTheta = 0;
  RopeScaling ropeLocalScaling{};
  double queryPreAttnScalar = 0;    // > 0: attention scale query_pre_attn_scalar^-0.5 instead of head_dim^-0.5
  double attnLogitSoftcap = 0;      // > 0: attention scores = cap * tanh(scores / cap) before the mask
  double finalLogitSoftcap = 0;     // > 0: logits = cap * tanh(logits / cap)
  // attn_logit_softcapping as the config declares it (Gemma 3: transformers does not apply it; see model_config.cpp).
  double attnLogitSoftcapDeclared = 0;
  std::string hiddenAct = "silu";   // "silu" or "gelu_pytorch_tanh" (Gemma 3)
  std::optional<std::int32_t> padTokenId;

  bool hasQkNorm() const { return architecture == Architecture::Qwen3 || architecture == Architecture::Gemma3; }
  // Gemma's RMSNorm scales by (1 + w) in fp32; four norms per layer (the attention and
  // MLP outputs normalised before their residual add); embeddings times sqrt(hidden).
  bool isGemma() const { return architecture == Architecture::Gemma3; }
  // Layer l attends through the sliding window.
  bool slidingLayer(std::int64_t l) const {
    if (slidingWindow <= 0) return false;
    return slidingLayers.empty() || slidingLayers[static_cast<std::size_t>(l)];
  }
  // Layer l uses the local RoPE (ropeLocalTheta, ropeLocalScaling).
  bool localRopeLayer(std::int64_t l) const {
    return ropeLocalTheta > 0 && !slidingLayers.empty() && slidingLayers[static_cast<std::size_t>(l)];
  }
  // The attention scale (softmax(q k^T * scale)).
  double attentionScale() const;
  // RMSNorm weights per layer (2, Gemma 3: 4).
  int normsPerLayer() const { return isGemma() ? 4 : 2; }
  std::int64_t qDim() const { return numHeads * headDim; }
  std::int64_t kvDim() const { return numKvHeads * headDim; }

  // Parameter count (lm_head counted once when tied).
  std::int64_t parameterCount() const;
  // Throws std::invalid_argument naming the inconsistent field.
  void validate(const std::string& source) const;
};

// Parses config.json text. `source` names the file in error messages.
ModelConfig parseModelConfig(const std::string& jsonText, const std::string& source = "config.json");
// Why `dir` cannot be a checkpoint ("no such folder", "not a folder (...)": a checkpoint is a
// folder of config.json, the weights and tokenizer.json), or "" when it is a folder.
std::string checkpointFolderProblem(const std::filesystem::path& dir);
// Throws std::runtime_error "DIR: <the problem>" when there is one.
void requireCheckpointFolder(const std::filesystem::path& dir);
// dir/config.json and, when present, dir/generation_config.json.
ModelConfig loadModelConfig(const std::filesystem::path& dir);
// A config file on its own (bench shapes).
ModelConfig loadModelConfigFile(const std::filesystem::path& file);

// Serialises the fields we use back into Hugging Face config.json form.
std::string modelConfigToJson(const ModelConfig& c);

// Llama-3.1-8B's published shape (bench decode default).
ModelConfig llama31_8bConfig();

// A benchmark shape by name, as `sdw-cli bench` and the GUI's benchmarks name them:
// "llama3-8b" (built in), a config.json file, a checkpoint folder, or a name in
// `configsDir` (resources/configs). `name` gets the name the reports use
// ("llama-3.1-8b", the file's stem, the folder's name). Throws std::invalid_argument.
ModelConfig resolveShapeConfig(const std::string& spec, const std::filesystem::path& configsDir, std::string& name);

std::string architectureSummary(const ModelConfig& c);  // "LlamaForCausalLM, 32 layers, ..."
// The family's distinguishing features in one line, "" for plain Llama: "q/k/v biases",
// "sliding window 4096", "Gemma 3: 5 sliding (window 512) : 1 global layers, GELU-tanh, ...".
std::string architectureFeatures(const ModelConfig& c);
// RoPE scaling in words: "none", "llama3 (factor 8, low 1, high 4, original 8192)", "linear (factor 8)".
std::string ropeScalingText(const RopeScaling& r);

// Bytes per element of "float32" / "bfloat16" / "float16" (also "fp32",
// "bf16", "fp16"); throws std::invalid_argument naming the supported ones.
std::size_t dtypeBytes(const std::string& dtype);
// The canonical name ("float32", "bfloat16", "float16") of a dtype spelling.
std::string canonicalDtype(const std::string& dtype);

// One linear projection, named as in the checkpoint (without ".weight").
struct ModuleInfo {
  std::string name;  // "model.layers.3.self_attn.q_proj", "lm_head"
  std::string kind;  // "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"
  int layer = -1;    // -1 for lm_head
  std::int64_t outFeatures = 0;  // weight is [out, in]
  std::int64_t inFeatures = 0;
  std::string dtype;
  std::uint64_t bytes = 0;
};
// Every linear projection of the decoder in checkpoint order, then lm_head.
std::vector<ModuleInfo> projectionModules(const ModelConfig& c, const std::string& dtype);

}  // namespace sdw::gpu
