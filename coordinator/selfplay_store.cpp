// The self-play kind's tables (selfplay_store.h): its rows written and read, its schema steps
// (the migrations that rewrite self-play data) and its rows' deletion.
#include "coordinator/selfplay_store.h"

#include <climits>
#include <cstring>
#include <optional>
#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "cluster/config.h"
#include "coordinator/selfplay_codec.h"
#include "coordinator/store.h"
#include "coordinator/store_sql.h"

namespace c960::cluster {

using store_sql::Stmt;

namespace {

// A position's lines (selfplay/lines.h): each line's distinct evidence games' results, by the
// line's hash. Made on every store as it opens (KindTables::create), no schema version of its
// own, and by the migrations that count games again (they run before it would be made).
constexpr const char* kLinesTable = R"sql(
CREATE TABLE IF NOT EXISTS sp_lines (
  job_id TEXT NOT NULL, sp INTEGER NOT NULL, line INTEGER NOT NULL, white_wins INTEGER NOT NULL,
  draws INTEGER NOT NULL, black_wins INTEGER NOT NULL, PRIMARY KEY (job_id, sp, line)) WITHOUT ROWID;
)sql";

// Counts as 8-byte little-endian integers (terminations, pairs).
std::string pack_counts(const std::vector<int64_t>& counts) {
  std::string out(counts.size() * 8, '\0');
  for (size_t k = 0; k < counts.size(); ++k) std::memcpy(out.data() + 8 * k, &counts[k], 8);
  return out;
}
std::vector<int64_t> unpack_counts(const std::string& b) {
  std::vector<int64_t> out;
  for (size_t k = 0; k + 8 <= b.size(); k += 8) {
    int64_t v = 0;
    std::memcpy(&v, b.data() + k, 8);
    out.push_back(v);
  }
  return out;
}

// An sp_totals row's counts, from column `first` on: games, white_wins, draws, black_wins,
// plies, duplicates, stored, terminations (8-byte little-endian counts), uncounted.
void read_totals(Stmt& q, int first, PositionTotals* t) {
  t->games = q.i64(first);
  t->white_wins = q.i64(first + 1);
  t->draws = q.i64(first + 2);
  t->black_wins = q.i64(first + 3);
  t->plies = q.i64(first + 4);
  t->duplicates = q.i64(first + 5);
  t->stored = q.i64(first + 6);
  t->terminations = unpack_counts(q.blob(first + 7));
  t->uncounted = q.i64(first + 8);
}

absl::StatusOr<int64_t> name_id(StoreSql& sql, const std::string& job_id, const std::string& name) {
  Stmt q(sql.statements(), "SELECT id FROM sp_names WHERE job_id = ? AND name = ?");
  if (!q.ok()) return sql.error("player names");
  q.bind_text(1, job_id);
  q.bind_text(2, name);
  if (q.step() == SQLITE_ROW) return q.i64(0);
  Stmt i(sql.statements(),
         "INSERT INTO sp_names (job_id, id, name) VALUES (?, (SELECT COALESCE(MAX(id), -1) + 1 FROM sp_names WHERE "
         "job_id = ?), ?) RETURNING id");
  if (!i.ok()) return sql.error("player names");
  i.bind_text(1, job_id);
  i.bind_text(2, job_id);
  i.bind_text(3, name);
  if (i.step() != SQLITE_ROW) return sql.error("player names");
  return i.i64(0);
}

absl::Status apply_settlement(StoreSql& sql, const std::string& job_id, const SelfPlaySettlement& sp, int sign) {
  const bool binds_ = sql.version() >= 8, pairs_ = sql.version() >= 9;
  PositionTotals t;
  t.sp = sp.sp;
  {
    // Stores of older schemas (tests write them through this code) have no uncounted games.
    Stmt q(sql.statements(), binds_,
           "SELECT games, white_wins, draws, black_wins, plies, duplicates, stored, terminations, uncounted "
           "FROM sp_totals WHERE job_id = ? AND sp = ?",
           "SELECT games, white_wins, draws, black_wins, plies, duplicates, stored, terminations, 0 FROM "
           "sp_totals WHERE job_id = ? AND sp = ?");
    if (!q.ok()) return sql.error("position totals");
    q.bind_text(1, job_id);
    q.bind(2, int64_t(sp.sp));
    if (q.step() == SQLITE_ROW) read_totals(q, 0, &t);
  }
  if (pairs_) {
    Stmt q(sql.statements(), "SELECT pairs FROM sp_totals WHERE job_id = ? AND sp = ? AND pairs IS NOT NULL");
    if (!q.ok()) return sql.error("position pairs");
    q.bind_text(1, job_id);
    q.bind(2, int64_t(sp.sp));
    if (q.step() == SQLITE_ROW) t.pairs = unpack_counts(q.blob(0));
  }
  const bool match = sp.match || !t.pairs.empty();
  if (match && !pairs_) return absl::FailedPreconditionError("a match needs store schema 9");
  if (match) t.pairs.resize(kPairFigures, 0);
  // Each distinct game of a position is counted in sp_hashes; a game is a duplicate when its
  // hash was there before it, so duplicates = the sum of (n - 1), whatever order games settle in.
  Stmt h(sql.statements(),
         "INSERT INTO sp_hashes (job_id, sp, hash, n) VALUES (?, ?, ?, 1) ON CONFLICT (job_id, sp, hash) DO UPDATE "
         "SET n = sp_hashes.n + 1 RETURNING n");
  Stmt hd(sql.statements(), "UPDATE sp_hashes SET n = n - 1 WHERE job_id = ? AND sp = ? AND hash = ? RETURNING n");
  Stmt hz(sql.statements(), "DELETE FROM sp_hashes WHERE job_id = ? AND sp = ? AND hash = ? AND n <= 0");
  if (!h.ok() || !hd.ok() || !hz.ok()) return sql.error("game hashes");
  // A distinct game's result goes to its line too (sp_lines), where the unit knows its games'
  // lines; a line whose last game goes is deleted.
  Stmt lu(sql.statements(),
          "INSERT INTO sp_lines (job_id, sp, line, white_wins, draws, black_wins) VALUES (?, ?, ?, ?, ?, ?) ON "
          "CONFLICT (job_id, sp, line) DO UPDATE SET white_wins = sp_lines.white_wins + excluded.white_wins, draws = "
          "sp_lines.draws + excluded.draws, black_wins = sp_lines.black_wins + excluded.black_wins");
  Stmt lz(sql.statements(),
          "DELETE FROM sp_lines WHERE job_id = ? AND sp = ? AND line = ? AND white_wins = 0 AND draws = 0 AND "
          "black_wins = 0");
  if (!lu.ok() || !lz.ok()) return sql.error("game lines");
  // A game counts in the results once per distinct game: the first of its hash adds its result,
  // a repeat only to duplicates, and taking games back undoes the same whatever the order (the
  // result of a distinct game goes when its last copy goes). Games that are not evidence
  // (selfplay::is_evidence) count apart, and not among the hashes.
  for (const GameSummary& g : sp.games) {
    t.games += sign;
    t.plies += sign * int64_t(g.plies);
    if (t.terminations.size() <= g.termination) t.terminations.resize(size_t(g.termination) + 1);
    t.terminations[g.termination] += sign;
    if (!g.evidence) {
      t.uncounted += sign;
      continue;
    }
    Stmt& q = sign > 0 ? h : hd;
    q.reset();
    q.bind_text(1, job_id);
    q.bind(2, int64_t(sp.sp));
    q.bind(3, int64_t(g.hash));
    if (q.step() != SQLITE_ROW) return sql.error("game hashes");
    const int64_t n = q.i64(0);
    q.reset();
    const bool distinct = sign > 0 ? n == 1 : n <= 0;
    if (distinct)
      (g.result == 0 ? t.white_wins : g.result == 1 ? t.draws : t.black_wins) += sign;
    else
      t.duplicates += sign;
    if (distinct && g.line) {
      lu.reset();
      lu.bind_text(1, job_id);
      lu.bind(2, int64_t(sp.sp));
      lu.bind(3, int64_t(*g.line));
      for (int r = 0; r < 3; ++r) lu.bind(4 + r, int64_t(g.result == r ? sign : 0));
      if (!lu.run()) return sql.error("game lines");
      if (sign < 0) {
        lz.reset();
        lz.bind_text(1, job_id);
        lz.bind(2, int64_t(sp.sp));
        lz.bind(3, int64_t(*g.line));
        if (!lz.run()) return sql.error("game lines");
      }
    }
    if (sign < 0 && n <= 0) {
      hz.reset();
      hz.bind_text(1, job_id);
      hz.bind(2, int64_t(sp.sp));
      hz.bind(3, int64_t(g.hash));
      if (!hz.run()) return sql.error("game hashes");
    }
  }
  // A match counts its pairs (games 2k and 2k+1, both in the unit) as selfplay::MatchStats does:
  // a pair with a game that is not evidence is unpaired; a pair that repeats another (both games
  // move for move) is a duplicate, counted once, whatever order units settle in.
  if (match) {
    if (sp.first_game % 2 != 0 || sp.games.size() % 2 != 0)
      return absl::InternalError(
          absl::StrCat("match unit of games ", sp.first_game, "+", sp.games.size(), " does not hold whole pairs"));
    Stmt ph(sql.statements(),
            "INSERT INTO sp_pair_hashes (job_id, sp, hash, n) VALUES (?, ?, ?, 1) ON CONFLICT (job_id, sp, hash) DO "
            "UPDATE SET n = sp_pair_hashes.n + 1 RETURNING n");
    Stmt phd(sql.statements(),
             "UPDATE sp_pair_hashes SET n = n - 1 WHERE job_id = ? AND sp = ? AND hash = ? RETURNING n");
    Stmt phz(sql.statements(), "DELETE FROM sp_pair_hashes WHERE job_id = ? AND sp = ? AND hash = ? AND n <= 0");
    if (!ph.ok() || !phd.ok() || !phz.ok()) return sql.error("pair hashes");
    // A's points in half points: game 2k has A White, 2k+1 B White (GameResult: 0 1-0, 1 draw, 2 0-1).
    const auto a_half = [](const GameSummary& g, bool a_white) {
      return g.result == 1 ? 1 : (g.result == 0) == a_white ? 2 : 0;
    };
    for (size_t k = 0; k + 1 < sp.games.size(); k += 2) {
      const GameSummary &a = sp.games[k], &b = sp.games[k + 1];
      if (!a.evidence || !b.evidence) {
        t.pairs[9] += 2 * sign;
        continue;
      }
      const uint64_t h = a.hash * 0x9e3779b97f4a7c15ULL ^ b.hash;
      Stmt& q = sign > 0 ? ph : phd;
      q.reset();
      q.bind_text(1, job_id);
      q.bind(2, int64_t(sp.sp));
      q.bind(3, int64_t(h));
      if (q.step() != SQLITE_ROW) return sql.error("pair hashes");
      const int64_t n = q.i64(0);
      q.reset();
      if (sign > 0 ? n == 1 : n <= 0) {
        const int first = a_half(a, true), second = a_half(b, false);
        t.pairs[size_t(first + second)] += sign;
        for (int half : {first, second}) t.pairs[half == 2 ? 5 : half == 1 ? 6 : 7] += sign;
      } else {
        t.pairs[8] += sign;
      }
      if (sign < 0 && n <= 0) {
        phz.reset();
        phz.bind_text(1, job_id);
        phz.bind(2, int64_t(sp.sp));
        phz.bind(3, int64_t(h));
        if (!phz.run()) return sql.error("pair hashes");
      }
    }
  }
  if (sign > 0 && !sp.stored.empty()) {
    // Plain INSERT: a game already stored fails the whole transaction (primary key).
    Stmt g(sql.statements(),
           "INSERT INTO sp_games (job_id, sp, game_index, result, termination, opening_plies, white, black, detail, "
           "moves) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    if (!g.ok()) return sql.error("store games");
    for (const StoredGame& sg : sp.stored) {
      absl::StatusOr<int64_t> white = name_id(sql, job_id, sg.white);
      if (!white.ok()) return white.status();
      absl::StatusOr<int64_t> black = name_id(sql, job_id, sg.black);
      if (!black.ok()) return black.status();
      g.reset();
      g.bind_text(1, job_id);
      g.bind(2, int64_t(sp.sp));
      g.bind(3, sg.index);
      g.bind(4, int64_t(sg.result));
      g.bind(5, int64_t(sg.termination));
      g.bind(6, int64_t(sg.opening_plies));
      g.bind(7, *white);
      g.bind(8, *black);
      if (sg.detail)
        g.bind_text(9, *sg.detail);
      else
        g.bind_null(9);
      g.bind(10, sg.moves);
      if (!g.run()) return sql.error("store games");
    }
    t.stored += int64_t(sp.stored.size());
  } else if (sign < 0 && !sp.games.empty()) {
    // A unit's games are one range of its position.
    Stmt d(sql.statements(), "DELETE FROM sp_games WHERE job_id = ? AND sp = ? AND game_index >= ? AND game_index < ?");
    if (!d.ok()) return sql.error("delete games");
    d.bind_text(1, job_id);
    d.bind(2, int64_t(sp.sp));
    d.bind(3, sp.first_game);
    d.bind(4, sp.first_game + int64_t(sp.games.size()));
    if (!d.run()) return sql.error("delete games");
    t.stored -= sql.db()->changes();
  }
  const std::string terms = pack_counts(t.terminations);
  Stmt u(sql.statements(), binds_,
         "INSERT INTO sp_totals (job_id, sp, games, white_wins, draws, black_wins, plies, duplicates, stored, "
         "terminations, uncounted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (job_id, sp) DO UPDATE SET "
         "games = excluded.games, white_wins = excluded.white_wins, draws = excluded.draws, black_wins = "
         "excluded.black_wins, plies = excluded.plies, duplicates = excluded.duplicates, stored = excluded.stored, "
         "terminations = excluded.terminations, uncounted = excluded.uncounted",
         "INSERT INTO sp_totals (job_id, sp, games, white_wins, draws, black_wins, plies, duplicates, stored, "
         "terminations) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (job_id, sp) DO UPDATE SET games = "
         "excluded.games, white_wins = excluded.white_wins, draws = excluded.draws, black_wins = excluded.black_wins, "
         "plies = excluded.plies, duplicates = excluded.duplicates, stored = excluded.stored, terminations = "
         "excluded.terminations");
  if (!u.ok()) return sql.error("position totals");
  u.bind_text(1, job_id);
  u.bind(2, int64_t(sp.sp));
  u.bind(3, t.games);
  u.bind(4, t.white_wins);
  u.bind(5, t.draws);
  u.bind(6, t.black_wins);
  u.bind(7, t.plies);
  u.bind(8, t.duplicates);
  u.bind(9, t.stored);
  u.bind(10, terms);
  if (binds_) u.bind(11, t.uncounted);
  if (!u.run()) return sql.error("position totals");
  if (match) {
    Stmt p(sql.statements(), "UPDATE sp_totals SET pairs = ? WHERE job_id = ? AND sp = ?");
    if (!p.ok()) return sql.error("position pairs");
    p.bind(1, pack_counts(t.pairs));
    p.bind_text(2, job_id);
    p.bind(3, int64_t(sp.sp));
    if (!p.run()) return sql.error("position pairs");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status apply_settlement(Store* store, const std::string& job_id, const SelfPlaySettlement& s, int sign) {
  StoreSql sql(store);
  return apply_settlement(sql, job_id, s, sign);
}

absl::StatusOr<std::vector<PositionTotals>> load_position_totals(Store* store, const std::string& job_id) {
  StoreSql sql(store);
  const bool binds_ = sql.version() >= 8, pairs_ = sql.version() >= 9;
  Stmt q(sql.statements(), binds_,
         "SELECT sp, games, white_wins, draws, black_wins, plies, duplicates, stored, terminations, uncounted "
         "FROM sp_totals WHERE job_id = ? ORDER BY sp",
         "SELECT sp, games, white_wins, draws, black_wins, plies, duplicates, stored, terminations, 0 FROM "
         "sp_totals WHERE job_id = ? ORDER BY sp");
  if (!q.ok()) return sql.error("position totals");
  q.bind_text(1, job_id);
  std::vector<PositionTotals> out;
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) {
    PositionTotals& t = out.emplace_back();
    t.sp = int32_t(q.i64(0));
    read_totals(q, 1, &t);
  }
  if (rc != SQLITE_DONE) return sql.error("position totals");
  if (pairs_) {
    Stmt p(sql.statements(), "SELECT sp, pairs FROM sp_totals WHERE job_id = ? AND pairs IS NOT NULL ORDER BY sp");
    if (!p.ok()) return sql.error("position pairs");
    p.bind_text(1, job_id);
    size_t at = 0;
    while ((rc = p.step()) == SQLITE_ROW) {
      const int32_t sp = int32_t(p.i64(0));
      while (at < out.size() && out[at].sp < sp) ++at;
      if (at < out.size() && out[at].sp == sp) out[at].pairs = unpack_counts(p.blob(1));
    }
    if (rc != SQLITE_DONE) return sql.error("position pairs");
  }
  // Lines grouped by their results; kept for a position only where they count each of its
  // distinct games once (else some of its units were settled before lines were counted).
  Stmt l(sql.statements(),
         "SELECT sp, white_wins, draws, black_wins, COUNT(*) FROM sp_lines WHERE job_id = ? GROUP BY sp, white_wins, "
         "draws, black_wins ORDER BY sp, white_wins, draws, black_wins");
  if (!l.ok()) return sql.error("position lines");
  l.bind_text(1, job_id);
  size_t at = 0;
  while ((rc = l.step()) == SQLITE_ROW) {
    const int32_t sp = int32_t(l.i64(0));
    while (at < out.size() && out[at].sp < sp) ++at;
    if (at < out.size() && out[at].sp == sp) out[at].lines.push_back({l.i64(1), l.i64(2), l.i64(3), l.i64(4)});
  }
  if (rc != SQLITE_DONE) return sql.error("position lines");
  for (PositionTotals& t : out) {
    int64_t w = 0, d = 0, b = 0;
    bool whole = true;
    for (const std::array<int64_t, 4>& g : t.lines) {
      whole = whole && g[0] >= 0 && g[1] >= 0 && g[2] >= 0 && g[0] + g[1] + g[2] > 0;
      w += g[0] * g[3];
      d += g[1] * g[3];
      b += g[2] * g[3];
    }
    if (!whole || w != t.white_wins || d != t.draws || b != t.black_wins) t.lines.clear();
  }
  return out;
}

namespace {

constexpr const char* kGameColumns =
    "SELECT g.sp, g.game_index, g.result, g.termination, g.opening_plies, w.name, b.name, g.detail, g.moves FROM "
    "sp_games g JOIN sp_names w ON w.job_id = g.job_id AND w.id = g.white JOIN sp_names b ON b.job_id = g.job_id "
    "AND b.id = g.black ";

StoredGame game_row(Stmt& q) {
  StoredGame g;
  g.sp = int32_t(q.i64(0));
  g.index = q.i64(1);
  g.result = int32_t(q.i64(2));
  g.termination = int32_t(q.i64(3));
  g.opening_plies = int32_t(q.i64(4));
  g.white = q.blob(5);
  g.black = q.blob(6);
  if (!q.is_null(7)) g.detail = q.blob(7);
  g.moves = q.blob(8);
  return g;
}

}  // namespace

absl::StatusOr<std::vector<StoredGame>> load_games(Store* store, const std::string& job_id, int32_t sp, int64_t after,
                                                   int limit) {
  StoreSql sql(store);
  Stmt q(sql.db(), absl::StrCat(kGameColumns,
                                "WHERE g.job_id = ? AND g.sp = ? AND g.game_index > ? ORDER BY g.game_index LIMIT ?")
                       .c_str());
  if (!q.ok()) return sql.error("load games");
  q.bind_text(1, job_id);
  q.bind(2, int64_t(sp));
  q.bind(3, after);
  q.bind(4, int64_t(limit));
  std::vector<StoredGame> out;
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) out.push_back(game_row(q));
  if (rc != SQLITE_DONE) return sql.error("load games");
  return out;
}

absl::StatusOr<std::vector<StoredGame>> load_games(Store* store, const std::string& job_id) {
  StoreSql sql(store);
  Stmt q(sql.db(), absl::StrCat(kGameColumns, "WHERE g.job_id = ? ORDER BY g.sp, g.game_index").c_str());
  if (!q.ok()) return sql.error("load games");
  q.bind_text(1, job_id);
  std::vector<StoredGame> out;
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) out.push_back(game_row(q));
  if (rc != SQLITE_DONE) return sql.error("load games");
  return out;
}

namespace {

// The ids of the self-play jobs (the steps that rewrite self-play data walk them).
absl::StatusOr<std::vector<std::string>> selfplay_job_ids(StoreSql& sql) {
  std::vector<std::string> jobs;
  Stmt q(sql.db(), "SELECT id, spec FROM jobs");
  if (!q.ok()) return sql.error("self-play jobs");
  while (q.step() == SQLITE_ROW) {
    v1::JobSpec spec;
    if (spec.ParseFromString(q.blob(1)) && spec.has_selfplay()) jobs.push_back(q.blob(0));
  }
  return jobs;
}

// Schema 8: self-play statistics counted again from the settled units' game summaries, each
// distinct game once (repeats in duplicates only).
absl::Status recount_selfplay_v8(StoreSql& sql) {
  if (absl::Status s = sql.exec(kLinesTable); !s.ok()) return s;
  absl::StatusOr<std::vector<std::string>> listed = selfplay_job_ids(sql);
  if (!listed.ok()) return listed.status();
  const std::vector<std::string>& jobs = *listed;
  for (const std::string& id : jobs) {
    std::vector<std::pair<int64_t, int64_t>> stored;  // (sp, games stored): kept as they are
    {
      Stmt q(sql.db(), "SELECT sp, COUNT(*) FROM sp_games WHERE job_id = ? GROUP BY sp");
      if (!q.ok()) return sql.error("recount");
      q.bind_text(1, id);
      while (q.step() == SQLITE_ROW) stored.emplace_back(q.i64(0), q.i64(1));
    }
    for (const char* text : {"DELETE FROM sp_hashes WHERE job_id = ?", "DELETE FROM sp_totals WHERE job_id = ?",
                             "DELETE FROM sp_lines WHERE job_id = ?"}) {
      Stmt d(sql.db(), text);
      if (!d.ok()) return sql.error("recount");
      d.bind_text(1, id);
      if (!d.run()) return sql.error("recount");
    }
    Stmt u(sql.db(), "SELECT idx, spec, meta, result FROM units WHERE job_id = ? AND result IS NOT NULL ORDER BY idx");
    if (!u.ok()) return sql.error("recount");
    u.bind_text(1, id);
    int rc;
    while ((rc = u.step()) == SQLITE_ROW) {
      v1::UnitSpec spec;
      v1::store::UnitMeta meta;
      if (!spec.ParseFromString(u.blob(1)) || !meta.ParseFromString(u.blob(2)))
        return absl::DataLossError(absl::StrCat("store: unit ", id, "/", u.i64(0), " does not parse"));
      absl::StatusOr<SelfPlaySettlement> s =
          settlement_from_settled(spec.selfplay(), meta.selfplay().position(), u.blob(3));
      if (!s.ok())
        return absl::DataLossError(absl::StrCat("store: unit ", id, "/", u.i64(0), ": ", s.status().message()));
      if (absl::Status a = apply_settlement(sql, id, *s, 1); !a.ok()) return a;
    }
    if (rc != SQLITE_DONE) return sql.error("recount");
    Stmt set(sql.db(), "UPDATE sp_totals SET stored = ? WHERE job_id = ? AND sp = ?");
    if (!set.ok()) return sql.error("recount");
    for (const auto& [sp, n] : stored) {
      set.reset();
      set.bind(1, n);
      set.bind_text(2, id);
      set.bind(3, sp);
      if (!set.run()) return sql.error("recount");
    }
  }
  return absl::OkStatus();
}

// Schema 4: self-play results of older stores into statistics, digests and compact games; the
// old games table goes.
absl::Status convert_selfplay_v4(StoreSql& sql) {
  if (absl::Status s = sql.exec(kLinesTable); !s.ok()) return s;
  absl::StatusOr<std::vector<std::string>> listed = selfplay_job_ids(sql);
  if (!listed.ok()) return listed.status();
  const std::vector<std::string>& jobs = *listed;
  const auto clear_pgn = [](v1::UnitResult* r) {
    for (v1::SelfPlayGame& g : *r->mutable_selfplay()->mutable_games()) g.clear_pgn();
  };
  for (const std::string& id : jobs) {
    Stmt u(sql.db(), "SELECT idx, spec, meta, result FROM units WHERE job_id = ? AND result IS NOT NULL ORDER BY idx");
    Stmt set(sql.db(), "UPDATE units SET result = ? WHERE job_id = ? AND idx = ?");
    if (!u.ok() || !set.ok()) return sql.error("convert");
    u.bind_text(1, id);
    int rc;
    while ((rc = u.step()) == SQLITE_ROW) {
      v1::UnitSpec spec;
      v1::store::UnitMeta meta;
      v1::UnitResult result;
      if (!spec.ParseFromString(u.blob(1)) || !meta.ParseFromString(u.blob(2)) || !result.ParseFromString(u.blob(3)))
        return absl::DataLossError(absl::StrCat("store: unit ", id, "/", u.i64(0), " does not parse"));
      clear_pgn(&result);
      // Rows as schema 4 has them: migration 6 recodes them.
      absl::StatusOr<SelfPlayCompact> c =
          compact_result(spec.selfplay(), meta.selfplay().position(), result, MoveCoding::kMoveCodes);
      if (!c.ok())
        return absl::DataLossError(absl::StrCat("store: unit ", id, "/", u.i64(0), ": ", c.status().message()));
      if (absl::Status s = apply_settlement(sql, id, c->settlement, 1); !s.ok()) return s;
      set.reset();
      set.bind(1, c->settled.SerializeAsString());
      set.bind_text(2, id);
      set.bind(3, u.i64(0));
      if (!set.run()) return sql.error("convert");
    }
    if (rc != SQLITE_DONE) return sql.error("convert");
    // Copies keep the digest only, as they do from now on.
    Stmt c(sql.db(), "SELECT idx, copy, result FROM copies WHERE job_id = ? AND result IS NOT NULL");
    Stmt cset(sql.db(), "UPDATE copies SET result = ? WHERE job_id = ? AND idx = ? AND copy = ?");
    if (!c.ok() || !cset.ok()) return sql.error("convert");
    c.bind_text(1, id);
    while ((rc = c.step()) == SQLITE_ROW) {
      v1::UnitResult result;
      if (!result.ParseFromString(c.blob(2)))
        return absl::DataLossError(absl::StrCat("store: a copy of ", id, " does not parse"));
      clear_pgn(&result);
      v1::store::SelfPlaySettled kept;
      kept.set_digest(result_digest(result));
      kept.set_games(result.selfplay().games_size());
      cset.reset();
      cset.bind(1, kept.SerializeAsString());
      cset.bind_text(2, id);
      cset.bind(3, c.i64(0));
      cset.bind(4, c.i64(1));
      if (!cset.run()) return sql.error("convert");
    }
    if (rc != SQLITE_DONE) return sql.error("convert");
  }
  return sql.exec("DROP TABLE IF EXISTS games");
}

// Schema 6: stored games' move codes into the legal-rank coding, each game replayed from its
// job's position; a game that does not replay fails the migration.
absl::Status recode_selfplay_v6(StoreSql& sql) {
  struct Job {
    std::string id;
    v1::JobSpec spec;
    v1::store::JobPlan plan;
  };
  std::vector<Job> jobs;
  {
    Stmt q(sql.db(), "SELECT id, spec, plan FROM jobs");
    if (!q.ok()) return sql.error("recode games");
    int rc;
    while ((rc = q.step()) == SQLITE_ROW) {
      Job j;
      j.id = q.blob(0);
      if (!j.spec.ParseFromString(q.blob(1)) || !j.spec.has_selfplay()) continue;
      if (!j.plan.ParseFromString(q.blob(2)))
        return absl::DataLossError(absl::StrCat("store: the plan of job ", j.id, " does not parse"));
      jobs.push_back(std::move(j));
    }
    if (rc != SQLITE_DONE) return sql.error("recode games");
  }
  // In pages, so that neither a big job's games are all in memory nor a statement reads the rows
  // it rewrites.
  constexpr int kPage = 1024;
  Stmt page(sql.db(),
            "SELECT sp, game_index, moves FROM sp_games WHERE job_id = ? AND (sp > ? OR (sp = ? AND game_index > ?)) "
            "ORDER BY sp, game_index LIMIT ?");
  Stmt set(sql.db(), "UPDATE sp_games SET moves = ? WHERE job_id = ? AND sp = ? AND game_index = ?");
  if (!page.ok() || !set.ok()) return sql.error("recode games");
  struct Row {
    int64_t sp, index;
    std::string moves;
  };
  for (const Job& j : jobs) {
    const int max_plies = j.spec.selfplay().max_plies() > 0 ? j.spec.selfplay().max_plies() : kMaxGamePlies;
    int64_t last_sp = -1, last_index = -1, start_sp = -1;
    std::string position_id;
    Position start;
    for (;;) {
      std::vector<Row> rows;
      page.reset();
      page.bind_text(1, j.id);
      page.bind(2, last_sp);
      page.bind(3, last_sp);
      page.bind(4, last_index);
      page.bind(5, int64_t(kPage));
      int rc;
      while ((rc = page.step()) == SQLITE_ROW) rows.push_back({page.i64(0), page.i64(1), page.blob(2)});
      if (rc != SQLITE_DONE) return sql.error("recode games");
      for (const Row& r : rows) {
        const auto damaged = [&](absl::string_view why) {
          return absl::DataLossError(absl::StrCat("store: job ", j.id, ", position ", r.sp, " of its plan",
                                                  position_id.empty() ? "" : absl::StrCat(" (", position_id, ")"),
                                                  ", game index ", r.index, ": ", why));
        };
        if (r.sp != start_sp) {
          position_id.clear();
          absl::StatusOr<selfplay::StartPosition> p =
              plan_position(j.plan.selfplay(), r.sp < 0 || r.sp > INT32_MAX ? -1 : int(r.sp));
          if (!p.ok()) return damaged(p.status().message());
          position_id = p->id;
          absl::StatusOr<Position> pos = Position::from_fen(p->fen);
          if (!pos.ok()) return damaged(pos.status().message());
          start = *pos;
          start_sp = r.sp;
        }
        absl::StatusOr<std::vector<Move>> moves = decode_move_codes(r.moves);
        if (!moves.ok()) return damaged(moves.status().message());
        if (moves->size() > size_t(max_plies))
          return damaged(absl::StrCat(moves->size(), " plies, more than the job's limit of ", max_plies));
        absl::StatusOr<std::string> coded = encode_moves(start, *moves);
        if (!coded.ok()) return damaged(coded.status().message());
        set.reset();
        set.bind(1, *coded);
        set.bind_text(2, j.id);
        set.bind(3, r.sp);
        set.bind(4, r.index);
        if (!set.run()) return sql.error("recode games");
      }
      if (int(rows.size()) < kPage) break;
      last_sp = rows.back().sp;
      last_index = rows.back().index;
    }
  }
  return absl::OkStatus();
}

constexpr const char* kStep1 = R"sql(
CREATE TABLE IF NOT EXISTS games (
  job_id TEXT NOT NULL, sp INTEGER NOT NULL, game_index INTEGER NOT NULL, unit INTEGER NOT NULL,
  record BLOB NOT NULL, PRIMARY KEY (job_id, sp, game_index)) WITHOUT ROWID;
)sql";

// 4: self-play that streams. Each position's statistics are kept up to date as units settle
// (sp_totals, with sp_hashes counting each distinct game for duplicates); games are kept
// compactly (sp_games: move codes, player names once per job in sp_names) and only as the job
// asks; a settled unit keeps a digest and its games' summaries, its copies the digest.
// convert_selfplay_v4() moves older results over, then the games table goes.
constexpr const char* kStep4 = R"sql(
CREATE TABLE sp_totals (
  job_id TEXT NOT NULL, sp INTEGER NOT NULL, games INTEGER NOT NULL, white_wins INTEGER NOT NULL,
  draws INTEGER NOT NULL, black_wins INTEGER NOT NULL, plies INTEGER NOT NULL,
  duplicates INTEGER NOT NULL, stored INTEGER NOT NULL, terminations BLOB NOT NULL,
  PRIMARY KEY (job_id, sp)) WITHOUT ROWID;
CREATE TABLE sp_hashes (
  job_id TEXT NOT NULL, sp INTEGER NOT NULL, hash INTEGER NOT NULL, n INTEGER NOT NULL,
  PRIMARY KEY (job_id, sp, hash)) WITHOUT ROWID;
CREATE TABLE sp_names (
  job_id TEXT NOT NULL, id INTEGER NOT NULL, name TEXT NOT NULL, PRIMARY KEY (job_id, id),
  UNIQUE (job_id, name));
CREATE TABLE sp_games (
  job_id TEXT NOT NULL, sp INTEGER NOT NULL, game_index INTEGER NOT NULL, result INTEGER NOT NULL,
  termination INTEGER NOT NULL, opening_plies INTEGER NOT NULL, white INTEGER NOT NULL,
  black INTEGER NOT NULL, detail TEXT, moves BLOB NOT NULL,
  PRIMARY KEY (job_id, sp, game_index)) WITHOUT ROWID;
)sql";

// 8: a position's games that are not evidence about it (an engine failure before both engines
// played a move: selfplay::is_evidence) are counted apart, and a game that repeats another
// counts once: recount_selfplay_v8() counts every self-play job's statistics again.
constexpr const char* kStep8 = "ALTER TABLE sp_totals ADD COLUMN uncounted INTEGER NOT NULL DEFAULT 0;";

// 9: two-engine matches (SelfPlayJobSpec.opponent). A match position's colour-reversed pairs are
// counted as its units settle: sp_totals.pairs (MatchCounts' figures, 8-byte counts: pentanomial
// 0..4, wins, draws, losses, duplicates, unpaired; NULL for self-play), with sp_pair_hashes
// counting each distinct pair as sp_hashes counts games.
constexpr const char* kStep9 = R"sql(
ALTER TABLE sp_totals ADD COLUMN pairs BLOB;
CREATE TABLE sp_pair_hashes (
  job_id TEXT NOT NULL, sp INTEGER NOT NULL, hash INTEGER NOT NULL, n INTEGER NOT NULL,
  PRIMARY KEY (job_id, sp, hash)) WITHOUT ROWID;
)sql";

class SelfPlayTables : public KindTables {
 public:
  const char* name() const override { return "selfplay"; }
  // Never edit a step that has shipped; add the next (at a new store version).
  std::vector<Step> steps() const override {
    return {{1, kStep1, nullptr},
            {4, kStep4, convert_selfplay_v4},
            {6, "", recode_selfplay_v6},
            {8, kStep8, recount_selfplay_v8},
            {9, kStep9, nullptr}};
  }
  const char* create() const override { return kLinesTable; }
  absl::Status delete_job(StoreSql& sql, const std::string& job_id) const override {
    std::vector<const char*> tables = {"DELETE FROM sp_games WHERE job_id = ?", "DELETE FROM sp_names WHERE job_id = ?",
                                       "DELETE FROM sp_hashes WHERE job_id = ?",
                                       "DELETE FROM sp_totals WHERE job_id = ?",
                                       "DELETE FROM sp_lines WHERE job_id = ?"};
    if (sql.version() >= 9) tables.push_back("DELETE FROM sp_pair_hashes WHERE job_id = ?");
    for (const char* text : tables) {
      Stmt q(sql.db(), text);
      if (!q.ok()) return sql.error("delete job");
      q.bind_text(1, job_id);
      if (!q.run()) return sql.error("delete job");
    }
    return absl::OkStatus();
  }
};

}  // namespace

const KindTables& selfplay_tables() {
  static const SelfPlayTables tables;
  return tables;
}

}  // namespace c960::cluster
