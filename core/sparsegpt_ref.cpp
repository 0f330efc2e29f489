#include "core/sparsegpt_ref.h"

#include <Eigen/Cholesky>
#include <Eigen/Dense>

#include <algorithm>
#include <numeric>
#include <utility>

namespace sdw::ref {

SparseGptRefResult sparseGptReference(std::vector<double> w, std::int64_t rows, std::int64_t cols,
                                      std::vector<double> h, const SparseGptRefOptions& o) {
  using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  SparseGptRefResult res;
  auto W = [&](std::int64_t r, std::int64_t c) -> double& { return w[static_cast<std::size_t>(r * cols + c)]; };
  Mat H(cols, cols);
  for (std::int64_t i = 0; i < cols; ++i)
    for (std::int64_t j = 0; j < cols; ++j) H(i, j) = h[static_cast<std::size_t>(i * cols + j)];

  for (std::int64_t j = 0; j < cols; ++j)
    if (H(j, j) == 0) {
      H(j, j) = 1;
      for (std::int64_t r = 0; r < rows; ++r) W(r, j) = 0;
    }
  double mean = 0;
  for (std::int64_t j = 0; j < cols; ++j) mean += H(j, j);
  mean /= static_cast<double>(cols);
  for (std::int64_t j = 0; j < cols; ++j) H(j, j) += o.percdamp * mean;

  Eigen::LLT<Mat> llt(H);
  if (llt.info() != Eigen::Success) return res;
  const Mat inv = llt.solve(Mat::Identity(cols, cols));
  Eigen::LLT<Mat> llt2(inv);
  if (llt2.info() != Eigen::Success) return res;
  const Mat U = llt2.matrixU();  // upper, U^T U = H^-1

  const std::int64_t drop = o.m - o.n;
  for (std::int64_t i1 = 0; i1 < cols; i1 += o.blocksize) {
    const std::int64_t i2 = std::min<std::int64_t>(i1 + o.blocksize, cols);
    const std::int64_t count = i2 - i1;
    std::vector<char> pruned(static_cast<std::size_t>(rows * count), 0);
    auto P = [&](std::int64_t r, std::int64_t c) -> char& { return pruned[static_cast<std::size_t>(r * count + c)]; };
    std::vector<double> err(static_cast<std::size_t>(rows * count), 0.0);
    if (o.unstructured) {
      std::vector<std::pair<double, std::int64_t>> s;
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < count; ++c) {
          const double d = U(i1 + c, i1 + c);
          s.emplace_back(W(r, i1 + c) * W(r, i1 + c) / (d * d), r * count + c);
        }
      std::sort(s.begin(), s.end());
      const auto k = static_cast<std::int64_t>(static_cast<double>(rows * count) * o.sparsity);
      for (std::int64_t t = 0; t < k; ++t) pruned[static_cast<std::size_t>(s[static_cast<std::size_t>(t)].second)] = 1;
    }
    for (std::int64_t c = 0; c < count; ++c) {
      const std::int64_t j = i1 + c;
      if (!o.unstructured && c % o.m == 0) {
        for (std::int64_t r = 0; r < rows; ++r) {
          std::vector<std::pair<double, std::int64_t>> s;
          for (std::int64_t t = 0; t < o.m; ++t) {
            const double d = U(j + t, j + t);
            s.emplace_back(W(r, j + t) * W(r, j + t) / (d * d), t);
          }
          std::sort(s.begin(), s.end());
          for (std::int64_t t = 0; t < drop; ++t) P(r, c + s[static_cast<std::size_t>(t)].second) = 1;
        }
      }
      const double d = U(j, j);
      for (std::int64_t r = 0; r < rows; ++r) {
        const double wv = W(r, j);
        const double q = P(r, c) ? 0.0 : wv;
        const double e = (wv - q) / d;
        res.loss += e * e / 2;
        err[static_cast<std::size_t>(r * count + c)] = e;
        // the rest of the block (the column itself becomes q)
        for (std::int64_t t = j; t < i2; ++t) W(r, t) -= e * U(j, t);
        W(r, j) = q;
      }
    }
    // the columns after the block, with the block's errors
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t t = i2; t < cols; ++t) {
        double acc = 0;
        for (std::int64_t c = 0; c < count; ++c) acc += err[static_cast<std::size_t>(r * count + c)] * U(i1 + c, t);
        W(r, t) -= acc;
      }
  }
  res.weight = std::move(w);
  res.ok = true;
  return res;
}

}  // namespace sdw::ref
