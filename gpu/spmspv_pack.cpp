// The host side of the spMspV layout (gpu/spmspv_pack.h).

#include "gpu/spmspv_pack.h"

#include "gpu/kernels/spmspv_layout.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <exception>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

namespace sdw::gpu {

using kernels::kSpmspvMaskBytes;
using kernels::kSpmspvMaskUnits;
using kernels::kSpmspvTileRows;
using kernels::kSpmspvValuesPerUnit;

namespace {
constexpr int kMaskWords = kSpmspvMaskBytes / 4;   // 8 uint32 per chunk
constexpr int kMaskHalves = kSpmspvMaskBytes / 2;  // the mask as 16 16-bit elements
bool isZero16(std::uint16_t h) { return (h & 0x7fffu) == 0; }

// fn(t0, t1) over [0, tiles) split across the host's cores (a whole model's projections
// are packed on load); a throw is rethrown after every thread joined, the lowest range's first.
template <typename Fn>
void forTileRanges(std::int64_t tiles, std::int64_t elements, Fn fn) {
  const auto hw = static_cast<std::int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  const std::int64_t n = std::min({hw, tiles, std::max<std::int64_t>(1, elements / (1 << 20))});
  if (n <= 1) {
    fn(std::int64_t{0}, tiles);
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> pool;
  const std::int64_t per = (tiles + n - 1) / n;
  for (std::int64_t i = 0; i < n; ++i)
    pool.emplace_back([&, i] {
      try {
        fn(i * per, std::min(tiles, (i + 1) * per));
      } catch (...) {
        errors[static_cast<std::size_t>(i)] = std::current_exception();
      }
    });
  for (std::thread& th : pool) th.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

// The mask words of a chunk starting at 16-bit element e.
std::uint32_t maskWord(const std::vector<std::uint16_t>& c, std::size_t e, int w) {
  return static_cast<std::uint32_t>(c[e + 2 * w]) | (static_cast<std::uint32_t>(c[e + 2 * w + 1]) << 16);
}
std::size_t chunkUnits(int nnz) {
  return kSpmspvMaskUnits + (static_cast<std::size_t>(nnz) + kSpmspvValuesPerUnit - 1) / kSpmspvValuesPerUnit;
}

// The column layouts (kernels::SpmspvFormat::Column24, Column48): a chunk is 144 16-bit
// elements, the 128 values (lane l's four at 4 l) and then the 32 meta bytes (byte l in
// element 128 + l / 2, low byte first): the mask of the lane's 8 rows, four bits set.
constexpr std::size_t kCol24Halves = kernels::kSpmspvCol24ChunkBytes / 2;  // 144
constexpr std::size_t kCol24MetaAt = kernels::kSpmspvCol24ValueBytes / 2;  // 128
// A fixed-chunk layout (column 2:4, 4:8 or dense).
bool isColumn(const SpmspvMatrix& m) { return kernels::spmspvColumnFormat(m.format); }
bool isDenseColumn(const SpmspvMatrix& m) { return m.format == kernels::SpmspvFormat::ColumnDense; }
// The dense column layout: a chunk is 256 16-bit values, lane l's 8 (rows 8 l .. 8 l + 7) at 8 l.
constexpr std::size_t kDenseHalves = kernels::kSpmspvDenseChunkBytes / 2;  // 256
SpmspvMatrix packColumnDense(std::span<const std::uint16_t> w, std::int64_t rows, std::int64_t cols,
                             sparse::DType dtype) {
  SpmspvMatrix m;
  m.rows = rows, m.cols = cols, m.dtype = dtype, m.format = kernels::SpmspvFormat::ColumnDense;
  const std::int64_t T = m.tiles();
  m.chunks.assign(static_cast<std::size_t>(T * cols) * kDenseHalves, 0);
  forTileRanges(T, rows * cols, [&](std::int64_t t0, std::int64_t t1) {
    for (std::int64_t t = t0; t < t1; ++t)
      for (std::int64_t j = 0; j < cols; ++j) {
        const std::size_t e = static_cast<std::size_t>(t * cols + j) * kDenseHalves;
        for (std::int64_t r = 0; r < kSpmspvTileRows && t * kSpmspvTileRows + r < rows; ++r)
          m.chunks[e + static_cast<std::size_t>(r)] = w[static_cast<std::size_t>((t * kSpmspvTileRows + r) * cols + j)];
      }
  });
  return m;
}
std::string columnName(kernels::SpmspvFormat f) {
  return f == kernels::SpmspvFormat::Column48 ? "column 4:8" : "column 2:4";
}

// The meta byte of lane l (rows 8 l .. 8 l + 7 of the tile) of the chunk at e.
unsigned columnMeta(const std::vector<std::uint16_t>& c, std::size_t e, int lane) {
  return (c[e + kCol24MetaAt + static_cast<std::size_t>(lane / 2)] >> (8 * (lane % 2))) & 0xffu;
}
// f(row within the tile, value) for each kept row of chunk g (t * cols + j) of a column
// layout, in increasing row. Column 2:4 / 4:8: lane l's k-th set meta bit holds its k-th
// value; every meta byte must hold exactly four bits (validateSpmspv checks that first).
// Dense: every row.
template <typename F>
void forEachColumnKept(const SpmspvMatrix& m, std::int64_t g, F f) {
  const std::vector<std::uint16_t>& c = m.chunks;
  if (m.format == kernels::SpmspvFormat::ColumnDense) {
    const std::size_t e = static_cast<std::size_t>(g) * kDenseHalves;
    for (int r = 0; r < kSpmspvTileRows; ++r) f(r, c[e + static_cast<std::size_t>(r)]);
    return;
  }
  const std::size_t e = static_cast<std::size_t>(g) * kCol24Halves;
  for (int lane = 0; lane < 32; ++lane) {
    std::size_t v = e + 4 * static_cast<std::size_t>(lane);
    for (unsigned b = columnMeta(c, e, lane); b != 0; b &= b - 1) f(8 * lane + std::countr_zero(b), c[v++]);
  }
}

// group: 4 (column 2:4) or 8 (column 4:8) rows, half of each kept.
SpmspvMatrix packColumn(std::span<const std::uint16_t> w, std::int64_t rows, std::int64_t cols, sparse::DType dtype,
                        kernels::SpmspvFormat format) {
  SpmspvMatrix m;
  m.rows = rows, m.cols = cols, m.dtype = dtype, m.format = format;
  const int G = kernels::spmspvColumnGroup(format), keep = G / 2;
  const std::int64_t T = m.tiles();
  m.chunks.assign(static_cast<std::size_t>(T * cols) * kCol24Halves, 0);
  forTileRanges(T, rows * cols, [&](std::int64_t t0, std::int64_t t1) {
    for (std::int64_t t = t0; t < t1; ++t)
      for (std::int64_t j = 0; j < cols; ++j) {
        const std::size_t e = static_cast<std::size_t>(t * cols + j) * kCol24Halves;
        for (int lane = 0; lane < 32; ++lane) {
          unsigned meta = 0;
          for (int g0 = 0; g0 < 8; g0 += G) {
            const std::int64_t r0 = t * kSpmspvTileRows + 8 * lane + g0;
            unsigned nz = 0;  // nonzero rows of the group
            for (int r = 0; r < G; ++r)
              if (r0 + r < rows && !isZero16(w[static_cast<std::size_t>((r0 + r) * cols + j)])) nz |= 1u << r;
            if (std::popcount(nz) > keep)
              throw std::invalid_argument("spMspV pack (" + columnName(format) + "): column " + std::to_string(j) +
                                          " keeps " + std::to_string(std::popcount(nz)) + " nonzeros in rows " +
                                          std::to_string(r0) + ".." + std::to_string(std::min(rows, r0 + G) - 1) +
                                          " (at most " + std::to_string(keep) + " of every " + std::to_string(G) +
                                          " rows)");
            unsigned kept = nz;
            for (int r = 0; r < G && std::popcount(kept) < keep; ++r) kept |= 1u << r;  // zeros at the lowest zero rows
            meta |= kept << g0;
          }
          std::size_t v = e + 4 * static_cast<std::size_t>(lane);
          for (unsigned b = meta; b != 0; b &= b - 1) {
            const std::int64_t r = t * kSpmspvTileRows + 8 * lane + std::countr_zero(b);
            if (r < rows && !isZero16(w[static_cast<std::size_t>(r * cols + j)]))  // kept zeros are stored as +0
              m.chunks[v] = w[static_cast<std::size_t>(r * cols + j)];
            ++v;
          }
          m.chunks[e + kCol24MetaAt + static_cast<std::size_t>(lane / 2)] |=
              static_cast<std::uint16_t>(meta << (8 * (lane % 2)));
        }
      }
  });
  return m;
}
}  // namespace

std::int64_t SpmspvMatrix::tiles() const { return kernels::spmspvTiles(rows); }

SpmspvMatrix packSpmspv(std::span<const std::uint16_t> w, std::int64_t rows, std::int64_t cols, sparse::DType dtype,
                        kernels::SpmspvFormat format) {
  if (rows < 1 || cols < 1 || static_cast<std::int64_t>(w.size()) != rows * cols)
    throw std::invalid_argument("spMspV pack: " + std::to_string(w.size()) + " values for [" + std::to_string(rows) +
                                ", " + std::to_string(cols) + "]");
  if (format == kernels::SpmspvFormat::ColumnDense) return packColumnDense(w, rows, cols, dtype);
  if (kernels::spmspvColumnFormat(format)) return packColumn(w, rows, cols, dtype, format);
  SpmspvMatrix m;
  m.rows = rows, m.cols = cols, m.dtype = dtype;
  const std::int64_t T = m.tiles();
  m.offsets.resize(static_cast<std::size_t>(T * cols + 1));
  m.chunks.reserve(static_cast<std::size_t>(T * cols) * kSpmspvValuesPerUnit * kSpmspvMaskUnits +
                   static_cast<std::size_t>(rows * cols) / 2);
  std::vector<std::uint16_t> vals;
  for (std::int64_t t = 0; t < T; ++t) {
    const std::int64_t r0 = t * kSpmspvTileRows, r1 = std::min(rows, r0 + kSpmspvTileRows);
    for (std::int64_t j = 0; j < cols; ++j) {
      if (m.chunks.size() / kSpmspvValuesPerUnit > 0xffffffffu)
        throw std::invalid_argument("spMspV pack: layout over 2^32 16-byte units");
      m.offsets[static_cast<std::size_t>(t * cols + j)] =
          static_cast<std::uint32_t>(m.chunks.size() / kSpmspvValuesPerUnit);
      std::uint32_t mask[kMaskWords] = {};
      vals.clear();
      for (std::int64_t r = r0; r < r1; ++r) {
        const std::uint16_t v = w[static_cast<std::size_t>(r * cols + j)];
        if (isZero16(v)) continue;
        const auto k = static_cast<int>(r - r0);
        mask[k / 32] |= 1u << (k % 32);
        vals.push_back(v);
      }
      for (std::uint32_t word : mask) {
        m.chunks.push_back(static_cast<std::uint16_t>(word & 0xffffu));
        m.chunks.push_back(static_cast<std::uint16_t>(word >> 16));
      }
      m.chunks.insert(m.chunks.end(), vals.begin(), vals.end());
      m.chunks.resize((m.chunks.size() + kSpmspvValuesPerUnit - 1) / kSpmspvValuesPerUnit * kSpmspvValuesPerUnit, 0);
    }
  }
  if (m.chunks.size() / kSpmspvValuesPerUnit > 0xffffffffu)
    throw std::invalid_argument("spMspV pack: layout over 2^32 16-byte units");
  m.offsets.back() = static_cast<std::uint32_t>(m.chunks.size() / kSpmspvValuesPerUnit);
  return m;
}

void validateSpmspv(const SpmspvMatrix& m) {
  const auto fail = [](const std::string& why) { throw std::invalid_argument("spMspV layout: " + why); };
  if (m.rows < 1 || m.cols < 1) fail("empty shape");
  const std::int64_t T = m.tiles();
  if (isDenseColumn(m)) {
    if (m.chunks.size() != static_cast<std::size_t>(T * m.cols) * kDenseHalves || !m.offsets.empty())
      fail("column dense: chunk buffer size is not tiles x cols x 512 bytes, or an offset table is present");
    const std::int64_t validRows = m.rows - (T - 1) * kSpmspvTileRows;  // of the last tile
    for (std::int64_t j = 0; j < m.cols; ++j)
      for (std::int64_t r = validRows; r < kSpmspvTileRows; ++r)
        if (!isZero16(
                m.chunks[static_cast<std::size_t>((T - 1) * m.cols + j) * kDenseHalves + static_cast<std::size_t>(r)]))
          fail("column dense: nonzero value in a padding row of column " + std::to_string(j));
    return;
  }
  if (isColumn(m)) {
    const std::string name = columnName(m.format);
    if (m.chunks.size() != static_cast<std::size_t>(T * m.cols) * kCol24Halves || !m.offsets.empty())
      fail(name + ": chunk buffer size is not tiles x cols x 288 bytes, or an offset table is present");
    const int G = kernels::spmspvColumnGroup(m.format);
    const unsigned groupMask = (1u << G) - 1;
    for (std::int64_t g = 0; g < T * m.cols; ++g) {
      const std::size_t e = static_cast<std::size_t>(g) * kCol24Halves;
      const std::int64_t validRows = std::min<std::int64_t>(kSpmspvTileRows, m.rows - g / m.cols * kSpmspvTileRows);
      for (int lane = 0; lane < 32; ++lane)
        for (int g0 = 0; g0 < 8; g0 += G)
          if (std::popcount(columnMeta(m.chunks, e, lane) >> g0 & groupMask) != G / 2)
            fail(name + ": chunk " + std::to_string(g) + " rows " + std::to_string(8 * lane + g0) + ".." +
                 std::to_string(8 * lane + g0 + G - 1) + " keep other than " + std::to_string(G / 2) + " rows");
      forEachColumnKept(m, g, [&](int r, std::uint16_t v) {
        if (r >= validRows && !isZero16(v))
          fail(name + ": nonzero value in a padding row of chunk " + std::to_string(g));
      });
    }
    return;
  }
  if (static_cast<std::int64_t>(m.offsets.size()) != T * m.cols + 1) fail("offsets: wrong count");
  if (m.chunks.size() % kSpmspvValuesPerUnit != 0 ||
      m.offsets.back() * std::size_t{kSpmspvValuesPerUnit} != m.chunks.size())
    fail("chunk buffer size does not match the last offset");
  if (m.offsets.front() != 0) fail("first offset not 0");
  for (std::int64_t t = 0; t < T; ++t) {
    const std::int64_t validRows = std::min<std::int64_t>(kSpmspvTileRows, m.rows - t * kSpmspvTileRows);
    for (std::int64_t j = 0; j < m.cols; ++j) {
      const std::size_t g = static_cast<std::size_t>(t * m.cols + j);
      if (m.offsets[g + 1] < m.offsets[g]) fail("offsets decrease at chunk " + std::to_string(g));
      const std::size_t e = std::size_t{m.offsets[g]} * kSpmspvValuesPerUnit;
      if (m.offsets[g + 1] - m.offsets[g] < static_cast<std::uint32_t>(kSpmspvMaskUnits)) fail("chunk too small");
      int nnz = 0;
      for (int wd = 0; wd < kMaskWords; ++wd) {
        const std::uint32_t word = maskWord(m.chunks, e, wd);
        nnz += std::popcount(word);
        for (int b = 0; b < 32; ++b)
          if ((word >> b & 1u) && wd * 32 + b >= validRows)
            fail("mask bit of a padding row in chunk " + std::to_string(g));
      }
      if (m.offsets[g + 1] - m.offsets[g] != chunkUnits(nnz))
        fail("chunk " + std::to_string(g) + " size does not match its mask");
      const std::size_t v0 = e + kMaskHalves, end = std::size_t{m.offsets[g + 1]} * kSpmspvValuesPerUnit;
      for (std::size_t i = v0; i < v0 + static_cast<std::size_t>(nnz); ++i)
        if (isZero16(m.chunks[i])) fail("a kept value is zero in chunk " + std::to_string(g));
      for (std::size_t i = v0 + static_cast<std::size_t>(nnz); i < end; ++i)
        if (m.chunks[i] != 0) fail("nonzero padding in chunk " + std::to_string(g));
    }
  }
}

std::vector<std::uint16_t> unpackSpmspv(const SpmspvMatrix& m) {
  validateSpmspv(m);
  std::vector<std::uint16_t> w(static_cast<std::size_t>(m.rows * m.cols), 0);
  if (isColumn(m)) {
    for (std::int64_t t = 0; t < m.tiles(); ++t)
      for (std::int64_t j = 0; j < m.cols; ++j)
        forEachColumnKept(m, t * m.cols + j, [&](int r, std::uint16_t v) {
          const std::int64_t row = t * kSpmspvTileRows + r;
          if (row < m.rows) w[static_cast<std::size_t>(row * m.cols + j)] = isZero16(v) ? 0 : v;
        });
    return w;
  }
  for (std::int64_t t = 0; t < m.tiles(); ++t)
    for (std::int64_t j = 0; j < m.cols; ++j) {
      const std::size_t e = std::size_t{m.offsets[static_cast<std::size_t>(t * m.cols + j)]} * kSpmspvValuesPerUnit;
      std::size_t v = e + kMaskHalves;
      for (int wd = 0; wd < kMaskWords; ++wd)
        for (std::uint32_t word = maskWord(m.chunks, e, wd); word != 0; word &= word - 1) {
          const std::int64_t r = t * kSpmspvTileRows + wd * 32 + std::countr_zero(word);
          w[static_cast<std::size_t>(r * m.cols + j)] = m.chunks[v++];
        }
    }
  return w;
}

bool spmspvActive(float xj, float threshold) { return std::fabs(xj) > threshold; }

void spmspvCpu(const SpmspvMatrix& m, std::span<const float> x, float threshold, std::span<float> y) {
  if (static_cast<std::int64_t>(x.size()) != m.cols || static_cast<std::int64_t>(y.size()) != m.rows)
    throw std::invalid_argument("spMspV: x or y of the wrong size");
  std::fill(y.begin(), y.end(), 0.f);
  for (std::int64_t t = 0; t < m.tiles(); ++t)
    for (std::int64_t j = 0; j < m.cols; ++j) {
      const float xj = x[static_cast<std::size_t>(j)];
      if (!spmspvActive(xj, threshold)) continue;
      if (isColumn(m)) {
        const std::int64_t r0 = t * kSpmspvTileRows, valid = std::min<std::int64_t>(kSpmspvTileRows, m.rows - r0);
        forEachColumnKept(m, t * m.cols + j, [&](int r, std::uint16_t v) {
          if (r >= 0 && r < valid && !isZero16(v))
            y[static_cast<std::size_t>(r0 + r)] += sparse::from16(v, m.dtype) * xj;
        });
        continue;
      }
      const std::size_t e = std::size_t{m.offsets[static_cast<std::size_t>(t * m.cols + j)]} * kSpmspvValuesPerUnit;
      std::size_t v = e + kMaskHalves;
      for (int wd = 0; wd < kMaskWords; ++wd)
        for (std::uint32_t word = maskWord(m.chunks, e, wd); word != 0; word &= word - 1) {
          const std::int64_t r = t * kSpmspvTileRows + wd * 32 + std::countr_zero(word);
          y[static_cast<std::size_t>(r)] += sparse::from16(m.chunks[v++], m.dtype) * xj;
        }
    }
}

double spmspvReadBytes(const SpmspvMatrix& m, std::span<const float> x, float threshold) {
  if (static_cast<std::int64_t>(x.size()) != m.cols) throw std::invalid_argument("spMspV: x of the wrong size");
  if (isColumn(m)) {
    double active = 0;
    for (std::int64_t j = 0; j < m.cols; ++j) active += spmspvActive(x[static_cast<std::size_t>(j)], threshold) ? 1 : 0;
    return active * static_cast<double>(m.tiles()) * kernels::spmspvChunkBytes(m.format) +
           2.0 * static_cast<double>(m.cols);
  }
  double units = 0;
  for (std::int64_t t = 0; t < m.tiles(); ++t)
    for (std::int64_t j = 0; j < m.cols; ++j)
      if (spmspvActive(x[static_cast<std::size_t>(j)], threshold)) {
        const auto g = static_cast<std::size_t>(t * m.cols + j);
        units += m.offsets[g + 1] - m.offsets[g];
      }
  return units * kernels::kSpmspvUnitBytes + 4.0 * static_cast<double>(m.offsets.size()) +
         2.0 * static_cast<double>(m.cols);
}

float activationThreshold(std::span<std::uint16_t> x, sparse::DType dtype, double p) {
  if (!(p >= 0 && p <= 1)) throw std::invalid_argument("activation sparsity must be in [0, 1]");
  const std::size_t n = x.size();
  const auto k = static_cast<std::size_t>(std::llround(p * static_cast<double>(n)));
  if (k == 0) return -1.f;
  const auto mag = [&](std::size_t i) { return std::fabs(sparse::from16(x[i], dtype)); };
  std::vector<std::size_t> idx(n);
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return mag(a) < mag(b); });
  const float t = mag(idx[k - 1]);
  // Entries after the k-th that tie with it would not be read: one ulp up (the
  // magnitude bits, sign kept) makes them > t.
  for (std::size_t i = k; i < n && mag(idx[i]) == t; ++i)
    x[idx[i]] = static_cast<std::uint16_t>((x[idx[i]] & 0x8000u) | ((x[idx[i]] & 0x7fffu) + 1));
  return t;
}

std::vector<std::uint16_t> randomPrunedWeights(std::int64_t rows, std::int64_t cols, sparse::DType dtype,
                                               std::int64_t keep, std::int64_t group, std::uint64_t seed) {
  if (rows < 1 || cols < 1 || group < 1 || cols % group != 0 || keep < 0 || keep > group)
    throw std::invalid_argument("randomPrunedWeights: bad shape or pattern");
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> ud(-1.f, 1.f);
  std::vector<std::uint16_t> w(static_cast<std::size_t>(rows * cols), 0);
  std::vector<std::int64_t> idx(static_cast<std::size_t>(group));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t g0 = 0; g0 < cols; g0 += group) {
      std::iota(idx.begin(), idx.end(), g0);
      for (std::int64_t i = 0; i < keep; ++i) {  // partial Fisher-Yates: the first `keep` are kept
        std::uniform_int_distribution<std::int64_t> pick(i, group - 1);
        std::swap(idx[static_cast<std::size_t>(i)], idx[static_cast<std::size_t>(pick(rng))]);
        std::uint16_t h = 0;
        while (isZero16(h)) h = sparse::floatTo16(ud(rng), dtype);
        w[static_cast<std::size_t>(r * cols + idx[static_cast<std::size_t>(i)])] = h;
      }
    }
  return w;
}

std::vector<std::uint16_t> randomColumnPrunedWeights(std::int64_t rows, std::int64_t cols, sparse::DType dtype,
                                                     std::int64_t keep, std::int64_t group, std::uint64_t seed) {
  if (rows < 1 || cols < 1 || group < 1 || rows % group != 0)
    throw std::invalid_argument("randomColumnPrunedWeights: bad shape or pattern");
  const std::vector<std::uint16_t> t = randomPrunedWeights(cols, rows, dtype, keep, group, seed);  // [cols, rows]
  std::vector<std::uint16_t> w(t.size());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < cols; ++j)
      w[static_cast<std::size_t>(r * cols + j)] = t[static_cast<std::size_t>(j * rows + r)];
  return w;
}

std::vector<std::uint16_t> randomNormal16(std::int64_t n, sparse::DType dtype, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<std::uint16_t> x(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)));
  for (auto& h : x) do
      h = sparse::floatTo16(nd(rng), dtype);
    while (isZero16(h));
  return x;
}

}  // namespace sdw::gpu
