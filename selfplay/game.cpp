#include "selfplay/game.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "core/movegen.h"
#include "core/notation.h"
#include "core/prng.h"
#include "core/startpos.h"

namespace c960::selfplay {
namespace {

constexpr absl::string_view kTerminationNames[] = {
    "checkmate",   "stalemate",        "threefold_repetition", "fifty_move_rule", "insufficient_material",
    "max_plies",   "adjudicated_draw", "adjudicated_resign",   "illegal_move",    "engine_crash",
    "engine_hang", "engine_error",     "time_forfeit"};
static_assert(std::size(kTerminationNames) == size_t(Termination::kCount));

// The PGN standard's Termination values.
absl::string_view pgn_termination(Termination t) {
  switch (t) {
    case Termination::kMaxPlies:
    case Termination::kAdjudicatedDraw:
    case Termination::kAdjudicatedResign: return "adjudication";
    case Termination::kIllegalMove: return "rules infraction";
    case Termination::kEngineHang:  // no move within the time allowed
    case Termination::kTimeForfeit: return "time forfeit";
    case Termination::kEngineCrash:
    case Termination::kEngineError: return "abandoned";
    default: return "normal";
  }
}

GameResult win_for(Color c) { return c == WHITE ? GameResult::kWhiteWins : GameResult::kBlackWins; }

// The scores of the last n moves of the side that made move index `last` (every second move
// going back); false if some are missing.
bool last_scores(const std::vector<std::optional<int>>& scores, int last, int n, std::vector<int>& out) {
  out.clear();
  for (int i = last; i >= 0 && int(out.size()) < n; i -= 2) {
    if (!scores[i]) return false;
    out.push_back(*scores[i]);
  }
  return int(out.size()) == n;
}

// PGN strings escape backslash and quote.
std::string pgn_escape(absl::string_view s) { return absl::StrReplaceAll(s, {{"\\", "\\\\"}, {"\"", "\\\""}}); }

}  // namespace

absl::string_view termination_name(Termination t) {
  return t < Termination::kCount ? kTerminationNames[size_t(t)] : "none";
}

absl::string_view result_string(GameResult r) {
  return r == GameResult::kWhiteWins ? "1-0" : r == GameResult::kBlackWins ? "0-1" : "1/2-1/2";
}

Key repetition_key(const Position& pos) {
  Key k = pos.key();
  if (pos.ep_square() == SQ_NONE) return k;
  MoveList list;
  generate_legal(pos, list);
  for (Move m : list)
    if (m.kind() == EN_PASSANT) return k;
  return k ^ zobrist::enpassant[file_of(pos.ep_square())];
}

bool insufficient_material(const Position& pos) {
  if (pos.pieces(PAWN, ROOK) || pos.pieces(QUEEN)) return false;
  const Bitboard minors = pos.pieces(KNIGHT, BISHOP);
  if (popcount(minors) <= 1) return true;
  // Only bishops, all on squares of one colour: no mate is possible.
  if (pos.pieces(KNIGHT)) return false;
  const Bitboard b = pos.pieces(BISHOP);
  return !(b & kDarkSquares) || !(b & ~kDarkSquares);
}

Referee::Referee(const Position& start, int max_plies) : pos_(start), max_plies_(max_plies) {
  seen_[repetition_key(pos_)] = 1;
}

std::optional<Ending> Referee::start_ending() const {
  if (!has_legal_move(pos_)) {
    if (pos_.in_check()) return Ending{win_for(~pos_.side_to_move()), Termination::kCheckmate, ""};
    return Ending{GameResult::kDraw, Termination::kStalemate, ""};
  }
  if (insufficient_material(pos_)) return Ending{GameResult::kDraw, Termination::kInsufficientMaterial, ""};
  return std::nullopt;
}

std::optional<Ending> Referee::play(Move m) {
  pos_.do_move(m, states_.emplace_back());
  ++plies_;
  if (pos_.rule50() == 0) seen_.clear();
  const Color mover = ~pos_.side_to_move();
  if (!has_legal_move(pos_)) {
    if (pos_.in_check()) return Ending{win_for(mover), Termination::kCheckmate, ""};
    return Ending{GameResult::kDraw, Termination::kStalemate, ""};
  }
  if (insufficient_material(pos_)) return Ending{GameResult::kDraw, Termination::kInsufficientMaterial, ""};
  // Mate on the hundredth ply was caught above, as the rule requires.
  if (pos_.rule50() >= 100) return Ending{GameResult::kDraw, Termination::kFiftyMoveRule, ""};
  if (++seen_[repetition_key(pos_)] >= 3) return Ending{GameResult::kDraw, Termination::kThreefoldRepetition, ""};
  if (max_plies_ && plies_ >= max_plies_)
    return Ending{GameResult::kDraw, Termination::kMaxPlies, absl::StrCat("reached ", max_plies_, " plies")};
  return std::nullopt;
}

std::optional<Ending> adjudicate(const std::vector<std::optional<int>>& scores, int last, Color us,
                                 const Adjudication& adj, absl::string_view us_name, absl::string_view them_name) {
  std::vector<int> mine, theirs;
  const auto all = [](const std::vector<int>& v, auto pred) { return std::all_of(v.begin(), v.end(), pred); };
  if (adj.resign_moves && last_scores(scores, last, adj.resign_moves, mine) &&
      last_scores(scores, last - 1, adj.resign_moves, theirs)) {
    const int r = adj.resign_score_cp;
    if (all(mine, [r](int s) { return s <= -r; }) && all(theirs, [r](int s) { return s >= r; }))
      return Ending{win_for(~us), Termination::kAdjudicatedResign, absl::StrCat(us_name, " resigns")};
    if (all(mine, [r](int s) { return s >= r; }) && all(theirs, [r](int s) { return s <= -r; }))
      return Ending{win_for(us), Termination::kAdjudicatedResign, absl::StrCat(them_name, " resigns")};
  }
  if (adj.draw_moves && last + 1 >= adj.draw_min_ply && last_scores(scores, last, adj.draw_moves, mine) &&
      last_scores(scores, last - 1, adj.draw_moves, theirs)) {
    const int d = adj.draw_score_cp;
    const auto near0 = [d](int s) { return std::abs(s) <= d; };
    if (all(mine, near0) && all(theirs, near0)) return Ending{GameResult::kDraw, Termination::kAdjudicatedDraw, ""};
  }
  return std::nullopt;
}

absl::StatusOr<GameRecord> play_game(absl::string_view start_fen, Player& white, Player& black,
                                     const MoveLimits& white_limits, const MoveLimits& black_limits,
                                     const GameOptions& options) {
  absl::StatusOr<Position> parsed = Position::from_fen(start_fen);
  if (!parsed.ok()) return absl::InvalidArgumentError(absl::StrCat("start FEN: ", parsed.status().message()));
  if (options.max_plies < 0) return absl::InvalidArgumentError("max_plies: must be >= 0");
  if (options.node_jitter_percent < 0 || options.node_jitter_percent > 90)
    return absl::InvalidArgumentError("node_jitter_percent: must be in 0..90");
  Referee referee(*parsed, options.max_plies);
  Position& pos = referee.position();
  GameRecord game;
  game.start_fen = pos.fen(FenDialect::kShredder);
  Prng prng(options.seed);
  std::optional<Ending> ending = referee.start_ending();
  const auto play = [&](Move m, std::optional<int> score) {
    game.moves.push_back(m);
    game.scores.push_back(score);
    ending = referee.play(m);
  };

  for (size_t i = 0; i < options.opening.size() && !ending; ++i) {
    MoveList legal;
    generate_legal(pos, legal);
    if (!legal.contains(options.opening[i]))
      return absl::InvalidArgumentError(
          absl::StrCat("opening move ", i + 1, " (", to_uci(options.opening[i]), ") is not legal in ", pos.fen()));
    play(options.opening[i], std::nullopt);
  }
  game.opening_plies = game.plies();

  // A player's name in the record and in details: with its side when both have the same name,
  // so that "X (black) resigns" says who. A UCI engine knows its "id name" once started.
  const auto name_of = [&](const Player& p) {
    std::string n = p.name();
    if (n == (&p == &white ? black : white).name()) absl::StrAppend(&n, &p == &white ? " (White)" : " (Black)");
    return n;
  };
  for (Player* p : {&white, &black}) {
    if (ending) break;
    if (const absl::Status s = p->new_game(); !s.ok())
      ending = Ending{win_for(p == &white ? BLACK : WHITE), Termination::kEngineError,
                      absl::StrCat(name_of(*p), ": ", s.message())};
  }
  game.white = name_of(white);
  game.black = name_of(black);

  // The clocks of a time control, in milliseconds.
  int64_t clock[2] = {white_limits.tc_base_ms, black_limits.tc_base_ms};
  while (!ending) {
    const Color us = pos.side_to_move();
    Player& player = us == WHITE ? white : black;
    MoveLimits limits = us == WHITE ? white_limits : black_limits;
    limits.wtime_ms = clock[WHITE];
    limits.btime_ms = clock[BLACK];
    if (options.node_jitter_percent && limits.nodes) {
      const int pct = int(prng.below(2 * options.node_jitter_percent + 1)) - options.node_jitter_percent;
      limits.nodes = std::max<uint64_t>(1, limits.nodes * uint64_t(100 + pct) / 100);
    }
    const std::string start = game.start_fen;
    const auto asked = std::chrono::steady_clock::now();
    PlayerMove answer = player.choose(MoveRequest{pos, start, game.moves, limits, prng.rand64()});
    if (limits.timed()) {
      clock[us] -=
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - asked).count();
      if (clock[us] < 0 && !answer.failed()) {
        ending =
            Ending{win_for(~us), Termination::kTimeForfeit,
                   absl::StrCat(us == WHITE ? game.white : game.black, " lost on time (", -clock[us], " ms over)")};
        break;
      }
      clock[us] += limits.tc_increment_ms;
    }
    if (answer.failed()) {
      ending = Ending{win_for(~us), answer.failure,
                      absl::StrCat(us == WHITE ? game.white : game.black, ": ", answer.detail)};
      break;
    }
    MoveList legal;
    generate_legal(pos, legal);
    if (!legal.contains(answer.move)) {
      ending = Ending{win_for(~us), Termination::kIllegalMove,
                      absl::StrCat(us == WHITE ? game.white : game.black, " played ", to_uci(answer.move),
                                   ", not legal in ", pos.fen(FenDialect::kShredder))};
      break;
    }
    play(answer.move, answer.score_cp);
    if (!ending)
      ending = adjudicate(game.scores, game.plies() - 1, us, options.adjudication,
                          us == WHITE ? game.white : game.black, us == WHITE ? game.black : game.white);
  }
  game.result = ending->result;
  game.termination = ending->termination;
  game.detail = std::move(ending->detail);
  game.pgn = to_pgn(game, options);
  return game;
}

std::string to_pgn(const GameRecord& game, const GameOptions& options) {
  const absl::string_view result = result_string(game.result);
  std::string out;
  const auto tag = [&](absl::string_view name, absl::string_view value) {
    absl::StrAppend(&out, "[", name, " \"", pgn_escape(value), "\"]\n");
  };
  tag("Event", options.event);
  tag("Site", options.site);
  tag("Date", options.date);
  tag("Round", options.round);
  // The engines' names: play_game tells two players of one name apart by their sides ("NAME
  // (White)") for its messages, which the tags need not (and which would make one engine two
  // players to a rating tool).
  const absl::string_view white_side = " (White)", black_side = " (Black)";
  absl::string_view white = game.white, black = game.black;
  if (absl::EndsWith(white, white_side) && absl::EndsWith(black, black_side) &&
      white.substr(0, white.size() - white_side.size()) == black.substr(0, black.size() - black_side.size())) {
    white.remove_suffix(white_side.size());
    black.remove_suffix(black_side.size());
  }
  tag("White", white);
  tag("Black", black);
  tag("Result", result);
  // The start position as Chess960 tools read it: Variant "Chess960" (lichess's and python-chess's
  // name; python-chess and pgn-extract also read cutechess's "fischerandom"), SetUp and FEN, in
  // X-FEN, which PGN readers (pgn-extract among them) understand best; then, for one of the 960,
  // its standard number (data/chess960-positions.csv), which no common tool reads but a person or
  // a script can sort by.
  tag("Variant", "Chess960");
  tag("SetUp", "1");
  absl::StatusOr<Position> start = Position::from_fen(game.start_fen);
  if (!start.ok()) return "";  // records come from play_game, whose FEN parsed
  Position pos = *start;
  tag("FEN", pos.fen(FenDialect::kXFen));
  if (const absl::StatusOr<int> number = number_of_fen(game.start_fen); number.ok())
    tag("StartPosition", absl::StrCat(*number));
  tag("TimeControl", options.time_control);
  tag("Termination", pgn_termination(game.termination));
  tag("PlyCount", absl::StrCat(game.plies()));
  out += "\n";

  // Movetext, wrapped before 80 columns.
  std::string line;
  const auto word = [&](absl::string_view w) {
    if (!line.empty() && line.size() + 1 + w.size() > 79) {
      out += line + "\n";
      line.clear();
    }
    if (!line.empty()) line += ' ';
    line += std::string(w);
  };
  std::deque<StateInfo> states;
  for (size_t i = 0; i < game.moves.size(); ++i) {
    const Move m = game.moves[i];
    if (pos.side_to_move() == WHITE)
      word(absl::StrCat(pos.fullmove_number(), "."));
    else if (i == 0)
      word(absl::StrCat(pos.fullmove_number(), "..."));
    word(to_san(pos, m));
    pos.do_move(m, states.emplace_back());
    if (int(i) + 1 == game.opening_plies) {
      word("{random");
      word("opening}");
    }
  }
  std::string comment = std::string(termination_name(game.termination));
  if (!game.detail.empty()) absl::StrAppend(&comment, ": ", game.detail);
  // Braces end a PGN comment: keep them out of it.
  comment = absl::StrReplaceAll(comment, {{"{", "("}, {"}", ")"}});
  std::vector<std::string> words = absl::StrSplit(comment, ' ', absl::SkipEmpty());
  words.front() = absl::StrCat("{", words.front());
  words.back() += "}";
  for (const std::string& w : words) word(w);
  word(result);
  out += line + "\n\n";
  return out;
}

}  // namespace c960::selfplay
