// Generation: prefill + token-by-token decode over the static KV cache, for
// one prompt or a ragged batch (left padding, per-row positions and a key
// mask), with per-row stop handling and observer contexts.

#include "gpu/engine_internal.h"
#include "gpu/model_internal.h"

#include "core/timing.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace sdw::gpu {

GenerationResult Model::generate(std::span<const std::int32_t> promptIds, const GenerationOptions& options,
                                 const std::function<bool(std::int32_t)>& onToken) {
  std::vector<std::vector<std::int32_t>> prompts{{promptIds.begin(), promptIds.end()}};
  std::function<bool(int, std::int32_t)> cb;
  if (onToken) cb = [&](int, std::int32_t t) { return onToken(t); };
  return std::move(generateBatch(prompts, options, cb).front());
}

std::vector<GenerationResult> Model::generateBatch(const std::vector<std::vector<std::int32_t>>& prompts,
                                                   const GenerationOptions& options,
                                                   const std::function<bool(int, std::int32_t)>& onToken) {
  auto& m = *impl_;
  const ModelConfig& c = m.config;
  if (prompts.empty()) throw std::invalid_argument("generate: no prompts");
  if (options.maxNewTokens < 0) throw std::invalid_argument("generate: max new tokens must be >= 0");
  const auto B = static_cast<std::int64_t>(prompts.size());
  std::int64_t Lmax = 0;
  for (std::size_t b = 0; b < prompts.size(); ++b) {
    if (prompts[b].empty()) throw std::invalid_argument("generate: prompt " + std::to_string(b) + " is empty");
    if (static_cast<std::int64_t>(prompts[b].size()) >= c.maxPositionEmbeddings)
      throw std::invalid_argument("generate: prompt " + std::to_string(b) + " has " +
                                  std::to_string(prompts[b].size()) + " tokens, the model's context is " +
                                  std::to_string(c.maxPositionEmbeddings));
    for (const auto id : prompts[b])
      if (id < 0 || id >= c.vocabSize)
        throw std::invalid_argument("generate: token id " + std::to_string(id) + " in prompt " + std::to_string(b) +
                                    " is outside the vocabulary [0, " + std::to_string(c.vocabSize) + ")");
    Lmax = std::max<std::int64_t>(Lmax, static_cast<std::int64_t>(prompts[b].size()));
  }

  std::vector<GenerationResult> results(prompts.size());
  std::vector<std::int64_t> pad(prompts.size());
  std::vector<int> budget(prompts.size());  // new tokens each row may emit
  std::vector<std::int32_t> promptHost(static_cast<std::size_t>(B * Lmax), 0);
  std::vector<std::int64_t> posHost(static_cast<std::size_t>(B * Lmax), 0);
  bool ragged = false;
  for (std::size_t b = 0; b < prompts.size(); ++b) {
    const auto len = static_cast<std::int64_t>(prompts[b].size());
    pad[b] = Lmax - len;
    ragged = ragged || pad[b] > 0;
    results[b].promptTokens = static_cast<int>(len);
    budget[b] = static_cast<int>(std::min<std::int64_t>(options.maxNewTokens, c.maxPositionEmbeddings - len));
    for (std::int64_t t = 0; t < len; ++t) {
      promptHost[static_cast<std::size_t>(static_cast<std::int64_t>(b) * Lmax + pad[b] + t)] = prompts[b][static_cast<std::size_t>(t)];
      posHost[static_cast<std::size_t>(static_cast<std::int64_t>(b) * Lmax + pad[b] + t)] = t;
    }
  }
  const int maxBudget = *std::max_element(budget.begin(), budget.end());
  if (maxBudget == 0) {
    for (auto& r : results) r.stopReason = options.maxNewTokens == 0 ? StopReason::MaxTokens : StopReason::ContextFull;
    return results;
  }

  std::vector<Sampler> samplers;
  for (std::int64_t b = 0; b < B; ++b) {
    SamplingOptions so = options.sampling;
    so.seed += static_cast<std::uint64_t>(b);  // row b: seed + b
    samplers.emplace_back(so);
  }
  BatchSampler draws(std::move(samplers));

  try {
    const c10::NoGradGuard noGrad;
    const auto lopts = at::TensorOptions().dtype(at::kLong).device(m.device);
    // The decode engine captures its step for one cache: round the capacity up so
    // calls of similar lengths reuse the cache and the captured step.
    const bool useEngine = engineDecodes(m);
    const std::int64_t capacity = useEngine ? (Lmax + maxBudget + 127) / 128 * 128 : Lmax + maxBudget;
    KvCache& cache = ensureKvCache(m, B, capacity);
    ensureRope(m, capacity);

    at::Tensor keyValid;  // [B, capacity] bool; only needed with padding
    if (ragged) {
      keyValid = at::ones({B, capacity}, at::TensorOptions().dtype(at::kBool));
      for (std::int64_t b = 0; b < B; ++b) keyValid[b].narrow(0, 0, pad[static_cast<std::size_t>(b)]).fill_(false);
      keyValid = keyValid.to(m.device);
    }
    const at::Tensor padT = at::from_blob(pad.data(), {B, 1}, at::TensorOptions().dtype(at::kLong)).to(m.device);

    std::vector<bool> done(prompts.size(), false);
    const auto t0 = std::chrono::steady_clock::now();
    bool stopAll = false;
    // Logits [B, vocab] fp32 host -> one token per live row.
    double launchS = 0, readbackS = 0, sampleS = 0;
    at::Tensor pinnedLogits;                       // [B, vocab] bf16 on the host
    auto mark = std::chrono::steady_clock::now();  // reset before each step's launch
    const auto lap = [&](double& into) {
      const auto now = std::chrono::steady_clock::now();
      into += std::chrono::duration<double>(now - mark).count();
      mark = now;
    };
    const auto consume = [&](const at::Tensor& logitsDev, std::vector<std::int32_t>& next) {
      lap(launchS);
      // The rows' draws are independent (a sampler each): on the pool's threads, then booked in order.
      std::vector<std::int32_t> drawn(static_cast<std::size_t>(B), 0);
      const float* base = nullptr;
      at::Tensor host;
      if (logitsDev.scalar_type() == at::kBFloat16 && !options.keepLogits) {
        // bf16 logits come back as they are, into page-locked memory kept for the call
        // (half the bytes of fp32 at full copy speed); the drawing threads widen them.
        if (!pinnedLogits.defined())
          pinnedLogits =
              at::empty({B, c.vocabSize}, at::TensorOptions().dtype(at::kBFloat16).pinned_memory(logitsDev.is_cuda()));
        pinnedLogits.copy_(logitsDev.reshape({B, c.vocabSize}));
        lap(readbackS);
        draws.drawBf16(reinterpret_cast<const std::uint16_t*>(pinnedLogits.data_ptr()),
                       static_cast<std::size_t>(c.vocabSize), done, drawn);
      } else {
        host = logitsDev.reshape({B, c.vocabSize}).to(at::kCPU, at::kFloat).contiguous();
        lap(readbackS);
        base = host.data_ptr<float>();
        draws.draw(base, static_cast<std::size_t>(c.vocabSize), done, drawn);
      }
      lap(sampleS);
      for (std::int64_t b = 0; b < B; ++b) {
        const auto bi = static_cast<std::size_t>(b);
        if (done[bi]) continue;
        const std::int32_t tok = drawn[bi];
        next[bi] = tok;
        if (options.keepLogits)
          results[bi].logits.insert(results[bi].logits.end(), base + b * c.vocabSize, base + (b + 1) * c.vocabSize);
        results[bi].tokens.push_back(tok);
        if (onToken && !stopAll && !onToken(static_cast<int>(b), tok)) stopAll = true;
        if (std::find(options.stopIds.begin(), options.stopIds.end(), tok) != options.stopIds.end()) {
          done[bi] = true;
          results[bi].stopReason = StopReason::StopToken;
        } else if (static_cast<int>(results[bi].tokens.size()) >= budget[bi]) {
          done[bi] = true;
          results[bi].stopReason =
              budget[bi] < options.maxNewTokens ? StopReason::ContextFull : StopReason::MaxTokens;
        }
      }
      if (stopAll)
        for (std::size_t b = 0; b < done.size(); ++b)
          if (!done[b]) {
            done[b] = true;
            results[b].stopReason = StopReason::Callback;
          }
      mark = std::chrono::steady_clock::now();
    };

    // ---- prefill
    ObserveContext ctx;
    ForwardInput in;
    in.ids = at::from_blob(promptHost.data(), {B, Lmax}, at::TensorOptions().dtype(at::kInt)).to(m.device, at::kLong);
    in.positions = at::from_blob(posHost.data(), {B, Lmax}, at::TensorOptions().dtype(at::kLong)).to(m.device);
    in.positionLimit = capacity;
    in.keyValid = keyValid;
    in.lastOnly = true;
    if (m.observed()) {
      ctx.phase = Phase::Prefill;
      for (std::int64_t b = 0; b < B; ++b) {
        const auto bi = static_cast<std::size_t>(b);
        ctx.rows.push_back({static_cast<int>(b), static_cast<int>(b), pad[bi], Lmax - pad[bi], 0});
      }
      in.observe = &ctx;
    }
    std::vector<std::int32_t> next(prompts.size(), 0);
    consume(forward(m, in, &cache), next);
    const double prefill = secondsSince(t0);

    // ---- decode: every row writes slot Lmax + step; finished rows ride along unobserved
    const auto t1 = std::chrono::steady_clock::now();
    for (int step = 0; step < maxBudget - 1; ++step) {
      if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
      const std::int64_t slot = Lmax + step;
      if (useEngine) {  // observers are attached only before the call: no row is observed here
        consume(engineStep(m, cache, next, slot, pad), next);
        continue;
      }
      ForwardInput d;
      d.ids = at::from_blob(next.data(), {B, 1}, at::TensorOptions().dtype(at::kInt)).to(m.device, at::kLong);
      d.positions = at::full({B, 1}, slot, lopts) - padT;
      d.positionLimit = capacity;
      d.cacheStart = slot;
      d.keyValid = keyValid;
      if (m.observed()) {
        ctx.phase = Phase::Decode;
        ctx.rows.clear();
        for (std::int64_t b = 0; b < B; ++b) {
          const auto bi = static_cast<std::size_t>(b);
          if (!done[bi]) ctx.rows.push_back({static_cast<int>(b), static_cast<int>(b), 0, 1, static_cast<int>(slot - pad[bi])});
        }
        d.observe = &ctx;
      }
      consume(forward(m, d, &cache), next);
    }
    const double decode = secondsSince(t1);
    for (auto& r : results) {
      r.prefillSeconds = prefill;
      r.decodeSeconds = decode;
      r.launchSeconds = launchS;
      r.readbackSeconds = readbackS;
      r.sampleSeconds = sampleS;
    }
  } catch (const c10::Error& e) {
    throw std::runtime_error(std::string("generation failed: ") + e.what_without_backtrace());
  }
  return results;
}

}  // namespace sdw::gpu
