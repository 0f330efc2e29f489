#include "gpu/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace sdw::gpu {

std::int32_t argmax(std::span<const float> logits) {
  if (logits.empty()) throw std::invalid_argument("argmax of an empty logit row");
  std::size_t best = logits.size();
  for (std::size_t i = 0; i < logits.size(); ++i)
    if (!std::isnan(logits[i]) && (best == logits.size() || logits[i] > logits[best])) best = i;
  if (best == logits.size()) throw std::runtime_error("every logit is NaN");
  return static_cast<std::int32_t>(best);
}

Sampler::Sampler(const SamplingOptions& options) : opt_(options), rng_(options.seed) {
  if (opt_.topK < 0) throw std::invalid_argument("top-k must be >= 0, got " + std::to_string(opt_.topK));
  if (!(opt_.topP > 0.0 && opt_.topP <= 1.0))
    throw std::invalid_argument("top-p must be in (0, 1], got " + std::to_string(opt_.topP));
}

double Sampler::uniform() {
  // 53 random bits: the same double on every standard library.
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

std::int32_t Sampler::next(std::span<const float> logits) {
  if (opt_.greedy()) return argmax(logits);
  const std::size_t n = logits.size();
  if (n == 0) throw std::invalid_argument("sampling from an empty logit row");

  // Candidates sorted by logit, descending (index ascending on ties: stable).
  std::vector<std::int32_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](std::int32_t a, std::int32_t b) {
    const float la = std::isnan(logits[a]) ? -INFINITY : logits[a];
    const float lb = std::isnan(logits[b]) ? -INFINITY : logits[b];
    return la > lb;
  });
  std::size_t keep = n;
  if (opt_.topK > 0) keep = std::min<std::size_t>(keep, static_cast<std::size_t>(opt_.topK));

  // Softmax of logits / temperature over the kept candidates, in double.
  const double top = static_cast<double>(logits[idx[0]]) / opt_.temperature;
  std::vector<double> p(keep);
  double sum = 0;
  for (std::size_t i = 0; i < keep; ++i) {
    const double l = static_cast<double>(logits[idx[i]]);
    p[i] = std::isfinite(l) ? std::exp(l / opt_.temperature - top) : 0.0;
    sum += p[i];
  }
  if (!(sum > 0)) return idx[0];
  for (auto& v : p) v /= sum;

  // Top-p: the smallest prefix whose mass reaches top_p (at least one token).
  if (opt_.topP < 1.0) {
    double cum = 0;
    std::size_t cut = 0;
    while (cut < keep) {
      cum += p[cut++];
      if (cum >= opt_.topP) break;
    }
    keep = std::max<std::size_t>(cut, 1);
    double s2 = 0;
    for (std::size_t i = 0; i < keep; ++i) s2 += p[i];
    for (std::size_t i = 0; i < keep; ++i) p[i] /= s2;
  }

  const double u = uniform();
  double cum = 0;
  for (std::size_t i = 0; i < keep; ++i) {
    cum += p[i];
    if (u < cum) return idx[i];
  }
  return idx[keep - 1];  // rounding left a sliver above the last bucket
}

}  // namespace sdw::gpu
