#pragma once
// Launchers for the bitmask N:M SpMV (gpu/kernels/spmv.cu; the kernels in spmv_impl.cuh). Raw pointers only.
//
// Device layout ("row tiles", docs/sparse-format.md): rows are padded to a
// multiple of 32 and cut into tiles of 32 rows; G = cols / 32 mask words per row.
//   values: [tiles][G][32 rows][16] bf16/fp16 — lane l of a warp reads the 32
//           bytes of row 32t+l, word g: a warp reads 1 KiB contiguous;
//   masks:  [tiles][G][32 rows] uint32 — 128 bytes contiguous per warp, the
//           words unchanged (bit c: column 32g + c kept).
// Padding rows carry mask 0x0000ffff and zero values (never written out).
// x: [cols][xStride] (the batch interleaved per column; xStride in {1,2,4,8},
//    >= batch), so one load fetches a column for the whole batch; on the tensor cores
//    with SpmvConfig::xRowMajor, [batch][cols] as the other kernels of a step write it.
// y: [batch][ldy] in the value dtype.

#include "gpu/kernels/colstats.cuh"  // DType
#include "gpu/kernels/normtail.cuh"
#include "gpu/kernels/spmv_tc.h"  // spmvUseTensorCores

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace sdw::kernels {

struct SpmvConfig {
  int warps = 8;     // warps per block, all on the same 32-row tile: 1..16 at batch 1, 1..8 above
  int unroll = 2;    // mask words per warp with loads in flight before use (1, 2, 4; 3 at batch 1);
                     // batch 1, 10 S + U (41, 61, 81, 42, 34): S-stage bulk-copy pipeline through shared
                     // memory (sm_90, 16-byte aligned pointers; else the register path with U words);
                     // batch 2-8, 100 + S (102, 103, 104): the tensor cores (dense mma.sync m16n8k16 on
                     // weights expanded in registers, sm_80+), each warp its own tile through an
                     // S-stage cp.async ring of word pairs; x 4-byte, values and masks 16-byte aligned;
                     // for patterns with M | 8 (2:4, 4:8) only: the expansion relies on every mask
                     // byte holding four kept columns (8:16 and 16:32: tcM);
                     // batch 2, 200 + U (201, 202, 203): the batch-1 kernel's walk with x by shuffle
                     // from registers (x [cols][2], 4-byte aligned; both rows in one 32-bit shuffle),
                     // no shared-memory copy of x, up to 16 warps and the cluster finish as at batch 1
  int splitK = 1;    // blocks per tile along the input dimension (two-pass reduction);
                     // raised where the x slice would not fit in shared memory
  int cluster = -1;  // batch 1 with splitK > 1 on sm_90+: the blocks of a tile form a thread-block
                     // cluster and reduce through distributed shared memory (no workspace pass).
                     // -1 auto (cluster for 2..8 blocks), 0 never (workspace + ticket), 1 up to 16
  bool pdl = false;  // programmatic dependent launch (sm_90; ignored below): the launch and the first
                     // weight loads overlap the previous kernel of the stream, x is read after it completes
  NormTail tail = {};  // batch 1 (not on the tensor cores): the add + RMSNorm after this projection, run by
                     // its last block (normtail.cuh)
  bool xRowMajor = false;  // batch 2-8 on the tensor cores: x is [batch][cols] row-major (16-byte aligned)
                           // instead of [cols][xStride]; refused on the other paths
  // On the tensor cores, the pattern's M: 2, 4, 8 (every mask byte holds four kept columns) or 16
  // (8:16: every 16 columns hold eight; a longer expansion, with xRowMajor only, a ring of 2-4
  // stages, unroll 102-104) or 32 (16:32: 8:16's expansion on a window of each row's values,
  // spmv_tc.h; the same restrictions). The packed format does not say which: a wrong M gives
  // wrong sums.
  int tcM = 8;
  // On the tensor cores with tcM 2, 4 or 8, x row-major and the 2-stage ring (unroll 102):
  // the byte selectors in 8 copies (32 KiB of shared memory instead of 4), lane l reading
  // copy l & 7, so the 8 lanes of each quarter-warp phase of a 16-byte shared load hit 8
  // distinct bank groups (with one copy the random bytes collide: ~10 wavefronts a load
  // instead of 4). Bitwise the same sums; never with programmatic dependent launch; ignored
  // on the other paths. An A/B switch (SDW_TC_SEL=copies in the engine), off: on an H100 the
  // engine's 2:4 steps at batch 4 and 8 ran 3-5% slower with it, one row 2.5% faster
  // (docs/decode-engine.md).
  bool tcSelectorCopies = false;
};

int spmvXStride(int batch);  // 1, 2, 4 or 8
// Whether a configuration takes the tensor-core path (unroll 100 + S; batch 2-8, M | 8).
inline bool spmvTensorCores(const SpmvConfig& cfg) { return cfg.unroll > 100 && cfg.unroll < 200; }
// Whether a configuration takes the shuffle path of batch 2-4 (unroll 200 + U, U = 1..3): x
// from registers by shuffle as at batch 1, batch-interleaved ([cols][2] at batch 2, 4-byte
// aligned; [cols][4] at batch 3 and 4, 8-byte aligned).
inline bool spmvXShuffle(const SpmvConfig& cfg, int batch) {
  return spmvShuffleBatch(batch) && spmvShuffleUnroll(cfg.unroll);
}
// The tensor-core configuration for a shape and batch (what the engine and the kernel
// benchmark run): 8 warps (tiles) per block, a 2-stage ring, split-K to about 1.7 blocks per
// SM with at least 16 words per slice; cfg's programmatic dependent launch kept.
SpmvConfig spmvOnTensorCores(SpmvConfig cfg, std::int64_t rows, std::int64_t cols);
std::int64_t spmvTiles(std::int64_t rows);
// Mask words per split-K slice actually used (cfg.splitK, raised for shared memory).
int spmvWordsPerSplit(std::int64_t cols, int batch, const SpmvConfig& cfg);
// Whether the launch takes the cluster path (batch 1, 2..8 blocks per tile, or up to 16
// with cfg.cluster = 1), on a device that supports clusters (otherwise the workspace path).
bool spmvUsesCluster(std::int64_t cols, int batch, const SpmvConfig& cfg);
// Whether the current device takes programmatic dependent launches (sm_90+; SpmvConfig::pdl
// and GemvConfig::pdl are ignored elsewhere).
bool pdlSupported();
// fp32 partial sums the split-K path needs (also required with the cluster path: its fallback
// where clusters are unavailable); counters: spmvTiles(rows) unsigned, zeroed once before
// first use (the kernel leaves them zero).
std::size_t spmvWorkspaceFloats(std::int64_t rows, std::int64_t cols, int batch, const SpmvConfig& cfg);

cudaError_t launchBitmaskSpmv(const void* values, const std::uint32_t* masks, DType dtype, std::int64_t rows,
                              std::int64_t cols, const void* x, int batch, void* y, std::int64_t ldy,
                              const SpmvConfig& cfg, float* workspace, unsigned* counters,
                              cudaStream_t stream);

}  // namespace sdw::kernels
