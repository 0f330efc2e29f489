#pragma once
// Calibration discrepancy epsilon (DESIGN §1, paper Def. A.1 / Thm A.1), the
// Eigen reference in double precision, and the statistics reported over
// modules. The engine (gpu/epsilon_analysis.h) runs the same math on LibTorch
// for real model sizes; tests hold it to this file.
//
// With a reference decode-time Hessian H_D = U L U^T (per-token normalised)
// and its top-k eigenpairs U_k [d, k], L_k:
//   Hhat_k = L_k^{-1/2} U_k^T H_C U_k L_k^{-1/2}          [k, k]
//   eps_k(C) = || Hhat_k - I_k ||_op = max_i |lambda_i(Hhat_k) - 1|
// eps = 0 iff H_C acts like H_D on span(U_k). It also measures scale:
// H_C = c H_D gives eps = |c - 1|.

#include "core/stats.h"

#include <Eigen/Dense>

#include <cstddef>
#include <limits>
#include <span>
#include <vector>

namespace sdw::epsilon {

// Eigenvalues of H_D at or below relTol * lambda_max are dead directions
// (inputs that never fire, rounding noise of a rank-deficient sum): L^{-1/2}
// would blow them up, so they are never among the k directions used. 1e-6 sits
// above the noise floor of float32-accumulated Hessians.
inline constexpr double kDefaultRelTol = 1e-6;

// The top eigenpairs of a symmetric matrix, descending.
struct EigenBasis {
    Eigen::VectorXd values;   // [k_used], descending, all > relTol * lambda_max
    Eigen::MatrixXd vectors;  // [d, k_used], column i belongs to values[i]
    int kUsed() const { return static_cast<int>(values.size()); }
};

// Top min(k, #eigenvalues > relTol * lambda_max) eigenpairs of the symmetric
// matrix H (only its lower triangle is read). Empty when lambda_max <= 0.
// Throws std::invalid_argument when H is not square or k < 1.
EigenBasis topEigenpairs(const Eigen::MatrixXd& H, int k, double relTol = kDefaultRelTol);

// Hhat = L^{-1/2} U^T H_C U L^{-1/2} for a basis from topEigenpairs(H_D).
Eigen::MatrixXd projectedHessian(const EigenBasis& basis, const Eigen::MatrixXd& HC);

// max_i |lambda_i(Hhat) - 1| for a symmetric Hhat; NaN for an empty matrix.
double epsilonOfProjected(const Eigen::MatrixXd& Hhat);

// eps_k(C) for per-token normalised H_D and H_C of the same size. kUsed, when
// given, receives the number of directions actually used (<= k; less when H_D
// has fewer than k eigenvalues above relTol * lambda_max). NaN (kUsed 0) when
// H_D is zero. Throws std::invalid_argument on mismatched shapes or k < 1.
double epsilonK(const Eigen::MatrixXd& HD, const Eigen::MatrixXd& HC, int k, int* kUsed = nullptr,
                double relTol = kDefaultRelTol);

// All eigenvalues of a symmetric matrix, descending (for the spectrum plots).
std::vector<double> spectrum(const Eigen::MatrixXd& H);

// ---------------------------------------------------------------------------
// Noise floor (docs/epsilon.md, "Noise floor")
//
// A calibration run also sums its statistics over two halves of its
// sequences (H_a from n_a positions, H_b from n_b; H_C is their weighted
// mean). Their discrepancy in the reference's whitened frame,
//   || Hhat_k(H_a) - Hhat_k(H_b) ||_op,
// is one draw of what two independent runs of the same process would show,
// at half the budget each. Its spread goes as sqrt(1/n_a + 1/n_b) (sums of
// independent sequences), against sqrt(2/N) for two runs of N = n_a + n_b
// positions, hence the scale below (1/sqrt(2) for equal halves):
//   noise_k(C) = halfBudgetScale(n_a, n_b) * || Hhat_k(H_a) - Hhat_k(H_b) ||_op
// By the triangle inequality |eps(C) - eps(C')| <= ||Hhat(C) - Hhat(C')||_op,
// so noise_k(C) is how far eps(C) can move when the run is repeated: the eps
// between two runs of the same process at that budget. One run deviates from
// its process's expectation by about noise_k / sqrt(2) (two runs differ by
// sqrt(2) times that), so its noise-free eps lies within eps +- noise_k / sqrt(2).

// sqrt(2 n_a n_b) / (n_a + n_b): scales a half-vs-half discrepancy to two
// runs of the full budget. NaN when a half is empty.
double halfBudgetScale(double nA, double nB);

// || Hhat_k(H1) - Hhat_k(H2) ||_op = max_i |lambda_i(L^{-1/2} U^T (H1 - H2) U L^{-1/2})|
// for a basis from topEigenpairs(H_D); NaN for an empty basis.
double projectedDiscrepancy(const EigenBasis& basis, const Eigen::MatrixXd& H1, const Eigen::MatrixXd& H2);

// noise_k(C) from the per-token normalised halves H_a (nA positions) and H_b
// (nB positions), in the frame of the reference H_D. NaN when H_D is zero or
// a half is empty. Throws std::invalid_argument on mismatched shapes or k < 1.
double noiseFloorK(const Eigen::MatrixXd& HD, const Eigen::MatrixXd& HA, double nA, const Eigen::MatrixXd& HB,
                   double nB, int k, double relTol = kDefaultRelTol);

// Whether the noise-free eps of two runs are ordered as measured: the
// intervals eps +- noise / sqrt(2) do not overlap, i.e.
// |epsC - epsAR| > (noiseC + noiseAR) / sqrt(2). False when any value is NaN.
bool differsBeyondNoise(double epsC, double epsAR, double noiseC, double noiseAR);

// ---------------------------------------------------------------------------
// Statistics over modules

// eps(C) / eps(AR) per module: +inf when eps(AR) = 0 < eps(C), NaN when both
// are 0 or either is NaN.
double ratio(double epsC, double epsAR);

// Quantile q in [0, 1] with linear interpolation between order statistics
// (numpy's default). NaN values are ignored, +inf sorts last. NaN when no
// value is left.
double quantile(std::span<const double> values, double q);
using stats::median;  // core/stats.h: NaN values left out, NaN when none is left

struct RatioSummary {
    int modules = 0;        // pairs with both eps finite
    int arLower = 0;        // of those, eps(AR) < eps(C)
    double shareArLower = std::numeric_limits<double>::quiet_NaN();  // arLower / modules
    double medianRatio = std::numeric_limits<double>::quiet_NaN();   // eps(C) / eps(AR)
    double ratioQ1 = std::numeric_limits<double>::quiet_NaN();
    double ratioQ3 = std::numeric_limits<double>::quiet_NaN();
};

// Summary of per-module eps of a calibration source C (the numerator, e.g.
// fixed text) against AR decoding (the denominator). Pairs with a NaN are
// left out. Throws std::invalid_argument when the lengths differ.
RatioSummary summarizeRatios(std::span<const double> epsC, std::span<const double> epsAR);

struct NoiseSummary {
    int modules = 0;       // pairs with both eps and both noise floors finite
    int beyond = 0;        // of those, differsBeyondNoise
    int arLowerBeyond = 0; // of those, the ones where eps(AR) is the lower
};

// Counts over modules of differsBeyondNoise. Throws std::invalid_argument
// when the lengths differ.
NoiseSummary summarizeNoise(std::span<const double> epsC, std::span<const double> epsAR,
                            std::span<const double> noiseC, std::span<const double> noiseAR);

}  // namespace sdw::epsilon
