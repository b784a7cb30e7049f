#include "report/json.h"

#include <algorithm>
#include <cmath>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace c960::report {
namespace {

// A number as its text: a whole number as digits (counts read back exactly up to 2^53, far
// beyond any count c960 writes), others with every digit a double carries.
std::string number_text(double x) {
  if (std::nearbyint(x) == x && std::abs(x) < 9.007199254740992e15) return absl::StrCat(int64_t(x));
  return absl::StrFormat("%.17g", x);
}

// The members of a JSON object, read through reflection. Struct's map is built by libprotobuf, and
// its inline accessors do not agree with the library on the map's layout when this file is built
// with ThreadSanitizer (map_field.h adds fields under __SANITIZE_THREAD__): reflection runs the
// library's own code, whatever this file is compiled with.
template <class F>
void for_each_member(const google::protobuf::Struct& s, F&& f) {
  const google::protobuf::Reflection* reflection = s.GetReflection();
  const google::protobuf::FieldDescriptor* fields = s.GetDescriptor()->FindFieldByName("fields");
  const int n = reflection->FieldSize(s, fields);
  for (int i = 0; i < n; ++i) {
    const google::protobuf::Message& entry = reflection->GetRepeatedMessage(s, fields, i);
    const google::protobuf::Reflection* er = entry.GetReflection();
    const google::protobuf::Descriptor* ed = entry.GetDescriptor();
    const std::string key = er->GetString(entry, ed->FindFieldByName("key"));
    const google::protobuf::Message& value = er->GetMessage(entry, ed->FindFieldByName("value"));
    if (const auto* v = dynamic_cast<const google::protobuf::Value*>(&value)) {
      f(key, *v);
    } else {
      google::protobuf::Value copy;
      copy.CopyFrom(value);
      f(key, copy);
    }
  }
}

JsonValue convert(const google::protobuf::Value& v) {
  JsonValue out;
  switch (v.kind_case()) {
    case google::protobuf::Value::kBoolValue:
      out.type = JsonValue::Type::kBool;
      out.boolean = v.bool_value();
      break;
    case google::protobuf::Value::kNumberValue:
      out.type = JsonValue::Type::kNumber;
      out.text = number_text(v.number_value());
      break;
    case google::protobuf::Value::kStringValue:
      out.type = JsonValue::Type::kString;
      out.text = v.string_value();
      break;
    case google::protobuf::Value::kListValue:
      out.type = JsonValue::Type::kArray;
      for (const google::protobuf::Value& item : v.list_value().values()) out.items.push_back(convert(item));
      break;
    case google::protobuf::Value::kStructValue:
      out.type = JsonValue::Type::kObject;
      for_each_member(v.struct_value(), [&](const std::string& key, const google::protobuf::Value& value) {
        out.members.emplace_back(key, convert(value));
      });
      // The map's order is not the text's: by key, so that outputs do not depend on it.
      std::sort(out.members.begin(), out.members.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      break;
    default: out.type = JsonValue::Type::kNull; break;
  }
  return out;
}

}  // namespace

const JsonValue* JsonValue::find(absl::string_view key) const {
  for (const auto& [k, v] : members)
    if (k == key) return &v;
  return nullptr;
}

absl::StatusOr<JsonValue> parse_json(absl::string_view text) {
  google::protobuf::Value root;
  const auto status = google::protobuf::util::JsonStringToMessage(std::string(text), &root);
  if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat("not JSON: ", status.ToString()));
  return convert(root);
}

}  // namespace c960::report
