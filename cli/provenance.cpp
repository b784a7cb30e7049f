#include "cli/provenance.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <openssl/evp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace c960::cli {

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

std::optional<std::string> find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  if (!path) return std::nullopt;
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    const std::string candidate = absl::StrCat(dir, "/", name);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
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

std::vector<selfplay::MetadataValue> provenance(const selfplay::SelfPlaySpec& spec, const std::string& book_path) {
  std::vector<selfplay::MetadataValue> out;
  if (spec.engine != selfplay::kBuiltinEngine) {
    std::optional<std::string> sha;
    if (std::optional<std::string> program = find_program(spec.engine_binary())) sha = file_sha256(*program);
    out.push_back({"engine_sha256", sha.value_or("unknown")});
  }
  if (!book_path.empty()) out.push_back({"book_sha256", file_sha256(book_path).value_or("unknown")});
  out.push_back({"cpu", cpu_model()});
  return out;
}

}  // namespace c960::cli
