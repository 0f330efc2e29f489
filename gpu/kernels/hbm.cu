// HBM read bandwidth: every 16-byte word of a large buffer read once with
// streaming loads, four independent loads in flight per thread.

#include "gpu/kernels/hbm.cuh"

namespace sdw::kernels {
namespace {

__global__ void __launch_bounds__(512) hbmReadKernel(const uint4* __restrict__ src, std::size_t n, unsigned* sink) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned acc = 0;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = __ldcs(src + i), b = __ldcs(src + i + stride), c = __ldcs(src + i + 2 * stride),
                d = __ldcs(src + i + 3 * stride);
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
  }
  for (; i < n; i += stride) {
    const uint4 a = __ldcs(src + i);
    acc ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;  // practically never; keeps the loads alive
}

}  // namespace

cudaError_t launchHbmRead(const void* src, std::size_t n16, unsigned* sink, int smCount, cudaStream_t stream) {
  if (!src || !sink || n16 == 0) return cudaErrorInvalidValue;
  hbmReadKernel<<<smCount * 4, 512, 0, stream>>>(static_cast<const uint4*>(src), n16, sink);
  return cudaGetLastError();
}

}  // namespace sdw::kernels
