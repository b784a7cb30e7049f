// c960 workers: the workers the coordinator knows, with their speed and trust state.
#include <algorithm>
#include <ctime>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/args.h"
#include "cli/client.h"
#include "cli/cluster_command.h"
#include "cli/commands.h"
#include "cli/job_format.h"
#include "cluster/text_wrap.h"
#include "google/protobuf/util/json_util.h"

namespace c960::cli {
namespace {

constexpr char kName[] = "workers";

const CommandSpec kSpec = {
    kName, "c960 workers [--all] [--format text|json]",
    "Lists the workers the coordinator knows: name (identity/host), version, engines, threads, units done, rate, "
    "when it was last seen, and its trust state (new: each result checked by another worker; trusted: "
    "spot-checked; quarantined: outvoted, no more work) with the reason. Needs a token of role read or admin.",
    with_cluster_options({{"all", Arity::kFlag, "", "also workers not seen for a lease period (lost)"},
                          {"format", Arity::kOne, "text|json", "a table (default) or JSON"}}),
    0};

std::string trust_name(v1::TrustState t) {
  switch (t) {
    case v1::TRUST_STATE_NEW: return "new";
    case v1::TRUST_STATE_TRUSTED: return "trusted";
    case v1::TRUST_STATE_QUARANTINED: return "quarantined";
    default: return "?";
  }
}

// "12 s ago", "5 min ago", "3 h ago", or the date for older ones.
std::string last_seen(int64_t unix_ms) {
  if (unix_ms <= 0) return "never";
  const int64_t ago = (int64_t(std::time(nullptr)) * 1000 - unix_ms) / 1000;
  if (ago < 120) return absl::StrCat(std::max<int64_t>(ago, 0), " s ago");
  if (ago < 2 * 3600) return absl::StrCat(ago / 60, " min ago");
  if (ago < 2 * 86400) return absl::StrCat(ago / 3600, " h ago");
  return absl::StrCat(ago / 86400, " days ago");
}

// The table; at `width` > 0 (a terminal's columns) columns move out of it while it is wider
// (WHY, ENGINES, VERSION, OWNER), each onto an indented, wrapped line under its worker's row, so
// that the terminal breaks no row mid-word.
}  // namespace

std::string workers_table(const v1::ListWorkersResponse& resp, int width) {
  std::vector<std::vector<std::string>> rows = {
      {"NAME", "OWNER", "VERSION", "ENGINES", "THREADS", "UNITS", "UNITS/S", "LAST SEEN", "TRUST", "WHY"}};
  for (const v1::WorkerInfo& w : resp.workers())
    rows.push_back(
        {w.name(), w.trust_root() ? absl::StrCat(w.owner(), " (root)") : w.owner(), w.version(),
         absl::StrJoin(w.engines(), ","), absl::StrCat(w.threads()), absl::StrCat(w.units_done()),
         absl::StrFormat("%.2f", w.units_per_second()),
         w.alive() ? last_seen(w.last_seen_unix_ms()) : absl::StrCat(last_seen(w.last_seen_unix_ms()), " (lost)"),
         trust_name(w.trust()), w.trust_reason()});
  const auto render = [&rows, width](const std::vector<size_t>& under) {
    std::vector<size_t> kept;
    for (size_t c = 0; c < rows[0].size(); ++c)
      if (std::find(under.begin(), under.end(), c) == under.end()) kept.push_back(c);
    std::vector<size_t> w(rows[0].size(), 0);
    for (const auto& r : rows)
      for (size_t c : kept) w[c] = std::max(w[c], r[c].size());
    std::string out;
    size_t widest = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      std::string line;
      for (size_t k = 0; k < kept.size(); ++k) {
        line += rows[i][kept[k]];
        if (k + 1 < kept.size()) line += std::string(w[kept[k]] - rows[i][kept[k]].size() + 2, ' ');
      }
      widest = std::max(widest, line.size());
      out += line + "\n";
      if (i == 0) continue;
      for (size_t c : under)
        if (!rows[i][c].empty())
          out += cluster::wrap_text(absl::StrCat(absl::AsciiStrToLower(rows[0][c]), ": ", rows[i][c]),
                                    width > 0 ? size_t(width) : 0, "    ", 6);
    }
    return std::make_pair(out, widest);
  };
  std::vector<size_t> under;
  auto [out, widest] = render(under);
  for (size_t c : {size_t(9), size_t(3), size_t(2), size_t(1)}) {  // WHY, ENGINES, VERSION, OWNER
    if (width <= 0 || widest <= size_t(width)) break;
    under.insert(under.begin(), c);
    std::tie(out, widest) = render(under);
  }
  return out;
}

int cmd_workers(const std::vector<std::string>& args, const Io& io) {
  ParsedArgs p;
  if (std::optional<int> rc = parse_command(kSpec, args, io, &p)) return *rc;
  const std::string format = p.get("format", "text");
  if (format != "text" && format != "json")
    return fail(io, kName, absl::StrCat("--format: '", format, "' is not text or json"), kExitUsage);
  absl::StatusOr<cluster::ChannelOptions> connection = connection_options(p);
  if (!connection.ok()) return fail(io, kName, connection.status());
  Client client(*connection);
  v1::ListWorkersResponse resp;
  if (absl::Status s = client.list_workers(p.has("all"), &resp); !s.ok()) return rpc_fail(io, kName, client, s);
  if (format == "json") {
    std::string json;
    google::protobuf::util::JsonPrintOptions options;
    options.add_whitespace = true;
    options.always_print_primitive_fields = true;
    if (!google::protobuf::util::MessageToJsonString(resp, &json, options).ok())
      return fail(io, kName, "cannot write the workers as JSON", kExitCheckFailed);
    io.out << json;
    return kExitOk;
  }
  if (resp.workers_size() == 0) {
    io.out << (p.has("all") ? "no workers\n" : "no workers alive (--all shows lost ones)\n");
    return kExitOk;
  }
  io.out << workers_table(resp, io.out_is_tty ? cluster::stdout_columns() : 0);
  return kExitOk;
}

const CommandSpec& workers_spec() { return kSpec; }

}  // namespace c960::cli
