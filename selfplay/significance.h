// Tail probabilities and multiple-comparison corrections, for every layer that tests something
// (the self-play statistics, the CLI, the reports): the normal and chi-square tails (via the
// regularized incomplete gamma function), and Holm's and Benjamini-Hochberg's adjustments.
#pragma once

#include <vector>

namespace c960::selfplay {

// Regularized incomplete gamma functions P(a, x) and Q(a, x) = 1 - P(a, x), for a > 0, x >= 0
// (NaN outside). Each is computed directly (series or continued fraction), not as 1 - the other,
// so small tails keep their relative precision.
double gamma_p(double a, double x);
double gamma_q(double a, double x);

double normal_sf(double z);                  // P(Z > z) for a standard normal Z
double normal_two_sided_p(double z);         // P(|Z| >= |z|)
double chi_square_sf(double x, double dof);  // P(X > x) for X ~ chi-square(dof)

// Adjusted p-values, in the input's order. Holm: family-wise error (step-down Bonferroni).
// Benjamini-Hochberg: false discovery rate (step-up). NaN entries are left NaN and not counted.
std::vector<double> holm_adjust(const std::vector<double>& p);
std::vector<double> benjamini_hochberg_adjust(const std::vector<double>& p);

}  // namespace c960::selfplay
