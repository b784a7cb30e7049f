#include "coordinator/store_copy.h"

#include <algorithm>
#include <filesystem>
#include <openssl/sha.h>
#include <sqlite3.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "coordinator/file_lease.h"
#include "coordinator/store_db.h"
#include "coordinator/store_sql.h"

namespace c960::cluster {

using store_sql::Stmt;

namespace {

// Rows a multi-row INSERT carries at most (one round trip each on PostgreSQL); PostgreSQL takes
// at most 65535 parameters a statement.
constexpr int kRowsPerInsert = 200;
constexpr int kMaxParameters = 65535;

struct Column {
  std::string name;
  bool integer = false;  // an integer column (else text or bytes)
};

// A table's columns by name, with whether each holds integers: SQLite's rule for a declared
// type (it contains "INT"), PostgreSQL's integer types and BOOLEAN.
absl::StatusOr<std::vector<Column>> columns(StoreSql& sql, const std::string& table) {
  const bool pg = sql.db()->dialect() == store_db::Dialect::kPostgres;
  Stmt q(sql.db(), pg ? "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = "
                        "current_schema() AND table_name = ?1"
                      : "SELECT name, type FROM pragma_table_info(?1)");
  if (!q.ok()) return sql.error("columns");
  q.bind_text(1, table);
  std::vector<Column> out;
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) {
    const std::string type = absl::AsciiStrToUpper(q.blob(1));
    out.push_back({q.blob(0), pg ? type == "BIGINT" || type == "INTEGER" || type == "SMALLINT" || type == "BOOLEAN"
                                 : absl::StrContains(type, "INT")});
  }
  if (rc != SQLITE_DONE) return sql.error("columns");
  std::sort(out.begin(), out.end(), [](const Column& a, const Column& b) { return a.name < b.name; });
  return out;
}

absl::StatusOr<std::vector<std::string>> tables(StoreSql& sql) {
  const bool pg = sql.db()->dialect() == store_db::Dialect::kPostgres;
  Stmt q(sql.db(),
         pg ? "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
              "AND table_name NOT IN ('c960_schema', 'c960_leader')"
            : "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'");
  if (!q.ok()) return sql.error("tables");
  std::vector<std::string> out;
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) out.push_back(q.blob(0));
  if (rc != SQLITE_DONE) return sql.error("tables");
  std::sort(out.begin(), out.end());
  return out;
}

// Table and column names come from the store's own catalog; quoted all the same.
std::string quoted(const std::string& name) { return absl::StrCat("\"", name, "\""); }

std::string column_list(const std::vector<Column>& cols) {
  std::vector<std::string> names;
  names.reserve(cols.size());
  for (const Column& c : cols) names.push_back(quoted(c.name));
  return absl::StrJoin(names, ", ");
}

void append_le8(std::string* out, uint64_t v) {
  for (int b = 0; b < 8; ++b) out->push_back(char((v >> (8 * b)) & 0xFF));
}

std::string sha256(const std::string& bytes) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), md);
  return std::string(reinterpret_cast<const char*>(md), sizeof md);
}

absl::StatusOr<TableDigest> digest(StoreSql& sql, const std::string& table) {
  absl::StatusOr<std::vector<Column>> cols = columns(sql, table);
  if (!cols.ok()) return cols.status();
  Stmt q(sql.db(), absl::StrCat("SELECT ", column_list(*cols), " FROM ", quoted(table)).c_str());
  if (!q.ok()) return sql.error("read a table");
  std::vector<std::string> rows;
  int rc;
  std::string row;
  while ((rc = q.step()) == SQLITE_ROW) {
    row.clear();
    for (size_t c = 0; c < cols->size(); ++c) {
      if (q.is_null(int(c))) {
        row += 'n';
      } else if ((*cols)[c].integer) {
        row += 'i';
        append_le8(&row, uint64_t(q.i64(int(c))));
      } else {
        const std::string v = q.blob(int(c));
        row += 'b';
        append_le8(&row, v.size());
        row += v;
      }
    }
    rows.push_back(sha256(row));
  }
  if (rc != SQLITE_DONE) return sql.error("read a table");
  std::sort(rows.begin(), rows.end());
  TableDigest d;
  d.table = table;
  d.rows = int64_t(rows.size());
  d.sha256 = absl::BytesToHexString(sha256(absl::StrJoin(rows, "")));
  return d;
}

// Copies one table's rows from `src` into `dst` (inside the target's transaction), several rows
// a statement.
absl::Status copy_table(StoreSql& src, StoreSql& dst, const std::string& table, const std::vector<Column>& cols) {
  const std::string names = column_list(cols);
  Stmt read(src.db(), absl::StrCat("SELECT ", names, " FROM ", quoted(table)).c_str());
  if (!read.ok()) return src.error(absl::StrCat("read ", table).c_str());
  const int width = int(cols.size());
  const int per = std::max(1, std::min(kRowsPerInsert, kMaxParameters / std::max(1, width)));
  const auto insert_sql = [&](int rows) {
    std::string s = absl::StrCat("INSERT INTO ", quoted(table), " (", names, ") VALUES ");
    for (int r = 0; r < rows; ++r) {
      absl::StrAppend(&s, r ? ", (" : "(");
      for (int c = 0; c < width; ++c) absl::StrAppend(&s, c ? ", " : "", "?", r * width + c + 1);
      s += ')';
    }
    return s;
  };
  // Values of the rows read but not written yet: a null, an integer or bytes each.
  struct Value {
    bool null = false;
    int64_t i = 0;
    std::string b;
  };
  std::vector<Value> pending;
  std::unique_ptr<store_db::Statement> full;  // the statement of `per` rows, prepared once
  const auto flush = [&](int rows) -> absl::Status {
    std::unique_ptr<store_db::Statement> once;
    store_db::Statement* s = nullptr;
    if (rows == per) {
      if (!full) full = dst.db()->prepare(insert_sql(per).c_str(), false);
      s = full.get();
    } else {
      once = dst.db()->prepare(insert_sql(rows).c_str(), false);
      s = once.get();
    }
    if (!s) return dst.error(absl::StrCat("write ", table).c_str());
    s->reset();
    for (int k = 0; k < rows * width; ++k) {
      const Value& v = pending[size_t(k)];
      if (v.null)
        s->bind_null(k + 1);
      else if (cols[size_t(k % width)].integer)
        s->bind_int(k + 1, v.i);
      else
        s->bind_blob(k + 1, v.b);
    }
    if (s->step() != SQLITE_DONE) return dst.error(absl::StrCat("write ", table).c_str());
    pending.clear();
    return absl::OkStatus();
  };
  int rc;
  int rows = 0;
  while ((rc = read.step()) == SQLITE_ROW) {
    for (int c = 0; c < width; ++c) {
      Value v;
      v.null = read.is_null(c);
      if (!v.null) {
        if (cols[size_t(c)].integer)
          v.i = read.i64(c);
        else
          v.b = read.blob(c);
      }
      pending.push_back(std::move(v));
    }
    if (++rows == per) {
      if (absl::Status s = flush(per); !s.ok()) return s;
      rows = 0;
    }
  }
  if (rc != SQLITE_DONE) return src.error(absl::StrCat("read ", table).c_str());
  if (rows > 0) return flush(rows);
  return absl::OkStatus();
}

std::string names_of(const std::vector<Column>& cols) {
  std::vector<std::string> names;
  names.reserve(cols.size());
  for (const Column& c : cols) names.push_back(c.name);
  return absl::StrJoin(names, ", ");
}

}  // namespace

absl::StatusOr<std::vector<TableDigest>> table_digests(Store& store) {
  StoreSql sql(&store);
  absl::StatusOr<std::vector<std::string>> names = tables(sql);
  if (!names.ok()) return names.status();
  std::vector<TableDigest> out;
  for (const std::string& t : *names) {
    absl::StatusOr<TableDigest> d = digest(sql, t);
    if (!d.ok()) return d.status();
    out.push_back(*d);
  }
  return out;
}

absl::StatusOr<MigrationReport> migrate_store(const std::string& from, const std::string& to,
                                              const std::string& password) {
  const auto refused = [](const std::string& why) {
    return absl::FailedPreconditionError(absl::StrCat("migrate: ", why));
  };
  if (from.empty() || from == ":memory:" || store_db::is_postgres_url(from))
    return refused("--migrate-from: give the SQLite store's file (the coordinator's --db before the move)");
  if (!store_db::is_postgres_url(to)) return refused("--db: give the PostgreSQL database to move the store into");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(from, ec))
    return refused(absl::StrCat("--migrate-from: '", from, "' is not a file"));

  // No coordinator on the source: its leader lock, then the file's own (the open below).
  FileLease lease(from + "-leader");
  absl::StatusOr<LeaseStore::Step> taken = lease.take_or_renew_lease("c960-coordinator --migrate-from", 0, 60'000);
  if (!taken.ok()) return refused(std::string(taken.status().message()));
  if (!taken->granted)
    return refused(absl::StrCat("a coordinator is running on '", from, "' (it holds ", lease.path(),
                                taken->row.holder.empty() ? "" : absl::StrCat(", as ", taken->row.holder),
                                "): stop every coordinator of the store first"));
  absl::StatusOr<std::unique_ptr<Store>> source = Store::open(from);
  if (!source.ok()) return refused(absl::StrCat("the source: ", source.status().message()));
  if (const int v = (*source)->schema_version(); v != Store::kSchemaVersion)
    return refused(absl::StrCat("the source's schema version is ", v, ", this build's ", Store::kSchemaVersion));

  absl::StatusOr<std::unique_ptr<Store>> target =
      Store::open(to, Store::kSchemaVersion, false, kind_tables(), password);
  if (!target.ok()) return refused(absl::StrCat("the target: ", target.status().message()));

  MigrationReport report;
  report.schema_version = Store::kSchemaVersion;
  std::unique_ptr<Store::Transaction> t = (*target)->transaction();
  if (!t->status().ok()) return t->status();
  {
    StoreSql src(source->get());
    StoreSql dst(target->get());
    absl::StatusOr<std::vector<std::string>> from_tables = tables(src);
    if (!from_tables.ok()) return from_tables.status();
    absl::StatusOr<std::vector<std::string>> to_tables = tables(dst);
    if (!to_tables.ok()) return to_tables.status();
    // The target holds no rows (inside the transaction, under the store's lock: none can come).
    for (const std::string& name : *to_tables) {
      absl::StatusOr<TableDigest> d = digest(dst, name);
      if (!d.ok()) return d.status();
      if (d->rows > 0)
        return refused(absl::StrCat("the target '", store_db::redact_url(to), "' is not empty: its table ", name,
                                    " has ", d->rows, " rows; give an empty database"));
    }
    for (const std::string& name : *from_tables) {
      if (!std::binary_search(to_tables->begin(), to_tables->end(), name))
        return refused(absl::StrCat("the source's table ", name,
                                    " is not one this build makes on PostgreSQL: it cannot be copied"));
      absl::StatusOr<std::vector<Column>> src_cols = columns(src, name);
      if (!src_cols.ok()) return src_cols.status();
      absl::StatusOr<std::vector<Column>> dst_cols = columns(dst, name);
      if (!dst_cols.ok()) return dst_cols.status();
      if (names_of(*src_cols) != names_of(*dst_cols))
        return refused(absl::StrCat("table ", name, ": the source's columns (", names_of(*src_cols),
                                    ") differ from the target's (", names_of(*dst_cols), ")"));
      for (size_t c = 0; c < src_cols->size(); ++c)
        (*src_cols)[c].integer = (*dst_cols)[c].integer;  // the target's types say how to read a value
      if (absl::Status s = copy_table(src, dst, name, *src_cols); !s.ok()) return s;
    }
    // Verified before the commit: a difference keeps nothing.
    for (const std::string& name : *from_tables) {
      absl::StatusOr<TableDigest> a = digest(src, name);
      if (!a.ok()) return a.status();
      absl::StatusOr<TableDigest> b = digest(dst, name);
      if (!b.ok()) return b.status();
      if (!(*a == *b))
        return absl::DataLossError(absl::StrCat("migrate: table ", name, " differs after the copy: the source has ",
                                                a->rows, " rows (sha256 ", a->sha256, "), the target ", b->rows,
                                                " (sha256 ", b->sha256, "); nothing was kept"));
      report.tables.push_back(*a);
    }
  }
  if (absl::Status s = t->commit(); !s.ok()) return s;
  return report;
}

}  // namespace c960::cluster
