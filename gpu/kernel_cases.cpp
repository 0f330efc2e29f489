// The GPU kernel cases (gpu/kernel_cases.h): the table, each case's inputs,
// launch and launch space. Everything that launches is CUDA-only (SDW_TORCH_CUDA);
// the device-layout decoder used for the references is plain LibTorch.

#include "gpu/kernel_cases.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <bit>
#include <stdexcept>

#ifdef SDW_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include "gpu/kernels/benchfill.cuh"
#include "gpu/kernels/gemv.cuh"
#include "gpu/kernels/launch_space.h"
#include "gpu/kernels/spmspv.cuh"
#include "gpu/kernels/spmv.cuh"
#endif

namespace sdw::gpu {

namespace {
// How a column-layout launch reduces its split-K slices: " cluster", " workspace" (the cluster
// requested or not), or "" (one slice).
std::string spmspvReduceTag(const SpmspvCase& c, int warps, int splitK, int stages, int cluster, int lanes);
}  // namespace

std::string describeSpmspv(const SpmspvCase& c, int warps, int splitK, int stages, bool bulk, int cluster, int lanes) {
  const std::string ws = "w" + std::to_string(warps) + " s" + std::to_string(spmspvSplitKOf(c, warps, splitK));
  if (kernels::spmspvColumnFormat(c.host.format))
    return std::string(c.host.format == kernels::SpmspvFormat::Column48      ? "col4:8 "
                       : c.host.format == kernels::SpmspvFormat::ColumnDense ? "dense "
                                                                             : "col2:4 ") +
           ws + " d" + std::to_string(stages) + spmspvReduceTag(c, warps, splitK, stages, cluster, lanes) +
           (lanes == 16 ? " h16" : "");
  return ws + " g" + std::to_string(stages) + (bulk ? " bulk" : "");
}

CaseConfig withPdl(CaseConfig c, bool pdl) {
  if (auto* s = std::get_if<SpmvLaunch>(&c)) s->pdl = pdl;
  if (auto* g = std::get_if<GemvLaunch>(&c)) g->pdl = pdl;
  return c;
}

at::Tensor denseFromDeviceLayout(const at::Tensor& values, const at::Tensor& masks, std::int64_t rows,
                                 std::int64_t cols, sparse::DType dtype) {
  const std::int64_t G = cols / 32, tiles = (rows + 31) / 32;
  TORCH_CHECK(rows > 0 && cols > 0 && cols % 32 == 0, "bad shape ", rows, "x", cols);
  TORCH_CHECK(values.numel() == tiles * G * 32 * 16 && values.element_size() == 2, "values: ", tiles * G * 32 * 16,
              " 16-bit elements expected, got ", values.numel());
  TORCH_CHECK(masks.numel() == tiles * G * 32 && masks.scalar_type() == at::kInt, "masks: ", tiles * G * 32,
              " int32 expected, got ", masks.numel());
  const auto v =
      values.cpu().contiguous().view(dtype == sparse::DType::BF16 ? at::kBFloat16 : at::kHalf).to(at::kDouble);
  const auto m = masks.cpu().contiguous();
  auto out = at::zeros({rows, cols}, at::kDouble);
  const double* pv = v.data_ptr<double>();
  const std::int32_t* pm = m.data_ptr<std::int32_t>();
  double* po = out.data_ptr<double>();
  for (std::int64_t t = 0; t < tiles; ++t)
    for (std::int64_t g = 0; g < G; ++g)
      for (std::int64_t l = 0; l < 32; ++l) {
        const std::int64_t r = 32 * t + l, k = (t * G + g) * 32 + l;
        if (r >= rows) continue;  // padding rows are never written out
        auto word = static_cast<std::uint32_t>(pm[k]);
        for (int i = 0; word != 0 && i < 16; ++i, word &= word - 1)
          po[r * cols + 32 * g + std::countr_zero(word)] = pv[k * 16 + i];
      }
  return out;
}

#ifdef SDW_TORCH_CUDA
namespace {

// ---- shared helpers ----

kernels::DType kernelDType(sparse::DType d) {
  return d == sparse::DType::BF16 ? kernels::DType::BF16 : kernels::DType::F16;
}
at::TensorOptions options(const CaseProblem& p) {
  return at::TensorOptions().device(at::kCUDA).dtype(p.dtype == sparse::DType::BF16 ? at::kBFloat16 : at::kHalf);
}
cudaStream_t stream() { return c10::cuda::getCurrentCUDAStream().stream(); }
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
const char* status(cudaError_t e) { return e == cudaSuccess ? nullptr : cudaGetErrorString(e); }
void fill16(CaseInputs& in, const at::Tensor& t) {
  check(kernels::launchFillRandom16(t.data_ptr(), static_cast<std::size_t>(t.numel()), kernelDType(in.problem.dtype),
                                    in.seed++, stream()),
        "fill");
}
template <typename Cfg>
std::vector<CaseConfig> plainAndChained(const std::vector<Cfg>& cs) {
  std::vector<CaseConfig> out;
  for (const auto& c : cs)
    for (bool pdl : {false, true}) out.push_back(withPdl(kernels::toLaunch(c), pdl));
  return out;
}

double denseBytes(const BenchShape& s) { return double(s.rows) * s.cols * 2; }
double sparseBytes(const BenchShape& s) { return double(s.rows) * s.cols * 1.125; }

// ---- dense weights: cuBLAS and our dense GEMV ----

// w: copies of [rows, cols], uniform in [-1, 1).
CaseInputs prepareDense(const CaseProblem& p, int copies) {
  CaseInputs in;
  in.problem = p;
  in.seed = p.seed;
  for (int i = 0; i < copies; ++i) {
    in.w.push_back(at::empty({p.rows, p.cols}, options(p)));
    fill16(in, in.w.back());
  }
  return in;
}
// x: [batch, cols]; y: [batch, rows].
void setBatchDense(CaseInputs& in, int batch) {
  in.batch = batch;
  in.x = at::empty({batch, in.problem.cols}, options(in.problem));
  fill16(in, in.x);
  in.y = at::empty({batch, in.problem.rows}, options(in.problem));
}
CaseReference referenceDense(const CaseInputs& in, int copy) {
  return {in.w[static_cast<std::size_t>(copy)].cpu().to(at::kDouble), in.x.cpu().to(at::kDouble)};
}

const char* launchCublas(CaseInputs& in, int copy, const CaseConfig&) {
  const auto& w = in.w[static_cast<std::size_t>(copy)];
  if (in.batch == 1) {
    at::Tensor y1 = in.y.view({in.problem.rows});
    at::mv_out(y1, w, in.x.view({-1}));
  } else {
    at::mm_out(in.y, in.x, w.t());
  }
  return nullptr;
}
std::string describeCublas(const CaseInputs& in, const CaseConfig&) { return in.batch == 1 ? "at::mv" : "at::mm"; }

void reserveGemv(CaseInputs& in, std::initializer_list<CaseConfig> cfgs) {
  std::size_t floats = 1;
  std::int64_t counters = 1;
  for (const auto& c : cfgs) {
    const kernels::GemvConfig kc = kernels::toConfig(std::get<GemvLaunch>(c), false);
    floats = std::max(floats, kernels::gemvWorkspaceFloats(in.problem.rows, in.batch, kc));
    counters = std::max(counters, kernels::gemvCounters(in.problem.rows, kc));
  }
  in.ws = at::empty({static_cast<std::int64_t>(floats)}, options(in.problem).dtype(at::kFloat));
  in.counters = at::zeros({counters}, options(in.problem).dtype(at::kInt));
}
const char* launchGemv(CaseInputs& in, int copy, const CaseConfig& cfg) {
  const auto& c = std::get<GemvLaunch>(cfg);
  return status(kernels::launchDenseGemv(in.w[static_cast<std::size_t>(copy)].data_ptr(), kernelDType(in.problem.dtype),
                                         in.problem.rows, in.problem.cols, in.x.data_ptr(), in.batch, in.y.data_ptr(),
                                         in.y.stride(0), kernels::toConfig(c, c.pdl), in.ws.data_ptr<float>(),
                                         reinterpret_cast<unsigned*>(in.counters.data_ptr()), stream()));
}
std::string describeGemv(const CaseInputs&, const CaseConfig& cfg) {
  const auto& c = std::get<GemvLaunch>(cfg);
  return "w" + std::to_string(c.warps) + " r" + std::to_string(c.rowsPerWarp) + " u" + std::to_string(c.unroll) + " s" +
         std::to_string(c.splitK);
}
std::vector<CaseConfig> gemvTuning(std::int64_t, int batch) {
  std::vector<CaseConfig> out;
  for (const kernels::GemvConfig& kc : kernels::gemvTuningSpace(batch)) out.push_back(kernels::toLaunch(kc));
  return out;
}
// The tuning space, and each (warps, rows, unroll) of it again with the given split-K
// where the space has no such split.
std::vector<CaseConfig> gemvValid(std::int64_t, int batch, int splitK) {
  std::vector<kernels::GemvConfig> cs;
  const bool newSplit = splitK != 1 && splitK != 2 && splitK != 4 && splitK != 8;
  for (const kernels::GemvConfig& kc : kernels::gemvTuningSpace(batch)) {
    cs.push_back(kc);
    if (newSplit && kc.splitK == 1) cs.push_back({kc.warps, kc.rowsPerWarp, kc.unroll, splitK});
  }
  return plainAndChained(cs);
}
CaseConfig gemvLookup(const TuningTable& t, std::int64_t rows, std::int64_t cols, int batch, const std::string& dtype,
                      int smCount, bool chained) {
  return t.dense(rows, cols, batch, dtype, smCount, chained);
}
void gemvStore(TuningEntry& e, const CaseConfig& best, double us, const CaseConfig* chained, double chainedUs) {
  e.dense = std::get<GemvLaunch>(best), e.denseUs = us;
  if (chained) e.denseChained = std::get<GemvLaunch>(*chained), e.denseChainedUs = chainedUs;
}

// ---- bitmask N:M: our sparse kernel ----

// w: copies of the values, masks: of random N:M masks (device layout, padding rows included).
CaseInputs prepareSparse(const CaseProblem& p, int copies) {
  CaseInputs in;
  in.problem = p;
  in.seed = p.seed;
  const std::int64_t words = kernels::spmvTiles(p.rows) * (p.cols / 32) * 32;
  for (int i = 0; i < copies; ++i) {
    in.w.push_back(at::empty({words * 16}, options(p)));
    in.masks.push_back(at::empty({words}, options(p).dtype(at::kInt)));
    fill16(in, in.w.back());
    check(
        kernels::launchFillRandomMasks(reinterpret_cast<std::uint32_t*>(in.masks.back().data_ptr()),
                                       static_cast<std::size_t>(words), p.pattern.n, p.pattern.m, in.seed++, stream()),
        "fill");
  }
  return in;
}
// x: [cols, xStride] (the batch interleaved per column), and at batch > 1 xr: the same as
// [batch, cols] for the tensor-core path; y: [batch, rows].
void setBatchSparse(CaseInputs& in, int batch) {
  in.batch = batch;
  in.x = at::empty({in.problem.cols, kernels::spmvXStride(batch)}, options(in.problem));
  fill16(in, in.x);
  in.xr = batch > 1 ? in.x.narrow(1, 0, batch).t().contiguous() : at::Tensor();
  in.y = at::empty({batch, in.problem.rows}, options(in.problem));
}
CaseReference referenceSparse(const CaseInputs& in, int copy) {
  const auto i = static_cast<std::size_t>(copy);
  return {denseFromDeviceLayout(in.w[i], in.masks[i], in.problem.rows, in.problem.cols, in.problem.dtype),
          in.x.cpu().to(at::kDouble).narrow(1, 0, in.batch).t().contiguous()};
}
void reserveSpmv(CaseInputs& in, std::initializer_list<CaseConfig> cfgs) {
  std::size_t floats = 1;
  for (const auto& c : cfgs)
    floats = std::max(floats, kernels::spmvWorkspaceFloats(in.problem.rows, in.problem.cols, in.batch,
                                                           kernels::toConfig(std::get<SpmvLaunch>(c), false)));
  in.ws = at::empty({static_cast<std::int64_t>(floats)}, options(in.problem).dtype(at::kFloat));
  in.counters = at::zeros({kernels::spmvTiles(in.problem.rows)}, options(in.problem).dtype(at::kInt));
}
// On the tensor cores x is read as [batch, cols] (xr), as the decode engine passes it.
const char* launchSpmv(CaseInputs& in, int copy, const CaseConfig& cfg) {
  const auto& c = std::get<SpmvLaunch>(cfg);
  const auto i = static_cast<std::size_t>(copy);
  kernels::SpmvConfig kc = kernels::toConfig(c, c.pdl);
  kc.xRowMajor = in.batch > 1 && kernels::spmvTensorCores(kc);
  kc.tcM = in.problem.pattern.m;  // on the tensor cores: 8:16's longer expansion
  return status(kernels::launchBitmaskSpmv(
      in.w[i].data_ptr(), reinterpret_cast<const std::uint32_t*>(in.masks[i].data_ptr()), kernelDType(in.problem.dtype),
      in.problem.rows, in.problem.cols, (kc.xRowMajor ? in.xr : in.x).data_ptr(), in.batch, in.y.data_ptr(),
      in.y.stride(0), kc, in.ws.data_ptr<float>(), reinterpret_cast<unsigned*>(in.counters.data_ptr()), stream()));
}
std::string describeSpmv(const CaseInputs&, const CaseConfig& cfg) {
  const auto& c = std::get<SpmvLaunch>(cfg);
  return "w" + std::to_string(c.warps) + " u" + std::to_string(c.unroll) + " s" + std::to_string(c.splitK) +
         (c.cluster >= 0 ? " c" + std::to_string(c.cluster) : "");
}
std::vector<CaseConfig> spmvTuning(std::int64_t cols, int batch) {
  std::vector<CaseConfig> out;
  for (const kernels::SpmvConfig& kc : kernels::spmvTuningSpace(cols, batch)) out.push_back(kernels::toLaunch(kc));
  return out;
}
// Every (warps, unroll) valid at this batch with the given split-K; at batch 1 (and batch 2's
// shuffle path) with split-K the cluster path also requested on (1) and off (0) besides auto (-1).
std::vector<CaseConfig> spmvValid(std::int64_t, int batch, int splitK) {
  std::vector<kernels::SpmvConfig> cs;
  for (int w : kernels::kSpmvWarps)
    for (int u : kernels::kSpmvUnrolls)
      for (int cluster : {-1, 0, 1}) {
        const kernels::SpmvConfig c{w, u, splitK, cluster};
        if (!kernels::spmvValid(c, batch)) continue;
        if (cluster != -1 && ((batch != 1 && !kernels::spmvXShuffle(c, batch)) || splitK == 1)) continue;
        cs.push_back(c);
      }
  return plainAndChained(cs);
}
CaseConfig spmvLookup(const TuningTable& t, std::int64_t rows, std::int64_t cols, int batch, const std::string& dtype,
                      int smCount, bool chained) {
  return t.sparse(rows, cols, batch, dtype, smCount, chained);
}
void spmvStore(TuningEntry& e, const CaseConfig& best, double us, const CaseConfig* chained, double chainedUs) {
  e.sparse = std::get<SpmvLaunch>(best), e.sparseUs = us;
  if (chained) e.sparseChained = std::get<SpmvLaunch>(*chained), e.sparseChainedUs = chainedUs;
}

// ---- cuSPARSELt 2:4 through LibTorch ----

// w: copies of dense fills with a 2:4 mask imposed, compressed.
CaseInputs prepareCusparselt(const CaseProblem& p, int copies) {
  CaseInputs in = prepareDense(p, copies);
  const at::Tensor mask = at::tensor({1.0, 1.0, 0.0, 0.0}, at::kFloat).to(options(p)).repeat({p.rows, p.cols / 4});
  for (auto& w : in.w) w = at::_cslt_compress(w * mask);
  return in;
}
// x: [cols, n] with n the batch, or 16 where the library refuses narrow dense operands (zero padded).
void setBatchCusparselt(CaseInputs& in, int batch) {
  const auto opts = options(in.problem);
  in.batch = batch;
  in.x = at::randn({in.problem.cols, batch}, opts);
  in.n = batch;
  try {
    (void)at::_cslt_sparse_mm(in.w.front(), in.x);
    check(cudaStreamSynchronize(stream()), "cusparselt");
  } catch (const std::exception&) {
    in.n = 16;
    in.x = at::cat({in.x, at::zeros({in.problem.cols, 16 - batch}, opts)}, 1);
  }
}
const char* launchCusparselt(CaseInputs& in, int copy, const CaseConfig&) {
  (void)at::_cslt_sparse_mm(in.w[static_cast<std::size_t>(copy)], in.x);
  return nullptr;
}
std::string describeCusparselt(const CaseInputs& in, const CaseConfig&) { return "N=" + std::to_string(in.n); }

// ---- the table ----

const LaunchSpace kGemvSpace{gemvTuning, gemvValid, gemvLookup, gemvStore};
const LaunchSpace kSpmvSpace{spmvTuning, spmvValid, spmvLookup, spmvStore};

const KernelCase kCases[] = {
    {KernelId::Cusparselt, "2:4", false, false, [](const BenchShape& s, int) { return sparseBytes(s); }, denseBytes,
     prepareCusparselt, setBatchCusparselt, nullptr, launchCusparselt, describeCusparselt, nullptr, nullptr},
    {KernelId::Cublas, "-", true, false, [](const BenchShape& s, int) { return denseBytes(s); }, denseBytes,
     prepareDense, setBatchDense, nullptr, launchCublas, describeCublas, nullptr, referenceDense},
    {KernelId::Dense, "-", true, true, [](const BenchShape& s, int) { return denseBytes(s); }, denseBytes, prepareDense,
     setBatchDense, reserveGemv, launchGemv, describeGemv, &kGemvSpace, referenceDense},
    {KernelId::Sparse, nullptr, true, true, [](const BenchShape& s, int) { return sparseBytes(s); }, sparseBytes,
     prepareSparse, setBatchSparse, reserveSpmv, launchSpmv, describeSpmv, &kSpmvSpace, referenceSparse},
};

}  // namespace

std::span<const KernelCase> kernelCases() { return kCases; }

// ---- spMspV ----

SpmspvCase prepareSpmspvCase(SpmspvMatrix packed, int copies) {
  SpmspvCase c;
  c.host = std::move(packed);
  auto& chunks = c.host.chunks;
  auto& offs = c.host.offsets;
  const auto cpuChunks = at::from_blob(chunks.data(), {static_cast<std::int64_t>(chunks.size())}, at::kShort);
  // Column 2:4 has no offsets: an empty tensor (not a blob of a null pointer).
  const auto cpuOffsets = offs.empty() ? at::empty({0}, at::kInt)
                                       : at::from_blob(offs.data(), {static_cast<std::int64_t>(offs.size())}, at::kInt);
  for (int i = 0; i < std::max(1, copies); ++i) {
    c.chunks.push_back(cpuChunks.to(at::kCUDA));
    c.offsets.push_back(cpuOffsets.to(at::kCUDA));
  }
  const CaseProblem p{c.host.rows, c.host.cols, c.host.dtype, {2, 4}, 1};
  c.y = at::empty({c.host.rows}, options(p));
  return c;
}

void setSpmspvActivation(SpmspvCase& c, std::vector<std::uint16_t> x, double p, int warps, int splitK) {
  const CaseProblem prob{c.host.rows, c.host.cols, c.host.dtype, {2, 4}, 1};
  if (static_cast<std::int64_t>(x.size()) != c.host.cols) throw std::invalid_argument("spMspV: x of the wrong size");
  c.threshold = activationThreshold(x, c.host.dtype, p);
  c.xHost = std::move(x);
  std::vector<float> xf(c.xHost.size());
  for (std::size_t i = 0; i < xf.size(); ++i) xf[i] = sparse::from16(c.xHost[i], c.host.dtype);
  c.bytes = spmspvReadBytes(c.host, xf, c.threshold);
  c.x = at::from_blob(c.xHost.data(), {c.host.cols}, at::kShort)
            .to(at::kCUDA)
            .view(c.host.dtype == sparse::DType::BF16 ? at::kBFloat16 : at::kHalf);
  c.ws = at::empty({1}, options(prob).dtype(at::kFloat));
  reserveSpmspv(c, warps, splitK, kernels::SpmspvConfig{}.stages);  // stages do not change the scratch
  c.counters = at::zeros({kernels::spmspvCounters(c.host.rows)}, options(prob).dtype(at::kInt));
}

namespace {
// The layout's run defaults (kernels::spmspvRunDefaults: the split-K heuristic's aim and the
// environment's A/B switches among them) with
// the launch's own fields.
kernels::SpmspvConfig caseConfig(const SpmspvCase& c, int warps, int splitK, int stages, bool bulk = false,
                                 int cluster = 0, int lanes = 32) {
  kernels::SpmspvConfig cfg = kernels::spmspvRunDefaults(c.host.format);  // its blocksPerSm and waveFit
  cfg.warps = warps, cfg.splitK = splitK, cfg.stages = stages, cfg.bulk = bulk, cfg.cluster = cluster;
  cfg.lanes = lanes;
  cfg.pdl = c.pdl;
  return cfg;
}

std::string spmspvReduceTag(const SpmspvCase& c, int warps, int splitK, int stages, int cluster, int lanes) {
  const kernels::SpmspvConfig cfg = caseConfig(c, warps, splitK, stages, false, cluster, lanes);
  if (kernels::spmspvColumnCluster(c.host.rows, c.host.cols, cfg)) return " cluster";
  return kernels::spmspvWorkspaceFloats(c.host.rows, c.host.cols, cfg) > 0 ? " workspace" : "";
}
}  // namespace

const char* launchSpmspvCase(SpmspvCase& c, int copy, int warps, int splitK, int stages, bool bulk, int cluster,
                             int lanes) {
  const auto i = static_cast<std::size_t>(copy);
  const kernels::SpmspvLayout w{
      c.chunks[i].data_ptr(),
      c.offsets[i].numel() ? reinterpret_cast<const std::uint32_t*>(c.offsets[i].data_ptr()) : nullptr,
      c.host.rows,
      c.host.cols,
      kernelDType(c.host.dtype),
      c.host.format};
  const kernels::SpmspvConfig cfg = caseConfig(c, warps, splitK, stages, bulk, cluster, lanes);
  if (static_cast<std::size_t>(c.ws.numel()) < kernels::spmspvWorkspaceFloats(c.host.rows, c.host.cols, cfg))
    return "spMspV: the workspace was sized for fewer split-K slices (setSpmspvActivation)";
  return status(kernels::launchSpmspv(w, c.x.data_ptr(), c.threshold, c.y.data_ptr(), cfg, c.ws.data_ptr<float>(),
                                      reinterpret_cast<unsigned*>(c.counters.data_ptr()), stream()));
}

int spmspvSplitKOf(const SpmspvCase& c, int warps, int splitK) {
  return kernels::spmspvSplitK(c.host.rows, c.host.cols, caseConfig(c, warps, splitK, kernels::SpmspvConfig{}.stages));
}

int spmspvOneWaveSplitKOf(const SpmspvCase& c, int warps, int stages, bool bulk, int lanes) {
  return kernels::spmspvOneWaveSplitK(c.host.rows, c.host.cols, kernelDType(c.host.dtype),
                                      caseConfig(c, warps, 0, stages, bulk, 0, lanes), c.host.format);
}

void reserveSpmspv(SpmspvCase& c, int warps, int splitK, int stages) {
  const auto floats = kernels::spmspvWorkspaceFloats(c.host.rows, c.host.cols, caseConfig(c, warps, splitK, stages));
  if (floats > static_cast<std::size_t>(c.ws.numel()))
    c.ws = at::empty({static_cast<std::int64_t>(floats)}, c.ws.options());
}
#else
std::span<const KernelCase> kernelCases() { return {}; }

SpmspvCase prepareSpmspvCase(SpmspvMatrix, int) {
  throw std::runtime_error("the spMspV kernel needs a CUDA device and a build with the CUDA kernels (SDW_CUDA)");
}
void setSpmspvActivation(SpmspvCase&, std::vector<std::uint16_t>, double, int, int) {
  throw std::runtime_error("the spMspV kernel needs a CUDA device and a build with the CUDA kernels (SDW_CUDA)");
}
const char* launchSpmspvCase(SpmspvCase&, int, int, int, int, bool, int, int) {
  return "no CUDA kernels in this build";
}
int spmspvSplitKOf(const SpmspvCase&, int, int splitK) { return splitK; }
namespace {
std::string spmspvReduceTag(const SpmspvCase&, int, int, int, int cluster, int) {
  return cluster != 0 ? " cluster" : "";
}
}  // namespace
int spmspvOneWaveSplitKOf(const SpmspvCase&, int, int, bool, int) { return 0; }
void reserveSpmspv(SpmspvCase&, int, int, int) {
  throw std::runtime_error("the spMspV kernel needs a CUDA device and a build with the CUDA kernels (SDW_CUDA)");
}
#endif

const KernelCase* kernelCase(KernelId id) {
  for (const auto& c : kernelCases())
    if (c.id == id) return &c;
  return nullptr;
}

}  // namespace sdw::gpu
