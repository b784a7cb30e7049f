#include "selfplay/stats.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/startpos.h"
#include "selfplay/lines.h"
#include "selfplay/mirror.h"
#include "selfplay/ranking.h"

namespace c960::selfplay {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

std::string csv_number(double x, int decimals) {
  if (std::isnan(x)) return "";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return absl::StrFormat("%.*f", decimals, x + 0.0);  // + 0.0: no "-0.0"
}

// JSON has no NaN or infinity: those become null.
std::string json_number(double x, int decimals) {
  if (!std::isfinite(x)) return "null";
  return absl::StrFormat("%.*f", decimals, x + 0.0);
}

std::string json_string(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += {'\\', c};
    else if (static_cast<unsigned char>(c) < 0x20)
      out += absl::StrFormat("\\u%04x", c);
    else
      out += c;
  }
  return out + "\"";
}

std::string metadata_json(const std::vector<MetadataValue>& metadata) {
  std::string out = "{";
  for (size_t i = 0; i < metadata.size(); ++i)
    absl::StrAppend(&out, i ? ", " : "", json_string(metadata[i].key), ": ",
                    metadata[i].number ? metadata[i].value : json_string(metadata[i].value));
  return out + "}";
}

namespace {

// The hull of the p in [lo, hi] where a p^2 + b p + c <= 0 (a > 0) into [*out_lo, *out_hi].
void add_roots_within(double a, double b, double c, double lo, double hi, double* out_lo, double* out_hi) {
  const double disc = b * b - 4 * a * c;
  if (disc < 0 || lo > hi) return;
  const double r = std::sqrt(disc);
  // The two roots without cancellation: q = -(b + sign(b) r) / 2, roots q / a and c / q.
  const double q = -0.5 * (b + (b < 0 ? -r : r));
  double r1 = q / a, r2 = q != 0 ? c / q : r1;
  if (r1 > r2) std::swap(r1, r2);
  const double from = std::max(r1, lo), to = std::min(r2, hi);
  if (from > to) return;
  *out_lo = std::min(*out_lo, from);
  *out_hi = std::max(*out_hi, to);
}

}  // namespace

Interval ResultCounts::score(double z) const {
  return score_interval(double(white_wins), double(draws), double(black_wins), z);
}

Interval effective_score(const ResultCounts& counts, double effective, double z) {
  const double n = double(counts.games());
  if (!(effective > 0) || effective >= n) return counts.score(z);
  const double f = effective / n;
  const Interval scaled =
      score_interval(f * double(counts.white_wins), f * double(counts.draws), f * double(counts.black_wins), z);
  return {counts.score(z).value, scaled.lo, scaled.hi};
}

Interval score_interval(double w, double d, double l, double z) {
  const double n = w + d + l;
  if (n <= 0) return {kNaN, kNaN, kNaN};
  const double s = (w + 0.5 * d) / n;
  const double z2 = z * z;

  // Score interval: n (s - p)^2 - z^2 V(p) <= 0 on each piece of V (see stats.h).
  const double dr = d / n;
  const double a = n + z2, ns2 = n * s * s;
  double lo = s, hi = s;                                                     // s itself is always inside: V(s) >= 0
  add_roots_within(a, -(2 * n * s + 0.5 * z2), ns2, 0.0, dr / 2, &lo, &hi);  // V = p/2 - p^2
  add_roots_within(a, -(2 * n * s + z2), ns2 + z2 * dr / 4, dr / 2, 1 - dr / 2, &lo, &hi);  // V = p - p^2 - D/4
  add_roots_within(a, -(2 * n * s + 1.5 * z2), ns2 + 0.5 * z2, 1 - dr / 2, 1.0, &lo, &hi);  // V = (1-p)(p-1/2)

  // Agresti-Coull type: z^2/2 pseudo-wins and pseudo-losses.
  const double wa = w + z2 / 2, na = n + z2;
  const double sa = (wa + 0.5 * d) / na;
  const double va = std::max(0.0, (wa + 0.25 * d) / na - sa * sa);
  const double half = z * std::sqrt(va / na);
  lo = std::min(lo, sa - half);
  hi = std::max(hi, sa + half);

  // Rounding must not turn an all-wins interval's exact 1 into 0.9999999999999999 (Elo 6000).
  constexpr double kEps = 1e-12;
  lo = lo < kEps ? 0.0 : lo;
  hi = hi > 1 - kEps ? 1.0 : hi;
  return {s, lo, hi};
}

double elo_from_score(double p) {
  if (std::isnan(p)) return kNaN;
  if (p <= 0) return -std::numeric_limits<double>::infinity();
  if (p >= 1) return std::numeric_limits<double>::infinity();
  return -400.0 * std::log10(1.0 / p - 1.0);
}

Interval elo_of(const Interval& s) { return {elo_from_score(s.value), elo_from_score(s.lo), elo_from_score(s.hi)}; }

Interval ResultCounts::elo(double z) const { return elo_of(score(z)); }

double ResultCounts::draw_rate() const { return games() ? double(draws) / double(games()) : kNaN; }

uint64_t game_hash(const GameRecord& game) {
  // FNV-1a over the start FEN and the raw moves.
  uint64_t h = 0xcbf29ce484222325ULL;
  const auto byte = [&h](uint8_t b) { h = (h ^ b) * 0x100000001b3ULL; };
  for (char c : game.start_fen) byte(uint8_t(c));
  for (Move m : game.moves) {
    byte(uint8_t(m.raw()));
    byte(uint8_t(m.raw() >> 8));
  }
  return h;
}

bool is_evidence(Termination termination, int plies, int opening_plies) {
  switch (termination) {
    case Termination::kIllegalMove:
    case Termination::kEngineCrash:
    case Termination::kEngineHang:
    case Termination::kEngineError: return plies - opening_plies >= 2;
    default: return true;
  }
}

bool is_evidence(const GameRecord& game) { return is_evidence(game.termination, game.plies(), game.opening_plies); }

void PositionStats::add(const GameRecord& game) {
  // A game that repeats an earlier one move for move is no new evidence: counted once.
  if (!is_evidence(game)) {
    ++uncounted;
  } else if (!game_hashes.insert(game_hash(game)).second) {
    ++duplicates;
  } else {
    ResultCounts& line = lines[line_hash(game)];
    switch (game.result) {
      case GameResult::kWhiteWins: ++counts.white_wins, ++line.white_wins; break;
      case GameResult::kDraw: ++counts.draws, ++line.draws; break;
      case GameResult::kBlackWins: ++counts.black_wins, ++line.black_wins; break;
    }
  }
  total_plies += game.plies();
  if (game.termination < Termination::kCount) ++terminations[size_t(game.termination)];
}

double PositionStats::mean_plies() const { return played() ? double(total_plies) / double(played()) : kNaN; }

void SelfPlayStats::add(const StartPosition& position, const GameRecord& game) {
  auto [it, fresh] = index_.emplace(position.id, positions_.size());
  if (fresh) {
    PositionStats& p = positions_.emplace_back();
    p.id = position.id;
    p.sp = position.kind == PositionKind::kChess960 ? position.number : -1;
    p.fen = xfen_of(position);
  }
  positions_[it->second].add(game);
}

void SelfPlayStats::add(int sp, const GameRecord& game) {
  absl::StatusOr<StartPosition> p = chess960_position(sp);
  if (p.ok()) add(*p, game);
}

namespace {

std::optional<uint64_t> id_number(absl::string_view id) {
  uint64_t n = 0;
  const auto [p, ec] = std::from_chars(id.data(), id.data() + id.size(), n);
  if (id.empty() || ec != std::errc() || p != id.data() + id.size() || (id.size() > 1 && id[0] == '0'))
    return std::nullopt;
  return n;
}

}  // namespace

std::string csv_field(absl::string_view s) {
  if (s.find_first_of(",\"\r\n") == absl::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::vector<const PositionStats*> SelfPlayStats::rows() const {
  std::vector<const PositionStats*> out;
  for (const PositionStats& p : positions_) out.push_back(&p);
  std::stable_sort(out.begin(), out.end(), [](const PositionStats* a, const PositionStats* b) {
    const std::optional<uint64_t> x = id_number(a->id), y = id_number(b->id);
    if (x && y) return *x < *y;
    return x.has_value() && !y.has_value();
  });
  return out;
}

const PositionStats* SelfPlayStats::find(absl::string_view id) const {
  const auto it = index_.find(id);
  return it == index_.end() ? nullptr : &positions_[it->second];
}

void SelfPlayStats::set_position(PositionStats p) {
  auto [it, fresh] = index_.emplace(p.id, positions_.size());
  if (fresh) {
    positions_.push_back(std::move(p));
  } else {
    positions_[it->second] = std::move(p);
  }
}

PositionStats SelfPlayStats::total() const {
  PositionStats t;
  for (const PositionStats& p : positions_) {
    t.counts.white_wins += p.counts.white_wins;
    t.counts.draws += p.counts.draws;
    t.counts.black_wins += p.counts.black_wins;
    t.total_plies += p.total_plies;
    t.duplicates += p.duplicates;
    t.uncounted += p.uncounted;
    for (size_t i = 0; i < t.terminations.size(); ++i) t.terminations[i] += p.terminations[i];
    t.complete = t.complete && p.complete;
  }
  return t;
}

Relatedness SelfPlayStats::relatedness() const {
  std::vector<const Lines*> lines;
  std::vector<ResultCounts> counts;
  for (const PositionStats* p : rows()) {
    lines.push_back(&p->lines);
    counts.push_back(p->counts);
  }
  return selfplay::relatedness(lines, counts);
}

Ranking SelfPlayStats::shrinkage() const {
  std::vector<ResultCounts> counts;
  for (const PositionStats* p : rows()) counts.push_back(p->counts);
  return rank_positions(counts, {.effective_games = relatedness().effective});
}

std::vector<std::string> SelfPlayStats::ranking() const {
  const std::vector<const PositionStats*> v = rows();
  const Ranking r = shrinkage();
  std::vector<std::string> out;
  out.reserve(v.size());
  for (size_t i : r.order) out.push_back(v[i]->id);
  std::vector<const PositionStats*> rest;
  for (size_t i = 0; i < v.size(); ++i)
    if (!r.positions[i].ranked) rest.push_back(v[i]);
  std::stable_sort(rest.begin(), rest.end(), [](const PositionStats* a, const PositionStats* b) {
    // No games: no score (NaN, which compares false with everything), so last.
    if (a->counts.games() == 0 || b->counts.games() == 0) return a->counts.games() > 0 && b->counts.games() == 0;
    const Interval x = a->counts.score(), y = b->counts.score();
    if (x.value != y.value) return x.value > y.value;
    return x.lo > y.lo;
  });
  for (const PositionStats* p : rest) out.push_back(p->id);
  return out;
}

namespace {

// The shrinkage columns of a position: "shrunk,shrunk_lo,shrunk_hi,rank_lo,rank_hi,rank", empty
// when it is not ranked (rank_lo and rank_hi also when the ranks were not simulated).
std::string csv_ranking(const RankedPosition& p) {
  if (!p.ranked) return ",,,,,";
  const std::string lo = p.rank_lo ? absl::StrCat(p.rank_lo) : "", hi = p.rank_hi ? absl::StrCat(p.rank_hi) : "";
  return absl::StrCat(csv_number(p.shrunk, 4), ",", csv_number(p.lo, 4), ",", csv_number(p.hi, 4), ",", lo, ",", hi,
                      ",", p.rank);
}

std::string json_ranking(const RankedPosition& p) {
  if (!p.ranked)
    return "\"rank\": null, \"shrunk\": null, \"shrunk_lo\": null, \"shrunk_hi\": null, \"rank_lo\": null, "
           "\"rank_hi\": null, ";
  const auto opt = [](int r) { return r ? absl::StrCat(r) : std::string("null"); };
  return absl::StrCat("\"rank\": ", p.rank, ", \"shrunk\": ", json_number(p.shrunk, 4),
                      ", \"shrunk_lo\": ", json_number(p.lo, 4), ", \"shrunk_hi\": ", json_number(p.hi, 4),
                      ", \"rank_lo\": ", opt(p.rank_lo), ", \"rank_hi\": ", opt(p.rank_hi), ", ");
}

}  // namespace

std::string SelfPlayStats::to_csv(bool complete_column) const {
  std::string out =
      "sp,fen,games,white_wins,draws,black_wins,score,score_lo,score_hi,elo,elo_lo,elo_hi,draw_rate,mean_plies,"
      "duplicates,uncounted,lines,effective_games,shrunk,shrunk_lo,shrunk_hi,rank_lo,rank_hi,rank";
  const bool adaptive = adaptive_.enabled();
  if (adaptive) out += ",anytime_lo,anytime_hi,verdict,rule,engine";
  const std::string run = adaptive ? absl::StrCat(",", csv_field(describe(adaptive_)), ",", csv_field(engine_)) : "";
  for (size_t t = 0; t < size_t(Termination::kCount); ++t) absl::StrAppend(&out, ",", termination_name(Termination(t)));
  out += complete_column ? ",complete\n" : "\n";
  const Relatedness related = relatedness();
  const Ranking ranking = shrinkage();
  // effective: NaN for the games themselves; lines: empty when not recorded.
  const auto row = [&](const std::string& sp, const std::string& fen, const PositionStats& p, const std::string& r,
                       double effective, const std::string& lines) {
    const Interval s = effective_score(p.counts, effective), e = elo_of(s);
    absl::StrAppend(&out, sp, ",", fen, ",", p.counts.games(), ",", p.counts.white_wins, ",", p.counts.draws, ",",
                    p.counts.black_wins, ",", csv_number(s.value, 4), ",", csv_number(s.lo, 4), ",",
                    csv_number(s.hi, 4), ",", csv_number(e.value, 1), ",", csv_number(e.lo, 1), ",",
                    csv_number(e.hi, 1), ",", csv_number(p.counts.draw_rate(), 4), ",", csv_number(p.mean_plies(), 1),
                    ",", p.duplicates, ",", p.uncounted, ",", lines, ",",
                    csv_number(std::isnan(effective) ? double(p.counts.games()) : effective, 1), ",", r);
    if (adaptive && sp == "all") {
      absl::StrAppend(&out, ",,,", run);
    } else if (adaptive) {
      const AnytimeInterval a = anytime(p);
      absl::StrAppend(&out, ",", csv_number(a.lo, 4), ",", csv_number(a.hi, 4), ",", verdict_name(verdict_of(p, a)),
                      run);
    }
    for (int64_t c : p.terminations) absl::StrAppend(&out, ",", c);
    if (complete_column) out += p.complete ? ",true" : ",false";
    out += "\n";
  };
  const std::vector<const PositionStats*> v = rows();
  double effective_total = 0;
  int64_t lines_total = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const bool recorded = related.lines[i] > 0;
    row(csv_field(v[i]->id), v[i]->fen, *v[i], csv_ranking(ranking.positions[i]), related.effective[i],
        recorded ? absl::StrCat(related.lines[i]) : "");
    effective_total += related.effective[i];
    lines_total += related.lines[i];
  }
  row("all", "", total(), ",,,,,", effective_total, related.recorded ? absl::StrCat(lines_total) : "");
  return out;
}

AnytimeInterval SelfPlayStats::anytime(const PositionStats& p) const {
  return anytime_interval(p.counts.white_wins, p.counts.draws, p.counts.black_wins);
}

Verdict SelfPlayStats::verdict_of(const PositionStats& p) const { return verdict_of(p, anytime(p)); }

Verdict SelfPlayStats::verdict_of(const PositionStats& p, const AnytimeInterval& interval) const {
  // A position with games outstanding (a running job's) has no verdict yet.
  if (!p.complete) return Verdict::kOpen;
  return verdict(adaptive_, interval, p.played(), cap_);
}

std::string SelfPlayStats::to_json(const std::vector<MetadataValue>& metadata, bool complete_field) const {
  const auto json_anytime = [this](const PositionStats& p) {
    const AnytimeInterval a = anytime(p);
    return absl::StrCat("\"anytime_lo\": ", json_number(a.lo, 4), ", \"anytime_hi\": ", json_number(a.hi, 4),
                        ", \"verdict\": ", json_string(verdict_name(verdict_of(p, a))), ", ");
  };
  const Relatedness related = relatedness();
  const Ranking ranking = shrinkage();
  const auto object = [complete_field](const PositionStats& p, const std::string& head, double effective,
                                       const std::string& lines) {
    const Interval s = effective_score(p.counts, effective), e = elo_of(s);
    const char* complete = !complete_field ? "" : p.complete ? "\"complete\": true, " : "\"complete\": false, ";
    std::string o = absl::StrCat(
        "{", head, complete, "\"games\": ", p.counts.games(), ", \"white_wins\": ", p.counts.white_wins,
        ", \"draws\": ", p.counts.draws, ", \"black_wins\": ", p.counts.black_wins,
        ", \"score\": ", json_number(s.value, 4), ", \"score_lo\": ", json_number(s.lo, 4),
        ", \"score_hi\": ", json_number(s.hi, 4), ", \"elo\": ", json_number(e.value, 1),
        ", \"elo_lo\": ", json_number(e.lo, 1), ", \"elo_hi\": ", json_number(e.hi, 1),
        ", \"draw_rate\": ", json_number(p.counts.draw_rate(), 4), ", \"mean_plies\": ", json_number(p.mean_plies(), 1),
        ", \"duplicates\": ", p.duplicates, ", \"uncounted\": ", p.uncounted, ", \"lines\": ", lines,
        ", \"effective_games\": ", json_number(std::isnan(effective) ? double(p.counts.games()) : effective, 1),
        ", \"terminations\": {");
    for (size_t t = 0; t < p.terminations.size(); ++t)
      absl::StrAppend(&o, t ? ", " : "", json_string(termination_name(Termination(t))), ": ", p.terminations[t]);
    return o + "}}";
  };
  std::string out = "{";
  if (!metadata.empty()) absl::StrAppend(&out, "\"metadata\": ", metadata_json(metadata), ",\n");
  out += "\"positions\": [";
  const std::vector<const PositionStats*> v = rows();
  for (size_t i = 0; i < v.size(); ++i) {
    const PositionStats* p = v[i];
    absl::StrAppend(&out, i ? ",\n  " : "\n  ",
                    object(*p,
                           absl::StrCat("\"id\": ", json_string(p->id),
                                        ", \"sp\": ", p->sp >= 0 ? absl::StrCat(p->sp) : std::string("null"),
                                        ", \"fen\": ", json_string(p->fen), ", ", json_ranking(ranking.positions[i]),
                                        adaptive_.enabled() ? json_anytime(*p) : ""),
                           related.effective[i], related.lines[i] > 0 ? absl::StrCat(related.lines[i]) : "null"));
  }
  double effective_total = 0;
  for (double e : related.effective) effective_total += e;
  absl::StrAppend(&out, "\n],\n\"total\": ", object(total(), "", effective_total, "null"), ",\n\"ranking\": [");
  for (size_t i = 0; i < ranking.order.size(); ++i)
    absl::StrAppend(&out, i ? ", " : "", json_string(v[ranking.order[i]]->id));
  absl::StrAppend(&out, "],\n\"shrinkage\": {\"min_games\": ", ranking.min_games, ", \"ranked\": ", ranking.ranked(),
                  ", \"mean\": ", json_number(ranking.mean, 4), ", \"mean_lo\": ", json_number(ranking.mean_lo, 4),
                  ", \"mean_hi\": ", json_number(ranking.mean_hi, 4), ", \"tau\": ", json_number(ranking.tau, 4),
                  ", \"tau_lo\": ", json_number(ranking.tau_lo, 4), ", \"tau_hi\": ", json_number(ranking.tau_hi, 4),
                  ", \"prior\": ", json_string(prior_name(ranking.prior)), "},\n");
  absl::StrAppend(
      &out, "\"related_games\": {\"line_plies\": ", kLinePlies, ", \"recorded\": ", related.recorded ? "true" : "false",
      ", \"shared_lines\": ", related.shared_lines, ", \"correlation\": ", json_number(related.rho, 3),
      ", \"correlation_estimated\": ", related.estimated ? "true" : "false",
      ", \"mostly_one_line\": ", related.mostly_one_line_count(), ", \"note\": ", json_string(related.note()), "},\n");
  const MirrorPairs mirrors = compare_mirror_pairs(*this);
  const auto p_value = [](double p) { return std::isfinite(p) ? absl::StrFormat("%.4g", p) : std::string("null"); };
  absl::StrAppend(&out, "\"mirror_pairs\": {\"min_games\": ", mirrors.min_games, ", \"tested\": ", mirrors.tested,
                  ", \"chi_square\": ", json_number(mirrors.chi_square, 2), ", \"dof\": ", mirrors.dof,
                  ", \"p\": ", p_value(mirrors.p), ", \"significant_holm\": ", mirrors.significant_holm,
                  ", \"significant_bh\": ", mirrors.significant_bh, ", \"pairs\": [");
  for (size_t i = 0; i < mirrors.pairs.size(); ++i) {
    const MirrorPair& m = mirrors.pairs[i];
    absl::StrAppend(&out, i ? ",\n  " : "\n  ", "{\"sp\": ", m.sp, ", \"mirror\": ", m.mirror, ", \"games\": [",
                    m.a.games(), ", ", m.b.games(), "], \"score\": [", json_number(m.a.score().value, 4), ", ",
                    json_number(m.b.score().value, 4), "], \"tested\": ", m.tested ? "true" : "false",
                    ", \"difference\": ", json_number(m.difference, 4), ", \"lo\": ", json_number(m.lo, 4),
                    ", \"hi\": ", json_number(m.hi, 4), ", \"p\": ", p_value(m.p), ", \"p_holm\": ", p_value(m.p_holm),
                    ", \"p_bh\": ", p_value(m.p_bh), "}");
  }
  absl::StrAppend(&out, mirrors.pairs.empty() ? "]}}\n" : "\n]}}\n");
  return out;
}

}  // namespace c960::selfplay
