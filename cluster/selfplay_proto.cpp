#include "cluster/selfplay_proto.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "cluster/config.h"
#include "core/notation.h"
#include "core/position.h"
#include "core/startpos.h"

namespace c960::selfplay {
namespace {

absl::Status bad(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", why));
}

bool printable(absl::string_view s) {
  for (char c : s)
    if (c < 0x20 || c >= 0x7f) return false;
  return true;
}

// SelfPlaySpec::validate() names its own fields; these are the proto's names for them.
std::string proto_field(absl::string_view field) {
  if (field == "positions") return "start_positions";
  if (field == "limits") return "limits (nodes, depth, movetime_ms)";
  if (field == "movetime") return "movetime_ms";
  if (field == "tc") return "tc_base_ms, tc_increment_ms";
  if (field.substr(0, 13) == "adjudication.") return std::string(field.substr(13));
  if (field == "batch") return "adaptive_batch";
  if (field == "band") return "band_lo, band_hi";
  if (field == "sprt") return "sprt_elo0, sprt_elo1, sprt_alpha, sprt_beta";
  return std::string(field);
}

}  // namespace

AdaptiveRule adaptive_rule_from_proto(const v1::SelfPlayJobSpec& p) {
  AdaptiveRule r;
  r.target_width = p.target_width();
  r.band_lo = p.band_lo();
  r.band_hi = p.band_hi();
  r.batch = p.adaptive_batch() ? p.adaptive_batch() : default_batch(p.games_per_position());
  return r;
}

absl::StatusOr<SelfPlaySpec> spec_from_proto(const v1::SelfPlayJobSpec& p) {
  SelfPlaySpec s;
  if (int(!p.start_positions().empty()) + int(p.positions_size() > 0) + int(!p.dfrc_pairs().empty()) > 1)
    return bad("start_positions", "give at most one of start_positions, positions and dfrc_pairs");
  if (p.start_positions().size() > size_t(cluster::kMaxStartPositionsLength)) return bad("start_positions", "too long");
  if (p.dfrc_pairs().size() > size_t(cluster::kMaxStartPositionsLength)) return bad("dfrc_pairs", "too long");
  if (p.positions_size() > cluster::kMaxSelfPlayPositions)
    return bad("positions", absl::StrCat(p.positions_size(), " is more than ", cluster::kMaxSelfPlayPositions));
  if (!p.dfrc_pairs().empty()) {
    absl::StatusOr<std::vector<int>> pairs =
        parse_number_ranges(p.dfrc_pairs(), kDfrcPairs, "DFRC pairs", size_t(cluster::kMaxSelfPlayPositions));
    if (!pairs.ok()) return bad("dfrc_pairs", pairs.status().message());
    for (int pair : *pairs) s.positions.push_back(*dfrc_position(pair));
  } else if (p.positions_size() > 0) {
    for (int i = 0; i < p.positions_size(); ++i) {
      absl::StatusOr<StartPosition> pos = fen_position(p.positions(i).id(), p.positions(i).fen());
      if (!pos.ok()) return bad("positions", absl::StrCat("position ", i + 1, ": ", pos.status().message()));
      s.positions.push_back(*std::move(pos));
    }
  } else {
    absl::StatusOr<std::vector<int>> sps = parse_sp_ranges(p.start_positions().empty() ? "0-959" : p.start_positions());
    if (!sps.ok()) return bad("start_positions", sps.status().message());
    s.positions = chess960_positions(*sps);
  }
  s.date = p.date();
  if (p.engine().size() > size_t(cluster::kMaxEnginePathLength) || !printable(p.engine()))
    return bad("engine", "not a printable path of at most 4096 characters");
  s.engine = p.engine();
  const auto options = [](absl::string_view field, const google::protobuf::RepeatedPtrField<v1::UciOption>& in,
                          std::vector<UciOptionValue>* out) -> absl::Status {
    if (in.size() > cluster::kMaxUciOptions) return bad(field, absl::StrCat("more than ", cluster::kMaxUciOptions));
    for (const v1::UciOption& o : in) {
      if (o.name().empty() || o.name().size() > size_t(cluster::kMaxUciOptionLength) ||
          o.value().size() > size_t(cluster::kMaxUciOptionLength) || !printable(o.name()) || !printable(o.value()))
        return bad(field, "names must be 1..256 and values 0..256 printable characters");
      out->push_back({o.name(), o.value()});
    }
    return absl::OkStatus();
  };
  if (absl::Status st = options("options", p.options(), &s.options); !st.ok()) return st;
  if (p.opponent().size() > size_t(cluster::kMaxEnginePathLength) || !printable(p.opponent()))
    return bad("opponent", "not a printable name of at most 4096 characters");
  s.opponent = p.opponent();
  if (absl::Status st = options("opponent_options", p.opponent_options(), &s.opponent_options); !st.ok()) return st;
  if (p.sprt_elo0() != 0 || p.sprt_elo1() != 0) {
    if (!std::isfinite(p.sprt_elo0()) || !std::isfinite(p.sprt_elo1()) || p.sprt_elo1() <= p.sprt_elo0())
      return bad("sprt_elo1", absl::StrCat(p.sprt_elo1(), " is not more than sprt_elo0 ", p.sprt_elo0()));
    s.sprt.elo0 = p.sprt_elo0();
    s.sprt.elo1 = p.sprt_elo1();
    if (p.sprt_alpha() != 0) s.sprt.alpha = p.sprt_alpha();
    if (p.sprt_beta() != 0) s.sprt.beta = p.sprt_beta();
    s.sprt.normalized = p.sprt_normalized();
  } else if (p.sprt_alpha() != 0 || p.sprt_beta() != 0 || p.sprt_normalized()) {
    return bad("sprt_elo0", "sprt_alpha, sprt_beta or sprt_normalized given without the bounds sprt_elo0 < sprt_elo1");
  }
  if (p.depth() < 0 || p.movetime_ms() < 0) return bad(p.depth() < 0 ? "depth" : "movetime_ms", "negative");
  s.games_per_position = p.games_per_position();
  s.limits = MoveLimits{p.nodes(), p.depth(), p.movetime_ms()};
  s.limits.tc_base_ms = p.tc_base_ms();
  s.limits.tc_increment_ms = p.tc_increment_ms();
  s.random_plies = p.random_plies();
  s.seed = p.seed();
  s.node_jitter_percent = p.node_jitter_percent();
  s.sample_margin_cp = p.sample_margin_cp();
  s.max_plies = p.max_plies();
  // proto3 cannot tell unset from 0: where 0 is not a valid value it means the default.
  const Adjudication defaults;
  const SelfPlaySpec spec_defaults;
  s.adjudication = Adjudication{p.draw_moves(), p.draw_score_cp(), p.draw_min_ply(), p.resign_moves(),
                                p.resign_score_cp() ? p.resign_score_cp() : defaults.resign_score_cp};
  s.hash_mb = p.hash_mb() ? p.hash_mb() : spec_defaults.hash_mb;
  s.engine_timeout_ms = p.engine_timeout_ms() ? p.engine_timeout_ms() : spec_defaults.engine_timeout_ms;
  if (p.games_per_unit() < 0 || p.games_per_unit() > cluster::kMaxSelfPlayGamesPerUnit)
    return bad("games_per_unit", absl::StrCat(p.games_per_unit(), " is not in 0..", cluster::kMaxSelfPlayGamesPerUnit));
  if (p.adaptive_batch() < 0) return bad("adaptive_batch", "negative");
  s.adaptive = adaptive_rule_from_proto(p);
  if (absl::Status st = s.validate(); !st.ok()) {
    const absl::string_view msg = st.message();
    const size_t colon = msg.find(':');
    if (colon == absl::string_view::npos) return st;
    return absl::InvalidArgumentError(absl::StrCat(proto_field(msg.substr(0, colon)), msg.substr(colon)));
  }
  return s;
}

v1::SelfPlayJobSpec spec_to_proto(const SelfPlaySpec& s) {
  v1::SelfPlayJobSpec p;
  const auto all_of_kind = [&](PositionKind kind) {
    return std::all_of(s.positions.begin(), s.positions.end(), [&](const StartPosition& x) { return x.kind == kind; });
  };
  // Ranges of the numbers, which must ascend (as parse_number_ranges gives them).
  const auto ranges = [&] {
    std::string out;
    for (size_t i = 0; i < s.positions.size();) {
      size_t j = i;
      while (j + 1 < s.positions.size() && s.positions[j + 1].number == s.positions[j].number + 1) ++j;
      absl::StrAppend(&out, out.empty() ? "" : ",", s.positions[i].number);
      if (j > i) absl::StrAppend(&out, "-", s.positions[j].number);
      i = j + 1;
    }
    return out;
  };
  const bool ascending =
      std::is_sorted(s.positions.begin(), s.positions.end(),
                     [](const StartPosition& a, const StartPosition& b) { return a.number < b.number; });
  if (ascending && all_of_kind(PositionKind::kChess960)) {
    p.set_start_positions(ranges());
  } else if (ascending && all_of_kind(PositionKind::kDfrc)) {
    p.set_dfrc_pairs(ranges());
  } else {
    for (const StartPosition& x : s.positions) {
      v1::SelfPlayPosition* out = p.add_positions();
      out->set_id(x.id);
      out->set_fen(x.fen);
    }
  }
  p.set_date(s.date);
  p.set_games_per_position(s.games_per_position);
  p.set_engine(s.engine);
  for (const UciOptionValue& o : s.options) {
    v1::UciOption* u = p.add_options();
    u->set_name(o.name);
    u->set_value(o.value);
  }
  p.set_nodes(s.limits.nodes);
  p.set_depth(s.limits.depth);
  p.set_movetime_ms(s.limits.movetime_ms);
  p.set_tc_base_ms(s.limits.tc_base_ms);
  p.set_tc_increment_ms(s.limits.tc_increment_ms);
  p.set_random_plies(s.random_plies);
  p.set_seed(s.seed);
  p.set_node_jitter_percent(s.node_jitter_percent);
  p.set_sample_margin_cp(s.sample_margin_cp);
  p.set_max_plies(s.max_plies);
  p.set_draw_moves(s.adjudication.draw_moves);
  p.set_draw_score_cp(s.adjudication.draw_score_cp);
  p.set_draw_min_ply(s.adjudication.draw_min_ply);
  p.set_resign_moves(s.adjudication.resign_moves);
  p.set_resign_score_cp(s.adjudication.resign_score_cp);
  p.set_opponent(s.opponent);
  for (const UciOptionValue& o : s.opponent_options) {
    v1::UciOption* u = p.add_opponent_options();
    u->set_name(o.name);
    u->set_value(o.value);
  }
  if (s.sprt.enabled()) {
    p.set_sprt_elo0(s.sprt.elo0);
    p.set_sprt_elo1(s.sprt.elo1);
    p.set_sprt_alpha(s.sprt.alpha);
    p.set_sprt_beta(s.sprt.beta);
    p.set_sprt_normalized(s.sprt.normalized);
  }
  p.set_hash_mb(s.hash_mb);
  p.set_engine_timeout_ms(s.engine_timeout_ms);
  if (s.adaptive.enabled()) {
    p.set_target_width(s.adaptive.target_width);
    p.set_band_lo(s.adaptive.band_lo);
    p.set_band_hi(s.adaptive.band_hi);
    p.set_adaptive_batch(s.adaptive.batch);
  }
  return p;
}

absl::StatusOr<StartPosition> unit_position(const v1::SelfPlayUnitSpec& u) {
  if (!u.has_position()) {
    absl::StatusOr<StartPosition> p = chess960_position(u.start_position());
    if (!p.ok()) return bad("start_position", p.status().message());
    return p;
  }
  absl::StatusOr<StartPosition> p = fen_position(u.position().id(), u.position().fen());
  if (!p.ok()) return bad("position", p.status().message());
  return p;
}

void game_to_proto(int game_index, const GameRecord& g, v1::SelfPlayGame* out) {
  out->set_game_index(game_index);
  out->set_start_fen(g.start_fen);
  out->set_white(g.white);
  out->set_black(g.black);
  out->set_result(std::string(result_string(g.result)));
  out->set_termination(std::string(termination_name(g.termination)));
  out->set_detail(g.detail);
  for (Move m : g.moves) out->add_moves(to_uci(m));
  out->set_opening_plies(g.opening_plies);
  out->set_pgn(g.pgn);
}

absl::StatusOr<GameRecord> game_from_proto(const v1::SelfPlayGame& p) {
  GameRecord g;
  g.start_fen = p.start_fen();
  g.white = p.white();
  g.black = p.black();
  g.detail = p.detail();
  g.pgn = p.pgn();
  if (p.pgn().size() > size_t(cluster::kMaxPgnBytes)) return bad("game.pgn", "too long");
  bool found = false;
  for (GameResult r : {GameResult::kWhiteWins, GameResult::kDraw, GameResult::kBlackWins})
    if (result_string(r) == p.result()) g.result = r, found = true;
  if (!found) return bad("game.result", absl::StrCat("'", p.result().substr(0, 16), "' is not 1-0, 1/2-1/2 or 0-1"));
  found = false;
  for (size_t t = 0; t < size_t(Termination::kCount); ++t)
    if (termination_name(Termination(t)) == p.termination()) g.termination = Termination(t), found = true;
  if (!found) return bad("game.termination", absl::StrCat("'", p.termination().substr(0, 32), "' is unknown"));
  if (p.moves_size() > cluster::kMaxGamePlies) return bad("game.moves", "too many");
  if (p.opening_plies() < 0 || p.opening_plies() > p.moves_size()) return bad("game.opening_plies", "out of range");
  g.opening_plies = p.opening_plies();
  absl::StatusOr<Position> start = Position::from_fen(p.start_fen());
  if (!start.ok()) return bad("game.start_fen", start.status().message());
  Position pos = *start;
  std::vector<StateInfo> states(size_t(p.moves_size()));
  for (int i = 0; i < p.moves_size(); ++i) {
    absl::StatusOr<Move> m = parse_uci(pos, p.moves(i));
    if (!m.ok()) return bad("game.moves", absl::StrCat("ply ", i + 1, ": ", m.status().message()));
    g.moves.push_back(*m);
    pos.do_move(*m, states[size_t(i)]);
  }
  g.scores.resize(g.moves.size());
  return g;
}

}  // namespace c960::selfplay
