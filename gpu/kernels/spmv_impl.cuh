#pragma once
// Bitmask N:M SpMV, fp32 accumulation (design and measurements: docs/kernels.md).
//
// One lane per output row: a warp owns a tile of 32 rows and walks its mask
// words; per word a lane streams its row's 16 values (2 x 16-byte __ldcg) and
// mask (__ldcg); the weights of a warp step are 1 KiB + 128 B contiguous. The
// warps of a block split the tile's words in chunks of `unroll` words, then add
// their sums through shared memory; gridDim.y > 1 splits the words further
// across blocks, reduced by the last block to finish (splitk.cuh) or, at batch 1
// on sm_90, by block 0 of a thread-block cluster through distributed shared memory.
//
// Batch 1 (bitmaskSpmvB1Kernel): x by shuffle from registers, two traversal
// chains per word, block-uniform trip counts, next chunk prefetched. Batch 2-4 with
// SpmvConfig::unroll 200 + U: the same kernel, a column's x in one 32-bit shuffle (batch 2)
// or two (batch 3, 4).
// Batch 2-8 (bitmaskSpmvKernel): x staged per block in shared memory as fp32,
// batch-interleaved; one traversal from the top bit:
//   p = 31 - clz(m); acc += v[15 - i] * x[32g + p]; m ^= 1 << p

#include "gpu/kernels/splitk.cuh"
#include "gpu/kernels/spmv.cuh"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>

// The kernels and their launchers, internal to gpu/kernels: spmv.cu holds the host side and
// launchBitmaskSpmv, which calls the unit of the batch; the batch sizes are compiled in four
// translation units (spmv_b*.cu), so nvcc builds them side by side.

namespace sdw::kernels {
namespace detail {
// launchBitmaskSpmv's arguments, checked, as the per-batch units take them.
struct SpmvCall {
  DType dtype;
  const void* values;
  const std::uint32_t* masks;
  std::int64_t rows, cols;
  const void* x;
  void* y;
  std::int64_t ldy;
  int batch;
  const SpmvConfig& cfg;
  float* ws;
  unsigned* counters;
  cudaStream_t stream;
};
// Both 16-bit types at the batches of one unit (byBatches): 1, 2-3, 4-5 and 6-8, each defined
// in its spmv_b*.cu.
cudaError_t spmvBatch1(const SpmvCall& c);
cudaError_t spmvBatches2to3(const SpmvCall& c);
cudaError_t spmvBatches4to5(const SpmvCall& c);
cudaError_t spmvBatches6to8(const SpmvCall& c);
}  // namespace detail

namespace {

using detail::hi16;
using detail::hopperLaunchSupported;  // clusters and programmatic dependent launch (sm_90+)
using detail::lo16;
using detail::pdlLaunchDependents;
using detail::pdlWait;

template <int XS>
struct XSmem;  // x from shared memory, fp32, [column][XS]
template <>
struct XSmem<2> {
  static __device__ __forceinline__ void get(const float* p, float* out) {
    const float2 u = *reinterpret_cast<const float2*>(p);
    out[0] = u.x, out[1] = u.y;
  }
};
template <>
struct XSmem<4> {
  static __device__ __forceinline__ void get(const float* p, float* out) {
    const float4 u = *reinterpret_cast<const float4*>(p);
    out[0] = u.x, out[1] = u.y, out[2] = u.z, out[3] = u.w;
  }
};
template <>
struct XSmem<8> {
  static __device__ __forceinline__ void get(const float* p, float* out) {
    const float4 u = *reinterpret_cast<const float4*>(p), w = *reinterpret_cast<const float4*>(p + 4);
    out[0] = u.x, out[1] = u.y, out[2] = u.z, out[3] = u.w, out[4] = w.x, out[5] = w.y, out[6] = w.z, out[7] = w.w;
  }
};

// One mask word: 16 kept values in va/vb (increasing column order). The walk
// goes from the highest kept column down: p = 31 - clz(m) is a single FLO, and
// value 15 - i is then known at compile time. xs: this word's 32 columns of x in
// shared memory.
template <typename T, int B, int XS>
__device__ __forceinline__ void accumulateWord(const uint4& va, const uint4& vb, std::uint32_t m, const float* xs,
                                               float (&acc)[B]) {
  const std::uint32_t w[8] = {va.x, va.y, va.z, va.w, vb.x, vb.y, vb.z, vb.w};
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const int p = 31 - __clz(m);
    m ^= 1u << p;
    const int k = 15 - i;
    const float v = (k & 1) ? hi16<T>(w[k / 2]) : lo16<T>(w[k / 2]);
    float xv[XS];
    XSmem<XS>::get(xs + p * XS, xv);
#pragma unroll
    for (int b = 0; b < B; ++b) acc[b] = fmaf(v, xv[b], acc[b]);
  }
}

constexpr int kMaxWarps = 8;            // batch >= 2 kernel
constexpr int kMaxWarpsB1 = 16;         // batch-1 kernel
constexpr int kMaxClusterB1 = 16;       // blocks per cluster along K (more than 8: non-portable size)
constexpr int kMaxXsBytes = 40 * 1024;  // x slice in shared memory; with `red`, under the 48 KiB default

// Position of the highest set bit (FLO).
__device__ __forceinline__ int topBit(std::uint32_t m) {
  int p;
  asm("bfind.u32 %0, %1;" : "=r"(p) : "r"(m));
  return p;
}

// Stage n 16-bit values of x (n a multiple of 8) into shared memory as fp32: 16-byte
// __ldca loads where aligned (one round trip for the whole slice), else 2-byte loads.
template <typename T>
__device__ __forceinline__ void stageX(float* xs, const unsigned short* xg, int n) {
  if ((reinterpret_cast<std::uintptr_t>(xg) & 15) == 0) {
    for (int j = threadIdx.x * 8; j < n; j += blockDim.x * 8) {
      const uint4 h = __ldca(reinterpret_cast<const uint4*>(xg + j));
      reinterpret_cast<float4*>(xs + j)[0] = make_float4(lo16<T>(h.x), hi16<T>(h.x), lo16<T>(h.y), hi16<T>(h.y));
      reinterpret_cast<float4*>(xs + j)[1] = make_float4(lo16<T>(h.z), hi16<T>(h.z), lo16<T>(h.w), hi16<T>(h.w));
    }
  } else {
    for (int j = threadIdx.x; j < n; j += blockDim.x) xs[j] = lo16<T>(__ldca(xg + j));
  }
}

// A lane's column of x at batch B on the shuffle path, and its products: batch 1, one 16-bit
// value widened to fp32 before the shuffle; batch 2, x as [cols][2], both rows' values in one
// 32-bit register (row 0 in the low half), shuffled once and widened after; batch 3 and 4, x
// as [cols][4] (spmvXStride), the column's four 16-bit slots in two 32-bit registers, shuffled
// as two words (batch 3 leaves the fourth slot unread).
template <int B>
using XBits = std::conditional_t<B == 1, unsigned short, std::conditional_t<B == 2, std::uint32_t, uint2>>;
template <typename T, int B>
struct XLane;
template <typename T>
struct XLane<T, 1> {
  using Reg = float;
  static __device__ __forceinline__ Reg reg(XBits<1> b) { return lo16<T>(b); }
  static __device__ __forceinline__ void fma(float v, Reg x, float (&acc)[1]) { acc[0] = fmaf(v, x, acc[0]); }
};
template <typename T>
struct XLane<T, 2> {
  using Reg = std::uint32_t;
  static __device__ __forceinline__ Reg reg(XBits<2> b) { return b; }
  static __device__ __forceinline__ void fma(float v, Reg x, float (&acc)[2]) {
    acc[0] = fmaf(v, lo16<T>(x), acc[0]);
    acc[1] = fmaf(v, hi16<T>(x), acc[1]);
  }
};
template <typename T, int B>
requires(B == 3 || B == 4) struct XLane<T, B> {
  using Reg = uint2;
  static __device__ __forceinline__ Reg reg(XBits<B> b) { return b; }
  static __device__ __forceinline__ void fma(float v, Reg x, float (&acc)[B]) {
    acc[0] = fmaf(v, lo16<T>(x.x), acc[0]);
    acc[1] = fmaf(v, hi16<T>(x.x), acc[1]);
    acc[2] = fmaf(v, lo16<T>(x.y), acc[2]);
    if constexpr (B == 4) acc[3] = fmaf(v, hi16<T>(x.y), acc[3]);
  }
};
// The shuffles of a lane's x register: one per 32-bit word.
template <typename R>
__device__ __forceinline__ R shflX(R r, int src) {
  return __shfl_sync(0xffffffffu, r, src);
}
__device__ __forceinline__ uint2 shflX(uint2 r, int src) {
  return make_uint2(__shfl_sync(0xffffffffu, r.x, src), __shfl_sync(0xffffffffu, r.y, src));
}
template <typename R>
__device__ __forceinline__ R shflXorX(R r, int mask) {
  return __shfl_xor_sync(0xffffffffu, r, mask);
}
__device__ __forceinline__ uint2 shflXorX(uint2 r, int mask) {
  return make_uint2(__shfl_xor_sync(0xffffffffu, r.x, mask), __shfl_xor_sync(0xffffffffu, r.y, mask));
}

// Batch 1 (and 2-4), one mask word, two independent chains: the top chain walks m from its
// highest kept column down (values 15..8), the bottom chain walks brev(m) from its
// highest bit down, i.e. m from its lowest kept column up (values 0..7). x comes
// from registers by shuffle: lane c of xr holds x[32g + c], lane c of xq holds
// x[32g + 31 - c]. Per kept value: FLO, SHF + LOP (clear), SHFL, widen, FFMA (batch 2:
// one SHFL, two widenings of x and two FFMA; batch 4: two SHFL, four widenings, four FFMA).
template <typename T, int B>
__device__ __forceinline__ void accumulateWordB1(const uint4& va, const uint4& vb, std::uint32_t m,
                                                 typename XLane<T, B>::Reg xr, typename XLane<T, B>::Reg xq,
                                                 float (&acc0)[B], float (&acc1)[B]) {
  const std::uint32_t w[8] = {va.x, va.y, va.z, va.w, vb.x, vb.y, vb.z, vb.w};
  std::uint32_t r = __brev(m);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int p = topBit(m);
    m ^= 1u << p;
    const int q = topBit(r);
    r ^= 1u << q;
    const int k = 15 - i;
    const float vh = (k & 1) ? hi16<T>(w[k / 2]) : lo16<T>(w[k / 2]);
    const float vl = (i & 1) ? hi16<T>(w[i / 2]) : lo16<T>(w[i / 2]);
    XLane<T, B>::fma(vh, shflX(xr, p), acc0);
    XLane<T, B>::fma(vl, shflX(xq, q), acc1);
  }
}

template <int U, int B = 1>
struct ChunkB1 {  // U mask words of one lane: values, mask, and its column of x (16-bit bits per batch row)
  uint4 va[U], vb[U];
  std::uint32_t mk[U];
  XBits<B> xv[U];
};

template <int U, int B>
__device__ __forceinline__ void loadWeightsB1(ChunkB1<U, B>& c, const uint4* __restrict__ values,
                                              const std::uint32_t* __restrict__ masks, std::int64_t tileBase, int g,
                                              int lane) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const std::int64_t e = (tileBase + g + u) * 32 + lane;
    c.va[u] = __ldcg(values + 2 * e);
    c.vb[u] = __ldcg(values + 2 * e + 1);
    c.mk[u] = __ldcg(masks + e);
  }
}
template <int U, int B>
__device__ __forceinline__ void loadXB1(ChunkB1<U, B>& c, const unsigned short* __restrict__ xg, int g, int lane) {
  // batch 2: [cols][2], 4-byte aligned; batch 3, 4: [cols][4], 8-byte aligned
  const XBits<B>* xb = reinterpret_cast<const XBits<B>*>(xg);
#pragma unroll
  for (int u = 0; u < U; ++u) c.xv[u] = __ldca(xb + static_cast<std::int64_t>(g + u) * 32 + lane);
}
template <int U, int B>
__device__ __forceinline__ void loadChunkB1(ChunkB1<U, B>& c, const uint4* __restrict__ values,
                                            const std::uint32_t* __restrict__ masks,
                                            const unsigned short* __restrict__ xg, std::int64_t tileBase, int g,
                                            int lane) {
  loadWeightsB1<U, B>(c, values, masks, tileBase, g, lane);
  loadXB1<U, B>(c, xg, g, lane);
}

// Adds the chunk's sums to acc when `keep` (a chunk past the end of the slice is
// computed on a duplicate of a valid chunk and dropped: the shuffles stay in
// block-uniform control flow).
template <typename T, int U, int B>
__device__ __forceinline__ void computeChunkB1(const ChunkB1<U, B>& c, bool keep, float (&acc0)[B], float (&acc1)[B]) {
  float s0[B], s1[B];
#pragma unroll
  for (int b = 0; b < B; ++b) s0[b] = 0.f, s1[b] = 0.f;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const auto xr = XLane<T, B>::reg(c.xv[u]);
    const auto xq = shflXorX(xr, 31);
    accumulateWordB1<T, B>(c.va[u], c.vb[u], c.mk[u], xr, xq, s0, s1);
  }
  if (keep) {
#pragma unroll
    for (int b = 0; b < B; ++b) acc0[b] += s0[b], acc1[b] += s1[b];
  }
}

// A batch-1 block's share of its tile's words: split blockIdx.y (wordsPerSplit words),
// dealt to the block's W warps in chunks of U words, round robin. The trip counts
// depend on blockIdx, blockDim and the arguments only (block-uniform); a chunk past
// the end of the slice is computed on the last whole chunk and dropped.
template <int U>
struct SliceB1 {
  int lane, warp, W;
  int gs, g1;              // the slice's words [gs, g1)
  int full, iters, gLast;  // whole chunks, iterations per warp, the last whole chunk's first word
  std::int64_t tileBase;   // the tile's first word
  __device__ __forceinline__ int start(int it) const { return gs + (it * W + warp) * U; }
  __device__ __forceinline__ int word(int it) const { return min(start(it), gLast); }
  __device__ __forceinline__ bool keeps(int it) const { return start(it) + U <= g1; }
};

template <int U>
__device__ __forceinline__ SliceB1<U> sliceB1(int G, int wordsPerSplit) {
  SliceB1<U> s;
  s.lane = static_cast<int>(threadIdx.x & 31);
  s.warp = static_cast<int>(threadIdx.x >> 5);
  s.W = static_cast<int>(blockDim.x >> 5);
  const std::int64_t tile = blockIdx.x;
  s.gs = static_cast<int>(blockIdx.y) * wordsPerSplit;
  s.g1 = min(G, s.gs + wordsPerSplit);
  s.tileBase = tile * G;
  s.full = (s.g1 - s.gs) / U;
  s.iters = (s.full + s.W - 1) / s.W;
  s.gLast = s.gs + (s.full - 1) * U;
  return s;
}

// The words after the slice's last whole chunk, one at a time: warp 0 keeps them.
template <typename T, int U, int B>
__device__ __forceinline__ void tailWordsB1(const SliceB1<U>& sl, const uint4* __restrict__ values,
                                            const std::uint32_t* __restrict__ masks,
                                            const unsigned short* __restrict__ xg, float (&acc0)[B], float (&acc1)[B]) {
  for (int g = sl.gs + sl.full * U; g < sl.g1; ++g) {
    ChunkB1<1, B> c;
    loadChunkB1<1, B>(c, values, masks, xg, sl.tileBase, g, sl.lane);
    computeChunkB1<T, 1, B>(c, sl.warp == 0, acc0, acc1);
  }
}

// Batch 1 (and 2-4 on the shuffle path): the block's warps add their sums (acc) in shared
// memory and the tile's splits are reduced (cluster: through block 0's shared memory; else
// workspace + ticket, splitk.cuh). y: [B][ldy]. Called by every thread of the block.
template <typename T, int B, bool CLUSTER, bool TAIL>
__device__ __forceinline__ void finishB1(const float (&acc)[B], T* __restrict__ y, std::int64_t ldy, std::int64_t rows,
                                         float* __restrict__ ws, unsigned* __restrict__ counters,
                                         const NormTail& tail) {
  static_assert(B == 1 || !TAIL, "the norm tail runs at batch 1 only");
  __shared__ float red[kMaxWarpsB1 * 32 * B];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int W = static_cast<int>(blockDim.x >> 5);
  const std::int64_t tile = blockIdx.x;
#pragma unroll
  for (int b = 0; b < B; ++b) red[(warp * B + b) * 32 + lane] = acc[b];
  __syncthreads();
  const std::int64_t row = tile * 32 + lane;
  float tot[B];
#pragma unroll
  for (int b = 0; b < B; ++b) tot[b] = 0.f;
  if (warp == 0)
    for (int w = 0; w < W; ++w) {
#pragma unroll
      for (int b = 0; b < B; ++b) tot[b] += red[(w * B + b) * 32 + lane];
    }
  if constexpr (CLUSTER) {
#if __CUDA_ARCH__ >= 900
    __shared__ float part[kMaxClusterB1 * 32 * B];  // block 0: the row sums of every block of the cluster
    asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");  // every block of the cluster has started
    const unsigned rank = blockIdx.y;  // cluster dims (1, gridDim.y, 1): the rank is the split index
    if (warp == 0 && rank != 0) {
#pragma unroll
      for (int b = 0; b < B; ++b) {
        std::uint32_t local = static_cast<std::uint32_t>(__cvta_generic_to_shared(part + (rank * B + b) * 32 + lane)),
                      remote;
        asm volatile("mapa.shared::cluster.u32 %0, %1, 0;\n" : "=r"(remote) : "r"(local));
        asm volatile("st.shared::cluster.f32 [%0], %1;\n" ::"r"(remote), "f"(tot[b]) : "memory");
      }
    }
    asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
    asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
    const bool wrote = warp == 0 && rank == 0;
    if (wrote) {
#pragma unroll
      for (int b = 0; b < B; ++b) {
        float s = 0.f;
        s += tot[b];
        for (unsigned k = 1; k < gridDim.y; ++k) s += part[(k * B + b) * 32 + lane];
        if (row < rows) y[b * ldy + row] = detail::fromFloat<T>(s);
      }
    }
    if constexpr (TAIL) detail::normTail<T>(tail, wrote, y, rows);
#else
    __trap();  // never launched below sm_90 (hopperLaunchSupported)
#endif
  } else {
    bool wrote = false;
    if (warp == 0)
      wrote = detail::finishRows<T, B>(tot, true, row, row < rows, y, ldy, ws, counters + tile, row,
                                       static_cast<std::int64_t>(gridDim.x) * 32);
    if constexpr (TAIL) detail::normTail<T>(tail, wrote, y, rows);
  }
}

// Batch 1: no shared-memory copy of x (each lane loads its column of the word,
// __ldca, and the warp shares it by shuffle), so nothing holds the first weight
// loads back. Every warp runs the same, block-uniform number of iterations (the
// trip counts depend on blockIdx, blockDim and the arguments only), so the
// compiler needs no warp-collective fallback around the shuffles; loads of the
// next chunk of U words are issued before the current chunk is used (two
// register buffers, ping-pong). Launched with programmatic dependent launch, the
// weights of the first two chunks are requested before pdlWait() (x after it).
//
// CLUSTER (sm_90): the gridDim.y blocks of a tile form one thread-block cluster
// along K. Each block adds its warps' sums in its own shared memory and stores
// the 32 row sums into block 0's shared memory (distributed shared memory); after
// one cluster barrier (release / acquire) block 0 adds them in split order
// (deterministic) and writes y: no workspace, fence or ticket. The barrier
// arrival at kernel start (relaxed, completed before the first remote store)
// guarantees every block of the cluster is running before its shared memory is
// written.
template <typename T, int B, int U, bool CLUSTER, bool PDL, bool TAIL>
__global__ void __launch_bounds__(kMaxWarpsB1 * 32)
    bitmaskSpmvB1Kernel(const uint4* __restrict__ values, const std::uint32_t* __restrict__ masks, int G,
                        int wordsPerSplit, const T* __restrict__ x, std::int64_t rows, T* __restrict__ y,
                        std::int64_t ldy, float* __restrict__ ws, unsigned* __restrict__ counters, NormTail tail) {
#if __CUDA_ARCH__ >= 900
  if constexpr (CLUSTER) asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
#endif
  const SliceB1<U> sl = sliceB1<U>(G, wordsPerSplit);
  const int lane = sl.lane, iters = sl.iters;
  const std::int64_t tileBase = sl.tileBase;
  const unsigned short* xg = reinterpret_cast<const unsigned short*>(x);

  float acc0[B], acc1[B];
#pragma unroll
  for (int b = 0; b < B; ++b) acc0[b] = 0.f, acc1[b] = 0.f;
  ChunkB1<U, B> a, c;
  if constexpr (PDL) {  // the first two chunks' weights before the wait; x and y after it
    if (iters > 0) loadWeightsB1<U, B>(a, values, masks, tileBase, sl.word(0), lane);
    if (iters > 1) loadWeightsB1<U, B>(c, values, masks, tileBase, sl.word(1), lane);
    pdlWait();
    if (iters > 0) loadXB1<U, B>(a, xg, sl.word(0), lane);
    if (iters > 1) loadXB1<U, B>(c, xg, sl.word(1), lane);
  } else {
    if (iters > 0) loadChunkB1<U, B>(a, values, masks, xg, tileBase, sl.word(0), lane);
  }
  for (int it = 0; it < iters; it += 2) {
    if ((!PDL || it > 0) && it + 1 < iters) loadChunkB1<U, B>(c, values, masks, xg, tileBase, sl.word(it + 1), lane);
    computeChunkB1<T, U, B>(a, sl.keeps(it), acc0, acc1);
    if (it + 1 >= iters) break;
    if (it + 2 < iters) loadChunkB1<U, B>(a, values, masks, xg, tileBase, sl.word(it + 2), lane);
    computeChunkB1<T, U, B>(c, sl.keeps(it + 1), acc0, acc1);
  }
  if constexpr (PDL) pdlLaunchDependents();  // the next kernel may start during this one's tail
  tailWordsB1<T, U, B>(sl, values, masks, xg, acc0, acc1);

  float acc[B];
#pragma unroll
  for (int b = 0; b < B; ++b) acc[b] = acc0[b] + acc1[b];
  finishB1<T, B, CLUSTER, TAIL>(acc, y, ldy, rows, ws, counters, tail);
}

// Batch 1, sm_90, bulk-copy pipeline ("unroll" 10 S + U in SpmvConfig): each warp
// streams its chunks of U words (values U KiB, masks U x 128 B, x U x 64 B, all
// contiguous) into its own S stages of shared memory with 1-D bulk asynchronous
// copies (cp.async.bulk, completion on one mbarrier per stage, lane 0 issues), so
// S - 1 chunks per warp are in flight without holding registers. The traversal is
// the one of bitmaskSpmvB1Kernel, reading values, mask and x from shared memory.
// Same work split, same dropped stand-in chunks, same epilogue (deterministic).
constexpr int kBulkBytesPerWord = 1024 + 128 + 64;

template <typename T, int U, int S, bool CLUSTER, bool PDL, bool TAIL>
__global__ void __launch_bounds__(kMaxWarpsB1 * 32)
    bitmaskSpmvB1BulkKernel(const uint4* __restrict__ values, const std::uint32_t* __restrict__ masks, int G,
                            int wordsPerSplit, const T* __restrict__ x, std::int64_t rows, T* __restrict__ y,
                            float* __restrict__ ws, unsigned* __restrict__ counters, NormTail tail) {
#if __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) unsigned char bulkRaw[];
  if constexpr (CLUSTER) asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
  constexpr int kStage = U * kBulkBytesPerWord;
  const SliceB1<U> sl = sliceB1<U>(G, wordsPerSplit);
  const int lane = sl.lane, warp = sl.warp, W = sl.W, iters = sl.iters;
  const unsigned short* xg = reinterpret_cast<const unsigned short*>(x);

  // [W][S] mbarriers, then [W][S] stages.
  const unsigned char* stages = bulkRaw + ((W * S * 8 + 127) & ~127) + warp * S * kStage;
  const std::uint32_t bar0 = static_cast<std::uint32_t>(__cvta_generic_to_shared(bulkRaw)) + warp * S * 8;
  const std::uint32_t st0 = static_cast<std::uint32_t>(__cvta_generic_to_shared(stages));
  if (lane == 0) {
#pragma unroll
    for (int s = 0; s < S; ++s) detail::mbarInit(bar0 + 8 * s);
    detail::mbarInitFence();
  }
  __syncwarp();
  // Lane 0: the chunk of iteration `it` into stage it % S; the weights (with the
  // stage's whole byte count expected), then x.
  auto issueWeights = [&](int it) {
    const int g = sl.word(it);
    const std::uint32_t bar = bar0 + 8 * (it % S), dst = st0 + (it % S) * kStage;
    const std::int64_t e = (sl.tileBase + g) * 32;
    detail::mbarArriveExpect(bar, kStage);
    detail::bulkCopy(dst, values + 2 * e, U * 1024, bar);
    detail::bulkCopy(dst + U * 1024, masks + e, U * 128, bar);
  };
  auto issueX = [&](int it) {
    const int g = sl.word(it);
    const std::uint32_t bar = bar0 + 8 * (it % S), dst = st0 + (it % S) * kStage;
    detail::bulkCopy(dst + U * 1152, xg + static_cast<std::int64_t>(g) * 32, U * 64, bar);
  };
  if constexpr (PDL) {  // every stage's weights before the wait; x and y after it
    if (lane == 0)
      for (int i = 0; i < min(S, iters); ++i) issueWeights(i);
    pdlWait();
    if (lane == 0)
      for (int i = 0; i < min(S, iters); ++i) issueX(i);
  } else if (lane == 0) {
    for (int i = 0; i < min(S, iters); ++i) issueWeights(i), issueX(i);
  }

  float acc0[1] = {0.f}, acc1[1] = {0.f};
  for (int it = 0; it < iters; ++it) {
    const int s = it % S;
    detail::mbarWait(bar0 + 8 * s, (it / S) & 1);
    const unsigned char* st = stages + s * kStage;
    float s0[1] = {0.f}, s1[1] = {0.f};
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const uint4* v = reinterpret_cast<const uint4*>(st + u * 1024) + 2 * lane;
      const std::uint32_t m = reinterpret_cast<const std::uint32_t*>(st + U * 1024)[u * 32 + lane];
      const float xr = lo16<T>(reinterpret_cast<const unsigned short*>(st + U * 1152)[u * 32 + lane]);
      const float xq = __shfl_xor_sync(0xffffffffu, xr, 31);
      accumulateWordB1<T, 1>(v[0], v[1], m, xr, xq, s0, s1);
    }
    if (sl.keeps(it)) acc0[0] += s0[0], acc1[0] += s1[0];
    __syncwarp();  // every lane has read stage s before it is refilled
    if (lane == 0 && it + S < iters) issueWeights(it + S), issueX(it + S);
  }
  if constexpr (PDL) pdlLaunchDependents();  // the next kernel may start during this one's tail
  tailWordsB1<T, U, 1>(sl, values, masks, xg, acc0, acc1);
  const float acc[1] = {acc0[0] + acc1[0]};
  finishB1<T, 1, CLUSTER, TAIL>(acc, y, rows, rows, ws, counters, tail);
#else
  __trap();    // never launched below sm_90 (hopperLaunchSupported)
#endif
}

template <typename T, int B, int XS, int U, bool PDL>
__global__ void __launch_bounds__(kMaxWarps * 32)
    bitmaskSpmvKernel(const uint4* __restrict__ values, const std::uint32_t* __restrict__ masks, int G,
                      int wordsPerSplit, const T* __restrict__ x, std::int64_t rows, T* __restrict__ y,
                      std::int64_t ldy, float* __restrict__ ws, unsigned* __restrict__ counters) {
  __shared__ float red[kMaxWarps * B * 32];
  extern __shared__ float4 xsRaw[];
  float* xs = reinterpret_cast<float*>(xsRaw);  // [32 * words of this split][XS] fp32
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, W = blockDim.x >> 5;
  const std::int64_t tile = blockIdx.x;
  const int gs = static_cast<int>(blockIdx.y) * wordsPerSplit;
  const int g1 = min(G, gs + wordsPerSplit);
  const std::int64_t tileBase = tile * G;
  if constexpr (PDL) pdlWait();  // x and y: after the previous kernel of the stream

  // Stage this split's slice of x once per block, widened to fp32.
  stageX<T>(xs, reinterpret_cast<const unsigned short*>(x) + static_cast<std::int64_t>(gs) * 32 * XS,
            (g1 - gs) * 32 * XS);
  __syncthreads();

  float acc[B];
#pragma unroll
  for (int b = 0; b < B; ++b) acc[b] = 0.f;

  int g = gs + warp * U;
  for (; g + U <= g1; g += W * U) {
    uint4 va[U], vb[U];
    std::uint32_t mk[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const std::int64_t e = (tileBase + g + u) * 32 + lane;
      va[u] = __ldcg(values + 2 * e);
      vb[u] = __ldcg(values + 2 * e + 1);
      mk[u] = __ldcg(masks + e);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) accumulateWord<T, B, XS>(va[u], vb[u], mk[u], xs + (g + u - gs) * 32 * XS, acc);
  }
  if constexpr (PDL) pdlLaunchDependents();  // the next kernel may start during this one's tail
  for (; g < g1; ++g) {                      // a last chunk shorter than U (one warp at most)
    const std::int64_t e = (tileBase + g) * 32 + lane;
    accumulateWord<T, B, XS>(__ldcg(values + 2 * e), __ldcg(values + 2 * e + 1), __ldcg(masks + e),
                             xs + (g - gs) * 32 * XS, acc);
  }

#pragma unroll
  for (int b = 0; b < B; ++b) red[(warp * B + b) * 32 + lane] = acc[b];
  __syncthreads();
  if (warp != 0) return;
  float tot[B];
#pragma unroll
  for (int b = 0; b < B; ++b) tot[b] = 0.f;
  for (int w = 0; w < W; ++w) {
#pragma unroll
    for (int b = 0; b < B; ++b) tot[b] += red[(w * B + b) * 32 + lane];
  }
  const std::int64_t row = tile * 32 + lane;
  detail::finishRows<T, B>(tot, true, row, row < rows, y, ldy, ws, counters + tile, row,
                           static_cast<std::int64_t>(gridDim.x) * 32);
}

// ---- Batch 2-8 on the tensor cores (SpmvConfig::unroll 100 + S): every N:M pattern --------
// Dense mma.sync m16n8k16 (fp32 accumulation) on weights expanded to zeros and values in
// registers. A warp owns one 32-row tile (two m16 halves) over its split's words, two words
// (64 columns) at a time; the W warps of a block own W consecutive tiles and share one x
// slice, staged once per block. Lane (grp, t) (grp = lane / 4, t = lane % 4) owns the 16
// columns 32 (t / 2) + 16 (t % 2) + [0, 16) of the word pair for rows grp, grp + 8,
// grp + 16 and grp + 24. With M | 8 (2:4, 4:8) every mask byte holds four kept columns, so
// those 16 columns' 8 values are the 16 contiguous bytes 16 (t % 2) of the row's word: one
// 16-byte load per row. PRMT places each byte's four values at their columns, the others
// zero (byte selectors from a 256-entry table in shared memory: position p of the byte
// holds value popc(b & (2^p - 1)), which for a byte of four lies in the low register for
// positions 0-1, the high one for 6-7, either for 2-5). The product's k order is the
// lanes' columns (k step j of a lane: its columns 4j..4j+3), x staged as 16-bit
// [batch row][column pair] so a lane's B fragments for two k steps are one 16-byte shared
// load; batch rows >= B are zero operands. Padding rows (mask 0x0000ffff: bytes of 8 and 0)
// have zero values, so whatever the selectors take is zero. 8:16 (TM 16) and 16:32 (TM 32)
// expand the same 16 columns with longer selectors (tcExpandRow16; 16:32 through a window of
// the row's values, spmv_tc.h). Fragment layouts: PTX ISA, "Matrix fragments for
// mma.m16n8k16 with floating point type".

// The byte selectors (gpu/kernels/spmv_tc.h), built at compile time; 8:16's per side.
// [[maybe_unused]]: in the translation units without the tensor-core kernels (batch 1, the host side).
[[maybe_unused]] __device__ const TcSelectorTable kTcSelectors = makeTcSelectors();
[[maybe_unused]] __device__ const TcSelectorTable16 kTcSelectors16 = makeTcSelectors16();

__device__ __forceinline__ std::uint32_t prmtZ(std::uint32_t a, std::uint32_t sel) {
  std::uint32_t d;
  asm("prmt.b32 %0, %1, 0, %2;" : "=r"(d) : "r"(a), "r"(sel));
  return d;
}

// One row's 16 columns of the lane: e[2j], e[2j + 1] are the A-fragment registers of its
// columns 4j, 4j + 1 and 4j + 2, 4j + 3 (16-bit pairs, the lower column in the low half).
// kStride: the table's entries kStride apart (8: the lane's copy of the replicated table).
template <int kStride = 1>
__device__ __forceinline__ void tcExpandRow(const uint4& v, std::uint32_t bits, const uint4* sel,
                                            std::uint32_t (&e)[8]) {
  const uint4 s0 = sel[(bits & 255u) * kStride], s1 = sel[((bits >> 8) & 255u) * kStride];
  e[0] = prmtZ(v.x, s0.x);
  e[1] = prmtZ(v.x, s0.y) | prmtZ(v.y, s0.y >> 16);
  e[2] = prmtZ(v.x, s0.z) | prmtZ(v.y, s0.z >> 16);
  e[3] = prmtZ(v.y, s0.x >> 16);
  e[4] = prmtZ(v.z, s1.x);
  e[5] = prmtZ(v.z, s1.y) | prmtZ(v.w, s1.y >> 16);
  e[6] = prmtZ(v.z, s1.z) | prmtZ(v.w, s1.z >> 16);
  e[7] = prmtZ(v.w, s1.x >> 16);
}

// The same for 8:16 (SpmvConfig::tcM = 16): the lane's 16 columns are one group of eight
// values; the low byte's from the bottom of vLo, the high byte's from the top of vHi
// (makeTcSelectors16): for 8:16 both are the lane's 16 value bytes, for 16:32 one of them is
// the window of the row's values that the byte draws on (tc32Window).
// sel16: the table's layout (TcSelectorTable16): words 0-3 of [side][byte] as uint4, then word 4.
__device__ __forceinline__ void tcExpandRow16(const uint4& vLo, const uint4& vHi, std::uint32_t bits,
                                              const uint4* sel16, std::uint32_t (&e)[8]) {
  const unsigned lo = bits & 255u, hi = 256u + ((bits >> 8) & 255u);
  const auto* tail = reinterpret_cast<const std::uint32_t*>(sel16 + kTcSel16Tail / 4);
  const uint4 l0 = sel16[lo], h0 = sel16[hi];
  const std::uint32_t l4 = tail[lo], h4 = tail[hi];
  e[0] = prmtZ(vLo.x, l0.x);
  e[1] = prmtZ(vLo.x, l0.x >> 16) | prmtZ(vLo.y, l0.y);
  e[2] = prmtZ(vLo.x, l0.y >> 16) | prmtZ(vLo.y, l0.z) | prmtZ(vLo.z, l0.z >> 16);
  e[3] = prmtZ(vLo.x, l0.w) | prmtZ(vLo.y, l0.w >> 16) | prmtZ(vLo.z, l4) | prmtZ(vLo.w, l4 >> 16);
  e[4] = prmtZ(vHi.x, h0.x) | prmtZ(vHi.y, h0.x >> 16) | prmtZ(vHi.z, h0.y) | prmtZ(vHi.w, h0.y >> 16);
  e[5] = prmtZ(vHi.y, h0.z) | prmtZ(vHi.z, h0.z >> 16) | prmtZ(vHi.w, h0.w);
  e[6] = prmtZ(vHi.z, h0.w >> 16) | prmtZ(vHi.w, h4);
  e[7] = prmtZ(vHi.w, h4 >> 16);
}

template <typename T>
__device__ __forceinline__ void mma16816(float (&c)[4], std::uint32_t a0, std::uint32_t a1, std::uint32_t a2,
                                         std::uint32_t a3, std::uint32_t b0, std::uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  else
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
  (void)c, (void)a0, (void)a1, (void)a2, (void)a3, (void)b0, (void)b1;
  __trap();
#endif
}

// A lane's share of one word pair: the 16 value bytes and the mask of each of its four rows
// (tcLoad: straight from global memory, zero for a word at or past g1); for 16:32 (TM 32)
// also each row's window (tc32Window), as the low or high source of the expansion.
struct TcPair {
  uint4 v[4];
  std::uint32_t m[4];
  uint4 w[4];  // TM 32 only
};

// c ? a : b word by word. (A conditional on two uint4 lvalues picks an address: the compiler then
// keeps their arrays in local memory.)
__device__ __forceinline__ uint4 pick4(bool c, uint4 a, uint4 b) {
  return make_uint4(c ? a.x : b.x, c ? a.y : b.y, c ? a.z : b.z, c ? a.w : b.w);
}

// 16:32: the lane's own 16 value bytes of a row and its window, from the row's 32 (c0, c1).
__device__ __forceinline__ void tc32Row(const uint4& c0, const uint4& c1, std::uint32_t mask, int half, uint4& v,
                                        uint4& w) {
  v = pick4(half, c1, c0);
  const std::uint32_t r[8] = {c0.x, c0.y, c0.z, c0.w, c1.x, c1.y, c1.z, c1.w};
  const Tc32Window win = tc32Window(r, tc32WindowStart(mask, half));
  w = make_uint4(win.v[0], win.v[1], win.v[2], win.v[3]);
}

template <int TM = 8>
__device__ __forceinline__ TcPair tcLoad(const uint4* __restrict__ values, const std::uint32_t* __restrict__ masks,
                                         std::int64_t tileBase, int g, int g1, int grp, int t) {
  TcPair p;
  const int w = g + (t >> 1);
  const bool ok = w < g1;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const std::int64_t e = (tileBase + w) * 32 + grp + 8 * i;
    p.m[i] = ok ? __ldcg(masks + e) : 0u;
    if constexpr (TM == 32) {
      const uint4 z = make_uint4(0u, 0u, 0u, 0u);
      tc32Row(ok ? __ldcg(values + 2 * e) : z, ok ? __ldcg(values + 2 * e + 1) : z, p.m[i], t & 1, p.v[i], p.w[i]);
    } else {
      p.v[i] = ok ? __ldcg(values + 2 * e + (t & 1)) : make_uint4(0u, 0u, 0u, 0u);
    }
  }
  return p;
}

// xs: this word pair's x, [batch row][column pair] (row stride xs32Stride), at the lane's columns.
// TM: 8 (M | 8: bytes of four), 16 (8:16) or 32 (16:32), as SpmvConfig::tcM.
template <typename T, int B, int TM = 8, bool REP = false>
__device__ __forceinline__ void tcPair(const TcPair& p, const uint4* sel, const std::uint32_t* xs, int xs32Stride,
                                       int grp, int t, float (&c)[2][4]) {
  uint4 b01 = make_uint4(0u, 0u, 0u, 0u), b23 = b01;
  if (grp < B) {
    const auto* xb = reinterpret_cast<const uint4*>(xs + grp * xs32Stride + (t >> 1) * 16 + (t & 1) * 8);
    b01 = xb[0], b23 = xb[1];
  }
  const std::uint32_t b[8] = {b01.x, b01.y, b01.z, b01.w, b23.x, b23.y, b23.z, b23.w};
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    std::uint32_t e0[8], e1[8];  // rows 16h + grp and 16h + grp + 8
    if constexpr (TM == 32) {    // half 0: own bytes low, window high; half 1 the other way round
      const bool h1 = t & 1;
      tcExpandRow16(pick4(h1, p.w[2 * h], p.v[2 * h]), pick4(h1, p.v[2 * h], p.w[2 * h]),
                    (p.m[2 * h] >> (16 * (t & 1))) & 0xffffu, sel, e0);
      tcExpandRow16(pick4(h1, p.w[2 * h + 1], p.v[2 * h + 1]), pick4(h1, p.v[2 * h + 1], p.w[2 * h + 1]),
                    (p.m[2 * h + 1] >> (16 * (t & 1))) & 0xffffu, sel, e1);
    } else if constexpr (TM == 16) {
      tcExpandRow16(p.v[2 * h], p.v[2 * h], (p.m[2 * h] >> (16 * (t & 1))) & 0xffffu, sel, e0);
      tcExpandRow16(p.v[2 * h + 1], p.v[2 * h + 1], (p.m[2 * h + 1] >> (16 * (t & 1))) & 0xffffu, sel, e1);
    } else {
      tcExpandRow<REP ? 8 : 1>(p.v[2 * h], (p.m[2 * h] >> (16 * (t & 1))) & 0xffffu, sel, e0);
      tcExpandRow<REP ? 8 : 1>(p.v[2 * h + 1], (p.m[2 * h + 1] >> (16 * (t & 1))) & 0xffffu, sel, e1);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j)
      mma16816<T>(c[h], e0[2 * j], e1[2 * j], e0[2 * j + 1], e1[2 * j + 1], b[2 * j], b[2 * j + 1]);
  }
}

// Stage x of this split's columns [32 gs, 32 g1) as [batch row n < B][column pair] 16-bit
// pairs (row stride xs32Stride), zero beyond g1 up to the even word count. x is [cols][XS]
// (4-byte aligned: the launcher checks), or with XS = 0 [B][32 G] row-major (16-byte
// aligned): each row's slice copied as it is, 16 bytes a piece, the B rows' pieces of a
// thread loaded before any is stored (one round trip where the slice fits the block).
template <typename T, int B, int XS>
__device__ __forceinline__ void tcStageX(std::uint32_t* xs, int xs32Stride, const T* x, int gs, int g1, int G) {
  if constexpr (XS == 0) {
    const int have = (g1 - gs) * 4, nV = ((g1 - gs + 1) & ~1) * 4;  // 16-byte pieces per row: read, staged
    const auto* x4 = reinterpret_cast<const uint4*>(x) + static_cast<std::int64_t>(gs) * 4;
    const std::int64_t ldx4 = static_cast<std::int64_t>(G) * 4;
    auto* xs4 = reinterpret_cast<uint4*>(xs);
    const int ld4 = xs32Stride / 4;
    for (int j = threadIdx.x; j < nV; j += blockDim.x) {
      uint4 v[B];
#pragma unroll
      for (int n = 0; n < B; ++n) v[n] = j < have ? x4[n * ldx4 + j] : make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
      for (int n = 0; n < B; ++n) xs4[n * ld4 + j] = v[n];
    }
  } else {
    const auto* xw = reinterpret_cast<const std::uint32_t*>(x) + static_cast<std::int64_t>(gs) * 32 * XS / 2;
    const int nW = g1 - gs, pairs = ((nW + 1) & ~1) * 16;
    for (int i = threadIdx.x; i < pairs; i += blockDim.x) {
      std::uint32_t w[XS];  // columns 2i, 2i + 1: XS 16-bit values each, as XS words
      if (i < nW * 16) {
#pragma unroll
        for (int k = 0; k < XS; ++k) w[k] = xw[static_cast<std::int64_t>(i) * XS + k];
      } else {
#pragma unroll
        for (int k = 0; k < XS; ++k) w[k] = 0u;
      }
#pragma unroll
      for (int n = 0; n < B; ++n)
        xs[n * xs32Stride + i] = __byte_perm(w[n / 2], w[(XS + n) / 2], (n & 1) ? 0x7632u : 0x5410u);
    }
  }
}

// A warp's ring of S stages in shared memory, one word pair each: the two words' values for
// the tile's 32 rows (1 KiB each, 64 bytes of padding after each: the lanes' 16-byte reads of
// one row set hit 32 distinct banks) and their masks (128 bytes each, 32 of padding).
constexpr int kTcWordBytes = 1024 + 64;
constexpr int kTcMaskOffset = 2 * kTcWordBytes;
constexpr int kTcMaskBytes = 128 + 32;
constexpr int kTcStageBytes = kTcMaskOffset + 2 * kTcMaskBytes;

// Copies word pair (g, g + 1) of the tile into stage `dst` (32-bit shared address): 4 values
// pieces per lane, the 16 mask pieces by lanes 0-15.
__device__ __forceinline__ void tcIssue(std::uint32_t dst, const uint4* __restrict__ values,
                                        const std::uint32_t* __restrict__ masks, std::int64_t word, int lane) {
  const uint4* v = values + word * 64;
#pragma unroll
  for (int w = 0; w < 2; ++w) {
    detail::cpAsync16(dst + w * kTcWordBytes + 16 * lane, v + 64 * w + lane);
    detail::cpAsync16(dst + w * kTcWordBytes + 16 * (lane + 32), v + 64 * w + lane + 32);
  }
  if (lane < 16)
    detail::cpAsync16(dst + kTcMaskOffset + (lane >> 3) * kTcMaskBytes + 16 * (lane & 7),
                      masks + (word + (lane >> 3)) * 32 + 4 * (lane & 7));
}

// The lane's share of a staged word pair (its four rows' 16 value bytes and masks; for 16:32
// the rows' 32 value bytes, both 16-byte loads issued with the mask's, and their windows).
template <int TM = 8>
__device__ __forceinline__ TcPair tcRead(const unsigned char* stage, int grp, int t) {
  TcPair p;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = grp + 8 * i;
    const unsigned char* row = stage + (t >> 1) * kTcWordBytes + 32 * r;
    p.m[i] = *reinterpret_cast<const std::uint32_t*>(stage + kTcMaskOffset + (t >> 1) * kTcMaskBytes + 4 * r);
    if constexpr (TM == 32) {
      const uint4* v = reinterpret_cast<const uint4*>(row);
      tc32Row(v[0], v[1], p.m[i], t & 1, p.v[i], p.w[i]);
    } else {
      p.v[i] = *reinterpret_cast<const uint4*>(row + 16 * (t & 1));
    }
  }
  return p;
}

// TM 16 and 32: 8:16 and 16:32 (tcExpandRow16 and its 10 KiB of selectors). REP
// (SpmvConfig::tcSelectorCopies, TM 8 only): the selectors in 8 copies after the ring in
// dynamic shared memory, entry e's copy c at e * 8 + c, lane l reading copy l & 7.
template <typename T, int B, int XS, int S, bool PDL, int TM = 8, bool REP = false>
__global__ void __launch_bounds__(kMaxWarps * 32)
    bitmaskSpmvTcKernel(const uint4* __restrict__ values, const std::uint32_t* __restrict__ masks, int G,
                        int wordsPerSplit, const T* __restrict__ x, std::int64_t rows, T* __restrict__ y,
                        std::int64_t ldy, float* __restrict__ ws, unsigned* __restrict__ counters) {
  static_assert(TM == 8 || TM == 16 || TM == 32);
  static_assert(!(REP && TM != 8), "8:16's selectors are not replicated");
  constexpr int kSel = TM == 8 ? 256 : static_cast<int>(sizeof(TcSelectorTable16) / sizeof(uint4));
  static_assert(sizeof(TcSelectorTable16) % sizeof(uint4) == 0);
  constexpr int kCopies = REP ? 8 : 1;
  __shared__ uint4 selStatic[REP ? 1 : kSel];
  extern __shared__ uint4 tcSmem[];
  auto* xs = reinterpret_cast<std::uint32_t*>(tcSmem);
  const int xs32Stride = wordsPerSplit * 16 + 4;  // 16 bytes of padding: conflict-free B loads
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, W = blockDim.x >> 5;
  const int grp = lane >> 2, t = lane & 3;
  const std::int64_t tiles = (rows + 31) / 32, tile = static_cast<std::int64_t>(blockIdx.x) * W + warp;
  const int gs = static_cast<int>(blockIdx.y) * wordsPerSplit;
  const int g1 = min(G, gs + wordsPerSplit);
  const std::int64_t tileBase = tile * G;
  const bool live = tile < tiles;
  const int nPairs = live ? (g1 - gs) / 2 : 0;  // full pairs through the ring; an odd last word after it
  unsigned char* ring = reinterpret_cast<unsigned char*>(tcSmem) + B * xs32Stride * 4 + warp * S * kTcStageBytes;
  const std::uint32_t ringAddr = detail::smemAddr(ring);
  uint4* sel = REP ? reinterpret_cast<uint4*>(reinterpret_cast<unsigned char*>(tcSmem) + B * xs32Stride * 4 +
                                              W * S * kTcStageBytes)
                   : selStatic;
  // The ring's first S - 1 pairs are requested before anything else (the weights do not depend
  // on the previous kernel): their latency overlaps the table copy, the wait and the x staging.
#pragma unroll
  for (int k = 0; k < S - 1; ++k) {
    if (k < nPairs) tcIssue(ringAddr + k * kTcStageBytes, values, masks, tileBase + gs + 2 * k, lane);
    detail::cpAsyncCommit();  // also when empty: one group per pair keeps the wait count uniform
  }
  for (int i = threadIdx.x; i < kSel * kCopies; i += blockDim.x)
    sel[i] = __ldg(reinterpret_cast<const uint4*>(TM == 8 ? kTcSelectors.v : kTcSelectors16.v) + i / kCopies);
  const uint4* selLane = REP ? sel + (lane & 7) : sel;
  if constexpr (PDL) pdlWait();  // x and y: after the previous kernel of the stream
  tcStageX<T, B, XS>(xs, xs32Stride, x, gs, g1, G);
  __syncthreads();
  if (!live) {
    if constexpr (PDL) pdlLaunchDependents();
    return;
  }

  float c[2][4] = {};
  for (int k = 0; k < nPairs; ++k) {
    const int kn = k + S - 1;
    if (kn < nPairs) tcIssue(ringAddr + (kn % S) * kTcStageBytes, values, masks, tileBase + gs + 2 * kn, lane);
    detail::cpAsyncCommit();
    detail::cpAsyncWait<S - 1>();  // pair k has landed (this lane's pieces) ...
    __syncwarp();                  // ... and every lane's
    tcPair<T, B, TM, REP>(tcRead<TM>(ring + (k % S) * kTcStageBytes, grp, t), selLane, xs + 2 * k * 16, xs32Stride, grp,
                          t, c);
    __syncwarp();  // the stage is refilled at the next pair
  }
  if constexpr (PDL) pdlLaunchDependents();  // the next kernel may start during this one's tail
  if ((g1 - gs) & 1)                         // an odd last word, straight from global memory
    tcPair<T, B, TM, REP>(tcLoad<TM>(values, masks, tileBase, g1 - 1, g1, grp, t), selLane, xs + (g1 - 1 - gs) * 16,
                          xs32Stride, grp, t, c);

  // c[h][i] (row 16h + grp (+ 8 for i >= 2), batch column 2t + (i & 1)) to one row per lane
  // through the warp's ring (its copies are done: the last groups were empty), then the
  // split-K finish every kernel here shares.
  detail::cpAsyncWait<0>();
  float* red = reinterpret_cast<float*>(ring);
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int n = 2 * t + (i & 1);
      if (n < B) red[n * 32 + 16 * h + grp + (i >= 2 ? 8 : 0)] = c[h][i];
    }
  __syncwarp();
  float tot[B];
#pragma unroll
  for (int b = 0; b < B; ++b) tot[b] = red[b * 32 + lane];
  const std::int64_t row = tile * 32 + lane;
  detail::finishRows<T, B>(tot, true, row, row < rows, y, ldy, ws, counters + tile, row, tiles * 32);
}

template <typename T, int B, int XS, int S, int TM = 8, bool REP = false>
cudaError_t launchTc(const void* values, const std::uint32_t* masks, std::int64_t rows, std::int64_t cols,
                     const void* x, void* y, std::int64_t ldy, const SpmvConfig& cfg, float* ws, unsigned* counters,
                     cudaStream_t stream) {
  // x staged in 4-byte words (row-major: 16-byte pieces), values and masks copied in 16-byte pieces
  if ((reinterpret_cast<std::uintptr_t>(x) & (XS == 0 ? 15 : 3)) ||
      ((reinterpret_cast<std::uintptr_t>(values) | reinterpret_cast<std::uintptr_t>(masks)) & 15))
    return cudaErrorInvalidValue;
  const int G = static_cast<int>(cols / 32);
  const int wordsPerSplit = spmvWordsPerSplit(cols, B, cfg);
  const int splits = (G + wordsPerSplit - 1) / wordsPerSplit;
  const std::size_t smem = static_cast<std::size_t>(B) * (wordsPerSplit * 16 + 4) * 4 +
                           static_cast<std::size_t>(cfg.warps) * S * kTcStageBytes +
                           (REP ? std::size_t{8} * 256 * sizeof(uint4) : 0);
  const std::int64_t blocks = (spmvTiles(rows) + cfg.warps - 1) / cfg.warps;
  if (blocks > 2147483647) return cudaErrorInvalidValue;
  dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(splits));
  const bool pdl = !REP && cfg.pdl && hopperLaunchSupported();  // the copies: an A/B of the launch without PDL
  auto kernel =
      pdl ? bitmaskSpmvTcKernel<T, B, XS, S, !REP, TM, REP> : bitmaskSpmvTcKernel<T, B, XS, S, false, TM, REP>;
  const cudaError_t e =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (e != cudaSuccess) return e;
  return detail::launchEx(kernel, grid, dim3(static_cast<unsigned>(cfg.warps * 32)), smem, stream, 0, pdl,
                          static_cast<const uint4*>(values), masks, G, wordsPerSplit, static_cast<const T*>(x), rows,
                          static_cast<T*>(y), ldy, ws, counters);
}

template <typename T, int B, int XS, int U>
cudaError_t launchTyped(const void* values, const std::uint32_t* masks, std::int64_t rows, std::int64_t cols,
                        const void* x, void* y, std::int64_t ldy, const SpmvConfig& cfg, float* ws, unsigned* counters,
                        cudaStream_t stream) {
  const int G = static_cast<int>(cols / 32);
  const int wordsPerSplit = spmvWordsPerSplit(cols, B, cfg);
  const int splits = (G + wordsPerSplit - 1) / wordsPerSplit;
  const std::size_t smem = static_cast<std::size_t>(wordsPerSplit) * 32 * XS * sizeof(float);
  dim3 grid(static_cast<unsigned>(spmvTiles(rows)), static_cast<unsigned>(splits));
  const bool pdl = cfg.pdl && hopperLaunchSupported();
  return detail::launchEx(pdl ? bitmaskSpmvKernel<T, B, XS, U, true> : bitmaskSpmvKernel<T, B, XS, U, false>, grid,
                          dim3(static_cast<unsigned>(cfg.warps * 32)), smem, stream, 0, pdl,
                          static_cast<const uint4*>(values), masks, G, wordsPerSplit, static_cast<const T*>(x), rows,
                          static_cast<T*>(y), ldy, ws, counters);
}

// The batch-1 kernels (and batch 2-4's shuffle path) by (programmatic dependent launch, norm
// tail): the tail is compiled only into the kernels that run it (batch 1), so the others keep
// their register count.
template <typename T, int B, int U, bool CL>
auto b1Kernel(bool pdl, bool tail) {
  if constexpr (B == 1)
    if (tail) return pdl ? bitmaskSpmvB1Kernel<T, B, U, CL, true, true> : bitmaskSpmvB1Kernel<T, B, U, CL, false, true>;
  return pdl ? bitmaskSpmvB1Kernel<T, B, U, CL, true, false> : bitmaskSpmvB1Kernel<T, B, U, CL, false, false>;
}
template <typename T, int U, int S, bool CL>
auto bulkKernel(bool pdl, bool tail) {
  if (tail)
    return pdl ? bitmaskSpmvB1BulkKernel<T, U, S, CL, true, true> : bitmaskSpmvB1BulkKernel<T, U, S, CL, false, true>;
  return pdl ? bitmaskSpmvB1BulkKernel<T, U, S, CL, true, false> : bitmaskSpmvB1BulkKernel<T, U, S, CL, false, false>;
}

// Batch 1, and batch 2-4 with x by shuffle (SpmvConfig::unroll 200 + U): the register path.
template <typename T, int B, int U>
cudaError_t launchB1(const void* values, const std::uint32_t* masks, std::int64_t rows, std::int64_t cols,
                     const void* x, void* y, std::int64_t ldy, const SpmvConfig& cfg, float* ws, unsigned* counters,
                     cudaStream_t stream) {
  const int G = static_cast<int>(cols / 32);
  const int wordsPerSplit = spmvWordsPerSplit(cols, B, cfg);
  const int splits = (G + wordsPerSplit - 1) / wordsPerSplit;
  dim3 grid(static_cast<unsigned>(spmvTiles(rows)), static_cast<unsigned>(splits));
  const auto* v = static_cast<const uint4*>(values);
  const auto* xt = static_cast<const T*>(x);
  auto* yt = static_cast<T*>(y);
  const dim3 block(static_cast<unsigned>(cfg.warps * 32));
  const bool hopper = hopperLaunchSupported(), pdl = cfg.pdl && hopper, tail = B == 1 && cfg.tail.on();
  if (spmvUsesCluster(cols, B, cfg) && hopper) {
    auto kernel = b1Kernel<T, B, U, true>(pdl, tail);
    if (splits > 8) {
      const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
      if (e != cudaSuccess) return e;
    }
    return detail::launchEx(kernel, grid, block, 0, stream, static_cast<unsigned>(splits), pdl, v, masks, G,
                            wordsPerSplit, xt, rows, yt, ldy, ws, counters, cfg.tail);
  }
  return detail::launchEx(b1Kernel<T, B, U, false>(pdl, tail), grid, block, 0, stream, 0, pdl, v, masks, G,
                          wordsPerSplit, xt, rows, yt, ldy, ws, counters, cfg.tail);
}

// Batch 1 through the bulk-copy pipeline (sm_90, 16-byte aligned values, masks and x);
// otherwise the register path with the same U.
template <typename T, int U, int S>
cudaError_t launchB1Bulk(const void* values, const std::uint32_t* masks, std::int64_t rows, std::int64_t cols,
                         const void* x, void* y, const SpmvConfig& cfg, float* ws, unsigned* counters,
                         cudaStream_t stream) {
  const bool aligned = ((reinterpret_cast<std::uintptr_t>(values) | reinterpret_cast<std::uintptr_t>(masks) |
                         reinterpret_cast<std::uintptr_t>(x)) &
                        15) == 0;
  if (!aligned || !hopperLaunchSupported())
    return launchB1<T, 1, U>(values, masks, rows, cols, x, y, rows, cfg, ws, counters, stream);
  const int G = static_cast<int>(cols / 32);
  const int wordsPerSplit = spmvWordsPerSplit(cols, 1, cfg);
  const int splits = (G + wordsPerSplit - 1) / wordsPerSplit;
  const std::size_t smem = static_cast<std::size_t>((cfg.warps * S * 8 + 127) & ~127) +
                           static_cast<std::size_t>(cfg.warps) * S * U * kBulkBytesPerWord;
  dim3 grid(static_cast<unsigned>(spmvTiles(rows)), static_cast<unsigned>(splits));
  const auto* v = static_cast<const uint4*>(values);
  const auto* xt = static_cast<const T*>(x);
  auto* yt = static_cast<T*>(y);
  const bool cl = spmvUsesCluster(cols, 1, cfg);
  const bool tail = cfg.tail.on();
  auto kernel = cl ? bulkKernel<T, U, S, true>(cfg.pdl, tail) : bulkKernel<T, U, S, false>(cfg.pdl, tail);
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (e != cudaSuccess) return e;
  if (cl && splits > 8) {
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    if (e != cudaSuccess) return e;
  }
  return detail::launchEx(kernel, grid, dim3(static_cast<unsigned>(cfg.warps * 32)), smem, stream,
                          cl ? static_cast<unsigned>(splits) : 0u, cfg.pdl, v, masks, G, wordsPerSplit, xt, rows, yt,
                          ws, counters, cfg.tail);
}

template <typename T, int B>
cudaError_t byUnroll(const void* values, const std::uint32_t* masks, std::int64_t rows, std::int64_t cols,
                     const void* x, void* y, std::int64_t ldy, const SpmvConfig& cfg, float* ws, unsigned* counters,
                     cudaStream_t stream) {
  if constexpr (B == 1) {
    switch (cfg.unroll) {
      case 1: return launchB1<T, 1, 1>(values, masks, rows, cols, x, y, ldy, cfg, ws, counters, stream);
      case 2: return launchB1<T, 1, 2>(values, masks, rows, cols, x, y, ldy, cfg, ws, counters, stream);
      case 3: return launchB1<T, 1, 3>(values, masks, rows, cols, x, y, ldy, cfg, ws, counters, stream);
      case 4: return launchB1<T, 1, 4>(values, masks, rows, cols, x, y, ldy, cfg, ws, counters, stream);
#define SDW_SPMV_BULK(S, U) \
  case 10 * S + U: return launchB1Bulk<T, U, S>(values, masks, rows, cols, x, y, cfg, ws, counters, stream);
        SDW_SPMV_BULK(4, 1)
        SDW_SPMV_BULK(6, 1) SDW_SPMV_BULK(8, 1) SDW_SPMV_BULK(4, 2) SDW_SPMV_BULK(3, 4)
#undef SDW_SPMV_BULK
            default : return cudaErrorInvalidValue;
    }
  } else {
    constexpr int XS = B == 2 ? 2 : B <= 4 ? 4 : 8;
    if constexpr (B <= 4) {  // x by shuffle from registers, as at batch 1 (unroll 200 + U)
      switch (cfg.unroll) {
        case 201: return launchB1<T, B, 1>(values, masks, rows, cols, x, y, ldy, cfg, ws, counters, stream);
        case 202: return launchB1<T, B, 2>(values, masks, rows, cols, x, y, ldy, cfg, ws, counters, stream);
        case 203: return launchB1<T, B, 3>(values, masks, rows, cols, x, y, ldy, cfg, ws, counters, stream);
        default: break;
      }
    }
    // On the tensor cores, 8:16 and 16:32 (tcM 16, 32) read x as [batch, cols] only (what the
    // engine and the benchmark pass); every pattern takes a ring of 2-4 stages. Off the tensor
    // cores tcM means nothing (the CUDA-core kernel reads every pattern alike).
    const bool wide = cfg.tcM == 16 || cfg.tcM == 32;
    if (wide && spmvTensorCores(cfg) && !cfg.xRowMajor) return cudaErrorInvalidValue;
    if (!wide && cfg.tcSelectorCopies && cfg.xRowMajor && cfg.unroll == 102)
      return launchTc<T, B, 0, 2, 8, true>(values, masks, rows, cols, x, y, ldy, cfg, ws, counters, stream);
    // clang-format off
    switch (cfg.unroll) {
      case 1: return launchTyped<T, B, XS, 1>(values, masks, rows, cols, x, y, ldy, cfg, ws, counters, stream);
      case 2: return launchTyped<T, B, XS, 2>(values, masks, rows, cols, x, y, ldy, cfg, ws, counters, stream);
      case 4: return launchTyped<T, B, XS, 4>(values, masks, rows, cols, x, y, ldy, cfg, ws, counters, stream);
#define SDW_SPMV_TC(S)                                                                                                \
  case 100 + S:                                                                                                       \
    if (cfg.tcM == 16) return launchTc<T, B, 0, S, 16>(values, masks, rows, cols, x, y, ldy, cfg, ws, counters, stream); \
    if (cfg.tcM == 32) return launchTc<T, B, 0, S, 32>(values, masks, rows, cols, x, y, ldy, cfg, ws, counters, stream); \
    return cfg.xRowMajor ? launchTc<T, B, 0, S>(values, masks, rows, cols, x, y, ldy, cfg, ws, counters, stream)      \
                         : launchTc<T, B, XS, S>(values, masks, rows, cols, x, y, ldy, cfg, ws, counters, stream);
      SDW_SPMV_TC(2) SDW_SPMV_TC(3) SDW_SPMV_TC(4)
#undef SDW_SPMV_TC
      default: return cudaErrorInvalidValue;
    }
    // clang-format on
  }
}

template <int B>
cudaError_t byType(const detail::SpmvCall& c) {
  switch (c.dtype) {
    case DType::BF16:
      return byUnroll<__nv_bfloat16, B>(c.values, c.masks, c.rows, c.cols, c.x, c.y, c.ldy, c.cfg, c.ws, c.counters,
                                        c.stream);
    case DType::F16:
      return byUnroll<__half, B>(c.values, c.masks, c.rows, c.cols, c.x, c.y, c.ldy, c.cfg, c.ws, c.counters, c.stream);
    default: return cudaErrorInvalidValue;
  }
}

// The batches B0..B1 of one unit: c.batch's.
template <int B0, int B1>
cudaError_t byBatches(const detail::SpmvCall& c) {
  if (c.batch == B0) return byType<B0>(c);
  if constexpr (B0 < B1) return byBatches<B0 + 1, B1>(c);
  else return cudaErrorInvalidValue;
}

}  // namespace
}  // namespace sdw::kernels
