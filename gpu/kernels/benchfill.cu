// Device-side random fills for the benchmark (counter-based hash, no state).

#include "gpu/kernels/benchfill.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace sdw::kernels {
namespace {

__device__ __forceinline__ std::uint64_t mix(std::uint64_t z) {  // splitmix64 finaliser
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

__global__ void fillRandom16Kernel(unsigned short* dst, std::size_t n, int isBf16, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::uint64_t h = mix(seed * 0x9e3779b97f4a7c15ull + i);
    float v = static_cast<float>(h >> 40) * (2.0f / 16777216.0f) - 1.0f;
    if (v == 0.f) v = 0.5f;
    dst[i] = isBf16 ? __bfloat16_as_ushort(__float2bfloat16_rn(v)) : __half_as_ushort(__float2half_rn(v));
  }
}

__global__ void fillRandomMasksKernel(std::uint32_t* masks, std::size_t words, int n, int m, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint64_t h = mix(seed * 0xd1b54a32d192ed03ull + i);
    std::uint32_t word = 0;
    for (int s = 0; s < 32; s += m) {
      // Partial Fisher-Yates: choose n of the m positions.
      int pos[32];
      for (int j = 0; j < m; ++j) pos[j] = j;
      for (int j = 0; j < n; ++j) {
        if (((j + s) & 7) == 0) h = mix(h + 0x632be59bd9b4e019ull);
        const int k = j + static_cast<int>((h & 0xff) % static_cast<unsigned>(m - j));
        h >>= 8;
        const int t = pos[j];
        pos[j] = pos[k];
        pos[k] = t;
        word |= 1u << (s + pos[j]);
      }
    }
    masks[i] = word;
  }
}

}  // namespace

cudaError_t launchFillRandom16(void* dst, std::size_t n, DType dtype, std::uint64_t seed, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (dtype != DType::BF16 && dtype != DType::F16) return cudaErrorInvalidValue;
  fillRandom16Kernel<<<1024, 256, 0, stream>>>(static_cast<unsigned short*>(dst), n, dtype == DType::BF16, seed);
  return cudaGetLastError();
}

cudaError_t launchFillRandomMasks(std::uint32_t* masks, std::size_t words, int n, int m, std::uint64_t seed,
                                  cudaStream_t stream) {
  if (words == 0) return cudaSuccess;
  if (m < 2 || m > 32 || 32 % m || 2 * n != m) return cudaErrorInvalidValue;
  fillRandomMasksKernel<<<1024, 256, 0, stream>>>(masks, words, n, m, seed);
  return cudaGetLastError();
}

}  // namespace sdw::kernels
