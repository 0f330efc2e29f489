// The column-by-column loop of one SparseGPT block on the GPU: one thread per
// row (rows are independent inside a block), H^-1's block in shared memory,
// each thread's row of the block in shared memory too (column-major across
// the threads of a CUDA block, so a column access is conflict-free). Replaces
// ~10 small ATen launches per column with one launch per block of columns.

#include "gpu/kernels/sparsegpt.cuh"

namespace sdw::kernels {

namespace {

constexpr int kThreads = 64;   // rows per CUDA block
constexpr int kMaxCount = 128;

__global__ void sparseGptBlockKernel(float* __restrict__ w1, float* __restrict__ q1, float* __restrict__ err1,
                                     float* __restrict__ losses, const float* __restrict__ hinv1,
                                     const std::uint8_t* __restrict__ mask, std::int64_t rows, int count, int n,
                                     int m) {
  extern __shared__ float smem[];
  float* hs = smem;                   // [count][count]
  float* ws = smem + count * count;   // [count][kThreads]
  for (int k = threadIdx.x; k < count * count; k += blockDim.x) hs[k] = hinv1[k];
  const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const bool live = r < rows;
  const int t = threadIdx.x;
  if (live)
    for (int j = 0; j < count; ++j) ws[j * kThreads + t] = w1[r * count + j];
  __syncthreads();
  if (!live) return;

  const bool nm = mask == nullptr;
  const int drop = m - n;
  unsigned pruned = 0;  // N:M: bit (j - group start) set = pruned, for the current group
  float loss = 0.f;
  for (int i = 0; i < count; ++i) {
    if (nm && i % m == 0) {
      // The `drop` smallest scores of the group, with the group as updated so far.
      float score[32];
      for (int j = 0; j < m; ++j) {
        const float wj = ws[(i + j) * kThreads + t];
        const float dj = hs[(i + j) * count + (i + j)];
        score[j] = (wj * wj) / (dj * dj);
      }
      pruned = 0;
      for (int k = 0; k < drop; ++k) {
        int best = -1;
        for (int j = 0; j < m; ++j)
          if (!((pruned >> j) & 1u) && (best < 0 || score[j] < score[best])) best = j;
        pruned |= 1u << best;
      }
    }
    const bool p = nm ? ((pruned >> (i % m)) & 1u) != 0 : mask[r * count + i] != 0;
    const float wi = ws[i * kThreads + t];
    const float q = p ? 0.f : wi;
    const float e = (wi - q) / hs[i * count + i];
    q1[r * count + i] = q;
    err1[r * count + i] = e;
    loss += e * e;
    for (int j = i; j < count; ++j) ws[j * kThreads + t] -= e * hs[i * count + j];
  }
  losses[r] += loss / 2.f;
  for (int j = 0; j < count; ++j) w1[r * count + j] = ws[j * kThreads + t];
}

}  // namespace

cudaError_t launchSparseGptBlock(float* w1, float* q1, float* err1, float* losses, const float* hinv1,
                                 const std::uint8_t* mask, std::int64_t rows, int count, int n, int m,
                                 cudaStream_t stream) {
  if (count < 1 || count > kMaxCount || rows < 1) return cudaErrorInvalidValue;
  if (mask == nullptr && (m < 2 || m > 32 || n < 1 || n >= m || count % m != 0)) return cudaErrorInvalidValue;
  const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(count) * (count + kThreads);
  const cudaError_t attr =
      cudaFuncSetAttribute(sparseGptBlockKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (attr != cudaSuccess) return attr;
  const auto blocks = static_cast<unsigned>((rows + kThreads - 1) / kThreads);
  sparseGptBlockKernel<<<blocks, kThreads, bytes, stream>>>(w1, q1, err1, losses, hinv1, mask, rows, count, n, m);
  return cudaGetLastError();
}

}  // namespace sdw::kernels
