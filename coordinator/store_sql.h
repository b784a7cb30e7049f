// The store's SQL plumbing, shared by its files (store.cpp: generic tables; store_migrations.cpp:
// the schema) and the kinds' table code (KindTables; selfplay_store.cpp), and nothing else.
#pragma once

#include <cstdint>
#include <sqlite3.h>
#include <string>
#include <unordered_map>

#include "absl/status/status.h"
#include "coordinator/store.h"

// What binds each stored result to its row (schema 8): c960_bind (store.cpp) over the row's
// own key, its unit's spec and the result, computed by the statement that writes the result and
// checked by those that read it back. Macros, so that statements stay string literals.
#define C960_UNIT_BINDING "c960_bind('unit', job_id, idx, spec, result)"
#define C960_COPY_BINDING                                                                                          \
  "c960_bind('copy', job_id, idx, copy, (SELECT spec FROM units WHERE units.job_id = copies.job_id AND units.idx " \
  "= copies.idx), result)"
#define C960_FOLD_BINDING "c960_bind('fold', job_id, first_unit, end_unit, record)"

namespace c960::cluster {

// Prepared statements of the paths every lease and completion takes, kept for reuse: preparing
// one (parsing and planning the SQL) costs as much as running it, under the coordinator's lock.
struct Store::Statements {
  sqlite3* db;
  struct Entry {
    sqlite3_stmt* stmt = nullptr;
    bool in_use = false;  // a statement already stepping (a nested use) is not handed out twice
  };
  // By the SQL's address: every statement kept is a string literal (Stmt takes only arrays), so
  // a lookup hashes a pointer, not the text. Nodes do not move.
  std::unordered_map<const char*, Entry> entries;
  ~Statements() {
    for (auto& [sql, e] : entries) sqlite3_finalize(e.stmt);
  }
};

namespace store_sql {

// A statement for the length of a scope: prepared here and finalized on every path out of the
// function, or (given the store's Statements) taken from and given back to them, reset.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
  template <size_t N>
  Stmt(Store::Statements& cache, const char (&sql)[N]) {
    take(cache, sql);
  }
  // `current` when the file has the current schema, else `older` (tests write stores of older
  // schemas through the same code): both kept literals.
  template <size_t N, size_t M>
  Stmt(Store::Statements& cache, bool is_current, const char (&current)[N], const char (&older)[M]) {
    take(cache, is_current ? current : older);
  }
  ~Stmt() {
    if (!entry_) {
      sqlite3_finalize(s_);
      return;
    }
    reset();
    entry_->in_use = false;
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  void bind(int i, const std::string& v) { sqlite3_bind_blob(s_, i, v.data(), int(v.size()), SQLITE_TRANSIENT); }
  void bind_text(int i, const std::string& v) { sqlite3_bind_text(s_, i, v.data(), int(v.size()), SQLITE_TRANSIENT); }
  void bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  void bind_null(int i) { sqlite3_bind_null(s_, i); }
  int step() { return sqlite3_step(s_); }
  // One statement that returns no rows.
  bool run() { return step() == SQLITE_DONE; }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  int64_t i64(int c) { return sqlite3_column_int64(s_, c); }
  bool is_null(int c) { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  std::string blob(int c) {
    const void* p = sqlite3_column_blob(s_, c);
    return p ? std::string(static_cast<const char*>(p), size_t(sqlite3_column_bytes(s_, c))) : std::string();
  }

 private:
  // A literal's kept statement (prepared once), or a fresh one while it is in use (nested).
  void take(Store::Statements& cache, const char* sql) {
    Store::Statements::Entry& e = cache.entries[sql];
    if (e.in_use) {
      rc_ = sqlite3_prepare_v2(cache.db, sql, -1, &s_, nullptr);
      return;
    }
    if (!e.stmt) rc_ = sqlite3_prepare_v3(cache.db, sql, -1, SQLITE_PREPARE_PERSISTENT, &e.stmt, nullptr);
    if (!e.stmt) return;  // rc_ says why; the entry stays empty and is prepared again next time
    e.in_use = true;
    entry_ = &e;
    s_ = e.stmt;
  }
  sqlite3_stmt* s_ = nullptr;
  int rc_ = SQLITE_OK;
  Store::Statements::Entry* entry_ = nullptr;
};

// What went wrong, in words an operator can act on.
std::string describe(sqlite3* db);

}  // namespace store_sql

// What a kind's table code uses of the store: its connection and kept statements, its errors
// (which fail the enclosing transaction), and the file's schema version. Holds the store's mutex
// while it lives; a kind's writes belong in a transaction of the store's (Store::transaction(),
// or the migration or delete_job that calls the kind).
class StoreSql {
 public:
  explicit StoreSql(Store* s) : s_(s), lock_(s->mu_) {}
  sqlite3* db() const { return s_->db_; }
  Store::Statements& statements() const { return *s_->statements_; }
  // The file's schema version (during a migration: the version being made).
  int version() const { return s_->version_; }
  // INTERNAL "store: WHAT: why", and the enclosing transaction cannot commit.
  absl::Status error(const char* what) const { return s_->error(what); }
  absl::Status exec(const char* sql) const { return s_->exec(sql); }
  // The fault injector's word on a write outside a transaction (Store::set_fault_injector).
  absl::Status check_write() const { return s_->check_write(); }

 private:
  Store* s_;
  std::unique_lock<std::recursive_mutex> lock_;
};
}  // namespace c960::cluster
