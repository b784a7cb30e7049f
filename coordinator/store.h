// The coordinator's durable state in one SQLite file (WAL): jobs, their units with results,
// and workers. Every method is one transaction; a completion is reported accepted only after
// its transaction commits, so a coordinator killed at any point loses no accepted result.
// Not thread-safe: the Coordinator serialises calls.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct sqlite3;
struct sqlite3_stmt;

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
  std::string spec;  // serialized v1.JobSpec
  std::string plan;  // serialized v1.store.JobPlan
  int32_t state = 0;  // v1.JobState
  int64_t created_ms = 0;
  int64_t finished_ms = 0;
  int64_t mismatches = 0;
  std::string mismatch_detail;
  std::string failure_detail;  // why the job FAILED
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
  // Opens or creates the file; ":memory:" gives a private in-memory store (tests).
  static absl::StatusOr<std::unique_ptr<Store>> open(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  absl::StatusOr<std::vector<StoredJob>> load_jobs();
  absl::StatusOr<std::vector<StoredWorker>> load_workers();

  absl::Status insert_job(const StoredJob& job);
  absl::Status update_job(const std::string& id, int32_t state, int64_t finished_ms, int64_t mismatches,
                          const std::string& mismatch_detail);
  // A final state with its reason (v1.JOB_STATE_FAILED).
  absl::Status fail_job(const std::string& id, int32_t state, int64_t finished_ms, const std::string& failure_detail);
  // Attempt counters of freshly leased units, one transaction for the batch.
  absl::Status update_attempts(const std::string& job_id, const std::vector<std::pair<int64_t, int32_t>>& attempts);
  // Stores a unit's result, its games (if any) and, if the job is now finished, the job's state
  // in one transaction.
  absl::Status complete_unit(const std::string& job_id, int64_t index, const std::string& result,
                             std::optional<int32_t> job_state, int64_t finished_ms,
                             const std::vector<StoredGame>& games = {});
  // The games stored for a job, by start position then index (tests, audits).
  absl::StatusOr<std::vector<StoredGame>> load_games(const std::string& job_id);
  absl::Status upsert_worker(const StoredWorker& w);
  absl::Status set_worker_lost(const std::string& id, bool lost, int64_t last_seen_ms);

 private:
  explicit Store(sqlite3* db) : db_(db) {}
  absl::Status exec(const char* sql);
  absl::Status commit();  // rolls back when the commit fails, so no transaction stays open
  absl::Status error(const char* what) const;
  sqlite3* db_;
};

}  // namespace c960::cluster
