// CPU bitmask SpMV. Per mask word the same fixed 16-step traversal as the CUDA
// kernel (c = ctz(m); acc += v[i] * x[32g + c]; m &= m - 1), rows split over
// std::thread workers. Values are widened through a 64 Ki-entry table so bf16
// and fp16 cost the same.

#include "gpu/spmv_cpu.h"

#include <algorithm>
#include <array>
#include <bit>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace sdw::gpu {

namespace {

const float* widenTable(sparse::DType d) {
  static const auto make = [](sparse::DType dt) {
    auto t = std::make_unique<std::array<float, 65536>>();
    for (std::uint32_t h = 0; h < 65536; ++h) (*t)[h] = sparse::from16(static_cast<std::uint16_t>(h), dt);
    return t;
  };
  static const auto bf16 = make(sparse::DType::BF16);
  static const auto f16 = make(sparse::DType::F16);
  return d == sparse::DType::BF16 ? bf16->data() : f16->data();
}

template <typename Fn>
void parallelRows(std::int64_t rows, std::int64_t work, int threads, Fn fn) {
  int n = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Small problems are not worth a thread start.
  n = static_cast<int>(std::min<std::int64_t>({n, rows, std::max<std::int64_t>(1, work / (1 << 16))}));
  if (n <= 1) {
    fn(std::int64_t{0}, rows);
    return;
  }
  std::vector<std::thread> pool;
  const std::int64_t chunk = (rows + n - 1) / n;
  for (int t = 0; t < n; ++t) {
    const std::int64_t r0 = t * chunk, r1 = std::min(rows, r0 + chunk);
    if (r0 < r1) pool.emplace_back([=] { fn(r0, r1); });
  }
  for (auto& th : pool) th.join();
}

void checkIo(std::int64_t rows, std::int64_t cols, std::size_t xSize, int batch, std::size_t ySize,
             std::int64_t ldy) {
  if (batch < 1 || batch > 64 || ldy < rows)
    throw std::invalid_argument("spmv: batch " + std::to_string(batch) + " / ldy " + std::to_string(ldy) +
                                " invalid for " + std::to_string(rows) + " rows");
  if (xSize != static_cast<std::size_t>(batch * cols))
    throw std::invalid_argument("spmv: x holds " + std::to_string(xSize) + " values, need [" +
                                std::to_string(batch) + ", " + std::to_string(cols) + "]");
  if (ySize < static_cast<std::size_t>((batch - 1) * ldy + rows))
    throw std::invalid_argument("spmv: y holds " + std::to_string(ySize) + " values, too few for [" +
                                std::to_string(batch) + ", " + std::to_string(rows) + "]");
}

}  // namespace

void spmvCpu(const sparse::PackedMatrix& w, std::span<const float> x, int batch, std::span<float> y,
             std::int64_t ldy, int threads) {
  sparse::checkShape(w.rows, w.cols);
  if (w.masks.size() != static_cast<std::size_t>(w.rows * w.wordsPerRow()) ||
      w.values.size() != w.masks.size() * 16)
    throw std::invalid_argument("spmv: packed buffers do not match the shape");
  checkIo(w.rows, w.cols, x.size(), batch, y.size(), ldy);
  const float* table = widenTable(w.dtype);
  const std::int64_t words = w.wordsPerRow(), cols = w.cols;
  parallelRows(w.rows, w.rows * cols * batch, threads, [&](std::int64_t r0, std::int64_t r1) {
    std::vector<float> acc(static_cast<std::size_t>(batch));
    for (std::int64_t r = r0; r < r1; ++r) {
      std::fill(acc.begin(), acc.end(), 0.f);
      const std::uint16_t* v = w.values.data() + r * (cols / 2);
      const std::uint32_t* mk = w.masks.data() + r * words;
      for (std::int64_t g = 0; g < words; ++g) {
        std::uint32_t m = mk[g];
        const std::uint16_t* vg = v + 16 * g;
        const float* xg = x.data() + 32 * g;
        if (batch == 1) {
          float a = 0.f;
          for (int i = 0; i < 16; ++i) {  // fixed trip count: every word has 16 set bits
            const int c = std::countr_zero(m);
            a += table[vg[i]] * xg[c];
            m &= m - 1;
          }
          acc[0] += a;
        } else {
          for (int i = 0; i < 16; ++i) {
            const int c = std::countr_zero(m);
            const float wv = table[vg[i]];
            for (int b = 0; b < batch; ++b) acc[static_cast<std::size_t>(b)] += wv * xg[b * cols + c];
            m &= m - 1;
          }
        }
      }
      for (int b = 0; b < batch; ++b) y[static_cast<std::size_t>(b * ldy + r)] = acc[static_cast<std::size_t>(b)];
    }
  });
}

void gemvCpu(std::span<const std::uint16_t> w, sparse::DType dtype, std::int64_t rows, std::int64_t cols,
             std::span<const float> x, int batch, std::span<float> y, std::int64_t ldy, int threads) {
  if (rows < 1 || cols < 1 || w.size() != static_cast<std::size_t>(rows * cols))
    throw std::invalid_argument("gemv: weights hold " + std::to_string(w.size()) + " values, need [" +
                                std::to_string(rows) + ", " + std::to_string(cols) + "]");
  checkIo(rows, cols, x.size(), batch, y.size(), ldy);
  const float* table = widenTable(dtype);
  parallelRows(rows, rows * cols * batch, threads, [&](std::int64_t r0, std::int64_t r1) {
    std::vector<float> wrow(static_cast<std::size_t>(cols));
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::uint16_t* wr = w.data() + r * cols;
      for (std::int64_t c = 0; c < cols; ++c) wrow[static_cast<std::size_t>(c)] = table[wr[c]];
      for (int b = 0; b < batch; ++b) {
        // Eight partial sums so the compiler can vectorise without reassociation flags.
        float s[8] = {};
        const float* xb = x.data() + b * cols;
        std::int64_t c = 0;
        for (; c + 8 <= cols; c += 8)
          for (int k = 0; k < 8; ++k) s[k] += wrow[static_cast<std::size_t>(c + k)] * xb[c + k];
        for (; c < cols; ++c) s[0] += wrow[static_cast<std::size_t>(c)] * xb[c];
        y[static_cast<std::size_t>(b * ldy + r)] = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
      }
    }
  });
}

}  // namespace sdw::gpu
