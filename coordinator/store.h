// The coordinator's durable state in one SQLite file (WAL): jobs, their units with results,
// self-play games, and workers. Every writing method is one transaction; a completion is
// reported accepted only after its transaction commits, so a coordinator killed at any point
// loses no accepted result.
//
// Thread-safe: every method takes the store's own mutex. The Coordinator calls it while holding
// its lock (lock order: coordinator, then store); a big job's units are written in short
// transactions without the coordinator's lock (begin_job, add_units, finish_job), so that
// other calls are served between them.
//
// The schema has a version (PRAGMA user_version); open() applies the migrations a file lacks,
// in order, each in its own transaction.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct sqlite3;

namespace c960::cluster {

struct StoredUnit {
  int64_t index = 0;
  std::string spec;  // serialized v1.UnitSpec
  std::string meta;  // serialized v1.store.UnitMeta
  int32_t attempt = 0;
  std::optional<std::string> result;  // serialized v1.UnitResult once complete
};

struct StoredJob {
  std::string id;
  int64_t seq = 0;
  std::string request_id;
  std::string spec;   // serialized v1.JobSpec
  std::string plan;   // serialized v1.store.JobPlan
  int32_t state = 0;  // v1.JobState
  int64_t created_ms = 0;
  int64_t finished_ms = 0;
  int64_t mismatches = 0;
  std::string mismatch_detail;
  std::string failure_detail;  // why the job FAILED
  // Units the plan made; every one of them has a row once the job is planned. A job whose
  // units are still being written (planned false) was cut off by a crash mid-submit.
  int64_t unit_count = 0;
  bool planned = true;
  std::vector<StoredUnit> units;
};

// A self-play game, unique per (job, start position, game index): the table's primary key makes
// a second copy of a game a failed transaction, never a second count.
struct StoredGame {
  int32_t sp = 0;
  int64_t index = 0;
  std::string record;  // serialized v1.SelfPlayGame
};

struct StoredWorker {
  std::string id;
  int64_t seq = 0;
  std::string name;
  std::string version;
  int32_t threads = 0;
  std::string capabilities;  // comma-separated
  int64_t last_seen_ms = 0;
  bool lost = false;
};

class Store {
 public:
  // The schema version this code writes; open() migrates older files up to it.
  static constexpr int kSchemaVersion = 2;

  // Opens or creates the file; ":memory:" gives a private in-memory store (tests).
  static absl::StatusOr<std::unique_ptr<Store>> open(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

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
  // A job and everything it owns (a submit cut off before its plan was stored).
  absl::Status delete_job(const std::string& job_id);

  absl::Status update_job(const std::string& id, int32_t state, int64_t finished_ms, int64_t mismatches,
                          const std::string& mismatch_detail);
  // A final state with its reason (v1.JOB_STATE_FAILED).
  absl::Status fail_job(const std::string& id, int32_t state, int64_t finished_ms, const std::string& failure_detail);
  // Attempt counters of freshly leased units, one transaction for the batch.
  absl::Status update_attempts(const std::string& job_id, const std::vector<std::pair<int64_t, int32_t>>& attempts);
  // Stores a unit's result, its games (if any) and, if the job is now finished, the job's state
  // in one transaction. A unit that has a result keeps it.
  absl::Status complete_unit(const std::string& job_id, int64_t index, const std::string& result,
                             std::optional<int32_t> job_state, int64_t finished_ms,
                             const std::vector<StoredGame>& games = {});
  // The games stored for a job, by start position then index (tests, audits).
  absl::StatusOr<std::vector<StoredGame>> load_games(const std::string& job_id);
  absl::Status upsert_worker(const StoredWorker& w);
  absl::Status set_worker_lost(const std::string& id, bool lost, int64_t last_seen_ms);

  // Runs SQL as it is (tests that damage a store on purpose).
  absl::Status exec_for_test(const std::string& sql);

 private:
  class Transaction;
  explicit Store(sqlite3* db) : db_(db) {}
  absl::Status migrate();
  absl::Status exec(const char* sql);
  absl::Status error(const char* what) const;
  absl::Status insert_job_row(const StoredJob& j, bool planned, int64_t unit_count);
  absl::Status insert_units(const std::string& job_id, const std::vector<StoredUnit>& units, size_t begin, size_t end);
  std::mutex mu_;
  sqlite3* db_;
};

}  // namespace c960::cluster
