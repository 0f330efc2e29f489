// Model: checkpoint loading (safetensors, tensor by tensor from the mapping),
// random initialisation, the module registry and observers. Generation lives
// in gpu/generation.cpp, the forward pass in gpu/llama_forward.cpp.

#include "gpu/model.h"

#include "core/compressed_tensors.h"
#include "core/safetensors.h"
#include "core/sparse_file.h"
#include "gpu/device.h"
#include "gpu/engine_internal.h"
#include "gpu/model_internal.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>

namespace sdw::gpu {

const char* phaseName(Phase p) { return p == Phase::Prefill ? "prefill" : "decode"; }

const char* stopReasonName(StopReason r) {
  switch (r) {
    case StopReason::MaxTokens: return "max_tokens";
    case StopReason::StopToken: return "stop_token";
    case StopReason::Callback: return "stopped";
    case StopReason::ContextFull: return "context_full";
  }
  return "?";
}

at::ScalarType scalarTypeOf(const std::string& dtype) {
  const std::string c = canonicalDtype(dtype);
  if (c == "bfloat16") return at::kBFloat16;
  if (c == "float16") return at::kHalf;
  return at::kFloat;
}

c10::Device parseDevice(const std::string& device) {
  if (device == "cpu") return c10::Device(c10::kCPU);
  if (device == "cuda" || device.rfind("cuda:", 0) == 0) {
    if (!deviceInfo().cudaAvailable)
      throw std::runtime_error("device '" + device + "' requested: " + describeDevice(deviceInfo()));
    return device == "cuda" ? c10::Device(c10::kCUDA, 0) : c10::Device(device);
  }
  throw std::invalid_argument("unknown device '" + device + "' (supported: cpu, cuda, cuda:N)");
}

void validateActivationSparsity(const LoadOptions& o, int numLayers) {
  const auto check = [](double p) {
    if (!(p >= 0 && p < 1))
      throw std::invalid_argument("activation sparsity " + std::to_string(p) + " is outside [0, 1)");
  };
  check(o.activationSparsity);
  if (!o.activationSparsityPerLayer.empty()) {
    if (static_cast<int>(o.activationSparsityPerLayer.size()) != numLayers)
      throw std::invalid_argument("activation sparsity per layer: " + std::to_string(o.activationSparsityPerLayer.size()) +
                                  " values for a model of " + std::to_string(numLayers) + " layers");
    for (const double p : o.activationSparsityPerLayer) check(p);
  }
  if (o.activationThresholds.empty()) return;
  const bool topK = o.activationSparsity > 0 ||
                    std::any_of(o.activationSparsityPerLayer.begin(), o.activationSparsityPerLayer.end(),
                                [](double p) { return p > 0; });
  if (topK)
    throw std::invalid_argument("activation thresholds and a top-k activation sparsity exclude each other: give one");
  if (static_cast<int>(o.activationThresholds.size()) != numLayers)
    throw std::invalid_argument("activation thresholds: " + std::to_string(o.activationThresholds.size()) +
                                " layers for a model of " + std::to_string(numLayers) + " layers");
  for (const InputThresholds& layer : o.activationThresholds)
    for (const float t : layer)
      if (!std::isfinite(t)) throw std::invalid_argument("activation thresholds: a threshold is not finite");
}

namespace {

std::unique_ptr<Model::Impl> makeImpl(const ModelConfig& config, const LoadOptions& options) {
  config.validate("model config");
  auto m = std::make_unique<Model::Impl>();
  m->config = config;
  m->options = options;
  m->options.dtype = canonicalDtype(options.dtype);
  m->device = parseDevice(options.device);
  m->storeDtype = scalarTypeOf(m->options.dtype);
  // No fp16 matmul on CPU and bf16 is slow there: weights are rounded to the
  // requested dtype but kept and computed in fp32.
  m->computeDtype = m->device.is_cpu() ? at::kFloat : m->storeDtype;
  validateActivationSparsity(options, static_cast<int>(config.numLayers));
  setActivationSparsity(*m, !options.activationSparsityPerLayer.empty()
                                ? options.activationSparsityPerLayer
                                : std::vector<double>(static_cast<std::size_t>(config.numLayers),
                                                      options.activationSparsity));
  if (!options.activationThresholds.empty()) setActivationThresholds(*m, options.activationThresholds);
  for (std::int64_t l = 0; l < config.numLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    m->names.push_back({p + "self_attn.q_proj", p + "self_attn.k_proj", p + "self_attn.v_proj",
                        p + "self_attn.o_proj", p + "mlp.gate_proj", p + "mlp.up_proj", p + "mlp.down_proj"});
  }
  return m;
}

// The tensors a config needs, in checkpoint order, with their shapes and where they go.
struct Slot {
  std::string name;
  std::vector<std::int64_t> shape;
  at::Tensor* dst;
};

std::vector<Slot> expectedTensors(Model::Impl& m, bool withLmHead) {
  const ModelConfig& c = m.config;
  std::vector<Slot> s;
  m.w.layers.resize(static_cast<std::size_t>(c.numLayers));
  s.push_back({"model.embed_tokens.weight", {c.vocabSize, c.hiddenSize}, &m.w.embed});
  for (std::int64_t l = 0; l < c.numLayers; ++l) {
    auto& L = m.w.layers[static_cast<std::size_t>(l)];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    s.push_back({p + "input_layernorm.weight", {c.hiddenSize}, &L.inputNorm});
    s.push_back({p + "self_attn.q_proj.weight", {c.qDim(), c.hiddenSize}, &L.q});
    s.push_back({p + "self_attn.k_proj.weight", {c.kvDim(), c.hiddenSize}, &L.k});
    s.push_back({p + "self_attn.v_proj.weight", {c.kvDim(), c.hiddenSize}, &L.v});
    if (c.qkvBias) {
      s.push_back({p + "self_attn.q_proj.bias", {c.qDim()}, &L.qBias});
      s.push_back({p + "self_attn.k_proj.bias", {c.kvDim()}, &L.kBias});
      s.push_back({p + "self_attn.v_proj.bias", {c.kvDim()}, &L.vBias});
    }
    s.push_back({p + "self_attn.o_proj.weight", {c.hiddenSize, c.qDim()}, &L.o});
    if (c.hasQkNorm()) {
      s.push_back({p + "self_attn.q_norm.weight", {c.headDim}, &L.qNorm});
      s.push_back({p + "self_attn.k_norm.weight", {c.headDim}, &L.kNorm});
    }
    s.push_back({p + "post_attention_layernorm.weight", {c.hiddenSize}, &L.postNorm});
    if (c.isGemma()) {
      s.push_back({p + "pre_feedforward_layernorm.weight", {c.hiddenSize}, &L.preFfnNorm});
      s.push_back({p + "post_feedforward_layernorm.weight", {c.hiddenSize}, &L.postFfnNorm});
    }
    s.push_back({p + "mlp.gate_proj.weight", {c.intermediateSize, c.hiddenSize}, &L.gate});
    s.push_back({p + "mlp.up_proj.weight", {c.intermediateSize, c.hiddenSize}, &L.up});
    s.push_back({p + "mlp.down_proj.weight", {c.hiddenSize, c.intermediateSize}, &L.down});
  }
  s.push_back({"model.norm.weight", {c.hiddenSize}, &m.w.finalNorm});
  if (withLmHead) s.push_back({"lm_head.weight", {c.vocabSize, c.hiddenSize}, &m.w.lmHead});
  return s;
}

std::string shapeString(const std::vector<std::int64_t>& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Host tensor in the file's dtype -> the model's device and storage layout.
at::Tensor place(const Model::Impl& m, const at::Tensor& src) {
  if (m.device.is_cpu()) {
    at::Tensor t = src;
    if (m.storeDtype != at::kFloat) t = t.to(m.storeDtype);  // round like the requested dtype
    return t.to(at::kFloat, /*non_blocking=*/false, /*copy=*/true);
  }
  return src.to(m.device, m.storeDtype, /*non_blocking=*/false, /*copy=*/true);
}

}  // namespace

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;

std::unique_ptr<Model> Model::load(const std::filesystem::path& dir, const LoadOptions& options,
                                   const ProgressFn& progress) {
  const ModelConfig config = loadModelConfig(dir);
  auto m = makeImpl(config, options);
  const SafetensorsCheckpoint ckpt = SafetensorsCheckpoint::open(dir);
  const bool haveLmHead = ckpt.find("lm_head.weight").view != nullptr;
  if (!haveLmHead && !config.tieWordEmbeddings)
    throw std::runtime_error(dir.string() + ": tensor 'lm_head.weight' is missing and tie_word_embeddings is false");
  // A tied model uses the embedding even when the file also carries lm_head (as transformers does).
  const auto slots = expectedTensors(*m, !config.tieWordEmbeddings);

  std::map<std::string, std::string> dtypes;  // per tensor, as stored in the checkpoint
  // A compressed-tensors sparse checkpoint: its projections are decompressed, or go
  // straight to the packed format when the sparse linear runs and the pattern allows.
  std::unique_ptr<ct::Reader> compressed;
  if (ct::declaredFormat(dir)) compressed = std::make_unique<ct::Reader>(dir);
  std::optional<sparse::Pattern> packPattern;
  if (compressed && options.linear == Linear::Sparse) {
    try {
      const sparse::Pattern pat = sparse::parsePattern(compressed->structure());
      if (sparse::isSupported(pat)) packPattern = pat;
    } catch (const std::exception&) {
    }
    if (!packPattern)
      throw std::runtime_error(dir.string() + ": the checkpoint's sparsity (" + compressed->structure() +
                               ") is no 50% N:M pattern the bitmask kernel takes (2:4, 4:8, 8:16, 16:32)");
  }
  std::vector<sparse::SparseModule> prepacked;
  Progress p;
  p.unit = "bytes";
  for (const auto& s : slots) {
    const auto e = ckpt.find(s.name);
    if (e.view) p.total += static_cast<double>(e.view->bytes.size());
  }
  reportOrThrow(progress, p);
  for (const auto& s : slots) {
    const auto e = ckpt.find(s.name);
    const std::string prefix = s.name.size() > 7 ? s.name.substr(0, s.name.size() - 7) : s.name;
    if (!e.view && compressed && compressed->compressed(prefix)) {
      if (packPattern) {
        if (auto pk = compressed->packed(prefix, *packPattern); pk && std::vector<std::int64_t>{pk->rows, pk->cols} == s.shape) {
          dtypes[s.name] = pk->dtype == sparse::DType::BF16 ? "BF16" : "F16";
          prepacked.push_back({prefix, std::move(*pk)});
          continue;  // held packed only
        }
      }
      const ct::DenseWeight d = compressed->dense(prefix);
      if (std::vector<std::int64_t>{d.rows, d.cols} != s.shape)
        throw std::runtime_error(dir.string() + ": compressed tensor '" + prefix + "' has shape " +
                                 shapeString({d.rows, d.cols}) + ", the config needs " + shapeString(s.shape));
      const at::Tensor src = at::from_blob(const_cast<float*>(d.values.data()), s.shape, at::TensorOptions().dtype(at::kFloat));
      *s.dst = place(*m, src.to(scalarTypeOf(d.dtype == "BF16" ? "bfloat16" : d.dtype == "F16" ? "float16" : "float32")));
      dtypes[s.name] = d.dtype;
      continue;
    }
    if (!e.view)
      throw std::runtime_error(dir.string() + ": tensor '" + s.name + "' is missing from the checkpoint (" +
                               std::to_string(ckpt.files().size()) + " file(s))");
    const TensorView& v = *e.view;
    if (v.shape != s.shape)
      throw std::runtime_error(e.file->string() + ": tensor '" + s.name + "' has shape " + shapeString(v.shape) +
                               ", the config needs " + shapeString(s.shape));
    at::ScalarType st;
    if (v.dtype == "F32") st = at::kFloat;
    else if (v.dtype == "BF16") st = at::kBFloat16;
    else if (v.dtype == "F16") st = at::kHalf;
    else
      throw std::runtime_error(e.file->string() + ": tensor '" + s.name + "' has dtype " + v.dtype +
                               " (supported: F32, BF16, F16)");
    try {
      // from_blob wraps the mapped bytes without copying; place() makes the one copy.
      const at::Tensor src = at::from_blob(const_cast<std::byte*>(v.bytes.data()), v.shape,
                                           at::TensorOptions().dtype(st));
      *s.dst = place(*m, src);
    } catch (const c10::Error& err) {
      throw std::runtime_error(e.file->string() + ": tensor '" + s.name + "': " + err.what_without_backtrace());
    }
    dtypes[s.name] = v.dtype;
    p.done += static_cast<double>(v.bytes.size());
    p.stage = s.name;
    reportOrThrow(progress, p);
  }
  if (config.tieWordEmbeddings) m->w.lmHead = m->w.embed;
  setupEngine(*m, dir, dtypes, std::move(prepacked), compressed != nullptr);
  return std::unique_ptr<Model>(new Model(std::move(m)));
}

std::unique_ptr<Model> Model::randomInit(const ModelConfig& config, const LoadOptions& options, std::uint64_t seed,
                                         double stddev) {
  auto m = makeImpl(config, options);
  const auto slots = expectedTensors(*m, !config.tieWordEmbeddings);
  const auto opts = at::TensorOptions().dtype(m->device.is_cpu() ? at::kFloat : m->storeDtype).device(m->device);
  at::Generator gen;
  if (m->device.is_cpu()) gen = at::detail::createCPUGenerator(seed);
  else at::manual_seed(seed);  // CUDA: the default generators (global state)
  for (const auto& s : slots) {
    at::Tensor t = at::empty(s.shape, opts);
    const bool bias = s.name.size() > 5 && s.name.compare(s.name.size() - 5, 5, ".bias") == 0;
    if (s.shape.size() == 1 && !bias) t.fill_(config.isGemma() ? 0.0 : 1.0);  // norms: scale 1 (Gemma: 1 + w)
    else if (gen.defined()) t.normal_(0.0, stddev, gen);
    else t.normal_(0.0, stddev);
    if (m->device.is_cpu() && m->storeDtype != at::kFloat) t = t.to(m->storeDtype).to(at::kFloat);
    *s.dst = t;
  }
  if (config.tieWordEmbeddings) m->w.lmHead = m->w.embed;
  setupEngine(*m, {}, {}, {}, false);
  return std::unique_ptr<Model>(new Model(std::move(m)));
}

const ModelConfig& Model::config() const { return impl_->config; }
const LoadOptions& Model::options() const { return impl_->options; }

std::string Model::computeDtype() const {
  return impl_->computeDtype == at::kFloat ? "float32" : impl_->computeDtype == at::kBFloat16 ? "bfloat16" : "float16";
}

std::vector<ModuleInfo> Model::modules() const { return projectionModules(impl_->config, impl_->options.dtype); }

std::uint64_t Model::parameterCount() const { return static_cast<std::uint64_t>(impl_->config.parameterCount()); }

std::uint64_t Model::weightBytes() const { return parameterCount() * dtypeBytes(impl_->options.dtype); }

std::vector<float> Model::logits(std::span<const std::int32_t> ids) {
  if (ids.empty()) throw std::invalid_argument("logits: empty token sequence");
  auto& m = *impl_;
  for (const auto id : ids)
    if (id < 0 || id >= m.config.vocabSize)
      throw std::invalid_argument("logits: token id " + std::to_string(id) + " outside the vocabulary [0, " +
                                  std::to_string(m.config.vocabSize) + ")");
  const auto T = static_cast<std::int64_t>(ids.size());
  try {
    const c10::NoGradGuard noGrad;
    ForwardInput in;
    in.ids = at::from_blob(const_cast<std::int32_t*>(ids.data()), {1, T}, at::TensorOptions().dtype(at::kInt))
                 .to(m.device, at::kLong);
    in.positions = at::arange(T, at::TensorOptions().dtype(at::kLong).device(m.device)).unsqueeze(0);
    in.positionLimit = T;
    ObserveContext ctx{Phase::Prefill, {{0, 0, 0, T, 0}}};
    if (m.observed()) in.observe = &ctx;
    const at::Tensor out = forward(m, in, nullptr).squeeze(0).to(at::kCPU, at::kFloat).contiguous();  // [T, V]
    return {out.data_ptr<float>(), out.data_ptr<float>() + out.numel()};
  } catch (const c10::Error& e) {
    throw std::runtime_error(std::string("forward failed: ") + e.what_without_backtrace());
  }
}

int Model::addObserver(ActivationObserver observer) {
  const int id = impl_->nextObserverId++;
  impl_->observers.emplace(id, std::move(observer));
  return id;
}

void Model::removeObserver(int id) {
  impl_->observers.erase(id);
  impl_->tensorObservers.erase(id);
}

int addTensorObserver(Model& model, TensorObserver observer) {
  auto& m = model.impl();
  const int id = m.nextObserverId++;
  m.tensorObservers.emplace(id, std::move(observer));
  return id;
}

}  // namespace sdw::gpu
