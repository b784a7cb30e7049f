#include "coordinator/store.h"

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "cluster/config.h"
#include "coordinator/selfplay_codec.h"

namespace c960::cluster {

// Prepared statements of the paths every lease and completion takes, kept for reuse: preparing
// one (parsing and planning the SQL) costs as much as running it, under the coordinator's lock.
struct Store::Statements {
  sqlite3* db;
  struct Entry {
    sqlite3_stmt* stmt = nullptr;
    bool in_use = false;  // a statement already stepping (a nested use) is not handed out twice
  };
  // By the SQL's address: every statement kept is a string literal (Stmt takes only arrays), so
  // a lookup hashes a pointer, not the text. Nodes do not move.
  std::unordered_map<const char*, Entry> entries;
  ~Statements() {
    for (auto& [sql, e] : entries) sqlite3_finalize(e.stmt);
  }
};

namespace {

// A statement for the length of a scope: prepared here and finalized on every path out of the
// function, or (given the store's Statements) taken from and given back to them, reset.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
  template <size_t N>
  Stmt(Store::Statements& cache, const char (&sql)[N]) {
    Store::Statements::Entry& e = cache.entries[sql];
    if (e.in_use) {
      rc_ = sqlite3_prepare_v2(cache.db, sql, -1, &s_, nullptr);
      return;
    }
    if (!e.stmt) rc_ = sqlite3_prepare_v3(cache.db, sql, -1, SQLITE_PREPARE_PERSISTENT, &e.stmt, nullptr);
    if (!e.stmt) return;  // rc_ says why; the entry stays empty and is prepared again next time
    e.in_use = true;
    entry_ = &e;
    s_ = e.stmt;
  }
  ~Stmt() {
    if (!entry_) {
      sqlite3_finalize(s_);
      return;
    }
    reset();
    entry_->in_use = false;
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  void bind(int i, const std::string& v) { sqlite3_bind_blob(s_, i, v.data(), int(v.size()), SQLITE_TRANSIENT); }
  void bind_text(int i, const std::string& v) { sqlite3_bind_text(s_, i, v.data(), int(v.size()), SQLITE_TRANSIENT); }
  void bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  void bind_null(int i) { sqlite3_bind_null(s_, i); }
  int step() { return sqlite3_step(s_); }
  // One statement that returns no rows.
  bool run() { return step() == SQLITE_DONE; }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  int64_t i64(int c) { return sqlite3_column_int64(s_, c); }
  bool is_null(int c) { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  std::string blob(int c) {
    const void* p = sqlite3_column_blob(s_, c);
    return p ? std::string(static_cast<const char*>(p), size_t(sqlite3_column_bytes(s_, c))) : std::string();
  }

 private:
  sqlite3_stmt* s_ = nullptr;
  int rc_ = SQLITE_OK;
  Store::Statements::Entry* entry_ = nullptr;
};

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
};
static_assert(std::size(kMigrations) == Store::kSchemaVersion);

// Why a write failed when SQLite kept no errno (it keeps the global errno only by chance: later
// calls overwrite it): what can make writes fail, looked at directly. Empty: nothing found.
std::string write_failure_cause(sqlite3* db) {
  const char* path = sqlite3_db_filename(db, "main");
  if (!path || !*path) return "";
  rlimit limit{};
  if (getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    for (const std::string& f : {std::string(path), absl::StrCat(path, "-wal"), absl::StrCat(path, "-journal")}) {
      struct stat st {};
      if (stat(f.c_str(), &st) == 0 && uint64_t(st.st_size) >= uint64_t(limit.rlim_cur))
        return "the disk is full (the file reached the process's file size limit)";
    }
  struct statvfs fs {};
  if (statvfs(path, &fs) == 0 && fs.f_bavail == 0) return "the disk is full";
  return "";
}

// What went wrong, in words an operator can act on.
std::string describe(sqlite3* db) {
  const int rc = sqlite3_extended_errcode(db);
  const int sys = sqlite3_system_errno(db);
  switch (rc & 0xFF) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return "the file is locked: is another coordinator using it?";
    case SQLITE_READONLY: return "the file or its directory is read-only";
    case SQLITE_FULL: return "the disk is full";
    case SQLITE_CANTOPEN:
      return absl::StrCat("cannot open the file", sys ? absl::StrCat(" (", std::strerror(sys), ")") : "");
    case SQLITE_IOERR:
      if (sys == EFBIG) return "the disk is full (the file reached the process's file size limit)";
      if (sys == ENOSPC) return "the disk is full";
      if (sys == EROFS || sys == EACCES || sys == EPERM) return "the file or its directory is read-only";
      if (std::string cause = write_failure_cause(db); !cause.empty()) return cause;
      return absl::StrCat("I/O error", sys ? absl::StrCat(" (", std::strerror(sys), ")") : "");
    default: return sqlite3_errmsg(db);
  }
}

}  // namespace

// Transactions nest by counting: only the outermost is an SQLite transaction (BEGIN ..
// COMMIT, prepared once). A nested one that fails or is rolled back poisons the outermost,
// which then cannot commit: a call's writes are kept all together or not at all, so a nested
// part needs no savepoint of its own (savepoints cost two parsed statements a call, under the
// coordinator's lock).
Store::Transaction::Transaction(Store* s) : s_(s), lock_(s->mu_) {
  if (s_->depth_ == 0) status_ = s_->run("BEGIN");
  if (status_.ok())
    ++s_->depth_;
  else if (s_->depth_ > 0)
    s_->poisoned_ = true;
}

Store::Transaction::~Transaction() {
  if (!status_.ok() || done_) return;
  --s_->depth_;
  if (s_->depth_ == 0) {
    s_->run("ROLLBACK").IgnoreError();  // after a failed COMMIT SQLite may have rolled back already
    s_->poisoned_ = false;
  } else {
    // A part of an enclosing transaction was lost: the enclosing one must not commit the rest.
    s_->poisoned_ = true;
  }
}

absl::Status Store::Transaction::commit() {
  if (!status_.ok()) return status_;
  const bool outermost = s_->depth_ == 1;
  if (outermost && s_->poisoned_)
    return absl::InternalError("store: a write inside this transaction failed; nothing of it was kept");
  if (s_->fault_)
    if (absl::Status s = s_->fault_(outermost ? "commit" : "write"); !s.ok()) return s;  // rolled back later
  if (outermost) {
    const auto start = std::chrono::steady_clock::now();
    if (absl::Status s = s_->run("COMMIT"); !s.ok()) return s;  // rolled back later
    if (s_->commit_observer_)
      s_->commit_observer_(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  done_ = true;
  --s_->depth_;
  return absl::OkStatus();
}

void Store::set_fault_injector(FaultInjector f) {
  std::lock_guard lock(mu_);
  fault_ = std::move(f);
}

std::unique_ptr<Store::Transaction> Store::transaction() { return std::unique_ptr<Transaction>(new Transaction(this)); }

absl::Status Store::check_write() {
  if (!fault_) return absl::OkStatus();
  absl::Status s = fault_(depth_ == 0 ? "commit" : "write");
  if (!s.ok() && depth_ > 0) poisoned_ = true;
  return s;
}

absl::Status Store::error(const char* what) const {
  // A failed statement inside a transaction: the enclosing transaction must not commit.
  if (depth_ > 0) poisoned_ = true;
  return absl::InternalError(absl::StrCat("store: ", what, ": ", describe(db_)));
}

absl::Status Store::exec(const char* sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
    const std::string why = describe(db_);
    absl::Status s =
        absl::InternalError(absl::StrCat("store: ", why, msg && why != msg ? absl::StrCat(" (", msg, ")") : ""));
    sqlite3_free(msg);
    return s;
  }
  return absl::OkStatus();
}

template <size_t N>
absl::Status Store::run(const char (&sql)[N]) {
  Stmt q(*statements_, sql);
  if (!q.ok() || q.step() != SQLITE_DONE) {
    const std::string why = describe(db_);
    return absl::InternalError(absl::StrCat("store: ", sql, ": ", why));
  }
  return absl::OkStatus();
}

absl::Status Store::exec_for_test(const std::string& sql) {
  std::lock_guard lock(mu_);
  return exec(sql.c_str());
}

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
    if (absl::Status s = exec(absl::StrCat("PRAGMA user_version = ", version + 1).c_str()); !s.ok()) return s;
    if (absl::Status s = t.commit(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Store>> Store::open(const std::string& path, int up_to) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    absl::Status s = absl::FailedPreconditionError(absl::StrCat("cannot open '", path, "': ", db ? describe(db) : "?"));
    sqlite3_close(db);
    return s;
  }
  std::unique_ptr<Store> store(new Store(db));
  sqlite3_extended_result_codes(db, 1);
  // WAL with synchronous=NORMAL: a committed transaction survives the process being killed
  // (only a power loss may drop the last ones), at a fraction of FULL's fsync cost.
  // One coordinator per file: the exclusive lock is taken now and held until the process ends
  // (a killed coordinator's lock goes with it), so a second one fails here, not halfway.
  sqlite3_busy_timeout(db, 500);
  std::lock_guard lock(store->mu_);
  for (const std::string& sql :
       {std::string("PRAGMA locking_mode=EXCLUSIVE"), std::string("PRAGMA journal_mode=WAL"),
        std::string("PRAGMA synchronous=NORMAL"), absl::StrCat("PRAGMA cache_size=-", kStoreCacheMiB * 1024),
        absl::StrCat("PRAGMA wal_autocheckpoint=", kStoreCheckpointPages), std::string("BEGIN EXCLUSIVE"),
        std::string("COMMIT")})
    if (absl::Status s = store->exec(sql.c_str()); !s.ok())
      return absl::FailedPreconditionError(absl::StrCat("cannot use '", path, "': ", s.message()));
  if (absl::Status s = store->migrate(up_to); !s.ok())
    return absl::FailedPreconditionError(absl::StrCat("cannot use '", path, "': ", s.message()));
  return store;
}

Store::Store(sqlite3* db) : db_(db), statements_(std::make_unique<Statements>(Statements{db, {}})) {}

Store::~Store() {
  statements_.reset();  // finalized before the connection closes
  sqlite3_close(db_);
}

void Store::set_commit_observer(std::function<void(double seconds)> observer) {
  std::lock_guard lock(mu_);
  commit_observer_ = std::move(observer);
}

Store::FileSizes Store::file_sizes() {
  std::lock_guard lock(mu_);
  FileSizes out;
  const char* name = sqlite3_db_filename(db_, "main");
  if (!name || !*name) return out;  // in memory
  struct stat st {};
  if (stat(name, &st) == 0) out.db = int64_t(st.st_size);
  if (stat(absl::StrCat(name, "-wal").c_str(), &st) == 0) out.wal = int64_t(st.st_size);
  return out;
}

absl::StatusOr<std::vector<StoredJob>> Store::load_jobs() {
  std::lock_guard lock(mu_);
  std::vector<StoredJob> jobs;
  {
    Stmt q(db_,
           "SELECT id, seq, request_id, spec, plan, state, created_ms, finished_ms, mismatches, mismatch_detail, "
           "failure_detail, unit_count, planned, owner FROM jobs ORDER BY seq");
    if (!q.ok()) return error("load jobs");
    int rc;
    while ((rc = q.step()) == SQLITE_ROW) {
      StoredJob j;
      j.id = q.blob(0);
      j.seq = q.i64(1);
      j.request_id = q.blob(2);
      j.spec = q.blob(3);
      j.plan = q.blob(4);
      j.state = int32_t(q.i64(5));
      j.created_ms = q.i64(6);
      j.finished_ms = q.i64(7);
      j.mismatches = q.i64(8);
      j.mismatch_detail = q.blob(9);
      j.failure_detail = q.blob(10);
      j.unit_count = q.i64(11);
      j.planned = q.i64(12) != 0;
      j.owner = q.blob(13);
      jobs.push_back(std::move(j));
    }
    if (rc != SQLITE_DONE) return error("load jobs");
  }
  Stmt u(db_, "SELECT idx, spec, meta, attempt, result, wanted, votes FROM units WHERE job_id = ? ORDER BY idx");
  Stmt c(db_,
         "SELECT idx, copy, worker, attempt, seed, result, discarded FROM copies WHERE job_id = ? ORDER BY idx, copy");
  Stmt f(db_, "SELECT grp, first_unit, end_unit, record FROM folded WHERE job_id = ? ORDER BY first_unit");
  if (!u.ok() || !c.ok() || !f.ok()) return error("load units");
  for (StoredJob& j : jobs) {
    u.reset();
    u.bind_text(1, j.id);
    int rc;
    while ((rc = u.step()) == SQLITE_ROW) {
      StoredUnit s;
      s.index = u.i64(0);
      s.spec = u.blob(1);
      s.meta = u.blob(2);
      s.attempt = int32_t(u.i64(3));
      if (!u.is_null(4)) s.result = u.blob(4);
      s.wanted = int32_t(u.i64(5));
      s.votes = int32_t(u.i64(6));
      j.units.push_back(std::move(s));
    }
    if (rc != SQLITE_DONE) return error("load units");
    // Units are in index order with no gaps unless the store is damaged, which the caller
    // checks; a copy of a unit that has no row is ignored here.
    c.reset();
    c.bind_text(1, j.id);
    size_t k = 0;
    while ((rc = c.step()) == SQLITE_ROW) {
      StoredCopy cp;
      cp.unit = c.i64(0);
      cp.copy = int32_t(c.i64(1));
      cp.worker = c.blob(2);
      cp.attempt = int32_t(c.i64(3));
      cp.zobrist_seed = uint64_t(c.i64(4));
      if (!c.is_null(5)) cp.result = c.blob(5);
      cp.discarded = c.i64(6) != 0;
      while (k < j.units.size() && j.units[k].index < cp.unit) ++k;
      if (k < j.units.size() && j.units[k].index == cp.unit) j.units[k].copies.push_back(std::move(cp));
    }
    if (rc != SQLITE_DONE) return error("load copies");
    f.reset();
    f.bind_text(1, j.id);
    while ((rc = f.step()) == SQLITE_ROW) j.folds.push_back(StoredFold{f.i64(0), f.i64(1), f.i64(2), f.blob(3)});
    if (rc != SQLITE_DONE) return error("load folded");
  }
  return jobs;
}

absl::StatusOr<std::vector<StoredWorker>> Store::load_workers() {
  std::lock_guard lock(mu_);
  std::vector<StoredWorker> workers;
  Stmt q(db_,
         "SELECT key, identity, host, version, threads, capabilities, engines, last_seen_ms, units_done, agreeing, "
         "trust, trust_reason FROM workers ORDER BY key");
  if (!q.ok()) return error("load workers");
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) {
    StoredWorker w;
    w.key = q.blob(0);
    w.identity = q.blob(1);
    w.host = q.blob(2);
    w.version = q.blob(3);
    w.threads = int32_t(q.i64(4));
    w.capabilities = q.blob(5);
    w.engines = q.blob(6);
    w.last_seen_ms = q.i64(7);
    w.units_done = q.i64(8);
    w.agreeing = q.i64(9);
    w.trust = int32_t(q.i64(10));
    w.trust_reason = q.blob(11);
    workers.push_back(std::move(w));
  }
  if (rc != SQLITE_DONE) return error("load workers");
  return workers;
}

absl::StatusOr<std::vector<StoredCredential>> Store::load_credentials() {
  std::lock_guard lock(mu_);
  std::vector<StoredCredential> out;
  Stmt q(db_, "SELECT name, hash, join_name, worker, created_ms FROM credentials ORDER BY created_ms, name");
  if (!q.ok()) return error("load credentials");
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) out.push_back({q.blob(0), q.blob(1), q.blob(2), q.blob(3), q.i64(4)});
  if (rc != SQLITE_DONE) return error("load credentials");
  return out;
}

absl::Status Store::add_credential(const StoredCredential& c) {
  std::lock_guard lock(mu_);
  if (absl::Status s = check_write(); !s.ok()) return s;
  Stmt q(db_, "INSERT INTO credentials (name, hash, join_name, worker, created_ms) VALUES (?, ?, ?, ?, ?)");
  if (!q.ok()) return error("add credential");
  q.bind_text(1, c.name);
  q.bind_text(2, c.hash);
  q.bind_text(3, c.join_name);
  q.bind_text(4, c.worker);
  q.bind(5, c.created_ms);
  if (!q.run()) return error("add credential");
  return absl::OkStatus();
}

absl::Status Store::insert_units(const std::string& job_id, const std::vector<StoredUnit>& units, size_t begin,
                                 size_t end) {
  Stmt u(db_,
         "INSERT INTO units (job_id, idx, spec, meta, attempt, result, wanted, votes) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  if (!u.ok()) return error("insert units");
  for (size_t i = begin; i < end; ++i) {
    const StoredUnit& s = units[i];
    u.reset();
    u.bind_text(1, job_id);
    u.bind(2, s.index);
    u.bind(3, s.spec);
    u.bind(4, s.meta);
    u.bind(5, int64_t(s.attempt));
    if (s.result)
      u.bind(6, *s.result);
    else
      u.bind_null(6);
    u.bind(7, int64_t(s.wanted));
    u.bind(8, int64_t(s.votes));
    if (!u.run()) return error("insert units");
  }
  return absl::OkStatus();
}

absl::Status Store::insert_job_row(const StoredJob& j, bool planned, int64_t unit_count) {
  Stmt q(
      db_,
      "INSERT INTO jobs (id, seq, request_id, spec, plan, state, created_ms, finished_ms, mismatches, "
      "mismatch_detail, failure_detail, unit_count, planned, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!q.ok()) return error("insert job");
  q.bind_text(1, j.id);
  q.bind(2, j.seq);
  q.bind_text(3, j.request_id);
  q.bind(4, j.spec);
  q.bind(5, j.plan);
  q.bind(6, int64_t(j.state));
  q.bind(7, j.created_ms);
  q.bind(8, j.finished_ms);
  q.bind(9, j.mismatches);
  q.bind_text(10, j.mismatch_detail);
  q.bind_text(11, j.failure_detail);
  q.bind(12, unit_count);
  q.bind(13, int64_t(planned));
  q.bind_text(14, j.owner);
  if (!q.run()) return error("insert job");
  return absl::OkStatus();
}

absl::Status Store::insert_job(const StoredJob& j) {
  std::lock_guard lock(mu_);
  Transaction t(this);
  if (!t.status().ok()) return t.status();
  if (absl::Status s = insert_job_row(j, true, int64_t(j.units.size())); !s.ok()) return s;
  if (absl::Status s = insert_units(j.id, j.units, 0, j.units.size()); !s.ok()) return s;
  return t.commit();
}

absl::Status Store::begin_job(const StoredJob& j) {
  std::lock_guard lock(mu_);
  Transaction t(this);
  if (!t.status().ok()) return t.status();
  if (absl::Status s = insert_job_row(j, false, 0); !s.ok()) return s;
  return t.commit();
}

absl::Status Store::add_units(const std::string& job_id, const std::vector<StoredUnit>& units, size_t begin,
                              size_t end) {
  std::lock_guard lock(mu_);
  Transaction t(this);
  if (!t.status().ok()) return t.status();
  if (absl::Status s = insert_units(job_id, units, begin, end); !s.ok()) return s;
  return t.commit();
}

absl::Status Store::finish_job_plan(const std::string& job_id, int64_t unit_count) {
  std::lock_guard lock(mu_);
  if (absl::Status s = check_write(); !s.ok()) return s;
  Stmt q(db_, "UPDATE jobs SET planned = 1, unit_count = ? WHERE id = ?");
  if (!q.ok()) return error("finish plan");
  q.bind(1, unit_count);
  q.bind_text(2, job_id);
  if (!q.run() || sqlite3_changes(db_) != 1) return error("finish plan");
  return absl::OkStatus();
}

absl::Status Store::extend_job_plan(const std::string& job_id, const std::string& plan,
                                    const std::vector<StoredUnit>& units, int64_t unit_count) {
  std::lock_guard lock(mu_);
  Transaction t(this);
  if (!t.status().ok()) return t.status();
  if (absl::Status s = insert_units(job_id, units, 0, units.size()); !s.ok()) return s;
  Stmt q(db_, "UPDATE jobs SET plan = ?, unit_count = ? WHERE id = ?");
  if (!q.ok()) return error("extend plan");
  q.bind(1, plan);
  q.bind(2, unit_count);
  q.bind_text(3, job_id);
  if (!q.run() || sqlite3_changes(db_) != 1) return error("extend plan");
  return t.commit();
}

absl::Status Store::fold_units(const std::string& job_id, const StoredFold& fold) {
  std::lock_guard lock(mu_);
  Transaction t(this);
  if (!t.status().ok()) return t.status();
  {
    // Only settled units fold: a unit without a result, or a missing one, is a bug, never a loss.
    Stmt q(db_, "SELECT COUNT(*), COUNT(result) FROM units WHERE job_id = ? AND idx >= ? AND idx < ?");
    if (!q.ok()) return error("fold units");
    q.bind_text(1, job_id);
    q.bind(2, fold.first);
    q.bind(3, fold.end);
    if (q.step() != SQLITE_ROW) return error("fold units");
    if (q.i64(0) != fold.end - fold.first || q.i64(1) != q.i64(0))
      return absl::InternalError(absl::StrCat("store: units ", job_id, "/", fold.first, "..", fold.end - 1, ": ",
                                              q.i64(0), " rows, ", q.i64(1), " settled; not folded"));
  }
  Stmt ins(db_, "INSERT INTO folded (job_id, grp, first_unit, end_unit, record) VALUES (?, ?, ?, ?, ?)");
  if (!ins.ok()) return error("fold units");
  ins.bind_text(1, job_id);
  ins.bind(2, fold.group);
  ins.bind(3, fold.first);
  ins.bind(4, fold.end);
  ins.bind(5, fold.record);
  if (!ins.run()) return error("fold units");
  for (const char* sql : {"DELETE FROM copies WHERE job_id = ? AND idx >= ? AND idx < ?",
                          "DELETE FROM units WHERE job_id = ? AND idx >= ? AND idx < ?"}) {
    Stmt q(db_, sql);
    if (!q.ok()) return error("fold units");
    q.bind_text(1, job_id);
    q.bind(2, fold.first);
    q.bind(3, fold.end);
    if (!q.run()) return error("fold units");
  }
  return t.commit();
}

absl::Status Store::retire_fold(const std::string& job_id, int64_t group, const std::string& record) {
  std::lock_guard lock(mu_);
  if (absl::Status s = check_write(); !s.ok()) return s;
  Stmt q(db_, "UPDATE folded SET grp = -1 - first_unit, record = ? WHERE job_id = ? AND grp = ?");
  if (!q.ok()) return error("retire folded group");
  q.bind(1, record);
  q.bind_text(2, job_id);
  q.bind(3, group);
  if (!q.run()) return error("retire folded group");
  if (sqlite3_changes(db_) != 1)
    return absl::InternalError(absl::StrCat("store: job ", job_id, " has no folded group ", group));
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Store::unit_rows(const std::string& job_id) {
  std::lock_guard lock(mu_);
  Stmt q(db_, "SELECT COUNT(*) FROM units WHERE job_id = ?");
  if (!q.ok()) return error("unit rows");
  q.bind_text(1, job_id);
  if (q.step() != SQLITE_ROW) return error("unit rows");
  return q.i64(0);
}

absl::Status Store::delete_job(const std::string& job_id) {
  std::lock_guard lock(mu_);
  Transaction t(this);
  if (!t.status().ok()) return t.status();
  for (const char* sql : {"DELETE FROM sp_games WHERE job_id = ?", "DELETE FROM sp_names WHERE job_id = ?",
                          "DELETE FROM sp_hashes WHERE job_id = ?", "DELETE FROM sp_totals WHERE job_id = ?",
                          "DELETE FROM copies WHERE job_id = ?", "DELETE FROM units WHERE job_id = ?",
                          "DELETE FROM folded WHERE job_id = ?", "DELETE FROM jobs WHERE id = ?"}) {
    Stmt q(db_, sql);
    if (!q.ok()) return error("delete job");
    q.bind_text(1, job_id);
    if (!q.run()) return error("delete job");
  }
  return t.commit();
}

absl::Status Store::update_job(const std::string& id, int32_t state, int64_t finished_ms, int64_t mismatches,
                               const std::string& mismatch_detail) {
  std::lock_guard lock(mu_);
  if (absl::Status s = check_write(); !s.ok()) return s;
  Stmt q(db_, "UPDATE jobs SET state = ?, finished_ms = ?, mismatches = ?, mismatch_detail = ? WHERE id = ?");
  if (!q.ok()) return error("update job");
  q.bind(1, int64_t(state));
  q.bind(2, finished_ms);
  q.bind(3, mismatches);
  q.bind_text(4, mismatch_detail);
  q.bind_text(5, id);
  if (!q.run()) return error("update job");
  return absl::OkStatus();
}

absl::Status Store::fail_job(const std::string& id, int32_t state, int64_t finished_ms,
                             const std::string& failure_detail) {
  std::lock_guard lock(mu_);
  if (absl::Status s = check_write(); !s.ok()) return s;
  Stmt q(db_, "UPDATE jobs SET state = ?, finished_ms = ?, failure_detail = ? WHERE id = ?");
  if (!q.ok()) return error("fail job");
  q.bind(1, int64_t(state));
  q.bind(2, finished_ms);
  q.bind_text(3, failure_detail);
  q.bind_text(4, id);
  if (!q.run()) return error("fail job");
  return absl::OkStatus();
}

absl::Status Store::record_leases(const std::string& job_id, const std::vector<Lease>& leases) {
  if (leases.empty()) return absl::OkStatus();
  std::lock_guard lock(mu_);
  Transaction t(this);
  if (!t.status().ok()) return t.status();
  Stmt u(*statements_, "UPDATE units SET attempt = ?, wanted = ? WHERE job_id = ? AND idx = ?");
  Stmt c(*statements_,
         "INSERT INTO copies (job_id, idx, copy, worker, attempt, seed) VALUES (?, ?, ?, ?, ?, ?) "
         "ON CONFLICT (job_id, idx, copy) DO UPDATE SET attempt = excluded.attempt");
  if (!u.ok() || !c.ok()) return error("record leases");
  for (const Lease& l : leases) {
    u.reset();
    u.bind(1, int64_t(l.attempt));
    u.bind(2, int64_t(l.wanted));
    u.bind_text(3, job_id);
    u.bind(4, l.unit);
    if (!u.run()) return error("record leases");
    c.reset();
    c.bind_text(1, job_id);
    c.bind(2, l.unit);
    c.bind(3, int64_t(l.copy.copy));
    c.bind_text(4, l.copy.worker);
    c.bind(5, int64_t(l.copy.attempt));
    c.bind(6, int64_t(l.copy.zobrist_seed));
    if (!c.run()) return error("record leases");
  }
  return t.commit();
}

absl::Status Store::put_copy_result(const std::string& job_id, int64_t unit, int32_t copy, const std::string& result) {
  std::lock_guard lock(mu_);
  if (absl::Status s = check_write(); !s.ok()) return s;
  Stmt q(*statements_, "UPDATE copies SET result = ? WHERE job_id = ? AND idx = ? AND copy = ?");
  if (!q.ok()) return error("copy result");
  q.bind(1, result);
  q.bind_text(2, job_id);
  q.bind(3, unit);
  q.bind(4, int64_t(copy));
  if (!q.run()) return error("copy result");
  return absl::OkStatus();
}

absl::Status Store::settle_unit(const std::string& job_id, int64_t unit, const std::string& result, int32_t votes,
                                std::optional<int32_t> job_state, int64_t finished_ms,
                                const SelfPlaySettlement* selfplay) {
  std::lock_guard lock(mu_);
  Transaction t(this);
  if (!t.status().ok()) return t.status();
  {
    Stmt q(*statements_, "UPDATE units SET result = ?, votes = ? WHERE job_id = ? AND idx = ? AND result IS NULL");
    if (!q.ok()) return error("settle unit");
    q.bind(1, result);
    q.bind(2, int64_t(votes));
    q.bind_text(3, job_id);
    q.bind(4, unit);
    if (!q.run()) return error("settle unit");
    // A settled unit stays as it is: a second settlement is a bug, never a second count.
    if (sqlite3_changes(db_) != 1)
      return absl::InternalError(absl::StrCat("store: unit ", job_id, "/", unit, " is settled already"));
  }
  if (selfplay)
    if (absl::Status s = apply_settlement(job_id, *selfplay, 1); !s.ok()) return s;
  if (job_state) {
    Stmt j(*statements_, "UPDATE jobs SET state = ?, finished_ms = ? WHERE id = ?");
    if (!j.ok()) return error("finish job");
    j.bind(1, int64_t(*job_state));
    j.bind(2, finished_ms);
    j.bind_text(3, job_id);
    if (!j.run()) return error("finish job");
  }
  return t.commit();
}

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
    Stmt q(*statements_,
           "SELECT games, white_wins, draws, black_wins, plies, duplicates, stored, terminations FROM sp_totals "
           "WHERE job_id = ? AND sp = ?");
    if (!q.ok()) return error("position totals");
    q.bind_text(1, job_id);
    q.bind(2, int64_t(sp.sp));
    if (q.step() == SQLITE_ROW) {
      t.games = q.i64(0);
      t.white_wins = q.i64(1);
      t.draws = q.i64(2);
      t.black_wins = q.i64(3);
      t.plies = q.i64(4);
      t.duplicates = q.i64(5);
      t.stored = q.i64(6);
      const std::string b = q.blob(7);
      for (size_t k = 0; k + 8 <= b.size(); k += 8) {
        uint64_t v = 0;
        std::memcpy(&v, b.data() + k, 8);
        t.terminations.push_back(int64_t(v));
      }
    }
  }
  // Each distinct game of a position is counted in sp_hashes; a game is a duplicate when its
  // hash was there before it, so duplicates = the sum of (n - 1), whatever order games settle in.
  Stmt h(*statements_,
         "INSERT INTO sp_hashes (job_id, sp, hash, n) VALUES (?, ?, ?, 1) ON CONFLICT (job_id, sp, hash) DO UPDATE "
         "SET n = n + 1 RETURNING n");
  Stmt hd(*statements_, "UPDATE sp_hashes SET n = n - 1 WHERE job_id = ? AND sp = ? AND hash = ? RETURNING n");
  Stmt hz(*statements_, "DELETE FROM sp_hashes WHERE job_id = ? AND sp = ? AND hash = ? AND n <= 0");
  if (!h.ok() || !hd.ok() || !hz.ok()) return error("game hashes");
  for (const GameSummary& g : sp.games) {
    t.games += sign;
    (g.result == 0 ? t.white_wins : g.result == 1 ? t.draws : t.black_wins) += sign;
    t.plies += sign * int64_t(g.plies);
    if (t.terminations.size() <= g.termination) t.terminations.resize(size_t(g.termination) + 1);
    t.terminations[g.termination] += sign;
    Stmt& q = sign > 0 ? h : hd;
    q.reset();
    q.bind_text(1, job_id);
    q.bind(2, int64_t(sp.sp));
    q.bind(3, int64_t(g.hash));
    if (q.step() != SQLITE_ROW) return error("game hashes");
    const int64_t n = q.i64(0);
    q.reset();
    if (sign > 0 && n > 1) ++t.duplicates;
    if (sign < 0 && n >= 1) --t.duplicates;
    if (sign < 0 && n <= 0) {
      hz.reset();
      hz.bind_text(1, job_id);
      hz.bind(2, int64_t(sp.sp));
      hz.bind(3, int64_t(g.hash));
      if (!hz.run()) return error("game hashes");
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
  std::string terms(t.terminations.size() * 8, '\0');
  for (size_t k = 0; k < t.terminations.size(); ++k) std::memcpy(terms.data() + 8 * k, &t.terminations[k], 8);
  Stmt u(*statements_,
         "INSERT OR REPLACE INTO sp_totals (job_id, sp, games, white_wins, draws, black_wins, plies, duplicates, "
         "stored, terminations) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
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
  if (!u.run()) return error("position totals");
  return absl::OkStatus();
}

absl::Status Store::set_votes(const std::string& job_id, int64_t unit, int32_t votes) {
  std::lock_guard lock(mu_);
  if (absl::Status s = check_write(); !s.ok()) return s;
  Stmt q(*statements_, "UPDATE units SET votes = ? WHERE job_id = ? AND idx = ?");
  if (!q.ok()) return error("set votes");
  q.bind(1, int64_t(votes));
  q.bind_text(2, job_id);
  q.bind(3, unit);
  if (!q.run()) return error("set votes");
  return absl::OkStatus();
}

absl::Status Store::unsettle_unit(const std::string& job_id, int64_t unit, int32_t wanted,
                                  const SelfPlaySettlement* selfplay) {
  std::lock_guard lock(mu_);
  Transaction t(this);
  if (!t.status().ok()) return t.status();
  Stmt q(*statements_, "UPDATE units SET result = NULL, votes = 0, wanted = ? WHERE job_id = ? AND idx = ?");
  if (!q.ok()) return error("unsettle unit");
  q.bind(1, int64_t(wanted));
  q.bind_text(2, job_id);
  q.bind(3, unit);
  if (!q.run()) return error("unsettle unit");
  if (selfplay)
    if (absl::Status s = apply_settlement(job_id, *selfplay, -1); !s.ok()) return s;
  return t.commit();
}

absl::StatusOr<std::optional<std::string>> Store::unit_result(const std::string& job_id, int64_t unit) {
  std::lock_guard lock(mu_);
  Stmt q(*statements_, "SELECT result FROM units WHERE job_id = ? AND idx = ?");
  if (!q.ok()) return error("unit result");
  q.bind_text(1, job_id);
  q.bind(2, unit);
  if (q.step() != SQLITE_ROW || q.is_null(0)) return std::optional<std::string>();
  return std::optional<std::string>(q.blob(0));
}

absl::Status Store::set_wanted(const std::string& job_id, int64_t unit, int32_t wanted) {
  std::lock_guard lock(mu_);
  if (absl::Status s = check_write(); !s.ok()) return s;
  Stmt q(*statements_, "UPDATE units SET wanted = ? WHERE job_id = ? AND idx = ?");
  if (!q.ok()) return error("set wanted");
  q.bind(1, int64_t(wanted));
  q.bind_text(2, job_id);
  q.bind(3, unit);
  if (!q.run()) return error("set wanted");
  return absl::OkStatus();
}

absl::Status Store::discard_copy(const std::string& job_id, int64_t unit, int32_t copy) {
  std::lock_guard lock(mu_);
  if (absl::Status s = check_write(); !s.ok()) return s;
  Stmt q(*statements_, "UPDATE copies SET discarded = 1 WHERE job_id = ? AND idx = ? AND copy = ?");
  if (!q.ok()) return error("discard copy");
  q.bind_text(1, job_id);
  q.bind(2, unit);
  q.bind(3, int64_t(copy));
  if (!q.run()) return error("discard copy");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<PositionTotals>> Store::load_position_totals(const std::string& job_id) {
  std::lock_guard lock(mu_);
  Stmt q(*statements_,
         "SELECT sp, games, white_wins, draws, black_wins, plies, duplicates, stored, terminations FROM sp_totals "
         "WHERE job_id = ? ORDER BY sp");
  if (!q.ok()) return error("position totals");
  q.bind_text(1, job_id);
  std::vector<PositionTotals> out;
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) {
    PositionTotals& t = out.emplace_back();
    t.sp = int32_t(q.i64(0));
    t.games = q.i64(1);
    t.white_wins = q.i64(2);
    t.draws = q.i64(3);
    t.black_wins = q.i64(4);
    t.plies = q.i64(5);
    t.duplicates = q.i64(6);
    t.stored = q.i64(7);
    const std::string b = q.blob(8);
    for (size_t k = 0; k + 8 <= b.size(); k += 8) {
      int64_t v = 0;
      std::memcpy(&v, b.data() + k, 8);
      t.terminations.push_back(v);
    }
  }
  if (rc != SQLITE_DONE) return error("position totals");
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

absl::Status Store::convert_selfplay_v4() {
  std::vector<std::string> jobs;
  {
    Stmt q(db_, "SELECT id, spec FROM jobs");
    if (!q.ok()) return error("convert");
    while (q.step() == SQLITE_ROW) {
      v1::JobSpec spec;
      if (spec.ParseFromString(q.blob(1)) && spec.has_selfplay()) jobs.push_back(q.blob(0));
    }
  }
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

absl::Status Store::upsert_worker(const StoredWorker& w) {
  std::lock_guard lock(mu_);
  if (absl::Status s = check_write(); !s.ok()) return s;
  Stmt q(*statements_,
         "INSERT INTO workers (key, identity, host, version, threads, capabilities, engines, last_seen_ms, units_done, "
         "agreeing, trust, trust_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
         "identity = excluded.identity, host = excluded.host, version = excluded.version, threads = excluded.threads, "
         "capabilities = excluded.capabilities, engines = excluded.engines, last_seen_ms = excluded.last_seen_ms, "
         "units_done = excluded.units_done, agreeing = excluded.agreeing, trust = excluded.trust, "
         "trust_reason = excluded.trust_reason");
  if (!q.ok()) return error("upsert worker");
  q.bind_text(1, w.key);
  q.bind_text(2, w.identity);
  q.bind_text(3, w.host);
  q.bind_text(4, w.version);
  q.bind(5, int64_t(w.threads));
  q.bind_text(6, w.capabilities);
  q.bind_text(7, w.engines);
  q.bind(8, w.last_seen_ms);
  q.bind(9, w.units_done);
  q.bind(10, w.agreeing);
  q.bind(11, int64_t(w.trust));
  q.bind_text(12, w.trust_reason);
  if (!q.run()) return error("upsert worker");
  return absl::OkStatus();
}

}  // namespace c960::cluster
