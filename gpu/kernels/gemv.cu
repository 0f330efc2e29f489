// Dense GEMV, fp32 accumulation: the honest baseline for the sparse kernel.
//
// Each warp owns `R` consecutive rows; per step a lane streams one 16-byte chunk
// (8 values) of each row with __ldcg and the matching x chunk with __ldca, so a
// warp step reads R x 512 contiguous bytes; `U` steps are loaded before use.
// Lanes are reduced with shuffles, warps through shared memory, split-K blocks
// with the same two-pass epilogue as the sparse kernel (splitk.cuh). With
// programmatic dependent launch the first step's weights are requested before
// the wait for the previous kernel, as in the sparse kernel. At batch 1 the last
// block may run the add + RMSNorm that follows (GemvConfig::tail, splitk.cuh).

#include "gpu/kernels/gemv.cuh"
#include "gpu/kernels/splitk.cuh"

#include <algorithm>

namespace sdw::kernels {
namespace {

using detail::fromFloat;
using detail::hi16;
using detail::lo16;
using detail::pdlLaunchDependents;
using detail::pdlWait;
using detail::roundTo;
using detail::toFloat;

constexpr int kMaxWarps = 8;

template <typename T>
__device__ __forceinline__ float dot8(const uint4& w, const uint4& x, float acc) {
  acc = fmaf(lo16<T>(w.x), lo16<T>(x.x), acc);
  acc = fmaf(hi16<T>(w.x), hi16<T>(x.x), acc);
  acc = fmaf(lo16<T>(w.y), lo16<T>(x.y), acc);
  acc = fmaf(hi16<T>(w.y), hi16<T>(x.y), acc);
  acc = fmaf(lo16<T>(w.z), lo16<T>(x.z), acc);
  acc = fmaf(hi16<T>(w.z), hi16<T>(x.z), acc);
  acc = fmaf(lo16<T>(w.w), lo16<T>(x.w), acc);
  acc = fmaf(hi16<T>(w.w), hi16<T>(x.w), acc);
  return acc;
}

// What a kernel does besides the product (batch 1 only but kPlain): the norm tail, or the
// folded norm's producer side (h += y, partial sums of squares) or consumer side (x formed
// from h); compiled only into the kernels that run it, so the others keep their registers.
enum Extra : int { kPlain = 0, kTail = 1, kFoldOut = 2, kFoldIn = 3 };

// NormFold's consumer. x = rmsnorm(h) * w = r * (w * h) with one scalar r per vector, so the
// block multiplies its sums by r at the end instead of scaling x first: after the wait it
// starts copying the producer's partials into shared memory (cp.async, consumed only after
// the main loop, so their latency hides under it) and forms its chunks [k0, k1) of
// x' = T(w * h) into shared memory (xs), every load of a group issued before the first use;
// its warps read xs in place of x.
__device__ __forceinline__ void cpAsync4(float* dst, const float* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(detail::smemAddr(dst)), "l"(src) : "memory");
}

template <typename T>
__device__ __forceinline__ void foldPrologue(const NormFold& f, std::int64_t k0, std::int64_t k1, uint4* xs,
                                             float* partials) {
  for (int i = threadIdx.x; i < f.count; i += blockDim.x) cpAsync4(partials + i, f.partials + i);
  detail::cpAsyncCommit();
  const uint4* h = static_cast<const uint4*>(f.h);
  const uint4* w = static_cast<const uint4*>(f.w);
  constexpr int kGroup = 2;
  for (std::int64_t g = k0 + threadIdx.x; g < k1; g += kGroup * blockDim.x) {
    uint4 hv[kGroup], wv[kGroup];
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      const std::int64_t kk = g + j * blockDim.x;
      if (kk < k1) hv[j] = __ldcg(h + kk), wv[j] = __ldg(w + kk);
    }
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      const std::int64_t kk = g + j * blockDim.x;
      if (kk < k1) xs[kk - k0] = detail::normChunk<T>(hv[j], wv[j], 8, 1.f);
    }
  }
  __syncthreads();
}

// r from the partials foldPrologue copied: each thread's share, then the warps' sums, added
// in an order fixed by the block size, so every block gets the same bits. Every thread of
// the block calls it.
__device__ __forceinline__ float foldScale(const NormFold& f, const float* partials) {
  __shared__ float part[kMaxWarps];
  detail::cpAsyncWait<0>();  // the partials foldPrologue copied (its only group)
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, W = blockDim.x >> 5;
  float s = 0.f;
  for (int i = threadIdx.x; i < f.count; i += blockDim.x) s += partials[i];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) part[warp] = s;
  __syncthreads();
  float tot = 0.f;
  for (int i = 0; i < W; ++i) tot += part[i];
  return rsqrtf(tot / static_cast<float>(f.n) + f.eps);
}

template <typename T, int B, int R, int U, bool PDL, int EXTRA>
__global__ void __launch_bounds__(kMaxWarps * 32)
    denseGemvKernel(const uint4* __restrict__ w, std::int64_t rows, std::int64_t cols8, std::int64_t chunksPerSplit,
                    const uint4* __restrict__ x, T* __restrict__ y, std::int64_t ldy, float* __restrict__ ws,
                    unsigned* __restrict__ counters, NormTail tail, NormFold fold) {
  static_assert(EXTRA == kPlain || B == 1, "the norm's tail and fold are batch 1");
  __shared__ float red[32 * B];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, W = blockDim.x >> 5;
  const int rowsPerBlock = W * R;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.x) * rowsPerBlock + warp * R;
  const std::int64_t k0 = static_cast<std::int64_t>(blockIdx.y) * chunksPerSplit;
  const std::int64_t k1 = min(cols8, k0 + chunksPerSplit);
  const uint4* wr[R];
#pragma unroll
  for (int r = 0; r < R; ++r) wr[r] = w + min(r0 + r, rows - 1) * cols8;  // rows past the end: read, discard

  float acc[R][B];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int b = 0; b < B; ++b) acc[r][b] = 0.f;

  std::int64_t k = k0 + lane;
  uint4 wv[U][R];
  auto loadWeights = [&](std::int64_t k0w) {
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int r = 0; r < R; ++r) wv[u][r] = __ldcg(wr[r] + k0w + 32 * u);
  };
  if (k + 32 * (U - 1) < k1) loadWeights(k);  // the first step's weights before the wait
  if constexpr (PDL) pdlWait();              // x and y: after the previous kernel of the stream
  // The folded norm: the producer's rows of h (warp 0: one row a lane), or the consumer's
  // scale r; h is written by the producer, after the wait.
  const std::int64_t myRow = static_cast<std::int64_t>(blockIdx.x) * rowsPerBlock + lane;
  const bool rowLane = warp == 0 && lane < rowsPerBlock && myRow < rows;
  float hRow = 0.f;
  if constexpr (EXTRA == kFoldOut)
    if (rowLane) hRow = toFloat<T>(__ldcg(static_cast<const T*>(fold.h) + myRow));
  // kFoldIn: this block's chunks of x' (foldPrologue), then the producer's partials
  extern __shared__ uint4 xs[];
  float* const foldPartials = reinterpret_cast<float*>(xs + chunksPerSplit);
  if constexpr (EXTRA == kFoldIn) foldPrologue<T>(fold, k0, k1, xs, foldPartials);
  // One 16-byte chunk of x (batch row b): loaded, or (fold) the one formed in shared memory.
  const auto xChunk = [&](int b, std::int64_t kk) {
    if constexpr (EXTRA == kFoldIn) return xs[kk - k0];
    else return __ldca(x + b * cols8 + kk);
  };
  while (k + 32 * (U - 1) < k1) {
    uint4 xv[U][B];
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int b = 0; b < B; ++b) xv[u][b] = xChunk(b, k + 32 * u);
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int b = 0; b < B; ++b) acc[r][b] = dot8<T>(wv[u][r], xv[u][b], acc[r][b]);
    k += 32 * U;
    if (k + 32 * (U - 1) < k1) loadWeights(k);
  }
  if constexpr (PDL) pdlLaunchDependents();  // the next kernel may start during this one's tail
  for (; k < k1; k += 32) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const uint4 wv = __ldcg(wr[r] + k);
#pragma unroll
      for (int b = 0; b < B; ++b) acc[r][b] = dot8<T>(wv, xChunk(b, k), acc[r][b]);
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int b = 0; b < B; ++b) {
      float v = acc[r][b];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      if (lane == 0) red[b * 32 + warp * R + r] = v;
    }
  float rs = 1.f;  // kFoldIn: the norm's r, applied to the sums
  if constexpr (EXTRA == kFoldIn) rs = foldScale(fold, foldPartials);
  __syncthreads();
  bool wrote = false;
  if (warp == 0) {
    float tot[B];
#pragma unroll
    for (int b = 0; b < B; ++b) tot[b] = lane < rowsPerBlock ? red[b * 32 + lane] * rs : 0.f;
    const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * rowsPerBlock + lane;
    const std::int64_t slot = row;
    wrote = detail::finishRows<T, B>(tot, lane < rowsPerBlock, row, lane < rowsPerBlock && row < rows, y, ldy, ws,
                                     counters + blockIdx.x, slot, static_cast<std::int64_t>(gridDim.x) * rowsPerBlock);
  }
  if constexpr (EXTRA == kTail) detail::normTail<T>(tail, wrote, y, rows);
  if constexpr (EXTRA == kFoldOut) {
    // The writer of these rows: h += y (rounded as the norm kernel rounds), and the block's
    // sum of squares of the new h, one partial per row block.
    if (warp == 0 && wrote) {
      float hn = 0.f;
      if (rowLane) {
        hn = roundTo<T>(hRow + toFloat<T>(y[myRow]));
        static_cast<T*>(fold.h)[myRow] = fromFloat<T>(hn);
      }
      float sq = hn * hn;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, o);
      if (lane == 0) fold.partials[blockIdx.x] = sq;
    }
  }
}

// The kernel by (programmatic dependent launch, extra work; batch 1 only): the extras are
// compiled only into the kernels that run them, so the others keep their register count.
template <typename T, int B, int R, int U>
auto gemvKernel(bool pdl, int extra) {
  if constexpr (B == 1) {
    switch (extra) {
      case kTail: return pdl ? denseGemvKernel<T, B, R, U, true, kTail> : denseGemvKernel<T, B, R, U, false, kTail>;
      case kFoldOut:
        return pdl ? denseGemvKernel<T, B, R, U, true, kFoldOut> : denseGemvKernel<T, B, R, U, false, kFoldOut>;
      case kFoldIn:
        return pdl ? denseGemvKernel<T, B, R, U, true, kFoldIn> : denseGemvKernel<T, B, R, U, false, kFoldIn>;
      default: break;
    }
  }
  return pdl ? denseGemvKernel<T, B, R, U, true, kPlain> : denseGemvKernel<T, B, R, U, false, kPlain>;
}

template <typename T, int B, int R, int U>
cudaError_t launchTyped(const void* w, std::int64_t rows, std::int64_t cols, const void* x, void* y, std::int64_t ldy,
                        const GemvConfig& cfg, float* ws, unsigned* counters, cudaStream_t stream) {
  const std::int64_t cols8 = cols / 8;
  const std::int64_t steps = (cols8 + 31) / 32;  // 32-chunk warp steps
  const std::int64_t S = std::clamp<std::int64_t>(cfg.splitK, 1, steps);
  const std::int64_t chunksPerSplit = (steps + S - 1) / S * 32;
  const std::int64_t splits = (cols8 + chunksPerSplit - 1) / chunksPerSplit;
  const int rowsPerBlock = cfg.warps * R;
  dim3 grid(static_cast<unsigned>((rows + rowsPerBlock - 1) / rowsPerBlock), static_cast<unsigned>(splits));
  const bool pdl = cfg.pdl && detail::hopperLaunchSupported();
  const int extra = cfg.tail.on() ? kTail : cfg.fold.out ? kFoldOut : cfg.fold.in ? kFoldIn : kPlain;
  // kFoldIn: x's chunks of one split and the producer's partials in shared memory.
  const std::size_t smem =
      extra == kFoldIn ? static_cast<std::size_t>(chunksPerSplit) * 16 + static_cast<std::size_t>(cfg.fold.count) * 4
                       : 0;
  if (smem > 48 * 1024) return cudaErrorInvalidValue;
  return detail::launchEx(gemvKernel<T, B, R, U>(pdl, extra), grid, dim3(static_cast<unsigned>(cfg.warps * 32)), smem,
                          stream, 0, pdl, static_cast<const uint4*>(w), rows, cols8, chunksPerSplit,
                          static_cast<const uint4*>(x), static_cast<T*>(y), ldy, ws, counters, cfg.tail, cfg.fold);
}

template <typename T, int B>
cudaError_t byShape(const void* w, std::int64_t rows, std::int64_t cols, const void* x, void* y, std::int64_t ldy,
                    const GemvConfig& cfg, float* ws, unsigned* counters, cudaStream_t stream) {
#define SDW_GEMV_CASE(r, u)                   \
  if (cfg.rowsPerWarp == r && cfg.unroll == u) \
    return launchTyped<T, B, r, u>(w, rows, cols, x, y, ldy, cfg, ws, counters, stream);
  SDW_GEMV_CASE(1, 1) SDW_GEMV_CASE(1, 2) SDW_GEMV_CASE(2, 1) SDW_GEMV_CASE(2, 2)
  SDW_GEMV_CASE(4, 1) SDW_GEMV_CASE(4, 2)
  if constexpr (B == 1) {
    SDW_GEMV_CASE(1, 4) SDW_GEMV_CASE(2, 4) SDW_GEMV_CASE(4, 4)
  }
#undef SDW_GEMV_CASE
  return cudaErrorInvalidValue;
}

template <typename T>
cudaError_t byBatch(int batch, const void* w, std::int64_t rows, std::int64_t cols, const void* x, void* y,
                    std::int64_t ldy, const GemvConfig& cfg, float* ws, unsigned* counters, cudaStream_t stream) {
  switch (batch) {
#define SDW_GEMV_B(b) \
  case b: return byShape<T, b>(w, rows, cols, x, y, ldy, cfg, ws, counters, stream);
    SDW_GEMV_B(1) SDW_GEMV_B(2) SDW_GEMV_B(3) SDW_GEMV_B(4) SDW_GEMV_B(5) SDW_GEMV_B(6) SDW_GEMV_B(7) SDW_GEMV_B(8)
#undef SDW_GEMV_B
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

std::int64_t gemvCounters(std::int64_t rows, const GemvConfig& cfg) {
  const int rpb = cfg.warps * cfg.rowsPerWarp;
  return (rows + rpb - 1) / rpb;
}

std::size_t gemvWorkspaceFloats(std::int64_t rows, int batch, const GemvConfig& cfg) {
  return cfg.splitK <= 1 ? 0
                         : static_cast<std::size_t>(cfg.splitK) * gemvCounters(rows, cfg) * cfg.warps *
                               cfg.rowsPerWarp * batch;
}

cudaError_t launchDenseGemv(const void* w, DType dtype, std::int64_t rows, std::int64_t cols, const void* x, int batch,
                            void* y, std::int64_t ldy, const GemvConfig& cfg, float* workspace, unsigned* counters,
                            cudaStream_t stream) {
  if (rows <= 0 || cols <= 0 || cols % 8 || ldy < rows || batch < 1 || batch > 8) return cudaErrorInvalidValue;
  if (cfg.warps < 1 || cfg.warps > kMaxWarps || cfg.warps * cfg.rowsPerWarp > 32) return cudaErrorInvalidValue;
  if (cfg.splitK > 1 && (!workspace || !counters)) return cudaErrorInvalidValue;
  if (cfg.tail.on() && (batch != 1 || !cfg.tail.h || !cfg.tail.w || !cfg.tail.x)) return cudaErrorInvalidValue;
  const NormFold& f = cfg.fold;
  if (f.on() && (batch != 1 || cfg.tail.on() || (f.out && f.in) || !f.h || !f.partials)) return cudaErrorInvalidValue;
  if (f.in && (!f.w || f.count < 1 || f.n != cols || (reinterpret_cast<std::uintptr_t>(f.h) & 15) ||
               (reinterpret_cast<std::uintptr_t>(f.w) & 15)))
    return cudaErrorInvalidValue;
  switch (dtype) {
    case DType::BF16: return byBatch<__nv_bfloat16>(batch, w, rows, cols, x, y, ldy, cfg, workspace, counters, stream);
    case DType::F16: return byBatch<__half>(batch, w, rows, cols, x, y, ldy, cfg, workspace, counters, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace sdw::kernels
