// The kernel benchmark runner (gpu/bench.h). GPU path: every kernel is timed
// with CUDA events around replays of a CUDA graph that holds many launches, the
// launches cycling through weight copies that together exceed the L2 several
// times, so weights stream from HBM; the median over repeats is kept. CPU path:
// the same loops over the CPU kernels with a steady clock.

#include "gpu/bench.h"

#include "core/sparse_format.h"
#include "core/stats.h"
#include "gpu/device.h"
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
#include "gpu/kernels/gemv.cuh"
#include "gpu/kernels/hbm.cuh"
#include "gpu/kernels/launch_space.h"
#include "gpu/kernels/spmv.cuh"
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
    if (model != m.name) continue;
    const std::int64_t q = m.heads * m.headDim, kv = m.kvHeads * m.headDim;
    return {{model, "q_proj", q, m.hidden},          {model, "k_proj", kv, m.hidden},
            {model, "v_proj", kv, m.hidden},         {model, "o_proj", m.hidden, q},
            {model, "gate_proj", m.intermediate, m.hidden}, {model, "up_proj", m.intermediate, m.hidden},
            {model, "down_proj", m.hidden, m.intermediate}};
  }
  throw std::invalid_argument("unknown model '" + model + "' (have: llama3-8b, qwen3-14b, qwen3-32b, or ROWSxCOLS)");
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
         (row.pattern != "-" ? " " + row.pattern : ""));
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
[[maybe_unused]] std::string describe(const SpmvLaunch& c) {
  return "w" + std::to_string(c.warps) + " u" + std::to_string(c.unroll) + " s" + std::to_string(c.splitK) +
         (c.cluster >= 0 ? " c" + std::to_string(c.cluster) : "");
}
[[maybe_unused]] std::string describe(const GemvLaunch& c) {
  return "w" + std::to_string(c.warps) + " r" + std::to_string(c.rowsPerWarp) + " u" + std::to_string(c.unroll) +
         " s" + std::to_string(c.splitK);
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
        BenchRow r = makeRow(sh.model, sh.module, sh.rows, sh.cols, "-", b, KernelId::DenseCpu);
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
  }
}

#ifdef SDW_TORCH_CUDA
// ---- GPU ----
void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// Whether one plain launch runs: a cluster shape the device cannot co-schedule fails at
// launch (nothing runs, the error is not sticky), and tuning skips it as the probe does.
template <typename Fn>
bool launchRuns(Fn launchOnce, cudaStream_t stream) {
  if (launchOnce() == cudaSuccess && cudaStreamSynchronize(stream) == cudaSuccess) return true;
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

struct DenseSet {
  BenchShape shape;
  std::vector<at::Tensor> w;  // copies of [rows, cols]
  at::Tensor x, y, ws, counters;
  GemvLaunch cfg, cfgChained;  // plain and chained (programmatic dependent launch) configurations
  std::vector<at::Tensor> compressed;  // cuSPARSELt 2:4 copies
};

struct SparseSet {
  std::vector<at::Tensor> values, masks;
  at::Tensor x, y, ws, counters;
  SpmvLaunch cfg, cfgChained;
};

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
  const auto opts = at::TensorOptions().device(at::kCUDA, 0).dtype(dtype == sparse::DType::BF16 ? at::kBFloat16 : at::kHalf);
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

  for (const auto& group : groupByModel(s.shapes)) {
    const std::string model = group.front().model;
    std::vector<DenseSet> dense;
    for (const auto& sh : group) {
      DenseSet ds;
      ds.shape = sh;
      const int copies = copiesFor(bytesDense(sh));
      for (int i = 0; i < copies; ++i) {
        auto w = at::empty({sh.rows, sh.cols}, opts);
        ck(kernels::launchFillRandom16(w.data_ptr(), static_cast<std::size_t>(sh.rows * sh.cols), kdt, seed++, stream),
           "fill");
        ds.w.push_back(w);
      }
      dense.push_back(std::move(ds));
    }
    // cuSPARSELt, per shape (the compressed copies are made once for all batches).
    if (haveCslt) {
      for (auto& ds : dense) {
        const auto& sh = ds.shape;
        at::Tensor mask = at::tensor({1.0, 1.0, 0.0, 0.0}, at::kFloat).to(opts).repeat({sh.rows, sh.cols / 4});
        for (const auto& w : ds.w) ds.compressed.push_back(at::_cslt_compress(w * mask));
        for (int b : s.batches) {
          at::Tensor xt = at::randn({sh.cols, b}, opts);
          int n = b;
          try {
            (void)at::_cslt_sparse_mm(ds.compressed[0], xt);
            ck(cudaStreamSynchronize(stream), "cusparselt");
          } catch (const std::exception&) {
            n = 16;  // the library refuses narrow dense operands: pad the batch
            xt = at::cat({xt, at::zeros({sh.cols, 16 - b}, opts)}, 1);
          }
          BenchRow r = makeRow(model, sh.module, sh.rows, sh.cols, "2:4", b, KernelId::Cusparselt);
          r.bytes = bytesSparse(sh);
          r.config = "N=" + std::to_string(n);
          r.us = timeGraph(static_cast<int>(ds.compressed.size()), s.repeats,
                           [&](int i) { (void)at::_cslt_sparse_mm(ds.compressed[static_cast<std::size_t>(i)], xt); });
          rec.add(r);
        }
        ds.compressed.clear();
      }
    }
    for (int b : s.batches) {
      for (auto& ds : dense) {
        const auto& sh = ds.shape;
        ds.x = at::empty({b, sh.cols}, opts);
        ck(kernels::launchFillRandom16(ds.x.data_ptr(), static_cast<std::size_t>(b * sh.cols), kdt, seed++, stream), "fill");
        ds.y = at::empty({b, sh.rows}, opts);
        const int copies = static_cast<int>(ds.w.size());
        if (s.library) {
          BenchRow r = makeRow(model, sh.module, sh.rows, sh.cols, "-", b, KernelId::Cublas);
          r.bytes = bytesDense(sh);
          r.config = b == 1 ? "at::mv" : "at::mm";
          at::Tensor y1 = b == 1 ? ds.y.view({sh.rows}) : ds.y, x1 = b == 1 ? ds.x.view({-1}) : ds.x;
          r.us = timeGraph(copies, s.repeats, [&](int i) {
            if (b == 1) at::mv_out(y1, ds.w[static_cast<std::size_t>(i)], x1);
            else at::mm_out(ds.y, ds.x, ds.w[static_cast<std::size_t>(i)].t());
          });
          rec.add(r);
        }
        if (s.ownDense) {
          auto launchOnce = [&](int i, const kernels::GemvConfig& kc) {
            return kernels::launchDenseGemv(ds.w[static_cast<std::size_t>(i)].data_ptr(), kdt, sh.rows, sh.cols,
                                            ds.x.data_ptr(), b, ds.y.data_ptr(), sh.rows, kc, ds.ws.data_ptr<float>(),
                                            reinterpret_cast<unsigned*>(ds.counters.data_ptr()), stream);
          };
          auto sizeFor = [&](const kernels::GemvConfig& kc) {
            ds.ws = at::empty({static_cast<std::int64_t>(std::max<std::size_t>(1, kernels::gemvWorkspaceFloats(sh.rows, b, kc)))},
                              opts.dtype(at::kFloat));
            ds.counters = at::zeros({kernels::gemvCounters(sh.rows, kc)}, opts.dtype(at::kInt));
          };
          auto launchWith = [&](const GemvLaunch& c, bool pdl = false) {
            const kernels::GemvConfig kc = kernels::toConfig(c, pdl);
            sizeFor(kc);
            return timeGraph(copies, s.repeats, [&](int i) { ck(launchOnce(i, kc), "dense gemv"); });
          };
          ds.cfg = table.dense(sh.rows, sh.cols, b, s.dtype, sms);
          if (s.tune) {
            // The probe's space (gpu/kernels/launch_space.h); at batch 1 on sm_90 also the
            // best configuration for chained launches, as the probe tunes it.
            const bool tuneChained = chained && b == 1;
            double best = 1e300, bestChained = 1e300;
            GemvLaunch cfgChained;
            for (const kernels::GemvConfig& kc : kernels::gemvTuningSpace(b)) {
              sizeFor(kc);
              if (!launchRuns([&] { return launchOnce(0, kc); }, stream)) continue;
              const GemvLaunch c = kernels::toLaunch(kc);
              const double t = launchWith(c);
              if (t < best) best = t, ds.cfg = c;
              if (!tuneChained) continue;
              const double tc = launchWith(c, true);
              if (tc < bestChained) bestChained = tc, cfgChained = c;
            }
            TuningEntry e = table.entry(sh.rows, sh.cols, b, s.dtype, sms);
            e.dense = ds.cfg, e.denseUs = best;
            if (tuneChained && bestChained < 1e300) e.denseChained = cfgChained, e.denseChainedUs = bestChained;
            table.put(e);
          }
          BenchRow r = makeRow(model, sh.module, sh.rows, sh.cols, "-", b, KernelId::Dense);
          r.bytes = bytesDense(sh);
          r.config = describe(ds.cfg);
          r.us = launchWith(ds.cfg);
          if (chained) {
            ds.cfgChained = table.dense(sh.rows, sh.cols, b, s.dtype, sms, true);
            r.usChained = launchWith(ds.cfgChained, true);
            r.config += " | chained " + describe(ds.cfgChained);
          }
          rec.add(r);
        }
      }
      // The whole layer, all projections back to back.
      if (s.layer && model != "custom" && dense.size() > 1) {
        double bytes = 0;
        int copies = 1;
        for (auto& ds : dense) bytes += bytesDense(ds.shape), copies = std::max(copies, static_cast<int>(ds.w.size()));
        if (s.library) {
          BenchRow r = makeRow(model, "layer", 0, 0, "-", b, KernelId::Cublas);
          r.bytes = bytes;
          r.us = timeGraph(copies, s.repeats, [&](int i) {
            for (auto& ds : dense) {
              const auto& w = ds.w[static_cast<std::size_t>(i) % ds.w.size()];
              if (b == 1) {
                at::Tensor y1 = ds.y.view({ds.shape.rows});
                at::mv_out(y1, w, ds.x.view({-1}));
              }
              else at::mm_out(ds.y, ds.x, w.t());
            }
          });
          rec.add(r);
        }
        if (s.ownDense) {
          BenchRow r = makeRow(model, "layer", 0, 0, "-", b, KernelId::Dense);
          r.bytes = bytes;
          std::vector<std::pair<at::Tensor, at::Tensor>> wsc;
          for (auto& ds : dense) {  // sized for the plain and the chained configuration
            const kernels::GemvConfig kc = kernels::toConfig(ds.cfg, false);
            const kernels::GemvConfig kcc = kernels::toConfig(ds.cfgChained, false);
            const std::size_t n = std::max({std::size_t(1), kernels::gemvWorkspaceFloats(ds.shape.rows, b, kc),
                                            kernels::gemvWorkspaceFloats(ds.shape.rows, b, kcc)});
            wsc.emplace_back(at::empty({static_cast<std::int64_t>(n)}, opts.dtype(at::kFloat)),
                             at::zeros({std::max(kernels::gemvCounters(ds.shape.rows, kc), kernels::gemvCounters(ds.shape.rows, kcc))},
                                       opts.dtype(at::kInt)));
          }
          auto layerTime = [&](bool pdl) {
            return timeGraph(copies, s.repeats, [&](int i) {
              for (std::size_t j = 0; j < dense.size(); ++j) {
                auto& ds = dense[j];
                const kernels::GemvConfig kc = kernels::toConfig(pdl ? ds.cfgChained : ds.cfg, pdl);
                ck(kernels::launchDenseGemv(ds.w[static_cast<std::size_t>(i) % ds.w.size()].data_ptr(), kdt,
                                            ds.shape.rows, ds.shape.cols, ds.x.data_ptr(), b, ds.y.data_ptr(),
                                            ds.shape.rows, kc, wsc[j].first.data_ptr<float>(),
                                            reinterpret_cast<unsigned*>(wsc[j].second.data_ptr()), stream),
                   "dense gemv");
              }
            });
          };
          r.us = layerTime(false);
          if (chained) r.usChained = layerTime(true);
          rec.add(r);
        }
      }
    }
    // Sparse, per pattern.
    for (std::size_t pi = 0; pi < s.patterns.size(); ++pi) {
      const auto pat = sparse::parsePattern(s.patterns[pi]);
      std::vector<SparseSet> sp(dense.size());
      for (std::size_t j = 0; j < dense.size(); ++j) {
        const auto& sh = dense[j].shape;
        const std::int64_t tiles = kernels::spmvTiles(sh.rows), G = sh.cols / 32;
        const int copies = copiesFor(bytesSparse(sh));
        for (int i = 0; i < copies; ++i) {
          auto v = at::empty({tiles * G * 32 * 16}, opts);
          auto m = at::empty({tiles * G * 32}, opts.dtype(at::kInt));
          ck(kernels::launchFillRandom16(v.data_ptr(), static_cast<std::size_t>(v.numel()), kdt, seed++, stream), "fill");
          ck(kernels::launchFillRandomMasks(reinterpret_cast<std::uint32_t*>(m.data_ptr()), static_cast<std::size_t>(m.numel()),
                                            pat.n, pat.m, seed++, stream),
             "fill");
          sp[j].values.push_back(v);
          sp[j].masks.push_back(m);
        }
      }
      for (int b : s.batches) {
        for (std::size_t j = 0; j < dense.size(); ++j) {
          const auto& sh = dense[j].shape;
          auto& ss = sp[j];
          const int xs = kernels::spmvXStride(b);
          ss.x = at::empty({sh.cols, xs}, opts);
          ck(kernels::launchFillRandom16(ss.x.data_ptr(), static_cast<std::size_t>(sh.cols * xs), kdt, seed++, stream), "fill");
          ss.y = at::empty({b, sh.rows}, opts);
          const int copies = static_cast<int>(ss.values.size());
          auto launchOnce = [&](int i, const kernels::SpmvConfig& kc) {
            return kernels::launchBitmaskSpmv(
                ss.values[static_cast<std::size_t>(i)].data_ptr(),
                reinterpret_cast<const std::uint32_t*>(ss.masks[static_cast<std::size_t>(i)].data_ptr()), kdt, sh.rows,
                sh.cols, ss.x.data_ptr(), b, ss.y.data_ptr(), sh.rows, kc, ss.ws.data_ptr<float>(),
                reinterpret_cast<unsigned*>(ss.counters.data_ptr()), stream);
          };
          auto sizeFor = [&](const kernels::SpmvConfig& kc) {
            ss.ws = at::empty({static_cast<std::int64_t>(std::max<std::size_t>(1, kernels::spmvWorkspaceFloats(sh.rows, sh.cols, b, kc)))},
                              opts.dtype(at::kFloat));
            ss.counters = at::zeros({kernels::spmvTiles(sh.rows)}, opts.dtype(at::kInt));
          };
          auto launchWith = [&](const SpmvLaunch& c, bool pdl = false) {
            const kernels::SpmvConfig kc = kernels::toConfig(c, pdl);
            sizeFor(kc);
            return timeGraph(copies, s.repeats, [&](int i) { ck(launchOnce(i, kc), "bitmask spmv"); });
          };
          ss.cfg = table.sparse(sh.rows, sh.cols, b, s.dtype, sms);
          if (s.tune && pi == 0) {
            // The probe's space, cluster requests agreeing with auto (gpu/kernels/launch_space.h);
            // at batch 1 on sm_90 also the best configuration for chained launches.
            const bool tuneChained = chained && b == 1;
            double best = 1e300, bestChained = 1e300;
            SpmvLaunch cfgChained;
            for (const kernels::SpmvConfig& kc : kernels::spmvTuningSpace(sh.cols, b)) {
              sizeFor(kc);
              if (!launchRuns([&] { return launchOnce(0, kc); }, stream)) continue;
              const SpmvLaunch c = kernels::toLaunch(kc);
              const double t = launchWith(c);
              if (t < best) best = t, ss.cfg = c;
              if (!tuneChained) continue;
              const double tc = launchWith(c, true);
              if (tc < bestChained) bestChained = tc, cfgChained = c;
            }
            TuningEntry e = table.entry(sh.rows, sh.cols, b, s.dtype, sms);
            e.sparse = ss.cfg, e.sparseUs = best;
            if (tuneChained && bestChained < 1e300) e.sparseChained = cfgChained, e.sparseChainedUs = bestChained;
            table.put(e);
          }
          BenchRow r = makeRow(model, sh.module, sh.rows, sh.cols, s.patterns[pi], b, KernelId::Sparse);
          r.bytes = bytesSparse(sh);
          r.config = describe(ss.cfg);
          r.us = launchWith(ss.cfg);
          if (chained) {
            ss.cfgChained = table.sparse(sh.rows, sh.cols, b, s.dtype, sms, true);
            r.usChained = launchWith(ss.cfgChained, true);
            r.config += " | chained " + describe(ss.cfgChained);
          }
          rec.add(r);
        }
        if (s.layer && model != "custom" && dense.size() > 1) {
          BenchRow r = makeRow(model, "layer", 0, 0, s.patterns[pi], b, KernelId::Sparse);
          int copies = 1;
          std::vector<std::pair<at::Tensor, at::Tensor>> wsc;
          for (std::size_t j = 0; j < dense.size(); ++j) {
            const auto& sh = dense[j].shape;
            r.bytes += bytesSparse(sh);
            copies = std::max(copies, static_cast<int>(sp[j].values.size()));
            const kernels::SpmvConfig kc = kernels::toConfig(sp[j].cfg, false);
            const kernels::SpmvConfig kcc = kernels::toConfig(sp[j].cfgChained, false);
            const std::size_t n = std::max({std::size_t(1), kernels::spmvWorkspaceFloats(sh.rows, sh.cols, b, kc),
                                            kernels::spmvWorkspaceFloats(sh.rows, sh.cols, b, kcc)});
            wsc.emplace_back(at::empty({static_cast<std::int64_t>(n)}, opts.dtype(at::kFloat)),
                             at::zeros({kernels::spmvTiles(sh.rows)}, opts.dtype(at::kInt)));
          }
          auto layerTime = [&](bool pdl) {
            return timeGraph(copies, s.repeats, [&](int i) {
              for (std::size_t j = 0; j < dense.size(); ++j) {
                const auto& sh = dense[j].shape;
                auto& ss = sp[j];
                const std::size_t c = static_cast<std::size_t>(i) % ss.values.size();
                const kernels::SpmvConfig kc = kernels::toConfig(pdl ? ss.cfgChained : ss.cfg, pdl);
                ck(kernels::launchBitmaskSpmv(ss.values[c].data_ptr(),
                                              reinterpret_cast<const std::uint32_t*>(ss.masks[c].data_ptr()), kdt,
                                              sh.rows, sh.cols, ss.x.data_ptr(), b, ss.y.data_ptr(), sh.rows, kc,
                                              wsc[j].first.data_ptr<float>(),
                                              reinterpret_cast<unsigned*>(wsc[j].second.data_ptr()), stream),
                   "bitmask spmv");
              }
            });
          };
          r.us = layerTime(false);
          if (chained) r.usChained = layerTime(true);
          rec.add(r);
        }
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

BenchResult runKernelBench(const BenchSettings& s, const ProgressFn& progress,
                           const std::function<void(const BenchRow&)>& onRow) {
  if (s.shapes.empty()) throw std::invalid_argument("no shapes to benchmark");
  if (s.batches.empty() || s.patterns.empty()) throw std::invalid_argument("no batches or patterns");
  for (int b : s.batches)
    if (b < 1 || b > 8) throw std::invalid_argument("batch sizes must be 1..8, got " + std::to_string(b));
  for (const auto& p : s.patterns) (void)sparse::parsePattern(p);
  (void)sparse::parseDType(s.dtype);
  BenchResult res;
  res.torchVersion = deviceInfo().torchVersion;
  Recorder rec{res, onRow, progress, 0, 0, {}};
  const double perShapeBatch = (s.library ? 1 : 0) + (s.ownDense ? 1 : 0) + (s.cusparselt ? 1 : 0) +
                               static_cast<double>(s.patterns.size());
  rec.total = perShapeBatch * static_cast<double>(s.shapes.size() * s.batches.size());
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
  j["settings"] = {{"dtype", s.dtype}, {"patterns", s.patterns}, {"batches", s.batches}, {"repeats", s.repeats},
                   {"tuning", s.tuningIn}, {"tune", s.tune}};
  j["notes"] = r.notes;
  j["rows"] = nlohmann::json::array();
  for (const auto& row : r.rows)
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
  return j.dump(1);
}

BenchResult fromJson(const std::string& text) {
  BenchResult r;
  try {
    const auto j = nlohmann::json::parse(text);
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
      r.rows.push_back(row);
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("not a benchmark result: ") + e.what());
  }
  summarise(r, "");
  return r;
}

}  // namespace sdw::gpu
