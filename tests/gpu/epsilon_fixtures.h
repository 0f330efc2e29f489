#pragma once
// Fixtures of the epsilon suites (test_epsilon_analysis, test_epsilon_noise):
// small calibration runs written with RunWriter in the calibration layout
// (random X -> xtx, optionally top-k storage and half statistics), and a
// runner for sdw-cli.

#include "core/runstore.h"

#include <QProcess>
#include <QString>
#include <QStringList>

#include <Eigen/Dense>
#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace epsilon_fixtures {

using Eigen::MatrixXd;
namespace fs = std::filesystem;
namespace rs = sdw::runstore;

struct FixtureInput {
    std::string name;
    std::string modules;  // as the calibration engine stores them: short names
    int layer;
    int dIn;
};

// Two decoder layers of a toy model: q/k/v share an input, gate/up share one.
inline std::vector<FixtureInput> toyModel(int dModel = 12, int dFf = 20) {
    std::vector<FixtureInput> out;
    for (int l = 0; l < 2; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        out.push_back({p + "self_attn.q_proj", "q_proj,k_proj,v_proj", l, dModel});
        out.push_back({p + "self_attn.o_proj", "o_proj", l, dModel});
        out.push_back({p + "mlp.gate_proj", "gate_proj,up_proj", l, dModel});
        out.push_back({p + "mlp.down_proj", "down_proj", l, dFf});
    }
    return out;
}

struct FixtureOptions {
    std::string source = "fixed";
    double distortion = 0.0;  // how far this source's activations are from the reference's
    unsigned seed = 1;        // token noise
    std::int64_t tokens = 2000;
    int topk = 0;             // > 0: store eigvals/eigvecs of xtx/tokens instead of xtx
    std::string kind = "calibration";
    std::map<std::string, int> dInOverride;  // input name -> d_in
    std::vector<std::string> drop;           // inputs to leave out
    std::vector<std::string> zeroTokens;     // inputs with tokens = 0
    // Half statistics as the engine writes them: the first tokensA positions
    // (half the tokens by default) in half a, the rest in b.
    bool halves = false;
    std::int64_t tokensA = -1;
    bool identicalHalves = false;            // xtx_a = xtx_b = xtx / 2
    std::int64_t tokensAShift = 0;           // stored tokens_a off by this (halves that do not add up)
    int halvesAttribute = -1;                // /calibration@halves: -1 from `halves`, else this value
};

// A run of `source` (seed: token noise; distortion: how far from the
// reference's activations), optionally with half statistics.
inline FixtureOptions fixture(const std::string& source, unsigned seed, double distortion, bool halves = false) {
    FixtureOptions o;
    o.source = source;
    o.seed = seed;
    o.distortion = distortion;
    o.halves = halves;
    return o;
}

// Per input, the halves H_a, H_b the analysis can see (per-token normalised,
// rounded as stored; for top-k storage V^T P V from the stored projections),
// and their token counts.
struct FixtureHalves {
    MatrixXd a, b;
    std::int64_t nA = 0, nB = 0;
};

// x_t = A (z_t) with z ~ N(0, diag(scales)); A = A_ref + distortion * B, with
// A_ref and B fixed per input (seeded by the input name), so runs of
// different sources share structure and differ by a controlled amount.
// Returns the per-token normalised H (as the file stores it, rounded to fp32)
// per input name.
inline std::map<std::string, MatrixXd> writeCalibration(const fs::path& path, const FixtureOptions& o,
                                                 const std::vector<FixtureInput>& inputs = toyModel(),
                                                 std::map<std::string, FixtureHalves>* halvesOut = nullptr) {
    sdw::Provenance prov = sdw::Provenance::capture();
    prov.modelId = "toy";
    rs::RunWriter w = rs::RunWriter::create(path, prov, o.kind);
    w.createGroup("/calibration");
    w.setStringAttribute("/calibration", "source", o.source);
    w.setStringAttribute("/calibration", "capture", "reforward");
    w.setIntAttribute("/calibration", "include_prefill", 0);
    w.setIntAttribute("/calibration", "token_budget", o.tokens);
    w.setIntAttribute("/calibration", "tokens_collected", o.tokens);
    w.setIntAttribute("/calibration", "seed", o.seed);
    w.setStringAttribute("/calibration", "model_dir", "toy");
    w.setStringAttribute("/calibration", "storage", o.topk > 0 ? "topk" : "full");
    w.setIntAttribute("/calibration", "top_k", o.topk);
    const int halvesAttr = o.halvesAttribute >= 0 ? o.halvesAttribute : (o.halves ? 1 : -1);
    if (halvesAttr >= 0) w.setIntAttribute("/calibration", "halves", halvesAttr);
    std::map<std::string, MatrixXd> hs;
    for (const auto& in : inputs) {
        if (std::find(o.drop.begin(), o.drop.end(), in.name) != o.drop.end()) continue;
        const int d = o.dInOverride.count(in.name) ? o.dInOverride.at(in.name) : in.dIn;
        std::seed_seq structureSeed(in.name.begin(), in.name.end());
        std::mt19937 srng(structureSeed);
        std::uint32_t nameHash = 2166136261u;  // FNV-1a: the same data on every platform
        for (const char ch : in.name) nameHash = (nameHash ^ static_cast<unsigned char>(ch)) * 16777619u;
        std::mt19937 rng(o.seed * 7919u + nameHash);
        std::normal_distribution<double> nd(0.0, 1.0);
        MatrixXd A(d, d), B(d, d);
        for (int i = 0; i < d; ++i)
            for (int j = 0; j < d; ++j) A(i, j) = nd(srng) * std::pow(10.0, -1.5 * j / d);
        for (int i = 0; i < d; ++i)
            for (int j = 0; j < d; ++j) B(i, j) = nd(srng) * 0.3;
        const MatrixXd M = A + o.distortion * B;
        MatrixXd Z(d, o.tokens);
        for (int i = 0; i < d; ++i)
            for (std::int64_t t = 0; t < o.tokens; ++t) Z(i, t) = nd(rng);
        const MatrixXd X = M * Z;  // [d, T]
        const MatrixXd xtx = X * X.transpose();
        // Halves, rounded to float32 as stored: [d, d] row-major.
        const std::int64_t tA = o.tokensA >= 0 ? o.tokensA : o.tokens / 2, tB = o.tokens - tA;
        const auto rounded = [d](const MatrixXd& m, MatrixXd* asRead, double n) {
            std::vector<float> f(static_cast<std::size_t>(d) * d);
            for (int i = 0; i < d; ++i)
                for (int j = 0; j < d; ++j) {
                    f[std::size_t(i) * d + j] = static_cast<float>(0.5 * (m(i, j) + m(j, i)));
                    (*asRead)(i, j) = n > 0 ? double(f[std::size_t(i) * d + j]) / n : 0.0;
                }
            return f;
        };
        FixtureHalves fh;
        fh.a.resize(d, d);
        fh.b.resize(d, d);
        fh.nA = o.identicalHalves ? o.tokens / 2 : tA;
        fh.nB = o.identicalHalves ? o.tokens - fh.nA : tB;
        std::vector<float> xtxA, xtxB;
        if (o.halves) {
            const MatrixXd Xa = X.leftCols(tA), Xb = X.rightCols(tB);
            const MatrixXd sa = o.identicalHalves ? MatrixXd(0.5 * xtx) : MatrixXd(Xa * Xa.transpose());
            const MatrixXd sb = o.identicalHalves ? MatrixXd(0.5 * xtx) : MatrixXd(Xb * Xb.transpose());
            xtxA = rounded(sa, &fh.a, double(fh.nA));
            xtxB = rounded(sb, &fh.b, double(fh.nB));
        }
        // Row-major float32 as the engine writes it; symmetric by construction.
        std::vector<float> xtxF(static_cast<std::size_t>(d) * d), sumSq(static_cast<std::size_t>(d));
        MatrixXd H(d, d);
        for (int i = 0; i < d; ++i) {
            for (int j = 0; j < d; ++j) {
                const float v = static_cast<float>(0.5 * (xtx(i, j) + xtx(j, i)));
                xtxF[std::size_t(i) * d + j] = v;
                H(i, j) = double(v) / double(o.tokens);
            }
            sumSq[std::size_t(i)] = xtxF[std::size_t(i) * d + i];
        }
        const bool zero = std::find(o.zeroTokens.begin(), o.zeroTokens.end(), in.name) != o.zeroTokens.end();
        const std::string g = "/calibration/inputs/" + in.name;
        w.createGroup(g);
        w.setStringAttribute(g, "modules", in.modules);
        w.setIntAttribute(g, "layer", in.layer);
        w.setIntAttribute(g, "d_in", d);
        w.setIntAttribute(g, "tokens", zero ? 0 : o.tokens);
        if (o.halves) {
            w.setIntAttribute(g, "tokens_a", fh.nA + o.tokensAShift);
            w.setIntAttribute(g, "tokens_b", fh.nB);
        }
        if (o.topk > 0) {
            const Eigen::SelfAdjointEigenSolver<MatrixXd> es(H);
            const int k = std::min(o.topk, d);
            std::vector<float> vals(static_cast<std::size_t>(k)), vecs(static_cast<std::size_t>(k) * d),
                diag(static_cast<std::size_t>(d));
            MatrixXd approx = MatrixXd::Zero(d, d);
            for (int i = 0; i < k; ++i) {
                vals[std::size_t(i)] = float(es.eigenvalues()(d - 1 - i));
                Eigen::VectorXd v(d);
                for (int j = 0; j < d; ++j) {
                    vecs[std::size_t(i) * d + j] = float(es.eigenvectors()(j, d - 1 - i));
                    v(j) = double(vecs[std::size_t(i) * d + j]);
                }
                approx += double(vals[std::size_t(i)]) * v * v.transpose();
            }
            for (int j = 0; j < d; ++j) diag[std::size_t(j)] = float(H(j, j));
            w.writeDataset(g + "/eigvals", vals, {hsize_t(k)});
            w.writeDataset(g + "/eigvecs", vecs, {hsize_t(k), hsize_t(d)});
            w.writeDataset(g + "/diag", diag, {hsize_t(d)});
            H = approx;  // what the analysis can see: V M V^T
            if (o.halves) {
                // The engine's projections U H_half U^T [k, k] over the stored rows U.
                MatrixXd U(k, d);
                for (int i = 0; i < k; ++i)
                    for (int j = 0; j < d; ++j) U(i, j) = double(vecs[std::size_t(i) * d + j]);
                for (MatrixXd* half : {&fh.a, &fh.b}) {
                    const MatrixXd P = U * *half * U.transpose();
                    std::vector<float> pf(static_cast<std::size_t>(k) * k);
                    MatrixXd Pr(k, k);
                    for (int i = 0; i < k; ++i)
                        for (int j = 0; j < k; ++j) {
                            pf[std::size_t(i) * k + j] = static_cast<float>(0.5 * (P(i, j) + P(j, i)));
                            Pr(i, j) = double(pf[std::size_t(i) * k + j]);
                        }
                    w.writeDataset(g + (half == &fh.a ? "/eigproj_a" : "/eigproj_b"), pf, {hsize_t(k), hsize_t(k)});
                    *half = U.transpose() * Pr * U;  // what the analysis can see
                }
            }
        } else {
            w.writeDataset(g + "/xtx", xtxF, {hsize_t(d), hsize_t(d)});
            w.writeDataset(g + "/sum_sq", sumSq, {hsize_t(d)});
            if (o.halves) {
                w.writeDataset(g + "/xtx_a", xtxA, {hsize_t(d), hsize_t(d)});
                w.writeDataset(g + "/xtx_b", xtxB, {hsize_t(d), hsize_t(d)});
            }
        }
        hs[in.name] = H;
        if (halvesOut && o.halves) (*halvesOut)[in.name] = std::move(fh);
    }
    w.commit();
    return hs;
}

inline QString cliPath() { return QStringLiteral(SDW_BINARY_DIR "/bin/sdw-cli"); }

struct CliResult {
    int code = -1;
    QString out, err;
};

inline CliResult cli(const QStringList& args) {
    QProcess p;
    p.start(cliPath(), args);
    if (!p.waitForFinished(300000)) return {};
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2, QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
}

inline bool relClose(double a, double b, double rel) { return std::abs(a - b) <= rel * std::max(std::abs(b), 1e-12); }

inline QString q(const fs::path& p) { return QString::fromStdString(p.string()); }

}  // namespace epsilon_fixtures
