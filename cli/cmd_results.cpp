// c960 results JOB: a finished job's results. Perft as CSV like 'c960 perft --table' or JSON;
// self-play as the statistics 'c960 selfplay' prints, built from the stored games the same way.
#include "absl/strings/str_cat.h"
#include "cli/args.h"
#include "cli/client.h"
#include "cli/cluster_command.h"
#include "cli/commands.h"
#include "cluster/selfplay_proto.h"
#include "cluster/u128.h"
#include "core/perft.h"
#include "selfplay/stats.h"

namespace c960::cli {
namespace {

constexpr char kName[] = "results";

const CommandSpec kSpec = {
    kName, "c960 results JOB [--format csv|json] [--divide] [--out FILE] [--pgn FILE]",
    "Writes a finished job's results. Perft: CSV has the header 'sp,fen,depth,nodes' like "
    "'c960 perft --table' (with --divide: 'sp,fen,depth,move,nodes', one row per first move); "
    "JSON is an array of objects. Self-play: the statistics of 'c960 selfplay' (CSV header "
    "'sp,fen,games,white_wins,draws,black_wins,score,score_lo,score_hi,elo,elo_lo,elo_hi,"
    "draw_rate,mean_plies,...', a last row 'all'), and with --pgn every game. Exits 1 while the "
    "job is unfinished.",
    with_cluster_options({{"format", Arity::kOne, "csv|json", "output format (default csv)"},
                          {"divide", Arity::kFlag, "", "perft: counts below each first move"},
                          {"out", Arity::kOne, "FILE", "write here instead of stdout"},
                          {"pgn", Arity::kOne, "FILE", "self-play: write every game here as PGN"}}),
    1};

int incomplete_fail(const Io& io, size_t incomplete, size_t positions, const std::string& job) {
  return fail(io, kName,
              absl::StrCat(incomplete, " of ", positions, " positions are not complete yet (c960 watch ", job, ")"),
              kExitCheckFailed);
}

// The table goes to --out, else to stdout.
int emit(const ParsedArgs& p, const Io& io, const std::string& text) {
  if (!p.has("out")) {
    io.out << text;
    return kExitOk;
  }
  if (absl::Status s = write_output("--out", p.get("out"), text); !s.ok()) return fail(io, kName, s);
  io.out << "wrote " << p.get("out") << "\n";
  return kExitOk;
}

// The position a result row is about: a start position by number, else its id and FEN (a
// coordinator before position ids: the number).
selfplay::StartPosition result_position(const v1::SelfPlayPositionResult& r) {
  if (r.start_position() >= 0)
    if (absl::StatusOr<selfplay::StartPosition> p = selfplay::chess960_position(r.start_position()); p.ok()) return *p;
  return selfplay::StartPosition{selfplay::PositionKind::kFen, r.position_id(), r.fen(), -1, -1};
}

// Statistics from each position's figures, which the coordinator counts over every game as
// 'c960 selfplay' does, so the two agree; with --pgn the games then stream into the file, so
// neither side holds them all.
int selfplay_results(const ParsedArgs& p, const Io& io, Client& client, const std::vector<v1::ResultChunk>& heads) {
  size_t incomplete = 0, positions = 0;
  std::string last_id;
  selfplay::SelfPlayStats stats;
  for (const v1::ResultChunk& c : heads) {
    const v1::SelfPlayPositionResult& r = c.selfplay();
    const selfplay::StartPosition position = result_position(r);
    if (positions > 0 && position.id == last_id) continue;  // a further chunk of the same position
    last_id = position.id;
    ++positions;
    incomplete += !r.complete();
    if (r.games() == 0) continue;
    selfplay::PositionStats ps;
    ps.counts.white_wins = r.white_wins();
    ps.counts.draws = r.draws();
    ps.counts.black_wins = r.black_wins();
    ps.total_plies = r.total_plies();
    ps.duplicates = r.duplicates();
    for (int t = 0; t < r.terminations_size() && t < int(ps.terminations.size()); ++t)
      ps.terminations[size_t(t)] = r.terminations(t);
    ps.id = position.id;
    ps.sp = position.kind == selfplay::PositionKind::kChess960 ? position.number : -1;
    ps.fen = selfplay::xfen_of(position);
    stats.set_position(std::move(ps));
  }
  if (incomplete > 0) return incomplete_fail(io, incomplete, positions, p.positional()[0]);
  if (p.has("pgn")) {
    OutputFile out("--pgn", p.get("pgn"));
    if (absl::Status s = out.open(); !s.ok()) return fail(io, kName, s);
    std::string bad;
    absl::Status s = client.results(p.positional()[0], false, false, [&](const v1::ResultChunk& c) {
      for (const v1::SelfPlayGame& g : c.selfplay().game_records()) {
        if (absl::StatusOr<selfplay::GameRecord> rec = selfplay::game_from_proto(g); !rec.ok()) {
          bad = std::string(rec.status().message());
          return false;
        }
        out.append(g.pgn());
      }
      return true;
    });
    if (!bad.empty()) return fail(io, kName, absl::StrCat("a stored game does not replay: ", bad), kExitCheckFailed);
    if (!s.ok()) return rpc_fail(io, kName, client, s);
    if (absl::Status c = out.commit(); !c.ok()) return fail(io, kName, c);
  }
  return emit(p, io, p.get("format", "csv") == "csv" ? stats.to_csv() : stats.to_json());
}

std::string perft_csv(const std::vector<v1::PerftRootResult>& rows, bool divide) {
  const auto sp = [](const v1::PerftRootResult& r) {
    return r.start_position() >= 0 ? absl::StrCat(r.start_position()) : std::string();
  };
  std::string out = divide ? "sp,fen,depth,move,nodes\n" : "sp,fen,depth,nodes\n";
  for (const v1::PerftRootResult& r : rows) {
    if (!divide) {
      absl::StrAppend(&out, sp(r), ",", r.fen(), ",", r.depth(), ",", to_string(cluster::from_proto(r.nodes())), "\n");
      continue;
    }
    for (const v1::MoveCount& m : r.divide())
      absl::StrAppend(&out, sp(r), ",", r.fen(), ",", r.depth(), ",", m.move(), ",",
                      to_string(cluster::from_proto(m.nodes())), "\n");
  }
  return out;
}

std::string perft_json(const std::vector<v1::PerftRootResult>& rows, bool divide) {
  std::string out = "[\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const v1::PerftRootResult& r = rows[i];
    // Counts are written as exact integers, even beyond 2^53.
    absl::StrAppend(&out, "  {\"sp\": ", r.start_position() >= 0 ? absl::StrCat(r.start_position()) : "null",
                    ", \"fen\": \"", r.fen(), "\", \"depth\": ", r.depth(),
                    ", \"nodes\": ", to_string(cluster::from_proto(r.nodes())));
    if (divide) {
      out += ", \"divide\": {";
      for (int k = 0; k < r.divide_size(); ++k)
        absl::StrAppend(&out, k ? ", " : "", "\"", r.divide(k).move(),
                        "\": ", to_string(cluster::from_proto(r.divide(k).nodes())));
      out += "}";
    }
    absl::StrAppend(&out, "}", i + 1 < rows.size() ? "," : "", "\n");
  }
  return out + "]\n";
}

}  // namespace

int cmd_results(const std::vector<std::string>& args, const Io& io) {
  ParsedArgs p;
  if (std::optional<int> rc = parse_command(kSpec, args, io, &p)) return *rc;
  if (p.positional().size() != 1) return fail(io, kName, "give the job id");
  const std::string format = p.get("format", "csv");
  if (format != "csv" && format != "json") return fail(io, kName, "--format: use csv or json");
  const bool divide = p.has("divide");
  absl::StatusOr<cluster::ChannelOptions> connection = connection_options(p);
  if (!connection.ok()) return fail(io, kName, connection.status());
  Client client(*connection);
  // Self-play: counts only here (one chunk a position); the games follow for --pgn.
  std::vector<v1::ResultChunk> chunks;
  if (absl::Status s = client.results(p.positional()[0], divide, true, &chunks); !s.ok())
    return rpc_fail(io, kName, client, s);
  if (!chunks.empty() && chunks[0].has_selfplay()) return selfplay_results(p, io, client, chunks);
  if (p.has("pgn")) return fail(io, kName, "--pgn: only self-play jobs have games");
  std::vector<v1::PerftRootResult> rows;
  for (const v1::ResultChunk& c : chunks)
    if (c.has_perft()) rows.push_back(c.perft());
  size_t incomplete = 0;
  for (const v1::PerftRootResult& r : rows) incomplete += !r.complete();
  if (incomplete > 0) return incomplete_fail(io, incomplete, rows.size(), p.positional()[0]);
  return emit(p, io, format == "csv" ? perft_csv(rows, divide) : perft_json(rows, divide));
}

}  // namespace c960::cli
