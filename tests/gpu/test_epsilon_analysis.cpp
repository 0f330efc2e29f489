// gpu/epsilon_analysis.h on small calibration fixtures written with RunWriter
// in the calibration layout (random X -> xtx): against the Eigen reference of
// core/epsilon.h, eps = 0 against itself, top-k storage, the analysis file
// round trip, errors on mismatched runs, and `sdw-cli analyze epsilon` end to
// end (on the fixtures, and on the sample workspace runs when present). The
// noise floor: against core/epsilon.h on fixtures with half statistics, zero
// for identical halves, unavailable (with the reason) for runs without, and a
// same-process pair of the sample model whose eps shrinks as its budget grows.

#include "core/epsilon.h"
#include "core/h5file.h"
#include "core/runstore.h"
#include "gpu/calibration.h"
#include "gpu/device.h"
#include "gpu/epsilon_analysis.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <Eigen/Dense>
#include <Eigen/Eigenvalues>

#include <cmath>
#include <map>
#include <random>

namespace {

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
std::vector<FixtureInput> toyModel(int dModel = 12, int dFf = 20) {
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
std::map<std::string, MatrixXd> writeCalibration(const fs::path& path, const FixtureOptions& o,
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

QString cliPath() { return QStringLiteral(SDW_BINARY_DIR "/bin/sdw-cli"); }

struct CliResult {
    int code = -1;
    QString out, err;
};

CliResult cli(const QStringList& args) {
    QProcess p;
    p.start(cliPath(), args);
    if (!p.waitForFinished(300000)) return {};
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2, QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
}

bool relClose(double a, double b, double rel) { return std::abs(a - b) <= rel * std::max(std::abs(b), 1e-12); }

QString q(const fs::path& p) { return QString::fromStdString(p.string()); }

}  // namespace

class TestEpsilonAnalysis : public QObject {
    Q_OBJECT

    QTemporaryDir tmp_;
    fs::path dir_, ref_, fixed_, ar_, topk_, topkFull_;
    std::map<std::string, MatrixXd> hRef_, hFixed_, hAr_, hTopk_, hTopkFull_;
    // The same sources with half statistics (noise floor).
    fs::path refH_, fixedH_, arH_, topkH_, sameH_;
    std::map<std::string, MatrixXd> hRefH_;
    std::map<std::string, FixtureHalves> halvesRef_, halvesFixed_, halvesAr_, halvesTopk_;

    fs::path file(const char* name) const { return dir_ / name; }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        dir_ = tmp_.path().toStdString();
        ref_ = file("reference.sdw.h5");
        fixed_ = file("fixed.sdw.h5");
        ar_ = file("ar.sdw.h5");
        topk_ = file("ar-topk.sdw.h5");
        topkFull_ = file("ar-topk-all.sdw.h5");
        FixtureOptions o;
        o.source = "ar";
        o.seed = 1;
        hRef_ = writeCalibration(ref_, o);
        o.seed = 2;
        o.distortion = 0.15;
        hAr_ = writeCalibration(ar_, o);
        o.topk = 5;
        hTopk_ = writeCalibration(topk_, o);
        o.topk = 64;  // every eigenpair: the approximation is exact up to fp32 storage
        hTopkFull_ = writeCalibration(topkFull_, o);
        o = {};
        o.source = "fixed";
        o.seed = 3;
        o.distortion = 0.6;
        hFixed_ = writeCalibration(fixed_, o);

        refH_ = file("reference-halves.sdw.h5");
        fixedH_ = file("fixed-halves.sdw.h5");
        arH_ = file("ar-halves.sdw.h5");
        topkH_ = file("ar-topk-halves.sdw.h5");
        sameH_ = file("ar-same-halves.sdw.h5");
        o = {};
        o.source = "ar";
        o.halves = true;
        o.seed = 1;
        hRefH_ = writeCalibration(refH_, o, toyModel(), &halvesRef_);
        o.seed = 2;
        o.distortion = 0.15;
        o.tokensA = 800;  // unequal halves: 800 + 1200
        writeCalibration(arH_, o, toyModel(), &halvesAr_);
        o.tokensA = -1;
        o.topk = 5;
        writeCalibration(topkH_, o, toyModel(), &halvesTopk_);
        o.topk = 0;
        o.identicalHalves = true;
        writeCalibration(sameH_, o);
        o = {};
        o.source = "fixed";
        o.halves = true;
        o.seed = 3;
        o.distortion = 0.6;
        writeCalibration(fixedH_, o, toyModel(), &halvesFixed_);
    }

    void matchesEigenReference_data() {
        QTest::addColumn<int>("k");
        QTest::newRow("k=1") << 1;
        QTest::newRow("k=6") << 6;
        QTest::newRow("k=64 > d") << 64;
    }
    void matchesEigenReference() {
        QFETCH(int, k);
        sdw::gpu::EpsilonSettings s;
        s.reference = ref_;
        s.runs = {ar_, fixed_};  // AR given first: the sources decide the ratio's direction
        s.k = k;
        const auto r = sdw::gpu::analyzeEpsilon(s);
        QCOMPARE(r.runs.size(), std::size_t(2));
        QCOMPARE(r.runs[0].source, std::string("ar"));
        QCOMPARE(r.precision, std::string("fp64"));
        QCOMPARE(r.inputs.size(), std::size_t(8));
        // Forward order: layer 0 q, o, gate, down, then layer 1.
        QCOMPARE(r.inputs[0].name, std::string("model.layers.0.self_attn.q_proj"));
        QCOMPARE(r.inputs[1].name, std::string("model.layers.0.self_attn.o_proj"));
        QCOMPARE(r.inputs[2].name, std::string("model.layers.0.mlp.gate_proj"));
        QCOMPARE(r.inputs[3].name, std::string("model.layers.0.mlp.down_proj"));
        QCOMPARE(r.inputs[4].layer, 1);

        std::vector<double> epsFixed, epsAr;
        for (const auto& in : r.inputs) {
            const MatrixXd& HD = hRef_.at(in.name);
            QCOMPARE(in.dIn, int(HD.rows()));
            const std::map<int, const MatrixXd*> hc = {{0, &hAr_.at(in.name)}, {1, &hFixed_.at(in.name)}};
            for (const auto& [j, H] : hc) {
                int used = 0;
                const double want = sdw::epsilon::epsilonK(HD, *H, k, &used);
                QCOMPARE(in.kUsed, used);
                QVERIFY2(relClose(in.eps[std::size_t(j)], want, 1e-6),
                         qPrintable(QStringLiteral("%1 run %2: %3 vs Eigen %4")
                                        .arg(QString::fromStdString(in.name)).arg(j)
                                        .arg(in.eps[std::size_t(j)], 0, 'g', 12).arg(want, 0, 'g', 12)));
                // Spectra: all eigenvalues, descending.
                const auto spec = sdw::epsilon::spectrum(*H);
                QCOMPARE(in.runSpectra[std::size_t(j)].size(), spec.size());
                for (std::size_t i = 0; i < spec.size(); ++i)
                    QVERIFY(relClose(in.runSpectra[std::size_t(j)][i], spec[i], 1e-5));
            }
            // The smallest directions of a random 20-wide input may fall under the dead-direction guard.
            QVERIFY(in.kUsed <= std::min(k, in.dIn) && in.kUsed >= std::min(k, 12));
            const auto refSpec = sdw::epsilon::spectrum(HD);
            QCOMPARE(in.referenceSpectrum.size(), refSpec.size());
            QVERIFY(relClose(in.referenceSpectrum.front(), refSpec.front(), 1e-6));
            QVERIFY(relClose(in.referenceSpectrum.back(), refSpec.back(), 1e-5));
            // The fixture's AR run is the closer one (over more than one direction).
            if (k > 1) QVERIFY(in.eps[0] < in.eps[1]);
            for (std::size_t m = 0; m < in.modules.size(); ++m) {
                epsAr.push_back(in.eps[0]);
                epsFixed.push_back(in.eps[1]);
            }
        }

        // Per-module rows: 3 + 1 + 2 + 1 per layer, full names, shared eps.
        QCOMPARE(r.modules.size(), std::size_t(14));
        QCOMPARE(r.modules[1].module, std::string("model.layers.0.self_attn.k_proj"));
        QCOMPARE(r.modules[2].module, std::string("model.layers.0.self_attn.v_proj"));
        QCOMPARE(r.modules[5].module, std::string("model.layers.0.mlp.up_proj"));
        QCOMPARE(r.modules[2].eps, r.inputs[0].eps);
        QCOMPARE(r.modules[1].input, 0);
        QCOMPARE(r.summary.numeratorRun, 1);  // fixed
        QCOMPARE(r.summary.denominatorRun, 0);  // AR
        for (const auto& m : r.modules) QCOMPARE(m.ratio, m.eps[1] / m.eps[0]);
        const auto want = sdw::epsilon::summarizeRatios(epsFixed, epsAr);
        QCOMPARE(r.summary.modules, 14);
        QCOMPARE(r.summary.arLower, want.arLower);
        QCOMPARE(r.summary.shareArLower, want.shareArLower);
        if (k > 1) QCOMPARE(r.summary.arLower, 14);
        QCOMPARE(r.summary.medianRatio, want.medianRatio);
        QCOMPARE(r.summary.ratioQ1, want.ratioQ1);
        QCOMPARE(r.summary.ratioQ3, want.ratioQ3);
        if (k > 1) QVERIFY(r.summary.medianRatio > 1.0);
    }

    void zeroAgainstItself() {
        sdw::gpu::EpsilonSettings s;
        s.reference = ref_;
        s.runs = {ref_};
        s.k = 64;
        auto r = sdw::gpu::analyzeEpsilon(s);
        for (const auto& in : r.inputs) QVERIFY2(in.eps[0] < 1e-10, qPrintable(QString::number(in.eps[0])));
        QCOMPARE(r.summary.numeratorRun, -1);  // one run: no ratio
        QVERIFY(std::isnan(r.modules[0].ratio));
        // fp32: rounding grows with the condition of L_k; the top directions are well conditioned.
        s.precision = sdw::gpu::EigenPrecision::Fp32;
        s.k = 6;
        r = sdw::gpu::analyzeEpsilon(s);
        QCOMPARE(r.precision, std::string("fp32"));
        for (const auto& in : r.inputs) QVERIFY2(in.eps[0] < 1e-3, qPrintable(QString::number(in.eps[0])));
    }

    void fp32CloseToFp64() {
        sdw::gpu::EpsilonSettings s;
        s.reference = ref_;
        s.runs = {fixed_, ar_};
        s.k = 6;
        const auto r64 = sdw::gpu::analyzeEpsilon(s);
        s.precision = sdw::gpu::EigenPrecision::Fp32;
        const auto r32 = sdw::gpu::analyzeEpsilon(s);
        for (std::size_t i = 0; i < r64.inputs.size(); ++i)
            for (std::size_t j = 0; j < 2; ++j) QVERIFY(relClose(r32.inputs[i].eps[j], r64.inputs[i].eps[j], 1e-3));
    }

    // storage "topk": H_C ~= V M V^T from the stored eigenpairs.
    void topkStorage() {
        sdw::gpu::EpsilonSettings s;
        s.reference = ref_;
        s.runs = {fixed_, topk_, topkFull_};
        s.k = 6;
        const auto r = sdw::gpu::analyzeEpsilon(s);
        QVERIFY(!r.runs[0].approximate());
        QVERIFY(r.runs[1].approximate());
        QVERIFY(r.anyApproximate());
        QCOMPARE(r.runs[1].storage, std::string("topk"));
        s.runs = {ar_};
        const auto full = sdw::gpu::analyzeEpsilon(s);
        for (std::size_t i = 0; i < r.inputs.size(); ++i) {
            const auto& in = r.inputs[i];
            const MatrixXd& HD = hRef_.at(in.name);
            const double want = sdw::epsilon::epsilonK(HD, hTopk_.at(in.name), 6);
            QVERIFY2(relClose(in.eps[1], want, 1e-6),
                     qPrintable(QStringLiteral("%1 vs %2").arg(in.eps[1]).arg(want)));
            QCOMPARE(in.runSpectra[1].size(), std::size_t(5));  // only the stored eigenvalues
            // All eigenpairs stored: equal to the full-storage run up to fp32 rounding.
            QVERIFY2(relClose(in.eps[2], full.inputs[i].eps[0], 1e-4),
                     qPrintable(QStringLiteral("%1 vs %2").arg(in.eps[2]).arg(full.inputs[i].eps[0])));
        }
        // A top-k reference: k is limited to what it stores, same eps as the full reference there.
        s.reference = topkFull_;
        s.runs = {fixed_};
        s.k = 6;
        const auto rt = sdw::gpu::analyzeEpsilon(s);
        QVERIFY(rt.reference.approximate());
        for (const auto& in : rt.inputs) {
            const double want = sdw::epsilon::epsilonK(hTopkFull_.at(in.name), hFixed_.at(in.name), 6);
            QVERIFY(relClose(in.eps[0], want, 1e-5));
        }
    }

    void analysisFileRoundTrip() {
        sdw::gpu::EpsilonSettings s;
        s.reference = ref_;
        s.runs = {fixed_, ar_, topk_};
        s.k = 8;
        const auto r = sdw::gpu::analyzeEpsilon(s);
        const fs::path out = file("analysis/epsilon.sdw.h5");
        const fs::path written = sdw::gpu::writeEpsilonAnalysis(r, out);
        QCOMPARE(written, out);
        QVERIFY(fs::exists(out));
        QVERIFY_THROWS_EXCEPTION(rs::RunStoreError, sdw::gpu::writeEpsilonAnalysis(r, out));
        sdw::gpu::writeEpsilonAnalysis(r, out, /*overwrite=*/true);

        // The layout of docs/run-format.md.
        {
            const auto reader = rs::RunReader::open(out);
            QCOMPARE(reader.kind(), std::string("analysis"));
            QCOMPARE(reader.status(), std::string("complete"));
            QCOMPARE(reader.shape("/analysis/epsilon/eps"), (std::vector<hsize_t>{8, 3}));
            QCOMPARE(reader.readIntAttribute("/analysis/epsilon", "k"), std::int64_t{8});
            QCOMPARE(reader.readStringAttribute("/analysis/epsilon", "reference_run_id"), r.reference.runId);
            QCOMPARE(reader.readIntAttribute("/analysis/epsilon", "approximate"), std::int64_t{1});
            QCOMPARE(reader.readStrings("/analysis/epsilon/run_sources"),
                     (std::vector<std::string>{"fixed", "ar", "ar"}));
            QVERIFY(reader.exists("/analysis/epsilon/spectra/model.layers.1.mlp.down_proj/run2"));
            QCOMPARE(reader.shape("/analysis/epsilon/spectra/model.layers.1.mlp.down_proj/reference"),
                     (std::vector<hsize_t>{20}));
            QCOMPARE(reader.readDoubleAttribute("/analysis/epsilon", "median_ratio"), r.summary.medianRatio);
        }

        const auto b = sdw::gpu::readEpsilonAnalysis(out);
        QCOMPARE(b.kRequested, r.kRequested);
        QCOMPARE(b.relTol, r.relTol);
        QCOMPARE(b.device, r.device);
        QCOMPARE(b.precision, r.precision);
        QCOMPARE(b.reference.path, r.reference.path);
        QCOMPARE(b.reference.runId, r.reference.runId);
        QCOMPARE(b.reference.tokens, r.reference.tokens);
        QCOMPARE(b.runs.size(), r.runs.size());
        for (std::size_t j = 0; j < r.runs.size(); ++j) {
            QCOMPARE(b.runs[j].path, r.runs[j].path);
            QCOMPARE(b.runs[j].runId, r.runs[j].runId);
            QCOMPARE(b.runs[j].source, r.runs[j].source);
            QCOMPARE(b.runs[j].storage, r.runs[j].storage);
            QCOMPARE(b.runs[j].status, r.runs[j].status);
            QCOMPARE(b.runs[j].tokens, r.runs[j].tokens);
        }
        QCOMPARE(b.inputs.size(), r.inputs.size());
        for (std::size_t i = 0; i < r.inputs.size(); ++i) {
            QCOMPARE(b.inputs[i].name, r.inputs[i].name);
            QCOMPARE(b.inputs[i].modules, r.inputs[i].modules);
            QCOMPARE(b.inputs[i].layer, r.inputs[i].layer);
            QCOMPARE(b.inputs[i].dIn, r.inputs[i].dIn);
            QCOMPARE(b.inputs[i].kUsed, r.inputs[i].kUsed);
            QCOMPARE(b.inputs[i].eps, r.inputs[i].eps);
            QCOMPARE(b.inputs[i].referenceSpectrum, r.inputs[i].referenceSpectrum);
            QCOMPARE(b.inputs[i].runSpectra, r.inputs[i].runSpectra);
        }
        QCOMPARE(b.modules.size(), r.modules.size());
        for (std::size_t m = 0; m < r.modules.size(); ++m) {
            QCOMPARE(b.modules[m].module, r.modules[m].module);
            QCOMPARE(b.modules[m].input, r.modules[m].input);
            QCOMPARE(b.modules[m].layer, r.modules[m].layer);
            QCOMPARE(b.modules[m].eps, r.modules[m].eps);
            QCOMPARE(b.modules[m].ratio, r.modules[m].ratio);
        }
        QCOMPARE(b.summary.numeratorRun, r.summary.numeratorRun);
        QCOMPARE(b.summary.denominatorRun, r.summary.denominatorRun);
        QCOMPARE(b.summary.modules, r.summary.modules);
        QCOMPARE(b.summary.arLower, r.summary.arLower);
        QCOMPARE(b.summary.shareArLower, r.summary.shareArLower);
        QCOMPARE(b.summary.medianRatio, r.summary.medianRatio);
        QCOMPARE(b.summary.ratioQ1, r.summary.ratioQ1);
        QCOMPARE(b.summary.ratioQ3, r.summary.ratioQ3);

        // A calibration run is not an analysis.
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, sdw::gpu::readEpsilonAnalysis(ref_));
    }

    void ratioDirection() {
        using sdw::gpu::EpsilonRunInfo;
        auto run = [](const char* source) {
            EpsilonRunInfo i;
            i.source = source;
            return i;
        };
        QCOMPARE(sdw::gpu::ratioPair({run("ar")}), std::make_pair(-1, -1));
        QCOMPARE(sdw::gpu::ratioPair({run("fixed"), run("ar")}), std::make_pair(0, 1));
        QCOMPARE(sdw::gpu::ratioPair({run("ar"), run("fixed")}), std::make_pair(1, 0));
        QCOMPARE(sdw::gpu::ratioPair({run("ar"), run("cross-model"), run("fixed")}), std::make_pair(2, 0));
        QCOMPARE(sdw::gpu::ratioPair({run("ar"), run("cross-model")}), std::make_pair(1, 0));
        // Sources that do not decide: the first over the second.
        QCOMPARE(sdw::gpu::ratioPair({run("ar"), run("ar")}), std::make_pair(0, 1));
        QCOMPARE(sdw::gpu::ratioPair({run("fixed"), run("fixed")}), std::make_pair(0, 1));
        QCOMPARE(sdw::gpu::ratioPair({run(""), run("")}), std::make_pair(0, 1));
    }

    void errors_data() {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QString>("needle");
        QTest::newRow("not calibration") << QStringLiteral("analysis-kind") << QStringLiteral("is not a calibration run");
        QTest::newRow("d_in differs") << QStringLiteral("wide") << QStringLiteral("different models: input 'model.layers.1.mlp.down_proj' has d_in 20");
        QTest::newRow("input missing") << QStringLiteral("missing") << QStringLiteral("is missing from");
        QTest::newRow("extra input") << QStringLiteral("extra") << QStringLiteral("that reference");
        QTest::newRow("no tokens") << QStringLiteral("zero-tokens") << QStringLiteral("tokens = 0");
        QTest::newRow("no such file") << QStringLiteral("absent") << QStringLiteral("not found");
    }
    void errors() {
        QFETCH(QString, fixture);
        QFETCH(QString, needle);
        const fs::path p = file((fixture.toStdString() + ".sdw.h5").c_str());
        if (!fs::exists(p) && fixture != QLatin1String("absent")) {
            FixtureOptions o;
            o.seed = 5;
            std::vector<FixtureInput> inputs = toyModel();
            if (fixture == QLatin1String("analysis-kind")) o.kind = "analysis";
            if (fixture == QLatin1String("wide")) o.dInOverride["model.layers.1.mlp.down_proj"] = 24;
            if (fixture == QLatin1String("missing")) o.drop = {"model.layers.1.self_attn.o_proj"};
            if (fixture == QLatin1String("extra")) inputs.push_back({"model.layers.2.mlp.down_proj", "down_proj", 2, 20});
            if (fixture == QLatin1String("zero-tokens")) o.zeroTokens = {"model.layers.0.mlp.gate_proj"};
            writeCalibration(p, o, inputs);
        }
        sdw::gpu::EpsilonSettings s;
        s.reference = ref_;
        s.runs = {fixed_, p};
        try {
            sdw::gpu::analyzeEpsilon(s);
            QFAIL("no error");
        } catch (const std::runtime_error& e) {
            const QString what = QString::fromUtf8(e.what());
            QVERIFY2(what.contains(needle), qPrintable(what));
            QVERIFY2(!what.contains(QLatin1Char('\n')), "one line");
            if (fixture != QLatin1String("zero-tokens") && fixture != QLatin1String("absent"))
                QVERIFY2(what.contains(q(p)), "names the file");
        }
        // Through the CLI: exit 1 with one line on stderr.
        const auto c = cli({"analyze", "epsilon", "--reference", q(ref_), "--runs", q(fixed_), q(p)});
        QCOMPARE(c.code, 1);
        QVERIFY2(c.err.contains(needle), qPrintable(c.err));
        QCOMPARE(c.err.trimmed().count(QLatin1Char('\n')), 0);
    }

    void badSettings() {
        sdw::gpu::EpsilonSettings s;
        s.reference = ref_;
        s.runs = {fixed_};
        s.k = 0;
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, sdw::gpu::analyzeEpsilon(s));
        s.k = 4;
        s.device = "tpu";
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, sdw::gpu::analyzeEpsilon(s));
        if (!sdw::gpu::gpuUsable()) {
            s.device = "cuda";
            QVERIFY_THROWS_EXCEPTION(std::runtime_error, sdw::gpu::analyzeEpsilon(s));
        }
        s.device = "cpu";
        s.runs.clear();
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, sdw::gpu::analyzeEpsilon(s));
    }

    void cancel() {
        sdw::gpu::EpsilonSettings s;
        s.reference = ref_;
        s.runs = {fixed_};
        int calls = 0;
        QVERIFY_THROWS_EXCEPTION(sdw::Cancelled, sdw::gpu::analyzeEpsilon(s, [&](const sdw::Progress& p) {
                                     ++calls;
                                     return p.done < 3;
                                 }));
        QCOMPARE(calls, 4);
    }

    void cudaMatchesCpu() {
        if (!sdw::gpu::gpuUsable()) QSKIP("no GPU: the CUDA path is checked on the GPU machine");
        sdw::gpu::EpsilonSettings s;
        s.reference = ref_;
        s.runs = {fixed_, ar_};
        s.k = 6;
        const auto cpu = sdw::gpu::analyzeEpsilon(s);
        s.device = "cuda";
        const auto gpu = sdw::gpu::analyzeEpsilon(s);
        for (std::size_t i = 0; i < cpu.inputs.size(); ++i)
            for (std::size_t j = 0; j < 2; ++j) QVERIFY(relClose(gpu.inputs[i].eps[j], cpu.inputs[i].eps[j], 1e-8));
    }

    void cliOnFixtures() {
        const fs::path out = file("cli/analysis.sdw.h5");
        const auto c = cli({"analyze", "epsilon", "--reference", q(ref_), "--runs", q(fixed_), q(ar_), "--k", "6",
                            "--out", q(out)});
        QVERIFY2(c.code == 0, qPrintable(c.err));
        sdw::gpu::EpsilonSettings s;
        s.reference = ref_;
        s.runs = {fixed_, ar_};
        s.k = 6;
        const auto r = sdw::gpu::analyzeEpsilon(s);
        const QString line = QStringLiteral("AR lower on 100.0% of modules (14/14), median ratio eps(fixed)/eps(AR) = %1")
                                 .arg(r.summary.medianRatio, 0, 'g', 3);
        QVERIFY2(c.out.contains(line), qPrintable(c.out + "\nwanted: " + line));
        QVERIFY(c.out.contains(QStringLiteral("model.layers.1.mlp.up_proj")));
        QVERIFY(c.out.contains(QStringLiteral("eps(fixed)")));
        QVERIFY(fs::exists(out));
        QCOMPARE(sdw::gpu::readEpsilonAnalysis(out).inputs[3].eps, r.inputs[3].eps);

        // Existing --out: refused unless --overwrite.
        auto again = cli({"analyze", "epsilon", "--reference", q(ref_), "--runs", q(fixed_), q(ar_), "--out", q(out)});
        QCOMPARE(again.code, 1);
        again = cli({"analyze", "epsilon", "--reference", q(ref_), "--runs", q(fixed_), q(ar_), "--out", q(out),
                     "--overwrite"});
        QCOMPARE(again.code, 0);

        const auto j = cli({"analyze", "epsilon", "--reference", q(ref_), "--runs", q(ar_), q(fixed_), "--k", "6",
                            "--json"});
        QCOMPARE(j.code, 0);
        QJsonParseError perr;
        const QJsonObject o = QJsonDocument::fromJson(j.out.toUtf8(), &perr).object();
        QVERIFY2(perr.error == QJsonParseError::NoError, qPrintable(perr.errorString()));
        QCOMPARE(o.value("k").toInt(), 6);
        QCOMPARE(o.value("runs").toArray().size(), 2);
        const QJsonObject sum = o.value("summary").toObject();
        QCOMPARE(sum.value("numerator").toString(), QStringLiteral("fixed"));
        QCOMPARE(sum.value("denominator").toString(), QStringLiteral("ar"));
        QCOMPARE(sum.value("n_modules").toInt(), 14);
        QVERIFY(relClose(sum.value("median_ratio").toDouble(), r.summary.medianRatio, 1e-12));
        const QJsonArray inputs = o.value("inputs").toArray();
        QCOMPARE(inputs.size(), 8);
        // Runs given AR first this time: eps columns follow the order given.
        for (int i = 0; i < 8; ++i) {
            const QJsonArray eps = inputs[i].toObject().value("eps").toArray();
            QVERIFY(relClose(eps[0].toDouble(), r.inputs[std::size_t(i)].eps[1], 1e-12));
            QVERIFY(relClose(eps[1].toDouble(), r.inputs[std::size_t(i)].eps[0], 1e-12));
        }
        QCOMPARE(inputs[3].toObject().value("spectrum_reference").toArray().size(), 20);
        QCOMPARE(o.value("modules").toArray().size(), 14);
    }

    void cliUsage_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("needle");
        QTest::newRow("no mode") << QStringList{"analyze"} << 2 << QStringLiteral("missing MODE");
        QTest::newRow("unknown mode") << QStringList{"analyze", "nope"} << 2 << QStringLiteral("unknown analysis 'nope'");
        QTest::newRow("no reference") << QStringList{"analyze", "epsilon", "--runs", "x.sdw.h5"} << 2 << QStringLiteral("--reference");
        QTest::newRow("no runs") << QStringList{"analyze", "epsilon", "--reference", "x.sdw.h5"} << 2 << QStringLiteral("--runs");
        QTest::newRow("bad k") << QStringList{"analyze", "epsilon", "--reference", "a", "--runs", "b", "--k", "0"} << 2
                               << QStringLiteral("--k");
        QTest::newRow("bad precision") << QStringList{"analyze", "epsilon", "--reference", "a", "--runs", "b",
                                                      "--precision", "fp16"}
                                       << 2 << QStringLiteral("--precision");
    }
    void cliUsage() {
        QFETCH(QStringList, args);
        QFETCH(int, code);
        QFETCH(QString, needle);
        const auto c = cli(args);
        QCOMPARE(c.code, code);
        QVERIFY2(c.err.contains(needle), qPrintable(c.err));
        const auto help = cli({"analyze", "--help"});
        QCOMPARE(help.code, 0);
        QVERIFY(help.out.contains(QStringLiteral("analyze epsilon --reference RUN")));
    }

    // ---------------------------------------------------------------- noise floor

    // noise_k of every run (and of the reference) against core/epsilon.h on
    // the halves the files hold; identical halves give 0; a run without
    // halves has none, and says why.
    void noiseMatchesEigenReference() {
        sdw::gpu::EpsilonSettings s;
        s.reference = refH_;
        s.runs = {fixedH_, arH_, topkH_, sameH_, fixed_};
        s.k = 6;
        const auto r = sdw::gpu::analyzeEpsilon(s);
        QVERIFY(r.reference.hasNoise());
        for (std::size_t j = 0; j < 4; ++j) QVERIFY2(r.runs[j].hasNoise(), r.runs[j].noiseUnavailable.c_str());
        QVERIFY(!r.runs[4].hasNoise());
        QVERIFY2(r.runs[4].noiseUnavailable.find("no half statistics") != std::string::npos,
                 r.runs[4].noiseUnavailable.c_str());
        const std::map<std::size_t, const std::map<std::string, FixtureHalves>*> halves = {
            {0, &halvesFixed_}, {1, &halvesAr_}, {2, &halvesTopk_}};
        for (const auto& in : r.inputs) {
            const MatrixXd& HD = hRefH_.at(in.name);
            const FixtureHalves& hr = halvesRef_.at(in.name);
            const double wantRef = sdw::epsilon::noiseFloorK(HD, hr.a, double(hr.nA), hr.b, double(hr.nB), 6);
            QVERIFY2(wantRef > 0.01 && relClose(in.referenceNoise, wantRef, 1e-6),
                     qPrintable(QStringLiteral("%1: %2 vs %3").arg(QString::fromStdString(in.name))
                                    .arg(in.referenceNoise).arg(wantRef)));
            QCOMPARE(in.noise.size(), std::size_t(5));
            for (const auto& [j, hm] : halves) {
                const FixtureHalves& h = hm->at(in.name);
                const double want = sdw::epsilon::noiseFloorK(HD, h.a, double(h.nA), h.b, double(h.nB), 6);
                QVERIFY2(want > 0.01 && relClose(in.noise[j], want, 1e-6),
                         qPrintable(QStringLiteral("%1 run %2: %3 vs Eigen %4").arg(QString::fromStdString(in.name))
                                        .arg(j).arg(in.noise[j], 0, 'g', 12).arg(want, 0, 'g', 12)));
            }
            QVERIFY2(in.noise[3] < 1e-12, qPrintable(QString::number(in.noise[3])));  // identical halves
            QVERIFY(std::isnan(in.noise[4]));                                      // no halves
            QVERIFY(std::isfinite(in.eps[4]));                                     // its eps all the same
        }
        // Fixed text over the first AR run; each module differs beyond noise
        // exactly when |eps(C) - eps(AR)| > noise(C) + noise(AR).
        QCOMPARE(r.summary.numeratorRun, 0);
        QCOMPARE(r.summary.denominatorRun, 1);
        std::vector<double> eC, eA, nC, nA;
        for (const auto& m : r.modules) {
            for (std::size_t j = 0; j < 4; ++j) QCOMPARE(m.noise[j], r.inputs[std::size_t(m.input)].noise[j]);
            QVERIFY(std::isnan(m.noise[4]));
            QCOMPARE(m.beyondNoise, sdw::epsilon::differsBeyondNoise(m.eps[0], m.eps[1], m.noise[0], m.noise[1]) ? 1 : 0);
            eC.push_back(m.eps[0]);
            eA.push_back(m.eps[1]);
            nC.push_back(m.noise[0]);
            nA.push_back(m.noise[1]);
        }
        const auto want = sdw::epsilon::summarizeNoise(eC, eA, nC, nA);
        QCOMPARE(r.summary.noise.modules, 14);
        QCOMPARE(r.summary.noise.beyond, want.beyond);
        QCOMPARE(r.summary.noise.arLowerBeyond, want.arLowerBeyond);
        QVERIFY(want.beyond > 0);  // the fixture's sources differ by more than 2000 tokens of noise

        // Against a reference without halves: the runs keep theirs, the reference has none.
        s.reference = ref_;
        s.runs = {fixedH_, arH_};
        const auto r2 = sdw::gpu::analyzeEpsilon(s);
        QVERIFY(!r2.reference.hasNoise());
        QVERIFY(std::isnan(r2.inputs[0].referenceNoise));
        QVERIFY(std::isfinite(r2.inputs[0].noise[0]) && std::isfinite(r2.inputs[0].noise[1]));
        QCOMPARE(r2.summary.noise.modules, 14);
    }

    // Runs whose halves cannot give a noise floor still open; the reason is named.
    void noiseUnavailable_data() {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QString>("needle");
        QTest::newRow("no halves (older file)") << QStringLiteral("old") << QStringLiteral("no half statistics");
        QTest::newRow("halves off") << QStringLiteral("off") << QStringLiteral("collected without half statistics");
        QTest::newRow("halves do not add up") << QStringLiteral("mismatch") << QStringLiteral("do not add up");
        QTest::newRow("empty half") << QStringLiteral("empty") << QStringLiteral("is empty");
    }
    void noiseUnavailable() {
        QFETCH(QString, fixture);
        QFETCH(QString, needle);
        const fs::path p = file(("noise-" + fixture.toStdString() + ".sdw.h5").c_str());
        FixtureOptions o;
        o.source = "ar";
        o.seed = 9;
        if (fixture == QLatin1String("off")) o.halvesAttribute = 0;
        o.halves = fixture == QLatin1String("mismatch") || fixture == QLatin1String("empty");
        if (fixture == QLatin1String("mismatch")) o.tokensAShift = 1;
        if (fixture == QLatin1String("empty")) o.tokensA = 0;
        writeCalibration(p, o);
        sdw::gpu::EpsilonSettings s;
        s.reference = refH_;
        s.runs = {fixedH_, p};
        s.k = 6;
        const auto r = sdw::gpu::analyzeEpsilon(s);
        QVERIFY2(QString::fromStdString(r.runs[1].noiseUnavailable).contains(needle),
                 r.runs[1].noiseUnavailable.c_str());
        QVERIFY(r.runs[0].hasNoise());
        for (const auto& in : r.inputs) {
            QVERIFY(std::isfinite(in.eps[1]));
            QVERIFY(std::isnan(in.noise[1]));
        }
        for (const auto& m : r.modules) QCOMPARE(m.beyondNoise, -1);
        QCOMPARE(r.summary.noise.modules, 0);
        QCOMPARE(r.summary.modules, 14);  // the eps comparison itself stands

        const auto c = cli({"analyze", "epsilon", "--reference", q(refH_), "--runs", q(fixedH_), q(p), "--k", "6"});
        QVERIFY2(c.code == 0, qPrintable(c.err));
        QVERIFY2(c.out.contains(QStringLiteral("noise floor unavailable: ")), qPrintable(c.out));
        QVERIFY2(c.out.contains(needle), qPrintable(c.out));
    }

    void noiseRoundTripAndOldAnalyses() {
        sdw::gpu::EpsilonSettings s;
        s.reference = refH_;
        s.runs = {fixedH_, arH_, fixed_};
        s.k = 6;
        const auto r = sdw::gpu::analyzeEpsilon(s);
        const fs::path out = file("analysis/noise.sdw.h5");
        sdw::gpu::writeEpsilonAnalysis(r, out, true);
        const auto b = sdw::gpu::readEpsilonAnalysis(out);
        QCOMPARE(b.reference.noiseUnavailable, r.reference.noiseUnavailable);
        for (std::size_t j = 0; j < r.runs.size(); ++j) QCOMPARE(b.runs[j].noiseUnavailable, r.runs[j].noiseUnavailable);
        QVERIFY(!b.runs[2].noiseUnavailable.empty());
        for (std::size_t i = 0; i < r.inputs.size(); ++i) {
            QCOMPARE(b.inputs[i].referenceNoise, r.inputs[i].referenceNoise);
            QCOMPARE(b.inputs[i].noise[0], r.inputs[i].noise[0]);
            QCOMPARE(b.inputs[i].noise[1], r.inputs[i].noise[1]);
            QVERIFY(std::isnan(b.inputs[i].noise[2]));
        }
        for (std::size_t m = 0; m < r.modules.size(); ++m) {
            QCOMPARE(b.modules[m].beyondNoise, r.modules[m].beyondNoise);
            QCOMPARE(b.modules[m].noise[1], r.modules[m].noise[1]);
        }
        QCOMPARE(b.summary.noise.modules, r.summary.noise.modules);
        QCOMPARE(b.summary.noise.beyond, r.summary.noise.beyond);
        QCOMPARE(b.summary.noise.arLowerBeyond, r.summary.noise.arLowerBeyond);
        {
            const auto reader = rs::RunReader::open(out);
            QCOMPARE(reader.shape("/analysis/epsilon/noise"), (std::vector<hsize_t>{8, 3}));
            QCOMPARE(reader.readIntAttribute("/analysis/epsilon", "n_beyond_noise"), std::int64_t(r.summary.noise.beyond));
            QVERIFY(reader.readStringAttribute("/analysis/epsilon", "noise_definition").find("sqrt(2 n_a n_b)") !=
                    std::string::npos);
        }

        // An analysis written before noise floors existed: the same file
        // without them still opens, every floor NaN with the reason.
        {
            const rs::Hdf5Lock lock;
            const hid_t f = H5Fopen(out.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
            QVERIFY(f >= 0);
            for (const char* name : {"noise", "reference_noise", "run_noise_unavailable", "module_beyond_noise"})
                QVERIFY(H5Ldelete(f, (std::string("/analysis/epsilon/") + name).c_str(), H5P_DEFAULT) >= 0);
            H5Fclose(f);
        }
        const auto old = sdw::gpu::readEpsilonAnalysis(out);
        QCOMPARE(old.inputs[0].eps, r.inputs[0].eps);
        QVERIFY(std::isnan(old.inputs[0].noise[0]) && std::isnan(old.inputs[0].referenceNoise));
        QVERIFY(old.runs[0].noiseUnavailable.find("before noise floors") != std::string::npos);
        QCOMPARE(old.modules[0].beyondNoise, -1);
        QCOMPARE(old.summary.noise.modules, 0);
    }

    // Two runs of the same process (fixed text of the held-out corpus, two
    // seeds) of the sample model: their eps is sampling noise only, so it
    // shrinks as the budget grows (as 1/sqrt(budget) for independent windows:
    // 8x the tokens, about 0.35x the eps), and so does the noise floor, which
    // stays of the size of that eps.
    void sameProcessEpsShrinksWithBudget() {
        const fs::path model = fs::path(SDW_SOURCE_DIR) / "samples/model/brown-llama";
        const fs::path corpus = fs::path(SDW_SOURCE_DIR) / "samples/corpus/brown-heldout.txt";
        if (!fs::exists(model / "model.safetensors")) QSKIP("the sample model is not there");
        struct Budget {
            double eps, noise;
        };
        const auto measure = [&](std::int64_t tokens) {
            std::vector<fs::path> runs;
            for (const std::uint64_t seed : {1u, 2u}) {
                sdw::gpu::CalibrationSettings cs;
                cs.source = "fixed";
                cs.model = model;
                cs.corpus = corpus;
                cs.tokenBudget = tokens;
                cs.window = 64;
                cs.batch = 16;
                cs.seed = seed;
                runs.push_back(file(("same-" + std::to_string(tokens) + "-" + std::to_string(seed) + ".sdw.h5").c_str()));
                sdw::gpu::runCalibration(cs, runs.back());
            }
            sdw::gpu::EpsilonSettings s;
            s.reference = runs[0];
            s.runs = {runs[1]};
            s.k = 16;
            const auto r = sdw::gpu::analyzeEpsilon(s);
            std::vector<double> eps, noise;
            for (const auto& in : r.inputs) {
                eps.push_back(in.eps[0]);
                noise.push_back(in.noise[0]);
            }
            return Budget{sdw::epsilon::median(eps), sdw::epsilon::median(noise)};
        };
        const Budget small = measure(1000), large = measure(8000);
        qInfo("same-process eps (median over inputs, k = 16): %.3g at 1,000 tokens, %.3g at 8,000; noise floor "
              "%.3g and %.3g",
              small.eps, large.eps, small.noise, large.noise);
        QVERIFY(std::isfinite(small.eps) && std::isfinite(small.noise) && small.eps > 0 && small.noise > 0);
        QVERIFY2(large.eps < 0.6 * small.eps, "8x the budget: eps well below its value at 1,000 tokens");
        QVERIFY2(large.noise < 0.75 * small.noise, "8x the budget: a lower noise floor");
        for (const Budget& b : {small, large})
            QVERIFY2(b.noise > b.eps / 3 && b.noise < 3 * b.eps, "the floor is of the size of the same-process eps");
    }

    void cliPrintsNoise() {
        sdw::gpu::EpsilonSettings s;
        s.reference = refH_;
        s.runs = {fixedH_, arH_};
        s.k = 6;
        const auto r = sdw::gpu::analyzeEpsilon(s);
        const auto c = cli({"analyze", "epsilon", "--reference", q(refH_), "--runs", q(fixedH_), q(arH_), "--k", "6"});
        QVERIFY2(c.code == 0, qPrintable(c.err));
        QVERIFY2(c.out.contains(QStringLiteral("noise(fixed)")) && c.out.contains(QStringLiteral("noise(ar)")) &&
                     c.out.contains(QStringLiteral("BEYOND")),
                 qPrintable(c.out));
        const QString line = QStringLiteral("; %1 of 14 differ beyond the noise floor (AR lower on %2)")
                                 .arg(r.summary.noise.beyond)
                                 .arg(r.summary.noise.arLowerBeyond);
        QVERIFY2(c.out.contains(line), qPrintable(c.out + "\nwanted: " + line));
        QVERIFY(c.out.contains(QStringLiteral("reference noise floor: median ")));

        const auto j = cli({"analyze", "epsilon", "--reference", q(refH_), "--runs", q(fixedH_), q(arH_), "--k", "6",
                            "--json"});
        QCOMPARE(j.code, 0);
        const QJsonObject o = QJsonDocument::fromJson(j.out.toUtf8()).object();
        const QJsonObject sum = o.value("summary").toObject();
        QCOMPARE(sum.value("n_noise_modules").toInt(), 14);
        QCOMPARE(sum.value("n_beyond_noise").toInt(), r.summary.noise.beyond);
        QCOMPARE(sum.value("n_ar_lower_beyond_noise").toInt(), r.summary.noise.arLowerBeyond);
        QVERIFY(o.value("runs").toArray()[0].toObject().value("noise_unavailable").isNull());
        const QJsonArray inputs = o.value("inputs").toArray();
        for (int i = 0; i < inputs.size(); ++i) {
            const QJsonObject io = inputs[i].toObject();
            const QJsonArray noise = io.value("noise").toArray();
            QVERIFY(relClose(noise[0].toDouble(), r.inputs[std::size_t(i)].noise[0], 1e-12));
            QVERIFY(relClose(noise[1].toDouble(), r.inputs[std::size_t(i)].noise[1], 1e-12));
            QVERIFY(relClose(io.value("reference_noise").toDouble(), r.inputs[std::size_t(i)].referenceNoise, 1e-12));
        }
        const QJsonObject m0 = o.value("modules").toArray()[0].toObject();
        QCOMPARE(m0.value("beyond_noise").toBool(), r.modules[0].beyondNoise == 1);
    }

    // The sample workspace: the held-out reference and the fixed-text and AR
    // runs of equal budget on samples/model/brown-llama.
    void cliOnSampleRuns() {
        const QDir ws(QStringLiteral(SDW_SOURCE_DIR "/samples/workspace"));
        const QString ref = ws.filePath(QStringLiteral("reference-heldout.sdw.h5"));
        if (!QFile::exists(ref)) QSKIP("samples/workspace/reference-heldout.sdw.h5 is not there yet");
        QString fixedRun, arRun;
        for (const QString& f : ws.entryList({QStringLiteral("*.sdw.h5")}, QDir::Files, QDir::Name)) {
            const fs::path p = ws.filePath(f).toStdString();
            try {
                const auto r = rs::RunReader::open(p);
                if (r.kind() != "calibration" || f == QLatin1String("reference-heldout.sdw.h5")) continue;
                const std::string src = r.hasAttribute("/calibration", "source")
                                            ? r.readStringAttribute("/calibration", "source") : "";
                if (src == "fixed" && fixedRun.isEmpty()) fixedRun = ws.filePath(f);
                if (src == "ar" && arRun.isEmpty()) arRun = ws.filePath(f);
            } catch (const std::exception&) {
            }
        }
        if (fixedRun.isEmpty() || arRun.isEmpty()) QSKIP("the sample fixed-text and AR calibration runs are not there yet");
        const auto c = cli({"analyze", "epsilon", "--reference", ref, "--runs", fixedRun, arRun, "--k", "64", "--json"});
        QVERIFY2(c.code == 0, qPrintable(c.err));
        const QJsonObject o = QJsonDocument::fromJson(c.out.toUtf8()).object();
        const QJsonObject sum = o.value("summary").toObject();
        QCOMPARE(sum.value("numerator").toString(), QStringLiteral("fixed"));
        QCOMPARE(sum.value("denominator").toString(), QStringLiteral("ar"));
        QVERIFY(sum.value("n_modules").toInt() > 0);
        const double share = sum.value("share_ar_lower").toDouble();
        QVERIFY(share >= 0.0 && share <= 1.0);
        for (const auto& in : o.value("inputs").toArray()) {
            const QJsonObject io = in.toObject();
            QVERIFY(io.value("k_used").toInt() >= 1);
            for (const auto& e : io.value("eps").toArray()) QVERIFY(e.isDouble() && e.toDouble() >= 0.0);
        }
        // The committed analysis of the samples agrees with a fresh one.
        const QString committed = ws.filePath(QStringLiteral("epsilon-sample.sdw.h5"));
        if (QFile::exists(committed)) {
            const auto a = sdw::gpu::readEpsilonAnalysis(committed.toStdString());
            QCOMPARE(a.summary.modules, sum.value("n_modules").toInt());
            QCOMPARE(a.summary.arLower, sum.value("n_ar_lower").toInt());
            QVERIFY(relClose(a.summary.medianRatio, sum.value("median_ratio").toDouble(), 1e-9));
        }
    }
};

QTEST_GUILESS_MAIN(TestEpsilonAnalysis)
#include "test_epsilon_analysis.moc"
