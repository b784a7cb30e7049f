#include <charconv>
#include <chrono>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "core/startpos.h"

namespace c960::cli {
namespace {

constexpr char kName[] = "startpos";

const CommandSpec kSpec = {kName,
                           "c960 startpos N [--shredder]\n       c960 startpos --random [--seed S] [--shredder]\n"
                           "       c960 startpos --number (FEN | BACKRANK)\n       c960 startpos --all",
                           "Prints the FEN of Chess960 start position N (0..959, standard numbering; 518 is RNBQKBNR), "
                           "a random start position as 'N FEN', the number of a start position given as a FEN or "
                           "as its white back rank (e.g. RNBQKBNR), or all 960 as a CSV table (sp, backrank, X-FEN, "
                           "Shredder-FEN; the same as data/chess960-positions.csv).",
                           {
                               {"shredder", Arity::kFlag, "", "print castling as rook files (HAha) instead of KQkq"},
                               {"all", Arity::kFlag, "", "print the 960 as CSV: sp,backrank,xfen,shredder_fen"},
                               {"random", Arity::kFlag, "", "pick a uniformly random start position"},
                               {"seed", Arity::kOne, "S", "seed for --random (default: from the clock)"},
                               {"number", Arity::kMany, "FEN|BACKRANK", "print the number of this start position"},
                           },
                           1};

}  // namespace

int cmd_startpos(const std::vector<std::string>& args, const Io& io) {
  ParsedArgs parsed_args;
  if (std::optional<int> rc = parse_command(kSpec, args, io, &parsed_args)) return *rc;
  const ParsedArgs* p = &parsed_args;
  const bool shredder = p->has("shredder");
  const std::string number = p->positional().empty() ? "" : p->positional().front();

  if (p->has("all")) {
    if (p->has("number") || p->has("random") || p->has("seed") || p->has("shredder") || !number.empty())
      return fail(io, kName, absl::InvalidArgumentError("--all takes no N, --number, --random, --seed or --shredder"));
    io.out << startpos_list_csv();
    return kExitOk;
  }
  if (p->has("number")) {
    if (p->has("random") || !number.empty())
      return fail(io, kName, absl::InvalidArgumentError("--number takes no N and no --random"));
    // A FEN given unquoted arrives as separate words.
    std::string text;
    for (const std::string& w : p->all("number")) text += (text.empty() ? "" : " ") + w;
    absl::StatusOr<int> n = text.find('/') != std::string::npos ? number_of_fen(text) : number_of_backrank(text);
    if (!n.ok()) return fail(io, kName, n.status());
    io.out << *n << "\n";
    return kExitOk;
  }
  if (p->has("random")) {
    if (!number.empty()) return fail(io, kName, absl::InvalidArgumentError("give either N or --random, not both"));
    absl::StatusOr<long long> seed = p->get_int("seed", 0, 0, INT64_MAX);
    if (!seed.ok()) return fail(io, kName, seed.status());
    const uint64_t s =
        p->has("seed") ? uint64_t(*seed) : uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
    const int n = random_startpos(s);
    io.out << n << " " << *startpos_fen(n, shredder) << "\n";
    return kExitOk;
  }
  if (p->has("seed")) return fail(io, kName, absl::InvalidArgumentError("--seed only goes with --random"));
  if (number.empty()) return fail(io, kName, absl::InvalidArgumentError("missing N (0..959), --random or --number"));
  int n = -1;
  const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), n);
  if (ec != std::errc() || ptr != number.data() + number.size())
    return fail(io, kName, absl::InvalidArgumentError(absl::StrCat("N: '", number, "' is not a number in 0..959")));
  absl::StatusOr<std::string> fen = startpos_fen(n, shredder);
  if (!fen.ok()) return fail(io, kName, fen.status());
  io.out << *fen << "\n";
  return kExitOk;
}

const CommandSpec& startpos_spec() { return kSpec; }

}  // namespace c960::cli
