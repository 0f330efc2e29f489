#pragma once
// Torch-typed internals of calibration: the statistics accumulator and the
// batch drivers that feed it. Include only from gpu/*.cpp and engine tests.

#include "core/runstore.h"
#include "gpu/calibration.h"
#include "gpu/model_internal.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace sdw::gpu {

// One shared projection input and its running sums, on the model's device.
struct InputStats {
  std::string name;                  // the first module's checkpoint name
  std::vector<std::string> modules;  // every module reading this input
  int layer = 0;
  std::int64_t dIn = 0;
  at::Tensor xtx;    // [dIn, dIn] fp32: sum x x^T
  at::Tensor sumSq;  // [dIn] fp32: sum x^2 per column
  std::int64_t tokens = 0;  // rows added (flushed or staged)
  at::Tensor stage;         // [stageRows, dIn] fp32: rows waiting for the next addmm
  std::int64_t staged = 0;
  // With halves: the sums of half a alone (half b is xtx - xtxA), for the
  // noise floor (docs/epsilon.md). Undefined / 0 without halves.
  at::Tensor xtxA;          // [dIn, dIn] fp32: sum x x^T over the rows of half a
  std::int64_t tokensA = 0; // rows of half a (flushed or staged)
  std::vector<std::int64_t> stagedA;  // stage rows that belong to half a
};

// The four shared inputs of every layer, in order: q/k/v, o, gate/up, down.
std::vector<InputStats> describeInputs(const ModelConfig& config);

// sum x x^T and sum x^2 per shared input. Small row groups (decode steps)
// are staged in a per-input fp32 buffer and multiplied in once it fills, so
// a decode step costs a copy, not an addmm; large ones go straight through
// addmm_ in chunks of `chunkRows` (memory stays bounded by chunk x dIn fp32).
class StatsAccumulator {
 public:
  // onlyLayer >= 0: only that layer's inputs are allocated and collected
  // (rows for the other layers' inputs are ignored). halves: also keep the
  // sums of half a apart (one more [dIn, dIn] per input).
  StatsAccumulator(const ModelConfig& config, c10::Device device, int onlyLayer = -1, bool halves = false);

  // x: [rows, dIn] (any float dtype) on the device; adds every row. half:
  // 0 (a) or 1 (b) with halves, which then must say; ignored without.
  void add(const std::string& firstModule, const at::Tensor& x, int half = -1);
  bool halves() const { return halves_; }
  // Called after rows are added to the last input of a layer (down_proj's),
  // i.e. when a forward pass has finished collecting that layer.
  void setLayerDone(std::function<void(int layer)> fn) { layerDone_ = std::move(fn); }
  int layerCount() const { return inputs_.empty() ? 0 : inputs_.back().layer + 1; }
  // Multiplies in every staged row.
  void flush();
  // Blocks until the device has finished (a scalar read back).
  void synchronize();

  std::vector<InputStats>& inputs() { return inputs_; }
  const std::vector<InputStats>& inputs() const { return inputs_; }
  InputStats& input(const std::string& firstModule);

  static std::int64_t stageRows(const ModelConfig& config);
  static constexpr std::int64_t kChunkRows = 4096;
  // Total bytes of the staging buffers (part of the estimate).
  static std::uint64_t stageBytes(const ModelConfig& config);

 private:
  void addRows(InputStats& s, const at::Tensor& x, int half);
  void multiply(InputStats& s, const at::Tensor& rows, bool halfA);  // rows: [n, dIn] fp32
  void multiplyStaged(InputStats& s);
  std::vector<InputStats> inputs_;
  std::map<std::string, std::size_t> index_;
  std::function<void(int)> layerDone_;
  int onlyLayer_ = -1;
  bool halves_ = false;
  // Every row added so far came in as bf16 or fp16 (its fp32 copy is then exact in TF32).
  bool sixteenBitRows_ = true;
};

// One generation of an AR batch.
struct GenerationRecord {
  std::int64_t index = 0;             // sequence number j (prompt j % P, seed + j)
  std::string promptId, promptText;
  std::vector<std::int32_t> promptIds;
  std::vector<std::int32_t> tokens;   // generated, the unread last one included
  std::string text;                   // decoded generation (filled by the caller)
  std::int64_t prefillCounted = 0;    // prompt positions counted (includePrefill)
  std::int64_t decodeCounted = 0;     // decode positions counted
  int half = -1;                      // with halves: 0 (a) or 1 (b), see Run::halfOf
};

struct ArBatchStats {
  std::int64_t counted = 0;
  double generateSeconds = 0;
  double forwardSeconds = 0;
  // The generation call's host time by phase (GenerationResult's launch, readback, sample).
  double launchSeconds = 0, readbackSeconds = 0, sampleSeconds = 0;
};

// Budget split of one batch: prefill positions first (prompt by prompt), then
// decode positions step by step (at step s, prompts in batch order), until
// `remaining` runs out. Fills prefillCounted / decodeCounted. Exact capture
// admits rows in the same order as they arrive, so both modes keep the same
// positions.
void splitBudget(std::vector<GenerationRecord>& batch, bool includePrefill, std::int64_t remaining);

// Whether a time-driven checkpoint is due, `since` seconds after the last one, which
// took `lastTook` seconds to write. intervalSeconds > 0: at that interval, but never so
// often that writing takes more than a tenth of the run (an 8B's full sums are 32 GB: a
// checkpoint every 30 s would spend more time writing than collecting).
// intervalSeconds == 0: after every batch, as asked.
bool checkpointDue(double since, double intervalSeconds, double lastTook);

// Generates the batch (records hold promptIds; tokens are filled) with
// `generator` and collects into `acc` through `model` with the settings'
// capture mode ("exact" needs generator == model). `onToken` may report
// progress; its return value is ignored (a batch always completes).
ArBatchStats runArBatch(Model& model, Model& generator, std::vector<GenerationRecord>& batch,
                        const CalibrationSettings& settings, const std::vector<std::int32_t>& stopIds,
                        std::int64_t remaining, StatsAccumulator& acc,
                        const std::function<void(std::int64_t generatedSoFar)>& onToken = {});

// Teacher-forced pass over left-padded sequences; per sequence, rows
// [begin, begin + count) are added to `acc` (row t = position t).
struct ForwardRows {
  std::vector<std::int32_t> ids;
  std::int64_t begin = 0;
  std::int64_t count = 0;
  int half = -1;  // the half the rows go to when the accumulator keeps halves
  // What replaySequences knows of it: the window or generation number in the
  // run, and the position of the first generated token (the prompt's length;
  // -1 for fixed text).
  std::int64_t sequence = -1;
  std::int64_t decodeFrom = -1;
};
void forwardCollect(Model& model, const std::vector<ForwardRows>& seqs, StatsAccumulator& acc);
// The same pass with any observer: one event per sequence and input (its
// promptIndex is the sequence's index in `seqs`), x = that sequence's counted rows.
void forwardObserve(Model& model, const std::vector<ForwardRows>& seqs, const TensorObserver& observer);

// The sequences and counted rows of a complete calibration run, rebuilt from
// the run itself: fixed text re-draws windows 0 .. windows_done-1 from the
// corpus with the run's seed and window (and checks they are the stored
// documents and starts); AR and cross-model take each generation's stored
// prompt and generated tokens with its prefill_counted / decode_counted. The
// rows are exactly the positions the run counted (their number is the run's
// tokens_collected). Throws std::runtime_error when the corpus no longer
// gives the stored windows.
std::vector<ForwardRows> replaySequences(const runstore::RunFile& run, const CalibrationSettings& settings);

// Teacher-forces `seqs` through `model` in batches of `batch`, adding the
// counted rows to `acc`. `onBatch(done, total)` after each batch.
void replayCollect(Model& model, const std::vector<ForwardRows>& seqs, int batch, StatsAccumulator& acc,
                   const std::function<void(std::size_t done, std::size_t total)>& onBatch = {});

}  // namespace sdw::gpu
