#include "coordinator/store.h"

#include <chrono>
#include <optional>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unordered_map>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cluster/config.h"
#include "coordinator/store_db.h"
#include "coordinator/store_sql.h"

namespace c960::cluster {

namespace {
// The leader as the lock's holder wrote it, when the session that wrote it holds the lock now
// (pg_locks shows a bigint key as classid = its high half, objid = its low half, objsubid 1): a
// row a dead leader left names nobody once its session has ended.
const std::string& read_leader_sql() {
  static const std::string sql = absl::StrCat(
      "SELECT holder, epoch FROM c960_leader WHERE pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' "
      "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND classid = 0 AND "
      "objid = ",
      Store::kAdvisoryLockKey, " AND objsubid = 1 AND granted)");
  return sql;
}
static_assert(Store::kAdvisoryLockKey >> 32 == 0, "classid = 0 above: the key's high half");
// Where open()'s ABORTED carries the leader it read ("EPOCH HOLDER").
constexpr char kLeaderPayload[] = "c960.store.leader";
}  // namespace

using store_sql::Stmt;

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
  return absl::InternalError(absl::StrCat("store: ", what, ": ", db_->describe()));
}

absl::Status Store::exec(const char* sql) {
  if (!db_->exec(sql)) return absl::InternalError(absl::StrCat("store: ", db_->describe()));
  return absl::OkStatus();
}

template <size_t N>
absl::Status Store::run(const char (&sql)[N]) {
  Stmt q(*statements_, sql);
  if (!q.ok() || q.step() != SQLITE_DONE) {
    return absl::InternalError(absl::StrCat("store: ", sql, ": ", db_->describe()));
  }
  return absl::OkStatus();
}

int Store::copy_into(sqlite3* dest, int pages_per_step) {
  sqlite3* src = db_->sqlite();
  if (!src) return SQLITE_MISUSE;
  sqlite3_backup* b = nullptr;
  {
    std::lock_guard lock(mu_);
    b = sqlite3_backup_init(dest, "main", src, "main");
  }
  if (!b) return sqlite3_errcode(dest);
  int rc = SQLITE_OK;
  while (rc == SQLITE_OK) {
    std::lock_guard lock(mu_);
    rc = sqlite3_backup_step(b, pages_per_step < 1 ? 1 : pages_per_step);
  }
  std::lock_guard lock(mu_);
  const int fin = sqlite3_backup_finish(b);
  return rc != SQLITE_DONE ? rc : fin;
}

absl::Status Store::check_alive() {
  std::lock_guard lock(mu_);
  Stmt q(*statements_, "SELECT 1");
  if (q.ok() && q.step() == SQLITE_ROW) return absl::OkStatus();
  if (db_->lost())
    return absl::AbortedError(
        absl::StrCat("store: ", db_->describe(), "; the leader lease (the session's advisory lock) went with it"));
  return absl::UnavailableError(absl::StrCat("store: ", db_->describe()));
}

absl::Status Store::limit_silence(int64_t ms) {
  std::lock_guard lock(mu_);
  return db_->limit_silence(ms);
}

absl::StatusOr<int64_t> Store::claim_leader(const std::string& holder) {
  std::lock_guard lock(mu_);
  if (embedded_) return 1;
  // One statement: the epoch grows by one at every holding, whoever held it before.
  Stmt q(db_.get(), "UPDATE c960_leader SET holder = ?, epoch = epoch + 1, pid = pg_backend_pid() RETURNING epoch");
  if (!q.ok()) return absl::UnavailableError(absl::StrCat("store: leader row: ", db_->describe()));
  q.bind_text(1, holder);
  if (q.step() != SQLITE_ROW) return absl::UnavailableError(absl::StrCat("store: leader row: ", db_->describe()));
  return q.i64(0);
}

absl::Status Store::set_leader_holder(const std::string& holder) {
  std::lock_guard lock(mu_);
  if (embedded_) return absl::OkStatus();
  Stmt q(db_.get(), "UPDATE c960_leader SET holder = ? WHERE pid = pg_backend_pid()");
  if (!q.ok()) return absl::UnavailableError(absl::StrCat("store: leader row: ", db_->describe()));
  q.bind_text(1, holder);
  if (!q.run()) return absl::UnavailableError(absl::StrCat("store: leader row: ", db_->describe()));
  return absl::OkStatus();
}

std::optional<Store::Leader> Store::leader_of(const absl::Status& aborted) {
  const auto payload = aborted.GetPayload(kLeaderPayload);
  if (!payload) return std::nullopt;
  const std::string text(*payload);
  const size_t space = text.find(' ');
  Leader out;
  if (space == std::string::npos || !absl::SimpleAtoi(text.substr(0, space), &out.epoch)) return std::nullopt;
  out.holder = text.substr(space + 1);
  if (out.holder.empty()) return std::nullopt;  // claimed before its address was known
  return out;
}

absl::Status Store::exec_for_test(const std::string& sql) {
  std::lock_guard lock(mu_);
  return exec(sql.c_str());
}

absl::StatusOr<std::unique_ptr<Store>> Store::open(const std::string& path, int up_to, bool init,
                                                   const std::vector<const KindTables*>& tables,
                                                   const std::string& password) {
  const bool pg = store_db::is_postgres_url(path);
  const std::string name = pg ? store_db::redact_url(path) : path;  // as errors name it
  // A file that is there but holds no store (0 bytes: a mount or a copy gone wrong) would
  // otherwise start as an empty store without a word, its jobs gone.
  struct stat st {};
  if (!pg && !init && path != ":memory:" && stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
    return absl::FailedPreconditionError(
        absl::StrCat("'", path, "' exists but is empty: it is not a c960 store; give --init to make a new one there"));
  absl::StatusOr<std::unique_ptr<store_db::Connection>> db =
      pg ? store_db::open_postgres(path, password) : store_db::open_sqlite(path);
  if (!db.ok()) return db.status();
  std::unique_ptr<Store> store(new Store(std::move(*db)));
  store->tables_ = tables;
  store->embedded_ = !pg;
  store_db::Connection* c = store->db_.get();
  const auto refused = [&name](const absl::Status& s) {
    return absl::FailedPreconditionError(absl::StrCat("cannot use '", name, "': ", s.message()));
  };
  std::lock_guard lock(store->mu_);
  if (pg) {
    // One coordinator per database: a session lock, held until the connection closes (a killed
    // coordinator's goes with it), so a second one fails here, not halfway.
    Stmt lock_db(c, absl::StrCat("SELECT pg_try_advisory_lock(", kAdvisoryLockKey, ")").c_str());
    if (!lock_db.ok() || lock_db.step() != SQLITE_ROW) return refused(store->error("lock"));
    if (lock_db.i64(0) == 0) {
      absl::Status busy = absl::AbortedError(  // (ABORTED: StoreLease tells a leader's lock from a failure)
          absl::StrCat("cannot use '", name, "': another coordinator is using this database"));
      // Who, as it wrote (a standby names it to clients). A database without the table yet, or
      // a lock whose holder wrote no row, names nobody.
      Stmt leader(c, read_leader_sql().c_str());
      if (leader.ok() && leader.step() == SQLITE_ROW)
        busy.SetPayload(kLeaderPayload, absl::Cord(absl::StrCat(leader.i64(1), " ", leader.blob(0))));
      return busy;
    }
  }
  // A file or database of something else (no c960 schema version, and tables c960 never had):
  // not ours to change. (Stores from before schema versions have version 0 and c960's first
  // tables.)
  if (!init && path != ":memory:") {
    const int version = store->read_version();
    Stmt foreign(c, store_db::dialect::foreign_tables_query(c->dialect()));
    if (version < 0 || !foreign.ok() || foreign.step() != SQLITE_ROW) return refused(store->error("schema version"));
    if (version == 0 && foreign.i64(0) > 0)
      return absl::FailedPreconditionError(absl::StrCat(
          "'", name, "' is ", pg ? "a PostgreSQL database" : "an SQLite file",
          " but not a c960 store (its tables have no c960 schema version); give --init to add a c960 store to it"));
  }
  if (pg) {
    // The schema version's table and c960_bind, before the migrations that use them.
    if (absl::Status s = store->exec(store_db::dialect::postgres_prelude()); !s.ok()) return refused(s);
  } else {
    // WAL with synchronous=NORMAL: a committed transaction survives the process being killed
    // (only a power loss may drop the last ones), at a fraction of FULL's fsync cost.
    // One coordinator per file: the exclusive lock is taken now and held until the process ends
    // (a killed coordinator's lock goes with it), so a second one fails here, not halfway.
    for (const std::string& sql :
         {std::string("PRAGMA locking_mode=EXCLUSIVE"), std::string("PRAGMA journal_mode=WAL"),
          std::string("PRAGMA synchronous=NORMAL"), absl::StrCat("PRAGMA cache_size=-", kStoreCacheMiB * 1024),
          absl::StrCat("PRAGMA wal_autocheckpoint=", kStoreCheckpointPages), std::string("BEGIN EXCLUSIVE"),
          std::string("COMMIT")})
      if (absl::Status s = store->exec(sql.c_str()); !s.ok()) return refused(s);
  }
  if (absl::Status s = store->migrate(up_to); !s.ok()) return refused(s);
  store->version_ = up_to;
  if (absl::Status s = store->create_kind_tables(); !s.ok()) return refused(s);
  store->binds_ = up_to >= 8;
  store->pairs_ = up_to >= 9;
  store->owners_ = up_to >= 10;
  return store;
}

Store::Store(std::unique_ptr<store_db::Connection> db)
    : db_(std::move(db)), statements_(std::make_unique<Statements>(Statements{db_.get(), {}})) {}

Store::~Store() {
  statements_.reset();  // finalized before the connection closes
}

void Store::set_commit_observer(std::function<void(double seconds)> observer) {
  std::lock_guard lock(mu_);
  commit_observer_ = std::move(observer);
}

Store::FileSizes Store::file_sizes() {
  std::lock_guard lock(mu_);
  FileSizes out;
  sqlite3* db = db_->sqlite();
  const char* name = db ? sqlite3_db_filename(db, "main") : nullptr;
  if (!name || !*name) return out;  // in memory, or PostgreSQL's
  struct stat st {};
  if (stat(name, &st) == 0) out.db = int64_t(st.st_size);
  if (stat(absl::StrCat(name, "-wal").c_str(), &st) == 0) out.wal = int64_t(st.st_size);
  return out;
}

absl::StatusOr<std::vector<StoredJob>> Store::load_jobs() {
  std::lock_guard lock(mu_);
  std::vector<StoredJob> jobs;
  {
    Stmt q(db_.get(),
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
  // Each result with whether it is still bound to its row (schema 8; older stores in tests: yes).
  Stmt u(db_.get(), binds_ ? "SELECT idx, spec, meta, attempt, result, wanted, votes, bound IS " C960_UNIT_BINDING
                             " FROM units WHERE job_id = ? ORDER BY idx"
                           : "SELECT idx, spec, meta, attempt, result, wanted, votes, 1 FROM units WHERE job_id = ? "
                             "ORDER BY idx");
  Stmt c(db_.get(), binds_
                        ? "SELECT idx, copy, worker, attempt, seed, result, discarded, bound IS " C960_COPY_BINDING
                          " FROM copies WHERE job_id = ? ORDER BY idx, copy"
                        : "SELECT idx, copy, worker, attempt, seed, result, discarded, 1 FROM copies WHERE job_id = ? "
                          "ORDER BY idx, copy");
  Stmt f(db_.get(),
         binds_ ? "SELECT grp, first_unit, end_unit, record, bound IS " C960_FOLD_BINDING
                  " FROM folded WHERE job_id = ? ORDER BY first_unit"
                : "SELECT grp, first_unit, end_unit, record, 1 FROM folded WHERE job_id = ? ORDER BY first_unit");
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
      s.intact = u.i64(7) != 0;
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
      cp.intact = c.i64(7) != 0;
      while (k < j.units.size() && j.units[k].index < cp.unit) ++k;
      if (k < j.units.size() && j.units[k].index == cp.unit) j.units[k].copies.push_back(std::move(cp));
    }
    if (rc != SQLITE_DONE) return error("load copies");
    f.reset();
    f.bind_text(1, j.id);
    while ((rc = f.step()) == SQLITE_ROW)
      j.folds.push_back(StoredFold{f.i64(0), f.i64(1), f.i64(2), f.blob(3), f.i64(4) != 0});
    if (rc != SQLITE_DONE) return error("load folded");
  }
  return jobs;
}

absl::StatusOr<std::vector<StoredWorker>> Store::load_workers() {
  std::lock_guard lock(mu_);
  std::vector<StoredWorker> workers;
  Stmt q(db_.get(), owners_  ? "SELECT key, identity, host, version, threads, capabilities, engines, last_seen_ms, "
                               "units_done, agreeing, trust, trust_reason, provenance, owner FROM workers ORDER BY key"
                    : pairs_ ? "SELECT key, identity, host, version, threads, capabilities, engines, last_seen_ms, "
                               "units_done, agreeing, trust, trust_reason, provenance FROM workers ORDER BY key"
                             : "SELECT key, identity, host, version, threads, capabilities, engines, last_seen_ms, "
                               "units_done, agreeing, trust, trust_reason FROM workers ORDER BY key");
  if (!q.ok()) return error("load workers");
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) {
    StoredWorker w;
    if (pairs_) w.provenance = q.blob(12);
    if (owners_) w.owner = q.blob(13);
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
  Stmt q(db_.get(),
         owners_ ? "SELECT name, hash, join_name, worker, created_ms, owner FROM credentials "
                   "ORDER BY created_ms, name"
                 : "SELECT name, hash, join_name, worker, created_ms FROM credentials ORDER BY created_ms, name");
  if (!q.ok()) return error("load credentials");
  int rc;
  while ((rc = q.step()) == SQLITE_ROW)
    out.push_back({q.blob(0), q.blob(1), q.blob(2), q.blob(3), q.i64(4), owners_ ? q.blob(5) : std::string()});
  if (rc != SQLITE_DONE) return error("load credentials");
  return out;
}

absl::Status Store::add_credential(const StoredCredential& c) {
  std::lock_guard lock(mu_);
  if (absl::Status s = check_write(); !s.ok()) return s;
  Stmt q(db_.get(), owners_
                        ? "INSERT INTO credentials (name, hash, join_name, worker, created_ms, owner) "
                          "VALUES (?, ?, ?, ?, ?, ?)"
                        : "INSERT INTO credentials (name, hash, join_name, worker, created_ms) VALUES (?, ?, ?, ?, ?)");
  if (!q.ok()) return error("add credential");
  q.bind_text(1, c.name);
  q.bind_text(2, c.hash);
  q.bind_text(3, c.join_name);
  q.bind_text(4, c.worker);
  q.bind(5, c.created_ms);
  if (owners_) q.bind_text(6, c.owner);
  if (!q.run()) return error("add credential");
  return absl::OkStatus();
}

absl::Status Store::insert_units(const std::string& job_id, const std::vector<StoredUnit>& units, size_t begin,
                                 size_t end) {
  Stmt u(db_.get(), binds_
                        ? "INSERT INTO units (job_id, idx, spec, meta, attempt, result, wanted, votes, bound) VALUES "
                          "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, c960_bind('unit', ?1, ?2, ?3, ?6))"
                        : "INSERT INTO units (job_id, idx, spec, meta, attempt, result, wanted, votes) VALUES "
                          "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
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
      db_.get(),
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
  Stmt q(db_.get(), "UPDATE jobs SET planned = 1, unit_count = ? WHERE id = ?");
  if (!q.ok()) return error("finish plan");
  q.bind(1, unit_count);
  q.bind_text(2, job_id);
  if (!q.run() || db_->changes() != 1) return error("finish plan");
  return absl::OkStatus();
}

absl::Status Store::extend_job_plan(const std::string& job_id, const std::string& plan,
                                    const std::vector<StoredUnit>& units, int64_t unit_count) {
  std::lock_guard lock(mu_);
  Transaction t(this);
  if (!t.status().ok()) return t.status();
  if (absl::Status s = insert_units(job_id, units, 0, units.size()); !s.ok()) return s;
  Stmt q(db_.get(), "UPDATE jobs SET plan = ?, unit_count = ? WHERE id = ?");
  if (!q.ok()) return error("extend plan");
  q.bind(1, plan);
  q.bind(2, unit_count);
  q.bind_text(3, job_id);
  if (!q.run() || db_->changes() != 1) return error("extend plan");
  return t.commit();
}

absl::Status Store::fold_units(const std::string& job_id, const StoredFold& fold) {
  std::lock_guard lock(mu_);
  Transaction t(this);
  if (!t.status().ok()) return t.status();
  {
    // Only settled units fold: a unit without a result, or a missing one, is a bug, never a loss.
    Stmt q(db_.get(), "SELECT COUNT(*), COUNT(result) FROM units WHERE job_id = ? AND idx >= ? AND idx < ?");
    if (!q.ok()) return error("fold units");
    q.bind_text(1, job_id);
    q.bind(2, fold.first);
    q.bind(3, fold.end);
    if (q.step() != SQLITE_ROW) return error("fold units");
    if (q.i64(0) != fold.end - fold.first || q.i64(1) != q.i64(0))
      return absl::InternalError(absl::StrCat("store: units ", job_id, "/", fold.first, "..", fold.end - 1, ": ",
                                              q.i64(0), " rows, ", q.i64(1), " settled; not folded"));
  }
  Stmt ins(db_.get(),
           binds_ ? "INSERT INTO folded (job_id, grp, first_unit, end_unit, record, bound) VALUES "
                    "(?1, ?2, ?3, ?4, ?5, c960_bind('fold', ?1, ?3, ?4, ?5))"
                  : "INSERT INTO folded (job_id, grp, first_unit, end_unit, record) VALUES (?1, ?2, ?3, ?4, ?5)");
  if (!ins.ok()) return error("fold units");
  ins.bind_text(1, job_id);
  ins.bind(2, fold.group);
  ins.bind(3, fold.first);
  ins.bind(4, fold.end);
  ins.bind(5, fold.record);
  if (!ins.run()) return error("fold units");
  for (const char* sql : {"DELETE FROM copies WHERE job_id = ? AND idx >= ? AND idx < ?",
                          "DELETE FROM units WHERE job_id = ? AND idx >= ? AND idx < ?"}) {
    Stmt q(db_.get(), sql);
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
  Stmt q(db_.get(), binds_ ? "UPDATE folded SET grp = -1 - first_unit, record = ?1, bound = c960_bind('fold', job_id, "
                             "first_unit, end_unit, ?1) WHERE job_id = ?2 AND grp = ?3"
                           : "UPDATE folded SET grp = -1 - first_unit, record = ?1 WHERE job_id = ?2 AND grp = ?3");
  if (!q.ok()) return error("retire folded group");
  q.bind(1, record);
  q.bind_text(2, job_id);
  q.bind(3, group);
  if (!q.run()) return error("retire folded group");
  if (db_->changes() != 1)
    return absl::InternalError(absl::StrCat("store: job ", job_id, " has no folded group ", group));
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Store::unit_rows(const std::string& job_id) {
  std::lock_guard lock(mu_);
  Stmt q(db_.get(), "SELECT COUNT(*) FROM units WHERE job_id = ?");
  if (!q.ok()) return error("unit rows");
  q.bind_text(1, job_id);
  if (q.step() != SQLITE_ROW) return error("unit rows");
  return q.i64(0);
}

absl::Status Store::delete_job(const std::string& job_id) {
  std::lock_guard lock(mu_);
  Transaction t(this);
  if (!t.status().ok()) return t.status();
  StoreSql sql(this);
  for (const KindTables* k : tables_)
    if (absl::Status s = k->delete_job(sql, job_id); !s.ok()) return s;
  for (const char* sql : {"DELETE FROM copies WHERE job_id = ?", "DELETE FROM units WHERE job_id = ?",
                          "DELETE FROM folded WHERE job_id = ?", "DELETE FROM jobs WHERE id = ?"}) {
    Stmt q(db_.get(), sql);
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
  Stmt q(db_.get(), "UPDATE jobs SET state = ?, finished_ms = ?, mismatches = ?, mismatch_detail = ? WHERE id = ?");
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
  Stmt q(db_.get(), "UPDATE jobs SET state = ?, finished_ms = ?, failure_detail = ? WHERE id = ?");
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
  Stmt q(*statements_, binds_,
         "UPDATE copies SET result = ?1, bound = c960_bind('copy', job_id, idx, copy, (SELECT spec FROM units "
         "WHERE units.job_id = copies.job_id AND units.idx = copies.idx), ?1) WHERE job_id = ?2 AND idx = ?3 "
         "AND copy = ?4",
         "UPDATE copies SET result = ?1 WHERE job_id = ?2 AND idx = ?3 AND copy = ?4");
  if (!q.ok()) return error("copy result");
  q.bind(1, result);
  q.bind_text(2, job_id);
  q.bind(3, unit);
  q.bind(4, int64_t(copy));
  if (!q.run()) return error("copy result");
  return absl::OkStatus();
}

absl::Status Store::settle_unit(const std::string& job_id, int64_t unit, const std::string& result, int32_t votes,
                                std::optional<int32_t> job_state, int64_t finished_ms) {
  std::lock_guard lock(mu_);
  Transaction t(this);
  if (!t.status().ok()) return t.status();
  {
    Stmt q(*statements_, binds_,
           "UPDATE units SET result = ?1, votes = ?2, bound = c960_bind('unit', job_id, idx, spec, ?1) WHERE "
           "job_id = ?3 AND idx = ?4 AND result IS NULL",
           "UPDATE units SET result = ?1, votes = ?2 WHERE job_id = ?3 AND idx = ?4 AND result IS NULL");
    if (!q.ok()) return error("settle unit");
    q.bind(1, result);
    q.bind(2, int64_t(votes));
    q.bind_text(3, job_id);
    q.bind(4, unit);
    if (!q.run()) return error("settle unit");
    // A settled unit stays as it is: a second settlement is a bug, never a second count.
    if (db_->changes() != 1)
      return absl::InternalError(absl::StrCat("store: unit ", job_id, "/", unit, " is settled already"));
  }
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

absl::Status Store::unsettle_unit(const std::string& job_id, int64_t unit, int32_t wanted) {
  std::lock_guard lock(mu_);
  if (absl::Status s = check_write(); !s.ok()) return s;
  Stmt q(*statements_, binds_,
         "UPDATE units SET result = NULL, bound = NULL, votes = 0, wanted = ? WHERE job_id = ? AND idx = ?",
         "UPDATE units SET result = NULL, votes = 0, wanted = ? WHERE job_id = ? AND idx = ?");
  if (!q.ok()) return error("unsettle unit");
  q.bind(1, int64_t(wanted));
  q.bind_text(2, job_id);
  q.bind(3, unit);
  if (!q.run()) return error("unsettle unit");
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::string>> Store::unit_result(const std::string& job_id, int64_t unit) {
  std::lock_guard lock(mu_);
  Stmt q(*statements_, binds_, "SELECT result, bound IS " C960_UNIT_BINDING " FROM units WHERE job_id = ? AND idx = ?",
         "SELECT result, 1 FROM units WHERE job_id = ? AND idx = ?");
  if (!q.ok()) return error("unit result");
  q.bind_text(1, job_id);
  q.bind(2, unit);
  if (q.step() != SQLITE_ROW || q.is_null(0)) return std::optional<std::string>();
  if (q.i64(1) == 0)
    return absl::DataLossError(absl::StrCat("store: unit ", job_id, "/", unit,
                                            ": its stored result is not bound to it (moved from another row, or "
                                            "damaged)"));
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

absl::Status Store::upsert_worker(const StoredWorker& w) {
  std::lock_guard lock(mu_);
  if (absl::Status s = check_write(); !s.ok()) return s;
  // The columns every schema has, bound as parameters 1..12.
  const auto bind_common = [&w](Stmt& q) {
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
  };
  if (owners_) {  // the current schema: one statement (a completion batch writes its worker's row once)
    Stmt q(*statements_,
           "INSERT INTO workers (key, identity, host, version, threads, capabilities, engines, last_seen_ms, "
           "units_done, agreeing, trust, trust_reason, provenance, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
           "?, ?) ON CONFLICT(key) DO UPDATE SET identity = excluded.identity, host = excluded.host, version = "
           "excluded.version, threads = excluded.threads, capabilities = excluded.capabilities, engines = "
           "excluded.engines, last_seen_ms = excluded.last_seen_ms, units_done = excluded.units_done, agreeing = "
           "excluded.agreeing, trust = excluded.trust, trust_reason = excluded.trust_reason, provenance = "
           "excluded.provenance, owner = excluded.owner");
    if (!q.ok()) return error("upsert worker");
    bind_common(q);
    q.bind_text(13, w.provenance);
    q.bind_text(14, w.owner);
    if (!q.run()) return error("upsert worker");
    return absl::OkStatus();
  }
  Transaction t(this);  // older schemas: the row and (schema 9) its provenance together
  if (!t.status().ok()) return t.status();
  Stmt q(*statements_,
         "INSERT INTO workers (key, identity, host, version, threads, capabilities, engines, last_seen_ms, units_done, "
         "agreeing, trust, trust_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
         "identity = excluded.identity, host = excluded.host, version = excluded.version, threads = excluded.threads, "
         "capabilities = excluded.capabilities, engines = excluded.engines, last_seen_ms = excluded.last_seen_ms, "
         "units_done = excluded.units_done, agreeing = excluded.agreeing, trust = excluded.trust, "
         "trust_reason = excluded.trust_reason");
  if (!q.ok()) return error("upsert worker");
  bind_common(q);
  if (!q.run()) return error("upsert worker");
  if (pairs_) {
    Stmt p(*statements_, "UPDATE workers SET provenance = ? WHERE key = ?");
    if (!p.ok()) return error("upsert worker");
    p.bind_text(1, w.provenance);
    p.bind_text(2, w.key);
    if (!p.run()) return error("upsert worker");
  }
  return t.commit();
}

absl::Status Store::delete_workers(const std::vector<std::string>& keys) {
  std::lock_guard lock(mu_);
  if (absl::Status s = check_write(); !s.ok()) return s;
  Transaction t(this);
  if (!t.status().ok()) return t.status();
  for (const std::string& key : keys) {
    Stmt q(*statements_, "DELETE FROM workers WHERE key = ?");
    if (!q.ok()) return error("delete worker");
    q.bind_text(1, key);
    if (!q.run()) return error("delete worker");
  }
  return t.commit();
}

}  // namespace c960::cluster
