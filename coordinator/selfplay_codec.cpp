#include "coordinator/selfplay_codec.h"

#include <cstring>
#include <openssl/sha.h>

#include "absl/strings/str_cat.h"
#include "cluster/selfplay_proto.h"
#include "core/movegen.h"
#include "core/startpos.h"
#include "selfplay/stats.h"

namespace c960::cluster {
namespace {

constexpr size_t kSummaryBytes = 12;

// Endings the final position shows: a replay tells their detail, so it is not stored.
bool rules_ending(selfplay::Termination t) {
  using T = selfplay::Termination;
  return t == T::kCheckmate || t == T::kStalemate || t == T::kThreefoldRepetition || t == T::kFiftyMoveRule ||
         t == T::kInsufficientMaterial || t == T::kMaxPlies;
}

}  // namespace

std::string encode_moves(const std::vector<Move>& moves) {
  std::string out(moves.size() * 2, '\0');
  for (size_t i = 0; i < moves.size(); ++i) {
    out[2 * i] = char(moves[i].raw() & 0xFF);
    out[2 * i + 1] = char(moves[i].raw() >> 8);
  }
  return out;
}

std::vector<Move> decode_moves(const std::string& bytes) {
  std::vector<Move> out(bytes.size() / 2);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = Move(uint16_t(uint8_t(bytes[2 * i]) | (uint16_t(uint8_t(bytes[2 * i + 1])) << 8)));
  return out;
}

std::string pack_summaries(const std::vector<GameSummary>& games) {
  std::string out(games.size() * kSummaryBytes, '\0');
  for (size_t i = 0; i < games.size(); ++i) {
    char* p = out.data() + i * kSummaryBytes;
    p[0] = char(games[i].result);
    p[1] = char(games[i].termination);
    p[2] = char(games[i].plies & 0xFF);
    p[3] = char(games[i].plies >> 8);
    for (int b = 0; b < 8; ++b) p[4 + b] = char((games[i].hash >> (8 * b)) & 0xFF);
  }
  return out;
}

absl::StatusOr<std::vector<GameSummary>> unpack_summaries(const std::string& bytes) {
  if (bytes.size() % kSummaryBytes != 0) return absl::InternalError("game summaries: not whole");
  std::vector<GameSummary> out(bytes.size() / kSummaryBytes);
  for (size_t i = 0; i < out.size(); ++i) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(bytes.data()) + i * kSummaryBytes;
    out[i].result = p[0];
    out[i].termination = p[1];
    out[i].plies = uint16_t(p[2] | (p[3] << 8));
    for (int b = 0; b < 8; ++b) out[i].hash |= uint64_t(p[4 + b]) << (8 * b);
  }
  return out;
}

std::string result_digest(const v1::UnitResult& canonical) {
  const std::string bytes = canonical.SerializeAsString();
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), md);
  return std::string(reinterpret_cast<const char*>(md), sizeof md);
}

bool stores_game(const v1::SelfPlayJobSpec& spec, int64_t game_index) {
  switch (spec.store_games()) {
    case v1::STORE_GAMES_NONE: return false;
    case v1::STORE_GAMES_SAMPLE: return game_index < spec.store_games_sample();
    default: return true;
  }
}

absl::StatusOr<SelfPlayCompact> compact_result(const v1::SelfPlayUnitSpec& spec, int32_t sp,
                                               const v1::UnitResult& canonical) {
  SelfPlayCompact out;
  out.settlement.sp = sp;
  out.settlement.first_game = spec.first_game();
  for (const v1::SelfPlayGame& g : canonical.selfplay().games()) {
    absl::StatusOr<selfplay::GameRecord> rec = selfplay::game_from_proto(g);
    if (!rec.ok()) return rec.status();
    GameSummary s;
    s.result = uint8_t(rec->result);
    s.termination = uint8_t(rec->termination);
    s.plies = uint16_t(rec->plies());
    s.hash = selfplay::game_hash(*rec);
    out.settlement.games.push_back(s);
    if (!stores_game(spec.job(), g.game_index())) continue;
    StoredGame sg;
    sg.sp = sp;
    sg.index = g.game_index();
    sg.result = int32_t(rec->result);
    sg.termination = int32_t(rec->termination);
    sg.opening_plies = rec->opening_plies;
    sg.white = rec->white;
    sg.black = rec->black;
    if (!rules_ending(rec->termination)) sg.detail = rec->detail;
    sg.moves = encode_moves(rec->moves);
    out.settlement.stored.push_back(std::move(sg));
  }
  out.settled.set_digest(result_digest(canonical));
  out.settled.set_games(canonical.selfplay().games_size());
  out.settled.set_summary(pack_summaries(out.settlement.games));
  return out;
}

absl::StatusOr<SelfPlaySettlement> settlement_from_settled(const v1::SelfPlayUnitSpec& spec, int32_t sp,
                                                           const std::string& settled) {
  v1::store::SelfPlaySettled s;
  if (!s.ParseFromString(settled)) return absl::InternalError("settled self-play result does not parse");
  absl::StatusOr<std::vector<GameSummary>> games = unpack_summaries(s.summary());
  if (!games.ok()) return games.status();
  SelfPlaySettlement out;
  out.sp = sp;
  out.first_game = spec.first_game();
  out.games = std::move(*games);
  return out;
}

absl::StatusOr<v1::SelfPlayGame> expand_game(const selfplay::SelfPlaySpec& spec,
                                             const selfplay::StartPosition& position, const StoredGame& g,
                                             const std::string& white, const std::string& black) {
  const auto damaged = [&](auto... why) {
    return absl::InternalError(absl::StrCat("stored game ", position.id, ".", g.index + 1, ": ", why...));
  };
  absl::StatusOr<selfplay::GameOptions> options = selfplay::game_options(spec, position, int(g.index));
  if (!options.ok()) return options.status();
  if (g.result < 0 || g.result > 2 || g.termination < 0 || g.termination >= int(selfplay::Termination::kCount))
    return damaged("result or termination out of range");
  selfplay::GameRecord rec;
  rec.start_fen = position.fen;
  rec.white = white;
  rec.black = black;
  rec.result = selfplay::GameResult(g.result);
  rec.termination = selfplay::Termination(g.termination);
  rec.moves = decode_moves(g.moves);
  rec.opening_plies = g.opening_plies;
  rec.scores.assign(rec.moves.size(), std::nullopt);
  // Replayed for the detail of a rules ending (and to refuse a damaged row).
  absl::StatusOr<Position> start = Position::from_fen(rec.start_fen);
  if (!start.ok()) return damaged(start.status().message());
  selfplay::Referee referee(*start, spec.max_plies);
  std::optional<selfplay::Ending> ending = referee.start_ending();
  for (size_t i = 0; i < rec.moves.size(); ++i) {
    MoveList legal;
    generate_legal(referee.position(), legal);
    if (ending || !legal.contains(rec.moves[i])) return damaged("ply ", i + 1, " does not replay");
    ending = referee.play(rec.moves[i]);
  }
  if (g.detail)
    rec.detail = *g.detail;
  else if (ending)
    rec.detail = ending->detail;
  rec.pgn = selfplay::to_pgn(rec, *options);
  v1::SelfPlayGame out;
  selfplay::game_to_proto(int(g.index), rec, &out);
  return out;
}

}  // namespace c960::cluster
