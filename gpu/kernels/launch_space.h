#pragma once
// The launch configurations of our SpMV and dense GEMV kernels that are tuned
// and checked: one table for `sdw-cli bench kernels --tune` (gpu/bench.cpp),
// the standalone probe (tools/gpu/spmv_probe.cu) and the device tests
// (tests/gpu/test_spmv_cuda.cpp, through gpu/kernel_cases.h). Header only, host code, raw types: nvcc and
// the torch translation units both include it.
//
// SpmvConfig::cluster here, in the tuning JSON ("cluster") and in the engine is
// one thing: the request (-1 auto, 0 never, 1 up to 16 blocks). The tuning space
// holds the requests 0 and 1 where they agree with auto (so a tuned entry runs
// the same path wherever it is read back, with or without auto).

#include "gpu/kernels/gemv.cuh"
#include "gpu/kernels/spmv.cuh"
#include "gpu/spmv.h"  // SpmvLaunch, GemvLaunch (plain C++)

#include <cstdint>
#include <vector>

namespace sdw::kernels {

// The engine's launch configurations (gpu/spmv.h) as the launchers take them, and
// back; every field travels, the cluster request included.
inline SpmvConfig toConfig(const gpu::SpmvLaunch& c, bool pdl) { return {c.warps, c.unroll, c.splitK, c.cluster, pdl}; }
inline GemvConfig toConfig(const gpu::GemvLaunch& c, bool pdl) { return {c.warps, c.rowsPerWarp, c.unroll, c.splitK, pdl}; }
inline gpu::SpmvLaunch toLaunch(const SpmvConfig& c) { return {c.warps, c.unroll, c.splitK, c.cluster, c.pdl}; }
inline gpu::GemvLaunch toLaunch(const GemvConfig& c) { return {c.warps, c.rowsPerWarp, c.unroll, c.splitK, c.pdl}; }

// The axes of the sparse space. Unroll 10 S + U (41, 61, 81, 42, 34): the batch-1
// bulk-copy pipeline (sm_90; elsewhere the register path with U words); 200 + U (201,
// 202, 203): batch 2 with x by shuffle.
inline constexpr int kSpmvWarps[] = {4, 8, 16};
inline constexpr int kSpmvUnrolls[] = {1, 2, 3, 4, 41, 61, 81, 42, 34, 201, 202, 203};
inline constexpr int kSpmvSplits[] = {1, 2, 3, 4, 6, 8, 16};
inline constexpr int kSpmvBulkUnrolls[] = {41, 61, 81, 42, 34};

// Whether (warps, unroll) is a configuration the kernels take at this batch:
// 16 warps, unroll 3 and the bulk pipeline are batch-1 only (16 warps also batch 2's shuffle path). 16 warps x 3 stages
// x 4 words of the bulk pipeline (34) need 228 KiB of shared memory, over sm_90's 227 KiB.
inline bool spmvValid(const SpmvConfig& c, int batch) {
  if (c.warps == 16 && c.unroll == 34) return false;
  if (c.unroll > 200) return spmvXShuffle(c, batch);  // batch 2's shuffle path: warps as at batch 1
  return batch == 1 || (c.warps <= 8 && c.unroll != 3 && c.unroll < 10);
}

// Whether a configuration is swept: valid, and not one that was never the best
// (batch > 1: unroll 4, splits 3 and 16; bulk: split 16, 34 with 16 warps).
inline bool spmvSwept(const SpmvConfig& c, int batch) {
  if (!spmvValid(c, batch)) return false;
  if (batch > 1 && (c.unroll == 4 || c.splitK == 3 || c.splitK == 16)) return false;
  if (c.unroll > 10 && (c.splitK == 16 || (c.unroll == 34 && c.warps == 16))) return false;
  return true;
}

// Every sparse configuration tuning sweeps for (cols, batch) on the current device,
// cluster requests 0 and 1 where the request changes nothing (1 only where the cluster
// path is taken). allPaths: also the requests that disagree with auto (the probe's
// "any" column); tuning tables hold only those that agree.
inline std::vector<SpmvConfig> spmvTuningSpace(std::int64_t cols, int batch, bool allPaths = false) {
  std::vector<SpmvConfig> out;
  for (int w : kSpmvWarps)
    for (int u : kSpmvUnrolls)
      for (int k : kSpmvSplits)
        for (int cl : {0, 1}) {
          const SpmvConfig c{w, u, k, cl};
          if (!spmvSwept(c, batch)) continue;
          if (cl && (k == 1 || !spmvUsesCluster(cols, batch, c))) continue;
          const bool autoCluster = spmvUsesCluster(cols, batch, SpmvConfig{w, u, k, -1});
          if (!allPaths && (cl == 1) != autoCluster) continue;
          out.push_back(c);
        }
  return out;
}

// Every dense GEMV configuration tuning sweeps at this batch.
inline std::vector<GemvConfig> gemvTuningSpace(int batch) {
  std::vector<GemvConfig> out;
  for (int w : {4, 8})
    for (int r : {1, 2, 4})
      for (int u : {1, 2, 4})
        for (int k : {1, 2, 4, 8}) {
          if (batch > 1 && u == 4) continue;
          if (w * r > 32) continue;
          out.push_back(GemvConfig{w, r, u, k});
        }
  return out;
}

}  // namespace sdw::kernels
