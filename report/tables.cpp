#include "report/tables.h"

#include <charconv>
#include <cmath>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/startpos.h"
#include "report/json.h"
#include "selfplay/adaptive.h"
#include "selfplay/lines.h"

namespace c960::report {
namespace {

// One CSV record: its fields and the line it starts on.
struct Record {
  int line = 0;
  std::vector<std::string> fields;
};

// RFC 4180 fields: commas separate, double quotes enclose fields with commas, quotes or line
// breaks, and "" inside them is one quote. CR LF ends a line like LF. Empty lines are skipped.
absl::StatusOr<std::vector<Record>> read_csv(absl::string_view text) {
  std::vector<Record> out;
  Record rec;
  std::string field;
  int line = 1;
  bool quoted = false, after_quote = false, any = false;
  rec.line = 1;
  const auto end_record = [&] {
    if (any || !field.empty() || !rec.fields.empty()) {
      rec.fields.push_back(std::move(field));
      out.push_back(std::move(rec));
    }
    rec = Record{};
    field.clear();
    any = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
          after_quote = true;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;
    if (c == '\n' || c == '\r') {
      end_record();
      rec.line = ++line;
      after_quote = false;
      continue;
    }
    if (c == ',') {
      rec.fields.push_back(std::move(field));
      field.clear();
      any = true;
      after_quote = false;
      continue;
    }
    if (after_quote)
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line, ", column ", rec.fields.size() + 1, ": text after a closing quote"));
    if (c == '"' && field.empty()) {
      quoted = true;
      any = true;
      continue;
    }
    field += c;
  }
  if (quoted) return absl::InvalidArgumentError(absl::StrCat("line ", rec.line, ": a quoted field is not closed"));
  end_record();
  return out;
}

// Column positions by name, for error messages and lookups.
class Header {
 public:
  explicit Header(const Record& r) : names_(r.fields) {
    for (size_t i = 0; i < names_.size(); ++i) index_.emplace(names_[i], i);
  }
  std::optional<size_t> find(const std::string& name) const {
    auto it = index_.find(name);
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }
  const std::vector<std::string>& names() const { return names_; }
  bool same_as(const Record& r) const { return r.fields == names_; }

 private:
  std::vector<std::string> names_;
  std::map<std::string, size_t> index_;
};

absl::Status cell_error(const Record& r, size_t column, const std::string& name, const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat("line ", r.line, ", column ", column + 1, " (", name, "): ", problem));
}

absl::StatusOr<int64_t> read_int(const Record& r, size_t column, const std::string& name, int64_t max) {
  const std::string& s = r.fields[column];
  int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v < 0 || v > max)
    return cell_error(r, column, name, absl::StrCat("'", s, "' is not a whole number in 0..", max));
  return v;
}

absl::StatusOr<NodeCount> read_count(const Record& r, size_t column, const std::string& name) {
  const std::string& s = r.fields[column];
  NodeCount v = 0;
  const NodeCount max = ~NodeCount(0);
  bool ok = !s.empty() && s.size() <= 39;
  for (char c : s) {
    if (c < '0' || c > '9' || v > (max - NodeCount(c - '0')) / 10) {
      ok = false;
      break;
    }
    v = v * 10 + NodeCount(c - '0');
  }
  if (!ok)
    return cell_error(r, column, name, absl::StrCat("'", s, "' is not a node count (a whole number below 2^128)"));
  return v;
}

absl::StatusOr<double> read_double(const Record& r, size_t column, const std::string& name) {
  const std::string& s = r.fields[column];
  if (s.empty()) return kNaN;
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0)
    return cell_error(r, column, name, absl::StrCat("'", s, "' is not a non-negative number"));
  return v;
}

// The record's id and FEN, and its start position number when it has one (see PositionKey).
PositionKey resolve_key(const std::string& id, const std::string& fen) {
  PositionKey key{id, fen, -1};
  if (!fen.empty()) {
    if (absl::StatusOr<int> n = number_of_fen(fen); n.ok()) key.sp = *n;
    return key;
  }
  int n = -1;
  const auto [p, ec] = std::from_chars(id.data(), id.data() + id.size(), n);
  if (!id.empty() && ec == std::errc() && p == id.data() + id.size() && n >= 0 && n < kStartPositions) key.sp = n;
  return key;
}

// A column that names the run (its engines, its rule), the same on every row: its text, taken
// from the first row, or an error naming the row that differs.
class RunColumn {
 public:
  RunColumn(const Header& h, const std::string& name) : name_(name), column_(h.find(name)) {}
  absl::Status add(const Record& r) {
    if (!column_) return absl::OkStatus();
    const std::string& v = r.fields[*column_];
    if (line_ == 0) {
      value_ = v;
      line_ = r.line;
    } else if (v != value_) {
      return cell_error(r, *column_, name_,
                        absl::StrCat("'", v, "' differs from line ", line_, "'s '", value_, "' (one run names one)"));
    }
    return absl::OkStatus();
  }
  const std::string& value() const { return value_; }

 private:
  std::string name_;
  std::optional<size_t> column_;
  std::string value_;
  int line_ = 0;
};

// Columns that a table must have; the error names the first missing one and the header.
absl::StatusOr<std::vector<size_t>> require(const Header& h, const Record& r, const std::vector<std::string>& names,
                                            const std::string& what) {
  std::vector<size_t> out;
  for (const std::string& n : names) {
    std::optional<size_t> i = h.find(n);
    if (!i)
      return absl::InvalidArgumentError(absl::StrCat("line ", r.line, ": the header has no column '", n, "' (a ", what,
                                                     " table has ", absl::StrJoin(names, ","), ")"));
    out.push_back(*i);
  }
  return out;
}

absl::Status check_width(const Record& r, const Header& h) {
  if (r.fields.size() != h.names().size())
    return absl::InvalidArgumentError(
        absl::StrCat("line ", r.line, ": ", r.fields.size(), " columns, but the header has ", h.names().size()));
  return absl::OkStatus();
}

// Remembers where each id and start position was first seen, to report duplicates.
class Seen {
 public:
  absl::Status add(const Record& r, const PositionKey& key, const std::string& suffix = "") {
    if (auto [it, fresh] = ids_.emplace(key.id + suffix, r.line); !fresh)
      return absl::InvalidArgumentError(absl::StrCat("line ", r.line, ": position '", key.id, "'",
                                                     suffix.empty() ? "" : " at this depth",
                                                     " appears twice (also line ", it->second, ")"));
    if (key.sp >= 0)
      if (auto [it, fresh] = sps_.emplace(absl::StrCat(key.sp, suffix), r.line); !fresh)
        return absl::InvalidArgumentError(
            absl::StrCat("line ", r.line, ": start position ", key.sp, " appears twice (also line ", it->second, ")"));
    return absl::OkStatus();
  }

 private:
  std::map<std::string, int> ids_, sps_;
};

}  // namespace

absl::StatusOr<TableKind> detect_table_kind(absl::string_view text) {
  absl::StatusOr<std::vector<Record>> records = read_csv(text);
  if (!records.ok()) return records.status();
  if (records->empty()) return absl::InvalidArgumentError("the table is empty");
  const Header h(records->front());
  if (h.find("pairs") && h.find("ll") && h.find("ww")) return TableKind::kMatch;
  if (h.find("white_wins") && h.find("games")) return TableKind::kSelfPlay;
  if (h.find("depth") && h.find("nodes")) return TableKind::kPerft;
  return absl::InvalidArgumentError(
      absl::StrCat("line ", records->front().line, ": header '", absl::StrJoin(h.names(), ","),
                   "' is not a self-play table (sp,fen,games,white_wins,draws,black_wins,...), a match table "
                   "(sp,fen,pairs,ll,ld,dd_wl,wd,ww,...) or a perft table (sp,fen,depth,nodes)"));
}

absl::StatusOr<SelfPlayTable> parse_selfplay_csv(absl::string_view text) {
  absl::StatusOr<std::vector<Record>> records = read_csv(text);
  if (!records.ok()) return records.status();
  if (records->empty()) return absl::InvalidArgumentError("the table is empty");
  const Header h(records->front());
  const std::vector<std::string> names = {"sp", "fen", "games", "white_wins", "draws", "black_wins"};
  absl::StatusOr<std::vector<size_t>> cols = require(h, records->front(), names, "self-play");
  if (!cols.ok()) return cols.status();
  const std::optional<size_t> plies_col = h.find("mean_plies"), dup_col = h.find("duplicates"),
                              uncounted_col = h.find("uncounted"), rank_col = h.find("rank"),
                              lines_col = h.find("lines"), effective_col = h.find("effective_games");
  SelfPlayTable table;
  std::vector<size_t> term_cols;
  // After "rank": an adaptive run's anytime interval and verdict, then the terminations, then
  // (c960 results --partial) "complete"; only the terminations are counts.
  if (rank_col)
    for (size_t i = *rank_col + 1; i < h.names().size(); ++i) {
      const std::string& name = h.names()[i];
      if (name == "anytime_lo" || name == "anytime_hi" || name == "verdict" || name == "rule" || name == "engine" ||
          name == "complete")
        continue;
      table.termination_names.push_back(name);
      term_cols.push_back(i);
    }

  // An adaptive run's columns come as a set.
  const std::optional<size_t> lo_col = h.find("anytime_lo"), hi_col = h.find("anytime_hi"),
                              verdict_col = h.find("verdict");
  table.adaptive = lo_col || hi_col || verdict_col;
  if (table.adaptive) {
    const std::vector<std::string> adaptive_names = {"anytime_lo", "anytime_hi", "verdict"};
    if (absl::StatusOr<std::vector<size_t>> a = require(h, records->front(), adaptive_names, "adaptive self-play");
        !a.ok())
      return a.status();
  }
  // The first verdict that names the rule's kind (a target width's "narrow", a band's "inside",
  // "above" or "below"): one run has one rule.
  std::string rule_verdict;
  int rule_line = 0;
  RunColumn rule(h, "rule"), engine(h, "engine");

  Seen seen;
  std::optional<Record> all_row;
  for (size_t ri = 1; ri < records->size(); ++ri) {
    const Record& r = (*records)[ri];
    if (absl::Status s = check_width(r, h); !s.ok()) return s;
    const std::string& id = r.fields[(*cols)[0]];
    if (table.adaptive)
      for (RunColumn* c : {&rule, &engine})
        if (absl::Status s = c->add(r); !s.ok()) return s;
    if (id == "all") {
      if (all_row) return absl::InvalidArgumentError(absl::StrCat("line ", r.line, ": a second 'all' row"));
      all_row = r;
      continue;
    }
    if (all_row)
      return absl::InvalidArgumentError(
          absl::StrCat("line ", r.line, ": a position after the 'all' row (line ", all_row->line, ")"));
    if (id.empty()) return cell_error(r, (*cols)[0], "sp", "empty");
    SelfPlayRow row;
    row.key = resolve_key(id, r.fields[(*cols)[1]]);
    int64_t v[4];
    for (int k = 0; k < 4; ++k) {
      absl::StatusOr<int64_t> x = read_int(r, (*cols)[size_t(k) + 2], names[size_t(k) + 2], int64_t(1) << 50);
      if (!x.ok()) return x.status();
      v[k] = *x;
    }
    if (v[0] != v[1] + v[2] + v[3])
      return cell_error(r, (*cols)[2], "games",
                        absl::StrCat(v[0], " games, but white_wins + draws + black_wins = ", v[1] + v[2] + v[3]));
    row.counts = {v[1], v[2], v[3]};
    if (plies_col) {
      absl::StatusOr<double> x = read_double(r, *plies_col, "mean_plies");
      if (!x.ok()) return x.status();
      row.mean_plies = *x;
    }
    if (lines_col && !r.fields[*lines_col].empty()) {
      absl::StatusOr<int64_t> x = read_int(r, *lines_col, "lines", std::max<int64_t>(v[0], 1));
      if (!x.ok()) return x.status();
      row.lines = *x;
    }
    if (effective_col) {
      absl::StatusOr<double> x = read_double(r, *effective_col, "effective_games");
      if (!x.ok()) return x.status();
      if (*x > double(v[0]) + 0.05)
        return cell_error(r, *effective_col, "effective_games",
                          absl::StrCat(r.fields[*effective_col], " is more than the ", v[0], " games"));
      row.effective_games = *x;
    }
    if (dup_col) {
      // Repeats may outnumber the distinct games (an engine that plays the same game again).
      absl::StatusOr<int64_t> x = read_int(r, *dup_col, "duplicates", int64_t(1) << 50);
      if (!x.ok()) return x.status();
      row.duplicates = *x;
    }
    if (uncounted_col) {
      absl::StatusOr<int64_t> x = read_int(r, *uncounted_col, "uncounted", int64_t(1) << 50);
      if (!x.ok()) return x.status();
      row.uncounted = *x;
    }
    for (size_t t = 0; t < term_cols.size(); ++t) {
      absl::StatusOr<int64_t> x =
          read_int(r, term_cols[t], table.termination_names[t], v[0] + row.uncounted + row.duplicates);
      if (!x.ok()) return x.status();
      row.terminations.push_back(*x);
    }
    if (table.adaptive) {
      absl::StatusOr<double> lo = read_double(r, *lo_col, "anytime_lo");
      if (!lo.ok()) return lo.status();
      absl::StatusOr<double> hi = read_double(r, *hi_col, "anytime_hi");
      if (!hi.ok()) return hi.status();
      if (!(*lo <= 1))
        return cell_error(r, *lo_col, "anytime_lo", absl::StrCat("'", r.fields[*lo_col], "' is not a score in 0..1"));
      if (!(*hi <= 1))
        return cell_error(r, *hi_col, "anytime_hi", absl::StrCat("'", r.fields[*hi_col], "' is not a score in 0..1"));
      if (!(*lo <= *hi))
        return cell_error(r, *hi_col, "anytime_hi",
                          absl::StrCat(r.fields[*hi_col], " is below anytime_lo (", r.fields[*lo_col], ")"));
      const std::string& v = r.fields[*verdict_col];
      if (v != "open" && v != "narrow" && v != "inside" && v != "above" && v != "below" && v != "cap")
        return cell_error(r, *verdict_col, "verdict",
                          absl::StrCat("'", v, "' is not open, narrow, inside, above, below or cap"));
      const bool band = v == "inside" || v == "above" || v == "below";
      if (band || v == "narrow") {
        if (rule_verdict.empty()) {
          rule_verdict = v;
          rule_line = r.line;
        } else if (band != (rule_verdict != "narrow")) {
          return cell_error(r, *verdict_col, "verdict",
                            absl::StrCat("'", v, "' is a ", band ? "band's" : "target width's", " verdict, but line ",
                                         rule_line, " has '", rule_verdict, "' (one run has one rule)"));
        }
      }
      row.anytime_lo = *lo;
      row.anytime_hi = *hi;
      row.verdict = v;
    }
    if (absl::Status s = seen.add(r, row.key); !s.ok()) return s;
    table.rows.push_back(std::move(row));
  }
  if (table.rows.empty()) return absl::InvalidArgumentError("the table has no positions");
  table.adaptive_rule = rule.value();
  table.engine = engine.value();
  if (all_row) {
    // A truncated or edited file shows here: the 'all' row must be the rows' sum.
    selfplay::ResultCounts sum;
    for (const SelfPlayRow& row : table.rows) {
      sum.white_wins += row.counts.white_wins;
      sum.draws += row.counts.draws;
      sum.black_wins += row.counts.black_wins;
    }
    const int64_t want[3] = {sum.white_wins, sum.draws, sum.black_wins};
    for (int k = 0; k < 3; ++k) {
      absl::StatusOr<int64_t> x = read_int(*all_row, (*cols)[size_t(k) + 3], names[size_t(k) + 3], int64_t(1) << 62);
      if (!x.ok()) return x.status();
      if (*x != want[k])
        return cell_error(*all_row, (*cols)[size_t(k) + 3], names[size_t(k) + 3],
                          absl::StrCat("the 'all' row says ", *x, " but the positions add up to ", want[k]));
    }
  }
  return table;
}

absl::StatusOr<PerftTable> parse_perft_csv(absl::string_view text) {
  absl::StatusOr<std::vector<Record>> records = read_csv(text);
  if (!records.ok()) return records.status();
  if (records->empty()) return absl::InvalidArgumentError("the table is empty");
  const Header h(records->front());
  const std::vector<std::string> names = {"sp", "fen", "depth", "nodes"};
  absl::StatusOr<std::vector<size_t>> cols = require(h, records->front(), names, "perft");
  if (!cols.ok()) return cols.status();
  const std::optional<size_t> move_col = h.find("move");

  PerftTable table;
  std::map<std::string, size_t> row_of;  // "id/depth" -> index in table.rows (divide tables)
  std::map<std::string, int> move_seen;  // "id/depth/move" -> line
  Seen seen;
  for (size_t ri = 1; ri < records->size(); ++ri) {
    const Record& r = (*records)[ri];
    if (h.same_as(r)) continue;  // concatenated tables
    if (absl::Status s = check_width(r, h); !s.ok()) return s;
    const std::string& id = r.fields[(*cols)[0]];
    if (id.empty()) return cell_error(r, (*cols)[0], "sp", "empty");
    absl::StatusOr<int64_t> depth = read_int(r, (*cols)[2], "depth", 64);
    if (!depth.ok()) return depth.status();
    absl::StatusOr<NodeCount> nodes = read_count(r, (*cols)[3], "nodes");
    if (!nodes.ok()) return nodes.status();
    const std::string at_depth = absl::StrCat("/", *depth);
    if (move_col) {
      const std::string move_key = absl::StrCat(id, at_depth, "/", r.fields[*move_col]);
      if (auto [it, fresh] = move_seen.emplace(move_key, r.line); !fresh)
        return absl::InvalidArgumentError(absl::StrCat("line ", r.line, ": move '", r.fields[*move_col],
                                                       "' of position '", id, "' at depth ", *depth,
                                                       " appears twice (also line ", it->second, ")"));
      if (auto it = row_of.find(id + at_depth); it != row_of.end()) {
        table.rows[it->second].nodes += *nodes;
        continue;
      }
    }
    PerftRow row{resolve_key(id, r.fields[(*cols)[1]]), int(*depth), *nodes};
    if (absl::Status s = seen.add(r, row.key, at_depth); !s.ok()) return s;
    row_of.emplace(id + at_depth, table.rows.size());
    table.rows.push_back(std::move(row));
  }
  if (table.rows.empty()) return absl::InvalidArgumentError("the table has no positions");
  return table;
}

absl::StatusOr<MatchTable> parse_match_csv(absl::string_view text) {
  absl::StatusOr<std::vector<Record>> records = read_csv(text);
  if (!records.ok()) return records.status();
  if (records->empty()) return absl::InvalidArgumentError("the table is empty");
  const Header h(records->front());
  // Counts, in this order; the derived columns must be there too (a table cut short is refused).
  const std::vector<std::string> names = {"sp",         "fen",      "pairs", "ll",     "ld",     "dd_wl",
                                          "wd",         "ww",       "games", "wins",   "draws",  "losses",
                                          "duplicates", "unpaired", "score", "p_holm", "favours"};
  absl::StatusOr<std::vector<size_t>> cols = require(h, records->front(), names, "match");
  if (!cols.ok()) return cols.status();
  const auto col = [&](size_t k) { return (*cols)[k]; };
  constexpr int64_t kMax = int64_t(1) << 50;

  MatchTable table;
  MatchRow sum;
  Seen seen;
  RunColumn engine_a(h, "engine_a"), engine_b(h, "engine_b");
  for (size_t ri = 1; ri < records->size(); ++ri) {
    const Record& r = (*records)[ri];
    if (absl::Status s = check_width(r, h); !s.ok()) return s;
    for (RunColumn* c : {&engine_a, &engine_b})
      if (absl::Status s = c->add(r); !s.ok()) return s;
    const std::string& id = r.fields[col(0)];
    if (id.empty()) return cell_error(r, col(0), "sp", "empty");
    const bool all = id == "all";
    if (!all && sum.key.id == "all")
      return absl::InvalidArgumentError(absl::StrCat("line ", r.line, ": a position after the 'all' row"));
    int64_t v[12] = {};  // pairs, ll, ld, dd_wl, wd, ww, games, wins, draws, losses, duplicates, unpaired
    for (size_t k = 0; k < 12; ++k) {
      absl::StatusOr<int64_t> x = read_int(r, col(k + 2), names[k + 2], all ? kMax * 1024 : kMax);
      if (!x.ok()) return x.status();
      v[k] = *x;
    }
    MatchRow row;
    for (size_t i = 0; i < 5; ++i) row.penta[i] = v[i + 1];
    row.wins = v[7], row.draws = v[8], row.losses = v[9], row.duplicates = v[10], row.unpaired = v[11];
    if (row.pairs() != v[0])
      return cell_error(r, col(2), "pairs",
                        absl::StrCat(v[0], " pairs, but ll + ld + dd_wl + wd + ww = ", row.pairs()));
    if (v[6] != row.wins + row.draws + row.losses)
      return cell_error(r, col(8), "games",
                        absl::StrCat(v[6], " games, but wins + draws + losses = ", row.wins + row.draws + row.losses));
    if (v[6] != 2 * v[0])
      return cell_error(r, col(8), "games", absl::StrCat(v[6], " games, but ", v[0], " pairs make ", 2 * v[0]));
    // A's points, in half points: from the games and from the pairs.
    const int64_t from_games = 2 * row.wins + row.draws,
                  from_pairs = row.penta[1] + 2 * row.penta[2] + 3 * row.penta[3] + 4 * row.penta[4];
    if (from_games != from_pairs)
      return cell_error(r, col(9), "wins",
                        absl::StrCat("A's points from wins and draws (", from_games / 2, from_games % 2 ? ".5" : "",
                                     ") differ from the pairs' (", from_pairs / 2, from_pairs % 2 ? ".5" : "", ")"));
    const std::string& favours = r.fields[col(16)];
    if (!favours.empty() && favours != "A" && favours != "B")
      return cell_error(r, col(16), "favours", absl::StrCat("'", favours, "' is not A, B or empty"));
    if (all) {
      if (sum.key.id == "all") return absl::InvalidArgumentError(absl::StrCat("line ", r.line, ": a second 'all' row"));
      // A truncated or edited file shows here: the 'all' row must be the rows' sum.
      const int64_t want[12] = {sum.pairs(),  sum.penta[0], sum.penta[1],    sum.penta[2],
                                sum.penta[3], sum.penta[4], 2 * sum.pairs(), sum.wins,
                                sum.draws,    sum.losses,   sum.duplicates,  sum.unpaired};
      for (size_t k = 0; k < 12; ++k)
        if (v[k] != want[k])
          return cell_error(r, col(k + 2), names[k + 2],
                            absl::StrCat("the 'all' row says ", v[k], " but the positions add up to ", want[k]));
      sum.key.id = "all";
      continue;
    }
    row.key = resolve_key(id, r.fields[col(1)]);
    if (absl::Status s = seen.add(r, row.key); !s.ok()) return s;
    for (size_t i = 0; i < 5; ++i) sum.penta[i] += row.penta[i];
    sum.wins += row.wins, sum.draws += row.draws, sum.losses += row.losses;
    sum.duplicates += row.duplicates, sum.unpaired += row.unpaired;
    table.rows.push_back(std::move(row));
  }
  if (table.rows.empty()) return absl::InvalidArgumentError("the table has no positions");
  table.engine_a = engine_a.value();
  table.engine_b = engine_b.value();
  return table;
}

namespace {

absl::Status json_error(const JsonValue& /*v*/, const std::string& path, const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", problem));
}

const JsonValue* member(const JsonValue& object, absl::string_view key, JsonValue::Type type) {
  const JsonValue* v = object.find(key);
  return v && v->type == type ? v : nullptr;
}

absl::StatusOr<int64_t> json_count(const JsonValue& object, const std::string& path, absl::string_view key) {
  const JsonValue* v = object.find(key);
  const std::string where = absl::StrCat(path, ".", key);
  if (!v) return json_error(object, where, "missing");
  int64_t n = 0;
  const auto [p, ec] = std::from_chars(v->text.data(), v->text.data() + v->text.size(), n);
  if (v->type != JsonValue::Type::kNumber || ec != std::errc() || p != v->text.data() + v->text.size() || n < 0 ||
      n > (int64_t(1) << 50))
    return json_error(*v, where, absl::StrCat("'", v->text, "' is not a whole number in 0..2^50"));
  return n;
}

absl::StatusOr<double> json_double(const JsonValue& object, const std::string& path, absl::string_view key) {
  const JsonValue* v = object.find(key);
  const std::string where = absl::StrCat(path, ".", key);
  if (!v) return json_error(object, where, "missing");
  double x = 0;
  const auto [p, ec] = std::from_chars(v->text.data(), v->text.data() + v->text.size(), x);
  if (v->type != JsonValue::Type::kNumber || ec != std::errc() || p != v->text.data() + v->text.size())
    return json_error(*v, where, "not a number");
  return x;
}

// The checks every match row passes, CSV or JSON: counts that add up.
std::string match_row_problem(const MatchRow& row, int64_t pairs, int64_t games) {
  if (row.pairs() != pairs) return absl::StrCat(pairs, " pairs, but the pentanomial counts add up to ", row.pairs());
  if (games != row.wins + row.draws + row.losses)
    return absl::StrCat(games, " games, but wins + draws + losses = ", row.wins + row.draws + row.losses);
  if (games != 2 * pairs) return absl::StrCat(games, " games, but ", pairs, " pairs make ", 2 * pairs);
  const int64_t from_games = 2 * row.wins + row.draws,
                from_pairs = row.penta[1] + 2 * row.penta[2] + 3 * row.penta[3] + 4 * row.penta[4];
  if (from_games != from_pairs)
    return absl::StrCat("A's points from wins and draws (", from_games / 2, from_games % 2 ? ".5" : "",
                        ") differ from the pairs' (", from_pairs / 2, from_pairs % 2 ? ".5" : "", ")");
  return "";
}

}  // namespace

absl::StatusOr<MatchTable> parse_match_json(absl::string_view text) {
  absl::StatusOr<JsonValue> doc = parse_json(text);
  if (!doc.ok()) return doc.status();
  if (doc->type != JsonValue::Type::kObject) return json_error(*doc, "the document", "not an object");
  const JsonValue* positions = member(*doc, "positions", JsonValue::Type::kArray);
  const JsonValue* engines = member(*doc, "engines", JsonValue::Type::kObject);
  if (!positions || !engines || !doc->find("total"))
    return json_error(*doc, "the document",
                      "not a match's JSON (c960 selfplay --opponent --format json has \"engines\", \"positions\" "
                      "and \"total\"); of a self-play run the report reads the CSV");
  MatchTable table;
  const JsonValue *a = member(*engines, "a", JsonValue::Type::kString),
                  *b = member(*engines, "b", JsonValue::Type::kString);
  if (!a || !b) return json_error(*engines, "engines", "needs the strings \"a\" and \"b\"");
  table.engine_a = a->text;
  table.engine_b = b->text;
  if (const JsonValue* m = member(*doc, "metadata", JsonValue::Type::kObject))
    for (const auto& [k, v] : m->members)
      if (v.type == JsonValue::Type::kString || v.type == JsonValue::Type::kNumber || v.type == JsonValue::Type::kBool)
        table.metadata.emplace_back(k, v.type == JsonValue::Type::kBool ? (v.boolean ? "true" : "false") : v.text);
  if (const JsonValue* sprt = doc->find("sprt"); sprt && sprt->type != JsonValue::Type::kNull) {
    if (sprt->type != JsonValue::Type::kObject) return json_error(*sprt, "sprt", "not an object");
    selfplay::SprtRule rule;
    double* fields[] = {&rule.elo0, &rule.elo1, &rule.alpha, &rule.beta};
    const char* names[] = {"elo0", "elo1", "alpha", "beta"};
    for (size_t k = 0; k < 4; ++k) {
      absl::StatusOr<double> x = json_double(*sprt, "sprt", names[k]);
      if (!x.ok()) return x.status();
      *fields[k] = *x;
    }
    const JsonValue* model = member(*sprt, "model", JsonValue::Type::kString);
    if (!model || (model->text != "logistic" && model->text != "normalized"))
      return json_error(*sprt, "sprt.model", "not \"logistic\" or \"normalized\"");
    rule.normalized = model->text == "normalized";
    if (absl::Status s = rule.validate(); !s.ok()) return json_error(*sprt, "sprt", std::string(s.message()));
    table.sprt = rule;
  }
  Seen seen;
  for (size_t i = 0; i < positions->items.size(); ++i) {
    const JsonValue& p = positions->items[i];
    const std::string path = absl::StrCat("positions[", i, "]");
    if (p.type != JsonValue::Type::kObject) return json_error(p, path, "not an object");
    const JsonValue* id = member(p, "id", JsonValue::Type::kString);
    if (!id || id->text.empty()) return json_error(p, path + ".id", "missing or empty");
    const JsonValue* fen = member(p, "fen", JsonValue::Type::kString);
    MatchRow row;
    row.key = resolve_key(id->text, fen ? fen->text : "");
    const JsonValue* penta = member(p, "pentanomial", JsonValue::Type::kArray);
    if (!penta || penta->items.size() != 5)
      return json_error(p, path + ".pentanomial", "needs five counts (LL, LD, DD or WL, WD, WW)");
    for (size_t k = 0; k < 5; ++k) {
      const JsonValue& c = penta->items[k];
      int64_t n = -1;
      const auto [end, ec] = std::from_chars(c.text.data(), c.text.data() + c.text.size(), n);
      if (c.type != JsonValue::Type::kNumber || ec != std::errc() || end != c.text.data() + c.text.size() || n < 0 ||
          n > (int64_t(1) << 50))
        return json_error(c, absl::StrCat(path, ".pentanomial[", k, "]"),
                          absl::StrCat("'", c.text, "' is not a count"));
      row.penta[k] = n;
    }
    int64_t v[7] = {};
    const char* keys[] = {"pairs", "games", "wins", "draws", "losses", "duplicates", "unpaired"};
    for (size_t k = 0; k < 7; ++k) {
      absl::StatusOr<int64_t> x = json_count(p, path, keys[k]);
      if (!x.ok()) return x.status();
      v[k] = *x;
    }
    row.wins = v[2], row.draws = v[3], row.losses = v[4], row.duplicates = v[5], row.unpaired = v[6];
    if (std::string problem = match_row_problem(row, v[0], v[1]); !problem.empty()) return json_error(p, path, problem);
    Record r;
    r.line = int(i) + 1;  // the position's number in the list: JSON rows have no lines of their own
    if (absl::Status s = seen.add(r, row.key); !s.ok())
      return absl::InvalidArgumentError(absl::StrCat(path, " (position ", i + 1, "): ", s.message()));
    table.rows.push_back(std::move(row));
  }
  if (table.rows.empty()) return absl::InvalidArgumentError("the match has no positions");
  return table;
}

SelfPlayTable selfplay_table_from_stats(const selfplay::SelfPlayStats& stats) {
  SelfPlayTable table;
  if (stats.adaptive().enabled()) {
    table.adaptive = true;
    table.adaptive_rule = selfplay::describe(stats.adaptive());
    table.engine = stats.engine();
  }
  for (size_t t = 0; t < size_t(selfplay::Termination::kCount); ++t)
    table.termination_names.emplace_back(selfplay::termination_name(selfplay::Termination(t)));
  for (const selfplay::PositionStats* p : stats.rows()) {
    SelfPlayRow row;
    row.key = resolve_key(p->id, p->fen);
    row.counts = p->counts;
    row.mean_plies = p->mean_plies();
    row.duplicates = p->duplicates;
    row.uncounted = p->uncounted;
    row.terminations.assign(p->terminations.begin(), p->terminations.end());
    if (stats.adaptive().enabled()) {
      const selfplay::AnytimeInterval a = stats.anytime(*p);
      row.anytime_lo = a.lo;
      row.anytime_hi = a.hi;
      row.verdict = std::string(selfplay::verdict_name(stats.verdict_of(*p, a)));
    }
    table.rows.push_back(std::move(row));
  }
  const selfplay::Relatedness related = stats.relatedness();
  for (size_t i = 0; i < table.rows.size(); ++i) {
    table.rows[i].lines = related.lines[i] > 0 ? related.lines[i] : -1;
    table.rows[i].effective_games = related.effective[i];
  }
  table.related_note = related.note();
  return table;
}

bool SelfPlayTable::effective_known() const {
  for (const SelfPlayRow& r : rows)
    if (r.counts.games() > 0 && std::isnan(r.effective_games)) return false;
  return true;
}

}  // namespace c960::report
