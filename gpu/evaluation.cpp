// Quality evaluation: perplexities, on-policy agreement with the dense model
// over seeds, side-by-side generations (the run file: gpu/evaluation_run.cpp).
// Built on the public model API (teacher-forced logits, batched generation); the
// log-softmax math runs on the host in double.

#include "gpu/evaluation.h"

#include "core/chat_format.h"
#include "core/tokenizer.h"
#include "gpu/activation_thresholds.h"
#include "gpu/calibration_sources.h"
#include "gpu/device.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace sdw::gpu {

namespace {

constexpr std::size_t kBatch = 16;  // prompts per generateBatch call

// log(sum(exp(row))) in double.
double logSumExp(std::span<const float> row) {
  double mx = -std::numeric_limits<double>::infinity();
  for (const float v : row) mx = std::max(mx, static_cast<double>(v));
  double s = 0;
  for (const float v : row) s += std::exp(static_cast<double>(v) - mx);
  return mx + std::log(s);
}

std::span<const float> rowOf(const std::vector<float>& logits, std::size_t t, std::size_t vocab) {
  return {logits.data() + t * vocab, vocab};
}

// Continuations of every prompt, kBatch prompts at a time; prompt i is
// sampled with seed `seedBase + i` (generateBatch gives row b seed + b).
std::vector<GenerationResult> generateAll(Model& model, const std::vector<std::vector<std::int32_t>>& prompts,
                                          GenerationOptions options) {
  std::vector<GenerationResult> out;
  const std::uint64_t base = options.sampling.seed;
  for (std::size_t i = 0; i < prompts.size(); i += kBatch) {
    const std::size_t n = std::min(kBatch, prompts.size() - i);
    std::vector<std::vector<std::int32_t>> chunk(prompts.begin() + static_cast<std::ptrdiff_t>(i),
                                                 prompts.begin() + static_cast<std::ptrdiff_t>(i + n));
    options.sampling.seed = base + i;
    auto r = model.generateBatch(chunk, options);
    for (auto& g : r) out.push_back(std::move(g));
  }
  return out;
}

double medianOf(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string labelFor(const std::filesystem::path& dir) {
  auto p = dir;
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

}  // namespace

Spread spreadOf(const std::vector<double>& values) {
  Spread s;
  s.n = static_cast<int>(values.size());
  if (values.empty()) {
    s.mean = s.std = s.min = s.max = std::numeric_limits<double>::quiet_NaN();
    return s;
  }
  double sum = 0;
  for (const double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  double var = 0;
  for (const double v : values) var += (v - s.mean) * (v - s.mean);
  s.std = std::sqrt(var / static_cast<double>(values.size()));
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  return s;
}

double klDivergence(std::span<const float> pLogits, std::span<const float> qLogits) {
  if (pLogits.size() != qLogits.size()) throw std::invalid_argument("klDivergence: rows of different sizes");
  const double lp = logSumExp(pLogits), lq = logSumExp(qLogits);
  double kl = 0;
  for (std::size_t i = 0; i < pLogits.size(); ++i) {
    const double logp = static_cast<double>(pLogits[i]) - lp;
    const double logq = static_cast<double>(qLogits[i]) - lq;
    const double p = std::exp(logp);
    if (p > 0) kl += p * (logp - logq);
  }
  return std::max(kl, 0.0);  // rounding can leave -1e-17 for equal rows
}

NllSum sequenceNll(Model& model, const std::vector<std::int32_t>& ids, std::size_t from) {
  if (from < 1) throw std::invalid_argument("sequenceNll: the first scored position must be >= 1");
  NllSum r;
  if (ids.size() <= from) return r;
  const auto vocab = static_cast<std::size_t>(model.config().vocabSize);
  const std::vector<float> logits = model.logits(ids);  // [T, vocab]
  for (std::size_t t = from; t < ids.size(); ++t) {
    const auto row = rowOf(logits, t - 1, vocab);  // predicts ids[t]
    r.sum += logSumExp(row) - static_cast<double>(row[static_cast<std::size_t>(ids[t])]);
    ++r.count;
  }
  return r;
}

TrajectoryScore scoreTrajectory(Model& dense, Model& model, const std::vector<std::int32_t>& ids,
                                std::size_t promptLength) {
  if (promptLength < 1) throw std::invalid_argument("scoreTrajectory: empty prompt");
  TrajectoryScore s;
  if (ids.size() <= promptLength) return s;
  const auto vocab = static_cast<std::size_t>(dense.config().vocabSize);
  if (static_cast<std::size_t>(model.config().vocabSize) != vocab)
    throw std::invalid_argument("scoreTrajectory: the models have different vocabularies");
  const std::vector<float> ld = dense.logits(ids);  // [T, vocab]
  const std::vector<float> lm = model.logits(ids);
  for (std::size_t t = promptLength; t < ids.size(); ++t) {
    const auto rd = rowOf(ld, t - 1, vocab), rm = rowOf(lm, t - 1, vocab);
    s.kl.push_back(klDivergence(rd, rm));
    const std::int32_t ad = argmax(rd);
    s.agree.push_back(ad == argmax(rm));
    if (s.firstDivergence < 0 && ids[t] != ad) s.firstDivergence = static_cast<int>(t - promptLength);
  }
  return s;
}

EvaluationResult evaluate(const EvaluationSettings& settings, const ProgressFn& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  if (settings.seeds.empty()) throw std::invalid_argument("evaluate: no seeds");
  if (settings.maxNewTokens < 1) throw std::invalid_argument("evaluate: max new tokens must be >= 1");
  if (settings.window < 2) throw std::invalid_argument("evaluate: the text window must be >= 2 tokens");
  validateDecoding(settings.decoding(), "evaluate");
  requireCheckpointFolder(settings.dense);
  for (const auto& m : settings.models) requireCheckpointFolder(m);
  EvaluationResult res;
  res.settings = settings;

  const Tokenizer tok = Tokenizer::fromFile(settings.dense / "tokenizer.json");
  const ChatFamily family = detectChatFamily(tok, settings.dense);

  const std::vector<Prompt> prompts = readPromptSubset(settings.prompts, settings.maxPrompts, "evaluate");
  std::vector<std::vector<std::int32_t>> promptIds;
  for (const auto& p : prompts) promptIds.push_back(encodePrompt(tok, family, p.prompt));
  res.prompts = static_cast<int>(prompts.size());

  std::vector<std::vector<std::int32_t>> windows;
  if (!settings.text.empty() && settings.windows > 0) {
    CorpusWindows cw(readCorpus(settings.text), tok, settings.window, settings.textSeed);
    for (int w = 0; w < settings.windows; ++w) windows.push_back(cw.draw(w).ids);
  }
  res.windows = static_cast<int>(windows.size());

  const LoadOptions lo{settings.device, settings.dtype};
  std::unique_ptr<Model> dense = Model::load(settings.dense, lo);
  LoadOptions mlo = lo;  // the compared models': with activation sparsity
  res.activationThresholdsRunId =
      applyActivationSparsity(mlo, settings.activationSparsity, settings.activationThresholds, dense->config()).runId;

  GenerationOptions gen;
  gen.maxNewTokens = settings.maxNewTokens;
  gen.sampling = samplingOptions(settings.decoding());
  if (settings.stopAtEos) gen.stopIds = tok.stopIds();

  // What each pruned model was calibrated on, against this decoding.
  for (const auto& m : settings.models) res.calibrations.push_back(findPrunedCalibration(m));
  DecodingCheck check =
      checkPrunedCalibrations(res.calibrations, settings.decoding(), settings.prompts, DecodingJob::Evaluation);
  if (const std::string note = generationConfigNote(settings.dense, settings.decoding()); !note.empty())
    check.notes.push_back(note);
  res.warnings = std::move(check.warnings);
  res.notes = std::move(check.notes);

  const double units = 1.0 + static_cast<double>(1 + settings.models.size()) *
                                  (2.0 + static_cast<double>(settings.seeds.size()) + 1.0);
  double done = 0;
  const auto tick = [&](const std::string& stage) {
    reportOrThrow(progress, {done, units, "stages", stage});
    done += 1;
  };

  // Dense generations scored by every model (seed: the first one).
  tick("dense generations");
  std::vector<std::vector<std::int32_t>> denseSeqs;
  {
    GenerationOptions g = gen;
    g.sampling.seed = settings.seeds.front() * 1000003ULL;
    const auto out = generateAll(*dense, promptIds, g);
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::vector<std::int32_t> seq = promptIds[i];
      seq.insert(seq.end(), out[i].tokens.begin(), out[i].tokens.end());
      denseSeqs.push_back(std::move(seq));
      res.denseGenerations.push_back(tok.decode(out[i].tokens, true));
      res.denseGenerationIds.push_back(out[i].tokens);
    }
  }

  const std::size_t nSide = std::min<std::size_t>(static_cast<std::size_t>(std::max(settings.sideBySidePrompts, 0)),
                                                  prompts.size());
  for (std::size_t i = 0; i < nSide; ++i) res.sideBySide.push_back({prompts[i].id, prompts[i].prompt, {}});

  for (std::size_t mi = 0; mi <= settings.models.size(); ++mi) {
    ModelEvaluation me;
    me.isDense = mi == 0;
    me.dir = me.isDense ? settings.dense : settings.models[mi - 1];
    me.label = me.isDense ? "dense" : labelFor(me.dir);
    std::unique_ptr<Model> owned;
    if (!me.isDense) {
      owned = Model::load(me.dir, mlo);
      if (owned->config().vocabSize != dense->config().vocabSize)
        throw std::invalid_argument("evaluate: " + me.dir.string() + " has a different vocabulary than the dense model");
    }
    Model& model = me.isDense ? *dense : *owned;

    tick(me.label + ": fixed-text perplexity");
    NllSum text;
    for (const auto& w : windows) {
      const NllSum s = sequenceNll(model, w, 1);
      text.sum += s.sum;
      text.count += s.count;
    }
    me.tokensText = text.count;
    me.nllText = text.count ? text.sum / static_cast<double>(text.count) : std::numeric_limits<double>::quiet_NaN();
    me.pplText = std::exp(me.nllText);

    tick(me.label + ": dense-generation perplexity");
    NllSum dg;
    for (std::size_t i = 0; i < denseSeqs.size(); ++i) {
      const NllSum s = sequenceNll(model, denseSeqs[i], promptIds[i].size());
      dg.sum += s.sum;
      dg.count += s.count;
    }
    me.tokensDenseGen = dg.count;
    me.nllDenseGen = dg.count ? dg.sum / static_cast<double>(dg.count) : std::numeric_limits<double>::quiet_NaN();
    me.pplDenseGen = std::exp(me.nllDenseGen);

    std::vector<double> kls, agrees, divs;
    for (const std::uint64_t seed : settings.seeds) {
      tick(me.label + ": on-policy, seed " + std::to_string(seed));
      GenerationOptions g = gen;
      g.sampling.seed = seed * 1000003ULL;
      const auto traj = generateAll(model, promptIds, g);
      OnPolicySeed ps;
      ps.seed = seed;
      double klSum = 0;
      std::int64_t agreeCount = 0;
      std::vector<double> firsts;
      for (std::size_t i = 0; i < traj.size(); ++i) {
        std::vector<std::int32_t> ids = promptIds[i];
        ids.insert(ids.end(), traj[i].tokens.begin(), traj[i].tokens.end());
        const TrajectoryScore sc = scoreTrajectory(*dense, model, ids, promptIds[i].size());
        for (std::size_t t = 0; t < sc.kl.size(); ++t) {
          klSum += sc.kl[t];
          agreeCount += sc.agree[t] ? 1 : 0;
        }
        ps.steps += static_cast<std::int64_t>(sc.kl.size());
        ps.firstDivergence.push_back(sc.firstDivergence);
        ps.trajectoryLength.push_back(static_cast<int>(sc.kl.size()));
        if (sc.firstDivergence < 0) ++ps.noDivergence;
        firsts.push_back(sc.firstDivergence < 0 ? static_cast<double>(sc.kl.size()) : sc.firstDivergence);
      }
      ps.klMean = ps.steps ? klSum / static_cast<double>(ps.steps) : std::numeric_limits<double>::quiet_NaN();
      ps.agreement = ps.steps ? static_cast<double>(agreeCount) / static_cast<double>(ps.steps)
                              : std::numeric_limits<double>::quiet_NaN();
      ps.firstDivergenceMedian = medianOf(firsts);
      kls.push_back(ps.klMean);
      agrees.push_back(ps.agreement);
      divs.push_back(ps.firstDivergenceMedian);
      me.seeds.push_back(std::move(ps));
    }
    me.kl = spreadOf(kls);
    me.agreement = spreadOf(agrees);
    me.firstDivergence = spreadOf(divs);

    tick(me.label + ": side-by-side");
    if (nSide > 0) {
      GenerationOptions g = gen;
      g.sampling = SamplingOptions{};  // greedy: one comparable text per model
      const std::vector<std::vector<std::int32_t>> first(promptIds.begin(),
                                                         promptIds.begin() + static_cast<std::ptrdiff_t>(nSide));
      const auto out = generateAll(model, first, g);
      for (std::size_t i = 0; i < nSide; ++i) res.sideBySide[i].texts.push_back(tok.decode(out[i].tokens, true));
    }
    res.models.push_back(std::move(me));
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace sdw::gpu
