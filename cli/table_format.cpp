#include "cli/table_format.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/job_format.h"
#include "cluster/log.h"
#include "report/analysis.h"
#include "report/stats.h"
#include "selfplay/lines.h"
#include "selfplay/positions.h"
#include "selfplay/ranking.h"

namespace c960::cli {

absl::StatusOr<OutputFormat> output_format(const std::optional<std::string>& flag, bool to_terminal) {
  if (!flag) return to_terminal ? OutputFormat::kText : OutputFormat::kCsv;
  if (*flag == "text") return OutputFormat::kText;
  if (*flag == "csv") return OutputFormat::kCsv;
  if (*flag == "json") return OutputFormat::kJson;
  return absl::InvalidArgumentError(absl::StrCat("--format: '", *flag, "' is not text, csv or json"));
}

std::string counted(int64_t n, absl::string_view singular, absl::string_view plural) {
  return absl::StrCat(n, " ", n == 1 ? singular : plural);
}

std::string with_thousands(NodeCount n) {
  const std::string digits = to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string render_columns(const std::vector<TextColumn>& columns, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(columns.size());
  for (size_t c = 0; c < columns.size(); ++c) width[c] = columns[c].header.size();
  for (const std::vector<std::string>& row : rows)
    for (size_t c = 0; c < row.size() && c < columns.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::string out;
  const auto line = [&](const auto& cell) {
    std::string l;
    for (size_t c = 0; c < columns.size(); ++c) {
      const std::string& text = cell(c);
      const std::string pad(width[c] - text.size(), ' ');
      absl::StrAppend(&l, c ? "  " : "", columns[c].right ? pad : "", text, columns[c].right ? "" : pad);
    }
    l.erase(l.find_last_not_of(' ') + 1);
    out += l + "\n";
  };
  line([&](size_t c) -> const std::string& { return columns[c].header; });
  static const std::string kBlank;
  for (const std::vector<std::string>& row : rows)
    line([&](size_t c) -> const std::string& { return c < row.size() ? row[c] : kBlank; });
  return out;
}

namespace {

std::string sp_text(int sp) { return sp >= 0 ? absl::StrCat(sp) : std::string(); }

// "3 of 200 positions are incomplete (counts so far)", or nothing.
std::string incomplete_note(size_t incomplete, size_t rows, absl::string_view what) {
  if (incomplete == 0) return "";
  return absl::StrCat(incomplete, " of ", rows, " positions are incomplete (", what, " so far)\n");
}

}  // namespace

std::string evaluation_text_table(const std::vector<selfplay::EvalRow>& rows) {
  constexpr size_t kPvShown = 8;
  const std::vector<TextColumn> columns = {{"sp", true},    {"position", false}, {"engine", false}, {"depth", true},
                                           {"nodes", true}, {"score", true},     {"best", false},   {"pv", false}};
  std::vector<std::vector<std::string>> cells;
  for (const selfplay::EvalRow& r : rows) {
    const selfplay::Evaluation& e = r.eval;
    const std::string score = e.mate > 0   ? absl::StrCat("mate ", e.mate)
                              : e.mate < 0 ? absl::StrCat("mated ", -e.mate)
                                           : absl::StrFormat("%+.2f", e.score_cp / 100.0);
    std::vector<std::string> pv(e.pv.begin(), e.pv.begin() + std::ptrdiff_t(std::min(e.pv.size(), kPvShown)));
    cells.push_back({sp_text(r.sp), selfplay::position_label(r.fen), r.engine, absl::StrCat(e.depth),
                     with_thousands(NodeCount(e.nodes)), score, e.best_move,
                     absl::StrCat(absl::StrJoin(pv, " "), e.pv.size() > kPvShown ? " ..." : "")});
  }
  std::string out = render_columns(columns, cells);
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out;
}

std::string perft_text_table(const std::vector<PerftRow>& rows, bool divide) {
  std::vector<const PerftRow*> order;
  order.reserve(rows.size());
  for (const PerftRow& r : rows) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const PerftRow* a, const PerftRow* b) {
    if (a->sp < 0 || b->sp < 0) return a->sp >= 0 && b->sp < 0;
    return a->sp < b->sp;
  });
  size_t incomplete = 0;
  NodeCount total = 0;
  for (const PerftRow& r : rows) {
    incomplete += !r.complete;
    total += r.nodes;
  }
  std::vector<TextColumn> columns = {{"sp", true}, {"position", false}, {"depth", true}};
  if (divide) columns.push_back({"move", false});
  columns.push_back({"nodes", true});
  if (incomplete) columns.push_back({"", false});
  std::vector<std::vector<std::string>> cells;
  for (const PerftRow* r : order) {
    const std::string mark = r->complete ? "" : "incomplete";
    std::vector<std::string> head = {sp_text(r->sp), selfplay::position_label(r->fen), absl::StrCat(r->depth)};
    if (!divide) {
      head.insert(head.end(), {with_thousands(r->nodes), mark});
      cells.push_back(std::move(head));
      continue;
    }
    head.insert(head.end(), {"", with_thousands(r->nodes), mark});
    cells.push_back(std::move(head));
    for (const auto& [move, nodes] : r->divide) cells.push_back({"", "", "", move, with_thousands(nodes)});
  }
  std::vector<std::string> last = {"", "total", ""};
  if (divide) last.push_back("");
  last.push_back(with_thousands(total));
  cells.push_back(std::move(last));
  return render_columns(columns, cells) + incomplete_note(incomplete, rows.size(), "counts");
}

namespace {

std::string fixed(double x, int decimals) { return absl::StrFormat("%.*f", decimals, x + 0.0); }  // no "-0.0"

// Elo: whole points with a sign, "+inf"/"-inf" at a score of 1 or 0.
std::string elo_text(double e) {
  if (std::isinf(e)) return e > 0 ? "+inf" : "-inf";
  const double r = std::round(e) + 0.0;
  return absl::StrFormat("%+.0f", r);
}

std::string pad_left(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

size_t widest_line(const std::string& text) {
  size_t widest = 0, start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    widest = std::max(widest, nl - start);
  return std::max(widest, text.size() - start);
}

}  // namespace

std::string selfplay_text_table(const selfplay::SelfPlayStats& stats, int width) {
  std::vector<const selfplay::PositionStats*> order;
  for (const std::string& id : stats.ranking()) order.push_back(stats.find(id));
  const selfplay::Ranking ranking = stats.shrinkage();
  const selfplay::Relatedness related = stats.relatedness();
  std::map<const selfplay::PositionStats*, const selfplay::RankedPosition*> ranked;
  std::map<const selfplay::PositionStats*, double> effective;
  // Where a position's lines were not recorded, its effective games are not known: blank.
  std::set<const selfplay::PositionStats*> unknown;
  const std::vector<const selfplay::PositionStats*> rows = stats.rows();
  double effective_total = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    ranked[rows[i]] = &ranking.positions[i];
    effective[rows[i]] = related.effective[i];
    effective_total += related.effective[i];
    if (related.lines[i] == 0) unknown.insert(rows[i]);
  }
  const selfplay::PositionStats total = stats.total();
  effective[&total] = effective_total;
  std::vector<const selfplay::PositionStats*> all = {&total};
  all.insert(all.end(), order.begin(), order.end());

  // Elo and its bounds, each padded to its widest, so that the brackets line up.
  struct EloParts {
    std::string value, lo, hi;
  };
  std::vector<EloParts> elo(all.size());
  size_t wv = 0, wl = 0, wh = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i]->counts.games() == 0) continue;
    const selfplay::Interval e = selfplay::elo_of(selfplay::effective_score(all[i]->counts, effective[all[i]]));
    elo[i] = {elo_text(e.value), elo_text(e.lo), elo_text(e.hi)};
    wv = std::max(wv, elo[i].value.size());
    wl = std::max(wl, elo[i].lo.size());
    wh = std::max(wh, elo[i].hi.size());
  }

  size_t incomplete = 0;
  for (const selfplay::PositionStats* p : order) incomplete += !p->complete;
  std::vector<TextColumn> columns = {{"rank", true},       {"id", false},         {"position", false},
                                     {"games", true},      {"effective", true},   {"white", true},
                                     {"draws", true},      {"black", true},       {"White's score [95%]", false},
                                     {"shrunk", true},     {"shrunk 95%", false}, {"rank 95%", true},
                                     {"elo [95%]", false}, {"draw rate", true},   {"plies", true},
                                     {"dups", true}};
  if (incomplete) columns.push_back({"", false});
  std::vector<std::vector<std::string>> cells;
  for (size_t i = 0; i < all.size(); ++i) {
    const selfplay::PositionStats& p = *all[i];
    const bool games = p.counts.games() > 0;
    const selfplay::Interval s = selfplay::effective_score(p.counts, effective[all[i]]);
    const selfplay::RankedPosition* r = i == 0 ? nullptr : ranked[all[i]];
    const bool is_ranked = r && r->ranked;
    cells.push_back({
        is_ranked ? absl::StrCat(r->rank) : "",
        i == 0 ? "all" : p.id,
        i == 0 ? "" : selfplay::position_label(p.fen),
        absl::StrCat(p.counts.games()),
        unknown.count(all[i]) ? "" : fixed(effective[all[i]], 1),
        absl::StrCat(p.counts.white_wins),
        absl::StrCat(p.counts.draws),
        absl::StrCat(p.counts.black_wins),
        games ? absl::StrCat(fixed(s.value, 3), " [", fixed(s.lo, 3), ", ", fixed(s.hi, 3), "]") : "-",
        is_ranked ? fixed(r->shrunk, 3) : "",
        is_ranked ? absl::StrCat(fixed(r->lo, 3), "-", fixed(r->hi, 3)) : "",
        is_ranked && r->rank_lo ? absl::StrCat(r->rank_lo, "-", r->rank_hi) : "",
        games ? absl::StrCat(pad_left(elo[i].value, wv), " [", pad_left(elo[i].lo, wl), ", ", pad_left(elo[i].hi, wh),
                             "]")
              : "-",
        games ? absl::StrCat(fixed(100 * p.counts.draw_rate(), 1), "%") : "-",
        games ? fixed(p.mean_plies(), 1) : "-",
        absl::StrCat(p.duplicates),
        i == 0 || p.complete ? "" : "incomplete",
    });
  }
  const auto drop_column = [&](const char* header) {
    const size_t c =
        size_t(std::find_if(columns.begin(), columns.end(), [&](const TextColumn& t) { return t.header == header; }) -
               columns.begin());
    columns.erase(columns.begin() + long(c));
    for (std::vector<std::string>& row : cells) row.erase(row.begin() + long(c));
  };
  // No position's lines recorded: nothing to show beside the games (the notes say so).
  if (related.with_games > 0 && related.unrecorded == related.with_games) drop_column("effective");
  // Narrower than the table: the columns that matter least go first (the CSV and JSON have all).
  std::string table = render_columns(columns, cells);
  for (const char* drop :
       {"elo [95%]", "plies", "draw rate", "dups", "effective", "rank 95%", "shrunk 95%", "position", "shrunk"}) {
    if (width <= 0 || widest_line(table) <= size_t(width)) break;
    if (std::none_of(columns.begin(), columns.end(), [&](const TextColumn& t) { return t.header == drop; })) continue;
    drop_column(drop);
    table = render_columns(columns, cells);
  }
  std::string uncounted;
  if (total.uncounted > 0)
    uncounted = absl::StrCat(total.uncounted, total.uncounted == 1 ? " game" : " games",
                             " not counted: an engine failed before both engines had played a move from the position "
                             "(CSV and JSON: 'uncounted')\n");
  // The notes under the table fit it too: wrapped, each continuation indented 2.
  // The legend promises the rank's interval only where the table shows one.
  const bool rank_column =
      std::any_of(columns.begin(), columns.end(), [](const TextColumn& t) { return t.header == "rank 95%"; });
  std::string notes = related.note() + incomplete_note(incomplete, order.size(), "games") + uncounted +
                      ranking_note(ranking, rank_column) + position_matters_line(stats);
  if (width <= 0) return table + notes;
  for (absl::string_view note : absl::StrSplit(notes, '\n', absl::SkipEmpty()))
    table += cluster::wrap_text(note, size_t(width), "", 2);
  return table;
}

std::string ranking_note(const selfplay::Ranking& r, bool rank_column) {
  size_t unranked = 0;
  for (const selfplay::RankedPosition& p : r.positions) unranked += !p.ranked;
  if (r.positions.size() < 2) return "";
  if (r.ranked() == 0)
    return absl::StrCat("Not ranked yet: ranks need ", selfplay::kMinPositionsToRank, " positions with ", r.min_games,
                        " games each (most so far: ", r.most_games, ")\n");
  bool intervals = false;
  for (const selfplay::RankedPosition& p : r.positions) intervals = intervals || (p.ranked && p.rank_lo > 0);
  std::string out = absl::StrCat("shrunk: score pulled toward the positions' mean ", fixed(r.mean, 3), " (true spread ",
                                 fixed(r.tau, 3), "; ", selfplay::prior_name(r.prior),
                                 " prior; its 95% interval covers on average and for listed positions, White's "
                                 "score [95%] from the position's own games)\nrank: by shrunk score",
                                 !intervals    ? ""
                                 : rank_column ? ", with its 95% interval"
                                               : " (its 95% interval: in the CSV and JSON, or a wider terminal)");
  if (unranked)
    absl::StrAppend(&out, "; ", unranked, unranked == 1 ? " position" : " positions", " under ", r.min_games,
                    " games unranked");
  return out + "\n";
}

std::string position_matters_line(const selfplay::SelfPlayStats& stats) {
  // Each position's games as its effective number (related games: selfplay/lines.h).
  std::vector<std::vector<int64_t>> table;
  const std::vector<const selfplay::PositionStats*> rows = stats.rows();
  const selfplay::Relatedness related = stats.relatedness();
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i]->counts.games() == 0) continue;
    const selfplay::ResultCounts c = report::effective_counts(rows[i]->counts, related.effective[i]);
    table.push_back({c.white_wins, c.draws, c.black_wins});
  }
  const report::ChiSquareTest t = report::chi_square_homogeneity(table);
  if (t.dof <= 0) return "";
  const std::string p = t.p_value < 0.001 ? "p < 0.001" : absl::StrFormat("p = %.3f", t.p_value);
  std::string out =
      absl::StrFormat("Does the start position matter? chi-square %.1f, %d df, %s\n", t.statistic, t.dof, p);
  if (t.share_expected_below_5 > 0.2)
    out += "(few games per position: c960 report's permutation test is the one to trust)\n";
  return out;
}

}  // namespace c960::cli
