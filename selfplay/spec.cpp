#include "selfplay/spec.h"

#include <algorithm>
#include <unordered_set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/movegen.h"
#include "core/prng.h"
#include "core/startpos.h"
#include "selfplay/players.h"

namespace c960::selfplay {
namespace {

// splitmix64's finaliser: every input bit affects every output bit.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// "YYYY.MM.DD" with a month 1..12 and a day 1..31.
bool valid_date(absl::string_view d) {
  if (d.size() != 10 || d[4] != '.' || d[7] != '.') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (d[i] < '0' || d[i] > '9') return false;
  const int month = (d[5] - '0') * 10 + (d[6] - '0'), day = (d[8] - '0') * 10 + (d[9] - '0');
  return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

}  // namespace

UciOptionValue builtin_hash_option(int hash_mb) {
  return {"Hash", absl::StrCat(hash_mb > 0 ? hash_mb : kDefaultHashMb)};
}

bool games_repeat(const SelfPlaySpec& spec) {
  if (spec.games_per_position < 2 || spec.limits.movetime_ms > 0 || spec.limits.timed()) return false;
  if (spec.random_plies > 0 || spec.node_jitter_percent > 0 || spec.sample_margin_cp > 0) return false;
  for (const UciOptionValue& o : spec.options) {
    int threads = 0;
    if (absl::EqualsIgnoreCase(o.name, "Threads") && absl::SimpleAtoi(o.value, &threads) && threads > 1) return false;
  }
  return true;
}

absl::Status SelfPlaySpec::validate() const {
  if (absl::Status s = validate_positions(); !s.ok()) return s;
  return validate_settings();
}

absl::Status SelfPlaySpec::validate_positions() const {
  const auto bad = [](absl::string_view field, auto... why) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", why...));
  };
  if (positions.empty()) return bad("positions", "none given");
  if (positions.size() > kMaxPositions) return bad("positions", positions.size(), " is more than ", kMaxPositions);
  std::unordered_set<std::string_view> ids;
  for (const StartPosition& p : positions) {
    if (absl::Status s = check_position_id(p.id); !s.ok()) return bad("positions", s.message());
    if (p.fen.empty() || p.fen.size() > kMaxPositionFenLength) return bad("positions", "position ", p.id, ": bad FEN");
    if (p.kind == PositionKind::kChess960 && (p.number < 0 || p.number >= kStartPositions))
      return bad("positions", p.number, " is not in 0..959");
    if (!ids.insert(p.id).second) return bad("positions", "id '", p.id, "' is given twice");
  }
  return absl::OkStatus();
}

absl::Status SelfPlaySpec::validate_settings() const {
  const auto bad = [](absl::string_view field, auto... why) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", why...));
  };
  if (games_per_position < 1 || games_per_position > kMaxGamesPerPosition)
    return bad("games_per_position", games_per_position, " is not in 1..", kMaxGamesPerPosition);
  if (absl::Status s = adaptive.validate(games_per_position); !s.ok()) return s;
  if (engine.empty()) return bad("engine", "empty (give builtin or a path)");
  if (engine == kBuiltinEngine && !options.empty()) return bad("options", "the built-in engine takes no UCI options");
  if (match()) {
    if (opponent == engine && opponent_path == engine_path && opponent_options.size() == options.size() &&
        std::equal(
            options.begin(), options.end(), opponent_options.begin(),
            [](const UciOptionValue& a, const UciOptionValue& b) { return a.name == b.name && a.value == b.value; }))
      return bad("opponent", "the same engine with the same options as engine: that is self-play");
    if (opponent == kBuiltinEngine && !opponent_options.empty())
      return bad("opponent_options", "the built-in engine takes no UCI options");
    if (games_per_position % 2 != 0)
      return bad("games_per_position", games_per_position, " is odd: a match plays colour-reversed pairs");
    if (adaptive.enabled()) return bad("opponent", "a match does not take an adaptive rule (use its SPRT)");
  } else {
    if (!opponent_options.empty()) return bad("opponent_options", "given without an opponent");
    if (sprt.enabled()) return bad("sprt", "needs two engines (an opponent)");
  }
  if (sprt.enabled())
    if (absl::Status s = sprt.validate(); !s.ok()) return s;
  const int kinds = (limits.nodes > 0) + (limits.depth > 0) + (limits.movetime_ms > 0) + limits.timed();
  if (kinds != 1) return bad("limits", "give exactly one of nodes, depth, movetime, tc");
  if (limits.tc_base_ms < 0 || limits.tc_base_ms > kMaxTcBaseMs)
    return bad("tc", limits.tc_base_ms, " ms is not in 1..", kMaxTcBaseMs, " ms");
  if (limits.tc_increment_ms < 0 || limits.tc_increment_ms > kMaxTcIncrementMs)
    return bad("tc", "increment ", limits.tc_increment_ms, " ms is not in 0..", kMaxTcIncrementMs, " ms");
  if (limits.tc_increment_ms && !limits.timed()) return bad("tc", "an increment without a base time");
  if (limits.wtime_ms || limits.btime_ms) return bad("tc", "clocks are the game's, not the spec's");
  if (limits.depth < 0 || limits.depth > kMaxDepthLimit)
    return bad("depth", limits.depth, " is not in 1..", kMaxDepthLimit);
  if (limits.movetime_ms < 0 || limits.movetime_ms > kMaxMovetimeMs)
    return bad("movetime", limits.movetime_ms, " is not in 1..", kMaxMovetimeMs, " ms");
  if (limits.nodes > kMaxNodesLimit) return bad("nodes", limits.nodes, " is more than 2^40");
  if (random_plies < 0 || random_plies > kMaxRandomPlies)
    return bad("random_plies", random_plies, " is not in 0..", kMaxRandomPlies);
  if (node_jitter_percent < 0 || node_jitter_percent > kMaxNodeJitterPercent)
    return bad("node_jitter_percent", node_jitter_percent, " is not in 0..", kMaxNodeJitterPercent);
  if (node_jitter_percent && !limits.nodes) return bad("node_jitter_percent", "only applies with a nodes limit");
  if (sample_margin_cp < 0 || sample_margin_cp > kMaxSampleMarginCp)
    return bad("sample_margin_cp", sample_margin_cp, " is not in 0..", kMaxSampleMarginCp);
  if (sample_margin_cp && engine != kBuiltinEngine && opponent != kBuiltinEngine)
    return bad("sample_margin_cp", "only the built-in engine samples moves");
  if (max_plies < 0 || max_plies > kMaxPlyLimit) return bad("max_plies", max_plies, " is not in 0..", kMaxPlyLimit);
  if (max_plies && max_plies <= random_plies) return bad("max_plies", "must be more than random_plies");
  const Adjudication& a = adjudication;
  if (a.draw_moves < 0 || a.draw_moves > kMaxAdjudicationMoves)
    return bad("adjudication.draw_moves", a.draw_moves, " is not in 0..", kMaxAdjudicationMoves);
  if (a.draw_score_cp < 0 || a.draw_score_cp > kMaxDrawScoreCp)
    return bad("adjudication.draw_score_cp", a.draw_score_cp, " is not in 0..", kMaxDrawScoreCp);
  if (a.draw_min_ply < 0) return bad("adjudication.draw_min_ply", "negative");
  if (a.draw_min_ply > kMaxDrawMinPly)
    return bad("adjudication.draw_min_ply", a.draw_min_ply, " is more than ", kMaxDrawMinPly);
  if (a.resign_moves < 0 || a.resign_moves > kMaxAdjudicationMoves)
    return bad("adjudication.resign_moves", a.resign_moves, " is not in 0..", kMaxAdjudicationMoves);
  if (a.resign_score_cp < kMinResignScoreCp || a.resign_score_cp > kMaxResignScoreCp)
    return bad("adjudication.resign_score_cp", a.resign_score_cp, " is not in ", kMinResignScoreCp, "..",
               kMaxResignScoreCp);
  if (hash_mb < 1 || hash_mb > kMaxHashMb) return bad("hash_mb", hash_mb, " is not in 1..", kMaxHashMb);
  if (engine_timeout_ms < kMinEngineTimeoutMs || engine_timeout_ms > kMaxEngineTimeoutMs)
    return bad("engine_timeout_ms", engine_timeout_ms, " is not in ", kMinEngineTimeoutMs, "..", kMaxEngineTimeoutMs);
  if (!date.empty() && !valid_date(date)) return bad("date", "'", date.substr(0, 16), "' is not YYYY.MM.DD");
  return absl::OkStatus();
}

std::string describe(const SelfPlaySpec& s) {
  std::string limit = s.limits.nodes     ? absl::StrCat("nodes ", s.limits.nodes)
                      : s.limits.depth   ? absl::StrCat("depth ", s.limits.depth)
                      : s.limits.timed() ? absl::StrCat("tc ", time_control(s.limits))
                                         : absl::StrCat("movetime ", s.limits.movetime_ms);
  std::vector<std::string> opts;
  for (const UciOptionValue& o : s.options) opts.push_back(absl::StrCat(o.name, "=", o.value));
  return absl::StrCat("engine ", s.engine, opts.empty() ? "" : absl::StrCat(" [", absl::StrJoin(opts, ","), "]"), ", ",
                      limit, ", random plies ", s.random_plies, ", node jitter ", s.node_jitter_percent, "%",
                      s.sample_margin_cp ? absl::StrCat(", sample margin ", s.sample_margin_cp, " cp") : "", ", seed ",
                      s.seed, s.adaptive.enabled() ? absl::StrCat(", adaptive: ", describe(s.adaptive)) : "",
                      s.match() ? absl::StrCat(", vs ", s.opponent) : "",
                      s.sprt.enabled() ? absl::StrCat(", SPRT ", describe(s.sprt)) : "");
}

std::vector<StartPosition> chess960_positions(const std::vector<int>& sps) {
  std::vector<StartPosition> out;
  for (int sp : sps)
    if (absl::StatusOr<StartPosition> p = chess960_position(sp); p.ok()) out.push_back(*std::move(p));
  return out;
}

std::vector<MetadataValue> metadata_values(const SelfPlaySpec& s) {
  std::vector<std::string> opts;
  for (const UciOptionValue& o : s.options) opts.push_back(absl::StrCat(o.name, "=", o.value));
  std::vector<MetadataValue> out = {{"engine", s.engine}, {"engine_options", absl::StrJoin(opts, " ")}};
  if (s.limits.nodes) out.push_back({"nodes", absl::StrCat(s.limits.nodes), true});
  if (s.limits.depth) out.push_back({"depth", absl::StrCat(s.limits.depth), true});
  if (s.limits.movetime_ms) out.push_back({"movetime_ms", absl::StrCat(s.limits.movetime_ms), true});
  if (s.limits.timed()) {
    out.push_back({"tc", time_control(s.limits)});
    out.push_back({"tc_base_ms", absl::StrCat(s.limits.tc_base_ms), true});
    out.push_back({"tc_increment_ms", absl::StrCat(s.limits.tc_increment_ms), true});
  }
  const Adjudication& a = s.adjudication;
  const std::vector<MetadataValue> rest = {
      {"positions", absl::StrCat(s.positions.size()), true},
      {"games_per_position", absl::StrCat(s.games_per_position), true},
      {"random_plies", absl::StrCat(s.random_plies), true},
      {"node_jitter_percent", absl::StrCat(s.node_jitter_percent), true},
      {"sample_margin_cp", absl::StrCat(s.sample_margin_cp), true},
      {"seed", absl::StrCat(s.seed), true},
      {"max_plies", absl::StrCat(s.max_plies), true},
      {"draw_moves", absl::StrCat(a.draw_moves), true},
      {"draw_score_cp", absl::StrCat(a.draw_score_cp), true},
      {"draw_min_ply", absl::StrCat(a.draw_min_ply), true},
      {"resign_moves", absl::StrCat(a.resign_moves), true},
      {"resign_score_cp", absl::StrCat(a.resign_score_cp), true},
      {"hash_mb", absl::StrCat(s.hash_mb), true},
      {"date", s.date.empty() ? "????.??.??" : s.date},
  };
  out.insert(out.end(), rest.begin(), rest.end());
  if (s.match()) {
    std::vector<std::string> o;
    for (const UciOptionValue& v : s.opponent_options) o.push_back(absl::StrCat(v.name, "=", v.value));
    out.push_back({"opponent", s.opponent});
    out.push_back({"opponent_options", absl::StrJoin(o, " ")});
    if (s.sprt.enabled()) out.push_back({"sprt", describe(s.sprt)});
  }
  if (s.adaptive.enabled()) {
    const AdaptiveRule& r = s.adaptive;
    out.push_back({"allocation", "adaptive"});
    if (r.band()) {
      out.push_back({"band_lo", absl::StrCat(r.band_lo), true});
      out.push_back({"band_hi", absl::StrCat(r.band_hi), true});
    } else {
      out.push_back({"target_width", absl::StrCat(r.target_width), true});
    }
    out.push_back({"batch", absl::StrCat(r.batch), true});
    out.push_back({"anytime_confidence", absl::StrCat(1 - kDefaultAnytimeAlpha), true});
  }
  return out;
}

std::string time_control(const MoveLimits& limits) {
  // PGN's "base+increment" in seconds, e.g. "10+0.1".
  if (limits.timed())
    return limits.tc_increment_ms
               ? absl::StrCat(double(limits.tc_base_ms) / 1000, "+", double(limits.tc_increment_ms) / 1000)
               : absl::StrCat(double(limits.tc_base_ms) / 1000);
  if (!limits.movetime_ms) return "-";
  return limits.movetime_ms % 1000 == 0 ? absl::StrCat("1/", limits.movetime_ms / 1000) : "?";
}

uint64_t game_seed(uint64_t spec_seed, uint64_t position_key, int game_index) {
  return mix(mix(mix(spec_seed) ^ position_key) ^ uint64_t(uint32_t(game_index)));
}

namespace {

std::unique_ptr<Player> make_player(const SelfPlaySpec& spec, const std::string& engine, const std::string& binary,
                                    const std::vector<UciOptionValue>& options,
                                    const std::optional<OptionPolicy>& policy) {
  if (engine == kBuiltinEngine) return std::make_unique<BuiltinPlayer>(size_t(spec.hash_mb), spec.sample_margin_cp);
  UciConfig config;
  config.path = binary;
  config.options = options;
  config.policy = policy;
  config.move_margin_ms = spec.engine_timeout_ms;
  return std::make_unique<UciPlayer>(config);
}

}  // namespace

absl::StatusOr<Players> make_players(const SelfPlaySpec& spec) {
  if (absl::Status s = spec.validate_settings(); !s.ok()) return s;
  // Each side its own player (a UCI engine its own process), so that neither reads the other's
  // hash. A match: `white` is engine A and `black` engine B, whichever colour each game gives them.
  Players p;
  p.white = make_player(spec, spec.engine, spec.engine_binary(), spec.options, spec.option_policy);
  p.black = spec.match() ? make_player(spec, spec.opponent, spec.opponent_binary(), spec.opponent_options,
                                       spec.opponent_option_policy)
                         : make_player(spec, spec.engine, spec.engine_binary(), spec.options, spec.option_policy);
  return p;
}

absl::StatusOr<GameOptions> game_options(const SelfPlaySpec& spec, const StartPosition& position, int game_index) {
  // Per game: the settings only, not the whole list of positions (up to every DFRC pair); the
  // game's own position is checked through its FEN below.
  if (absl::Status s = spec.validate_settings(); !s.ok()) return s;
  if (game_index < 0) return absl::InvalidArgumentError(absl::StrCat("game index: ", game_index, " is negative"));
  absl::StatusOr<Position> start = Position::from_fen(position.fen);
  if (!start.ok())
    return absl::InvalidArgumentError(absl::StrCat("position ", position.id, ": ", start.status().message()));
  Prng prng(game_seed(spec.seed, position_key(position), game_index));
  // A match's pair shares its opening: drawn from the pair's own stream.
  Prng pair(game_seed(spec.seed, position_key(position), game_index / 2));
  pair.rand64();
  Prng& opening = spec.match() ? pair : prng;
  GameOptions options;
  options.max_plies = spec.max_plies;
  options.adjudication = spec.adjudication;
  options.node_jitter_percent = spec.node_jitter_percent;
  options.seed = prng.rand64();
  options.event = absl::StrCat("c960 selfplay: ", describe(spec));
  options.round = absl::StrCat(position.id, ".", game_index + 1);
  if (!spec.date.empty()) options.date = spec.date;
  options.time_control = time_control(spec.limits);
  // Random opening plies, stopping early should the game end during them.
  Position pos = *start;
  std::vector<StateInfo> states(size_t(spec.random_plies));
  for (int i = 0; i < spec.random_plies; ++i) {
    MoveList list;
    generate_legal(pos, list);
    if (list.size() == 0) break;
    const Move m = list.moves[opening.below(uint64_t(list.size()))];
    options.opening.push_back(m);
    pos.do_move(m, states[size_t(i)]);
  }
  return options;
}

namespace {

// Free text from elsewhere, kept printable and short.
std::string printable(const std::string& s, size_t max_len) {
  std::string out = s.substr(0, max_len);
  for (char& c : out)
    if (c < 0x20 || c >= 0x7f) c = '?';
  return out;
}

bool rules_ending(Termination t) {
  switch (t) {
    case Termination::kCheckmate:
    case Termination::kStalemate:
    case Termination::kThreefoldRepetition:
    case Termination::kFiftyMoveRule:
    case Termination::kInsufficientMaterial:
    case Termination::kMaxPlies: return true;
    default: return false;
  }
}

}  // namespace

absl::StatusOr<GameRecord> check_game(const SelfPlaySpec& spec, const StartPosition& position, int game_index,
                                      GameRecord g) {
  absl::StatusOr<GameOptions> options = game_options(spec, position, game_index);
  if (!options.ok()) return options.status();
  const auto bad = [&](auto... why) {
    return absl::InvalidArgumentError(absl::StrCat("game ", position.id, ".", game_index + 1, ": ", why...));
  };
  const std::string& start = position.fen;
  if (g.start_fen != start) return bad("does not start from position ", position.id);
  if (g.termination >= Termination::kCount) return bad("has no ending");
  const std::vector<Move>& opening = options->opening;
  if (g.opening_plies < 0 || g.opening_plies > int(opening.size()) || g.opening_plies > g.plies())
    return bad("claims ", g.opening_plies, " opening plies; the spec gives ", opening.size());
  Referee referee(*Position::from_fen(start), spec.max_plies);
  std::optional<Ending> ending = referee.start_ending();
  for (int i = 0; i < g.plies(); ++i) {
    if (ending) return bad("goes on after it ended at ply ", i, " (", termination_name(ending->termination), ")");
    if (i < g.opening_plies && g.moves[i] != opening[i]) return bad("opening ply ", i + 1, " is not the spec's");
    MoveList legal;
    generate_legal(referee.position(), legal);
    if (!legal.contains(g.moves[i])) return bad("ply ", i + 1, " is not legal");
    ending = referee.play(g.moves[i]);
  }
  // The opening is cut short only by the end of the game.
  if (g.opening_plies < int(opening.size()) && !(ending && g.opening_plies == g.plies()))
    return bad("has ", g.opening_plies, " opening plies; the spec gives ", opening.size());
  const Color to_move = referee.position().side_to_move();
  const auto win_for = [](Color c) { return c == WHITE ? GameResult::kWhiteWins : GameResult::kBlackWins; };
  if (rules_ending(g.termination)) {
    if (!ending || ending->termination != g.termination || ending->result != g.result)
      return bad("claims ", termination_name(g.termination), " ", result_string(g.result),
                 "; the final position shows ",
                 ending ? absl::StrCat(termination_name(ending->termination), " ", result_string(ending->result))
                        : std::string("a game still going on"));
  } else {
    if (ending)
      return bad("claims ", termination_name(g.termination), " but ended by ", termination_name(ending->termination));
    const Adjudication& adj = spec.adjudication;
    switch (g.termination) {
      case Termination::kAdjudicatedDraw:
        if (!adj.draw_moves || g.result != GameResult::kDraw || g.plies() < adj.draw_min_ply)
          return bad("draw adjudication that the spec does not allow here");
        break;
      case Termination::kAdjudicatedResign:
        if (!adj.resign_moves || g.result == GameResult::kDraw)
          return bad("resignation that the spec does not allow here");
        break;
      case Termination::kTimeForfeit:
        if (!spec.limits.timed()) return bad("time forfeit without a time control");
        if (g.result != win_for(~to_move)) return bad("time_forfeit must lose the game for the side to move");
        break;
      case Termination::kIllegalMove:
      case Termination::kEngineCrash:
      case Termination::kEngineHang:
        // The player to move failed: it loses.
        if (g.result != win_for(~to_move))
          return bad(termination_name(g.termination), " must lose the game for the side to move");
        break;
      default:  // kEngineError: also an engine that would not start, on either side
        if (g.result == GameResult::kDraw) return bad("engine_error cannot be a draw");
        break;
    }
  }
  g.white = printable(g.white, 64);
  g.black = printable(g.black, 64);
  g.detail = printable(g.detail, 256);
  g.scores.assign(g.moves.size(), std::nullopt);
  g.pgn = to_pgn(g, *options);
  return g;
}

absl::StatusOr<GameRecord> play_selfplay_game(const SelfPlaySpec& spec, const StartPosition& position, int game_index,
                                              Players& players) {
  absl::StatusOr<GameOptions> options = game_options(spec, position, game_index);
  if (!options.ok()) return options.status();
  if (!players.white || !players.black) return absl::InvalidArgumentError("players: not created (use make_players)");
  if (spec.match() && game_index % 2 == 1)  // engine B White
    return play_game(position.fen, *players.black, *players.white, spec.limits, spec.limits, *options);
  return play_game(position.fen, *players.white, *players.black, spec.limits, spec.limits, *options);
}

absl::StatusOr<GameRecord> play_selfplay_game(const SelfPlaySpec& spec, int sp, int game_index, Players& players) {
  absl::StatusOr<StartPosition> position = chess960_position(sp);
  if (!position.ok()) return absl::InvalidArgumentError(absl::StrCat("sp: ", position.status().message()));
  return play_selfplay_game(spec, *position, game_index, players);
}

}  // namespace c960::selfplay
