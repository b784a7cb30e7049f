// The store's backend seam: one database connection and its statements, with an SQLite
// implementation (the embedded default: a file) and a PostgreSQL one (libpq: a server named by a
// postgresql:// URL). The store (store.cpp, store_migrations.cpp) and the kinds' table code
// (selfplay_store.cpp) write their SQL once, in SQLite's dialect; the PostgreSQL connection
// translates it when it prepares a statement (store_dialect.cpp says how, in one place).
//
// Steps answer with SQLite's result codes on both backends (SQLITE_ROW, SQLITE_DONE, or an
// error), so that the store's code reads the same whichever backend runs it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct sqlite3;

namespace c960::cluster::store_db {

enum class Dialect { kSqlite, kPostgres };

// What kind of failure the last error was, alike on both backends.
enum class Failure {
  kNone,
  kBusy,        // locked by another connection (SQLite: another coordinator; PostgreSQL: a lock or a conflict)
  kFull,        // the disk (or a quota) is full
  kConstraint,  // a key or a NOT NULL refused the write
  kIo,          // reading or writing failed (PostgreSQL: the connection too)
  kCorrupt,     // the file or the database is damaged
  kReadOnly,    // the file, its directory or the database cannot be written
  kOther,
};

// One prepared statement: bind parameters (1-based), step through its rows, read columns
// (0-based) of the current row. reset() makes it ready to run again, its bindings cleared.
class Statement {
 public:
  virtual ~Statement() = default;
  virtual void bind_blob(int i, std::string_view v) = 0;
  virtual void bind_text(int i, std::string_view v) = 0;
  virtual void bind_int(int i, int64_t v) = 0;
  virtual void bind_null(int i) = 0;
  // SQLITE_ROW (a row is current), SQLITE_DONE (no more rows), or an error code (the
  // connection's describe() says what).
  virtual int step() = 0;
  virtual void reset() = 0;
  virtual int64_t column_int(int c) = 0;
  virtual bool column_null(int c) = 0;
  virtual std::string column_blob(int c) = 0;
};

// One connection. Not thread-safe: the store serialises its use under its own mutex.
class Connection {
 public:
  virtual ~Connection() = default;
  virtual Dialect dialect() const = 0;
  // A statement of the SQL (SQLite's dialect, one statement), or nullptr when it cannot be
  // prepared (describe() says why). `keep`: it will run many times (the store keeps it).
  virtual std::unique_ptr<Statement> prepare(const char* sql, bool keep) = 0;
  // Runs SQL text of one or more statements without parameters; false when one fails
  // (describe() says why).
  virtual bool exec(const char* sql) = 0;
  // Rows changed by the last INSERT, UPDATE or DELETE.
  virtual int64_t changes() = 0;
  // The last error: its kind, and what went wrong in words an operator can act on.
  virtual Failure failure() = 0;
  virtual std::string describe() = 0;
  // Whether the connection is gone for good (PostgreSQL: the server or the network dropped it;
  // it is never opened again, and whatever its session held went with it). SQLite: never.
  virtual bool lost() { return false; }
  // The SQLite handle (backups, file sizes), or nullptr on PostgreSQL.
  virtual sqlite3* sqlite() { return nullptr; }
  // PostgreSQL: the connection is given up when the server has not acknowledged what was sent to
  // it for `ms` (a cut network), on both ends: here (TCP_USER_TIMEOUT, keepalive probes after a
  // sixth of it idle) and in the server's session (the same settings, so that the server ends the
  // session, and releases its locks, when this client is cut off). SQLite: nothing to do.
  virtual absl::Status limit_silence(int64_t /*ms*/) { return absl::OkStatus(); }
};

// SQLite: opens or creates the file ("": nothing to open; ":memory:" a private in-memory one).
// An error names the problem (no store is made).
absl::StatusOr<std::unique_ptr<Connection>> open_sqlite(const std::string& path);

// PostgreSQL: connects to the server the URL names (postgresql://USER@HOST:PORT/DB?sslmode=...,
// anything libpq takes in a URL). `password`: if not empty, given to libpq beside the URL (else
// libpq's own PGPASSWORD or PGPASSFILE apply). Refused when the build has no libpq.
absl::StatusOr<std::unique_ptr<Connection>> open_postgres(const std::string& url, const std::string& password);

// Whether a --db value names a PostgreSQL server rather than an SQLite file.
bool is_postgres_url(std::string_view db);

// A URL as it may be logged: a password in it ("user:secret@") replaced by "***".
std::string redact_url(std::string_view url);

// The SQL that differs between the dialects, chosen here (store_dialect.cpp).
namespace dialect {
// SQLite SQL as PostgreSQL runs it: `?` and `?N` as `$N`, INTEGER as BIGINT, BLOB as BYTEA,
// WITHOUT ROWID dropped, `a IS b` (outside IS [NOT] NULL) as IS NOT DISTINCT FROM,
// c960_bind('KIND', ...) as c960_bind_KIND(...).
std::string postgres(std::string_view sqlite_sql);
// One row, one column: the schema version (0 in a new store).
const char* schema_version_query(Dialect d);
std::string set_schema_version(Dialect d, int version);
// One row, one column: whether table `?1` exists.
const char* table_exists_query(Dialect d);
// One row, one column: the tables that c960 never made.
const char* foreign_tables_query(Dialect d);
// What a PostgreSQL store makes before its migrations (schema version table, c960_bind), run on
// every open: CREATE ... IF NOT EXISTS / OR REPLACE.
const char* postgres_prelude();
}  // namespace dialect

}  // namespace c960::cluster::store_db
