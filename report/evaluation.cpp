#include "report/evaluation.h"

#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace c960::report {
namespace {

// One CSV line's fields; quoted fields may hold commas and doubled quotes.
std::vector<std::string> csv_fields(absl::string_view line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<EvaluationTable> parse_evaluation_csv(absl::string_view text) {
  EvaluationTable t;
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  std::map<std::string, size_t> col;
  std::set<std::pair<int, std::string>> seen;
  for (size_t ln = 0; ln < lines.size(); ++ln) {
    absl::string_view line = absl::StripSuffix(lines[ln], "\r");
    if (line.empty()) continue;
    const std::vector<std::string> f = csv_fields(line);
    // Tables of several runs may be concatenated: their headers again are skipped.
    if (!col.empty() && !f.empty() && f[0] == "sp") continue;
    if (col.empty()) {
      for (size_t i = 0; i < f.size(); ++i) col[f[i]] = i;
      for (const char* need : {"sp", "engine", "score_cp", "mate"})
        if (!col.count(need))
          return absl::InvalidArgumentError(absl::StrCat(
              "line ", ln + 1, ": no column '", need,
              "': not an evaluation table (the CSV of c960 evaluate: sp,fen,engine,...,score_cp,mate,best_move,pv)"));
      continue;
    }
    const auto field = [&](const char* name) -> std::string {
      auto it = col.find(name);
      return it != col.end() && it->second < f.size() ? f[it->second] : std::string();
    };
    const auto bad = [&](const char* name, const std::string& problem) {
      return absl::InvalidArgumentError(absl::StrCat("line ", ln + 1, ", column ", name, ": ", problem));
    };
    EvalEntry e;
    if (!absl::SimpleAtoi(field("sp"), &e.sp) || e.sp < 0 || e.sp > 959)
      return bad("sp", absl::StrCat("'", field("sp"), "' is not a start position 0..959"));
    e.engine = field("engine");
    if (e.engine.empty()) return bad("engine", "empty");
    if (!absl::SimpleAtoi(field("mate"), &e.mate))
      return bad("mate", absl::StrCat("'", field("mate"), "' is not an integer"));
    if (e.mate == 0) {
      double cp = 0;
      if (!absl::SimpleAtod(field("score_cp"), &cp) || !std::isfinite(cp))
        return bad("score_cp", absl::StrCat("'", field("score_cp"), "' is not a number (and mate is 0)"));
      e.cp = cp;
    }
    if (std::string d = field("depth"); !d.empty() && !absl::SimpleAtoi(d, &e.depth))
      return bad("depth", absl::StrCat("'", d, "' is not an integer"));
    e.best_move = field("best_move");
    e.pv = field("pv");
    if (!seen.insert({e.sp, e.engine}).second)
      return bad("engine", absl::StrCat("start position ", e.sp, " by '", e.engine, "' twice"));
    bool known = false;
    for (const std::string& n : t.engines) known |= n == e.engine;
    if (!known) t.engines.push_back(e.engine);
    t.rows.push_back(std::move(e));
  }
  if (col.empty()) return absl::InvalidArgumentError("the evaluation table is empty");
  if (t.rows.empty()) return absl::InvalidArgumentError("the evaluation table has no rows");
  return t;
}

RankCorrelation spearman_interval(const std::vector<double>& x, const std::vector<double>& y) {
  RankCorrelation r;
  r.n = std::min(x.size(), y.size());
  r.rho = spearman(x, y);
  if (r.n < 4 || !std::isfinite(r.rho)) return r;
  if (std::abs(r.rho) >= 1) {
    r.lo = r.hi = r.rho;
    return r;
  }
  const double z = std::atanh(r.rho);
  const double se = std::sqrt((1 + r.rho * r.rho / 2) / double(r.n - 3));
  r.lo = std::tanh(z - 1.959963984540054 * se);
  r.hi = std::tanh(z + 1.959963984540054 * se);
  return r;
}

double LogisticFit::score_at(double cp) const { return 1 / (1 + std::exp(-(a + b * cp / 100))); }

LogisticFit fit_logistic(const std::vector<double>& cp, const std::vector<double>& score,
                         const std::vector<double>& games) {
  LogisticFit fit;
  std::vector<size_t> use;
  std::set<double> distinct;
  double w_total = 0, points = 0;
  for (size_t i = 0; i < cp.size() && i < score.size() && i < games.size(); ++i)
    if (std::isfinite(cp[i]) && std::isfinite(score[i]) && games[i] > 0) {
      use.push_back(i);
      distinct.insert(cp[i]);
      w_total += games[i];
      points += games[i] * score[i];
    }
  fit.n = use.size();
  if (use.size() < 3 || distinct.size() < 2) return fit;
  // The log-likelihood of n_i trials with y_i the share of points: sum n_i (y log p + (1-y) log(1-p)).
  const auto deviance = [&](double a, double b) {
    double d = 0;
    for (size_t i : use) {
      const double p = 1 / (1 + std::exp(-(a + b * cp[i] / 100)));
      const double y = score[i], n = games[i];
      if (y > 0) d += 2 * n * y * std::log(y / p);
      if (y < 1) d += 2 * n * (1 - y) * std::log((1 - y) / (1 - p));
    }
    return d;
  };
  const double mean = points / w_total;
  if (mean <= 0 || mean >= 1) return fit;
  double a = std::log(mean / (1 - mean)), b = 0;
  double h00 = 0, h01 = 0, h11 = 0;
  bool converged = false;
  for (int iter = 0; iter < 100 && !converged; ++iter) {
    double g0 = 0, g1 = 0;
    h00 = h01 = h11 = 0;
    for (size_t i : use) {
      const double x = cp[i] / 100, p = 1 / (1 + std::exp(-(a + b * x))), n = games[i];
      g0 += n * (score[i] - p);
      g1 += n * (score[i] - p) * x;
      const double w = n * p * (1 - p);
      h00 += w;
      h01 += w * x;
      h11 += w * x * x;
    }
    const double det = h00 * h11 - h01 * h01;
    if (!(det > 0)) return fit;
    double da = (h11 * g0 - h01 * g1) / det, db = (h00 * g1 - h01 * g0) / det;
    // Halve the step until the deviance does not grow (the likelihood is concave: this ends).
    const double before = deviance(a, b);
    for (int k = 0; k < 30 && deviance(a + da, b + db) > before + 1e-12; ++k) da /= 2, db /= 2;
    a += da;
    b += db;
    converged = std::abs(da) < 1e-10 && std::abs(db) < 1e-10;
  }
  if (!converged) return fit;
  const double det = h00 * h11 - h01 * h01;
  fit.a = a;
  fit.b = b;
  fit.se_a = std::sqrt(h11 / det);
  fit.se_b = std::sqrt(h00 / det);
  fit.deviance = deviance(a, b);
  fit.null_deviance = deviance(std::log(mean / (1 - mean)), 0);
  fit.ok = true;
  return fit;
}

}  // namespace c960::report
