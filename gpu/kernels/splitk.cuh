#pragma once
// Device helpers shared by the SpMV and GEMV kernels: 16-bit conversions and the
// split-K epilogue. Included by gpu/kernels/*.cu only (device code).

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace sdw::kernels::detail {

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
