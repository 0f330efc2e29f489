#pragma once
// Launcher for the sparse-weight x sparse-activation GEMV (spMspV, batch 1,
// gpu/kernels/spmspv.cu): y = W x where only the input entries with
// |x_j| > threshold are read, and with them only the weight bytes of those
// columns. Raw pointers only. Layout: gpu/kernels/spmspv_layout.h (column-major
// bitmask chunks per 256-row tile); packer: gpu/spmspv_pack.h.

#include "gpu/kernels/colstats.cuh"  // DType
#include "gpu/kernels/spmspv_config.h"  // SpmspvConfig, spmspvDefaults, spmspvSplitKFor
#include "gpu/kernels/spmspv_layout.h"

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace sdw::kernels {

// The device layout of one matrix (16-byte aligned buffers; Column24 / Column48: 32-byte aligned).
struct SpmspvLayout {
  const void* chunks = nullptr;            // chunk buffer
  const std::uint32_t* offsets = nullptr;  // Bitmask: [tiles * cols + 1]; Column24 / Column48: unused
  std::int64_t rows = 0, cols = 0;
  DType dtype = DType::BF16;  // BF16 or F16
  SpmspvFormat format = SpmspvFormat::Bitmask;
};

// The split-K count a launch uses on the current device: spmspvSplitKFor with its SM count.
int spmspvSplitK(std::int64_t rows, std::int64_t cols, const SpmspvConfig& cfg);
// The largest split-K, at most the heuristic's, whose grid fits in one wave of the current
// device (tiles x slices <= SMs x the blocks of cfg's kernel one SM holds at that split-K):
// a candidate of the launch grid (bench kernels --tune), not the default.
int spmspvOneWaveSplitK(std::int64_t rows, std::int64_t cols, DType dtype, const SpmspvConfig& cfg,
                        SpmspvFormat format = SpmspvFormat::Bitmask);
// fp32 partial sums (0 without split-K) and split-K counters (zeroed once before first
// use; the kernel leaves them zero) a launch needs.
std::size_t spmspvWorkspaceFloats(std::int64_t rows, std::int64_t cols, const SpmspvConfig& cfg);
// Whether a column-layout launch of cfg at this shape reduces its split-K slices in a cluster
// on the current device (SpmspvConfig::cluster); otherwise through the workspace (more than
// one slice) or not at all.
bool spmspvColumnCluster(std::int64_t rows, std::int64_t cols, const SpmspvConfig& cfg);
std::int64_t spmspvCounters(std::int64_t rows);

// x: [cols] in the layout's dtype; y: [rows] same dtype. Reads column j iff
// |x_j| > threshold (a negative threshold: every column). fp32 accumulation.
// The layout's format picks the kernel; both take the same grid (row tiles x
// split-K slices), workspace and counters.
cudaError_t launchSpmspv(const SpmspvLayout& w, const void* x, float threshold, void* y, const SpmspvConfig& cfg,
                         float* workspace, unsigned* counters, cudaStream_t stream);

}  // namespace sdw::kernels
