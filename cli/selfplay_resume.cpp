#include "cli/selfplay_resume.h"

#include <charconv>
#include <deque>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/notation.h"

namespace c960::cli {
namespace {

using selfplay::GameRecord;
using selfplay::PlayedGame;
using selfplay::SelfPlaySpec;

// The positions in one line: how many, the first and last ids, and a fingerprint of all ids and
// FENs (a book can hold a million positions).
std::string positions_value(const SelfPlaySpec& spec) {
  if (spec.positions.empty()) return "none";
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
  for (const selfplay::StartPosition& p : spec.positions)
    for (char c : p.id + "\n" + p.fen + "\n") h = (h ^ uint8_t(c)) * 0x100000001b3ULL;
  return absl::StrFormat("%d (%s..%s, fingerprint %016x)", spec.positions.size(), spec.positions.front().id,
                         spec.positions.back().id, h);
}

bool to_int(const std::string& s, long long lo, long long hi, long long* out) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size() && *out >= lo && *out <= hi;
}

}  // namespace

std::vector<ResumeOption> selfplay_resume_options(const SelfPlaySpec& spec, const std::string& format,
                                                  const std::string& out, const std::string& pgn) {
  std::vector<std::string> opts;
  for (const selfplay::UciOptionValue& o : spec.options) opts.push_back(absl::StrCat(o.name, "=", o.value));
  const selfplay::Adjudication& a = spec.adjudication;
  std::vector<ResumeOption> r = {
      {"positions", positions_value(spec)},
      {"games-per-position", absl::StrCat(spec.games_per_position)},
      {"engine", spec.engine_path.empty() ? spec.engine : absl::StrCat(spec.engine, "=", spec.engine_path)},
      {"option", absl::StrJoin(opts, " ")},
  };
  if (spec.limits.nodes) r.push_back({"nodes", absl::StrCat(spec.limits.nodes)});
  if (spec.limits.depth) r.push_back({"depth", absl::StrCat(spec.limits.depth)});
  if (spec.limits.movetime_ms) r.push_back({"movetime", absl::StrCat(spec.limits.movetime_ms)});
  if (spec.limits.timed())
    r.push_back({"tc", absl::StrCat(spec.limits.tc_base_ms, "+", spec.limits.tc_increment_ms, " ms")});
  const std::vector<ResumeOption> rest = {
      {"random-plies", absl::StrCat(spec.random_plies)},
      {"node-jitter", absl::StrCat(spec.node_jitter_percent)},
      {"sample-margin", absl::StrCat(spec.sample_margin_cp)},
      {"seed", absl::StrCat(spec.seed)},
      {"max-plies", absl::StrCat(spec.max_plies)},
      {"draw-moves", absl::StrCat(a.draw_moves)},
      {"draw-score", absl::StrCat(a.draw_score_cp)},
      {"draw-min-ply", absl::StrCat(a.draw_min_ply)},
      {"resign-moves", absl::StrCat(a.resign_moves)},
      {"resign-score", absl::StrCat(a.resign_score_cp)},
      {"hash", absl::StrCat(spec.hash_mb)},
      {"engine-timeout", absl::StrCat(spec.engine_timeout_ms)},
      {"format", format},
      {"out", out},
      {"pgn", pgn},
  };
  r.insert(r.end(), rest.begin(), rest.end());
  // Only when on, so that the resume files of fixed-count runs read as before.
  if (spec.adaptive.enabled()) r.push_back({"adaptive", describe(spec.adaptive)});
  if (spec.match()) {
    std::vector<std::string> o;
    for (const selfplay::UciOptionValue& v : spec.opponent_options) o.push_back(absl::StrCat(v.name, "=", v.value));
    r.push_back({"opponent",
                 spec.opponent_path.empty() ? spec.opponent : absl::StrCat(spec.opponent, "=", spec.opponent_path)});
    r.push_back({"opponent-option", absl::StrJoin(o, " ")});
    if (spec.sprt.enabled()) r.push_back({"sprt", describe(spec.sprt)});
  }
  return r;
}

std::vector<std::string> date_record(const SelfPlaySpec& spec) { return {"date", spec.date}; }

std::vector<std::string> game_record(const PlayedGame& g) {
  const GameRecord& r = g.record;
  std::vector<std::string> moves;
  for (Move m : r.moves) moves.push_back(to_uci(m));
  return {"game",
          absl::StrCat(g.position),
          absl::StrCat(g.index),
          absl::StrCat(int(r.result)),
          absl::StrCat(int(r.termination)),
          absl::StrCat(r.opening_plies),
          absl::StrJoin(moves, " "),
          r.white,
          r.black,
          r.detail,
          r.pgn};
}

absl::StatusOr<PlayedGame> game_from_record(const SelfPlaySpec& spec, const std::vector<std::string>& f) {
  if (f.size() != 11 || f[0] != "game") return absl::InvalidArgumentError("not a game record");
  long long position = 0, index = 0, result = 0, termination = 0, opening = 0;
  if (!to_int(f[1], 0, (long long)spec.positions.size() - 1, &position) ||
      !to_int(f[2], 0, spec.games_per_position - 1, &index))
    return absl::InvalidArgumentError(absl::StrCat("game ", f[1], ".", f[2], " is not a game of this run"));
  if (!to_int(f[3], 0, int(selfplay::GameResult::kBlackWins), &result) ||
      !to_int(f[4], 0, int(selfplay::Termination::kCount) - 1, &termination) || !to_int(f[5], 0, 1 << 20, &opening))
    return absl::InvalidArgumentError(absl::StrCat("game ", f[1], ".", f[2], ": bad result, ending or opening"));
  const selfplay::StartPosition& start = spec.positions[size_t(position)];
  PlayedGame g{size_t(position), int(index), {}};
  GameRecord& r = g.record;
  r.start_fen = start.fen;
  r.result = selfplay::GameResult(result);
  r.termination = selfplay::Termination(termination);
  r.opening_plies = int(opening);
  r.white = f[7];
  r.black = f[8];
  r.detail = f[9];
  // Replayed only to read the moves; check_game judges them.
  Position pos = *Position::from_fen(start.fen);
  std::deque<StateInfo> states;
  for (absl::string_view uci : absl::StrSplit(f[6], ' ', absl::SkipEmpty())) {
    absl::StatusOr<Move> m = parse_uci(pos, uci);
    if (!m.ok())
      return absl::InvalidArgumentError(absl::StrCat("game ", start.id, ".", index + 1, ": ", m.status().message()));
    r.moves.push_back(*m);
    pos.do_move(*m, states.emplace_back());
  }
  r.scores.assign(r.moves.size(), std::nullopt);
  absl::StatusOr<GameRecord> checked = selfplay::check_game(spec, start, int(index), r);
  if (!checked.ok()) return checked.status();
  r.pgn = f[10];  // as written, byte for byte
  return g;
}

}  // namespace c960::cli
