// HTTP/1.1 on the wire, without sockets: where a request's head ends, the head parsed once into
// an HttpRequest (or refused with the status that says why), and a response's bytes. The server
// (http_server.h) frames each request with these and routes it with HttpApi; tests and the fuzz
// target (tests/fuzz/) call them directly.
//
// What a request may be (RFC 9112, strictly where leniency lets two parsers disagree):
//   request line   METHOD SP TARGET SP HTTP/1.x, each line ending in CRLF or LF; a bare CR: 400
//   method         GET HEAD POST PUT DELETE OPTIONS PATCH TRACE CONNECT (routed: 404 or 405);
//                  another token 501, anything else 400
//   target         origin-form "/path?query", or absolute-form "http(s)://host/path?query"
//                  (its host then stands for Host); over max_target bytes 414; bytes outside
//                  visible ASCII, a fragment, "*", authority-form: 400. The path is decoded
//                  (%XX; '+' stays), the query as a form ('+' a space, %XX a byte: parse_form);
//                  a '%' without two hex digits stays as it is.
//   version        HTTP/1.1 or HTTP/1.0; another HTTP/d.d 505
//   header lines   NAME ":" OWS VALUE OWS; names case-insensitive; whitespace before the colon,
//                  control bytes in a value, a name that is not a token: 400; a line over
//                  max_header_line bytes or more than max_headers lines: 431. A continuation
//                  line (obs-fold) joins its value with a space.
//   Host           one, required in HTTP/1.1 (else 400)
//   Content-Length one number (repeated: the same number), at most max_body (else 413)
//   Transfer-Encoding  chunked 411 (send a Content-Length), another 501
//   Content-Encoding   other than identity 415 (no compressed bodies)
//   Range, If-Range    ignored: every answer is its whole representation, once, 200
//   Accept-Encoding    only gzip counts (with a weight above 0)
//   Authorization      every one kept (HttpApi refuses more than one)
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "cluster/config.h"
#include "coordinator/http_api.h"

struct z_stream_s;

namespace c960::cluster {

struct WireLimits {
  size_t max_target_bytes = kMaxHttpTargetBytes;
  size_t max_header_line_bytes = kMaxHttpHeaderLineBytes;
  size_t max_headers = kMaxHttpHeaderLines;
  size_t max_body_bytes = kMaxHttpBodyBytes;
};

// One request's head, parsed.
struct WireRequest {
  HttpRequest request;      // method, decoded path and query, the headers HttpApi reads
  bool http10 = false;      // HTTP/1.0 (no chunked answers; closes unless keep-alive is asked)
  bool keep_alive = true;   // the client did not say Connection: close
  bool gzip = false;        // Accept-Encoding takes gzip
  uint64_t body_bytes = 0;  // Content-Length
  bool health = false;      // GET or HEAD of /healthz or /readyz: the health lane
};

// A request refused before any handler: its status and why.
struct WireRefusal {
  int status = 400;
  std::string message;
};

// Where the head at the start of `buffer` ends: the offset just past its empty line (CRLF or LF),
// or npos while it has not come whole. `from`: where the previous search stopped (the search
// resumes a little before it).
size_t find_head_end(absl::string_view buffer, size_t from = 0);

// Parses `head` (the request line through the empty line). False with *refusal set when the
// request is refused (the connection's bytes after it are not to be trusted: close it).
bool parse_head(absl::string_view head, const WireLimits& limits, WireRequest* out, WireRefusal* refusal);

// The reason phrase of a status ("Error" for one this server does not send).
const char* reason_phrase(int status);

// Whether an answer of this type and size is worth compressing with gzip.
bool compressible(absl::string_view content_type, size_t bytes);

// How an answer is framed on this connection.
struct WireFraming {
  bool head_only = false;  // HEAD: the head alone
  bool close = false;      // Connection: close, else Keep-Alive with these figures
  bool http10 = false;
  bool gzip = false;  // the request takes gzip (compressible() decides per answer)
  int64_t keep_alive_timeout_s = kHttpIdleTimeoutMs / 1000;
  int keep_alive_max = kHttpMaxRequestsPerConnection;
};

// A response's bytes. A whole answer (resp.pages null): head and body, gzip-compressed where the
// request takes it and compressible() says so. A paged one: the head (chunked in HTTP/1.1; in
// HTTP/1.0 without a length, the end of the answer being the connection's) and resp.body as its
// first part; `*gzip` gets the compressor the rest goes through (null: none).
// Header lines with a CR or LF in them are left out (no handler's text splits a header).
std::string serialize_response(const HttpResponse& resp, const WireFraming& framing,
                               std::unique_ptr<class GzipStream>* gzip = nullptr);

// A paged answer's further part, framed (a chunk in HTTP/1.1), through the compressor if any;
// `last`: the answer's end too.
void append_page(std::string* out, absl::string_view page, bool last, bool chunked, GzipStream* gzip);

// A refusal of the server's own (before any handler), closing the connection; `extra`: more header
// lines, each ending in CRLF.
std::string canned_response(int status, const std::string& message, const std::string& extra = "");

// gzip over a stream of pages (zlib), each page flushed so the reader gets it at once.
class GzipStream {
 public:
  GzipStream();
  ~GzipStream();
  GzipStream(const GzipStream&) = delete;
  GzipStream& operator=(const GzipStream&) = delete;
  // Appends the compressed bytes of `in` to *out; `finish`: the end of the stream.
  void add(absl::string_view in, bool finish, std::string* out);
  // About what zlib's state takes in memory (counted with a connection's unsent bytes).
  static constexpr size_t kStateBytes = 280 << 10;

 private:
  std::unique_ptr<z_stream_s> z_;
  bool ok_ = false;
};

// One whole body compressed with gzip.
std::string gzip_compress(absl::string_view in);

}  // namespace c960::cluster
