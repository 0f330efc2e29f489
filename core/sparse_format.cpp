#include "core/sparse_format.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace sdw::sparse {

namespace {
std::string shapeText(std::int64_t rows, std::int64_t cols) {
  return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}
}  // namespace

std::string_view dtypeName(DType d) {
  switch (d) {
    case DType::BF16: return "bf16";
    case DType::F16: return "fp16";
  }
  return "?";
}

DType parseDType(std::string_view s) {
  if (s == "bf16" || s == "bfloat16") return DType::BF16;
  if (s == "fp16" || s == "f16" || s == "float16" || s == "half") return DType::F16;
  throw std::invalid_argument("unknown value dtype '" + std::string(s) + "' (have: bf16, fp16)");
}

std::string patternName(Pattern p) { return std::to_string(p.n) + ":" + std::to_string(p.m); }

bool isSupported(Pattern p) {
  return std::find(std::begin(kPatterns), std::end(kPatterns), p) != std::end(kPatterns);
}

Pattern parsePattern(std::string_view s) {
  for (const Pattern& p : kPatterns)
    if (patternName(p) == s) return p;
  throw std::invalid_argument("unknown N:M pattern '" + std::string(s) +
                              "' (have: 2:4, 4:8, 8:16, 16:32)");
}

std::uint16_t floatToBf16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  const std::uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
  return static_cast<std::uint16_t>(rounded >> 16);
}

float bf16ToFloat(std::uint16_t h) { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }

std::uint16_t floatToHalf(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  std::uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0u));
  if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (a < 0x38800000u) {  // below 2^-14: subnormal half (exact scaling, then RNE)
    const float scaled = std::bit_cast<float>(a) * 16777216.0f;
    return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(std::nearbyint(scaled)));
  }
  a += 0xfffu + ((a >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | ((a - 0x38000000u) >> 13));
}

float halfToFloat(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (e == 0) {
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;  // 2^-24
    return sign ? -v : v;
  }
  if (e == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((e + 112u) << 23) | (mant << 13));
}

std::uint16_t floatTo16(float f, DType d) { return d == DType::BF16 ? floatToBf16(f) : floatToHalf(f); }
float from16(std::uint16_t h, DType d) { return d == DType::BF16 ? bf16ToFloat(h) : halfToFloat(h); }

void checkShape(std::int64_t rows, std::int64_t cols) {
  if (rows < 1 || cols < 1)
    throw std::invalid_argument("sparse format: empty matrix " + shapeText(rows, cols));
  if (cols % 32 != 0)
    throw std::invalid_argument("sparse format: input width " + std::to_string(cols) + " of " +
                                shapeText(rows, cols) +
                                " is not a multiple of 32 (one mask word covers 32 columns; "
                                "pad the input features or keep this module dense)");
}

namespace {
void checkPattern(Pattern p) {
  if (!isSupported(p))
    throw std::invalid_argument("sparse format: unsupported pattern " + patternName(p) +
                                " (have: 2:4, 4:8, 8:16, 16:32)");
}
void checkDType(DType d) {
  if (d != DType::BF16 && d != DType::F16)
    throw std::invalid_argument("sparse format: unknown value dtype code " +
                                std::to_string(static_cast<int>(d)));
}
}  // namespace

PackedMatrix pack(std::span<const float> dense, std::span<const std::uint8_t> keep, std::int64_t rows,
                  std::int64_t cols, Pattern pattern, DType dtype) {
  checkShape(rows, cols);
  checkPattern(pattern);
  checkDType(dtype);
  const auto n = static_cast<std::size_t>(rows * cols);
  if (dense.size() != n || keep.size() != n)
    throw std::invalid_argument("sparse format: buffers of " + std::to_string(dense.size()) + " values and " +
                                std::to_string(keep.size()) + " flags do not hold " + shapeText(rows, cols));
  PackedMatrix p;
  p.rows = rows;
  p.cols = cols;
  p.pattern = pattern;
  p.dtype = dtype;
  p.values.resize(n / 2);
  p.masks.resize(n / 32);
  const std::int64_t words = cols / 32;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* w = dense.data() + r * cols;
    const std::uint8_t* k = keep.data() + r * cols;
    std::uint16_t* v = p.values.data() + r * (cols / 2);
    for (std::int64_t g = 0; g < words; ++g) {
      std::uint32_t m = 0;
      for (int b = 0; b < 32; ++b)
        if (k[32 * g + b]) m |= 1u << b;
      for (int s = 0; s < 32; s += pattern.m) {
        const int kept = std::popcount((m >> s) & ((pattern.m == 32 ? 0u : (1u << pattern.m)) - 1u));
        if (kept != pattern.n)
          throw std::invalid_argument("sparse format: row " + std::to_string(r) + ", columns " +
                                      std::to_string(32 * g + s) + ".." + std::to_string(32 * g + s + pattern.m - 1) +
                                      " keep " + std::to_string(kept) + " weights, pattern " +
                                      patternName(pattern) + " needs " + std::to_string(pattern.n));
      }
      p.masks[static_cast<std::size_t>(r * words + g)] = m;
      int i = 0;
      for (std::uint32_t mm = m; mm; mm &= mm - 1)
        v[16 * g + i++] = floatTo16(w[32 * g + std::countr_zero(mm)], dtype);
    }
  }
  return p;
}

PackedMatrix packDense(std::span<const float> dense, std::int64_t rows, std::int64_t cols, Pattern pattern,
                       DType dtype) {
  checkShape(rows, cols);
  checkPattern(pattern);
  if (dense.size() != static_cast<std::size_t>(rows * cols))
    throw std::invalid_argument("sparse format: buffer of " + std::to_string(dense.size()) +
                                " values does not hold " + shapeText(rows, cols));
  std::vector<std::uint8_t> keep(dense.size(), 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c0 = 0; c0 < cols; c0 += pattern.m) {
      const std::size_t base = static_cast<std::size_t>(r * cols + c0);
      int nz = 0;
      for (int j = 0; j < pattern.m; ++j) nz += dense[base + j] != 0.f;
      if (nz > pattern.n)
        throw std::invalid_argument("sparse format: row " + std::to_string(r) + ", columns " + std::to_string(c0) +
                                    ".." + std::to_string(c0 + pattern.m - 1) + " have " + std::to_string(nz) +
                                    " nonzeros, pattern " + patternName(pattern) + " allows " +
                                    std::to_string(pattern.n));
      int zerosToKeep = pattern.n - nz;
      for (int j = 0; j < pattern.m; ++j) {
        if (dense[base + j] != 0.f) keep[base + j] = 1;
        else if (zerosToKeep > 0) keep[base + j] = 1, --zerosToKeep;
      }
    }
  }
  return pack(dense, keep, rows, cols, pattern, dtype);
}

std::vector<float> unpack(const PackedMatrix& p) {
  validate(p);
  std::vector<float> out(static_cast<std::size_t>(p.rows * p.cols), 0.f);
  const std::int64_t words = p.wordsPerRow();
  for (std::int64_t r = 0; r < p.rows; ++r) {
    const std::uint16_t* v = p.values.data() + r * p.valuesPerRow();
    float* o = out.data() + r * p.cols;
    for (std::int64_t g = 0; g < words; ++g) {
      int i = 0;
      for (std::uint32_t m = p.masks[static_cast<std::size_t>(r * words + g)]; m; m &= m - 1)
        o[32 * g + std::countr_zero(m)] = from16(v[16 * g + i++], p.dtype);
    }
  }
  return out;
}

void validate(const PackedMatrix& p) {
  checkShape(p.rows, p.cols);
  checkPattern(p.pattern);
  checkDType(p.dtype);
  const auto words = static_cast<std::size_t>(p.rows * p.wordsPerRow());
  if (p.masks.size() != words)
    throw std::invalid_argument("sparse format: " + std::to_string(p.masks.size()) + " mask words, " +
                                shapeText(p.rows, p.cols) + " needs " + std::to_string(words));
  if (p.values.size() != words * 16)
    throw std::invalid_argument("sparse format: " + std::to_string(p.values.size()) + " values, " +
                                shapeText(p.rows, p.cols) + " needs " + std::to_string(words * 16));
  const std::uint32_t groupMask = p.pattern.m == 32 ? 0xffffffffu : (1u << p.pattern.m) - 1u;
  for (std::size_t i = 0; i < words; ++i) {
    const std::uint32_t m = p.masks[i];
    const int bits = std::popcount(m);
    const auto where = [&] {
      const auto wpr = static_cast<std::size_t>(p.wordsPerRow());
      return "row " + std::to_string(i / wpr) + ", word " + std::to_string(i % wpr);
    };
    if (bits != 16)
      throw std::invalid_argument("sparse format: mask " + where() + " has " + std::to_string(bits) +
                                  " set bits, a 50% pattern needs exactly 16");
    for (int s = 0; s < 32; s += p.pattern.m)
      if (std::popcount((m >> s) & groupMask) != p.pattern.n)
        throw std::invalid_argument("sparse format: mask " + where() + " breaks the " + patternName(p.pattern) +
                                    " pattern at bit " + std::to_string(s));
  }
}

std::vector<std::uint8_t> imposePattern(std::span<float> w, std::int64_t rows, std::int64_t cols,
                                        Pattern pattern) {
  checkPattern(pattern);
  if (rows < 1 || cols < 1 || cols % pattern.m != 0 || w.size() != static_cast<std::size_t>(rows * cols))
    throw std::invalid_argument("imposePattern: " + shapeText(rows, cols) + " with " + std::to_string(w.size()) +
                                " values cannot take pattern " + patternName(pattern));
  std::vector<std::uint8_t> keep(w.size(), 0);
  std::vector<int> idx(static_cast<std::size_t>(pattern.m));
  for (std::size_t base = 0; base < w.size(); base += static_cast<std::size_t>(pattern.m)) {
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(),
                     [&](int a, int b) { return std::abs(w[base + a]) > std::abs(w[base + b]); });
    for (int j = 0; j < pattern.m; ++j) {
      if (j < pattern.n) keep[base + idx[j]] = 1;
      else w[base + idx[j]] = 0.f;
    }
  }
  return keep;
}

}  // namespace sdw::sparse
