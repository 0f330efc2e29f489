#pragma once
// Per-column input statistics: sum over tokens of x^2 for each input column
// (the Wanda score's activation norm, squared). Plain-type entry point; the
// torch-typed one lives in gpu/colstats_ops.h for engine code and tests.

#include <cstdint>
#include <span>
#include <vector>

namespace sdw::gpu {

enum class Backend { Auto, Cpu, Cuda };

// x: [rows, cols] fp32, row-major. Returns [cols] fp32: sum_r x[r, c]^2.
// Backend::Auto uses the GPU when one is usable. Throws std::runtime_error on
// bad shapes or when Cuda is asked for and unavailable.
std::vector<float> columnSumSquares(std::span<const float> x, std::int64_t rows,
                                    std::int64_t cols, Backend backend = Backend::Auto);

}  // namespace sdw::gpu
