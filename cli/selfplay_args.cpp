#include "cli/selfplay_args.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <fstream>
#include <numeric>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/prng.h"
#include "core/startpos.h"
#include "selfplay/positions.h"

namespace c960::cli {
namespace {

using selfplay::SelfPlaySpec;

// One row per option: its help and, for an integer option, its range, default and field. The
// ranges and defaults are selfplay/spec.h's, so the help, this parser and SelfPlaySpec::validate
// cannot disagree.
struct SpecOption {
  OptionSpec option;
  long long lo = 0, hi = 0, fallback = 0;
  void (*set)(SelfPlaySpec&, long long) = nullptr;  // null: not an integer option
};

// "text (lo..hi, default d)".
std::string with_range(absl::string_view text, long long lo, long long hi, absl::string_view default_note = "") {
  return absl::StrCat(text, " (", lo, "..", hi, default_note.empty() ? "" : ", default ", default_note, ")");
}

const std::vector<SpecOption>& spec_options() {
  using namespace selfplay;
  static const std::vector<SpecOption> kOptions = {
      {{"sps", Arity::kOne, "RANGE", absl::StrCat("start positions, e.g. 0-9,518 (default ", kDefaultPositions, ")")}},
      {{"fen", Arity::kMany, "FEN", "play from these positions instead (FEN, X-FEN or Shredder-FEN; ids 1, 2, ...)"}},
      {{"epd", Arity::kOne, "FILE",
        "play from the positions of an opening book (EPD or FEN lines; ids from the id opcode, else the line "
        "number)"}},
      {{"dfrc", Arity::kOne, "RANGE|all",
        absl::StrCat("Double Fischer Random: pairs w*960+b (White's back rank of start position w, Black's of b), "
                     "e.g. 0-99,497798, within 0..",
                     kDfrcPairs - 1)}},
      {{"random", Arity::kOne, "N", "play from N positions chosen by --seed among those of --sps or --dfrc"}},
      {{"games-per-position", Arity::kOne, "N", with_range("games from each start position", 1, kMaxGamesPerPosition)},
       1,
       kMaxGamesPerPosition,
       1,
       [](SelfPlaySpec& s, long long v) { s.games_per_position = int(v); }},
      {{"target-width", Arity::kOne, "W",
        "adaptive: play each position until its anytime 95% interval is narrower than W (then "
        "--games-per-position is the most a position plays)"}},
      {{"band", Arity::kOne, "LO:HI|C+-H",
        "adaptive: play each position until its anytime 95% interval is inside the band of White scores or wholly "
        "above or below it, e.g. 0.50+-0.03 (then --games-per-position is the most a position plays)"}},
      {{"batch", Arity::kOne, "N",
        with_range("adaptive: games a position plays between looks at its interval", kMinAdaptiveBatch,
                   kMaxAdaptiveBatch, absl::StrCat(kDefaultAdaptiveBatch, " or --games-per-position if less"))},
       kMinAdaptiveBatch,
       kMaxAdaptiveBatch,
       kDefaultAdaptiveBatch,
       [](SelfPlaySpec& s, long long v) { s.adaptive.batch = int(v); }},
      {{"engine", Arity::kOne, "builtin|PATH|NAME=PATH",
        "the built-in engine, or a UCI engine binary (NAME=PATH: known as NAME, as cluster workers offer it)"}},
      {{"option", Arity::kMany, "NAME=VALUE", "UCI option for the engine (repeatable)"}},
      {{"opponent", Arity::kOne, "builtin|PATH|NAME=PATH",
        "a match: the second engine (B); games come in colour-reversed pairs from one opening, and the "
        "outputs are pentanomial pair counts, Elo, nElo and LOS of --engine (A) against it"}},
      {{"opponent-option", Arity::kMany, "NAME=VALUE", "UCI option for the opponent (repeatable)"}},
      {{"sprt", Arity::kOne, "elo0=E,elo1=E[,alpha=A,beta=B,model=logistic|normalized]",
        "a match: stop once a sequential probability ratio test on the pairs decides between elo0 and elo1 "
        "(alpha and beta default 0.05, model logistic; pairs are played round by round over the positions)"}},
      {{"nodes", Arity::kOne, "N", with_range("limit each move to N nodes", 1, kMaxNodesLimit)},
       1,
       kMaxNodesLimit,
       0,
       [](SelfPlaySpec& s, long long v) { s.limits.nodes = uint64_t(v); }},
      {{"depth", Arity::kOne, "D", with_range("limit each move to depth D", 1, kMaxDepthLimit)},
       1,
       kMaxDepthLimit,
       0,
       [](SelfPlaySpec& s, long long v) { s.limits.depth = int(v); }},
      {{"movetime", Arity::kOne, "MS",
        with_range("limit each move to MS milliseconds, not reproducible", 1, kMaxMovetimeMs)},
       1,
       kMaxMovetimeMs,
       0,
       [](SelfPlaySpec& s, long long v) { s.limits.movetime_ms = int(v); }},
      {{"tc", Arity::kOne, "BASE[+INC]",
        "a time control in seconds, e.g. 10+0.1: each side's clock starts at BASE and gains INC after each of its "
        "moves; an engine out of time loses (time forfeit); not reproducible"}},
      {{"random-plies", Arity::kOne, "K",
        with_range("random legal moves at the start of each game", 0, kMaxRandomPlies,
                   absl::StrCat("0; ", kDefaultOnePositionRandomPlies, " for a run of one position"))},
       0,
       kMaxRandomPlies,
       0,
       [](SelfPlaySpec& s, long long v) { s.random_plies = int(v); }},
      {{"node-jitter", Arity::kOne, "PCT",
        with_range("vary each move's node limit by up to PCT%, so that games differ", 0, kMaxNodeJitterPercent,
                   absl::StrCat(kDefaultNodeJitterPercent, " with --nodes"))},
       0,
       kMaxNodeJitterPercent,
       0,
       [](SelfPlaySpec& s, long long v) { s.node_jitter_percent = int(v); }},
      {{"sample-margin", Arity::kOne, "CP",
        with_range("built-in engine: pick among moves within CP of the best", 0, kMaxSampleMarginCp, "0")},
       0,
       kMaxSampleMarginCp,
       0,
       [](SelfPlaySpec& s, long long v) { s.sample_margin_cp = int(v); }},
      {{"seed", Arity::kOne, "S",
        absl::StrCat("seed of the random plies, node jitter and move sampling (default ", kDefaultSeed, ")")},
       0,
       INT64_MAX,
       kDefaultSeed,
       [](SelfPlaySpec& s, long long v) { s.seed = uint64_t(v); }},
      {{"max-plies", Arity::kOne, "N", with_range("draw a game reaching N plies", 0, kMaxPlyLimit, "0: no limit")},
       0,
       kMaxPlyLimit,
       0,
       [](SelfPlaySpec& s, long long v) { s.max_plies = int(v); }},
      {{"draw-moves", Arity::kOne, "N",
        with_range("adjudicate a draw after N moves per side within --draw-score", 0, kMaxAdjudicationMoves, "0: off")},
       0,
       kMaxAdjudicationMoves,
       0,
       [](SelfPlaySpec& s, long long v) { s.adjudication.draw_moves = int(v); }},
      {{"draw-score", Arity::kOne, "CP",
        with_range("score bound for draw adjudication", 0, kMaxDrawScoreCp, absl::StrCat(kDefaultDrawScoreCp))},
       0,
       kMaxDrawScoreCp,
       kDefaultDrawScoreCp,
       [](SelfPlaySpec& s, long long v) { s.adjudication.draw_score_cp = int(v); }},
      {{"draw-min-ply", Arity::kOne, "N", with_range("no draw adjudication before ply N", 0, kMaxDrawMinPly, "0")},
       0,
       kMaxDrawMinPly,
       0,
       [](SelfPlaySpec& s, long long v) { s.adjudication.draw_min_ply = int(v); }},
      {{"resign-moves", Arity::kOne, "N",
        with_range("adjudicate a loss after N moves per side beyond --resign-score", 0, kMaxAdjudicationMoves,
                   "0: off")},
       0,
       kMaxAdjudicationMoves,
       0,
       [](SelfPlaySpec& s, long long v) { s.adjudication.resign_moves = int(v); }},
      {{"resign-score", Arity::kOne, "CP",
        with_range("score bound for resign adjudication", kMinResignScoreCp, kMaxResignScoreCp,
                   absl::StrCat(kDefaultResignScoreCp))},
       kMinResignScoreCp,
       kMaxResignScoreCp,
       kDefaultResignScoreCp,
       [](SelfPlaySpec& s, long long v) { s.adjudication.resign_score_cp = int(v); }},
      {{"hash", Arity::kOne, "MB",
        with_range("built-in engine hash per player", 1, kMaxHashMb, absl::StrCat(kDefaultHashMb))},
       1,
       kMaxHashMb,
       kDefaultHashMb,
       [](SelfPlaySpec& s, long long v) { s.hash_mb = int(v); }},
      {{"engine-timeout", Arity::kOne, "MS",
        with_range("UCI engine: time beyond movetime before it counts as hung", kMinEngineTimeoutMs,
                   kMaxEngineTimeoutMs, absl::StrCat(kDefaultEngineTimeoutMs))},
       kMinEngineTimeoutMs,
       kMaxEngineTimeoutMs,
       kDefaultEngineTimeoutMs,
       [](SelfPlaySpec& s, long long v) { s.engine_timeout_ms = int(v); }},
  };
  return kOptions;
}

}  // namespace

std::vector<OptionSpec> selfplay_spec_options() {
  std::vector<OptionSpec> out;
  for (const SpecOption& o : spec_options()) out.push_back(o.option);
  return out;
}

namespace {

absl::StatusOr<std::string> read_text(const std::string& option, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("--", option, ": cannot read '", path, "'"));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// N of the numbers, chosen by the seed (a partial Fisher-Yates shuffle), in ascending order.
std::vector<int> choose(std::vector<int> from, size_t n, uint64_t seed) {
  Prng prng(seed ^ 0x72616e646f6dULL);  // "random": apart from the games' streams
  for (size_t i = 0; i < n; ++i) std::swap(from[i], from[i + prng.below(from.size() - i)]);
  from.resize(n);
  std::sort(from.begin(), from.end());
  return from;
}

}  // namespace

absl::StatusOr<std::vector<selfplay::StartPosition>> positions_from_args(const ParsedArgs& p, uint64_t seed) {
  using selfplay::StartPosition;
  const int sources = int(p.has("sps")) + int(p.has("fen")) + int(p.has("epd")) + int(p.has("dfrc"));
  if (sources > 1) return absl::InvalidArgumentError("give one of --sps, --fen, --epd, --dfrc");
  // --sp: `c960 selfplay`'s one start position, as in `c960 perft --sp` (submit has no --sp).
  if (p.has("sp") && sources > 0)
    return absl::InvalidArgumentError("--sp does not go with --sps, --fen, --epd or --dfrc");
  std::vector<StartPosition> out;
  if (p.has("fen") || p.has("epd")) {
    if (p.has("random")) return absl::InvalidArgumentError("--random goes with --sps or --dfrc, not --fen or --epd");
    if (p.has("epd")) {
      absl::StatusOr<std::string> text = read_text("epd", p.get("epd"));
      if (!text.ok()) return text.status();
      absl::StatusOr<std::vector<StartPosition>> book = selfplay::parse_opening_book(*text);
      if (!book.ok())
        return absl::InvalidArgumentError(absl::StrCat("--epd ", p.get("epd"), ": ", book.status().message()));
      return *std::move(book);
    }
    const std::vector<std::string>& fens = p.all("fen");
    if (fens.empty()) return absl::InvalidArgumentError("--fen: give at least one FEN");
    for (size_t i = 0; i < fens.size(); ++i) {
      absl::StatusOr<StartPosition> pos = selfplay::fen_position(absl::StrCat(i + 1), fens[i]);
      if (!pos.ok()) return absl::InvalidArgumentError(absl::StrCat("--fen ", i + 1, ": ", pos.status().message()));
      out.push_back(*std::move(pos));
    }
    return out;
  }
  const bool dfrc = p.has("dfrc");
  std::string ranges = dfrc ? p.get("dfrc") : p.get("sps", selfplay::kDefaultPositions);
  if (p.has("sp")) {
    absl::StatusOr<long long> sp = p.get_int("sp", 0, 0, kStartPositions - 1);
    if (!sp.ok()) return sp.status();
    ranges = absl::StrCat(*sp);
  }
  if (dfrc && ranges == "all") ranges = absl::StrCat("0-", kDfrcPairs - 1);
  absl::StatusOr<std::vector<int>> numbers = dfrc ? parse_number_ranges(ranges, kDfrcPairs, "DFRC pairs")
                                                  : parse_number_ranges(ranges, kStartPositions, "start positions");
  if (!numbers.ok())
    return absl::InvalidArgumentError(absl::StrCat(dfrc ? "--dfrc: " : "--sps: ", numbers.status().message()));
  if (p.has("random")) {
    absl::StatusOr<long long> n = p.get_int("random", 1, 1, (long long)numbers->size());
    if (!n.ok()) return n.status();
    *numbers = choose(*std::move(numbers), size_t(*n), seed);
  }
  if (!dfrc) return selfplay::chess960_positions(*numbers);
  if (numbers->size() > selfplay::kMaxPositions)
    return absl::InvalidArgumentError(absl::StrCat("--dfrc: more than ", selfplay::kMaxPositions, " pairs"));
  for (int pair : *numbers) out.push_back(*selfplay::dfrc_position(pair));
  return out;
}

std::string today_utc() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  return absl::StrFormat("%04d.%02d.%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
}

absl::StatusOr<SelfPlaySpec> selfplay_spec_from_args(const ParsedArgs& p) {
  SelfPlaySpec spec;
  if (!p.has("games-per-position")) return absl::InvalidArgumentError("--games-per-position is required");
  if (!p.has("engine")) return absl::InvalidArgumentError("--engine is required (builtin or the path of a UCI engine)");
  // NAME=PATH runs PATH under the name NAME (as a cluster worker offers it), so that a local run
  // and a job naming NAME are the same games, PGN tags included.
  const auto engine = [&](const char* option, const char* options_option, std::string* name, std::string* path,
                          std::vector<selfplay::UciOptionValue>* options) -> absl::Status {
    *name = p.get(option);
    if (const size_t eq = name->find('='); eq != std::string::npos) {
      *path = name->substr(eq + 1);
      name->resize(eq);
      if (name->empty() || path->empty())
        return absl::InvalidArgumentError(absl::StrCat("--", option, ": NAME=PATH needs both a name and a path"));
    }
    if (name->empty()) return absl::InvalidArgumentError(absl::StrCat("--", option, ": empty"));
    for (const std::string& o : p.all(options_option)) {
      absl::StatusOr<selfplay::UciOptionValue> v = selfplay::parse_option_assignment(o);
      if (!v.ok()) return absl::InvalidArgumentError(absl::StrCat("--", options_option, ": ", v.status().message()));
      options->push_back(*v);
    }
    return absl::OkStatus();
  };
  if (absl::Status s = engine("engine", "option", &spec.engine, &spec.engine_path, &spec.options); !s.ok()) return s;
  if (p.has("opponent"))
    if (absl::Status s =
            engine("opponent", "opponent-option", &spec.opponent, &spec.opponent_path, &spec.opponent_options);
        !s.ok())
      return s;
  if (p.has("opponent-option") && !p.has("opponent"))
    return absl::InvalidArgumentError("--opponent-option goes with --opponent");
  if (p.has("sprt")) {
    if (!p.has("opponent")) return absl::InvalidArgumentError("--sprt goes with --opponent (a match of two engines)");
    if (absl::Status s = selfplay::parse_sprt("--sprt", p.get("sprt"), &spec.sprt); !s.ok()) return s;
  }
  if (int(p.has("nodes")) + int(p.has("depth")) + int(p.has("movetime")) + int(p.has("tc")) != 1)
    return absl::InvalidArgumentError("give exactly one of --nodes, --depth, --movetime, --tc");
  if (p.has("tc")) {
    const std::string& tc = p.get("tc");
    const size_t plus = tc.find('+');
    double base = 0, inc = 0;
    if (!absl::SimpleAtod(tc.substr(0, plus), &base) ||
        (plus != std::string::npos && !absl::SimpleAtod(tc.substr(plus + 1), &inc)) || !(base > 0) || !(inc >= 0) ||
        base * 1000 > double(selfplay::kMaxTcBaseMs) || inc * 1000 > double(selfplay::kMaxTcIncrementMs))
      return absl::InvalidArgumentError(absl::StrCat("--tc: '", tc.substr(0, 40),
                                                     "' is not BASE[+INC] in seconds (e.g. 10+0.1; BASE above 0, "
                                                     "at most 86400, INC at most 3600)"));
    spec.limits.tc_base_ms = std::max<int64_t>(1, std::llround(base * 1000));
    spec.limits.tc_increment_ms = std::llround(inc * 1000);
  }
  for (const SpecOption& o : spec_options()) {
    if (!o.set) continue;
    absl::StatusOr<long long> v = p.get_int(o.option.name, o.fallback, o.lo, o.hi);
    if (!v.ok()) return v.status();
    o.set(spec, *v);
  }
  if (p.has("target-width")) {
    const std::string& w = p.get("target-width");
    if (!absl::SimpleAtod(w, &spec.adaptive.target_width) || !(spec.adaptive.target_width > 0))
      return absl::InvalidArgumentError(absl::StrCat("--target-width: '", w.substr(0, 40), "' is not a number in (",
                                                     selfplay::kMinTargetWidth, ", 1)"));
  }
  if (p.has("band"))
    if (absl::Status s = selfplay::parse_band("--band", p.get("band"), &spec.adaptive); !s.ok()) return s;
  if (p.has("target-width") && p.has("band"))
    return absl::InvalidArgumentError("--band: give --band or --target-width, not both");
  if (p.has("batch") && !spec.adaptive.enabled())
    return absl::InvalidArgumentError("--batch goes with --target-width or --band");
  // Unless given, a batch is at most the cap.
  if (!p.has("batch")) spec.adaptive.batch = selfplay::default_batch(spec.games_per_position);
  absl::StatusOr<std::vector<selfplay::StartPosition>> positions = positions_from_args(p, spec.seed);
  if (!positions.ok()) return positions.status();
  spec.positions = *std::move(positions);
  spec.date = today_utc();
  // Games that differ by default: a --nodes limit's node jitter unless given (0 turns it off).
  if (spec.limits.nodes && !p.has("node-jitter")) spec.node_jitter_percent = selfplay::kDefaultNodeJitterPercent;
  // A run of one position plays varied openings unless told: without random plies its games
  // mostly follow one line (selfplay/lines.h), and count for far fewer games than they are.
  if (spec.positions.size() == 1 && spec.games_per_position > 1 && !p.has("random-plies"))
    spec.random_plies = selfplay::kDefaultOnePositionRandomPlies;
  if (absl::Status s = spec.validate(); !s.ok()) return s;
  if (selfplay::games_repeat(spec)) {
    std::vector<std::string> fixes = {"--random-plies K"};
    fixes.push_back(spec.limits.nodes ? "--node-jitter PCT" : "--nodes N (its node jitter is on by default)");
    if (spec.engine == selfplay::kBuiltinEngine) fixes.push_back("--sample-margin CP");
    fixes.push_back("--games-per-position 1");
    std::string list;
    for (size_t i = 0; i < fixes.size(); ++i)
      absl::StrAppend(&list, i == 0 ? "" : i + 1 == fixes.size() ? " or " : ", ", fixes[i]);
    return absl::InvalidArgumentError(absl::StrCat(
        "--games-per-position ", spec.games_per_position, ": every game of a position would repeat the first (a fixed ",
        spec.limits.nodes ? "--nodes" : "--depth",
        " limit with no random plies, node jitter or move sampling), so its statistics would count copies; give ",
        list));
  }
  return spec;
}

}  // namespace c960::cli
