// c960-coordinator: serves JobService and WorkerService on --listen, state in the --db file;
// TLS, tokens and client certificates as its flags say (cluster/server.h). With --http-listen
// also the dashboard, /metrics and the JSON API (coordinator/http_api.h), same TLS and tokens.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sys/resource.h>
#include <sys/stat.h>
#include <thread>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cluster/address.h"
#include "cluster/config.h"
#include "cluster/flags.h"
#include "cluster/log.h"
#include "cluster/server.h"
#include "coordinator/coordinator.h"
#include "coordinator/file_lease.h"
#include "coordinator/http_api.h"
#include "coordinator/http_server.h"
#include "coordinator/leadership.h"
#include "coordinator/metrics.h"
#include "coordinator/service.h"
#include "coordinator/standby_service.h"
#include "coordinator/store_backup.h"
#include "coordinator/store_copy.h"
#include "coordinator/store_db.h"
#include "coordinator/store_lease.h"
#include "core/version.h"

ABSL_FLAG(std::string, listen, c960::cluster::kDefaultListen, "HOST:PORT to serve on; port 0 picks a free port");
ABSL_FLAG(std::string, port_file, "", "write the port actually chosen to this file once serving");
ABSL_FLAG(std::string, db, c960::cluster::kDefaultDb,
          "the store of jobs, units, results and workers: an SQLite file, or a PostgreSQL database's URL "
          "(postgresql://USER@HOST:PORT/DB?sslmode=...; no password in it)");
ABSL_FLAG(std::string, db_password_file, "",
          "--db postgresql://: a file (not readable by group or others) holding the database password; else "
          "libpq's PGPASSWORD or PGPASSFILE from the environment");
ABSL_FLAG(int64_t, lease_seconds, c960::cluster::kDefaultLeaseSeconds,
          "a lease not renewed for this long returns its unit to the queue (1..3600)");
ABSL_FLAG(int32_t, trust_after, c960::cluster::kDefaultTrustAfter,
          "--verify adaptive: a worker is trusted after this many results that other workers confirmed (1..1000000)");
ABSL_FLAG(double, spot_check_rate, c960::cluster::kDefaultSpotCheckRate,
          "--verify adaptive: the fraction of a trusted worker's units computed again by another (0..1)");
ABSL_FLAG(std::string, trust_roots, "",
          "owners (comma-separated) whose workers the operator trusts: they decide disagreements and audits, "
          "and trust grows outward from them (without authentication every worker is one)");
ABSL_FLAG(double, audit_rate, c960::cluster::kDefaultAuditRate,
          "with --trust-roots: the share of units a trust root computes again before they settle, for jobs that "
          "set none (0..1)");
ABSL_FLAG(int32_t, max_active_jobs, c960::cluster::kDefaultMaxActiveJobs,
          "jobs one caller (token or certificate) may have queued or running at once (1..100000)");
ABSL_FLAG(int64_t, max_planned_units, c960::cluster::kDefaultMaxPlannedUnits,
          "units one caller's unfinished jobs may hold in all; they take coordinator memory and store "
          "(1..1000000000)");
ABSL_FLAG(int32_t, max_watches_per_caller, c960::cluster::kDefaultMaxWatchesPerCaller,
          "open c960 watch streams per caller (1..100000)");
ABSL_FLAG(int32_t, max_watches, c960::cluster::kDefaultMaxWatches, "open c960 watch streams in all (1..100000)");
ABSL_FLAG(int64_t, max_leases_per_credential, c960::cluster::kDefaultMaxLeasesPerCredential,
          "leases one owner may hold at once, over all its credentials and workers, at most; each owner's cap is "
          "also its connected workers' threads x 2 (1..1000000)");
ABSL_FLAG(int32_t, max_workers_per_credential, c960::cluster::kDefaultMaxWorkersPerCredential,
          "worker names one credential may have remembered at once; a Hello under a new name past it is refused, "
          "a restart under a known name never (1..1000000)");
ABSL_FLAG(int32_t, max_workers_per_owner, c960::cluster::kDefaultMaxWorkersPerOwner,
          "worker names one owner may have remembered at once, over all its credentials (1..1000000)");
ABSL_FLAG(int64_t, forget_workers_after_days, c960::cluster::kDefaultForgetWorkersSeconds / 86400,
          "a worker silent this many days is forgotten (its record deleted) unless it holds a lease, a job in "
          "memory names it, it is quarantined, or it is its owner's last trusted worker (1..3650)");
ABSL_FLAG(int32_t, max_calls_per_caller, c960::cluster::kDefaultMaxCallsPerCaller,
          "unary gRPC calls one authenticated caller may have in flight at once, per service (1..100000)");
ABSL_FLAG(int32_t, max_result_streams_per_caller, c960::cluster::kDefaultMaxResultStreamsPerCaller,
          "GetResults streams (c960 results) one caller may have open at once (1..100000)");
ABSL_FLAG(std::string, backup_dir, "",
          "keep online copies of the --db store in this folder (made if missing; best on another disk): every "
          "--backup-every-minutes and on request (c960 admin backup)");
ABSL_FLAG(int64_t, backup_every_minutes, c960::cluster::kDefaultBackupEveryMs / 60'000,
          "minutes between scheduled copies with --backup-dir (0: on request only; else at least 1)");
ABSL_FLAG(int32_t, backup_keep, c960::cluster::kDefaultBackupKeep,
          "copies kept in --backup-dir: the newest N (1..10000); older ones are removed after a new one is made");
ABSL_FLAG(std::string, tls_cert, "", "serve TLS with this PEM certificate (and its chain); needs --tls-key");
ABSL_FLAG(std::string, tls_key, "", "the PEM private key of --tls-cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "require client certificates signed by this PEM CA (mTLS); a certificate's CN names its holder, its "
          "OU the role (admin, submit, read, worker)");
ABSL_FLAG(std::string, tokens, "",
          "accept only callers with a token of this file (lines ROLE NAME sha256:HASH, from c960 token new); "
          "needs TLS; SIGHUP reloads it");
ABSL_FLAG(std::string, http_listen, "",
          "also serve HTTP (HTTPS with --tls-cert) on HOST:PORT: the dashboard, /metrics, /healthz, /readyz and the "
          "JSON API; port 0 picks a free port; off when empty");
ABSL_FLAG(std::string, http_port_file, "", "write the HTTP port actually chosen to this file once serving");
ABSL_FLAG(int32_t, http_max_connections, c960::cluster::kHttpMaxConnections,
          "HTTP connections open at once; the next is answered 503 and closed (1..1000000)");
ABSL_FLAG(int32_t, http_max_connections_per_address, c960::cluster::kHttpMaxConnectionsPerAddress,
          "HTTP connections open at once from one client address; behind a reverse proxy all come from its address "
          "(1..--http-max-connections)");
ABSL_FLAG(std::string, advertise, "",
          "HOST:PORT at which clients reach this coordinator's gRPC port: standbys name it to clients while it "
          "leads (default: --listen, with the port it got)");
ABSL_FLAG(int64_t, leader_lease_seconds, c960::cluster::kDefaultLeaderLeaseSeconds,
          "coordinators sharing one store: how long the leader lease lasts unless renewed (2..300)");
ABSL_FLAG(bool, init, false,
          "make a new store in --db even though the file exists but is empty, or is an SQLite file of something else");
ABSL_FLAG(std::string, migrate_from, "",
          "copy the SQLite store at this path into the empty PostgreSQL database that --db names, verify the copy, "
          "and exit (no coordinator may be running on either)");
ABSL_FLAG(bool, insecure, false,
          "serve beyond loopback without TLS and authentication (anyone reaching the port may do anything)");

namespace {

int die(const std::string& msg) {
  std::fprintf(stderr, "c960-coordinator: %s\n", msg.c_str());
  return 2;
}

}  // namespace

const c960::cluster::DaemonCommand kCommand = {
    "c960-coordinator",
    "c960-coordinator [--listen HOST:PORT] [--db FILE|URL [--init] [--db-password-file FILE]]\n"
    "                        [--port-file FILE] [--lease-seconds S]\n"
    "                        [--trust-after K] [--spot-check-rate P]\n"
    "                        [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]] [--tokens FILE]\n"
    "                        [--http-listen HOST:PORT [--http-port-file FILE] [--http-max-connections N]\n"
    "                        [--http-max-connections-per-address N]] [--insecure] [--log-format text|json]",
    // Paragraphs; --help wraps them to the terminal (cluster/text_wrap.h).
    "Serves the c960 cluster: users submit, watch and fetch jobs (c960 submit|status|watch|results|cancel), "
    "workers (c960-worker) lease their units. Jobs, units, results and workers live in the SQLite file "
    "--db; a coordinator restarted on the same file resumes every job. Stops on SIGTERM or SIGINT.\n\n"
    "--db postgresql://... keeps them in a PostgreSQL database instead (one coordinator per database), its "
    "password from --db-password-file or libpq's environment (PGPASSWORD, PGPASSFILE), TLS to it by libpq's "
    "sslmode and sslrootcert in the URL. Back such a store up with PostgreSQL's own tools (pg_basebackup, "
    "pg_dump): --backup-dir is for SQLite stores.\n\n"
    "Several coordinators may share one store (standbys): one leads, holding a lease in the store; the others "
    "answer every call UNAVAILABLE naming the leader (--advertise) and /readyz 503, and one of them takes over "
    "when the leader stops or dies. Give workers and clients all of their addresses (--coordinator A,B).\n\n"
    "--backup-dir keeps consistent copies of --db taken while it serves (SQLite's online backup), hourly by "
    "default and on request (c960 admin backup, admin role); to restore one, stop the coordinator and copy it "
    "over --db (removing --db's -wal and -shm files).\n\n"
    "Without TLS and authentication (--tokens or --tls-client-ca) it serves loopback only, unless --insecure. "
    "Also serves grpc.health.v1.Health (open to all) and server reflection. SIGHUP reloads --tokens.\n\n"
    "--http-listen adds a web dashboard, Prometheus metrics (/metrics), health endpoints (/healthz, /readyz) and "
    "a read-only JSON API (/api/v1/), with the same TLS and tokens (role read or admin; the health endpoints are "
    "open): HTTPS with --tls-cert. Beyond loopback it too needs TLS and authentication, unless --insecure.",
    absl::string_view(c960::version().data(), c960::version().size()),
    {{"listen", "HOST:PORT"},
     {"port_file", "FILE"},
     {"db", "FILE|URL"},
     {"db_password_file", "FILE"},
     {"migrate_from", "FILE"},
     {"lease_seconds", "S"},
     {"trust_after", "K"},
     {"spot_check_rate", "P"},
     {"trust_roots", "OWNER,..."},
     {"audit_rate", "R"},
     {"max_active_jobs", "N"},
     {"max_planned_units", "N"},
     {"max_watches_per_caller", "N"},
     {"max_watches", "N"},
     {"max_leases_per_credential", "N"},
     {"max_workers_per_credential", "N"},
     {"max_workers_per_owner", "N"},
     {"forget_workers_after_days", "D"},
     {"max_calls_per_caller", "N"},
     {"max_result_streams_per_caller", "N"},
     {"backup_dir", "DIR"},
     {"backup_every_minutes", "M"},
     {"backup_keep", "N"},
     {"tls_cert", "FILE"},
     {"tls_key", "FILE"},
     {"tls_client_ca", "FILE"},
     {"tokens", "FILE"},
     {"http_listen", "HOST:PORT"},
     {"http_port_file", "FILE"},
     {"http_max_connections", "N"},
     {"http_max_connections_per_address", "N"},
     {"advertise", "HOST:PORT"},
     {"leader_lease_seconds", "S"},
     {"insecure", ""},
     {"init", ""}},
};

namespace {

// --listen and --http-listen, checked before anything else (and before the store is opened or
// created); --http-listen empty: no HTTP side.
struct Addresses {
  std::string listen, http_listen;
};
absl::StatusOr<Addresses> addresses() {
  Addresses a;
  absl::StatusOr<std::string> listen = c960::cluster::check_address(
      "--listen", absl::GetFlag(FLAGS_listen), {.port_zero = true, .default_port = true, .unix_socket = true});
  if (!listen.ok()) return listen.status();
  a.listen = *listen;
  if (const std::string http = absl::GetFlag(FLAGS_http_listen); !http.empty()) {
    absl::StatusOr<std::string> checked = c960::cluster::check_address("--http-listen", http, {.port_zero = true});
    if (!checked.ok()) return checked.status();
    a.http_listen = *checked;
  }
  return a;
}

// The server's security from the flags, checked: a usage error (exit 2) names what is wrong.
absl::StatusOr<c960::cluster::ServerOptions> server_options(const Addresses& addresses) {
  c960::cluster::ServerOptions o;
  o.listen = addresses.listen;
  const std::string cert = absl::GetFlag(FLAGS_tls_cert), key = absl::GetFlag(FLAGS_tls_key),
                    client_ca = absl::GetFlag(FLAGS_tls_client_ca), tokens = absl::GetFlag(FLAGS_tokens);
  if (cert.empty() != key.empty())
    return absl::InvalidArgumentError(cert.empty() ? "--tls-key needs --tls-cert" : "--tls-cert needs --tls-key");
  if (!client_ca.empty() && cert.empty())
    return absl::InvalidArgumentError("--tls-client-ca needs --tls-cert and --tls-key (client certificates need TLS)");
  if (!tokens.empty() && cert.empty())
    return absl::InvalidArgumentError("--tokens needs --tls-cert and --tls-key: tokens would travel in clear");
  if (!cert.empty()) {
    absl::StatusOr<c960::cluster::ServerTls> tls = c960::cluster::load_server_tls(cert, key, client_ca);
    if (!tls.ok()) return tls.status();
    o.tls = std::move(*tls);
  }
  if (!tokens.empty()) {
    absl::StatusOr<c960::cluster::TokenSet> set = c960::cluster::TokenSet::load(tokens);
    if (!set.ok()) return absl::InvalidArgumentError(absl::StrCat("--tokens: ", set.status().message()));
    o.tokens = std::make_shared<c960::cluster::TokenTable>(std::move(*set));
  }
  if (!c960::cluster::is_loopback_listen(o.listen) && !c960::cluster::authenticates(o)) {
    if (!absl::GetFlag(FLAGS_insecure))
      return absl::InvalidArgumentError(absl::StrCat(
          "--listen ", o.listen,
          " reaches beyond this machine: that needs TLS (--tls-cert, --tls-key) and authentication (--tokens, or "
          "--tls-client-ca), or --insecure to serve anyone in clear"));
    c960::cluster::log_warning(absl::StrCat(
        "--insecure: serving ", o.listen, o.tls ? " over TLS" : " in clear",
        " WITHOUT AUTHENTICATION: anyone who reaches this port can submit and cancel jobs and act as a worker"));
  }
  // The HTTP side follows the same rule: it shows every job and worker.
  if (const std::string& http = addresses.http_listen; !http.empty()) {
    if (!c960::cluster::is_loopback_listen(http) && !c960::cluster::authenticates(o)) {
      if (!absl::GetFlag(FLAGS_insecure))
        return absl::InvalidArgumentError(absl::StrCat(
            "--http-listen ", http,
            " reaches beyond this machine: that needs TLS (--tls-cert, --tls-key) and authentication (--tokens, or "
            "--tls-client-ca), or --insecure to show the dashboard and metrics to anyone"));
      c960::cluster::log_warning(
          absl::StrCat("--insecure: serving HTTP on ", http, o.tls ? " over TLS" : " in clear",
                       " WITHOUT AUTHENTICATION: anyone who reaches it sees every job and worker"));
    }
  }
  if (absl::Status s = c960::cluster::check_listen_address_free(o.listen); !s.ok()) return s;
  return o;
}

std::string security_summary(const c960::cluster::ServerOptions& o) {
  if (!o.tls) return "plaintext, no authentication";
  std::string s = "TLS";
  if (o.tokens) absl::StrAppend(&s, ", ", o.tokens->size(), " tokens");
  if (!o.tls->client_ca_pem.empty()) absl::StrAppend(&s, ", client certificates required");
  if (!c960::cluster::authenticates(o)) absl::StrAppend(&s, ", no authentication");
  return s;
}

// --db and --db-password-file checked together: a PostgreSQL URL with no password in it (the
// command line is for anyone on the machine to read), and the password read from its file (not
// readable by others, as libpq wants of PGPASSFILE). "" when libpq's environment gives it.
absl::StatusOr<std::string> database_password(const std::string& backup_dir) {
  const std::string db = absl::GetFlag(FLAGS_db), file = absl::GetFlag(FLAGS_db_password_file);
  if (!c960::cluster::store_db::is_postgres_url(db)) {
    if (!file.empty()) return absl::InvalidArgumentError("--db-password-file: only with --db postgresql://...");
    return std::string();
  }
  if (c960::cluster::store_db::redact_url(db) != db)
    return absl::InvalidArgumentError(
        "--db: a password in the URL is on the command line for anyone to see: give it in --db-password-file, or "
        "PGPASSWORD or PGPASSFILE in the environment");
  if (!backup_dir.empty())
    return absl::InvalidArgumentError(
        "--backup-dir: the store is a PostgreSQL database: back it up with PostgreSQL's own tools (pg_basebackup, "
        "pg_dump, or the managed database's backups)");
  if (file.empty()) return std::string();
  struct stat st {};
  if (stat(file.c_str(), &st) != 0)
    return absl::InvalidArgumentError(absl::StrCat("--db-password-file: cannot read '", file, "': ", strerror(errno)));
  if (st.st_mode & 077)
    return absl::InvalidArgumentError(
        absl::StrCat("--db-password-file: '", file, "' is readable by group or others: chmod 600 it"));
  std::ifstream in(file);
  std::string password;
  std::getline(in, password);
  if (!in && !in.eof()) return absl::InvalidArgumentError(absl::StrCat("--db-password-file: cannot read '", file, "'"));
  if (password.empty()) return absl::InvalidArgumentError(absl::StrCat("--db-password-file: '", file, "' is empty"));
  return password;
}

// SIGHUP: the tokens file again. A file that does not load leaves the tokens in use.
void reload_tokens(c960::cluster::TokenTable* table) {
  const std::string path = absl::GetFlag(FLAGS_tokens);
  if (!table) {
    c960::cluster::log_info("SIGHUP: no --tokens file to reload");
    return;
  }
  absl::StatusOr<c960::cluster::TokenSet> set = c960::cluster::TokenSet::load(path);
  if (!set.ok()) {
    c960::cluster::log_error(absl::StrCat("SIGHUP: --tokens not reloaded, the ", table->size(),
                                          " tokens in use stay: ", set.status().message()));
    return;
  }
  const size_t n = set->size();
  table->replace(std::move(*set));
  c960::cluster::log_info(absl::StrCat("SIGHUP: ", n, " tokens reloaded from ", path));
}

// Every HTTP connection (and every gRPC one) takes a file descriptor: the soft limit up to the
// hard one, and a warning when even that leaves too few for --http-max-connections.
void raise_file_limit(int http_connections) {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return;
  if (r.rlim_cur < r.rlim_max) {
    rlimit raised = r;
    raised.rlim_cur = r.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) r = raised;
  }
  // Besides the connections: the store, gRPC's sockets and threads, refused connections lingering.
  const rlim_t needed = rlim_t(http_connections) + c960::cluster::kHttpMaxLingeringRefused + 256;
  if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur < needed)
    c960::cluster::log_warning(absl::StrCat("open files are limited to ", r.rlim_cur, " (ulimit -n), under the ",
                                            needed, " that --http-max-connections ", http_connections,
                                            " may need: accepting pauses when they run out"));
}

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Write then rename, so a reader never sees a half-written port.
int write_port(const std::string& flag, const std::string& file, int p) {
  const std::string tmp = file + ".tmp";
  std::ofstream(tmp) << p << "\n";
  if (std::rename(tmp.c_str(), file.c_str()) != 0) return die(absl::StrCat(flag, ": cannot write '", file, "'"));
  return 0;
}

// HOST:PORT with the port it got (port 0 asked for any).
std::string with_port(const std::string& address, int port) {
  const std::optional<c960::cluster::HostPort> hp = c960::cluster::split_host_port(address);
  if (!hp) return address;
  return absl::StrContains(hp->host, ':') ? absl::StrCat("[", hp->host, "]:", port) : absl::StrCat(hp->host, ":", port);
}

// A standby: until this coordinator holds the leader lease (returns true) or a stop signal
// (false). Meanwhile its gRPC port answers every call UNAVAILABLE naming the leader, with the
// same TLS and authentication as a leader's (except that a token not in the tokens file, such
// as a worker's credential, is answered so too); the health service and /readyz say not serving.
// *port (and *http_port) receive the ports it listened on: the leader listens on the same ones.
bool stand_by(c960::cluster::LeaderElection& election, const c960::cluster::ServerOptions& options,
              c960::cluster::HttpApi* http_api, const std::string& http_listen, const sigset_t& signals, int* port,
              int* http_port, int* rc) {
  c960::cluster::StandbyService standby;
  standby.set_leader(election.leader());
  grpc::ServerBuilder builder;
  // Tokens the standby does not know (workers' credentials, issued by the leader) are told
  // NOT_LEADER too, not UNAUTHENTICATED: the worker goes on to the leader.
  c960::cluster::ServerOptions standby_options = options;
  standby_options.standby = true;
  c960::cluster::configure_server(standby_options, &builder, port);
  builder.RegisterCallbackGenericService(&standby);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || *port == 0) {
    *rc = die(absl::StrCat("--listen: cannot serve on '", options.listen, "'"));
    return false;
  }
  server->GetHealthCheckService()->SetServingStatus(false);
  std::unique_ptr<c960::cluster::HttpServer> http;
  if (http_api) {
    http_api->set_standby(true, election.leader());
    absl::StatusOr<std::unique_ptr<c960::cluster::HttpServer>> started = c960::cluster::HttpServer::start(
        http_listen, options.tls ? &*options.tls : nullptr, http_api, c960::cluster::HttpServerOptions());
    if (!started.ok()) {
      server->Shutdown();
      *rc = die(std::string(started.status().message()));
      return false;
    }
    http = std::move(*started);
    *http_port = http->port();
  }
  if (const std::string pf = absl::GetFlag(FLAGS_port_file); !pf.empty())
    if ((*rc = write_port("--port-file", pf, *port))) return false;
  if (const std::string pf = absl::GetFlag(FLAGS_http_port_file); !pf.empty() && http)
    if ((*rc = write_port("--http-port-file", pf, *http_port))) return false;
  c960::cluster::log_event(c960::cluster::LogLevel::kInfo, "standby",
                           absl::StrCat("standby on port ", *port, ": ",
                                        election.leader().empty() ? "no leader known yet"
                                                                  : absl::StrCat("the leader is ", election.leader())),
                           {{"leader", election.leader()}});
  bool leads = false;
  std::string leader = election.leader();
  for (;;) {
    const int64_t wait = std::max<int64_t>(1, election.next_step_ms() - steady_ms());
    timespec ts{time_t(wait / 1000), long(wait % 1000) * 1'000'000};
    const int sig = sigtimedwait(&signals, nullptr, &ts);
    if (sig == SIGTERM || sig == SIGINT) {
      c960::cluster::log_info(absl::StrCat("signal ", sig, ", shutting down (a standby)"));
      break;
    }
    if (election.step(steady_ms()) == c960::cluster::LeaderRole::kLeader) {
      leads = true;
      break;
    }
    if (election.leader() != leader) {
      leader = election.leader();
      standby.set_leader(leader);
      if (http_api) http_api->set_standby(true, leader);
      c960::cluster::log_event(c960::cluster::LogLevel::kInfo, "leader_changed",
                               absl::StrCat("the leader is now ", leader.empty() ? "unknown" : leader),
                               {{"leader", leader}});
    }
  }
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  if (http) http->stop();
  if (http_api) http_api->set_standby(false);
  *rc = 0;
  return leads;
}

}  // namespace

int main(int argc, char** argv) {
  if (std::optional<int> rc = c960::cluster::parse_daemon_flags(argc, argv, kCommand)) return *rc;
  c960::cluster::set_log_program("c960-coordinator");
  const absl::StatusOr<Addresses> listen = addresses();
  if (!listen.ok()) return die(std::string(listen.status().message()));
  const int64_t lease_s = absl::GetFlag(FLAGS_lease_seconds);
  if (lease_s < 1 || lease_s > 3600) return die("--lease-seconds: not in 1..3600");
  c960::cluster::CoordinatorOptions coordinator_options;
  coordinator_options.lease_ms = lease_s * 1000;
  coordinator_options.trust_after = absl::GetFlag(FLAGS_trust_after);
  if (coordinator_options.trust_after < 1 || coordinator_options.trust_after > 1'000'000)
    return die("--trust-after: not in 1..1000000");
  coordinator_options.spot_check_rate = absl::GetFlag(FLAGS_spot_check_rate);
  if (!(coordinator_options.spot_check_rate >= 0 && coordinator_options.spot_check_rate <= 1))
    return die("--spot-check-rate: not in 0..1");
  for (absl::string_view o : absl::StrSplit(absl::GetFlag(FLAGS_trust_roots), ',', absl::SkipEmpty())) {
    if (!c960::cluster::valid_caller_name(o))
      return die(
          absl::StrCat("--trust-roots: '", o, "' is not an owner's name (1..64 characters of A-Z a-z 0-9 . _ -)"));
    coordinator_options.trust_roots.insert(std::string(o));
  }
  coordinator_options.audit_rate = absl::GetFlag(FLAGS_audit_rate);
  if (!(coordinator_options.audit_rate >= 0 && coordinator_options.audit_rate <= 1))
    return die("--audit-rate: not in 0..1");
  coordinator_options.max_active_jobs = absl::GetFlag(FLAGS_max_active_jobs);
  if (coordinator_options.max_active_jobs < 1 || coordinator_options.max_active_jobs > 100'000)
    return die("--max-active-jobs: not in 1..100000");
  coordinator_options.max_planned_units = absl::GetFlag(FLAGS_max_planned_units);
  if (coordinator_options.max_planned_units < 1 || coordinator_options.max_planned_units > 1'000'000'000)
    return die("--max-planned-units: not in 1..1000000000");
  coordinator_options.max_watches_per_caller = absl::GetFlag(FLAGS_max_watches_per_caller);
  if (coordinator_options.max_watches_per_caller < 1 || coordinator_options.max_watches_per_caller > 100'000)
    return die("--max-watches-per-caller: not in 1..100000");
  coordinator_options.max_watches = absl::GetFlag(FLAGS_max_watches);
  if (coordinator_options.max_watches < 1 || coordinator_options.max_watches > 100'000)
    return die("--max-watches: not in 1..100000");
  coordinator_options.max_leases_per_credential = absl::GetFlag(FLAGS_max_leases_per_credential);
  if (coordinator_options.max_leases_per_credential < 1 || coordinator_options.max_leases_per_credential > 1'000'000)
    return die("--max-leases-per-credential: not in 1..1000000");

  coordinator_options.max_workers_per_credential = absl::GetFlag(FLAGS_max_workers_per_credential);
  if (coordinator_options.max_workers_per_credential < 1 || coordinator_options.max_workers_per_credential > 1'000'000)
    return die("--max-workers-per-credential: not in 1..1000000");
  coordinator_options.max_workers_per_owner = absl::GetFlag(FLAGS_max_workers_per_owner);
  if (coordinator_options.max_workers_per_owner < 1 || coordinator_options.max_workers_per_owner > 1'000'000)
    return die("--max-workers-per-owner: not in 1..1000000");
  const int64_t forget_days = absl::GetFlag(FLAGS_forget_workers_after_days);
  if (forget_days < 1 || forget_days > 3650) return die("--forget-workers-after-days: not in 1..3650");
  coordinator_options.forget_workers_ms = forget_days * 86'400'000;
  c960::cluster::ServiceLimits service_limits;
  service_limits.max_calls_per_caller = absl::GetFlag(FLAGS_max_calls_per_caller);
  if (service_limits.max_calls_per_caller < 1 || service_limits.max_calls_per_caller > 100'000)
    return die("--max-calls-per-caller: not in 1..100000");
  service_limits.max_result_streams_per_caller = absl::GetFlag(FLAGS_max_result_streams_per_caller);
  if (service_limits.max_result_streams_per_caller < 1 || service_limits.max_result_streams_per_caller > 100'000)
    return die("--max-result-streams-per-caller: not in 1..100000");
  const int32_t http_max_connections = absl::GetFlag(FLAGS_http_max_connections);
  if (http_max_connections < 1 || http_max_connections > 1'000'000)
    return die("--http-max-connections: not in 1..1000000");
  const int32_t http_max_per_address = absl::GetFlag(FLAGS_http_max_connections_per_address);
  if (http_max_per_address < 1 || http_max_per_address > http_max_connections)
    return die(absl::StrCat("--http-max-connections-per-address: not in 1..", http_max_connections,
                            " (--http-max-connections)"));

  c960::cluster::BackupOptions backup_options;
  backup_options.dir = absl::GetFlag(FLAGS_backup_dir);
  backup_options.keep = absl::GetFlag(FLAGS_backup_keep);
  const int64_t backup_minutes = absl::GetFlag(FLAGS_backup_every_minutes);
  if (backup_minutes < 0 || backup_minutes > 525'600)
    return die("--backup-every-minutes: not in 0..525600 (0: on request only)");
  backup_options.every_ms = backup_options.dir.empty() ? 0 : backup_minutes * 60'000;
  if (absl::Status s = c960::cluster::validate_backup_options(backup_options); !s.ok())
    return die(std::string(s.message()));
  absl::StatusOr<c960::cluster::ServerOptions> options = server_options(*listen);
  if (!options.ok()) return die(std::string(options.status().message()));

  // Block the stop and reload signals in every thread; main waits for them with sigwait.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // Past a file-size limit (ulimit -f) a write then fails with EFBIG, which the store reports as a
  // full disk, instead of SIGXFSZ killing the coordinator without a word.
  std::signal(SIGXFSZ, SIG_IGN);

  // Both before any builder exists (a standby's too): they hook into every server built afterwards.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  // Who leads among coordinators sharing the store (leadership.h): with SQLite, a lock beside
  // the file, taken before the store is opened (a leader holds the file's own lock too). A
  // standby serves as one until it holds the lease, then opens and loads the store.
  const int64_t lease_seconds = absl::GetFlag(FLAGS_leader_lease_seconds);
  if (lease_seconds < 2 || lease_seconds > 300) return die("--leader-lease-seconds: not in 2..300");
  std::string advertise = absl::GetFlag(FLAGS_advertise);
  if (!advertise.empty()) {
    absl::StatusOr<std::string> checked = c960::cluster::check_address("--advertise", advertise, {});
    if (!checked.ok()) return die(std::string(checked.status().message()));
    advertise = *checked;
  }
  const absl::StatusOr<std::string> db_password = database_password(backup_options.dir);
  if (!db_password.ok()) return die(std::string(db_password.status().message()));
  if (const std::string from = absl::GetFlag(FLAGS_migrate_from); !from.empty()) {
    absl::StatusOr<c960::cluster::MigrationReport> moved =
        c960::cluster::migrate_store(from, absl::GetFlag(FLAGS_db), *db_password);
    if (!moved.ok()) return die(std::string(moved.status().message()));
    for (const c960::cluster::TableDigest& t : moved->tables)
      std::printf("%-16s %10lld rows  sha256 %s\n", t.table.c_str(), static_cast<long long>(t.rows), t.sha256.c_str());
    std::printf("migrated '%s' (schema %d) into '%s': every table verified\n", from.c_str(), moved->schema_version,
                c960::cluster::store_db::redact_url(absl::GetFlag(FLAGS_db)).c_str());
    return 0;
  }
  const auto open_store = [&] {
    return c960::cluster::Store::open(absl::GetFlag(FLAGS_db), c960::cluster::Store::kSchemaVersion,
                                      absl::GetFlag(FLAGS_init), c960::cluster::kind_tables(), *db_password);
  };
  // PostgreSQL: the store's own advisory lock (store_lease.h); SQLite: a lock beside the file.
  std::unique_ptr<c960::cluster::LeaseStore> lease;
  c960::cluster::StoreLease* store_lease = nullptr;
  if (const std::string db = absl::GetFlag(FLAGS_db); c960::cluster::store_db::is_postgres_url(db)) {
    auto l = std::make_unique<c960::cluster::StoreLease>(open_store);
    store_lease = l.get();
    lease = std::move(l);
  } else if (db != ":memory:") {
    lease = std::make_unique<c960::cluster::FileLease>(db + "-leader");
  }
  std::unique_ptr<c960::cluster::LeaderElection> election;
  int port = 0, http_port = 0;
  if (lease) {
    // The name standbys give clients; with port 0, fixed once the port is known (below).
    election =
        std::make_unique<c960::cluster::LeaderElection>(lease.get(),
                                                        !advertise.empty()                      ? advertise
                                                        : absl::EndsWith(options->listen, ":0") ? ""
                                                                                                : options->listen,
                                                        c960::cluster::LeaderTiming{.ttl_ms = lease_seconds * 1000});
    if (election->step(steady_ms()) != c960::cluster::LeaderRole::kLeader) {
      // A store that cannot be opened at all (not one another coordinator holds) is said now.
      if (store_lease && !store_lease->last_error().ok()) return die(std::string(store_lease->last_error().message()));
      std::unique_ptr<c960::cluster::HttpApi> standby_http;
      if (!listen->http_listen.empty()) {
        c960::cluster::HttpOptions ho;
        ho.tokens = options->tokens;
        ho.tls = options->tls.has_value();
        // Nothing behind it: a standby's HTTP side answers 503 (and /healthz) alone.
        standby_http = std::make_unique<c960::cluster::HttpApi>(nullptr, nullptr, nullptr, std::move(ho));
      }
      int rc = 0;
      if (!stand_by(*election, *options, standby_http.get(), listen->http_listen, signals, &port, &http_port, &rc))
        return rc;
      // The leader listens where the standby did (port 0 asked for any: the same one again).
      options->listen = with_port(options->listen, port);
    }
    c960::cluster::log_event(c960::cluster::LogLevel::kInfo, "leader", election->why(), {{"epoch", election->epoch()}});
  }
  // The leader's store: the one its lease opened (PostgreSQL), else opened now.
  absl::StatusOr<std::unique_ptr<c960::cluster::Store>> store = std::unique_ptr<c960::cluster::Store>();
  if (store_lease) *store = store_lease->take_store();
  if (!*store) store = open_store();
  if (!store.ok()) return die(std::string(store.status().message()));
  if (store_lease) store_lease->watch(store->get());
  // Metrics only when there is somewhere to see them: the HTTP side.
  const std::string& http_listen = listen->http_listen;
  std::unique_ptr<c960::cluster::Metrics> metrics;
  if (!http_listen.empty()) {
    metrics = std::make_unique<c960::cluster::Metrics>();
    (*store)->set_commit_observer([m = metrics.get()](double seconds) { m->observe_commit(seconds); });
  }
  std::unique_ptr<c960::cluster::StoreBackups> backups;
  std::unique_ptr<c960::cluster::BackupSchedule> backup_schedule;
  if (!backup_options.dir.empty()) {
    backups = std::make_unique<c960::cluster::StoreBackups>(store->get(), backup_options);
    backups->set_observer([m = metrics.get()](const absl::StatusOr<c960::cluster::BackupMade>& made) {
      if (m) m->observe_backup(made.ok(), made.ok() ? made->seconds : 0, made.ok() ? made->bytes : 0);
      if (made.ok())
        c960::cluster::log_info(absl::StrCat("backup: ", made->path, " (", made->bytes, " bytes, ",
                                             absl::StrFormat("%.2f", made->seconds), " s), ", made->removed.size(),
                                             " older removed"));
      else
        c960::cluster::log_error(std::string(made.status().message()));
    });
    if (backup_options.every_ms > 0) backup_schedule = std::make_unique<c960::cluster::BackupSchedule>(backups.get());
  }
  c960::cluster::SystemClock clock;
  c960::cluster::Coordinator coordinator(store->get(), &clock, coordinator_options);
  // Worker credentials issued by Enroll are accepted beside the tokens file's.
  if (options->tokens) coordinator.set_token_table(options->tokens.get());

  if (absl::Status s = coordinator.load(); !s.ok()) return die(std::string(s.message()));

  grpc::ServerBuilder builder;
  if (metrics) {
    // Every call is timed in one place, whatever its service.
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
    interceptors.push_back(metrics->interceptor_factory());
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
  }
  std::shared_ptr<const c960::cluster::CallAuthenticator> auth =
      c960::cluster::configure_server(*options, &builder, &port);
  c960::cluster::JobServiceImpl jobs(&coordinator, auth, service_limits);
  c960::cluster::WorkerServiceImpl workers(&coordinator, auth, service_limits);
  builder.RegisterService(&jobs);
  builder.RegisterService(&workers);
  c960::cluster::AdminServiceImpl admin(backups.get(), (*store)->embedded());
  builder.RegisterService(&admin);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    if (absl::Status s = c960::cluster::check_listen_address_free(options->listen); !s.ok())
      return die(std::string(s.message()));
    return die(absl::StrCat("--listen: cannot serve on '", options->listen, "'"));
  }
  // The store is loaded: the health service says SERVING from here until the drain.
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  health->SetServingStatus(true);
  c960::cluster::log_info(absl::StrCat("serving on port ", port, " (", security_summary(*options), "), db ",
                                       absl::GetFlag(FLAGS_db), ", leases ", lease_s, " s, version ",
                                       std::string(c960::version())));
  std::unique_ptr<c960::cluster::HttpApi> http_api;
  std::unique_ptr<c960::cluster::HttpServer> http;
  if (!http_listen.empty()) {
    c960::cluster::HttpOptions ho;
    ho.tokens = options->tokens;
    ho.client_certificates = options->tls && !options->tls->client_ca_pem.empty();
    ho.tls = options->tls.has_value();
    if (const std::optional<c960::cluster::HostPort> hp = c960::cluster::split_host_port(http_listen))
      ho.listen_host = hp->host;
    http_api = std::make_unique<c960::cluster::HttpApi>(&coordinator, store->get(), metrics.get(), std::move(ho));
    c960::cluster::HttpServerOptions hso;
    hso.max_connections = http_max_connections;
    hso.max_connections_per_address = http_max_per_address;
    hso.metrics = metrics.get();
    raise_file_limit(hso.max_connections);
    absl::StatusOr<std::unique_ptr<c960::cluster::HttpServer>> started =
        c960::cluster::HttpServer::start(http_port ? with_port(http_listen, http_port) : http_listen,
                                         options->tls ? &*options->tls : nullptr, http_api.get(), hso);
    if (!started.ok()) {
      server->Shutdown();
      return die(std::string(started.status().message()));
    }
    http = std::move(*started);
    http_api->set_ready(true);
    c960::cluster::log_info(absl::StrCat("serving ", options->tls ? "HTTPS" : "HTTP", " on port ", http->port(),
                                         ": dashboard /, metrics /metrics, API /api/v1/"));
  }
  if (const std::string pf = absl::GetFlag(FLAGS_http_port_file); !pf.empty() && http)
    if (int rc = write_port("--http-port-file", pf, http->port())) return rc;
  if (const std::string pf = absl::GetFlag(FLAGS_port_file); !pf.empty())
    if (int rc = write_port("--port-file", pf, port)) return rc;

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::thread sweeper([&] {
    std::unique_lock lock(mu);
    while (!cv.wait_for(lock, std::chrono::milliseconds(c960::cluster::kSweepIntervalMs), [&] { return stopping; }))
      coordinator.sweep();
  });
  // The leader lease, renewed; lost, this coordinator stops at once, without another write (a
  // standby takes over; started again, this one is a standby). Its name, once its port is known.
  std::thread keeper;
  if (election) {
    if (election->holder().empty()) {  // written down for the standbys at once
      election->set_holder(advertise.empty() ? with_port(options->listen, port) : advertise);
      election->step(steady_ms());
    }
    keeper = std::thread([&] {
      std::unique_lock lock(mu);
      for (;;) {
        const auto wait = std::chrono::milliseconds(std::max<int64_t>(1, election->next_step_ms() - steady_ms()));
        if (cv.wait_for(lock, wait, [&] { return stopping; })) return;
        lock.unlock();
        const c960::cluster::LeaderRole role = election->step(steady_ms());
        lock.lock();
        if (role == c960::cluster::LeaderRole::kDeposed) {
          c960::cluster::log_event(
              c960::cluster::LogLevel::kError, "deposed",
              absl::StrCat("no longer the leader: ", election->why(), "; exiting now (started again, it is a standby)"),
              {{"epoch", election->epoch()}});
          std::_Exit(75);  // EX_TEMPFAIL: no destructor, no write
        }
      }
    });
  }

  int sig = 0;
  for (;;) {
    sigwait(&signals, &sig);
    if (sig != SIGHUP) break;
    reload_tokens(options->tokens.get());
    // Waiting AcquireWork calls of credentials revoked now end (and get no lease).
    coordinator.credentials_changed();
  }
  c960::cluster::log_info(absl::StrCat("signal ", sig, ", shutting down"));
  health->SetServingStatus(false);
  if (http_api) http_api->set_ready(false);
  coordinator.shutdown();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (http) http->stop();
  {
    std::lock_guard lock(mu);
    stopping = true;
  }
  cv.notify_all();
  sweeper.join();
  if (keeper.joinable()) keeper.join();
  // Given up at once: a standby takes over without waiting for the lease to run out.
  if (election && election->role() == c960::cluster::LeaderRole::kLeader)
    if (absl::Status s = lease->release_lease(election->holder(), election->epoch()); !s.ok())
      c960::cluster::log_error(std::string(s.message()));
  if (backup_schedule) backup_schedule->stop();
  return 0;
}
