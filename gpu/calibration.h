#pragma once
// Calibration: per projection input, the statistics one-shot pruning solvers
// need (sum x x^T, sum x^2 per column, token count), collected either from
// fixed text teacher-forced (every position counts) or from the dense model's
// own autoregressive decoding (decode positions only), and stored in a run
// file of kind "calibration" (layout: docs/run-format.md, "Calibration runs";
// method and definitions: docs/calibration.md). Plain types only.
//
// Positions. The activations at position t are those computed while the model
// reads token t. In AR calibration the prompt occupies positions [0, L); the
// first generated token g0 is sampled from the logits of position L-1 (the
// prefill) and read back at position L. The decode positions of a generation
// g0..g(n-1) are therefore L .. L+n-2: the positions of the generated tokens
// that are fed back as inputs. The last prompt position (L-1) is prefill and
// never counts (nor does a 1-token prompt's single position), and the last
// generated token, which is sampled but never read, has no position.

#include "core/name_table.h"
#include "core/progress.h"
#include "gpu/model_config.h"
#include "gpu/sampling.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace sdw::gpu {

class Model;

// The settings' choices. The names are what the CLI, the GUI forms, the
// settings JSON and the run files carry: never rename them.
enum class CalibrationSource { Fixed, Ar, CrossModel };
inline constexpr NameEntry<CalibrationSource> kCalibrationSourceNames[] = {
    {CalibrationSource::Fixed, "fixed"}, {CalibrationSource::Ar, "ar"}, {CalibrationSource::CrossModel, "cross-model"}};
// AR: where decode-position activations come from.
enum class CaptureMode { Exact, Reforward };
inline constexpr NameEntry<CaptureMode> kCaptureModeNames[] = {{CaptureMode::Exact, "exact"},
                                                               {CaptureMode::Reforward, "reforward"}};
enum class StatsStorage { Full, Topk };
inline constexpr NameEntry<StatsStorage> kStatsStorageNames[] = {{StatsStorage::Full, "full"},
                                                                 {StatsStorage::Topk, "topk"}};
enum class ChatMode { Auto, Plain };
inline constexpr NameEntry<ChatMode> kChatModeNames[] = {{ChatMode::Auto, "auto"}, {ChatMode::Plain, "plain"}};

// parseXxx throws std::invalid_argument naming the accepted values.
std::string calibrationSourceName(CalibrationSource source);
CalibrationSource parseCalibrationSource(std::string_view name);
std::string captureModeName(CaptureMode capture);
CaptureMode parseCaptureMode(std::string_view name);
std::string statsStorageName(StatsStorage storage);
StatsStorage parseStatsStorage(std::string_view name);
std::string chatModeName(ChatMode chat);
ChatMode parseChatMode(std::string_view name);

struct CalibrationSettings {
  CalibrationSource source = CalibrationSource::Fixed;
  std::filesystem::path model;   // the model whose statistics are collected
  std::filesystem::path corpus;  // fixed: .txt ("# doc <id> <category>" headers) or .jsonl {"text": ...}
  std::filesystem::path prompts; // ar / cross-model: .jsonl {"id", "prompt"}
  std::filesystem::path crossModel;  // cross-model: the model that generates
  std::int64_t tokenBudget = 0;  // positions counted, in total
  int window = 256;              // fixed: window length in tokens
  int maxNewTokens = 128;        // ar: tokens generated per prompt (at most)
  int batch = 8;                 // windows / prompts per forward or generation call
  CaptureMode capture = CaptureMode::Reforward;  // ar: exact (observed during KV-cache decoding) | reforward
  bool includePrefill = false;   // ar ablation: the prompt positions count too
  // AR / cross-model decoding: the workbench's protocol (core/decoding.h) by
  // default; generation j uses seed + j.
  SamplingOptions sampling = samplingOptions(kDefaultDecoding);
  std::uint64_t seed = 0;        // window draws, and the sampling seed base
  std::string device = "cpu";
  std::string dtype = "float32";
  StatsStorage storage = StatsStorage::Full;  // full (xtx) | topk (eigenpairs + diagonal)
  int topK = 64;
  ChatMode chat = ChatMode::Auto;  // auto (the model's chat template when it has one) | plain
  double checkpointSeconds =
      30;  // statistics are written this often (0: after every batch), at most a tenth of the time (checkpointDue)
  int checkpointEvery = 0;       // ... and after this many batches (0: by time only)
  // Also sum the statistics of two halves of the sequences apart (fixed text:
  // even / odd windows; AR: generations of even / odd prompt lines), from
  // which the epsilon analysis estimates its noise floor (docs/epsilon.md).
  // Costs one more [d_in, d_in] per input on the device, and in the file
  // with full storage (two [k, k] with top-k storage).
  bool halves = true;
  // Also keep a uniform sample of this many counted rows (positions) of every
  // projection input, the same rows for every input, with each row's
  // sequence, position and decode step (docs/calibration.md "Activation
  // samples"). 0: none. Taken by one more teacher-forced pass over the
  // counted positions when the run completes.
  int sampleRows = 0;
};

// What a run will take, before it starts.
struct CalibrationEstimate {
  int inputs = 0;                      // shared projection inputs (4 per layer)
  std::int64_t sumDIn = 0;             // sum of d_in over the inputs
  std::uint64_t accumulatorBytes = 0;  // xtx + sum_sq (+ half a's xtx) (fp32) on the device
  std::uint64_t bufferBytes = 0;       // row staging buffers on the device
  std::uint64_t modelBytes = 0;        // weights (+ a cross model's)
  std::uint64_t deviceBytes = 0;       // accumulators + buffers + weights (activations not counted)
  std::uint64_t fileBytesFull = 0;     // run file with storage "full"
  std::uint64_t fileBytesTopk = 0;     // run file with storage "topk"
  std::uint64_t fileBytes = 0;         // for the chosen storage
  std::uint64_t generationBytes = 0;   // token ids and texts (ar), included above
};

CalibrationEstimate estimateCalibration(const ModelConfig& config, const CalibrationSettings& settings);

struct CalibrationResult {
  std::filesystem::path run;        // the file written (final name)
  bool complete = false;
  CalibrationSource source = CalibrationSource::Fixed;
  std::string capture;              // as recorded: "teacher-forced" (fixed, cross-model), "exact", "reforward"
  std::int64_t tokenBudget = 0;
  std::int64_t tokensCollected = 0;  // positions counted
  std::int64_t promptsDone = 0;      // ar: generations accounted for
  std::int64_t windowsDone = 0;      // fixed: windows accounted for
  std::int64_t generatedTokens = 0;  // ar: tokens generated (incl. the unread last one per generation)
  int inputs = 0;
  double seconds = 0;                // this call only (a resumed run: since the resume)
  double tokensPerSecond = 0;        // positions counted per second in this call
  double generateSeconds = 0;        // time inside generation
  double forwardSeconds = 0;         // teacher-forced passes (fixed, re-forward)
  std::uint64_t fileBytes = 0;
  int checkpoints = 0;
};

// Extension points, for tests and tools: called once the model is loaded,
// before any forward pass (attach observers here).
struct CalibrationHooks {
  std::function<void(Model& model)> modelLoaded;
};

// Validates the settings (std::invalid_argument with a one-line reason),
// refuses when the output volume lacks room (std::runtime_error), then runs
// to the budget and commits `outRun` (".sdw.h5"). When `progress` returns
// false the run stops at the end of the current batch, is kept under its
// final name with status "incomplete" (resumable), and sdw::Cancelled is
// thrown.
CalibrationResult runCalibration(const CalibrationSettings& settings, const std::filesystem::path& outRun,
                                 const ProgressFn& progress = {}, const CalibrationHooks& hooks = {});

// Continues an incomplete run (its final name or its .partial) with the
// settings stored in it, from prompts_done / windows_done, to its budget.
// `device` overrides the stored device when non-empty.
CalibrationResult resumeCalibration(const std::filesystem::path& run, const ProgressFn& progress = {},
                                    const CalibrationHooks& hooks = {}, const std::string& device = {});

// The settings stored in a run's provenance (settings_json).
// Paths in the JSON are as run files record them (core/paths.h); with the
// run file they came from they are found again from any working directory.
CalibrationSettings calibrationSettingsFromJson(const std::string& json, const std::filesystem::path& runFile = {});
std::string calibrationSettingsToJson(const CalibrationSettings& settings);

// Throws std::invalid_argument naming the first bad field.
void validateCalibrationSettings(const CalibrationSettings& settings);

}  // namespace sdw::gpu
