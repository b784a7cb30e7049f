#include "selfplay/players.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "core/movegen.h"
#include "core/notation.h"

namespace c960::selfplay {

PlayerMove RandomPlayer::choose(const MoveRequest& request) {
  MoveList list;
  generate_legal(request.pos, list);
  PlayerMove pm;
  if (list.size() == 0) {
    pm.failure = Termination::kEngineError;
    pm.detail = "asked to move in a finished position";
    return pm;
  }
  pm.move = list.moves[prng_.below(uint64_t(list.size()))];
  return pm;
}

PlayerMove BuiltinPlayer::choose(const MoveRequest& request) {
  // Under a time control the built-in engine thinks for a share of its clock: a thirtieth of
  // what is left and most of the increment, never more than half of what is left.
  int movetime = request.limits.movetime_ms;
  if (request.limits.timed()) {
    const int64_t left = request.pos.side_to_move() == WHITE ? request.limits.wtime_ms : request.limits.btime_ms;
    const int64_t share = left / 30 + request.limits.tc_increment_ms * 3 / 4;
    movetime = int(std::max<int64_t>(1, std::min(share, left / 2)));
  }
  const engine::Limits limits{request.limits.nodes, request.limits.depth, movetime, sample_margin_cp_, request.random};
  const engine::SearchResult r = engine_.search(request.pos, limits);
  last_nodes_ = r.nodes;
  PlayerMove pm;
  if (!r.best) {
    pm.failure = Termination::kEngineError;
    pm.detail = "asked to move in a finished position";
    return pm;
  }
  pm.move = r.best;
  pm.score_cp = engine::is_mate_score(r.score)
                    ? (r.score > 0 ? 1 : -1) * (kMateScoreCp - (engine::VALUE_MATE - std::abs(r.score)))
                    : r.score;
  return pm;
}

absl::Status UciPlayer::new_game() {
  if (!engine_ || !engine_->alive()) {
    engine_.reset();
    absl::StatusOr<std::unique_ptr<UciEngine>> e = UciEngine::start(config_);
    ++starts_;
    if (!e.ok()) return e.status();
    engine_ = *std::move(e);
    name_ = engine_->id_name();
  }
  absl::Status s = engine_->new_game();
  if (!s.ok()) engine_.reset();
  return s;
}

PlayerMove UciPlayer::choose(const MoveRequest& request) {
  PlayerMove pm;
  if (!engine_ || !engine_->alive()) {
    pm.failure = Termination::kEngineCrash;
    pm.detail = "engine is not running";
    return pm;
  }
  std::vector<std::string> moves;
  moves.reserve(request.moves.size());
  for (Move m : request.moves) moves.push_back(to_uci(m, CastlingNotation::kKingTakesRook));
  UciGoLimits limits{request.limits.nodes, request.limits.depth, request.limits.movetime_ms};
  if (request.limits.timed()) {
    limits.timed = true;
    limits.wtime_ms = request.limits.wtime_ms;
    limits.btime_ms = request.limits.btime_ms;
    limits.winc_ms = limits.binc_ms = request.limits.tc_increment_ms;
    limits.white_to_move = request.pos.side_to_move() == WHITE;
  }
  absl::StatusOr<UciSearchReply> reply = engine_->go(request.start_fen, moves, limits);
  if (!reply.ok()) {
    const absl::Status& s = reply.status();
    pm.failure = absl::IsUnavailable(s)        ? Termination::kEngineCrash
                 : absl::IsDeadlineExceeded(s) ? Termination::kEngineHang
                                               : Termination::kEngineError;
    pm.detail = std::string(s.message());
    engine_.reset();  // whatever state it is in, the next game gets a fresh process
    return pm;
  }
  absl::StatusOr<Move> m = parse_uci(request.pos, reply->bestmove);
  if (!m.ok()) {
    pm.failure = Termination::kIllegalMove;
    pm.detail = absl::StrCat("bestmove ", reply->bestmove, ": ", m.status().message());
    engine_.reset();  // it disagrees with us about the position: start it afresh
    return pm;
  }
  pm.move = *m;
  pm.score_cp = reply->score_cp;
  return pm;
}

}  // namespace c960::selfplay
