#pragma once
// The spMspV kernel's launch configuration and how it cuts the input dimension into
// split-K slices (gpu/kernels/spmspv.cu), as plain C++ (no CUDA header): the launcher
// and the CPU tests use the same arithmetic. The launcher: gpu/kernels/spmspv.cuh.

#include "gpu/kernels/spmspv_layout.h"  // SpmspvFormat, spmspvTiles

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace sdw::kernels {

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
  // Column24 and Column48 only: lanes per chunk. 32: lane l owns rows 8 l .. 8 l + 7 of every
  // active column (an 8-byte value load and a 1-byte meta load per chunk). 16: the two halves
  // of a warp take alternate columns of its list and lane h of a half owns rows 16 h .. 16 h +
  // 15 (one 16-byte value load and one 2-byte meta load per chunk: half the load instructions
  // for the same bytes; the same layout), the halves' sums added at the end. Elsewhere 32.
  int lanes = 32;
  // With blocksPerSm set and splitK 0: the aim's slice count s or s - 1 or s + 1, whichever has
  // the shortest chain: the blocks on the busiest SM (ceil(tiles k / SMs)) times the 32-column
  // steps the busiest warp of a block walks (ceil(steps per slice / warps)); the rest equal, s.
  // Where tiles s is just over a multiple of the SMs (Qwen3-14B's 17408x5120 at column 4:8: 68
  // tiles x 4 = 272 blocks, three on 8 of 132 SMs and two on the others), the busiest SMs set
  // the time: on an H100, 33.2 us, against 28.6 with 5 slices (fewer steps a warp, three blocks
  // on the busiest SM still); where one slice fewer leaves a warp one more step (Qwen3-14B's
  // 5120x5120 at column 2:4, 20 to 19 slices: 8 steps a slice for 8 warps, then 9), it is
  // slower (11.9 to 15.3 us), which the first rule of 5e62d5c (blocks on the busiest SM per
  // block of work alone) took. docs/kernels.md, "The column layouts on the H200". Default for
  // column 2:4 and 4:8 (spmspvDefaults); SDW_SPMSPV_WAVEFIT=0 / 1 in spmspvRunDefaults.
  bool waveFit = false;
  // Column layouts only: launched with programmatic dependent launch (sm_90; ignored below):
  // the grid may start while the stream's previous kernel runs; every block waits for it
  // (griddepcontrol.wait) before reading x or touching y, the workspace and the counters, and
  // lets the next kernel start after its main loop. Default for column 2:4 and 4:8
  // (spmspvDefaults): the dual-sparse decode at p_x 0.5 on an H100 gained 0.8-1.3% with it
  // (Llama-3.1-8B col2:4 / col4:8 312.9 / 317.8 to 315.9 / 322.0 tokens/s, Qwen3-14B 184.2 /
  // 187.6 to 185.6 / 189.1; docs/gpu.md). SDW_SPMSPV_PDL=0 / 1 in spmspvRunDefaults; the decode
  // engine also needs its own pdl option; the kernel benchmark's launches stay plain
  // (SpmspvCase::pdl).
  bool pdl = false;
};
// For SpmspvFormat::Column24, Column48 and ColumnDense the same fields mean: warps 1..8; stages the
// chunks each lane loads per batch, with two batches in flight (2, 4 or 8); bulk is ignored.

// The launch defaults of a layout. Bitmask: SpmspvConfig{}. The column layouts: the H200 grid's
// winners (bench kernels --tune, four Llama-3.1-8B shapes at p_x 0, 0.5, 0.75, commits 1700967
// and 8f23e09): 4 chunks per batch for column 2:4, 8 for column 4:8 and dense, the slices reduced
// in a cluster, and fewer slices than the bitmask kernel's 8 blocks per SM: the winners at p_x
// 0.5 had 448 blocks for column 2:4 (14336x4096: 56 tiles x 8 slices, 4096x14336: 16 x 28),
// 224-256 for column 4:8 (56 x 4, 16 x 16), against 17.1 / 23.9 us for 56 x 16 with the
// same depth and cluster (13.9 / 13.7 us with the winners' slices). On the H200's 132 SMs the
// aims 3.4 (column 2:4) and 1.9 (column 4:8) give the winners' slices on all four shapes (column
// 2:4: 8, 28, 16, 16; column 4:8: 4, 16, 16, 16 for 14336x4096, 4096x14336, 4096x4096,
// 1024x4096; test_spmspv_cpu splitKAimsAtTheGridWinners); column 4:8's 1.8 of before gave 15 for
// the two 16s. Dense column-major: 2.5, between its winners (4-8 and 14-24 slices on the
// large shapes as p_x varies). Column 4:8 reduces in a
// cluster only where it is portable (2-8 slices): at 4096x4096 its 16-block cluster took 10.8
// us against 7.9 through the workspace. Column 2:4 and 4:8 move the aim by a slice where that
// shortens the chain (waveFit), and launch with programmatic dependent launch (pdl).
inline SpmspvConfig spmspvDefaults(SpmspvFormat format) {
  SpmspvConfig c;
  if (format == SpmspvFormat::Bitmask) return c;
  c.stages = format == SpmspvFormat::Column24 ? 4 : 8;
  c.cluster = format == SpmspvFormat::Column48 ? -1 : 1;
  c.blocksPerSm = format == SpmspvFormat::Column24 ? 3.4f : format == SpmspvFormat::Column48 ? 1.9f : 2.5f;
  c.waveFit = format != SpmspvFormat::ColumnDense;
  c.pdl = format != SpmspvFormat::ColumnDense;
  return c;
}

// spmspvDefaults with the environment's A/B overrides for the benchmarks and the engine:
// SDW_SPMSPV_LANES=16 (or 32) sets SpmspvConfig::lanes of the column 2:4 and 4:8 layouts;
// SDW_SPMSPV_WAVEFIT=1 (or 0) sets SpmspvConfig::waveFit of the column layouts; SDW_SPMSPV_PDL=1
// (or 0) their SpmspvConfig::pdl.
inline SpmspvConfig spmspvRunDefaults(SpmspvFormat format) {
  SpmspvConfig c = spmspvDefaults(format);
  if (const char* v = std::getenv("SDW_SPMSPV_LANES"); v && spmspvHalfWalkFormat(format))
    c.lanes = std::string_view(v) == "16" ? 16 : 32;
  if (const char* v = std::getenv("SDW_SPMSPV_WAVEFIT"); v && format != SpmspvFormat::Bitmask)
    c.waveFit = std::string_view(v) == "1";
  if (const char* v = std::getenv("SDW_SPMSPV_PDL"); v && format != SpmspvFormat::Bitmask)
    c.pdl = std::string_view(v) == "1";
  return c;
}

// Warps a block of the bitmask kernel may have, active-column entries a warp's list holds in
// shared memory, and the fewest 32-column steps per warp the heuristic cuts to (the H200
// grid, bench kernels --tune, kept 1-2 steps per warp on every shape).
inline constexpr int kSpmspvMaxWarps = 16;
inline constexpr int kSpmspvMaxListPerWarp = 512;
inline constexpr int kSpmspvMinStepsPerWarp = 1;

// Steps of 32 columns per split-K slice for `splits` slices.
inline constexpr std::int64_t spmspvStepsPerSplit(std::int64_t cols, int splits) {
  const std::int64_t steps = (cols + 31) / 32;
  return (steps + splits - 1) / splits;
}
// Entries of each warp's list at `splits` slices (a multiple of 32).
inline constexpr int spmspvListCap(std::int64_t cols, int splits, int warps) {
  return static_cast<int>((spmspvStepsPerSplit(cols, splits) + warps - 1) / warps * 32);
}
// Split-K slices that `splitK` gives (the last slice of the steps may leave some unused).
inline constexpr int spmspvSplitsOf(std::int64_t cols, int splitK) {
  const std::int64_t per = spmspvStepsPerSplit(cols, splitK);
  return static_cast<int>(((cols + 31) / 32 + per - 1) / per);
}

// The split-K count a launch of cfg uses on a device of `sms` SMs: cfg.splitK, or when 0 about
// cfg.blocksPerSm blocks per SM (tiles x slices, rounded to the nearest slice count; 8 rounded
// up where unset) with at least kSpmspvMinStepsPerWarp steps per warp; raised so that each
// warp's list of active columns fits in shared memory.
inline int spmspvSplitKFor(std::int64_t rows, std::int64_t cols, const SpmspvConfig& cfg, int sms) {
  const std::int64_t tiles = spmspvTiles(rows), steps = (cols + 31) / 32;
  const int warps = std::clamp(cfg.warps, 1, kSpmspvMaxWarps);
  int s = cfg.splitK;
  if (s <= 0) {
    const std::int64_t want =
        cfg.blocksPerSm > 0 ? std::llround(static_cast<double>(cfg.blocksPerSm) * sms / static_cast<double>(tiles))
                            : (8 * static_cast<std::int64_t>(sms) + tiles - 1) / tiles;
    const std::int64_t most = std::max<std::int64_t>(1, steps / (kSpmspvMinStepsPerWarp * warps));
    s = static_cast<int>(std::clamp<std::int64_t>(want, 1, most));
    if (cfg.waveFit && cfg.blocksPerSm > 0 && sms > 0) {
      // The busiest SM's blocks times the busiest warp's steps at k slices.
      const auto chain = [&](std::int64_t k) {
        const std::int64_t per = spmspvStepsPerSplit(cols, static_cast<int>(k));
        const std::int64_t blocks = tiles * spmspvSplitsOf(cols, static_cast<int>(k));
        return (blocks + sms - 1) / sms * ((per + warps - 1) / warps);
      };
      std::int64_t best = s;
      for (const std::int64_t k : {std::int64_t{s} - 1, std::int64_t{s} + 1})
        if (k >= 1 && k <= most && chain(k) < chain(best)) best = k;
      s = static_cast<int>(best);
    }
  }
  s = static_cast<int>(std::clamp<std::int64_t>(s, 1, steps));
  while (spmspvListCap(cols, s, warps) > kSpmspvMaxListPerWarp) ++s;
  return s;
}

}  // namespace sdw::kernels
