// `c960 uci`: the UCI front end (cli/uci.h) on the process's stdin and stdout.
#include <iostream>

#include "absl/strings/str_cat.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/uci.h"

namespace c960::cli {
namespace {

constexpr char kName[] = "uci";

const CommandSpec kSpec = {
    kName,
    "c960 uci",
    absl::StrCat(
        "Speaks the Universal Chess Interface on stdin and stdout, so that GUIs, cutechess-cli, fastchess, "
        "perftree and c960 selfplay --engine can use c960 as an engine. Commands: uci, isready, ucinewgame, "
        "position startpos|fen FEN [moves M ...] (FEN, X-FEN or Shredder-FEN; castling in either UCI form), "
        "go perft N (Stockfish's divide: 'move: count' lines, a blank line, 'Nodes searched: N'), go depth N | "
        "nodes N | movetime MS | infinite | wtime/btime/winc/binc/movestogo with the built-in engine (info "
        "lines per depth, then bestmove; castling as king takes rook while UCI_Chess960 is true; it is false by "
        "default, as GUIs expect, and castling is then the king's destination), stop, quit, "
        "setoption name UCI_Chess960|Hash|Threads value V (Hash in MB, 1..",
        kUciMaxHashMb, "; Threads for go perft, 1..", kUciMaxThreads,
        ", the search has one), and d (the position's FEN). A search runs on a thread of its own: stop and "
        "isready are answered while it runs, and a good position, go, setoption, ucinewgame or quit stops it "
        "first (its bestmove is printed). A malformed or unknown command is answered with 'info string' saying "
        "what is wrong and otherwise ignored. At the end of "
        "input a search that ends by itself is finished first."),
    {},
    0};

}  // namespace

const CommandSpec& uci_spec() { return kSpec; }

int cmd_uci(const std::vector<std::string>& args, const Io& io) {
  ParsedArgs parsed;
  if (std::optional<int> rc = parse_command(kSpec, args, io, &parsed)) return *rc;
  return run_uci(std::cin, io.out);
}

}  // namespace c960::cli
