#include "cluster/host_info.h"

#include <fstream>
#include <openssl/evp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace c960::cluster {

std::optional<std::string> file_sha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(ctx);
    return std::nullopt;
  }
  std::string buf(1 << 16, '\0');
  bool ok = true;
  while (ok && in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    if (in.gcount() > 0) ok = EVP_DigestUpdate(ctx, buf.data(), size_t(in.gcount())) == 1;
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  ok = ok && in.eof() && EVP_DigestFinal_ex(ctx, md, &n) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok) return std::nullopt;
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) absl::StrAppend(&hex, absl::Hex(md[i], absl::kZeroPad2));
  return hex;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    absl::string_view l = line;
    if (!absl::ConsumePrefix(&l, "model name")) continue;
    const size_t colon = l.find(':');
    if (colon != absl::string_view::npos) return std::string(absl::StripAsciiWhitespace(l.substr(colon + 1)));
  }
  return "unknown";
}

}  // namespace c960::cluster
