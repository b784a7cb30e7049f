#include "coordinator/http_wire.h"

#include <zlib.h>

#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace c960::cluster {
namespace {

// RFC 9110's tchar: the bytes of a method or a header name.
bool is_tchar(char c) {
  return absl::ascii_isalnum(c) || (c != 0 && absl::string_view("!#$%&'*+-.^_`|~").find(c) != absl::string_view::npos);
}
bool is_token(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_tchar(c)) return false;
  return true;
}

// A header value's bytes: no control byte but the tab.
bool is_field_value(absl::string_view s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return false;
  }
  return true;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = absl::ascii_tolower(c);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// %XX decoded; '+' and a '%' without two hex digits stay as they are.
std::string decode_path(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    int hi = 0, lo = 0;
    if (s[i] == '%' && i + 2 < s.size() && (hi = hex_digit(s[i + 1])) >= 0 && (lo = hex_digit(s[i + 2])) >= 0) {
      out += char(hi * 16 + lo);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// Whether an Accept-Encoding value accepts gzip: "gzip" (or "x-gzip") with a weight above 0.
bool accepts_gzip(absl::string_view value) {
  for (absl::string_view item : absl::StrSplit(value, ',')) {
    std::vector<absl::string_view> parts = absl::StrSplit(item, ';');
    const absl::string_view coding = absl::StripAsciiWhitespace(parts[0]);
    if (!absl::EqualsIgnoreCase(coding, "gzip") && !absl::EqualsIgnoreCase(coding, "x-gzip")) continue;
    double q = 1;
    for (size_t i = 1; i < parts.size(); ++i) {
      const absl::string_view p = absl::StripAsciiWhitespace(parts[i]);
      if (p.size() > 2 && absl::EqualsIgnoreCase(p.substr(0, 2), "q=") && !absl::SimpleAtod(p.substr(2), &q)) q = 0;
    }
    if (q > 0) return true;
  }
  return false;
}

bool refuse(WireRefusal* r, int status, std::string message) {
  r->status = status;
  r->message = std::move(message);
  return false;
}

constexpr absl::string_view kMethods[] = {"GET",     "HEAD",  "POST",  "PUT",    "DELETE",
                                          "OPTIONS", "PATCH", "TRACE", "CONNECT"};

}  // namespace

size_t find_head_end(absl::string_view buffer, size_t from) {
  // The empty line after a line's LF: "\n\r\n" or "\n\n". Resume two bytes back, where such a
  // sequence may have begun.
  size_t i = from >= 2 ? from - 2 : 0;
  for (;;) {
    i = buffer.find('\n', i);
    if (i == absl::string_view::npos || i + 1 >= buffer.size()) return absl::string_view::npos;
    if (buffer[i + 1] == '\n') return i + 2;
    if (buffer[i + 1] == '\r') {
      if (i + 2 >= buffer.size()) return absl::string_view::npos;
      if (buffer[i + 2] == '\n') return i + 3;
    }
    ++i;
  }
}

bool parse_head(absl::string_view head, const WireLimits& limits, WireRequest* out, WireRefusal* refusal) {
  *out = WireRequest();
  HttpRequest& req = out->request;
  // Lines, each without its LF and the CR before it; any other CR is refused.
  std::vector<absl::string_view> lines;
  for (size_t pos = 0; pos < head.size();) {
    size_t eol = head.find('\n', pos);
    if (eol == absl::string_view::npos) eol = head.size();
    absl::string_view line = head.substr(pos, eol - pos);
    pos = eol + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find('\r') != absl::string_view::npos) return refuse(refusal, 400, "a bare CR in the request's head");
    lines.push_back(line);
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.empty()) return refuse(refusal, 400, "no request line");

  // The request line.
  const absl::string_view line = lines[0];
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == absl::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == absl::string_view::npos || line.find(' ', sp2 + 1) != absl::string_view::npos)
    return refuse(refusal, 400, "the request line is not METHOD TARGET VERSION");
  const absl::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                          version = line.substr(sp2 + 1);
  if (target.size() > limits.max_target_bytes)
    return refuse(refusal, 414, absl::StrCat("the request's target is over ", limits.max_target_bytes, " bytes"));
  if (!is_token(method) || method.size() > 32) return refuse(refusal, 400, "the method is not a token");
  if (version.size() != 8 || !absl::StartsWith(version, "HTTP/") || !absl::ascii_isdigit(version[5]) ||
      version[6] != '.' || !absl::ascii_isdigit(version[7]))
    return refuse(refusal, 400, "the version is not HTTP/1.1");
  if (version != "HTTP/1.1" && version != "HTTP/1.0")
    return refuse(refusal, 505, "this server speaks HTTP/1.1 (and HTTP/1.0)");
  out->http10 = version == "HTTP/1.0";
  bool known = false;
  for (absl::string_view m : kMethods) known |= method == m;
  if (!known) return refuse(refusal, 501, absl::StrCat("method ", method, " is not implemented"));
  req.method = std::string(method);

  // The target: origin-form, or absolute-form whose host stands for Host.
  for (char c : target) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || c == '#') return refuse(refusal, 400, "the target has a byte a URL may not have");
  }
  absl::string_view rest = target;
  std::optional<absl::string_view> authority;
  for (absl::string_view scheme : {"http://", "https://"}) {
    if (rest.size() >= scheme.size() && absl::EqualsIgnoreCase(rest.substr(0, scheme.size()), scheme)) {
      rest.remove_prefix(scheme.size());
      const size_t slash = std::min(rest.find('/'), rest.find('?'));
      authority = rest.substr(0, slash);
      rest = slash == absl::string_view::npos ? absl::string_view("/") : rest.substr(slash);
      if (authority->empty() || authority->find('@') != absl::string_view::npos)
        return refuse(refusal, 400, "the target's host is missing or has user information");
      break;
    }
  }
  if (rest.empty() || (rest[0] != '/' && !(authority && rest[0] == '?')))
    return refuse(refusal, 400, "the target is not a path (origin-form) or a URL (absolute-form)");
  const size_t q = rest.find('?');
  req.path = decode_path(rest.substr(0, q));
  if (req.path.empty()) req.path.push_back('/');  // "http://host?x"
  if (q != absl::string_view::npos) req.query = parse_form(std::string(rest.substr(q + 1)));

  // The header lines.
  bool have_host = false, have_length = false, saw_close = false, saw_keep_alive = false;
  bool in_header = false;             // a header line came before (a continuation line's)
  std::string* last_value = nullptr;  // where a continuation line goes (null: a header not kept)
  std::vector<std::string> cookies;
  for (size_t i = 1; i < lines.size(); ++i) {
    const absl::string_view h = lines[i];
    if (h.size() > limits.max_header_line_bytes)
      return refuse(refusal, 431, absl::StrCat("a header line is over ", limits.max_header_line_bytes, " bytes"));
    if (i > limits.max_headers)
      return refuse(refusal, 431, absl::StrCat("more than ", limits.max_headers, " header lines"));
    if (h.empty()) return refuse(refusal, 400, "an empty line inside the head");
    if (h[0] == ' ' || h[0] == '\t') {
      // obs-fold: RFC 9112 lets a server join it to the line before with a space.
      const absl::string_view more = absl::StripAsciiWhitespace(h);
      if (!is_field_value(more)) return refuse(refusal, 400, "a control byte in a header's value");
      if (!in_header) return refuse(refusal, 400, "a continuation line without a header before it");
      if (last_value && !more.empty()) absl::StrAppend(last_value, last_value->empty() ? "" : " ", more);
      continue;
    }
    const size_t colon = h.find(':');
    if (colon == absl::string_view::npos) return refuse(refusal, 400, "a header line without a colon");
    const absl::string_view name = h.substr(0, colon);
    if (!is_token(name)) return refuse(refusal, 400, "a header's name is not a token (or has space before its colon)");
    const absl::string_view value = absl::StripAsciiWhitespace(h.substr(colon + 1));
    if (!is_field_value(value)) return refuse(refusal, 400, "a control byte in a header's value");
    const auto is = [&](absl::string_view n) { return absl::EqualsIgnoreCase(name, n); };
    std::string* into = nullptr;
    if (is("Host")) {
      if (have_host) return refuse(refusal, 400, "more than one Host header");
      have_host = true;
      into = &req.host;
    } else if (is("Content-Length")) {
      uint64_t n = 0;
      const bool digits = !value.empty() && value.size() <= 19 &&
                          value.find_first_not_of("0123456789") == absl::string_view::npos &&
                          absl::SimpleAtoi(value, &n);
      if (!digits || (have_length && out->body_bytes != n))
        return refuse(refusal, 400, "Content-Length is not one number");
      have_length = true;
      out->body_bytes = n;
    } else if (is("Transfer-Encoding")) {
      // Only the login form has a body, and browsers send it with a Content-Length.
      if (absl::StrContains(absl::AsciiStrToLower(value), "chunked"))
        return refuse(refusal, 411, "send the body with a Content-Length (no Transfer-Encoding)");
      return refuse(refusal, 501, "Transfer-Encoding is not supported");
    } else if (is("Content-Encoding")) {
      // No compressed bodies: a small body must not inflate into a big one.
      if (!absl::EqualsIgnoreCase(value, "identity")) return refuse(refusal, 415, "Content-Encoding is not supported");
    } else if (is("Accept-Encoding")) {
      out->gzip = out->gzip || accepts_gzip(value);
    } else if (is("Connection")) {
      for (absl::string_view t : absl::StrSplit(value, ',')) {
        t = absl::StripAsciiWhitespace(t);
        saw_close = saw_close || absl::EqualsIgnoreCase(t, "close");
        saw_keep_alive = saw_keep_alive || absl::EqualsIgnoreCase(t, "keep-alive");
      }
    } else if (is("Authorization")) {
      req.authorization.emplace_back(value);
      into = &req.authorization.back();
    } else if (is("Cookie")) {
      cookies.emplace_back(value);
      into = &cookies.back();
    } else if (is("Content-Type")) {
      into = &req.content_type;
    } else if (is("Origin")) {
      into = &req.origin;
    } else if (is("Sec-Fetch-Site")) {
      into = &req.fetch_site;
    } else if (is("X-Requested-With")) {
      into = &req.requested_with;
    }
    // Of the other single-valued headers, the first counts.
    if (into && into->empty()) *into = std::string(value);
    // A repeated single-valued header's continuation goes nowhere (its first value counts).
    last_value = into && *into == value ? into : nullptr;
    in_header = true;
  }
  // HTTP/1.0 closes unless it asks for keep-alive.
  out->keep_alive = !saw_close && (!out->http10 || saw_keep_alive);
  if (!out->http10 && !have_host && !authority) return refuse(refusal, 400, "HTTP/1.1 needs a Host header");
  if (authority) req.host = std::string(*authority);
  req.cookie = absl::StrJoin(cookies, "; ");
  if (out->body_bytes > limits.max_body_bytes)
    return refuse(refusal, 413, absl::StrCat("the request's body is over ", limits.max_body_bytes, " bytes"));
  out->health = (req.method == "GET" || req.method == "HEAD") && (req.path == "/healthz" || req.path == "/readyz");
  return true;
}

const char* reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 303: return "See Other";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 421: return "Misdirected Request";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
  }
}

bool compressible(absl::string_view content_type, size_t bytes) {
  if (bytes < kHttpGzipMinBytes) return false;
  const absl::string_view type = absl::StripAsciiWhitespace(content_type.substr(0, content_type.find(';')));
  if (absl::StartsWithIgnoreCase(type, "text/")) return true;
  for (absl::string_view t : {"application/json", "application/javascript", "application/x-chess-pgn", "image/svg+xml"})
    if (absl::EqualsIgnoreCase(type, t)) return true;
  return false;
}

std::string canned_response(int status, const std::string& message, const std::string& extra) {
  const std::string body = message + "\n";
  return absl::StrCat("HTTP/1.1 ", status, " ", reason_phrase(status),
                      "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ", body.size(),
                      "\r\nConnection: close\r\n", extra, "\r\n", body);
}

std::string serialize_response(const HttpResponse& resp, const WireFraming& framing,
                               std::unique_ptr<GzipStream>* gzip) {
  const bool paged = resp.pages != nullptr;
  const bool chunked = paged && !framing.http10;
  // An answer the client reads to the connection's end must end the connection.
  const bool close = framing.close || (paged && framing.http10);
  const bool compress = framing.gzip && compressible(resp.content_type, paged ? kHttpGzipMinBytes : resp.body.size());
  std::string body;
  if (!paged) body = compress ? gzip_compress(resp.body) : resp.body;
  std::string out = absl::StrCat("HTTP/1.1 ", resp.status, " ", reason_phrase(resp.status), "\r\n");
  const auto line = [&](absl::string_view name, absl::string_view value) {
    if (name.find_first_of("\r\n:") != absl::string_view::npos ||
        value.find_first_of("\r\n") != absl::string_view::npos)
      return;
    absl::StrAppend(&out, name, ": ", value, "\r\n");
  };
  line("Content-Type", resp.content_type);
  for (const auto& [k, v] : resp.headers) line(k, v);
  if (compressible(resp.content_type, paged ? kHttpGzipMinBytes : resp.body.size())) line("Vary", "Accept-Encoding");
  if (compress) line("Content-Encoding", "gzip");
  if (chunked)
    line("Transfer-Encoding", "chunked");
  else if (!paged)
    line("Content-Length", absl::StrCat(body.size()));
  if (close) {
    line("Connection", "close");
  } else {
    if (framing.http10) line("Connection", "keep-alive");
    line("Keep-Alive", absl::StrCat("timeout=", framing.keep_alive_timeout_s, ", max=", framing.keep_alive_max));
  }
  out += "\r\n";
  if (framing.head_only) return out;
  if (!paged) return out + body;
  std::unique_ptr<GzipStream> z = compress ? std::make_unique<GzipStream>() : nullptr;
  if (!resp.body.empty()) append_page(&out, resp.body, false, chunked, z.get());
  if (gzip) *gzip = std::move(z);
  return out;
}

void append_page(std::string* out, absl::string_view page, bool last, bool chunked, GzipStream* gzip) {
  std::string compressed;
  if (gzip) {
    gzip->add(page, last, &compressed);
    page = compressed;
  }
  if (!chunked) {
    out->append(page.data(), page.size());
    return;
  }
  if (!page.empty()) absl::StrAppend(out, absl::Hex(page.size()), "\r\n", page, "\r\n");
  if (last) out->append("0\r\n\r\n");
}

GzipStream::GzipStream() : z_(std::make_unique<z_stream_s>()) {
  *z_ = z_stream_s{};
  // windowBits 15 + 16: a gzip wrapper.
  ok_ = deflateInit2(z_.get(), Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
}

GzipStream::~GzipStream() {
  if (ok_) deflateEnd(z_.get());
}

void GzipStream::add(absl::string_view in, bool finish, std::string* out) {
  if (!ok_) return;
  z_->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z_->avail_in = uInt(in.size());
  char buf[16384];
  for (;;) {
    z_->next_out = reinterpret_cast<Bytef*>(buf);
    z_->avail_out = sizeof buf;
    const int r = deflate(z_.get(), finish ? Z_FINISH : Z_SYNC_FLUSH);
    out->append(buf, sizeof buf - z_->avail_out);
    if (r == Z_STREAM_END || r == Z_STREAM_ERROR) break;
    if (z_->avail_out != 0) break;  // all of it flushed
  }
}

std::string gzip_compress(absl::string_view in) {
  std::string out;
  GzipStream z;
  z.add(in, true, &out);
  return out;
}

}  // namespace c960::cluster
