#pragma once
// Epsilon analysis over calibration run files (DESIGN §1 "calibration
// discrepancy"): for every projection input, the top-k eigenpairs of the
// reference decode-time Hessian H_D, eps_k(C) of each calibration run C, the
// per-module ratio eps(fixed)/eps(AR) and its summary, the eigen-spectra, and
// each eps's noise floor from the runs' half statistics (docs/epsilon.md).
// Plain types only; the math runs on LibTorch (CPU or CUDA) in
// gpu/epsilon_analysis.cpp and is held to core/epsilon.h in the tests.
//
// Input: calibration runs (run_kind "calibration") with /calibration/inputs/<name>
// groups holding xtx (raw sum of x x^T, H = xtx / tokens) or, with storage
// "topk", eigvals/eigvecs of xtx / tokens. Output layout of the analysis run:
// docs/run-format.md, "Analysis runs: epsilon".

#include "core/epsilon.h"
#include "core/progress.h"
#include "core/run_decoding.h"

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace sdw::gpu {

enum class EigenPrecision { Fp64, Fp32 };

struct EpsilonSettings {
    std::filesystem::path reference;               // decode-time reference run (held-out prompts)
    std::vector<std::filesystem::path> runs;       // calibration runs C to compare
    int k = 64;                                    // top-k directions of H_D
    std::string device = "cpu";                    // "cpu" | "cuda" | "cuda:N"
    // fp64 is the reference; fp32 is for GPUs with slow fp64 (large d).
    EigenPrecision precision = EigenPrecision::Fp64;
    double relTol = epsilon::kDefaultRelTol;       // dead-direction guard, see core/epsilon.h
};

// What the analysis read from one run file.
struct EpsilonRunInfo {
    std::filesystem::path path;
    std::string runId;
    std::string status;          // "complete" | "incomplete"
    std::string source;          // /calibration@source: "fixed", "ar", "cross-model", ... ("" if absent)
    std::string storage;         // "full" | "topk"
    std::string modelDir;        // /calibration@model_dir
    std::int64_t tokens = 0;     // /calibration@tokens_collected (0 if absent)
    RunDecoding decoding;        // what it decoded, from which prompts (core/run_decoding.h)
    // Why the run has no noise floor, in words ("" when it has one): no half
    // statistics in the file (written before they existed, or without them),
    // halves that do not add up to the total, an empty half.
    std::string noiseUnavailable;
    // storage "topk": H ~= V M V^T from the stored eigenpairs, so eps is an
    // approximation and the spectrum holds only the stored eigenvalues.
    bool approximate() const { return storage == "topk"; }
    bool hasNoise() const { return noiseUnavailable.empty(); }
};

// One shared projection input (e.g. the input of q/k/v of layer 0).
struct EpsilonInput {
    std::string name;                        // checkpoint name of the first module
    std::vector<std::string> modules;        // full names of the modules reading it
    int layer = -1;
    int dIn = 0;
    int kUsed = 0;                           // directions used, <= k (dead directions left out)
    std::vector<double> eps;                 // [runs]; NaN when the reference input is all zero
    // [runs] noise_k: the eps two runs of that run's process would show at its
    // budget, sqrt(2 n_a n_b)/(n_a + n_b) ||Hhat_k(H_a) - Hhat_k(H_b)||_op in
    // the reference's frame (core/epsilon.h); NaN where the run has none.
    std::vector<double> noise;
    double referenceNoise = std::numeric_limits<double>::quiet_NaN();  // the same for the reference's halves
    std::vector<float> referenceSpectrum;    // eigenvalues of H_D, descending
    std::vector<std::vector<float>> runSpectra;  // [runs] eigenvalues of H_C, descending
};

// One module: modules that share an input share its eps.
struct EpsilonModuleRow {
    std::string module;                      // full checkpoint name
    int input = -1;                          // index into EpsilonResult::inputs
    int layer = -1;
    std::vector<double> eps;                 // [runs]
    double ratio = std::numeric_limits<double>::quiet_NaN();  // eps(numerator) / eps(denominator)
    std::vector<double> noise;               // [runs], the input's
    // 1 when |eps(numerator) - eps(denominator)| > (noise(numerator) +
    // noise(denominator)) / sqrt(2) (epsilon::differsBeyondNoise), else 0; -1
    // when a noise floor or an eps is missing (or there is no pair).
    int beyondNoise = -1;
};

struct EpsilonSummary : epsilon::RatioSummary {
    int numeratorRun = -1;     // index into runs: the fixed-text (or first) run, "C"
    int denominatorRun = -1;   // the AR run; -1 for both with fewer than two runs
    // Modules with both noise floors, of those the ones that differ beyond
    // them, and of those the ones where AR is the lower (core/epsilon.h).
    epsilon::NoiseSummary noise;
};

struct EpsilonResult {
    EpsilonRunInfo reference;
    std::vector<EpsilonRunInfo> runs;
    int kRequested = 0;
    double relTol = 0;
    std::string device;                      // what the math ran on, e.g. "cpu"
    std::string precision;                   // "fp64" | "fp32"
    std::vector<EpsilonInput> inputs;        // forward order: layer, then q/o/gate/down
    std::vector<EpsilonModuleRow> modules;   // expanded per module, same order
    EpsilonSummary summary;
    // Plain words (core/decoding_checks.h): a run decoded otherwise than the
    // reference, or on the reference's prompts; the decodings and prompt sets.
    std::vector<std::string> warnings;
    std::vector<std::string> notes;
    bool anyApproximate() const;
};

// Reads the reference and the runs, checks that they describe the same
// model (same inputs, modules and d_in; each input with tokens > 0) and
// computes everything. Progress counts inputs. Throws std::runtime_error
// with a one-line reason naming the file and the input on bad input (not a
// calibration run, a different model, a missing input or dataset), and
// Cancelled when progress says stop.
EpsilonResult analyzeEpsilon(const EpsilonSettings& settings, const ProgressFn& progress = {});

// Which run is the numerator ("C", fixed text) and which the denominator
// (AR): by /calibration@source when exactly one run is "ar" and another is
// not, else the first run over the second. {-1, -1} with fewer than 2 runs.
std::pair<int, int> ratioPair(const std::vector<EpsilonRunInfo>& runs);

// Writes `result` as an analysis run (run_kind "analysis", group
// /analysis/epsilon) and commits it; returns the final path.
std::filesystem::path writeEpsilonAnalysis(const EpsilonResult& result, const std::filesystem::path& out,
                                           bool overwrite = false);

// Reads an analysis run written by writeEpsilonAnalysis.
EpsilonResult readEpsilonAnalysis(const std::filesystem::path& path);

}  // namespace sdw::gpu
