#include "cluster/job_json.h"

#include <algorithm>
#include <cmath>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cluster/log.h"
#include "cluster/u128.h"
#include "core/perft.h"

namespace c960::cluster {
namespace {

bool is_final(const v1::Job& j) { return j.state() != v1::JOB_STATE_RUNNING; }

// With `decimals` digits after the point; null if not finite.
std::string json_number(double v, int decimals = 3) {
  return std::isfinite(v) ? absl::StrFormat("%.*f", decimals, v) : "null";
}

}  // namespace

const char* state_name(v1::JobState s) {
  switch (s) {
    case v1::JOB_STATE_RUNNING: return "RUNNING";
    case v1::JOB_STATE_SUCCEEDED: return "SUCCEEDED";
    case v1::JOB_STATE_FAILED: return "FAILED";
    case v1::JOB_STATE_CANCELLED: return "CANCELLED";
    default: return "UNSPECIFIED";
  }
}

std::string iso8601_utc(int64_t unix_ms) {
  if (unix_ms == 0) return "";
  const std::time_t t = std::time_t(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                         tm.tm_hour, tm.tm_min, tm.tm_sec, int(unix_ms % 1000));
}

double job_fraction(const v1::Job& j) {
  const v1::Progress& p = j.progress();
  if (j.spec().has_selfplay())
    return p.games_total() > 0 ? std::clamp(double(p.games_done()) / double(p.games_total()), 0.0, 1.0) : 1.0;
  return p.units_total() > 0 ? std::clamp(double(p.units_done()) / double(p.units_total()), 0.0, 1.0) : 1.0;
}

double job_elapsed_seconds(const v1::Job& j, int64_t now_unix_ms) {
  if (j.created_unix_ms() <= 0) return -1;
  const int64_t end = j.finished_unix_ms() > 0 ? j.finished_unix_ms() : now_unix_ms;
  return std::max<int64_t>(0, end - j.created_unix_ms()) / 1000.0;
}

std::string job_json(const v1::Job& j, int64_t now) {
  const v1::Progress& p = j.progress();
  const bool perft = j.spec().has_perft();
  const char* kind = perft ? "perft" : j.spec().has_evaluation() ? "evaluation" : "selfplay";
  const double eta = is_final(j) || p.eta_seconds() < 0 ? NAN : p.eta_seconds();
  const std::string finished = iso8601_utc(j.finished_unix_ms());
  const double duration = job_elapsed_seconds(j, now);
  return absl::StrCat(
      "{\"id\": ", json_quote(j.id()), ", \"kind\": \"", kind, "\", \"depth\": ",
      perft                                                            ? absl::StrCat(j.spec().perft().depth())
      : j.spec().has_evaluation() && j.spec().evaluation().depth() > 0 ? absl::StrCat(j.spec().evaluation().depth())
                                                                       : "null",
      ", \"state\": \"", state_name(j.state()), "\", \"fraction_done\": ", json_number(job_fraction(j), 6),
      ", \"units_done\": ", p.units_done(), ", \"units_total\": ", p.units_total(), ", \"nodes_done\": \"",
      to_string(from_proto(p.nodes_done())), "\", \"nodes_per_second\": ", json_number(p.nodes_per_second(), 1),
      ", \"games_done\": ", p.games_done(), ", \"games_total\": ", p.games_total(),
      ", \"games_per_second\": ", json_number(p.games_per_second(), 4), ", \"eta_seconds\": ", json_number(eta, 1),
      ", \"workers\": ", p.workers(),
      ", \"created\": ", j.created_unix_ms() ? json_quote(iso8601_utc(j.created_unix_ms())) : "null",
      ", \"finished\": ", finished.empty() ? "null" : json_quote(finished),
      ", \"age_seconds\": ", json_number(j.created_unix_ms() ? (now - j.created_unix_ms()) / 1000.0 : NAN),
      ", \"duration_seconds\": ", json_number(is_final(j) && duration >= 0 ? duration : NAN),
      ", \"request_id\": ", json_quote(j.request_id()), ", \"owner\": ", json_quote(j.owner()),
      ", \"result_mismatches\": ", j.result_mismatches(), ", \"unit_failures\": ", j.unit_failures(),
      ", \"notice\": ", json_quote(j.notice()), "}");
}

std::string jobs_json(const std::vector<v1::Job>& jobs, int64_t now) {
  if (jobs.empty()) return "[]\n";
  std::string out = "[\n";
  for (size_t i = 0; i < jobs.size(); ++i)
    absl::StrAppend(&out, "  ", job_json(jobs[i], now), i + 1 < jobs.size() ? ",\n" : "\n");
  return out + "]\n";
}

}  // namespace c960::cluster
