#pragma once
// Launchers for our dense GEMV (gpu/kernels/gemv.cu), built like the sparse
// kernel: 16-byte streaming weight loads, cached input loads, fp32 sums,
// split-K with the same two-pass reduction. Raw pointers only.

#include "gpu/kernels/colstats.cuh"  // DType
#include "gpu/kernels/normtail.cuh"

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace sdw::kernels {

struct GemvConfig {
  int warps = 4;         // warps per block (1..8)
  int rowsPerWarp = 2;   // 1, 2, 4 (warps * rowsPerWarp <= 32)
  int unroll = 2;        // 16-byte chunks per lane in flight (1, 2, 4; 1-2 for batch > 1)
  int splitK = 1;
  bool pdl = false;      // programmatic dependent launch, as SpmvConfig::pdl
  NormTail tail = {};      // batch 1: the add + RMSNorm after this projection, run by its last block
  NormFold fold = {};      // batch 1: that norm folded into this projection and the next (normtail.cuh)
};

std::size_t gemvWorkspaceFloats(std::int64_t rows, int batch, const GemvConfig& cfg);
std::int64_t gemvCounters(std::int64_t rows, const GemvConfig& cfg);

// w: [rows, cols] row-major bf16/fp16, cols % 8 == 0, 16-byte aligned;
// x: [batch, cols] same dtype (unused where cfg.fold.in: formed from fold.h); y: [batch][ldy] same dtype.
cudaError_t launchDenseGemv(const void* w, DType dtype, std::int64_t rows, std::int64_t cols, const void* x,
                            int batch, void* y, std::int64_t ldy, const GemvConfig& cfg, float* workspace,
                            unsigned* counters, cudaStream_t stream);

}  // namespace sdw::kernels
