#include "cli/job_format.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cluster/selfplay_proto.h"
#include "cluster/u128.h"
#include "core/perft.h"
#include "selfplay/stats.h"

namespace c960::cli {

const char* state_name(v1::JobState s) {
  switch (s) {
    case v1::JOB_STATE_RUNNING: return "RUNNING";
    case v1::JOB_STATE_SUCCEEDED: return "SUCCEEDED";
    case v1::JOB_STATE_FAILED: return "FAILED";
    case v1::JOB_STATE_CANCELLED: return "CANCELLED";
    default: return "UNSPECIFIED";
  }
}

std::string progress_line(const v1::Job& j) {
  const v1::Progress& p = j.progress();
  const std::string eta = p.eta_seconds() < 0 ? "?" : absl::StrFormat("%.0fs", p.eta_seconds());
  if (j.spec().has_selfplay()) {
    const double frac = p.games_total() > 0 ? double(p.games_done()) / double(p.games_total()) : 1.0;
    return absl::StrFormat("%s %5.1f%% %d/%d games, %.1f games/min, %d/%d units, ETA %s, %d/%d workers, %s", j.id(),
                           100 * frac, p.games_done(), p.games_total(), p.games_per_second() * 60, p.units_done(),
                           p.units_total(), eta, p.workers(), p.workers_alive(), state_name(j.state()));
  }
  const double frac = p.units_total() > 0 ? double(p.units_done()) / double(p.units_total()) : 1.0;
  constexpr int kWidth = 30;
  const int filled = int(frac * kWidth);
  const std::string bar = std::string(filled, '#') + std::string(kWidth - filled, '.');
  return absl::StrFormat("%s [%s] %5.1f%% %d/%d units, %s nodes, %.1f Mnps, ETA %s, %d/%d workers, %s", j.id(), bar,
                         100 * frac, p.units_done(), p.units_total(), to_string(cluster::from_proto(p.nodes_done())),
                         p.nodes_per_second() / 1e6, eta, p.workers(), p.workers_alive(), state_name(j.state()));
}

std::string job_description(const v1::Job& j) {
  std::string out = absl::StrCat("job ", j.id(), " ", state_name(j.state()), "\n");
  if (j.spec().has_perft()) {
    const v1::PerftJobSpec& s = j.spec().perft();
    absl::StrAppend(&out, "  perft depth ", s.depth(), ", ",
                    s.fens_size()
                        ? absl::StrCat(s.fens_size(), " FENs")
                        : absl::StrCat("start positions ", s.start_positions().empty() ? "0-959" : s.start_positions()),
                    ", split depth ", j.split_depth(), "\n");
  }
  if (j.spec().has_selfplay()) {
    const v1::SelfPlayJobSpec& s = j.spec().selfplay();
    absl::StatusOr<selfplay::SelfPlaySpec> spec = selfplay::spec_from_proto(s);
    absl::StrAppend(&out, "  selfplay ", s.games_per_position(), " games per position, start positions ",
                    s.start_positions().empty() ? std::string(selfplay::kDefaultPositions) : s.start_positions(), ", ",
                    spec.ok() ? selfplay::describe(*spec) : std::string(spec.status().message()), "\n");
  }
  if (!j.request_id().empty()) absl::StrAppend(&out, "  request id ", j.request_id(), "\n");
  absl::StrAppend(&out, "  ", progress_line(j), "\n");
  if (j.result_mismatches() > 0)
    absl::StrAppend(&out, "  RESULT MISMATCHES: ", j.result_mismatches(), "; first: ", j.mismatch_detail(), "\n");
  if (j.unit_failures() > 0)
    absl::StrAppend(&out, "  unit failures: ", j.unit_failures(), "; last: ", j.failure_detail(), "\n");
  return out;
}

std::string leaders_line(const std::vector<v1::ResultChunk>& chunks) {
  struct Row {
    int sp;
    selfplay::ResultCounts c;
    selfplay::Interval s;
  };
  std::vector<Row> rows;
  for (const v1::ResultChunk& ch : chunks) {
    if (!ch.has_selfplay() || ch.selfplay().games() == 0) continue;
    const v1::SelfPlayPositionResult& p = ch.selfplay();
    Row r{p.start_position(), {p.white_wins(), p.draws(), p.black_wins()}, {}};
    r.s = r.c.score();
    rows.push_back(r);
  }
  if (rows.empty()) return "no games yet";
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    if (a.s.value != b.s.value) return a.s.value > b.s.value;
    if (a.s.lo != b.s.lo) return a.s.lo > b.s.lo;
    return a.sp < b.sp;
  });
  const size_t n = std::min<size_t>(3, rows.size());
  auto show = [](const Row& r) { return absl::StrFormat("%d %.3f (%d)", r.sp, r.s.value, r.c.games()); };
  std::string out = "leading ";
  for (size_t i = 0; i < n; ++i) out += (i ? ", " : "") + show(rows[i]);
  out += "; trailing ";
  for (size_t i = 0; i < n; ++i) out += (i ? ", " : "") + show(rows[rows.size() - 1 - i]);
  return out;
}

}  // namespace c960::cli
