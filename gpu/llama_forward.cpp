// The Llama / Qwen3 decoder forward pass: RMSNorm, RoPE (default or Llama-3
// scaled), grouped-query attention over a static KV cache, SwiGLU MLP, and
// the projection-input observation hook. Written to follow transformers'
// modeling_llama.py / modeling_qwen3.py operation by operation so fp32
// logits agree to rounding.

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

at::Tensor ropeInverseFrequencies(const ModelConfig& c) {
  // As transformers: inv_freq = 1 / base^(arange(0, dim, 2) / dim) in fp32.
  const auto dim = c.headDim;
  const auto exponents = at::arange(0, dim, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) /
                         static_cast<double>(dim);
  // (Python's `scalar / tensor` is reciprocal() * scalar; mirrored for bitwise-equal tables.)
  at::Tensor inv = at::pow(c.ropeTheta, exponents).reciprocal();
  if (c.ropeScaling.type == "llama3") {
    // _compute_llama3_parameters
    const auto& s = c.ropeScaling;
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

std::vector<float> ropeInvFreq(const ModelConfig& config) {
  const at::Tensor inv = ropeInverseFrequencies(config).contiguous();
  return {inv.data_ptr<float>(), inv.data_ptr<float>() + inv.numel()};
}

void ensureRope(Model::Impl& m, std::int64_t n) {
  if (m.ropeCos.defined() && m.ropeCos.size(0) >= n) return;
  // Grow geometrically so decoding does not rebuild the table every step.
  const std::int64_t have = m.ropeCos.defined() ? m.ropeCos.size(0) : 0;
  const std::int64_t size = std::max<std::int64_t>(n, std::max<std::int64_t>(256, 2 * have));
  const at::Tensor inv = ropeInverseFrequencies(m.config);                      // [D/2] fp32
  const at::Tensor pos = at::arange(size, at::TensorOptions().dtype(at::kLong)).to(at::kFloat);  // [P]
  const at::Tensor freqs = pos.unsqueeze(1) * inv.unsqueeze(0);                  // [P, D/2] fp32
  const at::Tensor emb = at::cat({freqs, freqs}, -1);                            // [P, D]
  m.ropeCos = emb.cos().to(m.device, m.computeDtype);
  m.ropeSin = emb.sin().to(m.device, m.computeDtype);
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
  const auto flatPos = in.positions.reshape({-1});
  const at::Tensor cos = m.ropeCos.index_select(0, flatPos).view({B, 1, T, D});
  const at::Tensor sin = m.ropeSin.index_select(0, flatPos).view({B, 1, T, D});

  // Additive mask [B, 1, rep*T, S]: causal, padding keys hidden. A padding
  // query may see itself, so no softmax row is empty (its output is unused).
  at::Tensor mask;
  const std::int64_t W = c.slidingWindow;  // > 0: keys within the last W positions only (Mistral)
  if (T > 1 || in.keyValid.defined() || (W > 0 && S > W)) {
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
    mask = mask.unsqueeze(1).unsqueeze(1).expand({B, 1, rep, T, S}).reshape({B, 1, rep * T, S});
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));

  for (std::int64_t l = 0; l < c.numLayers; ++l) {
    const LayerWeights& L = m.w.layers[static_cast<std::size_t>(l)];
    const int li = static_cast<int>(l);
    const double px = m.actSparsity.empty() ? 0.0 : m.actSparsity[static_cast<std::size_t>(l)];
    // ---- attention
    at::Tensor x = rmsNorm(h, L.inputNorm, c.rmsNormEps);  // [B, T, hidden]
    observe(m, in.observe, x, li, {kQ, kK, kV});
    x = sparsifyActivations(x, px);
    at::Tensor q = project(m, li, L.q, kQ, x, L.qBias).view({B, T, H, D});
    at::Tensor k = project(m, li, L.k, kK, x, L.kBias).view({B, T, KV, D});
    at::Tensor v = project(m, li, L.v, kV, x, L.vBias).view({B, T, KV, D});
    if (c.hasQkNorm()) {  // Qwen3: per-head RMSNorm before RoPE
      q = rmsNorm(q, L.qNorm, c.rmsNormEps);
      k = rmsNorm(k, L.kNorm, c.rmsNormEps);
    }
    q = q.transpose(1, 2);  // [B, H, T, D]
    k = k.transpose(1, 2);  // [B, KV, T, D]
    v = v.transpose(1, 2);
    q = q * cos + rotateHalf(q) * sin;
    k = k * cos + rotateHalf(k) * sin;
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
    if (mask.defined()) scores = scores + mask;
    const at::Tensor probs = at::softmax(scores, -1, at::kFloat).to(m.computeDtype);
    at::Tensor attn = at::matmul(probs, values)                 // [B, KV, rep*T, D]
                          .view({B, H, T, D})
                          .transpose(1, 2)
                          .reshape({B, T, H * D});
    observe(m, in.observe, attn, li, {kO});
    h = h + project(m, li, L.o, kO, sparsifyActivations(attn, px));
    // ---- MLP
    x = rmsNorm(h, L.postNorm, c.rmsNormEps);
    observe(m, in.observe, x, li, {kGate, kUp});
    x = sparsifyActivations(x, px);
    const at::Tensor act = at::silu(project(m, li, L.gate, kGate, x)) * project(m, li, L.up, kUp, x);  // [B, T, inter]
    observe(m, in.observe, act, li, {kDown});
    h = h + project(m, li, L.down, kDown, sparsifyActivations(act, px));
  }
  if (in.lastOnly) h = h.narrow(1, T - 1, 1);
  h = rmsNorm(h, m.w.finalNorm, c.rmsNormEps);
  return at::linear(h, m.w.lmHead);  // [B, T', vocab]
}

}  // namespace sdw::gpu
