#include "gpu/epsilon_analysis.h"

#include "core/decoding_checks.h"
#include "core/paths.h"
#include "core/runstore.h"
#include "gpu/device.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace sdw::gpu {

namespace {

using runstore::RunReader;
using runstore::RunWriter;

constexpr const char* kInputsGroup = "/calibration/inputs";
constexpr const char* kAnalysisGroup = "/analysis/epsilon";
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string quoted(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

[[noreturn]] void fail(const std::string& message) { throw std::runtime_error(message); }

std::vector<std::string> splitList(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::string item;
    std::istringstream in(s);
    while (std::getline(in, item, sep)) {
        const auto b = item.find_first_not_of(" \t");
        const auto e = item.find_last_not_of(" \t");
        if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
    }
    return out;
}

std::string joinList(const std::vector<std::string>& items, const char* sep) {
    std::string out;
    for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
    return out;
}

// Position of a projection in the forward pass of a decoder layer, so tables
// read q/k/v, o, gate/up, down rather than alphabetically.
int projectionRank(const std::string& name) {
    static const std::pair<const char*, int> kRanks[] = {
        {"q_proj", 0}, {"k_proj", 0}, {"v_proj", 0}, {"o_proj", 1},
        {"gate_proj", 2}, {"up_proj", 2}, {"down_proj", 3}};
    for (const auto& [suffix, rank] : kRanks) {
        const std::string s = suffix;
        if (name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) return rank;
    }
    return 4;
}

// Module names as stored ("q_proj,k_proj,v_proj") to full checkpoint names,
// taking the prefix from the input's name ("model.layers.0.self_attn.q_proj").
std::vector<std::string> fullModuleNames(const std::string& inputName, const std::string& modulesAttr) {
    std::vector<std::string> mods = splitList(modulesAttr, ',');
    if (mods.empty()) return {inputName};
    const auto dot = inputName.rfind('.');
    const std::string prefix = dot == std::string::npos ? std::string() : inputName.substr(0, dot + 1);
    for (auto& m : mods)
        if (m.find('.') == std::string::npos) m = prefix + m;
    return mods;
}

struct InputMeta {
    std::string name;
    std::vector<std::string> modules;
    int layer = -1;
    int dIn = 0;
    std::int64_t tokens = 0;
    bool topk = false;
    std::int64_t tokensA = 0, tokensB = 0;  // the halves, when the run has them
};

// Why an input's half statistics cannot give a noise floor ("" when they can):
// full storage needs xtx_a / xtx_b, top-k storage eigproj_a / eigproj_b, and
// both the half token counts, adding up to the total.
std::string halvesProblem(const RunReader& r, const std::string& g, InputMeta& m) {
    const char* a = m.topk ? "/eigproj_a" : "/xtx_a";
    const char* b = m.topk ? "/eigproj_b" : "/xtx_b";
    if (!r.exists(g + a) || !r.exists(g + b) || !r.hasAttribute(g, "tokens_a") || !r.hasAttribute(g, "tokens_b")) {
        if (!r.hasAttribute("/calibration", "halves"))
            return "no half statistics (written before they were collected; calibrate again for a noise floor)";
        if (r.readIntAttribute("/calibration", "halves") == 0) return "collected without half statistics";
        return "input '" + m.name + "' has no half statistics";
    }
    m.tokensA = r.readIntAttribute(g, "tokens_a");
    m.tokensB = r.readIntAttribute(g, "tokens_b");
    if (m.tokensA < 0 || m.tokensB < 0 || m.tokensA + m.tokensB != m.tokens)
        return "the halves of input '" + m.name + "' (" + std::to_string(m.tokensA) + " + " +
               std::to_string(m.tokensB) + " tokens) do not add up to its " + std::to_string(m.tokens);
    if (m.tokensA == 0 || m.tokensB == 0)
        return "a half of input '" + m.name + "' is empty (too few sequences to split in two)";
    // [d_in, d_in] sums, or [k, k] projections onto the k stored eigenvectors.
    const std::vector<hsize_t> want(2, m.topk ? r.shape(g + "/eigvals").at(0) : hsize_t(m.dIn));
    if (r.shape(g + a) != want || r.shape(g + b) != want)
        return "the half statistics of input '" + m.name + "' have the wrong shape";
    return {};
}

struct CalibrationRun {
    RunReader reader;
    EpsilonRunInfo info;
    std::map<std::string, InputMeta> inputs;
};

std::string optionalString(const RunReader& r, const char* obj, const char* name) {
    return r.hasAttribute(obj, name) ? r.readStringAttribute(obj, name) : std::string();
}

CalibrationRun openCalibration(const std::filesystem::path& path) {
    CalibrationRun run{RunReader::open(path), {}, {}};
    const RunReader& r = run.reader;
    if (r.kind() != "calibration")
        fail(quoted(path) + " is not a calibration run (run_kind '" + r.kind() + "')");
    if (r.objectKind(kInputsGroup) != runstore::ObjectKind::Group)
        fail(quoted(path) + " has no " + kInputsGroup + " group: no per-input statistics to analyse");
    run.info.path = path;
    run.info.runId = r.runId();
    run.info.status = r.status();
    run.info.source = optionalString(r, "/calibration", "source");
    run.info.storage = optionalString(r, "/calibration", "storage");
    run.info.modelDir = optionalString(r, "/calibration", "model_dir");
    if (r.hasAttribute("/calibration", "tokens_collected"))
        run.info.tokens = r.readIntAttribute("/calibration", "tokens_collected");
    run.info.decoding = calibrationRunDecoding(r);
    run.info.decoding.run = path;

    bool anyTopk = false;
    for (const std::string& name : r.listGroup(kInputsGroup)) {
        const std::string g = std::string(kInputsGroup) + "/" + name;
        if (r.objectKind(g) != runstore::ObjectKind::Group) continue;
        InputMeta m;
        m.name = name;
        m.modules = fullModuleNames(name, optionalString(r, g.c_str(), "modules"));
        m.layer = static_cast<int>(r.readIntAttribute(g, "layer"));
        m.dIn = static_cast<int>(r.readIntAttribute(g, "d_in"));
        m.tokens = r.readIntAttribute(g, "tokens");
        if (m.dIn <= 0) fail(quoted(path) + ": input '" + name + "' has d_in = " + std::to_string(m.dIn));
        if (m.tokens <= 0)
            fail(quoted(path) + ": input '" + name + "' has tokens = " + std::to_string(m.tokens) +
                 " (no statistics collected)");
        if (r.exists(g + "/xtx")) {
            const auto shape = r.shape(g + "/xtx");
            if (shape.size() != 2 || shape[0] != hsize_t(m.dIn) || shape[1] != hsize_t(m.dIn))
                fail(quoted(path) + ": " + g + "/xtx is not [d_in, d_in] = [" + std::to_string(m.dIn) + ", " +
                     std::to_string(m.dIn) + "]");
        } else if (r.exists(g + "/eigvals") && r.exists(g + "/eigvecs")) {
            const auto sv = r.shape(g + "/eigvals");
            const auto sV = r.shape(g + "/eigvecs");
            if (sv.size() != 1 || sV.size() != 2 || sV[0] != sv[0] || sV[1] != hsize_t(m.dIn) || sv[0] == 0)
                fail(quoted(path) + ": " + g + "/eigvecs is not [k, d_in] matching eigvals [k]");
            m.topk = true;
            anyTopk = true;
        } else {
            fail(quoted(path) + ": input '" + name + "' has neither xtx nor eigvals/eigvecs");
        }
        // The first input without usable halves names the reason for the run.
        if (const std::string why = halvesProblem(r, g, m); !why.empty() && run.info.noiseUnavailable.empty())
            run.info.noiseUnavailable = why;
        run.inputs.emplace(name, std::move(m));
    }
    if (run.inputs.empty()) fail(quoted(path) + " has no inputs under " + kInputsGroup);
    if (run.info.storage.empty()) run.info.storage = anyTopk ? "topk" : "full";
    if (anyTopk) run.info.storage = "topk";
    return run;
}

// Every run must describe the reference's model: same inputs, d_in, modules.
void checkSameModel(const CalibrationRun& ref, const CalibrationRun& run) {
    const std::string a = quoted(ref.info.path), b = quoted(run.info.path);
    for (const auto& [name, m] : ref.inputs) {
        const auto it = run.inputs.find(name);
        if (it == run.inputs.end())
            fail("different models: input '" + name + "' of reference " + a + " is missing from " + b);
        if (it->second.dIn != m.dIn)
            fail("different models: input '" + name + "' has d_in " + std::to_string(m.dIn) + " in reference " + a +
                 " but " + std::to_string(it->second.dIn) + " in " + b);
        if (it->second.modules != m.modules)
            fail("different models: input '" + name + "' feeds " + joinList(m.modules, ",") + " in reference " + a +
                 " but " + joinList(it->second.modules, ",") + " in " + b);
    }
    for (const auto& [name, m] : run.inputs)
        if (!ref.inputs.count(name))
            fail("different models: " + b + " has input '" + name + "' that reference " + a + " lacks");
}

at::Tensor loadFloat32(const RunReader& r, const std::string& path, const at::TensorOptions& opts) {
    runstore::Array<float> a = r.read<float>(path);
    std::vector<std::int64_t> shape(a.shape.begin(), a.shape.end());
    return at::from_blob(a.data.data(), shape, at::kFloat).to(opts, /*non_blocking=*/false, /*copy=*/true);
}

// Per-token normalised Hessian of a full-storage input: xtx / tokens, [d, d].
at::Tensor loadHessian(const CalibrationRun& run, const InputMeta& m, const at::TensorOptions& opts) {
    at::Tensor h = loadFloat32(run.reader, std::string(kInputsGroup) + "/" + m.name + "/xtx", opts);
    h.div_(static_cast<double>(m.tokens));
    return (h + h.t()).mul_(0.5);  // fp32 accumulation is not exactly symmetric
}

// Stored top eigenpairs of xtx / tokens: values [k] descending, vectors [d, k].
std::pair<at::Tensor, at::Tensor> loadTopk(const CalibrationRun& run, const InputMeta& m,
                                           const at::TensorOptions& opts) {
    const std::string g = std::string(kInputsGroup) + "/" + m.name;
    at::Tensor vals = loadFloat32(run.reader, g + "/eigvals", opts);
    at::Tensor vecs = loadFloat32(run.reader, g + "/eigvecs", opts);  // [k, d]
    // Files promise descending order; sort anyway so a reader never depends on it.
    const auto sorted = at::sort(vals, /*dim=*/0, /*descending=*/true);
    return {std::get<0>(sorted), vecs.index_select(0, std::get<1>(sorted)).t()};
}

std::vector<float> toFloatVector(const at::Tensor& t) {
    const at::Tensor c = t.to(at::kCPU, at::kFloat).contiguous();
    return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

double epsilonOfProjected(at::Tensor hhat) {
    hhat = (hhat + hhat.t()).mul_(0.5);
    const at::Tensor ev = at::linalg_eigvalsh(hhat);
    return (ev - 1.0).abs().max().to(at::kCPU, at::kDouble).item<double>();
}

// || D ||_op of a symmetric projected difference D = Hhat(H_a) - Hhat(H_b).
double operatorNorm(at::Tensor d) {
    d = (d + d.t()).mul_(0.5);
    return at::linalg_eigvalsh(d).abs().max().to(at::kCPU, at::kDouble).item<double>();
}

// noise_k of one run's input in the reference frame W = U_k L_k^{-1/2}
// [d, k_used] (core/epsilon.h, noiseFloorK): the halves' discrepancy scaled
// from two half budgets to two full ones. NaN without usable halves.
double noiseOf(const CalibrationRun& run, const InputMeta& m, const at::Tensor& W, const at::TensorOptions& opts) {
    if (!run.info.hasNoise() || !W.defined()) return kNaN;
    const double scale = epsilon::halfBudgetScale(static_cast<double>(m.tokensA), static_cast<double>(m.tokensB));
    const std::string g = std::string(kInputsGroup) + "/" + m.name;
    if (m.topk) {
        // The halves as U H_half U^T [k', k'] over the stored eigenvectors, in
        // the file's row order; sorted like loadTopk sorts the eigenpairs.
        const at::Tensor vals = loadFloat32(run.reader, g + "/eigvals", opts);
        const at::Tensor order = std::get<1>(at::sort(vals, /*dim=*/0, /*descending=*/true));
        const auto sorted = [&](const at::Tensor& p) { return p.index_select(0, order).index_select(1, order); };
        const at::Tensor diff = sorted(loadFloat32(run.reader, g + "/eigproj_a", opts)) -
                                sorted(loadFloat32(run.reader, g + "/eigproj_b", opts));  // [k', k']
        const at::Tensor vecs = loadFloat32(run.reader, g + "/eigvecs", opts).index_select(0, order);  // [k', d]
        const at::Tensor vw = vecs.mm(W);  // [k', k_used]
        return scale * operatorNorm(vw.t().mm(diff).mm(vw));
    }
    at::Tensor ha = loadFloat32(run.reader, g + "/xtx_a", opts).div_(static_cast<double>(m.tokensA));
    const at::Tensor hb = loadFloat32(run.reader, g + "/xtx_b", opts).div_(static_cast<double>(m.tokensB));
    ha.sub_(hb);  // Hhat is linear in H: only the difference is projected
    return scale * operatorNorm(W.t().mm(ha).mm(W));
}

at::Device parseDevice(const std::string& name) {
    at::Device dev(at::kCPU);
    try {
        dev = at::Device(name);
    } catch (const c10::Error&) {
        fail("unknown device '" + name + "' (cpu, cuda or cuda:N)");
    }
    if (dev.is_cuda()) {
        if (!deviceInfo().cudaAvailable) fail("device '" + name + "' asked for, but " + describeDevice(deviceInfo()));
    } else if (!dev.is_cpu()) {
        fail("unknown device '" + name + "' (cpu, cuda or cuda:N)");
    }
    return dev;
}

}  // namespace

bool EpsilonResult::anyApproximate() const {
    if (reference.approximate()) return true;
    return std::any_of(runs.begin(), runs.end(), [](const EpsilonRunInfo& r) { return r.approximate(); });
}

std::pair<int, int> ratioPair(const std::vector<EpsilonRunInfo>& runs) {
    if (runs.size() < 2) return {-1, -1};
    std::vector<int> ar, other;
    for (int i = 0; i < static_cast<int>(runs.size()); ++i)
        (runs[static_cast<std::size_t>(i)].source == "ar" ? ar : other).push_back(i);
    if (ar.size() == 1 && !other.empty()) {
        // Prefer fixed text as the numerator, the paper's comparison.
        for (int i : other)
            if (runs[static_cast<std::size_t>(i)].source == "fixed") return {i, ar[0]};
        return {other[0], ar[0]};
    }
    return {0, 1};
}

EpsilonResult analyzeEpsilon(const EpsilonSettings& settings, const ProgressFn& progress) {
    if (settings.k < 1) fail("k must be >= 1, got " + std::to_string(settings.k));
    if (settings.runs.empty()) fail("no calibration runs given");
    if (!(settings.relTol >= 0 && settings.relTol < 1)) fail("rel_tol must be in [0, 1)");
    const at::Device device = parseDevice(settings.device);
    const at::ScalarType dtype = settings.precision == EigenPrecision::Fp64 ? at::kDouble : at::kFloat;
    const at::TensorOptions opts = at::TensorOptions().dtype(dtype).device(device);

    CalibrationRun ref = openCalibration(settings.reference);
    std::vector<CalibrationRun> runs;
    runs.reserve(settings.runs.size());
    for (const auto& p : settings.runs) {
        runs.push_back(openCalibration(p));
        checkSameModel(ref, runs.back());
    }

    EpsilonResult result;
    result.reference = ref.info;
    for (const auto& r : runs) result.runs.push_back(r.info);
    result.kRequested = settings.k;
    result.relTol = settings.relTol;
    result.device = device.str();
    result.precision = dtype == at::kDouble ? "fp64" : "fp32";
    {
        std::vector<RunDecoding> decodings;
        for (const auto& r : result.runs) decodings.push_back(r.decoding);
        DecodingCheck check = checkEpsilonDecodings(result.reference.decoding, decodings);
        result.warnings = std::move(check.warnings);
        result.notes = std::move(check.notes);
    }

    std::vector<const InputMeta*> order;
    for (const auto& [name, m] : ref.inputs) order.push_back(&m);
    std::sort(order.begin(), order.end(), [](const InputMeta* a, const InputMeta* b) {
        return std::tuple(a->layer, projectionRank(a->name), a->name) <
               std::tuple(b->layer, projectionRank(b->name), b->name);
    });

    const c10::NoGradGuard noGrad;
    const double total = static_cast<double>(order.size());
    try {
        for (std::size_t i = 0; i < order.size(); ++i) {
            const InputMeta& m = *order[i];
            reportOrThrow(progress, {double(i), total, "inputs", m.name});
            EpsilonInput in;
            in.name = m.name;
            in.modules = m.modules;
            in.layer = m.layer;
            in.dIn = m.dIn;

            // Reference basis: values [n] descending, vectors [d, n].
            at::Tensor values, vectors;
            if (m.topk) {
                std::tie(values, vectors) = loadTopk(ref, m, opts);
            } else {
                const at::Tensor hd = loadHessian(ref, m, opts);
                auto [ev, evec] = at::linalg_eigh(hd);  // ascending
                values = ev.flip({0});
                vectors = evec.flip({1});
            }
            in.referenceSpectrum = toFloatVector(values);
            const double lmax = values[0].to(at::kCPU, at::kDouble).item<double>();
            const std::int64_t alive =
                lmax > 0 ? values.gt(settings.relTol * lmax).sum().item<std::int64_t>() : 0;
            in.kUsed = static_cast<int>(std::min<std::int64_t>(settings.k, alive));
            // W = U_k L_k^{-1/2}: [d, k_used]
            at::Tensor W;
            if (in.kUsed > 0)
                W = vectors.narrow(1, 0, in.kUsed) * values.narrow(0, 0, in.kUsed).rsqrt().unsqueeze(0);
            in.referenceNoise = noiseOf(ref, m, W, opts);

            for (const CalibrationRun& run : runs) {
                const InputMeta& rm = run.inputs.at(m.name);
                double eps = kNaN;
                if (rm.topk) {
                    // H_C ~= V M V^T from the stored eigenpairs: Hhat = (V^T W)^T M (V^T W).
                    auto [mvals, mvecs] = loadTopk(run, rm, opts);  // [k'], [d, k']
                    if (in.kUsed > 0) {
                        const at::Tensor vw = mvecs.t().mm(W);          // [k', k_used]
                        eps = epsilonOfProjected(vw.t().mm(vw * mvals.unsqueeze(1)));
                    }
                    in.runSpectra.push_back(toFloatVector(mvals));
                } else {
                    const at::Tensor hc = loadHessian(run, rm, opts);
                    if (in.kUsed > 0) eps = epsilonOfProjected(W.t().mm(hc).mm(W));
                    in.runSpectra.push_back(toFloatVector(at::linalg_eigvalsh(hc).flip({0})));
                }
                in.eps.push_back(eps);
                in.noise.push_back(noiseOf(run, rm, W, opts));
            }
            result.inputs.push_back(std::move(in));
        }
    } catch (const c10::Error& e) {
        fail(std::string("epsilon analysis: ") + e.what_without_backtrace());
    }
    reportOrThrow(progress, {total, total, "inputs", "done"});

    const auto [num, den] = ratioPair(result.runs);
    result.summary.numeratorRun = num;
    result.summary.denominatorRun = den;
    std::vector<double> epsC, epsAR, noiseC, noiseAR;
    for (int i = 0; i < static_cast<int>(result.inputs.size()); ++i) {
        const EpsilonInput& in = result.inputs[static_cast<std::size_t>(i)];
        for (const std::string& mod : in.modules) {
            EpsilonModuleRow row{mod, i, in.layer, in.eps, kNaN, in.noise, -1};
            if (num >= 0) {
                const auto n = static_cast<std::size_t>(num), d = static_cast<std::size_t>(den);
                row.ratio = epsilon::ratio(in.eps[n], in.eps[d]);
                if (!std::isnan(in.eps[n]) && !std::isnan(in.eps[d]) && !std::isnan(in.noise[n]) &&
                    !std::isnan(in.noise[d]))
                    row.beyondNoise = epsilon::differsBeyondNoise(in.eps[n], in.eps[d], in.noise[n], in.noise[d]) ? 1 : 0;
                epsC.push_back(in.eps[n]);
                epsAR.push_back(in.eps[d]);
                noiseC.push_back(in.noise[n]);
                noiseAR.push_back(in.noise[d]);
            }
            result.modules.push_back(std::move(row));
        }
    }
    if (num >= 0) {
        static_cast<epsilon::RatioSummary&>(result.summary) = epsilon::summarizeRatios(epsC, epsAR);
        result.summary.noise = epsilon::summarizeNoise(epsC, epsAR, noiseC, noiseAR);
    }
    return result;
}

// ---------------------------------------------------------------------------
// The analysis run file

namespace {

std::string ds(const char* name) { return std::string(kAnalysisGroup) + "/" + name; }

// Stored with the numbers, for whoever opens the file without these docs.
constexpr const char* kNoiseDefinition =
    "noise_k(C) = sqrt(2 n_a n_b) / (n_a + n_b) * || Hhat_k(H_a) - Hhat_k(H_b) ||_op: the eps between two runs of "
    "C's process at C's budget, from C's two halves (H_a, H_b over n_a, n_b positions) in the reference's top-k "
    "whitened frame; a module differs beyond noise when |eps(C) - eps(AR)| > (noise(C) + noise(AR)) / sqrt(2), "
    "where the noise-free eps of each run lies within eps +- noise / sqrt(2)";

// The noise floors of an analysis file; analyses written before there were
// any read as NaN with the reason.
void readNoise(const RunReader& r, const std::filesystem::path& path, EpsilonResult& res) {
    const std::string g = kAnalysisGroup;
    const std::size_t nIn = res.inputs.size(), nRuns = res.runs.size();
    if (!r.exists(ds("noise"))) {
        const std::string why = "the analysis was written before noise floors were computed";
        res.reference.noiseUnavailable = why;
        for (auto& run : res.runs) run.noiseUnavailable = why;
        for (auto& in : res.inputs) in.noise.assign(nRuns, kNaN);
        return;
    }
    const auto noise = r.read<double>(ds("noise"));
    const auto refNoise = r.read<double>(ds("reference_noise"));
    const auto why = r.readStrings(ds("run_noise_unavailable"));
    if (noise.data.size() != nIn * nRuns || refNoise.data.size() != nIn || why.size() != nRuns)
        fail(quoted(path) + ": noise tables of " + g + " differ in length from its inputs and runs");
    for (std::size_t i = 0; i < nIn; ++i) {
        res.inputs[i].noise.assign(noise.data.begin() + std::ptrdiff_t(i * nRuns),
                                   noise.data.begin() + std::ptrdiff_t((i + 1) * nRuns));
        res.inputs[i].referenceNoise = refNoise.data[i];
    }
    for (std::size_t j = 0; j < nRuns; ++j) res.runs[j].noiseUnavailable = why[j];
    res.reference.noiseUnavailable = r.readStringAttribute(g, "reference_noise_unavailable");
    res.summary.noise.modules = static_cast<int>(r.readIntAttribute(g, "n_noise_modules"));
    res.summary.noise.beyond = static_cast<int>(r.readIntAttribute(g, "n_beyond_noise"));
    res.summary.noise.arLowerBeyond = static_cast<int>(r.readIntAttribute(g, "n_ar_lower_beyond_noise"));
}

template <typename T, typename F>
std::vector<T> column(const std::vector<EpsilonInput>& inputs, F f) {
    std::vector<T> out;
    for (const auto& in : inputs) out.push_back(static_cast<T>(f(in)));
    return out;
}

}  // namespace

std::filesystem::path writeEpsilonAnalysis(const EpsilonResult& r, const std::filesystem::path& out,
                                           bool overwrite) {
    if (r.inputs.empty() || r.runs.empty()) fail("writeEpsilonAnalysis: empty result");
    // Checked before the file exists, so that a bad result leaves nothing behind.
    for (const auto& in : r.inputs)
        if (!in.noise.empty() && in.noise.size() != r.runs.size())
            fail("writeEpsilonAnalysis: input '" + in.name + "' has " + std::to_string(in.noise.size()) +
                 " noise floors for " + std::to_string(r.runs.size()) + " runs");
    nlohmann::json runsJson = nlohmann::json::array();
    for (const auto& run : r.runs) runsJson.push_back(recordedPath(run.path));
    const nlohmann::json settings = {{"analysis", "epsilon"},
                                     {"reference", recordedPath(r.reference.path)},
                                     {"runs", runsJson},
                                     {"k", r.kRequested},
                                     {"rel_tol", r.relTol},
                                     {"device", r.device},
                                     {"precision", r.precision}};
    const Provenance prov = engineProvenance(r.reference.modelDir, settings.dump(), r.device);

    RunWriter w = RunWriter::create(out, prov, "analysis", runstore::CreateOptions{overwrite});
    const std::string g = kAnalysisGroup;
    w.createGroup(g);
    w.setIntAttribute(g, "k", r.kRequested);
    w.setDoubleAttribute(g, "rel_tol", r.relTol);
    w.setStringAttribute(g, "device", r.device);
    w.setStringAttribute(g, "precision", r.precision);
    w.setStringAttribute(g, "reference", recordedPath(r.reference.path));
    w.setStringAttribute(g, "reference_run_id", r.reference.runId);
    w.setStringAttribute(g, "reference_source", r.reference.source);
    w.setStringAttribute(g, "reference_storage", r.reference.storage);
    w.setStringAttribute(g, "reference_model_dir", r.reference.modelDir);
    w.setIntAttribute(g, "reference_tokens", r.reference.tokens);
    // What each run decoded and from which prompts: JSON {"temperature", "top_k",
    // "top_p"} ("" for a run that did not decode) and the prompts file.
    const auto decodingText = [](const RunDecoding& d) { return d.decodes ? decodingToJson(d.decoding) : std::string(); };
    w.setStringAttribute(g, "reference_decoding", decodingText(r.reference.decoding));
    w.setStringAttribute(g, "reference_prompts", r.reference.decoding.prompts.string());
    w.writeStrings(ds("warnings"), r.warnings);
    w.writeStrings(ds("notes"), r.notes);
    w.setStringAttribute(g, "runs", runsJson.dump());
    w.setIntAttribute(g, "approximate", r.anyApproximate() ? 1 : 0);
    w.setIntAttribute(g, "numerator_run", r.summary.numeratorRun);
    w.setIntAttribute(g, "denominator_run", r.summary.denominatorRun);
    w.setIntAttribute(g, "n_modules", r.summary.modules);
    w.setIntAttribute(g, "n_ar_lower", r.summary.arLower);
    w.setDoubleAttribute(g, "share_ar_lower", r.summary.shareArLower);
    w.setDoubleAttribute(g, "median_ratio", r.summary.medianRatio);
    w.setDoubleAttribute(g, "ratio_q1", r.summary.ratioQ1);
    w.setDoubleAttribute(g, "ratio_q3", r.summary.ratioQ3);

    const hsize_t nIn = r.inputs.size(), nRuns = r.runs.size();
    w.writeStrings(ds("input_names"), column<std::string>(r.inputs, [](const auto& in) { return in.name; }));
    w.writeStrings(ds("modules"),
                   column<std::string>(r.inputs, [](const auto& in) { return joinList(in.modules, ","); }));
    w.writeDataset(ds("layer"), column<std::int32_t>(r.inputs, [](const auto& in) { return in.layer; }), {nIn});
    w.writeDataset(ds("d_in"), column<std::int32_t>(r.inputs, [](const auto& in) { return in.dIn; }), {nIn});
    w.writeDataset(ds("k_used"), column<std::int32_t>(r.inputs, [](const auto& in) { return in.kUsed; }), {nIn});
    std::vector<double> eps;
    for (const auto& in : r.inputs) eps.insert(eps.end(), in.eps.begin(), in.eps.end());
    w.writeDataset(ds("eps"), eps, {nIn, nRuns});

    std::vector<std::string> paths, ids, sources, storage, status, modelDirs;
    std::vector<std::int64_t> tokens;
    for (const auto& run : r.runs) {
        paths.push_back(recordedPath(run.path));
        ids.push_back(run.runId);
        sources.push_back(run.source);
        storage.push_back(run.storage);
        status.push_back(run.status);
        modelDirs.push_back(run.modelDir);
        tokens.push_back(run.tokens);
    }
    w.writeStrings(ds("run_paths"), paths);
    w.writeStrings(ds("run_ids"), ids);
    w.writeStrings(ds("run_sources"), sources);
    w.writeStrings(ds("run_storage"), storage);
    w.writeStrings(ds("run_status"), status);
    w.writeStrings(ds("run_model_dirs"), modelDirs);
    w.writeDataset(ds("run_tokens"), tokens, {nRuns});
    std::vector<std::string> runDecodings, runPrompts;
    for (const auto& run : r.runs) {
        runDecodings.push_back(decodingText(run.decoding));
        runPrompts.push_back(run.decoding.prompts.string());
    }
    w.writeStrings(ds("run_decodings"), runDecodings);
    w.writeStrings(ds("run_prompts"), runPrompts);

    std::vector<std::string> modNames;
    std::vector<std::int32_t> modInput;
    std::vector<double> modRatio;
    for (const auto& row : r.modules) {
        modNames.push_back(row.module);
        modInput.push_back(row.input);
        modRatio.push_back(row.ratio);
    }
    const hsize_t nMod = r.modules.size();
    w.writeStrings(ds("module_names"), modNames);
    w.writeDataset(ds("module_input"), modInput, {nMod});
    w.writeDataset(ds("module_ratio"), modRatio, {nMod});

    for (const auto& in : r.inputs) {
        const std::string sg = g + "/spectra/" + in.name;
        w.writeDataset(sg + "/reference", in.referenceSpectrum, {hsize_t(in.referenceSpectrum.size())});
        for (std::size_t j = 0; j < in.runSpectra.size(); ++j)
            w.writeDataset(sg + "/run" + std::to_string(j), in.runSpectra[j], {hsize_t(in.runSpectra[j].size())});
    }

    // Noise floors (docs/epsilon.md, "Noise floor"): NaN where a run has none,
    // the reason in words next to it.
    w.setStringAttribute(g, "noise_definition", kNoiseDefinition);
    w.setStringAttribute(g, "reference_noise_unavailable", r.reference.noiseUnavailable);
    std::vector<double> noise;
    for (const auto& in : r.inputs) {
        if (in.noise.empty()) noise.insert(noise.end(), nRuns, kNaN);  // a result built without noise floors
        else noise.insert(noise.end(), in.noise.begin(), in.noise.end());
    }
    w.writeDataset(ds("noise"), noise, {nIn, nRuns});
    w.writeDataset(ds("reference_noise"), column<double>(r.inputs, [](const auto& in) { return in.referenceNoise; }),
                   {nIn});
    std::vector<std::string> noiseWhy;
    for (const auto& run : r.runs) noiseWhy.push_back(run.noiseUnavailable);
    w.writeStrings(ds("run_noise_unavailable"), noiseWhy);
    std::vector<std::int32_t> beyond;
    for (const auto& row : r.modules) beyond.push_back(row.beyondNoise);
    w.writeDataset(ds("module_beyond_noise"), beyond, {nMod});
    w.setIntAttribute(g, "n_noise_modules", r.summary.noise.modules);
    w.setIntAttribute(g, "n_beyond_noise", r.summary.noise.beyond);
    w.setIntAttribute(g, "n_ar_lower_beyond_noise", r.summary.noise.arLowerBeyond);
    return w.commit(overwrite);
}

EpsilonResult readEpsilonAnalysis(const std::filesystem::path& path) {
    const RunReader r = RunReader::open(path);
    if (r.kind() != "analysis" || r.objectKind(kAnalysisGroup) != runstore::ObjectKind::Group)
        fail(quoted(path) + " holds no epsilon analysis (run_kind '" + r.kind() + "', no " + kAnalysisGroup + ")");
    const std::string g = kAnalysisGroup;
    EpsilonResult res;
    res.kRequested = static_cast<int>(r.readIntAttribute(g, "k"));
    res.relTol = r.readDoubleAttribute(g, "rel_tol");
    res.device = r.readStringAttribute(g, "device");
    res.precision = r.readStringAttribute(g, "precision");
    res.reference.path = r.readStringAttribute(g, "reference");
    res.reference.runId = r.readStringAttribute(g, "reference_run_id");
    res.reference.source = r.readStringAttribute(g, "reference_source");
    res.reference.storage = r.readStringAttribute(g, "reference_storage");
    res.reference.modelDir = r.readStringAttribute(g, "reference_model_dir");
    res.reference.tokens = r.readIntAttribute(g, "reference_tokens");
    res.summary.numeratorRun = static_cast<int>(r.readIntAttribute(g, "numerator_run"));
    res.summary.denominatorRun = static_cast<int>(r.readIntAttribute(g, "denominator_run"));
    res.summary.modules = static_cast<int>(r.readIntAttribute(g, "n_modules"));
    res.summary.arLower = static_cast<int>(r.readIntAttribute(g, "n_ar_lower"));
    res.summary.shareArLower = r.readDoubleAttribute(g, "share_ar_lower");
    res.summary.medianRatio = r.readDoubleAttribute(g, "median_ratio");
    res.summary.ratioQ1 = r.readDoubleAttribute(g, "ratio_q1");
    res.summary.ratioQ3 = r.readDoubleAttribute(g, "ratio_q3");

    const auto paths = r.readStrings(ds("run_paths"));
    const auto ids = r.readStrings(ds("run_ids"));
    const auto sources = r.readStrings(ds("run_sources"));
    const auto storage = r.readStrings(ds("run_storage"));
    const auto status = r.readStrings(ds("run_status"));
    const auto modelDirs = r.readStrings(ds("run_model_dirs"));
    const auto tokens = r.read<std::int64_t>(ds("run_tokens"));
    const std::size_t nRuns = paths.size();
    if (ids.size() != nRuns || sources.size() != nRuns || storage.size() != nRuns || status.size() != nRuns ||
        modelDirs.size() != nRuns || tokens.data.size() != nRuns)
        fail(quoted(path) + ": run tables of " + g + " differ in length");
    for (std::size_t j = 0; j < nRuns; ++j) {
        EpsilonRunInfo info;
        info.path = paths[j];
        info.runId = ids[j];
        info.status = status[j];
        info.source = sources[j];
        info.storage = storage[j];
        info.modelDir = modelDirs[j];
        info.tokens = tokens.data[j];
        res.runs.push_back(std::move(info));
    }
    // Decodings and prompt sets: analyses written before they were recorded lack them.
    const auto storedDecoding = [](RunDecoding& d, const std::string& text, const std::string& prompts) {
        d.decodes = !text.empty();
        if (d.decodes) d.decoding = decodingFromJson(text);
        d.prompts = prompts;
    };
    res.reference.decoding.run = res.reference.path;
    res.reference.decoding.source = res.reference.source;
    if (r.hasAttribute(g, "reference_decoding"))
        storedDecoding(res.reference.decoding, r.readStringAttribute(g, "reference_decoding"),
                       r.hasAttribute(g, "reference_prompts") ? r.readStringAttribute(g, "reference_prompts") : "");
    if (r.exists(ds("run_decodings")) && r.exists(ds("run_prompts"))) {
        const auto decodings = r.readStrings(ds("run_decodings"));
        const auto prompts = r.readStrings(ds("run_prompts"));
        if (decodings.size() != nRuns || prompts.size() != nRuns)
            fail(quoted(path) + ": run decodings of " + g + " differ in length from its runs");
        for (std::size_t j = 0; j < nRuns; ++j) {
            res.runs[j].decoding.run = res.runs[j].path;
            res.runs[j].decoding.source = res.runs[j].source;
            storedDecoding(res.runs[j].decoding, decodings[j], prompts[j]);
        }
    }
    if (r.exists(ds("warnings"))) res.warnings = r.readStrings(ds("warnings"));
    if (r.exists(ds("notes"))) res.notes = r.readStrings(ds("notes"));

    const auto names = r.readStrings(ds("input_names"));
    const auto modules = r.readStrings(ds("modules"));
    const auto layer = r.read<std::int64_t>(ds("layer"));
    const auto dIn = r.read<std::int64_t>(ds("d_in"));
    const auto kUsed = r.read<std::int64_t>(ds("k_used"));
    const auto eps = r.read<double>(ds("eps"));
    const std::size_t nIn = names.size();
    if (modules.size() != nIn || layer.data.size() != nIn || dIn.data.size() != nIn || kUsed.data.size() != nIn ||
        eps.data.size() != nIn * nRuns)
        fail(quoted(path) + ": input tables of " + g + " differ in length");
    for (std::size_t i = 0; i < nIn; ++i) {
        EpsilonInput in;
        in.name = names[i];
        in.modules = splitList(modules[i], ',');
        in.layer = static_cast<int>(layer.data[i]);
        in.dIn = static_cast<int>(dIn.data[i]);
        in.kUsed = static_cast<int>(kUsed.data[i]);
        in.eps.assign(eps.data.begin() + std::ptrdiff_t(i * nRuns), eps.data.begin() + std::ptrdiff_t((i + 1) * nRuns));
        const std::string sg = g + "/spectra/" + in.name;
        in.referenceSpectrum = r.read<float>(sg + "/reference").data;
        for (std::size_t j = 0; j < nRuns; ++j) in.runSpectra.push_back(r.read<float>(sg + "/run" + std::to_string(j)).data);
        res.inputs.push_back(std::move(in));
    }
    readNoise(r, path, res);

    const auto modNames = r.readStrings(ds("module_names"));
    const auto modInput = r.read<std::int64_t>(ds("module_input"));
    const auto modRatio = r.read<double>(ds("module_ratio"));
    if (modInput.data.size() != modNames.size() || modRatio.data.size() != modNames.size())
        fail(quoted(path) + ": module tables of " + g + " differ in length");
    for (std::size_t i = 0; i < modNames.size(); ++i) {
        const auto idx = modInput.data[i];
        if (idx < 0 || static_cast<std::size_t>(idx) >= nIn)
            fail(quoted(path) + ": module '" + modNames[i] + "' points to input " + std::to_string(idx));
        const EpsilonInput& in = res.inputs[static_cast<std::size_t>(idx)];
        res.modules.push_back({modNames[i], static_cast<int>(idx), in.layer, in.eps, modRatio.data[i], in.noise, -1});
    }
    if (r.exists(ds("module_beyond_noise"))) {
        const auto beyond = r.read<std::int64_t>(ds("module_beyond_noise"));
        if (beyond.data.size() != res.modules.size())
            fail(quoted(path) + ": module_beyond_noise of " + g + " differs in length from its modules");
        for (std::size_t i = 0; i < beyond.data.size(); ++i) res.modules[i].beyondNoise = static_cast<int>(beyond.data[i]);
    }
    return res;
}

}  // namespace sdw::gpu
