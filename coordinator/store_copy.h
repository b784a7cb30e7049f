// Moving a store from SQLite to PostgreSQL (c960-coordinator --migrate-from PATH.db --db
// postgresql://...): every table of the SQLite store, the generic ones and every kind's, copied
// row by row into an empty PostgreSQL database in one transaction on the target, and verified
// before that transaction commits: each table's row count and a digest of its canonical content
// (table_digests) equal on both sides, else nothing is kept.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/store.h"

namespace c960::cluster {

// One table's content: its rows and the SHA-256 (hex) of its canonical form, which does not
// depend on the backend or on the order the rows come in. Canonical form: the SHA-256 of each
// row (its columns in the order of their names, each as 'n' (NULL), 'i' and 8 bytes
// little-endian (an integer column), or 'b', the length as 8 bytes little-endian and the bytes
// (text and bytes)), the rows' hashes sorted, and the SHA-256 of them all.
struct TableDigest {
  std::string table;
  int64_t rows = 0;
  std::string sha256;
  bool operator==(const TableDigest&) const = default;
};

// Every table of the store but the backend's own (SQLite's sqlite_*, PostgreSQL's c960_schema
// and c960_leader), by name.
absl::StatusOr<std::vector<TableDigest>> table_digests(Store& store);

struct MigrationReport {
  int schema_version = 0;
  std::vector<TableDigest> tables;  // as verified on both sides
};

// Copies the SQLite store at `from` into the PostgreSQL database `to` (its password, if not
// empty, given to libpq beside the URL). The source is opened as a coordinator opens it, so a
// store of an older schema is migrated up first (and one of a newer schema is refused); no
// coordinator may be using it: its leader lock (FROM-leader) and the file's own lock are taken
// for the copy, and a coordinator that holds either is named in the refusal. The target must
// hold no rows (no tables, or an empty c960 store of an earlier try); its store is made (the
// current schema) and held by the store's advisory lock, so no coordinator starts on it
// meanwhile. FAILED_PRECONDITION naming why when refused; nothing is written to the target then
// or when the copy or its verification fails.
absl::StatusOr<MigrationReport> migrate_store(const std::string& from, const std::string& to,
                                              const std::string& password = "");

}  // namespace c960::cluster
