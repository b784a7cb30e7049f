// The coordinator's durable state in one SQLite file (WAL): jobs, their units with the result
// each was settled with, the copies of each unit that workers were given and what they sent,
// self-play games, and workers with their trust. A completion is reported accepted only after
// its transaction commits, so a coordinator killed at any point loses no accepted result.
//
// Thread-safe: every method takes the store's own (recursive) mutex. The Coordinator calls it
// while holding its lock (lock order: coordinator, then store); a big job's units are written in
// short transactions without the coordinator's lock (begin_job, add_units, finish_job_plan), so
// that other calls are served between them. Every writing method is one transaction; several
// may be grouped into one with transaction().
//
// The schema has a version (PRAGMA user_version); open() applies the migrations a file lacks,
// in order, each in its own transaction.
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

// What one self-play game added to its position's statistics.
struct GameSummary {
  uint8_t result = 0;       // selfplay::GameResult
  uint8_t termination = 0;  // selfplay::Termination
  uint16_t plies = 0;
  uint64_t hash = 0;     // selfplay::game_hash, for duplicates
  bool evidence = true;  // selfplay::is_evidence: counted in the position's results
};

// A stored self-play game, unique per (job, position, game index): the table's primary key
// makes a second copy of a game a failed transaction, never a second count. Compact: its moves'
// ranks among the legal moves and the header fields a PGN needs (the PGN is made on export).
struct StoredGame {
  int32_t sp = 0;  // the position's index in the job's plan
  int64_t index = 0;
  int32_t result = 0;       // selfplay::GameResult
  int32_t termination = 0;  // selfplay::Termination
  int32_t opening_plies = 0;
  std::string white, black;           // player names (kept once per job)
  std::optional<std::string> detail;  // only for endings a replay cannot tell (engine failures)
  std::string moves;                  // about 5 bits a ply (selfplay_codec.h encode_moves)
};

// What a settled self-play unit adds to the store, and what taking it back subtracts: its
// games' summaries (games first_game.. of position sp) and the games the job stores.
struct SelfPlaySettlement {
  int32_t sp = 0;
  int64_t first_game = 0;  // even in a match, whose units hold whole pairs
  // A match's games (SelfPlayJobSpec.opponent): also counted as colour-reversed pairs. Taking a
  // unit back needs not say so: its position's row has pairs already.
  bool match = false;
  std::vector<GameSummary> games;
  std::vector<StoredGame> stored;
};

// A self-play position's statistics over its settled games.
struct PositionTotals {
  int32_t sp = 0;
  int64_t games = 0, white_wins = 0, draws = 0, black_wins = 0, plies = 0, duplicates = 0, stored = 0;
  int64_t uncounted = 0;              // games that are not evidence: in games, plies and terminations only
  std::vector<int64_t> terminations;  // by selfplay::Termination
  // A match's pairs (v1.MatchCounts): pentanomial 0..4, wins, draws, losses, duplicates,
  // unpaired; empty for self-play.
  std::vector<int64_t> pairs;
};
inline constexpr size_t kPairFigures = 10;

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

class Store {
 public:
  // The schema version this code writes; open() migrates older files up to it.
  static constexpr int kSchemaVersion = 10;

  // Opens or creates the file; ":memory:" gives a private in-memory store (tests).
  // up_to: the version to migrate to (tests of migrations make older stores with it). A file that
  // exists but is empty, or is an SQLite file of something else, is refused (FAILED_PRECONDITION)
  // unless `init` (c960-coordinator --init); one that is not SQLite at all is always refused.
  static absl::StatusOr<std::unique_ptr<Store>> open(const std::string& path, int up_to = kSchemaVersion,
                                                     bool init = false);
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
  // A job and everything it owns (a submit cut off before its plan was stored).
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
  // job's state. The kind's own tables (self-play statistics and games) are written by the kind
  // (JobKind::write_settled) in the same transaction.
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

  // The self-play kind's tables (store_selfplay.cpp). Adds (sign 1) or subtracts (sign -1) a
  // self-play unit's statistics and games; a game stored twice fails it (and its transaction).
  absl::Status apply_settlement(const std::string& job_id, const SelfPlaySettlement& s, int sign);
  // A self-play job's statistics per position (positions without a settled game have no row).
  absl::StatusOr<std::vector<PositionTotals>> load_position_totals(const std::string& job_id);
  // A page of a position's stored games: those with an index above `after`, at most `limit`.
  absl::StatusOr<std::vector<StoredGame>> load_games(const std::string& job_id, int32_t sp, int64_t after, int limit);
  // Every game stored for a job, by position then index (tests, audits).
  absl::StatusOr<std::vector<StoredGame>> load_games(const std::string& job_id);
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
  explicit Store(sqlite3* db);
  absl::Status migrate(int up_to);
  absl::Status exec(const char* sql);
  // A statement of the store's own (a literal), prepared once and kept.
  template <size_t N>
  absl::Status run(const char (&sql)[N]);
  absl::Status error(const char* what) const;
  // The fault injector's word on a write outside Transaction (one statement).
  absl::Status check_write();
  absl::Status insert_job_row(const StoredJob& j, bool planned, int64_t unit_count);
  absl::Status insert_units(const std::string& job_id, const std::vector<StoredUnit>& units, size_t begin, size_t end);
  absl::StatusOr<int64_t> name_id(const std::string& job_id, const std::string& name);
  // The ids of the self-play jobs (the migrations that rewrite self-play data walk them).
  absl::StatusOr<std::vector<std::string>> selfplay_job_ids();
  // Schema 4: self-play results of older stores into statistics, digests and compact games.
  absl::Status convert_selfplay_v4();
  // Schema 6: stored games' move codes into the legal-rank coding.
  absl::Status recode_selfplay_v6();
  // Schema 8: self-play statistics counted again from the settled units' game summaries, each
  // distinct game once (repeats in duplicates only).
  absl::Status recount_selfplay_v8();
  std::recursive_mutex mu_;
  sqlite3* db_;
  std::unique_ptr<Statements> statements_;
  int depth_ = 0;  // open transactions (savepoints nest)
  // A nested transaction failed or was rolled back inside the outermost one: the outermost
  // cannot commit (a call's writes are kept all together or not at all).
  mutable bool poisoned_ = false;
  FaultInjector fault_;
  // The file has schema 8's bindings (tests write older stores through this same code).
  bool binds_ = false;
  bool pairs_ = false;   // schema 9: sp_totals.pairs, sp_pair_hashes, workers.provenance
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
