#pragma once
// Epsilon analysis over calibration run files (DESIGN §1 "calibration
// discrepancy"): for every projection input, the top-k eigenpairs of the
// reference decode-time Hessian H_D, eps_k(C) of each calibration run C, the
// per-module ratio eps(fixed)/eps(AR) and its summary, and the eigen-spectra.
// Plain types only; the math runs on LibTorch (CPU or CUDA) in
// gpu/epsilon_analysis.cpp and is held to core/epsilon.h in the tests.
//
// Input: calibration runs (run_kind "calibration") with /calibration/inputs/<name>
// groups holding xtx (raw sum of x x^T, H = xtx / tokens) or, with storage
// "topk", eigvals/eigvecs of xtx / tokens. Output layout of the analysis run:
// docs/run-format.md, "Analysis runs: epsilon".

#include "core/epsilon.h"
#include "core/progress.h"

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
    // storage "topk": H ~= V M V^T from the stored eigenpairs, so eps is an
    // approximation and the spectrum holds only the stored eigenvalues.
    bool approximate() const { return storage == "topk"; }
};

// One shared projection input (e.g. the input of q/k/v of layer 0).
struct EpsilonInput {
    std::string name;                        // checkpoint name of the first module
    std::vector<std::string> modules;        // full names of the modules reading it
    int layer = -1;
    int dIn = 0;
    int kUsed = 0;                           // directions used, <= k (dead directions left out)
    std::vector<double> eps;                 // [runs]; NaN when the reference input is all zero
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
};

struct EpsilonSummary : epsilon::RatioSummary {
    int numeratorRun = -1;     // index into runs: the fixed-text (or first) run, "C"
    int denominatorRun = -1;   // the AR run; -1 for both with fewer than two runs
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
