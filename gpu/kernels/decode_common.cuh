#pragma once
// What the decode engine's kernel units share (decode.cu, decode_attention.cuh): the 16-bit
// conversions, the programmatic-launch prologue and the launch helper. Internal to gpu/kernels.

#include "gpu/kernels/decode.cuh"
#include "gpu/kernels/splitk.cuh"  // programmatic dependent launch

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <utility>

namespace sdw::kernels {
namespace {

// 16-bit and float conversions (splitk.cuh): to float, from float, rounded through T.
using detail::fromFloat;
using detail::roundTo;
using detail::toFloat;

// Launched with programmatic dependent launch (sm_90), a kernel may start while the
// previous one of the stream still runs: it waits for it before touching anything,
// then lets the next kernel (a projection streaming its weights) start early.
__device__ __forceinline__ void prologue() {
  detail::pdlWait();
  detail::pdlLaunchDependents();
}

template <typename... KArgs, typename... Args>
cudaError_t launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t st, bool pdl,
                   Args&&... args) {
  return detail::launchEx(kernel, grid, block, smem, st, 0, pdl && detail::hopperLaunchSupported(),
                          std::forward<Args>(args)...);
}

}  // namespace
}  // namespace sdw::kernels
