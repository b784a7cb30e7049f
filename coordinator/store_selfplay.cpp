// The self-play kind's tables: per-position statistics (sp_totals), distinct games
// (sp_hashes), player names (sp_names) and the games kept (sp_games). The kind writes them
// (JobKind::write_settled) in the transaction that settles or takes back a unit.
#include <cstring>
#include <optional>
#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "coordinator/selfplay_codec.h"
#include "coordinator/store.h"
#include "coordinator/store_sql.h"

namespace c960::cluster {

using store_sql::describe;
using store_sql::Stmt;

namespace {

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

}  // namespace

absl::StatusOr<int64_t> Store::name_id(const std::string& job_id, const std::string& name) {
  Stmt q(*statements_, "SELECT id FROM sp_names WHERE job_id = ? AND name = ?");
  if (!q.ok()) return error("player names");
  q.bind_text(1, job_id);
  q.bind_text(2, name);
  if (q.step() == SQLITE_ROW) return q.i64(0);
  Stmt i(*statements_,
         "INSERT INTO sp_names (job_id, id, name) VALUES (?, (SELECT COALESCE(MAX(id), -1) + 1 FROM sp_names WHERE "
         "job_id = ?), ?) RETURNING id");
  if (!i.ok()) return error("player names");
  i.bind_text(1, job_id);
  i.bind_text(2, job_id);
  i.bind_text(3, name);
  if (i.step() != SQLITE_ROW) return error("player names");
  return i.i64(0);
}

absl::Status Store::apply_settlement(const std::string& job_id, const SelfPlaySettlement& sp, int sign) {
  PositionTotals t;
  t.sp = sp.sp;
  {
    // Stores of older schemas (tests write them through this code) have no uncounted games.
    Stmt q(*statements_, binds_,
           "SELECT games, white_wins, draws, black_wins, plies, duplicates, stored, terminations, uncounted "
           "FROM sp_totals WHERE job_id = ? AND sp = ?",
           "SELECT games, white_wins, draws, black_wins, plies, duplicates, stored, terminations, 0 FROM "
           "sp_totals WHERE job_id = ? AND sp = ?");
    if (!q.ok()) return error("position totals");
    q.bind_text(1, job_id);
    q.bind(2, int64_t(sp.sp));
    if (q.step() == SQLITE_ROW) read_totals(q, 0, &t);
  }
  if (pairs_) {
    Stmt q(*statements_, "SELECT pairs FROM sp_totals WHERE job_id = ? AND sp = ? AND pairs IS NOT NULL");
    if (!q.ok()) return error("position pairs");
    q.bind_text(1, job_id);
    q.bind(2, int64_t(sp.sp));
    if (q.step() == SQLITE_ROW) t.pairs = unpack_counts(q.blob(0));
  }
  const bool match = sp.match || !t.pairs.empty();
  if (match && !pairs_) return absl::FailedPreconditionError("a match needs store schema 9");
  if (match) t.pairs.resize(kPairFigures, 0);
  // Each distinct game of a position is counted in sp_hashes; a game is a duplicate when its
  // hash was there before it, so duplicates = the sum of (n - 1), whatever order games settle in.
  Stmt h(*statements_,
         "INSERT INTO sp_hashes (job_id, sp, hash, n) VALUES (?, ?, ?, 1) ON CONFLICT (job_id, sp, hash) DO UPDATE "
         "SET n = n + 1 RETURNING n");
  Stmt hd(*statements_, "UPDATE sp_hashes SET n = n - 1 WHERE job_id = ? AND sp = ? AND hash = ? RETURNING n");
  Stmt hz(*statements_, "DELETE FROM sp_hashes WHERE job_id = ? AND sp = ? AND hash = ? AND n <= 0");
  if (!h.ok() || !hd.ok() || !hz.ok()) return error("game hashes");
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
    if (q.step() != SQLITE_ROW) return error("game hashes");
    const int64_t n = q.i64(0);
    q.reset();
    const bool distinct = sign > 0 ? n == 1 : n <= 0;
    if (distinct)
      (g.result == 0 ? t.white_wins : g.result == 1 ? t.draws : t.black_wins) += sign;
    else
      t.duplicates += sign;
    if (sign < 0 && n <= 0) {
      hz.reset();
      hz.bind_text(1, job_id);
      hz.bind(2, int64_t(sp.sp));
      hz.bind(3, int64_t(g.hash));
      if (!hz.run()) return error("game hashes");
    }
  }
  // A match counts its pairs (games 2k and 2k+1, both in the unit) as selfplay::MatchStats does:
  // a pair with a game that is not evidence is unpaired; a pair that repeats another (both games
  // move for move) is a duplicate, counted once, whatever order units settle in.
  if (match) {
    if (sp.first_game % 2 != 0 || sp.games.size() % 2 != 0)
      return absl::InternalError(
          absl::StrCat("match unit of games ", sp.first_game, "+", sp.games.size(), " does not hold whole pairs"));
    Stmt ph(*statements_,
            "INSERT INTO sp_pair_hashes (job_id, sp, hash, n) VALUES (?, ?, ?, 1) ON CONFLICT (job_id, sp, hash) DO "
            "UPDATE SET n = n + 1 RETURNING n");
    Stmt phd(*statements_, "UPDATE sp_pair_hashes SET n = n - 1 WHERE job_id = ? AND sp = ? AND hash = ? RETURNING n");
    Stmt phz(*statements_, "DELETE FROM sp_pair_hashes WHERE job_id = ? AND sp = ? AND hash = ? AND n <= 0");
    if (!ph.ok() || !phd.ok() || !phz.ok()) return error("pair hashes");
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
      if (q.step() != SQLITE_ROW) return error("pair hashes");
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
        if (!phz.run()) return error("pair hashes");
      }
    }
  }
  if (sign > 0 && !sp.stored.empty()) {
    // Plain INSERT: a game already stored fails the whole transaction (primary key).
    Stmt g(*statements_,
           "INSERT INTO sp_games (job_id, sp, game_index, result, termination, opening_plies, white, black, detail, "
           "moves) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    if (!g.ok()) return error("store games");
    for (const StoredGame& sg : sp.stored) {
      absl::StatusOr<int64_t> white = name_id(job_id, sg.white);
      if (!white.ok()) return white.status();
      absl::StatusOr<int64_t> black = name_id(job_id, sg.black);
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
      if (!g.run()) return error("store games");
    }
    t.stored += int64_t(sp.stored.size());
  } else if (sign < 0 && !sp.games.empty()) {
    // A unit's games are one range of its position.
    Stmt d(*statements_, "DELETE FROM sp_games WHERE job_id = ? AND sp = ? AND game_index >= ? AND game_index < ?");
    if (!d.ok()) return error("delete games");
    d.bind_text(1, job_id);
    d.bind(2, int64_t(sp.sp));
    d.bind(3, sp.first_game);
    d.bind(4, sp.first_game + int64_t(sp.games.size()));
    if (!d.run()) return error("delete games");
    t.stored -= sqlite3_changes(db_);
  }
  const std::string terms = pack_counts(t.terminations);
  Stmt u(*statements_, binds_,
         "INSERT OR REPLACE INTO sp_totals (job_id, sp, games, white_wins, draws, black_wins, plies, "
         "duplicates, stored, terminations, uncounted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
         "INSERT OR REPLACE INTO sp_totals (job_id, sp, games, white_wins, draws, black_wins, plies, "
         "duplicates, stored, terminations) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!u.ok()) return error("position totals");
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
  if (!u.run()) return error("position totals");
  if (match) {
    Stmt p(*statements_, "UPDATE sp_totals SET pairs = ? WHERE job_id = ? AND sp = ?");
    if (!p.ok()) return error("position pairs");
    p.bind(1, pack_counts(t.pairs));
    p.bind_text(2, job_id);
    p.bind(3, int64_t(sp.sp));
    if (!p.run()) return error("position pairs");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<PositionTotals>> Store::load_position_totals(const std::string& job_id) {
  std::lock_guard lock(mu_);
  Stmt q(*statements_, binds_,
         "SELECT sp, games, white_wins, draws, black_wins, plies, duplicates, stored, terminations, uncounted "
         "FROM sp_totals WHERE job_id = ? ORDER BY sp",
         "SELECT sp, games, white_wins, draws, black_wins, plies, duplicates, stored, terminations, 0 FROM "
         "sp_totals WHERE job_id = ? ORDER BY sp");
  if (!q.ok()) return error("position totals");
  q.bind_text(1, job_id);
  std::vector<PositionTotals> out;
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) {
    PositionTotals& t = out.emplace_back();
    t.sp = int32_t(q.i64(0));
    read_totals(q, 1, &t);
  }
  if (rc != SQLITE_DONE) return error("position totals");
  if (pairs_) {
    Stmt p(*statements_, "SELECT sp, pairs FROM sp_totals WHERE job_id = ? AND pairs IS NOT NULL ORDER BY sp");
    if (!p.ok()) return error("position pairs");
    p.bind_text(1, job_id);
    size_t at = 0;
    while ((rc = p.step()) == SQLITE_ROW) {
      const int32_t sp = int32_t(p.i64(0));
      while (at < out.size() && out[at].sp < sp) ++at;
      if (at < out.size() && out[at].sp == sp) out[at].pairs = unpack_counts(p.blob(1));
    }
    if (rc != SQLITE_DONE) return error("position pairs");
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

absl::StatusOr<std::vector<StoredGame>> Store::load_games(const std::string& job_id, int32_t sp, int64_t after,
                                                          int limit) {
  std::lock_guard lock(mu_);
  Stmt q(db_, absl::StrCat(kGameColumns,
                           "WHERE g.job_id = ? AND g.sp = ? AND g.game_index > ? ORDER BY g.game_index LIMIT ?")
                  .c_str());
  if (!q.ok()) return error("load games");
  q.bind_text(1, job_id);
  q.bind(2, int64_t(sp));
  q.bind(3, after);
  q.bind(4, int64_t(limit));
  std::vector<StoredGame> out;
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) out.push_back(game_row(q));
  if (rc != SQLITE_DONE) return error("load games");
  return out;
}

absl::StatusOr<std::vector<StoredGame>> Store::load_games(const std::string& job_id) {
  std::lock_guard lock(mu_);
  Stmt q(db_, absl::StrCat(kGameColumns, "WHERE g.job_id = ? ORDER BY g.sp, g.game_index").c_str());
  if (!q.ok()) return error("load games");
  q.bind_text(1, job_id);
  std::vector<StoredGame> out;
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) out.push_back(game_row(q));
  if (rc != SQLITE_DONE) return error("load games");
  return out;
}

}  // namespace c960::cluster
