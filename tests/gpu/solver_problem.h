#pragma once
// Random pruning problems for the solver tests (test_solvers on the CPU,
// test_sparsegpt_cuda on the GPU): W ~ N(0, 1) and the statistics of inputs
// X (tokens x cols) with correlated columns and uneven scales, summed in
// double.

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace sdw::testing {

struct Problem {
  std::int64_t rows = 0, cols = 0, tokens = 0;
  std::vector<float> w, xtx, sumSq;
};

inline Problem makeProblem(std::int64_t rows, std::int64_t cols, std::uint32_t seed, std::int64_t tokens = 0) {
  Problem p;
  p.rows = rows;
  p.cols = cols;
  p.tokens = tokens > 0 ? tokens : 4 * cols;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  p.w.resize(static_cast<std::size_t>(rows * cols));
  for (auto& v : p.w) v = nd(rng);
  std::vector<double> x(static_cast<std::size_t>(p.tokens * cols));
  std::vector<double> scale(static_cast<std::size_t>(cols));
  for (auto& s : scale) s = std::exp(0.5 * nd(rng));
  for (std::int64_t t = 0; t < p.tokens; ++t) {
    const double common = nd(rng);
    for (std::int64_t j = 0; j < cols; ++j)
      x[static_cast<std::size_t>(t * cols + j)] = scale[static_cast<std::size_t>(j)] * (nd(rng) + 0.5 * common);
  }
  p.xtx.assign(static_cast<std::size_t>(cols * cols), 0.f);
  p.sumSq.assign(static_cast<std::size_t>(cols), 0.f);
  for (std::int64_t i = 0; i < cols; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      double s = 0;
      for (std::int64_t t = 0; t < p.tokens; ++t)
        s += x[static_cast<std::size_t>(t * cols + i)] * x[static_cast<std::size_t>(t * cols + j)];
      p.xtx[static_cast<std::size_t>(i * cols + j)] = static_cast<float>(s);
    }
  for (std::int64_t j = 0; j < cols; ++j) p.sumSq[static_cast<std::size_t>(j)] = p.xtx[static_cast<std::size_t>(j * cols + j)];
  return p;
}

}  // namespace sdw::testing
