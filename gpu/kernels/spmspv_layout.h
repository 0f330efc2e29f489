#pragma once
// The device layout of the sparse-weight x sparse-activation kernel (spMspV,
// gpu/kernels/spmspv.cu), shared by the kernel, its launcher and the host packer
// (gpu/spmspv_pack.h). Header only, plain C++ (no CUDA header): nvcc and the
// CPU-only build both include it. Design: docs/kernels.md, "Sparse weights x
// sparse activations (spMspV)".
//
// W: [rows, cols] (out, in), 16-bit values, any unstructured sparsity (N:M is a
// special case). Rows are cut into tiles of kSpmspvTileRows rows (the last one
// padded). For each tile t and input column j there is one *chunk*, and the
// chunks of a tile are stored in column order, so the bytes of column j of a
// tile are one contiguous run that a skipped input entry never touches:
//
//   chunk(t, j) = mask: 32 bytes, bit r (little-endian over the 8 uint32 words)
//                       set iff W[256 t + r, j] != 0
//                 values: the nonzeros of rows 256 t + r in increasing r, 16-bit
//                 zero padding up to a multiple of 8 values (16 bytes)
//   offsets[t * cols + j]: where chunk (t, j) starts, in 16-byte units from the
//                 start of the chunk buffer; offsets[tiles * cols] = total units.
//                 A chunk's size is offsets[g + 1] - offsets[g] units, 2..34.
//
// Byte l of a chunk's mask covers rows 8 l .. 8 l + 7 of the tile: the rows one
// lane of the kernel's warp owns.

#include <cstdint>

namespace sdw::kernels {

inline constexpr int kSpmspvTileRows = 256;         // rows per tile: 32 lanes x 8 rows
inline constexpr int kSpmspvMaskBytes = kSpmspvTileRows / 8;  // 32
inline constexpr int kSpmspvUnitBytes = 16;          // offsets count 16-byte units
inline constexpr int kSpmspvMaskUnits = kSpmspvMaskBytes / kSpmspvUnitBytes;  // 2
inline constexpr int kSpmspvValuesPerUnit = kSpmspvUnitBytes / 2;             // 8
// The largest chunk: mask + 256 values.
inline constexpr int kSpmspvMaxChunkUnits = kSpmspvMaskUnits + kSpmspvTileRows / kSpmspvValuesPerUnit;  // 34

inline constexpr std::int64_t spmspvTiles(std::int64_t rows) { return (rows + kSpmspvTileRows - 1) / kSpmspvTileRows; }

}  // namespace sdw::kernels
