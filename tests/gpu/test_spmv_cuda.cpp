// Every CUDA SpMV / GEMV kernel path (bf16/fp16, batch 1..8, split-K through the
// workspace and, at batch 1, through a thread-block cluster; our dense GEMV; each
// also as a programmatic dependent launch): the cases of gpu/kernel_cases.h, the
// benchmark's own, over every valid configuration of their launch spaces, against
// a float64 LibTorch reference built from the same 16-bit values, with guard
// regions around the outputs; and chains of dependent launches. Label: gpu.
// Skips without a device.

#include "core/sparse_format.h"
#include "gpu/device.h"
#include "gpu/kernel_cases.h"
#include "gpu/kernels/spmv_tc.h"  // spmvShuffleUnroll (plain C++)
#include "gpu/spmv_ops.h"
#include "tests/gpu/require_gpu.h"

#include <torch/torch.h>

#include <algorithm>
#include <utility>
#ifdef SDW_TORCH_CUDA
#include "gpu/kernels/decode.cuh"
#include "gpu/kernels/gemv.cuh"
#include "gpu/kernels/launch_space.h"  // toConfig
#include "gpu/kernels/spmv.cuh"

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <QtTest>

#include <random>

using namespace sdw;

namespace {
constexpr std::int64_t kGuard = 64;
constexpr double kSentinel = -1216.0;  // exact in bf16 (8 significant bits) and fp16

#ifdef SDW_TORCH_CUDA
// "run R: NAME differs (max D)": why two tensors the norm tests want bitwise equal are not.
QString differs(int run, const char* name, const torch::Tensor& a, const torch::Tensor& b) {
  return QStringLiteral("run %1: %2 differs (max %3)")
      .arg(run)
      .arg(QLatin1String(name))
      .arg((a.to(torch::kFloat) - b.to(torch::kFloat)).abs().max().item<float>());
}
#endif

bool pdlOf(const gpu::CaseConfig& c) {
  if (const auto* s = std::get_if<gpu::SpmvLaunch>(&c)) return s->pdl;
  if (const auto* g = std::get_if<gpu::GemvLaunch>(&c)) return g->pdl;
  return false;
}
}  // namespace

class TestSpmvCuda : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() {
    SDW_REQUIRE_GPU();
  }

  void matchesReference_data() {
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("cols");
    QTest::addColumn<int>("batch");
    QTest::addColumn<QString>("pattern");
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<int>("splitK");
    for (const char* dt : {"bf16", "fp16"}) {
      for (const char* p : {"2:4", "4:8", "8:16", "16:32"}) {
        QTest::addRow("odd 37x96 b1 %s %s", p, dt) << 37 << 96 << 1 << p << dt << 1;
        QTest::addRow("K=32 33x32 b3 %s %s", p, dt) << 33 << 32 << 3 << p << dt << 1;
        QTest::addRow("K=32 33x32 b1 %s %s", p, dt) << 33 << 32 << 1 << p << dt << 1;
        QTest::addRow("odd split 65x4064 b1 %s %s", p, dt) << 65 << 4064 << 1 << p << dt << 3;
        QTest::addRow("large K 70x14336 b1 %s %s", p, dt) << 70 << 14336 << 1 << p << dt << 4;
      }
      for (int b = 1; b <= 8; ++b) QTest::addRow("batch %d 101x1024 %s", b, dt) << 101 << 1024 << b << "8:16" << dt << 1;
      QTest::addRow("split-K 1024x4096 b1 %s", dt) << 1024 << 4096 << 1 << "2:4" << dt << 8;
      QTest::addRow("split-K 1000x5120 b8 %s", dt) << 1000 << 5120 << 8 << "16:32" << dt << 16;
      QTest::addRow("split-K uneven 65x4000->4064 b2 %s", dt) << 65 << 4064 << 2 << "4:8" << dt << 7;
      // Batch 2-4 with x by shuffle (unroll 200 + U): split-K through the cluster (up to 16 blocks)
      // and through the workspace, as at batch 1.
      QTest::addRow("shuffle b2 split 4 1024x4096 %s", dt) << 1024 << 4096 << 2 << "2:4" << dt << 4;
      QTest::addRow("shuffle b2 split 16 odd 37x14336 %s", dt) << 37 << 14336 << 2 << "16:32" << dt << 16;
      // Batch 3 and 4 the same way (x as [cols][4], two 32-bit shuffles a column).
      QTest::addRow("shuffle b4 split 4 1024x4096 %s", dt) << 1024 << 4096 << 4 << "2:4" << dt << 4;
      QTest::addRow("shuffle b3 split 16 odd 37x14336 %s", dt) << 37 << 14336 << 3 << "16:32" << dt << 16;
      QTest::addRow("shuffle b4 split 7 uneven 65x4064 %s", dt) << 65 << 4064 << 4 << "8:16" << dt << 7;
      // Batch 1 with split-K: each run also with the cluster path forced on (up to 16 blocks)
      // and off. 4064 columns = 127 words: no split count divides them evenly.
      QTest::addRow("cluster 2 1024x4096 b1 %s", dt) << 1024 << 4096 << 1 << "2:4" << dt << 2;
      QTest::addRow("cluster 3 uneven 65x4064 b1 %s", dt) << 65 << 4064 << 1 << "8:16" << dt << 3;
      QTest::addRow("cluster 4 uneven 96x4064 b1 %s", dt) << 96 << 4064 << 1 << "4:8" << dt << 4;
      QTest::addRow("cluster 7 uneven 33x4064 b1 %s", dt) << 33 << 4064 << 1 << "16:32" << dt << 7;
      QTest::addRow("cluster 8 1024x5120 b1 %s", dt) << 1024 << 5120 << 1 << "2:4" << dt << 8;
      QTest::addRow("cluster 16 odd 37x14336 b1 %s", dt) << 37 << 14336 << 1 << "2:4" << dt << 16;
      QTest::addRow("cluster 3 of 8 (3 words) 33x96 b1 %s", dt) << 33 << 96 << 1 << "16:32" << dt << 8;
    }
  }

  // Every case of the kernel table with a launch space (our kernels, gpu/kernel_cases.h), on
  // inputs its own prepare builds, over every valid configuration of its space (each plain
  // and as a programmatic dependent launch; the sparse kernel's cluster requests where they
  // apply), against the float64 reference of the same 16-bit values; then the torch entry
  // points (gpu/spmv_ops.h) on the same inputs.
  void matchesReference() {
    QFETCH(int, rows);
    QFETCH(int, cols);
    QFETCH(int, batch);
    QFETCH(QString, pattern);
    QFETCH(QString, dtype);
    QFETCH(int, splitK);
    const auto dt = sparse::parseDType(dtype.toStdString());
    const auto pat = sparse::parsePattern(pattern.toStdString());
    const auto cuda = torch::TensorOptions().device(torch::kCUDA).dtype(dt == sparse::DType::BF16 ? torch::kBFloat16 : torch::kHalf);
    const double tol = dt == sparse::DType::BF16 ? 8e-3 : 1e-3;  // output rounding to 16 bits dominates
    const double ulp = dt == sparse::DType::BF16 ? 1.0 / 128 : 1.0 / 1024;
    const auto seed = static_cast<std::uint64_t>(rows * 131 + cols + batch * 7 + splitK);
    QVERIFY2(gpu::kernelCase(gpu::KernelId::Sparse) && gpu::kernelCase(gpu::KernelId::Dense),
             "the kernel table lacks our kernels");

    for (const gpu::KernelCase& kc : gpu::kernelCases()) {
      if (!kc.space || !kc.reference) continue;  // library kernels
      auto in = kc.prepare(gpu::CaseProblem{rows, cols, dt, pat, seed}, 1);
      kc.setBatch(in, batch);
      const auto ref = kc.reference(in, 0);                                // w [rows, cols], x [batch, cols]
      const auto want = torch::matmul(ref.x, ref.w.t());                   // [batch, rows]
      const auto absRef = torch::matmul(ref.x.abs(), ref.w.abs().t());     // the scale of fp32 rounding
      const auto wantNorm = want.norm().item<double>();

      // run(y) writes y; it runs twice (split-K counters must have reset in between).
      const auto check = [&](const QString& what, const std::function<void(torch::Tensor&)>& run) {
        const std::int64_t ldy = rows + 5;
        auto buf = torch::full({2 * kGuard + batch * ldy}, kSentinel, cuda);
        auto y = buf.narrow(0, kGuard, batch * ldy).view({batch, ldy}).narrow(1, 0, rows);
        run(y);
        run(y);
        torch::cuda::synchronize();
        const auto yd = y.cpu().to(torch::kDouble);
        QVERIFY2(torch::isfinite(yd).all().item<bool>(), qPrintable(what));
        const double rel = (yd - want).norm().item<double>() / wantNorm;
        QVERIFY2(rel < tol, qPrintable(QStringLiteral("%1: relative error %2").arg(what).arg(rel)));
        // Per element: within one 16-bit rounding of the float64 reference, plus fp32 accumulation.
        const auto bad = ((yd - want).abs() > want.abs() * ulp + absRef * 1e-5 + 1e-6).sum().item<std::int64_t>();
        QVERIFY2(bad == 0, qPrintable(QStringLiteral("%1: %2 elements off").arg(what).arg(bad)));
        // Guards and the gaps between batch rows stay untouched.
        const auto h = buf.cpu().to(torch::kDouble);
        QVERIFY2(h.narrow(0, 0, kGuard).eq(kSentinel).all().item<bool>(), qPrintable(what + ": guard before y overwritten"));
        QVERIFY2(h.narrow(0, kGuard + batch * ldy, kGuard).eq(kSentinel).all().item<bool>(),
                 qPrintable(what + ": guard after y overwritten"));
        const auto gaps = h.narrow(0, kGuard, batch * ldy).view({batch, ldy}).narrow(1, rows, ldy - rows);
        QVERIFY2(gaps.eq(kSentinel).all().item<bool>(), qPrintable(what + ": gap between batch rows overwritten"));
      };

      // SDW_SPMV_CONFIG_STRIDE=K (for compute-sanitizer runs, where every launch is slow):
      // each data row runs every K-th configuration of its space, starting at an offset
      // taken from the row's tag, so the rows of a space together still reach all of it.
      // SDW_SPMV_CONFIG_PART=I/N: of those, only every N-th from the I-th (one row in N
      // processes, for a row too slow for one).
      static const int stride = std::max(1, qEnvironmentVariableIntValue("SDW_SPMV_CONFIG_STRIDE"));
      static const auto [part, parts] = [] {
        const QStringList p = qEnvironmentVariable("SDW_SPMV_CONFIG_PART").split(u'/');
        const int n = p.size() == 2 ? std::max(1, p[1].toInt()) : 1;
        return std::pair{p.size() == 2 ? std::clamp(p[0].toInt(), 0, n - 1) : 0, n};
      }();
      const int offset = static_cast<int>(qHash(QString::fromUtf8(QTest::currentDataTag())) % static_cast<size_t>(stride));
      int configs = 0, index = 0, selected = 0, shuffled = 0;
      for (const gpu::CaseConfig& cfg : kc.space->valid(cols, batch, splitK)) {
        if (index++ % stride != offset) continue;
        if (selected++ % parts != part) continue;
        if (const auto* l = std::get_if<gpu::SpmvLaunch>(&cfg); l && kernels::spmvShuffleUnroll(l->unroll)) ++shuffled;
        const QString what = QStringLiteral("%1 %2%3").arg(QString::fromUtf8(gpu::kernelName(kc.id).data(),
                                                                              static_cast<int>(gpu::kernelName(kc.id).size())),
                                                           QString::fromStdString(kc.describe(in, cfg)),
                                                           pdlOf(cfg) ? QStringLiteral(" pdl") : QString());
        if (kc.reserve) kc.reserve(in, {cfg});  // once: the second run finds the counters the first left
        check(what, [&](torch::Tensor& y) {
          in.y = y;
          const char* error = kc.launch(in, 0, cfg);
          QVERIFY2(!error, qPrintable(what + ": " + QString::fromUtf8(error ? error : "")));
        });
        ++configs;
      }
      QVERIFY2(configs > 0 || ((stride > 1 || parts > 1) && index > 0), "an empty launch space");
      // Batch 2-4's shuffle path (x by shuffle, unroll 201-203) in every warp count, split-K
      // and cluster request of the space, and nowhere else.
      if (kc.id == gpu::KernelId::Sparse && stride == 1 && parts == 1)
        QVERIFY2(batch >= 2 && batch <= 4 ? shuffled == 9 * (splitK > 1 ? 3 : 1) * 2 : shuffled == 0,
                 qPrintable(QStringLiteral("%1 shuffle-path configurations at batch %2").arg(shuffled).arg(batch)));
      if (stride > 1 || parts > 1)
        qInfo("%s: %d of %d configurations (stride %d, part %d/%d)", std::string(gpu::kernelName(kc.id)).c_str(),
              configs, index, stride, part, parts);

      const auto xd = ref.x.to(cuda);  // exact: the 16-bit values themselves
      if (kc.id == gpu::KernelId::Sparse) {
        const gpu::DeviceBitmask dw{in.w[0], in.masks[0], rows, cols, pat, dt};
        check(QStringLiteral("bitmaskSpmvInto"), [&](torch::Tensor& y) { gpu::bitmaskSpmvInto(dw, xd, y, {}); });
      } else if (kc.id == gpu::KernelId::Dense) {
        check(QStringLiteral("denseGemvInto"), [&](torch::Tensor& y) { gpu::denseGemvInto(in.w[0], xd, y, {}); });
      }
    }
  }

  // Batch 2-8 on the tensor cores (SpmvConfig::unroll 100 + S: weights expanded in registers,
  // mma.sync; patterns with M | 8): 2:4 and 4:8, every ring depth, 1, 4 and 8 warps (tiles per
  // block), split-K through the workspace (odd word counts per split included), plain and as
  // a programmatic dependent launch, against the float64 reference of the same 16-bit values
  // (padding rows, batch columns beyond the batch and split slices included); batch 1 refuses it.
  void tensorCoresMatchReference_data() {
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("cols");
    QTest::addColumn<int>("batch");
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<int>("splitK");
    QTest::addColumn<int>("m");  // pattern m / 2 : m
    for (const char* dt : {"bf16", "fp16"})
      for (const int m : {4, 8, 16, 32}) {  // 16, 32: 8:16's longer expansion (SpmvConfig::tcM), for 16:32 on windows
        for (int b = 2; b <= 8; ++b)
          QTest::addRow("batch %d 101x1024 %s %d:%d", b, dt, m / 2, m) << 101 << 1024 << b << dt << 1 << m;
        QTest::addRow("K=32 33x32 b5 %s %d:%d", dt, m / 2, m) << 33 << 32 << 5 << dt << 1 << m;
        QTest::addRow("odd words 129x160 b7 %s %d:%d", dt, m / 2, m) << 129 << 160 << 7 << dt << 2 << m;
        QTest::addRow("split-K 1000x5120 b8 %s %d:%d", dt, m / 2, m) << 1000 << 5120 << 8 << dt << 4 << m;
        QTest::addRow("uneven split 65x4064 b3 %s %d:%d", dt, m / 2, m) << 65 << 4064 << 3 << dt << 7 << m;
        QTest::addRow("x slice over shared memory 70x14336 b4 %s %d:%d", dt, m / 2, m)
            << 70 << 14336 << 4 << dt << 1 << m;
      }
  }

  void tensorCoresMatchReference() {
#ifndef SDW_TORCH_CUDA
    QSKIP("this build has no CUDA kernels");
#else
    QFETCH(int, rows);
    QFETCH(int, cols);
    QFETCH(int, batch);
    QFETCH(QString, dtype);
    QFETCH(int, splitK);
    QFETCH(int, m);
    const auto dt = sparse::parseDType(dtype.toStdString());
    const double tol = dt == sparse::DType::BF16 ? 8e-3 : 1e-3;
    const double ulp = dt == sparse::DType::BF16 ? 1.0 / 128 : 1.0 / 1024;
    const gpu::KernelCase* kc = gpu::kernelCase(gpu::KernelId::Sparse);
    QVERIFY(kc);
    const auto seed = static_cast<std::uint64_t>(rows * 977 + cols + batch * 13 + splitK + m);
    auto in = kc->prepare(gpu::CaseProblem{rows, cols, dt, sparse::Pattern{m / 2, m}, seed}, 1);
    kc->setBatch(in, batch);
    const auto ref = kc->reference(in, 0);
    const auto want = torch::matmul(ref.x, ref.w.t());  // [batch, rows]
    const auto absRef = torch::matmul(ref.x.abs(), ref.w.abs().t());
    const double wantNorm = want.norm().item<double>();
    int configs = 0;
    // Every ring depth, 8:16 and 16:32 included (x as [batch, cols], as kc->launch passes it).
    const std::vector<int> unrolls{102, 103, 104};
    for (const int warps : {1, 4, 8})
      for (const int unroll : unrolls)
        for (const bool pdl : {false, true}) {
          const gpu::SpmvLaunch cfg{warps, unroll, splitK, -1, pdl};
          const QString what =
              QString::fromStdString(kc->describe(in, cfg)) + (pdl ? QStringLiteral(" pdl") : QString());
          kc->reserve(in, {cfg});
          for (int run = 0; run < 2; ++run) {  // the second run finds the counters the first left
            in.y.fill_(kSentinel);
            const char* error = kc->launch(in, 0, cfg);
            QVERIFY2(!error, qPrintable(what + ": " + QString::fromUtf8(error ? error : "")));
          }
          torch::cuda::synchronize();
          const auto yd = in.y.cpu().to(torch::kDouble);
          QVERIFY2(torch::isfinite(yd).all().item<bool>(), qPrintable(what));
          const double rel = (yd - want).norm().item<double>() / wantNorm;
          QVERIFY2(rel < tol, qPrintable(QStringLiteral("%1: relative error %2").arg(what).arg(rel)));
          const auto bad = ((yd - want).abs() > want.abs() * ulp + absRef * 1e-5 + 1e-6).sum().item<std::int64_t>();
          QVERIFY2(bad == 0, qPrintable(QStringLiteral("%1: %2 elements off").arg(what).arg(bad)));
          // kc->launch passes x as [batch, cols] (SpmvConfig::xRowMajor, as the engine does); the
          // batch-interleaved x of the CUDA-core kernel must give the same bits.
          const auto rowMajor = in.y.clone();
          in.y.fill_(kSentinel);
          kernels::SpmvConfig ic = kernels::toConfig(cfg, pdl);
          ic.tcM = m;
          QVERIFY(!ic.xRowMajor);
          const cudaError_t e = kernels::launchBitmaskSpmv(
              in.w[0].data_ptr(), reinterpret_cast<const std::uint32_t*>(in.masks[0].data_ptr()),
              dt == sparse::DType::BF16 ? kernels::DType::BF16 : kernels::DType::F16, rows, cols, in.x.data_ptr(),
              batch, in.y.data_ptr(), in.y.stride(0), ic, in.ws.data_ptr<float>(),
              reinterpret_cast<unsigned*>(in.counters.data_ptr()), c10::cuda::getCurrentCUDAStream());
          if (m >= 16) {  // 8:16 and 16:32 read x as [batch, cols] only
            QVERIFY2(e == cudaErrorInvalidValue, qPrintable(what + ": 8:16 or 16:32 took the interleaved x"));
          } else {
            QVERIFY2(e == cudaSuccess,
                     qPrintable(what + ": interleaved x: " + QString::fromUtf8(cudaGetErrorString(e))));
            torch::cuda::synchronize();
            QVERIFY2(torch::equal(in.y, rowMajor), qPrintable(what + ": interleaved x differs from [batch, cols]"));
          }
          if (m != 16 && unroll == 102) {  // the selector table in 8 copies: the same bits
            kernels::SpmvConfig rc = kernels::toConfig(cfg, pdl);
            rc.tcM = m;
            rc.xRowMajor = true;
            rc.tcSelectorCopies = true;
            in.y.fill_(kSentinel);
            const cudaError_t er = kernels::launchBitmaskSpmv(
                in.w[0].data_ptr(), reinterpret_cast<const std::uint32_t*>(in.masks[0].data_ptr()),
                dt == sparse::DType::BF16 ? kernels::DType::BF16 : kernels::DType::F16, rows, cols, in.xr.data_ptr(),
                batch, in.y.data_ptr(), in.y.stride(0), rc, in.ws.data_ptr<float>(),
                reinterpret_cast<unsigned*>(in.counters.data_ptr()), c10::cuda::getCurrentCUDAStream());
            QVERIFY2(er == cudaSuccess,
                     qPrintable(what + ": selector copies: " + QString::fromUtf8(cudaGetErrorString(er))));
            torch::cuda::synchronize();
            QVERIFY2(torch::equal(in.y, rowMajor), qPrintable(what + ": selector copies differ from one table"));
          }
          ++configs;
        }
    QCOMPARE(configs, 18);
    // x as [batch, cols] is the tensor-core path's alone: the CUDA-core kernel refuses it.
    kernels::SpmvConfig fma{8, 2, splitK};
    fma.xRowMajor = true;
    QCOMPARE(kernels::launchBitmaskSpmv(
                 in.w[0].data_ptr(), reinterpret_cast<const std::uint32_t*>(in.masks[0].data_ptr()),
                 dt == sparse::DType::BF16 ? kernels::DType::BF16 : kernels::DType::F16, rows, cols, in.xr.data_ptr(),
                 batch, in.y.data_ptr(), in.y.stride(0), fma, in.ws.data_ptr<float>(),
                 reinterpret_cast<unsigned*>(in.counters.data_ptr()), c10::cuda::getCurrentCUDAStream()),
             cudaErrorInvalidValue);
    kc->setBatch(in, 1);
    QVERIFY2(kc->launch(in, 0, gpu::SpmvLaunch{8, 102, 1, -1, false}), "batch 1 has no tensor-core path");
    QVERIFY2(kc->launch(in, 0, gpu::SpmvLaunch{8, 202, 1, -1, false}), "unroll 200 + U is batch 2-4's alone");
    kc->setBatch(in, 5);
    QVERIFY2(kc->launch(in, 0, gpu::SpmvLaunch{8, 202, 1, -1, false}), "unroll 200 + U is batch 2-4's alone");
#endif
  }

  // A chain of launches in which each layer's input is the previous layer's output
  // (x_{i+1} = y_i), every launch a programmatic dependent launch of the one before:
  // the weights may be read early, x only after the previous kernel has finished.
  // Outputs are cleared to a sentinel before each run, so an early read of x would
  // change the result. Chained, captured in a CUDA graph and replayed, the final
  // vector must equal, bit for bit, the one from plain launches (the kernels are
  // deterministic), and the plain one must match a float64 reference.
  void chainedLaunchesReadThePreviousOutput() {
#ifndef SDW_TORCH_CUDA
    QSKIP("this build has no CUDA kernels");
#else
    if (!kernels::pdlSupported()) qInfo("device below sm_90: the launches run without the overlap");
    constexpr int n = 2048, layers = 8;
    const auto bf = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kBFloat16);
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.f, 1.f / std::sqrt(float(n) / 2));  // keeps |y| ~ |x|
    std::vector<gpu::DeviceBitmask> sw;
    std::vector<torch::Tensor> dw, ref;  // dense copies (device bf16, host float64)
    for (int l = 0; l < layers; ++l) {
      std::vector<float> w(static_cast<std::size_t>(n) * n);
      for (auto& v : w) v = nd(rng);
      const sparse::Pattern pat{l % 2 ? 8 : 2, l % 2 ? 16 : 4};
      sparse::imposePattern(w, n, n, pat);
      const auto packed = sparse::packDense(w, n, n, pat, sparse::DType::BF16);
      const auto dense = sparse::unpack(packed);
      sw.push_back(gpu::toDeviceLayout(packed, torch::Device(torch::kCUDA)));
      const auto wd = torch::from_blob(const_cast<float*>(dense.data()), {n, n}, torch::kFloat).clone();
      dw.push_back(wd.to(bf));
      ref.push_back(wd.to(torch::kDouble));
    }
    auto act = torch::empty({layers + 1, n}, bf);
    act[0].copy_(torch::randn({n}, bf));
    auto ws = torch::zeros({1 << 20}, bf.dtype(torch::kFloat));
    auto counters = torch::zeros({4096}, bf.dtype(torch::kInt));
    auto* wsp = ws.data_ptr<float>();
    auto* cnt = reinterpret_cast<unsigned*>(counters.data_ptr());
    auto stream = c10::cuda::getCurrentCUDAStream();

    struct Step {
      const char* what;
      kernels::SpmvConfig sparse;
      kernels::GemvConfig dense;
      bool useDense;
    };
    // Register path, cluster split-K, workspace split-K, bulk pipeline, our dense GEMV (plain, split-K).
    const Step steps[] = {{"register w16 u2", {16, 2, 1}, {}, false},
                          {"cluster w4 u1 s4", {4, 1, 4, -1}, {}, false},
                          {"workspace w8 u2 s4", {8, 2, 4, 0}, {}, false},
                          {"bulk w4 u41 s2", {4, 41, 2, -1}, {}, false},
                          {"dense w4 r4 u2", {}, {4, 4, 2, 1}, true},
                          {"dense w8 r1 u1 s2", {}, {8, 1, 1, 2}, true},
                          {"bulk w8 u42", {8, 42, 1}, {}, false},
                          {"register w8 u4 s2", {8, 4, 2, 0}, {}, false}};
    const auto run = [&](bool pdl) {
      act.narrow(0, 1, layers).fill_(kSentinel);
      for (int l = 0; l < layers; ++l) {
        const Step& st = steps[l];
        void* x = act[l].data_ptr();
        void* y = act[l + 1].data_ptr();
        cudaError_t e;
        if (st.useDense) {
          auto c = st.dense;
          c.pdl = pdl;
          e = kernels::launchDenseGemv(dw[l].data_ptr(), kernels::DType::BF16, n, n, x, 1, y, n, c, wsp, cnt, stream);
        } else {
          auto c = st.sparse;
          c.pdl = pdl;
          e = kernels::launchBitmaskSpmv(sw[l].values.data_ptr(), reinterpret_cast<const std::uint32_t*>(sw[l].masks.data_ptr()),
                                         kernels::DType::BF16, n, n, x, 1, y, n, c, wsp, cnt, stream);
        }
        QVERIFY2(e == cudaSuccess, qPrintable(QStringLiteral("%1: %2").arg(st.what, cudaGetErrorString(e))));
      }
    };
    run(false);
    torch::cuda::synchronize();
    const auto plain = act.cpu();
    // Float64 reference of the chain, from the same bf16 inputs of every layer.
    for (int l = 0; l < layers; ++l) {
      const auto yl = torch::mv(ref[l], plain[l].to(torch::kDouble));
      const double rel = ((plain[l + 1].to(torch::kDouble) - yl).norm() / yl.norm()).item<double>();
      QVERIFY2(rel < 8e-3, qPrintable(QStringLiteral("layer %1 (%2): relative error %3").arg(l).arg(steps[l].what).arg(rel)));
    }
    for (int rep = 0; rep < 5; ++rep) {
      run(true);
      torch::cuda::synchronize();
      QVERIFY2(torch::equal(act.cpu().view(torch::kShort), plain.view(torch::kShort)), qPrintable(QStringLiteral("chained run %1 differs").arg(rep)));
    }
    // The same chain captured in a CUDA graph (programmatic edges) and replayed.
    at::cuda::CUDAGraph graph;
    {
      const c10::cuda::CUDAStreamGuard guard(c10::cuda::getStreamFromPool());
      stream = c10::cuda::getCurrentCUDAStream();
      graph.capture_begin();
      run(true);
      graph.capture_end();
    }
    for (int rep = 0; rep < 5; ++rep) {
      act.narrow(0, 1, layers).fill_(kSentinel);
      graph.replay();
      torch::cuda::synchronize();
      QVERIFY2(torch::equal(act.cpu().view(torch::kShort), plain.view(torch::kShort)), qPrintable(QStringLiteral("graph replay %1 differs").arg(rep)));
    }
#endif
  }

  // A batch-1 projection over the hidden rows with the add + RMSNorm that follows run by its
  // last block (GemvConfig / SpmvConfig::tail): y, the residual h and the norm's output x
  // bitwise those of the projection without it followed by launchAddRmsNorm, for every
  // epilogue (no split, split-K with the ticket, the cluster, the bulk-copy SpMV, the GEMV
  // with and without split-K), odd row counts, three times in a row (the counter resets).
  // The norm folded into the dense GEMVs around it (kernels::NormFold): the producer's y
  // and h bitwise those of the projection and the separate add + norm, and the consumer's
  // output (its input formed from h, the producer's partial sums of squares and the
  // weights) within bf16/fp16 rounding of the consumer run on the separate norm's x
  // (the sum of squares is added in another order). Split-K on either side, three runs
  // (the partials are rewritten, not accumulated).
  void normFoldMatchesLaunch_data() {
    QTest::addColumn<int>("rows");  // the hidden size: the producer's rows, the consumer's columns
    QTest::addColumn<int>("cols");  // the producer's input
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<int>("splitOut");
    QTest::addColumn<int>("splitIn");
    QTest::newRow("4096 bf16") << 4096 << 1024 << "bf16" << 1 << 1;
    QTest::newRow("4096 bf16 split 3 / 2") << 4096 << 1024 << "bf16" << 3 << 2;
    QTest::newRow("1000 fp16") << 1000 << 512 << "fp16" << 1 << 1;
    QTest::newRow("5120 fp16 split 2 / 1") << 5120 << 2048 << "fp16" << 2 << 1;
  }
  void normFoldMatchesLaunch() {
#ifndef SDW_TORCH_CUDA
    QSKIP("this build has no CUDA kernels");
#else
    QFETCH(int, rows);
    QFETCH(int, cols);
    QFETCH(QString, dtype);
    QFETCH(int, splitOut);
    QFETCH(int, splitIn);
    const auto dt = sparse::parseDType(dtype.toStdString());
    const auto kdt = dt == sparse::DType::BF16 ? kernels::DType::BF16 : kernels::DType::F16;
    const auto cuda =
        torch::TensorOptions().device(torch::kCUDA).dtype(dt == sparse::DType::BF16 ? torch::kBFloat16 : torch::kHalf);
    const auto f32 = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat);
    torch::manual_seed(5);
    const int m = 768;  // the consumer's rows
    const auto wOut = (torch::randn({rows, cols}, torch::kFloat) * 0.05).to(cuda);
    const auto wIn = (torch::randn({m, rows}, torch::kFloat) * 0.05).to(cuda);
    const auto x0 = torch::randn({cols}, torch::kFloat).to(cuda);
    const auto h0 = (torch::randn({rows}, torch::kFloat) * 3).to(cuda);
    const auto wn = (torch::rand({rows}, torch::kFloat) + 0.5).to(cuda);
    const float eps = 1e-5f;
    auto ws = torch::zeros({1 << 22}, f32);
    auto counters = torch::zeros({4096}, torch::TensorOptions().device(torch::kCUDA).dtype(torch::kInt));
    auto partials = torch::full({4096}, -1.f, f32);
    const cudaStream_t st = c10::cuda::getCurrentCUDAStream();
    kernels::GemvConfig out;
    out.warps = 4, out.rowsPerWarp = 2, out.unroll = 2, out.splitK = splitOut;
    kernels::GemvConfig in;
    in.warps = 8, in.rowsPerWarp = 2, in.unroll = 2, in.splitK = splitIn;
    const auto gemv = [&](const torch::Tensor& w, int r, int c, const void* x, torch::Tensor& y,
                          const kernels::GemvConfig& cfg) {
      return int(kernels::launchDenseGemv(w.data_ptr(), kdt, r, c, x, 1, y.data_ptr(), r, cfg, ws.data_ptr<float>(),
                                          reinterpret_cast<unsigned*>(counters.data_ptr()), st));
    };
    for (int rep = 0; rep < 3; ++rep) {
      // The reference: the producer, the separate add + norm, the consumer on its x.
      auto yA = torch::zeros({rows}, cuda), hA = h0.clone(), xA = torch::zeros({rows}, cuda);
      auto zA = torch::zeros({m}, cuda);
      QCOMPARE(gemv(wOut, rows, cols, x0.data_ptr(), yA, out), int(cudaSuccess));
      QCOMPARE(int(kernels::launchAddRmsNorm(hA.data_ptr(), yA.data_ptr(), rows, wn.data_ptr(), kdt, rows, 1, eps,
                                             xA.data_ptr(), kernels::XLayout{rows, 1}, st)),
               int(cudaSuccess));
      QCOMPARE(gemv(wIn, m, rows, xA.data_ptr(), zA, in), int(cudaSuccess));
      // Folded: no norm launch, no x.
      auto yB = torch::zeros({rows}, cuda), hB = h0.clone(), zB = torch::zeros({m}, cuda);
      kernels::GemvConfig o2 = out, i2 = in;
      o2.fold.out = true, o2.fold.h = hB.data_ptr(), o2.fold.partials = partials.data_ptr<float>();
      i2.fold.in = true, i2.fold.h = hB.data_ptr(), i2.fold.partials = partials.data_ptr<float>();
      i2.fold.count = static_cast<int>(kernels::gemvCounters(rows, out));
      i2.fold.w = wn.data_ptr(), i2.fold.eps = eps, i2.fold.n = rows;
      QCOMPARE(gemv(wOut, rows, cols, x0.data_ptr(), yB, o2), int(cudaSuccess));
      QCOMPARE(gemv(wIn, m, rows, nullptr, zB, i2), int(cudaSuccess));
      torch::cuda::synchronize();
      QVERIFY2(torch::equal(yA, yB), qPrintable(QStringLiteral("run %1: y differs").arg(rep)));
      QVERIFY2(torch::equal(hA, hB), qPrintable(differs(rep, "h", hA, hB)));
      // The partials: the sum of squares of the new h.
      const double ss = hA.to(torch::kDouble).pow(2).sum().item<double>();
      const double got = partials.narrow(0, 0, i2.fold.count).to(torch::kDouble).sum().item<double>();
      QVERIFY2(std::fabs(got - ss) <= 1e-4 * ss, qPrintable(QStringLiteral("partials %1 vs %2").arg(got).arg(ss)));
      const auto za = zA.to(torch::kDouble), zb = zB.to(torch::kDouble);
      const double rel = ((za - zb).norm() / za.norm()).item<double>();
      qInfo("run %d: consumer relative difference %.3g", rep, rel);
      QVERIFY2(rel < (dt == sparse::DType::BF16 ? 1e-2 : 2e-3), qPrintable(QStringLiteral("relative %1").arg(rel)));
      QCOMPARE(counters.sum().item<int>(), 0);
    }
    // Refused: both sides at once, a consumer without its weights, a fold at batch 2.
    auto y = torch::zeros({rows}, cuda);
    kernels::GemvConfig bad = in;
    bad.fold.out = bad.fold.in = true, bad.fold.h = y.data_ptr(), bad.fold.partials = partials.data_ptr<float>();
    QCOMPARE(gemv(wOut, rows, cols, x0.data_ptr(), y, bad), int(cudaErrorInvalidValue));
    bad.fold.out = false, bad.fold.count = 1, bad.fold.n = cols;  // no w
    QCOMPARE(gemv(wOut, rows, cols, x0.data_ptr(), y, bad), int(cudaErrorInvalidValue));
#endif
  }

  void normTailMatchesLaunch_data() {
    QTest::addColumn<QString>("kernel");
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("cols");
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<int>("warps");
    QTest::addColumn<int>("unroll");
    QTest::addColumn<int>("rowsPerWarp");
    QTest::addColumn<int>("splitK");
    QTest::addColumn<int>("cluster");
    QTest::newRow("sparse 512x512 no split") << "sparse" << 512 << 512 << "bf16" << 4 << 2 << 0 << 1 << -1;
    QTest::newRow("sparse 4096x4096 cluster 4") << "sparse" << 4096 << 4096 << "bf16" << 8 << 2 << 0 << 4 << -1;
    QTest::newRow("sparse 4096x4096 ticket 4") << "sparse" << 4096 << 4096 << "bf16" << 8 << 2 << 0 << 4 << 0;
    QTest::newRow("sparse 4096x14336 bulk 42 split 2")
        << "sparse" << 4096 << 14336 << "bf16" << 4 << 42 << 0 << 2 << -1;
    QTest::newRow("sparse 5120x1024 fp16 16 warps") << "sparse" << 5120 << 1024 << "fp16" << 16 << 3 << 0 << 1 << -1;
    QTest::newRow("sparse odd 1000x512 ticket 3") << "sparse" << 1000 << 512 << "bf16" << 4 << 1 << 0 << 3 << 0;
    QTest::newRow("dense 512x512") << "dense" << 512 << 512 << "bf16" << 4 << 2 << 2 << 1 << 0;
    QTest::newRow("dense 4096x14336 split 4") << "dense" << 4096 << 14336 << "bf16" << 4 << 2 << 2 << 4 << 0;
    QTest::newRow("dense 5120x1024 fp16 split 2") << "dense" << 5120 << 1024 << "fp16" << 8 << 1 << 4 << 2 << 0;
    QTest::newRow("dense odd 1000x512 3 warps") << "dense" << 1000 << 512 << "bf16" << 3 << 4 << 1 << 1 << 0;
  }
  void normTailMatchesLaunch() {
#ifndef SDW_TORCH_CUDA
    QSKIP("this build has no CUDA kernels");
#else
    QFETCH(QString, kernel);
    QFETCH(int, rows);
    QFETCH(int, cols);
    QFETCH(QString, dtype);
    QFETCH(int, warps);
    QFETCH(int, unroll);
    QFETCH(int, rowsPerWarp);
    QFETCH(int, splitK);
    QFETCH(int, cluster);
    const bool sparseK = kernel == "sparse";
    const auto dt = sparse::parseDType(dtype.toStdString());
    const auto kdt = dt == sparse::DType::BF16 ? kernels::DType::BF16 : kernels::DType::F16;
    const auto cuda =
        torch::TensorOptions().device(torch::kCUDA).dtype(dt == sparse::DType::BF16 ? torch::kBFloat16 : torch::kHalf);
    const gpu::KernelCase* kc = gpu::kernelCase(sparseK ? gpu::KernelId::Sparse : gpu::KernelId::Dense);
    QVERIFY(kc);
    auto in = kc->prepare(gpu::CaseProblem{rows, cols, dt, sparse::parsePattern("2:4"), 11}, 1);
    kc->setBatch(in, 1);
    torch::manual_seed(3);
    const auto h0 = (torch::randn({rows}, torch::kFloat) * 3).to(cuda);
    const auto wn = (torch::rand({rows}, torch::kFloat) + 0.5).to(cuda);
    const float eps = 1e-5f;
    auto ws = torch::zeros({1 << 22}, torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat));
    auto counters = torch::zeros({4096}, torch::TensorOptions().device(torch::kCUDA).dtype(torch::kInt));
    auto tailCounter = torch::zeros({1}, torch::TensorOptions().device(torch::kCUDA).dtype(torch::kInt));
    const cudaStream_t st = c10::cuda::getCurrentCUDAStream();
    const auto project = [&](torch::Tensor& y, const kernels::NormTail& tail) {
      cudaError_t e;
      if (sparseK) {
        kernels::SpmvConfig c;
        c.warps = warps, c.unroll = unroll, c.splitK = splitK, c.cluster = cluster, c.tail = tail;
        e = kernels::launchBitmaskSpmv(in.w[0].data_ptr(),
                                       reinterpret_cast<const std::uint32_t*>(in.masks[0].data_ptr()), kdt, rows, cols,
                                       in.x.data_ptr(), 1, y.data_ptr(), rows, c, ws.data_ptr<float>(),
                                       reinterpret_cast<unsigned*>(counters.data_ptr()), st);
      } else {
        kernels::GemvConfig c;
        c.warps = warps, c.unroll = unroll, c.rowsPerWarp = rowsPerWarp, c.splitK = splitK, c.tail = tail;
        e = kernels::launchDenseGemv(in.w[0].data_ptr(), kdt, rows, cols, in.x.data_ptr(), 1, y.data_ptr(), rows, c,
                                     ws.data_ptr<float>(), reinterpret_cast<unsigned*>(counters.data_ptr()), st);
      }
      return e;
    };
    for (int rep = 0; rep < 3; ++rep) {
      // The reference: the projection, then the separate add + norm.
      auto yA = torch::zeros({rows}, cuda), hA = h0.clone(), xA = torch::zeros({rows}, cuda);
      QCOMPARE(int(project(yA, {})), int(cudaSuccess));
      QCOMPARE(int(kernels::launchAddRmsNorm(hA.data_ptr(), yA.data_ptr(), rows, wn.data_ptr(), kdt, rows, 1, eps,
                                             xA.data_ptr(), kernels::XLayout{rows, 1}, st)),
               int(cudaSuccess));
      auto yB = torch::zeros({rows}, cuda), hB = h0.clone(), xB = torch::zeros({rows}, cuda);
      kernels::NormTail t;
      t.h = hB.data_ptr(), t.w = wn.data_ptr(), t.x = xB.data_ptr(), t.eps = eps;
      t.counter = reinterpret_cast<unsigned*>(tailCounter.data_ptr());
      QCOMPARE(int(project(yB, t)), int(cudaSuccess));
      torch::cuda::synchronize();
      QVERIFY2(torch::equal(yA, yB), qPrintable(QStringLiteral("run %1: y differs").arg(rep)));
      QVERIFY2(torch::equal(hA, hB), qPrintable(differs(rep, "h", hA, hB)));
      QVERIFY2(torch::equal(xA, xB), qPrintable(differs(rep, "x", xA, xB)));
      QVERIFY(!torch::equal(hB, h0));  // the residual was added
      QCOMPARE(tailCounter.item<int>(), 0);
      QCOMPARE(counters.sum().item<int>(), 0);
    }
    // The tickets alone (NormTail::normalize false, a profiling aid): y as always, h and x
    // untouched, the counter back at 0.
    {
      auto yA = torch::zeros({rows}, cuda), yC = torch::zeros({rows}, cuda), hC = h0.clone();
      auto xC = torch::zeros({rows}, cuda);
      QCOMPARE(int(project(yA, {})), int(cudaSuccess));
      kernels::NormTail t;
      t.h = hC.data_ptr(), t.w = wn.data_ptr(), t.x = xC.data_ptr(), t.eps = eps, t.normalize = false;
      t.counter = reinterpret_cast<unsigned*>(tailCounter.data_ptr());
      QCOMPARE(int(project(yC, t)), int(cudaSuccess));
      torch::cuda::synchronize();
      QVERIFY(torch::equal(yA, yC));
      QVERIFY(torch::equal(hC, h0));
      QCOMPARE(xC.abs().sum().item<float>(), 0.f);
      QCOMPARE(tailCounter.item<int>(), 0);
    }
    // Refused: a tail at batch 2, or without its buffers.
    kernels::NormTail bad;
    bad.counter = reinterpret_cast<unsigned*>(tailCounter.data_ptr());
    auto y = torch::zeros({rows}, cuda);
    QCOMPARE(int(project(y, bad)), int(cudaErrorInvalidValue));
#endif
  }

  void rejectsBadInputs() {
    auto w = std::vector<float>(64 * 64, 0.f);
    const auto p = sparse::packDense(w, 64, 64, {2, 4}, sparse::DType::BF16);
    const auto dw = gpu::toDeviceLayout(p, torch::Device(torch::kCUDA));
    const auto cuda = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kBFloat16);
    auto y = torch::empty({1, 64}, cuda);
    QVERIFY_THROWS_EXCEPTION(c10::Error, gpu::bitmaskSpmvInto(dw, torch::zeros({1, 32}, cuda), y, {}));
    QVERIFY_THROWS_EXCEPTION(c10::Error, gpu::bitmaskSpmvInto(dw, torch::zeros({9, 64}, cuda), y, {}));
    QVERIFY_THROWS_EXCEPTION(c10::Error, gpu::bitmaskSpmvInto(dw, torch::zeros({1, 64}, cuda.dtype(torch::kHalf)), y, {}));
  }
};

QTEST_GUILESS_MAIN(TestSpmvCuda)
#include "test_spmv_cuda.moc"
