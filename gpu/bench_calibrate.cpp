// AR calibration throughput in both capture modes (see bench_calibrate.h).

#include "gpu/bench_calibrate.h"
#include "gpu/calibration_internal.h"
#include "gpu/device.h"

#include "core/timing.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <random>
#include <stdexcept>

namespace sdw::gpu {

namespace {

struct Measured {
  CaptureBenchResult result;
  std::vector<GenerationRecord> records;
};

// Runs batches of random prompts until `target` decode positions are in `acc`.
Measured measure(Model& model, const CalibrateBenchOptions& o, CaptureMode capture, int batch,
                 std::int64_t target, StatsAccumulator& acc, bool keep, const ProgressFn& progress) {
  CalibrationSettings s;
  s.source = CalibrationSource::Ar;
  s.capture = capture;
  s.maxNewTokens = o.maxNewTokens;
  s.batch = batch;
  s.seed = o.seed;
  std::mt19937_64 rng(o.seed + 17);
  std::uniform_int_distribution<std::int32_t> tok(0, static_cast<std::int32_t>(model.config().vocabSize - 1));
  Measured m;
  m.result.capture = capture;
  m.result.batch = batch;
  acc.synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  std::int64_t counted = 0, j = 0;
  while (counted < target) {
    std::vector<GenerationRecord> records(static_cast<std::size_t>(batch));
    for (auto& r : records) {
      r.index = j++;
      r.promptIds.resize(static_cast<std::size_t>(o.promptTokens));
      for (auto& id : r.promptIds) id = tok(rng);
    }
    // No stop tokens: random weights would stop at random places.
    const auto st = runArBatch(model, model, records, s, {}, target - counted, acc);
    counted += st.counted;
    m.result.generateSeconds += st.generateSeconds;
    m.result.generateSecondsPerCall.push_back(st.generateSeconds);
    m.result.forwardSeconds += st.forwardSeconds;
    m.result.launchSeconds += st.launchSeconds;
    m.result.readbackSeconds += st.readbackSeconds;
    m.result.sampleSeconds += st.sampleSeconds;
    m.result.generations += batch;
    if (keep) m.records.insert(m.records.end(), records.begin(), records.end());
    Progress p;
    p.done = static_cast<double>(counted);
    p.total = static_cast<double>(target);
    p.unit = "tokens";
    p.stage = captureModeName(capture);
    reportOrThrow(progress, p);
  }
  acc.flush();
  acc.synchronize();
  m.result.seconds = secondsSince(t0);
  m.result.engine = capture == CaptureMode::Exact ? "eager forward (observed)" : model.engineDescription();
  m.result.tokens = counted;
  m.result.tokensPerSecond = m.result.seconds > 0 ? static_cast<double>(counted) / m.result.seconds : 0;
  m.result.extrapolatedSeconds =
      m.result.tokensPerSecond > 0 ? static_cast<double>(o.extrapolateTokens) / m.result.tokensPerSecond : 0;
  return m;
}

}  // namespace

CalibrateBenchResult runCalibrateBench(const CalibrateBenchOptions& o, const ProgressFn& progress) {
  if (o.device != "cpu" && !deviceInfo().cudaAvailable) throw std::runtime_error("no GPU: " + deviceInfo().reason);
  if (o.tokens < 1 || o.exactTokens < 1 || o.batch < 1 || o.exactBatch < 1 || o.promptTokens < 1 || o.maxNewTokens < 2)
    throw std::invalid_argument("bench calibrate: tokens, batches and prompt length must be >= 1, max new tokens >= 2");
  // Whole batches only: a partly counted last batch would still pay for every
  // step it generates. Without stop tokens each generation reads back
  // maxNewTokens - 1 tokens.
  const auto wholeBatches = [&](std::int64_t target, int batch) {
    const std::int64_t per = static_cast<std::int64_t>(batch) * (o.maxNewTokens - 1);
    return std::max<std::int64_t>(1, (target + per / 2) / per) * per;
  };
  const std::int64_t reforwardTokens = wholeBatches(o.tokens, o.batch);
  const std::int64_t exactTokens = wholeBatches(o.exactTokens, o.exactBatch);
  CalibrateBenchResult r;
  r.configName = o.configName;
  r.dtype = canonicalDtype(o.dtype);
  r.device = o.device == "cpu" ? "cpu" : describeDevice(deviceInfo());
  r.extrapolateTokens = o.extrapolateTokens;
  const c10::NoGradGuard noGrad;
  const auto t0 = std::chrono::steady_clock::now();
  LoadOptions lo;
  lo.device = o.device;
  lo.dtype = r.dtype;
  auto model = o.checkpoint.empty() ? Model::randomInit(o.config, lo, o.seed) : Model::load(o.checkpoint, lo);
  const ModelConfig config = model->config();
  r.parameters = config.parameterCount();
  const c10::Device dev = model->impl().device;
  for (const auto& in : describeInputs(config))
    r.accumulatorBytes += static_cast<std::uint64_t>(in.dIn * in.dIn + in.dIn) * 4;
  r.setupSeconds = secondsSince(t0);

  // Warm-up (cuBLAS handles, allocator, RoPE tables) in both modes, untimed.
  {
    StatsAccumulator warm(config, dev);
    CalibrateBenchOptions w = o;
    w.maxNewTokens = 4;
    (void)measure(*model, w, CaptureMode::Reforward, std::min(o.batch, 2), 3, warm, false, {});
    (void)measure(*model, w, CaptureMode::Exact, 1, 3, warm, false, {});
  }
  if (o.reforward) {
    StatsAccumulator acc(config, dev);
    r.captures.push_back(measure(*model, o, CaptureMode::Reforward, o.batch, reforwardTokens, acc, false, progress).result);
  }
  if (o.exact) {
    StatsAccumulator acc(config, dev);
    auto m = measure(*model, o, CaptureMode::Exact, o.exactBatch, exactTokens, acc, o.checkAgreement, progress);
    r.captures.push_back(m.result);
    if (o.checkAgreement) {
      // The same generations, re-forwarded: the two modes must give the same sums.
      StatsAccumulator ref(config, dev);
      std::vector<ForwardRows> seqs;
      for (const auto& rec : m.records) {
        ForwardRows f;
        f.ids = rec.promptIds;
        f.ids.insert(f.ids.end(), rec.tokens.begin(), rec.tokens.begin() + rec.decodeCounted);
        f.begin = static_cast<std::int64_t>(rec.promptIds.size());
        f.count = rec.decodeCounted;
        seqs.push_back(std::move(f));
      }
      const auto step = static_cast<std::size_t>(o.batch);
      for (std::size_t b = 0; b < seqs.size(); b += step) {
        const std::vector<ForwardRows> chunk(seqs.begin() + static_cast<std::ptrdiff_t>(b),
                                             seqs.begin() + static_cast<std::ptrdiff_t>(std::min(seqs.size(), b + step)));
        forwardCollect(*model, chunk, ref);
      }
      ref.flush();
      double worst = 0;
      for (std::size_t i = 0; i < acc.inputs().size(); ++i) {
        const at::Tensor a = acc.inputs()[i].xtx.to(at::kDouble), b = ref.inputs()[i].xtx.to(at::kDouble);
        const double rel = (a - b).norm().item<double>() / std::max(b.norm().item<double>(), 1e-30);
        r.agreementPerInput.emplace_back(acc.inputs()[i].name, rel);
        worst = std::max(worst, rel);
      }
      r.agreement = worst;
    }
  }
  const CaptureBenchResult* ex = nullptr;
  const CaptureBenchResult* rf = nullptr;
  for (const auto& c : r.captures) (c.capture == CaptureMode::Exact ? ex : rf) = &c;
  if (ex && rf && ex->tokensPerSecond > 0) r.speedup = rf->tokensPerSecond / ex->tokensPerSecond;
  r.method = "random prompts of " + std::to_string(o.promptTokens) + " tokens, " +
             decodingOf(CalibrationSettings{}.sampling).describe() + " (calibration's default), " +
             std::to_string(o.maxNewTokens) +
             " new tokens each, no stop tokens; decode positions accumulated into fp32 "
             "sum x x^T and sum x^2 of every shared projection input; wall clock with the device synchronised; "
             "one untimed warm-up per mode";
  return r;
}

}  // namespace sdw::gpu
