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

// 16-byte asynchronous copies global -> shared (sm_80), L2 only; shared addresses as 32-bit.
__device__ __forceinline__ std::uint32_t smemAddr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cpAsync16(std::uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Bulk asynchronous copies (sm_90): global -> shared through the copy engine, completion
// counted in bytes on an mbarrier in shared memory (arrival count 1: one arrival, which
// also expects the phase's bytes). Shared addresses as 32-bit (__cvta_generic_to_shared).
// Below sm_90 they compile to nothing (a wait traps): callers launch them on sm_90 only.
__device__ __forceinline__ void mbarInit(std::uint32_t bar) {
#if __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar) : "memory");
#else
  (void)bar;
#endif
}
__device__ __forceinline__ void mbarInitFence() {
#if __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void mbarArriveExpect(std::uint32_t bar, unsigned bytes) {
#if __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
#else
  (void)bar, (void)bytes;
#endif
}
__device__ __forceinline__ void mbarWait(std::uint32_t bar, unsigned parity) {
#if __CUDA_ARCH__ >= 900
  unsigned done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
#else
  (void)bar, (void)parity;
  __trap();
#endif
}
// Orders this thread's earlier generic-proxy accesses of shared memory before later
// bulk copies into it.
__device__ __forceinline__ void proxyFence() {
#if __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void bulkCopy(std::uint32_t dst, const void* src, unsigned bytes, std::uint32_t bar) {
#if __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
#else
  (void)dst, (void)src, (void)bytes, (void)bar;
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

// SMs of the current device (132 where it cannot be asked).
inline int smCount() {
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
    return 132;
  return sms > 0 ? sms : 1;
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
__device__ __forceinline__ float fromFloat<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
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
__device__ __forceinline__ float toFloat<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ float toFloat<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <>
__device__ __forceinline__ float toFloat<__half>(__half v) {
  return __half2float(v);
}
// Rounds through T (what a T-typed elementwise op does to its float result).
template <typename T>
__device__ __forceinline__ float roundTo(float v) {
  return toFloat<T>(fromFloat<T>(v));
}

// ---- RMSNorm in a fixed order: decode.cu's addRmsNormKernel (16-bit) and normTail ----
// The rows in chunks of 8 (the last one may be shorter) and NV = rmsNormLanes(n) lanes, a
// function of n only: lane L adds, chunk after chunk (c = L, L + NV, ...), the squares of
// its chunks' values in row order (fmaf); each warp of lanes reduces by butterfly, then the
// warp sums are added in warp order. A kernel of any block size plays the lanes, so both
// kernels give the same bits.
__host__ __device__ inline int rmsNormLanes(std::int64_t n) {
  const std::int64_t chunks = (n + 7) / 8;
  int nv = 32;
  while (nv < 1024 && nv < chunks) nv *= 2;
  return nv;
}

template <typename T>
__device__ __forceinline__ unsigned short bits16(T v);
template <>
__device__ __forceinline__ unsigned short bits16<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat16_as_ushort(v);
}
template <>
__device__ __forceinline__ unsigned short bits16<__half>(__half v) {
  return __half_as_ushort(v);
}

template <typename T>
__device__ __forceinline__ float get8(const uint4& u, int e) {
  const std::uint32_t w = e < 2 ? u.x : e < 4 ? u.y : e < 6 ? u.z : u.w;
  return (e & 1) ? hi16<T>(w) : lo16<T>(w);
}
template <typename T>
__device__ __forceinline__ void set8(uint4& u, int e, float v) {
  std::uint32_t& w = e < 2 ? u.x : e < 4 ? u.y : e < 6 ? u.z : u.w;
  const std::uint32_t b = bits16<T>(fromFloat<T>(v));
  w = (e & 1) ? ((w & 0x0000ffffu) | (b << 16)) : ((w & 0xffff0000u) | b);
}
// Rows i0 .. i0 + 7 of p (those below n; the rest 0): one 16-byte load where aligned and
// whole; `cg`: through L2 (written by other blocks of the same grid).
template <typename T>
__device__ __forceinline__ uint4 load8(const T* p, std::int64_t i0, std::int64_t n, bool cg) {
  const T* q = p + i0;
  if (i0 + 8 <= n && (reinterpret_cast<std::uintptr_t>(q) & 15) == 0)
    return cg ? __ldcg(reinterpret_cast<const uint4*>(q)) : *reinterpret_cast<const uint4*>(q);
  uint4 u = {0u, 0u, 0u, 0u};
  const auto* s = reinterpret_cast<const unsigned short*>(q);
  for (int e = 0; e < 8 && i0 + e < n; ++e) {
    const std::uint32_t b = cg ? __ldcg(s + e) : s[e];
    std::uint32_t& w = e < 2 ? u.x : e < 4 ? u.y : e < 6 ? u.z : u.w;
    w |= (e & 1) ? b << 16 : b;
  }
  return u;
}
template <typename T>
__device__ __forceinline__ void store8(T* p, std::int64_t i0, std::int64_t n, const uint4& u) {
  T* q = p + i0;
  if (i0 + 8 <= n && (reinterpret_cast<std::uintptr_t>(q) & 15) == 0) {
    *reinterpret_cast<uint4*>(q) = u;
    return;
  }
  auto* s = reinterpret_cast<unsigned short*>(q);
  for (int e = 0; e < 8 && i0 + e < n; ++e) {
    const std::uint32_t w = e < 2 ? u.x : e < 4 ? u.y : e < 6 ? u.z : u.w;
    s[e] = static_cast<unsigned short>((e & 1) ? w >> 16 : w & 0xffffu);
  }
}
// A chunk of the residual: h + y rounded to T (h alone without y), its squares added to ss.
template <typename T>
__device__ __forceinline__ uint4 addChunk(const uint4& h, const uint4* y, int m, float& ss) {
  uint4 out = h;
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    if (e >= m) break;
    float v = get8<T>(h, e);
    if (y) {
      v = roundTo<T>(v + get8<T>(*y, e));
      set8<T>(out, e, v);
    }
    ss = fmaf(v, v, ss);
  }
  return out;
}
// x = T(w * T(h * r)) for a chunk.
template <typename T>
__device__ __forceinline__ uint4 normChunk(const uint4& h, const uint4& w, int m, float r) {
  uint4 out = {0u, 0u, 0u, 0u};
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    if (e >= m) break;
    set8<T>(out, e, get8<T>(w, e) * roundTo<T>(get8<T>(h, e) * r));
  }
  return out;
}

// The NormTail of a batch-1 projection (normtail.cuh), called by every thread of every
// block once its rows are finished; `wrote`: this block stored its rows of y (warp 0's
// value counts). The grid has gridDim.x writers, one per row block: each fences its stores
// and takes a ticket, and the last one's block adds y (all n rows, read through L2) into
// h and writes x = rmsnorm(h) * w in the fixed order above (bitwise launchAddRmsNorm's
// result), kGroup chunks a thread at a time with every load of a group issued before the
// first use (rows one at a time, each load waiting on the previous store, made the first
// version 17 us a tail); then it resets the counter for the next launch. Not inlined, int
// indices and two chunks a group: the projection keeps its register count (its occupancy).
template <typename T>
__device__ __noinline__ void normTail(const NormTail t, bool wrote, const T* y, std::int64_t n) {
  __shared__ unsigned last;
  __shared__ float part[32];
  if (threadIdx.x < 32) {
    part[threadIdx.x] = 0.f;  // the sums of warps of lanes without a chunk
    if (wrote) __threadfence();
    __syncwarp();
    if (threadIdx.x == 0) last = wrote && atomicAdd(t.counter, 1u) == gridDim.x - 1 ? 1u : 0u;
  }
  __syncthreads();
  if (!last) return;
  if (!t.normalize) {
    if (threadIdx.x == 0) *t.counter = 0;
    return;
  }
  __threadfence();
  T* h = static_cast<T*>(t.h);
  const T* w = static_cast<const T*>(t.w);
  T* x = static_cast<T*>(t.x);
  const int nt = static_cast<int>(blockDim.x), tid = static_cast<int>(threadIdx.x);
  const int nv = rmsNormLanes(n);
  const std::int64_t C = (n + 7) / 8;
  const int K = static_cast<int>((C + nv - 1) / nv);  // chunks per lane, at most
  // The lanes this thread plays that have a chunk: tid + j nt for j < J (warp-uniform: whole
  // warps of lanes below min(nv, C); the others' sums stay 0).
  const int firstOfWarp = tid & ~31, withChunks = static_cast<int>(C < nv ? C : nv);
  const int J = firstOfWarp < withChunks ? (withChunks - firstOfWarp + nt - 1) / nt : 0;
  const int E = J * K;  // entry e: lane tid + (e / K) nt, its (e % K)-th chunk
  const auto chunkOf = [&](int e) { return tid + (e / K) * nt + (e % K) * nv; };  // hidden sizes: far below 2^31
  constexpr int kGroup = 2;
  float ss = 0.f;
  for (int e0 = 0; e0 < E; e0 += kGroup) {
    uint4 hv[kGroup], yv[kGroup];
#pragma unroll
    for (int u = 0; u < kGroup; ++u) {
      const int c = chunkOf(e0 + u);
      if (e0 + u < E && c < C) hv[u] = load8(h, 8 * c, n, false), yv[u] = load8(y, 8 * c, n, true);
    }
#pragma unroll
    for (int u = 0; u < kGroup; ++u) {
      const int e = e0 + u;
      if (e >= E) break;
      const int c = chunkOf(e);
      if (c < C) {
        const int m = static_cast<int>(n - 8 * c < 8 ? n - 8 * c : 8);
        store8(h, 8 * c, n, addChunk<T>(hv[u], &yv[u], m, ss));
      }
      if (e % K == K - 1) {  // the lane's last chunk: its warp's butterfly
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
        const int lane = tid + (e / K) * nt;
        if ((lane & 31) == 0) part[lane >> 5] = ss;
        ss = 0.f;
      }
    }
  }
  __syncthreads();
  float tot = 0.f;
  for (int i = 0; i < nv / 32; ++i) tot += part[i];
  const float r = rsqrtf(tot / static_cast<float>(n) + t.eps);
  for (int e0 = 0; e0 < E; e0 += kGroup) {  // each thread reads back the chunks it wrote
    uint4 hv[kGroup], wv[kGroup];
#pragma unroll
    for (int u = 0; u < kGroup; ++u) {
      const int c = chunkOf(e0 + u);
      if (e0 + u < E && c < C) hv[u] = load8(h, 8 * c, n, false), wv[u] = load8(w, 8 * c, n, false);
    }
#pragma unroll
    for (int u = 0; u < kGroup; ++u) {
      const int c = chunkOf(e0 + u);
      if (e0 + u < E && c < C) {
        const int m = static_cast<int>(n - 8 * c < 8 ? n - 8 * c : 8);
        store8(x, 8 * c, n, normChunk<T>(hv[u], wv[u], m, r));
      }
    }
  }
  if (threadIdx.x == 0) *t.counter = 0;
}

}  // namespace sdw::kernels::detail
