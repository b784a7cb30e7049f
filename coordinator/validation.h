// Checks of request fields shared by the coordinator's calls: ids, free text, unit ids. Each
// error is INVALID_ARGUMENT naming the field.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace c960::cluster {

// An id-like field: non-empty, at most kMaxIdLength, [A-Za-z0-9._-].
absl::Status check_id(const std::string& value, const char* field);
// Free text: printable ASCII, at most max_len characters; required: not empty.
absl::Status check_text(const std::string& s, const char* field, size_t max_len, bool required);
// "<job id>/<index>".
absl::Status parse_unit_id(const std::string& unit_id, const char* field, std::string* job_id, int64_t* index);

}  // namespace c960::cluster
