// sdw-cli calibrate: collect per-input calibration statistics from fixed text
// or from the dense model's own decoding into a run file, with the disk and
// memory estimate first, progress on stderr, Ctrl-C keeping a resumable run.

#include "app/cli/cli_decoding.h"
#include "app/cli/cli_util.h"
#include "app/cli/command.h"
#include "core/format.h"
#include "core/progress.h"
#include "core/run_decoding.h"
#include "gpu/calibration.h"
#include "gpu/model_config.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

namespace sdw::cli {
namespace {

namespace fs = std::filesystem;

std::atomic<bool> gInterrupted{false};
extern "C" void onInterrupt(int) { gInterrupted.store(true); }


gpu::CalibrationSettings settingsFrom(const Args& a) {
  gpu::CalibrationSettings s;
  const std::string source = a.get("source");
  if (source.empty()) throw UsageError("--source fixed|ar|cross-model is required");
  s.source = gpu::parseCalibrationSource(source);
  s.model = a.get("model");
  if (s.model.empty()) throw UsageError("--model DIR is required");
  if (!a.has("tokens")) throw UsageError("--tokens N is required");
  s.tokenBudget = a.getInt("tokens", 0);
  if (s.tokenBudget < 1) throw UsageError("--tokens must be >= 1");
  s.corpus = a.get("corpus");
  s.prompts = a.get("prompts");
  s.crossModel = a.get("cross-model");
  if (s.source == gpu::CalibrationSource::Fixed && s.corpus.empty()) throw UsageError("--source fixed needs --corpus FILE");
  if (s.source != gpu::CalibrationSource::Fixed && s.prompts.empty())
    throw UsageError("--source " + source + " needs --prompts FILE");
  if (s.source == gpu::CalibrationSource::CrossModel && s.crossModel.empty())
    throw UsageError("--source cross-model needs --cross-model DIR");
  s.window = static_cast<int>(a.getInt("window", 256));
  s.maxNewTokens = static_cast<int>(a.getInt("max-new-tokens", 128));
  s.batch = static_cast<int>(a.getInt("batch", 8));
  if (a.has("capture")) s.capture = gpu::parseCaptureMode(a.get("capture"));
  s.includePrefill = a.has("include-prefill");
  s.sampling = gpu::samplingOptions(decodingFrom(a));
  s.seed = static_cast<std::uint64_t>(a.getInt("seed", 0));
  s.device = a.get("device", "cpu");
  s.dtype = a.get("dtype", "float32");
  if (a.has("store")) s.storage = gpu::parseStatsStorage(a.get("store"));
  s.topK = static_cast<int>(a.getInt("topk", 64));
  if (a.has("chat")) s.chat = gpu::parseChatMode(a.get("chat"));
  s.checkpointSeconds = a.getDouble("checkpoint-seconds", 30.0);
  s.halves = !a.has("no-halves");
  s.sampleRows = static_cast<int>(a.getInt("sample-rows", 0));
  if (s.sampleRows < 0) throw UsageError("--sample-rows must be >= 0");
  return s;
}

void printEstimate(std::FILE* f, const gpu::CalibrationEstimate& e, const gpu::CalibrationSettings& s) {
  std::fprintf(f, "estimate: %d shared inputs (sum of d_in %lld)\n", e.inputs, static_cast<long long>(e.sumDIn));
  std::fprintf(f, "  device memory: %s accumulators (fp32 xtx + sum_sq%s) + %s staging + %s weights = %s (activations not counted)\n",
               humanBytes(e.accumulatorBytes).c_str(), s.halves ? " + half a's xtx" : "",
               humanBytes(e.bufferBytes).c_str(), humanBytes(e.modelBytes).c_str(),
               humanBytes(e.deviceBytes).c_str());
  std::fprintf(f, "  run file: %s with --store full, %s with --store topk (k = %d); this run: %s\n",
               humanBytes(e.fileBytesFull).c_str(), humanBytes(e.fileBytesTopk).c_str(), s.topK, humanBytes(e.fileBytes).c_str());
  if (s.source != gpu::CalibrationSource::Fixed) {
    std::ostringstream lines;
    printDecoding(lines, gpu::decodingOf(s.sampling), s.source == gpu::CalibrationSource::CrossModel ? s.crossModel : s.model);
    std::fputs(lines.str().c_str(), f);
  }
}

// What the run decoded, read back from it (a resumed run keeps its stored settings).
nlohmann::json decodingJson(const RunDecoding& d, const std::string& note) {
  if (!d.decodes) return {{"decodes", false}, {"describe", "none (fixed text, teacher-forced)"}};
  nlohmann::json j = {{"decodes", true},
                      {"temperature", d.decoding.temperature},
                      {"top_k", d.decoding.topK},
                      {"top_p", d.decoding.topP},
                      {"describe", d.decoding.describe()},
                      {"prompts", d.prompts.string()}};
  if (!note.empty()) j["note"] = note;
  return j;
}

nlohmann::json estimateJson(const gpu::CalibrationEstimate& e) {
  return {{"inputs", e.inputs},
          {"sum_d_in", e.sumDIn},
          {"accumulator_bytes", e.accumulatorBytes},
          {"buffer_bytes", e.bufferBytes},
          {"model_bytes", e.modelBytes},
          {"device_bytes", e.deviceBytes},
          {"file_bytes_full", e.fileBytesFull},
          {"file_bytes_topk", e.fileBytesTopk},
          {"file_bytes", e.fileBytes}};
}

int runCalibrate(const Args& a) {
  const bool json = a.has("json");
  const fs::path out = a.get("out");
  if (out.empty()) throw UsageError("--out RUN.sdw.h5 is required");

  gpu::CalibrationSettings s;
  const bool resume = a.has("resume");
  if (!resume) {
    s = settingsFrom(a);
    gpu::validateCalibrationSettings(s);
    const gpu::ModelConfig config = gpu::loadModelConfig(s.model);
    const auto est = gpu::estimateCalibration(config, s);
    if (a.has("dry-run")) {
      if (json) std::cout << nlohmann::json{{"estimate", estimateJson(est)}}.dump(2) << "\n";
      else printEstimate(stdout, est, s);
      return 0;
    }
    if (!json) printEstimate(stderr, est, s);
    if (a.has("force")) {
      std::error_code ec;
      fs::remove(out, ec);
      fs::remove(fs::path(out.string() + ".partial"), ec);
    }
  } else if (a.has("dry-run")) {
    throw UsageError("--dry-run and --resume do not go together");
  }

  gInterrupted.store(false);
  const auto previous = std::signal(SIGINT, onInterrupt);
  ProgressMeter meter;
  auto lastPrint = std::chrono::steady_clock::now() - std::chrono::seconds(10);
  const auto progress = [&](const Progress& p) {
    const auto st = meter.update(p);
    const auto now = std::chrono::steady_clock::now();
    const bool checkpoint = p.stage.rfind("checkpoint", 0) == 0;
    if (checkpoint || std::chrono::duration<double>(now - lastPrint).count() >= 0.5) {
      lastPrint = now;
      std::fprintf(stderr, "calibrate: %.0f / %.0f tokens (%.1f%%), %.0f tokens/s, ETA %s  [%s]\n", p.done, p.total,
                   st.fraction >= 0 ? 100.0 * st.fraction : 0.0, st.ratePerSecond,
                   st.etaSeconds ? humanDuration(*st.etaSeconds).c_str() : "?", p.stage.c_str());
    }
    return !gInterrupted.load();
  };

  gpu::CalibrationResult r;
  try {
    r = resume ? gpu::resumeCalibration(out, progress, {}, a.get("device")) : gpu::runCalibration(s, out, progress);
  } catch (const Cancelled&) {
    std::signal(SIGINT, previous);
    std::cerr << "sdw-cli calibrate: cancelled; the incomplete run is kept at " << out.string()
              << " (continue with: sdw-cli calibrate --resume --out " << out.string() << ")\n";
    return 1;
  }
  std::signal(SIGINT, previous);

  // The decoding as the run recorded it, and what the checkpoint would have asked for.
  const RunDecoding decoding = calibrationRunDecoding(r.run);
  std::string configNote;
  if (decoding.decodes && !resume)
    configNote = generationConfigNote(s.source == gpu::CalibrationSource::CrossModel ? s.crossModel : s.model, decoding.decoding);

  if (json) {
    const nlohmann::json j = {{"run", r.run.string()},
                              {"decoding", decodingJson(decoding, configNote)},
                              {"complete", r.complete},
                              {"source", gpu::calibrationSourceName(r.source)},
                              {"capture", r.capture},
                              {"token_budget", r.tokenBudget},
                              {"tokens_collected", r.tokensCollected},
                              {"prompts_done", r.promptsDone},
                              {"windows_done", r.windowsDone},
                              {"generated_tokens", r.generatedTokens},
                              {"inputs", r.inputs},
                              {"seconds", r.seconds},
                              {"tokens_per_second", r.tokensPerSecond},
                              {"generate_seconds", r.generateSeconds},
                              {"forward_seconds", r.forwardSeconds},
                              {"checkpoints", r.checkpoints},
                              {"file_bytes", r.fileBytes}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("calibration run: %s\n", r.run.string().c_str());
  std::printf("source:          %s (%s)\n", gpu::calibrationSourceName(r.source).c_str(), r.capture.c_str());
  if (decoding.decodes) {
    std::printf("decoding:        %s%s\n", decoding.decoding.describe().c_str(),
                sameDecoding(decoding.decoding, kDefaultDecoding) ? " (the default protocol)" : "");
    if (!configNote.empty()) std::printf("note:            %s\n", configNote.c_str());
  }
  std::printf("tokens:          %lld of %lld counted", static_cast<long long>(r.tokensCollected),
              static_cast<long long>(r.tokenBudget));
  if (r.source == gpu::CalibrationSource::Fixed) std::printf(" from %lld windows\n", static_cast<long long>(r.windowsDone));
  else std::printf(" from %lld generations (%lld tokens generated)\n", static_cast<long long>(r.promptsDone),
                   static_cast<long long>(r.generatedTokens));
  std::printf("inputs:          %d\n", r.inputs);
  std::printf("time:            %.1f s (%.0f tokens/s; generation %.1f s, teacher-forced passes %.1f s)\n", r.seconds,
              r.tokensPerSecond, r.generateSeconds, r.forwardSeconds);
  std::printf("file:            %s\n", humanBytes(r.fileBytes).c_str());
  return 0;
}

Command makeCommand() {
  Command c{"calibrate",
            "collect calibration statistics (fixed text or the model's own decoding) into a run file",
            "calibrate --model DIR --source fixed|ar|cross-model (--corpus FILE | --prompts FILE) --tokens N "
            "--out RUN.sdw.h5 [OPTIONS]",
            "Per shared projection input: sum x x^T (fp32), sum x^2 per column and the token count, stored in a run "
            "file of kind 'calibration' (docs/run-format.md). Fixed text: random windows of --window tokens, "
            "teacher-forced, every position counts. AR: the dense model continues each prompt (chat-formatted when it "
            "has a template); only decode positions count (the positions of generated tokens read back as inputs). "
            "The disk and memory estimate is printed first (--dry-run: only that). Ctrl-C stops at the end of the "
            "current batch and keeps the run, marked incomplete; --resume --out RUN continues it. AR generations "
            "follow the workbench's decoding protocol unless --temperature / --top-k / --top-p say otherwise: "
            "sampled from the model's own distribution (temperature 1, top-k off, top-p 1), the same default as "
            "eval and analyze drift; a checkpoint's generation_config.json is not applied (a note says when it asks "
            "for something else).",
            {{"model", "DIR", "the model (Hugging Face folder)", ""},
             {"source", "SRC", "fixed, ar or cross-model", ""},
             {"corpus", "FILE", "fixed: .txt (\"# doc\" headers) or .jsonl with \"text\"", ""},
             {"prompts", "FILE", "ar / cross-model: .jsonl with \"id\" and \"prompt\"", ""},
             {"cross-model", "DIR", "cross-model: the model that generates", ""},
             {"tokens", "N", "token budget (positions counted)", ""},
             {"out", "RUN", "the run file to write (.sdw.h5)", ""},
             {"window", "N", "fixed: window length (default 256)", ""},
             {"max-new-tokens", "N", "ar: tokens generated per prompt (default 128)", ""},
             {"batch", "N", "windows or prompts per batch (default 8)", ""},
             {"capture", "MODE", "ar: exact or reforward (default reforward)", ""},
             {"include-prefill", "", "ar ablation: the prompt positions count too", ""},
             {"seed", "S", "window draws and sampling (generation j uses S + j); default 0", ""},
             {"device", "DEV", "cpu or cuda (default cpu)", ""},
             {"dtype", "DTYPE", "float32, bfloat16 or float16 (default float32)", ""},
             {"store", "KIND", "full (xtx) or topk (eigenpairs + diagonal); default full", ""},
             {"topk", "K", "eigenpairs kept with --store topk (default 64)", ""},
             {"chat", "MODE", "auto (the model's chat template) or plain", ""},
             {"checkpoint-seconds", "S",
              "write the statistics this often (default 30; 0: every batch), writing at most a tenth of the time", ""},
             {"sample-rows", "N",
              "also keep a uniform sample of N counted rows of every projection input, with their "
              "sequence, position and decode step (one more teacher-forced pass at the end; default 0: none)",
              ""},
             {"no-halves", "",
              "do not also sum two halves of the sequences apart (saves one d_in x d_in per input on the "
              "device and two in a full-storage file; the epsilon analysis then has no noise floor)",
              ""},
             {"resume", "", "continue the incomplete run --out with its stored settings (--device may change)", ""},
             {"force", "", "replace an existing run file", ""},
             {"dry-run", "", "print the estimate only", ""},
             {"json", "", "machine-readable output", ""}},
            0,
            0,
            runCalibrate};
  // The AR decoding options sit after the AR ones, with the protocol's defaults.
  const auto at = std::find_if(c.options.begin(), c.options.end(),
                               [](const OptionSpec& o) { return o.name == "include-prefill"; });
  const auto decoding = decodingOptions("the AR (or cross-model) generations");
  c.options.insert(at + 1, decoding.begin(), decoding.end());
  return c;
}

const Register regCalibrate{makeCommand()};

}  // namespace
}  // namespace sdw::cli
