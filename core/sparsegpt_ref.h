#pragma once
// A straightforward fp64 reference of the SparseGPT algorithm (plain loops,
// Eigen for the Cholesky factorisations), the yardstick for the LibTorch
// solver in gpu/prune_sparsegpt.cpp. Same conventions: dead inputs, damping
// percdamp * mean(diag H), Hinv = upper Cholesky factor of H^-1, blocks of
// `blocksize` columns; unstructured: per block the floor(numel * sparsity)
// lowest w^2 / Hinv_jj^2 over all rows (ties: lower flat index); N:M: at
// every M-th column of a block, per row, the M - N lowest scores of the M
// already-updated columns are dropped.

#include <cstdint>
#include <vector>

namespace sdw::ref {

struct SparseGptRefOptions {
  bool unstructured = false;
  double sparsity = 0.5;
  int n = 2, m = 4;
  double percdamp = 0.01;
  int blocksize = 128;
};

struct SparseGptRefResult {
  std::vector<double> weight;  // [rows, cols] row-major, pruned and updated
  double loss = 0;             // sum (w - q)^2 / Hinv_jj^2 / 2
  bool ok = false;             // false when the Cholesky factorisations failed at this damping
};

// w: [rows, cols] row-major; h: [cols, cols] (the Hessian, e.g. 2 xtx / tokens).
SparseGptRefResult sparseGptReference(std::vector<double> w, std::int64_t rows, std::int64_t cols,
                                      std::vector<double> h, const SparseGptRefOptions& options);

}  // namespace sdw::ref
