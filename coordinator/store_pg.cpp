// The store's PostgreSQL connection (store_db.h), over libpq. Statements are translated from
// SQLite's dialect once, when prepared (dialect::postgres); kept ones are server-side prepared
// statements by name, prepared once per connection. Parameters go in binary (integers as the
// types the server inferred for them, blobs as BYTEA), results come back in binary.
#include <algorithm>
#include <cstring>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "cluster/config.h"
#include "coordinator/store_db.h"

namespace c960::cluster::store_db {

namespace {

// Type OIDs (PostgreSQL's catalog/pg_type.h, which only the server's headers carry).
constexpr Oid kBool = 16, kBytea = 17, kName = 19, kInt8 = 20, kInt2 = 21, kInt4 = 23, kText = 25, kBpchar = 1042,
              kVarchar = 1043;

bool is_texty(Oid t) { return t == kText || t == kVarchar || t == kBpchar || t == kName; }

void put_be(std::string* out, uint64_t v, int bytes) {
  out->resize(size_t(bytes));
  for (int b = 0; b < bytes; ++b) (*out)[size_t(b)] = char((v >> (8 * (bytes - 1 - b))) & 0xFF);
}

int64_t get_be(const char* p, int bytes) {
  uint64_t v = 0;
  for (int b = 0; b < bytes; ++b) v = (v << 8) | uint8_t(p[b]);
  if (bytes < 8 && (v >> (8 * bytes - 1)) & 1) v |= ~uint64_t(0) << (8 * bytes);  // sign-extended
  return int64_t(v);
}

class PgConnection;

class PgStatement final : public Statement {
 public:
  PgStatement(PgConnection* c, std::string name, std::string sql, std::vector<Oid> types)
      : c_(c), name_(std::move(name)), sql_(std::move(sql)), types_(std::move(types)) {
    const size_t n = types_.size();
    values_.resize(n);
    null_.assign(n, true);
    formats_.assign(n, 1);
  }
  ~PgStatement() override;
  void bind_blob(int i, std::string_view v) override { bind_bytes(i, v); }
  void bind_text(int i, std::string_view v) override { bind_bytes(i, v); }
  void bind_int(int i, int64_t v) override {
    if (!slot(i)) return;
    const size_t k = size_t(i - 1);
    null_[k] = false;
    formats_[k] = 1;
    switch (types_[k]) {
      case kInt8: put_be(&values_[k], uint64_t(v), 8); break;
      case kInt4: put_be(&values_[k], uint64_t(v), 4); break;
      case kInt2: put_be(&values_[k], uint64_t(v), 2); break;
      case kBool: values_[k].assign(1, v ? '\1' : '\0'); break;
      default:  // any other type reads the number as text (numeric, float8, text, unknown, ...)
        values_[k] = absl::StrCat(v);
        formats_[k] = 0;
    }
  }
  void bind_null(int i) override {
    if (slot(i)) null_[size_t(i - 1)] = true;
  }
  int step() override;
  void reset() override {
    clear_result();
    null_.assign(types_.size(), true);
  }
  int64_t column_int(int c) override {
    if (!current(c)) return 0;
    const char* p = PQgetvalue(res_, row_, c);
    const int n = PQgetlength(res_, row_, c);
    switch (PQftype(res_, c)) {
      case kInt8: return n == 8 ? get_be(p, 8) : 0;
      case kInt4: return n == 4 ? get_be(p, 4) : 0;
      case kInt2: return n == 2 ? get_be(p, 2) : 0;
      case kBool: return n == 1 && p[0] ? 1 : 0;
      default: {
        int64_t v = 0;
        return absl::SimpleAtoi(absl::string_view(p, size_t(n)), &v) ? v : 0;
      }
    }
  }
  bool column_null(int c) override { return !current(c) || PQgetisnull(res_, row_, c); }
  std::string column_blob(int c) override {
    if (!current(c)) return "";
    return std::string(PQgetvalue(res_, row_, c), size_t(PQgetlength(res_, row_, c)));
  }

 private:
  bool slot(int i) const { return i >= 1 && size_t(i) <= types_.size(); }
  bool current(int c) const { return res_ && row_ >= 0 && row_ < rows_ && c >= 0 && c < PQnfields(res_); }
  void bind_bytes(int i, std::string_view v) {
    if (!slot(i)) return;
    const size_t k = size_t(i - 1);
    null_[k] = false;
    values_[k].assign(v.data(), v.size());
    // BYTEA and the text types take their bytes as they are in binary; any other type parses text.
    formats_[k] = types_[k] == kBytea || is_texty(types_[k]) ? 1 : 0;
  }
  void clear_result() {
    if (res_) PQclear(res_);
    res_ = nullptr;
    row_ = -1;
    rows_ = 0;
    ran_ = false;
  }
  PgConnection* c_;
  std::string name_;  // the server-side statement's name; "" for one used once (sent with its SQL)
  std::string sql_;   // translated
  std::vector<Oid> types_;
  std::vector<std::string> values_;
  std::vector<bool> null_;
  std::vector<int> formats_;
  PGresult* res_ = nullptr;
  int row_ = -1, rows_ = 0;
  bool ran_ = false;
};

class PgConnection final : public Connection {
 public:
  explicit PgConnection(PGconn* conn) : conn_(conn) {}
  ~PgConnection() override {
    // The session's advisory locks (one coordinator per database) released before it closes, so
    // that the next coordinator can take them at once: the server ends a session some time after
    // its client goes.
    if (PQstatus(conn_) == CONNECTION_OK) PQclear(PQexec(conn_, "SELECT pg_advisory_unlock_all()"));
    PQfinish(conn_);
  }
  Dialect dialect() const override { return Dialect::kPostgres; }

  std::unique_ptr<Statement> prepare(const char* sql, bool keep) override {
    std::string text = dialect::postgres(sql);
    std::string name = keep ? absl::StrCat("c960_", ++prepared_) : "";
    PGresult* r = PQprepare(conn_, name.c_str(), text.c_str(), 0, nullptr);
    if (!record(r, PGRES_COMMAND_OK)) return nullptr;
    r = PQdescribePrepared(conn_, name.c_str());
    std::vector<Oid> types;
    if (r && PQresultStatus(r) == PGRES_COMMAND_OK)
      for (int i = 0; i < PQnparams(r); ++i) types.push_back(PQparamtype(r, i));
    if (!record(r, PGRES_COMMAND_OK)) return nullptr;
    return std::make_unique<PgStatement>(this, std::move(name), std::move(text), std::move(types));
  }

  bool exec(const char* sql) override {
    const std::string text = dialect::postgres(sql);
    PGresult* r = PQexec(conn_, text.c_str());
    // Several statements answer with the last one's result; an error stops at the failing one.
    // (Empty SQL, such as a migration with nothing to do, answers that it was empty.)
    const ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    return record(r, st == PGRES_TUPLES_OK || st == PGRES_EMPTY_QUERY ? st : PGRES_COMMAND_OK);
  }

  int64_t changes() override { return changes_; }

  // libpq never connects again by itself: a connection gone bad stays so, and so does what its
  // session held (the store's advisory lock: the leader lease).
  bool lost() override { return PQstatus(conn_) == CONNECTION_BAD; }

  absl::Status limit_silence(int64_t ms) override {
    const int fd = PQsocket(conn_);
    if (fd < 0) return absl::UnavailableError("the connection to the database server was lost");
    const int timeout_ms = int(std::clamp<int64_t>(ms, 1000, 3'600'000));
    const int idle_s = std::max(1, timeout_ms / 6000), interval_s = 1, count = 3, on = 1;
    // Unix sockets have no TCP options: nothing can cut them.
    if (setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &timeout_ms, sizeof timeout_ms) != 0) return absl::OkStatus();
    if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on) != 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof idle_s) != 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof interval_s) != 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count) != 0)
      return absl::InternalError(
          absl::StrCat("cannot set TCP keepalives on the database connection: ", strerror(errno)));
    const std::string sql =
        absl::StrCat("SET tcp_user_timeout = ", timeout_ms, "; SET tcp_keepalives_idle = ", idle_s,
                     "; SET tcp_keepalives_interval = ", interval_s, "; SET tcp_keepalives_count = ", count);
    PGresult* r = PQexec(conn_, sql.c_str());
    if (!record(r, PGRES_COMMAND_OK))
      return absl::FailedPreconditionError(
          absl::StrCat("the database server refused its session's TCP timeouts: ", message_));
    return absl::OkStatus();
  }

  Failure failure() override {
    if (state_.empty()) return message_.empty() ? Failure::kNone : Failure::kIo;
    const std::string_view cls = std::string_view(state_).substr(0, 2);
    if (state_ == "53100") return Failure::kFull;  // disk_full
    if (cls == "23") return Failure::kConstraint;
    if (state_ == "40001" || state_ == "40P01" || state_ == "55P03") return Failure::kBusy;
    if (state_ == "25006") return Failure::kReadOnly;
    if (state_ == "XX001" || state_ == "XX002") return Failure::kCorrupt;
    if (cls == "08" || cls == "58" || cls == "57") return Failure::kIo;
    return Failure::kOther;
  }

  std::string describe() override {
    switch (failure()) {
      case Failure::kFull: return absl::StrCat("the database server's disk is full (", message_, ")");
      case Failure::kBusy: return absl::StrCat("the database is busy (", message_, ")");
      case Failure::kIo:
        if (PQstatus(conn_) == CONNECTION_BAD)
          return absl::StrCat("the connection to the database server was lost (", message_, ")");
        return message_;
      default: return message_;
    }
  }

  // Runs a statement (by name if kept, else with its SQL): its rows, or nullptr with SQLite's
  // code for the error in `code`.
  PGresult* run(const std::string& name, const std::string& sql, const std::vector<Oid>& types,
                const std::vector<std::string>& values, const std::vector<bool>& null, const std::vector<int>& formats,
                int* code) {
    const int n = int(types.size());
    std::vector<const char*> v(size_t(n), nullptr);
    std::vector<int> lengths(size_t(n), 0);
    for (int k = 0; k < n; ++k) {
      if (null[size_t(k)]) continue;
      v[size_t(k)] = values[size_t(k)].c_str();
      lengths[size_t(k)] = int(values[size_t(k)].size());
    }
    PGresult* r = name.empty()
                      ? PQexecParams(conn_, sql.c_str(), n, types.data(), v.data(), lengths.data(), formats.data(), 1)
                      : PQexecPrepared(conn_, name.c_str(), n, v.data(), lengths.data(), formats.data(), 1);
    const ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
      state_.clear();
      message_.clear();
      int64_t changed = 0;
      changes_ = absl::SimpleAtoi(PQcmdTuples(r), &changed) ? changed : 0;
      *code = SQLITE_DONE;
      return r;
    }
    record(r, PGRES_COMMAND_OK);  // keeps the error, clears r
    *code = sqlite_code();
    return nullptr;
  }

  void deallocate(const std::string& name) {
    // Kept statements live as long as the store; one that goes early is freed on the server.
    if (PQstatus(conn_) == CONNECTION_OK) PQclear(PQexec(conn_, absl::StrCat("DEALLOCATE ", name).c_str()));
  }

 private:
  // Keeps what an answer says went wrong, and clears it. True when it is what was expected.
  bool record(PGresult* r, ExecStatusType want) {
    const ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    const bool ok = st == want;
    if (ok) {
      state_.clear();
      message_.clear();
    } else {
      const char* code = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
      const char* primary = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
      state_ = code ? code : "";
      message_ = std::string(absl::StripTrailingAsciiWhitespace(primary ? primary : PQerrorMessage(conn_)));
      if (message_.empty())
        message_ = r ? absl::StrCat("the database server answered ", PQresStatus(st), " where ", PQresStatus(want),
                                    " was expected")
                     : "the database server gave no answer";
    }
    PQclear(r);
    return ok;
  }
  int sqlite_code() {
    switch (failure()) {
      case Failure::kNone: return SQLITE_OK;
      case Failure::kBusy: return SQLITE_BUSY;
      case Failure::kFull: return SQLITE_FULL;
      case Failure::kConstraint: return SQLITE_CONSTRAINT;
      case Failure::kIo: return SQLITE_IOERR;
      case Failure::kCorrupt: return SQLITE_CORRUPT;
      case Failure::kReadOnly: return SQLITE_READONLY;
      case Failure::kOther: return SQLITE_ERROR;
    }
    return SQLITE_ERROR;
  }

  PGconn* conn_;
  int64_t prepared_ = 0;  // names of kept statements: c960_1, c960_2, ...
  int64_t changes_ = 0;
  std::string state_;    // the last error's SQLSTATE ("" when none, or when the connection failed)
  std::string message_;  // the last error's message ("" when none)
};

PgStatement::~PgStatement() {
  clear_result();
  if (!name_.empty()) c_->deallocate(name_);
}

int PgStatement::step() {
  if (!ran_) {
    ran_ = true;
    int code = SQLITE_DONE;
    res_ = c_->run(name_, sql_, types_, values_, null_, formats_, &code);
    if (!res_) return code;
    rows_ = PQntuples(res_);
    row_ = -1;
  }
  if (!res_) return SQLITE_MISUSE;
  return ++row_ < rows_ ? SQLITE_ROW : SQLITE_DONE;
}

// libpq's notices (CREATE ... IF NOT EXISTS that found it) are not the coordinator's to print.
void ignore_notice(void*, const PGresult*) {}

}  // namespace

absl::StatusOr<std::unique_ptr<Connection>> open_postgres(const std::string& url, const std::string& password) {
  // The URL comes after the defaults, so that what it says wins; the password after it.
  const std::string idle = absl::StrCat(kPgKeepaliveIdleSeconds), interval = absl::StrCat(kPgKeepaliveIntervalSeconds),
                    count = absl::StrCat(kPgKeepaliveCount), user_timeout = absl::StrCat(kPgTcpUserTimeoutMs),
                    connect_timeout = absl::StrCat(kPgConnectTimeoutSeconds);
  std::vector<const char*> keys = {"application_name", "keepalives",       "keepalives_idle", "keepalives_interval",
                                   "keepalives_count", "tcp_user_timeout", "connect_timeout", "dbname"};
  std::vector<const char*> values = {"c960-coordinator",      "1",           idle.c_str(),
                                     interval.c_str(),        count.c_str(), user_timeout.c_str(),
                                     connect_timeout.c_str(), url.c_str()};
  if (!password.empty()) {  // libpq stops at the first null value: left out when there is none
    keys.push_back("password");
    values.push_back(password.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  PGconn* conn = PQconnectdbParams(keys.data(), values.data(), 1);
  if (!conn) return absl::ResourceExhaustedError("cannot connect to the database: out of memory");
  if (PQstatus(conn) != CONNECTION_OK) {
    const std::string why(absl::StripTrailingAsciiWhitespace(PQerrorMessage(conn)));
    PQfinish(conn);
    return absl::FailedPreconditionError(absl::StrCat("cannot connect to the database '", redact_url(url), "': ", why));
  }
  PQsetNoticeReceiver(conn, ignore_notice, nullptr);
  return std::unique_ptr<Connection>(std::make_unique<PgConnection>(conn));
}

}  // namespace c960::cluster::store_db
