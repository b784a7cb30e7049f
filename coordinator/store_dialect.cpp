// The SQL that differs between SQLite and PostgreSQL, in one place (store_db.h). The store's SQL
// is written in SQLite's dialect, kept to what both understand where they can (ON CONFLICT ...
// DO UPDATE, RETURNING, COALESCE); what remains is translated here, word by word, when a
// PostgreSQL statement is prepared.
#include <algorithm>
#include <cctype>

#include "absl/strings/str_cat.h"
#include "coordinator/store_db.h"

namespace c960::cluster::store_db {

bool is_postgres_url(std::string_view db) { return db.starts_with("postgresql://") || db.starts_with("postgres://"); }

std::string redact_url(std::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::string(url);
  const size_t start = scheme + 3;
  const size_t at = url.find('@', start);
  const size_t slash = url.find('/', start);
  if (at == std::string_view::npos || (slash != std::string_view::npos && slash < at)) return std::string(url);
  const size_t colon = url.find(':', start);
  if (colon == std::string_view::npos || colon > at) return std::string(url);
  return std::string(url.substr(0, colon + 1)) + "***" + std::string(url.substr(at));
}

namespace dialect {

namespace {

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The next word at or after `i` (skipping spaces), or "".
std::string_view next_word(std::string_view s, size_t i) {
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  size_t j = i;
  while (j < s.size() && word_char(s[j])) ++j;
  return s.substr(i, j - i);
}

}  // namespace

std::string postgres(std::string_view in) {
  std::string out;
  out.reserve(in.size() + 16);
  int highest = 0;  // the highest parameter number so far: a bare `?` takes the next (SQLite's rule)
  size_t i = 0;
  while (i < in.size()) {
    const char c = in[i];
    if (c == '\'' || c == '"') {  // a literal or a quoted name, copied as it is ('' and "" stay inside)
      size_t j = i + 1;
      while (j < in.size() && (in[j] != c || (j + 1 < in.size() && in[j + 1] == c))) j += in[j] == c ? 2 : 1;
      out.append(in.substr(i, j + 1 - i));
      i = j + 1;
      continue;
    }
    if (c == '?') {
      size_t j = i + 1;
      int n = 0;
      while (j < in.size() && std::isdigit(static_cast<unsigned char>(in[j]))) n = n * 10 + (in[j++] - '0');
      if (j == i + 1) n = highest + 1;
      highest = std::max(highest, n);
      absl::StrAppend(&out, "$", n);
      i = j;
      continue;
    }
    if (word_char(c) && (i == 0 || !word_char(in[i - 1]))) {
      size_t j = i;
      while (j < in.size() && word_char(in[j])) ++j;
      const std::string_view word = in.substr(i, j - i);
      if (word == "INTEGER") {
        out += "BIGINT";  // SQLite's integers are 64 bits
      } else if (word == "BLOB") {
        out += "BYTEA";
      } else if (word == "WITHOUT" && next_word(in, j) == "ROWID") {
        j = in.find("ROWID", j) + 5;  // PostgreSQL's tables have no rowid to do without
      } else if (word == "c960_bind" && in.substr(j).starts_with("('") &&
                 in.find("',", j + 2) != std::string_view::npos) {
        // c960_bind('KIND', ...) as c960_bind_KIND(...): one function per binding, so that the
        // server knows its parameters' types from it (overloads of one name would leave
        // parameters in them ambiguous).
        const size_t quote = in.find("',", j + 2);
        out += "c960_bind_";
        out.append(in.substr(j + 2, quote - j - 2));
        out += '(';
        j = quote + 2;
        while (j < in.size() && in[j] == ' ') ++j;
      } else if (word == "IS" && next_word(in, j) != "NULL" && next_word(in, j) != "NOT") {
        out += "IS NOT DISTINCT FROM";  // SQLite's IS compares NULLs as values
      } else {
        out.append(word);
      }
      i = j;
      continue;
    }
    out += c;
    ++i;
  }
  return out;
}

const char* schema_version_query(Dialect d) {
  return d == Dialect::kSqlite ? "PRAGMA user_version" : "SELECT version FROM c960_schema";
}

std::string set_schema_version(Dialect d, int version) {
  return d == Dialect::kSqlite ? absl::StrCat("PRAGMA user_version = ", version)
                               : absl::StrCat("UPDATE c960_schema SET version = ", version);
}

const char* table_exists_query(Dialect d) {
  return d == Dialect::kSqlite ? "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1"
                               : "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = "
                                 "current_schema() AND table_name = ?1";
}

const char* foreign_tables_query(Dialect d) {
  return d == Dialect::kSqlite ? "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name NOT IN "
                                 "('jobs', 'units', 'games', 'workers')"
                               : "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = "
                                 "current_schema() AND table_name NOT IN ('c960_schema', 'c960_leader')";
}

// The schema version (one row); the leader lease's row (c960_leader: the holder of the
// store's advisory lock writes its advertised address, its epoch and its session's pid there,
// for standbys to name it: Store::claim_leader); and c960_bind: the same function of the same canonical bytes as
// SQLite's (store_sqlite.cpp): per argument a type byte ('i' integer, 'b' text or bytes), its
// length as 8 bytes little-endian, its bytes (an integer's 8, little-endian); SHA-256 of it all,
// the first 16 bytes; NULL when an argument is NULL (STRICT). One function per binding the store
// computes (store_sql.h), c960_bind('KIND', ...) translated to c960_bind_KIND(...): the unit's,
// the copy's, the folded group's.
const char* postgres_prelude() {
  return R"sql(
CREATE TABLE IF NOT EXISTS c960_schema (
  one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), version BIGINT NOT NULL);
INSERT INTO c960_schema (version) VALUES (0) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS c960_leader (
  one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), holder TEXT NOT NULL, epoch BIGINT NOT NULL,
  pid INTEGER NOT NULL);
INSERT INTO c960_leader (holder, epoch, pid) VALUES ('', 0, 0) ON CONFLICT DO NOTHING;
CREATE OR REPLACE FUNCTION c960_le8(v BIGINT) RETURNS BYTEA LANGUAGE sql IMMUTABLE STRICT AS $f$
  SELECT decode(lpad(to_hex(v & 255), 2, '0') || lpad(to_hex((v >> 8) & 255), 2, '0') ||
    lpad(to_hex((v >> 16) & 255), 2, '0') || lpad(to_hex((v >> 24) & 255), 2, '0') ||
    lpad(to_hex((v >> 32) & 255), 2, '0') || lpad(to_hex((v >> 40) & 255), 2, '0') ||
    lpad(to_hex((v >> 48) & 255), 2, '0') || lpad(to_hex((v >> 56) & 255), 2, '0'), 'hex') $f$;
CREATE OR REPLACE FUNCTION c960_part(b BYTEA) RETURNS BYTEA LANGUAGE sql IMMUTABLE STRICT AS $f$
  SELECT '\x62'::bytea || c960_le8(length(b)) || b $f$;
CREATE OR REPLACE FUNCTION c960_part(t TEXT) RETURNS BYTEA LANGUAGE sql IMMUTABLE STRICT AS $f$
  SELECT c960_part(convert_to(t, 'UTF8')) $f$;
CREATE OR REPLACE FUNCTION c960_part(v BIGINT) RETURNS BYTEA LANGUAGE sql IMMUTABLE STRICT AS $f$
  SELECT '\x69'::bytea || c960_le8(8) || c960_le8(v) $f$;
CREATE OR REPLACE FUNCTION c960_bind_unit(job TEXT, idx BIGINT, spec BYTEA, result BYTEA) RETURNS BYTEA
  LANGUAGE sql IMMUTABLE STRICT AS $f$
  SELECT substring(sha256(c960_part('unit'::text) || c960_part(job) || c960_part(idx) || c960_part(spec) ||
    c960_part(result)) FROM 1 FOR 16) $f$;
CREATE OR REPLACE FUNCTION c960_bind_copy(job TEXT, idx BIGINT, copy BIGINT, spec BYTEA, result BYTEA)
  RETURNS BYTEA LANGUAGE sql IMMUTABLE STRICT AS $f$
  SELECT substring(sha256(c960_part('copy'::text) || c960_part(job) || c960_part(idx) || c960_part(copy) ||
    c960_part(spec) || c960_part(result)) FROM 1 FOR 16) $f$;
CREATE OR REPLACE FUNCTION c960_bind_fold(job TEXT, first_unit BIGINT, end_unit BIGINT, record BYTEA)
  RETURNS BYTEA LANGUAGE sql IMMUTABLE STRICT AS $f$
  SELECT substring(sha256(c960_part('fold'::text) || c960_part(job) || c960_part(first_unit) ||
    c960_part(end_unit) || c960_part(record)) FROM 1 FOR 16) $f$;
)sql";
}

}  // namespace dialect
}  // namespace c960::cluster::store_db
