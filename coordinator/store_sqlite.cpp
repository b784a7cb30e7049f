// The store's SQLite connection (store_db.h): the embedded default, one file.
#include <cerrno>
#include <climits>
#include <cstring>
#include <openssl/sha.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "absl/strings/str_cat.h"
#include "coordinator/store_db.h"

namespace c960::cluster::store_db {

namespace {

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

// c960_bind(x, ...), an SQL function of the store's connection: the first 16 bytes of SHA-256
// over its arguments, each as a type byte (integer, or bytes for text and blobs alike), a length
// and its bytes; NULL when any argument is NULL (a row without a result has no binding). Rows
// keep it beside each result, computed from the row itself (schema 8): a result moved to
// another unit's row, or damaged, no longer matches. The formulas are in store_sql.h; the same
// function on PostgreSQL is in store_dialect.cpp.
void bind_function(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  std::string bytes;
  for (int i = 0; i < argc; ++i) {
    const char* data = nullptr;
    uint64_t n = 0;
    int64_t v = 0;
    switch (sqlite3_value_type(argv[i])) {
      case SQLITE_NULL: sqlite3_result_null(ctx); return;
      case SQLITE_INTEGER:
        v = sqlite3_value_int64(argv[i]);
        bytes += 'i';
        data = reinterpret_cast<const char*>(&v);
        n = sizeof v;
        break;
      default:
        bytes += 'b';
        data = static_cast<const char*>(sqlite3_value_blob(argv[i]));
        n = uint64_t(sqlite3_value_bytes(argv[i]));
        break;
    }
    for (int b = 0; b < 8; ++b) bytes += char((n >> (8 * b)) & 0xFF);
    if (n) bytes.append(data, size_t(n));
  }
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), md);
  sqlite3_result_blob(ctx, md, 16, SQLITE_TRANSIENT);
}

class SqliteStatement final : public Statement {
 public:
  explicit SqliteStatement(sqlite3_stmt* s) : s_(s) {}
  ~SqliteStatement() override { sqlite3_finalize(s_); }
  void bind_blob(int i, std::string_view v) override {
    sqlite3_bind_blob(s_, i, v.data(), int(v.size()), SQLITE_TRANSIENT);
  }
  void bind_text(int i, std::string_view v) override {
    sqlite3_bind_text(s_, i, v.data(), int(v.size()), SQLITE_TRANSIENT);
  }
  void bind_int(int i, int64_t v) override { sqlite3_bind_int64(s_, i, v); }
  void bind_null(int i) override { sqlite3_bind_null(s_, i); }
  int step() override { return sqlite3_step(s_); }
  void reset() override {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  int64_t column_int(int c) override { return sqlite3_column_int64(s_, c); }
  bool column_null(int c) override { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  std::string column_blob(int c) override {
    const void* p = sqlite3_column_blob(s_, c);
    return p ? std::string(static_cast<const char*>(p), size_t(sqlite3_column_bytes(s_, c))) : std::string();
  }

 private:
  sqlite3_stmt* s_;
};

class SqliteConnection final : public Connection {
 public:
  explicit SqliteConnection(sqlite3* db) : db_(db) {}
  ~SqliteConnection() override { sqlite3_close(db_); }
  Dialect dialect() const override { return Dialect::kSqlite; }
  std::unique_ptr<Statement> prepare(const char* sql, bool keep) override {
    sqlite3_stmt* s = nullptr;
    const int rc = keep ? sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr)
                        : sqlite3_prepare_v2(db_, sql, -1, &s, nullptr);
    if (rc != SQLITE_OK || !s) {
      sqlite3_finalize(s);
      return nullptr;
    }
    return std::make_unique<SqliteStatement>(s);
  }
  bool exec(const char* sql) override {
    char* msg = nullptr;
    const bool ok = sqlite3_exec(db_, sql, nullptr, nullptr, &msg) == SQLITE_OK;
    exec_message_ = msg ? msg : "";
    sqlite3_free(msg);
    return ok;
  }
  int64_t changes() override { return sqlite3_changes(db_); }
  Failure failure() override {
    const int sys = sqlite3_system_errno(db_);
    switch (sqlite3_extended_errcode(db_) & 0xFF) {
      case SQLITE_OK:
      case SQLITE_ROW:
      case SQLITE_DONE: return Failure::kNone;
      case SQLITE_BUSY:
      case SQLITE_LOCKED: return Failure::kBusy;
      case SQLITE_READONLY: return Failure::kReadOnly;
      case SQLITE_FULL: return Failure::kFull;
      case SQLITE_CONSTRAINT: return Failure::kConstraint;
      case SQLITE_CORRUPT:
      case SQLITE_NOTADB: return Failure::kCorrupt;
      case SQLITE_CANTOPEN: return Failure::kIo;
      case SQLITE_IOERR:
        if (sys == EFBIG || sys == ENOSPC || !write_failure_cause(db_).empty()) return Failure::kFull;
        if (sys == EROFS || sys == EACCES || sys == EPERM) return Failure::kReadOnly;
        return Failure::kIo;
      default: return Failure::kOther;
    }
  }
  std::string describe() override {
    // exec()'s message while its error is the current one (a later error replaces both).
    std::string why = describe_code();
    if (exec_message_.empty() || exec_message_ == why || exec_message_ != sqlite3_errmsg(db_)) return why;
    return absl::StrCat(why, " (", exec_message_, ")");
  }
  sqlite3* sqlite() override { return db_; }

 private:
  std::string describe_code() {
    const int rc = sqlite3_extended_errcode(db_);
    const int sys = sqlite3_system_errno(db_);
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
        if (std::string cause = write_failure_cause(db_); !cause.empty()) return cause;
        return absl::StrCat("I/O error", sys ? absl::StrCat(" (", std::strerror(sys), ")") : "");
      default: return sqlite3_errmsg(db_);
    }
  }
  sqlite3* db_;
  std::string exec_message_;  // sqlite3_exec's message of the last exec()
};

}  // namespace

absl::StatusOr<std::unique_ptr<Connection>> open_sqlite(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    auto c = std::make_unique<SqliteConnection>(db);  // closes it
    return absl::FailedPreconditionError(absl::StrCat("cannot open '", path, "': ", db ? c->describe() : "?"));
  }
  auto c = std::make_unique<SqliteConnection>(db);
  sqlite3_extended_result_codes(db, 1);
  if (sqlite3_create_function_v2(db, "c960_bind", -1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr, bind_function,
                                 nullptr, nullptr, nullptr) != SQLITE_OK)
    return absl::InternalError(absl::StrCat("cannot use '", path, "': ", c->describe()));
  // One coordinator per file (Store::open takes the exclusive lock): a second one waits this
  // long for it, then fails.
  sqlite3_busy_timeout(db, 500);
  return std::unique_ptr<Connection>(std::move(c));
}

}  // namespace c960::cluster::store_db
