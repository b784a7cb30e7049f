#include "coordinator/selfplay_codec.h"

#include <algorithm>
#include <cstring>
#include <openssl/sha.h>

#include "absl/strings/str_cat.h"
#include "cluster/config.h"
#include "cluster/selfplay_proto.h"
#include "core/movegen.h"
#include "core/startpos.h"
#include "selfplay/lines.h"
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

// The move coding of schema 6. A stored game is
//   - its ply count, LEB128 (7 bits a byte, low first, no superfluous bytes);
//   - then its ranks in chunks. Ply i has n_i legal moves; its digit d_i is the move's rank
//     among them ordered by Move::raw(). A chunk holds the digits of consecutive plies 1, 2, ...
//     as V = d_1 + n_1 * (d_2 + n_2 * (d_3 + ...)): the first ply least significant, because a
//     decoder learns n_i only once it has played ply i - 1, so it takes digits off the low end
//     (d = V mod n, V /= n). A ply starts a new chunk when the product of its chunk's radices
//     would pass 2^128 - 1. A chunk followed by another is written as 16 bytes, since a decoder
//     needs its bytes before it knows its radices; the last one in the fewest bytes that hold
//     (product of its radices - 1). All little-endian. A ply with a single legal move is no
//     digit: it costs nothing.
// The coding is canonical: decode_moves accepts exactly what encode_moves writes (a chunk's
// value below its radices' product, nothing left over, the last chunk and the count minimal).
// Ranks go by raw code, not by place in generate_legal's list: that list's order is a
// deterministic function of the position today (pieces and targets in fixed lsb-first bitboard
// scans, the same sets whatever the slider method), but a faster generator may change it, and
// stored games must outlive such a change. Legal moves have distinct raw codes.
namespace {

using Chunk = unsigned __int128;
constexpr Chunk kChunkMax = ~Chunk(0);
constexpr size_t kChunkBytes = sizeof(Chunk);
constexpr int kMaxCountBytes = 3;  // LEB128 of a ply count up to 2^21 - 1
static_assert(kMaxGamePlies < 1 << (7 * kMaxCountBytes));

int bytes_for(Chunk v) {
  int n = 0;
  for (; v != 0; v >>= 8) ++n;
  return n;
}

void put_chunk(Chunk v, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i, v >>= 8) out->push_back(char(uint8_t(v)));
}

// The rank of m among the legal moves by raw code; -1 when m is not among them.
int rank_of(const MoveList& legal, Move m) {
  int below = 0;
  bool found = false;
  for (Move x : legal) {
    below += x.raw() < m.raw();
    found |= x == m;
  }
  return found ? below : -1;
}

// The legal move of rank r (< legal.size()).
Move move_of_rank(const MoveList& legal, int r) {
  uint16_t raw[MAX_MOVES];
  for (int i = 0; i < legal.size(); ++i) raw[i] = legal.moves[i].raw();
  std::nth_element(raw, raw + r, raw + legal.size());
  return Move(raw[r]);
}

absl::Status bad_moves(auto... why) { return absl::InternalError(absl::StrCat(why...)); }

}  // namespace

absl::StatusOr<std::string> encode_moves(const Position& start, const std::vector<Move>& moves) {
  if (moves.size() > size_t(kMaxGamePlies)) return bad_moves(moves.size(), " plies, more than ", kMaxGamePlies);
  std::string out;
  size_t count = moves.size();
  do {
    const uint8_t low = count & 0x7F;
    count >>= 7;
    out.push_back(char(low | (count ? 0x80 : 0)));
  } while (count);
  Position pos = start;
  StateInfo states[2];         // do_move reads the current state only, and no move is taken back
  Chunk value = 0, radix = 1;  // the chunk's value and the product of its radices
  for (size_t i = 0; i < moves.size(); ++i) {
    MoveList legal;
    generate_legal(pos, legal);
    const int rank = rank_of(legal, moves[i]);
    if (rank < 0) return bad_moves("ply ", i + 1, " is not legal");
    if (legal.size() > 1) {
      const Chunk n = Chunk(legal.size());
      if (radix > kChunkMax / n) {
        put_chunk(value, kChunkBytes, &out);
        value = 0, radix = 1;
      }
      value += Chunk(rank) * radix;  // < radix * n: no overflow
      radix *= n;
    }
    pos.do_move(moves[i], states[i % 2]);
  }
  put_chunk(value, bytes_for(radix - 1), &out);
  return out;
}

absl::StatusOr<std::vector<Move>> decode_moves(const Position& start, const std::string& bytes, int max_plies) {
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t at = 0;
  uint32_t plies = 0;
  for (int k = 0;; ++k) {
    if (k == kMaxCountBytes || at == bytes.size()) return bad_moves("the ply count is cut off or too long");
    const unsigned char c = b[at++];
    plies |= uint32_t(c & 0x7F) << (7 * k);
    if (!(c & 0x80)) {
      if (c == 0 && k > 0) return bad_moves("the ply count has a superfluous byte");
      break;
    }
  }
  max_plies = std::clamp(max_plies, 0, kMaxGamePlies);
  if (plies > uint32_t(max_plies)) return bad_moves(plies, " plies, more than the limit of ", max_plies);
  std::vector<Move> moves;
  moves.reserve(plies);
  StateInfo states[2];
  Position pos = start;
  Chunk value = 0, radix = 1;
  size_t chunk_bytes = 0;  // the current chunk's bytes; 0: none read yet
  for (uint32_t i = 0; i < plies; ++i) {
    MoveList legal;
    generate_legal(pos, legal);
    if (legal.size() == 0) return bad_moves("ply ", i + 1, ": the game is over (no legal move)");
    Move m = legal.moves[0];
    if (legal.size() > 1) {
      const Chunk n = Chunk(legal.size());
      if (chunk_bytes == 0 || radix > kChunkMax / n) {
        // The chunk before is full: all of its value must be its digits, and it must be a full one.
        if (chunk_bytes != 0 && (value != 0 || chunk_bytes != kChunkBytes))
          return bad_moves("ply ", i + 1, ": the moves before do not account for their bytes");
        const size_t left = bytes.size() - at;
        if (left == 0) return bad_moves("ply ", i + 1, ": the bytes end before the moves");
        chunk_bytes = std::min(left, kChunkBytes);
        value = 0, radix = 1;
        for (size_t k = chunk_bytes; k-- > 0;) value = value << 8 | b[at + k];
        at += chunk_bytes;
      }
      const Chunk rest = value / n;  // one 128-bit division, not two
      const int rank = int(value - rest * n);
      value = rest;
      radix *= n;
      m = move_of_rank(legal, rank);
    }
    moves.push_back(m);
    pos.do_move(m, states[i % 2]);
  }
  if (at != bytes.size()) return bad_moves(bytes.size() - at, " bytes left over after ", plies, " plies");
  if (value != 0) return bad_moves("the bytes hold more than the moves' ranks");
  if (chunk_bytes != 0 && int(chunk_bytes) != bytes_for(radix - 1))
    return bad_moves("the last chunk has ", chunk_bytes, " bytes where its moves take ", bytes_for(radix - 1));
  return moves;
}

std::string encode_move_codes(const std::vector<Move>& moves) {
  std::string out(moves.size() * 2, '\0');
  for (size_t i = 0; i < moves.size(); ++i) {
    out[2 * i] = char(moves[i].raw() & 0xFF);
    out[2 * i + 1] = char(moves[i].raw() >> 8);
  }
  return out;
}

absl::StatusOr<std::vector<Move>> decode_move_codes(const std::string& bytes) {
  if (bytes.size() % 2 != 0) return bad_moves("move codes: an odd number of bytes");
  std::vector<Move> out(bytes.size() / 2);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = Move(uint16_t(uint8_t(bytes[2 * i]) | (uint16_t(uint8_t(bytes[2 * i + 1])) << 8)));
  return out;
}

std::string pack_summaries(const std::vector<GameSummary>& games) {
  std::string out(games.size() * kSummaryBytes, '\0');
  for (size_t i = 0; i < games.size(); ++i) {
    char* p = out.data() + i * kSummaryBytes;
    // The result's high bit: not evidence (schema 8; summaries before it have it clear).
    p[0] = char(games[i].result | (games[i].evidence ? 0 : 0x80));
    p[1] = char(games[i].termination);
    p[2] = char(games[i].plies & 0xFF);
    p[3] = char(games[i].plies >> 8);
    for (int b = 0; b < 8; ++b) p[4 + b] = char((games[i].hash >> (8 * b)) & 0xFF);
  }
  return out;
}

std::string pack_lines(const std::vector<GameSummary>& games) {
  for (const GameSummary& g : games)
    if (!g.line) return "";
  std::string out(games.size() * 8, '\0');
  for (size_t i = 0; i < games.size(); ++i)
    for (int b = 0; b < 8; ++b) out[i * 8 + size_t(b)] = char((*games[i].line >> (8 * b)) & 0xFF);
  return out;
}

absl::Status unpack_lines(const std::string& bytes, std::vector<GameSummary>* games) {
  if (bytes.empty()) return absl::OkStatus();
  if (bytes.size() != games->size() * 8) return absl::InternalError("game lines: not one a game");
  for (size_t i = 0; i < games->size(); ++i) {
    uint64_t h = 0;
    for (int b = 0; b < 8; ++b) h |= uint64_t(uint8_t(bytes[i * 8 + size_t(b)])) << (8 * b);
    (*games)[i].line = h;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<GameSummary>> unpack_summaries(const std::string& bytes) {
  if (bytes.size() % kSummaryBytes != 0) return absl::InternalError("game summaries: not whole");
  std::vector<GameSummary> out(bytes.size() / kSummaryBytes);
  for (size_t i = 0; i < out.size(); ++i) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(bytes.data()) + i * kSummaryBytes;
    out[i].result = p[0] & 0x7F;
    out[i].evidence = (p[0] & 0x80) == 0;
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
                                               const v1::UnitResult& canonical, MoveCoding coding) {
  SelfPlayCompact out;
  out.settlement.sp = sp;
  out.settlement.first_game = spec.first_game();
  out.settlement.match = !spec.job().opponent().empty();
  for (const v1::SelfPlayGame& g : canonical.selfplay().games()) {
    absl::StatusOr<selfplay::GameRecord> rec = selfplay::game_from_proto(g);
    if (!rec.ok()) return rec.status();
    GameSummary s;
    s.result = uint8_t(rec->result);
    s.termination = uint8_t(rec->termination);
    s.plies = uint16_t(rec->plies());
    s.hash = selfplay::game_hash(*rec);
    s.evidence = selfplay::is_evidence(*rec);
    s.line = selfplay::line_hash(*rec);
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
    if (coding == MoveCoding::kMoveCodes) {
      sg.moves = encode_move_codes(rec->moves);
    } else {
      absl::StatusOr<Position> start = Position::from_fen(rec->start_fen);
      if (!start.ok()) return start.status();
      absl::StatusOr<std::string> moves = encode_moves(*start, rec->moves);
      if (!moves.ok()) return moves.status();
      sg.moves = std::move(*moves);
    }
    out.settlement.stored.push_back(std::move(sg));
  }
  out.settled.set_digest(result_digest(canonical));
  out.settled.set_games(canonical.selfplay().games_size());
  out.settled.set_summary(pack_summaries(out.settlement.games));
  out.settled.set_lines(pack_lines(out.settlement.games));
  return out;
}

absl::StatusOr<SelfPlaySettlement> settlement_from_settled(const v1::SelfPlayUnitSpec& spec, int32_t sp,
                                                           const std::string& settled) {
  v1::store::SelfPlaySettled s;
  if (!s.ParseFromString(settled)) return absl::InternalError("settled self-play result does not parse");
  absl::StatusOr<std::vector<GameSummary>> games = unpack_summaries(s.summary());
  if (!games.ok()) return games.status();
  if (absl::Status l = unpack_lines(s.lines(), &*games); !l.ok()) return l;
  SelfPlaySettlement out;
  out.sp = sp;
  out.first_game = spec.first_game();
  out.games = std::move(*games);
  return out;
}

absl::StatusOr<selfplay::StartPosition> plan_position(const v1::store::SelfPlayPlan& plan, int k) {
  const int n = plan.other_positions_size() > 0 ? plan.other_positions_size() : plan.positions_size();
  if (k < 0 || k >= n) return absl::InternalError(absl::StrCat("the plan has no position ", k));
  if (plan.other_positions_size() == 0) return selfplay::chess960_position(plan.positions(k));
  return selfplay::fen_position(plan.other_positions(k).id(), plan.other_positions(k).fen());
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
  absl::StatusOr<Position> start = Position::from_fen(rec.start_fen);
  if (!start.ok()) return damaged(start.status().message());
  absl::StatusOr<std::vector<Move>> moves =
      decode_moves(*start, g.moves, spec.max_plies > 0 ? spec.max_plies : kMaxGamePlies);
  if (!moves.ok()) return damaged(moves.status().message());
  rec.moves = std::move(*moves);
  if (g.opening_plies < 0 || size_t(g.opening_plies) > rec.moves.size()) return damaged("opening plies out of range");
  rec.opening_plies = g.opening_plies;
  rec.scores.assign(rec.moves.size(), std::nullopt);
  // Replayed for the detail of a rules ending (and to refuse a damaged row: decoded moves are
  // legal, but none may follow the end of the game).
  selfplay::Referee referee(*start, spec.max_plies);
  std::optional<selfplay::Ending> ending = referee.start_ending();
  for (size_t i = 0; i < rec.moves.size(); ++i) {
    if (ending) return damaged("ply ", i + 1, " follows the end of the game");
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
