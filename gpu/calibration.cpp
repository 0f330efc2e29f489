// Calibration runs: settings, the estimate, the fixed-text and AR sources,
// and the run file (checkpoints, cancel, resume, commit). The statistics and
// the capture modes live in calibration_stats.cpp.

#include "gpu/calibration_internal.h"
#include "core/disk_checks.h"
#include "core/json_limits.h"
#include "core/paths.h"
#include "gpu/calibration_sources.h"
#include "gpu/device.h"

#include "core/chat_format.h"
#include "core/decoding.h"
#include "core/format.h"
#include "core/runstore.h"
#include "core/timing.h"
#include "core/tokenizer.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <stdexcept>

namespace sdw::gpu {

namespace fs = std::filesystem;
namespace rs = sdw::runstore;

// ---------------------------------------------------------------- settings

std::string calibrationSourceName(CalibrationSource source) { return std::string(nameOf(kCalibrationSourceNames, source)); }
CalibrationSource parseCalibrationSource(std::string_view name) { return parseName(kCalibrationSourceNames, "source", name); }
std::string captureModeName(CaptureMode capture) { return std::string(nameOf(kCaptureModeNames, capture)); }
CaptureMode parseCaptureMode(std::string_view name) { return parseName(kCaptureModeNames, "capture", name); }
std::string statsStorageName(StatsStorage storage) { return std::string(nameOf(kStatsStorageNames, storage)); }
StatsStorage parseStatsStorage(std::string_view name) { return parseName(kStatsStorageNames, "storage", name); }
std::string chatModeName(ChatMode chat) { return std::string(nameOf(kChatModeNames, chat)); }
ChatMode parseChatMode(std::string_view name) { return parseName(kChatModeNames, "chat", name); }

std::string calibrationSettingsToJson(const CalibrationSettings& s) {
  const nlohmann::json j = {{"source", calibrationSourceName(s.source)},
                            {"model", recordedPath(s.model)},
                            {"corpus", recordedPath(s.corpus)},
                            {"prompts", recordedPath(s.prompts)},
                            {"cross_model", recordedPath(s.crossModel)},
                            {"token_budget", s.tokenBudget},
                            {"window", s.window},
                            {"max_new_tokens", s.maxNewTokens},
                            {"batch", s.batch},
                            {"capture", captureModeName(s.capture)},
                            {"include_prefill", s.includePrefill},
                            {"temperature", s.sampling.temperature},
                            {"top_k", s.sampling.topK},
                            {"top_p", s.sampling.topP},
                            {"seed", s.seed},
                            {"device", s.device},
                            {"dtype", s.dtype},
                            {"storage", statsStorageName(s.storage)},
                            {"storage_top_k", s.topK},
                            {"chat", chatModeName(s.chat)},
                            {"checkpoint_seconds", s.checkpointSeconds},
                            {"checkpoint_every", s.checkpointEvery},
                            {"halves", s.halves},
                            {"sample_rows", s.sampleRows}};
  return j.dump();
}

CalibrationSettings calibrationSettingsFromJson(const std::string& text, const fs::path& runFile) {
  const auto j = parseJsonBounded(text, runFile.empty() ? std::string("calibration settings") : runFile.string() + ": settings_json");
  CalibrationSettings s;
  s.source = parseCalibrationSource(j.at("source").get<std::string>());
  s.model = resolveRecordedPath(j.at("model").get<std::string>(), runFile);
  s.corpus = resolveRecordedPath(j.value("corpus", std::string()), runFile);
  s.prompts = resolveRecordedPath(j.value("prompts", std::string()), runFile);
  s.crossModel = resolveRecordedPath(j.value("cross_model", std::string()), runFile);
  s.tokenBudget = j.at("token_budget").get<std::int64_t>();
  s.window = j.value("window", 256);
  s.maxNewTokens = j.value("max_new_tokens", 128);
  s.batch = j.value("batch", 8);
  if (j.contains("capture")) s.capture = parseCaptureMode(j.at("capture").get<std::string>());
  s.includePrefill = j.value("include_prefill", false);
  s.sampling.temperature = j.value("temperature", 0.0);
  s.sampling.topK = j.value("top_k", 0);
  s.sampling.topP = j.value("top_p", 1.0);
  s.seed = j.value("seed", std::uint64_t{0});
  s.sampling.seed = s.seed;
  s.device = j.value("device", std::string("cpu"));
  s.dtype = j.value("dtype", std::string("float32"));
  if (j.contains("storage")) s.storage = parseStatsStorage(j.at("storage").get<std::string>());
  s.topK = j.value("storage_top_k", 64);
  if (j.contains("chat")) s.chat = parseChatMode(j.at("chat").get<std::string>());
  s.checkpointSeconds = j.value("checkpoint_seconds", 30.0);
  s.checkpointEvery = j.value("checkpoint_every", 0);
  // Runs from before half statistics existed did not collect them.
  s.halves = j.value("halves", false);
  s.sampleRows = j.value("sample_rows", 0);
  return s;
}

void validateCalibrationSettings(const CalibrationSettings& s) {
  if (s.sampleRows < 0) throw std::invalid_argument("sample rows must be >= 0");
  const auto bad = [](const std::string& m) { throw std::invalid_argument(m); };
  if (s.model.empty()) bad("no model folder given");
  if (const std::string p = checkpointFolderProblem(s.model); !p.empty()) bad(s.model.string() + ": " + p);
  if (!fs::exists(s.model / "config.json")) bad("model folder " + s.model.string() + " has no config.json");
  if (s.tokenBudget <= 0) bad("the token budget must be >= 1");
  if (s.batch < 1) bad("batch must be >= 1");
  if (s.source == CalibrationSource::Fixed) {
    if (s.corpus.empty()) bad("source fixed needs a corpus (.txt or .jsonl)");
    if (!fs::is_regular_file(s.corpus)) bad("corpus not found: " + s.corpus.string());
    if (s.window < 1) bad("window must be >= 1");
  } else {
    if (s.prompts.empty()) bad("source " + calibrationSourceName(s.source) + " needs a prompts file (.jsonl)");
    if (!fs::is_regular_file(s.prompts)) bad("prompts file not found: " + s.prompts.string());
    if (s.maxNewTokens < 2) bad("max new tokens must be >= 2 (the last generated token is never read back)");
    validateDecoding(decodingOf(s.sampling), "calibration decoding");
  }
  if (s.source == CalibrationSource::CrossModel) {
    if (s.crossModel.empty()) bad("source cross-model needs the generating model's folder");
    if (const std::string p = checkpointFolderProblem(s.crossModel); !p.empty())
      bad("cross model " + s.crossModel.string() + ": " + p);
    if (!fs::exists(s.crossModel / "config.json")) bad("cross model folder " + s.crossModel.string() + " has no config.json");
    if (s.capture == CaptureMode::Exact) bad("cross-model calibration is teacher-forced: capture exact does not apply");
  }
  if (s.storage == StatsStorage::Topk && s.topK < 1) bad("top-k storage needs k >= 1");
  (void)canonicalDtype(s.dtype);  // throws naming the supported ones
  if (s.checkpointSeconds < 0 || s.checkpointEvery < 0) bad("checkpoint interval must be >= 0");
}

// ---------------------------------------------------------------- estimate

CalibrationEstimate estimateCalibration(const ModelConfig& config, const CalibrationSettings& s) {
  CalibrationEstimate e;
  const auto inputs = describeInputs(config);
  e.inputs = static_cast<int>(inputs.size());
  std::uint64_t full = 0, topk = 0;
  for (const auto& in : inputs) {
    const auto d = static_cast<std::uint64_t>(in.dIn);
    const auto k = std::min<std::uint64_t>(d, static_cast<std::uint64_t>(std::max(s.topK, 1)));
    e.sumDIn += in.dIn;
    e.accumulatorBytes += (d * d + d) * 4;
    full += (d * d + d) * 4;             // xtx + sum_sq
    topk += (k + k * d + 2 * d) * 4;     // eigvals + eigvecs + diag + sum_sq
    if (s.halves) {
      e.accumulatorBytes += d * d * 4;   // half a's xtx (half b is the rest)
      full += 2 * d * d * 4;             // xtx_a + xtx_b
      topk += 2 * k * k * 4;             // eigproj_a + eigproj_b
    }
  }
  e.bufferBytes = StatsAccumulator::stageBytes(config);
  const std::string dtype = s.dtype.empty() ? "float32" : s.dtype;
  e.modelBytes = static_cast<std::uint64_t>(config.parameterCount()) * dtypeBytes(dtype);
  if (s.source == CalibrationSource::CrossModel) e.modelBytes *= 2;  // same-size assumption for the generator
  e.deviceBytes = e.accumulatorBytes + e.bufferBytes + e.modelBytes;
  if (s.source != CalibrationSource::Fixed) {
    // Token ids (4 bytes) and about 4 bytes of text per counted token, plus prompts.
    const auto gens = static_cast<std::uint64_t>(s.tokenBudget / std::max(1, s.maxNewTokens - 1) + 1);
    e.generationBytes = static_cast<std::uint64_t>(s.tokenBudget) * 8 + gens * 256;
  } else {
    e.generationBytes = static_cast<std::uint64_t>(s.tokenBudget / std::max(1, s.window) + 1) * 16;
  }
  constexpr std::uint64_t kOverhead = 1 << 20;  // provenance, attributes, HDF5 metadata
  const auto samples = static_cast<std::uint64_t>(std::min<std::int64_t>(std::max(s.sampleRows, 0), s.tokenBudget)) *
                       (static_cast<std::uint64_t>(e.sumDIn) * 4 + 24);  // rows + their four labels
  e.fileBytesFull = full + e.generationBytes + samples + kOverhead;
  e.fileBytesTopk = topk + e.generationBytes + samples + kOverhead;
  e.fileBytes = s.storage == StatsStorage::Topk ? e.fileBytesTopk : e.fileBytesFull;
  return e;
}

// ---------------------------------------------------------------- the run

namespace {

constexpr const char* kCal = "/calibration";
constexpr const char* kGen = "/calibration/generations";
constexpr const char* kWin = "/calibration/windows";

std::string inputGroup(const std::string& name) { return std::string(kCal) + "/inputs/" + name; }

// The run file's "capture": fixed text is teacher-forced, and so is a cross
// model's text (re-read by the calibrated model); AR runs record their mode.
std::string recordedCapture(const CalibrationSettings& s) {
  if (s.source == CalibrationSource::Fixed) return "teacher-forced";
  if (s.source == CalibrationSource::CrossModel) return captureModeName(CaptureMode::Reforward);
  return captureModeName(s.capture);
}

Tokenizer loadTokenizer(const fs::path& dir) {
  if (!fs::exists(dir / "tokenizer.json"))
    throw std::invalid_argument(dir.string() + " has no tokenizer.json (calibration needs the model's tokenizer)");
  return Tokenizer::fromFile(dir / "tokenizer.json");
}

// Everything one run holds between checkpoints.
class Run {
 public:
  Run(CalibrationSettings s, const ProgressFn& progress, const CalibrationHooks& hooks)
      : s_(std::move(s)), progress_(progress), hooks_(hooks) {
    s_.sampling.seed = s_.seed;
    s_.dtype = canonicalDtype(s_.dtype);
    // Absolute while the run lives, so that a sequential-order re-capture
    // finds the same files; recorded relative to the repository where they
    // lie inside it (core/paths.h).
    for (fs::path* p : {&s_.model, &s_.corpus, &s_.prompts, &s_.crossModel})
      if (!p->empty()) *p = fs::absolute(*p).lexically_normal();
  }

  // Loads the model and the source; nothing is written yet.
  void prepare() {
    validateCalibrationSettings(s_);
    report(0, "loading model");
    LoadOptions lo;
    lo.device = s_.device;
    lo.dtype = s_.dtype;
    model_ = Model::load(s_.model, lo);
    if (s_.source == CalibrationSource::CrossModel) {
      generator_ = Model::load(s_.crossModel, lo);
      if (generator_->config().vocabSize != model_->config().vocabSize)
        throw std::invalid_argument("cross model " + s_.crossModel.string() + " has a vocabulary of " +
                                    std::to_string(generator_->config().vocabSize) + " tokens, the model " +
                                    std::to_string(model_->config().vocabSize) + ": they must share a tokenizer");
    }
    if (hooks_.modelLoaded) hooks_.modelLoaded(*model_);
    const fs::path tokDir = s_.source == CalibrationSource::CrossModel ? s_.crossModel : s_.model;
    tok_ = std::make_unique<Tokenizer>(loadTokenizer(tokDir));
    if (s_.source == CalibrationSource::Fixed) {
      corpus_ = std::make_unique<CorpusWindows>(readCorpus(s_.corpus), *tok_, s_.window, s_.seed);
    } else {
      const auto prompts = readPrompts(s_.prompts);
      family_ = s_.chat == ChatMode::Plain ? ChatFamily::Plain : detectChatFamily(*tok_, tokDir);
      for (const auto& p : prompts) {
        auto ids = encodePrompt(*tok_, family_, p.prompt);
        if (ids.empty())
          throw std::invalid_argument(s_.prompts.string() + ": prompt '" + p.id + "' encodes to no tokens");
        if (static_cast<std::int64_t>(ids.size()) + 1 >= model_->config().maxPositionEmbeddings)
          throw std::invalid_argument(s_.prompts.string() + ": prompt '" + p.id + "' has " + std::to_string(ids.size()) +
                                      " tokens, too many for the model's context of " +
                                      std::to_string(model_->config().maxPositionEmbeddings));
        prompts_.push_back({p, std::move(ids)});
      }
      const ModelConfig& c = (generator_ ? *generator_ : *model_).config();
      stopIds_ = mergeStopIds(tok_->stopIds(), c.eosTokenIds, c.generation.eosTokenIds);
    }
    acc_ = std::make_unique<StatsAccumulator>(model_->config(), model_->impl().device, -1, s_.halves);
    acc_->setLayerDone([this](int layer) { reportLayer(layer + 1, "capture", /*always=*/false); });
  }

  void create(const fs::path& out) {
    const auto est = estimateCalibration(model_->config(), s_);
    fs::path dir = fs::absolute(out).parent_path();
    checkCanWrite(out, est.fileBytes + rs::kDefaultMinFreeSpace);  // read-only, permissions, space
    std::error_code ec;
    fs::create_directories(dir, ec);
    Provenance p = engineProvenance(s_.model.string(), calibrationSettingsToJson(s_), s_.device);
    p.addModelFiles(s_.model);
    writer_ = std::make_unique<rs::RunWriter>(rs::RunWriter::create(out, p, "calibration"));
    writer_->createGroup(kCal);
    writeRunAttributes();
    writer_->checkpoint();
  }

  void resume(const fs::path& path) {
    writer_ = std::make_unique<rs::RunWriter>(rs::RunWriter::openForResume(path));
    auto& w = *writer_;
    if (w.kind() != "calibration") throw std::invalid_argument(path.string() + " is a '" + w.kind() + "' run, not a calibration");
    promptsDone_ = w.readIntAttribute(kCal, "prompts_done");
    windowsDone_ = w.readIntAttribute(kCal, "windows_done");
    collected_ = w.readIntAttribute(kCal, "tokens_collected");
    generated_ = w.hasAttribute(kCal, "generated_tokens") ? w.readIntAttribute(kCal, "generated_tokens") : 0;
    if (s_.storage == StatsStorage::Full && collected_ > 0) {
      for (auto& in : acc_->inputs()) {
        const std::string g = inputGroup(in.name);
        const auto xtx = w.readFloat32(g + "/xtx");
        const auto sq = w.readFloat32(g + "/sum_sq");
        const auto tokens = w.readIntAttribute(g, "tokens");
        if (xtx.shape != std::vector<hsize_t>{static_cast<hsize_t>(in.dIn), static_cast<hsize_t>(in.dIn)} || tokens != collected_)
          throw std::runtime_error(path.string() + ": " + g + " does not match the run's counters; cannot resume");
        in.xtx.copy_(at::from_blob(const_cast<float*>(xtx.data.data()), {in.dIn, in.dIn}, at::kFloat));
        in.sumSq.copy_(at::from_blob(const_cast<float*>(sq.data.data()), {in.dIn}, at::kFloat));
        in.tokens = tokens;
        if (s_.halves) {
          // Half b is what the total holds beyond half a: only a is read back.
          if (!w.exists(g + "/xtx_a") || !w.hasAttribute(g, "tokens_a"))
            throw std::runtime_error(path.string() + ": " + g + " has no half statistics (xtx_a); cannot resume");
          const auto xa = w.readFloat32(g + "/xtx_a");
          if (xa.shape != xtx.shape) throw std::runtime_error(path.string() + ": " + g + "/xtx_a is not [d_in, d_in]; cannot resume");
          in.xtxA.copy_(at::from_blob(const_cast<float*>(xa.data.data()), {in.dIn, in.dIn}, at::kFloat));
          in.tokensA = w.readIntAttribute(g, "tokens_a");
        }
      }
    } else if (s_.storage == StatsStorage::Topk) {
      // Top-k runs keep no partial sums (see docs/calibration.md): start over.
      promptsDone_ = windowsDone_ = collected_ = generated_ = 0;
    }
    if (s_.source != CalibrationSource::Fixed && w.exists(std::string(kGen) + "/prompt_tokens")) {
      const auto n = static_cast<std::int64_t>(w.shape(std::string(kGen) + "/prompt_tokens").at(0));
      if (n != promptsDone_)
        throw std::runtime_error(path.string() + ": " + std::to_string(n) + " generations stored but prompts_done is " +
                                 std::to_string(promptsDone_) + "; cannot resume");
      const auto off = w.readInt64(std::string(kGen) + "/offsets");
      tokenOffset_ = off.data.empty() ? 0 : off.data.back();
      const auto poff = w.readInt64(std::string(kGen) + "/prompt_offsets");
      promptOffset_ = poff.data.empty() ? 0 : poff.data.back();
    }
  }

  CalibrationResult execute() {
    const auto t0 = std::chrono::steady_clock::now();
    lastCheckpoint_ = t0;
    const std::int64_t startCollected = collected_;
    try {
      if (s_.source == CalibrationSource::Fixed) runFixed();
      else runAr();
    } catch (const Cancelled&) {
      checkpointNow();
      result_.run = writer_->keepIncomplete();
      throw;
    }
    finish();
    result_.seconds = secondsSince(t0);
    result_.tokensPerSecond = result_.seconds > 0 ? static_cast<double>(collected_ - startCollected) / result_.seconds : 0;
    return result_;
  }

 private:
  // ------------------------------------------------------------ progress
  void report(double done, const std::string& stage) {
    lastDone_ = done;
    lastStage_ = stage;
    if (progress_ && !progress_(tokenProgress())) stop_ = true;
  }
  Progress tokenProgress() const {  // tokens captured so far, in the current stage
    Progress p;
    p.done = lastDone_;
    p.total = static_cast<double>(s_.tokenBudget);
    p.unit = "tokens";
    p.stage = lastStage_;
    return p;
  }
  // Per-layer progress inside a pass over the layers: `layersDone` of them
  // have been collected (or eigendecomposed, or written). Passes during
  // capture are frequent, so those reports are spaced out unless `always`.
  void reportLayer(int layersDone, const char* label, bool always) {
    if (!progress_) return;
    const int layers = acc_->layerCount();
    const auto now = std::chrono::steady_clock::now();
    if (!always && layersDone < layers && now - lastLayerReport_ < std::chrono::milliseconds(100)) return;
    lastLayerReport_ = now;
    Progress p = tokenProgress();
    p.part = layersDone;
    p.parts = layers;
    p.partLabel = label;
    if (!progress_(p)) stop_ = true;
  }
  void maybeStop() {
    if (stop_) throw Cancelled();
  }
  std::int64_t remaining() const { return s_.tokenBudget - collected_; }

  void afterBatch() {
    ++batchesSinceCheckpoint_;
    const bool byTime = checkpointDue(secondsSince(lastCheckpoint_), s_.checkpointSeconds, lastCheckpointTook_);
    const bool byCount = s_.checkpointEvery > 0 && batchesSinceCheckpoint_ >= s_.checkpointEvery;
    report(static_cast<double>(collected_), s_.source == CalibrationSource::Fixed ? "windows " + std::to_string(windowsDone_)
                                                                 : "generations " + std::to_string(promptsDone_));
    if (remaining() > 0 && (byTime || byCount)) checkpointNow();
    maybeStop();
  }

  // ------------------------------------------------------------ fixed text
  void runFixed() {
    while (remaining() > 0) {
      std::vector<ForwardRows> seqs;
      std::int64_t left = remaining();
      for (int b = 0; b < s_.batch && left > 0; ++b) {
        const std::int64_t index = windowsDone_ + static_cast<std::int64_t>(seqs.size());
        const auto w = corpus_->draw(index);
        ForwardRows f;
        f.half = s_.halves ? static_cast<int>(index % 2) : -1;  // even windows: half a
        f.count = std::min<std::int64_t>(left, static_cast<std::int64_t>(w.ids.size()));
        f.ids.assign(w.ids.begin(), w.ids.begin() + f.count);  // causal: the rest cannot change these rows
        left -= f.count;
        pendingWindows_.push_back({w.document, w.start, f.count});
        seqs.push_back(std::move(f));
      }
      const auto t1 = std::chrono::steady_clock::now();
      forwardCollect(*model_, seqs, *acc_);
      result_.forwardSeconds += secondsSince(t1);
      for (const auto& f : seqs) collected_ += f.count;
      windowsDone_ += static_cast<std::int64_t>(seqs.size());
      afterBatch();
    }
  }

  // ------------------------------------------------------------ AR decode
  void runAr() {
    const auto P = static_cast<std::int64_t>(prompts_.size());
    std::int64_t sinceYield = 0;  // generations in a row that counted nothing
    Model& gen = generator_ ? *generator_ : *model_;
    while (remaining() > 0) {
      std::vector<GenerationRecord> batch;
      for (int b = 0; b < s_.batch; ++b) {
        GenerationRecord r;
        r.index = promptsDone_ + b;
        const auto& p = prompts_[static_cast<std::size_t>(r.index % P)];
        r.promptId = p.prompt.id;
        r.promptText = p.prompt.prompt;
        r.promptIds = p.ids;
        // By prompt line, so that each prompt's generations stay in one half:
        // the halves are two samples of prompts (docs/epsilon.md, "Noise floor").
        r.half = s_.halves ? static_cast<int>((r.index % P) % 2) : -1;
        batch.push_back(std::move(r));
      }
      auto last = std::chrono::steady_clock::now();
      const std::string stage = "generating " + std::to_string(promptsDone_ + 1) + "-" +
                                std::to_string(promptsDone_ + s_.batch);
      // Live progress during generation: the decode positions the batch has
      // produced so far (every token but the first of each generation is a
      // read-back), capped by the budget; never more than the batch will count.
      const auto B = static_cast<std::int64_t>(batch.size());
      const auto st = runArBatch(*model_, gen, batch, s_, stopIds_, remaining(), *acc_, [&](std::int64_t generated) {
        if (secondsSince(last) < 0.25) return;
        last = std::chrono::steady_clock::now();
        const std::int64_t pendingCount = std::min(std::max<std::int64_t>(0, generated - B), remaining());
        report(static_cast<double>(collected_ + pendingCount), stage);
      });
      result_.generateSeconds += st.generateSeconds;
      result_.forwardSeconds += st.forwardSeconds;
      for (auto& r : batch) {
        r.text = tok_->decode(r.tokens, /*skipSpecialTokens=*/true);
        generated_ += static_cast<std::int64_t>(r.tokens.size());
        pending_.push_back(std::move(r));
      }
      collected_ += st.counted;
      promptsDone_ += static_cast<std::int64_t>(batch.size());
      sinceYield = st.counted > 0 ? 0 : sinceYield + static_cast<std::int64_t>(batch.size());
      if (sinceYield >= std::max<std::int64_t>(P, s_.batch))
        throw std::runtime_error("the prompts give no decode tokens (every generation stops after one token); "
                                 "check the stop tokens and max new tokens");
      afterBatch();
    }
  }

  // ------------------------------------------------------------ writing
  void writeRunAttributes() {
    auto& w = *writer_;
    w.setStringAttribute(kCal, "source", calibrationSourceName(s_.source));
    w.setStringAttribute(kCal, "capture", recordedCapture(s_));
    w.setIntAttribute(kCal, "include_prefill", s_.source != CalibrationSource::Fixed && s_.includePrefill ? 1 : 0);
    w.setIntAttribute(kCal, "token_budget", s_.tokenBudget);
    w.setIntAttribute(kCal, "seed", static_cast<std::int64_t>(s_.seed));
    w.setIntAttribute(kCal, "window", s_.window);
    w.setIntAttribute(kCal, "max_new_tokens", s_.maxNewTokens);
    w.setIntAttribute(kCal, "batch", s_.batch);
    w.setStringAttribute(kCal, "model_dir", recordedPath(s_.model));
    w.setStringAttribute(kCal, "cross_model_dir", recordedPath(s_.crossModel));
    w.setStringAttribute(kCal, "corpus", recordedPath(s_.corpus));
    w.setStringAttribute(kCal, "prompts", recordedPath(s_.prompts));
    w.setStringAttribute(kCal, "chat_format", s_.source == CalibrationSource::Fixed ? "none" : chatFamilyName(family_));
    w.setStringAttribute(kCal, "dtype", s_.dtype);
    w.setStringAttribute(kCal, "device", s_.device);
    w.setDoubleAttribute(kCal, "temperature", s_.sampling.temperature);
    w.setIntAttribute(kCal, "sampling_top_k", s_.sampling.topK);
    w.setDoubleAttribute(kCal, "sampling_top_p", s_.sampling.topP);
    w.setStringAttribute(kCal, "decoding", s_.source == CalibrationSource::Fixed ? std::string("none (fixed text, teacher-forced)")
                                                                 : decodingOf(s_.sampling).describe());
    w.setStringAttribute(kCal, "storage", statsStorageName(s_.storage));
    w.setIntAttribute(kCal, "top_k", s_.topK);
    w.setIntAttribute(kCal, "input_count", static_cast<std::int64_t>(acc_->inputs().size()));
    w.setIntAttribute(kCal, "halves", s_.halves ? 1 : 0);
    if (s_.halves) w.setStringAttribute(kCal, "half_split", s_.source == CalibrationSource::Fixed ? "window" : "prompt");
    writeCounters();
  }

  void writeCounters() {
    auto& w = *writer_;
    w.setIntAttribute(kCal, "tokens_collected", persistedCollected_);
    w.setIntAttribute(kCal, "prompts_done", persistedPrompts_);
    w.setIntAttribute(kCal, "windows_done", persistedWindows_);
    w.setIntAttribute(kCal, "generated_tokens", persistedGenerated_);
  }

  // Per-generation columns are short: small chunks keep a small run small
  // (the automatic 128 KiB chunk would dominate a run of a few dozen rows).
  template <typename T>
  void appendOrCreate(const std::string& path, const std::vector<T>& data, hsize_t chunk = 1024) {
    if (data.empty() && writer_->exists(path)) return;
    if (writer_->exists(path)) writer_->append(path, data);
    else writer_->writeDataset(path, data, {static_cast<hsize_t>(data.size())}, rs::DatasetOptions{true, {chunk}, 0});
  }
  void appendOrCreateStrings(const std::string& path, const std::vector<std::string>& data) {
    if (writer_->exists(path)) {
      if (!data.empty()) writer_->appendStrings(path, data);
    } else {
      writer_->writeStrings(path, data, rs::DatasetOptions{true, {256}, 0});
    }
  }

  void writeGenerations() {
    if (s_.source == CalibrationSource::Fixed) {
      std::vector<std::int32_t> doc, counted;
      std::vector<std::int64_t> start;
      for (const auto& w : pendingWindows_) {
        doc.push_back(static_cast<std::int32_t>(w.document));
        start.push_back(w.start);
        counted.push_back(static_cast<std::int32_t>(w.counted));
      }
      appendOrCreate(std::string(kWin) + "/document", doc);
      appendOrCreate(std::string(kWin) + "/start", start);
      appendOrCreate(std::string(kWin) + "/counted", counted);
      pendingWindows_.clear();
      return;
    }
    std::vector<std::string> ids, texts, outs;
    std::vector<std::int32_t> tokens, promptTokens, promptIds, prefill, decode;
    std::vector<std::int64_t> offsets, promptOffsets, index;
    const bool first = !writer_->exists(std::string(kGen) + "/offsets");
    if (first) {
      offsets.push_back(0);
      promptOffsets.push_back(0);
    }
    for (const auto& r : pending_) {
      ids.push_back(r.promptId);
      texts.push_back(r.promptText);
      outs.push_back(r.text);
      tokens.insert(tokens.end(), r.tokens.begin(), r.tokens.end());
      tokenOffset_ += static_cast<std::int64_t>(r.tokens.size());
      offsets.push_back(tokenOffset_);
      promptIds.insert(promptIds.end(), r.promptIds.begin(), r.promptIds.end());
      promptOffset_ += static_cast<std::int64_t>(r.promptIds.size());
      promptOffsets.push_back(promptOffset_);
      promptTokens.push_back(static_cast<std::int32_t>(r.promptIds.size()));
      prefill.push_back(static_cast<std::int32_t>(r.prefillCounted));
      decode.push_back(static_cast<std::int32_t>(r.decodeCounted));
      index.push_back(r.index);
    }
    const std::string g = kGen;
    appendOrCreateStrings(g + "/prompt_id", ids);
    appendOrCreateStrings(g + "/prompt_text", texts);
    appendOrCreate(g + "/token_ids", tokens, 16384);
    appendOrCreate(g + "/offsets", offsets);
    appendOrCreate(g + "/prompt_tokens", promptTokens);
    appendOrCreateStrings(g + "/text", outs);
    appendOrCreate(g + "/prompt_token_ids", promptIds, 4096);
    appendOrCreate(g + "/prompt_offsets", promptOffsets);
    appendOrCreate(g + "/prefill_counted", prefill);
    appendOrCreate(g + "/decode_counted", decode);
    appendOrCreate(g + "/sequence", index);
    pending_.clear();
  }

  void writeInputAttributes(const InputStats& in) {
    const std::string g = inputGroup(in.name);
    std::string mods;
    for (const auto& m : in.modules) mods += (mods.empty() ? "" : ",") + m;
    writer_->createGroup(g);
    writer_->setStringAttribute(g, "modules", mods);
    writer_->setIntAttribute(g, "layer", in.layer);
    writer_->setIntAttribute(g, "d_in", in.dIn);
    writer_->setIntAttribute(g, "tokens", in.tokens);
    if (acc_->halves()) {
      writer_->setIntAttribute(g, "tokens_a", in.tokensA);
      writer_->setIntAttribute(g, "tokens_b", in.tokens - in.tokensA);
    }
  }

  void replace(const std::string& path, const at::Tensor& t) {
    const at::Tensor host = t.to(at::kCPU, at::kFloat).contiguous();
    std::vector<hsize_t> shape;
    for (const auto d : host.sizes()) shape.push_back(static_cast<hsize_t>(d));
    if (writer_->exists(path)) writer_->remove(path);
    writer_->writeDataset(path, std::span<const float>(host.data_ptr<float>(), static_cast<std::size_t>(host.numel())), shape);
  }

  // Full storage: the current sums, replacing the previous checkpoint's.
  void writeFullStats() {
    const auto& inputs = acc_->inputs();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const auto& in = inputs[i];
      writeInputAttributes(in);
      replace(inputGroup(in.name) + "/xtx", in.xtx);
      replace(inputGroup(in.name) + "/sum_sq", in.sumSq);
      if (acc_->halves()) {
        replace(inputGroup(in.name) + "/xtx_a", in.xtxA);
        replace(inputGroup(in.name) + "/xtx_b", in.xtx - in.xtxA);
      }
      afterInputWritten(i, "writing");
    }
  }
  void afterInputWritten(std::size_t i, const char* label) {
    const auto& inputs = acc_->inputs();
    if (i + 1 == inputs.size() || inputs[i + 1].layer != inputs[i].layer) reportLayer(inputs[i].layer + 1, label, true);
  }

  // Top-k storage: eigenpairs of xtx / tokens, the diagonal of xtx, sum_sq.
  void writeTopkStats() {
    const c10::NoGradGuard noGrad;
    const auto& inputs = acc_->inputs();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const auto& in = inputs[i];
      writeInputAttributes(in);
      const std::string g = inputGroup(in.name);
      const std::int64_t k = std::min<std::int64_t>(s_.topK, in.dIn);
      // float64 where it is cheap; above 4096 columns float32 (an 8B's 14336-wide
      // down_proj input would take minutes per matrix in float64).
      const auto type = in.dIn <= 4096 ? at::kDouble : at::kFloat;
      const at::Tensor h = in.xtx.to(type) / static_cast<double>(std::max<std::int64_t>(in.tokens, 1));
      const auto [vals, vecs] = at::linalg_eigh(h, "L");       // ascending; vecs columns
      const at::Tensor top = vals.flip({0}).narrow(0, 0, k);   // [k] descending
      const at::Tensor U = vecs.flip({1}).narrow(1, 0, k).t();  // [k, dIn]: rows are eigenvectors
      replace(g + "/eigvals", top);
      replace(g + "/eigvecs", U);
      replace(g + "/diag", in.xtx.diagonal());
      replace(g + "/sum_sq", in.sumSq);
      if (acc_->halves()) {
        // The halves in the stored eigenbasis, U H_half U^T [k, k]: what the
        // noise floor needs, in the same V M V^T approximation as H itself.
        const auto perToken = [](const at::Tensor& sum, std::int64_t n) {
          return n > 0 ? sum / static_cast<double>(n) : at::zeros_like(sum);
        };
        const at::Tensor ha = perToken(in.xtxA.to(type), in.tokensA);
        const at::Tensor hb = perToken((in.xtx - in.xtxA).to(type), in.tokens - in.tokensA);
        replace(g + "/eigproj_a", U.mm(ha).mm(U.t()));
        replace(g + "/eigproj_b", U.mm(hb).mm(U.t()));
      }
      afterInputWritten(i, "eigendecomposition");
    }
  }

  void checkpointNow() {
    const auto began = std::chrono::steady_clock::now();
    acc_->flush();
    if (s_.storage == StatsStorage::Full) {
      writeFullStats();
      writeGenerations();
      persistedCollected_ = collected_;
      persistedPrompts_ = promptsDone_;
      persistedWindows_ = windowsDone_;
      persistedGenerated_ = generated_;
    }
    writeCounters();
    writer_->checkpoint();
    ++result_.checkpoints;
    batchesSinceCheckpoint_ = 0;
    lastCheckpoint_ = std::chrono::steady_clock::now();
    lastCheckpointTook_ = std::chrono::duration<double>(lastCheckpoint_ - began).count();
    report(static_cast<double>(collected_), "checkpoint " + std::to_string(writer_->checkpointCount()));
  }

  // A uniform sample of the counted rows (sampleRows > 0): the run's own
  // positions teacher-forced once more (replaySequences: the stored windows or
  // generations), the chosen rows of every input copied out. The same rows for
  // every input, chosen without replacement from the run's seed.
  void writeActivationSamples() {
    const std::vector<ForwardRows> seqs = replaySequences(*writer_, s_);
    std::vector<std::int64_t> offset;
    std::int64_t total = 0;
    for (const auto& f : seqs) {
      offset.push_back(total);
      total += f.count;
    }
    const std::int64_t n = std::min<std::int64_t>(s_.sampleRows, total);
    if (n <= 0) return;
    std::mt19937_64 rng(s_.seed * 0x9E3779B97F4A7C15ULL + 0x5A3B1E5ULL);
    std::set<std::int64_t> chosen;  // Floyd's algorithm: n distinct of [0, total), each set equally likely
    for (std::int64_t j = total - n; j < total; ++j) {
      const std::int64_t t = std::uniform_int_distribution<std::int64_t>(0, j)(rng);
      if (!chosen.insert(t).second) chosen.insert(j);
    }
    // Per sequence: its chosen rows (local row, slot); the labels per slot.
    std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> perSeq(seqs.size());
    std::vector<std::int64_t> rowIndex, sequence;
    std::vector<std::int32_t> position, decodeStep;
    std::int64_t slot = 0;
    for (const std::int64_t g : chosen) {
      const auto k = static_cast<std::size_t>(std::upper_bound(offset.begin(), offset.end(), g) - offset.begin() - 1);
      const std::int64_t r = g - offset[k];
      const ForwardRows& f = seqs[k];
      const std::int64_t pos = f.begin + r;
      perSeq[k].push_back({r, slot++});
      rowIndex.push_back(g);
      sequence.push_back(f.sequence);
      position.push_back(static_cast<std::int32_t>(pos));
      decodeStep.push_back(static_cast<std::int32_t>(f.decodeFrom >= 0 && pos >= f.decodeFrom ? pos - f.decodeFrom : -1));
    }
    std::map<std::string, at::Tensor> rows;  // input -> [n, dIn] fp32 on the host
    for (const auto& in : acc_->inputs()) rows[in.name] = at::zeros({n, in.dIn}, at::kFloat);

    const std::size_t step = static_cast<std::size_t>(std::max(s_.batch, 1));
    for (std::size_t b = 0; b < seqs.size(); b += step) {
      const std::vector<ForwardRows> chunk(seqs.begin() + static_cast<std::ptrdiff_t>(b),
                                           seqs.begin() + static_cast<std::ptrdiff_t>(std::min(seqs.size(), b + step)));
      bool any = false;
      for (std::size_t k = b; k < b + chunk.size(); ++k) any = any || !perSeq[k].empty();
      if (!any) continue;
      forwardObserve(*model_, chunk, [&](const ActivationEvent& ev, const at::Tensor& x) {
        const auto& want = perSeq[b + static_cast<std::size_t>(ev.promptIndex)];
        if (want.empty()) return;
        const auto it = rows.find(ev.modules.front());
        if (it == rows.end()) return;
        std::vector<std::int64_t> local, slots;
        for (const auto& [r, sl] : want) {
          local.push_back(r);
          slots.push_back(sl);
        }
        const at::Tensor idx = at::tensor(local, at::kLong).to(x.device());
        const at::Tensor picked = x.index_select(0, idx).to(at::kCPU, at::kFloat);
        it->second.index_copy_(0, at::tensor(slots, at::kLong), picked);
      });
      report(static_cast<double>(collected_), "activation samples: " + std::to_string(std::min(seqs.size(), b + step)) +
                                                  "/" + std::to_string(seqs.size()) + " sequences");
    }

    const std::string g = std::string(kCal) + "/samples";
    if (writer_->exists(g)) writer_->remove(g);
    writer_->createGroup(g);
    writer_->setIntAttribute(g, "rows", n);
    writer_->setIntAttribute(g, "rows_counted", total);
    writer_->setStringAttribute(g, "method", "uniform without replacement over the counted rows (Floyd), the run's seed; "
                                             "teacher-forced replay of the counted positions");
    const auto n1 = std::vector<hsize_t>{static_cast<hsize_t>(n)};
    writer_->writeDataset(g + "/row", std::span<const std::int64_t>(rowIndex), n1);
    writer_->writeDataset(g + "/sequence", std::span<const std::int64_t>(sequence), n1);
    writer_->writeDataset(g + "/position", std::span<const std::int32_t>(position), n1);
    writer_->writeDataset(g + "/decode_step", std::span<const std::int32_t>(decodeStep), n1);
    for (const auto& in : acc_->inputs()) replace(inputGroup(in.name) + "/sample_rows", rows.at(in.name));
  }

  void finish() {
    acc_->flush();
    if (s_.storage == StatsStorage::Full) writeFullStats();
    else writeTopkStats();
    writeGenerations();
    persistedCollected_ = collected_;
    persistedPrompts_ = promptsDone_;
    persistedWindows_ = windowsDone_;
    persistedGenerated_ = generated_;
    writeCounters();
    if (s_.sampleRows > 0) {
      writer_->checkpoint();  // the sums are safe before the extra pass
      writeActivationSamples();
    }
    result_.run = writer_->commit();
    result_.complete = true;
    result_.source = s_.source;
    result_.capture = recordedCapture(s_);
    result_.tokenBudget = s_.tokenBudget;
    result_.tokensCollected = collected_;
    result_.promptsDone = promptsDone_;
    result_.windowsDone = windowsDone_;
    result_.generatedTokens = generated_;
    result_.inputs = static_cast<int>(acc_->inputs().size());
    std::error_code ec;
    result_.fileBytes = fs::file_size(result_.run, ec);
  }

 public:
  // Counters as of the resume point (for the result of a topk restart etc.).
  void adoptPersisted() {
    persistedCollected_ = collected_;
    persistedPrompts_ = promptsDone_;
    persistedWindows_ = windowsDone_;
    persistedGenerated_ = generated_;
  }

 private:
  struct EncodedPrompt {
    Prompt prompt;
    std::vector<std::int32_t> ids;
  };
  struct WindowRecord {
    std::int64_t document = 0, start = 0, counted = 0;
  };

  CalibrationSettings s_;
  ProgressFn progress_;
  double lastDone_ = 0;
  std::string lastStage_;
  std::chrono::steady_clock::time_point lastLayerReport_{};
  CalibrationHooks hooks_;
  std::unique_ptr<Model> model_, generator_;
  std::unique_ptr<Tokenizer> tok_;
  ChatFamily family_ = ChatFamily::Plain;
  std::unique_ptr<CorpusWindows> corpus_;
  std::vector<EncodedPrompt> prompts_;
  std::vector<std::int32_t> stopIds_;
  std::unique_ptr<StatsAccumulator> acc_;
  std::unique_ptr<rs::RunWriter> writer_;

  std::int64_t collected_ = 0, promptsDone_ = 0, windowsDone_ = 0, generated_ = 0;
  std::int64_t persistedCollected_ = 0, persistedPrompts_ = 0, persistedWindows_ = 0, persistedGenerated_ = 0;
  std::int64_t tokenOffset_ = 0, promptOffset_ = 0;
  std::vector<GenerationRecord> pending_;
  std::vector<WindowRecord> pendingWindows_;
  std::chrono::steady_clock::time_point lastCheckpoint_;
  double lastCheckpointTook_ = 0;  // seconds the last checkpoint took to write (checkpointDue)
  int batchesSinceCheckpoint_ = 0;
  bool stop_ = false;
  CalibrationResult result_;
};

}  // namespace

CalibrationResult runCalibration(const CalibrationSettings& settings, const fs::path& outRun, const ProgressFn& progress,
                                 const CalibrationHooks& hooks) {
  validateCalibrationSettings(settings);
  if (outRun.string().size() < rs::kRunSuffix.size() ||
      outRun.string().compare(outRun.string().size() - rs::kRunSuffix.size(), rs::kRunSuffix.size(), rs::kRunSuffix) != 0)
    throw std::invalid_argument("the output file name must end in .sdw.h5: " + outRun.string());
  Run run(settings, progress, hooks);
  run.prepare();
  run.create(outRun);
  return run.execute();
}

CalibrationResult resumeCalibration(const fs::path& given, const ProgressFn& progress, const CalibrationHooks& hooks,
                                    const std::string& device) {
  // A crash leaves only the .partial: accept the final name for it too.
  const fs::path path = !fs::exists(given) && fs::exists(rs::partialPathFor(given)) ? rs::partialPathFor(given) : given;
  CalibrationSettings s;
  {
    const auto summary = rs::inspectRun(path);
    if (summary.kind != "calibration")
      throw std::invalid_argument(path.string() + " is a '" + summary.kind + "' run, not a calibration");
    if (summary.complete()) throw std::invalid_argument(path.string() + " is complete: nothing to resume");
    s = calibrationSettingsFromJson(summary.provenance.settingsJson, path);
  }
  if (!device.empty()) s.device = device;
  Run run(s, progress, hooks);
  run.prepare();
  run.resume(path);
  run.adoptPersisted();
  return run.execute();
}

}  // namespace sdw::gpu
