#include "core/suite.h"

#include <charconv>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace c960 {
namespace {

bool parse_u64(absl::string_view s, uint64_t& out) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

// "d n" or "Dd n" -> (d, n).
absl::Status parse_depth_count(absl::string_view spec, int line, std::pair<int, uint64_t>& out) {
  std::vector<absl::string_view> parts = absl::StrSplit(spec, ' ', absl::SkipWhitespace());
  uint64_t depth = 0;
  absl::string_view d = parts.empty() ? "" : parts[0];
  if (absl::StartsWith(d, "D") || absl::StartsWith(d, "d")) d.remove_prefix(1);
  if (parts.size() != 2 || !parse_u64(d, depth) || depth < 1 || depth > 64 || !parse_u64(parts[1], out.second))
    return absl::InvalidArgumentError(
        absl::StrCat("line ", line, ": '", spec, "' is not a depth (1..64) and a node count"));
  out.first = int(depth);
  return absl::OkStatus();
}

}  // namespace

std::vector<PerftCase> parse_perft_suite_entries(absl::string_view text) {
  std::vector<PerftCase> cases;
  std::string pending_id;
  int line_no = 0;
  // The block an "epd" line opened, while its "perft" lines may follow.
  bool in_block = false;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    const absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line.front() == '#') continue;
    if (absl::StartsWith(line, "id ")) {
      pending_id = std::string(absl::StripAsciiWhitespace(line.substr(3)));
      in_block = false;
    } else if (absl::StartsWith(line, "epd ")) {
      PerftCase c;
      c.id = pending_id.empty() ? absl::StrCat("line ", line_no) : pending_id;
      c.fen = std::string(absl::StripAsciiWhitespace(line.substr(4)));
      c.line = line_no;
      cases.push_back(std::move(c));
      pending_id.clear();
      in_block = true;
    } else if (absl::StartsWith(line, "perft ")) {
      if (!in_block) {
        PerftCase c;
        c.id = absl::StrCat("line ", line_no);
        c.line = line_no;
        c.error = absl::StrCat("line ", line_no, ": 'perft' before any 'epd' line");
        cases.push_back(std::move(c));
        continue;
      }
      std::pair<int, uint64_t> e;
      if (absl::Status s = parse_depth_count(line.substr(6), line_no, e); !s.ok()) {
        if (cases.back().error.empty()) cases.back().error = std::string(s.message());
        continue;
      }
      cases.back().expected.push_back(e);
    } else {
      in_block = false;
      std::vector<absl::string_view> parts = absl::StrSplit(line, ';');
      PerftCase c;
      c.id = absl::StrCat("line ", line_no);
      c.fen = std::string(absl::StripAsciiWhitespace(parts[0]));
      c.line = line_no;
      for (size_t i = 1; i < parts.size(); ++i) {
        const absl::string_view op = absl::StripAsciiWhitespace(parts[i]);
        if (op.empty()) continue;
        std::pair<int, uint64_t> e;
        if (absl::Status s = parse_depth_count(op, line_no, e); !s.ok()) {
          c.error = std::string(s.message());
          break;
        }
        c.expected.push_back(e);
      }
      if (c.error.empty() && c.expected.empty())
        c.error = absl::StrCat("line ", line_no, ": no ';D<depth> <nodes>' entries after the FEN");
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

absl::StatusOr<std::vector<PerftCase>> parse_perft_suite(absl::string_view text) {
  std::vector<PerftCase> cases = parse_perft_suite_entries(text);
  for (const PerftCase& c : cases)
    if (!c.error.empty()) return absl::InvalidArgumentError(c.error);
  return cases;
}

}  // namespace c960
