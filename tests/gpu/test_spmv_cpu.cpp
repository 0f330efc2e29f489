// The CPU bitmask SpMV and dense GEMV against a float64 dense reference, with
// guard regions around the outputs; the device-layout decoder of the kernel cases.

#include "core/sparse_format.h"
#include "gpu/bench.h"
#include "gpu/kernel_cases.h"
#include "gpu/kernels/spmv_tc.h"
#include "gpu/spmv.h"
#include "gpu/spmv_cpu.h"
#include "gpu/spmv_ops.h"

#include <torch/torch.h>

#include <QtTest>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <filesystem>
#include <random>

using namespace sdw;
using sparse::DType;
using sparse::Pattern;

namespace {
constexpr float kSentinel = -777.25f;
constexpr std::int64_t kGuard = 37;

// A host model of `prmt.b32 d, a, 0, c` (default mode): selector nibbles 0-3 pick a's bytes,
// 4-7 the zero operand's; a nibble with bit 3 set would replicate a sign. Our selectors use
// 0-4 only: *outOfRange counts any other nibble.
std::uint32_t prmtZeroModel(std::uint32_t a, std::uint32_t c, int* outOfRange) {
  std::uint32_t d = 0;
  for (int i = 0; i < 4; ++i) {
    const unsigned n = (c >> (4 * i)) & 15u;
    if (n > 4) ++*outOfRange;
    const std::uint32_t byte = n < 4 ? (a >> (8 * n)) & 0xffu : 0u;
    d |= byte << (8 * i);
  }
  return d;
}

// The kernel's 8:16 expansion (tcExpandRow16) through that model: the low byte of `bits` from
// the bottom of lo[0..3], the high byte from the top of hi[0..3].
template <typename Prmt>
void expandRow16Model(const kernels::TcSelectorTable16& tab, const std::uint32_t (&lo)[4], const std::uint32_t (&hi)[4],
                      unsigned bits, Prmt prmt, std::uint32_t (&e)[8]) {
  const unsigned lb = bits & 255u, hb = (bits >> 8) & 255u;
  const auto l = [&](int k) { return kernels::tcSel16Word(tab, 0, lb, unsigned(k) / 2) >> (16 * (k & 1)); };
  const auto h = [&](int k) { return kernels::tcSel16Word(tab, 1, hb, unsigned(k) / 2) >> (16 * (k & 1)); };
  e[0] = prmt(lo[0], l(0));
  e[1] = prmt(lo[0], l(1)) | prmt(lo[1], l(2));
  e[2] = prmt(lo[0], l(3)) | prmt(lo[1], l(4)) | prmt(lo[2], l(5));
  e[3] = prmt(lo[0], l(6)) | prmt(lo[1], l(7)) | prmt(lo[2], l(8)) | prmt(lo[3], l(9));
  e[4] = prmt(hi[0], h(0)) | prmt(hi[1], h(1)) | prmt(hi[2], h(2)) | prmt(hi[3], h(3));
  e[5] = prmt(hi[1], h(4)) | prmt(hi[2], h(5)) | prmt(hi[3], h(6));
  e[6] = prmt(hi[2], h(7)) | prmt(hi[3], h(8));
  e[7] = prmt(hi[3], h(9));
}

// Whether the expanded 16-bit pairs `e` hold want(p) at every position p < n; QTest's
// failure message names the first that does not.
template <typename Want>
bool expandedAsWanted(const std::uint32_t* e, int n, Want want, const QString& what) {
  for (int p = 0; p < n; ++p) {
    const std::uint16_t got = static_cast<std::uint16_t>(e[p / 2] >> (16 * (p % 2)));
    const std::uint16_t w = want(p);
    if (got != w) {
      QTest::qFail(
          qPrintable(QStringLiteral("%1 position %2: %3, want %4").arg(what).arg(p).arg(got, 4, 16).arg(w, 4, 16)),
          __FILE__, __LINE__);
      return false;
    }
  }
  return true;
}

struct Case {
  std::vector<float> w;  // dense, pattern imposed, rounded to the dtype
  std::vector<float> x;  // [batch, cols]
  std::vector<double> ref;     // [batch, rows]
  std::vector<double> absRef;  // sum_k |w x|: the scale of fp32 rounding
};

Case makeCase(std::int64_t rows, std::int64_t cols, int batch, Pattern p, DType dt, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  Case c;
  c.w.resize(std::size_t(rows * cols));
  for (auto& v : c.w) v = nd(rng);
  sparse::imposePattern(c.w, rows, cols, p);
  for (auto& v : c.w) v = sparse::from16(sparse::floatTo16(v, dt), dt);
  c.x.resize(std::size_t(batch * cols));
  for (auto& v : c.x) v = nd(rng);
  c.ref.assign(std::size_t(batch * rows), 0.0);
  c.absRef.assign(std::size_t(batch * rows), 0.0);
  for (int b = 0; b < batch; ++b)
    for (std::int64_t r = 0; r < rows; ++r) {
      double s = 0, a = 0;
      for (std::int64_t k = 0; k < cols; ++k) {
        const double t = double(c.w[std::size_t(r * cols + k)]) * c.x[std::size_t(b * cols + k)];
        s += t;
        a += std::abs(t);
      }
      c.ref[std::size_t(b * rows + r)] = s;
      c.absRef[std::size_t(b * rows + r)] = a;
    }
  return c;
}

// y lives inside a buffer with kGuard sentinels before, between rows of the
// batch (ldy = rows + 3) and after.
void checkOutput(const std::vector<float>& buf, const Case& c, std::int64_t rows, int batch, std::int64_t ldy) {
  double err = 0, norm = 0;
  for (int b = 0; b < batch; ++b)
    for (std::int64_t r = 0; r < rows; ++r) {
      const double got = buf[std::size_t(kGuard + b * ldy + r)], ref = c.ref[std::size_t(b * rows + r)];
      QVERIFY2(std::isfinite(got), "non-finite output");
      // fp32 accumulation: error within a few ulps of the magnitudes summed.
      QVERIFY2(std::abs(got - ref) <= 1e-6 * c.absRef[std::size_t(b * rows + r)] + 1e-30,
               qPrintable(QStringLiteral("b %1 row %2: %3 vs %4").arg(b).arg(r).arg(got).arg(ref)));
      err += (got - ref) * (got - ref);
      norm += ref * ref;
    }
  const double rel = std::sqrt(err / std::max(norm, 1e-300));
  QVERIFY2(rel < 1e-4, qPrintable(QStringLiteral("relative error %1").arg(rel)));
  for (std::size_t i = 0; i < buf.size(); ++i) {
    const auto off = std::int64_t(i) - kGuard;
    const bool inside = off >= 0 && off < batch * ldy && off % ldy < rows;
    if (!inside) QVERIFY2(buf[i] == kSentinel, qPrintable(QStringLiteral("guard overwritten at %1").arg(i)));
  }
}
}  // namespace

class TestSpmvCpu : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void matchesReference_data() {
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("cols");
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("m");
    QTest::addColumn<int>("dtype");
    QTest::addColumn<int>("threads");
    for (const Pattern& p : sparse::kPatterns) {
      QTest::addRow("1x32 b1 %d:%d", p.n, p.m) << 1 << 32 << 1 << p.n << p.m << 1 << 1;
      QTest::addRow("odd 37x96 b3 %d:%d", p.n, p.m) << 37 << 96 << 3 << p.n << p.m << 1 << 2;
      QTest::addRow("odd 33x256 b8 fp16 %d:%d", p.n, p.m) << 33 << 256 << 8 << p.n << p.m << 2 << 3;
      QTest::addRow("large K 9x14336 b2 %d:%d", p.n, p.m) << 9 << 14336 << 2 << p.n << p.m << 1 << 0;
    }
    for (int b = 1; b <= 8; ++b) QTest::addRow("batch %d 65x512", b) << 65 << 512 << b << 8 << 16 << 1 << 0;
    QTest::addRow("threads 1031x1024") << 1031 << 1024 << 1 << 2 << 4 << 1 << 0;
  }
  void matchesReference() {
    QFETCH(int, rows);
    QFETCH(int, cols);
    QFETCH(int, batch);
    QFETCH(int, n);
    QFETCH(int, m);
    QFETCH(int, dtype);
    QFETCH(int, threads);
    const auto dt = static_cast<DType>(dtype);
    const Case c = makeCase(rows, cols, batch, {n, m}, dt, unsigned(rows * 31 + cols + batch * 7 + n));
    const auto packed = sparse::packDense(c.w, rows, cols, {n, m}, dt);
    const std::int64_t ldy = rows + 3;
    std::vector<float> buf(std::size_t(2 * kGuard + batch * ldy), kSentinel);
    std::span<float> y(buf.data() + kGuard, std::size_t(batch * ldy));
    gpu::spmvCpu(packed, c.x, batch, y, ldy, threads);
    checkOutput(buf, c, rows, batch, ldy);

    // The dense GEMV on the same (zero-filled) weights gives the same answer.
    std::vector<std::uint16_t> w16(c.w.size());
    for (std::size_t i = 0; i < w16.size(); ++i) w16[i] = sparse::floatTo16(c.w[i], dt);
    std::fill(buf.begin(), buf.end(), kSentinel);
    gpu::gemvCpu(w16, dt, rows, cols, c.x, batch, y, ldy, threads);
    checkOutput(buf, c, rows, batch, ldy);
  }

  // The device-layout decoder behind the device test's references (gpu/kernel_cases.h)
  // gives back the packed matrix, laid out by toDeviceLayout on the CPU (odd rows: the
  // inert padding rows are dropped).
  void deviceLayoutDecodesToThePackedMatrix() {
    for (const Pattern& p : sparse::kPatterns)
      for (const DType dt : {DType::BF16, DType::F16})
        for (const auto& [rows, cols] : {std::pair<int, int>{37, 96}, {64, 32}, {33, 256}}) {
          const Case c = makeCase(rows, cols, 1, p, dt, unsigned(rows + cols + p.n));
          const auto packed = sparse::packDense(c.w, rows, cols, p, dt);
          const auto d = gpu::toDeviceLayout(packed, torch::Device(torch::kCPU));
          const auto got = gpu::denseFromDeviceLayout(d.values, d.masks, rows, cols, dt);
          auto want = sparse::unpack(packed);
          const auto wantT = torch::from_blob(want.data(), {rows, cols}, torch::kFloat).to(torch::kDouble);
          QVERIFY2(torch::equal(got, wantT), qPrintable(QStringLiteral("%1x%2 %3:%4").arg(rows).arg(cols).arg(p.n).arg(p.m)));
        }
  }

  // The tensor-core SpMV's byte selectors (gpu/kernels/spmv_tc.h), through a host model of
  // `prmt.b32 d, a, 0, c` (default mode: selector nibbles 0-3 pick a's bytes, 4-7 the zero
  // operand's; bit 3 would replicate a sign, so no selector may set it): for every mask byte
  // with four kept columns, four distinct values land at the kept positions in column order
  // and every other position is zero.
  void tensorCoreSelectorsExpandEveryByteOfFour() {
    static constexpr kernels::TcSelectorTable tab = kernels::makeTcSelectors();
    int outOfRange = 0;
    const auto prmt = [&outOfRange](std::uint32_t a, std::uint32_t c) { return prmtZeroModel(a, c, &outOfRange); };
    for (int e = 0; e < 1024; ++e)
      if (e % 4 != 3) (void)prmt(0u, tab.v[e]), (void)prmt(0u, tab.v[e] >> 16);
    QCOMPARE(outOfRange, 0);
    const std::uint16_t vals[4] = {0x1357, 0x2468, 0x9abc, 0xdef1};
    const std::uint32_t lo = vals[0] | std::uint32_t(vals[1]) << 16, hi = vals[2] | std::uint32_t(vals[3]) << 16;
    int bytes = 0;
    for (unsigned b = 0; b < 256; ++b) {
      if (std::popcount(b) != 4) continue;
      const std::uint32_t* s = tab.v + 4 * b;
      const std::uint32_t out[4] = {prmt(lo, s[0]), prmt(lo, s[1]) | prmt(hi, s[1] >> 16),
                                    prmt(lo, s[2]) | prmt(hi, s[2] >> 16), prmt(hi, s[0] >> 16)};
      int idx = 0;
      const auto want = [&](int p) -> std::uint16_t { return ((b >> p) & 1u) ? vals[idx++] : 0; };
      if (!expandedAsWanted(out, 8, want, QStringLiteral("byte 0x%1").arg(b, 2, 16, QChar('0')))) return;
      ++bytes;
    }
    QCOMPARE(bytes, 70);  // C(8, 4): every 4:8 byte, the 36 of 2:4 among them
  }

  // The 8:16 selectors (makeTcSelectors16) through the same prmt model and the kernel's
  // formula (tcExpandRow16): for every 16-column mask with eight kept columns (every 8:16
  // group, the 2:4 and 4:8 ones among them) and for a padding row's 0xffff, the eight values
  // land at the kept positions in column order and every other position is zero.
  void tensorCoreSelectorsExpandEverySixteenOfEight() {
    static constexpr kernels::TcSelectorTable16 tab = kernels::makeTcSelectors16();
    int outOfRange = 0;
    const auto prmt = [&outOfRange](std::uint32_t a, std::uint32_t c) { return prmtZeroModel(a, c, &outOfRange); };
    const std::uint16_t vals[8] = {0x1357, 0x2468, 0x9abc, 0xdef1, 0x0f1e, 0x2d3c, 0x4b5a, 0x6978};
    std::uint32_t v[4];
    for (int r = 0; r < 4; ++r) v[r] = vals[2 * r] | std::uint32_t(vals[2 * r + 1]) << 16;
    int masks = 0;
    for (unsigned bits = 0; bits < 65536; ++bits) {
      if (std::popcount(bits) != 8 && bits != 0xffffu) continue;
      std::uint32_t e[8];
      expandRow16Model(tab, v, v, bits, prmt, e);
      // A padding row (0xffff) has zero values in the format; here only the range matters:
      // its high byte counts from the top of its own eight, value p - 8.
      int idx = 0;
      const auto want = [&](int p) -> std::uint16_t {
        if (!((bits >> p) & 1u)) return 0;
        return bits == 0xffffu ? vals[p % 8] : vals[idx++];
      };
      if (!expandedAsWanted(e, 16, want, QStringLiteral("mask 0x%1").arg(bits, 4, 16, QChar('0')))) return;
      ++masks;
    }
    QCOMPARE(masks, 12871);  // C(16, 8) and the padding row
    QCOMPARE(outOfRange, 0);
  }

  // 16:32 on the tensor cores (SpmvConfig::tcM = 32): the lane of each 16-column half expands
  // its outer byte from its own 16 value bytes and its inner byte from the window that
  // tc32WindowStart and tc32Window give (the kernel's own code, constexpr), through the 8:16
  // selectors. For every mask tried, both halves give each kept column its value in column
  // order and zero elsewhere; the window's positions outside the row never reach the output.
  void tensorCoreSixteenOfThirtyTwoExpandsThroughWindows() {
    static constexpr kernels::TcSelectorTable16 tab = kernels::makeTcSelectors16();
    int outOfRange = 0;
    const auto prmt = [&outOfRange](std::uint32_t a, std::uint32_t c) { return prmtZeroModel(a, c, &outOfRange); };
    std::uint16_t vals[16];
    for (int i = 0; i < 16; ++i) vals[i] = static_cast<std::uint16_t>(0x1000 + 0x0101 * i);
    std::uint32_t r[8];
    for (int i = 0; i < 8; ++i) r[i] = vals[2 * i] | std::uint32_t(vals[2 * i + 1]) << 16;
    std::vector<std::uint32_t> masks = {0x0000ffffu, 0xffff0000u, 0x00ff00ffu, 0xff00ff00u,
                                        0x0ff00ff0u, 0x55555555u, 0xaaaaaaaau, 0x000fffffu ^ 0x0000000fu,
                                        0xf0000fffu};
    std::mt19937 rng(1632);
    std::array<int, 32> cols{};
    for (int i = 0; i < 32; ++i) cols[std::size_t(i)] = i;
    for (int k = 0; k < 200000; ++k) {
      std::shuffle(cols.begin(), cols.end(), rng);
      std::uint32_t m = 0;
      for (int i = 0; i < 16; ++i) m |= 1u << cols[std::size_t(i)];
      masks.push_back(m);
    }
    // Every window start against a plain model: pair k holds values s + 2k and s + 2k + 1 where
    // they are in the row.
    for (int s0 = -8; s0 <= 16; ++s0) {
      const auto w = kernels::tc32Window(r, s0);
      for (int p = 0; p < 8; ++p)
        if (s0 + p >= 0 && s0 + p < 16)
          QVERIFY2(std::uint16_t(w.v[p / 2] >> (16 * (p % 2))) == vals[s0 + p],
                   qPrintable(QStringLiteral("window at %1, position %2").arg(s0).arg(p)));
    }
    int checked = 0;
    for (const std::uint32_t mask : masks) {
      QCOMPARE(std::popcount(mask), 16);
      for (int half = 0; half < 2; ++half) {
        const int s0 = kernels::tc32WindowStart(mask, half);
        QVERIFY(s0 >= -8 && s0 <= 16);
        const auto win = kernels::tc32Window(r, s0);
        const std::uint32_t own[4] = {r[4 * half], r[4 * half + 1], r[4 * half + 2], r[4 * half + 3]};
        const std::uint32_t w4[4] = {win.v[0], win.v[1], win.v[2], win.v[3]};
        std::uint32_t e[8];
        if (half == 0) expandRow16Model(tab, own, w4, mask & 0xffffu, prmt, e);
        else expandRow16Model(tab, w4, own, mask >> 16, prmt, e);
        const auto want = [&](int p) -> std::uint16_t {
          const int col = 16 * half + p;
          if (!((mask >> col) & 1u)) return 0;
          return vals[std::popcount(mask & ((1u << col) - 1u))];
        };
        if (!expandedAsWanted(e, 16, want, QStringLiteral("mask 0x%1 half %2").arg(mask, 8, 16, QChar('0')).arg(half)))
          return;
        ++checked;
      }
    }
    QCOMPARE(checked, 2 * 200009);
    QCOMPARE(outOfRange, 0);
  }

  // Which projections take the tensor-core SpMV: 2:4 and 4:8 from batch 4 by default, 8:16
  // and 16:32 from batch 5, all from batch 2 when asked, never when refused, never at batch 1.
  void tensorCoreSelection() {
    using kernels::spmvUseTensorCores;
    for (const int m : {4, 8}) {
      QVERIFY(!spmvUseTensorCores(-1, 1, m) && !spmvUseTensorCores(1, 1, m));
      QVERIFY(!spmvUseTensorCores(-1, 2, m) && !spmvUseTensorCores(-1, 3, m));
      QVERIFY(spmvUseTensorCores(-1, 4, m) && spmvUseTensorCores(-1, 8, m));
      QVERIFY(spmvUseTensorCores(1, 2, m) && spmvUseTensorCores(1, 8, m));
      QVERIFY(!spmvUseTensorCores(0, 4, m) && !spmvUseTensorCores(0, 8, m));
    }
    // 8:16 and 16:32 from batch 5 (or 2 when asked for).
    QVERIFY(spmvUseTensorCores(1, 2, 16) && spmvUseTensorCores(1, 8, 16));
    QVERIFY(!spmvUseTensorCores(-1, 2, 16) && !spmvUseTensorCores(-1, 3, 16) && !spmvUseTensorCores(-1, 4, 16));
    QVERIFY(spmvUseTensorCores(-1, 5, 16) && spmvUseTensorCores(-1, 6, 16) && spmvUseTensorCores(-1, 8, 16));
    QVERIFY(!spmvUseTensorCores(0, 8, 16) && !spmvUseTensorCores(1, 1, 16));
    QVERIFY(spmvUseTensorCores(1, 2, 32) && spmvUseTensorCores(1, 8, 32) && !spmvUseTensorCores(1, 1, 32));
    QVERIFY(!spmvUseTensorCores(-1, 2, 32) && !spmvUseTensorCores(-1, 4, 32) && !spmvUseTensorCores(0, 8, 32));
    QVERIFY(spmvUseTensorCores(-1, 5, 32) && spmvUseTensorCores(-1, 8, 32));
    for (const int m : {64, 0})
      for (const int mode : {-1, 0, 1}) QVERIFY(!spmvUseTensorCores(mode, 8, m));
    // What a run's description names: the first batch on the tensor cores.
    using kernels::spmvTensorCoresFromBatch;
    QCOMPARE(spmvTensorCoresFromBatch(-1, 4), 4);
    QCOMPARE(spmvTensorCoresFromBatch(-1, 8), 4);
    QCOMPARE(spmvTensorCoresFromBatch(-1, 16), 5);
    QCOMPARE(spmvTensorCoresFromBatch(-1, 32), 5);
    QCOMPARE(spmvTensorCoresFromBatch(1, 32), 2);
    QCOMPARE(spmvTensorCoresFromBatch(0, 4), 0);
    QCOMPARE(spmvTensorCoresFromBatch(-1, 64), 0);
  }

  // Batch 2-4 on the CUDA cores: x by shuffle (unroll 200 + U) in the tuned batch-2 configuration
  // where the table chose that path, else in the batch-1 one with its words in flight (at most
  // 3); staged (the A/B switch): the batch-2 configuration, a shuffle one cut to 8 warps, 2 words.
  void batchesTwoToFourTakeTheShufflePath() {
    using gpu::SpmvLaunch;
    const auto same = [](const SpmvLaunch& a, const SpmvLaunch& b) {
      return a.warps == b.warps && a.unroll == b.unroll && a.splitK == b.splitK && a.cluster == b.cluster &&
             a.pdl == b.pdl;
    };
    const SpmvLaunch staged{8, 2, 4, 0, true};
    QVERIFY(same(gpu::xShuffleLaunch(staged, {16, 42, 1, 0, true}, true), {16, 202, 1, 0, true}));  // bulk 4 x 2 words
    QVERIFY(same(gpu::xShuffleLaunch(staged, {4, 41, 8, 1, false}, true), {4, 201, 8, 1, false}));
    QVERIFY(same(gpu::xShuffleLaunch(staged, {16, 4, 2, 1, true}, true), {16, 203, 2, 1, true}));  // 4 words: 3
    QVERIFY(same(gpu::xShuffleLaunch(staged, {8, 3, 1, -1, true}, true), {8, 203, 1, -1, true}));
    const SpmvLaunch tuned{4, 201, 6, 1, true};
    QVERIFY(same(gpu::xShuffleLaunch(tuned, {16, 42, 1, 0, true}, true), tuned));
    QVERIFY(same(gpu::xShuffleLaunch(staged, {16, 42, 1, 0, true}, false), staged));
    QVERIFY(same(gpu::xShuffleLaunch({16, 202, 1, 0, true}, {16, 42, 1, 0, true}, false), {8, 2, 1, -1, true}));
    // The table's lookup applies it: a staged batch-2 entry gives way to the batch-1 one.
    gpu::TuningTable t;
    gpu::TuningEntry e1;
    e1.rows = 4096, e1.cols = 4096, e1.batch = 1, e1.sparse = {16, 42, 1, 0};
    e1.sparseChained = gpu::SpmvLaunch{8, 3, 2, 1, true};
    gpu::TuningEntry e2 = e1;
    e2.batch = 2, e2.sparse = staged, e2.sparseChained.reset();
    t.put(e1), t.put(e2);
    QVERIFY(same(t.sparse(4096, 4096, 2, "bf16", 132), {16, 202, 1, 0, false}));
    QVERIFY(same(t.sparse(4096, 4096, 2, "bf16", 132, true), {8, 203, 2, 1, true}));
    QVERIFY(same(t.sparse(4096, 4096, 1, "bf16", 132), {16, 42, 1, 0, false}));
    // Without a table: the batch-1 heuristic's configuration, on the shuffle path.
    const SpmvLaunch h1 = gpu::defaultSpmvLaunch(4096, 4096, 1, 132);
    QVERIFY(same(gpu::TuningTable{}.sparse(4096, 4096, 2, "bf16", 132),
                 {h1.warps, 200 + h1.unroll, h1.splitK, h1.cluster, false}));
    // Batch 3 and 4 the same, unless SDW_SPMV_B34=staged (an A/B switch); batch 1 and 5-8 never.
    qunsetenv("SDW_SPMV_B34");
    QVERIFY(gpu::xShuffleFromEnv(2) && gpu::xShuffleFromEnv(3) && gpu::xShuffleFromEnv(4));
    QVERIFY(!gpu::xShuffleFromEnv(1) && !gpu::xShuffleFromEnv(5) && !gpu::xShuffleFromEnv(8));
    gpu::TuningEntry e4 = e2;
    e4.batch = 4;
    t.put(e4);
    QVERIFY(same(t.sparse(4096, 4096, 4, "bf16", 132, true), {8, 203, 2, 1, true}));
    QVERIFY(same(gpu::TuningTable{}.sparse(4096, 4096, 3, "bf16", 132),
                 {h1.warps, 200 + h1.unroll, h1.splitK, h1.cluster, false}));
    qputenv("SDW_SPMV_B34", "staged");
    QVERIFY(gpu::xShuffleFromEnv(2) && !gpu::xShuffleFromEnv(3) && !gpu::xShuffleFromEnv(4));
    QVERIFY(same(t.sparse(4096, 4096, 4, "bf16", 132, true), staged));
    qunsetenv("SDW_SPMV_B34");
    // The H100 table tuned the shuffle path at batch 2 on every shape it holds.
    const auto h100 =
        gpu::TuningTable::load(std::filesystem::path(SDW_SOURCE_DIR) / "resources/tuning/nvidia-h100-80gb-hbm3.json");
    int b2 = 0, m16 = 0, m16Shuffle = 0, denseSteps = 0;
    for (const auto& e : h100.entries()) {
      // Its 8:16 / 16:32 step entries were tuned on the tensor cores at batch 8 (a ring of 2-4
      // stages) and on the CUDA cores with x by shuffle at batch 4 (all three model shapes).
      if (e.sparseStepM16) {
        ++m16;
        if (e.batch == 4) {
          ++m16Shuffle;
          QVERIFY(!gpu::onTensorCores(*e.sparseStepM16));
          QVERIFY2(kernels::spmvShuffleUnroll(e.sparseStepM16->unroll), qPrintable(QString::number(e.rows)));
          // The lookup at batch 4 returns it for 16:32 on the CUDA cores; 2:4's entry there is a
          // tensor-core one, which 16:32 on the tensor cores does not take.
          const auto l = h100.sparseStep(e.rows, e.cols, 4, "bf16", false, 32);
          QVERIFY(l && same(*l, *e.sparseStepM16));
          QVERIFY(e.sparseStep && gpu::onTensorCores(*e.sparseStep));
          const auto l24 = h100.sparseStep(e.rows, e.cols, 4, "bf16", true, 4);
          QVERIFY(l24 && same(*l24, *e.sparseStep));
          QVERIFY(!h100.sparseStep(e.rows, e.cols, 4, "bf16", true, 32));
        } else {
          QCOMPARE(e.batch, 8);
          QVERIFY(gpu::onTensorCores(*e.sparseStepM16));
        }
      }
      if (e.denseStep) {
        ++denseSteps;
        QVERIFY(e.denseStepUs > 0);
      }
      if (e.batch != 2) continue;
      ++b2;
      QVERIFY2(kernels::spmvShuffleUnroll(e.sparse.unroll), qPrintable(QString::number(e.rows)));
    }
    QCOMPARE(b2, 20);
    QCOMPARE(m16, 24);  // the four projections of the three model shapes at batch 8 and at batch 4
    QCOMPARE(m16Shuffle, 12);
    // The three model shapes at four batches: Llama-3.1-8B's five (lm_head too), Qwen3-14B's and
    // Qwen3-32B's four each and the lm_head they share.
    QCOMPARE(denseSteps, 56);
  }

  void rejectsBadSizes() {
    auto w = std::vector<float>(64, 0.f);
    const auto p = sparse::packDense(w, 2, 32, {2, 4}, DType::BF16);
    std::vector<float> x(31), y(2);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::spmvCpu(p, x, 1, y, 2));
    x.resize(32);
    y.resize(1);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::spmvCpu(p, x, 1, y, 2));
    y.resize(2);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::spmvCpu(p, x, 1, y, 1));
    gpu::spmvCpu(p, x, 1, y, 2);
  }

  // The tuning table keeps plain and chained (programmatic dependent launch)
  // configurations apart, through save and load; lookups fall back to the plain one.
  // The GUI and the CLI find a GPU's shipped table by its name, and nothing for an unknown one.
  void defaultTuningPathFollowsTheDeviceName() {
    const std::filesystem::path resources = std::filesystem::path(SDW_SOURCE_DIR) / "resources";
    const std::string h200 = sdw::gpu::defaultTuningPath(resources, "NVIDIA H200");
    QCOMPARE(QString::fromStdString(h200),
             QString::fromStdString((resources / "tuning" / "nvidia-h200.json").string()));
    const auto table = sdw::gpu::TuningTable::load(h200);
    QVERIFY(!table.entries().empty());
    QCOMPARE(QString::fromStdString(sdw::gpu::defaultTuningPath(resources, "Some GPU 9000")), QString());
    QCOMPARE(QString::fromStdString(sdw::gpu::defaultTuningPath(resources, "")), QString());
  }

  void tuningTableKeepsChainedConfigurations() {
    // A table saved and read back.
    const auto roundTrip = [](const gpu::TuningTable& table) {
      const auto path = std::filesystem::temp_directory_path() / "sdw-test-tuning.json";
      table.save(path);
      auto back = gpu::TuningTable::load(path);
      std::filesystem::remove(path);
      return back;
    };
    gpu::TuningTable t;
    t.device = "test";
    gpu::TuningEntry e;
    e.rows = 4096, e.cols = 4096, e.batch = 1;
    e.sparse = {16, 4, 1, -1}, e.sparseUs = 7.3;
    e.dense = {8, 4, 2, 4}, e.denseUs = 10.9;
    e.sparseChained = gpu::SpmvLaunch{8, 34, 1, 0, true}, e.sparseChainedUs = 7.1;
    e.denseChained = gpu::GemvLaunch{8, 2, 4, 1, true}, e.denseChainedUs = 9.7;
    e.sparseStep = gpu::SpmvLaunch{4, 1, 3, 1, false}, e.sparseStepUs = 3800.0;  // chosen in a step, no pdl
    t.put(e);
    gpu::TuningEntry f = e;  // batch 2 (x by shuffle): no chained entries
    f.batch = 2, f.sparse.unroll = 202, f.sparseChained.reset(), f.denseChained.reset(), f.sparseStep.reset();
    t.put(f);
    const auto u = roundTrip(t);
    QCOMPARE(u.entries().size(), std::size_t(2));
    const auto plain = u.sparse(4096, 4096, 1, "bf16", 132);
    QCOMPARE(plain.warps, 16);
    QCOMPARE(plain.unroll, 4);
    QVERIFY(!plain.pdl);
    const auto chained = u.sparse(4096, 4096, 1, "bf16", 132, true);
    QCOMPARE(chained.warps, 8);
    QCOMPARE(chained.unroll, 34);
    QCOMPARE(chained.cluster, 0);
    QVERIFY(chained.pdl);
    const auto dc = u.dense(4096, 4096, 1, "bf16", 132, true);
    QCOMPARE(dc.rowsPerWarp, 2);
    QCOMPARE(dc.unroll, 4);
    QCOMPARE(dc.splitK, 1);
    QVERIFY(dc.pdl);
    // The step-tuned launch: exact shape only, its pdl flag as tuned.
    const auto step = u.sparseStep(4096, 4096, 1, "bf16", false, 4);
    QVERIFY(step.has_value());
    QCOMPARE(step->warps, 4);
    QCOMPARE(step->splitK, 3);
    QCOMPARE(step->cluster, 1);
    QVERIFY(!step->pdl);
    QVERIFY(!u.sparseStep(4096, 4100, 1, "bf16", false, 4));  // a lookup near it gives no step entry
    QVERIFY(!u.sparseStep(4096, 4096, 2, "bf16", false, 4));
    const auto b2 = u.sparse(4096, 4096, 2, "bf16", 132, true);  // no chained entry: the plain one, chained
    QCOMPARE(b2.warps, 16);
    QVERIFY(b2.pdl);
    // Re-tuning the plain configuration keeps the chained one.
    gpu::TuningTable v = u;
    gpu::TuningEntry g = e;
    g.sparse = {4, 2, 2, -1}, g.sparseChained.reset(), g.denseChained.reset();
    v.put(g);
    QCOMPARE(v.sparse(4096, 4096, 1, "bf16", 132).warps, 4);
    QCOMPARE(v.sparse(4096, 4096, 1, "bf16", 132, true).unroll, 34);
    QCOMPARE(v.sparseStep(4096, 4096, 1, "bf16", false, 4)->warps, 4);  // and the step's
    // A step entry of batch 2 (x by shuffle) is its batch's alone, and round trips.
    gpu::TuningEntry h = f;
    h.sparseStep = gpu::SpmvLaunch{8, 203, 2, 0, true}, h.sparseStepUs = 4300.0;
    v.put(h);
    const auto w = roundTrip(v);
    const auto step2 = w.sparseStep(4096, 4096, 2, "bf16", false, 4);
    QVERIFY(step2.has_value());
    QCOMPARE(step2->unroll, 203);
    QCOMPARE(step2->splitK, 2);
    QVERIFY(step2->pdl);
    QCOMPARE(w.sparseStep(4096, 4096, 1, "bf16", false, 4)->unroll, 1);  // batch 1's unchanged
    QCOMPARE(w.sparse(4096, 4096, 2, "bf16", 132).unroll, 202);  // the plain entry kept
    // By path and pattern: a CUDA-core step entry serves every pattern off the tensor cores and
    // none on them.
    QCOMPARE(w.sparseStep(4096, 4096, 2, "bf16", false, 32)->unroll, 203);
    QVERIFY(!w.sparseStep(4096, 4096, 2, "bf16", true, 4));
    // At batch 8 a tensor-core entry for 2:4 and 4:8 (a 3-stage ring) and one for 8:16 and 16:32
    // (their longer expansion, here a 2-stage ring): each pattern gets its own, neither off the
    // tensor cores; both round trip.
    gpu::TuningEntry k = f;
    k.batch = 8, k.sparse = {8, 102, 4, -1};
    k.sparseStep = gpu::SpmvLaunch{8, 103, 3, -1, true}, k.sparseStepUs = 5000.0;
    k.sparseStepM16 = gpu::SpmvLaunch{4, 102, 6, -1, false}, k.sparseStepM16Us = 5200.0;
    gpu::TuningTable w8 = w;
    w8.put(k);
    const auto x = roundTrip(w8);
    QCOMPARE(x.sparseStep(4096, 4096, 8, "bf16", true, 4)->unroll, 103);
    QCOMPARE(x.sparseStep(4096, 4096, 8, "bf16", true, 8)->splitK, 3);
    const auto wide = x.sparseStep(4096, 4096, 8, "bf16", true, 16);
    QVERIFY(wide.has_value());
    QCOMPARE(wide->warps, 4);
    QCOMPARE(wide->splitK, 6);
    QVERIFY(!wide->pdl);
    QCOMPARE(x.sparseStep(4096, 4096, 8, "bf16", true, 32)->splitK, 6);
    QVERIFY(!x.sparseStep(4096, 4096, 8, "bf16", false, 4));
    QVERIFY(!x.sparseStep(4096, 4096, 8, "bf16", false, 16));
    // A dense GEMV step entry round trips, its batch's alone, pdl as tuned.
    gpu::TuningTable d = x;
    gpu::TuningEntry de = f;
    de.denseStep = gpu::GemvLaunch{4, 2, 1, 4, false}, de.denseStepUs = 5600.0;
    d.put(de);
    const auto dl = roundTrip(d);
    const auto ds = dl.denseStep(4096, 4096, 2, "bf16");
    QVERIFY(ds.has_value());
    QCOMPARE(ds->rowsPerWarp, 2);
    QCOMPARE(ds->splitK, 4);
    QVERIFY(!ds->pdl);
    QVERIFY(!dl.denseStep(4096, 4096, 1, "bf16"));
    QCOMPARE(dl.sparseStep(4096, 4096, 2, "bf16", false, 4)->unroll, 203);  // the sparse one kept beside it
    // An M >= 16 entry with a deeper ring (its kernels take 2-4 stages) is used as it is; one
    // tuned off the tensor cores is not.
    gpu::TuningTable y = x;
    k.sparseStepM16->unroll = 104;
    y.put(k);
    QCOMPARE(y.sparseStep(4096, 4096, 8, "bf16", true, 16)->unroll, 104);
    QCOMPARE(y.sparseStep(4096, 4096, 8, "bf16", true, 32)->unroll, 104);
    k.sparseStepM16->unroll = 2;
    y.put(k);
    QVERIFY(!y.sparseStep(4096, 4096, 8, "bf16", true, 16));
    QCOMPARE(y.sparseStep(4096, 4096, 8, "bf16", false, 16)->unroll, 2);  // it is the CUDA cores' for them
    QVERIFY(!y.sparseStep(4096, 4096, 8, "bf16", false, 4));              // not 2:4's
    // On the CUDA cores 8:16 and 16:32 without an entry of their own take the batch's other one
    // (batch 3 and 4: x by shuffle, where 2:4 runs on the tensor cores, they have their own).
    QCOMPARE(w.sparseStep(4096, 4096, 2, "bf16", false, 16)->unroll, 203);
    gpu::TuningEntry b4 = f;
    b4.batch = 4, b4.sparseStep = gpu::SpmvLaunch{8, 103, 3, -1, true};
    b4.sparseStepM16 = gpu::SpmvLaunch{16, 202, 2, 1, true};
    gpu::TuningTable z = w;
    z.put(b4);
    const auto zz = roundTrip(z);
    QCOMPARE(zz.sparseStep(4096, 4096, 4, "bf16", true, 4)->unroll, 103);
    QCOMPARE(zz.sparseStep(4096, 4096, 4, "bf16", false, 32)->unroll, 202);
    QCOMPARE(zz.sparseStep(4096, 4096, 4, "bf16", false, 16)->warps, 16);
    QVERIFY(!zz.sparseStep(4096, 4096, 4, "bf16", true, 16));
    QVERIFY(!zz.sparseStep(4096, 4096, 4, "bf16", false, 4));
  }

  // A model's seven projections, and NAME:engine: the decode engine's four launches per layer
  // (q|k|v and gate|up fused), one group of their own for the layer rows.
  void engineShapesAreTheFusedLaunches() {
    const auto seven = gpu::parseShapes("llama3-8b");
    QCOMPARE(seven.size(), std::size_t(7));
    const auto four = gpu::parseShapes("llama3-8b:engine,qwen3-32b:engine");
    QCOMPARE(four.size(), std::size_t(8));
    const std::int64_t rows[] = {6144, 4096, 28672, 4096, 10240, 5120, 51200, 5120};
    const std::int64_t cols[] = {4096, 4096, 4096, 14336, 5120, 8192, 5120, 25600};
    for (std::size_t i = 0; i < four.size(); ++i) {
      QCOMPARE(four[i].rows, rows[i]);
      QCOMPARE(four[i].cols, cols[i]);
      QCOMPARE(four[i].model, std::string(i < 4 ? "llama3-8b:engine" : "qwen3-32b:engine"));
    }
    QCOMPARE(four[0].module, std::string("qkv_proj"));
    QCOMPARE(four[2].module, std::string("gate_up_proj"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::parseShapes("llama3-8b:fused"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::parseShapes(":engine"));
  }

  // One name per kernel, both ways; unknown names have no id.
  void kernelNamesRoundTrip() {
    for (auto id : {gpu::KernelId::Sparse, gpu::KernelId::Dense, gpu::KernelId::Cublas, gpu::KernelId::Cusparselt,
                    gpu::KernelId::SparseCpu, gpu::KernelId::DenseCpu})
      QCOMPARE(gpu::kernelFromName(gpu::kernelName(id)), std::optional<gpu::KernelId>(id));
    QCOMPARE(gpu::kernelName(gpu::KernelId::Cublas), std::string_view("cublas"));  // the name in saved results
    QVERIFY(!gpu::kernelFromName("library"));
    QVERIFY(gpu::kernelInfo(gpu::KernelId::DenseCpu).baseline == gpu::Baseline::OwnDense);
  }

  // The benchmark summary: plain and chained medians, through toJson / fromJson.
  void benchSummaryHasChainedMedians() {
    gpu::BenchResult r;
    r.backend = "cuda";
    auto row = [](const char* module, const char* pattern, const char* kernel, double us, double chained) {
      gpu::BenchRow b = gpu::makeBenchRow({"llama3-8b", module, 4096, 4096}, pattern, 1, *gpu::kernelFromName(kernel));
      b.us = us, b.usChained = chained;
      return b;
    };
    // q: cuBLAS 12, dense 10 (chained 9), cuSPARSELt 21, sparse 8 (chained 6)
    // k: cuBLAS 8, dense 6 (chained 5), cuSPARSELt 16, sparse 5 (chained 4)
    r.rows = {row("q_proj", "-", "cublas", 12, 0),     row("q_proj", "-", "dense", 10, 9),
              row("q_proj", "2:4", "cusparselt", 21, 0), row("q_proj", "2:4", "sparse", 8, 6),
              row("k_proj", "-", "cublas", 8, 0),      row("k_proj", "-", "dense", 6, 5),
              row("k_proj", "2:4", "cusparselt", 16, 0), row("k_proj", "2:4", "sparse", 5, 4)};
    const auto back = gpu::fromJson(gpu::toJson(r, "test", gpu::BenchSettings{}));
    QCOMPARE(back.rows.size(), std::size_t(8));
    QCOMPARE(back.rows[3].usChained, 6.0);
    QCOMPARE(back.rows[0].id, gpu::KernelId::Cublas);
    QCOMPARE(back.rows[3].id, gpu::KernelId::Sparse);
    QCOMPARE(back.rows[3].kernel, std::string("sparse"));
    QCOMPARE(back.summary.size(), std::size_t(1));
    const auto& s = back.summary[0];
    QCOMPARE(s.count, 2);
    QCOMPARE(s.medianVsCusparselt, (21.0 / 8 + 16.0 / 5) / 2);
    QCOMPARE(s.medianVsCublasChained, (12.0 / 6 + 8.0 / 4) / 2);
    QCOMPARE(s.medianVsDenseChained, (9.0 / 6 + 5.0 / 4) / 2);
    QCOMPARE(s.medianVsCusparseltChained, (21.0 / 6 + 16.0 / 4) / 2);
    // Without chained times the chained medians stay 0.
    for (auto& b : r.rows) b.usChained = 0;
    const auto plain = gpu::fromJson(gpu::toJson(r, "test", gpu::BenchSettings{}));
    QCOMPARE(plain.summary[0].medianVsCublasChained, 0.0);
    QCOMPARE(plain.summary[0].medianVsDenseChained, 0.0);
  }
};

QTEST_GUILESS_MAIN(TestSpmvCpu)
#include "test_spmv_cpu.moc"
