// Calibration statistics: the per-input accumulator (sum x x^T, sum x^2),
// the budget split of an AR batch, and the two capture modes (exact: observed
// during KV-cache decoding; re-forward: one teacher-forced pass afterwards).

#include "gpu/calibration_internal.h"
#include "gpu/colstats_ops.h"

#include "core/timing.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace sdw::gpu {

namespace {

// Removes a tensor observer when the scope ends, also on exceptions.
class ObserverGuard {
 public:
  ObserverGuard(Model& m, TensorObserver obs) : model_(m), id_(addTensorObserver(m, std::move(obs))) {}
  ~ObserverGuard() { model_.removeObserver(id_); }
  ObserverGuard(const ObserverGuard&) = delete;
  ObserverGuard& operator=(const ObserverGuard&) = delete;

 private:
  Model& model_;
  int id_;
};

// fp32 rows that hold 16-bit values (bf16: 8-bit significands, fp16: 11) are exact in
// TF32 (11-bit significands), so TF32 tensor cores form their products exactly and only
// the order of the fp32 accumulation differs from plain fp32 matmul, at several times its
// rate on the GPU: these sums are most of the work of capturing calibration statistics.
// Off again afterwards: nothing else in the workbench turns TF32 on (and only the setter
// is called: LibTorch 2.9+ warns on the old getter).
class Tf32Scope {
 public:
  explicit Tf32Scope(bool on) : on_(on) {
    if (on_) at::globalContext().setAllowTF32CuBLAS(true);
  }
  ~Tf32Scope() {
    if (on_) at::globalContext().setAllowTF32CuBLAS(false);
  }
  Tf32Scope(const Tf32Scope&) = delete;
  Tf32Scope& operator=(const Tf32Scope&) = delete;

 private:
  bool on_;
};

// Total staging memory across all inputs.
constexpr std::uint64_t kStageBudgetBytes = std::uint64_t{256} << 20;

// Per layer: q/k/v and gate/up read the hidden state, o the attention output, down the MLP activation.
std::int64_t sumDIn(const ModelConfig& c) { return c.numLayers * (2 * c.hiddenSize + c.qDim() + c.intermediateSize); }

}  // namespace

std::vector<InputStats> describeInputs(const ModelConfig& config) {
  const auto mods = projectionModules(config, "float32");
  std::vector<InputStats> out;
  for (int l = 0; l < config.numLayers; ++l) {
    std::map<std::string, std::string> byKind;
    for (const auto& m : mods)
      if (m.layer == l) byKind[m.kind] = m.name;
    const auto make = [&](std::vector<std::string> kinds, std::int64_t dIn) {
      InputStats s;
      for (const auto& k : kinds) s.modules.push_back(byKind.at(k));
      s.name = s.modules.front();
      s.layer = l;
      s.dIn = dIn;
      out.push_back(std::move(s));
    };
    make({"q_proj", "k_proj", "v_proj"}, config.hiddenSize);
    make({"o_proj"}, config.qDim());
    make({"gate_proj", "up_proj"}, config.hiddenSize);
    make({"down_proj"}, config.intermediateSize);
  }
  return out;
}

std::int64_t StatsAccumulator::stageRows(const ModelConfig& config) {
  const auto perRow = static_cast<std::uint64_t>(sumDIn(config)) * sizeof(float);
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(kStageBudgetBytes / std::max<std::uint64_t>(perRow, 1)), 8, 512);
}

std::uint64_t StatsAccumulator::stageBytes(const ModelConfig& config) {
  return static_cast<std::uint64_t>(stageRows(config)) * static_cast<std::uint64_t>(sumDIn(config)) * sizeof(float);
}

StatsAccumulator::StatsAccumulator(const ModelConfig& config, c10::Device device, int onlyLayer, bool halves)
    : inputs_(describeInputs(config)), onlyLayer_(onlyLayer), halves_(halves) {
  if (onlyLayer >= 0)
    std::erase_if(inputs_, [onlyLayer](const InputStats& s) { return s.layer != onlyLayer; });
  const auto f32 = at::TensorOptions().dtype(at::kFloat).device(device);
  const std::int64_t rows = stageRows(config);
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    auto& s = inputs_[i];
    s.xtx = at::zeros({s.dIn, s.dIn}, f32);
    s.sumSq = at::zeros({s.dIn}, f32);
    s.stage = at::empty({rows, s.dIn}, f32);
    if (halves) s.xtxA = at::zeros({s.dIn, s.dIn}, f32);
    index_[s.name] = i;
  }
}

InputStats& StatsAccumulator::input(const std::string& firstModule) {
  const auto it = index_.find(firstModule);
  if (it == index_.end()) throw std::logic_error("calibration: no input named " + firstModule);
  return inputs_[it->second];
}

void StatsAccumulator::add(const std::string& firstModule, const at::Tensor& x, int half) {
  const auto it = index_.find(firstModule);
  if (it == index_.end()) {
    if (onlyLayer_ >= 0) return;  // another layer's input
    throw std::logic_error("calibration: no input named " + firstModule);
  }
  // A row without a half would leave the halves short of the total.
  if (halves_ && half != 0 && half != 1) throw std::logic_error("calibration: rows without a half for " + firstModule);
  const std::size_t i = it->second;
  addRows(inputs_[i], x, half);
  const bool lastOfLayer = i + 1 == inputs_.size() || inputs_[i + 1].layer != inputs_[i].layer;
  if (layerDone_ && lastOfLayer) layerDone_(inputs_[i].layer);
}

void StatsAccumulator::multiply(InputStats& s, const at::Tensor& rows, bool halfA) {
  // rows: [n, dIn] fp32 contiguous; xtx += rows^T rows in fp32.
  const Tf32Scope tf32(sixteenBitRows_ && rows.is_cuda());
  s.xtx.addmm_(rows.t(), rows);
  accumulateColumnSumSquares(rows, s.sumSq);
  if (halfA) s.xtxA.addmm_(rows.t(), rows);
}

// The staged rows mix both halves (a decode step holds rows of several
// generations): the total takes them all, half a the rows listed in stagedA.
void StatsAccumulator::multiplyStaged(InputStats& s) {
  if (s.staged == 0) return;
  const at::Tensor rows = s.stage.narrow(0, 0, s.staged);
  const bool allA = halves_ && static_cast<std::int64_t>(s.stagedA.size()) == s.staged;
  multiply(s, rows, allA);
  if (halves_ && !allA && !s.stagedA.empty()) {
    const at::Tensor idx = at::from_blob(s.stagedA.data(), {static_cast<std::int64_t>(s.stagedA.size())}, at::kLong)
                               .to(rows.device());
    const at::Tensor a = rows.index_select(0, idx);  // [nA, dIn]
    const Tf32Scope tf32(sixteenBitRows_ && a.is_cuda());
    s.xtxA.addmm_(a.t(), a);
  }
  s.stagedA.clear();
  s.staged = 0;
}

void StatsAccumulator::addRows(InputStats& s, const at::Tensor& x, int half) {
  // x: [n, dIn] in the compute dtype, a view into the forward pass
  const std::int64_t n = x.size(0);
  if (n == 0) return;
  if (x.scalar_type() != at::kBFloat16 && x.scalar_type() != at::kHalf) sixteenBitRows_ = false;
  const bool halfA = halves_ && half == 0;
  const std::int64_t cap = s.stage.size(0);
  if (n >= cap / 2) {
    // Large groups (teacher-forced rows) go straight through, in bounded chunks.
    multiplyStaged(s);
    for (std::int64_t b = 0; b < n; b += kChunkRows) {
      const std::int64_t m = std::min(kChunkRows, n - b);
      multiply(s, x.narrow(0, b, m).to(at::kFloat).contiguous(), halfA);
    }
  } else {
    if (s.staged + n > cap) multiplyStaged(s);
    s.stage.narrow(0, s.staged, n).copy_(x);
    if (halfA)
      for (std::int64_t r = 0; r < n; ++r) s.stagedA.push_back(s.staged + r);
    s.staged += n;
  }
  s.tokens += n;
  if (halfA) s.tokensA += n;
}

void StatsAccumulator::flush() {
  const c10::NoGradGuard noGrad;
  for (auto& s : inputs_) multiplyStaged(s);
}

void StatsAccumulator::synchronize() {
  if (!inputs_.empty()) (void)inputs_.back().xtx.sum().item<float>();
}

// ---------------------------------------------------------------- budget split

bool checkpointDue(double since, double intervalSeconds, double lastTook) {
  if (intervalSeconds <= 0) return true;
  return since >= std::max(intervalSeconds, 9.0 * std::max(lastTook, 0.0));
}

void splitBudget(std::vector<GenerationRecord>& batch, bool includePrefill, std::int64_t remaining) {
  std::int64_t total = 0;
  for (auto& r : batch) {
    const auto L = static_cast<std::int64_t>(r.promptIds.size());
    r.prefillCounted = includePrefill ? std::min(L, std::max<std::int64_t>(0, remaining - total)) : 0;
    r.decodeCounted = 0;
    total += r.prefillCounted;
  }
  // Decode positions: at step s, the generated token g_s is read by every
  // generation that has a g_(s+1) (the last generated token is never read).
  for (std::int64_t s = 0; total < remaining; ++s) {
    bool any = false;
    for (auto& r : batch) {
      if (s >= static_cast<std::int64_t>(r.tokens.size()) - 1) continue;
      any = true;
      if (total >= remaining) break;
      ++r.decodeCounted;
      ++total;
    }
    if (!any) break;
  }
}

// ---------------------------------------------------------------- teacher-forced pass

void forwardCollect(Model& model, const std::vector<ForwardRows>& seqs, StatsAccumulator& acc) {
  // One event per sequence (promptIndex = its row b): its rows go to its half.
  forwardObserve(model, seqs, [&acc, &seqs](const ActivationEvent& ev, const at::Tensor& x) {
    acc.add(ev.modules.front(), x, seqs[static_cast<std::size_t>(ev.promptIndex)].half);
  });
}

void forwardObserve(Model& model, const std::vector<ForwardRows>& seqs, const TensorObserver& observer) {
  auto& m = model.impl();
  if (seqs.empty()) return;
  const auto B = static_cast<std::int64_t>(seqs.size());
  std::int64_t T = 0;
  for (const auto& s : seqs) T = std::max<std::int64_t>(T, static_cast<std::int64_t>(s.ids.size()));
  std::vector<std::int32_t> idsHost(static_cast<std::size_t>(B * T), 0);
  std::vector<std::int64_t> posHost(static_cast<std::size_t>(B * T), 0);
  std::vector<std::uint8_t> validHost(static_cast<std::size_t>(B * T), 1);
  bool ragged = false;
  ObserveContext ctx;
  ctx.phase = Phase::Prefill;
  for (std::int64_t b = 0; b < B; ++b) {
    const auto& s = seqs[static_cast<std::size_t>(b)];
    const auto len = static_cast<std::int64_t>(s.ids.size());
    const std::int64_t pad = T - len;  // left padding: every sequence ends at T - 1
    ragged = ragged || pad > 0;
    for (std::int64_t t = 0; t < T; ++t) {
      const auto k = static_cast<std::size_t>(b * T + t);
      if (t < pad) {
        validHost[k] = 0;
      } else {
        idsHost[k] = s.ids[static_cast<std::size_t>(t - pad)];
        posHost[k] = t - pad;
      }
    }
    if (s.begin < 0 || s.count < 0 || s.begin + s.count > len)
      throw std::logic_error("calibration: rows outside the sequence");
    if (s.count > 0)
      ctx.rows.push_back({static_cast<int>(b), static_cast<int>(b), pad + s.begin, s.count, static_cast<int>(s.begin)});
  }
  if (ctx.rows.empty()) return;
  try {
    const c10::NoGradGuard noGrad;
    ForwardInput in;
    in.ids = at::from_blob(idsHost.data(), {B, T}, at::TensorOptions().dtype(at::kInt)).to(m.device, at::kLong);
    in.positions = at::from_blob(posHost.data(), {B, T}, at::TensorOptions().dtype(at::kLong)).to(m.device);
    in.positionLimit = T;
    if (ragged)
      in.keyValid = at::from_blob(validHost.data(), {B, T}, at::TensorOptions().dtype(at::kByte)).to(m.device, at::kBool);
    in.lastOnly = true;  // no logits needed beyond one row
    in.observe = &ctx;
    const ObserverGuard guard(model, observer);
    (void)forward(m, in, nullptr);
  } catch (const c10::Error& e) {
    throw std::runtime_error(std::string("calibration forward failed: ") + e.what_without_backtrace());
  }
}

// ---------------------------------------------------------------- one AR batch

namespace {
void bookPhases(const std::vector<GenerationResult>& results, ArBatchStats& out) {
  if (results.empty()) return;
  out.launchSeconds = results.front().launchSeconds;
  out.readbackSeconds = results.front().readbackSeconds;
  out.sampleSeconds = results.front().sampleSeconds;
}
}  // namespace

ArBatchStats runArBatch(Model& model, Model& generator, std::vector<GenerationRecord>& batch,
                        const CalibrationSettings& settings, const std::vector<std::int32_t>& stopIds,
                        std::int64_t remaining, StatsAccumulator& acc,
                        const std::function<void(std::int64_t)>& onToken) {
  ArBatchStats out;
  if (batch.empty()) return out;
  const bool exact = settings.capture == CaptureMode::Exact;
  if (exact && &model != &generator) throw std::invalid_argument("exact capture needs the generating model itself");
  const auto B = batch.size();
  std::vector<std::vector<std::int32_t>> prompts;
  for (const auto& r : batch) prompts.push_back(r.promptIds);
  GenerationOptions go;
  go.maxNewTokens = settings.maxNewTokens;
  go.sampling = settings.sampling;
  go.sampling.seed = settings.seed + static_cast<std::uint64_t>(batch.front().index);  // row b: seed + j
  go.stopIds = stopIds;
  std::int64_t generated = 0;
  const auto tokenCb = [&](int, std::int32_t) {
    ++generated;
    if (onToken) onToken(generated);
    return true;
  };

  std::vector<GenerationResult> results;
  const auto t0 = std::chrono::steady_clock::now();
  if (exact) {
    // Rows are admitted in the order splitBudget() counts them: every prompt's
    // prefill positions (ablation only) first, then decode steps as they come.
    std::vector<std::int64_t> L(B), begin(B), end(B);
    std::int64_t total = 0;
    for (std::size_t i = 0; i < B; ++i) {
      L[i] = static_cast<std::int64_t>(batch[i].promptIds.size());
      begin[i] = settings.includePrefill ? 0 : L[i];
      const std::int64_t p = settings.includePrefill ? std::min(L[i], std::max<std::int64_t>(0, remaining - total)) : 0;
      end[i] = begin[i] + p;
      total += p;
    }
    const std::string first = acc.inputs().front().name;  // layer 0's q/k/v: the first event of each step
    const ObserverGuard guard(model, [&](const ActivationEvent& ev, const at::Tensor& x) {
      const auto i = static_cast<std::size_t>(ev.promptIndex);
      if (ev.phase == Phase::Prefill && !settings.includePrefill) return;
      if (ev.phase == Phase::Decode && ev.layer == 0 && ev.modules.front() == first && total < remaining &&
          end[i] == ev.position) {
        end[i] = ev.position + 1;
        ++total;
      }
      const std::int64_t lo = std::max<std::int64_t>(ev.position, begin[i]);
      const std::int64_t hi = std::min<std::int64_t>(ev.position + ev.tokens, end[i]);
      if (hi > lo) acc.add(ev.modules.front(), x.narrow(0, lo - ev.position, hi - lo), batch[i].half);
    });
    results = generator.generateBatch(prompts, go, tokenCb);
    bookPhases(results, out);
    for (std::size_t i = 0; i < B; ++i) batch[i].tokens = results[i].tokens;
    splitBudget(batch, settings.includePrefill, remaining);
    for (std::size_t i = 0; i < B; ++i) {
      const std::int64_t counted = end[i] - begin[i];
      if (counted != batch[i].prefillCounted + batch[i].decodeCounted)
        throw std::logic_error("calibration: exact capture admitted " + std::to_string(counted) +
                               " positions of generation " + std::to_string(batch[i].index) + ", the budget split " +
                               std::to_string(batch[i].prefillCounted + batch[i].decodeCounted));
    }
    out.generateSeconds = secondsSince(t0);
  } else {
    results = generator.generateBatch(prompts, go, tokenCb);
    out.generateSeconds = secondsSince(t0);
    bookPhases(results, out);
    for (std::size_t i = 0; i < B; ++i) batch[i].tokens = results[i].tokens;
    splitBudget(batch, settings.includePrefill, remaining);
    std::vector<ForwardRows> seqs;
    for (const auto& r : batch) {
      ForwardRows f;
      f.ids = r.promptIds;
      f.ids.insert(f.ids.end(), r.tokens.begin(), r.tokens.begin() + r.decodeCounted);  // g_0 .. g_(k-1)
      const auto L = static_cast<std::int64_t>(r.promptIds.size());
      f.begin = settings.includePrefill ? 0 : L;
      f.count = r.prefillCounted + r.decodeCounted;
      f.half = r.half;
      seqs.push_back(std::move(f));
    }
    const auto t1 = std::chrono::steady_clock::now();
    forwardCollect(model, seqs, acc);
    out.forwardSeconds = secondsSince(t1);
  }
  for (const auto& r : batch) out.counted += r.prefillCounted + r.decodeCounted;
  return out;
}

}  // namespace sdw::gpu
