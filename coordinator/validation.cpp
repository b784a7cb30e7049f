#include "coordinator/validation.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cluster/config.h"

namespace c960::cluster {

absl::Status check_id(const std::string& value, const char* field) {
  if (value.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": required"));
  if (value.size() > size_t(kMaxIdLength))
    return absl::InvalidArgumentError(absl::StrCat(field, ": longer than ", kMaxIdLength, " characters"));
  for (char c : value)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
      return absl::InvalidArgumentError(absl::StrCat(field, ": may hold only letters, digits, '-', '_' and '.'"));
  return absl::OkStatus();
}

absl::Status check_text(const std::string& s, const char* field, size_t max_len, bool required) {
  if (required && s.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": required"));
  if (s.size() > max_len)
    return absl::InvalidArgumentError(absl::StrCat(field, ": longer than ", max_len, " characters"));
  if (!std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f; }))
    return absl::InvalidArgumentError(absl::StrCat(field, ": not printable ASCII"));
  return absl::OkStatus();
}

absl::Status parse_unit_id(const std::string& unit_id, const char* field, std::string* job_id, int64_t* index) {
  const size_t slash = unit_id.rfind('/');
  if (unit_id.size() > 2 * size_t(kMaxIdLength) || slash == std::string::npos ||
      !absl::SimpleAtoi(absl::string_view(unit_id).substr(slash + 1), index) || *index < 0)
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": '", unit_id.substr(0, 2 * kMaxIdLength), "' is not a unit id (<job id>/<index>)"));
  *job_id = unit_id.substr(0, slash);
  return check_id(*job_id, field);
}

}  // namespace c960::cluster
