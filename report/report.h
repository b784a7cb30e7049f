// `c960 report`: one self-contained HTML file from a self-play or perft table. Everything it
// needs (Chart.js, the heatmap module, styles, the data) is inlined, so it opens offline; the
// assets are compiled into the library (report/assets/, embedded by report/embed_assets.cmake).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/tables.h"
#include "selfplay/spec.h"

namespace c960::report {

struct ReportOptions {
  std::string title;           // default: "c960 self-play report" / "c960 perft report"
  Metadata metadata;           // shown in order: engine, options, limits, seed, version, dates, ...
  std::string reference_csv;   // self-play only: another self-play table to compare with
  std::string reference_name;  // how the report names it (e.g. its file name)
  // Self-play only: an evaluation table (the CSV of `c960 evaluate`) to set beside the scores,
  // and how the report names it.
  std::string evaluations_csv;
  std::string evaluations_name;
  uint64_t seed = 1;  // of the permutation test: the same input gives the same file
  int permutations = 2000;
};

// The metadata rows of a self-play spec: engine and options, limits, openings (random plies,
// node jitter, sampling), seed, adjudication, games per position. Callers add version, dates,
// workers and verification level.
Metadata spec_metadata(const selfplay::SelfPlaySpec& spec);

// A table as `c960 selfplay --format csv` (one engine, or a match with --opponent) or
// `c960 perft --table` writes it, or a match's JSON (`--opponent --format json`: engines' names
// and the SPRT too); the kind is read
// from the header. Errors (InvalidArgument) name the line and column; a reference table's errors
// say so.
absl::StatusOr<std::string> report_from_csv(const std::string& csv_text, const ReportOptions& options);

absl::StatusOr<std::string> report_from_data(const SelfPlayTable& table, const ReportOptions& options);
absl::StatusOr<std::string> report_from_data(const PerftTable& table, const ReportOptions& options);
// A two-engine match (engines named A and B unless the table names them).
absl::StatusOr<std::string> report_from_data(const MatchTable& table, const ReportOptions& options);

// Text made safe for HTML text and attribute values (& < > " ' as entities); the report and the
// coordinator's dashboard pages both use it.
std::string html_escape(absl::string_view s);

}  // namespace c960::report
