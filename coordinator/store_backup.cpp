#include "coordinator/store_backup.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <sqlite3.h>
#include <sys/stat.h>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cluster/config.h"

namespace c960::cluster {
namespace {

constexpr char kPrefix[] = "c960-store-";
constexpr char kSuffix[] = ".db";

// "c960-store-20261205T031500.123Z.db": UTC, to the millisecond, so names sort by time.
std::string backup_name(int64_t unix_ms) {
  const std::time_t s = std::time_t(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&s, &tm);
  return absl::StrFormat("%s%04d%02d%02dT%02d%02d%02d.%03dZ%s", kPrefix, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                         tm.tm_hour, tm.tm_min, tm.tm_sec, int(unix_ms % 1000), kSuffix);
}

bool is_backup_name(const std::string& name) {
  return absl::StartsWith(name, kPrefix) && absl::EndsWith(name, kSuffix) && name.size() == backup_name(0).size();
}

// An SQLite error as a status: a full disk (SQLITE_FULL, or a write that failed with ENOSPC,
// EFBIG past a file-size limit, or EDQUOT) is RESOURCE_EXHAUSTED, a file
// that cannot be opened or written FAILED_PRECONDITION, anything else INTERNAL.
absl::Status sqlite_status(sqlite3* db, int rc, const std::string& what) {
  const int primary = rc & 0xff;
  const std::string msg = absl::StrCat("backup: ", what, ": ", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  const int err = db ? sqlite3_system_errno(db) : 0;
  if (primary == SQLITE_FULL || (primary == SQLITE_IOERR && (err == ENOSPC || err == EFBIG || err == EDQUOT)))
    return absl::ResourceExhaustedError(absl::StrCat(msg, " (--backup-dir's disk is full, or a file-size limit)"));
  if (primary == SQLITE_CANTOPEN || primary == SQLITE_READONLY || primary == SQLITE_PERM ||
      (primary == SQLITE_IOERR && (rc == SQLITE_IOERR_WRITE || rc == SQLITE_IOERR_FSYNC)))
    return absl::FailedPreconditionError(msg);
  return absl::InternalError(msg);
}

absl::Status fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0)
    return absl::FailedPreconditionError(absl::StrCat("backup: cannot open '", path, "': ", std::strerror(errno)));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) {
    const std::string msg = absl::StrCat("backup: cannot sync '", path, "': ", std::strerror(err));
    return err == ENOSPC || err == EFBIG ? absl::ResourceExhaustedError(msg) : absl::FailedPreconditionError(msg);
  }
  return absl::OkStatus();
}

// A connection closed when it goes out of scope or on close().
struct Db {
  sqlite3* db = nullptr;
  Db() = default;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  ~Db() { close(); }
  void close() {
    if (db) sqlite3_close_v2(db);
    db = nullptr;
  }
};

}  // namespace

std::vector<std::string> list_backups(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file(ec) && is_backup_name(name)) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::Status validate_backup_options(const BackupOptions& o) {
  if (o.keep < 1 || o.keep > kMaxBackupKeep)
    return absl::InvalidArgumentError(absl::StrCat("--backup-keep: ", o.keep, " is not in 1..", kMaxBackupKeep));
  if (o.every_ms != 0 && o.every_ms < kMinBackupEveryMs)
    return absl::InvalidArgumentError(
        absl::StrCat("--backup-every: ", o.every_ms, " ms is shorter than a minute (0 turns the schedule off)"));
  if (o.every_ms != 0 && o.dir.empty())
    return absl::InvalidArgumentError("--backup-every: needs --backup-dir (where the copies go)");
  if (o.dir.empty()) return absl::OkStatus();
  std::error_code ec;
  if (std::filesystem::exists(o.dir, ec) && !std::filesystem::is_directory(o.dir, ec))
    return absl::InvalidArgumentError(absl::StrCat("--backup-dir: '", o.dir, "' exists and is not a folder"));
  return absl::OkStatus();
}

StoreBackups::StoreBackups(Store* store, BackupOptions options) : store_(store), options_(std::move(options)) {}

void StoreBackups::set_observer(std::function<void(const absl::StatusOr<BackupMade>&)> observer) {
  std::lock_guard lock(mu_);
  observer_ = std::move(observer);
}

absl::StatusOr<BackupMade> StoreBackups::backup_now() {
  if (!store_->embedded())
    return absl::FailedPreconditionError(
        "backup: the store is a PostgreSQL database: back it up with PostgreSQL's own tools (pg_basebackup, pg_dump)");
  std::lock_guard lock(mu_);
  absl::StatusOr<BackupMade> made = copy_locked();
  if (observer_) observer_(made);
  return made;
}

absl::StatusOr<BackupMade> StoreBackups::copy_locked() {
  if (options_.dir.empty())
    return absl::FailedPreconditionError("backup: the coordinator has no --backup-dir (where copies would go)");
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  if (!std::filesystem::is_directory(options_.dir, ec)) {
    if (!std::filesystem::create_directories(options_.dir, ec) && ec)
      return absl::FailedPreconditionError(
          absl::StrCat("backup: --backup-dir: cannot make '", options_.dir, "': ", ec.message()));
    std::filesystem::permissions(options_.dir, std::filesystem::perms::owner_all, ec);
  }
  int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  now_ms = std::max(now_ms, last_name_ms_ + 1);
  last_name_ms_ = now_ms;
  const std::string final_path = (std::filesystem::path(options_.dir) / backup_name(now_ms)).string();
  const std::string tmp = final_path + ".tmp";
  const auto remove_tmp = [&tmp] {
    std::error_code ignored;
    for (const char* suffix : {"", "-journal", "-wal", "-shm"}) std::filesystem::remove(tmp + suffix, ignored);
  };
  remove_tmp();

  {
    Db dst;
    int rc = sqlite3_open_v2(tmp.c_str(), &dst.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             nullptr);
    if (rc != SQLITE_OK) {
      absl::Status s = sqlite_status(dst.db, rc, absl::StrCat("cannot make '", tmp, "'"));
      dst.close();
      remove_tmp();
      return s;
    }
    sqlite3_extended_result_codes(dst.db, 1);
    if ((rc = store_->copy_into(dst.db, options_.pages_per_step)) != SQLITE_OK) {
      absl::Status s = sqlite_status(dst.db, rc, "copying the store");
      dst.close();
      remove_tmp();
      return s;
    }
    // A self-contained file: no -wal beside it. Then the copy is read whole and checked.
    const auto exec = [&dst](const char* sql, std::string* first) -> int {
      sqlite3_stmt* st = nullptr;
      int r = sqlite3_prepare_v2(dst.db, sql, -1, &st, nullptr);
      if (r != SQLITE_OK) return r;
      while ((r = sqlite3_step(st)) == SQLITE_ROW)
        if (first && first->empty()) *first = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
      sqlite3_finalize(st);
      return r == SQLITE_DONE ? SQLITE_OK : r;
    };
    std::string mode, check;
    if ((rc = exec("PRAGMA journal_mode=DELETE", &mode)) != SQLITE_OK ||
        (rc = exec("PRAGMA quick_check", &check)) != SQLITE_OK) {
      absl::Status s = sqlite_status(dst.db, rc, "checking the copy");
      dst.close();
      remove_tmp();
      return s;
    }
    if (check != "ok") {
      dst.close();
      remove_tmp();
      return absl::InternalError(absl::StrCat("backup: the copy does not check: ", check));
    }
  }
  if (absl::Status s = fsync_path(tmp, O_RDONLY); !s.ok()) {
    remove_tmp();
    return s;
  }
  if (std::rename(tmp.c_str(), final_path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    remove_tmp();
    return absl::FailedPreconditionError(absl::StrCat("backup: cannot name the copy '", final_path, "': ", why));
  }
  if (absl::Status s = fsync_path(options_.dir, O_RDONLY | O_DIRECTORY); !s.ok()) return s;

  BackupMade made;
  made.path = final_path;
  made.bytes = int64_t(std::filesystem::file_size(final_path, ec));
  std::vector<std::string> all = list_backups(options_.dir);
  for (size_t i = 0; i + size_t(options_.keep) < all.size(); ++i) {
    if (all[i] == final_path) continue;  // (a clock set back: the newest copy is never removed)
    if (std::filesystem::remove(all[i], ec)) made.removed.push_back(all[i]);
  }
  made.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return made;
}

BackupSchedule::BackupSchedule(StoreBackups* backups) : backups_(backups) {
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    const auto period = std::chrono::milliseconds(backups_->options().every_ms);
    while (!cv_.wait_for(lock, period, [this] { return stopping_; })) {
      lock.unlock();
      (void)backups_->backup_now();  // the observer logs and counts it
      lock.lock();
    }
  });
}

BackupSchedule::~BackupSchedule() { stop(); }

void BackupSchedule::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace c960::cluster
