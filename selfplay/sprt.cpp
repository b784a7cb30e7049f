#include "selfplay/sprt.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace c960::selfplay {
namespace {

constexpr double kScores[kPentanomialCells] = {0, 0.25, 0.5, 0.75, 1};
const double kNeloScale = 800 / std::log(10.0);

double logistic_score(double elo) { return 1 / (1 + std::pow(10.0, -elo / 400)); }

// The root of a decreasing function on (lo, hi), by bisection.
template <typename F>
double decreasing_root(F f, double lo, double hi) {
  for (int it = 0; it < 200 && hi - lo > 1e-12 * std::max(1.0, std::abs(lo) + std::abs(hi)); ++it) {
    const double mid = 0.5 * (lo + hi);
    (f(mid) > 0 ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

using Dist = std::array<double, kPentanomialCells>;

// The distribution q_i = p_i / (1 + theta phi_i) with sum p_i phi_i / (1 + theta phi_i) = 0:
// the closest to p (maximum likelihood) among those with sum q_i phi_i = 0. None when the phi_i
// are all of one sign (no distribution on these cells has sum q_i phi_i = 0: the hypothesis is
// out of reach; Fishtest's secular() asserts in that case).
std::optional<Dist> tilt(const Dist& p, const Dist& phi) {
  double lo_phi = phi[0], hi_phi = phi[0];
  for (double x : phi) lo_phi = std::min(lo_phi, x), hi_phi = std::max(hi_phi, x);
  if (lo_phi >= 0 || hi_phi <= 0) return std::nullopt;
  const double margin = 1e-9;
  const double theta = decreasing_root(
      [&](double t) {
        double s = 0;
        for (int i = 0; i < kPentanomialCells; ++i) s += p[size_t(i)] * phi[size_t(i)] / (1 + t * phi[size_t(i)]);
        return s;
      },
      -1 / hi_phi + margin, -1 / lo_phi - margin);
  Dist q;
  for (int i = 0; i < kPentanomialCells; ++i) q[size_t(i)] = p[size_t(i)] / (1 + theta * phi[size_t(i)]);
  return q;
}

// Maximum-likelihood distribution with mean s (logistic bounds).
std::optional<Dist> with_mean(const Dist& p, double s) {
  Dist phi;
  for (int i = 0; i < kPentanomialCells; ++i) phi[size_t(i)] = kScores[i] - s;
  return tilt(p, phi);
}

// Maximum-likelihood distribution with (mu - 1/2) / sigma = t (normalized bounds): a fixed
// point, started from the uniform distribution (Van den Bergh, "Comments on normalized Elo",
// section 4.1). None where Fishtest's MLE_t_value() refuses: a step out of reach (tilt), or a
// result whose (mu - 1/2) / sigma is not t within 1e-5.
std::optional<Dist> with_normalized_mean(const Dist& p, double t) {
  Dist q;
  q.fill(1.0 / kPentanomialCells);
  for (int it = 0; it < 20; ++it) {
    double mu = 0, var = 0;
    for (int i = 0; i < kPentanomialCells; ++i) mu += q[size_t(i)] * kScores[i];
    for (int i = 0; i < kPentanomialCells; ++i) var += q[size_t(i)] * (kScores[i] - mu) * (kScores[i] - mu);
    const double sigma = std::sqrt(var);
    if (!(sigma > 0)) break;
    Dist phi;
    for (int i = 0; i < kPentanomialCells; ++i) {
      const double u = (kScores[i] - mu) / sigma;
      phi[size_t(i)] = kScores[i] - 0.5 - 0.5 * t * sigma * (1 + u * u);
    }
    const std::optional<Dist> tilted = tilt(p, phi);
    if (!tilted) return std::nullopt;
    const Dist& next = *tilted;
    double change = 0;
    for (int i = 0; i < kPentanomialCells; ++i) change = std::max(change, std::abs(next[size_t(i)] - q[size_t(i)]));
    q = next;
    if (change < 1e-9) break;
  }
  double mu = 0, var = 0;
  for (int i = 0; i < kPentanomialCells; ++i) mu += q[size_t(i)] * kScores[i];
  for (int i = 0; i < kPentanomialCells; ++i) var += q[size_t(i)] * (kScores[i] - mu) * (kScores[i] - mu);
  if (!(var > 0) || !(std::abs((mu - 0.5) / std::sqrt(var) - t) < 1e-5)) return std::nullopt;
  return q;
}

}  // namespace

double SprtRule::lower() const { return std::log(beta / (1 - alpha)); }
double SprtRule::upper() const { return std::log((1 - beta) / alpha); }

absl::Status SprtRule::validate() const {
  if (!(elo0 < elo1)) return absl::InvalidArgumentError(absl::StrCat("sprt: elo0 ", elo0, " is not below elo1 ", elo1));
  if (!(alpha > 0 && alpha < 0.5))
    return absl::InvalidArgumentError(absl::StrCat("sprt: alpha ", alpha, " is not in (0, 0.5)"));
  if (!(beta > 0 && beta < 0.5))
    return absl::InvalidArgumentError(absl::StrCat("sprt: beta ", beta, " is not in (0, 0.5)"));
  if (std::abs(elo0) > 1000 || std::abs(elo1) > 1000)
    return absl::InvalidArgumentError("sprt: elo0 and elo1 must be within -1000..1000");
  // Normalized bounds: the maximum-likelihood distribution is a fixed point started from the
  // uniform one, whose first step has a solution only for |t| < 2 sqrt(2) / 3, that is |nElo| <
  // (2/3) 800 / ln 10 = 231.6, whatever the results (Fishtest's MLE_t_value() fails beyond).
  if (normalized && (std::abs(elo0) >= kMaxNormalizedElo || std::abs(elo1) >= kMaxNormalizedElo))
    return absl::InvalidArgumentError(absl::StrFormat(
        "sprt: normalized elo0 and elo1 must be within -%.1f..%.1f (no distribution of pair scores reaches "
        "beyond)",
        kMaxNormalizedElo, kMaxNormalizedElo));
  return absl::OkStatus();
}

absl::Status parse_sprt(absl::string_view field, absl::string_view text, SprtRule* rule) {
  SprtRule r;
  bool has0 = false, has1 = false;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    const size_t eq = part.find('=');
    const absl::string_view key = part.substr(0, eq), value = eq == absl::string_view::npos ? "" : part.substr(eq + 1);
    const auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": '", part.substr(0, 40), "' ", why,
                                                     " (give elo0=E,elo1=E[,alpha=A][,beta=B][,model=logistic|"
                                                     "normalized])"));
    };
    if (key == "model") {
      if (value != "logistic" && value != "normalized") return bad("is not logistic or normalized");
      r.normalized = value == "normalized";
      continue;
    }
    double v = 0;
    if (!absl::SimpleAtod(value, &v) || !std::isfinite(v)) return bad("is not NAME=NUMBER");
    if (key == "elo0") {
      r.elo0 = v, has0 = true;
    } else if (key == "elo1") {
      r.elo1 = v, has1 = true;
    } else if (key == "alpha") {
      r.alpha = v;
    } else if (key == "beta") {
      r.beta = v;
    } else {
      return bad("is not elo0, elo1, alpha, beta or model");
    }
  }
  if (!has0 || !has1) return absl::InvalidArgumentError(absl::StrCat(field, ": give both elo0 and elo1"));
  if (absl::Status s = r.validate(); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", s.message().substr(6)));
  *rule = r;
  return absl::OkStatus();
}

std::string describe(const SprtRule& r) {
  return absl::StrFormat("elo0=%g,elo1=%g,alpha=%g,beta=%g,model=%s", r.elo0, r.elo1, r.alpha, r.beta,
                         r.normalized ? "normalized" : "logistic");
}

absl::string_view sprt_result_name(SprtResult r) {
  switch (r) {
    case SprtResult::kContinue: return "continue";
    case SprtResult::kH0: return "H0";
    case SprtResult::kH1: return "H1";
  }
  return "?";
}

double sprt_llr(const SprtRule& rule, const Pentanomial& penta) {
  if (!rule.enabled()) return 0;
  int64_t pairs = 0;
  for (int64_t c : penta) pairs += c;
  if (pairs == 0) return 0;
  // Empty cells get a thousandth of a pair, as fastchess does, so that no likelihood is 0.
  Dist p;
  double n = 0;
  for (int i = 0; i < kPentanomialCells; ++i) n += penta[size_t(i)] ? double(penta[size_t(i)]) : 1e-3;
  for (int i = 0; i < kPentanomialCells; ++i) p[size_t(i)] = (penta[size_t(i)] ? double(penta[size_t(i)]) : 1e-3) / n;
  std::optional<Dist> p0, p1;
  if (rule.normalized) {
    p0 = with_normalized_mean(p, std::sqrt(2.0) * rule.elo0 / kNeloScale);
    p1 = with_normalized_mean(p, std::sqrt(2.0) * rule.elo1 / kNeloScale);
  } else {
    p0 = with_mean(p, logistic_score(rule.elo0));
    p1 = with_mean(p, logistic_score(rule.elo1));
  }
  // A hypothesis no distribution of pair scores reaches (normalized bounds far out): no LLR, as
  // Fishtest refuses one, rather than a finite number from a distribution that is not the
  // hypothesis's.
  if (!p0 || !p1) return std::numeric_limits<double>::quiet_NaN();
  double llr = 0;
  for (int i = 0; i < kPentanomialCells; ++i)
    llr += p[size_t(i)] * (std::log((*p1)[size_t(i)]) - std::log((*p0)[size_t(i)]));
  return n * llr;
}

SprtResult sprt_result(const SprtRule& rule, double llr) {
  if (!rule.enabled()) return SprtResult::kContinue;
  if (llr >= rule.upper()) return SprtResult::kH1;
  if (llr <= rule.lower()) return SprtResult::kH0;
  return SprtResult::kContinue;
}

}  // namespace c960::selfplay
