// The decoder forward pass (Llama, Mistral, Qwen2, Qwen3, Gemma 3): RMSNorm,
// RoPE (default, Llama-3 or linear scaled; Gemma 3: a local and a global
// table), grouped-query attention over a static KV cache (sliding window per
// layer), SwiGLU / GELU-tanh MLP, and the projection-input observation hook.
// Written to follow transformers' modeling_llama.py / modeling_qwen3.py /
// modeling_gemma3.py operation by operation so fp32 logits agree to rounding.

#include "gpu/engine_internal.h"
#include "gpu/model_internal.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>

namespace sdw::gpu {

namespace {

// transformers' LlamaRMSNorm: normalise in fp32, cast back, then scale.
at::Tensor rmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  const auto xf = x.to(at::kFloat);
  const auto var = xf.pow(2).mean(-1, /*keepdim=*/true);
  return weight * (xf * at::rsqrt(var + eps)).to(x.scalar_type());
}

// transformers' Gemma3RMSNorm: normalise and scale by (1 + w) in fp32, then cast back.
at::Tensor gemmaRmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  const auto xf = x.to(at::kFloat);
  const auto var = xf.pow(2).mean(-1, /*keepdim=*/true);
  return (xf * at::rsqrt(var + eps) * (weight.to(at::kFloat) + 1.0)).to(x.scalar_type());
}

// The family's norm: Llama's or Gemma's.
at::Tensor norm(const ModelConfig& c, const at::Tensor& x, const at::Tensor& weight) {
  return c.isGemma() ? gemmaRmsNorm(x, weight, c.rmsNormEps) : rmsNorm(x, weight, c.rmsNormEps);
}

// cap * tanh(x / cap) (Gemma's soft-capping), in x's dtype.
at::Tensor softcap(const at::Tensor& x, double cap) { return at::tanh(x / cap) * cap; }

at::Tensor rotateHalf(const at::Tensor& x) {
  const auto half = x.size(-1) / 2;
  return at::cat({x.narrow(-1, half, half).neg(), x.narrow(-1, 0, half)}, -1);
}

// x: [B, T, d] -> one event per observed prompt row, sharing `modules`.
void observe(Model::Impl& m, const ObserveContext* ctx, const at::Tensor& x, int layer,
             std::initializer_list<int> kinds) {
  if (!ctx || !m.observed()) return;
  for (const auto& r : ctx->rows) {
    if (r.count <= 0) continue;
    const at::Tensor rows = x.select(0, r.batchRow).narrow(0, r.begin, r.count);  // [count, d]
    ActivationEvent ev;
    for (const int k : kinds) ev.modules.push_back(m.names[static_cast<std::size_t>(layer)][static_cast<std::size_t>(k)]);
    ev.layer = layer;
    ev.phase = ctx->phase;
    ev.promptIndex = r.promptIndex;
    ev.position = r.position;
    ev.tokens = static_cast<int>(r.count);
    ev.dIn = x.size(2);
    for (auto& [id, obs] : m.tensorObservers) obs(ev, rows);
    if (!m.observers.empty()) {
      const at::Tensor host = rows.to(at::kCPU, at::kFloat).contiguous();
      const std::span<const float> span(host.data_ptr<float>(), static_cast<std::size_t>(host.numel()));
      for (auto& [id, obs] : m.observers) obs(ev, span);
    }
  }
}

enum Kind { kQ = 0, kK, kV, kO, kGate, kUp, kDown };

// A projection: the dense weight where the model holds one, else its packed form.
at::Tensor project(Model::Impl& m, int layer, const at::Tensor& w, int kind, const at::Tensor& x,
                   const at::Tensor& bias = {}) {
  if (w.defined()) return at::linear(x, w, bias);
  const at::Tensor y = packedLinear(m, layer, kind, x);
  return bias.defined() ? y + bias : y;
}

}  // namespace

at::Tensor sparsifyActivations(const at::Tensor& x, double p) {
  if (!(p > 0)) return x;
  const std::int64_t d = x.size(-1);
  const std::int64_t keep = std::clamp<std::int64_t>(std::llround((1.0 - p) * static_cast<double>(d)), 1, d);
  if (keep >= d) return x;
  const at::Tensor mag = x.abs();
  // The keep-th largest magnitude per row: the threshold.
  const at::Tensor threshold = std::get<0>(at::topk(mag, keep, -1, /*largest=*/true, /*sorted=*/false)).amin(-1, true);
  return x.masked_fill(mag.lt(threshold), 0);
}

at::Tensor thresholdActivations(const at::Tensor& x, float t) {
  if (t < 0) return x;
  // In fp32: a threshold rounded to bf16 would move the cut.
  const at::Tensor mag = x.scalar_type() == at::kFloat ? x.abs() : x.abs().to(at::kFloat);
  return x.masked_fill(mag.le(t), 0);
}

void setActivationSparsity(Model::Impl& m, std::vector<double> perLayer) {
  if (!perLayer.empty() && static_cast<int>(perLayer.size()) != m.config.numLayers)
    throw std::invalid_argument("activation sparsity: " + std::to_string(perLayer.size()) + " values for " +
                                std::to_string(m.config.numLayers) + " layers");
  for (const double p : perLayer)
    if (!(p >= 0 && p < 1)) throw std::invalid_argument("activation sparsity must be in [0, 1)");
  bool any = false;
  for (const double p : perLayer) any = any || p > 0;
  m.actSparsity = any ? std::move(perLayer) : std::vector<double>{};
}

void setActivationThresholds(Model::Impl& m, std::vector<InputThresholds> perLayer) {
  LoadOptions check;
  check.activationThresholds = perLayer;
  validateActivationSparsity(check, static_cast<int>(m.config.numLayers));
  // All negative: every entry kept, nothing to do per pass (and the engine may decode).
  const bool any = std::any_of(perLayer.begin(), perLayer.end(), [](const InputThresholds& l) {
    return std::any_of(l.begin(), l.end(), [](float t) { return t >= 0; });
  });
  m.actThresholds = any ? std::move(perLayer) : std::vector<InputThresholds>{};
  m.actSparsity.clear();
}

at::Tensor ropeInverseFrequencies(const ModelConfig& c, bool local) {
  // As transformers: inv_freq = 1 / base^(arange(0, dim, 2) / dim) in fp32.
  const auto dim = c.headDim;
  const auto exponents = at::arange(0, dim, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) /
                         static_cast<double>(dim);
  const double theta = local ? c.ropeLocalTheta : c.ropeTheta;
  const RopeScaling& scaling = local ? c.ropeLocalScaling : c.ropeScaling;
  // (Python's `scalar / tensor` is reciprocal() * scalar; mirrored for bitwise-equal tables.)
  at::Tensor inv = at::pow(theta, exponents).reciprocal();
  if (scaling.type == "linear") {
    // _compute_linear_scaling_rope_parameters: inv_freq /= factor
    inv = inv / scaling.factor;
  } else if (scaling.type == "llama3") {
    // _compute_llama3_parameters
    const auto& s = scaling;
    const double oldContext = static_cast<double>(s.originalMaxPositionEmbeddings);
    const double lowFreqWavelen = oldContext / s.lowFreqFactor;
    const double highFreqWavelen = oldContext / s.highFreqFactor;
    const at::Tensor wavelen = inv.reciprocal() * (2 * std::numbers::pi);
    at::Tensor invLlama = at::where(wavelen > lowFreqWavelen, inv / s.factor, inv);
    const at::Tensor smooth = (wavelen.reciprocal() * oldContext - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
    const at::Tensor smoothed = (1 - smooth) * invLlama / s.factor + smooth * invLlama;
    const at::Tensor medium = wavelen.ge(highFreqWavelen).logical_and(wavelen.le(lowFreqWavelen));
    invLlama = at::where(medium, smoothed, invLlama);
    inv = invLlama;
  }
  return inv;
}

std::vector<float> ropeInvFreq(const ModelConfig& config, bool local) {
  if (local && !(config.ropeLocalTheta > 0)) throw std::invalid_argument("ropeInvFreq: the model has no local RoPE");
  const at::Tensor inv = ropeInverseFrequencies(config, local).contiguous();
  return {inv.data_ptr<float>(), inv.data_ptr<float>() + inv.numel()};
}

void ensureRope(Model::Impl& m, std::int64_t n) {
  if (m.ropeCos.defined() && m.ropeCos.size(0) >= n) return;
  // Grow geometrically so decoding does not rebuild the table every step.
  const std::int64_t have = m.ropeCos.defined() ? m.ropeCos.size(0) : 0;
  const std::int64_t size = std::max<std::int64_t>(n, std::max<std::int64_t>(256, 2 * have));
  const at::Tensor pos = at::arange(size, at::TensorOptions().dtype(at::kLong)).to(at::kFloat);  // [P]
  const auto table = [&](bool local, at::Tensor& cos, at::Tensor& sin) {
    const at::Tensor inv = ropeInverseFrequencies(m.config, local);               // [D/2] fp32
    const at::Tensor freqs = pos.unsqueeze(1) * inv.unsqueeze(0);                  // [P, D/2] fp32
    const at::Tensor emb = at::cat({freqs, freqs}, -1);                            // [P, D]
    cos = emb.cos().to(m.device, m.computeDtype);
    sin = emb.sin().to(m.device, m.computeDtype);
  };
  if (m.config.ropeLocalTheta > 0) table(true, m.ropeCosLocal, m.ropeSinLocal);
  table(false, m.ropeCos, m.ropeSin);
}

KvCache& ensureKvCache(Model::Impl& m, std::int64_t batch, std::int64_t capacity) {
  KvCache& c = m.cache;
  if (c.batch == batch && c.capacity >= capacity && !c.k.empty()) return c;
  c.k.clear();
  c.v.clear();
  c.batch = 0;
  c.capacity = 0;
  const auto opts = at::TensorOptions().dtype(m.computeDtype).device(m.device);
  for (std::int64_t l = 0; l < m.config.numLayers; ++l) {
    c.k.push_back(at::zeros({batch, m.config.numKvHeads, capacity, m.config.headDim}, opts));
    c.v.push_back(at::zeros({batch, m.config.numKvHeads, capacity, m.config.headDim}, opts));
  }
  c.batch = batch;
  c.capacity = capacity;
  return c;
}

at::Tensor forward(Model::Impl& m, const ForwardInput& in, KvCache* cache) {
  const ModelConfig& c = m.config;
  const std::int64_t B = in.ids.size(0), T = in.ids.size(1);
  const std::int64_t S = in.cacheStart + T;  // keys visible to the last query
  const std::int64_t H = c.numHeads, KV = c.numKvHeads, D = c.headDim, rep = H / KV;
  TORCH_CHECK(cache || in.cacheStart == 0, "forward without a cache must start at 0");
  TORCH_CHECK(!cache || S <= cache->capacity, "KV cache of ", cache ? cache->capacity : 0, " slots cannot hold ", S);
  // The caller names the largest position; reading it back would sync the device every step.
  ensureRope(m, in.positionLimit > 0 ? in.positionLimit : in.positions.max().item<std::int64_t>() + 1);

  at::Tensor h = at::embedding(m.w.embed, in.ids);  // [B, T, hidden]
  if (c.isGemma()) {
    // Gemma3TextScaledWordEmbedding: torch.tensor(hidden**0.5) (fp32) cast to the embedding's dtype.
    // (bf16: sqrt(3072) = 55.43 becomes 55.5). Rounded here on the host; multiplying by
    // the rounded value rounds the product exactly as the 0-dim tensor product does.
    const double scale = at::scalar_tensor(static_cast<float>(std::pow(static_cast<double>(c.hiddenSize), 0.5)), at::kFloat)
                             .to(h.scalar_type())
                             .to(at::kDouble)
                             .item<double>();
    h = h * scale;
  }
  const auto flatPos = in.positions.reshape({-1});
  const auto rotary = [&](const at::Tensor& table) { return table.index_select(0, flatPos).view({B, 1, T, D}); };
  const at::Tensor cos = rotary(m.ropeCos), sin = rotary(m.ropeSin);
  at::Tensor cosLocal, sinLocal;  // Gemma 3's sliding layers
  if (m.ropeCosLocal.defined()) {
    cosLocal = rotary(m.ropeCosLocal);
    sinLocal = rotary(m.ropeSinLocal);
  }

  // Additive mask [B, 1, rep*T, S]: causal, padding keys hidden, and with a window
  // W > 0 keys within the last W positions only (transformers' `key > query - W`).
  // A padding query may see itself, so no softmax row is empty (its output is unused).
  const auto makeMask = [&](std::int64_t W) {
    at::Tensor mask;
    if (!(T > 1 || in.keyValid.defined() || (W > 0 && S > W))) return mask;
    const auto lopts = at::TensorOptions().dtype(at::kLong).device(m.device);
    const at::Tensor qSlot = at::arange(in.cacheStart, S, lopts).unsqueeze(1);  // [T, 1]
    const at::Tensor kSlot = at::arange(0, S, lopts).unsqueeze(0);             // [1, S]
    at::Tensor allowed = kSlot.le(qSlot);                                       // [T, S]
    if (W > 0) allowed = allowed.logical_and(kSlot.gt(qSlot - W));
    allowed = allowed.unsqueeze(0);                                             // [1, T, S]
    if (in.keyValid.defined()) {
      const at::Tensor valid = in.keyValid.narrow(1, 0, S).unsqueeze(1);        // [B, 1, S]
      allowed = allowed.logical_and(valid.logical_or(kSlot.eq(qSlot).unsqueeze(0)));
    }
    allowed = allowed.expand({B, T, S});
    mask = at::zeros({B, T, S}, at::TensorOptions().dtype(m.computeDtype).device(m.device))
               .masked_fill(allowed.logical_not(), -std::numeric_limits<float>::infinity());
    return mask.unsqueeze(1).unsqueeze(1).expand({B, 1, rep, T, S}).reshape({B, 1, rep * T, S});
  };
  at::Tensor maskFull, maskSliding;  // built on first use
  bool haveFull = false, haveSliding = false;
  const double scale = c.attentionScale();

  for (std::int64_t l = 0; l < c.numLayers; ++l) {
    const LayerWeights& L = m.w.layers[static_cast<std::size_t>(l)];
    const int li = static_cast<int>(l);
    const double px = m.actSparsity.empty() ? 0.0 : m.actSparsity[static_cast<std::size_t>(l)];
    // Fixed thresholds (TEAL) when the model has them, else per-token top-k at px.
    const auto sparsify = [&](const at::Tensor& a, ProjectionInput input) {
      if (m.actThresholds.empty()) return sparsifyActivations(a, px);
      return thresholdActivations(a, m.actThresholds[static_cast<std::size_t>(l)][static_cast<std::size_t>(input)]);
    };
    const bool sliding = c.slidingLayer(l);
    if (sliding && !haveSliding) {
      maskSliding = makeMask(c.slidingWindow);
      haveSliding = true;
    } else if (!sliding && !haveFull) {
      maskFull = makeMask(0);
      haveFull = true;
    }
    const at::Tensor& mask = sliding ? maskSliding : maskFull;
    const bool local = c.localRopeLayer(l);
    const at::Tensor& lc = local ? cosLocal : cos;
    const at::Tensor& ls = local ? sinLocal : sin;
    // ---- attention
    at::Tensor x = norm(c, h, L.inputNorm);  // [B, T, hidden]
    observe(m, in.observe, x, li, {kQ, kK, kV});
    x = sparsify(x, ProjectionInput::Qkv);
    at::Tensor q = project(m, li, L.q, kQ, x, L.qBias).view({B, T, H, D});
    at::Tensor k = project(m, li, L.k, kK, x, L.kBias).view({B, T, KV, D});
    at::Tensor v = project(m, li, L.v, kV, x, L.vBias).view({B, T, KV, D});
    if (c.hasQkNorm()) {  // Qwen3, Gemma 3: per-head RMSNorm before RoPE
      q = norm(c, q, L.qNorm);
      k = norm(c, k, L.kNorm);
    }
    q = q.transpose(1, 2);  // [B, H, T, D]
    k = k.transpose(1, 2);  // [B, KV, T, D]
    v = v.transpose(1, 2);
    q = q * lc + rotateHalf(q) * ls;
    k = k * lc + rotateHalf(k) * ls;
    at::Tensor keys = k, values = v;  // [B, KV, S, D]
    if (cache) {
      cache->k[static_cast<std::size_t>(l)].narrow(2, in.cacheStart, T).copy_(k);
      cache->v[static_cast<std::size_t>(l)].narrow(2, in.cacheStart, T).copy_(v);
      keys = cache->k[static_cast<std::size_t>(l)].narrow(2, 0, S);
      values = cache->v[static_cast<std::size_t>(l)].narrow(2, 0, S);
    }
    // GQA without repeating K/V: query heads of one KV head stacked along time.
    const at::Tensor qg = q.reshape({B, KV, rep * T, D});
    at::Tensor scores = at::matmul(qg, keys.transpose(-1, -2)) * scale;  // [B, KV, rep*T, S]
    if (c.attnLogitSoftcap > 0) scores = softcap(scores, c.attnLogitSoftcap);
    if (mask.defined()) scores = scores + mask;
    const at::Tensor probs = at::softmax(scores, -1, at::kFloat).to(m.computeDtype);
    at::Tensor attn = at::matmul(probs, values)                 // [B, KV, rep*T, D]
                          .view({B, H, T, D})
                          .transpose(1, 2)
                          .reshape({B, T, H * D});
    observe(m, in.observe, attn, li, {kO});
    at::Tensor attnOut = project(m, li, L.o, kO, sparsify(attn, ProjectionInput::O));
    if (c.isGemma()) attnOut = norm(c, attnOut, L.postNorm);  // post_attention_layernorm
    h = h + attnOut;
    // ---- MLP
    x = norm(c, h, c.isGemma() ? L.preFfnNorm : L.postNorm);
    observe(m, in.observe, x, li, {kGate, kUp});
    x = sparsify(x, ProjectionInput::GateUp);
    const at::Tensor gate = project(m, li, L.gate, kGate, x);
    const at::Tensor act = (c.isGemma() ? at::gelu(gate, "tanh") : at::silu(gate)) *
                           project(m, li, L.up, kUp, x);  // [B, T, inter]
    observe(m, in.observe, act, li, {kDown});
    at::Tensor mlpOut = project(m, li, L.down, kDown, sparsify(act, ProjectionInput::Down));
    if (c.isGemma()) mlpOut = norm(c, mlpOut, L.postFfnNorm);  // post_feedforward_layernorm
    h = h + mlpOut;
  }
  if (in.lastOnly) h = h.narrow(1, T - 1, 1);
  h = norm(c, h, m.w.finalNorm);
  at::Tensor logits = at::linear(h, m.w.lmHead);  // [B, T', vocab]
  if (c.finalLogitSoftcap > 0) logits = softcap(logits, c.finalLogitSoftcap);
  return logits;
}

}  // namespace sdw::gpu
