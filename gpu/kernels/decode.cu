// The decode engine's fused operations (gpu/kernels/decode.cuh): embedding lookup, residual
// add + RMSNorm, SwiGLU, argmax; Gemma 3's variants (scaled embedding, the (1 + w) post-norm +
// add + norm, GELU-tanh, logit soft-capping fused into the argmax); and the bitmask unpack /
// synthetic N:M pack. The attention kernel (q/k norm, RoPE, the KV-cache write, split-slot
// grouped-query attention and the merge of its splits) is decode_attention.cuh, compiled per
// type. Small kernels, one block per row or head: their job is to keep the step's launch count
// and the bytes they move small next to the projections.

#include "gpu/kernels/decode.cuh"
#include "gpu/kernels/decode_common.cuh"  // prologue, launch, the 16-bit conversions
#include "gpu/kernels/splitk.cuh"  // programmatic dependent launch

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <type_traits>

namespace sdw::kernels {
namespace {

// Block-wide sum (blockDim a multiple of 32, <= 1024).
__device__ float blockSum(float v) {
  __shared__ float part[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) part[warp] = v;
  __syncthreads();
  const int W = blockDim.x >> 5;
  float s = 0.f;
  for (int i = 0; i < W; ++i) s += part[i];
  return s;
}

template <typename T>
__global__ void embedKernel(const T* __restrict__ table, std::int64_t hidden, const std::int32_t* __restrict__ ids,
                            T* __restrict__ h, float scale) {
  prologue();
  const int b = blockIdx.x;
  const T* src = table + static_cast<std::int64_t>(ids[b]) * hidden;
  T* dst = h + b * hidden;
  // Gemma 3: embedding * sqrt(hidden) (the scale already rounded to T), one rounding.
  const auto scaled = [&](T v) { return scale == 1.f ? v : fromFloat<T>(toFloat<T>(v) * scale); };
  constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  const bool wide = hidden % kVec == 0 && ((reinterpret_cast<std::uintptr_t>(src) | reinterpret_cast<std::uintptr_t>(dst)) & 15) == 0;
  if (wide) {  // rows of whole, aligned 16-byte pieces: a few wide copies per thread
    const uint4* s4 = reinterpret_cast<const uint4*>(src);
    uint4* d4 = reinterpret_cast<uint4*>(dst);
    for (std::int64_t i = threadIdx.x; i < hidden / kVec; i += blockDim.x) {
      uint4 u = s4[i];
      T* e = reinterpret_cast<T*>(&u);
#pragma unroll
      for (int j = 0; j < kVec; ++j) e[j] = scaled(e[j]);
      d4[i] = u;
    }
  } else {
    for (std::int64_t i = threadIdx.x; i < hidden; i += blockDim.x) dst[i] = scaled(src[i]);
  }
}

// fp32 (16-bit types: addRmsNorm16Kernel below).
template <typename T>
__global__ void addRmsNormKernel(T* __restrict__ h, const T* __restrict__ y, std::int64_t ldy, const T* __restrict__ w,
                                 std::int64_t hidden, float eps, T* __restrict__ x, std::int64_t sB, std::int64_t sC) {
  const int b = blockIdx.x;
  T* hb = h + b * hidden;
  // The norm's weights are read before the wait for the previous kernel (they are not
  // its output; their first uses would otherwise wait on memory after the reduction);
  // rows up to 8 x blockDim.x keep them in registers.
  constexpr int kKeep = 8;
  float wk[kKeep];
#pragma unroll
  for (int k = 0; k < kKeep; ++k) {
    const std::int64_t i = threadIdx.x + static_cast<std::int64_t>(k) * blockDim.x;
    if (i < hidden) wk[k] = toFloat<T>(w[i]);
  }
  prologue();
  float ss = 0.f;
  const auto addRow = [&](std::int64_t i) {
    float v = toFloat<T>(hb[i]);
    if (y) {
      v = roundTo<T>(v + toFloat<T>(y[b * ldy + i]));
      hb[i] = fromFloat<T>(v);
    }
    ss += v * v;
    return v;  // exactly the value stored (already rounded to T)
  };
  // The first rows' sums stay in registers: no second trip to memory after the reduction.
  float hk[kKeep];
#pragma unroll
  for (int k = 0; k < kKeep; ++k) {
    const std::int64_t i = threadIdx.x + static_cast<std::int64_t>(k) * blockDim.x;
    if (i < hidden) hk[k] = addRow(i);
  }
  for (std::int64_t i = threadIdx.x + static_cast<std::int64_t>(kKeep) * blockDim.x; i < hidden; i += blockDim.x) addRow(i);
  const float r = rsqrtf(blockSum(ss) / static_cast<float>(hidden) + eps);
#pragma unroll
  for (int k = 0; k < kKeep; ++k) {
    const std::int64_t i = threadIdx.x + static_cast<std::int64_t>(k) * blockDim.x;
    if (i < hidden) x[b * sB + i * sC] = fromFloat<T>(wk[k] * roundTo<T>(hk[k] * r));
  }
  // Rows past those: each thread reads back only what it wrote.
  for (std::int64_t i = threadIdx.x + static_cast<std::int64_t>(kKeep) * blockDim.x; i < hidden; i += blockDim.x)
    x[b * sB + i * sC] = fromFloat<T>(toFloat<T>(w[i]) * roundTo<T>(toFloat<T>(hb[i]) * r));
}

// 16-bit types: the same in the fixed order of splitk.cuh (rmsNormLanes; one thread per lane,
// blockDim.x = rmsNormLanes(hidden)), so that a projection's NormTail gives the same bits.
// The first kKeep chunks of a thread (every chunk up to hidden = 16384) stay in registers;
// the norm's weights are requested before the wait for the previous kernel.
template <typename T>
__global__ void addRmsNorm16Kernel(T* __restrict__ h, const T* __restrict__ y, std::int64_t ldy,
                                   const T* __restrict__ w, std::int64_t hidden, float eps, T* __restrict__ x,
                                   std::int64_t sB, std::int64_t sC) {
  using detail::load8;
  using detail::store8;
  const int b = blockIdx.x, nv = static_cast<int>(blockDim.x), tid = static_cast<int>(threadIdx.x);
  T* hb = h + b * hidden;
  const T* yb = y ? y + b * ldy : nullptr;
  const std::int64_t C = (hidden + 7) / 8;
  const auto width = [&](std::int64_t c) { return static_cast<int>(hidden - 8 * c < 8 ? hidden - 8 * c : 8); };
  constexpr int kKeep = 2;
  uint4 wk[kKeep], hk[kKeep];
#pragma unroll
  for (int k = 0; k < kKeep; ++k) {
    const std::int64_t c = tid + static_cast<std::int64_t>(k) * nv;
    if (c < C) wk[k] = load8(w, 8 * c, hidden, false);
  }
  prologue();
  float ss = 0.f;
  uint4 yk[kKeep];
#pragma unroll
  for (int k = 0; k < kKeep; ++k) {  // every load before the first use
    const std::int64_t c = tid + static_cast<std::int64_t>(k) * nv;
    if (c < C) {
      hk[k] = load8(hb, 8 * c, hidden, false);
      if (yb) yk[k] = load8(yb, 8 * c, hidden, false);
    }
  }
#pragma unroll
  for (int k = 0; k < kKeep; ++k) {
    const std::int64_t c = tid + static_cast<std::int64_t>(k) * nv;
    if (c < C) {
      hk[k] = detail::addChunk<T>(hk[k], yb ? &yk[k] : nullptr, width(c), ss);
      if (yb) store8(hb, 8 * c, hidden, hk[k]);
    }
  }
  for (std::int64_t c = tid + static_cast<std::int64_t>(kKeep) * nv; c < C; c += nv) {
    const uint4 hv = load8(hb, 8 * c, hidden, false);
    uint4 yv;
    if (yb) yv = load8(yb, 8 * c, hidden, false);
    const uint4 s2 = detail::addChunk<T>(hv, yb ? &yv : nullptr, width(c), ss);
    if (yb) store8(hb, 8 * c, hidden, s2);
  }
  const float r = rsqrtf(blockSum(ss) / static_cast<float>(hidden) + eps);
  T* xb = x + b * sB;
  const auto put = [&](std::int64_t c, const uint4& v) {
    if (sC == 1) {
      store8(xb, 8 * c, hidden, v);
      return;
    }
    for (int e = 0; e < width(c); ++e) xb[(8 * c + e) * sC] = fromFloat<T>(detail::get8<T>(v, e));
  };
#pragma unroll
  for (int k = 0; k < kKeep; ++k) {
    const std::int64_t c = tid + static_cast<std::int64_t>(k) * nv;
    if (c < C) put(c, detail::normChunk<T>(hk[k], wk[k], width(c), r));
  }
  for (std::int64_t c = tid + static_cast<std::int64_t>(kKeep) * nv; c < C; c += nv)  // reads back its own rows
    put(c, detail::normChunk<T>(load8(hb, 8 * c, hidden, false), load8(w, 8 * c, hidden, false), width(c), r));
}

// Gemma 3's residual step (launchGemmaAddNorm): y normalised by (1 + postW) and added to
// h, then h normalised by (1 + w) into x. Each norm as transformers' Gemma3RMSNorm:
// v * rsqrt(mean(v^2) + eps) * (1 + w), all in fp32, one rounding at its end.
template <typename T>
__global__ void gemmaAddNormKernel(T* __restrict__ h, const T* __restrict__ y, std::int64_t ldy,
                                   const T* __restrict__ postW, const T* __restrict__ w, std::int64_t hidden, float eps,
                                   T* __restrict__ x, std::int64_t sB, std::int64_t sC) {
  prologue();
  const int b = blockIdx.x;
  T* hb = h + b * hidden;
  const T* yb = y ? y + b * ldy : nullptr;
  // Rows up to 8 x blockDim.x keep the thread's values in registers between the passes;
  // each thread reads back only what it wrote.
  constexpr int kKeep = 8;
  float keep[kKeep] = {};
  const auto idx = [&](int k) { return threadIdx.x + static_cast<std::int64_t>(k) * blockDim.x; };
  const std::int64_t rest = idx(kKeep);
  const float n = static_cast<float>(hidden);
  if (yb) {
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < kKeep; ++k) {
      const std::int64_t i = idx(k);
      if (i < hidden) {
        keep[k] = toFloat<T>(yb[i]);
        ss += keep[k] * keep[k];
      }
    }
    for (std::int64_t i = rest; i < hidden; i += blockDim.x) {
      const float v = toFloat<T>(yb[i]);
      ss += v * v;
    }
    const float r = rsqrtf(blockSum(ss) / n + eps);
    // h + round(postNorm(y)): the product rounded to fp32 before the add (no fma), as the eager pass.
    const auto add = [&](std::int64_t i, float yv) {
      const float yn = roundTo<T>(__fmul_rn(yv * r, toFloat<T>(postW[i]) + 1.f));
      const float v = roundTo<T>(toFloat<T>(hb[i]) + yn);
      hb[i] = fromFloat<T>(v);
      return v;
    };
#pragma unroll
    for (int k = 0; k < kKeep; ++k) {
      const std::int64_t i = idx(k);
      if (i < hidden) keep[k] = add(i, keep[k]);
    }
    for (std::int64_t i = rest; i < hidden; i += blockDim.x) add(i, toFloat<T>(yb[i]));
  } else {
#pragma unroll
    for (int k = 0; k < kKeep; ++k) {
      const std::int64_t i = idx(k);
      if (i < hidden) keep[k] = toFloat<T>(hb[i]);
    }
  }
  float ss = 0.f;
#pragma unroll
  for (int k = 0; k < kKeep; ++k)
    if (idx(k) < hidden) ss += keep[k] * keep[k];
  for (std::int64_t i = rest; i < hidden; i += blockDim.x) {
    const float v = toFloat<T>(hb[i]);
    ss += v * v;
  }
  const float r = rsqrtf(blockSum(ss) / n + eps);
#pragma unroll
  for (int k = 0; k < kKeep; ++k) {
    const std::int64_t i = idx(k);
    if (i < hidden) x[b * sB + i * sC] = fromFloat<T>(keep[k] * r * (toFloat<T>(w[i]) + 1.f));
  }
  for (std::int64_t i = rest; i < hidden; i += blockDim.x)
    x[b * sB + i * sC] = fromFloat<T>(toFloat<T>(hb[i]) * r * (toFloat<T>(w[i]) + 1.f));
}

// gelu(x, approximate="tanh") as LibTorch's CUDA kernel computes it (in fp32, its constants).
__device__ __forceinline__ float geluTanh(float x) {
  // M_SQRT2 * M_2_SQRTPI * opmath_t(0.5) and opmath_t(0.044715): products in double, then float.
  constexpr float kBeta = static_cast<float>(1.41421356237309504880 * 1.12837916709551257390 * 0.5);
  constexpr float kKappa = static_cast<float>(0.044715);
  const float cube = x * x * x;
  const float inner = kBeta * (x + kKappa * cube);
  return 0.5f * x * (1.f + tanhf(inner));
}

// x = round(act(g)) * u for the fused gate|up output: SiLU (Llama, Qwen) or GELU-tanh (Gemma 3).
template <typename T, bool GELU>
__global__ void gatedMulKernel(const T* __restrict__ gu, std::int64_t ldgu, std::int64_t inter, T* __restrict__ x,
                               std::int64_t sB, std::int64_t sC) {
  prologue();
  const int b = blockIdx.y;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < inter;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float g = toFloat<T>(gu[b * ldgu + i]), u = toFloat<T>(gu[b * ldgu + inter + i]);
    const float act = GELU ? geluTanh(g) : g / (1.f + __expf(-g));
    x[b * sB + i * sC] = fromFloat<T>(roundTo<T>(act) * u);
  }
}

// The block's argmax from each thread's (best, index) candidate: the lowest index among
// equal maxima; index `vocab` (no candidate) loses. Thread 0 writes *id.
__device__ void blockArgmax(float best, std::int64_t bi, std::int64_t vocab, std::int32_t* id) {
  __shared__ float sv[32];
  __shared__ std::int64_t si[32];
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, best, o);
    const std::int64_t oi = __shfl_xor_sync(0xffffffffu, bi, o);
    if (ov > best || (ov == best && oi < bi)) {
      best = ov;
      bi = oi;
    }
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    sv[warp] = best;
    si[warp] = bi;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < static_cast<int>(blockDim.x >> 5); ++w)
      if (sv[w] > best || (sv[w] == best && si[w] < bi)) {
        best = sv[w];
        bi = si[w];
      }
    *id = static_cast<std::int32_t>(bi < vocab ? bi : 0);
  }
}

// Soft-capping in place, then the argmax of the capped row (launchSoftcapArgmax).
template <typename T>
__global__ void softcapArgmaxKernel(T* __restrict__ logits, std::int64_t ldl, std::int64_t vocab, float cap,
                                    float invCap, std::int32_t* __restrict__ ids) {
  prologue();
  const int b = blockIdx.x;
  float best = -INFINITY;
  std::int64_t bi = vocab;  // no candidate yet
  for (std::int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
    // x / cap on the device is x * (1 / cap) in LibTorch (a CPU scalar divisor), then tanh, then * cap.
    const float v = roundTo<T>(roundTo<T>(tanhf(roundTo<T>(toFloat<T>(logits[b * ldl + i]) * invCap))) * cap);
    logits[b * ldl + i] = fromFloat<T>(v);
    if (v > best || (bi == vocab && v == best)) {
      best = v;
      bi = i;
    }
  }
  blockArgmax(best, bi, vocab, ids + b);
}

template <typename T>
__global__ void argmaxKernel(const T* __restrict__ logits, std::int64_t ldl, std::int64_t vocab,
                             std::int32_t* __restrict__ ids) {
  prologue();
  const int b = blockIdx.x;
  float best = -INFINITY;
  std::int64_t bi = vocab;  // no candidate yet
  for (std::int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
    const float v = toFloat<T>(logits[b * ldl + i]);
    if (v > best || (bi == vocab && v == best)) {
      best = v;
      bi = i;
    }
  }
  blockArgmax(best, bi, vocab, ids + b);
}

// Thread per (row, mask word) of the real rows.
template <typename V, typename O>
__global__ void unpackKernel(const V* __restrict__ values, const std::uint32_t* __restrict__ masks, std::int64_t rows,
                             std::int64_t G, O* __restrict__ out) {
  const std::int64_t idx = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= rows * G) return;
  const std::int64_t r = idx / G, g = idx % G;
  const std::int64_t t = r / 32, lane = r % 32;
  const std::int64_t cell = (t * G + g) * 32 + lane;
  const std::uint32_t mk = masks[cell];
  const V* v = values + cell * 16;
  O* o = out + r * G * 32 + g * 32;
  int k = 0;
  for (int c = 0; c < 32; ++c) {
    if (mk & (1u << c)) o[c] = fromFloat<O>(toFloat<V>(v[k++]));
    else o[c] = fromFloat<O>(0.f);
  }
}

template <typename T>
__global__ void packKernel(const T* __restrict__ w, std::int64_t rows, std::int64_t padRows, std::int64_t G, int n,
                           int m, T* __restrict__ values, std::uint32_t* __restrict__ masks) {
  const std::int64_t idx = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= padRows * G) return;
  const std::int64_t r = idx / G, g = idx % G;
  const std::int64_t cell = ((r / 32) * G + g) * 32 + (r % 32);
  T* v = values + cell * 16;
  if (r >= rows) {
    masks[cell] = 0x0000ffffu;
    for (int k = 0; k < 16; ++k) v[k] = fromFloat<T>(0.f);
    return;
  }
  float a[32];
  const T* src = w + r * G * 32 + g * 32;
  for (int c = 0; c < 32; ++c) a[c] = fabsf(toFloat<T>(src[c]));
  std::uint32_t mk = 0;
  for (int c = 0; c < 32; ++c) {
    const int g0 = c - c % m;
    int rank = 0;
    for (int j = g0; j < g0 + m; ++j) rank += (a[j] > a[c] || (a[j] == a[c] && j < c)) ? 1 : 0;
    if (rank < n) mk |= 1u << c;
  }
  masks[cell] = mk;
  int k = 0;
  for (int c = 0; c < 32; ++c)
    if (mk & (1u << c)) v[k++] = src[c];
}

template <template <typename> class Launch, typename... Args>
cudaError_t dispatch(DType d, Args&&... args) {
  switch (d) {
    case DType::F32: return Launch<float>::run(args...);
    case DType::BF16: return Launch<__nv_bfloat16>::run(args...);
    case DType::F16: return Launch<__half>::run(args...);
  }
  return cudaErrorInvalidValue;
}

int threadsFor(std::int64_t n) {
  int t = 32;
  while (t < 1024 && t < n) t *= 2;
  return t;
}

template <typename T>
struct EmbedL {
  static cudaError_t run(const void* table, std::int64_t hidden, const std::int32_t* ids, int batch, void* h,
                         cudaStream_t st, bool pdl, float scale) {
    return launch(embedKernel<T>, dim3(static_cast<unsigned>(batch)), dim3(256), 0, st, pdl, static_cast<const T*>(table),
                  hidden, ids, static_cast<T*>(h), scale);
  }
};
template <typename T>
struct AddNormL {
  static cudaError_t run(void* h, const void* y, std::int64_t ldy, const void* w, std::int64_t hidden, int batch,
                         float eps, void* x, XLayout l, cudaStream_t st, bool pdl) {
    if constexpr (!std::is_same_v<T, float>) {
      return launch(addRmsNorm16Kernel<T>, dim3(static_cast<unsigned>(batch)),
                    dim3(static_cast<unsigned>(detail::rmsNormLanes(hidden))), 0, st, pdl, static_cast<T*>(h),
                    static_cast<const T*>(y), ldy, static_cast<const T*>(w), hidden, eps, static_cast<T*>(x), l.strideB,
                    l.strideC);
    } else {
      const int threads = std::min(1024, threadsFor((hidden + 3) / 4));
      return launch(addRmsNormKernel<T>, dim3(static_cast<unsigned>(batch)), dim3(static_cast<unsigned>(threads)), 0,
                    st, pdl, static_cast<T*>(h), static_cast<const T*>(y), ldy, static_cast<const T*>(w), hidden, eps,
                    static_cast<T*>(x), l.strideB, l.strideC);
    }
  }
};
template <typename T>
struct GemmaAddNormL {
  static cudaError_t run(void* h, const void* y, std::int64_t ldy, const void* postW, const void* w, std::int64_t hidden,
                         int batch, float eps, void* x, XLayout l, cudaStream_t st, bool pdl) {
    const int threads = std::min(1024, threadsFor((hidden + 3) / 4));
    return launch(gemmaAddNormKernel<T>, dim3(static_cast<unsigned>(batch)), dim3(static_cast<unsigned>(threads)), 0,
                  st, pdl, static_cast<T*>(h), static_cast<const T*>(y), ldy, static_cast<const T*>(postW),
                  static_cast<const T*>(w), hidden, eps, static_cast<T*>(x), l.strideB, l.strideC);
  }
};
template <typename T>
struct GatedL {
  static cudaError_t run(const void* gu, std::int64_t ldgu, std::int64_t inter, int batch, void* x, XLayout l, bool gelu,
                         cudaStream_t st, bool pdl) {
    const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((inter + 255) / 256, 1024));
    return launch(gelu ? gatedMulKernel<T, true> : gatedMulKernel<T, false>, dim3(blocks, static_cast<unsigned>(batch)),
                  dim3(256), 0, st, pdl, static_cast<const T*>(gu), ldgu, inter, static_cast<T*>(x), l.strideB,
                  l.strideC);
  }
};
template <typename T>
struct ArgmaxL {
  static cudaError_t run(const void* logits, std::int64_t ldl, std::int64_t vocab, int batch, std::int32_t* ids,
                         cudaStream_t st, bool pdl) {
    return launch(argmaxKernel<T>, dim3(static_cast<unsigned>(batch)), dim3(1024), 0, st, pdl,
                  static_cast<const T*>(logits), ldl, vocab, ids);
  }
};
template <typename T>
struct SoftcapArgmaxL {
  static cudaError_t run(void* logits, std::int64_t ldl, std::int64_t vocab, int batch, float cap, std::int32_t* ids,
                         cudaStream_t st, bool pdl) {
    const float invCap = 1.f / cap;  // LibTorch: opmath_t(1.0) / the divisor as opmath_t
    return launch(softcapArgmaxKernel<T>, dim3(static_cast<unsigned>(batch)), dim3(1024), 0, st, pdl,
                  static_cast<T*>(logits), ldl, vocab, cap, invCap, ids);
  }
};
template <typename V>
struct UnpackL {
  template <typename O>
  static cudaError_t go(const void* values, const std::uint32_t* masks, std::int64_t rows, std::int64_t cols, void* out,
                        cudaStream_t st) {
    const std::int64_t G = cols / 32, n = rows * G;
    const auto blocks = static_cast<unsigned>((n + 255) / 256);
    unpackKernel<V, O><<<blocks, 256, 0, st>>>(static_cast<const V*>(values), masks, rows, G, static_cast<O*>(out));
    return cudaGetLastError();
  }
  static cudaError_t run(const void* values, const std::uint32_t* masks, std::int64_t rows, std::int64_t cols,
                         void* out, DType outType, cudaStream_t st) {
    switch (outType) {
      case DType::F32: return go<float>(values, masks, rows, cols, out, st);
      case DType::BF16: return go<__nv_bfloat16>(values, masks, rows, cols, out, st);
      case DType::F16: return go<__half>(values, masks, rows, cols, out, st);
    }
    return cudaErrorInvalidValue;
  }
};
template <typename T>
struct PackL {
  static cudaError_t run(const void* w, std::int64_t rows, std::int64_t cols, int n, int m, void* values,
                         std::uint32_t* masks, cudaStream_t st) {
    const std::int64_t G = cols / 32, padRows = (rows + 31) / 32 * 32, cells = padRows * G;
    packKernel<T><<<static_cast<unsigned>((cells + 127) / 128), 128, 0, st>>>(
        static_cast<const T*>(w), rows, padRows, G, n, m, static_cast<T*>(values), masks);
    return cudaGetLastError();
  }
};

}  // namespace

cudaError_t launchEmbedRows(const void* table, DType dtype, std::int64_t hidden, const std::int32_t* ids, int batch,
                            void* h, cudaStream_t stream, bool pdl, float scale) {
  return dispatch<EmbedL>(dtype, table, hidden, ids, batch, h, stream, pdl, scale);
}

cudaError_t launchAddRmsNorm(void* h, const void* y, std::int64_t ldy, const void* w, DType dtype, std::int64_t hidden,
                             int batch, float eps, void* x, XLayout layout, cudaStream_t stream, bool pdl) {
  return dispatch<AddNormL>(dtype, h, y, ldy, w, hidden, batch, eps, x, layout, stream, pdl);
}

cudaError_t launchGemmaAddNorm(void* h, const void* y, std::int64_t ldy, const void* postW, const void* w, DType dtype,
                               std::int64_t hidden, int batch, float eps, void* x, XLayout layout, cudaStream_t stream,
                               bool pdl) {
  if (y && !postW) return cudaErrorInvalidValue;
  return dispatch<GemmaAddNormL>(dtype, h, y, ldy, postW, w, hidden, batch, eps, x, layout, stream, pdl);
}

cudaError_t launchGatedMul(const void* gu, std::int64_t ldgu, std::int64_t inter, int batch, DType dtype, void* x,
                           XLayout layout, bool gelu, cudaStream_t stream, bool pdl) {
  return dispatch<GatedL>(dtype, gu, ldgu, inter, batch, x, layout, gelu, stream, pdl);
}

cudaError_t launchArgmax(const void* logits, std::int64_t ldl, std::int64_t vocab, int batch, DType dtype,
                         std::int32_t* ids, cudaStream_t stream, bool pdl) {
  return dispatch<ArgmaxL>(dtype, logits, ldl, vocab, batch, ids, stream, pdl);
}

cudaError_t launchSoftcapArgmax(void* logits, std::int64_t ldl, std::int64_t vocab, int batch, DType dtype, float cap,
                                std::int32_t* ids, cudaStream_t stream, bool pdl) {
  if (!(cap > 0)) return cudaErrorInvalidValue;
  return dispatch<SoftcapArgmaxL>(dtype, logits, ldl, vocab, batch, cap, ids, stream, pdl);
}

cudaError_t launchUnpackBitmask(const void* values, const std::uint32_t* masks, DType valueType, std::int64_t rows,
                                std::int64_t cols, void* out, DType outType, cudaStream_t stream) {
  if (valueType == DType::F32 || cols % 32 != 0) return cudaErrorInvalidValue;
  return dispatch<UnpackL>(valueType, values, masks, rows, cols, out, outType, stream);
}

cudaError_t launchPackNm(const void* w, DType dtype, std::int64_t rows, std::int64_t cols, int n, int m, void* values,
                         std::uint32_t* masks, cudaStream_t stream) {
  if (dtype == DType::F32 || cols % 32 != 0 || m < 2 || 32 % m != 0 || 2 * n != m) return cudaErrorInvalidValue;
  return dispatch<PackL>(dtype, w, rows, cols, n, m, values, masks, stream);
}

}  // namespace sdw::kernels
