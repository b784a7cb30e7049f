#include "cluster/results_export.h"

#include <ctime>

#include "absl/strings/str_cat.h"
#include "cluster/evaluation_proto.h"
#include "cluster/job_json.h"
#include "cluster/log.h"
#include "cluster/selfplay_proto.h"
#include "cluster/u128.h"
#include "core/version.h"
#include "selfplay/positions.h"

namespace c960::cluster {
namespace {

std::string sp_text(int sp) { return sp >= 0 ? absl::StrCat(sp) : std::string(); }

// The position a result row is about: a start position by number, else its id and FEN (a
// coordinator before position ids: the number).
selfplay::StartPosition result_position(const v1::SelfPlayPositionResult& r) {
  if (r.start_position() >= 0)
    if (absl::StatusOr<selfplay::StartPosition> p = selfplay::chess960_position(r.start_position()); p.ok()) return *p;
  return selfplay::StartPosition{selfplay::PositionKind::kFen, r.position_id(), r.fen(), -1, -1};
}

const char* verify_name(v1::VerifyMode mode) {
  switch (mode) {
    case v1::VERIFY_MODE_OFF: return "off";
    case v1::VERIFY_MODE_ALL: return "all";
    default: return "adaptive";
  }
}

}  // namespace

selfplay::Lines result_lines(const v1::SelfPlayPositionResult& r) {
  // Counts beyond any job's (2^31 games a position) are refused before they could overflow.
  constexpr int64_t kMost = int64_t(1) << 31;
  for (int64_t n : {r.white_wins(), r.draws(), r.black_wins()})
    if (n < 0 || n > kMost) return {};
  const int64_t total = r.white_wins() + r.draws() + r.black_wins();
  int64_t w = 0, d = 0, b = 0, lines_total = 0;
  for (const v1::LineCounts& l : r.lines()) {
    if (l.white_wins() < 0 || l.draws() < 0 || l.black_wins() < 0 || l.lines() <= 0 || l.white_wins() > total ||
        l.draws() > total || l.black_wins() > total || l.lines() > total - lines_total ||
        l.white_wins() + l.draws() + l.black_wins() == 0)
      return {};
    lines_total += l.lines();
    w += l.white_wins() * l.lines();
    d += l.draws() * l.lines();
    b += l.black_wins() * l.lines();
  }
  if (w != r.white_wins() || d != r.draws() || b != r.black_wins()) return {};
  selfplay::Lines lines;
  uint64_t number = 0;
  for (const v1::LineCounts& l : r.lines())
    for (int64_t k = 0; k < l.lines(); ++k) lines[number++] = {l.white_wins(), l.draws(), l.black_wins()};
  return lines;
}

namespace {

// Calls fn(result, position, sp, xfen) once per position of the chunks, in their order (a
// position's further chunks of games skipped); *incomplete and *positions (optional) count the
// positions with games outstanding and all of them.
template <typename Fn>
void for_each_position(const std::vector<v1::ResultChunk>& chunks, size_t* incomplete, size_t* positions, Fn fn) {
  size_t open = 0, count = 0;
  std::string last_id;
  for (const v1::ResultChunk& c : chunks) {
    if (!c.has_selfplay()) continue;
    const v1::SelfPlayPositionResult& r = c.selfplay();
    const selfplay::StartPosition position = result_position(r);
    if (count > 0 && position.id == last_id) continue;  // a further chunk of the same position
    last_id = position.id;
    ++count;
    open += !r.complete();
    fn(r, position.id, position.kind == selfplay::PositionKind::kChess960 ? position.number : -1,
       selfplay::xfen_of(position));
  }
  if (incomplete) *incomplete = open;
  if (positions) *positions = count;
}

}  // namespace

selfplay::SelfPlayStats selfplay_stats_from_results(const v1::Job& job, const std::vector<v1::ResultChunk>& chunks,
                                                    size_t* incomplete, size_t* positions) {
  selfplay::SelfPlayStats stats;
  for_each_position(chunks, incomplete, positions,
                    [&](const v1::SelfPlayPositionResult& r, const std::string& id, int sp, std::string fen) {
                      selfplay::PositionStats ps;
                      ps.counts.white_wins = r.white_wins();
                      ps.counts.draws = r.draws();
                      ps.counts.black_wins = r.black_wins();
                      ps.total_plies = r.total_plies();
                      ps.duplicates = r.duplicates();
                      ps.uncounted = r.uncounted();
                      for (int t = 0; t < r.terminations_size() && t < int(ps.terminations.size()); ++t)
                        ps.terminations[size_t(t)] = r.terminations(t);
                      ps.lines = result_lines(r);
                      ps.id = id;
                      ps.sp = sp;
                      ps.fen = std::move(fen);
                      ps.complete = r.complete();
                      stats.set_position(std::move(ps));
                    });
  if (absl::StatusOr<selfplay::SelfPlaySpec> spec = selfplay::spec_from_proto(job.spec().selfplay());
      spec.ok() && spec->adaptive.enabled())
    stats.set_adaptive(spec->adaptive, spec->games_per_position, spec->engine);
  return stats;
}

selfplay::MatchStats match_stats_from_results(const v1::Job& job, const std::vector<v1::ResultChunk>& chunks,
                                              size_t* incomplete, size_t* positions) {
  const v1::SelfPlayJobSpec& spec = job.spec().selfplay();
  selfplay::MatchStats stats(spec.engine(), spec.opponent());
  if (absl::StatusOr<selfplay::SelfPlaySpec> s = selfplay::spec_from_proto(spec); s.ok()) stats.set_sprt(s->sprt);
  for_each_position(chunks, incomplete, positions,
                    [&](const v1::SelfPlayPositionResult& r, const std::string& id, int sp, std::string fen) {
                      selfplay::MatchPositionStats ps;
                      ps.id = id;
                      ps.sp = sp;
                      ps.fen = std::move(fen);
                      const v1::MatchCounts& m = r.match();
                      for (int i = 0; i < selfplay::kPentanomialCells && i < m.pentanomial_size(); ++i)
                        ps.penta[size_t(i)] = m.pentanomial(i);
                      ps.wins = m.wins();
                      ps.draws = m.draws();
                      ps.losses = m.losses();
                      ps.duplicates = m.duplicates();
                      ps.unpaired = m.unpaired();
                      stats.set_position(std::move(ps));
                    });
  return stats;
}

std::string perft_csv(const std::vector<PerftRow>& rows, bool divide, bool complete_column) {
  const char* tail = complete_column ? ",complete\n" : "\n";
  std::string out = absl::StrCat(divide ? "sp,fen,depth,move,nodes" : "sp,fen,depth,nodes", tail);
  for (const PerftRow& r : rows) {
    const char* end = !complete_column ? "\n" : r.complete ? ",true\n" : ",false\n";
    if (!divide) {
      absl::StrAppend(&out, sp_text(r.sp), ",", r.fen, ",", r.depth, ",", to_string(r.nodes), end);
      continue;
    }
    for (const auto& [move, nodes] : r.divide)
      absl::StrAppend(&out, sp_text(r.sp), ",", r.fen, ",", r.depth, ",", move, ",", to_string(nodes), end);
  }
  return out;
}

std::string perft_json(const std::vector<PerftRow>& rows, bool divide,
                       const std::vector<selfplay::MetadataValue>& metadata, bool complete_field) {
  std::string out = "{";
  if (!metadata.empty()) {
    out += "\"metadata\": {";
    for (size_t i = 0; i < metadata.size(); ++i)
      absl::StrAppend(&out, i ? ", " : "", cluster::json_quote(metadata[i].key), ": ",
                      metadata[i].number ? metadata[i].value : cluster::json_quote(metadata[i].value));
    out += "},\n";
  }
  out += "\"positions\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const PerftRow& r = rows[i];
    // Counts are written as exact integers, even beyond 2^53.
    absl::StrAppend(&out, "  {\"sp\": ", r.sp >= 0 ? absl::StrCat(r.sp) : "null",
                    ", \"fen\": ", cluster::json_quote(r.fen), ", \"depth\": ", r.depth,
                    ", \"nodes\": ", to_string(r.nodes));
    if (divide) {
      out += ", \"divide\": {";
      for (size_t k = 0; k < r.divide.size(); ++k)
        absl::StrAppend(&out, k ? ", " : "", cluster::json_quote(r.divide[k].first), ": ",
                        to_string(r.divide[k].second));
      out += "}";
    }
    if (complete_field) out += r.complete ? ", \"complete\": true" : ", \"complete\": false";
    absl::StrAppend(&out, "}", i + 1 < rows.size() ? "," : "", "\n");
  }
  return out + "]}\n";
}

namespace {

// "2026-11-30T16:38:29Z" (seconds: the JSON files' form, not job_json.h's).
std::string utc_time(int64_t unix_ms) {
  const std::time_t t = std::time_t(unix_ms / 1000);
  std::tm tm{};
  char text[32] = "";
  if (gmtime_r(&t, &tm) == nullptr || std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) return "";
  return text;
}

}  // namespace

// What every job's JSON starts with: this program's version and the job as the coordinator has it.
std::vector<selfplay::MetadataValue> job_metadata(const v1::Job& job) {
  std::vector<selfplay::MetadataValue> m = {{"version", std::string(c960::version())},
                                            {"job", job.id()},
                                            {"state", state_name(job.state())},
                                            {"created", utc_time(job.created_unix_ms())}};
  if (job.finished_unix_ms() > 0) m.push_back({"finished", utc_time(job.finished_unix_ms())});
  if (job.state() == v1::JOB_STATE_FAILED) m.push_back({"failure_detail", job.failure_detail()});
  m.push_back({"verify", verify_name(job.spec().verify())});
  // Provenance: the workers whose results the job accepted, as they described themselves.
  for (int i = 0; i < job.provenance_size(); ++i) m.push_back({absl::StrCat("worker_", i + 1), job.provenance(i)});
  return m;
}

namespace {

absl::Status incomplete(const v1::Job& job, size_t open, size_t positions) {
  return absl::FailedPreconditionError(absl::StrCat("job ", job.id(), " is ", state_name(job.state()), " (",
                                                    positions - open, " of ", positions,
                                                    " positions complete): ask with partial=1 for what is done"));
}

}  // namespace

namespace {

// A self-play job's metadata: the job's, then its spec's.
std::vector<selfplay::MetadataValue> spec_metadata(const v1::Job& job) {
  std::vector<selfplay::MetadataValue> metadata = job_metadata(job);
  if (const absl::StatusOr<selfplay::SelfPlaySpec> spec = selfplay::spec_from_proto(job.spec().selfplay()); spec.ok()) {
    const std::vector<selfplay::MetadataValue> values = selfplay::metadata_values(*spec);
    metadata.insert(metadata.end(), values.begin(), values.end());
  } else {
    metadata.push_back({"spec_error", std::string(spec.status().message())});
  }
  return metadata;
}

}  // namespace

absl::StatusOr<std::string> results_file(const v1::Job& job, const std::vector<v1::ResultChunk>& chunks,
                                         ResultsFormat format, bool divide, bool partial) {
  if (job.spec().has_selfplay() && !job.spec().selfplay().opponent().empty()) {
    size_t open = 0, positions = 0;
    const selfplay::MatchStats stats = match_stats_from_results(job, chunks, &open, &positions);
    if (open > 0 && !partial) return incomplete(job, open, positions);
    if (format == ResultsFormat::kCsv) return stats.to_csv();
    return stats.to_json(spec_metadata(job));
  }
  if (job.spec().has_selfplay()) {
    size_t open = 0, positions = 0;
    const selfplay::SelfPlayStats stats = selfplay_stats_from_results(job, chunks, &open, &positions);
    if (open > 0 && !partial) return incomplete(job, open, positions);
    if (format == ResultsFormat::kCsv) return stats.to_csv(partial);
    return stats.to_json(spec_metadata(job), partial);
  }
  if (job.spec().has_evaluation()) {
    // One row per position and engine; a partial job's outstanding evaluations are left out.
    size_t open = 0;
    const std::vector<selfplay::EvalRow> rows = evaluation_rows(chunks, &open);
    if (open > 0 && !partial)
      return absl::FailedPreconditionError(absl::StrCat("job ", job.id(), " is ", state_name(job.state()), " (",
                                                        rows.size(), " of ", rows.size() + open,
                                                        " evaluations complete): ask with partial=1 for what is done"));
    if (format == ResultsFormat::kCsv) return selfplay::evaluations_csv(rows);
    std::vector<std::pair<std::string, std::string>> metadata;
    for (const selfplay::MetadataValue& v : job_metadata(job)) metadata.emplace_back(v.key, v.value);
    const v1::EvaluationJobSpec& spec = job.spec().evaluation();
    std::string engines;
    for (const v1::EvaluationEngine& e : spec.engines()) {
      absl::StrAppend(&engines, engines.empty() ? "" : "; ", e.engine());
      for (const v1::UciOption& o : e.options()) absl::StrAppend(&engines, " ", o.name(), "=", o.value());
    }
    metadata.emplace_back("engines", engines);
    metadata.emplace_back(
        "limit", spec.depth() > 0 ? absl::StrCat("depth ", spec.depth()) : absl::StrCat(spec.nodes(), " nodes"));
    if (open > 0) metadata.emplace_back("incomplete", absl::StrCat(open, " evaluations outstanding"));
    return selfplay::evaluations_json(rows, metadata);
  }
  std::vector<PerftRow> rows;
  size_t open = 0;
  for (const v1::ResultChunk& c : chunks) {
    if (!c.has_perft()) continue;
    const v1::PerftRootResult& r = c.perft();
    PerftRow row{r.start_position(), r.fen(), r.depth(), from_proto(r.nodes()), r.complete(), {}};
    for (const v1::MoveCount& m : r.divide()) row.divide.emplace_back(m.move(), from_proto(m.nodes()));
    open += !r.complete();
    rows.push_back(std::move(row));
  }
  if (open > 0 && !partial) return incomplete(job, open, rows.size());
  if (format == ResultsFormat::kCsv) return perft_csv(rows, divide, partial);
  std::vector<selfplay::MetadataValue> metadata = job_metadata(job);
  const v1::PerftJobSpec& spec = job.spec().perft();
  metadata.push_back({"depth", absl::StrCat(spec.depth()), true});
  metadata.push_back({"split_depth", absl::StrCat(job.split_depth()), true});
  metadata.push_back({"positions", absl::StrCat(rows.size()), true});
  if (!spec.start_positions().empty()) metadata.push_back({"start_positions", spec.start_positions()});
  return perft_json(rows, divide, metadata, partial);
}

}  // namespace c960::cluster
