// libFuzzer target: bytes as a client sends them, through the coordinator's HTTP side without
// sockets, as the server takes them (coordinator/http_server.cpp): the head's end found
// (find_head_end), the head parsed once (parse_head) or refused, the request routed and answered
// by HttpApi::respond (with tokens and without authentication), the answer serialized, its pages
// made and framed. Checked on every input: the answer's head is well formed (a status line, no
// header split by a handler's text), a refusal is a 4xx or 5xx, a paged answer ends.
// Built and run by tests/fuzz/run.sh (clang++ with -fsanitize=fuzzer,address,undefined).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cluster/log.h"
#include "coordinator/clock.h"
#include "coordinator/coordinator.h"
#include "coordinator/http_api.h"
#include "coordinator/http_wire.h"
#include "coordinator/store.h"

namespace c960::cluster {
namespace {

constexpr char kToken[] = "c960_read-token-for-fuzzing-aaaaaaaaaaaaaaaaaaaaaaa";

struct Env {
  FakeClock clock;
  std::unique_ptr<Store> store;
  std::unique_ptr<Coordinator> coordinator;
  std::unique_ptr<HttpApi> open, tokens;

  Env() {
    set_log_silenced(true);  // a line per refused login costs more than the request
    store = std::move(*Store::open(":memory:"));
    coordinator = std::make_unique<Coordinator>(store.get(), &clock, CoordinatorOptions{30'000});
    if (!coordinator->load().ok()) std::abort();
    // A job and a worker, so that the job and worker paths have something to answer.
    v1::SubmitJobRequest submit;
    submit.set_request_id("fuzz");
    submit.mutable_spec()->set_verify(v1::VERIFY_MODE_OFF);
    submit.mutable_spec()->mutable_perft()->set_depth(1);
    submit.mutable_spec()->mutable_perft()->set_start_positions("0,518");
    if (!coordinator->submit(Caller::local(), submit).ok()) std::abort();
    v1::HelloRequest hello;
    hello.set_name("w1");
    hello.set_threads(1);
    hello.add_capabilities("perft");
    hello.set_protocol_version(kProtocolVersion);
    if (!coordinator->hello(Caller::local(), hello).ok()) std::abort();
    HttpOptions o;
    o.listen_host = "127.0.0.1";
    open = std::make_unique<HttpApi>(coordinator.get(), store.get(), nullptr, o);
    open->set_ready(true);
    auto set = TokenSet::parse(absl::StrCat("read alice ", token_hash(kToken), "\n"), "tokens");
    if (!set.ok()) std::abort();
    o.tokens = std::make_shared<TokenTable>(std::move(*set));
    tokens = std::make_unique<HttpApi>(coordinator.get(), store.get(), nullptr, o);
  }
};

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz: %s\n", what);
    std::abort();
  }
}

void answer(const HttpApi& api, const WireRequest& wire, absl::string_view body) {
  HttpRequest req = wire.request;
  req.body = std::string(body);
  req.local_address = "127.0.0.1";
  req.local_port = 8080;
  req.peer_address = "127.0.0.1";
  HttpResponse resp = api.respond(req);
  WireFraming framing;
  framing.gzip = wire.gzip;
  framing.http10 = wire.http10;
  framing.head_only = req.method == "HEAD";
  std::unique_ptr<GzipStream> gzip;
  std::string out = serialize_response(resp, framing, &gzip);
  check(absl::StartsWith(out, "HTTP/1.1 ") && out.size() > 12, "no status line");
  const size_t head_end = out.find("\r\n\r\n");
  check(head_end != std::string::npos, "no end of the head");
  // Every line of the head ends in CRLF: no handler's text split a header.
  const absl::string_view head(out.data(), head_end);
  for (size_t i = 0; i < head.size(); ++i) {
    if (head[i] == '\r') {
      check(i + 1 < head.size() && head[i + 1] == '\n', "a bare CR in the head");
      ++i;
    } else {
      check(head[i] != '\n', "a bare LF in the head");
    }
  }
  if (resp.pages && !framing.head_only) {
    int pages = 0;
    absl::Status error;
    for (bool more = true; more; ++pages) {
      std::string page;
      more = resp.pages->next(&page, &error);
      append_page(&out, page, !more, !wire.http10, gzip.get());
      check(pages < 100'000, "a paged answer does not end");
    }
  }
}

}  // namespace
}  // namespace c960::cluster

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace c960::cluster;
  static Env* env = new Env();
  const absl::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t end = find_head_end(in.substr(0, kMaxHttpHeadBytes));
  if (end == absl::string_view::npos) return 0;
  WireRequest wire;
  WireRefusal refusal;
  if (!parse_head(in.substr(0, end), WireLimits(), &wire, &refusal)) {
    check(refusal.status >= 400 && refusal.status < 600, "a refusal that is not 4xx or 5xx");
    check(absl::StartsWith(canned_response(refusal.status, refusal.message), absl::StrCat("HTTP/1.1 ", refusal.status)),
          "a refusal's status line");
    return 0;
  }
  check(!wire.request.path.empty(), "an empty path");
  check(wire.body_bytes <= kMaxHttpBodyBytes, "a body over the limit");
  const absl::string_view body = in.substr(end, wire.body_bytes);
  answer(*env->open, wire, body);
  answer(*env->tokens, wire, body);
  return 0;
}
