#pragma once
// Random fills on the device for benchmarks: speed does not depend on the
// values, but never benchmark on zeros (they hide wrong indexing and can run
// faster than real data). Raw pointers only.

#include "gpu/kernels/colstats.cuh"  // DType

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace sdw::kernels {

// n 16-bit floats, uniform in [-1, 1) (never exactly zero).
cudaError_t launchFillRandom16(void* dst, std::size_t n, DType dtype, std::uint64_t seed, cudaStream_t stream);

// `words` mask words with an N:M pattern (n of every m bits set, m | 32, 2n == m),
// positions drawn at random per group.
cudaError_t launchFillRandomMasks(std::uint32_t* masks, std::size_t words, int n, int m, std::uint64_t seed,
                                  cudaStream_t stream);

}  // namespace sdw::kernels
