// The coordinator's durable state in one SQLite file (WAL), or in a PostgreSQL database
// (store_db.h: the backend seam; the same schema and migrations on both): jobs, their units with the result
// each was settled with, the copies of each unit that workers were given and what they sent,
// workers with their trust, and worker credentials. Each kind of job keeps its own tables
// (KindTables below: the self-play kind's are in selfplay_store.cpp); the generic store names
// no kind. A completion is reported accepted only after
// its transaction commits, so a coordinator killed at any point loses no accepted result.
//
// Thread-safe: every method takes the store's own (recursive) mutex. The Coordinator calls it
// while holding its lock (lock order: coordinator, then store); a big job's units are written in
// short transactions without the coordinator's lock (begin_job, add_units, finish_job_plan), so
// that other calls are served between them. Every writing method is one transaction; several
// may be grouped into one with transaction().
//
// The schema has a version (SQLite: PRAGMA user_version; PostgreSQL: table c960_schema); open()
// applies the migrations a file lacks,
// in order, each in its own transaction: the generic step of each version, then the steps the
// kinds registered at that version.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct sqlite3;

namespace c960::cluster {

namespace store_db {
class Connection;  // store_db.h: the backend seam (SQLite or PostgreSQL)
}

// One copy of a unit: a lease given to a worker, and the result it sent for it (the copies of a
// unit are compared when a job verifies its results).
struct StoredCopy {
  int64_t unit = 0;
  int32_t copy = 0;    // 0, 1, ... per unit
  std::string worker;  // the worker's key ("identity/name")
  int32_t attempt = 0;
  uint64_t zobrist_seed = 0;
  std::optional<std::string> result;  // serialized canonical v1.UnitResult once sent
  bool discarded = false;             // from a worker quarantined since: no vote
  bool intact = true;                 // loaded: its result is bound to its row (not moved, not damaged)
};

struct StoredUnit {
  int64_t index = 0;
  std::string spec;  // serialized v1.UnitSpec
  std::string meta;  // serialized v1.store.UnitMeta
  int32_t attempt = 0;
  int32_t wanted = 0;                 // results wanted from different workers (0: not decided yet)
  std::optional<std::string> result;  // the settled result (serialized v1.UnitResult)
  int32_t votes = 0;                  // copies that sent the settled result
  std::vector<StoredCopy> copies;
  bool intact = true;  // loaded: its result is bound to its row (not moved, not damaged)
};

// Units first .. end - 1 folded into one row once all were settled (migration 5).
struct StoredFold {
  int64_t group = 0;  // the kind's group (perft: the root's index)
  int64_t first = 0;  // its units' indexes
  int64_t end = 0;
  std::string record;  // serialized v1.store.FoldedGroup
  bool intact = true;  // loaded: its record is bound to its row
};

struct StoredJob {
  std::string id;
  int64_t seq = 0;
  std::string request_id;
  std::string owner;  // identity of the caller that submitted it
  std::string spec;   // serialized v1.JobSpec
  std::string plan;   // serialized v1.store.JobPlan
  int32_t state = 0;  // v1.JobState
  int64_t created_ms = 0;
  int64_t finished_ms = 0;
  int64_t mismatches = 0;
  std::string mismatch_detail;
  std::string failure_detail;  // why the job FAILED
  // Units the plan made; every one of them has a row once the job is planned, or lies in a
  // folded group (folds), never both. A job whose units are still being written (planned
  // false) was cut off by a crash mid-submit.
  int64_t unit_count = 0;
  bool planned = true;
  std::vector<StoredUnit> units;
  std::vector<StoredFold> folds;  // by first unit
};

// A worker as it is known across its sessions and the coordinator's restarts.
struct StoredWorker {
  std::string key;       // "identity/name"
  std::string identity;  // from its credentials
  std::string host;      // the name it gave
  std::string version;
  int32_t threads = 0;
  std::string capabilities;  // comma-separated
  std::string engines;       // comma-separated
  int64_t last_seen_ms = 0;
  int64_t units_done = 0;
  int64_t agreeing = 0;  // results another worker confirmed
  int32_t trust = 0;     // v1.TrustState
  std::string trust_reason;
  // "c960 VERSION; CPU MODEL; ENGINE 'ID NAME' sha256 HEX; ..." from its last Hello (schema 9).
  std::string provenance;
  // The owner its credential had at its last Hello (schema 10; "": the identity, or the key).
  std::string owner;
};

// A worker credential issued by Enroll: its name (the worker's identity), the hash of its token
// (token_hash(); the token itself is never stored), the join token it was traded for.
struct StoredCredential {
  std::string name;
  std::string hash;
  std::string join_name;
  std::string worker;  // the name the worker gave when it enrolled
  int64_t created_ms = 0;
  std::string owner;  // the join token's owner when it was issued (schema 10; "": the join token)
};

class StoreSql;  // store_sql.h: what a kind's table code uses of the store

// A kind's tables in the store: created and migrated with the store's schema, and emptied of a
// job's rows when the job is deleted. A kind that has tables gives one (KindDescriptor::tables);
// the store is opened with every kind's (kind_tables(): coordinator/kinds.cpp).
class KindTables {
 public:
  virtual ~KindTables() = default;
  // The kind's name in errors ("selfplay").
  virtual const char* name() const = 0;
  // Its schema steps, each run in the transaction that takes the file to `version`, after the
  // generic step of that version. Tables that came with a kind after schema 10 may instead be made
  // by `create` (CREATE TABLE IF NOT EXISTS ...), which open() runs on every file, so that a new
  // kind needs no new schema version.
  struct Step {
    int version = 0;
    const char* sql = "";                            // may be empty
    std::function<absl::Status(StoreSql&)> rewrite;  // data rewritten after `sql`; may be empty
  };
  virtual std::vector<Step> steps() const { return {}; }
  virtual const char* create() const { return ""; }
  // Deletes a job's rows, inside the transaction of Store::delete_job.
  virtual absl::Status delete_job(StoreSql& sql, const std::string& job_id) const = 0;
};

// The tables of every kind this build knows (coordinator/kinds.cpp).
const std::vector<const KindTables*>& kind_tables();

class Store {
 public:
  // The schema version this code writes; open() migrates older files up to it.
  static constexpr int kSchemaVersion = 10;
  // The PostgreSQL advisory lock (a bigint key) that one coordinator holds on its database.
  static constexpr int64_t kAdvisoryLockKey = 1664694832;

  // Opens or creates the file; ":memory:" gives a private in-memory store (tests). A
  // postgresql:// URL (store_db::is_postgres_url) opens the store in that PostgreSQL database
  // instead, `password` given to libpq beside it when not empty; a database that holds tables but
  // no c960 store is refused unless `init`, as a foreign file is, and so is a second store on the
  // same database while the first is open (an advisory lock held as long as the connection).
  // up_to: the version to migrate to (tests of migrations make older stores with it). A file that
  // exists but is empty, or is an SQLite file of something else, is refused (FAILED_PRECONDITION)
  // unless `init` (c960-coordinator --init); one that is not SQLite at all is always refused.
  // tables: the kinds' tables it holds (every kind's unless a test says otherwise).
  static absl::StatusOr<std::unique_ptr<Store>> open(const std::string& path, int up_to = kSchemaVersion,
                                                     bool init = false,
                                                     const std::vector<const KindTables*>& tables = kind_tables(),
                                                     const std::string& password = "");
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  struct Statements;  // prepared statements kept for reuse (store.cpp)

  int schema_version();

  absl::StatusOr<std::vector<StoredJob>> load_jobs();
  absl::StatusOr<std::vector<StoredWorker>> load_workers();

  // A whole job with its units, planned, in one transaction.
  absl::Status insert_job(const StoredJob& job);
  // A big job in steps: the row (not planned yet), then units in batches, then planned with its
  // unit count. Each step is one transaction.
  absl::Status begin_job(const StoredJob& job);
  absl::Status add_units(const std::string& job_id, const std::vector<StoredUnit>& units, size_t begin, size_t end);
  absl::Status finish_job_plan(const std::string& job_id, int64_t unit_count);
  // Lazy planning: more units of a planned job and its plan with the cursor moved past them,
  // in one transaction (a restart finds both or neither).
  absl::Status extend_job_plan(const std::string& job_id, const std::string& plan, const std::vector<StoredUnit>& units,
                               int64_t unit_count);
  // Folding: units fold.first .. fold.end - 1, all settled, become the one row `fold`; their
  // unit and copy rows go, in one transaction. INTERNAL (nothing changed) when one of them is
  // missing or unsettled.
  absl::Status fold_units(const std::string& job_id, const StoredFold& fold);
  // A folded group whose units are planned again under new indexes: its row stays (its
  // indexes are accounted for), as `record` (retired), under group -1 - its first unit.
  absl::Status retire_fold(const std::string& job_id, int64_t group, const std::string& record);
  // Unit rows a job has now (tests and benchmarks: folding keeps it bounded).
  absl::StatusOr<int64_t> unit_rows(const std::string& job_id);
  // A job and everything it owns, its kinds' rows too (a submit cut off before its plan was stored).
  absl::Status delete_job(const std::string& job_id);

  absl::Status update_job(const std::string& id, int32_t state, int64_t finished_ms, int64_t mismatches,
                          const std::string& mismatch_detail);
  // A final state with its reason (v1.JOB_STATE_FAILED).
  absl::Status fail_job(const std::string& id, int32_t state, int64_t finished_ms, const std::string& failure_detail);

  // Copies of units leased now (new ones and leases of existing ones), with the units' attempt
  // counters and wanted results, one transaction for the batch.
  struct Lease {
    int64_t unit;
    int32_t attempt;
    int32_t wanted;
    StoredCopy copy;
  };
  absl::Status record_leases(const std::string& job_id, const std::vector<Lease>& leases);
  // A copy's result.
  absl::Status put_copy_result(const std::string& job_id, int64_t unit, int32_t copy, const std::string& result);
  // Settles a unit with a result sent by `votes` copies and, if the job is now finished, the
  // job's state. The kind's own tables are written by the kind (SettledForm::write) in the same
  // transaction.
  absl::Status settle_unit(const std::string& job_id, int64_t unit, const std::string& result, int32_t votes,
                           std::optional<int32_t> job_state, int64_t finished_ms);
  // More copies agree with a settled result.
  absl::Status set_votes(const std::string& job_id, int64_t unit, int32_t votes);
  // Takes a settled result back (its only vote came from a worker quarantined since): the unit as
  // before it was settled, wanting `wanted` more results (the kind takes back what it wrote:
  // JobKind::write_unsettled, in the same transaction).
  absl::Status unsettle_unit(const std::string& job_id, int64_t unit, int32_t wanted);
  // A unit's settled result as stored, if it has one; DATA_LOSS when it is not bound to the unit.
  absl::StatusOr<std::optional<std::string>> unit_result(const std::string& job_id, int64_t unit);
  absl::Status set_wanted(const std::string& job_id, int64_t unit, int32_t wanted);
  absl::Status discard_copy(const std::string& job_id, int64_t unit, int32_t copy);

  absl::Status upsert_worker(const StoredWorker& w);
  // Deletes these workers' rows, in one transaction (forgotten workers).
  absl::Status delete_workers(const std::vector<std::string>& keys);
  absl::StatusOr<std::vector<StoredCredential>> load_credentials();
  absl::Status add_credential(const StoredCredential& c);

  // Groups the calls made while it lives into one transaction, committed by commit() and rolled
  // back otherwise. Holds the store's mutex meanwhile.
  class Transaction;
  std::unique_ptr<Transaction> transaction();

  // Monitoring. The observer is called with the seconds each commit of an outermost transaction
  // took (set it before the store is shared between threads). Sizes: the database file and its
  // write-ahead log on disk (0 for an in-memory store).
  void set_commit_observer(std::function<void(double seconds)> observer);
  struct FileSizes {
    int64_t db = 0, wal = 0;
  };
  FileSizes file_sizes();
  // Whether the store is an SQLite file (false: a PostgreSQL database, which copy_into cannot copy).
  bool embedded() const { return embedded_; }

  // Copies the whole store into `dest` (an open, empty SQLite database) with SQLite's online
  // backup API through this store's own connection, `pages_per_step` pages a step, taking the
  // store's lock for each step only: transactions commit between steps (each whole: a
  // transaction holds the lock), and SQLite carries what they change into the copy, which ends as
  // the store after the last step's commit. Returns SQLite's code: SQLITE_OK when the copy is
  // whole, else the error (SQLITE_FULL: `dest`'s disk is full; sqlite3_system_errno(dest) says
  // more). SQLITE_MISUSE on PostgreSQL.
  int copy_into(sqlite3* dest, int pages_per_step);

  // One round trip to the database (PostgreSQL: whether the connection, and the advisory lock it
  // holds, are still there). ABORTED when the connection is gone for good (it is never opened
  // again, and its advisory lock went with it), UNAVAILABLE naming the cause when it failed
  // otherwise (the server busy, a statement refused).
  absl::Status check_alive();
  // PostgreSQL: the connection is given up, on both ends, once the server has not acknowledged
  // what was sent to it for `ms` (store_db::Connection::limit_silence), so that check_alive and
  // any statement waiting on a cut network fail within that time instead of TCP's minutes, and
  // the server ends the session (and its advisory lock) as soon. SQLite: nothing.
  absl::Status limit_silence(int64_t ms);

  // Who leads on a PostgreSQL database, as the holder of its advisory lock wrote it (the row of
  // table c960_leader): its advertised gRPC address and its epoch.
  struct Leader {
    std::string holder;
    int64_t epoch = 0;
  };
  // PostgreSQL, while this store holds the database's advisory lock: writes `holder` as the
  // leader, with an epoch one more than the last holder's, and this session as the one that
  // wrote it. Returns the new epoch. SQLite: 1, nothing written (its lease is a file beside the
  // store: file_lease.h).
  absl::StatusOr<int64_t> claim_leader(const std::string& holder);
  // The holder's address written again (one learned after the claim: a port picked at start).
  absl::Status set_leader_holder(const std::string& holder);
  // The leader that open()'s ABORTED ("another coordinator is using this database") names:
  // the row's holder and epoch when the session that wrote the row is the one holding the
  // advisory lock now; nothing otherwise (a row left by a coordinator whose session has ended,
  // a lock held by something else, a database without the table yet).
  static std::optional<Leader> leader_of(const absl::Status& aborted);

  // Runs SQL as it is (tests that damage a store on purpose).
  absl::Status exec_for_test(const std::string& sql);

  // The seam through which tests fail writes (as SQLite's own I/O-error tests fail the Nth
  // I/O): called before every transaction, outermost or nested, is committed, with "commit"
  // (the outermost: the real commit, or a one-statement write outside any) or "write" (a
  // nested one, or a statement inside a transaction); an error fails that commit
  // as a full disk would, and nothing it wrote is kept. Set before the store is shared.
  using FaultInjector = std::function<absl::Status(const char* what)>;
  void set_fault_injector(FaultInjector f);

 private:
  friend class StoreSql;
  explicit Store(std::unique_ptr<store_db::Connection> db);
  // The schema version the database has (0: new), or -1 when it cannot be read.
  int read_version();
  absl::Status migrate(int up_to);
  // The kinds' steps of `version` (inside its migration's transaction); their create().
  absl::Status kind_step(int version);
  absl::Status create_kind_tables();
  absl::Status exec(const char* sql);
  // A statement of the store's own (a literal), prepared once and kept.
  template <size_t N>
  absl::Status run(const char (&sql)[N]);
  absl::Status error(const char* what) const;
  // The fault injector's word on a write outside Transaction (one statement).
  absl::Status check_write();
  absl::Status insert_job_row(const StoredJob& j, bool planned, int64_t unit_count);
  absl::Status insert_units(const std::string& job_id, const std::vector<StoredUnit>& units, size_t begin, size_t end);
  std::recursive_mutex mu_;
  std::unique_ptr<store_db::Connection> db_;
  std::unique_ptr<Statements> statements_;
  bool embedded_ = true;
  int depth_ = 0;  // open transactions (savepoints nest)
  // A nested transaction failed or was rolled back inside the outermost one: the outermost
  // cannot commit (a call's writes are kept all together or not at all).
  mutable bool poisoned_ = false;
  FaultInjector fault_;
  std::vector<const KindTables*> tables_;
  int version_ = 0;  // the file's schema version (during a migration: the one being made)
  // The file has schema 8's bindings (tests write older stores through this same code).
  bool binds_ = false;
  bool pairs_ = false;   // schema 9: workers.provenance
  bool owners_ = false;  // schema 10: workers.owner, credentials.owner
  std::function<void(double)> commit_observer_;
};

class Store::Transaction {
 public:
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  const absl::Status& status() const { return status_; }
  absl::Status commit();

 private:
  friend class Store;
  explicit Transaction(Store* s);
  Store* s_;
  std::unique_lock<std::recursive_mutex> lock_;
  absl::Status status_;
  bool done_ = false;
};

}  // namespace c960::cluster
