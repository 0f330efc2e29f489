#include "gpu/model_config.h"

#include "core/json_limits.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <type_traits>

namespace sdw::gpu {

namespace {

using nlohmann::json;

std::runtime_error configError(const std::string& source, const std::string& what) {
  return std::runtime_error(source + ": " + what);
}

std::int64_t requireInt(const json& j, const char* key, const std::string& source) {
  if (!j.contains(key) || j[key].is_null())
    throw configError(source, std::string("missing required field \"") + key + "\"");
  if (!j[key].is_number_integer())
    throw configError(source, std::string("field \"") + key + "\" must be an integer, got " + j[key].dump());
  return j[key].get<std::int64_t>();
}

template <typename T>
T optional(const json& j, const char* key, T fallback, const std::string& source) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // A number too large for 64 bits parses as a float; converting that is undefined.
    const json& v = j[key];
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) ||
        (!v.is_number_unsigned() && (v.get<std::int64_t>() < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
                                     v.get<std::int64_t>() > static_cast<std::int64_t>(std::numeric_limits<T>::max()))))
      throw configError(source, std::string("field \"") + key + "\" must be an integer in [" +
                                    std::to_string(std::numeric_limits<T>::min()) + ", " +
                                    std::to_string(std::numeric_limits<T>::max()) + "], got " + v.dump());
  }
  try {
    return j[key].get<T>();
  } catch (const json::exception&) {
    throw configError(source, std::string("field \"") + key + "\" has the wrong type: " + j[key].dump());
  }
}

// eos_token_id: an integer or a list of integers (or null).
std::vector<std::int32_t> idList(const json& j, const char* key) {
  std::vector<std::int32_t> out;
  if (!j.contains(key) || j[key].is_null()) return out;
  if (j[key].is_number_integer()) out.push_back(j[key].get<std::int32_t>());
  else if (j[key].is_array())
    for (const auto& v : j[key])
      if (v.is_number_integer()) out.push_back(v.get<std::int32_t>());
  return out;
}

std::optional<std::int32_t> optId(const json& j, const char* key) {
  if (j.contains(key) && j[key].is_number_integer()) return j[key].get<std::int32_t>();
  return std::nullopt;
}

// One RoPE description ({"rope_type", "factor", ...} and maybe "rope_theta") into a scaling;
// `what` names it in errors ("rope_scaling", "rope_parameters.full_attention").
void parseScaling(const json& scaling, RopeScaling& out, const std::string& what, const std::string& source) {
  out = RopeScaling{};
  std::string type = optional<std::string>(scaling, "rope_type", "", source);
  if (type.empty()) type = optional<std::string>(scaling, "type", "", source);
  if (type.empty() || type == "default") return;
  if (type != "llama3" && type != "linear")
    throw configError(source, "RoPE scaling type \"" + type + "\" is not supported (supported: none, \"llama3\", \"linear\")");
  const auto need = [&](const char* key) {
    if (!scaling.contains(key) || !scaling[key].is_number())
      throw configError(source, type + " " + what + " needs the number \"" + key + "\"");
    const double v = scaling[key].get<double>();
    if (!std::isfinite(v) || v <= 0 || v > static_cast<double>(ModelConfig::kMaxPositions))
      throw configError(source, type + " " + what + " \"" + key + "\" = " + scaling[key].dump() +
                                    " is out of range (0, " + std::to_string(ModelConfig::kMaxPositions) + "]");
    return v;
  };
  out.type = type;
  out.factor = need("factor");
  if (type == "linear") return;
  out.lowFreqFactor = need("low_freq_factor");
  out.highFreqFactor = need("high_freq_factor");
  out.originalMaxPositionEmbeddings = static_cast<std::int64_t>(need("original_max_position_embeddings"));
  if (out.highFreqFactor == out.lowFreqFactor)
    throw configError(source, "llama3 " + what + ": high_freq_factor must differ from low_freq_factor");
}

void parseRope(const json& j, ModelConfig& c, const std::string& source) {
  const bool gemma = c.isGemma();
  c.ropeTheta = optional<double>(j, "rope_theta", gemma ? 1000000.0 : 10000.0, source);
  // Gemma 3 (Hub form): the sliding layers rotate with rope_local_base_freq, unscaled.
  if (gemma) c.ropeLocalTheta = optional<double>(j, "rope_local_base_freq", 10000.0, source);
  const auto perType = [](const json& rp) {
    return rp.contains("full_attention") || rp.contains("sliding_attention");
  };
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object() && perType(j["rope_parameters"])) {
    // transformers 5 with layer types: {"full_attention": {...}, "sliding_attention": {...}}.
    const json& rp = j["rope_parameters"];
    if (rp.contains("full_attention") && rp["full_attention"].is_object()) {
      c.ropeTheta = optional<double>(rp["full_attention"], "rope_theta", c.ropeTheta, source);
      parseScaling(rp["full_attention"], c.ropeScaling, "rope_parameters.full_attention", source);
    }
    if (rp.contains("sliding_attention") && rp["sliding_attention"].is_object()) {
      if (!gemma) throw configError(source, "per-layer-type rope_parameters are only supported for Gemma 3");
      c.ropeLocalTheta = optional<double>(rp["sliding_attention"], "rope_theta", c.ropeLocalTheta, source);
      parseScaling(rp["sliding_attention"], c.ropeLocalScaling, "rope_parameters.sliding_attention", source);
    }
    return;
  }
  // Newer transformers write {"rope_parameters": {"rope_theta", "rope_type", ...}}.
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {
    const json& rp = j["rope_parameters"];
    c.ropeTheta = optional<double>(rp, "rope_theta", c.ropeTheta, source);
    parseScaling(rp, c.ropeScaling, "rope_parameters", source);
  } else if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) {
    parseScaling(j["rope_scaling"], c.ropeScaling, "rope_scaling", source);
  }
}

// Gemma 3's text fields: layer types, window, attention scale, soft-capping, activation.
void parseGemma3(const json& j, ModelConfig& c, const std::string& source) {
  c.hiddenAct = optional<std::string>(j, "hidden_activation", "gelu_pytorch_tanh", source);
  if (c.hiddenAct != "gelu_pytorch_tanh")
    throw configError(source, "hidden_activation \"" + c.hiddenAct + "\" is not supported (supported: gelu_pytorch_tanh)");
  if (optional<bool>(j, "use_bidirectional_attention", false, source))
    throw configError(source, "use_bidirectional_attention = true is not supported (causal decoders only)");
  c.queryPreAttnScalar = optional<double>(j, "query_pre_attn_scalar", 256.0, source);
  if (!(c.queryPreAttnScalar > 0) || !std::isfinite(c.queryPreAttnScalar))
    throw configError(source, "query_pre_attn_scalar must be positive and finite");
  const auto cap = [&](const char* key) {
    const double v = optional<double>(j, key, 0.0, source);
    if (!std::isfinite(v) || v < 0) throw configError(source, std::string(key) + " must be positive or null");
    return v;
  };
  c.finalLogitSoftcap = cap("final_logit_softcapping");
  // transformers' Gemma3Attention never hands attn_logit_softcapping to its attention
  // function (eager would apply it, sdpa ignores it): the scores are not capped.
  c.attnLogitSoftcapDeclared = cap("attn_logit_softcapping");
  c.attnLogitSoftcap = 0;
  c.padTokenId = optId(j, "pad_token_id");
  // Layer types: layer_types, or (older configs) sliding_window_pattern: layer i is
  // global when (i + 1) % pattern == 0.
  if (c.numLayers <= 0 || c.numLayers > ModelConfig::kMaxLayers) return;  // validate() names it
  c.slidingLayers.assign(static_cast<std::size_t>(c.numLayers), true);
  if (j.contains("layer_types") && !j["layer_types"].is_null()) {
    const json& lt = j["layer_types"];
    if (!lt.is_array() || static_cast<std::int64_t>(lt.size()) != c.numLayers)
      throw configError(source, "layer_types must list one type per layer (" + std::to_string(c.numLayers) + ")");
    for (std::size_t i = 0; i < lt.size(); ++i) {
      const std::string t = lt[i].is_string() ? lt[i].get<std::string>() : lt[i].dump();
      if (t != "sliding_attention" && t != "full_attention")
        throw configError(source, "layer_types[" + std::to_string(i) + "] = \"" + t +
                                      "\" is not supported (supported: sliding_attention, full_attention)");
      c.slidingLayers[i] = t == "sliding_attention";
    }
  } else {
    const std::int64_t pattern = optional<std::int64_t>(j, "sliding_window_pattern", 6, source);
    if (pattern < 1) throw configError(source, "sliding_window_pattern must be positive");
    for (std::int64_t i = 0; i < c.numLayers; ++i) c.slidingLayers[static_cast<std::size_t>(i)] = (i + 1) % pattern != 0;
  }
  c.slidingWindow = optional<std::int64_t>(j, "sliding_window", 4096, source);
  if (c.slidingWindow < 1) throw configError(source, "sliding_window must be positive");
  if (c.slidingWindow >= c.maxPositionEmbeddings) c.slidingWindow = 0;  // never reached: full attention
}

}  // namespace

ModelConfig parseModelConfig(const std::string& jsonText, const std::string& source) {
  const json j = parseJsonBounded(jsonText, source);
  if (!j.is_object()) throw configError(source, "not a JSON object");

  ModelConfig c;
  std::string arch;
  if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
      j["architectures"][0].is_string())
    arch = j["architectures"][0].get<std::string>();
  const std::string modelType = optional<std::string>(j, "model_type", "", source);
  if (arch == "LlamaForCausalLM" || (arch.empty() && modelType == "llama")) {
    c.architecture = Architecture::Llama;
    c.architectureName = "LlamaForCausalLM";
    c.modelType = "llama";
  } else if (arch == "Qwen3ForCausalLM" || (arch.empty() && modelType == "qwen3")) {
    c.architecture = Architecture::Qwen3;
    c.architectureName = "Qwen3ForCausalLM";
    c.modelType = "qwen3";
  } else if (arch == "Qwen2ForCausalLM" || (arch.empty() && modelType == "qwen2")) {
    c.architecture = Architecture::Qwen2;
    c.architectureName = "Qwen2ForCausalLM";
    c.modelType = "qwen2";
    c.qkvBias = true;  // Qwen2's q/k/v projections always carry biases
  } else if (arch == "MistralForCausalLM" || (arch.empty() && modelType == "mistral")) {
    c.architecture = Architecture::Mistral;
    c.architectureName = "MistralForCausalLM";
    c.modelType = "mistral";
  } else if (arch == "Gemma3ForCausalLM" || (arch.empty() && modelType == "gemma3_text")) {
    c.architecture = Architecture::Gemma3;
    c.architectureName = "Gemma3ForCausalLM";
    c.modelType = "gemma3_text";
  } else if (arch == "Gemma3ForConditionalGeneration" || (arch.empty() && modelType == "gemma3")) {
    // The multimodal checkpoint nests the text model (text_config; tensors under
    // language_model.*) next to a vision tower.
    throw configError(source, "Gemma3ForConditionalGeneration (the multimodal Gemma 3) is not supported: only the "
                              "text model, Gemma3ForCausalLM (model_type gemma3_text), is");
  } else {
    const std::string named = !arch.empty() ? arch : !modelType.empty() ? "model_type " + modelType : "(none given)";
    throw configError(source, "unsupported architecture " + named +
                                  " (supported: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, "
                                  "Qwen3ForCausalLM, Gemma3ForCausalLM)");
  }

  c.vocabSize = requireInt(j, "vocab_size", source);
  c.hiddenSize = requireInt(j, "hidden_size", source);
  c.intermediateSize = requireInt(j, "intermediate_size", source);
  c.numLayers = requireInt(j, "num_hidden_layers", source);
  c.numHeads = requireInt(j, "num_attention_heads", source);
  c.numKvHeads = optional<std::int64_t>(j, "num_key_value_heads", c.numHeads, source);
  c.headDim = optional<std::int64_t>(j, "head_dim", c.architecture == Architecture::Gemma3 ? 256 : 0, source);
  if (c.headDim == 0 && c.numHeads > 0) c.headDim = c.hiddenSize / c.numHeads;
  c.maxPositionEmbeddings = optional<std::int64_t>(
      j, "max_position_embeddings",
      c.architecture == Architecture::Qwen3 ? 40960 : c.architecture == Architecture::Gemma3 ? 131072 : 2048, source);
  c.rmsNormEps = optional<double>(j, "rms_norm_eps", 1e-6, source);
  parseRope(j, c, source);
  c.tieWordEmbeddings = optional<bool>(j, "tie_word_embeddings", c.isGemma(), source);
  c.torchDtype = optional<std::string>(j, "torch_dtype", "", source);
  if (c.torchDtype.empty()) c.torchDtype = optional<std::string>(j, "dtype", "", source);
  c.bosTokenId = optId(j, "bos_token_id");
  c.eosTokenIds = idList(j, "eos_token_id");
  if (c.isGemma() && !j.contains("bos_token_id")) c.bosTokenId = 2;  // Gemma3TextConfig's defaults
  if (c.isGemma() && !j.contains("eos_token_id")) c.eosTokenIds = {1};

  if (c.isGemma()) {
    parseGemma3(j, c, source);
  } else {
    const std::string act = optional<std::string>(j, "hidden_act", "silu", source);
    if (act != "silu") throw configError(source, "hidden_act \"" + act + "\" is not supported (supported: silu)");
  }
  if (optional<bool>(j, "attention_bias", false, source))
    throw configError(source, "attention_bias = true is not supported");
  if (optional<bool>(j, "mlp_bias", false, source)) throw configError(source, "mlp_bias = true is not supported");
  if (optional<bool>(j, "use_sliding_window", false, source))
    throw configError(source, "use_sliding_window = true is not supported");
  if (c.architecture == Architecture::Mistral && j.contains("sliding_window") && !j["sliding_window"].is_null()) {
    c.slidingWindow = optional<std::int64_t>(j, "sliding_window", 0, source);
    if (c.slidingWindow < 1) throw configError(source, "sliding_window must be positive or null");
    if (c.slidingWindow >= c.maxPositionEmbeddings) c.slidingWindow = 0;  // never reached: full attention
  }
  c.validate(source);
  return c;
}

void ModelConfig::validate(const std::string& source) const {
  const auto bad = [&](const std::string& w) { return std::invalid_argument(source + ": " + w); };
  // Plausible upper bounds, checked before anything loops over layers or
  // multiplies shapes: several times the largest dense checkpoints (Llama-3.1
  // 405B: 126 layers, hidden 16384, MLP 53248, 128 heads; Gemma 3: vocab
  // 262144; Llama 4: 10M positions). Within them no product below overflows.
  const auto range = [&](const char* field, std::int64_t v, std::int64_t hi) {
    if (v <= 0) throw bad(std::string(field) + " must be positive, got " + std::to_string(v));
    if (v > hi)
      throw bad(std::string(field) + " = " + std::to_string(v) + " is out of range (at most " + std::to_string(hi) +
                ")");
  };
  range("vocab_size", vocabSize, kMaxVocabSize);
  range("hidden_size", hiddenSize, kMaxHiddenSize);
  range("intermediate_size", intermediateSize, kMaxIntermediateSize);
  range("num_hidden_layers", numLayers, kMaxLayers);
  range("num_attention_heads", numHeads, kMaxHeads);
  range("num_key_value_heads", numKvHeads, kMaxHeads);
  if (numHeads % numKvHeads != 0)
    throw bad("num_key_value_heads (" + std::to_string(numKvHeads) + ") must divide num_attention_heads (" +
              std::to_string(numHeads) + ")");
  range("head_dim", headDim, kMaxHeadDim);
  if (headDim % 2 != 0) throw bad("head_dim must be even, got " + std::to_string(headDim));
  range("max_position_embeddings", maxPositionEmbeddings, kMaxPositions);
  if (!(rmsNormEps > 0) || !std::isfinite(rmsNormEps)) throw bad("rms_norm_eps must be positive and finite");
  if (!(ropeTheta > 0) || !std::isfinite(ropeTheta)) throw bad("rope_theta must be positive and finite");
  if (ropeLocalTheta < 0 || !std::isfinite(ropeLocalTheta))
    throw bad("rope_local_base_freq must be positive and finite");
  if (!slidingLayers.empty() && static_cast<std::int64_t>(slidingLayers.size()) != numLayers)
    throw bad("layer_types lists " + std::to_string(slidingLayers.size()) + " layers, num_hidden_layers is " +
              std::to_string(numLayers));
  if (parameterCount() > kMaxParameters)
    throw bad("the shape (" + architectureSummary(*this) + ") has " + std::to_string(parameterCount()) +
              " parameters, over the " + std::to_string(kMaxParameters) + " this program accepts");
}

std::int64_t ModelConfig::parameterCount() const {
  const std::int64_t perLayer = hiddenSize * qDim() + 2 * hiddenSize * kvDim() + qDim() * hiddenSize +
                                3 * hiddenSize * intermediateSize + normsPerLayer() * hiddenSize +
                                (hasQkNorm() ? 2 * headDim : 0) + (qkvBias ? qDim() + 2 * kvDim() : 0);
  return vocabSize * hiddenSize * (tieWordEmbeddings ? 1 : 2) + numLayers * perLayer + hiddenSize;
}

ModelConfig loadModelConfigFile(const std::filesystem::path& file) {
  return parseModelConfig(readFileBounded(file, JsonLimits{}.maxBytes), file.string());
}

std::string checkpointFolderProblem(const std::filesystem::path& dir) {
  std::error_code ec;
  const auto st = std::filesystem::status(dir, ec);
  if (!std::filesystem::exists(st)) return "no such folder";
  if (!std::filesystem::is_directory(st))
    return "not a folder (a checkpoint is a folder of config.json, model.safetensors and tokenizer.json)";
  return {};
}

void requireCheckpointFolder(const std::filesystem::path& dir) {
  if (const std::string p = checkpointFolderProblem(dir); !p.empty()) throw std::runtime_error(dir.string() + ": " + p);
}

ModelConfig loadModelConfig(const std::filesystem::path& dir) {
  requireCheckpointFolder(dir);
  const auto cfgPath = dir / "config.json";
  if (!std::filesystem::exists(cfgPath)) throw std::runtime_error(dir.string() + ": no config.json in this folder");
  ModelConfig c = loadModelConfigFile(cfgPath);
  const auto genPath = dir / "generation_config.json";
  if (std::filesystem::exists(genPath)) {
    const json g = readJsonFileBounded(genPath);
    auto& d = c.generation;
    d.present = true;
    if (g.contains("do_sample") && g["do_sample"].is_boolean()) d.doSample = g["do_sample"].get<bool>();
    if (g.contains("temperature") && g["temperature"].is_number()) d.temperature = g["temperature"].get<double>();
    if (g.contains("top_k") && g["top_k"].is_number_integer()) d.topK = g["top_k"].get<int>();
    if (g.contains("top_p") && g["top_p"].is_number()) d.topP = g["top_p"].get<double>();
    d.eosTokenIds = idList(g, "eos_token_id");
    d.bosTokenId = optId(g, "bos_token_id");
  }
  return c;
}

std::string modelConfigToJson(const ModelConfig& c) {
  json j = {{"architectures", {c.architectureName}},
            {"model_type", c.modelType},
            {"vocab_size", c.vocabSize},
            {"hidden_size", c.hiddenSize},
            {"intermediate_size", c.intermediateSize},
            {"num_hidden_layers", c.numLayers},
            {"num_attention_heads", c.numHeads},
            {"num_key_value_heads", c.numKvHeads},
            {"head_dim", c.headDim},
            {"max_position_embeddings", c.maxPositionEmbeddings},
            {"rms_norm_eps", c.rmsNormEps},
            {"rope_theta", c.ropeTheta},
            {"tie_word_embeddings", c.tieWordEmbeddings}};
  if (c.isGemma()) {
    j["hidden_activation"] = c.hiddenAct;
    json types = json::array();
    for (const bool sliding : c.slidingLayers) types.push_back(sliding ? "sliding_attention" : "full_attention");
    j["layer_types"] = types;
    // slidingWindow 0 means the window is never reached: written as the context length.
    j["sliding_window"] = c.slidingWindow > 0 ? c.slidingWindow : c.maxPositionEmbeddings;
    j["query_pre_attn_scalar"] = c.queryPreAttnScalar;
    j["rope_local_base_freq"] = c.ropeLocalTheta;
    j["final_logit_softcapping"] = c.finalLogitSoftcap > 0 ? json(c.finalLogitSoftcap) : json(nullptr);
    j["attn_logit_softcapping"] = c.attnLogitSoftcapDeclared > 0 ? json(c.attnLogitSoftcapDeclared) : json(nullptr);
    if (c.padTokenId) j["pad_token_id"] = *c.padTokenId;
  } else {
    j["hidden_act"] = "silu";
  }
  if (!c.torchDtype.empty()) j["torch_dtype"] = c.torchDtype;
  if (c.architecture == Architecture::Mistral) j["sliding_window"] = c.slidingWindow > 0 ? json(c.slidingWindow) : json(nullptr);
  if (c.bosTokenId) j["bos_token_id"] = *c.bosTokenId;
  if (c.eosTokenIds.size() == 1) j["eos_token_id"] = c.eosTokenIds[0];
  else if (!c.eosTokenIds.empty()) j["eos_token_id"] = c.eosTokenIds;
  if (c.ropeScaling.type == "llama3")
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", c.ropeScaling.factor},
                         {"low_freq_factor", c.ropeScaling.lowFreqFactor},
                         {"high_freq_factor", c.ropeScaling.highFreqFactor},
                         {"original_max_position_embeddings", c.ropeScaling.originalMaxPositionEmbeddings}};
  else if (c.ropeScaling.type == "linear")
    j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", c.ropeScaling.factor}};
  return j.dump(2);
}

ModelConfig llama31_8bConfig() {
  ModelConfig c;
  c.architecture = Architecture::Llama;
  c.architectureName = "LlamaForCausalLM";
  c.modelType = "llama";
  c.vocabSize = 128256;
  c.hiddenSize = 4096;
  c.intermediateSize = 14336;
  c.numLayers = 32;
  c.numHeads = 32;
  c.numKvHeads = 8;
  c.headDim = 128;
  c.maxPositionEmbeddings = 131072;
  c.rmsNormEps = 1e-5;
  c.ropeTheta = 500000.0;
  c.ropeScaling = {"llama3", 8.0, 1.0, 4.0, 8192};
  c.tieWordEmbeddings = false;
  c.torchDtype = "bfloat16";
  c.bosTokenId = 128000;
  c.eosTokenIds = {128001, 128008, 128009};
  return c;
}

std::string architectureSummary(const ModelConfig& c) {
  std::ostringstream s;
  s << c.architectureName << ", " << c.numLayers << " layers, hidden " << c.hiddenSize << ", intermediate "
    << c.intermediateSize << ", " << c.numHeads << " heads / " << c.numKvHeads << " kv heads, head_dim "
    << c.headDim << ", vocab " << c.vocabSize;
  const std::string features = architectureFeatures(c);
  if (!features.empty()) s << ", " << features;
  return s.str();
}

std::string architectureFeatures(const ModelConfig& c) {
  std::ostringstream s;
  if (c.qkvBias) s << "q/k/v biases";
  if (c.isGemma()) {
    std::int64_t sliding = 0;
    for (const bool b : c.slidingLayers) sliding += b ? 1 : 0;
    s << "Gemma 3: " << sliding << " sliding";
    if (c.slidingWindow > 0) s << " (window " << c.slidingWindow << ")";
    s << " + " << (c.numLayers - sliding) << " global layers, RoPE " << c.ropeLocalTheta << " local / " << c.ropeTheta
      << " global";
    if (!c.ropeScaling.type.empty()) s << " (" << ropeScalingText(c.ropeScaling) << ")";
    s << ", q/k RMSNorm, (1 + w) norms around attention and MLP, GELU-tanh, query_pre_attn_scalar "
      << c.queryPreAttnScalar;
    if (c.finalLogitSoftcap > 0) s << ", final logit soft-cap " << c.finalLogitSoftcap;
    if (c.attnLogitSoftcapDeclared > 0)
      s << ", attn_logit_softcapping " << c.attnLogitSoftcapDeclared << " declared, not applied (as transformers)";
  } else {
    if (c.hasQkNorm()) s << (s.tellp() > 0 ? ", " : "") << "q/k RMSNorm";
    if (c.slidingWindow > 0) s << (s.tellp() > 0 ? ", " : "") << "sliding window " << c.slidingWindow;
  }
  return s.str();
}

std::string ropeScalingText(const RopeScaling& r) {
  std::ostringstream s;
  if (r.type.empty()) return "none";
  s << r.type << " (factor " << r.factor;
  if (r.type == "llama3")
    s << ", low " << r.lowFreqFactor << ", high " << r.highFreqFactor << ", original " << r.originalMaxPositionEmbeddings;
  s << ")";
  return s.str();
}

double ModelConfig::attentionScale() const {
  // transformers: query_pre_attn_scalar**-0.5 (Gemma), head_dim**-0.5 (the others).
  if (queryPreAttnScalar > 0) return std::pow(queryPreAttnScalar, -0.5);
  return 1.0 / std::sqrt(static_cast<double>(headDim));
}

}  // namespace sdw::gpu

namespace sdw::gpu {

std::string canonicalDtype(const std::string& dtype) {
  if (dtype == "float32" || dtype == "fp32" || dtype == "f32" || dtype == "float") return "float32";
  if (dtype == "bfloat16" || dtype == "bf16") return "bfloat16";
  if (dtype == "float16" || dtype == "fp16" || dtype == "f16" || dtype == "half") return "float16";
  throw std::invalid_argument("unsupported dtype '" + dtype + "' (supported: float32, bfloat16, float16)");
}

std::size_t dtypeBytes(const std::string& dtype) {
  const std::string c = canonicalDtype(dtype);
  return c == "float32" ? 4 : 2;
}

std::vector<ModuleInfo> projectionModules(const ModelConfig& c, const std::string& dtype) {
  const std::string dt = canonicalDtype(dtype);
  const std::uint64_t eb = dtypeBytes(dt);
  std::vector<ModuleInfo> out;
  const auto add = [&](std::string name, std::string kind, int layer, std::int64_t o, std::int64_t i) {
    out.push_back({std::move(name), std::move(kind), layer, o, i, dt,
                   static_cast<std::uint64_t>(o) * static_cast<std::uint64_t>(i) * eb});
  };
  for (int l = 0; l < c.numLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "self_attn.q_proj", "q_proj", l, c.qDim(), c.hiddenSize);
    add(p + "self_attn.k_proj", "k_proj", l, c.kvDim(), c.hiddenSize);
    add(p + "self_attn.v_proj", "v_proj", l, c.kvDim(), c.hiddenSize);
    add(p + "self_attn.o_proj", "o_proj", l, c.hiddenSize, c.qDim());
    add(p + "mlp.gate_proj", "gate_proj", l, c.intermediateSize, c.hiddenSize);
    add(p + "mlp.up_proj", "up_proj", l, c.intermediateSize, c.hiddenSize);
    add(p + "mlp.down_proj", "down_proj", l, c.hiddenSize, c.intermediateSize);
  }
  add("lm_head", "lm_head", -1, c.vocabSize, c.hiddenSize);
  return out;
}

ModelConfig resolveShapeConfig(const std::string& spec, const std::filesystem::path& configsDir, std::string& name) {
  namespace fs = std::filesystem;
  if (spec == "llama3-8b" || spec == "llama-3.1-8b") {
    name = "llama-3.1-8b";
    return llama31_8bConfig();
  }
  if (fs::is_regular_file(spec)) {
    name = fs::path(spec).stem().string();
    return loadModelConfigFile(spec);
  }
  if (fs::is_directory(spec) && fs::exists(fs::path(spec) / "config.json")) {
    name = fs::path(spec).filename().string();
    return loadModelConfigFile(fs::path(spec) / "config.json");
  }
  const fs::path shipped = configsDir / (spec + ".json");
  if (!spec.empty() && spec.find('/') == std::string::npos && fs::exists(shipped)) {
    name = spec;
    return loadModelConfigFile(shipped);
  }
  throw std::invalid_argument("model shape '" + spec + "': not llama3-8b, a config file, or a name in " +
                              configsDir.string());
}

}  // namespace sdw::gpu
