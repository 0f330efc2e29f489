// The noise floor of gpu/epsilon_analysis.h on calibration fixtures with
// half statistics (epsilon_fixtures.h): against core/epsilon.h, zero for
// identical halves, unavailable (with the reason) for runs without, and a
// same-process pair of the sample model whose eps shrinks as its budget grows.

#include "epsilon_fixtures.h"

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
#include <QTemporaryDir>
#include <QtTest>

using namespace epsilon_fixtures;

class TestEpsilonNoise : public QObject {
    Q_OBJECT

    QTemporaryDir tmp_;
    fs::path dir_, ref_, fixed_;
    // The same sources with half statistics.
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
        writeCalibration(ref_, fixture("ar", 1, 0.0));
        writeCalibration(fixed_, fixture("fixed", 3, 0.6));

        refH_ = file("reference-halves.sdw.h5");
        fixedH_ = file("fixed-halves.sdw.h5");
        arH_ = file("ar-halves.sdw.h5");
        topkH_ = file("ar-topk-halves.sdw.h5");
        sameH_ = file("ar-same-halves.sdw.h5");
        hRefH_ = writeCalibration(refH_, fixture("ar", 1, 0.0, true), toyModel(), &halvesRef_);
        FixtureOptions o = fixture("ar", 2, 0.15, true);
        o.tokensA = 800;  // unequal halves: 800 + 1200
        writeCalibration(arH_, o, toyModel(), &halvesAr_);
        o.tokensA = -1;
        o.topk = 5;
        writeCalibration(topkH_, o, toyModel(), &halvesTopk_);
        o.topk = 0;
        o.identicalHalves = true;
        writeCalibration(sameH_, o);
        writeCalibration(fixedH_, fixture("fixed", 3, 0.6, true), toyModel(), &halvesFixed_);
    }

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
                cs.source = sdw::gpu::CalibrationSource::Fixed;
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
};

QTEST_GUILESS_MAIN(TestEpsilonNoise)
#include "test_epsilon_noise.moc"
