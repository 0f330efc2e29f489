#include "gpu/sampling.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
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

// The rule: candidates in descending logit order (index ascending on ties, NaN as -inf),
// top-k of them kept, softmax of logit / temperature over those in double, top-p's
// smallest prefix reaching its mass renormalised, then the first candidate at which the
// running mass exceeds u. Only as much of that order as the rule needs is built: top-k's
// k by a partial sort, top-p's prefix by a growing partial sort, and without either the
// drawn candidate by a radix select (O(vocabulary), not a sort of it per token: 128K
// logits sorted cost ~15 ms a row on a 2-core machine).
std::int32_t Sampler::next(std::span<const float> logits) {
  if (opt_.greedy()) return argmax(logits);
  const std::size_t n = logits.size();
  if (n == 0) throw std::invalid_argument("sampling from an empty logit row");
  const auto value = [&](std::int32_t i) {
    const float l = logits[static_cast<std::size_t>(i)];
    return std::isnan(l) ? -INFINITY : l;
  };
  const auto before = [&](std::int32_t a, std::int32_t b) {
    const float la = value(a), lb = value(b);
    return la > lb || (la == lb && a < b);  // a strict total order: the stable sort's
  };
  std::vector<std::int32_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::size_t sorted = 0;  // idx[0, sorted) holds the first `sorted` candidates in order
  const auto sortTo = [&](std::size_t m) {
    m = std::min(m, n);
    if (m <= sorted) return;
    std::partial_sort(idx.begin() + static_cast<std::ptrdiff_t>(sorted), idx.begin() + static_cast<std::ptrdiff_t>(m),
                      idx.end(), before);
    sorted = m;
  };
  const auto at = [&](std::size_t i) {
    if (i >= sorted) sortTo(std::max({i + 1, 2 * sorted, std::size_t{256}}));
    return idx[i];
  };
  const std::size_t keep0 = opt_.topK > 0 ? std::min<std::size_t>(n, static_cast<std::size_t>(opt_.topK)) : n;
  sortTo(opt_.topK > 0 ? keep0 : 1);
  const double top = static_cast<double>(logits[static_cast<std::size_t>(idx[0])]) / opt_.temperature;
  const auto weight = [&](std::int32_t i) {
    const double l = static_cast<double>(logits[static_cast<std::size_t>(i)]);
    return std::isfinite(l) ? std::exp(l / opt_.temperature - top) : 0.0;
  };
  double sum = 0;
  std::vector<double> w;  // every candidate's weight, when every candidate is kept
  if (opt_.topK > 0) {
    for (std::size_t i = 0; i < keep0; ++i) sum += weight(idx[i]);
  } else {
    w.resize(n);
    for (std::size_t j = 0; j < n; ++j) sum += (w[j] = weight(static_cast<std::int32_t>(j)));
  }
  if (!(sum > 0)) return idx[0];

  if (opt_.topK > 0 || opt_.topP < 1.0) {
    std::size_t keep = keep0;
    double s2 = 1.0;  // top-p: the kept prefix's mass
    if (opt_.topP < 1.0) {
      double cum = 0;
      std::size_t cut = 0;
      while (cut < keep) {
        cum += weight(at(cut++)) / sum;
        if (cum >= opt_.topP) break;
      }
      keep = std::max<std::size_t>(cut, 1);
      s2 = 0;
      for (std::size_t i = 0; i < keep; ++i) s2 += weight(idx[i]) / sum;
    }
    const double u = uniform();
    double cum = 0;
    for (std::size_t i = 0; i < keep; ++i) {
      const double p = weight(at(i)) / sum;
      cum += opt_.topP < 1.0 ? p / s2 : p;
      if (u < cum) return idx[i];
    }
    return idx[keep - 1];  // rounding left a sliver above the last bucket
  }

  // Every candidate kept: a radix select on the values' order-preserving bit patterns
  // finds the bucket of equal leading bits where the running mass passes u (12, then 10,
  // then 10 bits); only that bucket is sorted and walked.
  std::vector<std::uint32_t> key(n);
  for (std::size_t j = 0; j < n; ++j) {
    float v = value(static_cast<std::int32_t>(j));
    if (v == 0.f) v = 0.f;  // -0 ties with +0, as the comparison does
    const auto bits = std::bit_cast<std::uint32_t>(v);
    key[j] = (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;  // ascending with the value
  }
  const double u = uniform();
  std::vector<std::int32_t> cand = std::move(idx);  // candidates whose leading key bits match so far
  double massBefore = 0;                            // of every candidate ranked before them
  for (const int shift : {20, 10, 0}) {
    if (cand.size() <= 2048) break;
    const std::uint32_t buckets = shift == 20 ? 4096u : 1024u;
    std::vector<double> m(buckets, 0.0);
    const auto bucket = [&](std::int32_t j) { return (key[static_cast<std::size_t>(j)] >> shift) & (buckets - 1); };
    for (const std::int32_t j : cand) m[bucket(j)] += w[static_cast<std::size_t>(j)] / sum;
    std::uint32_t pick = buckets;  // the highest bucket first
    std::uint32_t last = buckets;  // the last non-empty one, should rounding pass them all
    for (std::uint32_t b = buckets; b-- > 0;) {
      if (m[b] == 0.0) continue;
      last = b;
      if (u < massBefore + m[b]) {
        pick = b;
        break;
      }
      massBefore += m[b];
    }
    if (pick == buckets) {
      if (last == buckets) break;  // no mass at all here: cannot happen with sum > 0
      pick = last;
      massBefore -= m[last];
    }
    std::vector<std::int32_t> next;
    for (const std::int32_t j : cand)
      if (bucket(j) == pick) next.push_back(j);
    cand = std::move(next);
  }
  std::sort(cand.begin(), cand.end(), [&](std::int32_t a, std::int32_t b) {
    const std::uint32_t ka = key[static_cast<std::size_t>(a)], kb = key[static_cast<std::size_t>(b)];
    return ka > kb || (ka == kb && a < b);
  });
  double cum = massBefore;
  for (const std::int32_t j : cand) {
    cum += w[static_cast<std::size_t>(j)] / sum;
    if (u < cum) return j;
  }
  return cand.back();  // rounding left a sliver above this bucket
}

}  // namespace sdw::gpu
