#include "core/epsilon.h"

#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace sdw::epsilon {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void requireSquare(const Eigen::MatrixXd& H, const char* what) {
    if (H.rows() != H.cols())
        throw std::invalid_argument(std::string(what) + " must be square, got " + std::to_string(H.rows()) +
                                    "x" + std::to_string(H.cols()));
}

}  // namespace

EigenBasis topEigenpairs(const Eigen::MatrixXd& H, int k, double relTol) {
    requireSquare(H, "H_D");
    if (k < 1) throw std::invalid_argument("k must be >= 1, got " + std::to_string(k));
    EigenBasis basis;
    if (H.rows() == 0) return basis;
    // Ascending eigenvalues; only the lower triangle is read.
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(H);
    if (es.info() != Eigen::Success) throw std::runtime_error("eigen-decomposition of H_D did not converge");
    const Eigen::Index d = H.rows();
    const double lmax = es.eigenvalues()(d - 1);
    if (!(lmax > 0)) return basis;
    Eigen::Index n = 0;
    while (n < k && n < d && es.eigenvalues()(d - 1 - n) > relTol * lmax) ++n;
    basis.values.resize(n);
    basis.vectors.resize(d, n);
    for (Eigen::Index i = 0; i < n; ++i) {
        basis.values(i) = es.eigenvalues()(d - 1 - i);
        basis.vectors.col(i) = es.eigenvectors().col(d - 1 - i);
    }
    return basis;
}

Eigen::MatrixXd projectedHessian(const EigenBasis& basis, const Eigen::MatrixXd& HC) {
    requireSquare(HC, "H_C");
    if (HC.rows() != basis.vectors.rows())
        throw std::invalid_argument("H_C is " + std::to_string(HC.rows()) + "x" + std::to_string(HC.cols()) +
                                    " but H_D is " + std::to_string(basis.vectors.rows()) + "x" +
                                    std::to_string(basis.vectors.rows()));
    // W = U_k L_k^{-1/2}: [d, k]
    const Eigen::MatrixXd W = basis.vectors * basis.values.cwiseSqrt().cwiseInverse().asDiagonal();
    Eigen::MatrixXd Hhat = W.transpose() * HC * W;
    return 0.5 * (Hhat + Hhat.transpose());  // exact symmetry for the symmetric solver
}

double epsilonOfProjected(const Eigen::MatrixXd& Hhat) {
    requireSquare(Hhat, "Hhat");
    if (Hhat.rows() == 0) return kNaN;
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(Hhat, Eigen::EigenvaluesOnly);
    if (es.info() != Eigen::Success) throw std::runtime_error("eigen-decomposition of Hhat did not converge");
    // Eigenvalues ascending: the extremes are the first and the last.
    const auto& ev = es.eigenvalues();
    return std::max(std::abs(ev(0) - 1.0), std::abs(ev(ev.size() - 1) - 1.0));
}

double epsilonK(const Eigen::MatrixXd& HD, const Eigen::MatrixXd& HC, int k, int* kUsed, double relTol) {
    requireSquare(HD, "H_D");
    requireSquare(HC, "H_C");
    if (HD.rows() != HC.rows())
        throw std::invalid_argument("H_D (" + std::to_string(HD.rows()) + ") and H_C (" +
                                    std::to_string(HC.rows()) + ") differ in size");
    const EigenBasis basis = topEigenpairs(HD, k, relTol);
    if (kUsed) *kUsed = basis.kUsed();
    if (basis.kUsed() == 0) return kNaN;
    return epsilonOfProjected(projectedHessian(basis, HC));
}

std::vector<double> spectrum(const Eigen::MatrixXd& H) {
    requireSquare(H, "H");
    if (H.rows() == 0) return {};
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(H, Eigen::EigenvaluesOnly);
    if (es.info() != Eigen::Success) throw std::runtime_error("eigen-decomposition did not converge");
    std::vector<double> out(es.eigenvalues().data(), es.eigenvalues().data() + es.eigenvalues().size());
    std::reverse(out.begin(), out.end());
    return out;
}

// ---------------------------------------------------------------------------

double halfBudgetScale(double nA, double nB) {
    if (!(nA > 0) || !(nB > 0)) return kNaN;
    return std::sqrt(2.0 * nA * nB) / (nA + nB);
}

double projectedDiscrepancy(const EigenBasis& basis, const Eigen::MatrixXd& H1, const Eigen::MatrixXd& H2) {
    requireSquare(H1, "H_a");
    requireSquare(H2, "H_b");
    if (H1.rows() != H2.rows())
        throw std::invalid_argument("the halves differ in size: " + std::to_string(H1.rows()) + " vs " +
                                    std::to_string(H2.rows()));
    if (basis.kUsed() == 0) return kNaN;
    // Hhat is linear in H: Hhat(H1) - Hhat(H2) = Hhat(H1 - H2); only its extremes matter.
    const Eigen::MatrixXd diff = projectedHessian(basis, H1 - H2);
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(diff, Eigen::EigenvaluesOnly);
    if (es.info() != Eigen::Success) throw std::runtime_error("eigen-decomposition of the half difference did not converge");
    const auto& ev = es.eigenvalues();
    return std::max(std::abs(ev(0)), std::abs(ev(ev.size() - 1)));
}

double noiseFloorK(const Eigen::MatrixXd& HD, const Eigen::MatrixXd& HA, double nA, const Eigen::MatrixXd& HB,
                   double nB, int k, double relTol) {
    requireSquare(HD, "H_D");
    if (HA.rows() != HD.rows() || HB.rows() != HD.rows())
        throw std::invalid_argument("H_D (" + std::to_string(HD.rows()) + ") and the halves (" +
                                    std::to_string(HA.rows()) + ", " + std::to_string(HB.rows()) + ") differ in size");
    const double scale = halfBudgetScale(nA, nB);
    const EigenBasis basis = topEigenpairs(HD, k, relTol);
    if (std::isnan(scale) || basis.kUsed() == 0) return kNaN;
    return scale * projectedDiscrepancy(basis, HA, HB);
}

bool differsBeyondNoise(double epsC, double epsAR, double noiseC, double noiseAR) {
    if (std::isnan(epsC) || std::isnan(epsAR) || std::isnan(noiseC) || std::isnan(noiseAR)) return false;
    return std::abs(epsC - epsAR) > (noiseC + noiseAR) / std::sqrt(2.0);
}

// ---------------------------------------------------------------------------

double ratio(double epsC, double epsAR) {
    if (std::isnan(epsC) || std::isnan(epsAR)) return kNaN;
    if (epsAR == 0) return epsC == 0 ? kNaN : std::numeric_limits<double>::infinity();
    return epsC / epsAR;
}

double quantile(std::span<const double> values, double q) {
    std::vector<double> v;
    v.reserve(values.size());
    for (double x : values)
        if (!std::isnan(x)) v.push_back(x);
    if (v.empty()) return kNaN;
    std::sort(v.begin(), v.end());
    const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
    const double frac = pos - static_cast<double>(lo);
    if (frac == 0 || v[lo] == v[hi]) return v[lo];  // also keeps inf - inf out
    return v[lo] + frac * (v[hi] - v[lo]);
}

RatioSummary summarizeRatios(std::span<const double> epsC, std::span<const double> epsAR) {
    if (epsC.size() != epsAR.size())
        throw std::invalid_argument("summarizeRatios: " + std::to_string(epsC.size()) + " vs " +
                                    std::to_string(epsAR.size()) + " values");
    RatioSummary s;
    std::vector<double> ratios;
    for (std::size_t i = 0; i < epsC.size(); ++i) {
        if (std::isnan(epsC[i]) || std::isnan(epsAR[i])) continue;
        ++s.modules;
        if (epsAR[i] < epsC[i]) ++s.arLower;
        ratios.push_back(ratio(epsC[i], epsAR[i]));  // NaN when both are 0: left out of the quantiles
    }
    if (s.modules > 0) s.shareArLower = static_cast<double>(s.arLower) / s.modules;
    s.medianRatio = quantile(ratios, 0.5);
    s.ratioQ1 = quantile(ratios, 0.25);
    s.ratioQ3 = quantile(ratios, 0.75);
    return s;
}

NoiseSummary summarizeNoise(std::span<const double> epsC, std::span<const double> epsAR,
                            std::span<const double> noiseC, std::span<const double> noiseAR) {
    if (epsC.size() != epsAR.size() || noiseC.size() != epsC.size() || noiseAR.size() != epsC.size())
        throw std::invalid_argument("summarizeNoise: lengths differ (" + std::to_string(epsC.size()) + ", " +
                                    std::to_string(epsAR.size()) + ", " + std::to_string(noiseC.size()) + ", " +
                                    std::to_string(noiseAR.size()) + ")");
    NoiseSummary s;
    for (std::size_t i = 0; i < epsC.size(); ++i) {
        if (std::isnan(epsC[i]) || std::isnan(epsAR[i]) || std::isnan(noiseC[i]) || std::isnan(noiseAR[i])) continue;
        ++s.modules;
        if (!differsBeyondNoise(epsC[i], epsAR[i], noiseC[i], noiseAR[i])) continue;
        ++s.beyond;
        if (epsAR[i] < epsC[i]) ++s.arLowerBeyond;
    }
    return s;
}

}  // namespace sdw::epsilon
