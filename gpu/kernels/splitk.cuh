#pragma once
// Helpers shared by the SpMV and GEMV kernels: 16-bit conversions, the split-K
// epilogue, programmatic dependent launch. Included by gpu/kernels/*.cu only.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "gpu/kernels/normtail.cuh"

#include <atomic>
#include <cstdint>
#include <utility>

#include <cuda_runtime.h>

namespace sdw::kernels::detail {

// Programmatic dependent launch (sm_90; no-ops below, and when the grid was
// launched without the attribute). A kernel launched with it may start while
// the previous kernel of the stream is still running: it may read only what
// that kernel cannot write (the weights) before pdlWait(), which returns once
// the previous grid has completed and its writes are visible. Every read of x,
// every global write and every workspace / counter access comes after it.
// pdlLaunchDependents() lets the next such kernel start as soon as every block
// of this grid has issued it (our kernels: after their main loop).
__device__ __forceinline__ void pdlLaunchDependents() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void pdlWait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// Whether the current device is sm_90 or newer and can launch thread-block
// clusters (and so take programmatic dependent launches), cached per device.
inline bool hopperLaunchSupported() {
  constexpr int kDevices = 64;
  static std::atomic<int> cache[kDevices];  // 0 unknown, 1 no, 2 yes
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0) return false;
  if (dev < kDevices) {
    if (const int c = cache[dev].load(std::memory_order_relaxed)) return c == 2;
  }
  int cc = 0, cl = 0;
  const bool ok = cudaDeviceGetAttribute(&cc, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
                  cudaDeviceGetAttribute(&cl, cudaDevAttrClusterLaunch, dev) == cudaSuccess && cc >= 9 && cl != 0;
  if (dev < kDevices) cache[dev].store(ok ? 2 : 1, std::memory_order_relaxed);
  return ok;
}

// cudaLaunchKernelEx with an optional thread-block cluster of shape `cluster` (cluster.x 0:
// none) and the programmatic-dependent-launch attribute when `pdl` (callers pass it only
// where hopperLaunchSupported()).
template <typename... KArgs, typename... Args>
cudaError_t launchEx(void (*kernel)(KArgs...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
                     dim3 cluster, bool pdl, Args&&... args) {
  cudaLaunchConfig_t lc = {};
  lc.gridDim = grid;
  lc.blockDim = block;
  lc.dynamicSmemBytes = smem;
  lc.stream = stream;
  cudaLaunchAttribute attr[2];
  unsigned n = 0;
  if (cluster.x > 0) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = cluster.x;
    attr[n].val.clusterDim.y = cluster.y;
    attr[n].val.clusterDim.z = cluster.z;
    ++n;
  }
  if (pdl) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  lc.attrs = attr;
  lc.numAttrs = n;
  return cudaLaunchKernelEx(&lc, kernel, std::forward<Args>(args)...);
}
// The same with a cluster of `clusterY` blocks along y (0: none).
template <typename... KArgs, typename... Args>
cudaError_t launchEx(void (*kernel)(KArgs...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
                     unsigned clusterY, bool pdl, Args&&... args) {
  return launchEx(kernel, grid, block, smem, stream, clusterY > 0 ? dim3(1, clusterY, 1) : dim3(0, 0, 0), pdl,
                  std::forward<Args>(args)...);
}

template <typename T>
__device__ __forceinline__ float lo16(std::uint32_t w);
template <typename T>
__device__ __forceinline__ float hi16(std::uint32_t w);
template <>
__device__ __forceinline__ float lo16<__nv_bfloat16>(std::uint32_t w) { return __uint_as_float(w << 16); }
template <>
__device__ __forceinline__ float hi16<__nv_bfloat16>(std::uint32_t w) { return __uint_as_float(w & 0xffff0000u); }
template <>
__device__ __forceinline__ float lo16<__half>(std::uint32_t w) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(w & 0xffffu)));
}
template <>
__device__ __forceinline__ float hi16<__half>(std::uint32_t w) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(w >> 16)));
}

template <typename T>
__device__ __forceinline__ T fromFloat(float v);
template <>
__device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <>
__device__ __forceinline__ __half fromFloat<__half>(float v) { return __float2half_rn(v); }

// Called by warp 0 of a block, every lane, after the block's sums for its rows
// are in `tot` (lane = row slot within the block). Without split-K the sums are
// written out. With split-K each block stores its partials; the last block of a
// row block to arrive (counter ticket) adds them in split order, which keeps the
// result deterministic, writes y and resets the counter for the next launch.
// Returns whether this block wrote its rows of y (every block without split-K; with it,
// the last of the row block's splits), uniform across the warp.
template <typename T, int B>
__device__ __forceinline__ bool finishRows(const float (&tot)[B], bool inBlock, std::int64_t row, bool valid,
                                           T* __restrict__ y, std::int64_t ldy, float* __restrict__ ws,
                                           unsigned* __restrict__ counter, std::int64_t slot, std::int64_t nSlots) {
  const unsigned S = gridDim.y;
  if (S == 1) {
    if (valid) {
#pragma unroll
      for (int b = 0; b < B; ++b) y[b * ldy + row] = fromFloat<T>(tot[b]);
    }
    return true;
  }
  if (inBlock) {
#pragma unroll
    for (int b = 0; b < B; ++b) ws[(static_cast<std::int64_t>(blockIdx.y) * nSlots + slot) * B + b] = tot[b];
  }
  __threadfence();
  __syncwarp();
  unsigned ticket = 0;
  if ((threadIdx.x & 31) == 0) ticket = atomicAdd(counter, 1u);
  ticket = __shfl_sync(0xffffffffu, ticket, 0);
  if (ticket != S - 1) return false;
  __threadfence();
  if (inBlock) {
    float s[B];
#pragma unroll
    for (int b = 0; b < B; ++b) s[b] = 0.f;
    for (unsigned k = 0; k < S; ++k) {
#pragma unroll
      for (int b = 0; b < B; ++b) s[b] += __ldcg(ws + (static_cast<std::int64_t>(k) * nSlots + slot) * B + b);
    }
    if (valid) {
#pragma unroll
      for (int b = 0; b < B; ++b) y[b * ldy + row] = fromFloat<T>(s[b]);
    }
  }
  if ((threadIdx.x & 31) == 0) *counter = 0;
  return true;
}

template <typename T>
__device__ __forceinline__ float toFloat(T v);
template <>
__device__ __forceinline__ float toFloat<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <>
__device__ __forceinline__ float toFloat<__half>(__half v) { return __half2float(v); }
template <typename T>
__device__ __forceinline__ float roundTo(float v) { return toFloat<T>(fromFloat<T>(v)); }

// The NormTail of a batch-1 projection (normtail.cuh), called by every thread of every
// block once its rows are finished; `wrote`: this block stored its rows of y (warp 0's
// value counts). The grid has gridDim.x writers, one per row block: each fences its stores
// and takes a ticket, and the last one's block adds y (all n rows, read through L2) into
// h and writes x = rmsnorm(h) * w. The result is bitwise that of decode.cu's
// addRmsNormKernel: sums rounded to T, x = T(w * T(h * r)), and the sum of squares in
// that kernel's order: its NT0 threads (launchAddRmsNorm's count) each add rows
// t, t + NT0, ... in turn, warps by the same butterfly, then warp sums 0, 1, ... in turn;
// here each thread plays the threads t = threadIdx.x + j * blockDim.x (lane for lane the
// same warps, as blockDim.x is a multiple of 32). The counter is reset for the next launch.
template <typename T>
__device__ __forceinline__ void normTail(const NormTail& t, bool wrote, const T* y, std::int64_t n) {
  __shared__ unsigned last;
  __shared__ float part[32];
  if (threadIdx.x < 32) {
    if (wrote) __threadfence();
    __syncwarp();
    if (threadIdx.x == 0) last = wrote && atomicAdd(t.counter, 1u) == gridDim.x - 1 ? 1u : 0u;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  T* h = static_cast<T*>(t.h);
  const T* w = static_cast<const T*>(t.w);
  T* x = static_cast<T*>(t.x);
  const int nt = static_cast<int>(blockDim.x);
  int nt0 = 32;  // launchAddRmsNorm's threads: min(1024, the power of two >= ceil(n / 4)), >= 32
  while (nt0 < 1024 && nt0 < (n + 3) / 4) nt0 *= 2;
  for (int v = threadIdx.x; v < nt0; v += nt) {  // warp-uniform bounds (nt0, nt multiples of 32)
    float ss = 0.f;
    for (std::int64_t i = v; i < n; i += nt0) {
      const float s = roundTo<T>(toFloat<T>(h[i]) + toFloat<T>(__ldcg(y + i)));
      h[i] = fromFloat<T>(s);
      ss += s * s;
    }
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if ((v & 31) == 0) part[v >> 5] = ss;
  }
  __syncthreads();
  float tot = 0.f;
  for (int i = 0; i < nt0 / 32; ++i) tot += part[i];
  const float r = rsqrtf(tot / static_cast<float>(n) + t.eps);
  for (int v = threadIdx.x; v < nt0; v += nt)  // each thread reads back the rows it wrote
    for (std::int64_t i = v; i < n; i += nt0) x[i] = fromFloat<T>(toFloat<T>(w[i]) * roundTo<T>(toFloat<T>(h[i]) * r));
  if (threadIdx.x == 0) *t.counter = 0;
}

}  // namespace sdw::kernels::detail
