// Online backups of the coordinator's SQLite store: consistent copies taken while the coordinator
// serves, on a schedule (BackupSchedule) and on request (the AdminService's BackupStore).
//
// A copy is made with SQLite's online backup API through the store's own connection (the store
// holds its file's lock exclusively), a few thousand pages a step under the store's lock: the
// coordinator's transactions commit between steps, each whole, and SQLite carries what they
// change into the copy, so the copy is the store as of one commit (Store::copy_into). The copy
// is written to "NAME.tmp", checked (PRAGMA quick_check), switched to a self-contained rollback
// journal, synced, and only then renamed to its final name and the folder synced: a file named
// c960-store-*.db is always a whole, checked copy. The newest `keep` copies are kept; older ones
// are removed after a new one is in place, never before, so a failed backup (a full disk) leaves
// the earlier ones as they were.
//
// Restoring one: stop the coordinator, copy the file over --db (removing --db's -wal and -shm
// files), start the coordinator; docs/operations.md shows it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cluster/config.h"
#include "coordinator/store.h"

namespace c960::cluster {

struct BackupOptions {
  std::string dir;       // where copies go (--backup-dir); made (0700) if missing
  int keep = 0;          // copies kept (--backup-keep)
  int64_t every_ms = 0;  // BackupSchedule's period (--backup-every-minutes); 0: on request only
  int pages_per_step = kBackupPagesPerStep;
};

// One copy made.
struct BackupMade {
  std::string path;
  int64_t bytes = 0;
  double seconds = 0;
  std::vector<std::string> removed;  // older copies removed to keep `keep`
};

// The copies in `dir`, oldest first (their names sort by the time they were taken).
std::vector<std::string> list_backups(const std::string& dir);

// Whether `options` can work, naming the flag: a keep of at least 1, a folder that is not a
// file, a period of at least a minute (or 0).
absl::Status validate_backup_options(const BackupOptions& options);

class StoreBackups {
 public:
  // `store` outlives this object.
  StoreBackups(Store* store, BackupOptions options);

  // Makes a copy now; one at a time (a second caller waits for the first). Errors:
  // RESOURCE_EXHAUSTED when the backup folder's disk is full (or a file-size limit is reached),
  // FAILED_PRECONDITION when the folder cannot be made or written, INTERNAL when the copy does
  // not check. Nothing half-written is left behind.
  absl::StatusOr<BackupMade> backup_now();

  // Heard after each try (scheduled or requested): metrics and logs.
  void set_observer(std::function<void(const absl::StatusOr<BackupMade>&)> observer);

  const BackupOptions& options() const { return options_; }

 private:
  absl::StatusOr<BackupMade> copy_locked();
  Store* const store_;
  const BackupOptions options_;
  std::mutex mu_;  // one backup at a time; the observer
  std::function<void(const absl::StatusOr<BackupMade>&)> observer_;
  int64_t last_name_ms_ = 0;  // names are unique even for two copies in one millisecond
};

// Calls backups->backup_now() every options().every_ms from a thread of its own until stop() (or
// destruction). The first copy is made one period after start, not at start.
class BackupSchedule {
 public:
  explicit BackupSchedule(StoreBackups* backups);
  ~BackupSchedule();
  BackupSchedule(const BackupSchedule&) = delete;
  BackupSchedule& operator=(const BackupSchedule&) = delete;
  void stop();

 private:
  StoreBackups* backups_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace c960::cluster
