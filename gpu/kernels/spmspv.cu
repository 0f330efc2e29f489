// Sparse weights x sparse activations, batch 1 (spMspV), fp32 accumulation.
// Layout: gpu/kernels/spmspv_layout.h; design: docs/kernels.md, "Sparse weights x
// sparse activations (spMspV)".
//
// Grid: (row tiles of 256 rows) x (split-K slices of the columns). Each warp of a
// block owns every W-th step of 32 columns of the block's slice and
//  1. selects its active columns (|x_j| > threshold) with a ballot, reading x and
//     the chunk offsets of up to kPre of its 32-column steps in one round trip, and
//     compacts {chunk location and size, x_j} into its own list in shared memory;
//  2. streams the chunks of those columns, groups of U chunks, S groups in flight
//     (S: SpmspvConfig::stages), global -> shared with cp.async (16 bytes per lane,
//     nothing read past a chunk);
//  3. per chunk, lane l owns rows 8 l .. 8 l + 7 of the tile: mask byte l, its
//     values start at the popcount of bytes 0 .. l-1 (one packed warp scan for
//     the U chunks of a group), one shared-memory load and one FMA per kept row
//     into 8 fp32 register sums.
// The warps' sums are added in shared memory; split-K slices are reduced by the
// last block to arrive (splitk.cuh, one ticket per 32 rows), in split order.
//
// The column 2:4 and 4:8 layouts (SpmspvFormat::Column24, Column48) and the column-major
// dense one (ColumnDense) have their own kernel below: fixed-size chunks, loaded straight
// into registers, no scan.

#include "gpu/kernels/splitk.cuh"
#include "gpu/kernels/spmspv.cuh"

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace sdw::kernels {
namespace {

using detail::cpAsync16;
using detail::cpAsyncCommit;
using detail::cpAsyncWait;
using detail::hi16;
using detail::lo16;
using detail::smCount;
using detail::smemAddr;

constexpr int kMaxWarps = kSpmspvMaxWarps;
constexpr int kU = 4;                                                 // chunks per group (one packed scan)
constexpr int kPre = 4;                                               // 32-column steps loaded per round trip
constexpr int kChunkBytes = kSpmspvMaxChunkUnits * kSpmspvUnitBytes;  // 544: one chunk slot
constexpr int kMaxListPerWarp = kSpmspvMaxListPerWarp;                // active-column entries per warp
constexpr int kSizeBits = 6;                                          // chunk size (<= 34 units) in an entry
constexpr std::int64_t kMaxCols = (std::int64_t{1} << (32 - kSizeBits)) / kSpmspvMaxChunkUnits;
constexpr int kRowGroups = kSpmspvTileRows / 32;  // 32-row groups per tile (split-K tickets)

// The bulk kernel's barriers ([warps][stages] u64) rounded up to 16 bytes.
__host__ __device__ constexpr std::size_t bulkBarrierBytes(int warps, int stages) {
  return (static_cast<std::size_t>(warps) * stages * 8 + 15) / 16 * 16;
}

// 1. A warp's active columns (|x_j| > threshold), in increasing order within each of its
// 32-column steps of [c0, c1) (every W-th step from its own): {chunk location << 6 | size in
// units, relative to the tile's first chunk; x_j as fp32 bits} appended to `list`. The x
// entries and offsets of kPre steps are loaded before any of them is used: one round trip
// for up to kPre steps instead of one per step. Returns the list's length (warp-uniform).
template <typename T>
__device__ __forceinline__ int compactColumns(uint2* list, const unsigned short* xs, const std::uint32_t* tileOffsets,
                                              std::uint32_t tileBase, std::int64_t c0, std::int64_t c1, int W, int warp,
                                              int lane, float threshold) {
  int n = 0;
  for (std::int64_t base = c0 + 32 * warp; base < c1; base += 32 * static_cast<std::int64_t>(W) * kPre) {
    float xv[kPre];
    std::uint32_t lo[kPre], last[kPre];
#pragma unroll
    for (int q = 0; q < kPre; ++q) {
      const std::int64_t c = base + 32 * static_cast<std::int64_t>(W) * q + lane;
      const bool in = c < c1;
      xv[q] = in ? lo16<T>(__ldca(xs + c)) : 0.f;
      lo[q] = c <= c1 ? __ldg(tileOffsets + c) : 0u;  // c == c1: the next chunk's start
      last[q] = lane == 31 && in ? __ldg(tileOffsets + c + 1) : 0u;
    }
#pragma unroll
    for (int q = 0; q < kPre; ++q) {
      const std::int64_t c = base + 32 * static_cast<std::int64_t>(W) * q + lane;
      if (c - lane >= c1) break;  // the same for every lane
      const bool in = c < c1;
      std::uint32_t hi = __shfl_down_sync(0xffffffffu, lo[q], 1);
      if (lane == 31) hi = last[q];
      const bool active = in && fabsf(xv[q]) > threshold;
      const unsigned ballot = __ballot_sync(0xffffffffu, active);
      if (active) {
        const int pos = n + __popc(ballot & ((1u << lane) - 1));
        list[pos] = make_uint2(((lo[q] - tileBase) << kSizeBits) | (hi - lo[q]), __float_as_uint(xv[q]));
      }
      n += __popc(ballot);
    }
  }
  __syncwarp();
  return n;
}

// 3. The products of group k (list entries [kU k, kU k + kU), their chunks in `set`, kU
// slots of kChunkBytes) added to this lane's 8 row sums: lane l owns rows 8 l .. 8 l + 7 of
// the tile, mask byte l; its values start at the popcount of bytes 0 .. l - 1.
// kBranchFree: every slot an FMA (of 0 where its bit is clear), the value's load predicated
// and the walk over the lane's values a running shared-memory address, so no branch or
// address arithmetic is repeated per set bit.
template <typename T, bool kBranchFree = false>
__device__ __forceinline__ void groupProduct(const unsigned char* set, const uint2* list, int k, int n, int lane,
                                             float (&acc)[8]) {
  unsigned bytes[kU];
  float xu[kU];
  unsigned packed = 0;  // the kU popcounts of this lane, 8 bits each
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    const int i = k * kU + u;
    const bool valid = i < n;
    bytes[u] = valid ? set[u * kChunkBytes + lane] : 0u;
    xu[u] = valid ? __uint_as_float(list[i].y) : 0.f;
    packed |= static_cast<unsigned>(__popc(bytes[u])) << (8 * u);
  }
  // Exclusive prefix over lanes, all kU fields at once: every exclusive field is at most
  // 31 x 8 = 248, so carries of the inclusive sums (lane 31: up to 256) cancel exactly.
  unsigned incl = packed;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const unsigned o = __shfl_up_sync(0xffffffffu, incl, d);
    if (lane >= d) incl += o;
  }
  const unsigned excl = incl - packed;
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    const unsigned short* vals = reinterpret_cast<const unsigned short*>(set + u * kChunkBytes + kSpmspvMaskBytes);
    unsigned idx = (excl >> (8 * u)) & 0xffu;
    const unsigned b = bytes[u];
    if constexpr (kBranchFree) {
      std::uint32_t at = smemAddr(vals) + 2 * idx;  // the lane's next value
#pragma unroll
      for (int r = 0; r < 8; ++r) {
        const unsigned on = (b >> r) & 1u;
        unsigned v = 0;  // zero-extended 16 bits
        asm volatile("{\n .reg .pred p;\n setp.ne.u32 p, %1, 0;\n @p ld.shared.u16 %0, [%2];\n}\n"
                     : "+r"(v)
                     : "r"(on), "r"(at));
        acc[r] = fmaf(lo16<T>(v), xu[u], acc[r]);  // + 0 where the bit is clear
        at += 2 * on;
      }
    } else {
#pragma unroll
      for (int r = 0; r < 8; ++r) {
        if (b & (1u << r)) {
          acc[r] = fmaf(lo16<T>(vals[idx]), xu[u], acc[r]);
          ++idx;
        }
      }
    }
  }
}

// 4. The warps' 8 row sums per lane added per row in `red` ([W][256] floats of shared
// memory the caller no longer needs: after a block barrier), then the split-K epilogue per
// 32-row group (splitk.cuh).
template <typename T>
__device__ __forceinline__ void finishTile(float* red, const float (&acc)[8], int W, int warp, int lane,
                                           std::int64_t tile, std::int64_t rows, T* __restrict__ y,
                                           float* __restrict__ ws, unsigned* __restrict__ counters) {
  float4* mine = reinterpret_cast<float4*>(red + warp * kSpmspvTileRows + 8 * lane);
  mine[0] = make_float4(acc[0], acc[1], acc[2], acc[3]);
  mine[1] = make_float4(acc[4], acc[5], acc[6], acc[7]);
  __syncthreads();
  for (int q = warp; q < kRowGroups; q += W) {
    const int r = 32 * q + lane;
    float tot[1] = {0.f};
    for (int w = 0; w < W; ++w) tot[0] += red[w * kSpmspvTileRows + r];
    const std::int64_t row = tile * kSpmspvTileRows + r;
    detail::finishRows<T, 1>(tot, true, row, row < rows, y, rows, ws, counters + tile * kRowGroups + q, row,
                             static_cast<std::int64_t>(gridDim.x) * kSpmspvTileRows);
  }
}

// Per warp in dynamic shared memory: list[listCap] (uint2: chunk location << 6 | size in
// units, relative to the tile's first chunk; x_j as fp32 bits), then kS x kU chunk slots.
// BULK (SpmspvConfig::bulk, sm_90): lane u < kU of a warp copies the u-th chunk of a
// group in one bulk copy (any size, 16-byte units) and lane 0 arrives on the slot set's
// mbarrier expecting the group's bytes, instead of 16-byte cp.async pieces by every lane;
// the barriers ([W][kS] u64, padded to 16 bytes) come first in shared memory, and the
// slots are walked without branches (groupProduct).
template <typename T, int kS, bool BULK>
__global__ void __launch_bounds__(kMaxWarps * 32)
    spmspvKernel(const uint4* __restrict__ chunks, const std::uint32_t* __restrict__ offsets, std::int64_t rows,
                 std::int64_t cols, const T* __restrict__ x, float threshold, int colsPerSplit, int listCap,
                 T* __restrict__ y, float* __restrict__ ws, unsigned* __restrict__ counters) {
  extern __shared__ uint4 smemRaw[];
  const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
  const int W = static_cast<int>(blockDim.x >> 5);
  unsigned char* smem = reinterpret_cast<unsigned char*>(smemRaw) + (BULK ? bulkBarrierBytes(W, kS) : 0);
  const std::int64_t tile = blockIdx.x;
  const std::int64_t c0 = static_cast<std::int64_t>(blockIdx.y) * colsPerSplit;
  const std::int64_t c1 = std::min<std::int64_t>(cols, c0 + colsPerSplit);
  const std::uint32_t* tileOffsets = offsets + tile * cols;  // [cols + 1]: the next tile's first offset ends it
  const std::uint32_t tileBase = __ldg(tileOffsets);
  const uint4* tileChunks = chunks + tileBase;
  uint2* list = reinterpret_cast<uint2*>(smem) + static_cast<std::int64_t>(warp) * listCap;
  unsigned char* slots = smem + static_cast<std::size_t>(W) * listCap * sizeof(uint2) +
                         static_cast<std::size_t>(warp) * kS * kU * kChunkBytes;
  const std::uint32_t bars = smemAddr(smemRaw) + static_cast<std::uint32_t>(8 * warp * kS);  // BULK: this warp's kS
  if constexpr (BULK) {
    if (lane == 0) {
#pragma unroll
      for (int q = 0; q < kS; ++q) detail::mbarInit(bars + 8 * q);
      detail::mbarInitFence();
    }
  }

  // 1. (ends with __syncwarp: the barriers are set for the whole warp)
  const int n = compactColumns<T>(list, reinterpret_cast<const unsigned short*>(x), tileOffsets, tileBase, c0, c1, W,
                                  warp, lane, threshold);

  // 2./3. Stream the chunks: group k = entries [kU k, kU k + kU) into slot set k % kS (BULK:
  // the (k / kS)-th phase of its barrier; a group past the list still arrives, expecting 0
  // bytes, so every phase of a barrier is one group).
  const int groups = (n + kU - 1) / kU;
  auto issue = [&](int k) {
    if constexpr (BULK) {
      const std::uint32_t bar = bars + 8 * (k % kS);
      const int i = k * kU + lane;
      unsigned bytes = 0;
      std::uint32_t at = 0;
      if (lane < kU && i < n) {
        const std::uint32_t e = list[i].x;
        bytes = (e & ((1u << kSizeBits) - 1)) * kSpmspvUnitBytes;
        at = e >> kSizeBits;
      }
      const unsigned total = __reduce_add_sync(0xffffffffu, bytes);
      detail::proxyFence();  // the warp's reads of the slot set (generic proxy) before the copies' writes
      if (lane == 0) detail::mbarArriveExpect(bar, total);
      if (bytes) detail::bulkCopy(smemAddr(slots + ((k % kS) * kU + lane) * kChunkBytes), tileChunks + at, bytes, bar);
    } else {
      unsigned char* set = slots + (k % kS) * kU * kChunkBytes;
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int i = k * kU + u;
        if (i < n) {
          const std::uint32_t e = list[i].x;
          const int size = static_cast<int>(e & ((1u << kSizeBits) - 1));
          const uint4* src = tileChunks + (e >> kSizeBits);
          const std::uint32_t dst = smemAddr(set + u * kChunkBytes);
          if (lane < size) cpAsync16(dst + 16 * lane, src + lane);
          if (lane + 32 < size) cpAsync16(dst + 16 * (lane + 32), src + lane + 32);  // more than 240 values
        }
      }
      cpAsyncCommit();  // also when empty: one group per k keeps the wait count uniform
    }
  };
#pragma unroll
  for (int k = 0; k < kS; ++k) issue(k);

  float acc[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) acc[i] = 0.f;
  for (int k = 0; k < groups; ++k) {
    if constexpr (BULK) {
      detail::mbarWait(bars + 8 * (k % kS), static_cast<unsigned>((k / kS) & 1));  // group k's bytes have landed
    } else {
      cpAsyncWait<kS - 1>();
      __syncwarp();  // every lane's copies of group k are visible to the warp
    }
    groupProduct<T, BULK>(slots + (k % kS) * kU * kChunkBytes, list, k, n, lane, acc);
    __syncwarp();  // every lane is done with slot set k % kS before it is refilled
    issue(k + kS);
  }
  // BULK: groups past the list complete at their arrival; only copies of waited groups were issued.
  if constexpr (!BULK) cpAsyncWait<0>();

  // The warps' sums per row, then the split-K epilogue per 32-row group.
  __syncthreads();  // every warp is done with its list and slots: reuse as red[W][256]
  finishTile<T>(reinterpret_cast<float*>(smem), acc, W, warp, lane, tile, rows, y, ws, counters);
}

// ---- The fixed-chunk layouts (SpmspvFormat::Column24, Column48, ColumnDense) ----
// Every chunk is 288 bytes (dense: 512) at a fixed place, so a warp needs only x to know
// what to read:
//  1. its active columns of the block's slice, {j, x_j}, compacted from x alone into its
//     list in shared memory (ballots; x of kPre steps loaded per round trip);
//  2. per active column, lane l loads its 8 value bytes and its meta byte (dense: its 16
//     value bytes) straight into registers (no shared-memory staging):
//     SpmspvConfig::stages chunks a batch, two batches in flight;
//  3. per group of 4 rows, the two kept values widened and added into the rows the meta
//     nibble names (col24GroupFma, spmspv_layout.h; column 4:8: the lane's four values
//     into the rows of its meta byte, col48Fma): each row one FMA predicated on its
//     bit, the value chosen by one select where either could be the row's (rows 1 and 2);
//     no scan, no empty slot loaded; dense: one FMA per row;
//  4. the same block reduction and split-K epilogue as the bitmask kernel (finishTile).

// At most 8 warps a block: with 16 (the bitmask kernel's bound) ptxas keeps the two batches
// of depth 8 in 98 registers and spills at depth 4; with 8, 42-64 registers, no spills.
constexpr int kCol24MaxWarps = 8;

// A warp's active columns of [c0, c1) (every W-th 32-column step from its own), in increasing
// order within each step: {j, x_j as fp32 bits}. Returns the list's length (warp-uniform).
template <typename T>
__device__ __forceinline__ int compactActive(uint2* list, const unsigned short* xs, std::int64_t c0, std::int64_t c1,
                                             int W, int warp, int lane, float threshold) {
  int n = 0;
  for (std::int64_t base = c0 + 32 * warp; base < c1; base += 32 * static_cast<std::int64_t>(W) * kPre) {
    float xv[kPre];
#pragma unroll
    for (int q = 0; q < kPre; ++q) {
      const std::int64_t c = base + 32 * static_cast<std::int64_t>(W) * q + lane;
      xv[q] = c < c1 ? lo16<T>(__ldca(xs + c)) : 0.f;
    }
#pragma unroll
    for (int q = 0; q < kPre; ++q) {
      const std::int64_t c = base + 32 * static_cast<std::int64_t>(W) * q + lane;
      if (c - lane >= c1) break;  // the same for every lane
      const bool active = c < c1 && fabsf(xv[q]) > threshold;
      const unsigned ballot = __ballot_sync(0xffffffffu, active);
      if (active)
        list[n + __popc(ballot & ((1u << lane) - 1))] = make_uint2(static_cast<unsigned>(c), __float_as_uint(xv[q]));
      n += __popc(ballot);
    }
  }
  __syncwarp();
  return n;
}

// Streaming loads of weight bytes read once: not kept in L1.
__device__ __forceinline__ uint2 ldStream8(const unsigned char* p) {
  uint2 v;
  asm("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}
__device__ __forceinline__ uint4 ldStream16(const unsigned char* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}
__device__ __forceinline__ unsigned ldStream1(const unsigned char* p) {
  unsigned v;
  asm("ld.global.nc.L1::no_allocate.u8 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ unsigned ldStream2(const unsigned char* p) {
  unsigned short v;
  asm("ld.global.nc.L1::no_allocate.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}

// Where a CLUSTER launch's [slices][256] row sums start in dynamic shared memory: after
// the lists or the block's reduction, whichever is larger.
__host__ __device__ constexpr std::size_t col24PartOffset(int warps, int listCap) {
  const std::size_t lists = static_cast<std::size_t>(warps) * listCap * 8;
  const std::size_t red = static_cast<std::size_t>(warps) * kSpmspvTileRows * 4;
  return lists > red ? lists : red;
}

// finishTile's reduction, then the cluster's: see spmspvColumnKernel.
template <typename T>
__device__ __forceinline__ void finishTileCluster(float* red, float* part, const float (&acc)[8], int W, int warp,
                                                  int lane, std::int64_t tile, std::int64_t rows, T* __restrict__ y) {
#if __CUDA_ARCH__ >= 900
  float4* mine = reinterpret_cast<float4*>(red + warp * kSpmspvTileRows + 8 * lane);
  mine[0] = make_float4(acc[0], acc[1], acc[2], acc[3]);
  mine[1] = make_float4(acc[4], acc[5], acc[6], acc[7]);
  __syncthreads();
  asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");  // every block of the cluster has started
  const unsigned rank = blockIdx.y;  // cluster dims (1, gridDim.y, 1): the rank is the slice
  for (int q = warp; q < kRowGroups; q += W) {
    const int r = 32 * q + lane;
    float tot = 0.f;
    for (int w = 0; w < W; ++w) tot += red[w * kSpmspvTileRows + r];
    if (rank == 0) {
      part[r] = tot;
    } else {
      const std::uint32_t local = smemAddr(part + rank * kSpmspvTileRows + r);
      std::uint32_t remote;
      asm volatile("mapa.shared::cluster.u32 %0, %1, 0;\n" : "=r"(remote) : "r"(local));
      asm volatile("st.shared::cluster.f32 [%0], %1;\n" ::"r"(remote), "f"(tot) : "memory");
    }
  }
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
  if (rank != 0) return;
  for (int q = warp; q < kRowGroups; q += W) {
    const int r = 32 * q + lane;
    float s = 0.f;
    for (unsigned k = 0; k < gridDim.y; ++k) s += part[k * kSpmspvTileRows + r];
    const std::int64_t row = tile * kSpmspvTileRows + r;
    if (row < rows) y[row] = detail::fromFloat<T>(s);
  }
#else
  (void)red, (void)part, (void)acc, (void)W, (void)warp, (void)lane, (void)tile, (void)rows, (void)y;
  __trap();  // never launched below sm_90 (hopperLaunchSupported)
#endif
}

// Grid (tiles, split-K slices), W warps a block; dynamic shared memory: the warps' lists
// ([W][listCap] uint2), later reused for the block's reduction ([W][256] floats).
// CLUSTER (SpmspvConfig::cluster, sm_90): the gridDim.y slices of a tile are one cluster;
// each block arrives (relaxed) on the cluster barrier at start, and after its own reduction
// waits for that phase (every block of the cluster running), stores its 256 row sums into
// the first block's `part` ([slices][256] floats after the lists) with st.shared::cluster,
// then arrive.release / wait.acquire; the first block adds them in slice order and writes y.
// No workspace, fence on global memory or ticket.
// kG: the column group, 4 (column 2:4: two col24GroupFma per chunk) or 8 (column 4:8: one
// col48Fma); the loads and everything else are the same. kG 1: the column-major dense
// layout, each lane's 16 value bytes (its 8 rows) one load and 8 FMAs, no meta.
// kLanes 16 (SpmspvConfig::lanes; column 2:4 and 4:8): the half-warp walk. The two halves of
// a warp take alternate entries of its list (entry i0 + 2 d + half of a batch), and lane h of
// a half owns rows 16 h .. 16 h + 15, the full walk's lanes 2 h and 2 h + 1: one 16-byte value
// load and one 2-byte meta load per chunk (colHalfFma), so a warp's load instruction moves
// 512 value bytes instead of 256. After the loop the halves' sums of the same rows are added
// (xor-16 shuffle) and handed back to the full walk's rows (lane l: rows 8 l .. 8 l + 7) for
// the block's reduction.
// Programmatic dependent launch (SpmspvConfig::pdl): every block waits for the previous grid
// before the compaction reads x (a no-op in a plain launch), and lets the next grid start
// after its main loop; nothing is read early (the chunks to read depend on x).
template <typename T, int kG, int kD, bool CLUSTER, int kLanes = 32>
__global__ void __launch_bounds__(kCol24MaxWarps * 32)
    spmspvColumnKernel(const unsigned char* __restrict__ chunks, std::int64_t rows, std::int64_t cols,
                       const T* __restrict__ x, float threshold, int colsPerSplit, int listCap, T* __restrict__ y,
                       float* __restrict__ ws, unsigned* __restrict__ counters) {
  static_assert(kG == 1 || kG == 4 || kG == 8);
  static_assert(kLanes == 32 || (kLanes == 16 && kG != 1));
  constexpr bool kDense = kG == 1;
  constexpr bool kHalf = kLanes == 16;
  constexpr int kStep = kHalf ? 2 * kD : kD;  // list entries a batch covers
  constexpr int kChunk = kDense ? kSpmspvDenseChunkBytes : kSpmspvCol24ChunkBytes;
  using Val = std::conditional_t<kDense || kHalf, uint4, uint2>;  // a lane's values of one chunk
#if __CUDA_ARCH__ >= 900
  if constexpr (CLUSTER) asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
#endif
  extern __shared__ uint4 smemRaw[];
  const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
  const int half = kHalf ? lane >> 4 : 0, owner = kHalf ? lane & 15 : lane;  // owner: the lane's rows
  const int W = static_cast<int>(blockDim.x >> 5);
  unsigned char* smem = reinterpret_cast<unsigned char*>(smemRaw);
  const std::int64_t tile = blockIdx.x;
  const std::int64_t c0 = static_cast<std::int64_t>(blockIdx.y) * colsPerSplit;
  const std::int64_t c1 = std::min<std::int64_t>(cols, c0 + colsPerSplit);
  const unsigned char* tileChunks = chunks + tile * cols * kChunk;
  const unsigned char* laneValues = tileChunks + static_cast<int>(sizeof(Val)) * owner;
  const unsigned char* laneMeta = tileChunks + kSpmspvCol24ValueBytes + (kHalf ? 2 : 1) * owner;
  const uint2* list = reinterpret_cast<uint2*>(smem) + static_cast<std::int64_t>(warp) * listCap;

  // Launched with programmatic dependent launch (SpmspvConfig::pdl): x, y, the workspace and
  // the counters only after the previous grid; otherwise this returns at once.
  detail::pdlWait();
  const int n = compactActive<T>(reinterpret_cast<uint2*>(smem) + static_cast<std::int64_t>(warp) * listCap,
                                 reinterpret_cast<const unsigned short*>(x), c0, c1, W, warp, lane, threshold);

  Val val[2][kD];
  unsigned meta[2][kD];
  float xs[2][kD];
  // Batch `b` = list entries [i0, i0 + kD) (the half-warp walk: this half's i0 + 2 d + half);
  // entries past the list: no load, meta 0 (no row kept), x 0.
  const auto load = [&](int b, int i0) {
#pragma unroll
    for (int d = 0; d < kD; ++d) {
      const int i = kHalf ? i0 + 2 * d + half : i0 + d;
      if (i < n) {
        const uint2 e = list[i];
        const std::size_t at = static_cast<std::size_t>(e.x) * kChunk;
        if constexpr (kDense) {
          val[b][d] = ldStream16(laneValues + at);
          meta[b][d] = 0u;
        } else if constexpr (kHalf) {
          val[b][d] = ldStream16(laneValues + at);
          meta[b][d] = ldStream2(laneMeta + at);
        } else {
          val[b][d] = ldStream8(laneValues + at);
          meta[b][d] = ldStream1(laneMeta + at);
        }
        xs[b][d] = __uint_as_float(e.y);
      } else {
        val[b][d] = Val{};
        meta[b][d] = 0u;
        xs[b][d] = 0.f;
      }
    }
  };
  float acc[8], acc2[8];  // acc2: the half-warp walk's rows 16 h + 8 .. 16 h + 15
#pragma unroll
  for (int r = 0; r < 8; ++r) acc[r] = 0.f, acc2[r] = 0.f;
  const auto compute = [&](int b) {
#pragma unroll
    for (int d = 0; d < kD; ++d) {
      const Val v = val[b][d];
      if constexpr (kHalf) {
        const float f[8] = {lo16<T>(v.x), hi16<T>(v.x), lo16<T>(v.y), hi16<T>(v.y),
                            lo16<T>(v.z), hi16<T>(v.z), lo16<T>(v.w), hi16<T>(v.w)};
        colHalfFma<kG>(f, meta[b][d], xs[b][d], acc, acc2);
      } else if constexpr (kDense) {
        const float xv = xs[b][d];
        acc[0] = fmaf(lo16<T>(v.x), xv, acc[0]);
        acc[1] = fmaf(hi16<T>(v.x), xv, acc[1]);
        acc[2] = fmaf(lo16<T>(v.y), xv, acc[2]);
        acc[3] = fmaf(hi16<T>(v.y), xv, acc[3]);
        acc[4] = fmaf(lo16<T>(v.z), xv, acc[4]);
        acc[5] = fmaf(hi16<T>(v.z), xv, acc[5]);
        acc[6] = fmaf(lo16<T>(v.w), xv, acc[6]);
        acc[7] = fmaf(hi16<T>(v.w), xv, acc[7]);
      } else if constexpr (kG == 4) {
        col24GroupFma(lo16<T>(v.x), hi16<T>(v.x), meta[b][d] & 15u, xs[b][d], acc[0], acc[1], acc[2], acc[3]);
        col24GroupFma(lo16<T>(v.y), hi16<T>(v.y), meta[b][d] >> 4, xs[b][d], acc[4], acc[5], acc[6], acc[7]);
      } else {
        col48Fma(lo16<T>(v.x), hi16<T>(v.x), lo16<T>(v.y), hi16<T>(v.y), meta[b][d], xs[b][d], acc);
      }
    }
  };
  load(0, 0);
  for (int i = 0; i < n; i += 2 * kStep) {
    load(1, i + kStep);
    compute(0);
    load(0, i + 2 * kStep);
    compute(1);
  }
  detail::pdlLaunchDependents();
  if constexpr (kHalf) {
    // Both halves' sums of rows 16 h .. 16 h + 15, then lane l takes rows 8 l .. 8 l + 7 from
    // lane l / 2 (acc for even l, acc2 for odd).
#pragma unroll
    for (int r = 0; r < 8; ++r) {
      acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], 16);
      acc2[r] += __shfl_xor_sync(0xffffffffu, acc2[r], 16);
      const float p = __shfl_sync(0xffffffffu, acc[r], lane >> 1);
      const float q = __shfl_sync(0xffffffffu, acc2[r], lane >> 1);
      acc[r] = (lane & 1) ? q : p;
    }
  }

  __syncthreads();  // every warp is done with its list: reuse as red[W][256]
  if constexpr (CLUSTER) {
    float* part = reinterpret_cast<float*>(smem + col24PartOffset(W, listCap));
    finishTileCluster<T>(reinterpret_cast<float*>(smem), part, acc, W, warp, lane, tile, rows, y);
  } else {
    finishTile<T>(reinterpret_cast<float*>(smem), acc, W, warp, lane, tile, rows, y, ws, counters);
  }
}

// The kernel a launch of cfg runs, and its dynamic shared memory at split-K `splitK`: bulk
// copies where asked for and the device has them (sm_90), else 16-byte cp.async.
template <typename T, int kS>
auto stagedKernel(const SpmspvConfig& cfg) {
  return cfg.bulk && detail::hopperLaunchSupported() ? spmspvKernel<T, kS, true> : spmspvKernel<T, kS, false>;
}
template <int kS>
std::size_t stagedSmem(std::int64_t cols, int splitK, const SpmspvConfig& cfg) {
  const int cap = spmspvListCap(cols, splitK, cfg.warps);
  std::size_t smem = std::max<std::size_t>(
      static_cast<std::size_t>(cfg.warps) * (static_cast<std::size_t>(cap) * sizeof(uint2) + kS * kU * kChunkBytes),
      static_cast<std::size_t>(cfg.warps) * kSpmspvTileRows * sizeof(float));
  if (cfg.bulk && detail::hopperLaunchSupported()) smem += bulkBarrierBytes(cfg.warps, kS);
  return smem;
}

// Blocks of cfg's kernel one SM holds at split-K `splitK` (0 where it does not fit).
// Blocks of `kernel` one SM holds with `warps` warps and `smem` dynamic shared memory (0 where
// it does not fit).
template <typename K>
int blocksPerSm(K kernel, int warps, std::size_t smem) {
  int n = 0;
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)) !=
          cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, warps * 32, smem) != cudaSuccess)
    return 0;
  return n;
}

template <typename T, int kS>
int residentBlocks(std::int64_t cols, int splitK, const SpmspvConfig& cfg) {
  return blocksPerSm(stagedKernel<T, kS>(cfg), cfg.warps, stagedSmem<kS>(cols, splitK, cfg));
}

// How a launch of cfg cuts its input dimension: split-K count, steps of 32 columns per slice,
// the slices that has, and each warp's list capacity.
struct SplitPlan {
  int splitK = 1;
  std::int64_t per = 0;
  int splits = 1, cap = 0;
};
SplitPlan splitPlan(const SpmspvLayout& w, const SpmspvConfig& cfg) {
  SplitPlan p;
  p.splitK = spmspvSplitK(w.rows, w.cols, cfg);
  p.per = spmspvStepsPerSplit(w.cols, p.splitK);
  p.splits = spmspvSplitsOf(w.cols, p.splitK);
  p.cap = spmspvListCap(w.cols, p.splitK, cfg.warps);
  return p;
}

template <typename T, int kS>
cudaError_t launchStaged(const SpmspvLayout& w, const void* x, float threshold, void* y, const SpmspvConfig& cfg,
                         float* ws, unsigned* counters, cudaStream_t stream) {
  const auto [splitK, per, splits, cap] = splitPlan(w, cfg);
  const std::size_t smem = stagedSmem<kS>(w.cols, splitK, cfg);
  auto kernel = stagedKernel<T, kS>(cfg);
  const cudaError_t e =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (e != cudaSuccess) return e;
  const dim3 grid(static_cast<unsigned>(spmspvTiles(w.rows)), static_cast<unsigned>(splits));
  kernel<<<grid, dim3(static_cast<unsigned>(cfg.warps * 32)), smem, stream>>>(
      static_cast<const uint4*>(w.chunks), w.offsets, w.rows, w.cols, static_cast<const T*>(x), threshold,
      static_cast<int>(per * 32), cap, static_cast<T*>(y), ws, counters);
  return cudaGetLastError();
}

// The column kernel's dynamic shared memory: the lists, then the block's reduction.
std::size_t col24Smem(std::int64_t cols, int splitK, int warps) {
  return col24PartOffset(warps, spmspvListCap(cols, splitK, warps));
}

// The column kernel of a launch: the half-warp walk where cfg.lanes is 16 (column 2:4 and 4:8).
template <typename T, int kG, int kD, bool CLUSTER>
auto columnKernel(const SpmspvConfig& cfg) {
  if constexpr (kG == 1) {
    (void)cfg;
    return spmspvColumnKernel<T, kG, kD, CLUSTER>;
  } else {
    return cfg.lanes == 16 ? spmspvColumnKernel<T, kG, kD, CLUSTER, 16> : spmspvColumnKernel<T, kG, kD, CLUSTER>;
  }
}

template <typename T, int kG, int kD>
int columnResidentBlocks(std::int64_t cols, int splitK, const SpmspvConfig& cfg) {
  return blocksPerSm(columnKernel<T, kG, kD, false>(cfg), cfg.warps, col24Smem(cols, splitK, cfg.warps));
}

// Whether a column 2:4 / 4:8 launch of cfg with `splits` slices runs as clusters (SpmspvConfig::cluster).
bool col24Cluster(const SpmspvConfig& cfg, int splits) {
  if (cfg.cluster == 0 || splits < 2 || !detail::hopperLaunchSupported()) return false;
  return splits <= (cfg.cluster > 0 ? 16 : 8);
}

template <typename T, int kG, int kD>
cudaError_t launchColumn(const SpmspvLayout& w, const void* x, float threshold, void* y, const SpmspvConfig& cfg,
                         float* ws, unsigned* counters, cudaStream_t stream) {
  const auto [splitK, per, splits, cap] = splitPlan(w, cfg);
  const bool cluster = col24Cluster(cfg, splits);
  const std::size_t smem =
      cluster ? col24PartOffset(cfg.warps, cap) + static_cast<std::size_t>(splits) * kSpmspvTileRows * sizeof(float)
              : col24Smem(w.cols, splitK, cfg.warps);
  auto kernel = cluster ? columnKernel<T, kG, kD, true>(cfg) : columnKernel<T, kG, kD, false>(cfg);
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (e == cudaSuccess && cluster && splits > 8)
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  if (e != cudaSuccess) return e;
  const dim3 grid(static_cast<unsigned>(spmspvTiles(w.rows)), static_cast<unsigned>(splits));
  const dim3 block(static_cast<unsigned>(cfg.warps * 32));
  const auto* chunks = static_cast<const unsigned char*>(w.chunks);
  const auto* xt = static_cast<const T*>(x);
  auto* yt = static_cast<T*>(y);
  const int colsPerSplit = static_cast<int>(per * 32);
  const bool pdl = cfg.pdl && detail::hopperLaunchSupported();
  if (cluster || pdl)
    return detail::launchEx(kernel, grid, block, smem, stream, cluster ? static_cast<unsigned>(splits) : 0u, pdl,
                            chunks, w.rows, w.cols, xt, threshold, colsPerSplit, cap, yt, ws, counters);
  kernel<<<grid, block, smem, stream>>>(chunks, w.rows, w.cols, xt, threshold, colsPerSplit, cap, yt, ws, counters);
  return cudaGetLastError();
}

// f(std::type_identity<T>{}, std::integral_constant<int, N>{}) for the kernel's element type
// and a count built as one of Ns (groups in flight for the bitmask kernel, chunks a batch
// for the column 2:4 one); `none` where no kernel is built for them.
template <int... Ns, typename R, typename F>
R byTypeAndCount(DType dtype, int n, R none, F f) {
  const auto withCount = [&](auto t) -> R {
    R r = none;
    ((n == Ns ? (r = f(t, std::integral_constant<int, Ns>{}), true) : false) || ...);
    return r;
  };
  switch (dtype) {
    case DType::BF16: return withCount(std::type_identity<__nv_bfloat16>{});
    case DType::F16: return withCount(std::type_identity<__half>{});
    default: return none;
  }
}
template <typename R, typename F>
R byTypeAndStages(DType dtype, int stages, R none, F f) {
  return byTypeAndCount<2, 3, 4, 6>(dtype, stages, none, f);
}
template <typename R, typename F>
R byTypeAndDepth(DType dtype, int depth, R none, F f) {
  return byTypeAndCount<2, 4, 8>(dtype, depth, none, f);
}

}  // namespace

int spmspvOneWaveSplitK(std::int64_t rows, std::int64_t cols, DType dtype, const SpmspvConfig& cfg,
                        SpmspvFormat format) {
  const std::int64_t tiles = spmspvTiles(rows);
  const int warps = std::clamp(cfg.warps, 1, spmspvColumnFormat(format) ? kCol24MaxWarps : kMaxWarps);
  const auto resident = [&](int s) {
    if (spmspvColumnFormat(format))
      return byTypeAndDepth(dtype, cfg.stages, 0, [&](auto t, auto d) {
        using T = typename decltype(t)::type;
        constexpr int kD = decltype(d)::value;
        SpmspvConfig c = cfg;
        c.warps = warps;
        return format == SpmspvFormat::Column48      ? columnResidentBlocks<T, 8, kD>(cols, s, c)
               : format == SpmspvFormat::ColumnDense ? columnResidentBlocks<T, 1, kD>(cols, s, c)
                                                     : columnResidentBlocks<T, 4, kD>(cols, s, c);
      });
    const SpmspvConfig c{warps, s, cfg.stages, cfg.bulk};
    return byTypeAndStages(dtype, cfg.stages, 0, [&](auto t, auto st) {
      return residentBlocks<typename decltype(t)::type, decltype(st)::value>(cols, s, c);
    });
  };
  const std::int64_t slots = static_cast<std::int64_t>(smCount());
  SpmspvConfig heuristic = cfg;
  heuristic.warps = warps, heuristic.splitK = 0;
  int s = spmspvSplitK(rows, cols, heuristic);
  // Fewer slices (longer ones) until the grid fits the resident blocks, while each warp's
  // list still fits its shared memory.
  while (s > 1 && tiles * spmspvSplitsOf(cols, s) > slots * resident(s) &&
         spmspvListCap(cols, s - 1, warps) <= kMaxListPerWarp)
    --s;
  return s;
}

int spmspvSplitK(std::int64_t rows, std::int64_t cols, const SpmspvConfig& cfg) {
  return spmspvSplitKFor(rows, cols, cfg, smCount());
}

std::size_t spmspvWorkspaceFloats(std::int64_t rows, std::int64_t cols, const SpmspvConfig& cfg) {
  const std::int64_t splits = spmspvSplitsOf(cols, spmspvSplitK(rows, cols, cfg));
  return splits <= 1 ? 0 : static_cast<std::size_t>(splits * spmspvTiles(rows) * kSpmspvTileRows);
}

bool spmspvColumnCluster(std::int64_t rows, std::int64_t cols, const SpmspvConfig& cfg) {
  return col24Cluster(cfg, static_cast<int>(spmspvSplitsOf(cols, spmspvSplitK(rows, cols, cfg))));
}

std::int64_t spmspvCounters(std::int64_t rows) { return spmspvTiles(rows) * kRowGroups; }

cudaError_t launchSpmspv(const SpmspvLayout& w, const void* x, float threshold, void* y, const SpmspvConfig& cfg,
                         float* workspace, unsigned* counters, cudaStream_t stream) {
  const bool col24 = spmspvColumnFormat(w.format);
  if (w.rows <= 0 || w.cols <= 0 || w.cols > kMaxCols || !w.chunks || (!col24 && !w.offsets) || !x || !y)
    return cudaErrorInvalidValue;
  if (cfg.warps < 1 || cfg.warps > kMaxWarps || spmspvTiles(w.rows) > 2147483647) return cudaErrorInvalidValue;
  if ((reinterpret_cast<std::uintptr_t>(w.chunks) & (col24 ? 31 : 15)) != 0) return cudaErrorMisalignedAddress;
  if (spmspvWorkspaceFloats(w.rows, w.cols, cfg) > 0 && (!workspace || !counters)) return cudaErrorInvalidValue;
  if (col24 && cfg.warps > kCol24MaxWarps) return cudaErrorInvalidValue;
  if (cfg.lanes != 32 && (cfg.lanes != 16 || !spmspvHalfWalkFormat(w.format))) return cudaErrorInvalidValue;
  if (col24)  // cudaErrorInvalidValue also where no kernel is built for the depth
    return byTypeAndDepth(w.dtype, cfg.stages, cudaErrorInvalidValue, [&](auto t, auto d) {
      using T = typename decltype(t)::type;
      constexpr int kD = decltype(d)::value;
      switch (w.format) {
        case SpmspvFormat::Column48:
          return launchColumn<T, 8, kD>(w, x, threshold, y, cfg, workspace, counters, stream);
        case SpmspvFormat::ColumnDense:
          return launchColumn<T, 1, kD>(w, x, threshold, y, cfg, workspace, counters, stream);
        default: return launchColumn<T, 4, kD>(w, x, threshold, y, cfg, workspace, counters, stream);
      }
    });
  // cudaErrorInvalidValue also where no kernel is built for the stages.
  return byTypeAndStages(w.dtype, cfg.stages, cudaErrorInvalidValue, [&](auto t, auto st) {
    return launchStaged<typename decltype(t)::type, decltype(st)::value>(w, x, threshold, y, cfg, workspace, counters,
                                                                         stream);
  });
}

}  // namespace sdw::kernels
