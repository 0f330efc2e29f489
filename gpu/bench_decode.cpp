#include "gpu/bench_decode.h"

#include "gpu/activation_thresholds.h"
#include "gpu/device.h"
#include "gpu/engine_internal.h"
#include "gpu/model.h"
#include "gpu/model_internal.h"

#include "core/stats.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <tuple>

#ifdef SDW_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace sdw::gpu {

void checkDecodePattern(const std::string& pattern) {
  if (pattern == "col2:4" || pattern == "col4:8") return;
  try {
    (void)sparse::parsePattern(pattern);
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument("unknown pattern '" + pattern +
                                "' of the sparse engine (have: 2:4, 4:8, 8:16, 16:32, "
                                "col2:4, col4:8)");
  }
}

namespace {

// Times device work: CUDA events on the current stream, or the host clock on CPU.
class StepTimer {
 public:
  explicit StepTimer(bool cuda) : cuda_(cuda) {
#ifdef SDW_TORCH_CUDA
    if (cuda_) {
      check(cudaEventCreate(&begin_), "cudaEventCreate");
      check(cudaEventCreate(&end_), "cudaEventCreate");
    }
#endif
  }
  ~StepTimer() {
#ifdef SDW_TORCH_CUDA
    if (cuda_) {
      cudaEventDestroy(begin_);
      cudaEventDestroy(end_);
    }
#endif
  }
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;

  void start() {
#ifdef SDW_TORCH_CUDA
    if (cuda_) {
      check(cudaEventRecord(begin_, c10::cuda::getCurrentCUDAStream()), "cudaEventRecord");
      return;
    }
#endif
    t0_ = std::chrono::steady_clock::now();
  }
  // Waits for the work queued since start() and returns its duration.
  double stopMs() {
#ifdef SDW_TORCH_CUDA
    if (cuda_) {
      check(cudaEventRecord(end_, c10::cuda::getCurrentCUDAStream()), "cudaEventRecord");
      check(cudaEventSynchronize(end_), "cudaEventSynchronize");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, begin_, end_), "cudaEventElapsedTime");
      return ms;
    }
#endif
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
#ifdef SDW_TORCH_CUDA
  static void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
  }
  cudaEvent_t begin_{}, end_{};
#endif
  bool cuda_;
  std::chrono::steady_clock::time_point t0_;
};

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

// Read bandwidth (a sum reduction) and copy bandwidth over `bytes` of memory, GB/s.
std::pair<double, double> measureBandwidth(const c10::Device& device, std::uint64_t bytes, bool cuda) {
  // bf16 on the GPU (the weights' dtype); fp32 on the CPU, whose bf16 reductions are not vectorised.
  const auto dt = cuda ? at::kBFloat16 : at::kFloat;
  const std::int64_t elem = cuda ? 2 : 4;
  const auto n = static_cast<std::int64_t>(bytes) / elem;
  const at::Tensor buf = at::ones({n}, at::TensorOptions().dtype(dt).device(device));
  at::Tensor dst = at::empty_like(buf);
  StepTimer timer(cuda);
  std::vector<double> readMs, copyMs;
  for (int i = 0; i < 13; ++i) {
    timer.start();
    const at::Tensor s = at::sum(buf, at::kFloat);
    const double ms = timer.stopMs();
    (void)s;
    if (i >= 3) readMs.push_back(ms);
  }
  for (int i = 0; i < 8; ++i) {
    timer.start();
    dst.copy_(buf);
    const double ms = timer.stopMs();
    if (i >= 3) copyMs.push_back(ms);
  }
  const double b = static_cast<double>(n * elem);
  return {b / (stats::median(readMs, 0.0) * 1e6), 2.0 * b / (stats::median(copyMs, 0.0) * 1e6)};
}

// --tune-step: the projections' launches chosen in the step (engineTuneStep), written into
// `file` as step entries (the file's table where it exists, else the model's). Returns the
// row's step_tuning text.
std::string tuneStep(Model::Impl& m, KvCache& cache, const std::vector<std::int32_t>& ids, std::int64_t slot,
                     const std::filesystem::path& file, Progress& p, const ProgressFn& progress) {
  const std::vector<StepTuned> tuned = engineTuneStep(m, cache, ids, slot, [&](const std::string& stage) {
    p.stage = stage;
    reportOrThrow(progress, p);
  });
  if (tuned.empty()) return "nothing to tune (no SpMV or dense GEMV launch of ours in every layer)";
  TuningTable out = std::filesystem::exists(file) ? TuningTable::load(file) : m.engine->tuning;
  int sms = 132;
#ifdef SDW_TORCH_CUDA
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) sms = prop.multiProcessorCount;
#endif
  std::string text;
  const auto launch = [](const SpmvLaunch& l) {
    return "w" + std::to_string(l.warps) + " u" + std::to_string(l.unroll) + " s" + std::to_string(l.splitK) + " c" +
           std::to_string(l.cluster) + (l.pdl ? " pdl" : " no-pdl");
  };
  const auto gemv = [](const GemvLaunch& l) {
    return "w" + std::to_string(l.warps) + " r" + std::to_string(l.rowsPerWarp) + " u" + std::to_string(l.unroll) +
           " s" + std::to_string(l.splitK) + (l.pdl ? " pdl" : " no-pdl");
  };
  for (const StepTuned& t : tuned) {
    // A shape the table has no entry of gets one holding what its lookups give now, so the
    // step entry changes nothing else.
    const bool exact = out.exact(t.rows, t.cols, t.batch, t.dtype) != nullptr;
    TuningEntry e = out.entry(t.rows, t.cols, t.batch, t.dtype, sms);
    if (!exact) {
      e.sparseChained = out.sparse(t.rows, t.cols, t.batch, t.dtype, sms, true);
      e.denseChained = out.dense(t.rows, t.cols, t.batch, t.dtype, sms, true);
    }
    if (t.dense) {
      e.denseStep = t.denseAfter;
      e.denseStepUs = t.afterUs;
    } else {
      (t.m16 ? e.sparseStepM16 : e.sparseStep) = t.after;
      (t.m16 ? e.sparseStepM16Us : e.sparseStepUs) = t.afterUs;
    }
    out.put(e);
    char us[64];
    std::snprintf(us, sizeof us, ": %.1f -> %.1f us", t.beforeUs, t.afterUs);
    text += (text.empty() ? "" : "; ") + std::to_string(t.rows) + "x" + std::to_string(t.cols) +
            (t.dense ? " gemv " + gemv(t.denseBefore) + " -> " + gemv(t.denseAfter)
                     : (t.m16 ? " m16 " : " ") + launch(t.before) + " -> " + launch(t.after)) +
            us + " (" + std::to_string(t.candidates) + " launches)";
  }
  out.save(file);
  return text;
}

}  // namespace

DecodeBenchResult runDecodeBench(const DecodeBenchOptions& o, const ProgressFn& progress) {
  return std::move(runDecodeBenchBatches(o, {o.batch}, progress).front());
}

std::vector<DecodeBenchResult> runDecodeBenchBatches(const DecodeBenchOptions& o, const std::vector<int>& batches,
                                                     const ProgressFn& progress) {
  if (batches.empty()) throw std::invalid_argument("bench decode: no batch size");
  for (const int b : batches)
    if (b < 1) throw std::invalid_argument("bench decode: batch sizes must be >= 1");
  if (o.context < 1 || o.tokens < 1 || o.warmup < 0)
    throw std::invalid_argument("bench decode: context, tokens and batch must be >= 1, warmup >= 0");
  if (o.context + 1 > o.config.maxPositionEmbeddings)
    throw std::invalid_argument("bench decode: context " + std::to_string(o.context) + " exceeds the model's " +
                                std::to_string(o.config.maxPositionEmbeddings) + " positions");
  const c10::Device device = parseDevice(o.device);  // throws with the reason when CUDA is unusable
  const bool cuda = device.is_cuda();
  const ModelConfig c = o.checkpoint.empty() ? o.config : loadModelConfig(o.checkpoint);
  const std::string dtype = canonicalDtype(o.dtype);
  const std::uint64_t eb = dtypeBytes(dtype);
  const bool sparse = !o.eager && o.linear == Linear::Sparse;
  if (sparse && o.checkpoint.empty()) checkDecodePattern(o.pattern);
  if (!(o.activationSparsity >= 0 && o.activationSparsity < 1))
    throw std::invalid_argument("bench decode: activation sparsity must be in [0, 1)");

  const int stepsPerBatch = o.warmup + o.tokens;
  Progress p{0, static_cast<double>(stepsPerBatch) * static_cast<double>(batches.size()), "steps", "random init"};
  reportOrThrow(progress, p);
  const auto t0 = std::chrono::steady_clock::now();
  LoadOptions lo;
  lo.device = o.device;
  lo.dtype = dtype;
  lo.linear = o.eager ? Linear::Cublas : o.linear;
  lo.randomPattern = o.pattern;
  lo.activationSparsity = o.activationSparsity;
  lo.cudaGraph = o.graph;
  lo.pdl = o.pdl;
  lo.sparseTensorCores = o.sparseTensorCores;
  lo.tuningFile = o.tuningFile;
  auto model = o.checkpoint.empty() ? Model::randomInit(c, lo, o.seed, 0.02) : Model::load(o.checkpoint, lo);
  auto& m = model->impl();
  if (cuda) (void)at::zeros({1}, at::TensorOptions().device(device)).item<float>();  // sync: init finished
  const double setupSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Fixed thresholds in place of the top-k the model was built with, before any decode graph.
  const std::string selection = activationSelectionName(o);
  double achieved = 0;
  if (o.activationThresholds && o.activationSparsity > 0) {
    p.stage = "activation thresholds";
    reportOrThrow(progress, p);
    const ActivationThresholds t = o.thresholdsRun.empty()
                                       ? prefillActivationThresholds(*model, o)
                                       : activationThresholdsFromRun(o.thresholdsRun, o.activationSparsity);
    setActivationThresholds(m, thresholdsForModel(t, c));
    for (const InputThreshold& in : t.inputs) achieved += in.achieved / static_cast<double>(t.inputs.size());
  }
  // Weight bytes one decode step reads (per sequence: one embedding row more), packed
  // projections as packed (values + masks; the column layouts: values + meta, of the
  // columns activation sparsity keeps).
  std::uint64_t w = 0;
  const auto index = projectionIndex(m);
  for (const auto& mod : projectionModules(c, dtype)) {  // incl. lm_head (the embedding when tied)
    const PackedProj* pp = nullptr;
    if (const auto it = index.find(mod.name); it != index.end() && m.engine && !m.engine->packed.empty())
      pp = &m.engine->packed[static_cast<std::size_t>(it->second.first)][static_cast<std::size_t>(it->second.second)];
    const auto n = static_cast<std::uint64_t>(mod.outFeatures * mod.inFeatures);
    if (pp && pp->column) {
      const std::int64_t keptCols = std::clamp<std::int64_t>(
          std::llround((1.0 - o.activationSparsity) * static_cast<double>(mod.inFeatures)), 1, mod.inFeatures);
      w += static_cast<std::uint64_t>(kernels::spmspvTiles(mod.outFeatures) * keptCols *
                                      kernels::spmspvChunkBytes(pp->col.format));
    } else {
      w += pp && pp->present ? n / 2 * eb + n / 32 * 4 : mod.bytes;
    }
  }
  w += static_cast<std::uint64_t>(c.numLayers * (2 * c.hiddenSize + (c.hasQkNorm() ? 2 * c.headDim : 0)) + c.hiddenSize) * eb;
  const bool engine = !o.eager && engineDecodes(m);

  std::vector<DecodeBenchResult> results;
  for (std::size_t bi = 0; bi < batches.size(); ++bi) {
    DecodeBenchResult r;
    r.device = cuda ? describeDevice(deviceInfo()) : "cpu";
    r.configName = o.configName;
    r.dtype = dtype;
    r.context = o.context;
    r.tokens = o.tokens;
    r.warmup = o.warmup;
    r.batch = batches[bi];
    r.parameters = c.parameterCount();
    r.linear = o.eager ? "eager" : linearName(o.linear);
    r.pattern = sparse && m.engine ? m.engine->pattern : "";
    r.activationSparsity = o.activationSparsity;
    r.activationSelection = selection;
    r.thresholdsAchieved = achieved;
    r.engine = o.eager ? "eager LibTorch forward" : model->engineDescription();
    r.packedProjections = m.engine ? m.engine->packedCount() : 0;
    r.setupSeconds = setupSeconds;
    r.weightBytesPerStep = w + static_cast<std::uint64_t>(r.batch * c.hiddenSize) * eb;
    r.kvBytesPerStep = static_cast<std::uint64_t>(c.numLayers) * 2 * static_cast<std::uint64_t>(r.batch) *
                       static_cast<std::uint64_t>(c.kvDim()) * static_cast<std::uint64_t>(o.context + 1) * eb;
    r.bytesPerStep = r.weightBytesPerStep + r.kvBytesPerStep;
    const double doneBefore = static_cast<double>(bi) * stepsPerBatch;
    try {
      const c10::NoGradGuard noGrad;
      const std::int64_t B = r.batch, ctx = o.context, capacity = ctx + 1;
      KvCache& cache = ensureKvCache(m, B, capacity);
      ensureRope(m, capacity);

      // Prefill `context` random tokens: fills the cache with real keys and values.
      at::Generator gen = at::detail::createCPUGenerator(o.seed);
      ForwardInput pre;
      pre.ids = at::randint(c.vocabSize, {B, ctx}, gen, at::TensorOptions().dtype(at::kLong)).to(device);
      pre.positions = at::arange(ctx, at::TensorOptions().dtype(at::kLong).device(device)).unsqueeze(0).expand({B, ctx});
      pre.positionLimit = capacity;
      pre.lastOnly = true;
      StepTimer timer(cuda);
      p.stage = "prefill, batch " + std::to_string(B);
      reportOrThrow(progress, p);
      timer.start();
      at::Tensor next = forward(m, pre, &cache).argmax(-1).view({B, 1});
      r.prefillMs = timer.stopMs();

      // Decode steps at position `context`: the step's own key/value goes to slot
      // `context`, attention reads context + 1 slots, the argmax feeds the next step.
      const auto tick = [&](int i, bool timed) {
        p.done = doneBefore + i + 1;
        p.stage = std::string(timed ? "timed steps" : "warm-up") + ", batch " + std::to_string(B);
        if ((i + 1) % 10 == 0) reportOrThrow(progress, p);
      };
      if (engine) {
        // The engine: the captured step replayed, its argmax fed back on the device.
        const at::Tensor first = next.view({B}).to(at::kCPU, at::kInt).contiguous();
        const std::vector<std::int32_t> ids(first.data_ptr<std::int32_t>(), first.data_ptr<std::int32_t>() + B);
        if (!o.tuneStepOut.empty()) r.stepTuning = tuneStep(m, cache, ids, ctx, o.tuneStepOut, p, progress);
        engineGreedyLoop(m, cache, ids, ctx, stepsPerBatch, [&](int i, bool begin) {
          const bool timed = i >= o.warmup;
          if (begin) {
            if (timed) timer.start();
            return;
          }
          if (timed) {
            r.stepMs.push_back(timer.stopMs());
            if (o.onStep) o.onStep(r.batch, i - o.warmup, r.stepMs.back());
          } else if (i + 1 == o.warmup) (void)at::zeros({1}, at::TensorOptions().device(device)).item<float>();  // drain
          tick(i, timed);
        });
        std::tie(r.stepEntryLaunches, r.engineLaunches) = engineStepEntriesUsed(m);
      } else {
        ForwardInput d;
        d.ids = next;
        d.positions = at::full({B, 1}, ctx, at::TensorOptions().dtype(at::kLong).device(device));
        d.positionLimit = capacity;
        d.cacheStart = ctx;
        d.lastOnly = true;
        for (int i = 0; i < stepsPerBatch; ++i) {
          const bool timed = i >= o.warmup;
          if (timed) timer.start();
          d.ids = forward(m, d, &cache).argmax(-1).view({B, 1});
          const double ms = timed ? timer.stopMs() : 0.0;
          if (timed) r.stepMs.push_back(ms);
          if (timed && o.onStep) o.onStep(r.batch, i - o.warmup, ms);
          if (!timed && cuda && i + 1 == o.warmup) (void)d.ids.cpu();  // drain the warm-up queue
          tick(i, timed);
        }
      }
    } catch (const c10::Error& e) {
      throw std::runtime_error(std::string("bench decode: ") + e.what_without_backtrace());
    }
    r.gpuMemoryBytes = model->deviceBytes();
    r.medianMs = stats::median(r.stepMs, 0.0);
    r.p10Ms = percentile(r.stepMs, 0.1);
    r.p90Ms = percentile(r.stepMs, 0.9);
    double sum = 0;
    for (const double v : r.stepMs) sum += v;
    r.meanMs = sum / static_cast<double>(r.stepMs.size());
    r.tokensPerSecond = static_cast<double>(r.batch) * 1000.0 / r.medianMs;
    r.achievedGBs = static_cast<double>(r.bytesPerStep) / (r.medianMs * 1e6);
    results.push_back(std::move(r));
  }
  model.reset();  // free the weights before the bandwidth probe allocates

  double readGBs = o.readGBs, copyGBs = 0;
  if (readGBs <= 0) {
    p.stage = "bandwidth probe";
    reportOrThrow(progress, p);
    std::tie(readGBs, copyGBs) = measureReadBandwidth(o.device, o.bandwidthBytes);
  }
  const std::string how = o.eager || !cuda ? "eager LibTorch, no CUDA graph"
                          : std::string(o.graph ? "decode engine, one CUDA graph replay per step, argmax fed back on the device"
                                                : "decode engine, kernels launched one by one") +
                                (o.pdl ? ", programmatic dependent launch" : "");
  for (auto& r : results) {
    r.measuredReadGBs = readGBs;
    r.measuredCopyGBs = copyGBs;
    r.limitTokensPerSecond = static_cast<double>(r.batch) * readGBs * 1e9 / static_cast<double>(r.bytesPerStep);
    r.ratioToLimit = r.tokensPerSecond / r.limitTokensPerSecond;
    r.method = std::string(cuda ? "CUDA events around each decode step" : "host clock around each decode step") +
               " (" + how + "), median of " + std::to_string(o.tokens) + " after " + std::to_string(o.warmup) +
               " warm-up; bandwidth: " +
               (o.readGBs > 0 ? std::string("measured once for the whole run")
                              : std::string("median ") + (cuda ? "bf16" : "fp32") + " sum reduction over " +
                                    std::to_string((cuda ? o.bandwidthBytes
                                                         : std::min<std::uint64_t>(o.bandwidthBytes, 256ull << 20)) >>
                                                   20) +
                                    " MiB");
  }
  return results;
}

std::string activationSelectionName(const DecodeBenchOptions& o) {
  if (!(o.activationSparsity > 0)) return "";
  if (!o.activationThresholds) return "top-k";
  return "thresholds (" + (o.thresholdsRun.empty() ? std::string("prefill") : o.thresholdsRun.filename().string()) +
         ")";
}

ActivationThresholds prefillActivationThresholds(Model& model, const DecodeBenchOptions& o) {
  Model::Impl& m = model.impl();
  const c10::Device device = m.device;
  const ModelConfig& c = m.config;
  if (o.context < 1 || o.context > c.maxPositionEmbeddings)
    throw std::invalid_argument("activation thresholds: a prefill of " + std::to_string(o.context) +
                                " tokens does not fit the model's " + std::to_string(c.maxPositionEmbeddings) +
                                " positions");
  const auto L = static_cast<std::size_t>(c.numLayers);
  ActivationThresholds out;
  out.run = "prefill";
  out.runId = "prefill";
  out.rows = o.context;
  out.layers = static_cast<int>(c.numLayers);
  out.inputs.resize(L * kProjectionInputs);
  std::vector<char> seen(out.inputs.size(), 0);
  // The input an event is: its first module is the layer's q, o, gate or down projection.
  constexpr std::array<std::pair<int, ProjectionInput>, kProjectionInputs> kFirst{
      {{0, ProjectionInput::Qkv}, {3, ProjectionInput::O}, {4, ProjectionInput::GateUp}, {6, ProjectionInput::Down}}};
  const int id = model.addObserver([&](const ActivationEvent& ev, std::span<const float> x) {
    const auto l = static_cast<std::size_t>(ev.layer);
    for (const auto& [kind, input] : kFirst) {
      if (ev.modules.empty() || ev.modules.front() != m.names[l][static_cast<std::size_t>(kind)]) continue;
      const std::size_t k = l * kProjectionInputs + static_cast<std::size_t>(input);
      if (seen[k]) throw std::logic_error("bench decode: " + ev.modules.front() + " observed twice in one prefill");
      seen[k] = 1;
      InputThreshold& t = out.inputs[k];
      t.name = ev.modules.front();
      t.layer = ev.layer;
      t.input = input;
      t.dIn = ev.dIn;
      t.sparsity = o.activationSparsity;
      rankInputThreshold(x, "bench decode prefill", t);
    }
  });
  struct Remove {
    Model& model;
    int id;
    ~Remove() { model.removeObserver(id); }
  } remove{model, id};
  const c10::NoGradGuard noGrad;
  at::Generator gen = at::detail::createCPUGenerator(o.seed + 1);
  const auto longs = at::TensorOptions().dtype(at::kLong);
  ForwardInput in;
  in.ids = at::randint(c.vocabSize, {1, o.context}, gen, longs).to(device);
  in.positions = at::arange(o.context, longs.device(device)).unsqueeze(0);
  in.positionLimit = o.context;
  in.lastOnly = true;
  ObserveContext ctx;
  ctx.phase = Phase::Prefill;
  ctx.rows = {ObservedRows{0, 0, 0, o.context, 0}};
  in.observe = &ctx;
  try {
    ensureRope(m, o.context + 1);
    (void)forward(m, in, nullptr);
  } catch (const c10::Error& e) {
    throw std::runtime_error(std::string("activation thresholds: prefill: ") + e.what_without_backtrace());
  }
  for (std::size_t k = 0; k < seen.size(); ++k)
    if (!seen[k])
      throw std::runtime_error("activation thresholds: the prefill did not observe layer " +
                               std::to_string(k / kProjectionInputs) + "'s " +
                               projectionInputName(static_cast<ProjectionInput>(k % kProjectionInputs)) + " input");
  return out;
}

std::pair<double, double> measureReadBandwidth(const std::string& deviceName, std::uint64_t bytes) {
  const c10::Device device = parseDevice(deviceName);
  const bool cuda = device.is_cuda();
  try {
    const std::uint64_t probe = cuda ? bytes : std::min<std::uint64_t>(bytes, 256ull << 20);
    return measureBandwidth(device, probe, cuda);
  } catch (const c10::Error& e) {
    throw std::runtime_error(std::string("bench decode: bandwidth probe: ") + e.what_without_backtrace());
  }
}

}  // namespace sdw::gpu
