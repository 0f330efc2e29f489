#include "gpu/sampling.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
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
  // Per-thread scratch, kept between draws: a 128K row's buffers are megabytes, and
  // allocating them afresh on every draw costs page faults on every thread.
  thread_local std::vector<std::int32_t> idx;
  thread_local std::vector<double> w;  // every candidate's weight, when every candidate is kept
  thread_local std::vector<std::uint32_t> key;
  thread_local std::vector<std::int32_t> cand, nextCand;
  idx.resize(n);
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
  if (opt_.topK > 0) {
    sortTo(keep0);
  } else {  // the first candidate by one scan (a partial sort of one costs several times that)
    std::size_t best = 0;
    float bestValue = value(0);
    for (std::size_t j = 1; j < n; ++j) {
      const float v = value(static_cast<std::int32_t>(j));
      if (v > bestValue) {  // strictly: the first index on ties, as `before` orders them
        bestValue = v;
        best = j;
      }
    }
    std::swap(idx[0], idx[best]);
    sorted = 1;
  }
  const double top = static_cast<double>(logits[static_cast<std::size_t>(idx[0])]) / opt_.temperature;
  const auto weight = [&](std::int32_t i) {
    const double l = static_cast<double>(logits[static_cast<std::size_t>(i)]);
    return std::isfinite(l) ? std::exp(l / opt_.temperature - top) : 0.0;
  };
  double sum = 0;
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
  key.resize(n);
  for (std::size_t j = 0; j < n; ++j) {
    std::uint32_t bits = std::bit_cast<std::uint32_t>(value(static_cast<std::int32_t>(j)));
    bits = bits == 0x80000000u ? 0u : bits;  // -0 ties with +0, as the comparison does
    // Ascending with the value: negatives all bits flipped, the rest the sign bit set
    // (branch-free: a random sign per logit defeats the branch predictor).
    const std::uint32_t neg = static_cast<std::uint32_t>(static_cast<std::int32_t>(bits) >> 31);
    key[j] = bits ^ (neg | 0x80000000u);
  }
  const double u = uniform();
  cand.clear();  // candidates whose leading key bits match so far; empty before the first pass: all of them
  bool all = true;
  double massBefore = 0;  // of every candidate ranked before them
  for (const int shift : {20, 10, 0}) {
    if ((all ? n : cand.size()) <= 2048) break;
    const std::uint32_t buckets = shift == 20 ? 4096u : 1024u;
    std::vector<double> m(buckets, 0.0);
    const auto bucket = [&](std::int32_t j) { return (key[static_cast<std::size_t>(j)] >> shift) & (buckets - 1); };
    // Each bucket's weight, then its share of the mass (one division per bucket).
    if (all)
      for (std::size_t j = 0; j < n; ++j) m[(key[j] >> shift) & (buckets - 1)] += w[j];
    else
      for (const std::int32_t j : cand) m[bucket(j)] += w[static_cast<std::size_t>(j)];
    for (double& mb : m) mb /= sum;
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
    nextCand.clear();
    if (all) {
      for (std::size_t j = 0; j < n; ++j)
        if (((key[j] >> shift) & (buckets - 1)) == pick) nextCand.push_back(static_cast<std::int32_t>(j));
    } else {
      for (const std::int32_t j : cand)
        if (bucket(j) == pick) nextCand.push_back(j);
    }
    cand.swap(nextCand);
    all = false;
  }
  if (all) {
    cand.resize(n);
    std::iota(cand.begin(), cand.end(), 0);
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

// ---- BatchSampler -------------------------------------------------------------------

struct BatchSampler::Pool {
  std::vector<Sampler> rows;
  std::vector<std::thread> workers;
  std::mutex mu;
  std::condition_variable wake, finished;
  std::uint64_t round = 0;  // bumped per draw(); workers wait for a new one
  bool stop = false;
  int busy = 0;  // workers still in this round
  // The round's job:
  const float* logits = nullptr;
  const std::uint16_t* bf16 = nullptr;  // instead of logits: bfloat16 bit patterns
  std::size_t vocab = 0;
  const std::vector<bool>* skip = nullptr;
  std::vector<std::int32_t>* out = nullptr;
  std::atomic<std::size_t> nextRow{0};
  std::exception_ptr error;

  void work() {
    for (std::size_t r; (r = nextRow.fetch_add(1)) < rows.size();) {
      if ((*skip)[r]) continue;
      try {
        if (bf16) {
          thread_local std::vector<float> row;
          row.resize(vocab);
          const std::uint16_t* src = bf16 + r * vocab;
          for (std::size_t j = 0; j < vocab; ++j) row[j] = std::bit_cast<float>(std::uint32_t{src[j]} << 16);
          (*out)[r] = rows[r].next(std::span<const float>(row.data(), vocab));
        } else {
          (*out)[r] = rows[r].next(std::span<const float>(logits + r * vocab, vocab));
        }
      } catch (...) {
        const std::lock_guard lock(mu);
        if (!error) error = std::current_exception();
      }
    }
  }
  void loop() {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock lock(mu);
        wake.wait(lock, [&] { return stop || round != seen; });
        if (stop) return;
        seen = round;
      }
      work();
      const std::lock_guard lock(mu);
      if (--busy == 0) finished.notify_one();
    }
  }
};

BatchSampler::BatchSampler(std::vector<Sampler> rows, int threads) : pool_(std::make_unique<Pool>()) {
  pool_->rows = std::move(rows);
  const int hw = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int n = std::clamp(threads > 0 ? threads : hw, 1, std::max(1, static_cast<int>(pool_->rows.size())));
  for (int t = 1; t < n; ++t) pool_->workers.emplace_back([p = pool_.get()] { p->loop(); });  // the caller is one
}

BatchSampler::~BatchSampler() {
  {
    const std::lock_guard lock(pool_->mu);
    pool_->stop = true;
  }
  pool_->wake.notify_all();
  for (auto& t : pool_->workers) t.join();
}

int BatchSampler::threads() const { return static_cast<int>(pool_->workers.size()) + 1; }

void BatchSampler::draw(const float* logits, std::size_t vocab, const std::vector<bool>& skip,
                        std::vector<std::int32_t>& out) {
  run(logits, nullptr, vocab, skip, out);
}

void BatchSampler::drawBf16(const std::uint16_t* logits, std::size_t vocab, const std::vector<bool>& skip,
                            std::vector<std::int32_t>& out) {
  run(nullptr, logits, vocab, skip, out);
}

void BatchSampler::run(const float* logits, const std::uint16_t* bf16, std::size_t vocab, const std::vector<bool>& skip,
                       std::vector<std::int32_t>& out) {
  Pool& p = *pool_;
  if (skip.size() != p.rows.size() || out.size() < p.rows.size())
    throw std::invalid_argument("batch sampler: " + std::to_string(p.rows.size()) + " rows, given " +
                                std::to_string(skip.size()));
  {
    const std::lock_guard lock(p.mu);
    p.logits = logits;
    p.bf16 = bf16;
    p.vocab = vocab;
    p.skip = &skip;
    p.out = &out;
    p.nextRow = 0;
    p.error = nullptr;
    p.busy = static_cast<int>(p.workers.size());
    ++p.round;
  }
  p.wake.notify_all();
  p.work();
  std::unique_lock lock(p.mu);
  p.finished.wait(lock, [&] { return p.busy == 0; });
  if (p.error) std::rethrow_exception(p.error);
}

}  // namespace sdw::gpu
