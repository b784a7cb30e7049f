#include "report/report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "core/startpos.h"
#include "report/analysis.h"
#include "report/assets.h"
#include "report/evaluation.h"
#include "selfplay/lines.h"

namespace c960::report {
namespace {

// Rows of the best and worst lists.
constexpr size_t kExtremes = 10;
// Rows of the full table: beyond this (Double Fischer Random has 921 600 positions) the page
// would be too large to open; the CSV has them all.
constexpr size_t kMaxTableRows = 20000;

std::string html(absl::string_view s) { return html_escape(s); }

// A JSON string that is also safe inside <script>: no "</script>", no "<!--".
std::string json_string(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\')
      out += {'\\', c};
    else if (u < 0x20 || c == '<' || c == '>' || c == '&')
      out += absl::StrFormat("\\u%04x", u);
    else
      out += c;
  }
  return out + "\"";
}

std::string json_number(double x) {
  if (!std::isfinite(x)) return "null";
  return absl::StrFormat("%.6g", x + 0.0);
}

std::string fixed(double x, int decimals = 3) {
  if (std::isnan(x)) return "&ndash;";
  if (std::isinf(x)) return x > 0 ? "&infin;" : "&minus;&infin;";
  return absl::StrFormat("%.*f", decimals, x + 0.0);
}

std::string p_value(double p) {
  if (std::isnan(p)) return "&ndash;";
  if (p >= 0.001) return absl::StrFormat("%.3f", p);
  if (p <= 0) return "&lt; 1e-300";
  return absl::StrFormat("%.1e", p);
}

// "p = 0.012", "p = 3.1e-05" or "p &lt; 1e-300": a p-value in a sentence, with its relation.
std::string p_is(double p) {
  if (!std::isnan(p) && p <= 0) return "p &lt; 1e-300";
  return "p = " + p_value(p);
}

// A permutation p-value (1 + #at least as large) / (permutations + 1): at its floor, when no
// permutation reached the observed statistic, it is a bound ("p &le; 0.0099, the least 100
// permutations can show"), not an estimate.
std::string permutation_p_is(double p, int permutations) {
  const double floor = 1.0 / (1.0 + double(permutations));
  if (permutations > 0 && std::abs(p - floor) <= 1e-12)
    return absl::StrCat("p &le; ", absl::StrFormat("%.2g", floor), " (none of the ", permutations,
                        " permutations reached the observed &chi;&sup2;; more would show a smaller p)");
  return p_is(p);
}

// 1234567 -> "1 234 567" with narrow no-break spaces.
std::string grouped(NodeCount n) {
  const std::string digits = to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += "\u202f";
    out += digits[i];
  }
  return out;
}

std::string count(int64_t n) { return grouped(NodeCount(n)); }

std::string backrank(int sp) { return sp >= 0 ? *backrank_of(sp) : ""; }

std::string interval_text(const selfplay::Interval& s) { return absl::StrCat(fixed(s.lo), "&ndash;", fixed(s.hi)); }

// An inline bar on [0, 1]: the interval as a band, the score as a tick.
std::string interval_bar(const selfplay::Interval& s) {
  if (std::isnan(s.value)) return "";
  return absl::StrFormat(
      "<span class=\"ib\" aria-hidden=\"true\"><span class=\"ib-mid\"></span><span class=\"ib-range\" "
      "style=\"left:%.1f%%;width:%.1f%%\"></span><span class=\"ib-dot\" style=\"left:%.1f%%\"></span></span>",
      100 * s.lo, 100 * (s.hi - s.lo), 100 * s.value);
}

std::string metadata_section(const Metadata& m, const std::string& extra_rows) {
  std::string out = "<section id=\"metadata\"><h2>Metadata</h2>";
  if (m.empty() && extra_rows.empty()) return out + "<p class=\"note\">None given.</p></section>";
  out += "<table class=\"meta\"><tbody>";
  for (const auto& [k, v] : m) absl::StrAppend(&out, "<tr><th>", html(k), "</th><td>", html(v), "</td></tr>");
  return out + extra_rows + "</tbody></table></section>";
}

std::string page(const std::string& title, const std::string& body, const std::string& data_json) {
  std::string out =
      "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      // Nothing may load from elsewhere: the file must open offline.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; "
      "style-src 'unsafe-inline'; img-src data:\">\n<title>";
  out += html(title);
  out += "</title>\n<style>\n";
  out += assets::kReportCss;
  out += "\n";
  out += assets::kHeatmapCss;
  out += "\n</style>\n</head>\n<body>\n";
  out += body;
  out += "\n<script>\n";
  out += assets::kChartJs;
  out += "\n</script>\n<script>\n";
  out += assets::kHeatmapJs;
  out += "\n</script>\n<script type=\"application/json\" id=\"c960-report-data\">";
  out += data_json;
  out += "</script>\n<script>\n";
  out += assets::kReportJs;
  out += "\n</script>\n</body>\n</html>\n";
  return out;
}

std::string heatmap_legend(const std::string& what) {
  return absl::StrCat(
      "<p class=\"legend\">One cell per start position, by the standard (Scharnagl) numbering n = 96 &times; "
      "knights + 16 &times; queen + 4 &times; dark bishop + light bishop. <b>Rows</b>: 4 groups by the "
      "dark-squared bishop's file (a, c, e, g), each of 4 rows by the light-squared bishop's file (b, d, f, h). "
      "<b>Columns</b>: 10 groups by the knights' code (which two of the five squares left by the bishops and the "
      "queen they take: N1 = the first two &hellip; N10 = the last two), each of 6 columns by the queen's code "
      "(which of the six squares left by the bishops she takes, Q1 &hellip; Q6). Rooks and king take the last "
      "three squares in the order R K R. Number n sits in row n mod 16 and column n div 16, so a row shares its "
      "bishops and a column group its knights' code. ",
      what, " Hover a cell for its number, back rank and figures.</p>");
}

// --- self-play ---

std::string position_row(const SelfPlayRow& r, const PositionResult& pr, size_t rank, bool with_tests) {
  std::string out =
      absl::StrCat("<tr><td>", rank, "</td><td>", html(r.key.id), "</td><td class=\"br\">", backrank(r.key.sp),
                   "</td><td>", count(r.counts.games()), "</td><td>", count(r.counts.white_wins), "</td><td>",
                   count(r.counts.draws), "</td><td>", count(r.counts.black_wins), "</td><td>", fixed(pr.score.value),
                   "</td><td>", interval_text(pr.score), "</td><td>", interval_bar(pr.score), "</td>");
  if (with_tests)
    absl::StrAppend(&out, "<td>", fixed(r.counts.draw_rate()), "</td><td>", fixed(r.mean_plies, 1), "</td><td>",
                    p_value(pr.p), "</td><td>", p_value(pr.p_holm), "</td><td>", p_value(pr.q_bh), "</td>");
  return out + "</tr>\n";
}

std::string positions_header(bool with_tests) {
  std::string out =
      "<thead><tr><th>rank</th><th>position</th><th>back rank</th><th>games</th><th>W</th><th>D</th><th>L</th>"
      "<th>score</th><th>95% interval</th><th class=\"bar\">0 &hellip; 1</th>";
  if (with_tests) out += "<th>draws</th><th>plies</th><th>p</th><th>p (Holm)</th><th>q (BH)</th>";
  return out + "</tr></thead>";
}

// How the self-play page computes what it shows.
constexpr const char* kSelfPlayMethods = R"(<section id="methods"><h2>Methods</h2><ul>
<li><b>Score and interval</b>: White's points per game (1, &frac12;, 0). The 95% interval is the hull of a
Wilson-type score interval for the win/draw/loss distribution (the variance at each candidate mean uses the
observed draw rate, capped by what that mean allows) and an Agresti&ndash;Coull-type interval (z&sup2;/2
pseudo-wins and pseudo-losses). It moves continuously with the counts and covers the true score at least 93% of
the time from 20 games on (selfplay/stats.h).</li>
<li><b>Homogeneity</b>: Pearson's chi-square test on the positions &times; {win, draw, loss} table, p-value from
the chi-square distribution (regularized incomplete gamma function) and, since expected counts are often small,
by permutation: the games are shuffled among the positions (every position keeps its number of games) with a
fixed seed, p = (1 + #&chi;&sup2; &ge; observed) / (permutations + 1).</li>
<li><b>Per-position p-values</b>: exact two-sided test of each position's points against the overall
win/draw/loss probabilities (every outcome no more likely than the observed one; normal approximation beyond 2000
games), then Holm's step-down correction (family-wise error) and Benjamini&ndash;Hochberg's step-up correction
(false discovery rate), both given.</li>
<li><b>Noise</b>: the histogram's line and the noise standard deviation come from the same null model: every
position with the overall probabilities and its own number of games.</li>
<li><b>Rankings</b>: each position's score shrunk toward the distribution of all positions' scores
(empirical Bayes, a hierarchical normal model: scores normal about the true ones with their sampling variance,
true scores normal about a mean with a spread &tau;; flat priors on the mean and on &tau; in [0, &frac12;], the
posterior of &tau; on a grid, as in Gelman et al., <i>Bayesian Data Analysis</i>, section 5.4). A position with
few games, or far from the rest, moves most. Its interval is the middle 95% of its posterior, which allows for
not knowing the mean or &tau;; the rank interval holds the middle 95% of its ranks over 1000 posterior draws
(fixed seed). Only positions with 20 games or more are ranked, and only when three have them; the intervals'
average coverage is checked by simulation (tests/ranking_test.cpp).</li>
<li><b>Mirror pairs</b>: each of the 480 pairs of a start position and its mirror image (the back rank read
from h to a; 518 RNBQKBNR and 534 RNBKQBNR) is compared once both have 20 games or more: the difference of White's
mean scores over the per-game standard error pooled over the pair (its value when the two share one distribution),
a two-sided normal p-value, Holm's and Benjamini&ndash;Hochberg's corrections over the pairs compared, and the
sum of the pairs' z&sup2; against chi-square with one degree of freedom a pair (the pairs share no games, so their
tests are independent). The rate of false differences (4.8% at 5%) and the intervals' coverage (95.2%) are checked
by simulation (tests/mirror_test.cpp).</li>
<li><b>Reference</b>: positions are matched by start position number (or id); Pearson's r with Fisher's z
interval, Spearman's &rho; with average ranks for ties; a disagreement is a pair of non-overlapping 95%
intervals.</li></ul></section>
)";

// Summary cards.
std::string summary_section(const SelfPlayAnalysis& a) {
  std::string b;
  const selfplay::Interval elo = a.total.elo();
  absl::StrAppend(
      &b, "<section id=\"summary\" class=\"cards\">",
      "<div class=\"card\"><div class=\"k\">positions</div><div class=\"v\">", a.by_score.size(),
      "</div></div><div class=\"card\"><div class=\"k\">games</div><div class=\"v\">", count(a.total.games()),
      "</div></div><div class=\"card\"><div class=\"k\">White's score</div><div class=\"v\">",
      fixed(a.total_score.value), "</div><div class=\"s\">95%: ", interval_text(a.total_score),
      "</div></div><div class=\"card\"><div class=\"k\">Elo (White)</div><div class=\"v\">", fixed(elo.value, 1),
      "</div><div class=\"s\">95%: ", fixed(elo.lo, 1), " &hellip; ", fixed(elo.hi, 1),
      "</div></div><div class=\"card\"><div class=\"k\">W / D / L</div><div class=\"v\">", fixed(100 * a.win, 1), " / ",
      fixed(100 * a.draw, 1), " / ", fixed(100 * a.loss, 1), " %</div></div></section>\n");
  return b;
}

// Does the start position matter?
std::string tests_section(const SelfPlayTable& t, const SelfPlayAnalysis& a) {
  std::string b;
  const ChiSquareTest& h = a.homogeneity;
  absl::StrAppend(&b, "<section id=\"tests\"><h2>Does the start position matter?</h2>");
  if (h.dof > 0) {
    absl::StrAppend(&b, "<p class=\"verdict\">Chi-square test that all ", h.rows,
                    " positions share one win/draw/loss distribution: &chi;&sup2; = ", fixed(h.statistic, 1), " with ",
                    h.dof, " degrees of freedom, <b>", p_is(h.p_value), "</b>; by ", a.permutations,
                    " permutations of the games among the positions, <b>",
                    permutation_p_is(a.permutation_p, a.permutations), "</b>.",
                    a.tests_effective
                        ? absl::StrCat(" Related games counted as what they are worth: these tests, and those of each "
                                       "position and of the groups below, take each position's games as its "
                                       "effective number (",
                                       count(a.total.games()), " games count as ", count(a.tested_games),
                                       "; the counts scaled and rounded, a design-effect correction).")
                        : std::string(),
                    "</p>");
    if (h.share_expected_below_5 > 0.2)
      absl::StrAppend(
          &b, "<p class=\"note\">", fixed(100 * h.share_expected_below_5, 0),
          "% of the expected counts are below 5 (smallest ", fixed(h.min_expected, 2),
          "), so the chi-square distribution is only a rough guide here: trust the permutation p-value.</p>");
    int64_t duplicates = 0, uncounted = 0;
    for (const SelfPlayRow& r : t.rows) {
      duplicates += r.duplicates;
      uncounted += r.uncounted;
    }
    if (uncounted > 0)
      absl::StrAppend(&b, "<p class=\"note\">", count(uncounted),
                      " games ended in an engine failure before both engines had played a move from the position. "
                      "They say nothing about the position (and nobody can check them), so they are listed in the "
                      "terminations but not counted in any result, score or test.</p>");
    // Related games: what the run measured, or what is assumed without it.
    if (!t.related_note.empty()) {
      for (absl::string_view line : absl::StrSplit(t.related_note, '\n', absl::SkipEmpty()))
        absl::StrAppend(&b, "<p class=\"note\">", html_escape(line), "</p>");
    } else if (!t.effective_known()) {
      absl::StrAppend(&b,
                      "<p class=\"note\">This table does not say how its games relate (no effective_games column): "
                      "each game is taken as independent, by the intervals and by every test here. Games of a "
                      "position that share their opening count for less; if they do, the intervals are too narrow "
                      "and the p-values too small.</p>");
    } else {
      double games = 0, effective = 0;
      int64_t mostly = 0;
      for (const SelfPlayRow& r : t.rows) {
        games += double(r.counts.games());
        effective += r.effective_games;
        mostly += r.lines > 0 && double(r.counts.games()) >= 2 * r.effective_games;
      }
      absl::StrAppend(&b, "<p class=\"note\">Related games (games sharing their first ", selfplay::kLinePlies,
                      " plies): the ", count(int64_t(games)), " games count as ", fixed(effective, 1),
                      " independent ones (the table's effective_games column); the intervals and tests use them.",
                      mostly ? absl::StrCat(" WARNING: ", mostly,
                                            " positions' games count for less than half their "
                                            "number: they mostly follow few lines.")
                             : std::string(),
                      "</p>");
    }
    if (duplicates > 0)
      absl::StrAppend(&b, "<p class=\"note\">", count(duplicates),
                      " games repeat an earlier game of their position move for move. A repeat is no new evidence, "
                      "so each distinct game is counted once; more randomness (node jitter, random opening plies) "
                      "makes more of the games count.</p>");
    absl::StrAppend(&b, "<p>Spread of the per-position scores: standard deviation ", fixed(a.observed_sd),
                    "; sampling noise alone would give about ", fixed(a.noise_sd), ", which leaves about <b>",
                    fixed(a.excess_sd), "</b> for real differences between positions (method of moments).</p>");
    absl::StrAppend(&b, "<p>Each position against the overall result (exact test): ", a.significant_holm,
                    " differ at the 5% level after Holm's correction (family-wise error), ", a.significant_bh,
                    " after Benjamini&ndash;Hochberg's (false discovery rate), out of ", a.by_score.size(), ".</p>");
  } else {
    b += "<p class=\"note\">Not enough positions or outcomes for a test.</p>";
  }
  b += "</section>\n";
  return b;
}

// Heatmap.
std::string heatmap_section(const SelfPlayTable& t) {
  std::string b;
  const bool any960 = std::any_of(t.rows.begin(), t.rows.end(), [](const SelfPlayRow& r) { return r.key.sp >= 0; });
  if (any960)
    absl::StrAppend(&b, "<section id=\"heatmap-section\"><h2>White's score by start position</h2>",
                    "<div id=\"heatmap\" class=\"c960-heatmap\"></div>",
                    heatmap_legend("Colour: White's score, centred on the overall score; red favours White, blue "
                                   "Black; grey: no games."),
                    "</section>\n");
  return b;
}

// Histogram.
std::string histogram_section() {
  std::string b;
  absl::StrAppend(&b, "<section id=\"histogram-section\"><h2>Scores against sampling noise</h2>",
                  "<div class=\"chart\"><canvas id=\"histogram\"></canvas></div>",
                  "<p class=\"legend\">Bars: how many positions scored in each bin. Line: how many would, on "
                  "average, if every position had the overall win/draw/loss probabilities (each position's exact "
                  "score distribution for its number of games, summed). Bars much wider than the line mean real "
                  "differences between positions.</p></section>\n");
  return b;
}

// Groups.
std::string groups_section(const SelfPlayAnalysis& a) {
  std::string b;
  if (!a.groups.empty()) {
    b += "<section id=\"groups\"><h2>Pooled by piece placement</h2><p class=\"legend\">All games of the positions "
         "that share a feature, with a chi-square test of whether the groups differ (exploratory: five "
         "tests on the same games).</p><div class=\"groups\">";
    for (const GroupSummary& g : a.groups) {
      absl::StrAppend(&b, "<table class=\"group\"><caption>", html(g.factor), ": ", p_is(g.test.p_value),
                      "</caption><thead><tr><th>", html(g.factor),
                      "</th><th>games</th><th>score</th><th>95% interval</th>"
                      "<th class=\"bar\">0 &hellip; 1</th></tr></thead><tbody>");
      for (size_t i = 0; i < g.groups.size(); ++i) {
        const auto& [label, c] = g.groups[i];
        const selfplay::Interval s = selfplay::effective_score(c, i < g.effective.size() ? g.effective[i] : kNaN);
        absl::StrAppend(&b, "<tr><td>", html(label), "</td><td>", count(c.games()), "</td><td>", fixed(s.value),
                        "</td><td>", interval_text(s), "</td><td>", interval_bar(s), "</td></tr>");
      }
      b += "</tbody></table>";
    }
    b += "</div></section>\n";
  }
  return b;
}

// Best and worst: the ranked positions by their shrunk score.
std::string ranked_row(const SelfPlayRow& r, const PositionResult& pr, const selfplay::RankedPosition& rp) {
  const selfplay::Interval shrunk{rp.shrunk, rp.lo, rp.hi};
  return absl::StrCat(
      "<tr><td>", rp.rank, "</td><td>", html(r.key.id), "</td><td class=\"br\">", backrank(r.key.sp), "</td><td>",
      count(r.counts.games()), "</td><td>", fixed(pr.score.value), " ", interval_text(pr.score), "</td><td>",
      fixed(rp.shrunk), " ", interval_text(shrunk), "</td><td>", interval_bar(shrunk), "</td><td>",
      rp.rank_lo ? absl::StrCat(rp.rank_lo, "&ndash;", rp.rank_hi) : std::string("&ndash;"), "</td></tr>\n");
}

std::string extremes_section(const SelfPlayTable& t, const SelfPlayAnalysis& a) {
  const selfplay::Ranking& r = a.ranking;
  std::string b = "<section id=\"extremes\"><h2>Best and worst positions for White</h2>";
  if (r.ranked() == 0) {
    absl::StrAppend(&b, "<p class=\"verdict\">Not ranked: a ranking needs at least ", selfplay::kMinPositionsToRank,
                    " positions with ", r.min_games, " games or more (the most any position has is ",
                    count(r.most_games),
                    "). With fewer, a list of the best and worst is a list of luck.</p></section>\n");
    return b;
  }
  const size_t k = std::min(kExtremes, (r.ranked() + 1) / 2);
  const std::string header =
      "<thead><tr><th>rank</th><th>position</th><th>back rank</th><th>games</th><th>score [95%]</th>"
      "<th>shrunk [95%]</th><th class=\"bar\">0 &hellip; 1</th><th>rank 95%</th></tr></thead>";
  absl::StrAppend(&b,
                  "<p class=\"verdict\">Ranked by White's score shrunk toward the distribution of all positions' "
                  "scores: mean ",
                  fixed(r.mean), " [", fixed(r.mean_lo), ", ", fixed(r.mean_hi),
                  "], true spread (standard deviation) &tau; = ", fixed(r.tau), " [", fixed(r.tau_lo), ", ",
                  fixed(r.tau_hi), "]. ", count(int64_t(r.ranked())), " of ", count(int64_t(t.rows.size())),
                  " positions have ", r.min_games, " games or more and are ranked.</p><div class=\"pair\">",
                  "<table class=\"positions\" id=\"best\"><caption>Best ", k, "</caption>", header, "<tbody>");
  for (size_t i = 0; i < k; ++i) {
    const size_t row = r.order[i];
    b += ranked_row(t.rows[row], a.positions[row], r.positions[row]);
  }
  const size_t nw = std::min(k, r.ranked() - k);
  absl::StrAppend(&b, "</tbody></table><table class=\"positions\" id=\"worst\"><caption>Worst ", nw, "</caption>",
                  header, "<tbody>");
  for (size_t i = r.ranked() - nw; i < r.ranked(); ++i) {
    const size_t row = r.order[i];
    b += ranked_row(t.rows[row], a.positions[row], r.positions[row]);
  }
  b += "</tbody></table></div><p class=\"legend\">The shrunk score is the estimate to rank by: a position with few "
       "games or an extreme score is pulled toward the rest, by as much as its noise warrants. The rank interval "
       "is the ranks the position can plausibly hold (95%, one position at a time); wide intervals mean the order "
       "of the list is mostly noise.</p></section>\n";
  return b;
}

// +0.148, &minus;0.115 (a real minus sign), 0.000.
std::string signed_fixed(double x) {
  if (std::isnan(x)) return "&ndash;";
  std::string digits = absl::StrFormat("%.3f", std::abs(x));
  if (digits == "0.000") return digits;
  return absl::StrCat(x < 0 ? "&minus;" : "+", digits);
}

// Mirror pairs: the ones closest to differing first.
std::string mirror_section(const SelfPlayAnalysis& a) {
  const selfplay::MirrorPairs& m = a.mirrors;
  if (m.pairs.empty()) return "";
  std::string b = "<section id=\"mirrors\"><h2>Mirror pairs</h2>";
  if (m.tested == 0) {
    absl::StrAppend(&b, "<p class=\"verdict\">Not compared: ", count(int64_t(m.pairs.size())),
                    " pair(s) of a position and its mirror image have games on both sides, but a pair is compared "
                    "once both have ",
                    m.min_games, " games or more.</p></section>\n");
    return b;
  }
  const bool differ = m.p < 0.05;
  absl::StrAppend(&b, "<p class=\"verdict\">", count(m.tested), " of ", selfplay::kMirrorPairs,
                  " pairs of a position and its mirror image compared: ",
                  differ ? "some pairs differ" : "no sign that mirror images differ",
                  " (&chi;&sup2; = ", fixed(m.chi_square, 1), " on ", m.dof, " degrees of freedom, ", p_is(m.p), "); ",
                  m.significant_holm, " pair(s) differ after Holm's correction, ", m.significant_bh,
                  " after Benjamini&ndash;Hochberg's (5%).</p>");
  std::vector<const selfplay::MirrorPair*> tested;
  for (const selfplay::MirrorPair& p : m.pairs)
    if (p.tested) tested.push_back(&p);
  std::stable_sort(tested.begin(), tested.end(), [](auto* x, auto* y) { return x->p < y->p; });
  const size_t k = std::min(kExtremes, tested.size());
  absl::StrAppend(&b, "<table class=\"positions\" id=\"mirror-pairs\"><caption>", k == tested.size() ? "The " : "",
                  k == tested.size() ? "" : absl::StrCat(k, " of "), count(int64_t(tested.size())),
                  " pairs, smallest p first</caption><thead><tr><th>position</th><th>mirror</th><th>games</th>"
                  "<th>scores</th><th>difference [95%]</th><th>p</th><th>Holm</th><th>BH</th></tr></thead><tbody>");
  const auto side = [](int sp) { return absl::StrCat(sp, " <span class=\"br\">", backrank(sp), "</span>"); };
  for (size_t i = 0; i < k; ++i) {
    const selfplay::MirrorPair& p = *tested[i];
    absl::StrAppend(&b, "<tr><td>", side(p.sp), "</td><td>", side(p.mirror), "</td><td>", count(p.a.games()), " / ",
                    count(p.b.games()), "</td><td>", fixed(p.a.score().value), " / ", fixed(p.b.score().value),
                    "</td><td>", signed_fixed(p.difference), " [", signed_fixed(p.lo), ", ", signed_fixed(p.hi), "]",
                    "</td><td>", p_value(p.p), "</td><td>", p_value(p.p_holm), "</td><td>", p_value(p.p_bh),
                    "</td></tr>\n");
  }
  b += "</tbody></table><p class=\"legend\">A mirror image swaps the king's side and the queen's, castling with "
       "them. The difference is White's score at the position minus at its mirror. With 480 pairs some small p-values "
       "come from luck alone: the corrected columns say which survive that.</p></section>\n";
  return b;
}

// Reference.
std::string reference_section(const SelfPlayTable& t, const SelfPlayAnalysis& a, const ReportOptions& o,
                              const SelfPlayTable* ref) {
  std::string b;
  if (a.reference && ref) {
    const ReferenceComparison& c = *a.reference;
    const std::string name = o.reference_name.empty() ? "the reference" : o.reference_name;
    absl::StrAppend(&b, "<section id=\"reference\"><h2>Against ", html(name), "</h2><p>", c.points.size(),
                    " positions in both tables. Pearson correlation of the scores <b>r = ", fixed(c.pearson),
                    "</b> (95%: ", fixed(c.pearson_lo), " &hellip; ", fixed(c.pearson_hi),
                    ", Fisher's z); Spearman's rank correlation <b>&rho; = ", fixed(c.spearman), "</b>. ",
                    c.disagreements,
                    " positions disagree beyond their intervals (the two 95% intervals do not overlap).</p>",
                    "<div class=\"chart\"><canvas id=\"scatter\"></canvas></div>");
    if (c.disagreements) {
      b +=
          "<table class=\"positions\" id=\"disagreements\"><thead><tr><th>position</th><th>back rank</th><th>games</th>"
          "<th>score</th><th>95% interval</th><th>reference games</th><th>reference score</th><th>95% interval</th>"
          "</tr></thead><tbody>";
      for (const ReferencePoint& p : c.points) {
        if (!p.disagree) continue;
        const SelfPlayRow& r = t.rows[p.row];
        absl::StrAppend(&b, "<tr><td>", html(r.key.id), "</td><td class=\"br\">", backrank(r.key.sp), "</td><td>",
                        count(r.counts.games()), "</td><td>", fixed(p.score.value), "</td><td>", interval_text(p.score),
                        "</td><td>", count(ref->rows[p.reference_row].counts.games()), "</td><td>",
                        fixed(p.reference_score.value), "</td><td>", interval_text(p.reference_score), "</td></tr>");
      }
      b += "</tbody></table>";
    }
    b += "</section>\n";
  }
  return b;
}

// What a verdict means, for the table's legend and the counts.
std::string verdict_meaning(const std::string& v) {
  if (v == "above") return "interval wholly above the band";
  if (v == "below") return "interval wholly below the band";
  if (v == "inside") return "interval inside the band";
  if (v == "narrow") return "interval narrower than the target width";
  if (v == "cap") return "undecided at the most games a position may play";
  return "undecided, still playing";
}

// What a band run's verdicts say of its band, which a CSV does not record: a position inside it
// puts the lower edge at or below its interval's lower end and the upper edge at or above its
// upper end; one below it, the lower edge above its upper end; one above it, the upper edge
// below its lower end.
std::string band_bounds(const SelfPlayTable& t, const AdaptiveSummary& s) {
  if (s.mode != "band") return "";
  double lo_above = 0, lo_at_most = 1, hi_at_least = 0, hi_below = 1;
  bool inside = false, below = false, above = false;
  for (const SelfPlayRow& r : t.rows) {
    if (r.verdict == "inside") {
      inside = true;
      lo_at_most = std::min(lo_at_most, r.anytime_lo);
      hi_at_least = std::max(hi_at_least, r.anytime_hi);
    } else if (r.verdict == "below") {
      below = true;
      lo_above = std::max(lo_above, r.anytime_hi);
    } else if (r.verdict == "above") {
      above = true;
      hi_below = std::min(hi_below, r.anytime_lo);
    }
  }
  const auto edge = [](bool at_most, double at_most_value, bool above_known, double above_value) -> std::string {
    if (at_most && above_known) return absl::StrCat("between ", fixed(above_value), " and ", fixed(at_most_value));
    if (at_most) return absl::StrCat("at most ", fixed(at_most_value));
    if (above_known) return absl::StrCat("above ", fixed(above_value));
    return "";
  };
  // Lower edge: above the below positions' upper ends, at most the inside ones' lower ends; the
  // upper edge: at least the inside ones' upper ends, below the above ones' lower ends.
  const std::string lower = edge(inside, lo_at_most, below, lo_above);
  std::string upper;
  if (inside && above)
    upper = absl::StrCat("between ", fixed(hi_at_least), " and ", fixed(hi_below));
  else if (inside)
    upper = absl::StrCat("at least ", fixed(hi_at_least));
  else if (above)
    upper = absl::StrCat("below ", fixed(hi_below));
  std::vector<std::string> parts;
  if (!lower.empty()) parts.push_back(absl::StrCat("its lower edge ", lower));
  if (!upper.empty()) parts.push_back(absl::StrCat("its upper edge ", upper));
  return absl::StrCat(" (the band is not recorded either; the decided positions' intervals put ",
                      absl::StrJoin(parts, " and "), ")");
}

// Adaptive allocation: the rule, the verdicts, the games they took, the anytime intervals.
std::string adaptive_section(const SelfPlayTable& t, const SelfPlayAnalysis& a) {
  if (!t.adaptive) return "";
  const AdaptiveSummary s = summarise_adaptive(t, a);
  std::string b = "<section id=\"adaptive\"><h2>Adaptive allocation</h2><p class=\"verdict\">";
  if (!t.adaptive_rule.empty())
    absl::StrAppend(&b, "Each position played in batches until its question was answered: <b>", html(t.adaptive_rule),
                    "</b>.");
  else if (!s.mode.empty())
    absl::StrAppend(&b,
                    "Each position played in batches until its question was answered. The rule is not recorded "
                    "in the table; its verdicts say it was a <b>",
                    s.mode, "</b>", band_bounds(t, s), ".");
  else
    b += "Each position played in batches until its question was answered. The rule is not recorded in the table, "
         "and no verdict says which kind it was.";
  if (!t.engine.empty()) absl::StrAppend(&b, " Engine: <b>", html(t.engine), "</b>.");
  b += "</p><div class=\"pair\"><table class=\"positions\" id=\"verdicts\"><caption>Verdicts</caption><thead><tr>"
       "<th>verdict</th><th>positions</th><th class=\"text\">meaning</th></tr></thead><tbody>";
  for (const auto& [v, n] : s.verdicts)
    absl::StrAppend(&b, "<tr data-verdict=\"", v, "\"><td class=\"text\">", v, "</td><td>", n,
                    "</td><td class=\"text\">", verdict_meaning(v), "</td></tr>");
  absl::StrAppend(&b, "</tbody></table><table class=\"positions\" id=\"spent\"><caption>Games played</caption><tbody>",
                  "<tr><th>in all</th><td>", count(s.played), "</td></tr><tr><th>fewest a position</th><td>",
                  count(s.min_played), "</td></tr><tr><th>median</th><td>",
                  fixed(s.median_played, std::floor(s.median_played) == s.median_played ? 0 : 1),
                  "</td></tr><tr><th>most a position</th><td>", count(s.max_played),
                  "</td></tr></tbody></table></div>");
  if (s.max_played > 0)
    absl::StrAppend(&b, "<p>Playing every position as many games as the most-played one (", count(s.max_played),
                    ") would have taken ", count(s.max_played * int64_t(t.rows.size())), " games; this run played ",
                    fixed(100.0 * double(s.played) / double(s.max_played * int64_t(t.rows.size())), 0),
                    "% of that.</p>");
  absl::StrAppend(
      &b,
      "<p class=\"legend\">The <b>anytime</b> 95% interval is a confidence sequence: the chance that it ever misses "
      "a position's true score, at any of the looks after each batch, is at most 5%. So the run could stop each "
      "position when its interval answered the question, and the intervals it stopped with keep the 95% promise. "
      "The fixed-count interval of the other columns is valid only for a number of games chosen in advance and read "
      "once. The price of looking at any time is width: here the anytime intervals are a median ",
      fixed(s.median_width_ratio, 2), " times as wide as the fixed-count ones of the same games.</p>",
      "<div class=\"scroll\"><table class=\"positions sortable\" id=\"anytime\"><caption>Positions, decided ones "
      "first (click a heading to sort)</caption><thead><tr><th>position</th><th>back rank</th><th>played</th>"
      "<th>counted</th><th>score</th><th>95% fixed-count</th><th>95% anytime</th><th class=\"bar\">anytime, 0 &hellip; "
      "1</th><th>width</th><th class=\"text\">verdict</th></tr></thead><tbody>\n");
  const size_t shown = std::min(s.order.size(), kMaxTableRows);
  for (size_t k = 0; k < shown; ++k) {
    const size_t i = s.order[k];
    const SelfPlayRow& r = t.rows[i];
    const selfplay::Interval anytime{a.positions[i].score.value, r.anytime_lo, r.anytime_hi};
    const size_t verdict_rank =
        size_t(std::find(std::begin(kVerdictOrder), std::end(kVerdictOrder), r.verdict) - std::begin(kVerdictOrder));
    absl::StrAppend(&b, "<tr><td>", html(r.key.id), "</td><td class=\"br\">", backrank(r.key.sp), "</td><td>",
                    count(r.played()), "</td><td>", count(r.counts.games()), "</td><td>",
                    fixed(a.positions[i].score.value), "</td><td>", interval_text(a.positions[i].score), "</td><td>",
                    interval_text(anytime), "</td><td>", interval_bar(anytime), "</td><td>",
                    fixed(r.anytime_hi - r.anytime_lo), "</td><td class=\"text\" data-sort=\"", verdict_rank, "\">",
                    r.verdict, "</td></tr>\n");
  }
  b += "</tbody></table></div></section>\n";
  return b;
}

// Evaluations beside the scores (report/evaluation.h): the section's HTML, and its chart's data
// (a JSON member, "evaluations":{...}) in *data.
constexpr size_t kMaxDisagreements = 20;

std::string cp_text(const EvalEntry& e) {
  if (e.mate > 0) return absl::StrCat("mate ", e.mate);
  if (e.mate < 0) return absl::StrCat("mated ", -e.mate);
  return absl::StrFormat("%+.0f", e.cp);
}

// Mates rank beyond every centipawn score (for rank correlations only).
double rank_value(const EvalEntry& e) { return e.mate != 0 ? (e.mate > 0 ? 1e6 - e.mate : -1e6 - e.mate) : e.cp; }

std::string evaluation_section(const SelfPlayTable& t, const SelfPlayAnalysis& a, const EvaluationTable& ev,
                               const std::string& name, std::string* data) {
  // The table's rows by start position, and each engine's evaluation of each.
  std::map<int, size_t> row_of;
  for (size_t i = 0; i < t.rows.size(); ++i)
    if (t.rows[i].key.sp >= 0 && t.rows[i].counts.games() > 0) row_of[t.rows[i].key.sp] = i;
  std::map<std::string, std::map<int, const EvalEntry*>> by_engine;
  for (const EvalEntry& e : ev.rows) by_engine[e.engine][e.sp] = &e;
  const auto games_of = [&](size_t i) {
    const SelfPlayRow& r = t.rows[i];
    return std::isfinite(r.effective_games) ? r.effective_games : double(r.counts.games());
  };
  size_t matched = 0;
  for (const auto& [sp, i] : row_of)
    for (const std::string& engine : ev.engines) matched += by_engine[engine].count(sp);
  std::string b = absl::StrCat("<section id=\"evaluations\"><h2>Evaluations beside the games</h2><p>", html(name), ": ",
                               ev.rows.size(), " evaluations by ", ev.engines.size(),
                               ev.engines.size() == 1 ? " engine (" : " engines (",
                               html(absl::StrJoin(ev.engines, ", ")), "); ", matched,
                               " of them of positions this table has games of. Scores are White's (White moves first "
                               "in every start position).</p>");
  if (matched == 0) return b + "<p class=\"note\">No position has both games and an evaluation.</p></section>\n";

  // Calibration and agreement with the games, engine by engine.
  struct Fit {
    LogisticFit fit;
    RankCorrelation with_games;
  };
  std::map<std::string, Fit> fits;
  b += "<h3>Centipawns and score</h3><table class=\"positions\" id=\"calibration\"><thead><tr><th>engine</th>"
       "<th>positions</th><th>a (logit at 0 cp)</th><th>b (per pawn)</th><th>score at 0 cp</th><th>cp for 0.5</th>"
       "<th>deviance (df)</th><th>null deviance</th><th>Spearman &rho; with score (95%)</th></tr></thead><tbody>";
  for (const std::string& engine : ev.engines) {
    std::vector<double> cp, score, games, rank_x, rank_y;
    for (const auto& [sp, i] : row_of) {
      auto it = by_engine[engine].find(sp);
      if (it == by_engine[engine].end()) continue;
      rank_x.push_back(rank_value(*it->second));
      rank_y.push_back(a.positions[i].score.value);
      if (it->second->mate != 0) continue;
      cp.push_back(it->second->cp);
      score.push_back(a.positions[i].score.value);
      games.push_back(games_of(i));
    }
    Fit& f = fits[engine];
    f.fit = fit_logistic(cp, score, games);
    f.with_games = spearman_interval(rank_x, rank_y);
    const LogisticFit& l = f.fit;
    absl::StrAppend(&b, "<tr><td>", html(engine), "</td><td>", rank_x.size(), "</td>");
    if (l.ok)
      absl::StrAppend(&b, "<td>", fixed(l.a), " &plusmn; ", fixed(l.se_a), "</td><td>", fixed(l.b), " &plusmn; ",
                      fixed(l.se_b), "</td><td>", fixed(l.score_at(0)), "</td><td>",
                      std::abs(l.b) > 1e-9 ? absl::StrFormat("%+.0f", -100 * l.a / l.b) : "&ndash;", "</td><td>",
                      fixed(l.deviance, 1), " (", l.n - 2, ")</td><td>", fixed(l.null_deviance, 1), "</td>");
    else
      b += "<td colspan=\"6\">no fit (fewer than 3 positions with games and a centipawn score, or one score)</td>";
    absl::StrAppend(&b, "<td>", fixed(f.with_games.rho),
                    std::isfinite(f.with_games.lo)
                        ? absl::StrCat(" (", fixed(f.with_games.lo), " &hellip; ", fixed(f.with_games.hi), ")")
                        : "",
                    "</td></tr>");
  }
  b += "</tbody></table><p class=\"legend\">White's expected score at x centipawns is 1 / (1 + e<sup>&minus;(a + b "
       "x/100)</sup>), fitted by maximum likelihood to each position's points as binomial trials weighted by its "
       "games (its effective number of games where the table has it); &plusmn; one standard error. A deviance far "
       "above its degrees of freedom means the positions' scores scatter around the curve by more than their games' "
       "noise: the evaluation does not tell all. Mates are left out of the fit and ranked beyond every centipawn "
       "score. Spearman's &rho; with a 95% interval (Fisher's z, Bonett&ndash;Wright variance).</p>"
       "<div class=\"chart\"><canvas id=\"eval-scatter\"></canvas></div>";

  // Agreement between engines.
  if (ev.engines.size() > 1) {
    b += "<h3>Agreement between engines</h3><table class=\"positions\" id=\"engine-agreement\"><thead><tr>"
         "<th>engines</th><th>positions</th><th>Spearman &rho;</th><th>95% interval</th><th>mean |&Delta;cp|</th>"
         "<th>same best move</th></tr></thead><tbody>";
    for (size_t x = 0; x < ev.engines.size(); ++x)
      for (size_t y = x + 1; y < ev.engines.size(); ++y) {
        std::vector<double> vx, vy;
        double diff = 0;
        size_t cp_pairs = 0, same = 0;
        for (const auto& [sp, ex] : by_engine[ev.engines[x]]) {
          auto ey = by_engine[ev.engines[y]].find(sp);
          if (ey == by_engine[ev.engines[y]].end()) continue;
          vx.push_back(rank_value(*ex));
          vy.push_back(rank_value(*ey->second));
          same += ex->best_move == ey->second->best_move;
          if (ex->mate == 0 && ey->second->mate == 0) {
            diff += std::abs(ex->cp - ey->second->cp);
            ++cp_pairs;
          }
        }
        const RankCorrelation r = spearman_interval(vx, vy);
        absl::StrAppend(&b, "<tr><td>", html(ev.engines[x]), " &ndash; ", html(ev.engines[y]), "</td><td>", vx.size(),
                        "</td><td>", fixed(r.rho), "</td><td>",
                        std::isfinite(r.lo) ? absl::StrCat(fixed(r.lo), " &hellip; ", fixed(r.hi)) : "&ndash;",
                        "</td><td>", cp_pairs ? fixed(diff / double(cp_pairs), 1) : "&ndash;", "</td><td>",
                        vx.empty() ? "&ndash;" : absl::StrCat(same, " of ", vx.size()), "</td></tr>");
      }
    b += "</tbody></table><p class=\"legend\">Over all the positions both engines evaluated (games or not). "
         "Mean |&Delta;cp| over those where neither found a mate.</p>";
  }

  // Where evaluation and games disagree: the fitted score outside the games' 95% interval.
  struct Miss {
    double by;
    size_t row;
    const EvalEntry* e;
    double expected;
  };
  std::vector<Miss> misses;
  size_t tried = 0;
  for (const std::string& engine : ev.engines) {
    const LogisticFit& l = fits[engine].fit;
    if (!l.ok) continue;
    for (const auto& [sp, i] : row_of) {
      auto it = by_engine[engine].find(sp);
      if (it == by_engine[engine].end() || it->second->mate != 0) continue;
      ++tried;
      const selfplay::Interval& s = a.positions[i].score;
      const double expected = l.score_at(it->second->cp);
      const double by = expected > s.hi ? expected - s.hi : expected < s.lo ? s.lo - expected : 0;
      if (by > 0) misses.push_back({by, i, it->second, expected});
    }
  }
  std::sort(misses.begin(), misses.end(), [](const Miss& x, const Miss& y) { return x.by > y.by; });
  absl::StrAppend(&b, "<h3>Where evaluation and games disagree</h3><p>", misses.size(), " of ", tried,
                  " evaluations put White's expected score (from its engine's fitted curve) outside the games' 95% "
                  "interval",
                  misses.size() > kMaxDisagreements ? absl::StrCat("; the ", kMaxDisagreements, " farthest") : "",
                  ". About 5% would by chance alone if the curve told each position's score; the curve is fitted "
                  "to these same scores, which pulls it toward them.</p>");
  if (!misses.empty()) {
    b += "<table class=\"positions\" id=\"eval-disagreements\"><thead><tr><th>position</th><th>back rank</th>"
         "<th>games</th><th>score</th><th>95% interval</th><th>engine</th><th>cp</th><th>expected score</th>"
         "<th>outside by</th><th>best move</th></tr></thead><tbody>";
    for (size_t k = 0; k < std::min(misses.size(), kMaxDisagreements); ++k) {
      const Miss& m = misses[k];
      const SelfPlayRow& r = t.rows[m.row];
      absl::StrAppend(&b, "<tr><td>", html(r.key.id), "</td><td class=\"br\">", backrank(r.key.sp), "</td><td>",
                      count(r.counts.games()), "</td><td>", fixed(a.positions[m.row].score.value), "</td><td>",
                      interval_text(a.positions[m.row].score), "</td><td>", html(m.e->engine), "</td><td>",
                      cp_text(*m.e), "</td><td>", fixed(m.expected), "</td><td>", fixed(m.by), "</td><td>",
                      html(m.e->best_move), "</td></tr>");
    }
    b += "</tbody></table>";
  }

  // Every position with games and evaluations, best score for White first.
  b += "<h3>Positions</h3><table class=\"positions sortable\" id=\"eval-positions\"><thead><tr><th>position</th>"
       "<th>back rank</th><th>games</th><th>score</th><th>95% interval</th>";
  for (const std::string& engine : ev.engines)
    absl::StrAppend(&b, "<th>", html(engine), " cp</th><th>", html(engine), " best</th>");
  b += "</tr></thead><tbody>";
  for (size_t i : a.by_score) {
    const SelfPlayRow& r = t.rows[i];
    if (r.key.sp < 0 || !row_of.count(r.key.sp)) continue;
    bool any = false;
    for (const std::string& engine : ev.engines) any |= by_engine[engine].count(r.key.sp) > 0;
    if (!any) continue;
    absl::StrAppend(&b, "<tr><td>", html(r.key.id), "</td><td class=\"br\">", backrank(r.key.sp), "</td><td>",
                    count(r.counts.games()), "</td><td>", fixed(a.positions[i].score.value), "</td><td>",
                    interval_text(a.positions[i].score), "</td>");
    for (const std::string& engine : ev.engines) {
      auto it = by_engine[engine].find(r.key.sp);
      if (it == by_engine[engine].end()) {
        b += "<td></td><td></td>";
        continue;
      }
      absl::StrAppend(&b, "<td data-sort=\"", json_number(rank_value(*it->second)), "\">", cp_text(*it->second),
                      "</td><td title=\"", html(it->second->pv), "\">", html(it->second->best_move), "</td>");
    }
    b += "</tr>";
  }
  b += "</tbody></table><p class=\"legend\">A best move's cell shows its principal variation when pointed at.</p>"
       "</section>\n";

  // The chart: each engine's positions (cp, score) and its fitted curve.
  double lo = 0, hi = 0;
  for (const EvalEntry& e : ev.rows)
    if (e.mate == 0 && row_of.count(e.sp)) lo = std::min(lo, e.cp), hi = std::max(hi, e.cp);
  *data = "\"evaluations\":{\"engines\":[";
  for (size_t k = 0; k < ev.engines.size(); ++k) {
    const std::string& engine = ev.engines[k];
    absl::StrAppend(data, k ? "," : "", "{\"name\":", json_string(engine), ",\"points\":[");
    bool first = true;
    for (const auto& [sp, i] : row_of) {
      auto it = by_engine[engine].find(sp);
      if (it == by_engine[engine].end() || it->second->mate != 0) continue;
      absl::StrAppend(data, first ? "" : ",", "{\"x\":", json_number(it->second->cp),
                      ",\"y\":", json_number(a.positions[i].score.value), ",\"id\":", json_string(t.rows[i].key.id),
                      "}");
      first = false;
    }
    *data += "],\"curve\":[";
    const LogisticFit& l = fits[engine].fit;
    if (l.ok)
      for (int s = 0; s <= 40; ++s) {
        const double x = lo + (hi - lo) * s / 40;
        absl::StrAppend(data, s ? "," : "", "{\"x\":", json_number(x), ",\"y\":", json_number(l.score_at(x)), "}");
      }
    *data += "]}";
  }
  *data += "]}";
  return b;
}

// All positions.
std::string positions_section(const SelfPlayTable& t, const SelfPlayAnalysis& a) {
  std::string b;
  const size_t shown = std::min(a.by_score.size(), kMaxTableRows);
  absl::StrAppend(&b, "<section id=\"all\"><h2>All positions by score</h2>",
                  shown < a.by_score.size() ? absl::StrCat("<p class=\"note\">The first ", shown, " of ",
                                                           a.by_score.size(), " positions.</p>")
                                            : "",
                  "<table class=\"positions\" id=\"positions\">", positions_header(true), "<tbody>\n");
  for (size_t i = 0; i < shown; ++i) b += position_row(t.rows[a.by_score[i]], a.positions[a.by_score[i]], i + 1, true);
  b += "</tbody></table></section>\n";
  return b;
}

std::string selfplay_body(const SelfPlayTable& t, const SelfPlayAnalysis& a, const ReportOptions& o,
                          const SelfPlayTable* ref, const std::string& title, const std::string& evaluations) {
  std::string b = absl::StrCat("<header><h1>", html(title), "</h1></header>\n<main>\n");
  b += summary_section(a);
  b += adaptive_section(t, a);
  b += tests_section(t, a);
  b += heatmap_section(t);
  b += histogram_section();
  b += groups_section(a);
  b += extremes_section(t, a);
  b += mirror_section(a);
  b += reference_section(t, a, o, ref);
  b += evaluations;
  b += positions_section(t, a);
  // Terminations, as metadata rows.
  std::string extra;
  if (!t.termination_names.empty()) {
    std::string terms;
    for (size_t i = 0; i < t.termination_names.size(); ++i) {
      int64_t sum = 0;
      for (const SelfPlayRow& r : t.rows) sum += i < r.terminations.size() ? r.terminations[i] : 0;
      if (sum) absl::StrAppend(&terms, terms.empty() ? "" : ", ", t.termination_names[i], " ", sum);
    }
    absl::StrAppend(&extra, "<tr><th>terminations</th><td>", html(terms), "</td></tr>");
  }
  b += metadata_section(o.metadata, extra);

  b += kSelfPlayMethods;
  return b +
         "</main>\n<footer>Made by c960 report. Charts: Chart.js 3.9.1 (MIT licence), included in this file."
         "</footer>";
}

std::string selfplay_data(const SelfPlayTable& t, const SelfPlayAnalysis& a, const ReportOptions& o,
                          const std::string& evaluations) {
  // Colours centred on the overall score; each half runs from there to the farthest score on its
  // side (at least 0.02 away), so that no position's colour is cut off at the scale's end.
  const double mid = std::isnan(a.total_score.value) ? 0.5 : a.total_score.value;
  double low = mid - 0.02, high = mid + 0.02;
  for (size_t i : a.by_score) {
    low = std::min(low, a.positions[i].score.value);
    high = std::max(high, a.positions[i].score.value);
  }
  std::string d = absl::StrCat("{\"kind\":\"selfplay\",\"heatmap\":{\"domain\":[", json_number(std::max(0.0, low)), ",",
                               json_number(mid), ",", json_number(std::min(1.0, high)),
                               "],\"palette\":\"diverging\",\"legend\":\"White's score\",\"rows\":[");
  bool first = true;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const SelfPlayRow& r = t.rows[i];
    if (r.key.sp < 0) continue;
    const selfplay::ResultCounts& c = r.counts;
    const selfplay::Interval& s = a.positions[i].score;
    std::vector<std::string> lines = {absl::StrCat(r.key.sp, " ", backrank(r.key.sp))};
    if (c.games()) {
      lines.push_back(
          absl::StrCat("games ", c.games(), " (W ", c.white_wins, ", D ", c.draws, ", L ", c.black_wins, ")"));
      lines.push_back(absl::StrFormat("score %.3f, 95%% interval %.3f-%.3f", s.value, s.lo, s.hi));
    } else {
      lines.push_back("no games");
    }
    absl::StrAppend(&d, first ? "" : ",", "\n{\"sp\":", r.key.sp, ",\"value\":", json_number(s.value), ",\"lines\":[");
    for (size_t k = 0; k < lines.size(); ++k) absl::StrAppend(&d, k ? "," : "", json_string(lines[k]));
    d += "]}";
    first = false;
  }
  d += "]},\n\"histogram\":{\"edges\":[";
  const Histogram& h = a.histogram;
  for (size_t i = 0; i < h.edges.size(); ++i) absl::StrAppend(&d, i ? "," : "", json_number(h.edges[i]));
  d += "],\"observed\":[";
  for (size_t i = 0; i < h.observed.size(); ++i) absl::StrAppend(&d, i ? "," : "", json_number(h.observed[i]));
  d += "],\"expected\":[";
  for (size_t i = 0; i < h.expected.size(); ++i) absl::StrAppend(&d, i ? "," : "", json_number(h.expected[i]));
  d += "]}";
  if (a.reference) {
    absl::StrAppend(
        &d, ",\n\"scatter\":{\"x\":\"score\",\"y\":",
        json_string(absl::StrCat("score in ", o.reference_name.empty() ? "the reference" : o.reference_name)),
        ",\"points\":[");
    for (size_t i = 0; i < a.reference->points.size(); ++i) {
      const ReferencePoint& p = a.reference->points[i];
      absl::StrAppend(&d, i ? "," : "", "{\"x\":", json_number(p.score.value),
                      ",\"y\":", json_number(p.reference_score.value), ",\"id\":", json_string(t.rows[p.row].key.id),
                      ",\"disagree\":", p.disagree ? "true" : "false", "}");
    }
    d += "]}";
  }
  if (!evaluations.empty()) absl::StrAppend(&d, ",\n", evaluations);
  return d + "}";
}

// --- two-engine match ---

// How the match page computes what it shows.
constexpr const char* kMatchMethods = R"(<section id="methods"><h2>Methods</h2><ul>
<li><b>Pairs</b>: each opening is played twice with colours reversed (A White, then B White), and the pair is
counted once by A's points in it: LL 0, LD &frac12;, DD or WL 1, WD 1&frac12;, WW 2 (the pentanomial counts). A
pair that repeats an earlier one move for move, or whose partner is missing or not evidence, is not counted.</li>
<li><b>Score, Elo, nElo, LOS</b>: A's mean score a game over the pairs, its 95% interval from the pairs' variance
(normal approximation; the colour reversal makes it smaller than the games' variance), logistic Elo of the score
and of the interval's ends, normalized Elo ((score &minus; &frac12;) / &radic;(2 var) &times; 800 / ln 10, as
fastchess gives it) and the likelihood of superiority (normal approximation).</li>
<li><b>Which positions favour which engine</b>: per position, the exact two-sided sign test on the pairs each
engine won (more than one of the pair's two points), tied pairs left out; Holm's step-down correction over the
positions (family-wise error: a position listed under Holm favours its engine at 5% for the whole table) and
Benjamini&ndash;Hochberg's (false discovery rate: at most 5% of the positions listed are expected to be wrong).</li>
<li><b>Does the difference depend on the position?</b> The positions' mean pair scores against the match's, with
the match's pair variance pooled: &sum; n<sub>k</sub> (&mu;<sub>k</sub> &minus; &mu;)&sup2; / var against
chi-square with (positions with pairs &minus; 1) degrees of freedom. With few pairs a position the chi-square
distribution is a rough guide.</li>
<li><b>SPRT</b>: a match run with --sprt stops when its log-likelihood ratio crosses a bound. A CSV does not
record the test; from a match's JSON (--format json) the report takes the rule and computes the ratio from the
pentanomial counts (selfplay/sprt.h).</li></ul></section>
)";

// "+12.3", "&minus;4.5" (a real minus sign), "+&infin;".
std::string signed_elo(double x) {
  if (std::isnan(x)) return "&ndash;";
  if (std::isinf(x)) return x > 0 ? "+&infin;" : "&minus;&infin;";
  std::string digits = absl::StrFormat("%.1f", std::abs(x));
  if (digits == "0.0") return digits;
  return absl::StrCat(x < 0 ? "&minus;" : "+", digits);
}

// 12.3%; a probability that rounds to 0% or 100% without being it is shown as below 0.1% or above 99.9%.
std::string percent(double x) {
  if (std::isnan(x)) return "&ndash;";
  if (x > 0.9995 && x < 1) return "&gt;99.9%";
  if (x > 0 && x < 0.0005) return "&lt;0.1%";
  return absl::StrCat(fixed(100 * x, 1), "%");
}

constexpr const char* kPentaNames[selfplay::kPentanomialCells] = {"LL", "LD", "DD or WL", "WD", "WW"};

std::string match_position_row(const MatchRow& r, const MatchAnalysis& a, size_t i) {
  const selfplay::MatchFigures& f = a.positions[i];
  const selfplay::Interval score{f.score, f.score_lo, f.score_hi};
  std::string out = absl::StrCat("<tr><td>", html(r.key.id), "</td><td class=\"br\">", backrank(r.key.sp), "</td><td>",
                                 count(f.pairs), "</td>");
  for (int64_t c : r.penta) absl::StrAppend(&out, "<td>", count(c), "</td>");
  absl::StrAppend(&out, "<td>", count(f.a_pairs), " / ", count(f.b_pairs), "</td><td>", fixed(f.score), "</td><td>",
                  interval_text(score), "</td><td>", interval_bar(score), "</td><td>", p_value(a.tests.p[i]),
                  "</td><td>", p_value(a.tests.holm[i]), "</td><td>", p_value(a.tests.bh[i]),
                  "</td><td class=\"text\">", selfplay::match_favours(f, a.tests.holm[i]), "</td></tr>\n");
  return out;
}

std::string match_positions_header() {
  std::string out = "<thead><tr><th>position</th><th>back rank</th><th>pairs</th>";
  for (const char* n : kPentaNames) absl::StrAppend(&out, "<th>", n, "</th>");
  return out +
         "<th>pairs won A / B</th><th>A's score</th><th>95% interval</th><th class=\"bar\">0 &hellip; 1</th>"
         "<th>sign p</th><th>Holm</th><th>BH</th><th class=\"text\">favours</th></tr></thead>";
}

std::string match_body(const MatchTable& t, const MatchAnalysis& a, const ReportOptions& o, const std::string& title) {
  const std::string name_a = t.engine_a.empty() ? "A" : t.engine_a, name_b = t.engine_b.empty() ? "B" : t.engine_b;
  std::string b = absl::StrCat("<header><h1>", html(title), "</h1></header>\n<main>\n");
  const selfplay::MatchFigures& f = a.figures;
  if (t.engine_a.empty())
    b += "<p class=\"engines\">Engine <b>A</b> is the one of <code>--engine</code>, <b>B</b> the one of "
         "<code>--opponent</code> (the table does not name them). ";
  else
    absl::StrAppend(&b, "<p class=\"engines\">Engine <b>A</b>: ", html(name_a), "; engine <b>B</b>: ", html(name_b),
                    ". ");
  b += "Figures are A's: above &frac12; (or 0 Elo) A is the stronger.</p>";
  absl::StrAppend(
      &b, "<section id=\"summary\" class=\"cards\">",
      "<div class=\"card\"><div class=\"k\">positions</div><div class=\"v\">", a.by_score.size(),
      "</div></div><div class=\"card\"><div class=\"k\">pairs</div><div class=\"v\" id=\"pairs\">", count(f.pairs),
      "</div><div class=\"s\">", count(2 * f.pairs), " games</div></div>",
      "<div class=\"card\"><div class=\"k\">A's score</div><div class=\"v\" id=\"match-score\">", fixed(f.score),
      "</div><div class=\"s\">95%: ", fixed(f.score_lo), "&ndash;", fixed(f.score_hi), "</div></div>",
      "<div class=\"card\"><div class=\"k\">Elo (A &minus; B)</div><div class=\"v\" id=\"match-elo\">",
      signed_elo(f.elo), "</div><div class=\"s\">95%: ", signed_elo(f.elo_lo), " &hellip; ", signed_elo(f.elo_hi),
      "</div></div><div class=\"card\"><div class=\"k keep\">nElo</div><div class=\"v\">", signed_elo(f.nelo),
      "</div></div><div class=\"card\"><div class=\"k keep\">LOS (A)</div><div class=\"v\">", percent(f.los),
      "</div></div><div class=\"card\"><div class=\"k\">W / D / L (A)</div><div class=\"v\">", count(a.wins), " / ",
      count(a.draws), " / ", count(a.losses), "</div></div></section>\n");

  // The pentanomial counts, as a table with bars.
  b += "<section id=\"pentanomial\"><h2>Pairs by A's points</h2><table class=\"positions\" id=\"penta\"><thead>"
       "<tr><th class=\"text\">pair</th><th>A's points</th><th>pairs</th><th>share</th><th></th></tr></thead><tbody>";
  int64_t most = 1;
  for (int64_t c : a.total) most = std::max(most, c);
  const char* points[selfplay::kPentanomialCells] = {"0", "&frac12;", "1", "1&frac12;", "2"};
  for (size_t i = 0; i < a.total.size(); ++i)
    absl::StrAppend(&b, "<tr><td class=\"text\">", kPentaNames[i], "</td><td>", points[i], "</td><td>",
                    count(a.total[i]), "</td><td>", percent(f.pairs ? double(a.total[i]) / double(f.pairs) : kNaN),
                    "</td><td class=\"text\"><span class=\"hbar\" style=\"width:",
                    absl::StrFormat("%.1f", 240.0 * double(a.total[i]) / double(most)), "px\"></span></td></tr>");
  b += "</tbody></table><p class=\"legend\">Each opening is played twice with colours reversed; L, D, W are A's "
       "loss, draw and win in the two games. DD and WL both give A one point of two and are one cell.</p>";
  std::vector<std::string> left_out;
  if (a.duplicates > 0)
    left_out.push_back(absl::StrCat(count(a.duplicates),
                                    a.duplicates == 1 ? " pair that repeats" : " pairs that repeat",
                                    " an earlier pair of its position move for move"));
  if (a.unpaired > 0)
    left_out.push_back(absl::StrCat(count(a.unpaired), a.unpaired == 1 ? " game" : " games",
                                    " whose partner is missing or ended in an engine failure before both engines "
                                    "moved"));
  if (!left_out.empty()) absl::StrAppend(&b, "<p class=\"note\">Not counted: ", absl::StrJoin(left_out, "; "), ".</p>");
  b += "</section>\n";

  b += "<section id=\"sprt\"><h2>SPRT</h2>";
  if (t.sprt.enabled()) {
    // The log-likelihood ratio from the counts, with the rule the run used.
    const double llr = selfplay::sprt_llr(t.sprt, a.total);
    const selfplay::SprtResult r = selfplay::sprt_result(t.sprt, llr);
    const std::string unit = t.sprt.normalized ? " nElo" : " Elo";
    absl::StrAppend(
        &b, "<p class=\"verdict\" id=\"sprt-result\">",
        r == selfplay::SprtResult::kH1
            ? absl::StrCat("<b>H1 accepted</b>: the test rejects H0 (", signed_elo(t.sprt.elo0), unit,
                           ") in favour of H1 (", signed_elo(t.sprt.elo1), unit, "): A is the stronger engine.")
        : r == selfplay::SprtResult::kH0
            ? absl::StrCat("<b>H0 accepted</b>: the test rejects H1 (", signed_elo(t.sprt.elo1), unit,
                           ") in favour of H0 (", signed_elo(t.sprt.elo0), unit, "): A is not that much stronger.")
            : std::string("<b>Not decided</b>: the ratio had not crossed a bound."),
        " Log-likelihood ratio <b>", signed_fixed(llr), "</b>, bounds ", signed_fixed(t.sprt.lower()), " and ",
        signed_fixed(t.sprt.upper()), " (", html(selfplay::describe(t.sprt)), ").</p>",
        "<p class=\"legend\">A generalized SPRT on the pentanomial counts (Van den Bergh's log-likelihood ratio, "
        "as fastchess and Fishtest compute it), recomputed here from the pairs. It decides between H0 (A is elo0 "
        "stronger) and H1 (elo1) with error rates &alpha; and &beta;; it does not estimate the difference (the totals "
        "above do). The bounds are log(&beta; / (1 &minus; &alpha;)) and log((1 &minus; &beta;) / &alpha;).</p>");
  } else {
    b += "<p class=\"note\">Not recorded: a CSV has no SPRT. A run with --sprt writes its rule in its JSON "
         "(--format json), from which this report computes the test.</p>";
  }
  b += "</section>\n";

  // Heterogeneity and which positions favour which engine.
  const selfplay::MatchTests& mt = a.tests;
  b += "<section id=\"favours\"><h2>Which positions favour which engine</h2><p class=\"verdict\">";
  if (mt.dof > 0)
    absl::StrAppend(&b,
                    "Does the engines' difference depend on the position? The positions' pair scores against the "
                    "match's: &chi;&sup2; = ",
                    fixed(mt.chi_square, 1), " on ", mt.dof, " degrees of freedom, <b>", p_is(mt.heterogeneity_p),
                    "</b>", mt.heterogeneity_p < 0.05 ? ": it does." : ": no sign that it does.", "</p><p>");
  else
    b += "Whether the difference depends on the position is not computable here (fewer than two positions with "
         "pairs, or every pair alike).</p><p>";
  absl::StrAppend(&b, "Sign test per position (pairs A won against pairs B won), corrected for the ", a.by_score.size(),
                  " positions: <b>", a.favours_a, "</b> favour A and <b>", a.favours_b,
                  "</b> favour B after Holm's correction (family-wise error 5%); ", a.significant_bh,
                  " differ after Benjamini&ndash;Hochberg's (false discovery rate 5%).</p>");
  std::vector<size_t> listed;
  for (size_t i : a.by_score)
    if (mt.bh[i] < 0.05 || mt.holm[i] < 0.05) listed.push_back(i);
  std::stable_sort(listed.begin(), listed.end(), [&](size_t x, size_t y) { return mt.p[x] < mt.p[y]; });
  if (!listed.empty()) {
    absl::StrAppend(&b,
                    "<table class=\"positions\" id=\"favouring\"><caption>Positions below 5% after "
                    "Benjamini&ndash;Hochberg's correction, smallest p first (favours: by Holm's)</caption>",
                    match_positions_header(), "<tbody>");
    for (size_t i : listed) b += match_position_row(t.rows[i], a, i);
    b += "</tbody></table>";
  } else {
    b += "<p class=\"note\">No position differs from an even match after either correction.</p>";
  }
  b += "</section>\n";

  if (std::any_of(t.rows.begin(), t.rows.end(), [](const MatchRow& r) { return r.key.sp >= 0; }))
    absl::StrAppend(&b, "<section id=\"heatmap-section\"><h2>A's score by start position</h2>",
                    "<div id=\"heatmap\" class=\"c960-heatmap\"></div>",
                    heatmap_legend("Colour: A's score, centred on &frac12; (an even match); red favours A, blue B; "
                                   "grey: not played."),
                    "</section>\n");

  const size_t shown = std::min(a.by_score.size(), kMaxTableRows);
  absl::StrAppend(&b, "<section id=\"all\"><h2>All positions by A's score</h2>",
                  shown < a.by_score.size() ? absl::StrCat("<p class=\"note\">The first ", shown, " of ",
                                                           a.by_score.size(), " positions.</p>")
                                            : "",
                  "<table class=\"positions sortable\" id=\"positions\">", match_positions_header(), "<tbody>\n");
  for (size_t k = 0; k < shown; ++k) b += match_position_row(t.rows[a.by_score[k]], a, a.by_score[k]);
  b += "</tbody></table><p class=\"legend\">A position's interval, like the match's, is a normal approximation "
       "from its pairs' variance: rough with few pairs, and where all of a position's pairs are alike it shrinks to "
       "the score itself (two WW pairs: 1.000&ndash;1.000). Which positions favour an engine is decided by the sign "
       "test, exact at any number of pairs.</p></section>\n";
  Metadata metadata = t.metadata;
  metadata.insert(metadata.end(), o.metadata.begin(), o.metadata.end());
  b += metadata_section(metadata, "");
  b += kMatchMethods;
  return b +
         "</main>\n<footer>Made by c960 report. Charts: Chart.js 3.9.1 (MIT licence), included in this file."
         "</footer>";
}

std::string match_data(const MatchTable& t, const MatchAnalysis& a) {
  // Colours centred on an even match; each half runs to the farthest score on its side (at least
  // 0.02 away), so that no position's colour is cut off at the scale's end.
  double low = 0.48, high = 0.52;
  for (size_t i : a.by_score) {
    low = std::min(low, a.positions[i].score);
    high = std::max(high, a.positions[i].score);
  }
  std::string d =
      absl::StrCat("{\"kind\":\"match\",\"heatmap\":{\"domain\":[", json_number(std::max(0.0, low)), ",0.5,",
                   json_number(std::min(1.0, high)), "],\"palette\":\"diverging\",\"legend\":\"A's score\",\"rows\":[");
  bool first = true;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const MatchRow& r = t.rows[i];
    if (r.key.sp < 0) continue;
    const selfplay::MatchFigures& f = a.positions[i];
    std::vector<std::string> lines = {absl::StrCat(r.key.sp, " ", backrank(r.key.sp))};
    if (f.pairs > 0) {
      lines.push_back(absl::StrCat("pairs ", f.pairs, " (LL ", r.penta[0], ", LD ", r.penta[1], ", DD/WL ", r.penta[2],
                                   ", WD ", r.penta[3], ", WW ", r.penta[4], ")"));
      lines.push_back(absl::StrFormat("A's score %.3f, 95%% interval %.3f\u2013%.3f", f.score, f.score_lo, f.score_hi));
      lines.push_back(absl::StrFormat("sign test p %.3g, Holm %.3g", a.tests.p[i], a.tests.holm[i]));
    } else {
      lines.push_back("no pairs");
    }
    absl::StrAppend(&d, first ? "" : ",", "\n{\"sp\":", r.key.sp, ",\"value\":", json_number(f.pairs ? f.score : kNaN),
                    ",\"lines\":[");
    for (size_t k = 0; k < lines.size(); ++k) absl::StrAppend(&d, k ? "," : "", json_string(lines[k]));
    d += "]}";
    first = false;
  }
  return d + "]}}";
}

// --- perft ---

std::string perft_body(const PerftAnalysis& a, const ReportOptions& o, const std::string& title) {
  std::string b = absl::StrCat("<header><h1>", html(title), "</h1></header>\n<main>\n");
  const int deepest = a.depths.back();
  absl::StrAppend(
      &b,
      "<section id=\"summary\" class=\"cards\"><div class=\"card\"><div class=\"k\">positions</div><div class=\"v\">",
      a.positions.size(), "</div></div><div class=\"card\"><div class=\"k\">depths</div><div class=\"v\">");
  for (size_t i = 0; i < a.depths.size(); ++i) absl::StrAppend(&b, i ? ", " : "", a.depths[i]);
  absl::StrAppend(&b, "</div></div><div class=\"card\"><div class=\"k\">nodes at depth ", deepest,
                  "</div><div class=\"v\">", grouped(a.total.at(deepest)), "</div></div></section>\n");

  // Growth per depth.
  b += "<section id=\"growth\"><h2>Nodes by depth</h2><table class=\"positions\"><thead><tr><th>depth</th>"
       "<th>positions</th><th>total nodes</th><th>growth</th><th>smallest</th><th>median</th><th>largest</th>"
       "</tr></thead><tbody>";
  for (size_t i = 0; i < a.depths.size(); ++i) {
    const int d = a.depths[i];
    std::vector<NodeCount> v;
    for (const auto& p : a.positions)
      if (auto it = p.nodes.find(d); it != p.nodes.end()) v.push_back(it->second);
    std::sort(v.begin(), v.end());
    std::string growth = "&ndash;";
    if (i > 0 && a.count.at(a.depths[i - 1]) == a.count.at(d) && a.total.at(a.depths[i - 1]) > 0)
      growth = absl::StrFormat("&times;%.2f", double(a.total.at(d)) / double(a.total.at(a.depths[i - 1])));
    absl::StrAppend(&b, "<tr><td>", d, "</td><td>", a.count.at(d), "</td><td>", grouped(a.total.at(d)), "</td><td>",
                    growth, "</td><td>", grouped(v.front()), "</td><td>", grouped(v[v.size() / 2]), "</td><td>",
                    grouped(v.back()), "</td></tr>");
  }
  b += "</tbody></table>";
  if (a.depths.size() > 1) b += "<div class=\"chart small\"><canvas id=\"growth-chart\"></canvas></div>";
  b += "</section>\n";

  const bool any960 = std::any_of(a.positions.begin(), a.positions.end(), [](const auto& p) { return p.key.sp >= 0; });
  if (any960)
    absl::StrAppend(&b, "<section id=\"heatmap-section\"><h2>Nodes at depth ", deepest, " by start position</h2>",
                    "<div id=\"heatmap\" class=\"c960-heatmap\"></div>",
                    heatmap_legend("Colour: log10 of the node count at the deepest depth; grey: not in the table."),
                    "</section>\n");
  absl::StrAppend(&b,
                  "<section id=\"counts\"><h2>Nodes by position</h2><div class=\"chart\"><canvas id=\"counts-chart\">",
                  "</canvas></div><p class=\"legend\">Node count at depth ", deepest,
                  " of each position in the table's order.</p></section>\n");

  // Per-position table.
  b += "<section id=\"all\"><h2>All positions</h2><table class=\"positions\" id=\"positions\"><thead><tr>"
       "<th>position</th><th>back rank</th><th>FEN</th>";
  for (int d : a.depths) absl::StrAppend(&b, "<th>depth ", d, "</th>");
  if (a.depths.size() > 1) b += "<th>growth</th>";
  b += "</tr></thead><tbody>\n";
  for (const auto& p : a.positions) {
    absl::StrAppend(&b, "<tr><td>", html(p.key.id), "</td><td class=\"br\">", backrank(p.key.sp),
                    "</td><td class=\"fen\">", html(p.key.fen), "</td>");
    for (int d : a.depths) {
      auto it = p.nodes.find(d);
      absl::StrAppend(&b, "<td class=\"num\">", it == p.nodes.end() ? "" : grouped(it->second), "</td>");
    }
    if (a.depths.size() > 1) {
      const int prev = a.depths[a.depths.size() - 2];
      auto x = p.nodes.find(prev), y = p.nodes.find(deepest);
      const bool ok = x != p.nodes.end() && y != p.nodes.end() && x->second > 0;
      absl::StrAppend(&b, "<td>", ok ? absl::StrFormat("&times;%.2f", double(y->second) / double(x->second)) : "",
                      "</td>");
    }
    b += "</tr>\n";
  }
  b += "</tbody></table></section>\n";
  b += metadata_section(o.metadata, "");
  return b +
         "</main>\n<footer>Made by c960 report. Charts: Chart.js 3.9.1 (MIT licence), included in this file."
         "</footer>";
}

std::string perft_data(const PerftAnalysis& a) {
  const int deepest = a.depths.back();
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& p : a.positions)
    if (auto it = p.nodes.find(deepest); it != p.nodes.end() && it->second > 0) {
      lo = std::min(lo, std::log10(double(it->second)));
      hi = std::max(hi, std::log10(double(it->second)));
    }
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  if (hi - lo < 1e-9) hi = lo + 1;
  std::string d = absl::StrCat("{\"kind\":\"perft\",\"depth\":", deepest, ",\"heatmap\":{\"domain\":[", json_number(lo),
                               ",", json_number((lo + hi) / 2), ",", json_number(hi),
                               "],\"palette\":\"sequential\",\"legend\":\"log10 nodes\",\"rows\":[");
  std::string counts = "\"counts\":{\"labels\":[", values = "],\"values\":[";
  bool first = true, first_count = true;
  for (const auto& p : a.positions) {
    auto it = p.nodes.find(deepest);
    if (it == p.nodes.end()) continue;
    absl::StrAppend(&counts, first_count ? "" : ",", json_string(p.key.id));
    absl::StrAppend(&values, first_count ? "" : ",", json_number(double(it->second)));
    first_count = false;
    if (p.key.sp < 0) continue;
    absl::StrAppend(&d, first ? "" : ",", "\n{\"sp\":", p.key.sp,
                    ",\"value\":", json_number(it->second > 0 ? std::log10(double(it->second)) : 0), ",\"lines\":[",
                    json_string(absl::StrCat(p.key.sp, " ", backrank(p.key.sp))), ",",
                    json_string(absl::StrCat("depth ", deepest, ": ", to_string(it->second), " nodes")), "]}");
    first = false;
  }
  absl::StrAppend(&d, "]},\n", counts, values, "]},\n\"growth\":{\"depths\":[");
  for (size_t i = 0; i < a.depths.size(); ++i) absl::StrAppend(&d, i ? "," : "", a.depths[i]);
  d += "],\"totals\":[";
  for (size_t i = 0; i < a.depths.size(); ++i)
    absl::StrAppend(&d, i ? "," : "", json_number(double(a.total.at(a.depths[i]))));
  return d + "]}}";
}

}  // namespace

Metadata spec_metadata(const selfplay::SelfPlaySpec& s) {
  Metadata m;
  m.emplace_back("engine", s.engine);
  if (!s.options.empty()) {
    std::string o;
    for (const selfplay::UciOptionValue& v : s.options)
      absl::StrAppend(&o, o.empty() ? "" : ", ", v.name, "=", v.value);
    m.emplace_back("engine options", o);
  }
  m.emplace_back("limit per move", s.limits.nodes   ? absl::StrCat(s.limits.nodes, " nodes")
                                   : s.limits.depth ? absl::StrCat("depth ", s.limits.depth)
                                                    : absl::StrCat(s.limits.movetime_ms, " ms"));
  m.emplace_back("games per position", absl::StrCat(s.games_per_position));
  if (s.adaptive.enabled())
    m.emplace_back("adaptive", absl::StrCat(selfplay::describe(s.adaptive), ", at most ", s.games_per_position,
                                            " games a position"));
  m.emplace_back("openings", absl::StrCat(s.random_plies, " random plies, node jitter ", s.node_jitter_percent,
                                          "%, sample margin ", s.sample_margin_cp, " cp"));
  m.emplace_back("seed", absl::StrCat(s.seed));
  const selfplay::Adjudication& a = s.adjudication;
  m.emplace_back("adjudication",
                 absl::StrCat(a.draw_moves ? absl::StrCat("draw after ", a.draw_moves, " moves within ",
                                                          a.draw_score_cp, " cp from ply ", a.draw_min_ply)
                                           : "no draw adjudication",
                              "; ",
                              a.resign_moves ? absl::StrCat("resign after ", a.resign_moves, " moves beyond ",
                                                            a.resign_score_cp, " cp")
                                             : "no resign adjudication",
                              s.max_plies ? absl::StrCat("; draw at ply ", s.max_plies) : ""));
  return m;
}

absl::StatusOr<std::string> report_from_data(const SelfPlayTable& table, const ReportOptions& options) {
  if (table.rows.empty()) return absl::InvalidArgumentError("the self-play table has no positions");
  std::optional<SelfPlayTable> reference;
  if (!options.reference_csv.empty()) {
    absl::StatusOr<SelfPlayTable> r = parse_selfplay_csv(options.reference_csv);
    if (!r.ok()) return absl::InvalidArgumentError(absl::StrCat("reference table: ", r.status().message()));
    reference = std::move(*r);
  }
  const SelfPlayAnalysis a =
      analyse_selfplay(table, reference ? &*reference : nullptr, {options.seed, options.permutations});
  if (a.total.games() == 0) return absl::InvalidArgumentError("the self-play table has no games");
  std::string evaluations, evaluations_data;
  if (!options.evaluations_csv.empty()) {
    absl::StatusOr<EvaluationTable> e = parse_evaluation_csv(options.evaluations_csv);
    if (!e.ok()) return absl::InvalidArgumentError(absl::StrCat("evaluation table: ", e.status().message()));
    evaluations = evaluation_section(
        table, a, *e, options.evaluations_name.empty() ? "the evaluation table" : options.evaluations_name,
        &evaluations_data);
  }
  const std::string title = options.title.empty() ? "c960 self-play report" : options.title;
  return page(title, selfplay_body(table, a, options, reference ? &*reference : nullptr, title, evaluations),
              selfplay_data(table, a, options, evaluations_data));
}

absl::StatusOr<std::string> report_from_data(const PerftTable& table, const ReportOptions& options) {
  if (table.rows.empty()) return absl::InvalidArgumentError("the perft table has no positions");
  if (!options.reference_csv.empty())
    return absl::InvalidArgumentError("a reference table goes with self-play tables only");
  if (!options.evaluations_csv.empty())
    return absl::InvalidArgumentError("an evaluation table goes with self-play tables only");
  const PerftAnalysis a = analyse_perft(table);
  const std::string title = options.title.empty() ? "c960 perft report" : options.title;
  return page(title, perft_body(a, options, title), perft_data(a));
}

absl::StatusOr<std::string> report_from_data(const MatchTable& table, const ReportOptions& options) {
  if (table.rows.empty()) return absl::InvalidArgumentError("the match table has no positions");
  if (!options.reference_csv.empty())
    return absl::InvalidArgumentError("a reference table goes with self-play tables only");
  if (!options.evaluations_csv.empty())
    return absl::InvalidArgumentError("an evaluation table goes with self-play tables only");
  const MatchAnalysis a = analyse_match(table);
  if (a.figures.pairs == 0) return absl::InvalidArgumentError("the match table has no pairs");
  const std::string title = !options.title.empty() ? options.title
                            : table.engine_a.empty()
                                ? "c960 match report"
                                : absl::StrCat("c960 match report: ", table.engine_a, " vs ", table.engine_b);
  return page(title, match_body(table, a, options, title), match_data(table, a));
}

absl::StatusOr<std::string> report_from_csv(const std::string& csv_text, const ReportOptions& options) {
  // A match's JSON (the only JSON the report reads).
  if (const size_t at = csv_text.find_first_not_of(" \t\r\n"); at != std::string::npos && csv_text[at] == '{') {
    absl::StatusOr<MatchTable> t = parse_match_json(csv_text);
    if (!t.ok()) return t.status();
    return report_from_data(*t, options);
  }
  absl::StatusOr<TableKind> kind = detect_table_kind(csv_text);
  if (!kind.ok()) return kind.status();
  if (*kind == TableKind::kMatch) {
    absl::StatusOr<MatchTable> t = parse_match_csv(csv_text);
    if (!t.ok()) return t.status();
    return report_from_data(*t, options);
  }
  if (*kind == TableKind::kSelfPlay) {
    absl::StatusOr<SelfPlayTable> t = parse_selfplay_csv(csv_text);
    if (!t.ok()) return t.status();
    return report_from_data(*t, options);
  }
  absl::StatusOr<PerftTable> t = parse_perft_csv(csv_text);
  if (!t.ok()) return t.status();
  return report_from_data(*t, options);
}

std::string html_escape(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace c960::report
