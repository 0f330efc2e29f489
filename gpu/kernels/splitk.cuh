#pragma once
// Helpers shared by the SpMV and GEMV kernels: 16-bit conversions, the split-K
// epilogue, programmatic dependent launch. Included by gpu/kernels/*.cu only.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

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
template <typename T, int B>
__device__ __forceinline__ void finishRows(const float (&tot)[B], bool inBlock, std::int64_t row, bool valid,
                                           T* __restrict__ y, std::int64_t ldy, float* __restrict__ ws,
                                           unsigned* __restrict__ counter, std::int64_t slot, std::int64_t nSlots) {
  const unsigned S = gridDim.y;
  if (S == 1) {
    if (valid) {
#pragma unroll
      for (int b = 0; b < B; ++b) y[b * ldy + row] = fromFloat<T>(tot[b]);
    }
    return;
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
  if (ticket != S - 1) return;
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
}

}  // namespace sdw::kernels::detail
