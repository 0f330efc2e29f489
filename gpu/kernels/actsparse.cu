// Run-time activation sparsity for the decode engine (gpu/kernels/actsparse.cuh).
//
// Top-k: the keep-th largest |x| of a row is found exactly by a radix select on the
// bit patterns of |x| (the sign bit cleared: for non-negative floats the bit order
// is the value order): 8 bits per pass from the top, a 256-bin histogram in shared
// memory of the entries that match the prefix chosen so far, and one warp picking
// the bin where the count from the top reaches the rank still wanted. bf16 / fp16
// take two passes (15 bits), fp32 four. Then every entry below the key is zeroed.

#include "gpu/kernels/actsparse.cuh"
#include "gpu/kernels/splitk.cuh"  // programmatic dependent launch

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace sdw::kernels {
namespace {

template <typename T>
struct Bits;
template <>
struct Bits<float> {
  using U = unsigned;
  static constexpr int kBits = 31;
  static __device__ __forceinline__ unsigned key(float v) { return __float_as_uint(v) & 0x7fffffffu; }
};
template <>
struct Bits<__nv_bfloat16> {
  using U = unsigned short;
  static constexpr int kBits = 15;
  static __device__ __forceinline__ unsigned key(__nv_bfloat16 v) { return __bfloat16_as_ushort(v) & 0x7fffu; }
};
template <>
struct Bits<__half> {
  using U = unsigned short;
  static constexpr int kBits = 15;
  static __device__ __forceinline__ unsigned key(__half v) { return __half_as_ushort(v) & 0x7fffu; }
};

template <typename T>
__device__ __forceinline__ float toFloat(T v) {
  if constexpr (sizeof(T) == 4)
    return v;
  else
    return static_cast<float>(v);
}

template <typename T>
__global__ void sparsifyRowsKernel(T* __restrict__ x, std::int64_t cols, std::int64_t sB, std::int64_t sC, int keep,
                                   float threshold) {
  detail::pdlWait();
  detail::pdlLaunchDependents();
  T* row = x + static_cast<std::int64_t>(blockIdx.x) * sB;
  if (threshold >= 0.f) {
    for (std::int64_t i = threadIdx.x; i < cols; i += blockDim.x)
      if (fabsf(toFloat(row[i * sC])) <= threshold) row[i * sC] = T(0.f);
    return;
  }
  __shared__ unsigned hist[256];
  __shared__ unsigned chosenPrefix, chosenRemaining;
  unsigned prefix = 0, mask = 0, remaining = static_cast<unsigned>(keep);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  // Digits from the top: (kBits - 8 .. kBits - 1), ..., the last pass takes what is left.
  for (int hiBit = Bits<T>::kBits; hiBit > 0; hiBit -= 8) {
    const int shift = hiBit >= 8 ? hiBit - 8 : 0;
    const unsigned digitMask = (1u << (hiBit - shift)) - 1u;
    for (int i = threadIdx.x; i < 256; i += blockDim.x) hist[i] = 0;
    __syncthreads();
    for (std::int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
      const unsigned k = Bits<T>::key(row[i * sC]);
      if ((k & mask) == prefix) atomicAdd(&hist[(k >> shift) & digitMask], 1u);
    }
    __syncthreads();
    if (warp == 0) {
      // Lane l holds the digits 255 - 8 l .. 248 - 8 l (descending): the count from the top.
      unsigned c[8], s = 0;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        c[j] = hist[255 - 8 * lane - j];
        s += c[j];
      }
      unsigned incl = s;
#pragma unroll
      for (int d = 1; d < 32; d *= 2) {
        const unsigned o = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d) incl += o;
      }
      unsigned before = incl - s;  // entries with a larger digit than this lane's first
      if (before < remaining && remaining <= incl) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          if (before + c[j] >= remaining) {
            chosenPrefix = static_cast<unsigned>(255 - 8 * lane - j);
            chosenRemaining = remaining - before;
            break;
          }
          before += c[j];
        }
      }
    }
    __syncthreads();
    prefix |= chosenPrefix << shift;
    mask |= digitMask << shift;
    remaining = chosenRemaining;
    __syncthreads();  // chosen* and hist are rewritten by the next pass
  }
  // prefix: the key of the keep-th largest magnitude. Smaller magnitudes go.
  for (std::int64_t i = threadIdx.x; i < cols; i += blockDim.x)
    if (Bits<T>::key(row[i * sC]) < prefix) row[i * sC] = T(0.f);
}

template <typename T>
cudaError_t launchTyped(void* x, std::int64_t cols, int batch, XLayout l, int keep, float threshold, cudaStream_t st,
                        bool pdl) {
  return detail::launchEx(sparsifyRowsKernel<T>, dim3(static_cast<unsigned>(batch)), dim3(1024), 0, st, 0,
                          pdl && detail::hopperLaunchSupported(), static_cast<T*>(x), cols, l.strideB, l.strideC, keep,
                          threshold);
}

}  // namespace

cudaError_t launchSparsifyRows(void* x, DType dtype, std::int64_t cols, int batch, XLayout layout, int keep,
                               float threshold, cudaStream_t stream, bool pdl) {
  if (!x || cols <= 0 || batch < 1) return cudaErrorInvalidValue;
  if (threshold < 0.f && (keep <= 0 || keep >= cols)) return cudaSuccess;  // every entry stays
  switch (dtype) {
    case DType::F32: return launchTyped<float>(x, cols, batch, layout, keep, threshold, stream, pdl);
    case DType::BF16: return launchTyped<__nv_bfloat16>(x, cols, batch, layout, keep, threshold, stream, pdl);
    case DType::F16: return launchTyped<__half>(x, cols, batch, layout, keep, threshold, stream, pdl);
  }
  return cudaErrorInvalidValue;
}

}  // namespace sdw::kernels
