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

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define SDW_SPMSPV_HD __host__ __device__ __forceinline__
#else
#define SDW_SPMSPV_HD inline
#endif

namespace sdw::kernels {

inline constexpr int kSpmspvTileRows = 256;                                   // rows per tile: 32 lanes x 8 rows
inline constexpr int kSpmspvMaskBytes = kSpmspvTileRows / 8;                  // 32
inline constexpr int kSpmspvUnitBytes = 16;                                   // offsets count 16-byte units
inline constexpr int kSpmspvMaskUnits = kSpmspvMaskBytes / kSpmspvUnitBytes;  // 2
inline constexpr int kSpmspvValuesPerUnit = kSpmspvUnitBytes / 2;             // 8
// The largest chunk: mask + 256 values.
inline constexpr int kSpmspvMaxChunkUnits = kSpmspvMaskUnits + kSpmspvTileRows / kSpmspvValuesPerUnit;  // 34

inline constexpr std::int64_t spmspvTiles(std::int64_t rows) { return (rows + kSpmspvTileRows - 1) / kSpmspvTileRows; }

// The column 2:4 layout (SpmspvFormat::Column24): W keeps exactly 2 of every 4
// consecutive rows of each column (N:M groups running down the columns, the
// transpose of the row N:M the SpMV kernels take; `sdw-cli prune --pattern
// col2:4`). The same tiles of 256 rows, one chunk per (tile, column), chunks of a
// tile in column order, tiles one after another; every chunk has the same size,
// so chunk (t, j) starts at byte (t * cols + j) * 288 and there is no offset table:
//
//   values: 256 bytes, 8 per lane: lane l's 4 kept values of rows 8 l .. 8 l + 7
//           (group 2 l's two in increasing row, then group 2 l + 1's), 16-bit
//   meta:   32 bytes, byte l = the kept-row nibble of group 2 l (bits 0-3: rows
//           8 l .. 8 l + 3) | that of group 2 l + 1 << 4; every nibble has exactly
//           two bits set
//
// A group with fewer than two nonzeros keeps zero values at its lowest zero rows;
// rows past the matrix's end (the last tile's padding) are zeros kept the same way.
// So every lane has four values at fixed offsets and an 8-bit meta byte: no prefix
// scan over the mask, no offsets to read before the chunks.
//
// The column 4:8 layout (SpmspvFormat::Column48; `--pattern col4:8`): W keeps exactly 4
// of every 8 consecutive rows of each column, and the chunk is the same 288 bytes: lane
// l's 4 kept values of rows 8 l .. 8 l + 7 in increasing row, and meta byte l the 8-bit
// mask of those rows, exactly four bits set (a group with fewer nonzeros keeps zeros at
// its lowest zero rows). A column 2:4 chunk is a column 4:8 chunk byte for byte (its two
// nibbles are the byte), so the column 4:8 kernel also reads column 2:4 matrices; the
// column 2:4 kernel needs fewer instructions because each nibble has exactly two bits.
//
// The column-major dense layout (SpmspvFormat::ColumnDense): every weight kept, as TEAL
// stores them to skip the columns of small inputs: the baseline that separates what the
// activations' sparsity gives from what the weights' adds. Chunk (t, j) is 512 bytes at
// byte (t * cols + j) * 512: lane l's 8 values of rows 8 l .. 8 l + 7 at bytes 16 l ..
// 16 l + 15, no meta; rows past the matrix's end are zeros.
// Which layout a matrix is stored in.
enum class SpmspvFormat {
  Bitmask,      // any unstructured sparsity: mask + popcount values per chunk, an offset table
  Column24,     // 2 of every 4 rows of each column: fixed 288-byte chunks, no offsets
  Column48,     // 4 of every 8 rows of each column: the same chunks, meta bytes with four bits
  ColumnDense,  // every weight, column-major: fixed 512-byte chunks
};
// The fixed-chunk layouts (one kernel, spmspvColumnKernel).
inline constexpr bool spmspvColumnFormat(SpmspvFormat f) {
  return f == SpmspvFormat::Column24 || f == SpmspvFormat::Column48 || f == SpmspvFormat::ColumnDense;
}
// The half-sparse column layouts, whose kernel also has the half-warp walk
// (SpmspvConfig::lanes 16, colHalfFma).
inline constexpr bool spmspvHalfWalkFormat(SpmspvFormat f) {
  return f == SpmspvFormat::Column24 || f == SpmspvFormat::Column48;
}
// Rows of a column group: 4 (Column24) or 8 (Column48), half of them kept; 1 (ColumnDense,
// every row kept).
inline constexpr int spmspvColumnGroup(SpmspvFormat f) {
  return f == SpmspvFormat::Column48 ? 8 : f == SpmspvFormat::ColumnDense ? 1 : 4;
}

inline constexpr int kSpmspvCol24ValueBytes = kSpmspvTileRows;                               // 128 values
inline constexpr int kSpmspvCol24ChunkBytes = kSpmspvCol24ValueBytes + kSpmspvTileRows / 8;  // 288: 9 sectors
inline constexpr int kSpmspvDenseChunkBytes = 2 * kSpmspvTileRows;                           // 512: 16 sectors
// The chunk of a fixed-chunk layout, in bytes.
inline constexpr int spmspvChunkBytes(SpmspvFormat f) {
  return f == SpmspvFormat::ColumnDense ? kSpmspvDenseChunkBytes : kSpmspvCol24ChunkBytes;
}

// One group of 4 rows of a column 2:4 chunk, as the kernel adds it and the host tests
// replay it: lo and hi are the group's two kept values widened to fp32 (lower row first),
// nib names their rows (exactly two bits). Rows 0 and 3 can only hold the first / second
// value; row 1 holds the second iff row 0 is kept, row 2 the first iff row 3 is kept.
// Each kept row one fp32 FMA; the kernel's compiler makes the tests predicates and the
// choice a select.
SDW_SPMSPV_HD void col24GroupFma(float lo, float hi, unsigned nib, float x, float& a0, float& a1, float& a2,
                                 float& a3) {
  if (nib & 1u) a0 = fmaf(lo, x, a0);
  if (nib & 2u) a1 = fmaf((nib & 1u) ? hi : lo, x, a1);
  if (nib & 4u) a2 = fmaf((nib & 8u) ? lo : hi, x, a2);
  if (nib & 8u) a3 = fmaf(hi, x, a3);
}

// One lane's 8 rows of a column 4:8 chunk, as the kernel adds them and the host tests
// replay them: v0..v3 the lane's kept values widened (lowest row first), m the meta byte
// (exactly four bits). Row r < 4 holds value popcount(m below r): the front values shift
// down past each kept row. Row r >= 4 holds value 3 - popcount(m above r): the back
// values, walked from row 7 down. Each kept row one FMA; 12 selects in all (a row's
// choice narrows to the values it can hold).
SDW_SPMSPV_HD void col48Fma(float v0, float v1, float v2, float v3, unsigned m, float x, float (&a)[8]) {
  float f0 = v0, f1 = v1, f2 = v2;
  if (m & 1u) a[0] = fmaf(f0, x, a[0]), f0 = f1, f1 = f2, f2 = v3;
  if (m & 2u) a[1] = fmaf(f0, x, a[1]), f0 = f1, f1 = f2;
  if (m & 4u) a[2] = fmaf(f0, x, a[2]), f0 = f1;
  if (m & 8u) a[3] = fmaf(f0, x, a[3]);
  float b0 = v3, b1 = v2, b2 = v1;
  if (m & 128u) a[7] = fmaf(b0, x, a[7]), b0 = b1, b1 = b2, b2 = v0;
  if (m & 64u) a[6] = fmaf(b0, x, a[6]), b0 = b1, b1 = b2;
  if (m & 32u) a[5] = fmaf(b0, x, a[5]), b0 = b1;
  if (m & 16u) a[4] = fmaf(b0, x, a[4]);
}

// The half-warp walk of a column 2:4 (kG 4) or 4:8 (kG 8) chunk (SpmspvConfig::lanes 16), as
// the kernel adds it and the host tests replay it: lane h of a half-warp owns rows 16 h ..
// 16 h + 15 of the tile, which are the full-warp walk's lanes 2 h and 2 h + 1: v the 8 kept
// values at value bytes 16 h .. 16 h + 15 widened (lowest row first), meta the 16 bits at
// meta bytes 2 h, 2 h + 1 (little-endian: byte 2 h in the low bits); a0 gets rows 16 h ..
// 16 h + 7, a1 rows 16 h + 8 .. 16 h + 15. The same FMAs as the full-warp walk's two lanes.
template <int kG>
SDW_SPMSPV_HD void colHalfFma(const float (&v)[8], unsigned meta, float x, float (&a0)[8], float (&a1)[8]) {
  static_assert(kG == 4 || kG == 8);
  if constexpr (kG == 4) {
    col24GroupFma(v[0], v[1], meta & 15u, x, a0[0], a0[1], a0[2], a0[3]);
    col24GroupFma(v[2], v[3], (meta >> 4) & 15u, x, a0[4], a0[5], a0[6], a0[7]);
    col24GroupFma(v[4], v[5], (meta >> 8) & 15u, x, a1[0], a1[1], a1[2], a1[3]);
    col24GroupFma(v[6], v[7], (meta >> 12) & 15u, x, a1[4], a1[5], a1[6], a1[7]);
  } else {
    col48Fma(v[0], v[1], v[2], v[3], meta & 255u, x, a0);
    col48Fma(v[4], v[5], v[6], v[7], (meta >> 8) & 255u, x, a1);
  }
}

}  // namespace sdw::kernels
