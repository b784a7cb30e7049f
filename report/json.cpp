#include "report/json.h"

#include "absl/strings/str_cat.h"

namespace c960::report {
namespace {

constexpr int kMaxDepth = 64;

class Reader {
 public:
  explicit Reader(absl::string_view text) : s_(text) {}

  absl::StatusOr<JsonValue> document() {
    JsonValue v;
    if (absl::Status st = value(&v, 0); !st.ok()) return st;
    skip_space();
    if (i_ < s_.size()) return error("text after the JSON value");
    return v;
  }

 private:
  absl::Status error(absl::string_view what) const {
    size_t col = 1;
    for (size_t k = i_; k > 0 && s_[k - 1] != '\n'; --k) ++col;
    return absl::InvalidArgumentError(absl::StrCat("line ", line_, ", column ", col, ": ", what));
  }

  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) {
      if (s_[i_] == '\n') ++line_;
      ++i_;
    }
  }

  bool literal(absl::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }

  absl::Status value(JsonValue* v, int depth) {
    if (depth > kMaxDepth) return error("nested too deeply");
    skip_space();
    v->line = line_;
    if (i_ >= s_.size()) return error("a value is missing (the text ends)");
    const char c = s_[i_];
    if (c == '{') return object(v, depth);
    if (c == '[') return array(v, depth);
    if (c == '"') {
      v->type = JsonValue::Type::kString;
      return string(&v->text);
    }
    if (literal("true")) {
      v->type = JsonValue::Type::kBool;
      v->boolean = true;
      return absl::OkStatus();
    }
    if (literal("false")) {
      v->type = JsonValue::Type::kBool;
      return absl::OkStatus();
    }
    if (literal("null")) return absl::OkStatus();
    return number(v);
  }

  absl::Status number(JsonValue* v) {
    const size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    const auto digits = [&] {
      const size_t from = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      return i_ > from;
    };
    if (!digits()) return error(absl::StrCat("'", s_.substr(start, 20), "' is not a JSON value"));
    if (i_ < s_.size() && s_[i_] == '.' && (++i_, !digits())) return error("a number's fraction has no digits");
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!digits()) return error("a number's exponent has no digits");
    }
    v->type = JsonValue::Type::kNumber;
    v->text = std::string(s_.substr(start, i_ - start));
    return absl::OkStatus();
  }

  static void append_utf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      *out += char(cp);
    } else if (cp < 0x800) {
      *out += char(0xC0 | (cp >> 6));
      *out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      *out += char(0xE0 | (cp >> 12));
      *out += char(0x80 | ((cp >> 6) & 0x3F));
      *out += char(0x80 | (cp & 0x3F));
    } else {
      *out += char(0xF0 | (cp >> 18));
      *out += char(0x80 | ((cp >> 12) & 0x3F));
      *out += char(0x80 | ((cp >> 6) & 0x3F));
      *out += char(0x80 | (cp & 0x3F));
    }
  }

  absl::Status hex4(uint32_t* out) {
    *out = 0;
    for (int k = 0; k < 4; ++k, ++i_) {
      if (i_ >= s_.size()) return error("a \\u escape is cut short");
      const char h = s_[i_];
      const int d = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
      if (d < 0) return error("a \\u escape needs four hex digits");
      *out = *out * 16 + uint32_t(d);
    }
    return absl::OkStatus();
  }

  absl::Status string(std::string* out) {
    ++i_;  // the opening quote
    for (;;) {
      if (i_ >= s_.size()) return error("a string is not closed");
      const char c = s_[i_++];
      if (c == '"') return absl::OkStatus();
      if (static_cast<unsigned char>(c) < 0x20) return error("a control character inside a string");
      if (c != '\\') {
        *out += c;
        continue;
      }
      if (i_ >= s_.size()) return error("a string is not closed");
      const char e = s_[i_++];
      switch (e) {
        case '"': *out += '"'; break;
        case '\\': *out += '\\'; break;
        case '/': *out += '/'; break;
        case 'b': *out += '\b'; break;
        case 'f': *out += '\f'; break;
        case 'n': *out += '\n'; break;
        case 'r': *out += '\r'; break;
        case 't': *out += '\t'; break;
        case 'u': {
          uint32_t cp = 0;
          if (absl::Status st = hex4(&cp); !st.ok()) return st;
          if (cp >= 0xD800 && cp < 0xDC00 && s_.substr(i_, 2) == "\\u") {
            i_ += 2;
            uint32_t low = 0;
            if (absl::Status st = hex4(&low); !st.ok()) return st;
            if (low < 0xDC00 || low >= 0xE000) return error("a lone surrogate in a \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xD800 && cp < 0xE000) {
            return error("a lone surrogate in a \\u escape");
          }
          append_utf8(cp, out);
          break;
        }
        default: return error(absl::StrCat("'\\", std::string(1, e), "' is not a JSON escape"));
      }
    }
  }

  absl::Status array(JsonValue* v, int depth) {
    v->type = JsonValue::Type::kArray;
    ++i_;
    skip_space();
    if (i_ < s_.size() && s_[i_] == ']') return ++i_, absl::OkStatus();
    for (;;) {
      JsonValue item;
      if (absl::Status st = value(&item, depth + 1); !st.ok()) return st;
      v->items.push_back(std::move(item));
      skip_space();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == ']') return ++i_, absl::OkStatus();
      return error("expected ',' or ']' in an array");
    }
  }

  absl::Status object(JsonValue* v, int depth) {
    v->type = JsonValue::Type::kObject;
    ++i_;
    skip_space();
    if (i_ < s_.size() && s_[i_] == '}') return ++i_, absl::OkStatus();
    for (;;) {
      skip_space();
      if (i_ >= s_.size() || s_[i_] != '"') return error("expected a key (a string) in an object");
      std::string key;
      const size_t key_at = i_;
      if (absl::Status st = string(&key); !st.ok()) return st;
      if (v->find(key)) {
        i_ = key_at;  // the error points at the key
        return error(absl::StrCat("key '", key, "' appears twice"));
      }
      skip_space();
      if (i_ >= s_.size() || s_[i_] != ':') return error("expected ':' after a key");
      ++i_;
      JsonValue member;
      if (absl::Status st = value(&member, depth + 1); !st.ok()) return st;
      v->members.emplace_back(std::move(key), std::move(member));
      skip_space();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == '}') return ++i_, absl::OkStatus();
      return error("expected ',' or '}' in an object");
    }
  }

  absl::string_view s_;
  size_t i_ = 0;
  int line_ = 1;
};

}  // namespace

const JsonValue* JsonValue::find(absl::string_view key) const {
  for (const auto& [k, v] : members)
    if (k == key) return &v;
  return nullptr;
}

absl::StatusOr<JsonValue> parse_json(absl::string_view text) { return Reader(text).document(); }

}  // namespace c960::report
