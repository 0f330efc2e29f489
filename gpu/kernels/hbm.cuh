#pragma once
// A read-only streaming kernel that measures HBM read bandwidth in the same
// run as the benchmarks (gpu/kernels/hbm.cu).

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace sdw::kernels {

// Reads n16 16-byte words from src once (streaming loads); writes to *sink
// only on an impossible checksum so the loads cannot be dropped.
cudaError_t launchHbmRead(const void* src, std::size_t n16, unsigned* sink, int smCount, cudaStream_t stream);

}  // namespace sdw::kernels
