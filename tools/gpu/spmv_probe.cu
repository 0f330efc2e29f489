// Standalone kernel probe for the GPU machine (no torch, no Qt): checks the
// SpMV / GEMV kernels against a float64 host reference, measures HBM read
// bandwidth, and sweeps launch configurations per shape and batch. Prints a
// table and writes the best configurations as JSON (resources/tuning format).
//
//   nvcc -std=c++20 -O3 -arch=sm_90 -I. tools/gpu/spmv_probe.cu gpu/kernels/{spmv,gemv,hbm,benchfill}.cu -o probe
//   ./probe OUT.json [quick]
//   ./probe - profile ROWS COLS W U K  DW DR DU DK   # for a profiler: a few plain launches of the
//       batch-1 sparse kernel (w, unroll, split) and our dense GEMV (w, rows/warp, unroll, split)
//   ./probe - tc [quick]   # batch 2-8: the tensor-core SpMV (2:4, 4:8) checked, then timed against the
//       FMA kernel, our dense GEMV and (built with -DPROBE_CUBLAS ... -lcublas) cuBLAS, its split-K,
//       warps and unroll swept (quick: K <= 5120 checked; the Llama-3.1-8B shapes, 2:4, batch 4
//       and 8, against cuBLAS, a smaller sweep)
//   ./probe - tcprofile ROWS COLS BATCH   # for a profiler: a few launches of the tensor-core SpMV
//   ./probe - tccheck   # the tensor-core SpMV with x as [batch][cols] (2:4, 4:8, 8:16) against float64
//   ./probe - l2   # the next projection's weights streamed into L2 during a latency-bound kernel: how
//       much faster that projection then runs (dense GEMV and 2:4 SpMV, Llama-3.1-8B shapes)

#include "gpu/kernels/benchfill.cuh"
#include "gpu/kernels/gemv.cuh"
#include "gpu/kernels/hbm.cuh"
#include "gpu/kernels/launch_space.h"
#include "gpu/kernels/spmv.cuh"

#include <cuda_runtime.h>
#ifdef PROBE_CUBLAS
#include <cublas_v2.h>
#endif

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

using namespace sdw::kernels;

#define CK(x)                                                                                     \
  do {                                                                                            \
    cudaError_t e_ = (x);                                                                         \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));     \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

static float h2f(unsigned short h, bool bf) {
  if (bf) return std::bit_cast<float>(static_cast<unsigned>(h) << 16);
  const unsigned s = (h & 0x8000u) << 16, e = (h >> 10) & 31, m = h & 0x3ff;
  if (e == 0) return (s ? -1.f : 1.f) * m * 5.9604644775390625e-8f;
  if (e == 31) return std::bit_cast<float>(s | 0x7f800000u | (m << 13));
  return std::bit_cast<float>(s | ((e + 112) << 23) | (m << 13));
}

static cudaStream_t gStream;
static int gSm = 132;

// Median time per launch (us) of `fn(copy)` over graph-captured rotations.
template <typename Fn>
static double timeGraph(int copies, int launchesPerGraph, int reps, Fn fn) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(gStream, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < launchesPerGraph; ++i) CK(fn(i % copies));
  CK(cudaStreamEndCapture(gStream, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphLaunch(ge, gStream));  // warm-up
  CK(cudaStreamSynchronize(gStream));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    CK(cudaEventRecord(a, gStream));
    CK(cudaGraphLaunch(ge, gStream));
    CK(cudaEventRecord(b, gStream));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1000.0 / launchesPerGraph);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Shape {
  const char* name;
  long rows, cols;
};

// ---- correctness ------------------------------------------------------------
static bool checkSparse(long rows, long cols, int batch, DType dt, SpmvConfig cfg, int n, int m) {
  const bool bf = dt == DType::BF16;
  const long tiles = spmvTiles(rows), G = cols / 32;
  const size_t nv = tiles * 32 * cols / 2, nw = tiles * 32 * G;
  const int XS = spmvXStride(batch);
  const long ldy = rows + 5, guard = 64;
  void *dv, *dx, *dy;
  unsigned* dm;
  float* ws;
  unsigned* cnt;
  CK(cudaMalloc(&dv, nv * 2));
  CK(cudaMalloc(&dm, nw * 4));
  CK(cudaMalloc(&dx, cols * XS * 2));
  CK(cudaMalloc(&dy, (batch * ldy + 2 * guard) * 2));
  CK(cudaMalloc(&ws, std::max<size_t>(4, spmvWorkspaceFloats(rows, cols, batch, cfg) * 4)));
  CK(cudaMalloc(&cnt, tiles * 4));
  CK(cudaMemset(cnt, 0, tiles * 4));
  CK(launchFillRandom16(dv, nv, dt, rows * 7 + cols, gStream));
  CK(launchFillRandomMasks(dm, nw, n, m, rows + cols * 3, gStream));
  CK(launchFillRandom16(dx, cols * XS, dt, 99 + batch, gStream));
  CK(cudaMemset(dy, 0x7b, (batch * ldy + 2 * guard) * 2));
  void* dxr = nullptr;  // cfg.xRowMajor: the same x as [batch][cols]
  if (cfg.xRowMajor) {
    std::vector<unsigned short> xi(cols * XS), xr(batch * cols);
    CK(cudaMemcpy(xi.data(), dx, cols * XS * 2, cudaMemcpyDeviceToHost));
    for (int b = 0; b < batch; ++b)
      for (long c = 0; c < cols; ++c) xr[b * cols + c] = xi[c * XS + b];
    CK(cudaMalloc(&dxr, batch * cols * 2));
    CK(cudaMemcpy(dxr, xr.data(), batch * cols * 2, cudaMemcpyHostToDevice));
  }
  bool ok = true;
  for (int rep = 0; rep < 2; ++rep) {  // twice: the split-K counters must have reset
    CK(launchBitmaskSpmv(dv, dm, dt, rows, cols, dxr ? dxr : dx, batch, static_cast<unsigned short*>(dy) + guard, ldy,
                         cfg, ws, cnt, gStream));
    CK(cudaStreamSynchronize(gStream));
    std::vector<unsigned short> v(nv), x(cols * XS), y(batch * ldy + 2 * guard);
    std::vector<unsigned> mk(nw);
    CK(cudaMemcpy(v.data(), dv, nv * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(mk.data(), dm, nw * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(x.data(), dx, cols * XS * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(y.data(), dy, y.size() * 2, cudaMemcpyDeviceToHost));
    double err = 0, nrm = 0;
    for (long r = 0; r < rows; ++r)
      for (int b = 0; b < batch; ++b) {
        const long t = r / 32, l = r % 32;
        double s = 0;
        for (long g = 0; g < G; ++g) {
          unsigned w = mk[(t * G + g) * 32 + l];
          const unsigned short* vv = &v[((t * G + g) * 32 + l) * 16];
          for (int i = 0; i < 16; ++i) {
            const int c = std::countr_zero(w);
            w &= w - 1;
            s += double(h2f(vv[i], bf)) * h2f(x[(32 * g + c) * XS + b], bf);
          }
        }
        const double got = h2f(y[guard + b * ldy + r], bf);
        err += (got - s) * (got - s);
        nrm += s * s;
      }
    for (size_t i = 0; i < y.size(); ++i) {
      const long o = long(i) - guard;
      const bool in = o >= 0 && o < batch * ldy && o % ldy < rows;
      if (!in && y[i] != 0x7b7b) ok = false;
    }
    const double rel = std::sqrt(err / nrm);
    if (!(rel < (bf ? 8e-3 : 1e-3))) ok = false;
    if (!ok) std::printf("  sparse FAIL %ldx%ld b%d w%d u%d s%d c%d rel %.2e\n", rows, cols, batch, cfg.warps,
                         cfg.unroll, cfg.splitK, cfg.cluster, rel);
  }
  cudaFree(dv), cudaFree(dm), cudaFree(dx), cudaFree(dy), cudaFree(ws), cudaFree(cnt);
  if (dxr) cudaFree(dxr);
  return ok;
}

static bool checkDense(long rows, long cols, int batch, DType dt, GemvConfig cfg) {
  const bool bf = dt == DType::BF16;
  const long ldy = rows + 3, guard = 64;
  void *dw, *dx, *dy;
  float* ws;
  unsigned* cnt;
  const long nc = gemvCounters(rows, cfg);
  CK(cudaMalloc(&dw, rows * cols * 2));
  CK(cudaMalloc(&dx, batch * cols * 2));
  CK(cudaMalloc(&dy, (batch * ldy + 2 * guard) * 2));
  CK(cudaMalloc(&ws, std::max<size_t>(4, gemvWorkspaceFloats(rows, batch, cfg) * 4)));
  CK(cudaMalloc(&cnt, nc * 4));
  CK(cudaMemset(cnt, 0, nc * 4));
  CK(launchFillRandom16(dw, rows * cols, dt, 5 + rows, gStream));
  CK(launchFillRandom16(dx, batch * cols, dt, 6 + cols, gStream));
  CK(cudaMemset(dy, 0x7b, (batch * ldy + 2 * guard) * 2));
  bool ok = true;
  for (int rep = 0; rep < 2; ++rep) {
    CK(launchDenseGemv(dw, dt, rows, cols, dx, batch, static_cast<unsigned short*>(dy) + guard, ldy, cfg, ws, cnt,
                       gStream));
    CK(cudaStreamSynchronize(gStream));
    std::vector<unsigned short> w(rows * cols), x(batch * cols), y(batch * ldy + 2 * guard);
    CK(cudaMemcpy(w.data(), dw, w.size() * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(x.data(), dx, x.size() * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(y.data(), dy, y.size() * 2, cudaMemcpyDeviceToHost));
    double err = 0, nrm = 0;
    for (long r = 0; r < rows; ++r)
      for (int b = 0; b < batch; ++b) {
        double s = 0;
        for (long c = 0; c < cols; ++c) s += double(h2f(w[r * cols + c], bf)) * h2f(x[b * cols + c], bf);
        const double got = h2f(y[guard + b * ldy + r], bf);
        err += (got - s) * (got - s);
        nrm += s * s;
      }
    for (size_t i = 0; i < y.size(); ++i) {
      const long o = long(i) - guard;
      const bool in = o >= 0 && o < batch * ldy && o % ldy < rows;
      if (!in && y[i] != 0x7b7b) ok = false;
    }
    const double rel = std::sqrt(err / nrm);
    if (!(rel < (bf ? 8e-3 : 1e-3))) ok = false;
    if (!ok) std::printf("  dense FAIL %ldx%ld b%d w%d r%d u%d s%d rel %.2e\n", rows, cols, batch, cfg.warps,
                         cfg.rowsPerWarp, cfg.unroll, cfg.splitK, rel);
  }
  cudaFree(dw), cudaFree(dx), cudaFree(dy), cudaFree(ws), cudaFree(cnt);
  return ok;
}

// ---- timing -----------------------------------------------------------------
// The launch floor: a kernel that does nothing but the programmatic-dependent-launch
// handshake (both no-ops without the launch attribute).
__global__ void emptyKernel(int* out) {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
  if (out && threadIdx.x == 0 && blockIdx.x == 0) *out = 1;
}
static cudaError_t launchEmpty(int blocks, bool pdl, int* out) {
  cudaLaunchConfig_t lc = {};
  lc.gridDim = dim3(blocks);
  lc.blockDim = dim3(128);
  lc.stream = gStream;
  cudaLaunchAttribute a[1];
  a[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  a[0].val.programmaticStreamSerializationAllowed = 1;
  lc.attrs = a;
  lc.numAttrs = pdl ? 1 : 0;
  return cudaLaunchKernelEx(&lc, emptyKernel, out);
}
// HBM read bandwidth in GB/s: 4 GiB, read once per launch (usPer4GiB: the time of one read).
static double measureHbm(double* usPer4GiB = nullptr) {
  const size_t bytes = size_t(4) << 30;
  void* big;
  unsigned* sink;
  CK(cudaMalloc(&big, bytes));
  CK(cudaMalloc(&sink, 4));
  CK(cudaMemset(big, 1, bytes));
  const double t = timeGraph(1, 5, 7, [&](int) { return launchHbmRead(big, bytes / 16, sink, gSm, gStream); });
  CK(cudaFree(big));
  CK(cudaFree(sink));
  if (usPer4GiB) *usPer4GiB = t;
  return bytes / (t * 1e-6) / 1e9;
}

// One shape's operands for timing, in enough copies (at least 4 and 256 MiB) that the
// rotated launches stream their weights from HBM: dense bf16 weights, packed weights
// (values, then masks: 2:4 until fillMasks), x and y for batch 8, a split-K workspace and
// zeroed counters.
struct ShapeBuffers {
  long rows, cols;
  size_t dBytes, vBytes, mWords, sBytes;
  int copies;
  std::vector<void*> dw, sv;
  std::vector<unsigned*> sm;
  void *x, *y;
  float* ws;
  unsigned* cnt;
  ShapeBuffers(long r, long c)
      : rows(r), cols(c), dBytes(size_t(r) * c * 2), vBytes(size_t(spmvTiles(r)) * 32 * c),
        mWords(size_t(spmvTiles(r)) * c), sBytes(vBytes + mWords * 4),
        copies(std::max<int>(4, int((size_t(256) << 20) / sBytes) + 1)), dw(copies), sv(copies), sm(copies) {
    for (int i = 0; i < copies; ++i) {
      CK(cudaMalloc(&dw[i], dBytes));
      CK(cudaMalloc(&sv[i], sBytes));
      sm[i] = reinterpret_cast<unsigned*>(static_cast<char*>(sv[i]) + vBytes);
      CK(launchFillRandom16(dw[i], size_t(rows) * cols, DType::BF16, 11 + i, gStream));
      CK(launchFillRandom16(sv[i], vBytes / 2, DType::BF16, 21 + i, gStream));
    }
    fillMasks(2, 4);
    CK(cudaMalloc(&x, cols * 8 * 2));
    CK(cudaMalloc(&y, rows * 8 * 2));
    CK(cudaMalloc(&ws, size_t(64) * (rows + 64) * 8 * 4));
    CK(cudaMalloc(&cnt, 65536 * 4));
    CK(cudaMemset(cnt, 0, 65536 * 4));
    CK(launchFillRandom16(x, cols * 8, DType::BF16, 3, gStream));
  }
  ~ShapeBuffers() {
    for (int i = 0; i < copies; ++i) cudaFree(dw[i]), cudaFree(sv[i]);
    cudaFree(x), cudaFree(y), cudaFree(ws), cudaFree(cnt);
  }
  ShapeBuffers(const ShapeBuffers&) = delete;
  ShapeBuffers& operator=(const ShapeBuffers&) = delete;
  void fillMasks(int n, int m) {
    for (int i = 0; i < copies; ++i) CK(launchFillRandomMasks(sm[i], mWords, n, m, 31 + i, gStream));
  }
  int launches() const { return std::max(2 * copies, 20); }
};

// Profile mode: 2:4 bf16 weights in 4 copies (beyond L2), 6 launches of each kernel.
static int profileMain(int argc, char** argv) {
  if (argc < 12) {
    std::fprintf(stderr, "usage: probe - profile ROWS COLS W U K DW DR DU DK\n");
    return 2;
  }
  const long rows = std::atol(argv[3]), cols = std::atol(argv[4]);
  const SpmvConfig sc{std::atoi(argv[5]), std::atoi(argv[6]), std::atoi(argv[7])};
  const GemvConfig dc{std::atoi(argv[8]), std::atoi(argv[9]), std::atoi(argv[10]), std::atoi(argv[11])};
  CK(cudaStreamCreateWithFlags(&gStream, cudaStreamNonBlocking));
  const size_t dBytes = size_t(rows) * cols * 2, vBytes = size_t(spmvTiles(rows)) * 32 * cols;
  const size_t mWords = size_t(spmvTiles(rows)) * 32 * cols / 32;
  constexpr int kCopies = 4;
  void *dw[kCopies], *sv[kCopies], *x, *y;
  unsigned* sm[kCopies];
  float* ws;
  unsigned* cnt;
  for (int i = 0; i < kCopies; ++i) {
    CK(cudaMalloc(&dw[i], dBytes));
    CK(cudaMalloc(&sv[i], vBytes + mWords * 4));
    sm[i] = reinterpret_cast<unsigned*>(static_cast<char*>(sv[i]) + vBytes);
    CK(launchFillRandom16(dw[i], size_t(rows) * cols, DType::BF16, 11 + i, gStream));
    CK(launchFillRandom16(sv[i], vBytes / 2, DType::BF16, 21 + i, gStream));
    CK(launchFillRandomMasks(sm[i], mWords, 2, 4, 31 + i, gStream));
  }
  CK(cudaMalloc(&x, cols * 2));
  CK(cudaMalloc(&y, rows * 2));
  CK(cudaMalloc(&ws, size_t(64) * (rows + 64) * 4));
  CK(cudaMalloc(&cnt, 65536 * 4));
  CK(cudaMemset(cnt, 0, 65536 * 4));
  CK(launchFillRandom16(x, cols, DType::BF16, 3, gStream));
  for (int i = 0; i < 6; ++i)
    CK(launchBitmaskSpmv(sv[i % kCopies], sm[i % kCopies], DType::BF16, rows, cols, x, 1, y, rows, sc, ws, cnt, gStream));
  for (int i = 0; i < 6; ++i)
    CK(launchDenseGemv(dw[i % kCopies], DType::BF16, rows, cols, x, 1, y, rows, dc, ws, cnt, gStream));
  CK(cudaStreamSynchronize(gStream));
  std::printf("profiled %ldx%ld sparse w%d u%d s%d, dense w%d r%d u%d s%d\n", rows, cols, sc.warps, sc.unroll,
              sc.splitK, dc.warps, dc.rowsPerWarp, dc.unroll, dc.splitK);
  return 0;
}

// ---- l2 mode ------------------------------------------------------------------
// Does streaming the next projection's weights into L2 while a latency-bound kernel runs
// (the attention: ~12 us with HBM nearly idle; a norm: ~3 us) make that projection
// faster? A stand-in for that kernel spins `cycles` on one thread per block (40 blocks,
// as the Llama-3.1-8B attention), after its threads have asked for the first `pfBytes` of
// the weights: mode 1 cp.async.bulk.prefetch.L2 in 16 KiB pieces, mode 2 one
// prefetch.global.L2::evict_last per 128-byte line, 0 nothing.
__global__ void spinPrefetchKernel(const char* pf, unsigned long long pfBytes, int mode, long long cycles, int* out) {
  const long long t0 = clock64();
  const unsigned long long nThreads = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  const unsigned long long tid = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (mode == 1) {
    constexpr unsigned long long kPiece = 16384;
    for (unsigned long long off = tid * kPiece; off < pfBytes; off += nThreads * kPiece) {
      const unsigned sz = static_cast<unsigned>(pfBytes - off < kPiece ? pfBytes - off : kPiece);
#if __CUDA_ARCH__ >= 900
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(pf + off), "r"(sz) : "memory");
#endif
    }
  } else if (mode == 2) {
    for (unsigned long long off = tid * 128; off < pfBytes; off += nThreads * 128)
      asm volatile("prefetch.global.L2::evict_last [%0];\n" ::"l"(pf + off));
  }
  if (threadIdx.x == 0)
    while (clock64() - t0 < cycles) {
    }
  if (out && threadIdx.x == 0 && blockIdx.x == 0) *out = 1;
}

static int l2Main() {
  CK(cudaStreamCreateWithFlags(&gStream, cudaStreamNonBlocking));
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  gSm = p.multiProcessorCount;
  int clockKhz = 0;
  CK(cudaDeviceGetAttribute(&clockKhz, cudaDevAttrClockRate, 0));
  std::printf("device %s, %d SMs, L2 %d MB, clock %d MHz\n", p.name, gSm, p.l2CacheSize >> 20, clockKhz / 1000);
  double tHbm = 0;
  std::printf("HBM read: %.0f GB/s\n", measureHbm(&tHbm));
  int* flag;
  CK(cudaMalloc(&flag, 4));
  struct L2Shape {
    long rows, cols;
    GemvConfig dense;
    SpmvConfig sparse;
  };
  // The tuned batch-1 configurations of resources/tuning/nvidia-h200.json.
  const L2Shape shapes[] = {{4096, 4096, {4, 1, 4, 1}, {16, 4, 1, 0}},
                            {6144, 4096, {4, 1, 4, 1}, {16, 4, 1, 0}},
                            {14336, 4096, {4, 4, 2, 1}, {4, 1, 2, 1}},
                            {4096, 14336, {8, 1, 2, 1}, {16, 42, 1, 0}}};
  const double mhz = clockKhz / 1000.0;
  std::printf("%-12s %-6s %7s %7s | %-9s %9s %9s %9s %9s %9s | %s\n", "shape", "kernel", "MB", "alone", "spin us",
              "+plain", "+bulk", "+line", "bulk/2", "hot", "saved by bulk (us)");
  for (const L2Shape& sh : shapes) {
    ShapeBuffers b(sh.rows, sh.cols);
    for (int sparse = 0; sparse < 2; ++sparse) {
      const size_t bytes = sparse ? b.sBytes : b.dBytes;
      auto run = [&](int i) -> cudaError_t {
        return sparse ? launchBitmaskSpmv(b.sv[i], b.sm[i], DType::BF16, sh.rows, sh.cols, b.x, 1, b.y, sh.rows,
                                          sh.sparse, b.ws, b.cnt, gStream)
                      : launchDenseGemv(b.dw[i], DType::BF16, sh.rows, sh.cols, b.x, 1, b.y, sh.rows, sh.dense, b.ws,
                                        b.cnt, gStream);
      };
      // The packed values come first, then the masks: a prefix of pfBytes covers values first.
      auto base = [&](int i) { return static_cast<const char*>(sparse ? b.sv[i] : b.dw[i]); };
      const double alone = timeGraph(b.copies, b.launches(), 15, run);
      const double hot = timeGraph(1, 20, 15, run);  // one copy again and again: from L2 where it fits
      for (const double spinUs : {12.0, 3.0}) {
        const long long cyc = static_cast<long long>(spinUs * mhz);
        auto pair = [&](int mode, size_t pf) {
          return [&, mode, pf](int i) -> cudaError_t {
            spinPrefetchKernel<<<40, 128, 0, gStream>>>(base(i), std::min(pf, bytes), mode, cyc, flag);
            return run(i);
          };
        };
        const double spin = timeGraph(b.copies, b.launches(), 15, [&](int i) -> cudaError_t {
          spinPrefetchKernel<<<40, 128, 0, gStream>>>(base(i), 0, 0, cyc, flag);
          return cudaGetLastError();
        });
        const size_t all = bytes, half = size_t(16) << 20;
        const double plain = timeGraph(b.copies, b.launches(), 15, pair(0, 0));
        const double bulk = timeGraph(b.copies, b.launches(), 15, pair(1, all));
        const double line = timeGraph(b.copies, b.launches(), 15, pair(2, all));
        const double bulk16 = timeGraph(b.copies, b.launches(), 15, pair(1, half));
        std::printf("%5ldx%-6ld %-6s %7.1f %7.2f | %4.0f:%4.2f %9.2f %9.2f %9.2f %9.2f %9.2f | %.2f (16 MiB: %.2f)\n",
                    sh.rows, sh.cols, sparse ? "sparse" : "dense", bytes / 1048576.0, alone, spinUs, spin, plain, bulk,
                    line, bulk16, hot, plain - bulk, plain - bulk16);
      }
    }
  }
  return 0;
}

// ---- tccheck mode: the tensor-core path with x as [batch][cols], 8:16 included ----------
static int tcCheckMain() {
  CK(cudaStreamCreateWithFlags(&gStream, cudaStreamNonBlocking));
  int fails = 0, checks = 0;
  for (DType dt : {DType::BF16, DType::F16})
    for (int pm : {4, 8, 16})
      for (int b = 2; b <= 8; ++b)
        for (SpmvConfig c : {SpmvConfig{4, 102, 1}, SpmvConfig{8, 102, 3}, SpmvConfig{1, 102, 7},
                             spmvOnTensorCores(SpmvConfig{}, 1000, 5120)}) {
          c.xRowMajor = true;
          c.tcM = pm;
          for (auto [r, k] :
               {std::pair<long, long>{37, 96}, {100, 1056}, {33, 32}, {65, 4064}, {1000, 5120}, {129, 160}}) {
            fails += !checkSparse(r, k, b, dt, c, pm / 2, pm), ++checks;
            SpmvConfig cp = c;
            cp.pdl = true;
            if (r == 65) fails += !checkSparse(r, k, b, dt, cp, pm / 2, pm), ++checks;
          }
        }
  std::printf("tensor-core correctness, x as [batch][cols], 2:4 4:8 8:16: %d failures of %d checks\n", fails, checks);
  return fails ? 1 : 0;
}

// ---- tc mode ------------------------------------------------------------------
static int tcMain(bool quick) {
  CK(cudaStreamCreateWithFlags(&gStream, cudaStreamNonBlocking));
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  gSm = p.multiProcessorCount;
  std::printf("device %s, %d SMs\n", p.name, gSm);
  int fails = 0, checks = 0;
  for (DType dt : {DType::BF16, DType::F16})
    for (int pm : {4, 8})
      for (int b = 2; b <= 8; ++b)
        for (SpmvConfig c : {SpmvConfig{4, 102, 1}, SpmvConfig{1, 103, 3}, SpmvConfig{8, 104, 2}, SpmvConfig{2, 102, 7},
                             spmvOnTensorCores(SpmvConfig{}, 1000, 5120)}) {
          for (auto [r, k] : {std::pair<long, long>{37, 96}, {100, 1056}, {33, 32}, {65, 4064}, {1000, 5120},
                              {70, 14336}, {129, 160}}) {
            if (quick && k > 5120) continue;
            fails += !checkSparse(r, k, b, dt, c, pm / 2, pm), ++checks;
            SpmvConfig cp = c;
            cp.pdl = true;
            if (r == 65) fails += !checkSparse(r, k, b, dt, cp, pm / 2, pm), ++checks;
          }
        }
  std::printf("tensor-core correctness: %d failures of %d checks\n", fails, checks);
  const double hbm = measureHbm();
  std::printf("HBM read: %.0f GB/s\n", hbm);
#ifdef PROBE_CUBLAS
  cublasHandle_t hb;
  if (cublasCreate(&hb) != CUBLAS_STATUS_SUCCESS) return 3;
  cublasSetStream(hb, gStream);
  void* cublasWs;
  CK(cudaMalloc(&cublasWs, size_t(32) << 20));
  cublasSetWorkspace(hb, cublasWs, size_t(32) << 20);
#endif
  const Shape shapes[] = {{"6144x4096", 6144, 4096},   {"4096x4096", 4096, 4096},   {"28672x4096", 28672, 4096},
                          {"4096x14336", 4096, 14336}, {"14336x4096", 14336, 4096}, {"7168x5120", 7168, 5120},
                          {"5120x5120", 5120, 5120},   {"34816x5120", 34816, 5120}, {"5120x17408", 5120, 17408}};
  constexpr int kRules = 12;
  static double ruleTotal[2][3][kRules] = {};  // [2:4, 4:8][batch 2, 4, 8][rule]
  std::printf("%-11s %3s %2s | %8s %8s | %8s | %8s %-10s | %8s %-12s %5s | %6s %6s\n", "shape", "pat", "b", "cublas",
              "dense", "fma", "tc auto", "cfg", "tc best", "cfg", "%hbm", "best/d", "auto/d");
  for (const Shape& s : shapes) {
    if (quick && s.cols != 4096 && s.rows != 4096) continue;  // quick: the Llama-3.1-8B shapes
    ShapeBuffers buf(s.rows, s.cols);
    auto &dw = buf.dw, &sv = buf.sv;
    auto& sm = buf.sm;
    void *x = buf.x, *y = buf.y;
    float* ws = buf.ws;
    unsigned* cnt = buf.cnt;
    const int copies = buf.copies, launches = buf.launches();
    const size_t sBytes = buf.sBytes;
    for (int pm : {4, 8}) {
      if (quick && pm == 8) continue;
      buf.fillMasks(pm / 2, pm);
      for (int b : {2, 4, 8}) {
        if (quick && b == 2) continue;
        double tCublas = 0;
#ifdef PROBE_CUBLAS
        {
          const float one = 1.f, zero = 0.f;
          tCublas = timeGraph(copies, launches, 5, [&](int i) {
            return cublasGemmEx(hb, CUBLAS_OP_T, CUBLAS_OP_N, int(s.rows), b, int(s.cols), &one, dw[i], CUDA_R_16BF,
                                int(s.cols), x, CUDA_R_16BF, int(s.cols), &zero, y, CUDA_R_16BF, int(s.rows),
                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS
                       ? cudaSuccess
                       : cudaErrorUnknown;
          });
        }
#endif
        double bestD = 1e30, bestF = 1e30, bestT = 1e30;
        SpmvConfig bt;
        if (pm == 4 && !quick)
          for (const GemvConfig c : gemvTuningSpace(b)) {
            const double t = timeGraph(copies, launches, 5, [&](int i) {
              return launchDenseGemv(dw[i], DType::BF16, s.rows, s.cols, x, b, y, s.rows, c, ws, cnt, gStream);
            });
            bestD = std::min(bestD, t);
          }
        for (const SpmvConfig c : spmvTuningSpace(s.cols, b)) {
          if (quick) break;
          if (launchBitmaskSpmv(sv[0], sm[0], DType::BF16, s.rows, s.cols, x, b, y, s.rows, c, ws, cnt, gStream) !=
              cudaSuccess)
            continue;
          bestF = std::min(bestF, timeGraph(copies, launches, 5, [&](int i) {
            return launchBitmaskSpmv(sv[i], sm[i], DType::BF16, s.rows, s.cols, x, b, y, s.rows, c, ws, cnt, gStream);
          }));
        }
        const auto timeTc = [&](SpmvConfig c) {
          if (launchBitmaskSpmv(sv[0], sm[0], DType::BF16, s.rows, s.cols, x, b, y, s.rows, c, ws, cnt, gStream) !=
              cudaSuccess) {
            cudaGetLastError();
            return 1e30;
          }
          return timeGraph(copies, launches, 5, [&](int i) {
            return launchBitmaskSpmv(sv[i], sm[i], DType::BF16, s.rows, s.cols, x, b, y, s.rows, c, ws, cnt, gStream);
          });
        };
        const SpmvConfig ca = spmvOnTensorCores(SpmvConfig{}, s.rows, s.cols);
        const double tAuto = timeTc(ca);
        // Candidate rules for the default configuration: warps, unroll, words per split.
        for (int r = 0; r < kRules && !quick; ++r) {
          const int w = r % 2 ? 8 : 4, u = (r / 2) % 2 ? 104 : 103, per = 16 << (r / 4);
          const int k = std::max(1, int((s.cols / 32 + per / 2) / per));
          const double t = timeTc(SpmvConfig{w, u, k});
          ruleTotal[pm == 4 ? 0 : 1][b / 4][r] += t;
        }
        for (int w : {2, 4, 8})
          for (int u : {102, 103, 104})
            for (int k : {1, 2, 3, 4, 6, 8, 12, 16}) {
              if ((quick && (w == 2 || k == 1 || k == 3 || k == 6 || k == 12)) || pm == 8) continue;
              const double t = timeTc(SpmvConfig{w, u, k});
              if (t < bestT) bestT = t, bt = SpmvConfig{w, u, k};
            }
        static double denseRef[16];
        const int di = int(&s - shapes) % 16;
        if (pm == 4) denseRef[di] = std::min(bestD, tCublas > 0 ? tCublas : 1e30);
        const double bestDense = denseRef[di];
        std::printf("%-11s %d:%d %2d | %8.2f %8.2f | %8.2f | %8.2f w%d u%d s%-3d | %8.2f w%d u%d s%-5d %5.1f | %6.3f %6.3f\n",
                    s.name, pm / 2, pm, b, tCublas, pm == 4 ? bestD : 0.0, bestF, tAuto, ca.warps, ca.unroll,
                    ca.splitK, bestT, bt.warps, bt.unroll, bt.splitK, 100 * sBytes / (bestT * 1e-6) / 1e9 / hbm,
                    bestDense / bestT, bestDense / tAuto);
        std::fflush(stdout);
      }
    }
  }
  std::printf("default-configuration rules, total us over the shapes (2:4 | 4:8):\n");
  for (int r = 0; r < kRules; ++r) {
    std::printf("  w%d u%d %2d words/split:", r % 2 ? 8 : 4, (r / 2) % 2 ? 104 : 103, 16 << (r / 4));
    for (int b = 0; b < 3; ++b) std::printf("  b%d %8.2f | %8.2f", 2 << b, ruleTotal[0][b][r], ruleTotal[1][b][r]);
    std::printf("\n");
  }
  return fails ? 1 : 0;
}

// tcprofile mode: a few plain launches of the tensor-core SpMV in its default configuration
// (2:4 bf16 weights in copies beyond L2), for a profiler.
static int tcProfileMain(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: probe - tcprofile ROWS COLS BATCH\n");
    return 2;
  }
  const long rows = std::atol(argv[3]), cols = std::atol(argv[4]);
  const int b = std::atoi(argv[5]);
  CK(cudaStreamCreateWithFlags(&gStream, cudaStreamNonBlocking));
  const SpmvConfig c = spmvOnTensorCores(SpmvConfig{}, rows, cols);
  ShapeBuffers buf(rows, cols);
  for (int i = 0; i < 6; ++i)
    CK(launchBitmaskSpmv(buf.sv[i % buf.copies], buf.sm[i % buf.copies], DType::BF16, rows, cols, buf.x, b, buf.y, rows,
                         c, buf.ws, buf.cnt, gStream));
  CK(cudaStreamSynchronize(gStream));
  std::printf("profiled %ldx%ld batch %d tensor cores w%d u%d s%d\n", rows, cols, b, c.warps, c.unroll, c.splitK);
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 2 && std::strcmp(argv[2], "tcprofile") == 0) return tcProfileMain(argc, argv);
  if (argc > 2 && std::strcmp(argv[2], "tc") == 0) return tcMain(argc > 3 && std::strcmp(argv[3], "quick") == 0);
  if (argc > 2 && std::strcmp(argv[2], "profile") == 0) return profileMain(argc, argv);
  if (argc > 2 && std::strcmp(argv[2], "l2") == 0) return l2Main();
  if (argc > 2 && std::strcmp(argv[2], "tccheck") == 0) return tcCheckMain();
  const char* outPath = argc > 1 ? argv[1] : "tuning.json";
  const bool quick = argc > 2 && std::strcmp(argv[2], "quick") == 0;
  CK(cudaStreamCreateWithFlags(&gStream, cudaStreamNonBlocking));
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  gSm = p.multiProcessorCount;
  std::printf("device %s, %d SMs, L2 %d MB\n", p.name, gSm, p.l2CacheSize >> 20);

  double tHbm = 0;
  const double hbm = measureHbm(&tHbm);
  std::printf("HBM read: %.0f GB/s (%.0f us per 4 GiB)\n", hbm, tHbm);
  unsigned* sink;
  CK(cudaMalloc(&sink, 4));
  for (int blocks : {1, gSm, 4 * gSm}) {
    const double plain = timeGraph(1, 200, 7, [&](int) { return launchEmpty(blocks, false, reinterpret_cast<int*>(sink)); });
    const double pdl = timeGraph(1, 200, 7, [&](int) { return launchEmpty(blocks, true, reinterpret_cast<int*>(sink)); });
    std::printf("launch floor, empty kernel x %d blocks of 128 threads in a graph: %.2f us plain, %.2f us chained (PDL)\n",
                blocks, plain, pdl);
  }

  // Knobs for A/B runs of a variant (tools/gpu/probe-ab.sh): SDW_PROBE_SHAPES="14336x4096,..." times those
  // shapes only; SDW_PROBE_NO_CHECKS=1 skips the correctness checks (a timing-only variant fails them);
  // SDW_PROBE_NO_DENSE=1 skips the dense GEMV's sweep.
  const char* onlyShapes = std::getenv("SDW_PROBE_SHAPES");
  const bool noChecks = std::getenv("SDW_PROBE_NO_CHECKS") != nullptr;
  const bool noDense = std::getenv("SDW_PROBE_NO_DENSE") != nullptr;

  // Correctness.
  int fails = 0;
  if (!noChecks)
    for (DType dt : {DType::BF16, DType::F16})
      for (int b : {1, 2, 3, 4, 5, 8})
        for (SpmvConfig c :
             {SpmvConfig{8, 2, 1}, SpmvConfig{4, 4, 3}, SpmvConfig{2, 1, 8}, SpmvConfig{b == 1 ? 16 : 8, 4, 2}}) {
          fails += !checkSparse(37, 96, b, dt, c, 2, 4);
          fails += !checkSparse(100, 1056, b, dt, c, 8, 16);
          fails += !checkSparse(33, 32, b, dt, c, 16, 32);
        }
  if (!noChecks)
    for (DType dt : {DType::BF16, DType::F16})
      for (int b : {1, 2, 3, 8})
        for (GemvConfig c : {GemvConfig{4, 2, 2, 1}, GemvConfig{8, 4, 1, 3}, GemvConfig{2, 1, 1, 5}}) {
          fails += !checkDense(37, 96, b, dt, c);
          fails += !checkDense(70, 2056, b, dt, c);
          fails += !checkDense(33, 32, b, dt, c);
        }
  // Batch 1 through a thread-block cluster (2..16 blocks, uneven splits: 127 and 33 words) and
  // unroll 3, against the workspace path.
  int clusterChecks = 0;
  if (!noChecks)
    for (DType dt : {DType::BF16, DType::F16})
      for (SpmvConfig c :
           {SpmvConfig{16, 4, 8, 1}, SpmvConfig{8, 3, 3, 1}, SpmvConfig{4, 1, 16, 1}, SpmvConfig{16, 2, 2, -1},
            SpmvConfig{8, 3, 7, 0}, SpmvConfig{16, 1, 6, 1}, SpmvConfig{4, 4, 4, 1}, SpmvConfig{8, 2, 16, 0}}) {
        for (auto [r, k] : {std::pair<long, long>{65, 4064}, {100, 1056}, {37, 96}, {1024, 4096}, {33, 32}}) {
          fails += !checkSparse(r, k, 1, dt, c, r % 2 ? 4 : 2, r % 2 ? 8 : 4);
          clusterChecks += spmvUsesCluster(k, 1, c);
        }
      }
  // Batch 1 through the bulk-copy pipeline (unroll 10 S + U; sm_90), all four patterns, odd rows,
  // K = 32, uneven and clustered splits, large K.
  int bulkChecks = 0;
  if (!noChecks)
    for (DType dt : {DType::BF16, DType::F16})
      for (SpmvConfig c :
           {SpmvConfig{4, 41, 1}, SpmvConfig{16, 61, 2}, SpmvConfig{8, 81, 3, 1}, SpmvConfig{8, 42, 7, 0},
            SpmvConfig{4, 34, 4, -1}, SpmvConfig{16, 41, 16, 1}, SpmvConfig{2, 42, 1}}) {
        for (auto [r, k] :
             {std::pair<long, long>{65, 4064}, {100, 1056}, {37, 96}, {1024, 4096}, {33, 32}, {70, 14336}}) {
          for (int pm : {4, 8, 16, 32}) fails += !checkSparse(r, k, 1, dt, c, pm / 2, pm), ++bulkChecks;
          clusterChecks += spmvUsesCluster(k, 1, c);
        }
      }
  std::printf("correctness: %d failures (%d cluster launches checked, %d bulk-pipeline checks)\n", fails, clusterChecks,
              bulkChecks);

  const Shape shapes[] = {{"4096x4096", 4096, 4096},    {"1024x4096", 1024, 4096},   {"14336x4096", 14336, 4096},
                          {"4096x14336", 4096, 14336},  {"5120x5120", 5120, 5120},   {"1024x5120", 1024, 5120},
                          {"17408x5120", 17408, 5120},  {"5120x17408", 5120, 17408}, {"8192x5120", 8192, 5120},
                          {"5120x8192", 5120, 8192},    {"25600x5120", 25600, 5120}, {"5120x25600", 5120, 25600}};
  FILE* js = std::fopen(outPath, "w");
  std::fprintf(js, "{\n  \"device\": \"%s\",\n  \"hbm_read_gbs\": %.1f,\n  \"entries\": [\n", p.name, hbm);
  bool firstEntry = true;
  const std::vector<int> batches = quick ? std::vector<int>{1} : std::vector<int>{1, 2, 4, 8};
  std::printf("%-11s %2s | %8s %8s %5s %-10s | %8s %8s %5s %-15s | %5s | %8s %-11s | %5s | %8s %s\n", "shape", "b", "dense us",
              "GB/s", "%hbm", "cfg", "sparse us", "GB/s", "%hbm", "cfg", "x", "v6 set", "cfg", "gain", "any", "cfg");
  for (const Shape& s : shapes) {
    if (onlyShapes && !std::strstr(onlyShapes, s.name)) continue;
    ShapeBuffers buf(s.rows, s.cols);
    auto &dw = buf.dw, &sv = buf.sv;
    auto& sm = buf.sm;
    void *x = buf.x, *y = buf.y;
    float* ws = buf.ws;
    unsigned* cnt = buf.cnt;
    const int copies = buf.copies, launches = buf.launches();
    const size_t dBytes = buf.dBytes, sBytes = buf.sBytes;
    for (int b : batches) {
      double bestD = 1e30, bestS = 1e30, bestDP = 1e30, bestSP = 1e30;  // ...P: chained (PDL), batch 1
      GemvConfig bd, bdp;
      SpmvConfig bsp;
      SpmvConfig bs;
      for (const GemvConfig c : noDense ? std::vector<GemvConfig>{} : gemvTuningSpace(b)) {  // as bench kernels --tune
        const double t = timeGraph(copies, launches, 5, [&](int i) {
          return launchDenseGemv(dw[i], DType::BF16, s.rows, s.cols, x, b, y, s.rows, c, ws, cnt, gStream);
        });
        if (t < bestD) bestD = t, bd = c;
        if (b == 1) {
          GemvConfig cp = c;
          cp.pdl = true;
          const double tp = timeGraph(copies, launches, 5, [&](int i) {
            return launchDenseGemv(dw[i], DType::BF16, s.rows, s.cols, x, b, y, s.rows, cp, ws, cnt, gStream);
          });
          if (tp < bestDP) bestDP = tp, bdp = cp;
        }
      }
      // bestS: over the configurations the engine and the harness reproduce from (warps, unroll,
      // split_k) with the cluster request agreeing with auto (recorded as "cluster": 0/1, the request
      // the engine and the harness launch with; docs/kernels.md, "Launch configurations");
      // bestOld: over the v6 set (no cluster, unroll 1/2/4); bestAny: over everything swept.
      double bestOld = 1e30, bestAny = 1e30, bestReg = 1e30;  // bestReg: batch 1, v7 set (register path)
      SpmvConfig bo, ba, br;
      // The shared tuning space (gpu/kernels/launch_space.h), with the requests that disagree with auto.
      for (const SpmvConfig c : spmvTuningSpace(s.cols, b, true)) {
        const int w = c.warps, u = c.unroll, k = c.splitK, cl = c.cluster;
        // A cluster shape the device cannot co-schedule fails at launch: skip it.
        if (launchBitmaskSpmv(sv[0], sm[0], DType::BF16, s.rows, s.cols, x, b, y, s.rows, c, ws, cnt, gStream) !=
                cudaSuccess ||
            cudaStreamSynchronize(gStream) != cudaSuccess) {
          std::printf("  skip w%d u%d s%d c%d: %s\n", w, u, k, cl, cudaGetErrorString(cudaGetLastError()));
          continue;
        }
        const double t = timeGraph(copies, launches, 5, [&](int i) {
          return launchBitmaskSpmv(sv[i], sm[i], DType::BF16, s.rows, s.cols, x, b, y, s.rows, c, ws, cnt, gStream);
        });
        const bool asAuto = (cl == 1) == spmvUsesCluster(s.cols, b, SpmvConfig{w, u, k, -1});
        if (asAuto && t < bestS) bestS = t, bs = c;
        if (b == 1 && asAuto) {
          SpmvConfig cp = c;
          cp.pdl = true;
          const double tp = timeGraph(copies, launches, 5, [&](int i) {
            return launchBitmaskSpmv(sv[i], sm[i], DType::BF16, s.rows, s.cols, x, b, y, s.rows, cp, ws, cnt, gStream);
          });
          if (tp < bestSP) bestSP = tp, bsp = cp;
        }
        if (!cl && u != 3 && u < 10 && t < bestOld) bestOld = t, bo = c;
        if (b == 1 && u < 10 && asAuto && t < bestReg) bestReg = t, br = c;
        if (t < bestAny) bestAny = t, ba = c;
      }
      const double dg = dBytes / (bestD * 1e-6) / 1e9, sg = sBytes / (bestS * 1e-6) / 1e9;
      std::printf("%-11s %2d | %8.2f %8.0f %5.1f w%d r%d u%d s%-2d | %8.2f %8.0f %5.1f w%-2d u%d s%-2d c%d | %5.2f | %8.2f w%-2d u%d s%-2d "
                  "| %5.2f | %8.2f w%-2d u%d s%-2d c%d\n",
                  s.name, b, bestD, dg, 100 * dg / hbm, bd.warps, bd.rowsPerWarp, bd.unroll, bd.splitK, bestS, sg,
                  100 * sg / hbm, bs.warps, bs.unroll, bs.splitK, bs.cluster, bestD / bestS, bestOld, bo.warps,
                  bo.unroll, bo.splitK, bestOld / bestS, bestAny, ba.warps, ba.unroll, ba.splitK, ba.cluster);
      if (b == 1) {
        GemvConfig dp = bd;
        dp.pdl = true;
        SpmvConfig sp = bs;
        sp.pdl = true;
        const double dSel = timeGraph(copies, launches, 5, [&](int i) {
          return launchDenseGemv(dw[i], DType::BF16, s.rows, s.cols, x, b, y, s.rows, dp, ws, cnt, gStream);
        });
        const double sSel = timeGraph(copies, launches, 5, [&](int i) {
          return launchBitmaskSpmv(sv[i], sm[i], DType::BF16, s.rows, s.cols, x, b, y, s.rows, sp, ws, cnt, gStream);
        });
        std::printf("  b1 chained (PDL): dense %.2f us w%d r%d u%d s%d (isolated-best config: %.2f), sparse %.2f us "
                    "w%d u%d s%d c%d (%.1f%% hbm; isolated-best config: %.2f) -> %.3fx dense; gain over isolated: dense "
                    "%.3fx, sparse %.3fx\n",
                    bestDP, bdp.warps, bdp.rowsPerWarp, bdp.unroll, bdp.splitK, dSel, bestSP, bsp.warps, bsp.unroll,
                    bsp.splitK, bsp.cluster, 100 * sBytes / (bestSP * 1e-6) / 1e9 / hbm, sSel, bestDP / bestSP,
                    bestD / bestDP, bestS / bestSP);
      }
      if (b == 1)
        std::printf("  b1 register path (v7 set) %.2f us w%d u%d s%d c%d (%.1f%% hbm) -> selected %.2f us u%d: %.3fx\n",
                    bestReg, br.warps, br.unroll, br.splitK, br.cluster, 100 * sBytes / (bestReg * 1e-6) / 1e9 / hbm,
                    bestS, bs.unroll, bestReg / bestS);
      std::fflush(stdout);
      std::fprintf(js,
                   "%s    {\"rows\": %ld, \"cols\": %ld, \"batch\": %d, \"dtype\": \"bf16\", "
                   "\"sparse\": {\"warps\": %d, \"unroll\": %d, \"split_k\": %d, \"cluster\": %d, \"us\": %.3f}, "
                   "\"dense\": {\"warps\": %d, \"rows_per_warp\": %d, \"unroll\": %d, \"split_k\": %d, \"us\": %.3f}}",
                   firstEntry ? "" : ",\n", s.rows, s.cols, b, bs.warps, bs.unroll, bs.splitK, bs.cluster, bestS, bd.warps,
                   bd.rowsPerWarp, bd.unroll, bd.splitK, bestD);
      if (b == 1 && bestSP < 1e29 && bestDP < 1e29) {  // chained (programmatic dependent launch) configurations
        std::fseek(js, -1, SEEK_CUR);                  // reopen the entry's closing brace
        std::fprintf(js,
                     ", \"sparse_chained\": {\"warps\": %d, \"unroll\": %d, \"split_k\": %d, \"cluster\": %d, \"us\": %.3f}, "
                     "\"dense_chained\": {\"warps\": %d, \"rows_per_warp\": %d, \"unroll\": %d, \"split_k\": %d, "
                     "\"us\": %.3f}}",
                     bsp.warps, bsp.unroll, bsp.splitK, bsp.cluster, bestSP, bdp.warps, bdp.rowsPerWarp, bdp.unroll,
                     bdp.splitK, bestDP);
      }
      firstEntry = false;
    }
  }
  std::fprintf(js, "\n  ]\n}\n");
  std::fclose(js);
  return fails ? 1 : 0;
}
