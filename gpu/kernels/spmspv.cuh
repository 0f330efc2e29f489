#pragma once
// Launcher for the sparse-weight x sparse-activation GEMV (spMspV, batch 1,
// gpu/kernels/spmspv.cu): y = W x where only the input entries with
// |x_j| > threshold are read, and with them only the weight bytes of those
// columns. Raw pointers only. Layout: gpu/kernels/spmspv_layout.h (column-major
// bitmask chunks per 256-row tile); packer: gpu/spmspv_pack.h.

#include "gpu/kernels/colstats.cuh"  // DType
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

struct SpmspvConfig {
  // The defaults are the H200 grid's (bench kernels --tune over four Llama-3.1-8B shapes at
  // p_x 0, 0.5, 0.75): 8 or 16 warps, 2 groups in flight and as many split-K blocks as keep
  // one step of 32 columns per warp won 10 of 12 rows.
  int warps = 8;   // warps per block (1..16), each walking its own share of the block's columns
  int splitK = 0;  // blocks per row tile along the input dimension; 0: spmspvSplitK's heuristic
  int stages = 2;  // groups of 4 chunks each warp has in flight: 2, 3, 4 or 6 (shared memory: 2.1 KB each)
  // Each chunk one bulk copy (sm_90's copy engine, completion on an mbarrier) issued by one
  // lane, instead of 16-byte cp.async pieces by every lane: fewer instructions per chunk.
  // Ignored (cp.async) below sm_90.
  bool bulk = false;
  // Column24 and Column48 only: the split-K slices of a tile launched as one thread-block cluster (sm_90)
  // and added through distributed shared memory by the cluster's first block, instead of
  // partial sums in the workspace and a ticket: 0 never (the default until measured), 1
  // where there are 2-16 slices (over 8: the non-portable cluster size; a launch the device
  // cannot co-schedule is refused), -1 where there are 2-8. Below sm_90: never.
  int cluster = 0;
  // The split-K heuristic's aim (splitK 0): tiles x slices about this many blocks per SM of the
  // device, rounded to the nearest slice count. 0: 8, rounded up (the bitmask kernel's).
  float blocksPerSm = 0.f;
};
// For SpmspvFormat::Column24, Column48 and ColumnDense the same fields mean: warps 1..8; stages the
// chunks each lane loads per batch, with two batches in flight (2, 4 or 8); bulk is ignored.

// The launch defaults of a layout. Bitmask: SpmspvConfig{}. The column layouts: the H200 grid's
// winners (bench kernels --tune, four Llama-3.1-8B shapes at p_x 0, 0.5, 0.75, commits 1700967
// and 8f23e09): 4 chunks per batch for column 2:4, 8 for column 4:8 and dense, the slices reduced
// in a cluster, and fewer slices than the bitmask kernel's 8 blocks per SM: the winners at p_x
// 0.5 had 448 blocks for column 2:4 (14336x4096: 56 tiles x 8 slices, 4096x14336: 16 x 28),
// 224-256 for column 4:8 (56 x 4, 16 x 16), against 17.1 / 23.9 us for 56 x 16 with the
// same depth and cluster (13.9 / 13.7 us with the winners' slices). Column 4:8 reduces in a
// cluster only where it is portable (2-8 slices): at 4096x4096 its 16-block cluster took 10.8
// us against 7.9 through the workspace.
inline SpmspvConfig spmspvDefaults(SpmspvFormat format) {
  SpmspvConfig c;
  if (format == SpmspvFormat::Bitmask) return c;
  c.stages = format == SpmspvFormat::Column24 ? 4 : 8;
  c.cluster = format == SpmspvFormat::Column48 ? -1 : 1;
  c.blocksPerSm = format == SpmspvFormat::Column24 ? 3.4f : format == SpmspvFormat::Column48 ? 1.8f : 2.5f;
  return c;
}

// The split-K count a launch uses: cfg.splitK (or, when 0, about cfg.blocksPerSm blocks per SM
// of the current device, 8 where unset, with at least 1 step of 32 columns per warp), raised so that each
// warp's list of active columns fits in shared memory.
int spmspvSplitK(std::int64_t rows, std::int64_t cols, const SpmspvConfig& cfg);
// The largest split-K, at most the heuristic's, whose grid fits in one wave of the current
// device (tiles x slices <= SMs x the blocks of cfg's kernel one SM holds at that split-K):
// a candidate of the launch grid (bench kernels --tune), not the default.
int spmspvOneWaveSplitK(std::int64_t rows, std::int64_t cols, DType dtype, const SpmspvConfig& cfg,
                        SpmspvFormat format = SpmspvFormat::Bitmask);
// fp32 partial sums (0 without split-K) and split-K counters (zeroed once before first
// use; the kernel leaves them zero) a launch needs.
std::size_t spmspvWorkspaceFloats(std::int64_t rows, std::int64_t cols, const SpmspvConfig& cfg);
std::int64_t spmspvCounters(std::int64_t rows);

// x: [cols] in the layout's dtype; y: [rows] same dtype. Reads column j iff
// |x_j| > threshold (a negative threshold: every column). fp32 accumulation.
// The layout's format picks the kernel; both take the same grid (row tiles x
// split-K slices), workspace and counters.
cudaError_t launchSpmspv(const SpmspvLayout& w, const void* x, float threshold, void* y, const SpmspvConfig& cfg,
                         float* workspace, unsigned* counters, cudaStream_t stream);

}  // namespace sdw::kernels
