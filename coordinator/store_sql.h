// The store's SQL plumbing, shared by its files (store.cpp: generic tables; store_migrations.cpp:
// the schema; store_copy.cpp: the copy to PostgreSQL) and the kinds' table code (KindTables;
// selfplay_store.cpp), and nothing else.
#pragma once

#include <cstdint>
#include <memory>
#include <sqlite3.h>
#include <string>
#include <unordered_map>

#include "absl/status/status.h"
#include "coordinator/store.h"
#include "coordinator/store_db.h"

// What binds each stored result to its row (schema 8): c960_bind (SQLite's: store_sqlite.cpp;
// PostgreSQL's: store_dialect.cpp) over the row's
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
  store_db::Connection* db;
  struct Entry {
    std::unique_ptr<store_db::Statement> stmt;
    bool in_use = false;  // a statement already stepping (a nested use) is not handed out twice
  };
  // By the SQL's address: every statement kept is a string literal (Stmt takes only arrays), so
  // a lookup hashes a pointer, not the text. Nodes do not move.
  std::unordered_map<const char*, Entry> entries;
};

namespace store_sql {

// A statement for the length of a scope: prepared here and finalized on every path out of the
// function, or (given the store's Statements) taken from and given back to them, reset. Steps
// answer SQLite's codes on either backend (store_db.h).
class Stmt {
 public:
  Stmt(store_db::Connection* db, const char* sql) : own_(db->prepare(sql, false)), s_(own_.get()) {}
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
    if (!entry_) return;
    s_->reset();
    entry_->in_use = false;
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return s_ != nullptr; }
  void bind(int i, const std::string& v) { s_->bind_blob(i, v); }
  void bind_text(int i, const std::string& v) { s_->bind_text(i, v); }
  void bind(int i, int64_t v) { s_->bind_int(i, v); }
  void bind_null(int i) { s_->bind_null(i); }
  int step() { return s_->step(); }
  // One statement that returns no rows.
  bool run() { return step() == SQLITE_DONE; }
  void reset() { s_->reset(); }
  int64_t i64(int c) { return s_->column_int(c); }
  bool is_null(int c) { return s_->column_null(c); }
  std::string blob(int c) { return s_->column_blob(c); }

 private:
  // A literal's kept statement (prepared once), or a fresh one while it is in use (nested).
  void take(Store::Statements& cache, const char* sql) {
    Store::Statements::Entry& e = cache.entries[sql];
    if (e.in_use) {
      own_ = cache.db->prepare(sql, false);
      s_ = own_.get();
      return;
    }
    if (!e.stmt) e.stmt = cache.db->prepare(sql, true);
    if (!e.stmt) return;  // the connection says why; the entry stays empty and is prepared again next time
    e.in_use = true;
    entry_ = &e;
    s_ = e.stmt.get();
  }
  std::unique_ptr<store_db::Statement> own_;  // one prepared for this scope only
  store_db::Statement* s_ = nullptr;
  Store::Statements::Entry* entry_ = nullptr;
};

}  // namespace store_sql

// What a kind's table code uses of the store: its connection and kept statements, its errors
// (which fail the enclosing transaction), and the file's schema version. Holds the store's mutex
// while it lives; a kind's writes belong in a transaction of the store's (Store::transaction(),
// or the migration or delete_job that calls the kind).
class StoreSql {
 public:
  explicit StoreSql(Store* s) : s_(s), lock_(s->mu_) {}
  store_db::Connection* db() const { return s_->db_.get(); }
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
