#include "selfplay/match.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "selfplay/lines.h"
#include "selfplay/significance.h"
#include "selfplay/stats.h"

namespace c960::selfplay {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kScores[kPentanomialCells] = {0, 0.25, 0.5, 0.75, 1};
const double kNeloScale = 800 / std::log(10.0);

// A's points in a game, in half points: 2 win, 1 draw, 0 loss.
int a_half_points(const GameRecord& g, bool a_white) {
  if (g.result == GameResult::kDraw) return 1;
  return (g.result == GameResult::kWhiteWins) == a_white ? 2 : 0;
}

}  // namespace

int64_t MatchPositionStats::pairs() const {
  int64_t n = 0;
  for (int64_t c : penta) n += c;
  return n;
}

namespace {

// Two-sided exact binomial test of k successes in n against 1/2.
double sign_test(int64_t k, int64_t n) {
  if (n == 0) return 1;
  const int64_t low = std::min(k, n - k);
  double tail = 0;
  for (int64_t i = 0; i <= low; ++i)
    tail += std::exp(std::lgamma(double(n) + 1) - std::lgamma(double(i) + 1) - std::lgamma(double(n - i) + 1) -
                     double(n) * std::log(2.0));
  return std::min(1.0, 2 * tail);
}

}  // namespace

MatchFigures match_figures(const Pentanomial& penta) {
  MatchFigures f;
  for (int64_t c : penta) f.pairs += c;
  if (f.pairs == 0) {
    f.score = f.score_lo = f.score_hi = f.elo = f.elo_lo = f.elo_hi = f.nelo = f.los = f.p = kNaN;
    return f;
  }
  f.a_pairs = penta[3] + penta[4];
  f.b_pairs = penta[0] + penta[1];
  f.sign_p = sign_test(f.a_pairs, f.a_pairs + f.b_pairs);
  const double n = double(f.pairs);
  double mu = 0, var = 0;
  for (int i = 0; i < kPentanomialCells; ++i) mu += double(penta[size_t(i)]) / n * kScores[i];
  for (int i = 0; i < kPentanomialCells; ++i)
    var += double(penta[size_t(i)]) / n * (kScores[i] - mu) * (kScores[i] - mu);
  const double se = std::sqrt(var / n);
  f.score = mu;
  if (se > 0) {
    // The normal interval of the pair scores, LOS and p from the same normal approximation, as
    // fastchess and OpenBench give them (OpenBench's Elo(): scipy.stats.norm.ppf, not Student's t).
    f.score_lo = std::max(0.0, mu - kZ95 * se);
    f.score_hi = std::min(1.0, mu + kZ95 * se);
    const double z = (mu - 0.5) / se;
    f.nelo = (mu - 0.5) / std::sqrt(2 * var) * kNeloScale;
    f.los = 1 - normal_sf(z);
    f.p = normal_two_sided_p(z);
  } else {
    // Every pair alike (n pairs at score mu): no spread to measure, and a few pairs won are not
    // certainty. Everything then comes from the exact sign test, so that interval, LOS and p
    // agree: the interval holds 1/2 exactly when p >= 0.05 and 2.5% <= LOS <= 97.5%.
    //  - p is the sign test's (16 pairs lost: 2^-15, not a normal tail of a made-up spread);
    //  - LOS = 1 - P(a sign-test count at least as good for A | 1/2): 1 - 2^-n with n pairs won,
    //    2^-n with n lost, 1/2 with none decided; so p = 2 min(LOS, 1 - LOS);
    //  - on the side towards 1/2 the interval ends where the sign test's does: the fraction of
    //    pairs at mu has the exact (Clopper-Pearson) bound c = 0.025^(1/n), and if the other pairs
    //    scored 1 - mu the mean would be 1/2 + (mu - 1/2)(2c - 1) (for mu = 0 or 1 this is the
    //    exact bound of any score in [0, 1]: 2 pairs won give 0.158..1). The far side is the
    //    Agresti-Coull bound of the pairs with z^2/2 pseudo-pairs lost and z^2/2 won, or mu.
    const double z2 = kZ95 * kZ95, na = n + z2;
    const double ma = (mu * n + z2 / 2) / na;
    const double va = std::max(0.0, (mu * mu * n + z2 / 2) / na - ma * ma), half_a = kZ95 * std::sqrt(va / na);
    const double c = std::pow(0.025, 1 / n), near = 0.5 + (mu - 0.5) * (2 * c - 1);
    f.nelo = mu == 0.5 ? 0 : kNaN;
    if (mu > 0.5) {
      f.score_lo = near;
      f.score_hi = std::min(1.0, std::max(mu, ma + half_a));
      f.los = 1 - std::pow(0.5, n);
    } else if (mu < 0.5) {
      f.score_lo = std::max(0.0, std::min(mu, ma - half_a));
      f.score_hi = near;
      f.los = std::pow(0.5, n);
    } else {
      f.score_lo = std::max(0.0, ma - half_a);
      f.score_hi = std::min(1.0, ma + half_a);
      f.los = 0.5;
    }
    f.p = f.sign_p;
  }
  f.elo = elo_from_score(mu);
  f.elo_lo = elo_from_score(f.score_lo);
  f.elo_hi = elo_from_score(f.score_hi);
  return f;
}

void MatchStats::add_pair(const StartPosition& position, const GameRecord* a_white, const GameRecord* b_white) {
  auto [it, added] = index_.try_emplace(position.id, positions_.size());
  if (added) {
    MatchPositionStats p;
    p.id = position.id;
    p.sp = position.kind == PositionKind::kChess960 ? position.number : -1;
    p.fen = xfen_of(position);
    positions_.push_back(std::move(p));
  }
  MatchPositionStats& p = positions_[it->second];
  const bool both = a_white && b_white && is_evidence(*a_white) && is_evidence(*b_white);
  if (!both) {
    p.unpaired += int64_t(a_white != nullptr) + int64_t(b_white != nullptr);
    return;
  }
  const uint64_t h = game_hash(*a_white) * 0x9e3779b97f4a7c15ULL ^ game_hash(*b_white);
  if (!p.pair_hashes.insert(h).second) {
    ++p.duplicates;
    return;
  }
  const int first = a_half_points(*a_white, true), second = a_half_points(*b_white, false);
  ++p.penta[size_t(first + second)];
  ++p.lines[line_hash(*a_white) * 0x9e3779b97f4a7c15ULL ^ line_hash(*b_white)][size_t(first + second)];
  for (int half : {first, second}) (half == 2 ? p.wins : half == 1 ? p.draws : p.losses)++;
}

void MatchStats::set_position(MatchPositionStats position) {
  auto [it, added] = index_.try_emplace(position.id, positions_.size());
  if (added)
    positions_.push_back(std::move(position));
  else
    positions_[it->second] = std::move(position);
}

std::vector<const MatchPositionStats*> MatchStats::rows() const {
  std::vector<const MatchPositionStats*> out;
  for (const MatchPositionStats& p : positions_) out.push_back(&p);
  return out;
}

Pentanomial MatchStats::total() const {
  Pentanomial t{};
  for (const MatchPositionStats& p : positions_)
    for (int i = 0; i < kPentanomialCells; ++i) t[size_t(i)] += p.penta[size_t(i)];
  return t;
}

MatchTests match_tests(const std::vector<Pentanomial>& positions) {
  MatchTests t;
  Pentanomial all_penta{};
  for (const Pentanomial& p : positions)
    for (int i = 0; i < kPentanomialCells; ++i) all_penta[size_t(i)] += p[size_t(i)];
  const MatchFigures all = match_figures(all_penta);
  double var = 0;
  for (int i = 0; i < kPentanomialCells; ++i)
    var += all.pairs
               ? double(all_penta[size_t(i)]) / double(all.pairs) * (kScores[i] - all.score) * (kScores[i] - all.score)
               : 0;
  int with_pairs = 0;
  for (const Pentanomial& p : positions) {
    const MatchFigures f = match_figures(p);
    t.p.push_back(f.pairs > 0 ? f.sign_p : kNaN);
    if (f.pairs == 0) continue;
    ++with_pairs;
    if (var > 0) t.chi_square += double(f.pairs) * (f.score - all.score) * (f.score - all.score) / var;
  }
  t.dof = var > 0 ? std::max(0, with_pairs - 1) : 0;
  t.heterogeneity_p = t.dof > 0 ? chi_square_sf(t.chi_square, t.dof) : kNaN;
  t.holm = holm_adjust(t.p);
  t.bh = benjamini_hochberg_adjust(t.p);
  return t;
}

MatchTests MatchStats::tests() const {
  std::vector<Pentanomial> v;
  for (const MatchPositionStats& p : positions_) v.push_back(p.penta);
  return match_tests(v);
}

std::string MatchRelatedness::note() const {
  if (shared_lines == 0) return "";
  const std::string text =
      absl::StrCat("WARNING: related pairs: ", shared_lines, shared_lines == 1 ? " line holds" : " lines hold",
                   " two pairs or more of a position (both games sharing their first ", kLinePlies, " plies); ",
                   estimated ? absl::StrFormat("their pairs' correlation is estimated at %.2f", rho)
                             : std::string("too few to estimate how related their pairs are (taken as copies)"),
                   absl::StrFormat("; the %d pairs count as about %.1f independent ones", pairs, effective),
                   unrecorded > 0 ? absl::StrCat(" (", unrecorded, " positions' lines not recorded)") : std::string(),
                   ". The figures above take every pair as independent: their intervals are too narrow and their "
                   "p-values too small. Give --random-plies K or a book for varied openings.");
  // Lines of at most 80 columns, broken between words, as a terminal would not.
  constexpr size_t kWidth = 80;
  std::string out, line;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!line.empty() && line.size() + 1 + word.size() > kWidth) {
      absl::StrAppend(&out, line, "\n");
      line.clear();
    }
    absl::StrAppend(&line, line.empty() ? "" : " ", word);
  }
  return absl::StrCat(out, line, "\n");
}

MatchRelatedness match_relatedness(const std::vector<const MatchPositionStats*>& positions) {
  MatchRelatedness r;
  // One-way analysis of variance of the pair scores by line within position (as lines.cpp).
  double ssw = 0, ssb = 0, df_w = 0, df_b = 0, n0_num = 0;
  for (const MatchPositionStats* p : positions) {
    if (p->lines.empty()) {
      r.unrecorded += p->pairs() > 0;
      continue;
    }
    double s = 0, n = 0, sum_sq_sizes = 0, between = 0, count = 0;
    for (const auto& [hash, penta] : p->lines) {
      double k = 0, sc = 0, sq = 0;
      for (int i = 0; i < kPentanomialCells; ++i) {
        const double c = double(penta[size_t(i)]);
        k += c;
        sc += c * kScores[i];
        sq += c * kScores[i] * kScores[i];
      }
      if (k == 0) continue;
      s += sc;
      n += k;
      sum_sq_sizes += k * k;
      between += sc * sc / k;
      ssw += sq - sc * sc / k;
      count += 1;
      if (k >= 2) ++r.shared_lines;
    }
    if (n == 0) continue;
    ssb += between - s * s / n;
    df_w += n - count;
    df_b += count - 1;
    n0_num += n - sum_sq_sizes / n;
  }
  if (r.shared_lines >= kMinSharedLinesToEstimate && df_w > 0 && df_b > 0) {
    const double msw = ssw / df_w, msb = ssb / df_b, n0 = n0_num / df_b;
    const double denominator = msb + (n0 - 1) * msw;
    r.rho = denominator > 0 ? std::clamp((msb - msw) / denominator, 0.0, 1.0) : 1.0;
    r.estimated = denominator > 0;
  }
  for (const MatchPositionStats* p : positions) {
    const double n = double(p->pairs());
    double sum_sq_sizes = 0;
    for (const auto& [hash, penta] : p->lines) {
      double k = 0;
      for (int64_t c : penta) k += double(c);
      sum_sq_sizes += k * k;
    }
    const bool recorded = !p->lines.empty() && n > 0;
    r.effective_of.push_back(recorded ? n / (1 + (sum_sq_sizes / n - 1) * r.rho) : n);
    if (recorded) {
      r.pairs += p->pairs();
      r.effective += r.effective_of.back();
    }
  }
  return r;
}

std::string match_favours(const MatchFigures& f, double holm) {
  if (!(holm < 0.05)) return "";
  return f.score > 0.5 ? "A" : "B";
}

std::string MatchStats::to_csv() const {
  std::string out =
      "sp,fen,pairs,ll,ld,dd_wl,wd,ww,games,wins,draws,losses,score,score_lo,score_hi,elo,elo_lo,elo_hi,nelo,los,p,"
      "p_holm,p_bh,favours,duplicates,unpaired,engine_a,engine_b\n";
  const std::string engines = absl::StrCat(",", csv_field(a_), ",", csv_field(b_));
  const MatchTests t = tests();
  const auto row = [&](const std::string& sp, const std::string& fen, const Pentanomial& penta, int64_t w, int64_t d,
                       int64_t l, const std::string& adjusted, int64_t dups, int64_t unpaired) {
    const MatchFigures f = match_figures(penta);
    absl::StrAppend(&out, sp, ",", fen, ",", f.pairs);
    for (int64_t c : penta) absl::StrAppend(&out, ",", c);
    absl::StrAppend(&out, ",", w + d + l, ",", w, ",", d, ",", l, ",", csv_number(f.score, 4), ",",
                    csv_number(f.score_lo, 4), ",", csv_number(f.score_hi, 4), ",", csv_number(f.elo, 1), ",",
                    csv_number(f.elo_lo, 1), ",", csv_number(f.elo_hi, 1), ",", csv_number(f.nelo, 1), ",",
                    csv_number(f.los, 4), ",", csv_number(sp == "all" ? f.p : f.sign_p, 4), ",", adjusted, ",", dups,
                    ",", unpaired, engines, "\n");
  };
  int64_t w = 0, d = 0, l = 0, dups = 0, unpaired = 0;
  for (size_t k = 0; k < positions_.size(); ++k) {
    const MatchPositionStats& p = positions_[k];
    const MatchFigures f = match_figures(p.penta);
    row(p.id, p.fen, p.penta, p.wins, p.draws, p.losses,
        absl::StrCat(csv_number(t.holm[k], 4), ",", csv_number(t.bh[k], 4), ",", match_favours(f, t.holm[k])),
        p.duplicates, p.unpaired);
    w += p.wins, d += p.draws, l += p.losses, dups += p.duplicates, unpaired += p.unpaired;
  }
  row("all", "", total(), w, d, l, ",,", dups, unpaired);
  return out;
}

std::string MatchStats::to_json(const std::vector<MetadataValue>& metadata) const {
  const MatchTests t = tests();
  const auto figures = [](const Pentanomial& penta, int64_t w, int64_t d, int64_t l) {
    const MatchFigures f = match_figures(penta);
    std::string o = absl::StrCat("\"pairs\": ", f.pairs, ", \"a_pairs\": ", f.a_pairs, ", \"b_pairs\": ", f.b_pairs,
                                 ", \"sign_p\": ", json_number(f.sign_p, 4), ", \"pentanomial\": [");
    for (int i = 0; i < kPentanomialCells; ++i) absl::StrAppend(&o, i ? ", " : "", penta[size_t(i)]);
    absl::StrAppend(&o, "], \"games\": ", w + d + l, ", \"wins\": ", w, ", \"draws\": ", d, ", \"losses\": ", l,
                    ", \"score\": ", json_number(f.score, 4), ", \"score_lo\": ", json_number(f.score_lo, 4),
                    ", \"score_hi\": ", json_number(f.score_hi, 4), ", \"elo\": ", json_number(f.elo, 1),
                    ", \"elo_lo\": ", json_number(f.elo_lo, 1), ", \"elo_hi\": ", json_number(f.elo_hi, 1),
                    ", \"nelo\": ", json_number(f.nelo, 1), ", \"los\": ", json_number(f.los, 4),
                    ", \"p\": ", json_number(f.p, 4));
    return o;
  };
  std::string out = "{";
  if (!metadata.empty()) absl::StrAppend(&out, "\"metadata\": ", metadata_json(metadata), ",\n");
  absl::StrAppend(&out, "\"engines\": {\"a\": ", json_string(a_), ", \"b\": ", json_string(b_), "},\n\"positions\": [");
  int64_t w = 0, d = 0, l = 0;
  for (size_t k = 0; k < positions_.size(); ++k) {
    const MatchPositionStats& p = positions_[k];
    const MatchFigures f = match_figures(p.penta);
    absl::StrAppend(&out, k ? ",\n  " : "\n  ", "{\"id\": ", json_string(p.id),
                    ", \"sp\": ", p.sp >= 0 ? absl::StrCat(p.sp) : std::string("null"),
                    ", \"fen\": ", json_string(p.fen), ", ", figures(p.penta, p.wins, p.draws, p.losses),
                    ", \"p_holm\": ", json_number(t.holm[k], 4), ", \"p_bh\": ", json_number(t.bh[k], 4),
                    ", \"favours\": ", json_string(match_favours(f, t.holm[k])), ", \"duplicates\": ", p.duplicates,
                    ", \"unpaired\": ", p.unpaired, "}");
    w += p.wins, d += p.draws, l += p.losses;
  }
  absl::StrAppend(&out, "\n],\n\"total\": {", figures(total(), w, d, l),
                  "},\n\"heterogeneity\": {\"chi_square\": ", json_number(t.chi_square, 3), ", \"dof\": ", t.dof,
                  ", \"p\": ", json_number(t.heterogeneity_p, 4), "}");
  if (sprt_.enabled()) {
    const double llr = this->llr();
    absl::StrAppend(&out, ",\n\"sprt\": {\"elo0\": ", sprt_.elo0, ", \"elo1\": ", sprt_.elo1,
                    ", \"alpha\": ", sprt_.alpha, ", \"beta\": ", sprt_.beta,
                    ", \"model\": ", json_string(sprt_.normalized ? "normalized" : "logistic"),
                    ", \"llr\": ", json_number(llr, 3), ", \"lower\": ", json_number(sprt_.lower(), 3),
                    ", \"upper\": ", json_number(sprt_.upper(), 3),
                    ", \"result\": ", json_string(sprt_result_name(sprt_result(sprt_, llr))), "}");
  }
  return out + "\n}\n";
}

std::string MatchStats::to_text() const {
  const MatchTests t = tests();
  const MatchFigures all = match_figures(total());
  const Pentanomial tp = total();
  std::string out = absl::StrFormat("A %s vs B %s: %d pairs, pentanomial (A's points 0..2) %d %d %d %d %d\n", a_, b_,
                                    all.pairs, tp[0], tp[1], tp[2], tp[3], tp[4]);
  const auto elo = [](double e) {
    return std::isfinite(e) ? absl::StrFormat("%+.1f", e) : std::string(e > 0 ? "+inf" : e < 0 ? "-inf" : "-");
  };
  if (all.pairs > 0)
    absl::StrAppendFormat(&out, "A's score %.3f [%.3f, %.3f], Elo %s [%s, %s], nElo %s, LOS %.1f%%\n", all.score,
                          all.score_lo, all.score_hi, elo(all.elo), elo(all.elo_lo), elo(all.elo_hi), elo(all.nelo),
                          100 * all.los);
  if (sprt_.enabled()) {
    const double llr = this->llr();
    absl::StrAppendFormat(
        &out, "SPRT %s: LLR %s (%.2f, %.2f): %s\n", describe(sprt_),
        std::isnan(llr) ? std::string("none (a bound is out of reach)") : absl::StrFormat("%.2f", llr), sprt_.lower(),
        sprt_.upper(), sprt_result_name(sprt_result(sprt_, llr)));
  }
  if (t.dof > 0)
    absl::StrAppendFormat(&out, "Does the difference depend on the position? chi-square %.1f on %d dof, p %.3g\n",
                          t.chi_square, t.dof, t.heterogeneity_p);
  absl::StrAppend(&out, relatedness().note());
  absl::StrAppend(&out, "\n");
  absl::StrAppendFormat(&out, "%-8s %5s %5s %5s %5s %5s %5s %6s %7s %6s %6s %s\n", "pos", "pairs", "LL", "LD", "DD+WL",
                        "WD", "WW", "score", "Elo", "sign p", "Holm", "favours");
  for (size_t k = 0; k < positions_.size(); ++k) {
    const MatchPositionStats& p = positions_[k];
    const MatchFigures f = match_figures(p.penta);
    absl::StrAppendFormat(&out, "%-8s %5d %5d %5d %5d %5d %5d %6s %7s %6s %6s %s\n", p.id.substr(0, 8), f.pairs,
                          p.penta[0], p.penta[1], p.penta[2], p.penta[3], p.penta[4], csv_number(f.score, 3),
                          // A score of 0 or 1 is -inf or +inf Elo, as the CSV says; blank without pairs.
                          std::isfinite(f.elo) ? absl::StrFormat("%+.0f", f.elo)
                          : std::isinf(f.elo)  ? std::string(f.elo > 0 ? "+inf" : "-inf")
                                               : std::string(""),
                          csv_number(f.sign_p, 3), csv_number(t.holm[k], 3), match_favours(f, t.holm[k]));
  }
  return out;
}

}  // namespace c960::selfplay
