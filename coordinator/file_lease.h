// The leader lease of coordinators sharing one SQLite file (on one machine's disk): an exclusive
// flock(2) on a file beside the store ("<db>-leader"), which the kernel releases the moment its
// holder dies, however it dies; the file keeps the holder's advertised address and the epoch
// (one more at every change of holder) for the standbys to read. A second coordinator started on
// the same store waits as a standby instead of serving the same jobs twice, and takes over at
// once when the first one exits or is killed. No fencing is needed: while the holder's process
// lives (paused or not), nobody else can take the lock. (PostgreSQL's lease is a row with
// fencing: the store's own.)
#pragma once

#include <string>

#include "coordinator/leadership.h"

namespace c960::cluster {

class FileLease final : public LeaseStore {
 public:
  explicit FileLease(std::string path);
  ~FileLease() override;
  FileLease(const FileLease&) = delete;
  FileLease& operator=(const FileLease&) = delete;

  absl::StatusOr<Step> take_or_renew_lease(const std::string& holder, int64_t epoch, int64_t ttl_ms) override;
  absl::Status release_lease(const std::string& holder, int64_t epoch) override;

  const std::string& path() const { return path_; }

 private:
  absl::StatusOr<LeaseRow> read_row() const;
  // "EPOCH HOLDER\n", synced (the lock held).
  absl::Status write_row(int64_t epoch, const std::string& holder);
  std::string path_;
  int fd_ = -1;
  bool held_ = false;
  LeaseRow row_;  // while held
};

}  // namespace c960::cluster
