// The spMspV kernel (gpu/kernels/spmspv.cu) on the device against a float64
// product of the same 16-bit weights and the same masked input: bf16/fp16, 50%
// unstructured and 2:4 weights, rows not a multiple of 256, columns not a multiple
// of 32, activation sparsity 0 .. 1, several warps and split-K counts (each launch
// twice: the split-K counters must reset), chunks copied in 16-byte pieces and by bulk
// copies, guard regions around y; and the column 2:4 layout's kernel. Label: gpu.
// Skips without a device.

#include "core/sparse_format.h"
#include "gpu/device.h"
#include "gpu/kernel_cases.h"
#include "gpu/kernels/spmspv_layout.h"
#include "gpu/spmspv_pack.h"

#include <torch/torch.h>

#include <QtTest>

#include <algorithm>
#include <cmath>

using namespace sdw;

namespace {
constexpr std::int64_t kGuard = 64;
constexpr double kSentinel = -1216.0;  // exact in bf16 and fp16

struct Result {
  std::vector<double> y;  // [rows]
  bool guardsIntact = true;
};

// Launches twice into a guarded y and returns it.
Result runGuarded(gpu::SpmspvCase& c, int warps, int splitK, int stages = 3, bool bulk = false, int cluster = 0,
                  int lanes = 32) {
  const auto dt = c.host.dtype == sparse::DType::BF16 ? torch::kBFloat16 : torch::kHalf;
  auto buf = torch::full({2 * kGuard + c.host.rows}, kSentinel, torch::TensorOptions().device(torch::kCUDA).dtype(dt));
  c.y = buf.narrow(0, kGuard, c.host.rows);
  for (int i = 0; i < 2; ++i)
    if (const char* e = gpu::launchSpmspvCase(c, 0, warps, splitK, stages, bulk, cluster, lanes))
      throw std::runtime_error(e);
  torch::cuda::synchronize();
  const auto all = buf.cpu().to(torch::kDouble);
  Result r;
  const double* p = all.data_ptr<double>();
  for (std::int64_t i = 0; i < all.numel(); ++i) {
    if (i >= kGuard && i < kGuard + c.host.rows) r.y.push_back(p[i]);
    else if (p[i] != kSentinel) r.guardsIntact = false;
  }
  return r;
}

// Launches c (runGuarded) and checks y against a float64 product of exactly what the kernel
// reads (the weights w [rows, cols], x masked by the threshold): per row within the 16-bit
// output rounding plus fp32 rounding (sum |w x|), the relative error, exact zeros when
// nothing is read, and the guards. p: the activation sparsity x was set to.
void expectReference(gpu::SpmspvCase& c, const std::vector<std::uint16_t>& w, double p, int warps, int splitK,
                     int stages, bool bulk, int cluster, int lanes = 32) {
  const auto dt = c.host.dtype;
  const std::int64_t rows = c.host.rows, cols = c.host.cols;
  std::vector<double> ref(std::size_t(rows), 0.0), absRef(std::size_t(rows), 0.0);
  std::int64_t active = 0;
  for (std::int64_t j = 0; j < cols; ++j) {
    const float xj = sparse::from16(c.xHost[std::size_t(j)], dt);
    if (!gpu::spmspvActive(xj, c.threshold)) continue;
    ++active;
    for (std::int64_t r = 0; r < rows; ++r) {
      const double t = double(sparse::from16(w[std::size_t(r * cols + j)], dt)) * xj;
      ref[std::size_t(r)] += t;
      absRef[std::size_t(r)] += std::fabs(t);
    }
  }
  QCOMPARE(active, cols - std::llround(p * double(cols)));

  const auto got = runGuarded(c, warps, splitK, stages, bulk, cluster, lanes);
  QVERIFY2(got.guardsIntact, "y's guard region was overwritten");
  const double halfUlp = dt == sparse::DType::BF16 ? 1.0 / 256 : 1.0 / 2048;  // output rounding to 16 bits
  double err = 0, norm = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    const double g = got.y[std::size_t(r)], want = ref[std::size_t(r)];
    QVERIFY2(std::isfinite(g), qPrintable(QStringLiteral("row %1 not finite").arg(r)));
    const double tol = halfUlp * std::fabs(want) + 2e-5 * absRef[std::size_t(r)] + 1e-30;
    QVERIFY2(std::fabs(g - want) <= tol,
             qPrintable(QStringLiteral("row %1: %2 vs %3 (tol %4)").arg(r).arg(g).arg(want).arg(tol)));
    err += (g - want) * (g - want);
    norm += want * want;
  }
  if (active == 0) QCOMPARE(err, 0.0);  // nothing read: y exactly zero
  else
    QVERIFY2(std::sqrt(err / norm) < 2 * halfUlp,
             qPrintable(QStringLiteral("relative error %1").arg(std::sqrt(err / norm))));
}
// A bf16 case of a column layout by its group: 4 column 2:4, 8 column 4:8 (half of each group
// of a column kept), 1 the column-major dense layout (every weight kept); one copy.
gpu::SpmspvCase columnCase(std::int64_t rows, std::int64_t cols, int group, std::uint64_t seed) {
  const auto dt = sparse::DType::BF16;
  const auto w = group == 1 ? gpu::randomPrunedWeights(rows, cols, dt, cols, cols, seed)
                            : gpu::randomColumnPrunedWeights(rows, cols, dt, group / 2, group, seed);
  return gpu::prepareSpmspvCase(gpu::packSpmspv(w, rows, cols, dt,
                                                group == 1   ? kernels::SpmspvFormat::ColumnDense
                                                : group == 8 ? kernels::SpmspvFormat::Column48
                                                             : kernels::SpmspvFormat::Column24),
                                1);
}
// Its name in a data row (no colon: it would end the test function's name).
const char* columnTag(int group) { return group == 4 ? "col24" : group == 8 ? "col48" : "dense"; }
}  // namespace

class TestSpmspvCuda : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() {
    const auto& d = gpu::deviceInfo();
    if (!d.cudaAvailable) QSKIP(qPrintable(QStringLiteral("no CUDA device: %1").arg(QString::fromStdString(d.reason))));
    qInfo("device: %s", gpu::describeDevice(d).c_str());
  }

  void matchesReference_data() {
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("cols");
    QTest::addColumn<int>("keep");  // per group of `group` columns of a row
    QTest::addColumn<int>("group");
    QTest::addColumn<double>("p");  // activation sparsity
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<int>("warps");
    QTest::addColumn<int>("splitK");  // 0: heuristic
    QTest::addColumn<int>("stages");  // groups of chunks in flight per warp
    QTest::addColumn<bool>("bulk");   // chunks by bulk copies (sm_90; cp.async below)
    for (const bool bulk : {false, true}) {
      const char* b = bulk ? " bulk" : "";
      for (const char* dt : {"bf16", "fp16"}) {
        for (double p : {0.0, 0.25, 0.5, 0.75, 0.99, 1.0}) {
          QTest::addRow("37x96 50%% p=%.2f %s%s", p, dt, b) << 37 << 96 << 48 << 96 << p << dt << 4 << 0 << 3 << bulk;
          QTest::addRow("300x33 50%% p=%.2f %s%s", p, dt, b) << 300 << 33 << 16 << 33 << p << dt << 4 << 0 << 2 << bulk;
          QTest::addRow("257x1000 2:4 p=%.2f %s%s", p, dt, b)
              << 257 << 1000 << 2 << 4 << p << dt << 8 << 3 << 6 << bulk;
          QTest::addRow("1x5 p=%.2f %s%s", p, dt, b) << 1 << 5 << 3 << 5 << p << dt << 1 << 1 << 4 << bulk;
          QTest::addRow("600x4000 50%% p=%.2f %s%s", p, dt, b)
              << 600 << 4000 << 2000 << 4000 << p << dt << 16 << 7 << 6 << bulk;
        }
        QTest::addRow("dense 512x2080 p=0.5 %s%s", dt, b)
            << 512 << 2080 << 2080 << 2080 << 0.5 << dt << 4 << 0 << 3 << bulk;  // 34-unit chunks
        QTest::addRow("split 65 of 2080 cols %s%s", dt, b)
            << 513 << 2080 << 1040 << 2080 << 0.5 << dt << 2 << 65 << 2 << bulk;
      }
      for (double p : {0.0, 0.5, 0.75}) {
        QTest::addRow("llama 4096x4096 50%% p=%.2f%s", p, b)
            << 4096 << 4096 << 2048 << 4096 << p << "bf16" << 4 << 0 << 3 << bulk;
        QTest::addRow("llama 14336x4096 50%% p=%.2f%s", p, b)
            << 14336 << 4096 << 2048 << 4096 << p << "bf16" << 16 << 0 << 6 << bulk;
        QTest::addRow("llama 4096x14336 50%% p=%.2f%s", p, b)
            << 4096 << 14336 << 7168 << 14336 << p << "bf16" << 8 << 0 << 4 << bulk;
      }
      QTest::addRow("llama 4096x4096 2:4 p=0.5 fp16 w8%s", b)
          << 4096 << 4096 << 2 << 4 << 0.5 << "fp16" << 8 << 0 << 3 << bulk;
    }
  }

  void matchesReference() {
    QFETCH(int, rows);
    QFETCH(int, cols);
    QFETCH(int, keep);
    QFETCH(int, group);
    QFETCH(double, p);
    QFETCH(QString, dtype);
    QFETCH(int, warps);
    QFETCH(int, splitK);
    QFETCH(int, stages);
    QFETCH(bool, bulk);
    const auto dt = sparse::parseDType(dtype.toStdString());
    const auto seed = static_cast<std::uint64_t>(rows) * 131 + static_cast<std::uint64_t>(cols);
    const auto w = gpu::randomPrunedWeights(rows, cols, dt, keep, group, seed);
    auto c = gpu::prepareSpmspvCase(gpu::packSpmspv(w, rows, cols, dt), 1);
    gpu::setSpmspvActivation(c, gpu::randomNormal16(cols, dt, seed + 1), p, warps, splitK);

    expectReference(c, w, p, warps, splitK, stages, bulk, 0);
  }

  // The column layouts' kernel (SpmspvFormat::Column24, Column48 and ColumnDense, and a
  // column 2:4 matrix read by the column 4:8 kernel) against the same float64 product: rows not a
  // multiple of 256 (and not of the group: the last group padded), columns not a multiple of
  // 32, every depth it is built for, 1-8 warps, split-K counts, Llama shapes.
  void columnMatchesReference_data() {
    QTest::addColumn<QString>("layout");  // "col2:4", "col4:8", "col2:4 as col4:8"
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("cols");
    QTest::addColumn<int>("keep");  // per group of a column (half: the layout's own pattern)
    QTest::addColumn<double>("p");
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<int>("warps");
    QTest::addColumn<int>("splitK");
    QTest::addColumn<int>("depth");    // SpmspvConfig::stages: chunks per batch
    QTest::addColumn<int>("cluster");  // SpmspvConfig::cluster (1: slices reduced in a cluster where 2-16)
    QTest::addColumn<int>("lanes");    // SpmspvConfig::lanes (16: the half-warp walk, column 2:4 and 4:8)
    // Row names: "col24 300x33 p=0.50 bf16" (no colon: it would end the test function's name).
    for (const char* layout : {"col2:4", "col4:8", "col2:4 as col4:8", "dense"}) {
      const bool dense = std::string(layout) == "dense";  // every weight kept (keep unused)
      const int half = std::string(layout) == "col4:8" ? 4 : 2;
      const bool main = std::string(layout) != "col2:4 as col4:8";  // the reread: the small rows only
      const QByteArray tag = QByteArray(layout).replace(":", "");
      for (const int cl : {0, 1}) {
        const char* c = cl ? " cluster" : "";
        for (const char* dt : {"bf16", "fp16"}) {
          for (double p : {0.0, 0.5, 0.75, 0.99, 1.0}) {
            QTest::addRow("%s 36x96 p=%.2f %s%s", tag.constData(), p, dt, c)
                << layout << 36 << 96 << half << p << dt << 4 << 2 << 2 << cl << 32;
            QTest::addRow("%s 300x33 p=%.2f %s%s", tag.constData(), p, dt, c)
                << layout << 300 << 33 << half << p << dt << 1 << 1 << 4 << cl << 32;
            if (main)
              QTest::addRow("%s 600x4000 p=%.2f %s%s", tag.constData(), p, dt, c)
                  << layout << 600 << 4000 << half << p << dt << 8 << 7 << 8 << cl << 32;
          }
          if (!dense)
            QTest::addRow("%s 257x1000 one per group %s%s", tag.constData(), dt, c)
                << layout << 257 << 1000 << 1 << 0.5 << dt << 8 << 3 << 4 << cl << 32;
          QTest::addRow("%s 512x2080 split 65 %s%s", tag.constData(), dt, c)
              << layout << 512 << 2080 << half << 0.5 << dt << 2 << 65 << 2 << cl << 32;
          QTest::addRow("%s 512x2080 split 16 %s%s", tag.constData(), dt, c)
              << layout << 512 << 2080 << half << 0.5 << dt << 8 << 16 << 2 << cl << 32;
        }
        if (!main) continue;
        for (double p : {0.0, 0.5, 0.75})  // Llama shapes: every depth at p_x 0.5, depth 4 elsewhere
          for (int depth : {2, 4, 8}) {
            if ((p != 0.5 && depth != 4) || (cl && depth != 4)) continue;    // each row packs a large matrix
            if ((half == 4 || dense) && (p != 0.5 || depth != 4)) continue;  // col4:8, dense: one row per shape
            QTest::addRow("%s llama 4096x4096 p=%.2f d%d%s", tag.constData(), p, depth, c)
                << layout << 4096 << 4096 << half << p << "bf16" << 8 << (cl ? 8 : 0) << depth << cl << 32;
            QTest::addRow("%s llama 14336x4096 p=%.2f d%d%s", tag.constData(), p, depth, c)
                << layout << 14336 << 4096 << half << p << "bf16" << 8 << (cl ? 16 : 0) << depth << cl << 32;
            QTest::addRow("%s llama 4096x14336 p=%.2f d%d%s", tag.constData(), p, depth, c)
                << layout << 4096 << 14336 << half << p << "bf16" << 4 << (cl ? 4 : 0) << depth << cl << 32;
          }
      }
    }
    // The half-warp walk (column 2:4 and 4:8, read as themselves and column 2:4 as 4:8): the
    // small rows, split-K, each depth, with and without the cluster, and the Llama shapes at p_x 0.5.
    for (const char* layout : {"col2:4", "col4:8", "col2:4 as col4:8"}) {
      const int half = std::string(layout) == "col4:8" ? 4 : 2;
      const QByteArray tag = QByteArray(layout).replace(":", "");
      for (const int cl : {0, 1}) {
        const char* c = cl ? " cluster" : "";
        for (const char* dt : {"bf16", "fp16"})
          for (double p : {0.0, 0.5, 0.99, 1.0}) {
            QTest::addRow("%s h16 36x96 p=%.2f %s%s", tag.constData(), p, dt, c)
                << layout << 36 << 96 << half << p << dt << 4 << 2 << 2 << cl << 16;
            QTest::addRow("%s h16 300x33 p=%.2f %s%s", tag.constData(), p, dt, c)
                << layout << 300 << 33 << half << p << dt << 1 << 1 << 4 << cl << 16;
            QTest::addRow("%s h16 600x4000 p=%.2f %s%s", tag.constData(), p, dt, c)
                << layout << 600 << 4000 << half << p << dt << 8 << 7 << 8 << cl << 16;
          }
        QTest::addRow("%s h16 257x1000 one per group%s", tag.constData(), c)
            << layout << 257 << 1000 << 1 << 0.5 << "bf16" << 8 << 3 << 4 << cl << 16;
        QTest::addRow("%s h16 512x2080 split 65%s", tag.constData(), c)
            << layout << 512 << 2080 << half << 0.5 << "bf16" << 2 << 65 << 2 << cl << 16;
        if (std::string(layout) == "col2:4 as col4:8") continue;
        QTest::addRow("%s h16 llama 14336x4096 p=0.50 d4%s", tag.constData(), c)
            << layout << 14336 << 4096 << half << 0.5 << "bf16" << 8 << (cl ? 8 : 0) << 4 << cl << 16;
        QTest::addRow("%s h16 llama 4096x14336 p=0.50 d2%s", tag.constData(), c)
            << layout << 4096 << 14336 << half << 0.5 << "bf16" << 4 << (cl ? 8 : 0) << 2 << cl << 16;
      }
    }
  }

  void columnMatchesReference() {
    QFETCH(QString, layout);
    QFETCH(int, rows);
    QFETCH(int, cols);
    QFETCH(int, keep);
    QFETCH(double, p);
    QFETCH(QString, dtype);
    QFETCH(int, warps);
    QFETCH(int, splitK);
    QFETCH(int, depth);
    QFETCH(int, cluster);
    QFETCH(int, lanes);
    const auto dt = sparse::parseDType(dtype.toStdString());
    const auto seed = static_cast<std::uint64_t>(rows) * 137 + static_cast<std::uint64_t>(cols);
    const bool dense = layout == QStringLiteral("dense");
    const int group = layout == QStringLiteral("col4:8") ? 8 : 4;
    const int padded = (rows + group - 1) / group * group;  // the generator wants whole groups; the last rows are cut
    auto w = dense ? gpu::randomPrunedWeights(rows, cols, dt, cols, cols, seed)
                   : gpu::randomColumnPrunedWeights(padded, cols, dt, keep, group, seed);
    w.resize(std::size_t(rows) * cols);
    auto packed = gpu::packSpmspv(w, rows, cols, dt,
                                  dense        ? kernels::SpmspvFormat::ColumnDense
                                  : group == 8 ? kernels::SpmspvFormat::Column48
                                               : kernels::SpmspvFormat::Column24);
    if (layout == QStringLiteral("col2:4 as col4:8")) packed.format = kernels::SpmspvFormat::Column48;
    auto c = gpu::prepareSpmspvCase(std::move(packed), 1);
    gpu::setSpmspvActivation(c, gpu::randomNormal16(cols, dt, seed + 1), p, warps, splitK);
    expectReference(c, w, p, warps, splitK, depth, false, cluster, lanes);
  }

  // Column layout refusals: more than 8 warps, an unbuilt depth, a chunk buffer not 32-byte
  // aligned; the workspace and the cluster reductions agree bitwise.
  void columnRefusesBadArguments_data() {
    QTest::addColumn<int>("group");
    QTest::newRow("col2:4") << 4;
    QTest::newRow("col4:8") << 8;
    QTest::newRow("dense") << 1;
  }
  void columnRefusesBadArguments() {
    QFETCH(int, group);
    auto c = columnCase(64, 64, group, 2);
    gpu::setSpmspvActivation(c, gpu::randomNormal16(64, sparse::DType::BF16, 3), 0.5, 4, 0);
    QVERIFY(gpu::launchSpmspvCase(c, 0, 4, 0, 2) == nullptr);
    QVERIFY(gpu::launchSpmspvCase(c, 0, 9, 0, 2) != nullptr);
    QVERIFY(gpu::launchSpmspvCase(c, 0, 4, 0, 3) != nullptr);  // depth 3: not built
    // lanes: 32, or 16 for column 2:4 and 4:8 only
    QVERIFY((gpu::launchSpmspvCase(c, 0, 4, 0, 2, false, 0, 16) == nullptr) == (group != 1));
    QVERIFY(gpu::launchSpmspvCase(c, 0, 4, 0, 2, false, 0, 8) != nullptr);
    // The workspace and the cluster add the same slice sums in slice order: bitwise equal
    // (either walk).
    gpu::reserveSpmspv(c, 4, 2, 2);
    for (int lanes : {32, 16}) {
      if (lanes == 16 && group == 1) continue;
      const auto viaWorkspace = runGuarded(c, 4, 2, 2, false, 0, lanes),
                 viaCluster = runGuarded(c, 4, 2, 2, false, 1, lanes);
      QVERIFY(viaWorkspace.guardsIntact && viaCluster.guardsIntact);
      QCOMPARE(viaCluster.y, viaWorkspace.y);
    }
    c.chunks[0] = c.chunks[0].narrow(0, 8, c.chunks[0].numel() - 8);  // 16-byte offset
    QVERIFY(gpu::launchSpmspvCase(c, 0, 4, 0, 2) != nullptr);
  }

  // SpmspvConfig::pdl: a chain of launches with programmatic dependent launch, each reading
  // the y the one before wrote and sharing one workspace, gives bitwise the plain chain's
  // results (every block waits before it reads x or touches the workspace), through the
  // workspace and through the cluster, for each column layout.
  void columnPdlChainMatchesPlain_data() {
    QTest::addColumn<int>("group");
    QTest::addColumn<int>("cluster");
    for (int group : {4, 8, 1})
      for (int cluster : {0, 1}) {
        QTest::newRow(qPrintable(QStringLiteral("%1%2").arg(columnTag(group)).arg(cluster ? " cluster" : "")))
            << group << cluster;
      }
  }
  void columnPdlChainMatchesPlain() {
    QFETCH(int, group);
    QFETCH(int, cluster);
    constexpr std::int64_t n = 1024;
    auto c = columnCase(n, n, group, 5);
    gpu::setSpmspvActivation(c, gpu::randomNormal16(n, sparse::DType::BF16, 7), 0.5, 8, 4);
    gpu::reserveSpmspv(c, 8, 4, 2);
    const at::Tensor x0 = c.x.clone();
    const auto chain = [&](bool pdl) {
      c.pdl = pdl;
      std::vector<at::Tensor> ys;
      at::Tensor x = x0.clone();
      for (int k = 0; k < 4; ++k) {
        const at::Tensor y = at::empty({n}, x0.options());
        c.x = x, c.y = y;
        if (const char* e = gpu::launchSpmspvCase(c, 0, 8, 4, 2, false, cluster)) throw std::runtime_error(e);
        ys.push_back(y);
        x = y;
      }
      torch::cuda::synchronize();
      return ys;
    };
    const auto plain = chain(false), chained = chain(true);
    QVERIFY(plain[0].to(torch::kFloat).abs().sum().item<float>() > 0.f);
    for (int k = 0; k < 4; ++k)
      QVERIFY2(torch::equal(plain[std::size_t(k)], chained[std::size_t(k)]),
               qPrintable(QStringLiteral("launch %1 of the chain differs").arg(k)));
  }

  // An all-zero x at threshold 0 reads nothing and writes zeros (split-K included).
  void zeroInput() {
    const auto w = gpu::randomPrunedWeights(700, 3000, sparse::DType::BF16, 1500, 3000, 9);
    auto c = gpu::prepareSpmspvCase(gpu::packSpmspv(w, 700, 3000, sparse::DType::BF16), 1);
    gpu::setSpmspvActivation(c, std::vector<std::uint16_t>(3000, 0), 0.0, 4, 5);
    c.threshold = 0.f;
    for (const bool bulk : {false, true}) {
      const auto got = runGuarded(c, 4, 5, 3, bulk);
      QVERIFY(got.guardsIntact);
      for (double v : got.y) QCOMPARE(v, 0.0);
    }
  }

  // Refused launches: a misaligned chunk buffer, zero or too many warps, unbuilt stages.
  void refusesBadArguments() {
    const auto w = gpu::randomPrunedWeights(64, 64, sparse::DType::BF16, 32, 64, 2);
    auto c = gpu::prepareSpmspvCase(gpu::packSpmspv(w, 64, 64, sparse::DType::BF16), 1);
    gpu::setSpmspvActivation(c, gpu::randomNormal16(64, sparse::DType::BF16, 3), 0.5, 4, 0);
    QVERIFY(gpu::launchSpmspvCase(c, 0, 0, 0) != nullptr);
    QVERIFY(gpu::launchSpmspvCase(c, 0, 17, 0) != nullptr);
    QVERIFY(gpu::launchSpmspvCase(c, 0, 4, 0, 5) != nullptr);  // 5 groups in flight: not built
    QVERIFY(gpu::launchSpmspvCase(c, 0, 4, 0, 5, true) != nullptr);
    QVERIFY(gpu::launchSpmspvCase(c, 0, 4, 0, 2) == nullptr);
    QVERIFY(gpu::launchSpmspvCase(c, 0, 4, 0, 2, true) == nullptr);
    c.chunks[0] = c.chunks[0].narrow(0, 1, c.chunks[0].numel() - 1);  // 2-byte offset
    QVERIFY(gpu::launchSpmspvCase(c, 0, 4, 0) != nullptr);
    QVERIFY(gpu::launchSpmspvCase(c, 0, 4, 0, 2, true) != nullptr);
  }
};

QTEST_APPLESS_MAIN(TestSpmspvCuda)
#include "test_spmspv_cuda.moc"
