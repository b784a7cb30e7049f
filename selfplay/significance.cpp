#include "selfplay/significance.h"

#include <math.h>  // lgamma_r

#include <algorithm>
#include <cmath>
#include <limits>

namespace c960::selfplay {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kMaxIterations = 1000000;
constexpr double kRelEps = 1e-15;
constexpr double kTiny = 1e-300;

// log Gamma(a) for a > 0 without std::lgamma's write to the global signgam (a data race when
// pages are made on several threads).
double log_gamma(double a) {
  int sign = 0;
  return ::lgamma_r(a, &sign);
}

// x^a e^-x / Gamma(a), the factor in front of both expansions, in logs to survive large a and x.
double gamma_prefactor(double a, double x) { return std::exp(a * std::log(x) - x - log_gamma(a)); }

// P(a, x) by its power series; converges quickly for x < a + 1.
double gamma_p_series(double a, double x) {
  double term = 1.0 / a, sum = term;
  for (int n = 1; n < kMaxIterations; ++n) {
    term *= x / (a + n);
    sum += term;
    if (std::abs(term) < std::abs(sum) * kRelEps) break;
  }
  return sum * gamma_prefactor(a, x);
}

// Q(a, x) by its continued fraction (modified Lentz); converges quickly for x >= a + 1.
double gamma_q_fraction(double a, double x) {
  double b = x + 1 - a, c = 1 / kTiny, d = 1 / b, h = d;
  for (int i = 1; i < kMaxIterations; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::abs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) < kRelEps) break;
  }
  return h * gamma_prefactor(a, x);
}

// Indices of the non-NaN p-values, ascending by p.
std::vector<size_t> order_of(const std::vector<double>& p) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < p.size(); ++i)
    if (!std::isnan(p[i])) idx.push_back(i);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  return idx;
}

}  // namespace

double gamma_p(double a, double x) {
  if (!(a > 0) || !(x >= 0) || std::isinf(a)) return kNaN;
  if (x == 0) return 0;
  if (std::isinf(x)) return 1;
  return x < a + 1 ? gamma_p_series(a, x) : 1 - gamma_q_fraction(a, x);
}

double gamma_q(double a, double x) {
  if (!(a > 0) || !(x >= 0) || std::isinf(a)) return kNaN;
  if (x == 0) return 1;
  if (std::isinf(x)) return 0;
  return x < a + 1 ? 1 - gamma_p_series(a, x) : gamma_q_fraction(a, x);
}

double normal_sf(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

double normal_two_sided_p(double z) { return std::erfc(std::abs(z) / std::sqrt(2.0)); }

double chi_square_sf(double x, double dof) {
  if (!(dof > 0)) return kNaN;
  if (x <= 0) return 1;
  return gamma_q(dof / 2, x / 2);
}

std::vector<double> holm_adjust(const std::vector<double>& p) {
  std::vector<double> out(p.size(), kNaN);
  const std::vector<size_t> idx = order_of(p);
  const double m = double(idx.size());
  double running = 0;
  for (size_t k = 0; k < idx.size(); ++k) {
    running = std::max(running, std::min(1.0, (m - double(k)) * p[idx[k]]));
    out[idx[k]] = running;
  }
  return out;
}

std::vector<double> benjamini_hochberg_adjust(const std::vector<double>& p) {
  std::vector<double> out(p.size(), kNaN);
  const std::vector<size_t> idx = order_of(p);
  const double m = double(idx.size());
  double running = 1;
  for (size_t k = idx.size(); k-- > 0;) {
    running = std::min(running, m * p[idx[k]] / double(k + 1));
    out[idx[k]] = running;
  }
  return out;
}

}  // namespace c960::selfplay
