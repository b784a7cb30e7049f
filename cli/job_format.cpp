#include "cli/job_format.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cluster/log.h"
#include "cluster/selfplay_proto.h"
#include "cluster/u128.h"
#include "core/perft.h"
#include "core/startpos.h"
#include "selfplay/stats.h"

namespace c960::cli {
namespace {

bool is_final(const v1::Job& j) { return j.state() != v1::JOB_STATE_RUNNING; }

// A field of a watch line: its forms, longest first; the last may be "" (the field can go).
// Higher ranks go first: `shorten` is the rank of taking a shorter non-empty form, `drop` of
// leaving the field out.
struct Field {
  std::vector<std::string> forms;
  double drop = 0;
  double shorten = 0;
  size_t form = 0;
  Field(std::vector<std::string> f, double d) : forms(std::move(f)), drop(d), shorten(d) {}
  Field(std::vector<std::string> f, double d, double s) : forms(std::move(f)), drop(d), shorten(s) {}
  const std::string& text() const { return forms[form]; }
};

constexpr char kSep[] = "  ";

std::string join_fields(const std::vector<Field>& fields) {
  std::string out;
  for (const Field& f : fields) {
    if (f.text().empty()) continue;
    if (!out.empty()) out += kSep;
    out += f.text();
  }
  return out;
}

// At most `limit` characters; the line is cut only when even the fewest fields do not fit.
std::string cut(std::string s, size_t limit) {
  if (s.size() > limit) s.resize(limit);
  return s;
}

// Joins `fields` within `limit` characters (0: no limit), shortening and dropping fields in
// the order of their ranks, highest first.
std::string fit_fields(std::vector<Field> fields, size_t limit) {
  if (limit == 0) return join_fields(fields);
  struct Step {
    double rank;
    size_t field;
    bool drop;
  };
  std::vector<Step> steps;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].forms.size() > 1 && !fields[i].forms[1].empty()) steps.push_back({fields[i].shorten, i, false});
    if (fields[i].forms.back().empty()) steps.push_back({fields[i].drop, i, true});
  }
  std::stable_sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.rank > b.rank; });
  for (const Step& st : steps) {
    if (join_fields(fields).size() <= limit) break;
    Field& f = fields[st.field];
    if (st.drop) {
      f.form = f.forms.size() - 1;
    } else {
      const size_t shortest = f.forms.size() - (f.forms.back().empty() ? 2 : 1);
      while (join_fields(fields).size() > limit && f.form < shortest) ++f.form;
    }
  }
  return cut(join_fields(fields), limit);
}

// Counts: "24,123,456,789,012 nodes", shortened to "24.1T nodes" once the less important
// fields (elapsed, workers) are gone.
Field count_field(const std::string& digits, absl::string_view what, double rank) {
  double v = 0;
  (void)absl::SimpleAtod(digits, &v);
  return {{absl::StrCat(group_thousands(digits), " ", what), absl::StrCat(si_number(v), " ", what)}, rank, 2.5};
}

double eta_of(const v1::Job& j, const WatchView& v) {
  return v.eta_seconds > -2 ? v.eta_seconds : j.progress().eta_seconds();
}

// The ETA field of a running job. No time while the job waits: when every unit left has a result
// that waits for a second worker's, the end depends on when one checks them, not on any rate; and
// when the coordinator says the job waits (its notice begins "waiting:", e.g. a one-owner cluster
// under --verify adaptive), a rate measured before it began waiting would make up a time.
std::string eta_text(const v1::Job& j, const WatchView& v) {
  const v1::Progress& p = j.progress();
  if (p.units_verifying() > 0 && p.units_total() - p.units_done() <= p.units_verifying())
    return "ETA: waiting on verification";
  if (absl::StartsWith(j.notice(), "waiting:")) return "ETA: none while waiting";
  return absl::StrCat("ETA ", format_duration(eta_of(j, v)));
}

// The fields of the second watch line, in display order.
std::vector<Field> detail_fields(const v1::Job& j, const WatchView& v, int64_t now) {
  const v1::Progress& p = j.progress();
  std::vector<Field> f;
  if (j.spec().has_selfplay()) {
    f.push_back({{absl::StrCat(group_thousands(absl::StrCat(p.games_done())), "/",
                               group_thousands(absl::StrCat(p.games_total())), " games"),
                  absl::StrCat(si_number(double(p.games_done())), "/", si_number(double(p.games_total())), " games")},
                 0,
                 2.5});
    f.push_back({{absl::StrCat(p.units_done(), "/", p.units_total(), " units"), ""}, 3});
    const double rate = v.rate >= 0 ? v.rate : p.games_per_second();
    if (!is_final(j)) f.push_back({{absl::StrFormat("%.1f games/min", rate * 60), ""}, 1});
  } else if (j.spec().has_evaluation()) {
    // Its progress is its units' (a unit: a few positions of one engine).
    f.push_back({{absl::StrCat(p.units_done(), "/", p.units_total(), " units")}, 0});
  } else {
    f.push_back({{absl::StrCat(p.units_done(), "/", p.units_total(), " units")}, 0});
    Field n = count_field(to_string(cluster::from_proto(p.nodes_done())), "nodes", 2);
    n.forms.push_back("");
    f.push_back(n);
    if (!is_final(j)) f.push_back({{absl::StrCat(si_number(p.nodes_per_second()), " nodes/s"), ""}, 1});
  }
  if (is_final(j)) {
    f.push_back({{absl::StrCat("took ", format_duration(job_elapsed_seconds(j, now)))}, 0});
  } else {
    f.push_back({{eta_text(j, v)}, 0});
    f.push_back({{absl::StrCat("elapsed ", format_duration(job_elapsed_seconds(j, now))), ""}, 4});
    f.push_back({{absl::StrCat(p.workers(), "/", p.workers_alive(), " workers"), ""}, 3});
  }
  if (p.units_verifying() > 0) f.push_back({{absl::StrCat(p.units_verifying(), " verifying"), ""}, 5});
  if (j.result_mismatches() > 0) f.push_back({{absl::StrCat(j.result_mismatches(), " MISMATCHES")}, 0});
  return f;
}

std::vector<Field> header_fields(const v1::Job& j) {
  return {{{j.id()}, 0},
          {{job_kind(j), ""}, 2},
          {{state_name(j.state())}, 0},
          {{absl::StrFormat("%5.1f%%", 100 * job_fraction(j))}, 0}};
}

// `fields` joined as join_fields does, in lines of at most `width` columns that begin with
// `indent`: a line ends before a field that would not fit; a field is never broken.
std::string field_lines(const std::vector<Field>& fields, size_t width, const std::string& indent) {
  std::string out, line;
  for (const Field& f : fields) {
    const std::string text(absl::StripLeadingAsciiWhitespace(f.text()));
    if (text.empty()) continue;
    if (!line.empty() && indent.size() + line.size() + sizeof kSep - 1 + text.size() > width) {
      absl::StrAppend(&out, indent, line, "\n");
      line.clear();
    }
    if (!line.empty()) line += kSep;
    line += text;
  }
  if (!line.empty()) absl::StrAppend(&out, indent, line, "\n");
  return out;
}

// "[#####.....]" filling what is left of a line of `limit` after `used` characters; "" when
// fewer than 5 would show.
std::string bar(double frac, size_t used, size_t limit) {
  constexpr size_t kMaxBar = 30;
  const size_t room = limit > used + 4 ? limit - used - 4 : 0;  // separator and brackets
  const size_t width = std::min(room, kMaxBar);
  if (width < 5) return "";
  const size_t filled = std::min(width, size_t(frac * double(width)));
  return absl::StrCat("[", std::string(filled, '#'), std::string(width - filled, '.'), "]");
}

// The notice line: the connection when it is down, else why the job does not progress.
std::string notice(const v1::Job& j, const WatchView& v) {
  if (!v.connection.empty()) return v.connection;
  return j.notice();
}

// "best:  #518 ..., #12 ..." with as many entries as fit in `limit` (0: all); one at least.
std::string leaders_list(absl::string_view label, const std::vector<LeaderEntry>& entries, size_t limit) {
  std::string out(label);
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string next = absl::StrCat(out, i ? ", " : " ", leader_text(entries[i]));
    if (limit && i > 0 && next.size() > limit) break;
    out = next;
  }
  return limit ? cut(out, limit) : out;
}

}  // namespace

std::string group_thousands(absl::string_view digits) {
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), absl::ascii_isdigit)) return std::string(digits);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string si_number(double v) {
  if (!std::isfinite(v)) return "?";
  static constexpr const char* kPrefix[] = {"", "k", "M", "G", "T", "P", "E", "Z", "Y"};
  size_t k = 0;
  const double sign = v < 0 ? -1 : 1;
  v = std::fabs(v);
  // Rounded first, so that 999.96 shows as "1.00k", never "1000".
  while (k + 1 < std::size(kPrefix) && std::stod(absl::StrFormat("%.3g", v)) >= 1000) {
    v /= 1000;
    ++k;
  }
  if (k == 0) return absl::StrFormat("%.3g", sign * v);
  return absl::StrCat(absl::StrFormat("%.*f", v < 10 ? 2 : v < 100 ? 1 : 0, sign * v), kPrefix[k]);
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = std::llround(seconds);
  if (s >= 86'400) return absl::StrFormat("%dd %02dh", s / 86'400, s % 86'400 / 3600);
  return absl::StrFormat("%d:%02d:%02d", s / 3600, s % 3600 / 60, s % 60);
}

std::string job_kind(const v1::Job& j) {
  if (j.spec().has_selfplay()) return "selfplay";
  if (j.spec().has_perft()) return absl::StrCat("perft d", j.spec().perft().depth());
  if (j.spec().has_evaluation())
    return j.spec().evaluation().depth() > 0 ? absl::StrCat("eval d", j.spec().evaluation().depth()) : "eval";
  return "?";
}

void RateWindow::add(int64_t t_ms, double count) {
  if (!samples_.empty() && samples_.back().second == count) return;
  samples_.emplace_back(t_ms, count);
  // Keep one change at or before the window's start, so that the rate spans the whole window.
  while (samples_.size() > 2 && samples_[1].first <= t_ms - window_ms_) samples_.pop_front();
}

double RateWindow::rate() const {
  if (samples_.size() < 2) return -1;
  const auto& [t0, c0] = samples_.front();
  const auto& [t1, c1] = samples_.back();
  return t1 > t0 ? (c1 - c0) * 1000.0 / double(t1 - t0) : -1;
}

double RateWindow::eta_seconds(double remaining, int64_t now_ms) const {
  const double r = rate();
  if (remaining <= 0) return 0;
  if (r <= 0) return -1;
  return std::max(0.0, remaining / r - double(now_ms - samples_.back().first) / 1000.0);
}

Leaders leaders_of(const std::vector<v1::ResultChunk>& chunks) {
  Leaders l;
  std::vector<LeaderEntry> entries;
  std::vector<selfplay::ResultCounts> counts;
  for (const v1::ResultChunk& ch : chunks) {
    if (!ch.has_selfplay()) continue;
    const v1::SelfPlayPositionResult& p = ch.selfplay();
    // A further chunk of the same position (chunks come position by position).
    if (!entries.empty() && entries.back().id == p.position_id() && entries.back().start_position == p.start_position())
      continue;
    entries.push_back({p.start_position(), p.position_id(), 0, 0, 0, p.games()});
    counts.push_back({p.white_wins(), p.draws(), p.black_wins()});
    l.games += p.games();
    if (p.has_match()) {
      l.match = true;
      for (int i = 0; i < selfplay::kPentanomialCells && i < p.match().pentanomial_size(); ++i)
        l.pairs[size_t(i)] += p.match().pentanomial(i);
    }
  }
  const selfplay::Ranking r = selfplay::rank_positions(counts);
  l.most_games = r.most_games;
  l.min_games = r.min_games;
  std::vector<LeaderEntry> ranked;
  for (size_t i : r.order) {
    LeaderEntry e = entries[i];
    e.score = r.positions[i].shrunk;
    e.rank_lo = r.positions[i].rank_lo;
    e.rank_hi = r.positions[i].rank_hi;
    ranked.push_back(e);
  }
  const size_t nb = std::min<size_t>(kLeadersShown, (ranked.size() + 1) / 2);
  const size_t nw = std::min<size_t>(kLeadersShown, ranked.size() - nb);
  for (size_t i = 0; i < nb; ++i) l.best.push_back(ranked[i]);
  for (size_t i = 0; i < nw; ++i) l.worst.push_back(ranked[ranked.size() - 1 - i]);
  return l;
}

std::string leader_text(const LeaderEntry& e) {
  std::string name;
  if (e.start_position >= 0) {
    absl::StatusOr<std::string> rank = backrank_of(e.start_position);
    name = absl::StrCat("#", e.start_position, " ", rank.ok() ? *rank : "?");
  } else {
    name = absl::StrCat("#", e.id);
  }
  const std::string ranks = e.rank_lo ? absl::StrCat("rank ", e.rank_lo, "-", e.rank_hi, ", ") : "";
  return absl::StrFormat("%s %.2f (%sn=%d)", name, e.score, ranks, e.games);
}

std::string match_line(const Leaders& l) {
  int64_t pairs = 0;
  for (int64_t n : l.pairs) pairs += n;
  if (pairs == 0) return "A (the engine) against B (the opponent): no pairs yet";
  const selfplay::MatchFigures f = selfplay::match_figures(l.pairs);
  return absl::StrFormat("A: score %.3f [%.3f, %.3f], Elo %+.0f [%+.0f, %+.0f], LOS %.1f%% (%d pairs)", f.score,
                         f.score_lo, f.score_hi, f.elo, f.elo_lo, f.elo_hi, 100 * f.los, pairs);
}

std::string leaders_missing(const Leaders& l) {
  if (l.games == 0) return "no games yet";
  return absl::StrCat("not ranked yet: ", l.min_games, " games a position (most so far: ", l.most_games, ")");
}

std::string leaders_line(const Leaders& l) {
  if (l.match) return match_line(l);
  if (!l.any()) return leaders_missing(l);
  std::string out = leaders_list("best:", l.best, 0);
  if (!l.worst.empty()) absl::StrAppend(&out, "; ", leaders_list("worst:", l.worst, 0));
  return out;
}

std::vector<std::string> watch_lines(const v1::Job& j, const WatchView& v, int64_t now, int width) {
  // One column short of the width: a line that fills it would wrap on some terminals.
  const size_t limit = size_t(std::max(width, kMinTerminalWidth) - 1);
  std::string head = fit_fields(header_fields(j), limit);
  const std::string b = bar(job_fraction(j), head.size(), limit);
  if (!b.empty()) absl::StrAppend(&head, kSep, b);
  std::vector<std::string> lines = {head, fit_fields(detail_fields(j, v, now), limit)};
  if (j.spec().has_selfplay() && !j.spec().selfplay().opponent().empty()) {
    // A match: A's figures, then the pairs by A's points (pentanomial).
    const selfplay::Pentanomial& n = v.leaders.pairs;
    lines.push_back(cut(match_line(v.leaders), limit));
    lines.push_back(cut(absl::StrCat("pairs LL ", n[0], ", LD ", n[1], ", DD/WL ", n[2], ", WD ", n[3], ", WW ", n[4],
                                     " (", j.spec().selfplay().engine(), " vs ", j.spec().selfplay().opponent(), ")"),
                        limit));
  } else if (j.spec().has_selfplay()) {
    if (!v.leaders.any()) {
      lines.push_back(cut(absl::StrCat("best:  ", leaders_missing(v.leaders)), limit));
      lines.push_back("worst:");
    } else {
      lines.push_back(leaders_list("best: ", v.leaders.best, limit));
      lines.push_back(v.leaders.worst.empty() ? "worst:" : leaders_list("worst:", v.leaders.worst, limit));
    }
  }
  lines.push_back(cut(notice(j, v), limit));
  return lines;
}

std::string watch_plain_line(const v1::Job& j, const WatchView& v, int64_t now) {
  // Lines of at most 80 columns, so that a log read on a terminal breaks no field or word: the
  // fields (never broken; lines after the first indented 2), then the notice on lines of its own
  // (indented 2, its continuations 4).
  constexpr size_t kWidth = cluster::kDefaultTerminalWidth;
  std::vector<Field> fields = header_fields(j);
  for (Field& f : detail_fields(j, v, now)) fields.push_back(std::move(f));
  std::string out = field_lines(fields, kWidth, "  ");
  out.erase(0, 2);
  if (const std::string n = notice(j, v); !n.empty()) out += cluster::wrap_text(n, kWidth, "  ", 4);
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::string redraw_block(int previous_lines, const std::vector<std::string>& lines) {
  std::string out = "\r";
  if (previous_lines > 1) absl::StrAppend(&out, "\x1b[", previous_lines - 1, "A");
  for (size_t i = 0; i < lines.size(); ++i) absl::StrAppend(&out, i ? "\n" : "", lines[i], "\x1b[K");
  return out;
}

std::string job_description(const v1::Job& j, int64_t now, int width) {
  // Each part of the description a line, indented 2, wrapped to `width` at its words (4 for the
  // lines that continue one); the progress at its fields, which are never broken.
  const size_t w = size_t(std::max(width, kMinTerminalWidth));
  const auto line = [w](absl::string_view text) { return cluster::wrap_text(text, w, "  ", 4); };
  std::string out = absl::StrCat("job ", j.id(), " ", state_name(j.state()), "\n");
  if (j.spec().has_perft()) {
    const v1::PerftJobSpec& s = j.spec().perft();
    out += line(absl::StrCat(
        "perft depth ", s.depth(), ", ",
        s.fens_size() ? absl::StrCat(s.fens_size(), " FENs")
                      : absl::StrCat("start positions ", s.start_positions().empty() ? "0-959" : s.start_positions()),
        ", split depth ", j.split_depth()));
  }
  if (j.spec().has_evaluation()) {
    const v1::EvaluationJobSpec& s = j.spec().evaluation();
    std::string engines;
    for (const v1::EvaluationEngine& e : s.engines())
      absl::StrAppend(&engines, engines.empty() ? "" : ", ", e.engine());
    out += line(absl::StrCat("evaluation by ", engines, " at ",
                             s.depth() > 0 ? absl::StrCat("depth ", s.depth()) : absl::StrCat(s.nodes(), " nodes"),
                             ", start positions ", s.start_positions().empty() ? "0-959" : s.start_positions()));
  }
  if (j.spec().has_selfplay()) {
    const v1::SelfPlayJobSpec& s = j.spec().selfplay();
    absl::StatusOr<selfplay::SelfPlaySpec> spec = selfplay::spec_from_proto(s);
    out +=
        line(absl::StrCat("selfplay ", s.games_per_position(), " games per position, start positions ",
                          s.start_positions().empty() ? std::string(selfplay::kDefaultPositions) : s.start_positions(),
                          ", ", spec.ok() ? selfplay::describe(*spec) : std::string(spec.status().message())));
  }
  if (!j.request_id().empty()) out += line(absl::StrCat("request id ", j.request_id()));
  if (j.created_unix_ms() > 0) {
    out += line(absl::StrCat("submitted ", iso8601_utc(j.created_unix_ms()), " (",
                             format_duration((now - j.created_unix_ms()) / 1000.0), " ago)"));
    if (j.finished_unix_ms() > 0)
      out += line(absl::StrCat("finished ", iso8601_utc(j.finished_unix_ms()), " (took ",
                               format_duration(job_elapsed_seconds(j, now)), ")"));
  }
  std::vector<Field> progress = header_fields(j);
  for (Field& f : detail_fields(j, WatchView(), now)) progress.push_back(std::move(f));
  out += field_lines(progress, w, "  ");
  if (!j.notice().empty()) out += line(absl::StrCat("notice: ", j.notice()));
  if (j.result_mismatches() > 0)
    out += line(absl::StrCat("RESULT MISMATCHES: ", j.result_mismatches(), "; first: ", j.mismatch_detail()));
  if (j.unit_failures() > 0)
    out += line(absl::StrCat("unit failures: ", j.unit_failures(), "; last: ", j.failure_detail()));
  return out;
}

std::string status_table(const std::vector<v1::Job>& jobs, int64_t now) {
  struct Column {
    const char* header;
    bool right;  // numbers are aligned right
  };
  static constexpr Column kColumns[] = {{"ID", false},   {"KIND", false}, {"STATE", false},  {"DONE", true},
                                        {"UNITS", true}, {"AGE", true},   {"DURATION", true}};
  constexpr size_t kN = std::size(kColumns);
  std::vector<std::vector<std::string>> rows;
  rows.push_back({});
  for (const Column& c : kColumns) rows.back().push_back(c.header);
  for (const v1::Job& j : jobs) {
    rows.push_back({j.id(), job_kind(j), state_name(j.state()), absl::StrFormat("%.1f%%", 100 * job_fraction(j)),
                    absl::StrCat(j.progress().units_done(), "/", j.progress().units_total()),
                    j.created_unix_ms() > 0 ? format_duration((now - j.created_unix_ms()) / 1000.0) : "?",
                    is_final(j) ? format_duration(job_elapsed_seconds(j, now)) : "-"});
  }
  size_t width[kN] = {};
  for (const auto& r : rows)
    for (size_t c = 0; c < kN; ++c) width[c] = std::max(width[c], r[c].size());
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t c = 0; c < kN; ++c) {
      const std::string pad(width[c] - r[c].size(), ' ');
      absl::StrAppend(&line, c ? kSep : "", kColumns[c].right ? pad : "", r[c], kColumns[c].right ? "" : pad);
    }
    out += std::string(absl::StripTrailingAsciiWhitespace(line)) + "\n";
  }
  // Why a running job does not move (a one-worker cluster under --verify adaptive, no worker
  // offering its engine...), under the table: only `watch` said it before.
  for (const v1::Job& j : jobs)
    if (!is_final(j) && !j.notice().empty()) absl::StrAppend(&out, j.id(), ": ", j.notice(), "\n");
  return out;
}

}  // namespace c960::cli
