#pragma once
// The GPU kernel cases: one table of the kernels that the benchmark times
// (gpu/bench.cpp) and that the device test checks against a float64 reference
// over their whole launch space (tests/gpu/test_spmv_cuda.cpp), as llama.cpp's
// test-backend-ops shares its cases between test and perf modes. Per case: its
// identity, the bytes a call must read, how its inputs are built on the device,
// one launch, and its launch space (gpu/kernels/launch_space.h). Torch and plain
// C++ types only, no CUDA header: a CPU-only build compiles it and its table is
// empty there. Include only from gpu/*.cpp and engine tests.

#include "core/sparse_format.h"
#include "gpu/bench.h"  // BenchShape
#include "gpu/kernel_id.h"
#include "gpu/spmspv_pack.h"
#include "gpu/spmv.h"  // SpmvLaunch, GemvLaunch, TuningTable

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace sdw::gpu {

// A launch configuration: one of our kernels' (its pdl flag included), or none (library kernels).
using CaseConfig = std::variant<std::monostate, SpmvLaunch, GemvLaunch>;
// The configuration with its programmatic-dependent-launch flag set to `pdl` (no-op for none).
CaseConfig withPdl(CaseConfig c, bool pdl);

// The weights of one problem: shape, dtype and, for the sparse kernels, the N:M pattern.
struct CaseProblem {
  std::int64_t rows = 0, cols = 0;
  sparse::DType dtype = sparse::DType::BF16;
  sparse::Pattern pattern{2, 4};
  std::uint64_t seed = 1;  // first seed of the random fills
};

// The device inputs of one case for one problem: `copies` weight copies that launches
// rotate through (together several times the L2, so weights stream from HBM), x and y
// of the current batch, and the split-K scratch.
struct CaseInputs {
  CaseProblem problem;
  int batch = 0;
  std::vector<at::Tensor> w;      // per copy: dense [rows, cols]; sparse values [tiles * G * 32 * 16]
                                  // (device layout, gpu/kernels/spmv.cuh); cuSPARSELt: compressed 2:4
  std::vector<at::Tensor> masks;  // sparse, per copy: [tiles * G * 32] int32
  at::Tensor x;   // dense and cuBLAS: [batch, cols]; sparse: [cols, spmvXStride(batch)]; cuSPARSELt: [cols, n]
  at::Tensor xr;  // sparse, batch > 1: the same x as [batch, cols] (what the tensor-core path reads)
  at::Tensor y;   // [batch, rows], unit column stride, any row stride (the launch's ldy); may be replaced
                  // by a view of the same shape (the test's guarded buffer). cuSPARSELt allocates its own.
  at::Tensor ws, counters;  // split-K workspace and counters (reserve)
  int n = 0;                // cuSPARSELt: width of the dense operand (the batch, or 16 where refused)
  std::uint64_t seed = 1;   // next seed of the random fills
  int copies() const { return static_cast<int>(w.size()); }
};

// What a checked case computes, in float64 on the host: y = x w^T.
struct CaseReference {
  at::Tensor w;  // [rows, cols]
  at::Tensor x;  // [batch, cols]
};

// The launch space of one of our kernels (gpu/kernels/launch_space.h).
struct LaunchSpace {
  // What tuning sweeps at (cols, batch) on the current device (the probe's space).
  std::vector<CaseConfig> (*tuning)(std::int64_t cols, int batch);
  // Every valid configuration at this batch with the given split-K (the sparse kernel's cluster
  // requests where they apply), each plain and as a programmatic dependent launch: what the
  // device test checks.
  std::vector<CaseConfig> (*valid)(std::int64_t cols, int batch, int splitK);
  // The tuning table's configuration (chained: the one for chained launches, pdl set).
  CaseConfig (*lookup)(const TuningTable& t, std::int64_t rows, std::int64_t cols, int batch, const std::string& dtype,
                       int smCount, bool chained);
  // Writes a tuned configuration into `e`; `chained` may be null (not tuned).
  void (*store)(TuningEntry& e, const CaseConfig& best, double us, const CaseConfig* chained, double chainedUs);
};

struct KernelCase {
  KernelId id;
  const char* pattern;  // the rows' pattern: "-" (dense kernels), "2:4" (cuSPARSELt); nullptr: each N:M
                        // pattern of the run, with weights of that pattern
  bool layer;           // also timed as a model's whole layer (its projections back to back)
  bool chained;         // ours: also timed as programmatic dependent launches
  // The bytes one call must read (the weights): the benchmark row's `bytes`.
  double (*bytes)(const BenchShape& s, int batch);
  // The bytes of one weight copy as filled on the device: sets how many copies rotate.
  double (*copyBytes)(const BenchShape& s);
  // prepare, in two steps so the weights are built once for all batches: `copies` random
  // weight copies on the current CUDA device, then x and y of a batch (1..8).
  CaseInputs (*prepare)(const CaseProblem& p, int copies);
  void (*setBatch)(CaseInputs& in, int batch);
  // Sizes ws and counters for every configuration given (freshly zeroed counters). Null: none needed.
  void (*reserve)(CaseInputs& in, std::initializer_list<CaseConfig> cfgs);
  // One launch on the current CUDA stream reading weight copy `copy` (0 <= copy < copies()), writing
  // y: nullptr, or why the launch was refused (nothing enqueued). Library errors throw.
  const char* (*launch)(CaseInputs& in, int copy, const CaseConfig& cfg);
  // The row's `config` text.
  std::string (*describe)(const CaseInputs& in, const CaseConfig& cfg);
  const LaunchSpace* space;  // null: a library kernel, launched as LibTorch launches it
  // The float64 problem of weight copy `copy` and the current x; null: not checkable (cuSPARSELt).
  CaseReference (*reference)(const CaseInputs& in, int copy);
};

// The table, in the benchmark's row order (cuSPARSELt, cuBLAS, our dense GEMV, sparse);
// empty where this build has no CUDA kernels.
std::span<const KernelCase> kernelCases();
const KernelCase* kernelCase(KernelId id);  // null where not in the table

// spMspV, batch 1 (gpu/kernels/spmspv.cuh): not a row of the table above, since its rows
// also vary the activation sparsity. The packed weights on the host, `copies` device copies
// of them that launches rotate through, x and y [cols], [rows] of the weights' dtype, the
// split-K scratch, and the threshold of the current x.
struct SpmspvCase {
  SpmspvMatrix host;
  std::vector<at::Tensor> chunks, offsets;  // per copy: the chunk buffer (int16), offsets (int32)
  at::Tensor x, y, ws, counters;
  std::vector<std::uint16_t> xHost;  // x as uploaded (ties at the threshold nudged)
  float threshold = -1;
  double bytes = 0;  // bytes one call must read at this threshold (spmspvReadBytes)
  // The column layouts' launches with programmatic dependent launch (SpmspvConfig::pdl; the
  // benchmark's are plain whatever SDW_SPMSPV_PDL says).
  bool pdl = false;
  int copies() const { return static_cast<int>(chunks.size()); }
};
// `copies` (at least 1) device copies of the packed weights (packSpmspv). Throws
// std::runtime_error where this build has no CUDA kernels.
SpmspvCase prepareSpmspvCase(SpmspvMatrix packed, int copies);
// Sets x ([cols] 16-bit bits) and the threshold at which exactly a fraction p of it is
// skipped (activationThreshold), uploads it and sizes the scratch for (warps, splitK).
void setSpmspvActivation(SpmspvCase& c, std::vector<std::uint16_t> x, double p, int warps, int splitK);
// One launch on the current CUDA stream reading copy `copy`, writing c.y: nullptr, or why
// the launch was refused. warps, splitK, stages, bulk: kernels::SpmspvConfig (splitK 0: heuristic;
// the kernel is the one of c.host.format, whose meaning of stages the config states).
// cluster: SpmspvConfig::cluster (the column layouts); lanes: SpmspvConfig::lanes (16: the
// half-warp walk of column 2:4 and 4:8).
const char* launchSpmspvCase(SpmspvCase& c, int copy, int warps, int splitK, int stages = 2, bool bulk = false,
                             int cluster = 0, int lanes = 32);
std::string describeSpmspv(const SpmspvCase& c, int warps, int splitK, int stages = 2, bool bulk = false,
                           int cluster = 0, int lanes = 32);  // "w8 s16 g2", "w8 s16 g2 bulk", "col2:4 w8 s1 d2",
                                                              // "col4:8 w8 s8 d2 cluster" (the slices reduced in a
                                                              // cluster), "col2:4 w8 s20 d4 workspace h16"
// The split-K count a launch of (warps, splitK) uses on c (splitK 0: the heuristic's).
int spmspvSplitKOf(const SpmspvCase& c, int warps, int splitK);
// The split-K whose grid fits one wave of the device (kernels::spmspvOneWaveSplitK).
int spmspvOneWaveSplitKOf(const SpmspvCase& c, int warps, int stages, bool bulk, int lanes = 32);
// Grows c's split-K scratch to what (warps, splitK, stages) needs (after setSpmspvActivation).
void reserveSpmspv(SpmspvCase& c, int warps, int splitK, int stages);

// The dense [rows, cols] float64 matrix (host) held in the kernels' device layout:
// values [tiles][G][32][16] 16-bit floats (any 16-bit tensor type), masks [tiles][G][32]
// int32; value i of a word belongs to its i-th lowest set bit. Padding rows are dropped.
at::Tensor denseFromDeviceLayout(const at::Tensor& values, const at::Tensor& masks, std::int64_t rows,
                                 std::int64_t cols, sparse::DType dtype);

}  // namespace sdw::gpu
