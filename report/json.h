// A small JSON reader for the report's inputs (a match's `c960 selfplay --format json`): the
// whole text into a tree, each value with the line it starts on. RFC 8259 values; numbers keep
// their text, so that counts up to 2^63 read exactly. Errors name the line and column.
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
  std::vector<std::pair<std::string, JsonValue>> members;  // in order; a repeated key is an error
  int line = 0;

  const JsonValue* find(absl::string_view key) const;
};

absl::StatusOr<JsonValue> parse_json(absl::string_view text);

}  // namespace c960::report
