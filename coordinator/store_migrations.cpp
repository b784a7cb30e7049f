// The store's schema: the generic tables' migrations in order, with the kinds' steps
// (KindTables::steps) run after the generic step of their version.
#include <iterator>
#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "cluster/config.h"
#include "coordinator/store.h"
#include "coordinator/store_db.h"
#include "coordinator/store_sql.h"

namespace c960::cluster {

using store_sql::Stmt;

namespace {

// Ordered migrations: migrations[v - 1] takes a file from version v - 1 to v. Never edit one
// that has shipped; add the next.
constexpr const char* kMigrations[] = {
    // 1: jobs, units with results, workers (and the self-play kind's games: its step 1).
    R"sql(
CREATE TABLE IF NOT EXISTS jobs (
  id TEXT PRIMARY KEY, seq INTEGER NOT NULL, request_id TEXT NOT NULL, spec BLOB NOT NULL,
  plan BLOB NOT NULL, state INTEGER NOT NULL, created_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL, mismatches INTEGER NOT NULL, mismatch_detail TEXT NOT NULL,
  failure_detail TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS units (
  job_id TEXT NOT NULL, idx INTEGER NOT NULL, spec BLOB NOT NULL, meta BLOB NOT NULL,
  attempt INTEGER NOT NULL, result BLOB, PRIMARY KEY (job_id, idx)) WITHOUT ROWID;
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
    // 4: the self-play kind's statistics and compact games (its step 4).
    "",
    // 5: folding. A lazily planned perft job's root whose units are all settled keeps one row
    // here (a serialized v1.store.FoldedGroup over units first_unit .. end_unit - 1) and its
    // unit and copy rows are deleted, so the store holds the units in flight, not every unit.
    R"sql(
CREATE TABLE folded (
  job_id TEXT NOT NULL, grp INTEGER NOT NULL, first_unit INTEGER NOT NULL, end_unit INTEGER NOT NULL,
  record BLOB NOT NULL, PRIMARY KEY (job_id, grp)) WITHOUT ROWID;
)sql",
    // 6: the self-play kind's games recoded (its step 6).
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
    // counted. (The self-play kind's step 8 counts its statistics again.)
    R"sql(
ALTER TABLE units ADD COLUMN bound BLOB;
ALTER TABLE copies ADD COLUMN bound BLOB;
ALTER TABLE folded ADD COLUMN bound BLOB;
UPDATE units SET bound = )sql" C960_UNIT_BINDING R"sql(;
UPDATE copies SET bound = )sql" C960_COPY_BINDING R"sql(;
UPDATE folded SET bound = )sql" C960_FOLD_BINDING R"sql(;
)sql",
    // 9: workers keep their provenance (c960 version, CPU, engines with their id names and
    // SHA-256): the line that the jobs they computed list. (The self-play kind's step 9: matches.)
    R"sql(
ALTER TABLE workers ADD COLUMN provenance TEXT NOT NULL DEFAULT '';
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
  return read_version();
}

int Store::read_version() {
  const store_db::Dialect d = db_->dialect();
  if (d == store_db::Dialect::kPostgres) {  // its version's table is made on open (dialect::postgres_prelude)
    Stmt t(db_.get(), store_db::dialect::table_exists_query(d));
    if (!t.ok()) return -1;
    t.bind_text(1, "c960_schema");
    if (t.step() != SQLITE_ROW) return -1;
    if (t.i64(0) == 0) return 0;
  }
  Stmt q(db_.get(), store_db::dialect::schema_version_query(d));
  return q.ok() && q.step() == SQLITE_ROW ? int(q.i64(0)) : -1;
}

absl::Status Store::migrate(int up_to) {
  const store_db::Dialect d = db_->dialect();
  int version = read_version();
  if (version < 0) return error("schema version");
  bool legacy = false;  // an SQLite file made before the schema had a version
  if (version == 0 && d == store_db::Dialect::kSqlite) {
    Stmt t(db_.get(), store_db::dialect::table_exists_query(d));
    if (!t.ok()) return error("schema version");
    t.bind_text(1, "jobs");
    legacy = t.step() == SQLITE_ROW && t.i64(0) > 0;
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
      Stmt q(db_.get(), "SELECT 1 FROM pragma_table_info('jobs') WHERE name = 'failure_detail'");
      has_failure_detail = q.ok() && q.step() == SQLITE_ROW;
    }
    Transaction t(this);
    if (!t.status().ok()) return t.status();
    if (!has_failure_detail)
      if (absl::Status s = exec("ALTER TABLE jobs ADD COLUMN failure_detail TEXT NOT NULL DEFAULT ''"); !s.ok())
        return s;
    if (absl::Status s = exec(kMigrations[0]); !s.ok()) return s;
    if (absl::Status s = kind_step(1); !s.ok()) return s;
    if (absl::Status s = exec(store_db::dialect::set_schema_version(d, 1).c_str()); !s.ok()) return s;
    if (absl::Status s = t.commit(); !s.ok()) return s;
    version = 1;
  }
  for (; version < up_to; ++version) {
    Transaction t(this);
    if (!t.status().ok()) return t.status();
    if (absl::Status s = exec(kMigrations[version]); !s.ok()) return s;
    if (version + 1 == 8) binds_ = true;
    if (absl::Status s = kind_step(version + 1); !s.ok()) return s;
    if (absl::Status s = exec(store_db::dialect::set_schema_version(d, version + 1).c_str()); !s.ok()) return s;
    if (absl::Status s = t.commit(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status Store::kind_step(int version) {
  version_ = version;
  StoreSql sql(this);
  for (const KindTables* k : tables_)
    for (const KindTables::Step& step : k->steps()) {
      if (step.version != version) continue;
      if (*step.sql)
        if (absl::Status s = exec(step.sql); !s.ok())
          return absl::InternalError(absl::StrCat(k->name(), " tables, schema ", version, ": ", s.message()));
      if (step.rewrite)
        if (absl::Status s = step.rewrite(sql); !s.ok()) return s;
    }
  return absl::OkStatus();
}

absl::Status Store::create_kind_tables() {
  Transaction t(this);
  if (!t.status().ok()) return t.status();
  for (const KindTables* k : tables_)
    if (*k->create())
      if (absl::Status s = exec(k->create()); !s.ok())
        return absl::InternalError(absl::StrCat(k->name(), " tables: ", s.message()));
  return t.commit();
}

}  // namespace c960::cluster
