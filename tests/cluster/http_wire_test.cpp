// HTTP/1.1 on the wire without sockets (coordinator/http_wire.h): where a head ends, a head
// parsed once (the path and query decoded, names case-insensitive, every Authorization kept), the
// refusals with their statuses, and responses' bytes (reason phrases, lengths, keep-alive, HEAD,
// gzip, chunked pages).
#include "coordinator/http_wire.h"

#include <zlib.h>

#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace c960::cluster {
namespace {

WireRequest parsed(const std::string& head) {
  WireRequest w;
  WireRefusal r;
  EXPECT_TRUE(parse_head(head, WireLimits(), &w, &r)) << head << ": " << r.status << " " << r.message;
  return w;
}

int refused(const std::string& head, const WireLimits& limits = WireLimits()) {
  WireRequest w;
  WireRefusal r;
  if (parse_head(head, limits, &w, &r)) return 0;
  EXPECT_FALSE(r.message.empty());
  return r.status;
}

std::string gunzip(const std::string& in) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = uInt(in.size());
  std::string out;
  char buf[4096];
  int r = Z_OK;
  do {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    r = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  } while (r == Z_OK);
  EXPECT_EQ(r, Z_STREAM_END);
  inflateEnd(&z);
  return out;
}

// The body of a chunked answer, its chunks joined; "" with *ok false when the framing is wrong.
std::string dechunk(absl::string_view s, bool* ok) {
  std::string out;
  *ok = false;
  for (;;) {
    const size_t eol = s.find("\r\n");
    if (eol == absl::string_view::npos) return out;
    uint64_t n = 0;
    if (!absl::SimpleHexAtoi(s.substr(0, eol), &n)) return out;
    s.remove_prefix(eol + 2);
    if (n == 0) {
      *ok = s == "\r\n";
      return out;
    }
    if (s.size() < n + 2 || s.substr(n, 2) != "\r\n") return out;
    out.append(s.data(), n);
    s.remove_prefix(n + 2);
  }
}

TEST(HttpWireTest, FindsTheHeadsEndWithCrlfOrLf) {
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\r\nHost: a\r\n\r\nBODY"), 27u);
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\nHost: a\n\nBODY"), 24u);
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\r\nHost: a\r\n"), absl::string_view::npos);
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\r\nHost: a\r\n\r"), absl::string_view::npos);
  // Resumed where the last search stopped, the end split across the reads.
  const std::string all = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
  for (size_t cut = 0; cut < all.size(); ++cut) EXPECT_EQ(find_head_end(all, cut), all.size()) << cut;
}

TEST(HttpWireTest, ParsesARequestOnce) {
  const WireRequest w = parsed(
      "GET /api/v1/jobs/a%2Fb+c/results?divide=1&x=a+b%26c&empty&y=%zz HTTP/1.1\r\n"
      "host: example.test:8080\r\n"
      "AUTHORIZATION: Bearer one\r\n"
      "Authorization: Bearer two\r\n"
      "Cookie: a=1\r\n"
      "cookie: b=2\r\n"
      "Origin: https://example.test\r\n"
      "Sec-Fetch-Site: same-origin\r\n"
      "X-Requested-With: c960-dashboard\r\n"
      "Content-Type: text/plain\r\n"
      "Accept-Encoding: br, gzip;q=0.5\r\n"
      "Range: bytes=0-,0-,0-\r\n"
      "\r\n");
  const HttpRequest& r = w.request;
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.path, "/api/v1/jobs/a/b+c/results");  // %XX decoded, '+' kept in a path
  EXPECT_EQ(r.query.find("divide")->second, "1");
  EXPECT_EQ(r.query.find("x")->second, "a b&c");  // '+' a space in a query
  EXPECT_EQ(r.query.find("empty")->second, "");
  EXPECT_EQ(r.query.find("y")->second, "%zz");  // no hex digits: as it is
  EXPECT_EQ(r.host, "example.test:8080");
  EXPECT_EQ(r.authorization, (std::vector<std::string>{"Bearer one", "Bearer two"}));
  EXPECT_EQ(r.cookie, "a=1; b=2");
  EXPECT_EQ(r.origin, "https://example.test");
  EXPECT_EQ(r.fetch_site, "same-origin");
  EXPECT_EQ(r.requested_with, "c960-dashboard");
  EXPECT_EQ(r.content_type, "text/plain");
  EXPECT_TRUE(w.gzip);
  EXPECT_TRUE(w.keep_alive);
  EXPECT_FALSE(w.http10);
  EXPECT_FALSE(w.health);
  EXPECT_EQ(w.body_bytes, 0u);
}

TEST(HttpWireTest, HeadLinesFoldsKeepAliveAndHealth) {
  // LF line ends; a folded value joined with a space; the absolute form's host is the Host.
  WireRequest w = parsed(
      "POST http://coordinator:80/login?next=%2F HTTP/1.1\nHost: other\nX-A: 1\n"
      "Origin: http://\n  coordinator\nContent-Length: 5\nContent-Length: 5\n\n");
  EXPECT_EQ(w.request.method, "POST");
  EXPECT_EQ(w.request.path, "/login");
  EXPECT_EQ(w.request.query.find("next")->second, "/");
  EXPECT_EQ(w.request.host, "coordinator:80");
  EXPECT_EQ(w.request.origin, "http:// coordinator");
  EXPECT_EQ(w.body_bytes, 5u);
  EXPECT_FALSE(parsed("GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Close\r\n\r\n").keep_alive);
  EXPECT_FALSE(parsed("GET / HTTP/1.0\r\n\r\n").keep_alive);
  w = parsed("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
  EXPECT_TRUE(w.keep_alive);
  EXPECT_TRUE(w.http10);
  EXPECT_TRUE(parsed("HEAD /readyz HTTP/1.1\r\nHost: a\r\n\r\n").health);
  EXPECT_TRUE(parsed("GET /health%7a?x=1 HTTP/1.1\r\nHost: a\r\n\r\n").health);
  EXPECT_FALSE(parsed("POST /healthz HTTP/1.1\r\nHost: a\r\n\r\n").health);
  EXPECT_FALSE(parsed("GET / HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip;q=0, br\r\n\r\n").gzip);
}

TEST(HttpWireTest, RefusalsHaveTheirStatus) {
  const std::string host = "Host: a\r\n";
  EXPECT_EQ(refused("GET  / HTTP/1.1\r\n" + host + "\r\n"), 400);
  EXPECT_EQ(refused("GET / HTTP/1.1 x\r\n" + host + "\r\n"), 400);
  EXPECT_EQ(refused("GET /\r\n\r\n"), 400);
  EXPECT_EQ(refused("\r\n"), 400);
  EXPECT_EQ(refused("GET / HTTP/1.1\r\n\r\n"), 400);                           // no Host
  EXPECT_EQ(refused("GET / HTTP/1.1\r\n" + host + host + "\r\n"), 400);        // two
  EXPECT_EQ(refused("GET / HTTP/1.1\r\nHost : a\r\n\r\n"), 400);               // space before ':'
  EXPECT_EQ(refused("GET / HTTP/1.1\r\n" + host + "X-A\r\n\r\n"), 400);        // no colon
  EXPECT_EQ(refused("GET / HTTP/1.1\r\n" + host + "X-A: a\rb\r\n\r\n"), 400);  // bare CR
  EXPECT_EQ(refused("GET / HTTP/1.1\r\n" + host + std::string("X-A: a\0b\r\n\r\n", 12)), 400);
  EXPECT_EQ(refused("GET / HTTP/1.1\r\n  folded\r\n" + host + "\r\n"), 400);  // nothing to fold into
  EXPECT_EQ(refused("GET /a#b HTTP/1.1\r\n" + host + "\r\n"), 400);
  EXPECT_EQ(refused("GET /\xff HTTP/1.1\r\n" + host + "\r\n"), 400);
  EXPECT_EQ(refused("OPTIONS * HTTP/1.1\r\n" + host + "\r\n"), 400);
  EXPECT_EQ(refused("CONNECT a:443 HTTP/1.1\r\n" + host + "\r\n"), 400);
  EXPECT_EQ(refused("GET http://u@a/ HTTP/1.1\r\n" + host + "\r\n"), 400);
  EXPECT_EQ(refused("G(T / HTTP/1.1\r\n" + host + "\r\n"), 400);
  EXPECT_EQ(refused("BREW / HTTP/1.1\r\n" + host + "\r\n"), 501);
  EXPECT_EQ(refused("get / HTTP/1.1\r\n" + host + "\r\n"), 501);  // methods are case-sensitive
  EXPECT_EQ(refused("GET / HTTP/2.0\r\n" + host + "\r\n"), 505);
  EXPECT_EQ(refused("GET / HTTP/1.2\r\n" + host + "\r\n"), 505);
  EXPECT_EQ(refused("GET / HTTP/1\r\n" + host + "\r\n"), 400);
  EXPECT_EQ(refused("GET / http/1.1\r\n" + host + "\r\n"), 400);
  EXPECT_EQ(refused(absl::StrCat("GET /", std::string(kMaxHttpTargetBytes, 'a'), " HTTP/1.1\r\n", host, "\r\n")), 414);
  EXPECT_EQ(
      refused(absl::StrCat("GET / HTTP/1.1\r\n", host, "X-A: ", std::string(kMaxHttpHeaderLineBytes, 'a'), "\r\n\r\n")),
      431);
  std::string many = "GET / HTTP/1.1\r\n" + host;
  for (size_t i = 0; i < kMaxHttpHeaderLines; ++i) many += "X-A: 1\r\n";
  EXPECT_EQ(refused(many + "\r\n"), 431);
  EXPECT_EQ(refused("POST / HTTP/1.1\r\n" + host + "Content-Length: 1\r\nContent-Length: 2\r\n\r\n"), 400);
  EXPECT_EQ(refused("POST / HTTP/1.1\r\n" + host + "Content-Length: +1\r\n\r\n"), 400);
  EXPECT_EQ(refused("POST / HTTP/1.1\r\n" + host + "Content-Length: 99999999999999999999\r\n\r\n"), 400);
  EXPECT_EQ(refused(absl::StrCat("POST / HTTP/1.1\r\n", host, "Content-Length: ", kMaxHttpBodyBytes + 1, "\r\n\r\n")),
            413);
  EXPECT_EQ(refused("POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: gzip, chunked\r\n\r\n"), 411);
  EXPECT_EQ(refused("POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: gzip\r\n\r\n"), 501);
  EXPECT_EQ(refused("POST / HTTP/1.1\r\n" + host + "Content-Encoding: gzip\r\n\r\n"), 415);
  // Just under the limits: parsed.
  EXPECT_EQ(refused(absl::StrCat("GET /", std::string(kMaxHttpTargetBytes - 1, 'a'), " HTTP/1.1\r\n", host, "\r\n")),
            0);
  EXPECT_EQ(refused(absl::StrCat("POST / HTTP/1.1\r\n", host, "Content-Length: ", kMaxHttpBodyBytes, "\r\n\r\n")), 0);
}

TEST(HttpWireTest, ResponsesHaveReasonLengthAndConnection) {
  HttpResponse r;
  r.status = 404;
  r.body = "not found\n";
  r.headers.emplace_back("Allow", "GET, HEAD");
  r.headers.emplace_back("X-Split", "a\r\nSet-Cookie: evil=1");  // left out
  WireFraming f;
  std::string out = serialize_response(r, f);
  EXPECT_TRUE(absl::StartsWith(out, "HTTP/1.1 404 Not Found\r\n")) << out;
  EXPECT_TRUE(absl::StrContains(out, "\r\nContent-Length: 10\r\n")) << out;
  EXPECT_TRUE(absl::StrContains(out, "\r\nContent-Type: text/plain; charset=utf-8\r\n")) << out;
  EXPECT_TRUE(absl::StrContains(out, "\r\nAllow: GET, HEAD\r\n")) << out;
  EXPECT_TRUE(absl::StrContains(out, "\r\nKeep-Alive: timeout=5, max=1000\r\n")) << out;
  EXPECT_FALSE(absl::StrContains(out, "evil")) << out;
  EXPECT_TRUE(absl::EndsWith(out, "\r\n\r\nnot found\n")) << out;
  f.close = true;
  f.head_only = true;
  out = serialize_response(r, f);
  EXPECT_TRUE(absl::StrContains(out, "\r\nConnection: close\r\n")) << out;
  EXPECT_TRUE(absl::StrContains(out, "\r\nContent-Length: 10\r\n")) << out;  // what GET would send
  EXPECT_TRUE(absl::EndsWith(out, "\r\n\r\n")) << out;
  f = WireFraming();
  f.http10 = true;
  out = serialize_response(r, f);
  EXPECT_TRUE(absl::StrContains(out, "\r\nConnection: keep-alive\r\n")) << out;
  EXPECT_TRUE(absl::StartsWith(canned_response(431, "too big"), "HTTP/1.1 431 Request Header Fields Too Large\r\n"));
  EXPECT_STREQ(reason_phrase(429), "Too Many Requests");
}

TEST(HttpWireTest, GzipOnlyForCompressibleAnswersLargeEnough) {
  HttpResponse r;
  r.content_type = "application/json";
  for (int i = 0; i < 200; ++i) absl::StrAppend(&r.body, "{\"n\":", i, "},");
  WireFraming f;
  f.gzip = true;
  std::string out = serialize_response(r, f);
  const size_t head = out.find("\r\n\r\n") + 4;
  EXPECT_TRUE(absl::StrContains(out.substr(0, head), "Content-Encoding: gzip\r\n")) << out.substr(0, head);
  EXPECT_TRUE(absl::StrContains(out.substr(0, head), "Vary: Accept-Encoding\r\n"));
  EXPECT_TRUE(absl::StrContains(out.substr(0, head), absl::StrCat("Content-Length: ", out.size() - head, "\r\n")));
  EXPECT_EQ(gunzip(out.substr(head)), r.body);
  f.gzip = false;
  EXPECT_FALSE(absl::StrContains(serialize_response(r, f), "Content-Encoding"));
  f.gzip = true;
  r.content_type = "image/png";
  EXPECT_FALSE(absl::StrContains(serialize_response(r, f), "Content-Encoding"));
  r.content_type = "text/plain";
  r.body = "ok\n";  // too small to gain
  EXPECT_FALSE(absl::StrContains(serialize_response(r, f), "Content-Encoding"));
  EXPECT_TRUE(compressible("text/csv; charset=utf-8", kHttpGzipMinBytes));
  EXPECT_TRUE(compressible("application/x-chess-pgn", kHttpGzipMinBytes));
  EXPECT_FALSE(compressible("application/octet-stream", kHttpGzipMinBytes));
}

// A paged answer: chunks in HTTP/1.1 (through one gzip stream when asked), the bytes as they are
// and the connection's end in HTTP/1.0.
TEST(HttpWireTest, PagedAnswersAreChunked) {
  const std::vector<std::string> pages = {"{\"a\":[", std::string(3000, 'x'), "", std::string(5000, 'y'), "]}\n"};
  std::string whole;
  for (const std::string& p : pages) whole += p;
  for (bool gzip : {false, true}) {
    HttpResponse r;
    r.content_type = "application/json";
    r.body = pages[0];
    r.pages = text_pages("unused");  // only its presence matters here
    WireFraming f;
    f.gzip = gzip;
    std::unique_ptr<GzipStream> z;
    std::string out = serialize_response(r, f, &z);
    EXPECT_EQ(z != nullptr, gzip);
    for (size_t i = 1; i < pages.size(); ++i) append_page(&out, pages[i], i + 1 == pages.size(), true, z.get());
    const size_t head = out.find("\r\n\r\n") + 4;
    EXPECT_TRUE(absl::StrContains(out.substr(0, head), "Transfer-Encoding: chunked\r\n")) << out.substr(0, head);
    EXPECT_FALSE(absl::StrContains(out.substr(0, head), "Content-Length"));
    bool ok = false;
    const std::string body = dechunk(absl::string_view(out).substr(head), &ok);
    EXPECT_TRUE(ok) << gzip;
    EXPECT_EQ(gzip ? gunzip(body) : body, whole) << gzip;
  }
  HttpResponse r;
  r.body = pages[0];
  r.pages = text_pages("unused");
  WireFraming f;
  f.http10 = true;
  std::string out = serialize_response(r, f);
  append_page(&out, pages[1], true, false, nullptr);
  EXPECT_TRUE(absl::StrContains(out, "\r\nConnection: close\r\n")) << out;
  EXPECT_FALSE(absl::StrContains(out, "Transfer-Encoding"));
  EXPECT_TRUE(absl::EndsWith(out, "\r\n\r\n" + pages[0] + pages[1]));
}

TEST(HttpWireTest, TextPagesHandOutPagesAndCountWhatTheyHold) {
  const std::string text(kHttpPageBytes * 2 + 10, 'p');
  HttpResponse r;
  r.pages = text_pages(text);
  EXPECT_GE(r.pages->held_bytes(), text.size());
  std::string out;
  absl::Status error;
  EXPECT_TRUE(r.pages->next(&out, &error));
  EXPECT_EQ(out.size(), kHttpPageBytes);
  EXPECT_TRUE(r.pages->next(&out, &error));
  EXPECT_FALSE(r.pages->next(&out, &error));
  EXPECT_EQ(out, text);
  EXPECT_EQ(r.pages->held_bytes(), 0u);
  EXPECT_TRUE(error.ok());
}

}  // namespace
}  // namespace c960::cluster
