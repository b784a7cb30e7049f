// The self-play job kind: a unit is a few consecutive games of one position (one of the 960, a
// DFRC pair or any FEN); a result
// carries its games, each replayed here for legality before it is stored. Nothing of a game
// stays in memory: a settled unit adds its games to its position's statistics in the store, in
// the transaction that settles it, and stores the games the job keeps (compactly); copies are
// compared by a digest. Results are read back from the store in pages: each position's
// statistics (the same figures a local run's statistics give), then its games by index.
#include <algorithm>
#include <cctype>

#include "absl/strings/str_cat.h"
#include "cluster/config.h"
#include "cluster/selfplay_proto.h"
#include "coordinator/job_kind.h"
#include "coordinator/selfplay_codec.h"
#include "coordinator/selfplay_store.h"
#include "core/startpos.h"
#include "selfplay/adaptive.h"
#include "selfplay/positions.h"
#include "selfplay/spec.h"
#include "selfplay/sprt.h"
#include "selfplay/uci_engine.h"

namespace c960::cluster {
namespace {

absl::Status check_engine_name(absl::string_view field, const std::string& engine) {
  const bool name = !engine.empty() && engine.size() <= size_t(kMaxEngineNameLength) &&
                    std::all_of(engine.begin(), engine.end(), [](char c) {
                      return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
                    });
  if (name) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": '", engine.substr(0, 64),
      "' is not an engine name: name one the workers offer (builtin, or NAME from c960-worker --engine NAME=PATH); "
      "a job cannot give a path"));
}

int position_count(const v1::store::SelfPlayPlan& plan) {
  return plan.other_positions_size() > 0 ? plan.other_positions_size() : plan.positions_size();
}

// The units of games [first, end) of position k of the plan.
void add_units(const v1::store::SelfPlayPlan& sp, int k, int first, int end, int per_unit,
               std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>>* out) {
  const bool by_number = sp.other_positions_size() == 0;
  for (int at = first; at < end; at += per_unit) {
    v1::UnitSpec us;
    v1::SelfPlayUnitSpec* u = us.mutable_selfplay();
    if (by_number) {
      u->set_start_position(sp.positions(k));
    } else {
      u->set_start_position(-1);
      u->mutable_position()->set_id(sp.other_positions(k).id());
      u->mutable_position()->set_fen(sp.other_positions(k).fen());
      u->set_position_index(int32_t(k));
    }
    u->set_first_game(at);
    u->set_games(std::min(per_unit, end - at));
    v1::store::UnitMeta meta;
    meta.mutable_selfplay()->set_position(int32_t(k));
    out->emplace_back(std::move(us), std::move(meta));
  }
}

int games_per_unit(const v1::SelfPlayJobSpec& p) {
  return p.games_per_unit() > 0 ? p.games_per_unit() : kDefaultSelfPlayGamesPerUnit;
}

// A match with an SPRT plays this many games a position (whole rounds of pairs) between looks.
int sprt_batch(const v1::SelfPlayJobSpec& p) {
  const int batch = p.adaptive_batch() > 0 ? p.adaptive_batch() : selfplay::default_batch(p.games_per_position());
  return std::clamp(batch - batch % 2, 2, std::max(2, p.games_per_position()));
}

// The games planned for position k: its planned count in an adaptive plan, else all.
int planned_games(const v1::store::SelfPlayPlan& sp, int k) {
  return k < sp.planned_games_size() ? sp.planned_games(k) : sp.games_per_position();
}

class SelfPlayKind : public JobKind {
 public:
  const KindDescriptor& descriptor() const override {
    static const KindDescriptor d{
        .capability = "selfplay",
        .spec_case = v1::JobSpec::kSelfplay,
        .tables = &selfplay_tables(),
        .work_unit = "games",
        .plans_from_results = true,
        .results_from_store = true,
        .work_metric = "c960_selfplay_games_total",
        .work_help = "self-play games of settled units",
        .trim_for_watch = [](v1::JobSpec* spec) { spec->mutable_selfplay()->clear_positions(); },
    };
    return d;
  }

  absl::StatusOr<KindPlan> plan(const v1::JobSpec& spec, const PlanCancelled& /*cancelled*/) const override {
    const v1::SelfPlayJobSpec& p = spec.selfplay();
    absl::StatusOr<selfplay::SelfPlaySpec> s = selfplay::spec_from_proto(p);
    if (!s.ok()) return s.status();
    // A job names an engine the workers offer; it never makes them start a program of its choosing.
    if (absl::Status e = check_engine_name("engine", p.engine()); !e.ok()) return e;
    if (s->match())
      if (absl::Status e = check_engine_name("opponent", p.opponent()); !e.ok()) return e;
    // Nor does it choose files on a worker's host (logs, networks, tablebases): workers refuse
    // such options whatever they allow, so a job setting one could never run.
    for (const auto& [field, options] :
         {std::pair{"options", &p.options()}, {"opponent_options", &p.opponent_options()}})
      for (const v1::UciOption& o : *options)
        if (selfplay::names_a_file(o.name()))
          return absl::InvalidArgumentError(absl::StrCat(field, ": '", o.name().substr(0, 64),
                                                         "' names a file or directory on the workers' hosts; only "
                                                         "their operators set those (c960-worker --engine-option)"));
    // A match's unit holds whole colour-reversed pairs, so that a pair settles at once.
    if (s->match() && games_per_unit(p) % 2 != 0)
      return absl::InvalidArgumentError(absl::StrCat("games_per_unit: ", games_per_unit(p),
                                                     " is odd: a match's units hold whole colour-reversed pairs"));
    if (s->sprt.enabled() && p.adaptive_batch() % 2 != 0)
      return absl::InvalidArgumentError(absl::StrCat("adaptive_batch: ", p.adaptive_batch(),
                                                     " is odd: an SPRT match plays whole pairs between its looks"));
    // A spec whose games all repeat the first would count copies as evidence.
    if (selfplay::games_repeat(*s))
      return absl::InvalidArgumentError(
          absl::StrCat("games_per_position: every one of the ", s->games_per_position,
                       " games of a position would repeat the first (a fixed nodes or depth limit with random_plies, "
                       "node_jitter_percent and sample_margin_cp all 0); set one of them, or games_per_position 1"));
    if (!v1::StoreGames_IsValid(p.store_games()))
      return absl::InvalidArgumentError(absl::StrCat("store_games: ", int(p.store_games()), " is not a choice"));
    if (p.store_games() == v1::STORE_GAMES_SAMPLE && (p.store_games_sample() < 1 || p.store_games_sample() > (1 << 30)))
      return absl::InvalidArgumentError(
          absl::StrCat("store_games_sample: ", p.store_games_sample(), " is not in 1..", 1 << 30));
    if (p.store_games() != v1::STORE_GAMES_SAMPLE && p.store_games_sample() != 0)
      return absl::InvalidArgumentError("store_games_sample: given without store_games SAMPLE");
    if ((p.movetime_ms() > 0 || p.tc_base_ms() > 0) &&
        (spec.verify() == v1::VERIFY_MODE_ADAPTIVE || spec.verify() == v1::VERIFY_MODE_ALL))
      return absl::InvalidArgumentError(
          "verify: games under a time limit (movetime, tc) are not reproducible, so workers cannot check each "
          "other's; use verify off, or a nodes or depth limit");
    const int per_unit = games_per_unit(p);
    const uint64_t units_per_position = (uint64_t(s->games_per_position) + uint64_t(per_unit) - 1) / uint64_t(per_unit);
    if (units_per_position * s->positions.size() > kMaxPlanUnits)
      return absl::ResourceExhaustedError(absl::StrCat("games_per_position: ", units_per_position * s->positions.size(),
                                                       " units is more than ", kMaxPlanUnits,
                                                       "; raise games_per_unit"));
    KindPlan out;
    v1::store::SelfPlayPlan* sp = out.plan.mutable_selfplay();
    sp->set_games_per_position(s->games_per_position);
    // A job of the 960 names its positions by number; other positions travel in their units.
    // Units keep no copy of the job (work_spec adds it to leases): its options may be tens of
    // kilobytes, and a job has up to kMaxPlanUnits units.
    const bool by_number = p.positions_size() == 0 && p.dfrc_pairs().empty();
    for (size_t k = 0; k < s->positions.size(); ++k) {
      const selfplay::StartPosition& pos = s->positions[k];
      if (by_number) {
        sp->add_positions(pos.number);
      } else {
        v1::store::SelfPlayPlanPosition* o = sp->add_other_positions();
        o->set_id(pos.id);
        o->set_fen(pos.fen);
      }
      // An adaptive job plans each position's first batch, an SPRT match its first rounds; their
      // looks plan the rest.
      const bool looks = s->adaptive.enabled() || s->sprt.enabled();
      const int planned = s->adaptive.enabled() ? int(selfplay::next_look(s->adaptive, 0, s->games_per_position))
                          : s->sprt.enabled()   ? std::min(sprt_batch(p), s->games_per_position)
                                                : s->games_per_position;
      if (looks) {
        sp->add_planned_games(planned);
        sp->add_verdicts(int32_t(selfplay::Verdict::kOpen));
      }
      add_units(*sp, int(k), 0, planned, per_unit, &out.units);
    }
    return out;
  }

  // An adaptive plan is complete once every position has its verdict.
  bool fully_planned(const v1::store::JobPlan& plan) const override { return fully_planned_plan(plan.selfplay()); }

  // The looks of an adaptive job: each open position whose planned games have all settled gets
  // its verdict from its counts in the store (the same figures a local run looks at: the games'
  // order does not matter to the interval), or its next batch. The neediest positions' units
  // come first.
  absl::StatusOr<std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>>> expand_from_results(
      Store* store, const std::string& job_id, const v1::JobSpec& spec, v1::store::JobPlan* plan) const override {
    v1::store::SelfPlayPlan* sp = plan->mutable_selfplay();
    if (spec.selfplay().sprt_elo1() > spec.selfplay().sprt_elo0()) return sprt_look(store, job_id, spec.selfplay(), sp);
    // The rule and the cap only: `spec` is the job's shared part, without its positions.
    const selfplay::AdaptiveRule rule = selfplay::adaptive_rule_from_proto(spec.selfplay());
    const int cap = spec.selfplay().games_per_position();
    const int n = position_count(*sp);
    if (sp->planned_games_size() != n || sp->verdicts_size() != n)
      return absl::DataLossError(
          absl::StrCat("job ", job_id, ": adaptive plan of ", sp->planned_games_size(), " positions for ", n));
    absl::StatusOr<std::vector<PositionTotals>> totals = load_position_totals(store, job_id);
    if (!totals.ok()) return totals.status();
    const int per_unit = games_per_unit(spec.selfplay());
    std::vector<std::pair<double, int>> next;  // (need, position) of those that play on
    for (const PositionTotals& t : *totals) {
      const int k = t.sp;
      if (k < 0 || k >= n || sp->verdicts(k) != int32_t(selfplay::Verdict::kOpen) || t.games != sp->planned_games(k))
        continue;
      const selfplay::AnytimeInterval interval = selfplay::anytime_interval(t.white_wins, t.draws, t.black_wins);
      const selfplay::Verdict v = selfplay::verdict(rule, interval, t.games, cap);
      if (v != selfplay::Verdict::kOpen) {
        sp->set_verdicts(k, int32_t(v));
        continue;
      }
      next.emplace_back(-selfplay::need(rule, interval), k);
    }
    std::sort(next.begin(), next.end());
    std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>> out;
    for (const auto& [need, k] : next) {
      const int first = sp->planned_games(k);
      const int end = int(selfplay::next_look(rule, first, cap));
      sp->set_planned_games(k, end);
      add_units(*sp, k, first, end, per_unit, &out);
    }
    return out;
  }

  // The look of a match with an SPRT, once every position has played the rounds planned: the
  // test on the pairs of those rounds (all of them, so the same pairs whatever order units
  // settled in), then the end (decided, or the cap) or the next rounds for every position.
  static absl::StatusOr<std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>>> sprt_look(
      Store* store, const std::string& job_id, const v1::SelfPlayJobSpec& spec, v1::store::SelfPlayPlan* sp) {
    const int n = position_count(*sp);
    if (sp->planned_games_size() != n || sp->verdicts_size() != n)
      return absl::DataLossError(
          absl::StrCat("job ", job_id, ": SPRT plan of ", sp->planned_games_size(), " positions for ", n));
    if (fully_planned_plan(*sp)) return std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>>{};
    absl::StatusOr<std::vector<PositionTotals>> totals = load_position_totals(store, job_id);
    if (!totals.ok()) return totals.status();
    std::vector<int64_t> settled(size_t(n), 0);
    selfplay::Pentanomial penta{};
    for (const PositionTotals& t : *totals) {
      if (t.sp < 0 || t.sp >= n) continue;
      settled[size_t(t.sp)] = t.games;
      for (int i = 0; i < selfplay::kPentanomialCells && size_t(i) < t.pairs.size(); ++i)
        penta[size_t(i)] += t.pairs[size_t(i)];
    }
    for (int k = 0; k < n; ++k)
      if (settled[size_t(k)] != sp->planned_games(k))
        return std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>>{};
    selfplay::SprtRule rule;
    rule.elo0 = spec.sprt_elo0();
    rule.elo1 = spec.sprt_elo1();
    if (spec.sprt_alpha() != 0) rule.alpha = spec.sprt_alpha();
    if (spec.sprt_beta() != 0) rule.beta = spec.sprt_beta();
    rule.normalized = spec.sprt_normalized();
    const selfplay::SprtResult result = selfplay::sprt_result(rule, selfplay::sprt_llr(rule, penta));
    const int cap = spec.games_per_position();
    if (result != selfplay::SprtResult::kContinue || sp->planned_games(0) >= cap) {
      sp->set_sprt_result(int32_t(result));
      for (int k = 0; k < n; ++k) sp->set_verdicts(k, int32_t(selfplay::Verdict::kCap));
      return std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>>{};
    }
    std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>> out;
    const int first = sp->planned_games(0), end = std::min(cap, first + sprt_batch(spec));
    for (int k = 0; k < n; ++k) {
      sp->set_planned_games(k, end);
      add_units(*sp, k, first, end, games_per_unit(spec), &out);
    }
    return out;
  }
  static bool fully_planned_plan(const v1::store::SelfPlayPlan& sp) {
    return std::all_of(sp.verdicts().begin(), sp.verdicts().end(),
                       [](int32_t v) { return v != int32_t(selfplay::Verdict::kOpen); });
  }

  // What a unit needs of its job: the job's spec without its list of positions (each unit names
  // its own, and the list may hold thousands of FENs).
  v1::JobSpec shared(const v1::JobSpec& job) const override {
    v1::JobSpec out = job;
    out.mutable_selfplay()->clear_positions();
    out.mutable_selfplay()->clear_dfrc_pairs();
    return out;
  }
  // Units of stores written before units kept no job carry an equal one already: replaced.
  v1::UnitSpec work_spec(const v1::JobSpec& shared, const v1::UnitSpec& kept,
                         std::optional<uint64_t> /*copy_seed*/) const override {
    v1::UnitSpec out = kept;
    *out.mutable_selfplay()->mutable_job() = shared.selfplay();
    return out;
  }

  absl::StatusOr<v1::UnitResult> check_result(const v1::UnitSpec& spec, const v1::UnitResult& result) const override {
    if (result.kind_case() != v1::UnitResult::kSelfplay)
      return absl::InvalidArgumentError("result: not a self-play result");
    const v1::SelfPlayUnitSpec& u = spec.selfplay();
    const v1::SelfPlayUnitResult& r = result.selfplay();
    if (r.games_size() != u.games())
      return absl::InvalidArgumentError(
          absl::StrCat("result.selfplay.games: ", r.games_size(), " games for a unit of ", u.games()));
    absl::StatusOr<selfplay::SelfPlaySpec> job = selfplay::spec_from_proto(u.job());
    if (!job.ok()) return absl::InternalError(absl::StrCat("unit spec: ", job.status().message()));
    absl::StatusOr<selfplay::StartPosition> position = selfplay::unit_position(u);
    if (!position.ok()) return absl::InternalError(absl::StrCat("unit spec: ", position.status().message()));
    v1::UnitResult out;
    for (int k = 0; k < r.games_size(); ++k) {
      const v1::SelfPlayGame& g = r.games(k);
      const int index = u.first_game() + k;
      if (g.game_index() != index)
        return absl::InvalidArgumentError(
            absl::StrCat("result.selfplay.games.game_index: ", g.game_index(), " where ", index, " was due"));
      absl::StatusOr<selfplay::GameRecord> rec = selfplay::game_from_proto(g);
      if (!rec.ok()) return absl::InvalidArgumentError(absl::StrCat("result.selfplay.", rec.status().message()));
      absl::StatusOr<selfplay::GameRecord> checked = selfplay::check_game(*job, *position, index, *rec);
      if (!checked.ok())
        return absl::InvalidArgumentError(absl::StrCat("result.selfplay.", checked.status().message()));
      checked->pgn.clear();  // made again on export, from the stored moves
      selfplay::game_to_proto(index, *checked, out.mutable_selfplay()->add_games());
    }
    return out;
  }

  std::string kept(const v1::UnitResult& canonical) const override {
    v1::store::SelfPlaySettled k;
    k.set_digest(result_digest(canonical));
    k.set_games(canonical.selfplay().games_size());
    return k.SerializeAsString();
  }

  absl::StatusOr<SettledForm> settle_form(const v1::UnitSpec& spec, const v1::store::UnitMeta& meta,
                                          const v1::UnitResult& canonical) const override {
    absl::StatusOr<SelfPlayCompact> c =
        compact_result(spec.selfplay(), meta.selfplay().position(), canonical, MoveCoding::kLegalRanks);
    if (!c.ok()) return c.status();
    SettledForm out;
    out.stored = c->settled.SerializeAsString();
    out.held.mutable_selfplay();
    out.write = [settlement = std::move(c->settlement)](Store* store, const std::string& job_id) {
      return apply_settlement(store, job_id, settlement, 1);
    };
    return out;
  }

  absl::Status load_settled(const v1::UnitSpec&, const v1::store::UnitMeta&, const std::string& stored,
                            std::string* kept, v1::UnitResult* held) const override {
    v1::store::SelfPlaySettled s;
    if (!s.ParseFromString(stored)) return absl::DataLossError("self-play result does not parse");
    s.clear_summary();
    s.clear_lines();
    *kept = s.SerializeAsString();
    held->mutable_selfplay();
    return absl::OkStatus();
  }

  absl::Status write_unsettled(Store* store, const std::string& job_id, const v1::UnitSpec& spec,
                               const v1::store::UnitMeta& meta, const std::string& stored) const override {
    absl::StatusOr<SelfPlaySettlement> s = settlement_from_settled(spec.selfplay(), meta.selfplay().position(), stored);
    if (!s.ok()) return s.status();
    return apply_settlement(store, job_id, *s, -1);
  }

  std::string describe_kept(const std::string& kept) const override {
    v1::store::SelfPlaySettled k;
    if (!k.ParseFromString(kept)) return "?";
    std::string hex;
    for (unsigned char c : k.digest().substr(0, 8)) absl::StrAppend(&hex, absl::Hex(c, absl::kZeroPad2));
    return absl::StrCat(k.games(), " games, digest ", hex, "...");
  }

  std::vector<EngineNeed> required_engines(const v1::JobSpec& spec) const override {
    // The built-in engine takes no UCI options; what it is asked for is its hash (hash_mb),
    // which the worker's operator bounds as builtin's Hash.
    const int hash_mb = spec.selfplay().hash_mb();
    const auto need = [hash_mb](const std::string& engine,
                                const google::protobuf::RepeatedPtrField<v1::UciOption>& options) {
      EngineNeed n{engine, {}};
      if (engine == selfplay::kBuiltinEngine) n.options.push_back(selfplay::builtin_hash_option(hash_mb));
      for (const v1::UciOption& o : options) n.options.push_back({o.name(), o.value()});
      return n;
    };
    std::vector<EngineNeed> out = {need(spec.selfplay().engine(), spec.selfplay().options())};
    if (!spec.selfplay().opponent().empty()) {
      if (spec.selfplay().opponent() == spec.selfplay().engine()) {
        // One engine under two sets of options: both must be allowed.
        for (const v1::UciOption& o : spec.selfplay().opponent_options())
          out[0].options.push_back({o.name(), o.value()});
      } else {
        out.push_back(need(spec.selfplay().opponent(), spec.selfplay().opponent_options()));
      }
    }
    return out;
  }

  // Games under a time limit are not reproducible: workers cannot check each other's, so such
  // jobs are not verified unless asked (and plan() refuses the asking).
  v1::VerifyMode verify_mode(const v1::JobSpec& spec) const override {
    if (spec.verify() == v1::VERIFY_MODE_UNSPECIFIED)
      return spec.selfplay().movetime_ms() > 0 || spec.selfplay().tc_base_ms() > 0 ? v1::VERIFY_MODE_OFF
                                                                                   : v1::VERIFY_MODE_ADAPTIVE;
    return spec.verify();
  }

  // A settled unit holds every game of its spec (check_result refuses fewer).
  NodeCount work(const v1::UnitSpec& spec, const v1::store::UnitMeta&, const v1::UnitResult&) const override {
    return NodeCount(spec.selfplay().games());
  }

  void fill_progress(const v1::store::JobPlan& plan, NodeCount work_done, double work_per_second,
                     v1::Progress* out) const override {
    out->set_games_done(int64_t(work_done));
    // An adaptive job's total is what its looks have planned so far (it grows until the last).
    int64_t total = 0;
    for (int k = 0; k < position_count(plan.selfplay()); ++k) total += planned_games(plan.selfplay(), k);
    out->set_games_total(total);
    out->set_games_per_second(work_per_second);
  }

  std::string describe_plan(const v1::store::JobPlan& plan, size_t units) const override {
    return absl::StrCat(position_count(plan.selfplay()), " positions x ",
                        plan.selfplay().planned_games_size() > 0 ? "at most " : "",
                        plan.selfplay().games_per_position(), " games, ", units, " units");
  }

  // Never called: results come from the store (stream_results).
  std::vector<v1::ResultChunk> folded_results(const v1::store::JobPlan&, const std::vector<UnitView>&,
                                              const std::map<int64_t, std::string>&, bool, bool) const override {
    return {};
  }

  // Per position: its statistics, then its stored games in pages of kResultGamesPerChunk, each
  // page one chunk with the statistics repeated. Memory stays one page whatever the job's size.
  absl::Status stream_results(Store* store, const std::string& job_id, const v1::JobSpec& spec,
                              const v1::store::JobPlan& plan, bool omit_games, const ResultSink& sink) const override {
    const v1::store::SelfPlayPlan& pp = plan.selfplay();
    absl::StatusOr<selfplay::SelfPlaySpec> s = selfplay::spec_from_proto(spec.selfplay());
    if (!s.ok()) return absl::InternalError(absl::StrCat("job spec: ", s.status().message()));
    absl::StatusOr<std::vector<PositionTotals>> totals = load_position_totals(store, job_id);
    if (!totals.ok()) return totals.status();
    size_t next = 0;
    const int n = position_count(pp);
    for (int k = 0; k < n; ++k) {
      absl::StatusOr<selfplay::StartPosition> position = plan_position(pp, k);
      if (!position.ok())
        return absl::DataLossError(
            absl::StrCat("job ", job_id, ": position ", k + 1, ": ", position.status().message()));
      v1::ResultChunk head;
      v1::SelfPlayPositionResult* p = head.mutable_selfplay();
      if (pp.other_positions_size() > 0) {
        p->set_start_position(-1);
        p->set_fen(pp.other_positions(k).fen());
        p->set_position_id(pp.other_positions(k).id());
      } else {
        p->set_start_position(pp.positions(k));
        p->set_fen(startpos_fen(pp.positions(k)).value_or(""));
        p->set_position_id(absl::StrCat(pp.positions(k)));
      }
      p->set_games_planned(planned_games(pp, k));
      while (next < totals->size() && (*totals)[next].sp < k) ++next;
      if (next < totals->size() && (*totals)[next].sp == k) {
        const PositionTotals& t = (*totals)[next];
        p->set_games(t.games);
        p->set_white_wins(t.white_wins);
        p->set_draws(t.draws);
        p->set_black_wins(t.black_wins);
        p->set_total_plies(t.plies);
        p->set_duplicates(t.duplicates);
        p->set_uncounted(t.uncounted);
        p->set_games_stored(t.stored);
        for (int64_t n : t.terminations) p->add_terminations(n);
        for (const std::array<int64_t, 4>& g : t.lines) {
          v1::LineCounts* l = p->add_lines();
          l->set_white_wins(g[0]);
          l->set_draws(g[1]);
          l->set_black_wins(g[2]);
          l->set_lines(g[3]);
        }
        if (t.pairs.size() == kPairFigures) {
          v1::MatchCounts* m = p->mutable_match();
          for (int i = 0; i < selfplay::kPentanomialCells; ++i) m->add_pentanomial(t.pairs[size_t(i)]);
          m->set_wins(t.pairs[5]);
          m->set_draws(t.pairs[6]);
          m->set_losses(t.pairs[7]);
          m->set_duplicates(t.pairs[8]);
          m->set_unpaired(t.pairs[9]);
        }
      }
      // A match position without settled pairs yet has its counts all 0.
      if (s->match() && !p->has_match())
        for (int i = 0; i < selfplay::kPentanomialCells; ++i) p->mutable_match()->add_pentanomial(0);
      while (p->terminations_size() < int(selfplay::Termination::kCount)) p->add_terminations(0);
      // Every game of a position is counted once its unit settles, so the counts tell (and an
      // adaptive job's position is complete once its verdict is in).
      p->set_complete(p->games() == planned_games(pp, k) &&
                      (k >= pp.verdicts_size() || pp.verdicts(k) != int32_t(selfplay::Verdict::kOpen)));
      if (omit_games || p->games_stored() == 0) {
        if (!sink(head)) return absl::OkStatus();
        continue;
      }
      int64_t after = -1;
      bool sent = false;
      for (;;) {
        absl::StatusOr<std::vector<StoredGame>> page = load_games(store, job_id, k, after, kResultGamesPerChunk);
        if (!page.ok()) return page.status();
        if (page->empty()) break;
        v1::ResultChunk chunk = head;
        for (const StoredGame& g : *page) {
          absl::StatusOr<v1::SelfPlayGame> game = expand_game(*s, *position, g, g.white, g.black);
          if (!game.ok()) return absl::DataLossError(absl::StrCat("job ", job_id, ": ", game.status().message()));
          *chunk.mutable_selfplay()->add_game_records() = std::move(*game);
        }
        after = page->back().index;
        sent = true;
        if (!sink(chunk)) return absl::OkStatus();
        if (int(page->size()) < kResultGamesPerChunk) break;
      }
      if (!sent && !sink(head)) return absl::OkStatus();
    }
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<JobKind> make_selfplay_kind() { return std::make_unique<SelfPlayKind>(); }

}  // namespace c960::cluster
