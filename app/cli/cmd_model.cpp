// sdw-cli generate / model-info: run a checkpoint from the command line
// (tokens streamed as they come) and describe its architecture and modules.

#include "app/cli/cli_util.h"
#include "app/cli/command.h"
#include "core/chat_format.h"
#include "core/decoding.h"
#include "core/format.h"
#include "core/safetensors.h"
#include "core/timing.h"
#include "core/tokenizer.h"
#include "gpu/activation_thresholds.h"
#include "gpu/device.h"
#include "gpu/model.h"
#include "gpu/spmv.h"
#include "gpu/model_config.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

namespace sdw::cli {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------- generate
int runGenerate(const Args& a) {
  const fs::path dir = a.get("model");
  if (dir.empty()) throw UsageError("--model DIR is required");
  if (!a.has("prompt")) throw UsageError("--prompt TEXT is required");
  const std::string prompt = a.get("prompt");
  const long long maxNew = a.getInt("max-new-tokens", 60);
  if (maxNew < 0) throw UsageError("--max-new-tokens must be >= 0");
  const std::string chat = a.get("chat", "auto");
  if (chat != "auto" && chat != "plain") throw UsageError("--chat expects auto or plain, got '" + chat + "'");
  gpu::GenerationOptions go;
  go.maxNewTokens = static_cast<int>(maxNew);
  go.sampling.temperature = a.getDouble("temperature", 0.0);
  go.sampling.topK = static_cast<int>(a.getInt("top-k", 0));
  go.sampling.topP = a.getDouble("top-p", 1.0);
  go.sampling.seed = static_cast<std::uint64_t>(a.getInt("seed", 0));
  if (go.sampling.topK < 0) throw UsageError("--top-k must be >= 0");
  if (!(go.sampling.topP > 0 && go.sampling.topP <= 1)) throw UsageError("--top-p must be in (0, 1]");
  const bool json = a.has("json");

  gpu::requireCheckpointFolder(dir);
  if (!fs::exists(dir / "tokenizer.json")) throw std::runtime_error(dir.string() + ": no tokenizer.json in this folder");
  const Tokenizer tok = Tokenizer::fromFile(dir / "tokenizer.json");
  const auto t0 = std::chrono::steady_clock::now();
  gpu::LoadOptions lo;
  lo.device = a.get("device", "cpu");
  lo.dtype = gpu::canonicalDtype(a.get("dtype", "float32"));
  lo.linear = gpu::parseLinear(a.get("linear", "cublas"));
  if (a.has("sparse-file")) lo.sparseFile = a.get("sparse-file");
  const ActivationSparsityArgs sparsity = activationSparsityFrom(a);
  gpu::applyActivationSparsity(lo, sparsity.sparsity, sparsity.thresholds, gpu::loadModelConfig(dir));
  if (lo.device != "cpu")
    lo.tuningFile = gpu::defaultTuningPath(fs::path(SDW_SOURCE_DIR) / "resources", gpu::deviceInfo().name);
  const auto model = gpu::Model::load(dir, lo);
  const double loadSeconds = secondsSince(t0);

  const ChatFamily family = chat == "plain" ? ChatFamily::Plain : detectChatFamily(tok, dir);
  const std::vector<std::int32_t> ids = encodePrompt(tok, family, prompt);
  const gpu::ModelConfig& config = model->config();
  go.stopIds = mergeStopIds(tok.stopIds(), config.eosTokenIds, config.generation.eosTokenIds);

  StreamDecoder stream(tok, /*skipSpecialTokens=*/true);
  const auto r = model->generate(ids, go, [&](std::int32_t id) {
    const std::string piece = stream.push(id);
    if (!json && !piece.empty()) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
    return true;
  });
  const std::string tail = stream.flush();
  const auto n = static_cast<double>(r.tokens.size());
  const double decodeRate = r.tokens.size() > 1 && r.decodeSeconds > 0 ? (n - 1) / r.decodeSeconds : 0.0;
  const double overall = r.prefillSeconds + r.decodeSeconds > 0 ? n / (r.prefillSeconds + r.decodeSeconds) : 0.0;

  if (json) {
    const nlohmann::json j = {{"model", dir.string()},
                              {"device", lo.device},
                              {"dtype", lo.dtype},
                              {"compute_dtype", model->computeDtype()},
                              {"linear", gpu::linearName(lo.linear)},
                              {"engine", model->engineDescription()},
                              {"activation_sparsity", sparsity.sparsity},
                              {"activation_thresholds", sparsity.thresholds.string()},
                              {"device_memory_bytes", model->deviceBytes()},
                              {"chat_format", chatFamilyName(family)},
                              {"prompt", prompt},
                              {"prompt_ids", ids},
                              {"tokens", r.tokens},
                              {"text", tok.decode(r.tokens, /*skipSpecialTokens=*/true)},
                              {"stop_reason", gpu::stopReasonName(r.stopReason)},
                              {"new_tokens", r.tokens.size()},
                              {"seed", go.sampling.seed},
                              {"temperature", go.sampling.temperature},
                              {"top_k", go.sampling.topK},
                              {"top_p", go.sampling.topP},
                              {"load_seconds", loadSeconds},
                              {"prefill_seconds", r.prefillSeconds},
                              {"decode_seconds", r.decodeSeconds},
                              {"decode_tokens_per_second", decodeRate},
                              {"tokens_per_second", overall}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::fwrite(tail.data(), 1, tail.size(), stdout);
    std::cout << std::endl;
    std::fprintf(stderr, "[%zu tokens, %s; prompt %d tokens in %.3f s; decode %.1f tokens/s; %s %s, load %.2f s; %s]\n",
                 r.tokens.size(), gpu::stopReasonName(r.stopReason), r.promptTokens, r.prefillSeconds, decodeRate,
                 lo.device.c_str(), lo.dtype.c_str(), loadSeconds, model->engineDescription().c_str());
  }
  return 0;
}

// ---------------------------------------------------------------- model-info
int runModelInfo(const Args& a) {
  const fs::path dir = a.positional.at(0);
  const gpu::ModelConfig c = gpu::loadModelConfig(dir);
  std::string dtype = a.get("dtype");
  if (dtype.empty()) dtype = c.torchDtype.empty() ? "bfloat16" : c.torchDtype;
  dtype = gpu::canonicalDtype(dtype);
  const auto mods = gpu::projectionModules(c, dtype);
  const auto params = static_cast<double>(c.parameterCount());

  // The checkpoint's files, from their headers only (mapped, not read).
  nlohmann::json files = nlohmann::json::array();
  std::uint64_t onDisk = 0;
  std::string ckptError;
  try {
    const auto ckpt = SafetensorsCheckpoint::open(dir);
    for (const auto& f : ckpt.files()) files.push_back(f.filename().string());
    onDisk = ckpt.totalTensorBytes();
  } catch (const std::exception& e) {
    ckptError = e.what();
  }

  std::uint64_t projBytes = 0;
  for (const auto& m : mods)
    if (m.kind != "lm_head") projBytes += m.bytes;

  if (a.has("json")) {
    nlohmann::json jm = nlohmann::json::array();
    for (const auto& m : mods)
      jm.push_back({{"name", m.name}, {"kind", m.kind}, {"layer", m.layer}, {"out_features", m.outFeatures},
                    {"in_features", m.inFeatures}, {"dtype", m.dtype}, {"bytes", m.bytes}});
    nlohmann::json j = {{"model", dir.string()},
                        {"architecture", c.architectureName},
                        {"model_type", c.modelType},
                        {"layers", c.numLayers},
                        {"hidden_size", c.hiddenSize},
                        {"intermediate_size", c.intermediateSize},
                        {"heads", c.numHeads},
                        {"kv_heads", c.numKvHeads},
                        {"head_dim", c.headDim},
                        {"vocab_size", c.vocabSize},
                        {"max_position_embeddings", c.maxPositionEmbeddings},
                        {"rope_theta", c.ropeTheta},
                        {"rope_scaling", c.ropeScaling.type.empty() ? "none" : c.ropeScaling.type},
                        {"features", architectureFeatures(c)},
                        {"tie_word_embeddings", c.tieWordEmbeddings},
                        {"torch_dtype", c.torchDtype},
                        {"parameters", c.parameterCount()},
                        {"bytes", {{"float32", c.parameterCount() * 4}, {"bfloat16", c.parameterCount() * 2},
                                   {"float16", c.parameterCount() * 2}}},
                        {"projection_bytes", projBytes},
                        {"module_dtype", dtype},
                        {"checkpoint_files", files},
                        {"checkpoint_tensor_bytes", onDisk},
                        {"tokenizer", fs::exists(dir / "tokenizer.json")},
                        {"modules", jm}};
    if (!ckptError.empty()) j["checkpoint_error"] = ckptError;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("model:          %s\n", dir.string().c_str());
  std::printf("architecture:   %s (%s)\n", c.architectureName.c_str(), c.modelType.c_str());
  if (const std::string f = architectureFeatures(c); !f.empty()) std::printf("features:       %s\n", f.c_str());
  std::printf("layers:         %lld\n", static_cast<long long>(c.numLayers));
  std::printf("hidden:         %lld (MLP %lld)\n", static_cast<long long>(c.hiddenSize),
              static_cast<long long>(c.intermediateSize));
  std::printf("heads:          %lld query, %lld key/value, head_dim %lld%s\n", static_cast<long long>(c.numHeads),
              static_cast<long long>(c.numKvHeads), static_cast<long long>(c.headDim),
              c.hasQkNorm() ? ", q/k RMSNorm" : "");
  std::printf("vocab:          %lld%s\n", static_cast<long long>(c.vocabSize),
              c.tieWordEmbeddings ? " (embeddings tied to lm_head)" : "");
  char localRope[64] = "";
  if (c.ropeLocalTheta > 0) std::snprintf(localRope, sizeof localRope, "; sliding layers: theta %g", c.ropeLocalTheta);
  std::printf("context:        %lld, RoPE theta %g%s%s\n", static_cast<long long>(c.maxPositionEmbeddings), c.ropeTheta,
              c.ropeScaling.type.empty() ? "" : (", " + c.ropeScaling.type + " scaling").c_str(), localRope);
  std::printf("parameters:     %.3f M\n", params / 1e6);
  const std::string bytes4 = humanBytes(static_cast<std::uint64_t>(params * 4));
  const std::string bytes2 = humanBytes(static_cast<std::uint64_t>(params * 2));
  std::printf("bytes:          float32 %s, bfloat16 %s, float16 %s\n", bytes4.c_str(), bytes2.c_str(), bytes2.c_str());
  if (ckptError.empty())
    std::printf("checkpoint:     %zu file(s), %s of tensors (declared dtype %s)\n", files.size(),
                humanBytes(onDisk).c_str(), c.torchDtype.empty() ? "?" : c.torchDtype.c_str());
  else
    std::printf("checkpoint:     unreadable: %s\n", ckptError.c_str());
  std::printf("\nmodules (%zu linear projections, %s):\n", mods.size(), dtype.c_str());
  for (const auto& m : mods)
    std::printf("  %-44s [%6lld, %6lld]  %s\n", m.name.c_str(), static_cast<long long>(m.outFeatures),
                static_cast<long long>(m.inFeatures), humanBytes(static_cast<std::uint64_t>(m.bytes)).c_str());
  return 0;
}

Command makeGenerateCommand() {
  Command c{
    "generate",
    "generate text with a checkpoint, streaming tokens",
    "generate --model DIR --prompt TEXT [--max-new-tokens N] [--device cpu|cuda] [--dtype float32|bfloat16|float16] "
    "[--linear cublas|dense|sparse] [--sparse-file FILE] [--activation-sparsity P [--activation-thresholds RUN]] "
    "[--seed S] [--temperature T] [--top-k K] [--top-p P] [--chat auto|plain] [--json]",
    "Loads a Hugging Face checkpoint folder (config.json, safetensors, tokenizer.json) and\n"
    "continues the prompt, printing text as tokens arrive; tokens/s go to stderr. Greedy\n"
    "unless --temperature > 0 (then seeded sampling with optional top-k / top-p). With\n"
    "--chat auto, instruct models get their chat format (Qwen3, Llama-3); plain sends the\n"
    "text as is (after what the tokenizer adds, e.g. bos). Generation ends at the model's stop tokens.",
    {{"model", "DIR", "checkpoint folder", ""},
     {"prompt", "TEXT", "prompt text", ""},
     {"max-new-tokens", "N", "tokens to generate at most", "60"},
     {"device", "DEV", "cpu, cuda or cuda:N", "cpu"},
     {"dtype", "DTYPE", "float32, bfloat16 or float16", "float32"},
     {"linear", "KIND", "how projections run: cublas, dense (our GEMV) or sparse (our bitmask SpMV over DIR/model.sdwsparse)", "cublas"},
     {"sparse-file", "FILE", "the packed file for --linear sparse (default DIR/model.sdwsparse)", ""},
     {"seed", "S", "sampling seed", "0"},
     {"temperature", "T", "0 = greedy", "0"},
     {"top-k", "K", "keep the K most likely tokens (0 = off)", "0"},
     {"top-p", "P", "nucleus sampling mass (1 = off)", "1"},
     {"chat", "MODE", "auto or plain", "auto"},
     {"json", "", "machine-readable output at the end instead of streaming", ""}},
    0,
    0,
    runGenerate};
  const auto at = std::find_if(c.options.begin(), c.options.end(),
                               [](const OptionSpec& o) { return o.name == "sparse-file"; });
  const auto sparsity = activationSparsityOptions("the model");
  c.options.insert(at + 1, sparsity.begin(), sparsity.end());
  return c;
}

const Register regGenerate{makeGenerateCommand()};

const Register regModelInfo{Command{
    "model-info",
    "describe a checkpoint: architecture, sizes and its linear modules",
    "model-info DIR [--dtype DTYPE] [--json]",
    "Reads config.json and the safetensors headers of a checkpoint folder (no weights are\n"
    "loaded) and prints the architecture (layers, hidden size, heads, KV heads, head_dim,\n"
    "vocab), the parameter count, bytes per dtype and every linear projection with its\n"
    "[out, in] shape and bytes.",
    {{"dtype", "DTYPE", "dtype for module bytes (default: the checkpoint's)", ""},
     {"json", "", "machine-readable output", ""}},
    1,
    1,
    runModelInfo}};

}  // namespace
}  // namespace sdw::cli
