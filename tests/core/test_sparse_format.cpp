// The bitmask N:M format: pack/unpack round trips, validation, shapes, and the
// packed file.

#include "core/sparse_file.h"
#include "core/sparse_format.h"

#include <QTemporaryDir>
#include <QtTest>

#include <bit>
#include <fstream>
#include <random>

using namespace sdw::sparse;

namespace {
std::vector<float> randomMatrix(std::int64_t rows, std::int64_t cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> w(static_cast<std::size_t>(rows * cols));
  for (auto& v : w) v = nd(rng);
  return w;
}
}  // namespace

class TestSparseFormat : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void roundTrip_data() {
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("m");
    QTest::addColumn<int>("dtype");
    for (const Pattern& p : kPatterns)
      for (DType d : {DType::BF16, DType::F16})
        QTest::addRow("%d:%d %s", p.n, p.m, dtypeName(d).data()) << p.n << p.m << static_cast<int>(d);
  }
  void roundTrip() {
    QFETCH(int, n);
    QFETCH(int, m);
    QFETCH(int, dtype);
    const Pattern p{n, m};
    const auto dt = static_cast<DType>(dtype);
    const std::int64_t rows = 7, cols = 96;
    auto w = randomMatrix(rows, cols, static_cast<unsigned>(n * 100 + dtype));
    const auto keep = imposePattern(w, rows, cols, p);
    // Values the format can hold exactly.
    for (auto& v : w) v = from16(floatTo16(v, dt), dt);
    const PackedMatrix pk = pack(w, keep, rows, cols, p, dt);
    validate(pk);
    QCOMPARE(pk.values.size(), std::size_t(rows * cols / 2));
    QCOMPARE(pk.masks.size(), std::size_t(rows * cols / 32));
    for (std::uint32_t word : pk.masks) QCOMPARE(std::popcount(word), 16);
    // Bit b of word (r, g) set iff W[r, 32g + b] kept.
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c)
        QCOMPARE(bool((pk.masks[std::size_t(r * 3 + c / 32)] >> (c % 32)) & 1u), bool(keep[std::size_t(r * cols + c)]));
    // Values in increasing column order: the first kept weight of row 1.
    std::int64_t firstKept = 0;
    while (!keep[std::size_t(cols + firstKept)]) ++firstKept;
    QCOMPARE(from16(pk.values[std::size_t(cols / 2)], dt), w[std::size_t(cols + firstKept)]);
    const auto back = unpack(pk);
    QCOMPARE(back.size(), w.size());
    for (std::size_t i = 0; i < w.size(); ++i) QCOMPARE(back[i], w[i]);
    // packDense finds the same pattern from the zeros.
    const PackedMatrix pd = packDense(w, rows, cols, p, dt);
    QVERIFY(pd.masks == pk.masks);
    QVERIFY(pd.values == pk.values);
  }

  void keptZerosStillPack() {
    // A group whose kept weights are exactly zero still yields 16 bits per word.
    std::vector<float> w(32, 0.f);
    w[5] = 1.f;
    const PackedMatrix p = packDense(w, 1, 32, {16, 32}, DType::BF16);
    QCOMPARE(std::popcount(p.masks[0]), 16);
    QVERIFY(p.masks[0] & (1u << 5));
    QCOMPARE(unpack(p), w);
  }

  void validateRejectsBitCounts_data() {
    QTest::addColumn<quint32>("word");
    QTest::newRow("15 bits") << quint32(0x00007fffu);
    QTest::newRow("17 bits") << quint32(0x0001ffffu);
    QTest::newRow("0 bits") << quint32(0);
    QTest::newRow("32 bits") << quint32(0xffffffffu);
  }
  void validateRejectsBitCounts() {
    QFETCH(quint32, word);
    auto w = randomMatrix(2, 64, 3);
    imposePattern(w, 2, 64, {16, 32});
    PackedMatrix p = packDense(w, 2, 64, {16, 32}, DType::BF16);
    validate(p);
    p.masks[3] = word;
    try {
      validate(p);
      QFAIL("validate accepted a bad word");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString(e.what()).contains("row 1, word 1"), e.what());
    }
  }

  void validateRejectsBrokenPattern() {
    auto w = randomMatrix(1, 32, 4);
    imposePattern(w, 1, 32, {2, 4});
    PackedMatrix p = packDense(w, 1, 32, {2, 4}, DType::BF16);
    p.masks[0] = 0x0000ffffu;  // 16 bits, but groups of 4 keep 4 or 0
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, validate(p));
    p.pattern = {16, 32};  // ... which is a valid 16:32 word
    validate(p);
  }

  void rejectsBadShapes() {
    std::vector<float> w(100 * 2, 1.f);
    try {
      packDense(w, 2, 100, {2, 4}, DType::BF16);
      QFAIL("width 100 accepted");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString(e.what()).contains("[2, 100]") && QString(e.what()).contains("multiple of 32"), e.what());
    }
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, checkShape(0, 32));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, checkShape(4, 16));
    checkShape(1, 32);
    // Wrong buffer sizes and too many nonzeros.
    std::vector<float> small(31, 1.f);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, packDense(small, 1, 32, {2, 4}, DType::BF16));
    std::vector<float> dense(32, 1.f);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, packDense(dense, 1, 32, {2, 4}, DType::BF16));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parsePattern("3:4"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parseDType("fp8"));
    PackedMatrix p = packDense(std::vector<float>(32, 0.f), 1, 32, {2, 4}, DType::BF16);
    p.values.pop_back();
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, validate(p));
  }

  void halfConversions() {
    QCOMPARE(halfToFloat(floatToHalf(1.0f)), 1.0f);
    QCOMPARE(halfToFloat(floatToHalf(65504.f)), 65504.f);
    QVERIFY(std::isinf(halfToFloat(floatToHalf(70000.f))));
    QCOMPARE(halfToFloat(floatToHalf(5.9604644775390625e-8f)), 5.9604644775390625e-8f);  // smallest subnormal
    QCOMPARE(halfToFloat(floatToHalf(-0.333251953125f)), -0.333251953125f);
    QCOMPARE(floatToHalf(1.0f + 1.0f / 2048), floatToHalf(1.0f));  // tie rounds to even
    QCOMPARE(bf16ToFloat(floatToBf16(3.140625f)), 3.140625f);
    QCOMPARE(floatToBf16(1.0f + 1.0f / 256), floatToBf16(1.0f));  // tie rounds to even
    QVERIFY(std::isnan(bf16ToFloat(floatToBf16(std::nanf("")))));
  }

  void fileRoundTrip() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::filesystem::path path = dir.filePath("model.sdwsparse").toStdString();
    std::vector<SparseModule> mods;
    for (int i = 0; i < 3; ++i) {
      const std::int64_t rows = 5 + i, cols = 64 * (i + 1);
      auto w = randomMatrix(rows, cols, 10u + unsigned(i));
      imposePattern(w, rows, cols, {4, 8});
      mods.push_back({"model.layers." + std::to_string(i) + ".mlp.up_proj",
                      packDense(w, rows, cols, {4, 8}, DType::F16)});
    }
    writeSparseFile(path, mods);
    QVERIFY(!std::filesystem::exists(path.string() + ".partial"));
    const auto back = readSparseFile(path);
    QCOMPARE(back.size(), mods.size());
    for (std::size_t i = 0; i < mods.size(); ++i) {
      QCOMPARE(back[i].name, mods[i].name);
      QCOMPARE(back[i].matrix.rows, mods[i].matrix.rows);
      QCOMPARE(back[i].matrix.cols, mods[i].matrix.cols);
      QVERIFY(back[i].matrix.pattern == (Pattern{4, 8}));
      QVERIFY(back[i].matrix.dtype == DType::F16);
      QVERIFY(back[i].matrix.values == mods[i].matrix.values);
      QVERIFY(back[i].matrix.masks == mods[i].matrix.masks);
    }
    // Mixed patterns are refused.
    auto mixed = mods;
    auto w = randomMatrix(2, 32, 1);
    imposePattern(w, 2, 32, {2, 4});
    mixed.push_back({"other", packDense(w, 2, 32, {2, 4}, DType::F16)});
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, writeSparseFile(path, mixed));

    // Truncated, foreign and newer files are refused with a reason.
    const auto size = std::filesystem::file_size(path);
    std::filesystem::resize_file(path, size - 16);
    try {
      readSparseFile(path);
      QFAIL("truncated file accepted");
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString(e.what()).contains("truncated"), e.what());
    }
    writeSparseFile(path, mods);
    {
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(8);
      const std::uint32_t v = 99;
      f.write(reinterpret_cast<const char*>(&v), 4);
    }
    try {
      readSparseFile(path);
      QFAIL("newer file accepted");
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString(e.what()).contains("newer"), e.what());
    }
    {
      std::ofstream f(path, std::ios::binary | std::ios::trunc);
      f << "PK\x03\x04 not ours";
    }
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, readSparseFile(path));
  }
};

QTEST_GUILESS_MAIN(TestSparseFormat)
#include "test_sparse_format.moc"
