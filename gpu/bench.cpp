// The kernel benchmark runner (gpu/bench.h). GPU path: every kernel is timed
// with CUDA events around replays of a CUDA graph that holds many launches, the
// launches cycling through weight copies that together exceed the L2 several
// times, so weights stream from HBM; the median over repeats is kept. The GPU
// kernels, their inputs, launches and launch spaces are the cases of
// gpu/kernel_cases.h, which the device test checks too. CPU path: the same loops
// over the CPU kernels with a steady clock.

#include "gpu/bench.h"

#include "core/json_limits.h"
#include "core/sparse_format.h"
#include "core/stats.h"
#include "gpu/device.h"
#include "gpu/kernel_cases.h"
#include "gpu/spmspv_pack.h"
#include "gpu/spmv.h"
#include "gpu/spmv_cpu.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#ifdef SDW_TORCH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include "gpu/kernels/benchfill.cuh"
#include "gpu/kernels/hbm.cuh"
#include "gpu/kernels/launch_space.h"  // toConfig, toLaunch
#include "gpu/kernels/spmspv.cuh"      // SpmspvConfig
#include "gpu/kernels/spmv.cuh"        // pdlSupported, spmvOnTensorCores
#endif

namespace sdw::gpu {

// ---- shapes ---------------------------------------------------------------------

namespace {
struct ModelDims {
  const char* name;
  std::int64_t hidden, intermediate, heads, kvHeads, headDim;
};
// Public configs: Llama-3.1-8B, Qwen3-14B, Qwen3-32B (resources/shapes/*.json).
constexpr ModelDims kModels[] = {{"llama3-8b", 4096, 14336, 32, 8, 128},
                                 {"qwen3-14b", 5120, 17408, 40, 8, 128},
                                 {"qwen3-32b", 5120, 25600, 64, 8, 128}};
}  // namespace

std::vector<std::string> knownModels() {
  std::vector<std::string> v;
  for (const auto& m : kModels) v.emplace_back(m.name);
  return v;
}

std::vector<BenchShape> modelShapes(const std::string& model) {
  for (const auto& m : kModels) {
    const std::int64_t q = m.heads * m.headDim, kv = m.kvHeads * m.headDim;
    if (model == std::string(m.name) + kEngineSuffix)
      return {{model, "qkv_proj", q + 2 * kv, m.hidden},
              {model, "o_proj", m.hidden, q},
              {model, "gate_up_proj", 2 * m.intermediate, m.hidden},
              {model, "down_proj", m.hidden, m.intermediate}};
    if (model != m.name) continue;
    return {{model, "q_proj", q, m.hidden},
            {model, "k_proj", kv, m.hidden},
            {model, "v_proj", kv, m.hidden},
            {model, "o_proj", m.hidden, q},
            {model, "gate_proj", m.intermediate, m.hidden},
            {model, "up_proj", m.intermediate, m.hidden},
            {model, "down_proj", m.hidden, m.intermediate}};
  }
  throw std::invalid_argument("unknown model '" + model +
                              "' (have: llama3-8b, qwen3-14b, qwen3-32b, each also as NAME:engine, or ROWSxCOLS)");
}

std::vector<BenchShape> parseShapes(const std::string& spec) {
  std::vector<BenchShape> out;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const auto x = item.find('x');
    if (x != std::string::npos && std::isdigit(static_cast<unsigned char>(item[0]))) {
      BenchShape s{"custom", item, 0, 0};
      try {
        s.rows = std::stoll(item.substr(0, x));
        s.cols = std::stoll(item.substr(x + 1));
      } catch (const std::exception&) {
        throw std::invalid_argument("bad shape '" + item + "' (expected ROWSxCOLS)");
      }
      sparse::checkShape(s.rows, s.cols);
      out.push_back(s);
    } else {
      for (auto& s : modelShapes(item)) out.push_back(s);
    }
  }
  if (out.empty()) throw std::invalid_argument("no shapes given");
  return out;
}

namespace {
// The items of a comma-separated list, blanks around each trimmed, empty ones left out.
std::vector<std::string> trimmedItems(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto first = item.find_first_not_of(" \t");
    if (first != std::string::npos) out.push_back(item.substr(first, item.find_last_not_of(" \t") + 1 - first));
  }
  return out;
}
}  // namespace

std::vector<double> parseActivationSparsities(const std::string& list) {
  std::vector<double> out;
  for (const std::string& text : trimmedItems(list)) {
    std::size_t used = 0;
    double p = 0;
    try {
      p = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size()) throw std::invalid_argument("bad activation sparsity '" + text + "' (expected a number)");
    if (!(p >= 0 && p < 1)) throw std::invalid_argument("activation sparsity " + text + " is outside [0, 1)");
    out.push_back(p);
  }
  return out;
}

// ---- the runner -------------------------------------------------------------------

namespace {

struct Recorder {
  BenchResult& result;
  const std::function<void(const BenchRow&)>& onRow;
  const ProgressFn& progress;
  double done = 0, total = 0;
  BaselineTimes baselines;  // of the rows so far: a row's speed-ups are over baselines measured before it

  void add(BenchRow row) {
    row.gbs = row.bytes / (row.us * 1e-6) / 1e9;
    row.fractionHbm = result.hbmReadGBs > 0 ? row.gbs / result.hbmReadGBs : 0;
    baselines.add(row);
    row.speedupVsCublas = baselines.speedup(row, Baseline::Cublas);
    row.speedupVsDense = baselines.speedup(row, Baseline::OwnDense);
    result.rows.push_back(row);
    if (onRow) onRow(result.rows.back());
    step(row.model + " " + row.module + " b" + std::to_string(row.batch) + " " + row.kernel +
         (row.pattern != kDensePattern ? " " + row.pattern : ""));
  }
  void step(const std::string& stage) {
    done += 1;
    reportOrThrow(progress, Progress{done, std::max(total, done), "kernels", stage});
  }
};

[[maybe_unused]] std::vector<std::vector<BenchShape>> groupByModel(const std::vector<BenchShape>& shapes) {
  std::vector<std::vector<BenchShape>> groups;
  for (const auto& s : shapes) {
    if (groups.empty() || groups.back().front().model != s.model || s.model == "custom") groups.push_back({});
    groups.back().push_back(s);
  }
  return groups;
}

BenchRow makeRow(const std::string& model, const std::string& module, std::int64_t rows, std::int64_t cols,
                 const std::string& pattern, int batch, KernelId id) {
  return makeBenchRow(BenchShape{model, module, rows, cols}, pattern, batch, id);
}

double bytesDense(const BenchShape& s) { return double(s.rows) * s.cols * 2; }
double bytesSparse(const BenchShape& s) { return double(s.rows) * s.cols * 1.125; }

// spMspV rows, one per weight layout: 50% unstructured weights in the bitmask layout, 2
// of every 4 rows of each column in the column 2:4 layout and 4 of every 8 in the column
// 4:8 one (pattern column "50%", "col2:4", "col4:8"), which keep half the weights; and
// every weight in the column-major dense layout (pattern "dense": activation sparsity
// alone, as TEAL decodes).
struct SpmspvVariant {
  const char* pattern;
  kernels::SpmspvFormat format;
};
constexpr SpmspvVariant kSpmspvVariants[] = {{kSpmspvUnstructuredPattern, kernels::SpmspvFormat::Bitmask},
                                             {"col2:4", kernels::SpmspvFormat::Column24},
                                             {"col4:8", kernels::SpmspvFormat::Column48},
                                             {"dense", kernels::SpmspvFormat::ColumnDense}};
bool isColumnVariant(const SpmspvVariant& v) { return kernels::spmspvColumnFormat(v.format); }
// A column layout needs whole groups of rows; the note says where a shape has none.
bool spmspvFits(const SpmspvVariant& v, std::int64_t rows) {
  return !isColumnVariant(v) || rows % kernels::spmspvColumnGroup(v.format) == 0;
}
std::string spmspvSkipNote(const SpmspvVariant& v, const std::string& module) {
  return std::string("spMspV ") + v.pattern + " needs rows divisible by " +
         std::to_string(kernels::spmspvColumnGroup(v.format)) + ": not timed on " + module;
}
SpmspvMatrix spmspvWeights(const SpmspvVariant& v, std::int64_t rows, std::int64_t cols, sparse::DType dt,
                           std::uint64_t seed) {
  const int group = kernels::spmspvColumnGroup(v.format);
  if (v.format == kernels::SpmspvFormat::ColumnDense)
    return packSpmspv(randomPrunedWeights(rows, cols, dt, cols, cols, seed), rows, cols, dt, v.format);
  return packSpmspv(isColumnVariant(v) ? randomColumnPrunedWeights(rows, cols, dt, group / 2, group, seed)
                                       : randomPrunedWeights(rows, cols, dt, cols / 2, cols, seed),
                    rows, cols, dt, v.format);
}
// Whether the run times layout v (BenchSettings::spmspvLayouts; empty: every layout).
bool timesLayout(const BenchSettings& s, const SpmspvVariant& v) {
  return s.spmspvLayouts.empty() ||
         std::find(s.spmspvLayouts.begin(), s.spmspvLayouts.end(), v.pattern) != s.spmspvLayouts.end();
}
// spMspV rows are batch 1 only.
bool timesSpmspv(const BenchSettings& s) {
  return !s.activationSparsities.empty() && std::find(s.batches.begin(), s.batches.end(), 1) != s.batches.end();
}

// ---- CPU ----
template <typename Fn>
double timeCpu(int repeats, Fn fn) {
  fn();  // warm-up
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    const auto a = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count());
  }
  return stats::median(t, 0.0);
}

double cpuReadBandwidth(int threads) {
  const std::size_t n = std::size_t(64) << 20;  // 256 MiB of floats
  std::vector<float> buf(n, 1.0f);
  int nt = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<double> sums(static_cast<std::size_t>(nt));
  const double us = timeCpu(3, [&] {
    std::vector<std::thread> pool;
    for (int t = 0; t < nt; ++t)
      pool.emplace_back([&, t] {
        const std::size_t a = n * t / nt, b = n * (t + 1) / nt;
        float s[8] = {};
        for (std::size_t i = a; i + 8 <= b; i += 8)
          for (int k = 0; k < 8; ++k) s[k] += buf[i + k];
        sums[static_cast<std::size_t>(t)] = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
      });
    for (auto& th : pool) th.join();
  });
  return n * 4.0 / (us * 1e-6) / 1e9;
}

void runCpu(const BenchSettings& s, BenchResult& res, Recorder& rec) {
  res.backend = "cpu";
  res.device = "CPU (" + std::to_string(std::max(1u, std::thread::hardware_concurrency())) + " threads)";
  res.notes.push_back("no usable GPU (" + deviceInfo().reason +
                      "): the CPU kernels were benchmarked; bandwidth is the CPU's memory read bandwidth");
  res.cusparseltStatus = "unavailable: CPU run";
  res.hbmReadGBs = cpuReadBandwidth(s.cpuThreads);
  const auto dt = sparse::parseDType(s.dtype);
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> ud(-1.f, 1.f);
  for (const auto& sh : s.shapes) {
    std::vector<float> w(static_cast<std::size_t>(sh.rows * sh.cols));
    for (auto& v : w) v = ud(rng);
    std::vector<std::uint16_t> w16(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) w16[i] = sparse::floatTo16(w[i], dt);
    std::vector<sparse::PackedMatrix> packed;
    for (const auto& p : s.patterns) {
      auto wp = w;
      sparse::imposePattern(wp, sh.rows, sh.cols, sparse::parsePattern(p));
      packed.push_back(sparse::packDense(wp, sh.rows, sh.cols, sparse::parsePattern(p), dt));
    }
    for (int b : s.batches) {
      std::vector<float> x(static_cast<std::size_t>(b * sh.cols)), y(static_cast<std::size_t>(b * sh.rows));
      for (auto& v : x) v = ud(rng);
      if (s.ownDense) {
        BenchRow r = makeRow(sh.model, sh.module, sh.rows, sh.cols, kDensePattern, b, KernelId::DenseCpu);
        r.bytes = bytesDense(sh);
        r.us = timeCpu(s.repeats, [&] { gemvCpu(w16, dt, sh.rows, sh.cols, x, b, y, sh.rows, s.cpuThreads); });
        r.config = "threads " + std::to_string(s.cpuThreads);
        rec.add(r);
      }
      for (std::size_t pi = 0; pi < s.patterns.size(); ++pi) {
        BenchRow r = makeRow(sh.model, sh.module, sh.rows, sh.cols, s.patterns[pi], b, KernelId::SparseCpu);
        r.bytes = bytesSparse(sh);
        r.us = timeCpu(s.repeats, [&] { spmvCpu(packed[pi], x, b, y, sh.rows, s.cpuThreads); });
        r.config = "threads " + std::to_string(s.cpuThreads);
        rec.add(r);
      }
    }
    if (!timesSpmspv(s)) continue;
    // spMspV on the CPU (its reference, single-threaded), each weight layout.
    for (const SpmspvVariant& v : kSpmspvVariants) {
      if (!timesLayout(s, v)) continue;
      if (!spmspvFits(v, sh.rows)) {
        res.notes.push_back(spmspvSkipNote(v, sh.module));
        continue;
      }
      const SpmspvMatrix m = spmspvWeights(v, sh.rows, sh.cols, dt, 4321);
      std::vector<float> y(static_cast<std::size_t>(sh.rows));
      for (double p : s.activationSparsities) {
        auto x16 = randomNormal16(sh.cols, dt, 8765);
        const float threshold = activationThreshold(x16, dt, p);
        std::vector<float> x(x16.size());
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = sparse::from16(x16[i], dt);
        BenchRow r = makeRow(sh.model, sh.module, sh.rows, sh.cols, v.pattern, 1, KernelId::SpmspvCpu);
        r.activationSparsity = p;
        r.bytes = spmspvReadBytes(m, x, threshold);
        r.us = timeCpu(s.repeats, [&] { spmspvCpu(m, x, threshold, y); });
        r.config = "threshold " + std::to_string(threshold);
        rec.add(r);
      }
    }
  }
}

#ifdef SDW_TORCH_CUDA
// ---- GPU ----
void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// Whether one plain launch runs (launchOnce: true where the launch was accepted): a cluster
// shape the device cannot co-schedule fails at launch (nothing runs, the error is not
// sticky), and tuning skips it as the probe does.
template <typename Fn>
bool launchRuns(Fn launchOnce, cudaStream_t stream) {
  if (launchOnce() && cudaStreamSynchronize(stream) == cudaSuccess) return true;
  (void)cudaGetLastError();
  return false;
}

constexpr double kRotateBytes = 256.0 * 1024 * 1024;  // >= 5x the H200's L2
int copiesFor(double bytes) { return std::max(4, static_cast<int>(std::ceil(kRotateBytes / bytes))); }

// Median microseconds per call of fn(copy) over graph replays.
template <typename Fn>
double timeGraph(int copies, int repeats, Fn fn) {
  const int launches = std::max(2 * copies, 20);
  auto stream = c10::cuda::getCurrentCUDAStream();
  for (int i = 0; i < copies; ++i) fn(i);  // warm-up, handles, workspaces
  ck(cudaStreamSynchronize(stream), "warm-up");
  at::cuda::CUDAGraph graph;
  graph.capture_begin();
  for (int i = 0; i < launches; ++i) fn(i % copies);
  graph.capture_end();
  graph.replay();
  ck(cudaStreamSynchronize(stream), "graph replay");
  cudaEvent_t a, b;
  ck(cudaEventCreate(&a), "event");
  ck(cudaEventCreate(&b), "event");
  std::vector<double> t;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    ck(cudaEventRecord(a, stream), "event");
    graph.replay();
    ck(cudaEventRecord(b, stream), "event");
    ck(cudaEventSynchronize(b), "event");
    float ms = 0;
    ck(cudaEventElapsedTime(&ms, a, b), "event");
    t.push_back(ms * 1000.0 / launches);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return stats::median(t, 0.0);
}

// A launch that failed: why, naming the kernel.
void ckLaunch(const KernelCase& kc, const char* error) {
  if (error) throw std::runtime_error(std::string(kernelInfo(kc.id).label) + ": " + error);
}

// Median microseconds per call of kc with cfg, its launches rotating through the weight copies.
double timeCase(const KernelCase& kc, CaseInputs& in, const CaseConfig& cfg, int repeats) {
  if (kc.reserve) kc.reserve(in, {cfg});
  return timeGraph(in.copies(), repeats, [&](int i) { ckLaunch(kc, kc.launch(in, i, cfg)); });
}

void runGpu(const BenchSettings& s, BenchResult& res, Recorder& rec) {
  res.backend = "cuda";
  const auto& d = deviceInfo();
  res.device = d.name;
  int drv = 0;
  cudaDriverGetVersion(&drv);
  res.driver = "CUDA driver " + std::to_string(drv / 1000) + "." + std::to_string((drv % 1000) / 10);
  cudaDeviceProp prop{};
  ck(cudaGetDeviceProperties(&prop, 0), "device properties");
  const int sms = prop.multiProcessorCount;
  const auto st = c10::cuda::getStreamFromPool(false, 0);
  const c10::cuda::CUDAStreamGuard guard(st);
  const cudaStream_t stream = st.stream();
  const auto dtype = sparse::parseDType(s.dtype);
  const kernels::DType kdt = dtype == sparse::DType::BF16 ? kernels::DType::BF16 : kernels::DType::F16;
  const auto opts =
      at::TensorOptions().device(at::kCUDA, 0).dtype(dtype == sparse::DType::BF16 ? at::kBFloat16 : at::kHalf);
  std::uint64_t seed = 1;

  TuningTable table;
  if (!s.tuningIn.empty()) {
    try {
      table = TuningTable::load(s.tuningIn);
    } catch (const std::exception& e) {
      res.notes.push_back(std::string("tuning table not used: ") + e.what());
    }
  }
  table.device = d.name;

  // HBM read bandwidth, measured now: 2 GiB read once per launch.
  {
    const std::size_t bytes = std::size_t(2) << 30;
    auto big = at::empty({static_cast<std::int64_t>(bytes / 2)}, opts);
    auto sink = at::zeros({1}, opts.dtype(at::kInt));
    ck(kernels::launchFillRandom16(big.data_ptr(), bytes / 2, kdt, 7, stream), "fill");
    const double us = timeGraph(1, s.repeats, [&](int) {
      ck(kernels::launchHbmRead(big.data_ptr(), bytes / 16, reinterpret_cast<unsigned*>(sink.data_ptr()), sms, stream),
         "hbm read");
    });
    res.hbmReadGBs = bytes / (us * 1e-6) / 1e9;
    table.hbmReadGBs = res.hbmReadGBs;
  }

  // Chained (programmatic dependent launch) timings of our kernels, where the device takes them.
  const bool chained = kernels::pdlSupported();
  if (chained)
    res.notes.push_back(
        "us_chained: our kernels launched back to back with programmatic dependent launch (sm_90), each "
        "launch's start and first weight loads overlapping the previous call; x is read after the previous "
        "call completes. cuBLAS and cuSPARSELt are launched as LibTorch launches them (no overlap).");
  // cuSPARSELt: try once on a small matrix.
  bool haveCslt = false;
  if (s.cusparselt) {
    try {
      auto w = at::randn({256, 256}, opts) * at::tensor({1.0, 1.0, 0.0, 0.0}, at::kFloat).to(opts).repeat({256, 64});
      auto c = at::_cslt_compress(w);
      auto y = at::_cslt_sparse_mm(c, at::randn({256, 16}, opts));
      ck(cudaStreamSynchronize(stream), "cusparselt probe");
      haveCslt = true;
      res.cusparseltStatus = "ok";
    } catch (const std::exception& e) {
      std::string msg = e.what();
      res.cusparseltStatus = "unavailable: " + msg.substr(0, msg.find('\n'));
    }
  } else {
    res.cusparseltStatus = "not requested";
  }

  // The cases this run times (gpu/kernel_cases.h), in the table's order. Consecutive cases
  // whose rows have the same pattern make one pass: their rows interleave per shape.
  struct Pass {
    std::string pattern;  // "" : once per N:M pattern of the run
    std::vector<const KernelCase*> cases;
  };
  std::vector<Pass> passes;
  for (const KernelCase& kc : kernelCases()) {
    if ((kc.id == KernelId::Cublas && !s.library) || (kc.id == KernelId::Dense && !s.ownDense) ||
        (kc.id == KernelId::Cusparselt && !haveCslt))
      continue;
    const std::string pattern = kc.pattern ? kc.pattern : "";
    if (passes.empty() || passes.back().pattern != pattern) passes.push_back({pattern, {}});
    passes.back().cases.push_back(&kc);
  }

  for (const auto& group : groupByModel(s.shapes)) {
    const std::string model = group.front().model;
    const bool layer = s.layer && model != "custom" && group.size() > 1;

    // Weight copies of one case for one shape, enough to stream from HBM; each input gets
    // its own range of seeds.
    auto prepare = [&](const KernelCase& kc, const BenchShape& sh, const sparse::Pattern& pat) {
      const CaseInputs in = kc.prepare(CaseProblem{sh.rows, sh.cols, dtype, pat, seed}, copiesFor(kc.copyBytes(sh)));
      seed += std::uint64_t(1) << 20;
      return in;
    };

    // One row: kc on one shape at the inputs' batch, tuned first where asked. Returns the
    // plain and the chained configuration it ran (the layer runs them again).
    auto measure = [&](const KernelCase& kc, CaseInputs& in, const BenchShape& sh, const std::string& pattern,
                       bool tune) -> std::pair<CaseConfig, CaseConfig> {
      const int b = in.batch;
      CaseConfig cfg;
      if (kc.space) cfg = kc.space->lookup(table, sh.rows, sh.cols, b, s.dtype, sms, false);
      if (tune && kc.space) {
        // The probe's space (gpu/kernels/launch_space.h; sparse: cluster requests agreeing with
        // auto); at batch 1 on sm_90 also the best configuration for chained launches, as the
        // probe tunes it.
        const bool tuneChained = chained && kc.chained && b == 1;
        double best = 1e300, bestChained = 1e300;
        CaseConfig cfgChained;
        for (const CaseConfig& c : kc.space->tuning(sh.cols, b)) {
          if (kc.reserve) kc.reserve(in, {c});
          if (!launchRuns([&] { return kc.launch(in, 0, c) == nullptr; }, stream)) continue;
          const double t = timeCase(kc, in, c, s.repeats);
          if (t < best) best = t, cfg = c;
          if (!tuneChained) continue;
          const double tc = timeCase(kc, in, withPdl(c, true), s.repeats);
          if (tc < bestChained) bestChained = tc, cfgChained = c;
        }
        TuningEntry e = table.entry(sh.rows, sh.cols, b, s.dtype, sms);
        const bool haveChained = tuneChained && bestChained < 1e300;
        kc.space->store(e, cfg, best, haveChained ? &cfgChained : nullptr, bestChained);
        table.put(e);
      }
      // 2:4 and 4:8 on the tensor cores from batch 4, 8:16 and 16:32 from 5 (--tensor-cores: from batch 2), in the
      // configuration spmvOnTensorCores picks for the shape (the tuning space does not hold that path).
      const auto onTensorCores = [&](CaseConfig c) {
        if (kc.id != KernelId::Sparse ||
            !kernels::spmvUseTensorCores(s.sparseTensorCores, b, sparse::parsePattern(pattern).m))
          return c;
        const auto& l = std::get<SpmvLaunch>(c);
        return CaseConfig{kernels::toLaunch(kernels::spmvOnTensorCores(kernels::toConfig(l, l.pdl), sh.rows, sh.cols))};
      };
      cfg = onTensorCores(cfg);
      BenchRow r = makeRow(model, sh.module, sh.rows, sh.cols, pattern, b, kc.id);
      r.bytes = kc.bytes(sh, b);
      r.config = kc.describe(in, cfg);
      r.us = timeCase(kc, in, withPdl(cfg, false), s.repeats);
      CaseConfig cfgChained = cfg;
      if (chained && kc.chained && kc.space) {
        cfgChained = onTensorCores(kc.space->lookup(table, sh.rows, sh.cols, b, s.dtype, sms, true));
        r.usChained = timeCase(kc, in, withPdl(cfgChained, true), s.repeats);
        r.config += " | chained " + kc.describe(in, cfgChained);
      }
      rec.add(r);
      return {cfg, cfgChained};
    };

    // The whole layer: the projections back to back, each with the configurations of its row.
    auto measureLayer = [&](const KernelCase& kc, std::vector<CaseInputs>& ins,
                            const std::vector<std::pair<CaseConfig, CaseConfig>>& cfgs, const std::string& pattern,
                            int b) {
      BenchRow r = makeRow(model, kLayerModule, 0, 0, pattern, b, kc.id);
      int copies = 1;
      for (std::size_t j = 0; j < ins.size(); ++j) {
        r.bytes += kc.bytes(group[j], b);
        copies = std::max(copies, ins[j].copies());
        if (kc.reserve) kc.reserve(ins[j], {cfgs[j].first, cfgs[j].second});  // sized for both
      }
      auto layerTime = [&](bool pdl) {
        return timeGraph(copies, s.repeats, [&](int i) {
          for (std::size_t j = 0; j < ins.size(); ++j)
            ckLaunch(kc, kc.launch(ins[j], i % ins[j].copies(), withPdl(pdl ? cfgs[j].second : cfgs[j].first, pdl)));
        });
      };
      r.us = layerTime(false);
      if (chained && kc.chained) r.usChained = layerTime(true);
      rec.add(r);
    };

    for (const Pass& pass : passes) {
      const std::vector<std::string> patterns = pass.pattern.empty() ? s.patterns : std::vector{pass.pattern};
      bool timesLayer = false;
      for (const KernelCase* kc : pass.cases) timesLayer = timesLayer || kc->layer;
      for (std::size_t pi = 0; pi < patterns.size(); ++pi) {
        const std::string& pattern = patterns[pi];
        const sparse::Pattern pat = pattern == kDensePattern ? sparse::Pattern{2, 4} : sparse::parsePattern(pattern);
        const bool tune = s.tune && pi == 0;  // per pattern: tuned on the first, the table serves the others
        if (!timesLayer) {
          // No layer rows (cuSPARSELt): one shape's copies at a time, shape by shape.
          for (const auto& sh : group)
            for (const KernelCase* kc : pass.cases) {
              CaseInputs in = prepare(*kc, sh, pat);
              for (int b : s.batches) {
                kc->setBatch(in, b);
                (void)measure(*kc, in, sh, pattern, tune);
              }
            }
          continue;
        }
        // The model's copies for all batches; per batch each shape's rows, then the layer's.
        std::vector<std::vector<CaseInputs>> in(pass.cases.size());  // [case][shape]
        for (std::size_t c = 0; c < pass.cases.size(); ++c)
          for (const auto& sh : group) in[c].push_back(prepare(*pass.cases[c], sh, pat));
        for (int b : s.batches) {
          std::vector<std::vector<std::pair<CaseConfig, CaseConfig>>> used(pass.cases.size());
          for (std::size_t j = 0; j < group.size(); ++j)
            for (std::size_t c = 0; c < pass.cases.size(); ++c) {
              pass.cases[c]->setBatch(in[c][j], b);
              used[c].push_back(measure(*pass.cases[c], in[c][j], group[j], pattern, tune));
            }
          if (!layer) continue;
          for (std::size_t c = 0; c < pass.cases.size(); ++c)
            if (pass.cases[c]->layer) measureLayer(*pass.cases[c], in[c], used[c], pattern, b);
        }
      }
    }

    // spMspV at each activation sparsity, after the baselines of the same shapes (their
    // rows give its speed-ups): each weight layout (50% unstructured, column 2:4 and 4:8,
    // column-major dense), x
    // standard normal.
    if (!timesSpmspv(s)) continue;
    for (const auto& sh : group)
      for (const SpmspvVariant& layout : kSpmspvVariants) {
        if (!timesLayout(s, layout)) continue;
        if (!spmspvFits(layout, sh.rows)) {
          res.notes.push_back(spmspvSkipNote(layout, sh.module));
          continue;
        }
        const bool column = isColumnVariant(layout);
        SpmspvMatrix m = spmspvWeights(layout, sh.rows, sh.cols, dtype, seed);
        seed += std::uint64_t(1) << 20;
        const int copies = copiesFor(static_cast<double>(m.bytes()));
        SpmspvCase c = prepareSpmspvCase(std::move(m), copies);
        for (double p : s.activationSparsities) {
          // SDW_SPMSPV_BULK=1: bulk copies; SDW_SPMSPV_LANES=16 / SDW_SPMSPV_WAVEFIT=0|1: spmspvRunDefaults
          kernels::SpmspvConfig def = kernels::spmspvRunDefaults(c.host.format);
          if (const char* v = std::getenv("SDW_SPMSPV_BULK")) def.bulk = std::string(v) == "1";
          setSpmspvActivation(c, randomNormal16(sh.cols, dtype, seed++), p, def.warps, def.splitK);
          // --tune: a grid of warps per block, split-K (the heuristic's, a half and a quarter of it:
          // the heuristic already gives each warp about one step; and the largest that fits one
          // wave of the device) and chunk groups in flight, with 16-byte cp.async pieces and with
          // bulk copies (SpmspvConfig::bulk); the fastest is the row, the defaults' time stands in
          // its config.
          if (column) def.bulk = false;
          std::vector<kernels::SpmspvConfig> launches{def};
          // column layouts: warps (at most 8), split-K as below (and the aim's slices plus and minus
          // one), chunks per batch, each also with the
          // slices reduced in a cluster (SpmspvConfig::cluster 1: where there are 2-16 of them), and
          // for column 2:4 and 4:8 each with the half-warp walk (SpmspvConfig::lanes 16)
          const bool halfWalk = kernels::spmspvHalfWalkFormat(c.host.format);
          if (s.tune && column)
            for (int lanes : {32, 16})
              for (int w : {4, 8})
                for (int depth : {2, 4, 8})
                  for (int cl : {0, 1}) {
                    if (lanes == 16 && !halfWalk) continue;
                    const int heuristic = spmspvSplitKOf(c, w, 0);
                    kernels::SpmspvConfig l{w, 0, depth, false, cl};
                    l.lanes = lanes;
                    for (int f : {1, 2, 4})
                      if (w != def.warps || f != 1 || depth != def.stages || cl != def.cluster || lanes != def.lanes) {
                        l.splitK = f == 1 ? 0 : std::max(1, heuristic / f);
                        launches.push_back(l);
                      }
                    // one slice fewer and one more than the aim (SpmspvConfig::waveFit's candidates)
                    for (int k : {heuristic - 1, heuristic + 1})
                      if (k >= 1 && k != heuristic / 2 && k != heuristic / 4) {
                        l.splitK = k;
                        launches.push_back(l);
                      }
                    const int oneWave = spmspvOneWaveSplitKOf(c, w, depth, false, lanes);
                    if (oneWave > 0 && oneWave != heuristic && oneWave != heuristic / 2 && oneWave != heuristic / 4) {
                      l.splitK = oneWave;
                      launches.push_back(l);
                    }
                  }
          if (s.tune && !column)
            for (bool bulk : {false, true})
              for (int w : {4, 8, 16})
                for (int g : {2, 3, 6}) {
                  const int heuristic = spmspvSplitKOf(c, w, 0);
                  for (int f : {1, 2, 4})
                    if (bulk != def.bulk || w != def.warps || f != 1 || g != def.stages)
                      launches.push_back({w, f == 1 ? 0 : std::max(1, heuristic / f), g, bulk});
                  const int oneWave = spmspvOneWaveSplitKOf(c, w, g, bulk);
                  if (oneWave > 0 && oneWave != heuristic && oneWave != heuristic / 2 && oneWave != heuristic / 4)
                    launches.push_back({w, oneWave, g, bulk});
                }
          BenchRow r = makeRow(model, sh.module, sh.rows, sh.cols, layout.pattern, 1, KernelId::Spmspv);
          r.activationSparsity = p;
          r.bytes = c.bytes;
          double defaultUs = 0;
          int timed = 0;
          for (const kernels::SpmspvConfig& l : launches) {
            reserveSpmspv(c, l.warps, l.splitK, l.stages);
            if (const char* e = launchSpmspvCase(c, 0, l.warps, l.splitK, l.stages, l.bulk, l.cluster, l.lanes)) {
              if (&l == &launches.front()) throw std::runtime_error(std::string("spMspV: ") + e);
              continue;  // refused (shared memory): not a candidate
            }
            const double us = timeGraph(c.copies(), s.repeats, [&](int i) {
              if (const char* e = launchSpmspvCase(c, i, l.warps, l.splitK, l.stages, l.bulk, l.cluster, l.lanes))
                throw std::runtime_error(std::string("spMspV: ") + e);
            });
            ++timed;
            if (&l == &launches.front()) defaultUs = us;
            if (timed == 1 || us < r.us) {
              r.us = us;
              r.config = describeSpmspv(c, l.warps, l.splitK, l.stages, l.bulk, l.cluster, l.lanes);
            }
          }
          if (s.tune) {
            std::ostringstream o;
            o.precision(4);
            o << " (fastest of " << timed << "; defaults "
              << describeSpmspv(c, def.warps, def.splitK, def.stages, def.bulk, def.cluster, def.lanes) << ": "
              << defaultUs << " us)";
            r.config += o.str();
          }
          r.config += " threshold " + std::to_string(c.threshold);
          rec.add(r);
        }
      }
  }
  if (s.tune && !s.tuningOut.empty()) {
    table.save(s.tuningOut);
    res.notes.push_back("tuning table written to " + s.tuningOut);
  }
}
#endif

}  // namespace

std::vector<std::string> spmspvLayoutNames() {
  std::vector<std::string> out;
  for (const SpmspvVariant& v : kSpmspvVariants) out.emplace_back(v.pattern);
  return out;
}

std::vector<std::string> parseSpmspvLayouts(const std::string& list) {
  const std::vector<std::string> known = spmspvLayoutNames();
  std::vector<std::string> out;
  for (const std::string& name : trimmedItems(list)) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string names;
      for (const auto& k : known) names += (names.empty() ? "" : ", ") + k;
      throw std::invalid_argument("unknown spMspV layout '" + name + "' (one of " + names + ")");
    }
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  if (out.empty()) throw std::invalid_argument("no spMspV layout given");
  return out;
}

BenchResult runKernelBench(const BenchSettings& s, const ProgressFn& progress,
                           const std::function<void(const BenchRow&)>& onRow) {
  if (s.shapes.empty()) throw std::invalid_argument("no shapes to benchmark");
  if (s.batches.empty() || s.patterns.empty()) throw std::invalid_argument("no batches or patterns");
  for (int b : s.batches)
    if (b < 1 || b > 8) throw std::invalid_argument("batch sizes must be 1..8, got " + std::to_string(b));
  for (const auto& p : s.patterns) (void)sparse::parsePattern(p);
  for (double p : s.activationSparsities)
    if (!(p >= 0 && p < 1)) throw std::invalid_argument("activation sparsities must be in [0, 1)");
  (void)sparse::parseDType(s.dtype);
  BenchResult res;
  res.torchVersion = deviceInfo().torchVersion;
  Recorder rec{res, onRow, progress, 0, 0, {}};
  const double perShapeBatch =
      (s.library ? 1 : 0) + (s.ownDense ? 1 : 0) + (s.cusparselt ? 1 : 0) + static_cast<double>(s.patterns.size());
  rec.total = perShapeBatch * static_cast<double>(s.shapes.size() * s.batches.size()) +
              (timesSpmspv(s)
                   ? static_cast<double>(s.shapes.size() * s.activationSparsities.size() * std::size(kSpmspvVariants))
                   : 0.0);
  const bool gpu = !s.forceCpu && deviceInfo().cudaAvailable;
  try {
    if (gpu) {
#ifdef SDW_TORCH_CUDA
      runGpu(s, res, rec);
#endif
    } else {
      runCpu(s, res, rec);
    }
  } catch (const c10::Error& e) {
    throw std::runtime_error(e.what_without_backtrace());
  }
  summarise(res, s.dtype);
  return res;
}

BenchRow makeBenchRow(const BenchShape& shape, const std::string& pattern, int batch, KernelId id) {
  BenchRow r;
  r.model = shape.model, r.module = shape.module, r.rows = shape.rows, r.cols = shape.cols;
  r.pattern = pattern, r.batch = batch;
  r.id = id;
  r.kernel = std::string(kernelName(id));
  return r;
}

// ---- JSON ---------------------------------------------------------------------------

std::string toJson(const BenchResult& r, const std::string& commandLine, const BenchSettings& s) {
  nlohmann::json j;
  j["tool"] = "sdw-cli bench kernels";
  j["command"] = commandLine;
  j["machine"] = {{"backend", r.backend}, {"device", r.device}, {"driver", r.driver}, {"torch", r.torchVersion}};
  j["hbm_read_gbs"] = r.hbmReadGBs;
  j["cusparselt"] = r.cusparseltStatus;
  j["settings"] = {{"dtype", s.dtype},     {"patterns", s.patterns}, {"batches", s.batches},
                   {"repeats", s.repeats}, {"tuning", s.tuningIn},   {"tune", s.tune}};
  if (!s.activationSparsities.empty()) {
    j["settings"]["activation_sparsities"] = s.activationSparsities;
    j["settings"]["spmspv_layouts"] = s.spmspvLayouts.empty() ? spmspvLayoutNames() : s.spmspvLayouts;
  }
  j["notes"] = r.notes;
  j["rows"] = nlohmann::json::array();
  for (const auto& row : r.rows) {
    j["rows"].push_back({{"model", row.model},
                         {"module", row.module},
                         {"rows", row.rows},
                         {"cols", row.cols},
                         {"pattern", row.pattern},
                         {"batch", row.batch},
                         {"kernel", row.kernel},
                         {"us", row.us},
                         {"us_chained", row.usChained},
                         {"bytes", row.bytes},
                         {"gbs", row.gbs},
                         {"fraction_hbm", row.fractionHbm},
                         {"speedup_vs_cublas", row.speedupVsCublas},
                         {"speedup_vs_dense", row.speedupVsDense},
                         {"config", row.config}});
    if (row.activationSparsity) j["rows"].back()["activation_sparsity"] = *row.activationSparsity;
  }
  j["summary"] = nlohmann::json::array();
  for (const auto& sm : r.summary)
    j["summary"].push_back({{"pattern", sm.pattern},
                            {"shapes", sm.count},
                            {"median_speedup_vs_cublas", sm.medianVsCublas},
                            {"median_speedup_vs_dense", sm.medianVsDense},
                            {"median_speedup_vs_cusparselt", sm.medianVsCusparselt},
                            {"chained_median_speedup_vs_cublas", sm.medianVsCublasChained},
                            {"chained_median_speedup_vs_dense", sm.medianVsDenseChained},
                            {"chained_median_speedup_vs_cusparselt", sm.medianVsCusparseltChained}});
  j["summary_scope"] = "batch 1, " + s.dtype + ", projection shapes of llama3-8b and qwen3-14b";
  j["pattern_spread_percent"] = r.patternSpreadPercent;
  j["chained_pattern_spread_percent"] = r.patternSpreadChainedPercent;
  if (!r.activationSummary.empty()) {
    j["activation_summary_scope"] = "spmspv, batch 1, " + s.dtype + ", every shape of the run, medians";
    j["activation_summary"] = nlohmann::json::array();
    for (const auto& a : r.activationSummary)
      j["activation_summary"].push_back({{"pattern", a.pattern},
                                         {"activation_sparsity", a.activationSparsity},
                                         {"shapes", a.count},
                                         {"median_speedup_vs_dense", a.medianVsDense},
                                         {"median_speedup_vs_cublas", a.medianVsCublas},
                                         {"median_gbs", a.medianGbs},
                                         {"median_fraction_hbm", a.medianFractionHbm},
                                         {"median_bytes_limit", a.medianBytesLimit},
                                         {"median_fraction_of_limit", a.medianFractionOfLimit}});
  }
  return j.dump(1);
}

BenchResult fromJson(const std::string& text) {
  BenchResult r;
  try {
    const auto j = parseJsonBounded(text, "benchmark results");
    const auto& m = j.at("machine");
    r.backend = m.value("backend", "");
    r.device = m.value("device", "");
    r.driver = m.value("driver", "");
    r.torchVersion = m.value("torch", "");
    r.hbmReadGBs = j.value("hbm_read_gbs", 0.0);
    r.cusparseltStatus = j.value("cusparselt", "");
    for (const auto& n : j.value("notes", nlohmann::json::array())) r.notes.push_back(n.get<std::string>());
    for (const auto& e : j.at("rows")) {
      BenchRow row;
      row.model = e.at("model");
      row.module = e.at("module");
      row.rows = e.at("rows");
      row.cols = e.at("cols");
      row.pattern = e.at("pattern");
      row.batch = e.at("batch");
      const std::string name = e.at("kernel");
      const auto id = kernelFromName(name);
      if (!id) {  // a kernel this build does not know: leave the row out, say so
        r.notes.push_back("row of unknown kernel '" + name + "' left out");
        continue;
      }
      row.id = *id;
      row.kernel = name;
      row.us = e.at("us");
      row.usChained = e.value("us_chained", 0.0);
      row.bytes = e.value("bytes", 0.0);
      row.gbs = e.value("gbs", 0.0);
      row.fractionHbm = e.value("fraction_hbm", 0.0);
      row.speedupVsCublas = e.value("speedup_vs_cublas", 0.0);
      row.speedupVsDense = e.value("speedup_vs_dense", 0.0);
      row.config = e.value("config", "");
      if (e.contains("activation_sparsity")) row.activationSparsity = e.at("activation_sparsity").get<double>();
      r.rows.push_back(row);
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("not a benchmark result: ") + e.what());
  }
  summarise(r, "");
  return r;
}

}  // namespace sdw::gpu
