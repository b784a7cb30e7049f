// c960-worker: computes units leased from a coordinator until SIGTERM or SIGINT.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <new>
#include <sys/stat.h>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cluster/address.h"
#include "cluster/auth.h"
#include "cluster/backoff.h"
#include "cluster/channel.h"
#include "cluster/config.h"
#include "cluster/flags.h"
#include "cluster/host_info.h"
#include "cluster/log.h"
#include "core/version.h"
#include "selfplay/spec.h"
#include "selfplay/uci_engine.h"
#include "worker/enroll.h"
#include "worker/worker.h"

ABSL_FLAG(std::string, coordinator, c960::cluster::kDefaultCoordinator,
          "HOST:PORT of the coordinator; a leader and its standbys as HOST:PORT,HOST:PORT,... (calls follow the "
          "leader)");
ABSL_FLAG(int32_t, threads, 1, "compute threads (1..4096; 0: one per CPU)");
ABSL_FLAG(int32_t, hash, c960::cluster::kDefaultWorkerHashMb, "perft hash in MB shared by the threads (0: none)");
ABSL_FLAG(int64_t, grace_seconds, c960::cluster::kDefaultGraceSeconds,
          "on SIGTERM, finish held units for this long before releasing them");
ABSL_FLAG(std::string, name, "",
          "name shown by the coordinator (default: the host name with a credential, so that a restarted worker is "
          "the same worker; host name and pid without one)");
ABSL_FLAG(std::vector<std::string>, engine, {},
          "offer the UCI engine at PATH to self-play jobs under NAME (repeatable; builtin is always offered)");
ABSL_FLAG(std::vector<std::string>, engine_option, {},
          "let self-play jobs set OPTION of engine NAME, a number only within MIN..MAX if given (repeatable); "
          "without any, a job may set Hash (1..256) and Threads (1..1) only, and never a string option (files); "
          "builtin:Hash=1..MAX bounds the built-in engine's hash per player (default 1..64)");
ABSL_FLAG(std::string, tls_ca, "", "connect with TLS, trusting the coordinator's certificate if this PEM CA signed it");
ABSL_FLAG(std::string, tls_cert, "", "PEM client certificate, for a coordinator that requires one (mTLS)");
ABSL_FLAG(std::string, tls_key, "", "the PEM private key of --tls-cert");
ABSL_FLAG(std::string, token_file, "",
          "file holding this worker's token (role worker); else the token itself from $C960_TOKEN");
ABSL_FLAG(std::string, enroll_token_file, "",
          "file holding a join token (role enroll), traded once for this worker's own credential (--credential-file)");
ABSL_FLAG(std::string, credential_file, "",
          "where this worker keeps the credential it enrolled for (with --enroll-token-file); read at every start");

namespace {

const c960::cluster::DaemonCommand kCommand = {
    "c960-worker",
    "c960-worker [--coordinator HOST:PORT] [--threads N] [--hash MB] [--grace-seconds S] [--name NAME]\n"
    "                   [--engine NAME=PATH]... [--engine-option NAME:OPTION[=MIN..MAX]]...\n"
    "                   [--tls-ca FILE [--tls-cert FILE --tls-key FILE]]\n"
    "                   [--token-file FILE | --enroll-token-file FILE --credential-file FILE]",
    // Paragraphs; --help wraps them to the terminal (cluster/text_wrap.h).
    "Computes units of c960 cluster jobs leased from a coordinator (c960-coordinator) until SIGTERM or "
    "SIGINT; then it takes no new units, finishes or releases the ones it holds within --grace-seconds, "
    "delivers their results and exits.\n\n"
    "Self-play jobs name their engine; a worker plays only builtin and the engines it offers with --engine, and "
    "a job sets only the engine options this worker allows (--engine-option; Hash and Threads, bounded, by "
    "default; string options, which name files, never). A job asks the built-in engine for a hash of up to 64 MiB "
    "per player unless --engine-option builtin:Hash=1..MAX allows more; a worker plays one game per thread, two "
    "players a game.\n\n"
    "A token (--token-file, or C960_TOKEN) needs TLS (--tls-ca). Each worker needs a credential of its own "
    "(each is one voter when results are verified): a token of its own, or a join token that it trades once "
    "for one (--enroll-token-file), kept in --credential-file.\n\n"
    "Several coordinators (a leader and its standbys, --coordinator A:PORT,B:PORT, or a name that resolves to "
    "several addresses): the worker sends its calls to the one that leads, and follows a new leader when a "
    "standby takes over.",
    absl::string_view(c960::version().data(), c960::version().size()),
    {{"coordinator", "HOST:PORT", "C960_COORDINATOR"},
     {"threads", "N"},
     {"hash", "MB"},
     {"grace_seconds", "S"},
     {"name", "NAME"},
     {"engine", "NAME=PATH"},
     {"engine_option", "NAME:OPTION[=MIN..MAX]"},
     {"tls_ca", "FILE", "C960_TLS_CA"},
     {"tls_cert", "FILE", "C960_TLS_CERT"},
     {"tls_key", "FILE", "C960_TLS_KEY"},
     {"token_file", "FILE"},
     {"enroll_token_file", "FILE"},
     {"credential_file", "FILE"}},
};

static_assert(c960::cluster::kDefaultBuiltinHashMaxMb == 64, "the help text above says 64");

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "c960-worker: %s\n", msg.c_str());
  return 2;
}

// --engine NAME=PATH, each checked now: a typo should stop the worker at start, not fail every
// unit of a job later.
absl::StatusOr<std::map<std::string, c960::cluster::EngineOffer>> engines_from_flags() {
  std::map<std::string, c960::cluster::EngineOffer> out;
  for (const std::string& e : absl::GetFlag(FLAGS_engine)) {
    const size_t eq = e.find('=');
    if (eq == std::string::npos) return absl::InvalidArgumentError(absl::StrCat("--engine '", e, "': give NAME=PATH"));
    const std::string name = e.substr(0, eq), path = e.substr(eq + 1);
    if (!c960::cluster::valid_caller_name(name))
      return absl::InvalidArgumentError(
          absl::StrCat("--engine '", e, "': NAME must be 1..64 characters of A-Z a-z 0-9 . _ -"));
    if (name == "builtin")
      return absl::InvalidArgumentError(absl::StrCat("--engine '", e, "': builtin is the built-in engine's name"));
    struct stat st {};
    if (path.empty() || stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || access(path.c_str(), X_OK) != 0)
      return absl::InvalidArgumentError(absl::StrCat("--engine ", name, ": '", path, "' is not an executable file"));
    if (!out.emplace(name, c960::cluster::EngineOffer{path, c960::cluster::default_engine_policy(), "", ""}).second)
      return absl::InvalidArgumentError(absl::StrCat("--engine ", name, ": given twice"));
  }
  // The built-in engine: what a job may ask of it (its hash), bounded like the others' options.
  out.emplace(std::string(c960::selfplay::kBuiltinEngine),
              c960::cluster::EngineOffer{"", c960::cluster::default_builtin_policy(), "", ""});
  // What jobs may set: the defaults, with each --engine-option adding an option or replacing its
  // bounds.
  for (const std::string& e : absl::GetFlag(FLAGS_engine_option)) {
    const size_t colon = e.find(':');
    if (colon == std::string::npos)
      return absl::InvalidArgumentError(absl::StrCat("--engine-option '", e, "': give NAME:OPTION[=MIN..MAX]"));
    auto it = out.find(e.substr(0, colon));
    if (it == out.end())
      return absl::InvalidArgumentError(
          absl::StrCat("--engine-option '", e, "': no --engine ", e.substr(0, colon), " is offered"));
    absl::StatusOr<c960::selfplay::OptionPolicy::Allowed> a = c960::selfplay::parse_allowed_option(e.substr(colon + 1));
    if (!a.ok()) return absl::InvalidArgumentError(absl::StrCat("--engine-option ", a.status().message()));
    if (it->first == c960::selfplay::kBuiltinEngine &&
        (!absl::EqualsIgnoreCase(a->name, "Hash") || !a->bounded || a->min < 1 || a->max > c960::selfplay::kMaxHashMb))
      return absl::InvalidArgumentError(absl::StrCat("--engine-option '", e,
                                                     "': builtin takes only Hash=MIN..MAX, within 1..",
                                                     c960::selfplay::kMaxHashMb, " (MiB per player)"));
    std::vector<c960::selfplay::OptionPolicy::Allowed>& allowed = it->second.policy.allowed;
    allowed.erase(std::remove_if(allowed.begin(), allowed.end(),
                                 [&](const auto& x) { return absl::EqualsIgnoreCase(x.name, a->name); }),
                  allowed.end());
    allowed.push_back(*a);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (std::optional<int> rc = c960::cluster::parse_daemon_flags(argc, argv, kCommand)) return *rc;
  c960::cluster::set_log_program("c960-worker");
  const absl::StatusOr<std::string> coordinator = c960::cluster::check_address_list(
      "--coordinator", absl::GetFlag(FLAGS_coordinator), {.default_port = true, .unix_socket = true});
  if (!coordinator.ok()) return usage_error(std::string(coordinator.status().message()));
  int threads = absl::GetFlag(FLAGS_threads);
  if (threads == 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  if (threads < 1 || threads > c960::cluster::kMaxThreads) {
    std::fprintf(stderr, "c960-worker: --threads: %d is not in 0..%d\n", threads, c960::cluster::kMaxThreads);
    return 2;
  }
  const int hash = absl::GetFlag(FLAGS_hash);
  if (hash < 0 || hash > (1 << 20)) {
    std::fprintf(stderr, "c960-worker: --hash: %d is not in 0..%d\n", hash, 1 << 20);
    return 2;
  }
  const int64_t grace = absl::GetFlag(FLAGS_grace_seconds);
  if (grace < 0 || grace > 86400) {
    std::fprintf(stderr, "c960-worker: --grace-seconds: not in 0..86400\n");
    return 2;
  }

  absl::StatusOr<std::map<std::string, c960::cluster::EngineOffer>> engines = engines_from_flags();
  if (!engines.ok()) return usage_error(std::string(engines.status().message()));
  const std::string enroll_file = absl::GetFlag(FLAGS_enroll_token_file),
                    credential_file = absl::GetFlag(FLAGS_credential_file);
  if (enroll_file.empty() != credential_file.empty())
    return usage_error(enroll_file.empty()
                           ? "--credential-file needs --enroll-token-file"
                           : "--enroll-token-file needs --credential-file (where the credential is kept)");
  if (!enroll_file.empty() && !absl::GetFlag(FLAGS_token_file).empty())
    return usage_error("--enroll-token-file: not together with --token-file (a worker has one credential)");
  c960::cluster::ClientSecurityFlags security{absl::GetFlag(FLAGS_tls_ca), absl::GetFlag(FLAGS_tls_cert),
                                              absl::GetFlag(FLAGS_tls_key),
                                              enroll_file.empty() ? absl::GetFlag(FLAGS_token_file) : enroll_file, ""};
  if (const char* t = std::getenv("C960_TOKEN"); t && security.token_file.empty()) security.token = t;
  absl::StatusOr<c960::cluster::ChannelOptions> channel_options =
      c960::cluster::client_channel_options(*coordinator, security);
  if (!channel_options.ok()) return usage_error(std::string(channel_options.status().message()));

  // Stop signals go to a thread of their own that ends a wait to enroll and asks the worker to
  // stop (from its start: a worker waiting to enroll or to try again stops at once too).
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  static c960::cluster::StopSignal stopped;              // outlives the detached signal thread
  static std::atomic<c960::cluster::Worker*> running{};  // the worker, once it exists
  std::thread signals([stop] {
    int sig = 0;
    sigwait(&stop, &sig);
    c960::cluster::log_info(absl::StrCat("signal ", sig, ", stopping"));
    stopped.stop();
    if (c960::cluster::Worker* w = running.load()) w->request_stop();
  });
  signals.detach();  // blocked in sigwait for good when the worker ends by itself

  c960::cluster::WorkerOptions options;
  options.threads = threads;
  options.hash_mb = hash;
  options.grace_ms = grace * 1000;
  options.version = std::string(c960::version());
  options.name = absl::GetFlag(FLAGS_name);
  if (options.name.empty()) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    // With a credential of its own the worker is its credential and its host: the same worker
    // after a restart. Without one, processes on one host are told apart by their pids.
    options.name = channel_options->token.empty() ? absl::StrCat(host, ":", getpid()) : std::string(host);
  }
  if (!enroll_file.empty()) {
    absl::StatusOr<std::string> token =
        c960::cluster::enrolled_token(*channel_options, options.name, credential_file, stopped);
    if (!token.ok()) {
      if (absl::IsCancelled(token.status())) return 0;  // stopped by a signal while it waited
      std::fprintf(stderr, "c960-worker: %s\n", std::string(token.status().message()).c_str());
      return absl::IsInvalidArgument(token.status()) ? 2 : 1;
    }
    channel_options->token = *token;
  }
  // Provenance for the jobs this worker computes: the CPU, and each engine's binary and name.
  options.cpu = c960::cluster::cpu_model().substr(0, c960::cluster::kMaxProvenanceText);
  for (auto& [name, offer] : *engines) {
    if (offer.path.empty()) continue;  // builtin: this build
    offer.sha256 = c960::cluster::file_sha256(offer.path).value_or("");
    c960::selfplay::UciConfig config;
    config.path = offer.path;
    if (absl::StatusOr<std::unique_ptr<c960::selfplay::UciEngine>> e = c960::selfplay::UciEngine::start(config); e.ok())
      offer.id_name = (*e)->id_name().substr(0, c960::cluster::kMaxProvenanceText);
  }
  options.engines = std::move(*engines);
  // A leader and its standbys, or one coordinator: each call goes to the one that leads.
  auto coordinators = std::make_shared<c960::cluster::CoordinatorSet>(*channel_options);
  // Not fatal (the worker keeps trying: its coordinator may start later), but a wrong CA or a
  // missing client certificate is said now, in words, rather than as retries in the log.
  const c960::cluster::CoordinatorSet::Target first = coordinators->current();
  if (!first.channel->WaitForConnected(std::chrono::system_clock::now() +
                                       std::chrono::milliseconds(c960::cluster::kConnectTimeoutMs))) {
    const std::string why =
        c960::cluster::diagnose_connection(first.address, channel_options->tls ? &*channel_options->tls : nullptr)
            .message;
    c960::cluster::log_warning(absl::StrCat("cannot connect to the coordinator at ", first.address, " yet",
                                            why.empty() ? "" : ": ", why, "; still trying"));
  }
  std::unique_ptr<c960::cluster::Worker> owned;
  try {
    owned = std::make_unique<c960::cluster::Worker>(c960::cluster::grpc_connection(coordinators), options);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "c960-worker: --hash: cannot allocate %d MB\n", hash);
    return 2;
  }
  c960::cluster::Worker& worker = *owned;
  running.store(&worker);
  if (stopped.stopped()) worker.request_stop();  // a signal that came before the store above
  const int rc = worker.run();
  running.store(nullptr);
  return rc;
}
