// The spMspV layout on the host (gpu/spmspv_pack.h): packing against hand-made
// chunks, pack/unpack round trips, validation, the CPU product against a
// brute-force float64 product of the dense matrix and the masked input, the
// activation threshold, and the spMspV rows of the CPU benchmark. No GPU needed.

#include "core/sparse_format.h"
#include "gpu/bench.h"
#include "gpu/kernels/spmspv_config.h"
#include "gpu/kernels/spmspv_layout.h"
#include "gpu/spmspv_file.h"
#include "gpu/spmspv_pack.h"

#include <nlohmann/json.hpp>

#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

using namespace sdw;
using sparse::DType;

namespace {
std::uint16_t h16(float f, DType dt = DType::BF16) { return sparse::floatTo16(f, dt); }

// y = W (x masked by |x| > threshold) in float64, with sum |w x| (the scale of fp32 rounding).
void bruteForce(const std::vector<std::uint16_t>& w, std::int64_t rows, std::int64_t cols, DType dt,
                const std::vector<float>& x, float threshold, std::vector<double>& y, std::vector<double>& absY) {
  y.assign(std::size_t(rows), 0.0);
  absY.assign(std::size_t(rows), 0.0);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < cols; ++j) {
      if (!(std::fabs(x[std::size_t(j)]) > threshold)) continue;
      const double t = double(sparse::from16(w[std::size_t(r * cols + j)], dt)) * x[std::size_t(j)];
      y[std::size_t(r)] += t;
      absY[std::size_t(r)] += std::fabs(t);
    }
}

// x [cols] standard normal in 16 bits and the threshold that skips a fraction p of it
// (activationThreshold), widened to fp32.
struct Input {
  std::vector<float> x;
  float threshold = -1;
};
Input randomInput(std::int64_t cols, DType dt, std::uint64_t seed, double p) {
  auto x16 = gpu::randomNormal16(cols, dt, seed);
  Input in;
  in.threshold = gpu::activationThreshold(x16, dt, p);
  in.x.resize(x16.size());
  for (std::size_t i = 0; i < x16.size(); ++i) in.x[i] = sparse::from16(x16[i], dt);
  return in;
}
}  // namespace

class TestSpmspvCpu : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  // rows 0..2 of one tile, 2 columns: column 0 keeps rows 0 and 2, column 1 keeps none.
  void packsTheDocumentedLayout() {
    const std::vector<std::uint16_t> w = {h16(1.f), 0, 0, 0, h16(-2.f), 0};  // [3, 2]
    const auto m = gpu::packSpmspv(w, 3, 2, DType::BF16);
    QCOMPARE(m.tiles(), std::int64_t{1});
    QCOMPARE(m.offsets, (std::vector<std::uint32_t>{0, 3, 5}));  // mask 2 units + 2 values padded to 1 unit; mask only
    QCOMPARE(m.chunks.size(), std::size_t{5 * 8});
    QCOMPARE(m.chunks[0], std::uint16_t{0b101});  // mask word 0, low half: rows 0 and 2
    for (int i = 1; i < 16; ++i) QCOMPARE(m.chunks[std::size_t(i)], std::uint16_t{0});
    QCOMPARE(m.chunks[16], h16(1.f));
    QCOMPARE(m.chunks[17], h16(-2.f));
    for (int i = 18; i < 24; ++i) QCOMPARE(m.chunks[std::size_t(i)], std::uint16_t{0});  // padding
    for (int i = 24; i < 40; ++i) QCOMPARE(m.chunks[std::size_t(i)], std::uint16_t{0});  // empty column: zero mask
    QCOMPARE(m.bytes(), std::uint64_t{5 * 16 + 3 * 4});
  }

  // A fully dense 256-row column is the largest chunk (34 units); rows 256.. start tile 1,
  // whose chunks follow all of tile 0's; byte l of a mask covers rows 8 l .. 8 l + 7.
  void tilesAndLargestChunk() {
    const std::int64_t rows = 300, cols = 3;
    auto w = gpu::randomPrunedWeights(rows, cols, DType::F16, cols, cols, 7);  // dense
    const auto m = gpu::packSpmspv(w, rows, cols, DType::F16);
    QCOMPARE(m.tiles(), std::int64_t{2});
    for (int j = 0; j < 3; ++j)
      QCOMPARE(m.offsets[std::size_t(j + 1)] - m.offsets[std::size_t(j)], std::uint32_t(kernels::kSpmspvMaxChunkUnits));
    // tile 1: 44 rows -> mask + 44 values = 2 + 6 units
    for (int j = 3; j < 6; ++j) QCOMPARE(m.offsets[std::size_t(j + 1)] - m.offsets[std::size_t(j)], std::uint32_t{8});
    const std::size_t e = std::size_t{m.offsets[3]} * 8;  // tile 1, column 0: rows 256..299 kept
    QCOMPARE(m.chunks[e], std::uint16_t{0xffff});         // rows 0..15 of the tile
    QCOMPARE(m.chunks[e + 2], std::uint16_t{0x0fff});     // rows 32..43
    QCOMPARE(m.chunks[e + 16], w[std::size_t(256 * cols)]);
    QCOMPARE(m.chunks[e + 17], w[std::size_t(257 * cols)]);
    gpu::validateSpmspv(m);
  }

  void roundTrip_data() {
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("cols");
    QTest::addColumn<int>("keep");
    QTest::addColumn<int>("group");
    QTest::addColumn<QString>("dtype");
    for (const char* dt : {"bf16", "fp16"}) {
      QTest::addRow("1x1 dense %s", dt) << 1 << 1 << 1 << 1 << dt;
      QTest::addRow("255x33 50%% %s", dt) << 255 << 33 << 16 << 33 << dt;
      QTest::addRow("256x64 50%% %s", dt) << 256 << 64 << 32 << 64 << dt;
      QTest::addRow("257x100 2:4 %s", dt) << 257 << 100 << 2 << 4 << dt;
      QTest::addRow("600x31 all zero %s", dt) << 600 << 31 << 0 << 31 << dt;
      QTest::addRow("513x40 90%% %s", dt) << 513 << 40 << 4 << 40 << dt;
    }
  }
  void roundTrip() {
    QFETCH(int, rows);
    QFETCH(int, cols);
    QFETCH(int, keep);
    QFETCH(int, group);
    QFETCH(QString, dtype);
    const auto dt = sparse::parseDType(dtype.toStdString());
    const auto w =
        gpu::randomPrunedWeights(rows, cols, dt, keep, group, std::uint64_t(rows) * 31 + std::uint64_t(cols));
    std::int64_t nnz = 0;
    for (auto h : w) nnz += (h & 0x7fff) != 0;
    QCOMPARE(nnz, std::int64_t(rows) * cols / group * keep);
    const auto m = gpu::packSpmspv(w, rows, cols, dt);
    gpu::validateSpmspv(m);
    QCOMPARE(gpu::unpackSpmspv(m), w);
    // Sizes: every chunk is its mask plus its column-tile's nonzeros, padded to 8 values.
    std::uint64_t units = 0;
    for (std::int64_t t = 0; t < m.tiles(); ++t)
      for (int j = 0; j < cols; ++j) {
        int c = 0;
        for (std::int64_t r = t * 256; r < std::min<std::int64_t>(rows, t * 256 + 256); ++r)
          c += (w[std::size_t(r * cols + j)] & 0x7fff) != 0;
        units += 2 + std::uint64_t(c + 7) / 8;
      }
    QCOMPARE(std::uint64_t{m.offsets.back()}, units);
  }

  void validationRejectsCorruption() {
    const std::int64_t rows = 40, cols = 8;
    const auto w = gpu::randomPrunedWeights(rows, cols, DType::BF16, 4, 8, 3);
    const auto good = gpu::packSpmspv(w, rows, cols, DType::BF16);
    auto flipped = good;
    flipped.chunks[0] ^= 1u << 3;  // a mask bit without its value
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::validateSpmspv(flipped));
    auto padRow = good;
    padRow.chunks[3] |= 0x8000;  // row 63 of a 40-row tile
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::validateSpmspv(padRow));
    auto badOffsets = good;
    badOffsets.offsets.pop_back();
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::validateSpmspv(badOffsets));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::packSpmspv(w, rows + 1, cols, DType::BF16));
  }

  void productMatchesBruteForce_data() {
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("cols");
    QTest::addColumn<int>("keep");
    QTest::addColumn<int>("group");
    QTest::addColumn<double>("p");
    for (double p : {0.0, 0.25, 0.5, 0.75, 0.99}) {
      QTest::addRow("300x96 50%% p=%.2f", p) << 300 << 96 << 48 << 96 << p;
      QTest::addRow("257x100 2:4 p=%.2f", p) << 257 << 100 << 2 << 4 << p;
      QTest::addRow("64x513 50%% p=%.2f", p) << 64 << 513 << 171 << 171 << p;
    }
  }
  void productMatchesBruteForce() {
    QFETCH(int, rows);
    QFETCH(int, cols);
    QFETCH(int, keep);
    QFETCH(int, group);
    QFETCH(double, p);
    for (DType dt : {DType::BF16, DType::F16}) {
      const auto w = gpu::randomPrunedWeights(rows, cols, dt, keep, group, 11);
      const auto m = gpu::packSpmspv(w, rows, cols, dt);
      const auto [x, threshold] = randomInput(cols, dt, 12, p);
      const auto skipped = std::count_if(x.begin(), x.end(), [&](float v) { return !gpu::spmspvActive(v, threshold); });
      QCOMPARE(std::int64_t(skipped), std::int64_t(std::llround(p * cols)));
      std::vector<float> y(std::size_t(rows), -7.f);
      gpu::spmspvCpu(m, x, threshold, y);
      std::vector<double> ref, absRef;
      bruteForce(w, rows, cols, dt, x, threshold, ref, absRef);
      for (int r = 0; r < rows; ++r)
        QVERIFY2(std::fabs(y[std::size_t(r)] - ref[std::size_t(r)]) <= 1e-6 * absRef[std::size_t(r)] + 1e-30,
                 qPrintable(QStringLiteral("row %1: %2 vs %3").arg(r).arg(y[std::size_t(r)]).arg(ref[std::size_t(r)])));
      // Bytes: the active columns' chunks, every offset and x.
      double units = 0;
      for (std::int64_t t = 0; t < m.tiles(); ++t)
        for (int j = 0; j < cols; ++j)
          if (gpu::spmspvActive(x[std::size_t(j)], threshold))
            units += m.offsets[std::size_t(t * cols + j + 1)] - m.offsets[std::size_t(t * cols + j)];
      QCOMPARE(gpu::spmspvReadBytes(m, x, threshold), units * 16 + 4.0 * double(m.offsets.size()) + 2.0 * cols);
    }
  }

  void zeroAndDenseInputs() {
    const std::int64_t rows = 70, cols = 45;
    const auto w = gpu::randomPrunedWeights(rows, cols, DType::BF16, 22, 45, 5);
    const auto m = gpu::packSpmspv(w, rows, cols, DType::BF16);
    std::vector<float> y(rows, 1.f);
    gpu::spmspvCpu(m, std::vector<float>(cols, 0.f), 0.f, y);  // all-zero x: nothing read
    for (float v : y) QCOMPARE(v, 0.f);
    QCOMPARE(gpu::spmspvReadBytes(m, std::vector<float>(cols, 0.f), 0.f), 4.0 * double(m.offsets.size()) + 2.0 * cols);
    // A negative threshold reads every column, zeros included: the full layout.
    QCOMPARE(gpu::spmspvReadBytes(m, std::vector<float>(cols, 0.f), -1.f), double(m.bytes()) + 2.0 * cols);
    std::vector<float> ones(cols, 1.f);
    gpu::spmspvCpu(m, ones, -1.f, y);
    for (std::int64_t r = 0; r < rows; ++r) {
      double s = 0;
      for (std::int64_t j = 0; j < cols; ++j) s += sparse::from16(w[std::size_t(r * cols + j)], DType::BF16);
      QVERIFY(std::fabs(y[std::size_t(r)] - s) <= 1e-5 * std::max(1.0, std::fabs(s)));
    }
  }

  void thresholdIsExactWithTies() {
    // 10 equal magnitudes: p = 0.3 must skip exactly 3; the other 7 are nudged one ulp up.
    std::vector<std::uint16_t> x(10, h16(0.5f));
    x[4] = h16(-0.5f);
    const float t = gpu::activationThreshold(x, DType::BF16, 0.3);
    QCOMPARE(t, 0.5f);
    int skipped = 0, nudged = 0;
    for (auto h : x) {
      const float v = std::fabs(sparse::from16(h, DType::BF16));
      skipped += !gpu::spmspvActive(v, t);
      nudged += v == sparse::from16(0x3f01, DType::BF16);  // 0.5 plus one bf16 ulp
    }
    QCOMPARE(skipped, 3);
    QCOMPARE(nudged, 7);
    QVERIFY(std::count(x.begin(), x.end(), std::uint16_t(0xbf01)) +
                std::count(x.begin(), x.end(), std::uint16_t(0xbf00)) ==
            1);  // sign kept
    auto y = gpu::randomNormal16(100, DType::F16, 1);
    QCOMPARE(gpu::activationThreshold(y, DType::F16, 0.0), -1.f);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, (void)gpu::activationThreshold(y, DType::F16, 1.5));
    const float all = gpu::activationThreshold(y, DType::F16, 1.0);  // every entry skipped
    for (auto h : y) QVERIFY(!gpu::spmspvActive(sparse::from16(h, DType::F16), all));
  }

  // ---- the column 2:4 and 4:8 layouts ----

  // [8, 2]: column 0 keeps rows 0, 2 (group 0) and row 5 (group 1: one nonzero, so its lowest
  // zero row 4 is kept with value 0); column 1 is empty. Rows 8..255 are padding.
  void packsTheColumn24Layout() {
    std::vector<std::uint16_t> w(16, 0);
    w[0 * 2] = h16(1.f);
    w[2 * 2] = h16(-2.f);
    w[5 * 2] = h16(3.f);
    w[5 * 2 + 1] = 0x8000;  // -0 is pruned too
    const auto m = gpu::packSpmspv(w, 8, 2, DType::BF16, kernels::SpmspvFormat::Column24);
    QCOMPARE(m.tiles(), std::int64_t{1});
    QVERIFY(m.offsets.empty());
    QCOMPARE(m.chunks.size(), std::size_t{2 * 144});
    QCOMPARE(m.bytes(), std::uint64_t{2 * 288});
    QCOMPARE(m.chunks[0], h16(1.f));  // lane 0, group 0: rows 0 and 2
    QCOMPARE(m.chunks[1], h16(-2.f));
    QCOMPARE(m.chunks[2], std::uint16_t{0});  // group 1: rows 4 (zero) and 5
    QCOMPARE(m.chunks[3], h16(3.f));
    for (int i = 4; i < 128; ++i) QCOMPARE(m.chunks[std::size_t(i)], std::uint16_t{0});
    QCOMPARE(m.chunks[128], std::uint16_t{0x3335});  // meta bytes 0x35 (lane 0), 0x33 (lane 1: padding)
    for (int i = 129; i < 144; ++i) QCOMPARE(m.chunks[std::size_t(i)], std::uint16_t{0x3333});
    for (int i = 144; i < 272; ++i) QCOMPARE(m.chunks[std::size_t(i)], std::uint16_t{0});  // column 1
    for (int i = 272; i < 288; ++i) QCOMPARE(m.chunks[std::size_t(i)], std::uint16_t{0x3333});
    gpu::validateSpmspv(m);
    auto back = w;
    back[5 * 2 + 1] = 0;  // unpacks as +0
    QCOMPARE(gpu::unpackSpmspv(m), back);
  }

  // Both column layouts: weights keeping `keep` of every `group` rows of each column round-trip.
  // The column layouts' split-K aims (spmspvDefaults) on the H200's 132 SMs give the slices of
  // the launch grid's winners at p_x 0.5 (bench/results/kernels/h200-spmspv-grid-px0.5-8f23e09.json,
  // four Llama-3.1-8B shapes).
  void splitKAimsAtTheGridWinners() {
    using kernels::SpmspvFormat;
    struct Case {
      std::int64_t rows, cols;
      SpmspvFormat format;
      int slices;
    };
    const Case cases[] = {{14336, 4096, SpmspvFormat::Column24, 8}, {4096, 14336, SpmspvFormat::Column24, 28},
                          {4096, 4096, SpmspvFormat::Column24, 16}, {1024, 4096, SpmspvFormat::Column24, 16},
                          {14336, 4096, SpmspvFormat::Column48, 4}, {4096, 14336, SpmspvFormat::Column48, 16},
                          {4096, 4096, SpmspvFormat::Column48, 16}, {1024, 4096, SpmspvFormat::Column48, 16}};
    for (const Case& c : cases) {
      const int s = kernels::spmspvSplitKFor(c.rows, c.cols, kernels::spmspvDefaults(c.format), 132);
      QVERIFY2(kernels::spmspvSplitsOf(c.cols, s) == c.slices,
               qPrintable(QStringLiteral("%1x%2 format %3: %4 slices, the grid's winner had %5")
                              .arg(c.rows)
                              .arg(c.cols)
                              .arg(int(c.format))
                              .arg(kernels::spmspvSplitsOf(c.cols, s))
                              .arg(c.slices)));
    }
    // The bitmask kernel's aim (8 blocks per SM, rounded up), at most one step per warp: 56 tiles
    // x 16 slices on 14336x4096.
    QCOMPARE(kernels::spmspvSplitKFor(14336, 4096, kernels::SpmspvConfig{}, 132), 16);
    // An explicit split-K is kept, raised only until every warp's list fits its 512 entries:
    // one warp over 128 steps needs 8 slices.
    kernels::SpmspvConfig cfg;
    cfg.splitK = 3;
    QCOMPARE(kernels::spmspvSplitKFor(4096, 4096, cfg, 132), 3);
    cfg.splitK = 1;
    cfg.warps = 1;
    QCOMPARE(kernels::spmspvSplitKFor(4096, 4096, cfg, 132), 8);
    QCOMPARE(kernels::spmspvListCap(4096, 8, 1), 512);
  }

  // SpmspvConfig::waveFit (the column 2:4 and 4:8 defaults): the aim's slices or one fewer or
  // one more, whichever has the shortest chain on 132 SMs, the blocks on the busiest SM times
  // the steps of the busiest warp. Each case is a shape of the H100 A/B (0e4adf8,
  // bench/results/kernels/h100-spmspv-wavefit-0e4adf8.json): the rule keeps the aim where the
  // first rule's move was slower, and moves where that move was faster.
  void waveFitMovesOffAnAlmostEmptyLastRound() {
    using kernels::SpmspvFormat;
    const auto slices = [](std::int64_t rows, std::int64_t cols, SpmspvFormat f, bool fit) {
      kernels::SpmspvConfig cfg = kernels::spmspvDefaults(f);
      cfg.waveFit = fit;
      return kernels::spmspvSplitsOf(cols, kernels::spmspvSplitKFor(rows, cols, cfg, 132));
    };
    QVERIFY(kernels::spmspvDefaults(SpmspvFormat::Column24).waveFit);
    QVERIFY(kernels::spmspvDefaults(SpmspvFormat::Column48).waveFit);
    QVERIFY(!kernels::spmspvDefaults(SpmspvFormat::ColumnDense).waveFit);
    QVERIFY(!kernels::spmspvDefaults(SpmspvFormat::Bitmask).waveFit);
    // Qwen3-14B gate/up at column 4:8: 68 tiles x 4 = 272 blocks (3 on the busiest SM), 40
    // steps a slice (5 for the busiest of 8 warps): 15 -> 5 slices, 340 blocks (3) of 32 steps
    // (4): 12; 3 slices would be 2 x 7 = 14. Measured 33.2 -> 28.6 us.
    QCOMPARE(slices(17408, 5120, SpmspvFormat::Column48, false), 4);
    QCOMPARE(slices(17408, 5120, SpmspvFormat::Column48, true), 5);
    // Its fused gate|up in the engine (136 tiles): 2 slices (3 x 10) -> 3 (4 x 7); at column 2:4
    // 3 (4 x 7) -> 4 (5 x 5).
    QCOMPARE(slices(34816, 5120, SpmspvFormat::Column48, false), 2);
    QCOMPARE(slices(34816, 5120, SpmspvFormat::Column48, true), 3);
    QCOMPARE(slices(34816, 5120, SpmspvFormat::Column24, false), 3);
    QCOMPARE(slices(34816, 5120, SpmspvFormat::Column24, true), 4);
    // Qwen3-14B down at column 2:4: 22 slices of 25 steps (4 x 4) -> 23 of 24 (4 x 3). Measured
    // 29.8 -> 27.4 us.
    QCOMPARE(slices(5120, 17408, SpmspvFormat::Column24, false), 22);
    QCOMPARE(slices(5120, 17408, SpmspvFormat::Column24, true), 23);
    // Kept: Qwen3-14B q/o at column 2:4, 20 slices of 8 steps (4 x 1); 19 would give 9 steps,
    // two for one warp (3 x 2); measured 11.9 -> 15.3 us with 19.
    QCOMPARE(slices(5120, 5120, SpmspvFormat::Column24, true), 20);
    // Kept: Llama-3.1-8B gate/up at column 2:4, 8 slices (4 x 2); 7 is 3 x 3 (measured 17.6 ->
    // 18.9 us). The grid's other winners stay too.
    QCOMPARE(slices(14336, 4096, SpmspvFormat::Column24, true), 8);
    QCOMPARE(slices(14336, 4096, SpmspvFormat::Column48, true), 4);
    QCOMPARE(slices(4096, 14336, SpmspvFormat::Column48, true), 16);
    QCOMPARE(slices(4096, 14336, SpmspvFormat::Column24, true), 28);  // 29 asked for is 28 slices of 16 steps
    QCOMPARE(slices(4096, 4096, SpmspvFormat::Column48, true), 16);
    QCOMPARE(slices(4096, 4096, SpmspvFormat::Column24, true), 16);  // 17 is past one step a warp
    // Llama-3.1-8B's fused q|k|v at column 4:8 (24 tiles) stays at 10 slices (2 x 2), where the
    // first rule took 11.
    QCOMPARE(slices(6144, 4096, SpmspvFormat::Column48, true), 10);
    // Never for an explicit split-K or the bitmask kernel's aim (no blocksPerSm).
    kernels::SpmspvConfig cfg = kernels::spmspvDefaults(SpmspvFormat::Column48);
    cfg.splitK = 4;
    QCOMPARE(kernels::spmspvSplitKFor(17408, 5120, cfg, 132), 4);
    kernels::SpmspvConfig bitmask;
    bitmask.waveFit = true;
    QCOMPARE(kernels::spmspvSplitKFor(14336, 4096, bitmask, 132), 16);
  }

  void columnRoundTrip_data() {
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("cols");
    QTest::addColumn<int>("group");  // 4: column 2:4, 8: column 4:8
    QTest::addColumn<int>("keep");   // per group of a column
    for (int group : {4, 8})
      for (int keep = 0; keep <= group / 2; ++keep) {
        QTest::addRow("8x1 col%d keep %d", group, keep) << 8 << 1 << group << keep;
        QTest::addRow("256x33 col%d keep %d", group, keep) << 256 << 33 << group << keep;
        QTest::addRow("304x7 col%d keep %d", group, keep) << 304 << 7 << group << keep;
        QTest::addRow("520x40 col%d keep %d", group, keep) << 520 << 40 << group << keep;
      }
  }
  void columnRoundTrip() {
    QFETCH(int, rows);
    QFETCH(int, cols);
    QFETCH(int, group);
    QFETCH(int, keep);
    const auto format = group == 4 ? kernels::SpmspvFormat::Column24 : kernels::SpmspvFormat::Column48;
    for (DType dt : {DType::BF16, DType::F16}) {
      const auto w = gpu::randomColumnPrunedWeights(rows, cols, dt, keep, group, std::uint64_t(rows + cols + keep));
      for (int j = 0; j < cols; ++j)
        for (int g = 0; g < rows; g += group) {
          int nz = 0;
          for (int r = g; r < g + group; ++r) nz += (w[std::size_t(r * cols + j)] & 0x7fff) != 0;
          QCOMPARE(nz, keep);
        }
      const auto m = gpu::packSpmspv(w, rows, cols, dt, format);
      gpu::validateSpmspv(m);
      QCOMPARE(std::int64_t(m.chunks.size()), m.tiles() * cols * 144);
      QCOMPARE(gpu::unpackSpmspv(m), w);
      if (group == 4) {
        // A column 2:4 chunk is a column 4:8 chunk as it stands (its nibbles hold four bits
        // in all): read as one, the matrix is the same.
        auto wide = m;
        wide.format = kernels::SpmspvFormat::Column48;
        gpu::validateSpmspv(wide);
        QCOMPARE(gpu::unpackSpmspv(wide), w);
      }
    }
  }

  // A matrix of over 2^21 weights is packed on several host threads, split by tiles: the
  // layouts are those of one thread (they round-trip), and a refusal in a later thread's
  // tiles reaches the caller, the lowest tile's first where two threads refuse.
  void columnPackAcrossThreads() {
    const int rows = 2056, cols = 1100;  // 9 tiles, the last of 8 rows
    for (auto format :
         {kernels::SpmspvFormat::Column24, kernels::SpmspvFormat::Column48, kernels::SpmspvFormat::ColumnDense}) {
      const int group = format == kernels::SpmspvFormat::Column48 ? 8 : 4;
      auto w = gpu::randomColumnPrunedWeights(rows, cols, DType::BF16, group / 2, group, 7);
      const auto m = gpu::packSpmspv(w, rows, cols, DType::BF16, format);
      gpu::validateSpmspv(m);
      QCOMPARE(gpu::unpackSpmspv(m), w);
      if (format == kernels::SpmspvFormat::ColumnDense) continue;
      const auto fill = [&](int row0, int col) {  // every row of one group of a column nonzero
        for (int r = row0; r < row0 + group; ++r) w[std::size_t(r * cols + col)] = h16(1.f);
      };
      fill(2048, 5);  // the last tile
      try {
        (void)gpu::packSpmspv(w, rows, cols, DType::BF16, format);
        QFAIL("an over-full group in the last tile was packed");
      } catch (const std::invalid_argument& e) {
        QVERIFY2(QString(e.what()).contains(
                     QStringLiteral("column 5 keeps %1 nonzeros in rows 2048..%2").arg(group).arg(2047 + group)),
                 e.what());
      }
      fill(256, 9);  // the second tile as well
      try {
        (void)gpu::packSpmspv(w, rows, cols, DType::BF16, format);
        QFAIL("two over-full groups were packed");
      } catch (const std::invalid_argument& e) {
        QVERIFY2(QString(e.what()).contains(QStringLiteral("column 9 keeps %1 nonzeros in rows 256..").arg(group)),
                 e.what());
      }
    }
  }

  void column24RefusesAndRejects() {
    // Rows that are not a multiple of 4 pad the last group; three nonzeros in one group are refused.
    std::vector<std::uint16_t> w(6 * 3, 0);
    w[4 * 3 + 1] = h16(1.f), w[5 * 3 + 1] = h16(2.f);  // rows 4, 5 of column 1 (group 1: rows 4..7, 6, 7 padding)
    const auto ok = gpu::packSpmspv(w, 6, 3, DType::F16, kernels::SpmspvFormat::Column24);
    QCOMPARE(gpu::unpackSpmspv(ok), w);
    w[1 * 3 + 2] = h16(1.f), w[2 * 3 + 2] = h16(1.f), w[3 * 3 + 2] = h16(1.f);  // rows 1..3 of column 2
    try {
      (void)gpu::packSpmspv(w, 6, 3, DType::F16, kernels::SpmspvFormat::Column24);
      QFAIL("three nonzeros in rows 0..3 were packed");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString(e.what()).contains(QStringLiteral("column 2 keeps 3 nonzeros in rows 0..3")), e.what());
    }
    auto threeBits = ok;
    threeBits.chunks[128] |= 0x4;  // group 0 of lane 0, column 0: rows 0, 1, 2
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::validateSpmspv(threeBits));
    auto padValue = ok;
    padValue.chunks[144 + 3] = h16(5.f, DType::F16);  // column 1, lane 0, group 1's second value: row 5 (valid)
    gpu::validateSpmspv(padValue);
    padValue.chunks[144 + 4] = h16(5.f, DType::F16);  // lane 1's first value: row 8 of a 6-row matrix
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::validateSpmspv(padValue));
    auto shortBuffer = ok;
    shortBuffer.chunks.pop_back();
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::validateSpmspv(shortBuffer));
    auto withOffsets = ok;
    withOffsets.offsets = {0};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::validateSpmspv(withOffsets));
  }

  void column48RefusesAndRejects() {
    // [16, 2]: column 0 keeps rows 0..3 (a column 2:4 matrix cannot), column 1 rows 9, 15.
    std::vector<std::uint16_t> w(16 * 2, 0);
    for (int r = 0; r < 4; ++r) w[std::size_t(r * 2)] = h16(float(r + 1));
    w[9 * 2 + 1] = h16(-1.f), w[15 * 2 + 1] = h16(2.f);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             (void)gpu::packSpmspv(w, 16, 2, DType::BF16, kernels::SpmspvFormat::Column24));
    const auto ok = gpu::packSpmspv(w, 16, 2, DType::BF16, kernels::SpmspvFormat::Column48);
    QCOMPARE(gpu::unpackSpmspv(ok), w);
    QCOMPARE(ok.chunks[128] & 0xffu, 0x0fu);  // lane 0 of column 0: rows 0..3
    QCOMPARE(ok.chunks[128] >> 8, 0x0fu);     // lane 1: no nonzero, the four lowest rows
    for (int i = 0; i < 4; ++i) QCOMPARE(ok.chunks[std::size_t(i)], h16(float(i + 1)));
    // Column 1, lane 1 (rows 8..15): rows 9 and 15, and zeros at rows 8 and 10.
    QCOMPARE(ok.chunks[144 + 128] >> 8, 0x87u);
    QCOMPARE(ok.chunks[144 + 4], std::uint16_t{0});
    QCOMPARE(ok.chunks[144 + 5], h16(-1.f));
    QCOMPARE(ok.chunks[144 + 6], std::uint16_t{0});
    QCOMPARE(ok.chunks[144 + 7], h16(2.f));
    // Read as column 2:4, the byte 0x0f has a nibble of four bits and one of none.
    auto asNarrow = ok;
    asNarrow.format = kernels::SpmspvFormat::Column24;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::validateSpmspv(asNarrow));
    w[4 * 2] = h16(9.f);  // five nonzeros in rows 0..7 of column 0
    try {
      (void)gpu::packSpmspv(w, 16, 2, DType::BF16, kernels::SpmspvFormat::Column48);
      QFAIL("five nonzeros in rows 0..7 were packed");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString(e.what()).contains(QStringLiteral("column 4:8): column 0 keeps 5 nonzeros in rows 0..7 "
                                                         "(at most 4 of every 8 rows)")),
               e.what());
    }
    auto fiveBits = ok;
    fiveBits.chunks[128] |= 0x10;  // lane 0 of column 0: rows 0..4
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::validateSpmspv(fiveBits));
    auto threeBits = ok;
    threeBits.chunks[128] &= 0xfff7;  // rows 0..2
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::validateSpmspv(threeBits));
  }

  // Every kept-row nibble (the six with two bits): col24GroupFma adds the first value into
  // the lower kept row and the second into the higher one, and nothing elsewhere.
  void column24GroupRule() {
    int nibbles = 0;
    for (unsigned nib = 0; nib < 16; ++nib) {
      if (std::popcount(nib) != 2) continue;
      ++nibbles;
      float a[4] = {10.f, 20.f, 30.f, 40.f};
      kernels::col24GroupFma(3.f, 5.f, nib, 2.f, a[0], a[1], a[2], a[3]);
      const int lo = std::countr_zero(nib), hi = 31 - std::countl_zero(nib);
      for (int r = 0; r < 4; ++r) {
        const float want = 10.f * float(r + 1) + (r == lo ? 6.f : r == hi ? 10.f : 0.f);
        QCOMPARE(a[r], want);
      }
    }
    QCOMPARE(nibbles, 6);
  }

  // The column-major dense layout: [300, 3] (two tiles), lane l's 8 rows at 16-bit element
  // 8 l of its chunk, zeros kept, padding rows zero; round trip, padding and size refusals.
  void packsTheDenseColumnLayout() {
    const std::int64_t rows = 300, cols = 3;
    auto w = gpu::randomPrunedWeights(rows, cols, DType::F16, cols, cols, 5);
    w[std::size_t(7 * cols + 1)] = 0;  // a zero weight is kept as one
    const auto m = gpu::packSpmspv(w, rows, cols, DType::F16, kernels::SpmspvFormat::ColumnDense);
    QVERIFY(m.offsets.empty());
    QCOMPARE(m.chunks.size(), std::size_t(2 * cols * 256));
    QCOMPARE(m.bytes(), std::uint64_t(2 * cols * 512));
    for (std::int64_t t = 0; t < 2; ++t)
      for (std::int64_t j = 0; j < cols; ++j)
        for (std::int64_t r = 0; r < 256; ++r) {
          const std::int64_t row = 256 * t + r;
          QCOMPARE(m.chunks[std::size_t((t * cols + j) * 256 + r)],
                   row < rows ? w[std::size_t(row * cols + j)] : std::uint16_t{0});
        }
    gpu::validateSpmspv(m);
    QCOMPARE(gpu::unpackSpmspv(m), w);
    auto padValue = m;
    padValue.chunks[std::size_t((1 * cols + 2) * 256 + 300 - 256)] = h16(1.f, DType::F16);  // row 300 of column 2
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::validateSpmspv(padValue));
    auto shortBuffer = m;
    shortBuffer.chunks.resize(shortBuffer.chunks.size() - 8);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::validateSpmspv(shortBuffer));
    // Every weight is read: a column of x reads the same 512 bytes whatever the weights.
    std::vector<float> x(std::size_t(cols), 1.f);
    QCOMPARE(gpu::spmspvReadBytes(m, x, 0.f), 3.0 * 2 * 512 + 2 * cols);
  }

  // Fusing q|k|v (gate|up) in the column layouts: members of whole 256-row tiles, their
  // chunk buffers one after another, are the chunks of the stacked matrix (what the decode
  // engine launches once instead of once per member).
  void columnChunksConcatenate() {
    for (const auto format :
         {kernels::SpmspvFormat::Column24, kernels::SpmspvFormat::Column48, kernels::SpmspvFormat::ColumnDense}) {
      const int group = format == kernels::SpmspvFormat::Column48 ? 8 : 4;
      const auto make = [&](std::int64_t rows, std::uint64_t seed) {
        return format == kernels::SpmspvFormat::ColumnDense
                   ? gpu::randomPrunedWeights(rows, 40, DType::BF16, 40, 40, seed)
                   : gpu::randomColumnPrunedWeights(rows, 40, DType::BF16, group / 2, group, seed);
      };
      const auto q = make(512, 1), k = make(256, 2), v = make(256, 3);
      std::vector<std::uint16_t> stacked = q;
      stacked.insert(stacked.end(), k.begin(), k.end());
      stacked.insert(stacked.end(), v.begin(), v.end());
      const auto fused = gpu::packSpmspv(stacked, 1024, 40, DType::BF16, format);
      std::vector<std::uint16_t> cat;
      for (const auto* w : {&q, &k, &v}) {
        const auto m = gpu::packSpmspv(*w, std::int64_t(w->size() / 40), 40, DType::BF16, format);
        cat.insert(cat.end(), m.chunks.begin(), m.chunks.end());
      }
      QCOMPARE(cat, fused.chunks);
    }
  }

  // The column file: round trip of both layouts' modules; refusals of a foreign file, a newer
  // version, a truncated file and modules of two layouts.
  void columnFileRoundTrips() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::filesystem::path path = dir.filePath(QStringLiteral("m.sdwcolumn")).toStdString();
    for (const auto format : {kernels::SpmspvFormat::Column24, kernels::SpmspvFormat::Column48}) {
      const int group = format == kernels::SpmspvFormat::Column24 ? 4 : 8;
      std::vector<gpu::SpmspvModule> mods;
      mods.push_back({"model.layers.0.mlp.up_proj",
                      gpu::packSpmspv(gpu::randomColumnPrunedWeights(304, 40, DType::F16, group / 2, group, 3), 304, 40,
                                      DType::F16, format)});
      mods.push_back({"model.layers.0.mlp.down_proj",
                      gpu::packSpmspv(gpu::randomColumnPrunedWeights(16, 304, DType::F16, group / 2, group, 4), 16, 304,
                                      DType::F16, format)});
      gpu::writeSpmspvFile(path, mods);
      QVERIFY(!std::filesystem::exists(path.string() + ".partial"));
      const auto back = gpu::readSpmspvFile(path);
      QCOMPARE(back.size(), mods.size());
      for (std::size_t i = 0; i < mods.size(); ++i) {
        QCOMPARE(back[i].name, mods[i].name);
        QCOMPARE(back[i].matrix.rows, mods[i].matrix.rows);
        QCOMPARE(back[i].matrix.cols, mods[i].matrix.cols);
        QVERIFY(back[i].matrix.format == format);
        QVERIFY(back[i].matrix.dtype == DType::F16);
        QCOMPARE(back[i].matrix.chunks, mods[i].matrix.chunks);
      }
      // Two layouts in one file: refused before anything is written.
      auto mixed = mods;
      mixed[1].matrix =
          gpu::packSpmspv(gpu::randomColumnPrunedWeights(16, 304, DType::F16, 2, 4, 4), 16, 304, DType::F16,
                          format == kernels::SpmspvFormat::Column24 ? kernels::SpmspvFormat::Column48
                                                                    : kernels::SpmspvFormat::Column24);
      QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::writeSpmspvFile(path, mixed));
    }
    const auto bytes = [&] {
      std::ifstream in(path, std::ios::binary);
      return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }();
    const auto refusal = [&](const std::string& content) {
      const std::filesystem::path bad = dir.filePath(QStringLiteral("bad.sdwcolumn")).toStdString();
      std::ofstream(bad, std::ios::binary | std::ios::trunc) << content;
      try {
        (void)gpu::readSpmspvFile(bad);
      } catch (const std::runtime_error& e) {
        return QString::fromStdString(e.what());
      }
      return QString();
    };
    QVERIFY(refusal("SDWBMSK1" + bytes.substr(8)).contains(QStringLiteral("not a packed column file")));
    std::string newer = bytes;
    newer[8] = 2;
    QVERIFY(refusal(newer).contains(QStringLiteral("newer than this build reads")));
    QVERIFY(refusal(bytes.substr(0, bytes.size() - 100)).contains(QStringLiteral("truncated")));
    std::string badMeta = bytes;
    badMeta[bytes.size() - 2] = '\x7f';  // lane 30's meta byte of the last chunk (the file ends there): seven bits
    QVERIFY(refusal(badMeta).contains(QStringLiteral("module model.layers.0.mlp.down_proj")));
  }

  // Every meta byte of four bits (70): col48Fma adds the k-th value into the k-th kept row,
  // and nothing elsewhere.
  void column48LaneRule() {
    int bytes = 0;
    for (unsigned m = 0; m < 256; ++m) {
      if (std::popcount(m) != 4) continue;
      ++bytes;
      float a[8];
      for (int r = 0; r < 8; ++r) a[r] = 100.f * float(r + 1);
      const float v[4] = {3.f, 5.f, 7.f, 11.f};
      kernels::col48Fma(v[0], v[1], v[2], v[3], m, 2.f, a);
      int k = 0;
      for (int r = 0; r < 8; ++r) {
        const float want = 100.f * float(r + 1) + ((m >> r & 1u) ? 2.f * v[k++] : 0.f);
        QVERIFY2(a[r] == want, qPrintable(QStringLiteral("meta 0x%1 row %2: %3, want %4")
                                              .arg(m, 2, 16, QLatin1Char('0'))
                                              .arg(r)
                                              .arg(a[r])
                                              .arg(want)));
      }
    }
    QCOMPARE(bytes, 70);
  }

  // The kernel's walk replayed on the host: per active column, lane l reads its 4 values at
  // value bytes 8 l .. 8 l + 7 and its meta byte at 256 + l of the chunk at (t cols + j) 288
  // and adds them into its 8 rows (column 2:4: col24GroupFma per nibble; column 4:8:
  // col48Fma); against float64 brute force and the CPU reference.
  // lanes 16, the half-warp walk (SpmspvConfig::lanes 16): the two halves take alternate
  // active columns; lane h of a half reads the 16 value bytes at 16 h and the meta bytes 2 h,
  // 2 h + 1 and adds them into rows 16 h .. 16 h + 15 (colHalfFma), which per column is
  // bitwise the full walk's lanes 2 h and 2 h + 1; the halves' sums are added at the end.
  void columnLaneWalkMatchesBruteForce_data() {
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("cols");
    QTest::addColumn<double>("p");
    QTest::addColumn<int>("group");
    QTest::addColumn<int>("lanes");
    for (int group : {1, 4, 8})  // 1: the dense column layout
      for (int lanes : {32, 16}) {
        if (lanes == 16 && group == 1) continue;
        const char* h = lanes == 16 ? " h16" : "";
        for (double p : {0.0, 0.5, 0.75}) {
          QTest::addRow("256x64 p=%.2f col%d%s", p, group, h) << 256 << 64 << p << group << lanes;
          QTest::addRow("304x96 p=%.2f col%d%s", p, group, h) << 304 << 96 << p << group << lanes;
          QTest::addRow("1024x130 p=%.2f col%d%s", p, group, h) << 1024 << 130 << p << group << lanes;
        }
      }
  }
  void columnLaneWalkMatchesBruteForce() {
    QFETCH(int, rows);
    QFETCH(int, cols);
    QFETCH(double, p);
    QFETCH(int, group);
    QFETCH(int, lanes);
    const auto format = group == 1   ? kernels::SpmspvFormat::ColumnDense
                        : group == 4 ? kernels::SpmspvFormat::Column24
                                     : kernels::SpmspvFormat::Column48;
    const int chunkBytes = group == 1 ? 512 : 288;
    for (DType dt : {DType::BF16, DType::F16}) {
      const auto w = group == 1 ? gpu::randomPrunedWeights(rows, cols, dt, cols, cols, 17)
                                : gpu::randomColumnPrunedWeights(rows, cols, dt, group / 2, group, 17);
      const auto m = gpu::packSpmspv(w, rows, cols, dt, format);
      const auto [x, threshold] = randomInput(cols, dt, 18, p);
      std::vector<double> ref, absRef;
      bruteForce(w, rows, cols, dt, x, threshold, ref, absRef);

      const auto* bytes = reinterpret_cast<const unsigned char*>(m.chunks.data());
      const auto widen = [&](std::uint16_t h) { return sparse::from16(h, dt); };
      // [half][tile * 256 + row]: the full walk uses half 0 only
      std::vector<float> halves[2] = {std::vector<float>(std::size_t(m.tiles()) * 256, 0.f),
                                      std::vector<float>(std::size_t(m.tiles()) * 256, 0.f)};
      for (std::int64_t t = 0; t < m.tiles(); ++t) {
        int entry = 0;  // the tile's active columns so far
        for (int j = 0; j < cols; ++j) {
          if (!gpu::spmspvActive(x[std::size_t(j)], threshold)) continue;
          const unsigned char* chunk = bytes + (t * cols + j) * chunkBytes;
          if (lanes == 16) {
            const float xj = x[std::size_t(j)];
            for (int h = 0; h < 16; ++h) {
              std::uint16_t v16[8];
              std::memcpy(v16, chunk + 16 * h, 16);
              float v[8];
              for (int k = 0; k < 8; ++k) v[k] = widen(v16[k]);
              const unsigned char* mb = chunk + kernels::kSpmspvCol24ValueBytes + 2 * h;
              float* a = halves[entry & 1].data() + t * 256 + 16 * h;
              float a0[8], a1[8], f0[8], f1[8];
              std::copy(a, a + 8, a0);
              std::copy(a + 8, a + 16, a1);
              std::copy(a0, a0 + 8, f0);
              std::copy(a1, a1 + 8, f1);
              if (group == 4) kernels::colHalfFma<4>(v, mb[0] | unsigned(mb[1]) << 8, xj, a0, a1);
              else kernels::colHalfFma<8>(v, mb[0] | unsigned(mb[1]) << 8, xj, a0, a1);
              // the full walk's lanes 2 h and 2 h + 1 on the same sums: bitwise the same
              if (group == 4) {
                kernels::col24GroupFma(v[0], v[1], mb[0] & 15u, xj, f0[0], f0[1], f0[2], f0[3]);
                kernels::col24GroupFma(v[2], v[3], mb[0] >> 4, xj, f0[4], f0[5], f0[6], f0[7]);
                kernels::col24GroupFma(v[4], v[5], mb[1] & 15u, xj, f1[0], f1[1], f1[2], f1[3]);
                kernels::col24GroupFma(v[6], v[7], mb[1] >> 4, xj, f1[4], f1[5], f1[6], f1[7]);
              } else {
                kernels::col48Fma(v[0], v[1], v[2], v[3], mb[0], xj, f0);
                kernels::col48Fma(v[4], v[5], v[6], v[7], mb[1], xj, f1);
              }
              for (int r = 0; r < 8; ++r) {
                QCOMPARE(a0[r], f0[r]);
                QCOMPARE(a1[r], f1[r]);
              }
              std::copy(a0, a0 + 8, a);
              std::copy(a1, a1 + 8, a + 8);
            }
            ++entry;
            continue;
          }
          std::vector<float>& lanes32 = halves[0];
          for (int l = 0; l < 32; ++l) {
            if (group == 1) {  // the lane's 16 bytes, one FMA per row
              std::uint16_t v[8];
              std::memcpy(v, chunk + 16 * l, 16);
              float* a = lanes32.data() + t * 256 + 8 * l;
              for (int r = 0; r < 8; ++r) a[r] = std::fma(widen(v[r]), x[std::size_t(j)], a[r]);
              continue;
            }
            std::uint16_t v[4];
            std::memcpy(v, chunk + 8 * l, 8);
            const unsigned meta = chunk[kernels::kSpmspvCol24ValueBytes + l];
            float* a = lanes32.data() + t * 256 + 8 * l;
            if (group == 4) {
              kernels::col24GroupFma(widen(v[0]), widen(v[1]), meta & 15u, x[std::size_t(j)], a[0], a[1], a[2], a[3]);
              kernels::col24GroupFma(widen(v[2]), widen(v[3]), meta >> 4, x[std::size_t(j)], a[4], a[5], a[6], a[7]);
            } else {
              float acc[8];
              std::copy(a, a + 8, acc);
              kernels::col48Fma(widen(v[0]), widen(v[1]), widen(v[2]), widen(v[3]), meta, x[std::size_t(j)], acc);
              std::copy(acc, acc + 8, a);
            }
          }
        }
      }
      std::vector<float> y(std::size_t(rows), -7.f);
      gpu::spmspvCpu(m, x, threshold, y);
      for (int r = 0; r < rows; ++r) {
        const double tol = 1e-6 * absRef[std::size_t(r)] + 1e-30;
        const float walked = halves[0][std::size_t(r)] + halves[1][std::size_t(r)];
        QVERIFY2(std::fabs(walked - ref[std::size_t(r)]) <= tol,
                 qPrintable(QStringLiteral("row %1: lanes %2 vs %3").arg(r).arg(walked).arg(ref[std::size_t(r)])));
        QVERIFY2(
            std::fabs(y[std::size_t(r)] - ref[std::size_t(r)]) <= tol,
            qPrintable(QStringLiteral("row %1: cpu %2 vs %3").arg(r).arg(y[std::size_t(r)]).arg(ref[std::size_t(r)])));
      }
      double active = 0;
      for (float v : x) active += gpu::spmspvActive(v, threshold);
      QCOMPARE(gpu::spmspvReadBytes(m, x, threshold), active * double(m.tiles()) * chunkBytes + 2.0 * cols);
    }
  }

  // SDW_SPMSPV_LANES=16 gives the column 2:4 and 4:8 layouts the half-warp walk for the
  // benchmarks' and the engine's A/B runs; other layouts and values keep 32.
  void runDefaultsOverrides() {
    using kernels::SpmspvFormat;
    qunsetenv("SDW_SPMSPV_LANES");
    for (auto f : {SpmspvFormat::Bitmask, SpmspvFormat::Column24, SpmspvFormat::Column48, SpmspvFormat::ColumnDense})
      QCOMPARE(kernels::spmspvRunDefaults(f).lanes, 32);
    qputenv("SDW_SPMSPV_LANES", "16");
    QCOMPARE(kernels::spmspvRunDefaults(SpmspvFormat::Column24).lanes, 16);
    QCOMPARE(kernels::spmspvRunDefaults(SpmspvFormat::Column48).lanes, 16);
    QCOMPARE(kernels::spmspvRunDefaults(SpmspvFormat::ColumnDense).lanes, 32);
    QCOMPARE(kernels::spmspvRunDefaults(SpmspvFormat::Bitmask).lanes, 32);
    QCOMPARE(kernels::spmspvRunDefaults(SpmspvFormat::Column24).stages, 4);  // the rest as spmspvDefaults
    qputenv("SDW_SPMSPV_LANES", "8");
    QCOMPARE(kernels::spmspvRunDefaults(SpmspvFormat::Column24).lanes, 32);
    qunsetenv("SDW_SPMSPV_LANES");
    // SpmspvConfig::waveFit: on for column 2:4 and 4:8 unless SDW_SPMSPV_WAVEFIT=0; =1 also for
    // the column-major dense layout; never the bitmask kernel
    qunsetenv("SDW_SPMSPV_WAVEFIT");
    QVERIFY(kernels::spmspvRunDefaults(SpmspvFormat::Column48).waveFit);
    QVERIFY(!kernels::spmspvRunDefaults(SpmspvFormat::ColumnDense).waveFit);
    qputenv("SDW_SPMSPV_WAVEFIT", "0");
    for (auto f : {SpmspvFormat::Column24, SpmspvFormat::Column48, SpmspvFormat::ColumnDense})
      QVERIFY(!kernels::spmspvRunDefaults(f).waveFit);
    qputenv("SDW_SPMSPV_WAVEFIT", "1");
    for (auto f : {SpmspvFormat::Column24, SpmspvFormat::Column48, SpmspvFormat::ColumnDense})
      QVERIFY(kernels::spmspvRunDefaults(f).waveFit);
    QVERIFY(!kernels::spmspvRunDefaults(SpmspvFormat::Bitmask).waveFit);
    qunsetenv("SDW_SPMSPV_WAVEFIT");
    // SpmspvConfig::pdl: on for column 2:4 and 4:8 unless SDW_SPMSPV_PDL=0; =1 also for the
    // column-major dense layout; never the bitmask kernel
    QVERIFY(kernels::spmspvRunDefaults(SpmspvFormat::Column24).pdl);
    QVERIFY(kernels::spmspvRunDefaults(SpmspvFormat::Column48).pdl);
    QVERIFY(!kernels::spmspvRunDefaults(SpmspvFormat::ColumnDense).pdl);
    QVERIFY(!kernels::spmspvRunDefaults(SpmspvFormat::Bitmask).pdl);
    qputenv("SDW_SPMSPV_PDL", "0");
    for (auto f : {SpmspvFormat::Column24, SpmspvFormat::Column48, SpmspvFormat::ColumnDense})
      QVERIFY(!kernels::spmspvRunDefaults(f).pdl);
    qputenv("SDW_SPMSPV_PDL", "1");
    for (auto f : {SpmspvFormat::Column24, SpmspvFormat::Column48, SpmspvFormat::ColumnDense})
      QVERIFY(kernels::spmspvRunDefaults(f).pdl);
    QVERIFY(!kernels::spmspvRunDefaults(SpmspvFormat::Bitmask).pdl);
    qunsetenv("SDW_SPMSPV_PDL");
  }

  // The CPU benchmark's spMspV rows: one per weight layout and activation sparsity, with
  // its speed-up over the CPU dense GEMV, in the JSON and back; without activation
  // sparsities none of it.
  void cpuBenchRows() {
    gpu::BenchSettings s;
    s.shapes = gpu::parseShapes("304x96");
    s.patterns = {"2:4"};
    s.repeats = 1;
    s.forceCpu = true;
    s.cpuThreads = 1;
    s.activationSparsities = {0.0, 0.5};
    const auto r = gpu::runKernelBench(s, {});
    const char* layouts[] = {"50%", "col2:4", "col4:8", "dense"};
    int n = 0;
    for (const auto& row : r.rows) {
      if (row.id != gpu::KernelId::SpmspvCpu) {
        QVERIFY(!row.activationSparsity);
        continue;
      }
      QVERIFY(row.activationSparsity);
      QCOMPARE(*row.activationSparsity, n % 2 == 0 ? 0.0 : 0.5);
      QCOMPARE(row.pattern, std::string(layouts[n / 2]));  // every weight layout
      QVERIFY(row.us > 0 && row.bytes > 0 && row.speedupVsDense > 0);
      ++n;
    }
    QCOMPARE(n, 8);
    QCOMPARE(r.activationSummary.size(), std::size_t{8});
    QCOMPARE(r.activationSummary[1].activationSparsity, 0.5);
    QCOMPARE(r.activationSummary[1].pattern, std::string("50%"));
    QCOMPARE(r.activationSummary[1].count, 1);
    QCOMPARE(r.activationSummary[3].pattern, std::string("col2:4"));
    QCOMPARE(r.activationSummary[5].pattern, std::string("col4:8"));
    QCOMPARE(r.activationSummary[7].pattern, std::string("dense"));
    // Each summary's bytes limit: our dense GEMV's bytes over the layout's (one shape: that row).
    const auto denseRow = std::find_if(r.rows.begin(), r.rows.end(),
                                       [](const gpu::BenchRow& row) { return row.id == gpu::KernelId::DenseCpu; });
    QVERIFY(denseRow != r.rows.end() && denseRow->batch == 1);
    int spmspvRow = 0;
    for (const auto& row : r.rows) {
      if (row.id != gpu::KernelId::SpmspvCpu) continue;
      const auto& a = r.activationSummary[std::size_t(spmspvRow++)];
      QCOMPARE(a.medianBytesLimit, denseRow->bytes / row.bytes);
      QCOMPARE(a.medianFractionOfLimit, row.speedupVsDense / a.medianBytesLimit);
    }
    // Half the columns read: a half-sparse layout's limit about doubles; every weight column-major
    // (304 rows padded to 512): under 1 at p_x 0.
    QVERIFY(r.activationSummary[3].medianBytesLimit > 1.9 * r.activationSummary[2].medianBytesLimit);
    QVERIFY(r.activationSummary[6].medianBytesLimit < 1.0);
    // The column layouts read whole chunks, 288 bytes (dense: 512): 304 rows are 2 tiles.
    QCOMPARE(r.rows[r.rows.size() - 3].bytes, 48.0 * 2 * 288 + 2 * 96);  // col4:8 at p_x 0.5
    QCOMPARE(r.rows.back().bytes, 48.0 * 2 * 512 + 2 * 96);              // dense at p_x 0.5
    const auto json = gpu::toJson(r, "test", s);
    const auto j = nlohmann::json::parse(json);
    QCOMPARE(j.at("activation_summary").size(), std::size_t{8});
    QCOMPARE(j.at("activation_summary")[2].at("pattern").get<std::string>(), std::string("col2:4"));
    QCOMPARE(j.at("activation_summary")[4].at("pattern").get<std::string>(), std::string("col4:8"));
    QCOMPARE(j.at("activation_summary")[3].at("median_bytes_limit").get<double>(),
             r.activationSummary[3].medianBytesLimit);
    const auto back = gpu::fromJson(json);
    QCOMPARE(back.rows.size(), r.rows.size());
    QCOMPARE(back.activationSummary.size(), std::size_t{8});
    QCOMPARE(*back.rows.back().activationSparsity, 0.5);
    QCOMPARE(back.rows.back().kernel, std::string("spmspv-cpu"));

    // --spmspv-layouts: only those layouts, named in the settings.
    QCOMPARE(gpu::parseSpmspvLayouts(" col4:8, dense,col4:8"), (std::vector<std::string>{"col4:8", "dense"}));
    QCOMPARE(gpu::spmspvLayoutNames(), (std::vector<std::string>{"50%", "col2:4", "col4:8", "dense"}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, (void)gpu::parseSpmspvLayouts("col8:16"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, (void)gpu::parseSpmspvLayouts(" , "));
    {
      auto only = s;
      only.spmspvLayouts = {"col4:8"};
      const auto o = gpu::runKernelBench(only, {});
      QCOMPARE(o.activationSummary.size(), std::size_t{2});
      for (const auto& row : o.rows)
        if (row.id == gpu::KernelId::SpmspvCpu) QCOMPARE(row.pattern, std::string("col4:8"));
      const auto oj = nlohmann::json::parse(gpu::toJson(o, "test", only));
      QCOMPARE(oj.at("settings").at("spmspv_layouts"), nlohmann::json(std::vector<std::string>{"col4:8"}));
    }
    QCOMPARE(j.at("settings").at("spmspv_layouts").size(), std::size_t{4});

    // 300 rows hold whole groups of 4 but not of 8: no col4:8 rows, and a note says why.
    s.shapes = gpu::parseShapes("300x96");
    s.activationSparsities = {0.5};
    const auto odd = gpu::runKernelBench(s, {});
    QCOMPARE(odd.activationSummary.size(), std::size_t{3});
    QVERIFY(std::any_of(odd.notes.begin(), odd.notes.end(), [](const std::string& note) {
      return note.find("col4:8 needs rows divisible by 8") != std::string::npos;
    }));

    s.activationSparsities.clear();
    const auto plain = gpu::runKernelBench(s, {});
    const auto pj = nlohmann::json::parse(gpu::toJson(plain, "test", s));
    QVERIFY(!pj.contains("activation_summary"));
    QVERIFY(!pj.at("settings").contains("activation_sparsities"));
    for (const auto& row : pj.at("rows")) QVERIFY(!row.contains("activation_sparsity"));
    QVERIFY(gpu::kernelFromName("spmspv") == gpu::KernelId::Spmspv);
  }
};

QTEST_APPLESS_MAIN(TestSpmspvCpu)
#include "test_spmspv_cpu.moc"
