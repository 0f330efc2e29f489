#pragma once
// The decode engine's attention kernel (launchDecodeAttention, gpu/kernels/decode.cuh): q/k
// norm, RoPE, the KV-cache write, split-slot grouped-query attention and the merge of its
// splits. Internal to gpu/kernels: its 120 instantiations (3 types x head sizes x query groups
// x value-row variants) are compiled in one translation unit per type
// (decode_attention_{f32,bf16,f16}.cu), so that nvcc builds them side by side;
// decode_attention.cu holds launchDecodeAttention and the split arithmetic.

#include "gpu/kernels/decode_common.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace sdw::kernels {
namespace detail {
// AttnL<T>::run of one type each (decode_attention_{f32,bf16,f16}.cu).
cudaError_t launchAttentionF32(const AttentionArgs& a, float* ws, cudaStream_t st, bool pdl);
cudaError_t launchAttentionBF16(const AttentionArgs& a, float* ws, cudaStream_t st, bool pdl);
cudaError_t launchAttentionF16(const AttentionArgs& a, float* ws, cudaStream_t st, bool pdl);
}  // namespace detail

namespace {

// ---- attention with q/k norm, RoPE and the KV-cache write fused in
constexpr int kAttnWarps = 4;
constexpr int kSlotsPerBlock = kAttnWarps * 32;

// 8 consecutive elements as floats.
template <typename T>
__device__ __forceinline__ void load8(const T* p, float (&o)[8]);
template <>
__device__ __forceinline__ void load8<float>(const float* p, float (&o)[8]) {
  const float4 a = *reinterpret_cast<const float4*>(p), b = *reinterpret_cast<const float4*>(p + 4);
  o[0] = a.x, o[1] = a.y, o[2] = a.z, o[3] = a.w, o[4] = b.x, o[5] = b.y, o[6] = b.z, o[7] = b.w;
}
template <typename T>
__device__ __forceinline__ void load8(const T* p, float (&o)[8]) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  const T* e = reinterpret_cast<const T*>(&u);
#pragma unroll
  for (int j = 0; j < 8; ++j) o[j] = toFloat<T>(e[j]);
}

// 8 consecutive elements copied as they are (16-byte aligned).
template <typename T>
__device__ __forceinline__ void copy8(T* dst, const T* src) {
  constexpr int n = static_cast<int>(sizeof(T)) / 2;  // 16-byte words in 8 elements
#pragma unroll
  for (int i = 0; i < n; ++i) reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
}

// One head vector x[0..D) in shared memory, raw from the projection: per-head RMSNorm
// (where `norm` is given; gemma: Gemma 3's x * r * (1 + w) in fp32, one rounding) and
// RoPE at `pos`, rounded where the eager pass rounds. Called by one warp.
template <typename T>
__device__ void normRopeWarp(float* x, int D, const T* norm, bool gemma, float eps, const T* cs, const T* sn) {
  const int lane = threadIdx.x & 31, half = D / 2;
  if (norm) {
    float ss = 0.f;
    for (int d = lane; d < D; d += 32) ss += x[d] * x[d];
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    const float r = rsqrtf(ss / static_cast<float>(D) + eps);
    if (gemma)
      for (int d = lane; d < D; d += 32) x[d] = roundTo<T>(x[d] * r * (toFloat<T>(norm[d]) + 1.f));
    else
      for (int d = lane; d < D; d += 32) x[d] = roundTo<T>(toFloat<T>(norm[d]) * roundTo<T>(x[d] * r));
    __syncwarp();
  }
  for (int i = lane; i < half; i += 32) {
    const float x0 = x[i], x1 = x[i + half];
    x[i] = roundTo<T>(roundTo<T>(x0 * toFloat<T>(cs[i])) + roundTo<T>(-x1 * toFloat<T>(sn[i])));
    x[i + half] = roundTo<T>(roundTo<T>(x1 * toFloat<T>(cs[i + half])) + roundTo<T>(x0 * toFloat<T>(sn[i + half])));
  }
  __syncwarp();
}

// Block (split, kv head, row). Before waiting for the q|k|v projection (programmatic
// dependent launch) the block already requests what does not depend on it: the rotary
// rows at the row's position and, with cp.async, the key and value rows of its slots
// already in the cache (each lane its slot's rows, into its warp's rows in shared
// memory), so the cache's bytes stream while the projection finishes. Then: the rep
// query heads of this KV head from the projection output, normed and rotated (every
// split does this, a few hundred values); the block whose split holds `slot` also
// rotates the new key, writes key and value to the caches and into the rows of the
// lane that scores the new slot. Each lane scores one slot against the rep query
// heads, each warp reduces its 32 slots (max, exp-sum, P V with lanes over the head
// dims), the block merges its warps and writes one partial per query head; the last
// block of this (row, KV head) to finish (a ticket) merges the splits, every load of
// that merge in flight at once. PV: the value rows have their own shared memory
// (prefetched with the keys); without it (fp32 with wide heads) they reuse the key
// rows after scoring. LPS lanes share a slot (1, 2 or 4; PV only): each scores it over
// its D / LPS dims and the partial dots are added by shuffles, so a block has LPS times
// the warps, each over 32 / LPS slots.
template <typename T, int EPL, int MAXREP, bool PV, int LPS>
__global__ void __launch_bounds__(kAttnWarps * 32 * LPS) attentionKernel(AttentionArgs a, float* __restrict__ ws) {
  static_assert(LPS == 1 || (PV && (LPS == 2 || LPS == 4)), "several lanes per slot need the value rows prefetched");
  constexpr int W = kAttnWarps * LPS;  // warps
  constexpr int kThreads = W * 32;
  constexpr int SPW = 32 / LPS;  // slots per warp
  const int split = blockIdx.x, g = blockIdx.y, b = blockIdx.z;
  const int D = a.headDim, rep = a.heads / a.kvHeads, S = gridDim.x;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int dimPart = lane % LPS;  // which D / LPS dims of its slot the lane scores
  constexpr int kPerThread = (MAXREP * 32 * EPL + kThreads - 1) / kThreads;  // rep * D / threads, at most
  extern __shared__ __align__(16) float smem[];
  float* wm = smem;                                   // [warps][MAXREP] max
  float* wl = wm + W * MAXREP;                        // [warps][MAXREP] sum
  float* qs = wl + W * MAXREP;                        // [rep][D]
  float* ks = qs + rep * D;                           // [D] the new key
  float* vn = ks + D;                                 // [D] the new value
  float* wacc = vn + D;                               // [warps][rep][D]
  T* csm = reinterpret_cast<T*>(wacc + W * rep * D);  // [D] cos at the row's position
  T* snm = csm + D;                                   // [D] sin
  // [warps][SPW slots][D + 8] the warps' key rows, then (PV) their value rows (padded: the
  // lanes' row writes spread over the banks).
  const int Dp = D + 8;
  T* rows = snm + D;
  T* ksm = rows + static_cast<std::int64_t>(warp) * SPW * Dp;
  T* vsm = PV ? rows + static_cast<std::int64_t>(kSlotsPerBlock + warp * SPW) * Dp : ksm;

  // ---- before the wait: nothing here is written by the previous kernel (the slot and the
  // padding are set before the step, the cache rows below `slot` by earlier steps).
  const int slot = *a.slot, pad = a.pad[b];
  const int pos = slot - pad;
  const int first = a.window > 0 ? max(pad, slot - a.window + 1) : pad;  // the first slot attended to
  {
    const T* cs = static_cast<const T*>(a.cos) + static_cast<std::int64_t>(pos) * D;
    const T* sn = static_cast<const T*>(a.sin) + static_cast<std::int64_t>(pos) * D;
    for (int i = threadIdx.x; i < D; i += blockDim.x) {
      csm[i] = cs[i];
      snm[i] = sn[i];
    }
  }
  const std::int64_t qDim = static_cast<std::int64_t>(a.heads) * D, kvDim = static_cast<std::int64_t>(a.kvHeads) * D;
  const std::int64_t base = (static_cast<std::int64_t>(b) * a.kvHeads + g) * a.capacity * D;
  T* Kc = static_cast<T*>(a.kCache) + base;
  T* Vc = static_cast<T*>(a.vCache) + base;
  const int s0 = split * kSlotsPerBlock + warp * SPW;
  const int s = s0 + lane / LPS;
  const bool valid = s >= first && s <= slot;
  constexpr int kChunks = 32 * EPL * static_cast<int>(sizeof(T)) / 16;  // 16-byte pieces of the widest row
  const int rowChunks = D * static_cast<int>(sizeof(T)) / 16;
  if (valid && s < slot) {
    const std::uint32_t kd = static_cast<std::uint32_t>(__cvta_generic_to_shared(ksm + (lane / LPS) * Dp));
    const std::uint32_t vd = static_cast<std::uint32_t>(__cvta_generic_to_shared(vsm + (lane / LPS) * Dp));
    const uint4* kr = reinterpret_cast<const uint4*>(Kc + static_cast<std::int64_t>(s) * D);
    const uint4* vr = reinterpret_cast<const uint4*>(Vc + static_cast<std::int64_t>(s) * D);
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      if (c >= rowChunks) break;
      if (LPS > 1 && c % LPS != dimPart) continue;  // the slot's other lanes copy those pieces
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(kd + 16 * c), "l"(kr + c) : "memory");
      if constexpr (PV)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(vd + 16 * c), "l"(vr + c) : "memory");
    }
  }
  asm volatile("cp.async.commit_group;\n" ::: "memory");
  prologue();  // the projection's output is complete from here on; the next kernel may start
  if (a.merge == AttentionMerge::Empty) {  // profiling aid: the launch, the copies and the waits alone
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
    return;
  }

  const T* qkv = static_cast<const T*>(a.qkv) + b * a.ldqkv;
  const bool ownsSlot = split == slot / kSlotsPerBlock;
  const T* bias = static_cast<const T*>(a.qkvBias);
  // The projection output plus its bias, rounded as the projection's output.
  const auto in = [&](std::int64_t j) {
    return bias ? roundTo<T>(toFloat<T>(qkv[j]) + toFloat<T>(bias[j])) : toFloat<T>(qkv[j]);
  };
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int i = threadIdx.x + k * kThreads;
    if (i < rep * D) qs[i] = in(static_cast<std::int64_t>(g) * rep * D + i);
  }
  if (ownsSlot)
    for (int i = threadIdx.x; i < D; i += blockDim.x) {
      ks[i] = in(qDim + static_cast<std::int64_t>(g) * D + i);
      vn[i] = in(qDim + kvDim + static_cast<std::int64_t>(g) * D + i);
    }
  __syncthreads();
  for (int r = warp; r < rep; r += W)
    normRopeWarp<T>(qs + r * D, D, static_cast<const T*>(a.qNorm), a.gemmaNorm, a.eps, csm, snm);
  if (ownsSlot && warp == W - 1) {
    normRopeWarp<T>(ks, D, static_cast<const T*>(a.kNorm), a.gemmaNorm, a.eps, csm, snm);
    // The new key and value: to the caches, and to the rows of the lane scoring `slot`.
    const int ls = slot - split * kSlotsPerBlock;  // its warp ls / SPW, its lanes from (ls % SPW) * LPS
    T* kRow = rows + static_cast<std::int64_t>(ls) * Dp;
    T* vRow = PV ? rows + static_cast<std::int64_t>(kSlotsPerBlock + ls) * Dp : nullptr;
    for (int d = lane; d < D; d += 32) {
      const T kv = fromFloat<T>(ks[d]), vv = fromFloat<T>(vn[d]);
      Kc[static_cast<std::int64_t>(slot) * D + d] = kv;
      Vc[static_cast<std::int64_t>(slot) * D + d] = vv;
      kRow[d] = kv;
      if constexpr (PV) vRow[d] = vv;
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < rep * D; i += blockDim.x) qs[i] *= a.scale;
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  __syncthreads();  // the query heads scaled, every row in shared memory

  float score[MAXREP];
#pragma unroll
  for (int r = 0; r < MAXREP; ++r) score[r] = 0.f;
  if (valid) {
    const T* kr = ksm + (lane / LPS) * Dp;
    const int dEnd = (dimPart + 1) * (D / LPS);
    for (int d = dimPart * (D / LPS); d < dEnd; d += 8) {
      float kv[8];
      load8<T>(kr + d, kv);
#pragma unroll
      for (int r = 0; r < MAXREP; ++r) {
        if (r < rep) {
          float acc = score[r];
#pragma unroll
          for (int j = 0; j < 8; ++j) acc = fmaf(qs[r * D + d + j], kv[j], acc);
          score[r] = acc;
        }
      }
    }
  }
  if constexpr (LPS > 1) {  // the slot's partial dots, added across its lanes
#pragma unroll
    for (int r = 0; r < MAXREP; ++r)
#pragma unroll
      for (int o = LPS / 2; o > 0; o >>= 1) score[r] += __shfl_xor_sync(0xffffffffu, score[r], o);
  }
  float m[MAXREP], l[MAXREP], acc[MAXREP][EPL];
#pragma unroll
  for (int r = 0; r < MAXREP; ++r) {
    float sc = valid ? score[r] : -INFINITY;
    float mx = sc;
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    const float p = valid ? __expf(sc - mx) : 0.f;
    float sum = dimPart == 0 ? p : 0.f;  // each slot once
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    m[r] = mx;
    l[r] = sum;
    score[r] = p;  // now the lane's probability (unnormalised)
#pragma unroll
    for (int e = 0; e < EPL; ++e) acc[r][e] = 0.f;
  }
  if constexpr (!PV) {
    __syncwarp();  // the key rows are reused for the values
    if (valid) {   // each lane brings its slot's value row (the new one is in the cache now)
      const T* vr = Vc + static_cast<std::int64_t>(s) * D;
#pragma unroll
      for (int d = 0; d < 32 * EPL; d += 8) {
        if (d >= D) break;
        copy8<T>(vsm + lane * Dp + d, vr + d);
      }
    }
    __syncwarp();
  }
  const int lo = max(s0, first), hi = min(s0 + SPW - 1, slot);
  for (int j = lo; j <= hi; ++j) {
    const T* vr = vsm + (j - s0) * Dp;
    float vv[EPL];
#pragma unroll
    for (int e = 0; e < EPL; ++e) {
      const int d = lane + 32 * e;
      vv[e] = d < D ? toFloat<T>(vr[d]) : 0.f;
    }
#pragma unroll
    for (int r = 0; r < MAXREP; ++r) {
      const float p = __shfl_sync(0xffffffffu, score[r], (j - s0) * LPS);
#pragma unroll
      for (int e = 0; e < EPL; ++e) acc[r][e] = fmaf(p, vv[e], acc[r][e]);
    }
  }
  // Warp partials to shared memory, then the block's partial per query head.
#pragma unroll
  for (int r = 0; r < MAXREP; ++r) {
    if (r >= rep) continue;
    if (lane == 0) {
      wm[warp * MAXREP + r] = m[r];
      wl[warp * MAXREP + r] = l[r];
    }
#pragma unroll
    for (int e = 0; e < EPL; ++e) {
      const int d = lane + 32 * e;
      if (d < D) wacc[(warp * rep + r) * D + d] = acc[r][e];
    }
  }
  __syncthreads();
  // The block's partial (maximum, sum, output) of query head r, dim d, from its warps'.
  float bM[kPerThread], bL[kPerThread], bA[kPerThread];
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int i = threadIdx.x + k * kThreads;
    bM[k] = -INFINITY;
    bL[k] = 0.f;
    bA[k] = 0.f;
    if (i >= rep * D) continue;
    const int r = i / D, d = i % D;
    for (int w = 0; w < W; ++w) bM[k] = fmaxf(bM[k], wm[w * MAXREP + r]);
    if (bM[k] != -INFINITY) {
      for (int w = 0; w < W; ++w) {
        const float f = __expf(wm[w * MAXREP + r] - bM[k]);  // exp(-inf) = 0 for empty warps
        bL[k] += f * wl[w * MAXREP + r];
        bA[k] += f * wacc[(w * rep + r) * D + d];
      }
    }
  }
  T* out = static_cast<T*>(a.out);
  const bool viaCluster = a.merge == AttentionMerge::Cluster;
  // The block partials, [rep][D + 2] each (max, sum, D outputs): in the workspace, or
  // (cluster) in this block's shared memory, over its warps' rows (read above).
  float* part = viaCluster ? wacc : nullptr;
  const auto partial = [&](int h, int sp) {
    return ws + ((static_cast<std::int64_t>(b) * a.heads + h) * S + sp) * (D + 2);
  };
  if (viaCluster) __syncthreads();  // every warp row read before the partials replace them
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int i = threadIdx.x + k * kThreads;
    if (i >= rep * D) continue;
    const int r = i / D, d = i % D;
    float* p = viaCluster ? part + r * (D + 2) : partial(g * rep + r, split);
    if (d == 0) {
      p[0] = bM[k];
      p[1] = bL[k];
    }
    p[2 + d] = bA[k];
  }
  // One pass over the splits' partials with a running maximum: the same floats whichever
  // memory they come from (the two merges agree bitwise). No contraction into FMAs, so
  // both code paths round alike.
  const auto fold = [](float& M, float& L, float& A, float mq, float lq, float aq) {
    if (mq == -INFINITY) return;
    const float mn = fmaxf(M, mq);
    const float f0 = __expf(M - mn), f1 = __expf(mq - mn);  // exp(-inf) = 0 before the first
    L = __fadd_rn(__fmul_rn(L, f0), __fmul_rn(lq, f1));
    A = __fadd_rn(__fmul_rn(A, f0), __fmul_rn(aq, f1));
    M = mn;
  };
  if (viaCluster) {
#if __CUDA_ARCH__ >= 900
    // Every block of the cluster (the splits of this row and KV head, rank = split) has
    // written its partial; each block then merges a share of the rep * D outputs, reading
    // the others' shared memory, and none leaves before all have read.
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
    const std::uint32_t local = static_cast<std::uint32_t>(__cvta_generic_to_shared(part));
    for (int i = split * kThreads + threadIdx.x; i < rep * D; i += S * kThreads) {
      const int r = i / D, d = i % D;
      // Every split's (max, sum, output) requested first, all in flight, then folded in order.
      float mq[kMaxAttentionClusterSplits], lq[kMaxAttentionClusterSplits], aq[kMaxAttentionClusterSplits];
#pragma unroll
      for (int sp = 0; sp < kMaxAttentionClusterSplits; ++sp) {
        if (sp >= S) break;
        std::uint32_t remote;
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(sp));
        const std::uint32_t at = remote + static_cast<std::uint32_t>(r * (D + 2)) * 4u;
        asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];\n" : "=f"(mq[sp]), "=f"(lq[sp]) : "r"(at) : "memory");
        asm volatile("ld.shared::cluster.f32 %0, [%1];\n"
                     : "=f"(aq[sp])
                     : "r"(at + 8u + 4u * static_cast<std::uint32_t>(d))
                     : "memory");
      }
      float M = -INFINITY, L = 0.f, A = 0.f;
#pragma unroll
      for (int sp = 0; sp < kMaxAttentionClusterSplits; ++sp) {
        if (sp >= S) break;
        fold(M, L, A, mq[sp], lq[sp], aq[sp]);
      }
      const int h = g * rep + r;
      out[b * a.layout.strideB + (static_cast<std::int64_t>(h) * D + d) * a.layout.strideC] = fromFloat<T>(A / L);
    }
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
    return;
  }
  // The last block of this (row, KV head) merges the splits.
  __threadfence();
  __syncthreads();
  __shared__ unsigned ticket;
  unsigned* counter = a.counters + b * a.kvHeads + g;
  if (threadIdx.x == 0) ticket = atomicAdd(counter, 1u);
  __syncthreads();
  if (ticket != static_cast<unsigned>(S - 1)) return;
  __threadfence();
  // One pass over the splits with a running maximum (loads of several splits in flight).
  float M[kPerThread], L[kPerThread], A[kPerThread];
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    M[k] = -INFINITY;
    L[k] = 0.f;
    A[k] = 0.f;
  }
#pragma unroll 2
  for (int sp = 0; sp < S; ++sp) {
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) {
      const int i = threadIdx.x + k * kThreads;
      if (i >= rep * D) continue;
      const int r = i / D, d = i % D;
      const float* q = partial(g * rep + r, sp);
      fold(M[k], L[k], A[k], __ldcg(q), __ldcg(q + 1), __ldcg(q + 2 + d));
    }
  }
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int i = threadIdx.x + k * kThreads;
    if (i >= rep * D) continue;
    const int r = i / D, d = i % D, h = g * rep + r;
    out[b * a.layout.strideB + (static_cast<std::int64_t>(h) * D + d) * a.layout.strideC] = fromFloat<T>(A[k] / L[k]);
  }
  if (threadIdx.x == 0) *counter = 0;  // ready for the next launch
}

template <typename T>
struct AttnL {
  // Shared memory of attentionKernel<T, ..., MAXREP, PV, LPS> (its layout, in order).
  static std::size_t smemBytes(const AttentionArgs& a, int maxRep, bool pv, int lps) {
    const std::size_t D = static_cast<std::size_t>(a.headDim), rep = static_cast<std::size_t>(a.heads / a.kvHeads);
    const std::size_t warps = static_cast<std::size_t>(kAttnWarps * lps);
    return (2 * warps * static_cast<std::size_t>(maxRep) + rep * D + 2 * D + warps * rep * D) * sizeof(float) +
           (2 * D + (pv ? 2 : 1) * static_cast<std::size_t>(kSlotsPerBlock) * (D + 8)) * sizeof(T);
  }
  template <int EPL, int MAXREP, bool PV, int LPS>
  static cudaError_t go(const AttentionArgs& a, float* ws, cudaStream_t st, bool pdl) {
    const int S = attentionSplits(a.capacity);
    const std::size_t smem = smemBytes(a, MAXREP, PV, LPS);
    auto kernel = attentionKernel<T, EPL, MAXREP, PV, LPS>;
    if (smem > 48 * 1024) {
      const cudaError_t e =
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
      if (e != cudaSuccess) return e;
    }
    const dim3 grid(static_cast<unsigned>(S), static_cast<unsigned>(a.kvHeads), static_cast<unsigned>(a.batch));
    const dim3 block(kAttnWarps * 32 * LPS);
    if (a.merge != AttentionMerge::Cluster) return launch(kernel, grid, block, smem, st, pdl, a, ws);
    // The S splits of a (row, KV head) one cluster along x (sm_90: attentionClusterMergeSupported).
    return detail::launchEx(kernel, grid, block, smem, st, dim3(static_cast<unsigned>(S), 1, 1), pdl, a, ws);
  }
  // Waves of the device the grid takes with that kernel and shared memory (0: does not fit).
  // Blocks per SM are asked of the runtime once per shared-memory size (launches outside a
  // graph would otherwise ask at every layer): the last answer is kept as smem << 16 | blocks.
  template <int EPL, int MAXREP, bool PV, int LPS>
  static std::int64_t waves(const AttentionArgs& a) {
    const std::size_t smem = smemBytes(a, MAXREP, PV, LPS);
    static std::atomic<std::uint64_t> known{0};
    const std::uint64_t k = known.load(std::memory_order_relaxed);
    int n = static_cast<int>(k & 0xffffu);
    if ((k >> 16) != smem || n < 1) {
      auto kernel = attentionKernel<T, EPL, MAXREP, PV, LPS>;
      // Raised only above the default 48 KB, as go() does: lowered to a small smem here, the
      // kernel's limit would refuse a later launch of a larger smem under 48 KB that go() does
      // not raise (a batch-1 launch of another model: "invalid argument").
      if ((smem > 48 * 1024 && cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                    static_cast<int>(smem)) != cudaSuccess) ||
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, kAttnWarps * 32 * LPS, smem) != cudaSuccess ||
          n < 1)
        return 0;
      known.store(static_cast<std::uint64_t>(smem) << 16 | static_cast<std::uint64_t>(n), std::memory_order_relaxed);
    }
    const std::int64_t grid = static_cast<std::int64_t>(attentionSplits(a.capacity)) * a.kvHeads * a.batch;
    const std::int64_t slots = static_cast<std::int64_t>(n) * detail::smCount();
    return (grid + slots - 1) / slots;
  }
  // The value rows prefetched with the keys where both fit (all but fp32 with wide heads);
  // several lanes per slot (16-bit types with the value rows prefetched, headDim a
  // multiple of 8 * lanes) where asked for, else one. 16-bit types without the prefetch
  // (the key rows' memory reused) where a.valuesPrefetch says so, or by default at batch > 1
  // where that fits the grid in fewer waves.
  template <int EPL, int MAXREP>
  static cudaError_t go(const AttentionArgs& a, float* ws, cudaStream_t st, bool pdl) {
    const bool fits1 = smemBytes(a, MAXREP, true, 1) <= 160 * 1024;
    if constexpr (!std::is_same_v<T, float>) {
      int lps = a.lanesPerSlot;  // lanes of the prefetching kernel
      if (!((lps == 2 || lps == 4) && a.headDim % (8 * lps) == 0 && smemBytes(a, MAXREP, true, lps) <= 160 * 1024))
        lps = 1;
      bool keysOnly = a.valuesPrefetch == 0 || (lps == 1 && !fits1);
      if (!keysOnly && a.valuesPrefetch < 0 && a.batch > 1) {
        const std::int64_t without = waves<EPL, MAXREP, false, 1>(a);
        const std::int64_t with = lps == 4   ? waves<EPL, MAXREP, true, 4>(a)
                                  : lps == 2 ? waves<EPL, MAXREP, true, 2>(a)
                                             : waves<EPL, MAXREP, true, 1>(a);
        keysOnly = without > 0 && (with == 0 || without < with);
      }
      if (keysOnly) return go<EPL, MAXREP, false, 1>(a, ws, st, pdl);
      if (lps == 2) return go<EPL, MAXREP, true, 2>(a, ws, st, pdl);
      if (lps == 4) return go<EPL, MAXREP, true, 4>(a, ws, st, pdl);
    }
    return fits1 ? go<EPL, MAXREP, true, 1>(a, ws, st, pdl) : go<EPL, MAXREP, false, 1>(a, ws, st, pdl);
  }
  template <int EPL>
  static cudaError_t rep(const AttentionArgs& a, float* ws, cudaStream_t st, bool pdl) {
    const int r = a.heads / a.kvHeads;
    if (r <= 4) return go<EPL, 4>(a, ws, st, pdl);
    if (r <= 8) return go<EPL, 8>(a, ws, st, pdl);
    return go<EPL, 16>(a, ws, st, pdl);
  }
  static cudaError_t run(const AttentionArgs& a, float* ws, cudaStream_t st, bool pdl) {
    if (a.headDim <= 32) return rep<1>(a, ws, st, pdl);
    if (a.headDim <= 64) return rep<2>(a, ws, st, pdl);
    if (a.headDim <= 128) return rep<4>(a, ws, st, pdl);
    return rep<8>(a, ws, st, pdl);
  }
};

}  // namespace
}  // namespace sdw::kernels
