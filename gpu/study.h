#pragma once
// The paper's comparison as one job: a grid of calibration source (fixed
// text, the model's own decoding, another model's decoding) x decoding
// (greedy, sampled) x solver x pattern x seed. Per seed it calibrates,
// builds the held-out decode-time reference, measures epsilon, prunes and
// evaluates on-policy; then it summarises each cell over the seeds with 95%
// confidence intervals and writes one study run file (kind "study"; layout:
// docs/run-format.md). Intermediate runs live in a work folder next to the
// output, so a cancelled study resumes where it stopped. Plain types only.

#include "core/progress.h"
#include "core/stats.h"
#include "gpu/calibration.h"
#include "gpu/pruning.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace sdw::gpu {

struct StudyDecoding {
  std::string name;          // "greedy" | "sampled"
  double temperature = 0;    // <= 0: greedy
  int topK = 0;
  double topP = 1.0;
};

struct StudySettings {
  std::filesystem::path model;        // the dense checkpoint pruned and evaluated
  std::filesystem::path crossModel;   // optional: its generations calibrate `model` (source "cross-model")
  std::filesystem::path corpus;       // fixed text for the "fixed" source
  std::filesystem::path prompts;      // calibration prompts (AR, cross-model)
  std::filesystem::path heldoutPrompts;  // the reference's and the evaluation's prompts
  std::filesystem::path heldoutText;  // evaluation perplexity text
  std::vector<CalibrationSource> sources = {CalibrationSource::Fixed, CalibrationSource::Ar};  // + CrossModel
  std::vector<StudyDecoding> decodings = {{"greedy", 0, 0, 1.0}, {"sampled", 1.0, 0, 1.0}};
  std::vector<PruneMethod> solvers = {PruneMethod::SparseGpt, PruneMethod::Wanda};
  std::vector<std::string> patterns = {"2:4", "4:8", "unstructured50"};
  std::vector<std::uint64_t> seeds = {0, 1, 2};
  std::int64_t tokens = 20000;          // calibration budget of every source (decode tokens for AR)
  std::int64_t referenceTokens = 10000; // the held-out decode-time reference
  int maxNewTokens = 256;               // AR / reference generation length
  int window = 256;                     // fixed-text windows
  int batch = 8;
  int epsilonK = 64;
  int evalMaxNewTokens = 64;
  int evalPrompts = 0;                  // 0: every held-out prompt
  int evalWindows = 16;
  std::string device = "cpu";
  std::string dtype = "float32";
  std::filesystem::path workDir;        // intermediate runs; empty: <out>.work
};

// Parses a decoding's name: "greedy", "sampled" (temperature 1.0: the dense
// model's own distribution), or "tN.N" (temperature N.N, e.g. "t0.8").
// Throws std::invalid_argument.
StudyDecoding parseStudyDecoding(const std::string& name);

// One seed's figures of one cell (source x decoding x solver x pattern).
struct StudySeedRow {
  std::string source, decoding, solver, pattern;
  std::uint64_t seed = 0;
  double kl = 0, agreement = 0, firstDivergence = 0, pplDenseGen = 0, pplText = 0;
  double meanRelError = 0;  // pruning: mean relative output error on the calibration data
};

// One seed's epsilon comparison at one decoding: `source` against fixed text.
struct StudyEpsilonRow {
  std::string source, decoding;
  std::uint64_t seed = 0;
  int modules = 0;
  int lower = 0;          // modules where eps(source) < eps(fixed)
  double shareLower = 0;  // lower / modules
  double medianRatio = 0; // median over modules of eps(fixed) / eps(source)
  double medianEps = 0, medianEpsFixed = 0;
};

// A cell over the seeds: mean and 95% CI of each figure.
struct StudyCell {
  std::string source, decoding, solver, pattern;
  stats::MeanCi kl, agreement, firstDivergence, pplDenseGen, pplText, meanRelError;
};

struct StudyEpsilonCell {
  std::string source, decoding;
  stats::MeanCi shareLower, medianRatio;
};

struct StudyResult {
  StudySettings settings;
  std::vector<StudySeedRow> seedRows;
  std::vector<StudyEpsilonRow> epsilonRows;
  std::vector<StudyCell> cells;
  std::vector<StudyEpsilonCell> epsilonCells;
  double seconds = 0;        // this call
  int stepsReused = 0;       // steps found done in the work folder (a resume)
  std::filesystem::path workDir;
};

// The steps the grid takes (calibrations, references, epsilon analyses,
// prunings, evaluations), for progress and estimates.
int studySteps(const StudySettings& s);

// Runs the grid (progress: one unit per step; a false answer stops it after
// the current step and throws sdw::Cancelled, keeping every finished step in
// the work folder). Steps already done there are reused. Throws
// std::invalid_argument on bad settings.
StudyResult runStudy(const StudySettings& settings, const std::filesystem::path& out,
                     const ProgressFn& progress = {});

// Cells from seed rows (also what a reader does).
void summariseStudy(StudyResult& r);

// Writes the study run file (kind "study") and commits it.
std::filesystem::path writeStudy(const StudyResult& r, const std::filesystem::path& out, bool overwrite);
// Reads a study run file. Throws std::runtime_error naming the file.
StudyResult readStudy(const std::filesystem::path& path);

}  // namespace sdw::gpu
