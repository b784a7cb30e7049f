#include "selfplay/positions.h"

#include <charconv>
#include <unordered_map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/movegen.h"
#include "core/position.h"
#include "core/startpos.h"

namespace c960::selfplay {
namespace {

// FNV-1a, 64 bits: fixed, so that seeds are the same on every machine and in every version.
uint64_t fnv1a(absl::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s) h = (h ^ uint8_t(c)) * 0x100000001b3ULL;
  return h;
}

bool is_uint(absl::string_view s) {
  unsigned v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

// EPD opcodes after the four position fields: `op operand ...;` with quoted operands that may
// hold ';'. Returns the opcodes' operands by name (the first operand, unquoted).
absl::StatusOr<std::unordered_map<std::string, std::string>> epd_opcodes(absl::string_view rest) {
  std::unordered_map<std::string, std::string> out;
  size_t i = 0;
  while (i < rest.size()) {
    while (i < rest.size() && (absl::ascii_isspace(uint8_t(rest[i])) || rest[i] == ';')) ++i;
    if (i >= rest.size()) break;
    const size_t op_start = i;
    while (i < rest.size() && !absl::ascii_isspace(uint8_t(rest[i])) && rest[i] != ';') ++i;
    const std::string op(rest.substr(op_start, i - op_start));
    std::string first;
    bool have_first = false;
    while (i < rest.size() && rest[i] != ';') {
      if (absl::ascii_isspace(uint8_t(rest[i]))) {
        ++i;
        continue;
      }
      std::string operand;
      if (rest[i] == '"') {
        const size_t close = rest.find('"', i + 1);
        if (close == absl::string_view::npos)
          return absl::InvalidArgumentError(absl::StrCat("opcode ", op, ": a quoted operand is not closed"));
        operand = std::string(rest.substr(i + 1, close - i - 1));
        i = close + 1;
      } else {
        const size_t from = i;
        while (i < rest.size() && !absl::ascii_isspace(uint8_t(rest[i])) && rest[i] != ';') ++i;
        operand = std::string(rest.substr(from, i - from));
      }
      if (!have_first) first = std::move(operand), have_first = true;
    }
    out.emplace(op, first);
  }
  return out;
}

}  // namespace

absl::Status check_position_id(absl::string_view id) {
  if (id.empty() || id.size() > kMaxPositionIdLength)
    return absl::InvalidArgumentError(absl::StrCat("id '", id.substr(0, kMaxPositionIdLength), "...' must have 1..",
                                                   kMaxPositionIdLength, " characters"));
  for (char c : id)
    if (c < 0x20 || c >= 0x7f)
      return absl::InvalidArgumentError(absl::StrCat("id '", id, "' has a character that is not printable ASCII"));
  if (id == "all") return absl::InvalidArgumentError("id 'all' names the total row; choose another");
  return absl::OkStatus();
}

absl::StatusOr<StartPosition> chess960_position(int sp) {
  absl::StatusOr<std::string> fen = startpos_fen(sp, true);
  if (!fen.ok()) return fen.status();
  return StartPosition{PositionKind::kChess960, absl::StrCat(sp), *std::move(fen), sp, sp};
}

absl::StatusOr<StartPosition> dfrc_position(int pair) {
  absl::StatusOr<std::string> fen = dfrc_fen(pair, true);
  if (!fen.ok()) return fen.status();
  const int w = pair / kStartPositions, b = pair % kStartPositions;
  return StartPosition{PositionKind::kDfrc, absl::StrCat(pair), *std::move(fen), pair, w == b ? w : -1};
}

absl::StatusOr<StartPosition> fen_position(std::string id, absl::string_view fen) {
  if (absl::Status s = check_position_id(id); !s.ok()) return s;
  if (fen.size() > kMaxPositionFenLength)
    return absl::InvalidArgumentError(absl::StrCat("FEN longer than ", kMaxPositionFenLength, " characters"));
  absl::StatusOr<Position> pos = Position::from_fen(fen);
  if (!pos.ok()) return pos.status();
  if (!has_legal_move(*pos))
    return absl::InvalidArgumentError(
        absl::StrCat("'", fen, "': the game is already over (", pos->in_check() ? "checkmate" : "stalemate", ")"));
  StartPosition p{PositionKind::kFen, std::move(id), pos->fen(FenDialect::kShredder), -1, -1};
  if (absl::StatusOr<int> n = number_of_fen(p.fen); n.ok() && *startpos_fen(*n, true) == p.fen) p.sp = *n;
  return p;
}

uint64_t position_key(const StartPosition& p) {
  if (p.sp >= 0) return uint64_t(p.sp);
  return fnv1a(p.fen) | (uint64_t(1) << 63);
}

absl::StatusOr<std::vector<StartPosition>> parse_opening_book(absl::string_view text) {
  std::vector<StartPosition> out;
  std::unordered_map<std::string, int> line_of_id;
  int line_no = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    const absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line[0] == '#') continue;
    const auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_no, ": ", why));
    };
    // The four position fields, then clocks (FEN) or opcodes (EPD).
    std::vector<absl::string_view> fields;
    size_t i = 0;
    while (fields.size() < 6 && i < line.size()) {
      while (i < line.size() && absl::ascii_isspace(uint8_t(line[i]))) ++i;
      if (i >= line.size() || line[i] == ';') break;
      const size_t from = i;
      while (i < line.size() && !absl::ascii_isspace(uint8_t(line[i])) && line[i] != ';') ++i;
      fields.push_back(line.substr(from, i - from));
      if (fields.size() == 4) {
        // Clocks follow only as two numbers; anything else is an opcode.
        size_t j = i;
        std::vector<absl::string_view> clocks;
        while (clocks.size() < 2 && j < line.size()) {
          while (j < line.size() && absl::ascii_isspace(uint8_t(line[j]))) ++j;
          const size_t f = j;
          while (j < line.size() && !absl::ascii_isspace(uint8_t(line[j])) && line[j] != ';') ++j;
          if (j == f || !is_uint(line.substr(f, j - f))) break;
          clocks.push_back(line.substr(f, j - f));
        }
        if (clocks.size() == 2) {
          fields.insert(fields.end(), clocks.begin(), clocks.end());
          i = j;
        }
        break;
      }
    }
    // A FEN cut short after the side to move (as Stockfish takes it: Position::from_fen fills in
    // the rest) ends the line or is followed by ';' only; EPD opcodes need all four fields.
    const bool short_fen = fields.size() >= 2 && fields.size() < 4 && (i >= line.size() || line[i] == ';');
    if (fields.size() < 4 && !short_fen)
      return bad(
          "not a FEN or EPD line (a FEN has at least its placement and side to move, an EPD line four "
          "fields before its opcodes)");
    absl::StatusOr<std::unordered_map<std::string, std::string>> ops =
        short_fen ? std::unordered_map<std::string, std::string>{} : epd_opcodes(line.substr(i));
    if (!ops.ok()) return bad(ops.status().message());
    std::string fen = absl::StrJoin(fields, " ");
    if (fields.size() == 4) {  // EPD: the clocks from its opcodes
      const auto op = [&](const char* name, const char* fallback) {
        const auto it = ops->find(name);
        return it == ops->end() || !is_uint(it->second) ? std::string(fallback) : it->second;
      };
      absl::StrAppend(&fen, " ", op("hmvc", "0"), " ", op("fmvn", "1"));
    }
    const auto id_op = ops->find("id");
    std::string id = id_op != ops->end() ? id_op->second : absl::StrCat(line_no);
    absl::StatusOr<StartPosition> p = fen_position(id, fen);
    if (!p.ok()) return bad(p.status().message());
    if (auto [it, fresh] = line_of_id.emplace(p->id, line_no); !fresh)
      return bad(absl::StrCat("id '", p->id, "' is also the id of line ", it->second));
    out.push_back(*std::move(p));
  }
  if (out.empty()) return absl::InvalidArgumentError("no positions (every line is blank or a comment)");
  return out;
}

std::string xfen_of(const StartPosition& p) {
  absl::StatusOr<Position> pos = Position::from_fen(p.fen);
  return pos.ok() ? pos->fen(FenDialect::kXFen) : p.fen;
}

std::string position_label(absl::string_view fen) {
  const absl::string_view placement = fen.substr(0, fen.find(' '));
  const std::vector<absl::string_view> ranks = absl::StrSplit(placement, '/');
  const auto back_rank = [](absl::string_view r) {
    if (r.size() != 8) return false;
    for (char c : r)
      if (absl::string_view("KQRBNkqrbn").find(c) == absl::string_view::npos) return false;
    return true;
  };
  if (ranks.size() == 8 && ranks[1] == "pppppppp" && ranks[6] == "PPPPPPPP" && back_rank(ranks[0]) &&
      back_rank(ranks[7]) && absl::AsciiStrToUpper(ranks[7]) == ranks[7] &&
      absl::AsciiStrToLower(ranks[0]) == ranks[0]) {
    if (absl::AsciiStrToUpper(ranks[0]) == ranks[7]) return std::string(ranks[7]);
    return absl::StrCat(ranks[7], "/", ranks[0]);
  }
  return std::string(placement);
}

}  // namespace c960::selfplay
