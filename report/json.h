// The report's JSON inputs (a match's `c960 selfplay --format json`) as a tree, read by
// protobuf's JSON parser (google.protobuf.Value, RFC 8259): numbers as their text (whole numbers
// as digits, exact up to 2^53), an object's members by key. Errors say what the parser found.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace c960::report {

struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  std::string text;  // a string's value, or a number as written
  std::vector<JsonValue> items;
  std::vector<std::pair<std::string, JsonValue>> members;  // by key

  const JsonValue* find(absl::string_view key) const;
};

absl::StatusOr<JsonValue> parse_json(absl::string_view text);

}  // namespace c960::report
