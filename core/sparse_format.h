#pragma once
// The bitmask N:M sparse format (DESIGN §1 "kernel gap", docs/sparse-format.md).
//
// A [rows, cols] weight matrix with a 50% N:M pattern (2:4, 4:8, 8:16, 16:32)
// is stored as
//   masks:  [rows, cols/32] uint32, bit b of word (r, g) set iff W[r, 32g+b] is kept;
//   values: [rows, cols/2] 16-bit floats (bf16 or fp16 bits), the kept weights of
//           each row in increasing column order.
// Every mask word has exactly 16 set bits, so row r's values start at r*cols/2
// and word g's values at r*cols/2 + 16g: no offsets are stored.
//
// Widths that are not a multiple of 32 are rejected (every Llama/Qwen projection
// width is a multiple of 32; padding would change what a kernel reads).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sdw::sparse {

enum class DType : std::uint8_t { BF16 = 1, F16 = 2 };

std::string_view dtypeName(DType d);              // "bf16", "fp16"
DType parseDType(std::string_view s);             // throws std::invalid_argument

struct Pattern {
  int n = 2;  // kept per group
  int m = 4;  // group size
  friend bool operator==(const Pattern&, const Pattern&) = default;
};

// The four 50% patterns the format supports.
inline constexpr Pattern kPatterns[] = {{2, 4}, {4, 8}, {8, 16}, {16, 32}};
std::string patternName(Pattern p);               // "2:4"
Pattern parsePattern(std::string_view s);         // throws std::invalid_argument
bool isSupported(Pattern p);                      // one of kPatterns

// 16-bit float conversions (round to nearest even), host side.
std::uint16_t floatToBf16(float f);
float bf16ToFloat(std::uint16_t h);
std::uint16_t floatToHalf(float f);
float halfToFloat(std::uint16_t h);
std::uint16_t floatTo16(float f, DType d);
float from16(std::uint16_t h, DType d);

struct PackedMatrix {
  std::int64_t rows = 0;
  std::int64_t cols = 0;  // input features, a multiple of 32
  Pattern pattern;
  DType dtype = DType::BF16;
  std::vector<std::uint16_t> values;  // [rows, cols/2] bf16/fp16 bits
  std::vector<std::uint32_t> masks;   // [rows, cols/32]

  std::int64_t wordsPerRow() const { return cols / 32; }
  std::int64_t valuesPerRow() const { return cols / 2; }
  // Bytes a kernel must read: values + masks.
  std::uint64_t bytes() const { return values.size() * 2 + masks.size() * 4; }
};

// Throws std::invalid_argument naming the shape when [rows, cols] cannot hold
// the format (rows < 1, cols < 32 or not a multiple of 32).
void checkShape(std::int64_t rows, std::int64_t cols);

// keep: [rows, cols], nonzero = kept. Every aligned group of M columns of a row
// must keep exactly N. Values are rounded to `dtype`. Throws std::invalid_argument
// naming the first offending row and group.
PackedMatrix pack(std::span<const float> dense, std::span<const std::uint8_t> keep,
                  std::int64_t rows, std::int64_t cols, Pattern pattern, DType dtype);

// From a dense matrix that already follows the pattern: nonzeros are kept; a
// group with fewer than N nonzeros keeps its lowest-index zeros as well (a kept
// weight may be exactly zero). More than N nonzeros in a group is an error.
PackedMatrix packDense(std::span<const float> dense, std::int64_t rows, std::int64_t cols,
                       Pattern pattern, DType dtype);

// Dense [rows, cols] fp32 with zeros where pruned.
std::vector<float> unpack(const PackedMatrix& p);

// Throws std::invalid_argument with a one-line reason: shape, dtype, pattern,
// buffer sizes, and every word's bit count (exactly 16) and N:M grouping.
void validate(const PackedMatrix& p);

// Keeps, in every aligned group of M columns of each row, the N entries of largest
// magnitude (ties: lower column first) and zeros the rest, in place. Returns the
// keep mask [rows, cols]. For tests and benchmarks.
std::vector<std::uint8_t> imposePattern(std::span<float> w, std::int64_t rows, std::int64_t cols,
                                        Pattern pattern);

}  // namespace sdw::sparse
