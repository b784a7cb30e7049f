// `c960 perftree DEPTH FEN [MOVES]`: the script interface of perftree
// (https://github.com/agausmann/perftree), which calls `SCRIPT DEPTH FEN [MOVES]` with the moves in
// one argument and reads "move count" lines, a blank line and the total.
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "core/notation.h"
#include "core/perft.h"
#include "core/position.h"

namespace c960::cli {
namespace {

constexpr char kName[] = "perftree";
constexpr int kMaxDepth = 30;  // as c960 perft --depth

const CommandSpec kSpec = {
    kName,
    "c960 perftree DEPTH FEN [MOVES]",
    "Perft divide in the form the perftree debugger reads: one 'move count' line per legal move "
    "(UCI notation), a blank line, then the total. MOVES is one argument of UCI moves separated by "
    "spaces, played from FEN first. Use it as perftree's script: perftree \"c960 perftree\".",
    {},
    3};

}  // namespace

int cmd_perftree(const std::vector<std::string>& args, const Io& io) {
  ParsedArgs parsed;
  if (std::optional<int> rc = parse_command(kSpec, args, io, &parsed)) return *rc;
  const std::vector<std::string>& words = parsed.positional();
  if (words.size() < 2) return fail(io, kName, absl::InvalidArgumentError("give DEPTH and FEN (and MOVES)"));
  int depth = 0;
  if (!absl::SimpleAtoi(words[0], &depth) || depth < 1 || depth > kMaxDepth)
    return fail(io, kName,
                absl::InvalidArgumentError(absl::StrCat("DEPTH: '", words[0], "' is not in 1..", kMaxDepth)));
  absl::StatusOr<Position> parsed_fen = Position::from_fen(words[1]);
  if (!parsed_fen.ok())
    return fail(io, kName, absl::InvalidArgumentError(absl::StrCat("FEN: ", parsed_fen.status().message())));
  Position pos = *parsed_fen;
  std::vector<std::string> moves;
  if (words.size() == 3)
    for (absl::string_view m : absl::StrSplit(words[2], ' ', absl::SkipWhitespace())) moves.emplace_back(m);
  std::vector<StateInfo> states(moves.size());
  for (size_t i = 0; i < moves.size(); ++i) {
    absl::StatusOr<Move> m = parse_uci(pos, moves[i]);
    if (!m.ok()) return fail(io, kName, absl::InvalidArgumentError(absl::StrCat("MOVES: ", m.status().message())));
    pos.do_move(*m, states[i]);
  }
  const Position root = pos;
  NodeCount total = 0;
  for (const DivideEntry& e : divide(root, depth)) {
    io.out << to_uci(e.move) << " " << to_string(e.nodes) << "\n";
    total += e.nodes;
  }
  io.out << "\n" << to_string(total) << "\n";
  return kExitOk;
}

const CommandSpec& perftree_spec() { return kSpec; }

}  // namespace c960::cli
