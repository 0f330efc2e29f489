#pragma once
// Launcher for gpu/kernels/sparsegpt.cu: the column-by-column part of one
// SparseGPT block. Raw pointers only: no torch here.

#include <cstdint>

#include <cuda_runtime_api.h>

namespace sdw::kernels {

// One block of `count` (<= 128) columns, every row independent (DESIGN §1,
// SparseGPT; gpu/prune_sparsegpt.cpp holds the same loop in ATen):
//   for i < count:
//     N:M (n < m, m <= 32), at i % m == 0: prune the m - n entries of
//       w[i .. i+m) with the smallest w_j^2 / hinv_jj^2 (ties: lower j first);
//     unstructured: pruned[i] from `mask` ([rows, count] uint8, 1 = pruned);
//     q = pruned ? 0 : w_i;  e = (w_i - q) / hinv_ii;
//     q1[i] = q; err1[i] = e; loss += e^2; w[j] -= e * hinv[i][j] for j >= i
//   losses[r] += loss / 2.
// w1, q1, err1: [rows, count] fp32 row-major (w1 is updated in place);
// hinv1: [count, count] fp32 row-major; losses: [rows] fp32.
cudaError_t launchSparseGptBlock(float* w1, float* q1, float* err1, float* losses, const float* hinv1,
                                 const std::uint8_t* mask, std::int64_t rows, int count, int n, int m,
                                 cudaStream_t stream);

}  // namespace sdw::kernels
