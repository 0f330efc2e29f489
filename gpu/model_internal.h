#pragma once
// Torch-typed internals of the model runtime: weights, the static KV cache,
// the forward pass and tensor observers. Include only from gpu/*.cpp and
// engine tests (never from widgets/ or app/).

#include "gpu/model.h"

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sdw::gpu {

struct LayerWeights {
  at::Tensor inputNorm;                 // [hidden]
  at::Tensor q, k, v, o;                // [qDim, hidden], [kvDim, hidden] x2, [hidden, qDim]
  at::Tensor qNorm, kNorm;              // [headDim] (Qwen3, Gemma 3)
  at::Tensor qBias, kBias, vBias;       // [qDim], [kvDim] x2 (Qwen2 only)
  at::Tensor postNorm;                  // [hidden] post_attention_layernorm: the MLP's input norm;
                                        // Gemma 3: the attention output's norm before the residual add
  at::Tensor preFfnNorm, postFfnNorm;   // [hidden] Gemma 3 only: the MLP's input norm and its output's norm
  at::Tensor gate, up, down;            // [inter, hidden] x2, [hidden, inter]
};

struct ModelWeights {
  at::Tensor embed;                     // [vocab, hidden]
  std::vector<LayerWeights> layers;
  at::Tensor finalNorm;                 // [hidden]
  at::Tensor lmHead;                    // [vocab, hidden]; the embedding itself when tied
};

// Static KV cache: per layer k, v: [B, kvHeads, capacity, headDim].
struct KvCache {
  std::vector<at::Tensor> k, v;
  std::int64_t batch = 0;
  std::int64_t capacity = 0;
};

// x: [tokens, dIn] on the model's device, compute dtype. A view into the
// forward pass's buffers: clone it to keep it past the call.
using TensorObserver = std::function<void(const ActivationEvent&, const at::Tensor& x)>;

// Which rows of a [B, T, d] activation to report, one span per prompt.
struct ObservedRows {
  int batchRow = 0;
  int promptIndex = 0;
  std::int64_t begin = 0;  // first time index within this call's T
  std::int64_t count = 0;
  int position = 0;        // model position of the first reported row
};

struct ObserveContext {
  Phase phase = Phase::Prefill;
  std::vector<ObservedRows> rows;
};

struct ForwardInput {
  at::Tensor ids;            // [B, T] int64 on the device
  at::Tensor positions;      // [B, T] int64 on the device (RoPE positions)
  std::int64_t cacheStart = 0;  // cache slot of the first of the T tokens
  at::Tensor keyValid;       // [B, >= cacheStart+T] bool, false for padding slots; undefined: all valid
  std::int64_t positionLimit = 0;  // > every position (0: read it from `positions`, a device sync)
  bool lastOnly = false;     // logits for the last time step only
  const ObserveContext* observe = nullptr;
};

struct EngineState;  // gpu/engine_internal.h

struct Model::Impl {
  ModelConfig config;
  LoadOptions options;
  c10::Device device = c10::Device(c10::kCPU);
  c10::ScalarType storeDtype = c10::ScalarType::Float;    // what LoadOptions asked for
  c10::ScalarType computeDtype = c10::ScalarType::Float;  // fp32 on CPU
  ModelWeights w;
  at::Tensor ropeCos, ropeSin;  // [positions, headDim], compute dtype
  at::Tensor ropeCosLocal, ropeSinLocal;  // the same for the local RoPE (Gemma 3's sliding layers), else undefined
  KvCache cache;
  std::vector<std::array<std::string, 7>> names;  // per layer: q k v o gate up down
  std::map<int, TensorObserver> tensorObservers;
  std::map<int, ActivationObserver> observers;
  int nextObserverId = 1;
  std::shared_ptr<EngineState> engine;  // packed projections, fused weights, the decode graph
  std::vector<double> actSparsity;      // p_x per layer (LoadOptions); empty: dense inputs
  std::vector<InputThresholds> actThresholds;  // |x| thresholds per layer and input (LoadOptions); empty: none

  bool observed() const { return !tensorObservers.empty() || !observers.empty(); }
};

// ---- llama_forward.cpp ----
// Logits [B, T (or 1 with lastOnly), vocab] in the compute dtype. With a
// cache, the T new keys/values are written at cacheStart and attention reads
// slots [0, cacheStart+T); without one, cacheStart must be 0.
at::Tensor forward(Model::Impl& m, const ForwardInput& in, KvCache* cache);
// Grows the RoPE tables to cover positions [0, n).
void ensureRope(Model::Impl& m, std::int64_t n);
// Reuses the model's cache when it is large enough.
KvCache& ensureKvCache(Model::Impl& m, std::int64_t batch, std::int64_t capacity);
// Llama-3 / linear / default inverse frequencies, [headDim/2] fp32, as transformers computes
// them; local: Gemma 3's sliding-layer RoPE (ropeLocalTheta, ropeLocalScaling).
at::Tensor ropeInverseFrequencies(const ModelConfig& c, bool local = false);

// Keeps, per row of x ([..., d]), the round((1 - p) * d) entries of largest
// magnitude (at least one; ties at the threshold kept) and zeroes the rest.
// p <= 0 returns x itself.
at::Tensor sparsifyActivations(const at::Tensor& x, double p);
// Zeroes the entries of x with |x| <= t (compared in fp32); t < 0 returns x itself.
at::Tensor thresholdActivations(const at::Tensor& x, float t);
// Sets the per-layer p_x (empty or one value per layer, each in [0, 1)).
void setActivationSparsity(Model::Impl& m, std::vector<double> perLayer);
// Sets fixed |x| thresholds per layer and input (LoadOptions::activationThresholds; empty or
// one entry per layer) in place of the per-layer p_x, which it clears; all negative: none.
// Before the engine's first step (a decode graph already built keeps what it was built with).
void setActivationThresholds(Model::Impl& m, std::vector<InputThresholds> perLayer);

// ---- model.cpp ----
int addTensorObserver(Model& m, TensorObserver observer);
at::ScalarType scalarTypeOf(const std::string& dtype);
c10::Device parseDevice(const std::string& device);

}  // namespace sdw::gpu
