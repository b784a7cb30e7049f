// The coordinator's HTTP listener (coordinator/http_server.h) over real loopback sockets, in
// process on ephemeral ports: health and readiness answer within 100 ms while 200 idle and slow
// connections are open (plain HTTP and HTTPS, handshakes never finished included); a client
// trickling its head or body is cut at the deadline; the connection limits (503, close; health
// answered over them); unsent answers' bytes capped; the head and body size limits (431, 413);
// POST /login with its token in the form body, and the connection usable afterwards; pipelined
// requests; Range ignored, gzip the only coding; client certificates; a prompt stop(); the probe's
// hostile mix for a bounded time while /readyz and a job's results keep answering.
#include "coordinator/http_server.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <functional>
#include <gtest/gtest.h>
#include <memory>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <string>
#include <sys/resource.h>
#include <sys/socket.h>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cluster/log.h"
#include "coordinator/clock.h"
#include "coordinator/metrics.h"
#include "tests/cluster/pki.h"
#include "tests/test_util.h"
#include "worker/compute.h"

namespace c960::cluster {
namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

constexpr char kReadToken[] = "c960_read-token-for-tests-aaaaaaaaaaaaaaaaaaaaaaaa";
constexpr char kBobToken[] = "c960_bob-token-for-tests-bbbbbbbbbbbbbbbbbbbbbbbbbbb";  // another principal

// The requirement: a probe's answer, from its connect to the whole response, within this.
constexpr int64_t kProbeLimitMs = 100;

double ms_since(SteadyClock::time_point t) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t).count();
}

bool wait_until(const std::function<bool()>& done, int64_t timeout_ms = 5000) {
  const auto end = SteadyClock::now() + milliseconds(timeout_ms);
  while (!done()) {
    if (SteadyClock::now() > end) return false;
    std::this_thread::sleep_for(milliseconds(2));
  }
  return true;
}

struct Response {
  int status = 0;  // 0: none (closed, or timed out)
  std::string head, body;
  std::string header(const std::string& name) const {
    for (absl::string_view line : absl::StrSplit(head, "\r\n")) {
      const size_t colon = line.find(':');
      if (colon != absl::string_view::npos && absl::EqualsIgnoreCase(line.substr(0, colon), name))
        return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    }
    return "";
  }
};

// A client connection over a blocking socket with short receive timeouts (so every wait has a
// deadline), in clear or over TLS; `source` binds the local address (another 127.x address
// counts as another peer).
class Client {
 public:
  Client(int port, SSL_CTX* tls = nullptr, const char* source = nullptr, bool handshake = true,
         int receive_buffer = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    if (receive_buffer > 0)  // before connecting: the window it offers
      setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    const timeval tv{0, 20'000};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const timeval send_tv{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &send_tv, sizeof send_tv);
    const int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (source) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      inet_pton(AF_INET, source, &local.sin_addr);
      if (::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
        close_fd();
        return;
      }
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(uint16_t(port));
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      close_fd();
      return;
    }
    if (tls && handshake) {
      ssl_ = SSL_new(tls);
      SSL_set_fd(ssl_, fd_);
      const auto end = SteadyClock::now() + milliseconds(5000);
      for (;;) {
        ERR_clear_error();
        const int r = SSL_connect(ssl_);
        if (r == 1) break;
        if (SSL_get_error(ssl_, r) != SSL_ERROR_WANT_READ || SteadyClock::now() > end) {
          close_fd();
          return;
        }
      }
    }
  }
  ~Client() { close_fd(); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return fd_ >= 0; }
  // Goes away at once, with a reset.
  void reset() {
    if (fd_ < 0) return;
    const linger hard{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    if (ssl_) SSL_free(ssl_);
    ssl_ = nullptr;
    ::close(fd_);
    fd_ = -1;
  }

  bool send(const std::string& s) {
    if (fd_ < 0) return false;
    if (ssl_) return SSL_write(ssl_, s.data(), int(s.size())) == int(s.size());
    return ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL) == ssize_t(s.size());
  }

  // The next final response (1xx ones skipped): its head and Content-Length body.
  Response read_response(int64_t timeout_ms = 5000) {
    const auto end = SteadyClock::now() + milliseconds(timeout_ms);
    for (;;) {
      const size_t head_end = buf_.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        Response r;
        r.head = buf_.substr(0, head_end);
        int status = 0;
        if (r.head.size() < 12 || !absl::SimpleAtoi(r.head.substr(9, 3), &status)) return {};
        size_t length = 0;
        if (std::string cl = r.header("Content-Length"); !cl.empty() && !absl::SimpleAtoi(cl, &length)) return {};
        if (status >= 100 && status < 200) {
          buf_.erase(0, head_end + 4);
          continue;
        }
        if (absl::EqualsIgnoreCase(r.header("Transfer-Encoding"), "chunked")) {
          if (size_t end = 0; dechunk(head_end + 4, &r.body, &end)) {
            r.status = status;
            buf_.erase(0, end);
            return r;
          }
        } else if (buf_.size() >= head_end + 4 + length) {
          r.status = status;
          r.body = buf_.substr(head_end + 4, length);
          buf_.erase(0, head_end + 4 + length);
          return r;
        }
      }
      if (SteadyClock::now() > end) return {};
      char chunk[16384];
      const int n = recv_some(chunk, sizeof chunk);
      if (n > 0) buf_.append(chunk, size_t(n));
      if (n == 0 || n == -2) return {};
    }
  }

  // Reads what has come, for up to timeout_ms; the bytes read (tests of readers that read little).
  size_t read_some(int64_t timeout_ms) {
    const size_t before = buf_.size();
    const auto end = SteadyClock::now() + milliseconds(timeout_ms);
    while (SteadyClock::now() <= end) {
      char chunk[4096];
      const int n = recv_some(chunk, sizeof chunk);
      if (n > 0) buf_.append(chunk, size_t(n));
      if (n == 0 || n == -2) break;
    }
    return buf_.size() - before;
  }

  // Whether the server has closed or reset the connection, seen at once and without reading
  // (a FIN counts even behind answer bytes not read).
  bool gone() const {
    if (fd_ < 0) return true;
    pollfd p{fd_, POLLRDHUP, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
  }

  // Whether the server closed the connection (end of file or reset) within timeout_ms; what it
  // sent before is kept for read_response.
  bool closed_within(int64_t timeout_ms) {
    const auto end = SteadyClock::now() + milliseconds(timeout_ms);
    while (SteadyClock::now() <= end) {
      char chunk[4096];
      const int n = recv_some(chunk, sizeof chunk);
      if (n > 0) buf_.append(chunk, size_t(n));
      if (n == 0 || n == -2) return true;
    }
    return false;
  }

 private:
  // A chunked body from buf_[at]: its chunks joined into *body, *end just past its last chunk;
  // false while it has not come whole.
  bool dechunk(size_t at, std::string* body, size_t* end) {
    body->clear();
    for (;;) {
      const size_t eol = buf_.find("\r\n", at);
      if (eol == std::string::npos) return false;
      uint64_t n = 0;
      if (!absl::SimpleHexAtoi(absl::string_view(buf_).substr(at, eol - at), &n)) return false;
      at = eol + 2;
      if (buf_.size() < at + n + 2) return false;
      if (n == 0) {
        *end = at + 2;
        return true;
      }
      body->append(buf_, at, n);
      at += n + 2;
    }
  }

  // > 0 bytes; 0 end of file; -1 nothing yet; -2 reset or error.
  int recv_some(char* buf, size_t n) {
    if (fd_ < 0) return -2;
    if (ssl_) {
      ERR_clear_error();
      const int r = SSL_read(ssl_, buf, int(n));
      if (r > 0) return r;
      const int e = SSL_get_error(ssl_, r);
      if (e == SSL_ERROR_WANT_READ) return -1;
      if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && errno == 0)) return 0;
      return -2;
    }
    const ssize_t r = ::recv(fd_, buf, n, 0);
    if (r > 0) return int(r);
    if (r == 0) return 0;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -1 : -2;
  }
  void close_fd() {
    if (ssl_) SSL_free(ssl_);
    ssl_ = nullptr;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  int fd_ = -1;
  SSL* ssl_ = nullptr;
  std::string buf_;
};

std::string get(const std::string& path, const std::string& extra = "") {
  return absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\n", extra, "\r\n");
}

// The same with Host naming the server's port (what a coordinator without authentication wants).
std::string get_at(int port, const std::string& path, const std::string& extra = "") {
  return absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: 127.0.0.1:", port, "\r\n", extra, "\r\n");
}

// Host: without a port, as if port 80; a coordinator without authentication wants the port too.
std::string login_post(const std::string& form, const std::string& host = "127.0.0.1") {
  return absl::StrCat("POST /login HTTP/1.1\r\nHost: ", host,
                      "\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                      "Content-Length: ",
                      form.size(), "\r\n\r\n", form);
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::open(":memory:");
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
    coordinator_ = std::make_unique<Coordinator>(store_.get(), &clock_, CoordinatorOptions{30'000});
    ASSERT_TRUE(coordinator_->load().ok());
    metrics_ = std::make_unique<Metrics>();
  }
  void TearDown() override {
    if (server_) server_->stop();
    if (client_ctx_) SSL_CTX_free(client_ctx_);
  }

  // An API with two read tokens, alice's and bob's (tokens: true), or without authentication.
  void make_api(bool tokens, bool tls = false, bool client_certificates = false) {
    HttpOptions o;
    if (tokens) {
      auto set = TokenSet::parse(
          absl::StrCat("read alice ", token_hash(kReadToken), "\nread bob ", token_hash(kBobToken), "\n"), "tokens");
      ASSERT_TRUE(set.ok()) << set.status();
      o.tokens = std::make_shared<TokenTable>(std::move(*set));
    }
    o.tls = tls;
    o.client_certificates = client_certificates;
    api_ = std::make_unique<HttpApi>(coordinator_.get(), store_.get(), metrics_.get(), o);
    api_->set_ready(true);
  }

  void start(HttpServerOptions options = {}, const ServerTls* tls = nullptr) {
    if (!api_) make_api(false, tls != nullptr);
    options.metrics = metrics_.get();
    auto s = HttpServer::start("127.0.0.1:0", tls, api_.get(), options);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    ASSERT_GT(server_->port(), 0);
  }

  // Certificates in a scratch directory, the server's TLS from them, a client context trusting
  // the CA.
  void make_tls(bool client_ca = false) {
    ASSERT_TRUE(test::make_pki(scratch_.path(), &pki_));
    auto tls = load_server_tls(pki_.server_cert(), pki_.server_key(), client_ca ? pki_.ca() : "");
    ASSERT_TRUE(tls.ok()) << tls.status();
    tls_ = *tls;
    client_ctx_ = SSL_CTX_new(TLS_client_method());
    ASSERT_NE(client_ctx_, nullptr);
    ASSERT_EQ(SSL_CTX_load_verify_locations(client_ctx_, pki_.ca().c_str(), nullptr), 1);
    SSL_CTX_set_verify(client_ctx_, SSL_VERIFY_PEER, nullptr);
  }

  // A perft job of depth 2 on `sps` (one unit per position), run to the end here by one worker.
  std::string finished_perft_job(const std::string& sps) {
    v1::SubmitJobRequest submit;
    submit.mutable_spec()->set_verify(v1::VERIFY_MODE_OFF);
    submit.mutable_spec()->mutable_perft()->set_depth(2);
    submit.mutable_spec()->mutable_perft()->set_start_positions(sps);
    auto job = coordinator_->submit(Caller::local(), submit);
    EXPECT_TRUE(job.ok()) << job.status();
    v1::HelloRequest hello;
    hello.set_name("w1");
    hello.set_threads(1);
    hello.add_capabilities("perft");
    hello.set_protocol_version(kProtocolVersion);
    auto worker = coordinator_->hello(Caller::local(), hello);
    EXPECT_TRUE(worker.ok()) << worker.status();
    if (!job.ok() || !worker.ok()) return "";
    for (;;) {
      v1::AcquireWorkRequest acquire;
      acquire.set_worker_id(worker->worker_id());
      acquire.set_max_units(64);
      auto leases = coordinator_->acquire(Caller::local(), acquire);
      EXPECT_TRUE(leases.ok()) << leases.status();
      if (!leases.ok() || leases->leases().empty()) return job->id();
      for (const v1::Lease& l : leases->leases()) {
        auto result = compute_unit(l.spec(), nullptr);
        EXPECT_TRUE(result.ok()) << result.status();
        if (!result.ok()) return "";
        v1::CompleteUnitRequest complete;
        complete.set_worker_id(worker->worker_id());
        complete.set_unit_id(l.unit_id());
        complete.set_attempt(l.attempt());
        *complete.mutable_result() = *result;
        EXPECT_TRUE(coordinator_->complete(Caller::local(), complete).ok());
      }
    }
  }

  // The slowest of `n` probes of `path` on new connections: connect (and handshake), request,
  // whole response, each checked for 200.
  double slowest_probe(const std::string& path, int n = 10) {
    double worst = 0;
    for (int i = 0; i < n; ++i) {
      const auto t0 = SteadyClock::now();
      Client c(server_->port(), client_ctx_);
      EXPECT_TRUE(c.connected()) << "probe " << i << " of " << path << " did not connect";
      EXPECT_TRUE(c.send(get(path)));
      const Response r = c.read_response();
      worst = std::max(worst, ms_since(t0));
      EXPECT_EQ(r.status, 200) << path << ": " << r.head;
    }
    return worst;
  }

  test::ScratchDir scratch_;
  test::Pki pki_;
  ServerTls tls_;
  SSL_CTX* client_ctx_ = nullptr;
  FakeClock clock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Coordinator> coordinator_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<HttpApi> api_;
  std::unique_ptr<HttpServer> server_;
};

// Deadlines long enough that no held connection is cut while the probes run.
HttpServerOptions patient() {
  HttpServerOptions o;
  o.header_timeout_ms = o.body_timeout_ms = o.idle_timeout_ms = 120'000;
  return o;
}

TEST_F(HttpServerTest, HealthAnswersFastWith200IdleAndSlowConnectionsOpen) {
  start(patient());
  std::vector<std::unique_ptr<Client>> held;
  for (int i = 0; i < 100; ++i) held.push_back(std::make_unique<Client>(server_->port()));  // idle
  for (int i = 0; i < 100; ++i) {  // a head begun, never finished
    held.push_back(std::make_unique<Client>(server_->port()));
    ASSERT_TRUE(held.back()->send("GET /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "));
  }
  for (const auto& c : held) ASSERT_TRUE(c->connected());
  ASSERT_TRUE(wait_until([&] { return server_->counts().open == 200; })) << server_->counts().open;
  const double healthz = slowest_probe("/healthz"), readyz = slowest_probe("/readyz");
  std::printf("plain HTTP, 200 connections held: slowest /healthz %.2f ms, /readyz %.2f ms\n", healthz, readyz);
  EXPECT_LT(healthz, kProbeLimitMs);
  EXPECT_LT(readyz, kProbeLimitMs);
  // The held connections are still there, and one of them still works.
  EXPECT_GE(server_->counts().open, 200);
  ASSERT_TRUE(held[0]->send(get("/healthz")));
  EXPECT_EQ(held[0]->read_response().status, 200);
}

TEST_F(HttpServerTest, HealthAnswersFastOverTlsWith200IdleSlowAndHalfHandshakenConnections) {
  make_tls();
  start(patient(), &tls_);
  std::vector<std::unique_ptr<Client>> held;
  for (int i = 0; i < 50; ++i)  // TCP only: the handshake never starts
    held.push_back(std::make_unique<Client>(server_->port(), client_ctx_, nullptr, false));
  for (int i = 0; i < 50; ++i) {  // the first bytes of a ClientHello, never the rest
    held.push_back(std::make_unique<Client>(server_->port(), client_ctx_, nullptr, false));
    ASSERT_TRUE(held.back()->send(std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11)));
  }
  for (int i = 0; i < 50; ++i) held.push_back(std::make_unique<Client>(server_->port(), client_ctx_));  // idle
  for (int i = 0; i < 50; ++i) {  // a head begun over TLS
    held.push_back(std::make_unique<Client>(server_->port(), client_ctx_));
    ASSERT_TRUE(held.back()->send("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
  }
  for (const auto& c : held) ASSERT_TRUE(c->connected());
  ASSERT_TRUE(wait_until([&] { return server_->counts().open == 200; })) << server_->counts().open;
  const double healthz = slowest_probe("/healthz"), readyz = slowest_probe("/readyz");
  std::printf("HTTPS, 200 connections held: slowest /healthz %.2f ms, /readyz %.2f ms\n", healthz, readyz);
  EXPECT_LT(healthz, kProbeLimitMs);
  EXPECT_LT(readyz, kProbeLimitMs);
  EXPECT_GE(server_->counts().open, 200);
}

TEST_F(HttpServerTest, TricklingClientsAreCutAtTheDeadlineNotKeptByEachByte) {
  HttpServerOptions o;
  o.header_timeout_ms = 1000;
  o.body_timeout_ms = 1000;
  start(o);
  // A byte every 100 ms would keep a per-read timeout of a second alive forever.
  const auto trickle = [&](Client& c, const std::string& first, SteadyClock::time_point t0) {
    EXPECT_TRUE(c.send(first));
    while (ms_since(t0) < 4000) {
      if (c.closed_within(100)) return ms_since(t0);
      if (!c.send("x")) return ms_since(t0);  // a reset: closed
    }
    return ms_since(t0);
  };
  {
    const auto t0 = SteadyClock::now();
    Client c(server_->port());
    ASSERT_TRUE(c.connected());
    const double cut = trickle(c, "GET / HTTP/1.1\r\nX-Slow: ", t0);
    std::printf("trickled head cut after %.0f ms\n", cut);
    EXPECT_GE(cut, 900);  // not before its deadline
    EXPECT_LT(cut, 2000);
  }
  EXPECT_EQ(server_->counts().timed_out, 1);
  {
    Client c(server_->port());
    ASSERT_TRUE(c.connected());
    const auto t0 = SteadyClock::now();  // the body's deadline starts at the end of its head
    const double cut = trickle(c, login_post(std::string(500, 'a')).substr(0, 200), t0);
    std::printf("trickled body cut after %.0f ms\n", cut);
    EXPECT_GE(cut, 900);
    EXPECT_LT(cut, 2000);
  }
  EXPECT_EQ(server_->counts().timed_out, 2);
}

TEST_F(HttpServerTest, IdleKeepAliveConnectionsCloseAfterTheIdleTimeout) {
  HttpServerOptions o;
  o.idle_timeout_ms = 300;
  start(o);
  Client c(server_->port());
  ASSERT_TRUE(c.send(get("/healthz")));
  ASSERT_EQ(c.read_response().status, 200);
  const auto t0 = SteadyClock::now();
  EXPECT_TRUE(c.closed_within(3000));
  EXPECT_GE(ms_since(t0), 250);
  EXPECT_EQ(server_->counts().timed_out, 0);  // idle is no timeout
}

TEST_F(HttpServerTest, ConnectionsOverALimitGet503AndAreClosed) {
  HttpServerOptions o;
  o.max_connections = 5;
  o.max_connections_per_address = 3;
  start(o);
  std::vector<std::unique_ptr<Client>> held;
  for (int i = 0; i < 3; ++i) held.push_back(std::make_unique<Client>(server_->port()));
  ASSERT_TRUE(wait_until([&] { return server_->counts().open == 3; }));
  {
    Client over(server_->port());
    ASSERT_TRUE(over.connected());
    ASSERT_TRUE(over.send(get("/api/v1/jobs")));  // only health is answered over a limit
    const Response r = over.read_response();
    EXPECT_EQ(r.status, 503) << r.head;
    EXPECT_EQ(r.header("Connection"), "close");
    EXPECT_TRUE(over.closed_within(3000));
  }
  EXPECT_EQ(server_->counts().refused_per_address, 1);
  // Another address is not over its limit; two from it fill the total.
  for (int i = 0; i < 2; ++i) {
    held.push_back(std::make_unique<Client>(server_->port(), nullptr, "127.0.0.2"));
    ASSERT_TRUE(held.back()->connected());
    ASSERT_TRUE(held.back()->send(get("/healthz")));
    EXPECT_EQ(held.back()->read_response().status, 200);
  }
  ASSERT_TRUE(wait_until([&] { return server_->counts().open == 5; }));
  {
    Client over(server_->port(), nullptr, "127.0.0.3");
    ASSERT_TRUE(over.send(get("/")));
    const Response r = over.read_response();
    EXPECT_EQ(r.status, 503) << r.head;
    EXPECT_TRUE(over.closed_within(3000));
  }
  EXPECT_EQ(server_->counts().refused, 1);
  // A closed connection frees its place.
  held.erase(held.begin());
  ASSERT_TRUE(wait_until([&] { return server_->counts().open == 4; }));
  Client again(server_->port());
  ASSERT_TRUE(again.send(get("/healthz")));
  EXPECT_EQ(again.read_response().status, 200);
}

// Issue 34: with every connection the limits allow held open (idle, or sending slowly), a probe
// still gets /healthz and /readyz answered, on a connection let in for that one answer; anything
// else on such a connection is 503. Over the per-address limit and over the total alike.
TEST_F(HttpServerTest, HealthIsAnsweredWithEveryConnectionTaken) {
  HttpServerOptions o = patient();
  o.max_connections = 6;
  o.max_connections_per_address = 3;
  start(o);
  std::vector<std::unique_ptr<Client>> held;
  const auto probe = [&](const char* source) {
    for (const char* path : {"/healthz", "/readyz"}) {
      Client c(server_->port(), nullptr, source);
      ASSERT_TRUE(c.connected());
      ASSERT_TRUE(c.send(get(path)));
      const Response r = c.read_response();
      EXPECT_EQ(r.status, 200) << source << " " << path << ": " << r.head;
      EXPECT_EQ(r.header("Connection"), "close") << r.head;
      EXPECT_TRUE(c.closed_within(3000));
    }
    Client other(server_->port(), nullptr, source);
    ASSERT_TRUE(other.send(get("/api/v1/jobs")));
    EXPECT_EQ(other.read_response().status, 503) << source;
  };
  for (int i = 0; i < 3; ++i) held.push_back(std::make_unique<Client>(server_->port()));
  ASSERT_TRUE(held.back()->send("GET / HTTP/1.1\r\n"));  // one sends slowly
  ASSERT_TRUE(wait_until([&] { return server_->counts().open == 3; }));
  probe("127.0.0.1");  // over the per-address limit
  EXPECT_EQ(server_->counts().refused_per_address, 3);
  for (int i = 0; i < 3; ++i) held.push_back(std::make_unique<Client>(server_->port(), nullptr, "127.0.0.2"));
  ASSERT_TRUE(wait_until([&] { return server_->counts().open == 6; }));
  probe("127.0.0.3");  // over the total
  EXPECT_EQ(server_->counts().refused, 3);
  EXPECT_EQ(server_->counts().open, 6);
}

// The lane for health is bounded too. A new connection over the limits takes the place of the
// oldest lane connection that has sent nothing, or is closing, or else whose request has not come
// whole (closed at once, not at its deadline), so that connections opened over and over cannot
// keep probes out; a probe, whose request comes at once, goes last. Without a lane, a connection
// over the limits is refused at once.
TEST_F(HttpServerTest, TheHealthLaneFullMakesRoomForTheNewest) {
  HttpServerOptions o = patient();
  o.max_connections = 1;
  o.max_connections_per_address = 1;
  o.health_connections = 2;
  start(o);
  Client held(server_->port()), slow(server_->port()), partial(server_->port());
  ASSERT_TRUE(held.connected() && slow.connected() && partial.connected());
  // A health request whose body never comes holds its place no longer than an unfinished head.
  ASSERT_TRUE(slow.send("GET /readyz HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n"));
  ASSERT_TRUE(partial.send("GET /readyz HTTP/1.1\r\n"));
  ASSERT_TRUE(wait_until([&] { return server_->counts().refused == 2; }));
  Client first(server_->port());  // the oldest unfinished one, slow, makes room
  ASSERT_TRUE(first.send(get("/readyz")));
  EXPECT_EQ(first.read_response().status, 200);
  EXPECT_TRUE(slow.closed_within(500));  // its deadline was a second away
  EXPECT_EQ(server_->counts().evicted, 1);
  // The answered one, closing while its client keeps it, goes before the unfinished one.
  Client idle(server_->port());
  ASSERT_TRUE(wait_until([&] { return server_->counts().evicted == 2; }));
  EXPECT_TRUE(first.closed_within(500));
  // An idle one goes before the unfinished one too.
  Client second(server_->port());
  ASSERT_TRUE(second.send(get("/healthz")));
  EXPECT_EQ(second.read_response().status, 200);
  EXPECT_TRUE(idle.closed_within(500));
  EXPECT_EQ(server_->counts().evicted, 3);
  EXPECT_FALSE(partial.gone());
  // Without a lane, a connection over the limits is refused at once.
  server_->stop();
  o.health_connections = 0;
  start(o);
  Client alone(server_->port());
  ASSERT_TRUE(wait_until([&] { return server_->counts().open == 1; }));
  Client over(server_->port());
  const Response r = over.read_response();  // without sending anything
  EXPECT_EQ(r.status, 503) << r.head;
  EXPECT_TRUE(over.closed_within(3000));
}

TEST_F(HttpServerTest, OversizeHeadIs431OversizeBodyIs413TransferEncodingIs411) {
  start();
  {
    Client c(server_->port());
    ASSERT_TRUE(c.send(get("/healthz", absl::StrCat("X-Big: ", std::string(kMaxHttpHeadBytes, 'a'), "\r\n"))));
    const Response r = c.read_response();
    EXPECT_EQ(r.status, 431) << r.head;
    EXPECT_TRUE(c.closed_within(3000));
  }
  {
    // One line over the limit of a header line (kMaxHttpHeaderLineBytes).
    Client c(server_->port());
    ASSERT_TRUE(c.send(get("/healthz", absl::StrCat("X-Big: ", std::string(9000, 'a'), "\r\n"))));
    EXPECT_EQ(c.read_response().status, 431);
    EXPECT_TRUE(c.closed_within(3000));
  }
  {
    Client c(server_->port());
    ASSERT_TRUE(c.send(login_post(std::string(kMaxHttpBodyBytes + 1, 'a'))));
    const Response r = c.read_response();
    EXPECT_EQ(r.status, 413) << r.head;
    EXPECT_TRUE(c.closed_within(3000));
  }
  {
    Client c(server_->port());
    ASSERT_TRUE(c.send("POST /login HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"));
    EXPECT_EQ(c.read_response().status, 411);
    EXPECT_TRUE(c.closed_within(3000));
  }
  {
    // Just under both limits: served.
    Client c(server_->port());
    ASSERT_TRUE(
        c.send(get("/healthz", absl::StrCat("X-Big: ", std::string(kMaxHttpHeadBytes / 2 - 200, 'a'),
                                            "\r\nX-Bigger: ", std::string(kMaxHttpHeadBytes / 2 - 200, 'b'), "\r\n"))));
    EXPECT_EQ(c.read_response().status, 200);
    ASSERT_TRUE(c.send(
        login_post("token=" + std::string(kMaxHttpBodyBytes - 6, 'a'), absl::StrCat("127.0.0.1:", server_->port()))));
    EXPECT_EQ(c.read_response().status, 404);  // no tokens: no login; but read and answered
  }
}

// Issue 21: the request was handled before its body was read, so the login form's token was
// never seen (401 "give a token") and the body was then read as the next request (400).
TEST_F(HttpServerTest, LoginFormBodyIsReadAndTheConnectionStaysUsable) {
  make_api(true);
  auto s = HttpServer::start("127.0.0.1:0", nullptr, api_.get());
  ASSERT_TRUE(s.ok()) << s.status();
  server_ = std::move(*s);
  Client c(server_->port());
  ASSERT_TRUE(c.send(login_post(absl::StrCat("token=", kReadToken, "&next=%2Fjobs%2Fx"))));
  const Response login = c.read_response();
  EXPECT_EQ(login.status, 303) << login.head << "\n" << login.body;
  EXPECT_EQ(login.header("Location"), "/jobs/x");
  // The cookie holds a session, not the token.
  const std::string set_cookie = login.header("Set-Cookie");
  ASSERT_TRUE(absl::StartsWith(set_cookie, absl::StrCat(kSessionCookie, "="))) << login.head;
  EXPECT_FALSE(absl::StrContains(login.head, kReadToken)) << login.head;
  const std::string cookie = set_cookie.substr(0, set_cookie.find(';'));
  // The same connection: the cookie lets the dashboard in.
  ASSERT_TRUE(c.send(get("/", absl::StrCat("Cookie: ", cookie, "\r\n"))));
  const Response page = c.read_response();
  EXPECT_EQ(page.status, 200) << page.head;
  EXPECT_TRUE(absl::StrContains(page.body, "<!doctype html>"));
  ASSERT_TRUE(c.send(get("/healthz")));
  EXPECT_EQ(c.read_response().status, 200);
  // A wrong token in the form is refused for what it is.
  ASSERT_TRUE(c.send(login_post("token=c960_unknown-token-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")));
  const Response refused = c.read_response();
  EXPECT_EQ(refused.status, 401);
  EXPECT_TRUE(absl::StrContains(refused.body, "unknown token")) << refused.body;
}

TEST_F(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  make_api(true);
  auto s = HttpServer::start("127.0.0.1:0", nullptr, api_.get());
  ASSERT_TRUE(s.ok()) << s.status();
  server_ = std::move(*s);
  Client c(server_->port());
  ASSERT_TRUE(c.send(get("/healthz") + login_post(absl::StrCat("token=", kReadToken)) + get("/readyz") +
                     get("/metrics", absl::StrCat("Authorization: Bearer ", kReadToken, "\r\n")) +
                     get("/nothing", absl::StrCat("Authorization: Bearer ", kReadToken, "\r\n"))));
  const Response a = c.read_response(), b = c.read_response(), d = c.read_response(), e = c.read_response(),
                 f = c.read_response();
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body, "ok\n");
  EXPECT_EQ(b.status, 303);
  EXPECT_FALSE(b.header("Set-Cookie").empty());
  EXPECT_EQ(d.status, 200);
  EXPECT_EQ(d.body, "ready\n");
  EXPECT_EQ(e.status, 200);
  EXPECT_TRUE(absl::StrContains(e.body, "c960_http_requests_total"));
  EXPECT_EQ(f.status, 404);
}

// The server routes with HttpApi::respond, which HttpApi::handle (the tests' way in) calls too: Each row, and requests
// no row takes, get the same answer both ways, and the headers the cancel's same-origin check reads reach it.
TEST_F(HttpServerTest, TheServerRoutesAsHandleDoes) {
  make_api(false);
  start();
  v1::SubmitJobRequest submit;
  submit.mutable_spec()->set_verify(v1::VERIFY_MODE_OFF);
  submit.mutable_spec()->mutable_perft()->set_depth(1);
  submit.mutable_spec()->mutable_perft()->set_start_positions("518");
  auto job = coordinator_->submit(Caller::local(), submit);
  ASSERT_TRUE(job.ok()) << job.status();
  struct Case {
    std::string method, path;
  };
  std::vector<Case> cases = {{"GET", "/nowhere"},    {"PUT", "/api/v1/jobs"},         {"GET", "/api/v1/jobs/a/b"},
                             {"DELETE", "/"},        {"GET", "/assets/x.js"},         {"GET", "/api/v2/workers"},
                             {"GET", "/jobs/nojob"}, {"GET", "/api/v1/jobs/x/cancel"}};
  for (const HttpApi::Route& r : HttpApi::routes()) {
    std::string path = r.pattern;
    if (const size_t dot = path.find("\\."); dot != std::string::npos) path.erase(dot, 1);
    if (const size_t g = path.find("([^/]+)"); g != std::string::npos)
      path.replace(g, 7, r.handler == HttpApi::Handler::kAsset ? "dashboard.js" : job->id());
    if (r.handler != HttpApi::Handler::kApiCancel && r.handler != HttpApi::Handler::kLogout)
      cases.push_back({r.method, path});
  }
  const std::string host = absl::StrCat("127.0.0.1:", server_->port());
  Client c(server_->port());
  for (const Case& k : cases) {
    ASSERT_TRUE(
        c.send(absl::StrCat(k.method, " ", k.path, " HTTP/1.1\r\nHost: ", host, "\r\nContent-Length: 0\r\n\r\n")));
    const Response got = c.read_response();
    HttpRequest req;
    req.method = k.method;
    req.path = k.path;
    req.host = host;
    req.local_address = "127.0.0.1";
    req.local_port = server_->port();
    const HttpResponse want = api_->handle(req);
    EXPECT_EQ(got.status, want.status) << k.method << " " << k.path << ": " << got.head;
    EXPECT_EQ(got.header("Allow"), want.header("Allow")) << k.method << " " << k.path;
    // Refusals word for word (what succeeds carries counters and times that move between the two).
    if (want.status != 200) {
      EXPECT_EQ(got.body, want.body) << k.method << " " << k.path;
    }
  }
  // The cancel: refused without the dashboard's header, or from another origin; done with it.
  const std::string cancel =
      absl::StrCat("POST /api/v1/jobs/", job->id(), "/cancel HTTP/1.1\r\nHost: ", host, "\r\nContent-Length: 0\r\n");
  ASSERT_TRUE(c.send(absl::StrCat(cancel, "\r\n")));
  EXPECT_EQ(c.read_response().status, 403);
  ASSERT_TRUE(
      c.send(absl::StrCat(cancel, "X-Requested-With: ", kDashboardRequest, "\r\nOrigin: http://evil.example\r\n\r\n")));
  EXPECT_EQ(c.read_response().status, 403);
  ASSERT_TRUE(c.send(absl::StrCat(cancel, "X-Requested-With: ", kDashboardRequest,
                                  "\r\nOrigin: http://127.0.0.1\r\nSec-Fetch-Site: same-origin\r\n\r\n")));
  const Response done = c.read_response();
  EXPECT_EQ(done.status, 200) << done.head << done.body;
  EXPECT_EQ(coordinator_->get_job(Caller::local(), job->id())->state(), v1::JOB_STATE_CANCELLED);
}

// Issue 34: answers that a client does not read wait in the server's memory. Past
// max_queued_bytes of them, in all connections, a new request is answered 503 with Retry-After;
// health still answers, and once the bytes are gone requests are served again.
TEST_F(HttpServerTest, UnsentAnswersOverTheCapGet503WithRetryAfter) {
  make_api(true);
  HttpServerOptions o;
  o.max_queued_bytes = 1;
  start(o);
  const std::string auth = absl::StrCat("Authorization: Bearer ", kReadToken, "\r\n");
  const auto status_of = [&](const std::string& path) {
    Client c(server_->port());
    EXPECT_TRUE(c.send(get(path, auth)));
    const Response r = c.read_response();
    return std::make_pair(r.status, r.header("Retry-After"));
  };
  EXPECT_EQ(status_of("/api/v1/jobs").first, 200);  // nothing waits
  // 400 pipelined requests for the 29 KB script, never read: more than the kernel's buffers hold.
  auto stuck = std::make_unique<Client>(server_->port(), nullptr, nullptr, true, /*receive_buffer=*/4096);
  std::string requests;
  for (int i = 0; i < 400; ++i) requests += get("/assets/dashboard.js", auth);
  ASSERT_TRUE(stuck->send(requests));
  ASSERT_TRUE(wait_until([&] { return server_->counts().queued_bytes > 0; }, 10'000));
  const std::pair<int, std::string> refused = status_of("/api/v1/jobs");
  EXPECT_EQ(refused.first, 503);
  EXPECT_EQ(refused.second, "1");
  EXPECT_EQ(server_->counts().refused_queued, 1);
  EXPECT_EQ(status_of("/healthz").first, 200);
  EXPECT_EQ(status_of("/readyz").first, 200);
  stuck.reset();  // its answer is dropped with it
  ASSERT_TRUE(wait_until([&] { return server_->counts().queued_bytes == 0; }, 10'000))
      << server_->counts().queued_bytes;
  EXPECT_EQ(status_of("/api/v1/jobs").first, 200);
}

// Issue 34: 500 ranges of the whole page made cpp-httplib answer 206 with the page 500 times over
// (multipart/byteranges), to anyone, before any login. Range and If-Range are ignored: the page
// once, 200, whatever they say (one that does not parse was 416).
TEST_F(HttpServerTest, RangeIsIgnoredTheAnswerIsThePageOnce) {
  make_api(true);
  start();
  Client c(server_->port());
  ASSERT_TRUE(c.send(get("/login")));
  const Response page = c.read_response();
  ASSERT_EQ(page.status, 200) << page.head;
  ASSERT_TRUE(absl::StrContains(page.body, "<form")) << page.body;
  std::string ranges = "bytes=0-";
  for (int i = 1; i < 500; ++i) ranges += ",0-";
  const std::vector<std::string> extras = {
      absl::StrCat("Range: ", ranges, "\r\n"),
      absl::StrCat("Range: ", ranges, "\r\nIf-Range: \"x\"\r\n"),
      absl::StrCat("rAnGe: bytes=0-\r\n ,0-,0-\r\nX-After: 1\r\n"),  // any case, folded
      "Range: bytes=0-9\r\n",
      "Range: bytes=100000-\r\n",
      "Range: nonsense\r\n",
      "If-Range: Thu, 01 Jan 1970 00:00:00 GMT\r\n"};
  for (const std::string& extra : extras) {
    ASSERT_TRUE(c.send(get("/login", extra)));
    const Response r = c.read_response();
    EXPECT_EQ(r.status, 200) << extra.substr(0, 40) << ": " << r.head;
    EXPECT_EQ(r.header("Content-Range"), "") << extra.substr(0, 40);
    EXPECT_EQ(r.body.size(), page.body.size()) << extra.substr(0, 40);
    EXPECT_TRUE(r.body == page.body) << extra.substr(0, 40);
  }
}

// Only gzip or no content coding: brotli (which cpp-httplib picked for any Accept-Encoding
// containing "br") costs 50 times gzip's work for a page; deflate and zstd are not offered.
TEST_F(HttpServerTest, AnswersAreGzipOrIdentityNeverBrotli) {
  make_api(true);
  start();
  Client c(server_->port());
  const auto coding = [&](const std::string& accept) {
    EXPECT_TRUE(c.send(get("/login", accept.empty() ? "" : absl::StrCat("Accept-Encoding: ", accept, "\r\n"))));
    const Response r = c.read_response();
    EXPECT_EQ(r.status, 200) << accept << ": " << r.head;
    return r.header("Content-Encoding");
  };
  EXPECT_EQ(coding(""), "");
  EXPECT_EQ(coding("br"), "");
  EXPECT_EQ(coding("zstd, deflate"), "");
  EXPECT_EQ(coding("br;q=1, gzip;q=0"), "");
  EXPECT_EQ(coding("gzip, deflate, br, zstd"), "gzip");
  EXPECT_EQ(coding("br, gzip;q=0.5"), "gzip");
}

// Issue 34: a coordinator without authentication answers only to its own names. A page of
// evil.test whose name was made to resolve to 127.0.0.1 (DNS rebinding) is same-origin with
// itself: its requests carry Host: evil.test:PORT and its own Origin, which matched each other.
TEST_F(HttpServerTest, WithoutAuthenticationOnlyThisCoordinatorsNamesAreServed) {
  make_api(false);
  start();
  const std::string port = absl::StrCat(":", server_->port());
  const auto ask = [&](const std::string& request) {
    Client c(server_->port());
    EXPECT_TRUE(c.send(request));
    return c.read_response();
  };
  const auto get_from = [&](const std::string& path, const std::string& host, const std::string& extra = "") {
    return ask(absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: ", host, "\r\n", extra, "\r\n"));
  };
  const auto post_from = [&](const std::string& path, const std::string& host, const std::string& origin) {
    return ask(absl::StrCat("POST ", path, " HTTP/1.1\r\nHost: ", host, "\r\nOrigin: ", origin,
                            "\r\nX-Requested-With: ", kDashboardRequest, "\r\nContent-Length: 0\r\n\r\n"));
  };
  for (const std::string path : {"/", "/api/v1/jobs", "/metrics", "/assets/dashboard.js", "/nowhere"}) {
    const Response r = get_from(path, "evil.test" + port, "Origin: http://evil.test" + port + "\r\n");
    EXPECT_EQ(r.status, 421) << path << ": " << r.head;
    EXPECT_TRUE(absl::StrContains(r.body, "is not this coordinator")) << r.body;
  }
  EXPECT_EQ(post_from("/logout", "evil.test" + port, "http://evil.test" + port).status, 421);
  EXPECT_EQ(post_from("/api/v1/jobs/x/cancel", "evil.test" + port, "http://evil.test" + port).status, 421);
  EXPECT_EQ(get_from("/", "127.0.0.1").status, 421);  // port 80 is another server
  EXPECT_EQ(get_from("/", "127.0.0.1:1").status, 421);
  // Its own names are served; health answers any Host.
  for (const std::string host : {"127.0.0.1", "localhost", "LocalHost", "[::1]"})
    EXPECT_EQ(get_from("/api/v1/jobs", host + port).status, 200) << host;
  EXPECT_EQ(get_from("/healthz", "evil.test" + port).status, 200);
  EXPECT_EQ(get_from("/readyz", "evil.test").status, 200);
  // The same-site check takes this coordinator's names, not the Host's: the dashboard at
  // localhost may log out of it at 127.0.0.1; evil.test may not, whatever the Host says.
  EXPECT_EQ(post_from("/logout", "127.0.0.1" + port, "http://localhost" + port).status, 303);
  const Response elsewhere = post_from("/logout", "127.0.0.1" + port, "http://evil.test" + port);
  EXPECT_EQ(elsewhere.status, 403) << elsewhere.head;
  EXPECT_TRUE(absl::StrContains(elsewhere.body, "Origin: 'http://evil.test" + port + "' is not this site"))
      << elsewhere.body;
}

// A worker table whose /api/v1/workers?page_size=1000 answer is megabytes: 1000 workers, each
// naming 64 engines.
void add_workers(Coordinator* coordinator, int n = 1000) {
  for (int i = 0; i < n; ++i) {
    v1::HelloRequest hello;
    hello.set_name(absl::StrCat("worker-", i));
    hello.set_threads(1);
    hello.add_capabilities("perft");
    hello.set_protocol_version(kProtocolVersion);
    for (int e = 0; e < kMaxEngines; ++e) hello.add_engines(absl::StrCat("engine-with-a-long-name-", e));
    ASSERT_TRUE(coordinator->hello(Caller::local(), hello).ok());
  }
}

// Issue 34 (the probe's request): the workers page with a large table, asked with 600 ranges.
// The answer is the whole listing once, 200, made and sent in pages (chunked): the server never
// had more than a page of it unsent, and its bytes are those HttpApi::handle gives whole.
TEST_F(HttpServerTest, BigAnswersAreSentInPagesWholeOnceWhateverTheRange) {
  add_workers(coordinator_.get());
  make_api(false);
  start();
  const std::string path = "/api/v1/workers?page_size=1000&include_lost=1";
  HttpRequest req;
  req.path = "/api/v1/workers";
  req.query = parse_form("page_size=1000&include_lost=1");
  const HttpResponse want = api_->handle(req);
  ASSERT_EQ(want.status, 200);
  ASSERT_GT(want.body.size(), 2'000'000u);
  std::string ranges = "bytes=0-0";
  for (int i = 1; i < 600; ++i) absl::StrAppend(&ranges, ",", i * 10, "-", i * 10 + 5);
  Client c(server_->port());
  ASSERT_TRUE(c.send(get_at(server_->port(), path, absl::StrCat("Range: ", ranges, "\r\n"))));
  const Response r = c.read_response(10'000);
  ASSERT_EQ(r.status, 200) << r.head;
  EXPECT_EQ(r.header("Transfer-Encoding"), "chunked");
  EXPECT_EQ(r.header("Content-Range"), "");
  EXPECT_EQ(r.body.size(), want.body.size());
  EXPECT_TRUE(r.body == want.body);
  const HttpServer::Counts counts = server_->counts();
  std::printf("%zu bytes in %lld pages; the most one connection had unsent: %lld bytes\n", r.body.size(),
              static_cast<long long>(counts.pages), static_cast<long long>(counts.most_connection_bytes));
  EXPECT_GE(counts.pages, int64_t(want.body.size() / (2 * kHttpPageBytes)));
  EXPECT_LE(counts.most_connection_bytes, int64_t(2 * kHttpPageBytes));
  // The connection goes on; with gzip the pages go through one stream.
  ASSERT_TRUE(c.send(get_at(server_->port(), path, "Accept-Encoding: gzip\r\n")));
  const Response z = c.read_response(10'000);
  ASSERT_EQ(z.status, 200) << z.head;
  EXPECT_EQ(z.header("Content-Encoding"), "gzip");
  EXPECT_LT(z.body.size(), want.body.size() / 4);
  ASSERT_TRUE(c.send(get("/healthz")));
  EXPECT_EQ(c.read_response().status, 200);
  EXPECT_TRUE(wait_until([&] { return server_->counts().queued_bytes == 0; }));
}

// Issue 34 (the probe's other request): 200 connections ask for the big workers page and do not
// read. Each holds a page of it unsent at most, not the megabytes of the whole answer, and no
// thread: health answers, and a reader that starts reading gets the whole answer.
TEST_F(HttpServerTest, UnreadBigAnswersHoldAPageEachAndNoThread) {
  add_workers(coordinator_.get());
  make_api(false);
  HttpServerOptions o = patient();
  o.write_timeout_ms = 60'000;
  o.max_queued_bytes_per_principal = size_t(1) << 40;  // one principal (the address) asks for all
  start(o);
  const std::string request = get_at(server_->port(), "/api/v1/workers?page_size=1000&include_lost=1");
  std::vector<std::unique_ptr<Client>> readers;
  for (int i = 0; i < 200; ++i) {
    readers.push_back(std::make_unique<Client>(server_->port(), nullptr, nullptr, true, /*receive_buffer=*/4096));
    ASSERT_TRUE(readers.back()->connected());
    ASSERT_TRUE(readers.back()->send(request));
  }
  // Every answer begun, then nothing moves: each waits for its reader.
  ASSERT_TRUE(wait_until([&] { return server_->counts().answered >= 200; }, 20'000)) << server_->counts().answered;
  int64_t pages = -1, queued = -1;
  ASSERT_TRUE(wait_until(
      [&] {
        const HttpServer::Counts now = server_->counts();
        const bool still = now.pages == pages && now.queued_bytes == queued;
        pages = now.pages;
        queued = now.queued_bytes;
        std::this_thread::sleep_for(milliseconds(500));
        return still;
      },
      120'000));  // a sanitizer build on a loaded machine makes pages slowly
  const HttpServer::Counts counts = server_->counts();
  const int64_t whole = int64_t(api_->handle([] {
                                      HttpRequest r;
                                      r.path = "/api/v1/workers";
                                      r.query = parse_form("page_size=1000&include_lost=1");
                                      return r;
                                    }())
                                    .body.size());
  std::printf(
      "200 unread answers of %lld bytes: %lld bytes unsent in the server (%lld pages made), the most on one "
      "connection %lld\n",
      static_cast<long long>(whole), static_cast<long long>(counts.queued_bytes), static_cast<long long>(counts.pages),
      static_cast<long long>(counts.most_connection_bytes));
  EXPECT_EQ(counts.refused_queued + counts.refused_principal, 0);
  EXPECT_LE(counts.most_connection_bytes, int64_t(2 * kHttpPageBytes));
  EXPECT_GT(counts.queued_bytes, 0);  // the kernel's buffers (kHttpSendBufferBytes) are full
  EXPECT_LE(counts.queued_bytes, 200 * int64_t(2 * kHttpPageBytes));
  EXPECT_LT(counts.pages, 200 * (whole / int64_t(kHttpPageBytes)) / 2);  // most pages never made
  EXPECT_EQ(server_->principal_bytes("address 127.0.0.1"), counts.queued_bytes);
  EXPECT_LT(slowest_probe("/healthz", 3), kProbeLimitMs);
  // One reader reads: its whole answer comes.
  const Response r = readers[0]->read_response(20'000);
  EXPECT_EQ(r.status, 200) << r.head;
  EXPECT_EQ(int64_t(r.body.size()), whole);
  readers.clear();
  EXPECT_TRUE(wait_until([&] { return server_->counts().queued_bytes == 0; }, 10'000))
      << server_->counts().queued_bytes;
}

// A principal with too many unsent answer bytes gets 429 with Retry-After naming the limit;
// another principal and health are served, and once its reader has gone it is served again.
TEST_F(HttpServerTest, APrincipalOverItsUnsentBytesGets429) {
  add_workers(coordinator_.get());
  make_api(true);
  HttpServerOptions o = patient();
  o.max_queued_bytes_per_principal = 1;
  start(o);
  const auto as = [](const std::string& token) { return absl::StrCat("Authorization: Bearer ", token, "\r\n"); };
  auto stuck = std::make_unique<Client>(server_->port(), nullptr, nullptr, true, /*receive_buffer=*/4096);
  ASSERT_TRUE(stuck->send(get("/api/v1/workers?page_size=1000", as(kReadToken))));
  ASSERT_TRUE(wait_until([&] { return server_->principal_bytes("alice") > 0; }, 10'000));
  const auto ask = [&](const std::string& path, const std::string& extra) {
    Client c(server_->port());
    EXPECT_TRUE(c.send(get(path, extra)));
    return c.read_response();
  };
  const Response refused = ask("/api/v1/jobs", as(kReadToken));
  EXPECT_EQ(refused.status, 429) << refused.head;
  EXPECT_EQ(refused.header("Retry-After"), "1");
  EXPECT_TRUE(absl::StrContains(refused.body, "per principal")) << refused.body;
  EXPECT_TRUE(absl::StrContains(refused.body, "RESOURCE_EXHAUSTED")) << refused.body;
  EXPECT_EQ(server_->counts().refused_principal, 1);
  EXPECT_EQ(ask("/api/v1/jobs", as(kBobToken)).status, 200);
  EXPECT_EQ(ask("/healthz", "").status, 200);
  stuck.reset();
  ASSERT_TRUE(wait_until([&] { return server_->principal_bytes("alice") == 0; }, 10'000));
  EXPECT_EQ(ask("/api/v1/jobs", as(kReadToken)).status, 200);
}

// A request that does not parse is refused with the status that says why, and closed.
// A reader that goes away in the middle of a big answer over TLS (OpenSSL writes to the socket
// with write(2), which raises SIGPIPE on a connection the peer reset): the server
// drops that connection and serves on. (The coordinator died of SIGPIPE in the browser test once
// cpp-httplib, which ignored the signal for the whole process, was no longer linked.)
TEST_F(HttpServerTest, AReaderThatGoesAwayMidAnswerCostsOnlyItsConnection) {
  add_workers(coordinator_.get());
  make_tls();
  make_api(false, true);
  start({}, &tls_);
  const std::string path = "/api/v1/workers?page_size=1000&include_lost=1";
  for (int round = 0; round < 6; ++round) {
    Client c(server_->port(), client_ctx_);
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.send(get_at(server_->port(), path)));
    // Gone before the answer: the first page's bytes meet a closed socket, which answers with a
    // reset; the next page's write then fails with EPIPE. Or gone part way, with a reset.
    if (round % 2) std::this_thread::sleep_for(milliseconds(20));
    if (round % 3 == 2) c.reset();
  }
  // Let the server write into the reset connections and find them gone.
  EXPECT_TRUE(wait_until([&] { return server_->counts().open == 0; }, 10'000));
  Client after(server_->port(), client_ctx_);
  ASSERT_TRUE(after.send(get("/healthz")));
  EXPECT_EQ(after.read_response().status, 200);
}

TEST_F(HttpServerTest, RequestsThatDoNotParseAreRefusedAndClosed) {
  start();
  const std::vector<std::pair<std::string, int>> cases = {
      {"GET / HTTP/1.1\r\n\r\n", 400},              // no Host
      {"BREW / HTTP/1.1\r\nHost: a\r\n\r\n", 501},  // no such method
      {"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505},   // another version
      {"GET /" + std::string(kMaxHttpTargetBytes, 'a') + " HTTP/1.1\r\nHost: a\r\n\r\n", 414},
      {"GET / HTTP/1.1\r\nHost: a\r\nContent-Length : 0\r\n\r\n", 400},  // space before the colon
  };
  for (const auto& [request, status] : cases) {
    Client c(server_->port());
    ASSERT_TRUE(c.send(request));
    const Response r = c.read_response();
    EXPECT_EQ(r.status, status) << request.substr(0, 40) << ": " << r.head;
    EXPECT_TRUE(c.closed_within(3000)) << request.substr(0, 40);
  }
  // LF alone ends lines too; HTTP/1.0 closes after its answer.
  Client c(server_->port());
  ASSERT_TRUE(c.send("GET /healthz HTTP/1.0\n\n"));
  const Response r = c.read_response();
  EXPECT_EQ(r.status, 200) << r.head;
  EXPECT_EQ(r.header("Connection"), "close");
  EXPECT_TRUE(c.closed_within(3000));
}

TEST_F(HttpServerTest, ClientCertificatesNameTheCaller) {
  make_tls(/*client_ca=*/true);
  ASSERT_TRUE(test::make_client(pki_, "reader", "/CN=reader/OU=read"));
  make_api(false, true, /*client_certificates=*/true);
  start({}, &tls_);
  ASSERT_EQ(SSL_CTX_use_certificate_file(client_ctx_, pki_.cert("reader").c_str(), SSL_FILETYPE_PEM), 1);
  ASSERT_EQ(SSL_CTX_use_PrivateKey_file(client_ctx_, pki_.key("reader").c_str(), SSL_FILETYPE_PEM), 1);
  Client c(server_->port(), client_ctx_);
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.send(get("/api/v1/workers")));
  const Response r = c.read_response();
  EXPECT_EQ(r.status, 200) << r.head << r.body;
  // Without a certificate the handshake fails: no answer.
  SSL_CTX* bare = SSL_CTX_new(TLS_client_method());
  SSL_CTX_load_verify_locations(bare, pki_.ca().c_str(), nullptr);
  {
    Client none(server_->port(), bare);
    if (none.connected()) {  // TLS 1.3: the refusal comes after the client's side finished
      none.send(get("/healthz"));
      EXPECT_EQ(none.read_response(2000).status, 0);
    }
  }
  SSL_CTX_free(bare);
}

TEST_F(HttpServerTest, StopWithConnectionsOpenIsPromptAndClosesThem) {
  start(patient());
  std::vector<std::unique_ptr<Client>> held;
  for (int i = 0; i < 50; ++i) held.push_back(std::make_unique<Client>(server_->port()));
  for (int i = 0; i < 20; ++i) {
    held.push_back(std::make_unique<Client>(server_->port()));
    ASSERT_TRUE(held.back()->send("GET / HTTP/1.1\r\n"));
  }
  Client kept(server_->port());
  ASSERT_TRUE(kept.send(get("/healthz")));
  ASSERT_EQ(kept.read_response().status, 200);
  ASSERT_TRUE(wait_until([&] { return server_->counts().open == 71; }));
  const auto t0 = SteadyClock::now();
  server_->stop();
  const double took = ms_since(t0);
  std::printf("stop() with 71 connections open: %.1f ms\n", took);
  EXPECT_LT(took, double(kHttpStopGraceMs));
  for (const auto& c : held) EXPECT_TRUE(c->closed_within(1000));
  EXPECT_TRUE(kept.closed_within(1000));
  Client late(server_->port());
  EXPECT_FALSE(late.connected());
}

// The seconds the hostile mix below runs: C960_HTTP_LOAD_SECONDS, else 10 (the default run's).
int load_seconds() {
  int n = 0;
  const char* s = std::getenv("C960_HTTP_LOAD_SECONDS");
  return s && absl::SimpleAtoi(s, &n) && n > 0 ? n : 10;
}

// The mix holds hundreds of sockets, both ends of each in this process.
void raise_descriptor_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

// Threads that run until stop(), which joins them; so does the destructor, so that a test that
// fails early leaves none running.
class Crowd {
 public:
  Crowd() = default;
  Crowd(const Crowd&) = delete;
  Crowd& operator=(const Crowd&) = delete;
  ~Crowd() { stop(); }
  // `body` runs on a thread of its own and returns soon after stopping() turns true.
  void add(std::function<void()> body) { threads_.emplace_back(std::move(body)); }
  bool stopping() const { return stop_; }
  // Waits `ms`, or less if the crowd is stopped meanwhile.
  void nap(int64_t ms) const {
    const auto end = SteadyClock::now() + milliseconds(ms);
    while (!stop_ && SteadyClock::now() < end) std::this_thread::sleep_for(milliseconds(5));
  }
  void stop() {
    stop_ = true;
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// Issue 34 item 8: the probe's hostile mix, all at once for load_seconds(): idle connections from
// ten addresses, each keeping one more than its per-address limit of 16 open (170, over the total
// of 128: those over a limit held in the health lane until closed, then opened again); heads trickled a
// byte at a time; /login and the workers page asked with 2,600 ranges (8 KB heads) and left
// unread; Accept-Encoding: br; heads that do not parse; logins with wrong tokens; big answers
// (alice's) left unread. Meanwhile a checker on its own connections asks /readyz every 100 ms on a
// new connection, and a job's results with bob's token every 500 ms on a kept one: every /readyz
// is answered 200 (each within 1 s; the 100 ms requirement is the health tests' above, on a
// quiet machine), every results answer is whole and the same, and the unsent bytes the server
// counts stay under its caps.
TEST_F(HttpServerTest, HostileMixForABoundedTimeKeepsReadyzAndResultsAnswering) {
  raise_descriptor_limit();
  add_workers(coordinator_.get(), 300);  // a workers page of about 1.3 MB
  const std::string job = finished_perft_job("0-299");
  ASSERT_FALSE(job.empty());
  make_api(true);
  HttpServerOptions o;
  o.max_connections = 128;
  o.max_connections_per_address = 16;
  o.header_timeout_ms = o.body_timeout_ms = 2000;  // the tricklers and idle ones are cut, and come back
  o.write_timeout_ms = 3000;
  o.max_queued_bytes = 16 << 20;
  o.max_queued_bytes_per_principal = 128 << 10;  // alice's unread answers reach it
  start(o);
  const int port = server_->port();
  const std::string alice = absl::StrCat("Authorization: Bearer ", kReadToken, "\r\n");
  const std::string bob = absl::StrCat("Authorization: Bearer ", kBobToken, "\r\n");
  const std::string results_path = absl::StrCat("/api/v1/jobs/", job, "/results?divide=1");
  HttpRequest results_request;
  results_request.path = absl::StrCat("/api/v1/jobs/", job, "/results");
  results_request.query = parse_form("divide=1");
  results_request.authorization = {absl::StrCat("Bearer ", kBobToken)};
  const HttpResponse want = api_->handle(results_request);
  ASSERT_EQ(want.status, 200) << want.body;
  ASSERT_GT(want.body.size(), 2 * kHttpPageBytes);  // a paged answer
  std::string ranges = "bytes=0-";
  for (int i = 0; i < 2600; ++i) ranges += ",0-";
  const std::string range = absl::StrCat("Range: ", ranges, "\r\n");

  // The checker's results connection is open before the mix begins (a dashboard's, kept).
  auto results_conn = std::make_unique<Client>(port, nullptr, "127.0.9.2");
  ASSERT_TRUE(results_conn->connected());

  enum Kind { kIdle, kTrickle, kRanges, kBrotli, kMalformed, kWrongLogin, kUnread, kKinds };
  const char* kind_names[kKinds] = {"idle",
                                    "trickled heads",
                                    "Range, unread",
                                    "br",
                                    "malformed heads",
                                    "logins with wrong tokens",
                                    "big answers unread"};
  std::atomic<int64_t> connections[kKinds] = {};
  std::vector<double> readyz_ms, results_ms;  // each written by one checker, read after stop()
  std::vector<std::string> readyz_failures, results_failures;
  int results_reconnects = 0;
  struct Quiet {  // no line per refused login; the logging is back when the test ends, however
    Quiet() { set_log_silenced(true); }
    ~Quiet() { set_log_silenced(false); }
  } quiet;
  Crowd crowd;

  for (int a = 1; a <= 10; ++a)
    crowd.add([&, a] {
      const std::string source = absl::StrCat("127.0.1.", a);
      std::vector<std::unique_ptr<Client>> held;
      crowd.nap(1000);             // the others in first: with the total full, few more get in
      while (!crowd.stopping()) {  // one more every 20 ms while at most 16: one over the limit
        std::erase_if(held, [](const std::unique_ptr<Client>& c) { return c->gone(); });
        if (held.size() <= size_t(o.max_connections_per_address)) {
          held.push_back(std::make_unique<Client>(port, nullptr, source.c_str()));
          ++connections[kIdle];
        }
        crowd.nap(20);
      }
    });
  for (int t = 1; t <= 8; ++t)
    crowd.add([&, t] {
      const std::string source = absl::StrCat("127.0.2.", t);
      while (!crowd.stopping()) {
        Client c(port, nullptr, source.c_str());
        ++connections[kTrickle];
        if (!c.send("GET /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")) crowd.nap(100);
        while (!crowd.stopping() && !c.gone() && c.send("x")) crowd.nap(100);
      }
    });
  // Keeps up to 8 connections of `request` unread from `source`, a new one every 250 ms.
  const auto unread = [&](Kind kind, const std::string& source, const std::vector<std::string>& requests) {
    std::deque<std::unique_ptr<Client>> held;
    for (size_t i = 0; !crowd.stopping(); ++i) {
      if (held.size() >= 8) held.pop_front();
      held.push_back(std::make_unique<Client>(port, nullptr, source.c_str(), true, /*receive_buffer=*/4096));
      ++connections[kind];
      held.back()->send(requests[i % requests.size()]);
      crowd.nap(250);
    }
  };
  for (int r = 1; r <= 4; ++r)
    crowd.add([&, r] {
      unread(kRanges, absl::StrCat("127.0.3.", r),
             {get("/login", range), get("/api/v1/workers?page_size=1000", alice + range)});
    });
  for (int r = 1; r <= 2; ++r)
    crowd.add([&, r] {
      unread(kUnread, absl::StrCat("127.0.7.", r),
             {get("/api/v1/workers?page_size=1000", alice), get(results_path, alice)});
    });
  // Asks `requests` in turn on a kept connection from `source`, reading each answer.
  const auto ask = [&](Kind kind, const std::string& source, const std::vector<std::string>& requests) {
    std::unique_ptr<Client> c;
    for (size_t i = 0; !crowd.stopping(); ++i) {
      if (!c || c->gone()) {
        c = std::make_unique<Client>(port, nullptr, source.c_str());
        ++connections[kind];
      }
      if (!c->send(requests[i % requests.size()]) || c->read_response(2000).status == 0) c.reset();
      crowd.nap(20);
    }
  };
  crowd.add([&] {
    ask(kBrotli, "127.0.4.1",
        {get("/login", "Accept-Encoding: br\r\n"), get("/api/v1/jobs", alice + "Accept-Encoding: br\r\n")});
  });
  crowd.add([&] {
    ask(kWrongLogin, "127.0.6.1", {login_post("token=c960_wrong-token-for-tests-cccccccccccccccccccccccc")});
  });
  crowd.add([&] {
    const std::vector<std::string> malformed = {
        "GET / HTTP/1.1\r\n\r\n",
        "BREW / HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET / HTTP/2.0\r\nHost: a\r\n\r\n",
        "GET /" + std::string(kMaxHttpTargetBytes, 'a') + " HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nContent-Length : 0\r\n\r\n",
        "GET / HTTP/1.1\rHost: a\r\n\r\n",
        "POST /login HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        get("/", absl::StrCat("X-Big: ", std::string(kMaxHttpHeadBytes, 'a'), "\r\n")),
    };
    for (size_t i = 0; !crowd.stopping(); ++i) {
      Client c(port, nullptr, "127.0.5.1");
      ++connections[kMalformed];
      if (c.send(malformed[i % malformed.size()])) c.read_response(2000);
      crowd.nap(20);
    }
  });

  // The checker.
  crowd.add([&] {
    while (!crowd.stopping()) {
      const auto t0 = SteadyClock::now();
      Client c(port, nullptr, "127.0.9.1");
      const Response r = c.send(get("/readyz")) ? c.read_response(5000) : Response{};
      readyz_ms.push_back(ms_since(t0));
      if (r.status != 200 || r.body != "ready\n")
        readyz_failures.push_back(
            absl::StrCat("after ", readyz_ms.size() - 1, " probes: status ", r.status, " ", r.head));
      crowd.nap(100);
    }
  });
  crowd.add([&] {
    while (!crowd.stopping()) {
      const auto t0 = SteadyClock::now();
      if (results_conn->gone()) {  // closed by the server (after kHttpMaxRequestsPerConnection)
        results_conn = std::make_unique<Client>(port, nullptr, "127.0.9.2");
        ++results_reconnects;
      }
      const Response r = results_conn->send(get(results_path, bob)) ? results_conn->read_response(5000) : Response{};
      results_ms.push_back(ms_since(t0));
      if (r.status != 200 || r.body != want.body)
        results_failures.push_back(absl::StrCat("request ", results_ms.size(), ": status ", r.status, ", ",
                                                r.body.size(), " bytes of ", want.body.size()));
      crowd.nap(500);
    }
  });

  const int seconds = load_seconds();
  int64_t most_queued = 0, most_alice = 0, most_bob = 0, most_open = 0;
  const auto end = SteadyClock::now() + std::chrono::seconds(seconds);
  while (SteadyClock::now() < end) {
    const HttpServer::Counts now = server_->counts();
    most_queued = std::max(most_queued, now.queued_bytes);
    most_open = std::max(most_open, now.open);
    most_alice = std::max(most_alice, server_->principal_bytes("alice"));
    most_bob = std::max(most_bob, server_->principal_bytes("bob"));
    std::this_thread::sleep_for(milliseconds(10));
  }
  crowd.stop();

  const HttpServer::Counts counts = server_->counts();
  std::printf("hostile mix for %d s; connections opened:", seconds);
  for (int k = 0; k < kKinds; ++k) std::printf(" %s %lld;", kind_names[k], static_cast<long long>(connections[k]));
  std::printf(
      "\nserver: %lld admitted, %lld refused over the total and %lld over the per-address limit (health lane "
      "included), %lld closed in the health lane for newer ones, %lld cut at a deadline, %lld answered; 503 over "
      "the unsent bytes %lld, 429 over a principal's %lld; the most open %lld\n",
      static_cast<long long>(counts.accepted), static_cast<long long>(counts.refused),
      static_cast<long long>(counts.refused_per_address), static_cast<long long>(counts.evicted),
      static_cast<long long>(counts.timed_out), static_cast<long long>(counts.answered),
      static_cast<long long>(counts.refused_queued), static_cast<long long>(counts.refused_principal),
      static_cast<long long>(most_open));
  std::printf("unsent bytes, the most counted: in all %lld (cap %zu), alice %lld, bob %lld (cap %zu each)\n",
              static_cast<long long>(most_queued), o.max_queued_bytes, static_cast<long long>(most_alice),
              static_cast<long long>(most_bob), o.max_queued_bytes_per_principal);
  const auto summary = [](std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    return ms.empty() ? std::string("none")
                      : absl::StrFormat("median %.1f ms, 99th %.1f ms, slowest %.1f ms", ms[ms.size() / 2],
                                        ms[ms.size() * 99 / 100], ms.back());
  };
  std::printf("/readyz: %zu probes, %s\n", readyz_ms.size(), summary(readyz_ms).c_str());
  std::printf("results (%zu bytes, bob): %zu asked, %s; %d reconnections\n", want.body.size(), results_ms.size(),
              summary(results_ms).c_str(), results_reconnects);

  // The mix did what it is for: the limits were full and the caps reached.
  EXPECT_GE(most_open, o.max_connections);
  EXPECT_GT(counts.refused, 0);
  EXPECT_GT(counts.evicted, 0);
  EXPECT_GT(counts.timed_out, 0);
  EXPECT_GT(counts.refused_principal, 0);
  // The checker was answered, every time.
  ASSERT_GE(readyz_ms.size(), size_t(seconds));
  EXPECT_TRUE(readyz_failures.empty()) << readyz_failures.size() << " failed, the first " << readyz_failures[0];
  EXPECT_LT(*std::max_element(readyz_ms.begin(), readyz_ms.end()), 1000);
  EXPECT_GE(results_ms.size(), size_t(seconds));
  EXPECT_TRUE(results_failures.empty()) << results_failures.size() << " failed, the first " << results_failures[0];
  // Under the caps (a principal's is checked before its request's answer is made: kHttpThreads
  // answers being made at once may go past it).
  EXPECT_LT(most_queued, int64_t(o.max_queued_bytes));
  EXPECT_EQ(counts.refused_queued, 0);
  EXPECT_LE(most_alice, int64_t(o.max_queued_bytes_per_principal) + kHttpThreads * int64_t(want.body.size()));
  // Everything it started is gone with it.
  results_conn.reset();
  EXPECT_TRUE(wait_until([&] { return server_->counts().queued_bytes == 0; }, 10'000));
}

}  // namespace
}  // namespace c960::cluster
