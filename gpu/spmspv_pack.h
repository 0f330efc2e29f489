#pragma once
// The host side of the spMspV layout (gpu/kernels/spmspv_layout.h): packing a
// pruned dense matrix into column-major bitmask chunks, unpacking, the CPU
// reference of the kernel, and the activation threshold (TEAL) that selects the
// input entries a call reads. Plain C++, no torch, no CUDA: tested without a GPU.

#include "core/sparse_format.h"         // DType
#include "gpu/kernels/spmspv_layout.h"  // SpmspvFormat

#include <cstdint>
#include <span>
#include <vector>

namespace sdw::gpu {

// The device layout, held on the host.
struct SpmspvMatrix {
  std::int64_t rows = 0, cols = 0;
  sparse::DType dtype = sparse::DType::BF16;
  kernels::SpmspvFormat format = kernels::SpmspvFormat::Bitmask;
  std::vector<std::uint16_t> chunks;   // the chunk buffer, 16-bit elements (8 per 16-byte unit)
  std::vector<std::uint32_t>
      offsets;  // Bitmask: [tiles * cols + 1] chunk starts in 16-byte units; the column layouts: empty

  std::int64_t tiles() const;
  std::uint64_t bytes() const { return chunks.size() * 2 + offsets.size() * 4; }  // the whole layout
};

// w: dense [rows, cols] row-major 16-bit bits (bf16/fp16), already pruned: entries
// whose magnitude bits are zero (+0, -0) are the pruned ones. Bitmask: any sparsity
// and any cols >= 1; throws std::invalid_argument on a size mismatch, or a layout
// over 2^32 units (64 GiB). Column24: at most 2 nonzeros in every 4 consecutive rows
// (4 g .. 4 g + 3) of every column, any rows >= 1 (a group with fewer keeps zeros at
// its lowest zero rows); throws std::invalid_argument naming the first column and
// rows that keep more. Column48: the same with 4 of every 8 rows. ColumnDense: every
// entry kept, zeros included.
SpmspvMatrix packSpmspv(std::span<const std::uint16_t> w, std::int64_t rows, std::int64_t cols, sparse::DType dtype,
                        kernels::SpmspvFormat format = kernels::SpmspvFormat::Bitmask);

// Dense [rows, cols] 16-bit bits, zeros (+0) where pruned.
std::vector<std::uint16_t> unpackSpmspv(const SpmspvMatrix& m);

// Throws std::invalid_argument with a one-line reason. Bitmask: sizes, offsets that
// do not increase by a chunk's size (mask + its popcount values, padded), kept values
// that are zero, nonzero padding or padding-row bits. Column24 / Column48: the buffer's
// size, a meta nibble without exactly two bits / a meta byte without exactly four, a
// nonzero value kept in a padding row. ColumnDense: the buffer's size, a nonzero value
// in a padding row.
void validateSpmspv(const SpmspvMatrix& m);

// Which input entries a call reads: |x_j| > threshold. A negative threshold reads
// every column (zeros included); threshold 0 skips only exact zeros (same result
// as dense x).
bool spmspvActive(float xj, float threshold);

// y[r] = sum over active j of W[r, j] x[j], fp32 accumulation in increasing j.
// x: [cols] fp32 (the 16-bit input widened); y: [rows].
void spmspvCpu(const SpmspvMatrix& m, std::span<const float> x, float threshold, std::span<float> y);

// Bytes one call must read: the chunks of active columns, every offset of every
// tile (Bitmask: the kernel loads them with x to select chunks) and x.
double spmspvReadBytes(const SpmspvMatrix& m, std::span<const float> x, float threshold);

// The threshold at which exactly k = round(p n) of the n entries of x have
// |x| <= threshold (so a call reads the other n - k). Entries tied with the k-th
// smallest magnitude that would be read are nudged up by one unit in the last
// place of their 16-bit magnitude, in place, so that the count is exact. p = 0
// returns -1 (every column). Throws std::invalid_argument unless 0 <= p <= 1.
float activationThreshold(std::span<std::uint16_t> x, sparse::DType dtype, double p);

// For tests and benchmarks: dense [rows, cols] 16-bit bits, values uniform in
// [-1, 1) and never zero, each row keeping exactly `keep` of every `group`
// consecutive columns at random (group = cols: unstructured, the row keeps
// `keep` of its cols; group 4, keep 2: 2:4), the rest +0. Requires group | cols.
std::vector<std::uint16_t> randomPrunedWeights(std::int64_t rows, std::int64_t cols, sparse::DType dtype,
                                               std::int64_t keep, std::int64_t group, std::uint64_t seed);
// The same down the columns: each column keeps exactly `keep` of every `group`
// consecutive rows (keep 2, group 4: what SpmspvFormat::Column24 stores). Requires
// group | rows.
std::vector<std::uint16_t> randomColumnPrunedWeights(std::int64_t rows, std::int64_t cols, sparse::DType dtype,
                                                     std::int64_t keep, std::int64_t group, std::uint64_t seed);
// [n] 16-bit bits drawn from a standard normal, never zero.
std::vector<std::uint16_t> randomNormal16(std::int64_t n, sparse::DType dtype, std::uint64_t seed);

}  // namespace sdw::gpu
