#include "cli/provenance.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cluster/host_info.h"

namespace c960::cli {

using cluster::cpu_model;
using cluster::file_sha256;

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

std::vector<selfplay::MetadataValue> provenance(const selfplay::SelfPlaySpec& spec, const std::string& book_path) {
  std::vector<selfplay::MetadataValue> out;
  if (spec.engine != selfplay::kBuiltinEngine) {
    std::optional<std::string> sha;
    if (std::optional<std::string> program = find_program(spec.engine_binary())) sha = file_sha256(*program);
    out.push_back({"engine_sha256", sha.value_or("unknown")});
  }
  if (spec.match() && spec.opponent != selfplay::kBuiltinEngine) {
    std::optional<std::string> sha;
    if (std::optional<std::string> program = find_program(spec.opponent_binary())) sha = file_sha256(*program);
    out.push_back({"opponent_sha256", sha.value_or("unknown")});
  }
  if (!book_path.empty()) out.push_back({"book_sha256", file_sha256(book_path).value_or("unknown")});
  out.push_back({"cpu", cpu_model()});
  return out;
}

}  // namespace c960::cli
