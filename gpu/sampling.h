#pragma once
// Next-token choice from a logit row: greedy, or seeded temperature / top-k /
// top-p sampling in the order Hugging Face applies them (temperature, then
// top-k, then top-p). Torch-free: the final distribution is sampled on the
// host from a seeded 64-bit Mersenne Twister, so a seed gives the same tokens
// on every machine and LibTorch version.

#include "core/decoding.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <vector>

namespace sdw::gpu {

struct SamplingOptions {
  double temperature = 0.0;  // <= 0: greedy (argmax, first index on ties)
  int topK = 0;              // 0: off
  double topP = 1.0;         // 1: off
  std::uint64_t seed = 0;
  bool greedy() const { return temperature <= 0.0; }
};

// The engine's form of a decoding (core/decoding.h), with its seed.
inline SamplingOptions samplingOptions(const Decoding& d, std::uint64_t seed = 0) {
  return SamplingOptions{d.temperature, d.topK, d.topP, seed};
}
inline Decoding decodingOf(const SamplingOptions& s) { return Decoding{s.temperature, s.topK, s.topP}; }

// Index of the largest value (the first one on ties); NaNs are never chosen.
std::int32_t argmax(std::span<const float> logits);

class Sampler {
 public:
  explicit Sampler(const SamplingOptions& options);
  // Throws std::invalid_argument on an empty row or bad options.
  std::int32_t next(std::span<const float> logits);
  // Uniform double in [0, 1) from the seeded stream (exposed for tests).
  double uniform();

 private:
  SamplingOptions opt_;
  std::mt19937_64 rng_;
};

// A batch's next tokens, the rows drawn on worker threads that live as long as the
// object. Each row has its own sampler (its own seeded stream), so the tokens do not
// depend on how many threads draw them. A 128K-vocabulary draw costs ~2 ms of one core:
// a batch of 128 rows drawn on one thread would take longer than the decode step.
class BatchSampler {
 public:
  // threads <= 0: the hardware's threads, at most one per row.
  explicit BatchSampler(std::vector<Sampler> rows, int threads = 0);
  ~BatchSampler();
  BatchSampler(const BatchSampler&) = delete;
  BatchSampler& operator=(const BatchSampler&) = delete;
  // logits: rows x vocab, row-major. Rows with skip[r] are left alone in out; the first
  // error of any row is rethrown here.
  void draw(const float* logits, std::size_t vocab, const std::vector<bool>& skip, std::vector<std::int32_t>& out);
  // The same from bfloat16 rows (their bit patterns), each widened to fp32 on its thread:
  // a device's bf16 logits come back in half the bytes.
  void drawBf16(const std::uint16_t* logits, std::size_t vocab, const std::vector<bool>& skip,
                std::vector<std::int32_t>& out);
  int threads() const;

 private:
  struct Pool;
  std::unique_ptr<Pool> pool_;
  void run(const float* logits, const std::uint16_t* bf16, std::size_t vocab, const std::vector<bool>& skip,
           std::vector<std::int32_t>& out);
};

}  // namespace sdw::gpu
