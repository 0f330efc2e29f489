// The spMspV layout on the host (gpu/spmspv_pack.h): packing against hand-made
// chunks, pack/unpack round trips, validation, the CPU product against a
// brute-force float64 product of the dense matrix and the masked input, the
// activation threshold, and the spMspV rows of the CPU benchmark. No GPU needed.

#include "core/sparse_format.h"
#include "gpu/bench.h"
#include "gpu/kernels/spmspv_layout.h"
#include "gpu/spmspv_pack.h"

#include <nlohmann/json.hpp>

#include <QtTest>

#include <algorithm>
#include <cmath>

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
    for (int j = 0; j < 3; ++j) QCOMPARE(m.offsets[std::size_t(j + 1)] - m.offsets[std::size_t(j)], std::uint32_t(kernels::kSpmspvMaxChunkUnits));
    // tile 1: 44 rows -> mask + 44 values = 2 + 6 units
    for (int j = 3; j < 6; ++j) QCOMPARE(m.offsets[std::size_t(j + 1)] - m.offsets[std::size_t(j)], std::uint32_t{8});
    const std::size_t e = std::size_t{m.offsets[3]} * 8;  // tile 1, column 0: rows 256..299 kept
    QCOMPARE(m.chunks[e], std::uint16_t{0xffff});        // rows 0..15 of the tile
    QCOMPARE(m.chunks[e + 2], std::uint16_t{0x0fff});    // rows 32..43
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
    const auto w = gpu::randomPrunedWeights(rows, cols, dt, keep, group, std::uint64_t(rows) * 31 + std::uint64_t(cols));
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
        for (std::int64_t r = t * 256; r < std::min<std::int64_t>(rows, t * 256 + 256); ++r) c += (w[std::size_t(r * cols + j)] & 0x7fff) != 0;
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
      auto x16 = gpu::randomNormal16(cols, dt, 12);
      const float threshold = gpu::activationThreshold(x16, dt, p);
      std::vector<float> x(x16.size());
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = sparse::from16(x16[i], dt);
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
    QVERIFY(std::count(x.begin(), x.end(), std::uint16_t(0xbf01)) + std::count(x.begin(), x.end(), std::uint16_t(0xbf00)) == 1);  // sign kept
    auto y = gpu::randomNormal16(100, DType::F16, 1);
    QCOMPARE(gpu::activationThreshold(y, DType::F16, 0.0), -1.f);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, (void)gpu::activationThreshold(y, DType::F16, 1.5));
    const float all = gpu::activationThreshold(y, DType::F16, 1.0);  // every entry skipped
    for (auto h : y) QVERIFY(!gpu::spmspvActive(sparse::from16(h, DType::F16), all));
  }

  // The CPU benchmark's spMspV rows: one per activation sparsity, with its speed-up over
  // the CPU dense GEMV, in the JSON and back; without activation sparsities none of it.
  void cpuBenchRows() {
    gpu::BenchSettings s;
    s.shapes = gpu::parseShapes("300x96");
    s.patterns = {"2:4"};
    s.repeats = 1;
    s.forceCpu = true;
    s.cpuThreads = 1;
    s.activationSparsities = {0.0, 0.5};
    const auto r = gpu::runKernelBench(s, {});
    int n = 0;
    for (const auto& row : r.rows) {
      if (row.id != gpu::KernelId::SpmspvCpu) {
        QVERIFY(!row.activationSparsity);
        continue;
      }
      QVERIFY(row.activationSparsity);
      QCOMPARE(*row.activationSparsity, n == 0 ? 0.0 : 0.5);
      QVERIFY(row.us > 0 && row.bytes > 0 && row.speedupVsDense > 0);
      ++n;
    }
    QCOMPARE(n, 2);
    QCOMPARE(r.activationSummary.size(), std::size_t{2});
    QCOMPARE(r.activationSummary[1].activationSparsity, 0.5);
    QCOMPARE(r.activationSummary[1].count, 1);
    const auto json = gpu::toJson(r, "test", s);
    const auto j = nlohmann::json::parse(json);
    QCOMPARE(j.at("activation_summary").size(), std::size_t{2});
    const auto back = gpu::fromJson(json);
    QCOMPARE(back.rows.size(), r.rows.size());
    QCOMPARE(back.activationSummary.size(), std::size_t{2});
    QCOMPARE(*back.rows.back().activationSparsity, 0.5);
    QCOMPARE(back.rows.back().kernel, std::string("spmspv-cpu"));

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
