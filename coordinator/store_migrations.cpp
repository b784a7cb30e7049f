// The store's schema: the migrations in order, and the two that rewrite self-play data.
#include <iterator>
#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "cluster/config.h"
#include "coordinator/selfplay_codec.h"
#include "coordinator/store.h"
#include "coordinator/store_sql.h"

namespace c960::cluster {

using store_sql::describe;
using store_sql::Stmt;

namespace {

// Ordered migrations: migrations[v - 1] takes a file from version v - 1 to v. Never edit one
// that has shipped; add the next.
constexpr const char* kMigrations[] = {
    // 1: jobs, units with results, self-play games, workers.
    R"sql(
CREATE TABLE IF NOT EXISTS jobs (
  id TEXT PRIMARY KEY, seq INTEGER NOT NULL, request_id TEXT NOT NULL, spec BLOB NOT NULL,
  plan BLOB NOT NULL, state INTEGER NOT NULL, created_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL, mismatches INTEGER NOT NULL, mismatch_detail TEXT NOT NULL,
  failure_detail TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS units (
  job_id TEXT NOT NULL, idx INTEGER NOT NULL, spec BLOB NOT NULL, meta BLOB NOT NULL,
  attempt INTEGER NOT NULL, result BLOB, PRIMARY KEY (job_id, idx)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS games (
  job_id TEXT NOT NULL, sp INTEGER NOT NULL, game_index INTEGER NOT NULL, unit INTEGER NOT NULL,
  record BLOB NOT NULL, PRIMARY KEY (job_id, sp, game_index)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS workers (
  id TEXT PRIMARY KEY, seq INTEGER NOT NULL, name TEXT NOT NULL, version TEXT NOT NULL,
  threads INTEGER NOT NULL, capabilities TEXT NOT NULL, last_seen_ms INTEGER NOT NULL,
  lost INTEGER NOT NULL);
)sql",
    // 2: a job's unit count, so that missing unit rows are noticed on load, and whether its
    // units are all written (big plans are written in several transactions).
    R"sql(
ALTER TABLE jobs ADD COLUMN unit_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN planned INTEGER NOT NULL DEFAULT 1;
UPDATE jobs SET unit_count = (SELECT COUNT(*) FROM units WHERE units.job_id = jobs.id);
)sql",
    // 3: verified results. Jobs have an owner; units keep how many results they want and how
    // many copies agreed with the settled one; every copy a worker was given is kept with what
    // it sent; workers are kept by their key (identity/name) with their trust, sessions not at
    // all (a worker calls Hello again after a restart).
    R"sql(
ALTER TABLE jobs ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE units ADD COLUMN wanted INTEGER NOT NULL DEFAULT 0;
ALTER TABLE units ADD COLUMN votes INTEGER NOT NULL DEFAULT 0;
UPDATE units SET votes = 1 WHERE result IS NOT NULL;
CREATE TABLE copies (
  job_id TEXT NOT NULL, idx INTEGER NOT NULL, copy INTEGER NOT NULL, worker TEXT NOT NULL,
  attempt INTEGER NOT NULL, seed INTEGER NOT NULL, result BLOB, discarded INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (job_id, idx, copy)) WITHOUT ROWID;
DROP TABLE workers;
CREATE TABLE workers (
  key TEXT PRIMARY KEY, identity TEXT NOT NULL, host TEXT NOT NULL, version TEXT NOT NULL,
  threads INTEGER NOT NULL, capabilities TEXT NOT NULL, engines TEXT NOT NULL,
  last_seen_ms INTEGER NOT NULL, units_done INTEGER NOT NULL, agreeing INTEGER NOT NULL,
  trust INTEGER NOT NULL, trust_reason TEXT NOT NULL);
)sql",
    // 4: self-play that streams. Each position's statistics are kept up to date as units
    // settle (sp_totals, with sp_hashes counting each distinct game for duplicates); games are
    // kept compactly (sp_games: move codes, player names once per job in sp_names) and only as
    // the job asks; a settled unit keeps a digest and its games' summaries, its copies the
    // digest. convert_selfplay_v4() moves older results over, then the games table goes.
    R"sql(
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
)sql",
    // 5: folding. A lazily planned perft job's root whose units are all settled keeps one row
    // here (a serialized v1.store.FoldedGroup over units first_unit .. end_unit - 1) and its
    // unit and copy rows are deleted, so the store holds the units in flight, not every unit.
    R"sql(
CREATE TABLE folded (
  job_id TEXT NOT NULL, grp INTEGER NOT NULL, first_unit INTEGER NOT NULL, end_unit INTEGER NOT NULL,
  record BLOB NOT NULL, PRIMARY KEY (job_id, grp)) WITHOUT ROWID;
)sql",
    // 6: stored games' moves as their ranks among the legal moves, about 5 bits a ply (was core's
    // 16-bit move codes; selfplay_codec.h). No table changes: recode_selfplay_v6() rewrites
    // sp_games.moves, replaying each game from its job's position, and fails the migration on a
    // game that does not replay.
    "",
    // 7: worker credentials issued by Enroll (a join token traded for one per worker): the
    // token's hash only, the join token that paid for it, and the worker's name at the time.
    R"sql(
CREATE TABLE credentials (
  name TEXT PRIMARY KEY, hash TEXT NOT NULL UNIQUE, join_name TEXT NOT NULL, worker TEXT NOT NULL,
  created_ms INTEGER NOT NULL) WITHOUT ROWID;
)sql",
    // 8: every stored result bound to its row: `bound` is c960_bind over the row's key, its
    // unit's spec and the result (store_sql.h), written with each result and checked when it is
    // read back, so that a result moved to another unit's row, or damaged, is refused instead of
    // counted. A self-play position's games that are not evidence about it (an engine failure
    // before both engines played a move: selfplay::is_evidence) are counted apart, and a game
    // that repeats another counts once: recount_selfplay_v8() counts every self-play job's
    // statistics again from its settled units' game summaries.
    R"sql(
ALTER TABLE units ADD COLUMN bound BLOB;
ALTER TABLE copies ADD COLUMN bound BLOB;
ALTER TABLE folded ADD COLUMN bound BLOB;
ALTER TABLE sp_totals ADD COLUMN uncounted INTEGER NOT NULL DEFAULT 0;
UPDATE units SET bound = )sql" C960_UNIT_BINDING R"sql(;
UPDATE copies SET bound = )sql" C960_COPY_BINDING R"sql(;
UPDATE folded SET bound = )sql" C960_FOLD_BINDING R"sql(;
)sql",
    // 9: two-engine matches (SelfPlayJobSpec.opponent). A match position's colour-reversed pairs
    // are counted as its units settle: sp_totals.pairs (MatchCounts' figures, 8-byte counts:
    // pentanomial 0..4, wins, draws, losses, duplicates, unpaired; NULL for self-play), with
    // sp_pair_hashes counting each distinct pair as sp_hashes counts games. Workers keep their
    // provenance (c960 version, CPU, engines with their id names and SHA-256): the line that
    // the jobs they computed list.
    R"sql(
ALTER TABLE workers ADD COLUMN provenance TEXT NOT NULL DEFAULT '';
ALTER TABLE sp_totals ADD COLUMN pairs BLOB;
CREATE TABLE sp_pair_hashes (
  job_id TEXT NOT NULL, sp INTEGER NOT NULL, hash INTEGER NOT NULL, n INTEGER NOT NULL,
  PRIMARY KEY (job_id, sp, hash)) WITHOUT ROWID;
)sql",
    // 10: owners (the person or organisation behind a credential: verification counts owners).
    // A worker keeps the owner its credential had at its last Hello; a credential issued by
    // Enroll keeps its join token's owner ('' before: the join token's name stands for it).
    R"sql(
ALTER TABLE workers ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE credentials ADD COLUMN owner TEXT NOT NULL DEFAULT '';
)sql",
};
static_assert(std::size(kMigrations) == Store::kSchemaVersion);

}  // namespace

int Store::schema_version() {
  std::lock_guard lock(mu_);
  Stmt q(db_, "PRAGMA user_version");
  return q.ok() && q.step() == SQLITE_ROW ? int(q.i64(0)) : -1;
}

absl::Status Store::migrate(int up_to) {
  int version = 0;
  bool legacy = false;  // made before the schema had a version
  {
    Stmt q(db_, "PRAGMA user_version");
    if (!q.ok() || q.step() != SQLITE_ROW) return error("schema version");
    version = int(q.i64(0));
    Stmt t(db_, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'jobs'");
    legacy = version == 0 && t.ok() && t.step() == SQLITE_ROW;
  }
  if (version > kSchemaVersion)
    return absl::FailedPreconditionError(absl::StrCat("schema version ", version, " is newer than this coordinator's (",
                                                      kSchemaVersion, "): use a newer c960-coordinator"));
  if (legacy) {
    // The one store layout before versions: version 1 but for the FAILED reason, which stores
    // from before self-play jobs lack (as they lack the games table, which version 1 adds if
    // missing). Recognised once, here; later changes are migrations.
    bool has_failure_detail = false;
    {
      Stmt q(db_, "SELECT 1 FROM pragma_table_info('jobs') WHERE name = 'failure_detail'");
      has_failure_detail = q.ok() && q.step() == SQLITE_ROW;
    }
    Transaction t(this);
    if (!t.status().ok()) return t.status();
    if (!has_failure_detail)
      if (absl::Status s = exec("ALTER TABLE jobs ADD COLUMN failure_detail TEXT NOT NULL DEFAULT ''"); !s.ok())
        return s;
    if (absl::Status s = exec(kMigrations[0]); !s.ok()) return s;
    if (absl::Status s = exec("PRAGMA user_version = 1"); !s.ok()) return s;
    if (absl::Status s = t.commit(); !s.ok()) return s;
    version = 1;
  }
  for (; version < up_to; ++version) {
    Transaction t(this);
    if (!t.status().ok()) return t.status();
    if (absl::Status s = exec(kMigrations[version]); !s.ok()) return s;
    if (version + 1 == 4)
      if (absl::Status s = convert_selfplay_v4(); !s.ok()) return s;
    if (version + 1 == 6)
      if (absl::Status s = recode_selfplay_v6(); !s.ok()) return s;
    if (version + 1 == 8) {
      binds_ = true;
      if (absl::Status s = recount_selfplay_v8(); !s.ok()) return s;
    }
    if (absl::Status s = exec(absl::StrCat("PRAGMA user_version = ", version + 1).c_str()); !s.ok()) return s;
    if (absl::Status s = t.commit(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> Store::selfplay_job_ids() {
  std::vector<std::string> jobs;
  Stmt q(db_, "SELECT id, spec FROM jobs");
  if (!q.ok()) return error("self-play jobs");
  while (q.step() == SQLITE_ROW) {
    v1::JobSpec spec;
    if (spec.ParseFromString(q.blob(1)) && spec.has_selfplay()) jobs.push_back(q.blob(0));
  }
  return jobs;
}

absl::Status Store::recount_selfplay_v8() {
  absl::StatusOr<std::vector<std::string>> listed = selfplay_job_ids();
  if (!listed.ok()) return listed.status();
  const std::vector<std::string>& jobs = *listed;
  for (const std::string& id : jobs) {
    std::vector<std::pair<int64_t, int64_t>> stored;  // (sp, games stored): kept as they are
    {
      Stmt q(db_, "SELECT sp, COUNT(*) FROM sp_games WHERE job_id = ? GROUP BY sp");
      if (!q.ok()) return error("recount");
      q.bind_text(1, id);
      while (q.step() == SQLITE_ROW) stored.emplace_back(q.i64(0), q.i64(1));
    }
    for (const char* sql : {"DELETE FROM sp_hashes WHERE job_id = ?", "DELETE FROM sp_totals WHERE job_id = ?"}) {
      Stmt d(db_, sql);
      if (!d.ok()) return error("recount");
      d.bind_text(1, id);
      if (!d.run()) return error("recount");
    }
    Stmt u(db_, "SELECT idx, spec, meta, result FROM units WHERE job_id = ? AND result IS NOT NULL ORDER BY idx");
    if (!u.ok()) return error("recount");
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
      if (absl::Status a = apply_settlement(id, *s, 1); !a.ok()) return a;
    }
    if (rc != SQLITE_DONE) return error("recount");
    Stmt set(db_, "UPDATE sp_totals SET stored = ? WHERE job_id = ? AND sp = ?");
    if (!set.ok()) return error("recount");
    for (const auto& [sp, n] : stored) {
      set.reset();
      set.bind(1, n);
      set.bind_text(2, id);
      set.bind(3, sp);
      if (!set.run()) return error("recount");
    }
  }
  return absl::OkStatus();
}

absl::Status Store::convert_selfplay_v4() {
  absl::StatusOr<std::vector<std::string>> listed = selfplay_job_ids();
  if (!listed.ok()) return listed.status();
  const std::vector<std::string>& jobs = *listed;
  const auto clear_pgn = [](v1::UnitResult* r) {
    for (v1::SelfPlayGame& g : *r->mutable_selfplay()->mutable_games()) g.clear_pgn();
  };
  for (const std::string& id : jobs) {
    Stmt u(db_, "SELECT idx, spec, meta, result FROM units WHERE job_id = ? AND result IS NOT NULL ORDER BY idx");
    Stmt set(db_, "UPDATE units SET result = ? WHERE job_id = ? AND idx = ?");
    if (!u.ok() || !set.ok()) return error("convert");
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
      if (absl::Status s = apply_settlement(id, c->settlement, 1); !s.ok()) return s;
      set.reset();
      set.bind(1, c->settled.SerializeAsString());
      set.bind_text(2, id);
      set.bind(3, u.i64(0));
      if (!set.run()) return error("convert");
    }
    if (rc != SQLITE_DONE) return error("convert");
    // Copies keep the digest only, as they do from now on.
    Stmt c(db_, "SELECT idx, copy, result FROM copies WHERE job_id = ? AND result IS NOT NULL");
    Stmt cset(db_, "UPDATE copies SET result = ? WHERE job_id = ? AND idx = ? AND copy = ?");
    if (!c.ok() || !cset.ok()) return error("convert");
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
      if (!cset.run()) return error("convert");
    }
    if (rc != SQLITE_DONE) return error("convert");
  }
  return exec("DROP TABLE IF EXISTS games");
}

absl::Status Store::recode_selfplay_v6() {
  struct Job {
    std::string id;
    v1::JobSpec spec;
    v1::store::JobPlan plan;
  };
  std::vector<Job> jobs;
  {
    Stmt q(db_, "SELECT id, spec, plan FROM jobs");
    if (!q.ok()) return error("recode games");
    int rc;
    while ((rc = q.step()) == SQLITE_ROW) {
      Job j;
      j.id = q.blob(0);
      if (!j.spec.ParseFromString(q.blob(1)) || !j.spec.has_selfplay()) continue;
      if (!j.plan.ParseFromString(q.blob(2)))
        return absl::DataLossError(absl::StrCat("store: the plan of job ", j.id, " does not parse"));
      jobs.push_back(std::move(j));
    }
    if (rc != SQLITE_DONE) return error("recode games");
  }
  // In pages, so that neither a big job's games are all in memory nor a statement reads the rows
  // it rewrites.
  constexpr int kPage = 1024;
  Stmt page(db_,
            "SELECT sp, game_index, moves FROM sp_games WHERE job_id = ? AND (sp > ? OR (sp = ? AND game_index > ?)) "
            "ORDER BY sp, game_index LIMIT ?");
  Stmt set(db_, "UPDATE sp_games SET moves = ? WHERE job_id = ? AND sp = ? AND game_index = ?");
  if (!page.ok() || !set.ok()) return error("recode games");
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
      if (rc != SQLITE_DONE) return error("recode games");
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
        if (!set.run()) return error("recode games");
      }
      if (int(rows.size()) < kPage) break;
      last_sp = rows.back().sp;
      last_index = rows.back().index;
    }
  }
  return absl::OkStatus();
}

}  // namespace c960::cluster
