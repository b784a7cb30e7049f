#include "coordinator/http_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <set>
#include <string_view>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cluster/address.h"
#include "cluster/log.h"
#include "coordinator/http_wire.h"

namespace c960::cluster {
namespace {

using SteadyClock = std::chrono::steady_clock;

// The PEM text of the client certificate the TLS handshake verified, if any.
std::optional<std::string> peer_certificate(const SSL* ssl) {
  if (!ssl) return std::nullopt;
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (!cert) return std::nullopt;
  std::optional<std::string> out;
  if (BIO* bio = BIO_new(BIO_s_mem())) {
    if (PEM_write_bio_X509(bio, cert) == 1) {
      char* data = nullptr;
      const long n = BIO_get_mem_data(bio, &data);
      if (n > 0) out = std::string(data, size_t(n));
    }
    BIO_free(bio);
  }
  X509_free(cert);
  return out;
}

// Reads every certificate of a PEM text.
std::vector<X509*> read_certificates(const std::string& pem) {
  std::vector<X509*> out;
  BIO* bio = BIO_new_mem_buf(pem.data(), int(pem.size()));
  if (!bio) return out;
  while (X509* c = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) out.push_back(c);
  ERR_clear_error();  // the end of the text reads as an error
  BIO_free(bio);
  return out;
}

// The SSL context from the PEM texts that load_server_tls read and checked.
bool setup_tls(SSL_CTX& ctx, const ServerTls& tls) {
  SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  std::vector<X509*> chain = read_certificates(tls.cert_pem);
  bool ok = !chain.empty() && SSL_CTX_use_certificate(&ctx, chain[0]) == 1;
  for (size_t i = 1; ok && i < chain.size(); ++i) ok = SSL_CTX_add1_chain_cert(&ctx, chain[i]) == 1;
  for (X509* c : chain) X509_free(c);
  if (!ok) return false;
  BIO* bio = BIO_new_mem_buf(tls.key_pem.data(), int(tls.key_pem.size()));
  EVP_PKEY* key = bio ? PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr) : nullptr;
  if (bio) BIO_free(bio);
  ok = key && SSL_CTX_use_PrivateKey(&ctx, key) == 1 && SSL_CTX_check_private_key(&ctx) == 1;
  if (key) EVP_PKEY_free(key);
  if (!ok) return false;
  if (!tls.client_ca_pem.empty()) {
    // As on the gRPC side: every connection needs a certificate this CA signed.
    X509_STORE* store = SSL_CTX_get_cert_store(&ctx);
    STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
    std::vector<X509*> cas = read_certificates(tls.client_ca_pem);
    for (X509* c : cas) {
      ok = ok && X509_STORE_add_cert(store, c) == 1;
      if (names) sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(c)));
      X509_free(c);
    }
    if (names) SSL_CTX_set_client_CA_list(&ctx, names);
    SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    ok = ok && !cas.empty();
  }
  return ok;
}

// An address as text; IPv4-mapped IPv6 addresses as IPv4, so that one peer counts as one
// address whichever family the listening socket has.
std::pair<std::string, int> address_text(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
    return {buf, ntohs(a->sin_port)};
  }
  if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr))
      inet_ntop(AF_INET, &a->sin6_addr.s6_addr[12], buf, sizeof buf);
    else
      inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
    return {buf, ntohs(a->sin6_port)};
  }
  return {"unknown", 0};
}

// One connection. The loop thread owns it; while its request is handled it belongs to one
// request thread, handed over and back under a mutex, so one thread at a time touches it.
struct Conn {
  enum class State {
    kHandshake,  // TLS handshake
    kIdle,       // keep-alive: no byte of the next request yet
    kHead,       // reading the request's head
    kBody,       // reading its body
    kBusy,       // queued for or held by a request thread
    kWrite,      // sending the response
    kLinger,     // closing: shut for writing, dropping what the client still sends
  };
  uint64_t id = 0;
  int fd = -1;
  SSL* ssl = nullptr;
  bool admitted = false;          // counted against the limits (refused connections are not)
  bool health_only = false;       // over a limit, let in for one /healthz or /readyz
  bool over_per_address = false;  // which limit it is over
  std::string peer, local;
  int peer_port = 0, local_port = 0;
  State state = State::kHead;
  SteadyClock::time_point deadline{};
  bool has_deadline = false;
  uint32_t events = 0;  // registered with epoll; 0: not registered
  bool peer_eof = false;
  int requests = 0;

  std::string in;            // bytes received and not yet consumed
  size_t scan = 0;           // where the search for the head's end resumes
  size_t head_len = 0;       // 0: the head is not complete yet
  size_t body_len = 0;       // its Content-Length
  WireRequest wire;          // the head, parsed (once the head is complete)
  bool health = false;       // GET or HEAD of /healthz or /readyz: the health lane
  std::string out;           // the response being sent
  size_t out_pos = 0;        // of it, sent so far
  bool close_after = false;  // close once `out` is sent
  // A paged answer's rest (null: none, or all made): the next page is made, on a request thread,
  // once `out` is sent.
  std::shared_ptr<AnswerPages> pages;
  std::unique_ptr<GzipStream> gzip;  // its compressor, if it is sent with gzip
  bool chunked = false;              // its framing: chunks (HTTP/1.1), else to the connection's end
  bool paging = false;               // queued for, or held by, a request thread for its next page
  // Whose answer it is, and the bytes it has counted against the limits (queued_ and the
  // principal's): unsent bytes of `out`, and what the answer's pages and compressor hold.
  std::string principal;
  int64_t counted = 0;
};

// A queue of complete requests and the threads that serve them.
struct Lane {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Conn*> queue;
  std::vector<std::thread> threads;
};

}  // namespace

class HttpServer::Impl final : public AnswerBudget {
 public:
  Impl(const HttpApi* api, const HttpServerOptions& options) : api_(api), options_(options) {}
  ~Impl();

  absl::Status listen(const std::string& listen, const ServerTls* tls);
  void run();
  void stop();

  int port_ = 0;
  std::atomic<int64_t> accepted_{0}, refused_{0}, refused_per_address_{0}, timed_out_{0}, open_{0}, evicted_{0};
  // Answers' bytes not yet sent (the loop thread's; atomic for counts()), and the requests refused
  // over max_queued_bytes and over max_queued_bytes_per_principal.
  std::atomic<int64_t> queued_{0}, refused_queued_{0}, refused_principal_{0};
  // Pages made, and the most bytes one connection had counted (tests: each page's bound).
  std::atomic<int64_t> answered_{0}, pages_{0}, most_counted_{0};

  // AnswerBudget: a principal over max_queued_bytes_per_principal is refused (429).
  std::optional<std::string> refuse(const std::string& principal) const override;
  int64_t principal_bytes(const std::string& principal) const;

 private:
  enum class Io { kOk, kWantRead, kWantWrite, kEof, kError };

  // The loop thread.
  void loop();
  void accept_all();
  bool evict_from_health_lane();
  void count_refusal(const std::string& peer, bool per_address);
  void refuse(int fd, const std::string& peer, bool per_address);
  void on_event(Conn* c);
  void handshake(Conn* c);
  void on_readable(Conn* c);
  void advance(Conn* c);
  void respond_and_close(Conn* c, int status, const std::string& message, const std::string& extra = "");
  void dispatch(Conn* c);
  void take_done();
  void start_write(Conn* c);
  void next_page(Conn* c);
  void recount(Conn* c);
  void on_writable(Conn* c);
  void finish_response(Conn* c);
  void resume_reading(Conn* c);
  void begin_close(Conn* c);
  void on_linger(Conn* c);
  void close_conn(Conn* c);
  void expire(SteadyClock::time_point now);
  void log_refusals(SteadyClock::time_point now, bool force);
  void set_events(Conn* c, uint32_t events);
  void set_deadline(Conn* c, SteadyClock::time_point t);
  void clear_deadline(Conn* c);
  ssize_t conn_read(Conn* c, char* buf, size_t n, Io* io);
  ssize_t conn_write(Conn* c, const char* buf, size_t n, Io* io);
  void wake();

  // A request thread.
  void serve_lane(Lane* lane);
  void serve(Conn* c);

  void make_page(Conn* c);

  const HttpApi* api_;
  const HttpServerOptions options_;
  WireLimits limits_;
  SSL_CTX* ctx_ = nullptr;
  int listen_fd_ = -1, epoll_fd_ = -1, wake_fd_ = -1;
  std::thread loop_thread_;
  Lane api_lane_, health_lane_;
  std::atomic<bool> stopping_{false};

  // Handed back by request threads.
  std::mutex done_mu_;
  std::vector<Conn*> done_;

  // Unsent answer bytes per principal (the loop writes, request threads read).
  mutable std::mutex principals_mu_;
  std::unordered_map<std::string, int64_t> principal_bytes_;

  // The loop thread's own (and stop()'s, once the threads are joined).
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
  std::unordered_map<std::string, int> per_address_;
  std::set<std::pair<SteadyClock::time_point, uint64_t>> timers_;
  uint64_t next_id_ = 2;  // 0: the listening socket, 1: the wake-up eventfd
  int lingering_refused_ = 0;
  int health_open_ = 0;                 // connections let in over the limits for health
  std::set<uint64_t> health_lane_ids_;  // their ids, the oldest first
  SteadyClock::time_point accept_paused_until_{};
  bool accepting_ = false;
  // Refusals not yet logged, and when the last line was.
  int64_t unlogged_refused_ = 0, unlogged_refused_per_address_ = 0;
  std::string last_refused_address_;
  SteadyClock::time_point last_refusal_log_{};
  bool stopped_ = false;
};

namespace {
constexpr uint64_t kListenId = 0, kWakeId = 1;
}

HttpServer::Impl::~Impl() {
  stop();
  if (ctx_) SSL_CTX_free(ctx_);
}

absl::Status HttpServer::Impl::listen(const std::string& listen, const ServerTls* tls) {
  const absl::StatusOr<std::string> checked = check_address("--http-listen", listen, {.port_zero = true});
  if (!checked.ok()) return checked.status();
  const std::optional<HostPort> hp = split_host_port(*checked);
  if (!hp) return absl::InvalidArgumentError(absl::StrCat("--http-listen: '", listen, "' is not HOST:PORT"));
  if (tls) {
    ctx_ = SSL_CTX_new(TLS_server_method());
    if (!ctx_ || !setup_tls(*ctx_, *tls))
      return absl::InvalidArgumentError("--http-listen: the TLS certificate or key did not load");
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* result = nullptr;
  if (getaddrinfo(hp->host.c_str(), hp->port.c_str(), &hints, &result) != 0 || !result)
    return absl::FailedPreconditionError(
        absl::StrCat("--http-listen: cannot listen on ", listen, " (the host does not resolve)"));
  int error = 0;
  for (addrinfo* rp = result; rp && listen_fd_ < 0; rp = rp->ai_next) {
    const int fd = ::socket(rp->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, rp->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR only: SO_REUSEPORT would let a second coordinator share the port (the gRPC
    // side refuses that too).
    const int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (rp->ai_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    if (::bind(fd, rp->ai_addr, rp->ai_addrlen) == 0 && ::listen(fd, kHttpListenBacklog) == 0) {
      listen_fd_ = fd;
    } else {
      error = errno;
      ::close(fd);
    }
  }
  freeaddrinfo(result);
  if (listen_fd_ < 0)
    return absl::FailedPreconditionError(absl::StrCat("--http-listen: cannot listen on ", listen, " (",
                                                      error ? std::strerror(error) : "no address",
                                                      ": address in use, or not an address of this machine)"));
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len);
  port_ = address_text(ss).second;

  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0)
    return absl::InternalError(absl::StrCat("--http-listen: epoll: ", std::strerror(errno)));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenId;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  accepting_ = true;
  ev.data.u64 = kWakeId;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);

  limits_.max_body_bytes = options_.max_body_bytes;
  return absl::OkStatus();
}

void HttpServer::Impl::run() {
  loop_thread_ = std::thread([this] { loop(); });
  health_lane_.threads.emplace_back([this] { serve_lane(&health_lane_); });
  for (int i = 0; i < options_.threads; ++i) api_lane_.threads.emplace_back([this] { serve_lane(&api_lane_); });
}

void HttpServer::Impl::wake() {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void HttpServer::Impl::stop() {
  if (stopped_) return;
  stopped_ = true;
  stopping_ = true;
  for (Lane* lane : {&api_lane_, &health_lane_}) {
    { std::lock_guard lock(lane->mu); }  // a thread between its check and its wait sees the flag
    lane->cv.notify_all();
  }
  if (wake_fd_ >= 0) wake();
  if (loop_thread_.joinable()) loop_thread_.join();
  for (Lane* lane : {&api_lane_, &health_lane_})
    for (std::thread& t : lane->threads) t.join();
  // Every thread is gone: what is left is this thread's.
  std::vector<Conn*> all;
  for (auto& [id, c] : conns_) all.push_back(c.get());
  for (Conn* c : all) close_conn(c);
  done_.clear();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  listen_fd_ = epoll_fd_ = wake_fd_ = -1;
}

void HttpServer::Impl::loop() {
  // Every write to a connection is this thread's. OpenSSL writes with write(2), which raises
  // SIGPIPE on a socket the peer has closed (its default action ends the process): blocked on
  // this thread, the write fails with EPIPE instead and the connection is closed. The signal
  // then waits on this thread, blocked, and goes with it.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  std::vector<epoll_event> events(256);
  bool draining = false;
  SteadyClock::time_point grace{};
  for (;;) {
    SteadyClock::time_point now = SteadyClock::now();
    if (stopping_ && !draining) {
      // Stop accepting; drop what no thread has begun; close what waits for a request.
      draining = true;
      grace = now + std::chrono::milliseconds(kHttpStopGraceMs);
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
      ::close(listen_fd_);
      listen_fd_ = -1;
      for (Lane* lane : {&api_lane_, &health_lane_}) {
        std::lock_guard lock(lane->mu);
        for (Conn* c : lane->queue) close_conn(c);
        lane->queue.clear();
      }
      std::vector<Conn*> idle;
      for (auto& [id, c] : conns_)
        if (c->state != Conn::State::kBusy && c->state != Conn::State::kWrite) idle.push_back(c.get());
      for (Conn* c : idle) close_conn(c);
    }
    if (draining && (conns_.empty() || now >= grace)) break;
    if (accepting_ == false && listen_fd_ >= 0 && !draining && now >= accept_paused_until_) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = kListenId;
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
      accepting_ = true;
    }
    // Sleep until the next deadline, a second at most (the refusal log, the accept pause).
    int64_t wait_ms = 1000;
    SteadyClock::time_point next = now + std::chrono::milliseconds(wait_ms);
    if (!timers_.empty()) next = std::min(next, timers_.begin()->first);
    if (draining) next = std::min(next, grace);
    if (!accepting_ && listen_fd_ >= 0) next = std::min(next, accept_paused_until_);
    wait_ms = std::max<int64_t>(0, std::chrono::ceil<std::chrono::milliseconds>(next - now).count());
    const int n = epoll_wait(epoll_fd_, events.data(), int(events.size()), int(wait_ms));
    for (int i = 0; i < n; ++i) {
      const uint64_t id = events[i].data.u64;
      if (id == kListenId) {
        if (listen_fd_ >= 0) accept_all();
      } else if (id == kWakeId) {
        uint64_t v = 0;
        [[maybe_unused]] ssize_t r = ::read(wake_fd_, &v, sizeof v);
        take_done();
      } else if (auto it = conns_.find(id); it != conns_.end()) {
        on_event(it->second.get());
      }
    }
    now = SteadyClock::now();
    expire(now);
    log_refusals(now, false);
  }
  log_refusals(SteadyClock::now(), true);
  // Whatever a request thread still holds is closed by stop() once the threads are joined.
  std::vector<Conn*> rest;
  for (auto& [id, c] : conns_)
    if (c->state != Conn::State::kBusy) rest.push_back(c.get());
  for (Conn* c : rest) close_conn(c);
}

void HttpServer::Impl::accept_all() {
  // A bounded batch, so that a flood of connections cannot starve the connections' events.
  for (int i = 0; i < 64; ++i) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: the listening socket would stay readable and spin the loop.
        log_event(LogLevel::kWarning, "http_accept_paused",
                  absl::StrCat("HTTP: cannot accept connections (", std::strerror(errno), "); pausing ",
                               kHttpAcceptPauseMs, " ms"),
                  {{"reason", std::string(std::strerror(errno))}});
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
        accepting_ = false;
        accept_paused_until_ = SteadyClock::now() + std::chrono::milliseconds(kHttpAcceptPauseMs);
      }
      return;
    }
    auto [peer, peer_port] = address_text(ss);
    const int from_peer = per_address_.count(peer) ? per_address_[peer] : 0;
    const bool over = open_ >= options_.max_connections || from_peer >= options_.max_connections_per_address;
    const bool over_per_address = open_ < options_.max_connections;
    if (over) {
      count_refusal(peer, over_per_address);
      // The lane full: the oldest of its connections whose head has not come makes room, so that
      // idle connections opened over the limits again and again cannot keep probes out.
      if (health_open_ >= options_.health_connections && !evict_from_health_lane()) {
        refuse(fd, peer, over_per_address);
        continue;
      }
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // answers go out whole, at once
    if (options_.send_buffer_bytes > 0)
      setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &options_.send_buffer_bytes, sizeof options_.send_buffer_bytes);
    auto c = std::make_unique<Conn>();
    c->id = next_id_++;
    c->fd = fd;
    c->admitted = !over;
    c->health_only = over;
    c->over_per_address = over && over_per_address;
    c->peer = std::move(peer);
    c->peer_port = peer_port;
    c->principal = absl::StrCat("address ", c->peer);
    sockaddr_storage local{};
    socklen_t local_len = sizeof local;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) == 0)
      std::tie(c->local, c->local_port) = address_text(local);
    if (over) {
      ++health_open_;
      health_lane_ids_.insert(c->id);
    } else {
      ++per_address_[c->peer];
      ++open_;
      ++accepted_;
      if (options_.metrics) options_.metrics->set_http_connections(open_);
    }
    Conn* p = c.get();
    conns_.emplace(p->id, std::move(c));
    // The head's deadline counts from the connection's start, the handshake included.
    set_deadline(p, SteadyClock::now() +
                        std::chrono::milliseconds(over ? std::min(options_.header_timeout_ms, kHttpHealthHeadTimeoutMs)
                                                       : options_.header_timeout_ms));
    if (ctx_) {
      p->ssl = SSL_new(ctx_);
      if (!p->ssl || SSL_set_fd(p->ssl, fd) != 1) {
        close_conn(p);
        continue;
      }
      SSL_set_mode(p->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
      SSL_set_accept_state(p->ssl);
      p->state = Conn::State::kHandshake;
      handshake(p);
    } else {
      p->state = Conn::State::kHead;
      on_readable(p);  // what has come already: a probe's request is there by now
    }
  }
}

bool HttpServer::Impl::evict_from_health_lane() {
  // The oldest (ids grow) that has sent nothing or is closing, its answer sent; else the oldest
  // whose request has not come whole (a probe's has no body). What has come is read first, so
  // that a probe accepted a moment before its request came is not taken for a silent one.
  const auto silent = [](const Conn& c) {
    return (c.state == Conn::State::kHead && c.in.empty()) || c.state == Conn::State::kLinger ||
           (c.state == Conn::State::kHandshake && SSL_get_state(c.ssl) == TLS_ST_BEFORE);
  };
  const auto unfinished = [](const Conn& c) {
    return c.state == Conn::State::kHandshake || c.state == Conn::State::kHead || c.state == Conn::State::kBody;
  };
  const std::vector<uint64_t> ids(health_lane_ids_.begin(), health_lane_ids_.end());
  for (const auto& is : {+silent, +unfinished}) {
    for (const uint64_t id : ids) {
      auto it = conns_.find(id);
      if (it == conns_.end()) return true;  // closed meanwhile (its client had gone): room made
      Conn* c = it->second.get();
      if (!is(*c)) continue;
      if (c->state == Conn::State::kHandshake) {
        handshake(c);
      } else if (c->state == Conn::State::kHead) {
        on_readable(c);
      }
      if (!conns_.count(id)) return true;
      if (!is(*c)) continue;
      ++evicted_;
      close_conn(c);
      return true;
    }
  }
  return false;
}

void HttpServer::Impl::count_refusal(const std::string& peer, bool per_address) {
  (per_address ? refused_per_address_ : refused_)++;
  (per_address ? unlogged_refused_per_address_ : unlogged_refused_)++;
  last_refused_address_ = peer;
  if (options_.metrics)
    options_.metrics->count_http_refused(per_address ? "max_connections_per_address" : "max_connections");
}

void HttpServer::Impl::refuse(int fd, const std::string& peer, bool per_address) {
  // Over TLS an answer would need the handshake that the limit saves: closed unanswered.
  if (ctx_) {
    ::close(fd);
    return;
  }
  const std::string answer =
      canned_response(503, per_address ? "too many connections from this address" : "too many connections");
  [[maybe_unused]] ssize_t n = ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (lingering_refused_ >= kHttpMaxLingeringRefused) {
    ::close(fd);  // the answer may be lost to a reset if the client had sent its request
    return;
  }
  ::shutdown(fd, SHUT_WR);
  auto c = std::make_unique<Conn>();
  c->id = next_id_++;
  c->fd = fd;
  c->peer = peer;
  Conn* p = c.get();
  conns_.emplace(p->id, std::move(c));
  ++lingering_refused_;
  p->state = Conn::State::kLinger;
  set_deadline(p, SteadyClock::now() + std::chrono::milliseconds(options_.linger_ms));
  set_events(p, EPOLLIN);
}

void HttpServer::Impl::log_refusals(SteadyClock::time_point now, bool force) {
  if (unlogged_refused_ + unlogged_refused_per_address_ == 0) return;
  if (!force && now - last_refusal_log_ < std::chrono::milliseconds(kHttpRefusedLogIntervalMs)) return;
  log_event(LogLevel::kWarning, "http_connections_refused",
            absl::StrCat("HTTP: refused ", unlogged_refused_ + unlogged_refused_per_address_,
                         " connections since the last report: ", unlogged_refused_, " over --http-max-connections (",
                         options_.max_connections, "), ", unlogged_refused_per_address_,
                         " over --http-max-connections-per-address (", options_.max_connections_per_address,
                         "), the last from ", last_refused_address_),
            {{"refused", unlogged_refused_},
             {"refused_per_address", unlogged_refused_per_address_},
             {"address", last_refused_address_}});
  unlogged_refused_ = unlogged_refused_per_address_ = 0;
  last_refusal_log_ = now;
}

void HttpServer::Impl::on_event(Conn* c) {
  switch (c->state) {
    case Conn::State::kHandshake: handshake(c); break;
    case Conn::State::kIdle:
    case Conn::State::kHead:
    case Conn::State::kBody: on_readable(c); break;
    case Conn::State::kWrite: on_writable(c); break;
    case Conn::State::kLinger: on_linger(c); break;
    case Conn::State::kBusy: break;  // a stale event: not registered while busy
  }
}

void HttpServer::Impl::handshake(Conn* c) {
  ERR_clear_error();
  const int r = SSL_accept(c->ssl);
  if (r == 1) {
    c->state = Conn::State::kHead;
    set_events(c, EPOLLIN);
    on_readable(c);  // the handshake's last read may hold the request already
    return;
  }
  switch (SSL_get_error(c->ssl, r)) {
    case SSL_ERROR_WANT_READ: set_events(c, EPOLLIN); break;
    case SSL_ERROR_WANT_WRITE: set_events(c, EPOLLOUT); break;
    default: close_conn(c);  // not TLS, no client certificate, a closed connection
  }
}

ssize_t HttpServer::Impl::conn_read(Conn* c, char* buf, size_t n, Io* io) {
  if (c->ssl) {
    ERR_clear_error();
    const int r = SSL_read(c->ssl, buf, int(n));
    if (r > 0) return r;
    switch (SSL_get_error(c->ssl, r)) {
      case SSL_ERROR_WANT_READ: *io = Io::kWantRead; break;
      case SSL_ERROR_WANT_WRITE: *io = Io::kWantWrite; break;
      case SSL_ERROR_ZERO_RETURN: *io = Io::kEof; break;
      default: *io = Io::kError;
    }
    return -1;
  }
  for (;;) {
    const ssize_t r = ::recv(c->fd, buf, n, 0);
    if (r > 0) return r;
    if (r == 0)
      *io = Io::kEof;
    else if (errno == EINTR)
      continue;
    else
      *io = errno == EAGAIN || errno == EWOULDBLOCK ? Io::kWantRead : Io::kError;
    return -1;
  }
}

ssize_t HttpServer::Impl::conn_write(Conn* c, const char* buf, size_t n, Io* io) {
  if (c->ssl) {
    ERR_clear_error();
    const int r = SSL_write(c->ssl, buf, int(std::min<size_t>(n, 1 << 30)));
    if (r > 0) return r;
    switch (SSL_get_error(c->ssl, r)) {
      case SSL_ERROR_WANT_READ: *io = Io::kWantRead; break;
      case SSL_ERROR_WANT_WRITE: *io = Io::kWantWrite; break;
      default: *io = Io::kError;
    }
    return -1;
  }
  for (;;) {
    const ssize_t r = ::send(c->fd, buf, n, MSG_NOSIGNAL);
    if (r >= 0) return r;
    if (errno == EINTR) continue;
    *io = errno == EAGAIN || errno == EWOULDBLOCK ? Io::kWantWrite : Io::kError;
    return -1;
  }
}

void HttpServer::Impl::on_readable(Conn* c) {
  // Read what there is, up to the end of the request being framed (or the head's limit): a
  // pipelined next request stays in the kernel (or in TLS's buffer) until this one is answered.
  char buf[16384];
  for (;;) {
    const size_t cap = c->head_len ? c->head_len + c->body_len : options_.max_head_bytes + 1;
    if (c->in.size() >= cap || c->peer_eof) break;
    Io io = Io::kOk;
    const ssize_t n = conn_read(c, buf, std::min(sizeof buf, cap - c->in.size()), &io);
    if (n > 0) {
      c->in.append(buf, size_t(n));
      continue;
    }
    if (io == Io::kWantRead) {
      set_events(c, EPOLLIN);
    } else if (io == Io::kWantWrite) {
      set_events(c, EPOLLOUT);
    } else if (io == Io::kEof) {
      c->peer_eof = true;
    } else {
      close_conn(c);
      return;
    }
    break;
  }
  advance(c);
}

// Frames the request at the front of `in`: its head's end, the head parsed (once: http_wire.h),
// then its body by Content-Length.
void HttpServer::Impl::advance(Conn* c) {
  const SteadyClock::time_point now = SteadyClock::now();
  if (c->state == Conn::State::kIdle) {
    if (c->in.empty()) {
      if (c->peer_eof) close_conn(c);
      return;
    }
    c->state = Conn::State::kHead;  // the next request's first byte: its head's deadline starts
    set_deadline(c, now + std::chrono::milliseconds(options_.header_timeout_ms));
  }
  if (!c->head_len) {
    const size_t end = std::min(c->in.size(), options_.max_head_bytes);
    const size_t found = find_head_end(absl::string_view(c->in.data(), end), c->scan);
    if (found == std::string::npos) {
      if (c->in.size() > options_.max_head_bytes)
        return respond_and_close(c, 431,
                                 absl::StrCat("the request's head is over ", options_.max_head_bytes, " bytes"));
      if (c->peer_eof) return close_conn(c);
      c->scan = end;
      return;
    }
    c->head_len = found;
    WireRefusal refusal;
    if (!cluster::parse_head(absl::string_view(c->in.data(), c->head_len), limits_, &c->wire, &refusal))
      return respond_and_close(c, refusal.status, refusal.message);
    c->body_len = c->wire.body_bytes;
    c->health = c->wire.health;
    if (c->health_only && !c->health)
      return respond_and_close(c, 503,
                               c->over_per_address ? "too many connections from this address" : "too many connections");
    if (c->body_len > 0 && c->in.size() < c->head_len + c->body_len) {
      c->state = Conn::State::kBody;
      set_deadline(c, now + std::chrono::milliseconds(options_.body_timeout_ms));
    }
  }
  if (c->in.size() >= c->head_len + c->body_len) return dispatch(c);
  if (c->peer_eof) close_conn(c);
}

void HttpServer::Impl::respond_and_close(Conn* c, int status, const std::string& message, const std::string& extra) {
  c->out = canned_response(status, message, extra);
  c->out_pos = 0;
  c->close_after = true;
  start_write(c);
}

void HttpServer::Impl::dispatch(Conn* c) {
  if (!c->health && queued_ >= int64_t(options_.max_queued_bytes)) {
    // Other answers wait for their readers: this one would pile on.
    ++refused_queued_;
    if (options_.metrics) options_.metrics->count_http_refused("max_queued_bytes");
    return respond_and_close(c, 503, "too many answers waiting to be sent: try again", "Retry-After: 1\r\n");
  }
  set_events(c, 0);
  clear_deadline(c);
  c->state = Conn::State::kBusy;
  Lane& lane = c->health ? health_lane_ : api_lane_;
  {
    std::lock_guard lock(lane.mu);
    lane.queue.push_back(c);
  }
  lane.cv.notify_one();
}

void HttpServer::Impl::serve_lane(Lane* lane) {
  for (;;) {
    Conn* c = nullptr;
    {
      std::unique_lock lock(lane->mu);
      lane->cv.wait(lock, [&] { return stopping_ || !lane->queue.empty(); });
      if (stopping_) return;  // the loop closes what is still queued
      c = lane->queue.front();
      lane->queue.pop_front();
    }
    if (c->paging)
      make_page(c);
    else
      serve(c);
    {
      std::lock_guard lock(done_mu_);
      done_.push_back(c);
    }
    wake();
  }
}

// A request thread: the request routed by HttpApi, the answer serialized into `out`.
void HttpServer::Impl::serve(Conn* c) {
  HttpRequest req = std::move(c->wire.request);
  req.body = c->in.substr(c->head_len, c->body_len);
  req.client_certificate_pem = peer_certificate(c->ssl);
  req.local_address = c->local;
  req.local_port = c->local_port;
  req.peer_address = c->peer;
  req.budget = this;
  HttpResponse resp = api_->respond(req);
  ++answered_;
  if (resp.status == 429) {
    ++refused_principal_;
    if (options_.metrics) options_.metrics->count_http_refused("max_queued_bytes_per_principal");
  }
  c->close_after = stopping_ || c->peer_eof || ++c->requests >= kHttpMaxRequestsPerConnection || c->health_only ||
                   !c->wire.keep_alive;
  WireFraming framing;
  framing.head_only = req.method == "HEAD";
  framing.close = c->close_after;
  framing.http10 = c->wire.http10;
  framing.gzip = c->wire.gzip;
  framing.keep_alive_timeout_s = std::max<int64_t>(1, options_.idle_timeout_ms / 1000);
  c->out = serialize_response(resp, framing, &c->gzip);
  c->principal = resp.principal.empty() ? absl::StrCat("address ", c->peer) : std::move(resp.principal);
  if (resp.pages && !framing.head_only) {
    c->pages = std::move(resp.pages);
    c->chunked = !c->wire.http10;
    // The answer's end is the connection's in HTTP/1.0.
    if (!c->chunked) c->close_after = true;
  } else {
    c->gzip.reset();
  }
  c->in.erase(0, c->head_len + c->body_len);
  c->head_len = c->body_len = c->scan = 0;
  c->health = false;
  c->wire = WireRequest();
}

// A request thread: the next page of the connection's answer into `out` (sent whole before).
void HttpServer::Impl::make_page(Conn* c) {
  std::string page;
  absl::Status error;
  const bool more = c->pages->next(&page, &error);
  ++pages_;
  if (!error.ok()) {
    // Headers said 200 already: the answer is cut short, and the client sees that it is.
    log_event(LogLevel::kWarning, "http_answer_cut",
              absl::StrCat("HTTP: an answer to ", c->principal, " stopped part way: ", error.message()),
              {{"principal", c->principal}, {"error", std::string(error.message())}});
    c->out.clear();
    if (!page.empty()) append_page(&c->out, page, false, c->chunked, c->gzip.get());
    c->pages.reset();
    c->gzip.reset();
    c->close_after = true;
    return;
  }
  append_page(&c->out, page, !more, c->chunked, c->gzip.get());
  if (!more) {
    c->pages.reset();
    c->gzip.reset();
  }
}

void HttpServer::Impl::take_done() {
  std::vector<Conn*> done;
  {
    std::lock_guard lock(done_mu_);
    done.swap(done_);
  }
  for (Conn* c : done) {
    if (stopping_) c->close_after = true;
    c->paging = false;
    start_write(c);
  }
}

void HttpServer::Impl::start_write(Conn* c) {
  c->state = Conn::State::kWrite;
  c->out_pos = 0;
  // Each page of a paged answer has the whole deadline: a reader must take a page in it.
  set_deadline(c, SteadyClock::now() + std::chrono::milliseconds(options_.write_timeout_ms));
  on_writable(c);  // what the kernel does not take is counted there
}

void HttpServer::Impl::on_writable(Conn* c) {
  while (c->out_pos < c->out.size()) {
    Io io = Io::kOk;
    const ssize_t n = conn_write(c, c->out.data() + c->out_pos, c->out.size() - c->out_pos, &io);
    if (n > 0) {
      c->out_pos += size_t(n);
      continue;
    }
    // The reader has not taken it all: what is left waits in memory.
    recount(c);
    if (io == Io::kWantWrite || (n == 0 && io == Io::kOk)) {
      set_events(c, EPOLLOUT);
    } else if (io == Io::kWantRead) {
      set_events(c, EPOLLIN);
    } else {
      close_conn(c);
    }
    return;
  }
  finish_response(c);
}

// What a connection's answer holds: its unsent bytes, and what its pages and compressor hold for
// the rest; counted in all and against its principal.
void HttpServer::Impl::recount(Conn* c) {
  int64_t now = int64_t(c->out.size() - c->out_pos);
  if (c->pages) now += int64_t(c->pages->held_bytes());
  if (c->gzip) now += int64_t(GzipStream::kStateBytes);
  const int64_t delta = now - c->counted;
  if (delta == 0) return;
  c->counted = now;
  queued_ += delta;
  if (now > most_counted_) most_counted_ = now;
  std::lock_guard lock(principals_mu_);
  int64_t& p = principal_bytes_[c->principal];
  p += delta;
  if (p == 0) principal_bytes_.erase(c->principal);
}

void HttpServer::Impl::next_page(Conn* c) {
  // Sent: the next page is made on a request thread (a reader that does not read holds no thread).
  set_events(c, 0);
  clear_deadline(c);
  c->out.clear();
  c->out_pos = 0;
  recount(c);
  c->state = Conn::State::kBusy;
  c->paging = true;
  {
    std::lock_guard lock(api_lane_.mu);
    api_lane_.queue.push_back(c);
  }
  api_lane_.cv.notify_one();
}

void HttpServer::Impl::finish_response(Conn* c) {
  if (c->pages && !stopping_) return next_page(c);
  c->pages.reset();
  c->gzip.reset();
  c->out.clear();
  c->out.shrink_to_fit();  // a big answer's buffer is not kept for the idle time
  c->out_pos = 0;
  recount(c);
  if (c->close_after || stopping_) return begin_close(c);
  resume_reading(c);
}

std::optional<std::string> HttpServer::Impl::refuse(const std::string& principal) const {
  const int64_t bytes = principal_bytes(principal);
  if (bytes < int64_t(options_.max_queued_bytes_per_principal)) return std::nullopt;
  return absl::StrCat("too many answers to ", principal, " wait to be sent (", bytes, " bytes, over the limit of ",
                      options_.max_queued_bytes_per_principal, " per principal): read them, then try again");
}

int64_t HttpServer::Impl::principal_bytes(const std::string& principal) const {
  std::lock_guard lock(principals_mu_);
  auto it = principal_bytes_.find(principal);
  return it == principal_bytes_.end() ? 0 : it->second;
}

void HttpServer::Impl::resume_reading(Conn* c) {
  const SteadyClock::time_point now = SteadyClock::now();
  if (c->in.empty()) {
    c->state = Conn::State::kIdle;
    set_deadline(c, now + std::chrono::milliseconds(options_.idle_timeout_ms));
  } else {
    c->state = Conn::State::kHead;  // a pipelined request
    set_deadline(c, now + std::chrono::milliseconds(options_.header_timeout_ms));
  }
  set_events(c, EPOLLIN);
  on_readable(c);  // bytes already here, or in TLS's buffer, raise no event
}

void HttpServer::Impl::begin_close(Conn* c) {
  if (c->peer_eof || stopping_) return close_conn(c);
  if (c->ssl) {
    ERR_clear_error();
    SSL_shutdown(c->ssl);  // close_notify, once; the client's answer is not awaited
  }
  ::shutdown(c->fd, SHUT_WR);
  c->state = Conn::State::kLinger;
  set_deadline(c, SteadyClock::now() + std::chrono::milliseconds(options_.linger_ms));
  set_events(c, EPOLLIN);
}

void HttpServer::Impl::on_linger(Conn* c) {
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(c->fd, buf, sizeof buf, 0);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    return close_conn(c);  // the client closed too
  }
}

void HttpServer::Impl::expire(SteadyClock::time_point now) {
  while (!timers_.empty() && timers_.begin()->first <= now) {
    auto it = conns_.find(timers_.begin()->second);
    if (it == conns_.end()) {
      timers_.erase(timers_.begin());
      continue;
    }
    Conn* c = it->second.get();
    const char* phase = nullptr;
    switch (c->state) {
      case Conn::State::kHandshake: phase = "handshake"; break;
      case Conn::State::kHead: phase = "head"; break;
      case Conn::State::kBody: phase = "body"; break;
      case Conn::State::kWrite: phase = "write"; break;
      default: break;  // idle keep-alive, lingering: their time is up, nothing went wrong
    }
    if (phase) {
      ++timed_out_;
      if (options_.metrics) options_.metrics->count_http_timeout(phase);
    }
    // Cut, unanswered: a client this slow is not waiting for an answer.
    close_conn(c);
  }
}

void HttpServer::Impl::set_events(Conn* c, uint32_t events) {
  if (events == c->events) return;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = c->id;
  if (c->events == 0)
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c->fd, &ev);
  else if (events == 0)
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
  else
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev);
  c->events = events;
}

void HttpServer::Impl::set_deadline(Conn* c, SteadyClock::time_point t) {
  clear_deadline(c);
  c->deadline = t;
  c->has_deadline = true;
  timers_.emplace(t, c->id);
}

void HttpServer::Impl::clear_deadline(Conn* c) {
  if (c->has_deadline) timers_.erase({c->deadline, c->id});
  c->has_deadline = false;
}

void HttpServer::Impl::close_conn(Conn* c) {
  clear_deadline(c);
  c->out.clear();
  c->out_pos = 0;
  c->pages.reset();
  c->gzip.reset();
  recount(c);
  if (c->events && epoll_fd_ >= 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
  if (c->ssl) SSL_free(c->ssl);
  ::close(c->fd);
  if (c->admitted) {
    if (--per_address_[c->peer] == 0) per_address_.erase(c->peer);
    --open_;
    if (options_.metrics) options_.metrics->set_http_connections(open_);
  } else if (c->health_only) {
    --health_open_;
    health_lane_ids_.erase(c->id);
  } else {
    --lingering_refused_;
  }
  conns_.erase(c->id);
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::start(const std::string& listen, const ServerTls* tls,
                                                              const HttpApi* api, const HttpServerOptions& options) {
  if (options.max_connections < 1 || options.max_connections > 1'000'000)
    return absl::InvalidArgumentError("--http-max-connections: not in 1..1000000");
  if (options.max_connections_per_address < 1 || options.max_connections_per_address > options.max_connections)
    return absl::InvalidArgumentError(absl::StrCat("--http-max-connections-per-address: not in 1..",
                                                   options.max_connections, " (--http-max-connections)"));
  if (options.threads < 1 || options.header_timeout_ms < 1 || options.body_timeout_ms < 1 ||
      options.write_timeout_ms < 1 || options.idle_timeout_ms < 1 || options.linger_ms < 0 ||
      options.health_connections < 0 || options.max_head_bytes < 64 || options.max_queued_bytes < 1 ||
      options.max_queued_bytes_per_principal < 1)
    return absl::InvalidArgumentError("HttpServerOptions: a thread count, timeout or size out of range");
  std::unique_ptr<HttpServer> s(new HttpServer);
  s->impl_ = std::make_unique<Impl>(api, options);
  if (absl::Status st = s->impl_->listen(listen, tls); !st.ok()) return st;
  s->impl_->run();
  return s;
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::port() const { return impl_ ? impl_->port_ : 0; }

void HttpServer::stop() {
  if (impl_) impl_->stop();
}

HttpServer::Counts HttpServer::counts() const {
  Counts c;
  if (!impl_) return c;
  c.accepted = impl_->accepted_;
  c.refused = impl_->refused_;
  c.refused_per_address = impl_->refused_per_address_;
  c.timed_out = impl_->timed_out_;
  c.evicted = impl_->evicted_;
  c.open = impl_->open_;
  c.queued_bytes = impl_->queued_;
  c.refused_queued = impl_->refused_queued_;
  c.refused_principal = impl_->refused_principal_;
  c.answered = impl_->answered_;
  c.pages = impl_->pages_;
  c.most_connection_bytes = impl_->most_counted_;
  return c;
}

int64_t HttpServer::principal_bytes(const std::string& principal) const {
  return impl_ ? impl_->principal_bytes(principal) : 0;
}

}  // namespace c960::cluster
