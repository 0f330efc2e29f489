// Bitmask N:M SpMV, the host side (design and measurements: docs/kernels.md; the kernels:
// spmv_impl.cuh, compiled per batch size in spmv_b*.cu).

#include "gpu/kernels/spmv_impl.cuh"

#include <algorithm>
#include <cstdint>

namespace sdw::kernels {

int spmvXStride(int batch) { return batch <= 1 ? 1 : batch == 2 ? 2 : batch <= 4 ? 4 : 8; }

std::int64_t spmvTiles(std::int64_t rows) { return (rows + 31) / 32; }

int spmvWordsPerSplit(std::int64_t cols, int batch, const SpmvConfig& cfg) {
  const int G = static_cast<int>(cols / 32);
  const bool tc = spmvTensorCores(cfg) && batch > 1;
  const int maxWords = tc ? (kMaxXsBytes / (64 * batch)) & ~1  // 16-bit x, an even number of words
                          : kMaxXsBytes / (32 * spmvXStride(batch) * static_cast<int>(sizeof(float)));
  const int S = batch == 1 || spmvXShuffle(cfg, batch)
                    ? std::clamp(cfg.splitK, 1, G)  // x is not staged
                    : std::max(std::clamp(cfg.splitK, 1, G), (G + maxWords - 1) / maxWords);
  const int per = (G + S - 1) / S;
  return tc ? (per + 1) & ~1 : per;  // the tensor-core kernel walks word pairs
}

bool pdlSupported() { return hopperLaunchSupported(); }

SpmvConfig spmvOnTensorCores(SpmvConfig cfg, std::int64_t rows, std::int64_t cols) {
  // From the H200 sweep (tools/gpu/spmv-tc.sh): 8 tiles per block, a 2-stage ring, and about
  // 224 blocks (split-K, at least 16 words per slice) did best or near it on most shapes.
  cfg.warps = 8;
  cfg.unroll = 102;
  cfg.cluster = -1;
  cfg.tail = {};
  const std::int64_t blocks = (spmvTiles(rows) + cfg.warps - 1) / cfg.warps;
  const std::int64_t G = std::max<std::int64_t>(1, cols / 32);
  const std::int64_t want = (224 * static_cast<std::int64_t>(detail::smCount()) / 132 + blocks / 2) / blocks;
  cfg.splitK = static_cast<int>(std::clamp<std::int64_t>(want, 1, std::max<std::int64_t>(1, G / 16)));
  return cfg;
}

bool spmvUsesCluster(std::int64_t cols, int batch, const SpmvConfig& cfg) {
  if ((batch != 1 && !spmvXShuffle(cfg, batch)) || cfg.cluster == 0) return false;
  const int G = static_cast<int>(cols / 32), per = spmvWordsPerSplit(cols, batch, cfg);
  const int splits = (G + per - 1) / per;
  return splits >= 2 && splits <= (cfg.cluster > 0 ? kMaxClusterB1 : 8);
}

std::size_t spmvWorkspaceFloats(std::int64_t rows, std::int64_t cols, int batch, const SpmvConfig& cfg) {
  const int G = static_cast<int>(cols / 32), per = spmvWordsPerSplit(cols, batch, cfg);
  const int splits = (G + per - 1) / per;
  return splits <= 1 ? 0 : static_cast<std::size_t>(splits) * spmvTiles(rows) * 32 * batch;
}

cudaError_t launchBitmaskSpmv(const void* values, const std::uint32_t* masks, DType dtype, std::int64_t rows,
                              std::int64_t cols, const void* x, int batch, void* y, std::int64_t ldy,
                              const SpmvConfig& cfg, float* workspace, unsigned* counters,
                              cudaStream_t stream) {
  if (rows <= 0 || cols <= 0 || cols % 32 || ldy < rows || batch < 1 || batch > 8) return cudaErrorInvalidValue;
  const bool shuffle = spmvXShuffle(cfg, batch);
  if (cfg.warps < 1 || cfg.warps > (batch == 1 || shuffle ? kMaxWarpsB1 : kMaxWarps) || spmvTiles(rows) > 2147483647)
    return cudaErrorInvalidValue;
  // x by shuffle: a lane loads its column's spmvXStride 16-bit slots at once (4 or 8 bytes, aligned)
  const std::uintptr_t xAlign = 2u * static_cast<std::uintptr_t>(spmvXStride(batch)) - 1;
  if (cfg.unroll > 200 && (!shuffle || (reinterpret_cast<std::uintptr_t>(x) & xAlign))) return cudaErrorInvalidValue;
  if (spmvWorkspaceFloats(rows, cols, batch, cfg) > 0 && (!workspace || !counters)) return cudaErrorInvalidValue;
  if (cfg.tail.on() && (batch != 1 || !cfg.tail.h || !cfg.tail.w || !cfg.tail.x)) return cudaErrorInvalidValue;
  if (cfg.xRowMajor && (batch == 1 || !spmvTensorCores(cfg))) return cudaErrorInvalidValue;  // interleaved x only
  if (spmvTensorCores(cfg) && cfg.tcM != 2 && cfg.tcM != 4 && cfg.tcM != 8 && cfg.tcM != 16 && cfg.tcM != 32)
    return cudaErrorInvalidValue;
  const detail::SpmvCall call{dtype, values, masks, rows, cols, x, y, ldy, batch, cfg, workspace, counters, stream};
  if (batch == 1) return detail::spmvBatch1(call);
  if (batch <= 3) return detail::spmvBatches2to3(call);
  if (batch <= 5) return detail::spmvBatches4to5(call);
  if (batch <= 8) return detail::spmvBatches6to8(call);
  return cudaErrorInvalidValue;
}

}  // namespace sdw::kernels
