// core/epsilon.h: eps_k against closed forms (H_C = H_D, H_C = c H_D),
// against two independent brute-force computations on random SPD matrices
// (explicit Hhat in long double from a full eigen-decomposition, and the
// generalized eigenproblem U_k^T H_C U_k v = mu L_k v), rank-deficient H_D,
// the noise floor (identical halves, closed forms, the half-budget scale
// against independent runs of a simulated process), and the module
// statistics.

#include "core/epsilon.h"

#include <QtTest>

#include <Eigen/Eigenvalues>

#include <cmath>
#include <limits>
#include <random>

namespace {

using Eigen::MatrixXd;
using MatrixXld = Eigen::Matrix<long double, Eigen::Dynamic, Eigen::Dynamic>;

// X X^T / n of Gaussian X [d, n] with column scales spread over `decades`.
MatrixXd randomSpd(int d, int n, unsigned seed, double decades = 2.0) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> nd(0.0, 1.0);
    MatrixXd X(d, n);
    for (int i = 0; i < d; ++i) {
        const double scale = std::pow(10.0, -decades * i / std::max(1, d - 1));
        for (int j = 0; j < n; ++j) X(i, j) = scale * nd(rng);
    }
    // Mix the coordinates so the eigenvectors are not the axes.
    const MatrixXd G = MatrixXd::NullaryExpr(d, d, [&](Eigen::Index, Eigen::Index) { return nd(rng); });
    const MatrixXd Q = G.householderQr().householderQ();
    const MatrixXd Y = Q * X;
    return Y * Y.transpose() / n;
}

// eps_k by brute force: the full eigen-decomposition of H_D and Hhat formed
// entry by entry in long double.
long double bruteForceEps(const MatrixXd& HD, const MatrixXd& HC, int k) {
    const MatrixXld hd = HD.cast<long double>(), hc = HC.cast<long double>();
    const Eigen::SelfAdjointEigenSolver<MatrixXld> es(hd);
    const int d = static_cast<int>(HD.rows());
    MatrixXld hhat(k, k);
    for (int a = 0; a < k; ++a)
        for (int b = 0; b < k; ++b) {
            const auto ua = es.eigenvectors().col(d - 1 - a), ub = es.eigenvectors().col(d - 1 - b);
            long double s = 0;
            for (int i = 0; i < d; ++i)
                for (int j = 0; j < d; ++j) s += ua(i) * hc(i, j) * ub(j);
            hhat(a, b) = s / std::sqrt(es.eigenvalues()(d - 1 - a) * es.eigenvalues()(d - 1 - b));
        }
    const Eigen::SelfAdjointEigenSolver<MatrixXld> eh(hhat, Eigen::EigenvaluesOnly);
    long double eps = 0;
    for (int i = 0; i < k; ++i) eps = std::max(eps, std::abs(eh.eigenvalues()(i) - 1.0L));
    return eps;
}

// eps_k through the generalized problem: the eigenvalues of Hhat are the mu
// of (U_k^T H_C U_k) v = mu L_k v.
double generalizedEps(const MatrixXd& HD, const MatrixXd& HC, int k) {
    const Eigen::SelfAdjointEigenSolver<MatrixXd> es(HD);
    const MatrixXd Uk = es.eigenvectors().rightCols(k);
    const MatrixXd A = Uk.transpose() * HC * Uk;
    const MatrixXd B = es.eigenvalues().tail(k).asDiagonal();
    const Eigen::GeneralizedSelfAdjointEigenSolver<MatrixXd> g(0.5 * (A + A.transpose()), B, Eigen::EigenvaluesOnly);
    return (g.eigenvalues().array() - 1.0).abs().maxCoeff();
}

}  // namespace

class TestEpsilon : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void zeroWhenSame_data() {
        QTest::addColumn<int>("d");
        QTest::addColumn<int>("k");
        QTest::newRow("d8 k1") << 8 << 1;
        QTest::newRow("d8 k5") << 8 << 5;
        QTest::newRow("d8 k=d") << 8 << 8;
        QTest::newRow("d40 k16") << 40 << 16;
        QTest::newRow("d40 k>d") << 40 << 64;
    }
    void zeroWhenSame() {
        QFETCH(int, d);
        QFETCH(int, k);
        const MatrixXd H = randomSpd(d, 4 * d, 7u + unsigned(d));
        int used = -1;
        const double eps = sdw::epsilon::epsilonK(H, H, k, &used);
        QCOMPARE(used, std::min(k, d));
        QVERIFY2(eps < 1e-12, qPrintable(QString::number(eps)));
    }

    // eps measures scale too: H_C = c H_D gives Hhat = c I, eps = |c - 1|.
    void scaleIsMeasured_data() {
        QTest::addColumn<double>("c");
        QTest::newRow("2 -> 1") << 2.0;
        QTest::newRow("0.5 -> 0.5") << 0.5;
        QTest::newRow("3.25 -> 2.25") << 3.25;
        QTest::newRow("0 -> 1") << 0.0;
    }
    void scaleIsMeasured() {
        QFETCH(double, c);
        const MatrixXd H = randomSpd(24, 100, 11u, 3.0);
        for (int k : {1, 7, 24}) {
            const double eps = sdw::epsilon::epsilonK(H, c * H, k);
            // Exact in exact arithmetic; rounding grows with the condition of L_k.
            const auto basis = sdw::epsilon::topEigenpairs(H, k);
            QVERIFY(basis.kUsed() >= 1 && basis.kUsed() <= k);  // eigenvalues under relTol * lambda_max are dropped
            const double tol = 1e-13 + 1e-15 * basis.values(0) / basis.values(basis.kUsed() - 1);
            QVERIFY2(std::abs(eps - std::abs(c - 1.0)) < tol,
                     qPrintable(QStringLiteral("k=%1: %2").arg(k).arg(eps, 0, 'g', 17)));
        }
    }

    void matchesBruteForce_data() {
        QTest::addColumn<int>("d");
        QTest::addColumn<int>("k");
        QTest::addColumn<unsigned>("seed");
        QTest::newRow("d6 k1") << 6 << 1 << 1u;
        QTest::newRow("d6 k3") << 6 << 3 << 2u;
        QTest::newRow("d6 k6") << 6 << 6 << 3u;
        QTest::newRow("d17 k5") << 17 << 5 << 4u;
        QTest::newRow("d32 k8") << 32 << 8 << 5u;
        QTest::newRow("d32 k32") << 32 << 32 << 6u;
    }
    void matchesBruteForce() {
        QFETCH(int, d);
        QFETCH(int, k);
        QFETCH(unsigned, seed);
        const MatrixXd HD = randomSpd(d, 3 * d, seed);
        const MatrixXd HC = randomSpd(d, 3 * d, seed + 1000u);
        int used = 0;
        const double eps = sdw::epsilon::epsilonK(HD, HC, k, &used);
        QCOMPARE(used, k);
        const long double ref = bruteForceEps(HD, HC, k);
        const double gen = generalizedEps(HD, HC, k);
        QVERIFY2(eps > 0.01, "distinct matrices give a clearly non-zero eps");
        QVERIFY2(std::abs(eps - double(ref)) <= 1e-9 * double(ref),
                 qPrintable(QStringLiteral("eps %1 vs long double %2").arg(eps, 0, 'g', 17).arg(double(ref), 0, 'g', 17)));
        QVERIFY2(std::abs(eps - gen) <= 1e-8 * gen,
                 qPrintable(QStringLiteral("eps %1 vs generalized %2").arg(eps, 0, 'g', 17).arg(gen, 0, 'g', 17)));
    }

    // k larger than the rank of H_D: only the live directions are used, and
    // eps equals the brute force on those.
    void rankDeficientReference() {
        const int d = 20, r = 6;
        std::mt19937 rng(3);
        std::normal_distribution<double> nd(0.0, 1.0);
        const MatrixXd X = MatrixXd::NullaryExpr(d, r, [&](Eigen::Index, Eigen::Index) { return nd(rng); });
        const MatrixXd HD = X * X.transpose() / r;  // rank 6
        const MatrixXd HC = randomSpd(d, 60, 9u);
        int used = 0;
        const double eps = sdw::epsilon::epsilonK(HD, HC, 64, &used);
        QCOMPARE(used, r);
        QVERIFY(std::isfinite(eps));
        const long double ref = bruteForceEps(HD, HC, r);
        QVERIFY2(std::abs(eps - double(ref)) <= 1e-8 * double(ref),
                 qPrintable(QStringLiteral("%1 vs %2").arg(eps).arg(double(ref))));

        // What H_C does outside span(U_k) does not count.
        const Eigen::SelfAdjointEigenSolver<MatrixXd> es(HD);
        const MatrixXd N = es.eigenvectors().leftCols(d - r);  // null space of H_D
        const MatrixXd HC2 = HD + 5.0 * N * N.transpose();
        QVERIFY(sdw::epsilon::epsilonK(HD, HC2, 64, &used) < 1e-9);
        QCOMPARE(used, r);
    }

    void deadReferenceGivesNaN() {
        const MatrixXd zero = MatrixXd::Zero(5, 5);
        int used = -1;
        QVERIFY(std::isnan(sdw::epsilon::epsilonK(zero, MatrixXd::Identity(5, 5), 3, &used)));
        QCOMPARE(used, 0);
    }

    void relTolGuard() {
        // Eigenvalues 1, 1e-3, 1e-9: the last is dead at the default tolerance.
        const MatrixXd HD = Eigen::Vector3d(1.0, 1e-3, 1e-9).asDiagonal();
        int used = 0;
        sdw::epsilon::epsilonK(HD, HD, 3, &used);
        QCOMPARE(used, 2);
        sdw::epsilon::epsilonK(HD, HD, 3, &used, 1e-12);
        QCOMPARE(used, 3);
        sdw::epsilon::epsilonK(HD, HD, 3, &used, 1e-2);
        QCOMPARE(used, 1);
        // A diagonal H_C: Hhat is diagonal with H_C(i,i) / H_D(i,i).
        const MatrixXd HC = Eigen::Vector3d(1.5, 1e-3 * 0.25, 7.0).asDiagonal();
        QVERIFY(std::abs(sdw::epsilon::epsilonK(HD, HC, 1) - 0.5) < 1e-12);
        QVERIFY(std::abs(sdw::epsilon::epsilonK(HD, HC, 2) - 0.75) < 1e-12);
    }

    void badArguments() {
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                                 sdw::epsilon::epsilonK(MatrixXd::Identity(3, 3), MatrixXd::Identity(4, 4), 2));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                                 sdw::epsilon::epsilonK(MatrixXd::Identity(3, 3), MatrixXd::Identity(3, 3), 0));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                                 sdw::epsilon::epsilonK(MatrixXd::Zero(3, 2), MatrixXd::Zero(3, 2), 1));
    }

    void spectrumDescending() {
        const MatrixXd H = Eigen::Vector4d(2.0, 9.0, 0.5, 4.0).asDiagonal();
        const auto s = sdw::epsilon::spectrum(H);
        QCOMPARE(s.size(), std::size_t(4));
        const double want[] = {9.0, 4.0, 2.0, 0.5};
        for (int i = 0; i < 4; ++i) QVERIFY(std::abs(s[std::size_t(i)] - want[i]) < 1e-12);
        const auto basis = sdw::epsilon::topEigenpairs(H, 2);
        QCOMPARE(basis.kUsed(), 2);
        QVERIFY(std::abs(basis.values(0) - 9.0) < 1e-12 && std::abs(basis.values(1) - 4.0) < 1e-12);
        QVERIFY(std::abs(std::abs(basis.vectors(1, 0)) - 1.0) < 1e-12);
    }

    void quantiles() {
        const std::vector<double> v = {4.0, 1.0, 3.0, 2.0, std::numeric_limits<double>::quiet_NaN()};
        QCOMPARE(sdw::epsilon::median(v), 2.5);
        QCOMPARE(sdw::epsilon::quantile(v, 0.25), 1.75);
        QCOMPARE(sdw::epsilon::quantile(v, 0.75), 3.25);
        QCOMPARE(sdw::epsilon::quantile(v, 0.0), 1.0);
        QCOMPARE(sdw::epsilon::quantile(v, 1.0), 4.0);
        const std::vector<double> odd = {5.0, 1.0, 3.0};
        QCOMPARE(sdw::epsilon::median(odd), 3.0);
        QVERIFY(std::isnan(sdw::epsilon::median(std::vector<double>{})));
        const double inf = std::numeric_limits<double>::infinity();
        QCOMPARE(sdw::epsilon::median(std::vector<double>{1.0, inf, inf}), inf);
    }

    void ratioSummary() {
        const double nan = std::numeric_limits<double>::quiet_NaN();
        //                          C:    2    3    1    4    0    5
        const std::vector<double> epsC = {2.0, 3.0, 1.0, 4.0, 0.0, nan};
        const std::vector<double> epsAR = {1.0, 1.0, 2.0, 1.0, 0.0, 1.0};
        const auto s = sdw::epsilon::summarizeRatios(epsC, epsAR);
        QCOMPARE(s.modules, 5);  // the NaN pair is left out
        QCOMPARE(s.arLower, 3);
        QCOMPARE(s.shareArLower, 0.6);
        // Ratios 2, 3, 0.5, 4 (0/0 is NaN, left out of the quantiles).
        QCOMPARE(s.medianRatio, 2.5);
        QCOMPARE(s.ratioQ1, 1.625);
        QCOMPARE(s.ratioQ3, 3.25);
        QCOMPARE(sdw::epsilon::ratio(1.0, 0.0), std::numeric_limits<double>::infinity());
        QVERIFY(std::isnan(sdw::epsilon::ratio(0.0, 0.0)));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sdw::epsilon::summarizeRatios(epsC, std::vector<double>{1.0}));
    }

    // ---------------------------------------------------------------- noise floor

    void noiseZeroForIdenticalHalves() {
        const MatrixXd HD = randomSpd(20, 80, 21u);
        const MatrixXd HA = randomSpd(20, 80, 22u);
        for (int k : {1, 8, 20}) {
            QCOMPARE(sdw::epsilon::noiseFloorK(HD, HA, 500, HA, 500, k), 0.0);
            QCOMPARE(sdw::epsilon::noiseFloorK(HD, HA, 700, HA, 300, k), 0.0);
        }
    }

    // H_a = (1 + t) H_D, H_b = (1 - t) H_D: Hhat(H_a) - Hhat(H_b) = 2t I, so
    // noise = scale * 2t, with scale = sqrt(2 n_a n_b) / (n_a + n_b).
    void noiseClosedForm_data() {
        QTest::addColumn<double>("t");
        QTest::addColumn<double>("nA");
        QTest::addColumn<double>("nB");
        QTest::addColumn<double>("want");
        QTest::newRow("equal halves: sqrt(2) t") << 0.1 << 500.0 << 500.0 << std::sqrt(2.0) * 0.1;
        QTest::newRow("3:1 halves") << 0.25 << 300.0 << 100.0 << 0.5 * std::sqrt(60000.0) / 400.0;
        QTest::newRow("t = 0") << 0.0 << 10.0 << 10.0 << 0.0;
    }
    void noiseClosedForm() {
        QFETCH(double, t);
        QFETCH(double, nA);
        QFETCH(double, nB);
        QFETCH(double, want);
        const MatrixXd HD = randomSpd(16, 64, 23u, 2.0);
        for (int k : {1, 5, 16}) {
            const double noise = sdw::epsilon::noiseFloorK(HD, (1 + t) * HD, nA, (1 - t) * HD, nB, k);
            QVERIFY2(std::abs(noise - want) < 1e-10,
                     qPrintable(QStringLiteral("k=%1: %2 vs %3").arg(k).arg(noise, 0, 'g', 17).arg(want, 0, 'g', 17)));
        }
        QCOMPARE(sdw::epsilon::halfBudgetScale(400, 400), 1.0 / std::sqrt(2.0));
        QCOMPARE(sdw::epsilon::halfBudgetScale(300, 100), sdw::epsilon::halfBudgetScale(100, 300));
        QVERIFY(std::isnan(sdw::epsilon::halfBudgetScale(0, 100)));
        QVERIFY(std::isnan(sdw::epsilon::noiseFloorK(HD, HD, 0, HD, 100, 4)));
        QVERIFY(std::isnan(sdw::epsilon::noiseFloorK(MatrixXd::Zero(16, 16), HD, 10, HD, 10, 4)));
    }

    // The discrepancy is eps of H_D + (H_a - H_b) against H_D: the brute force of above.
    void discrepancyMatchesBruteForce() {
        const MatrixXd HD = randomSpd(14, 60, 31u);
        const MatrixXd HA = randomSpd(14, 60, 32u), HB = randomSpd(14, 60, 33u);
        for (int k : {1, 6, 14}) {
            const auto basis = sdw::epsilon::topEigenpairs(HD, k);
            const double got = sdw::epsilon::projectedDiscrepancy(basis, HA, HB);
            const long double ref = bruteForceEps(HD, HD + HA - HB, k);
            QVERIFY2(got > 0.01 && std::abs(got - double(ref)) <= 1e-9 * double(ref),
                     qPrintable(QStringLiteral("k=%1: %2 vs %3").arg(k).arg(got, 0, 'g', 17).arg(double(ref), 0, 'g', 17)));
        }
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                                 sdw::epsilon::noiseFloorK(HD, HA, 1, MatrixXd::Identity(3, 3), 1, 2));
    }

    // The scale's assumption, on a process whose runs are independent by
    // construction (i.i.d. Gaussian positions, covariance S): the noise floor
    // of one run, from its two halves, matches on average the discrepancy
    // ||Hhat(C) - Hhat(C')|| of two independent runs of the same budget in
    // the same frame, and the eps of one run against the other.
    void noiseMatchesIndependentRuns() {
        const int d = 16, k = 8, n = 600, trials = 24;
        const MatrixXd S = randomSpd(d, 4000, 41u, 1.5);
        const Eigen::LLT<MatrixXd> chol(S);
        const MatrixXd L = chol.matrixL();
        std::mt19937 rng(42);
        std::normal_distribution<double> nd(0.0, 1.0);
        const auto sample = [&](int count) {
            const MatrixXd Z = MatrixXd::NullaryExpr(d, count, [&](Eigen::Index, Eigen::Index) { return nd(rng); });
            return MatrixXd(L * Z);
        };
        const auto basis = sdw::epsilon::topEigenpairs(S, k);
        double sumNoise = 0, sumPair = 0, sumEps = 0;
        for (int t = 0; t < trials; ++t) {
            const MatrixXd X1 = sample(n), X2 = sample(n);
            const MatrixXd H1 = X1 * X1.transpose() / n, H2 = X2 * X2.transpose() / n;
            const MatrixXd XA = X1.leftCols(n / 2), XB = X1.rightCols(n / 2);
            const MatrixXd HA = XA * XA.transpose() / (n / 2), HB = XB * XB.transpose() / (n / 2);
            sumNoise += sdw::epsilon::halfBudgetScale(n / 2, n / 2) * sdw::epsilon::projectedDiscrepancy(basis, HA, HB);
            sumPair += sdw::epsilon::projectedDiscrepancy(basis, H1, H2);
            sumEps += sdw::epsilon::epsilonK(H1, H2, k);
        }
        const double ratio = sumNoise / sumPair;
        qInfo("mean noise floor %.4g, mean run-pair discrepancy %.4g (ratio %.3f), mean eps(run2 | run1) %.4g",
              sumNoise / trials, sumPair / trials, ratio, sumEps / trials);
        QVERIFY2(ratio > 0.9 && ratio < 1.1, qPrintable(QString::number(ratio)));
        // Without the scale the halves would overstate it by sqrt(2).
        QVERIFY(std::abs(ratio * std::sqrt(2.0) - 1.0) > 0.25);
        // The eps of one run against the other (its own frame) is of the same size.
        const double epsRatio = sumNoise / sumEps;
        QVERIFY2(epsRatio > 0.7 && epsRatio < 1.4, qPrintable(QString::number(epsRatio)));
    }

    void beyondNoise() {
        const double nan = std::numeric_limits<double>::quiet_NaN();
        // Beyond when |eps(C) - eps(AR)| > (noise(C) + noise(AR)) / sqrt(2).
        QVERIFY(sdw::epsilon::differsBeyondNoise(2.0, 1.0, 0.3, 0.3));
        QVERIFY(sdw::epsilon::differsBeyondNoise(2.0, 1.0, 0.7, 0.7));   // 0.99 < 1
        QVERIFY(!sdw::epsilon::differsBeyondNoise(2.0, 1.0, 0.71, 0.71)); // 1.004 > 1
        QVERIFY(sdw::epsilon::differsBeyondNoise(1.0, 2.0, 0.4, 0.5));
        QVERIFY(!sdw::epsilon::differsBeyondNoise(2.0, 1.0, nan, 0.1));
        //                          C:    2    3    1    4    1    nan
        const std::vector<double> epsC = {2.0, 3.0, 1.0, 4.0, 1.0, nan};
        const std::vector<double> epsAR = {1.0, 2.9, 2.0, 1.0, 0.5, 1.0};
        const std::vector<double> noiseC = {0.2, 0.2, 0.2, 0.2, nan, 0.1};
        const std::vector<double> noiseAR = {0.3, 0.3, 0.3, 0.3, 0.1, 0.1};
        const auto s = sdw::epsilon::summarizeNoise(epsC, epsAR, noiseC, noiseAR);
        QCOMPARE(s.modules, 4);
        QCOMPARE(s.beyond, 3);
        QCOMPARE(s.arLowerBeyond, 2);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                                 sdw::epsilon::summarizeNoise(epsC, epsAR, noiseC, std::vector<double>{1.0}));
    }
};

QTEST_APPLESS_MAIN(TestEpsilon)
#include "test_epsilon.moc"
