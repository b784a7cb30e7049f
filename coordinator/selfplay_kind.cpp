// The self-play job kind: a unit is a few consecutive games of one start position; a result
// carries its games, each replayed here for legality before it is stored. Results per position
// are the games of its units in index order, so statistics built from them equal a local run's.
#include <algorithm>
#include <cctype>

#include "absl/strings/str_cat.h"
#include "cluster/config.h"
#include "cluster/selfplay_proto.h"
#include "coordinator/job_kind.h"
#include "core/startpos.h"

namespace c960::cluster {
namespace {

absl::Status check_engine_name(const std::string& engine) {
  const bool name = !engine.empty() && engine.size() <= size_t(kMaxEngineNameLength) &&
                    std::all_of(engine.begin(), engine.end(), [](char c) {
                      return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
                    });
  if (name) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "engine: '", engine.substr(0, 64),
      "' is not an engine name: name one the workers offer (builtin, or NAME from c960-worker --engine NAME=PATH); "
      "a job cannot give a path"));
}

int position_count(const v1::store::SelfPlayPlan& plan) {
  return plan.other_positions_size() > 0 ? plan.other_positions_size() : plan.positions_size();
}

class SelfPlayKind : public JobKind {
 public:
  std::string capability() const override { return "selfplay"; }
  v1::JobSpec::KindCase spec_case() const override { return v1::JobSpec::kSelfplay; }

  absl::StatusOr<KindPlan> plan(const v1::JobSpec& spec) const override {
    const v1::SelfPlayJobSpec& p = spec.selfplay();
    absl::StatusOr<selfplay::SelfPlaySpec> s = selfplay::spec_from_proto(p);
    if (!s.ok()) return s.status();
    // A job names an engine the workers offer; it never makes them start a program of its choosing.
    if (absl::Status e = check_engine_name(p.engine()); !e.ok()) return e;
    if (p.movetime_ms() > 0 && (spec.verify() == v1::VERIFY_MODE_ADAPTIVE || spec.verify() == v1::VERIFY_MODE_ALL))
      return absl::InvalidArgumentError(
          "verify: games under a time limit (movetime) are not reproducible, so workers cannot check each other's; "
          "use verify off, or a nodes or depth limit");
    const int per_unit = p.games_per_unit() > 0 ? p.games_per_unit() : kDefaultSelfPlayGamesPerUnit;
    const uint64_t units_per_position = (uint64_t(s->games_per_position) + uint64_t(per_unit) - 1) / uint64_t(per_unit);
    if (units_per_position * s->positions.size() > kMaxPlanUnits)
      return absl::ResourceExhaustedError(absl::StrCat("games_per_position: ", units_per_position * s->positions.size(),
                                                       " units is more than ", kMaxPlanUnits,
                                                       "; raise games_per_unit"));
    KindPlan out;
    v1::store::SelfPlayPlan* sp = out.plan.mutable_selfplay();
    sp->set_games_per_position(s->games_per_position);
    // A job of the 960 names its positions by number; other positions travel in their units, and
    // the job each unit carries leaves out its list (it may hold thousands of FENs).
    const bool by_number = p.positions_size() == 0 && p.dfrc_pairs().empty();
    v1::SelfPlayJobSpec unit_job = p;
    if (!by_number) {
      unit_job.clear_positions();
      unit_job.clear_dfrc_pairs();
    }
    for (size_t k = 0; k < s->positions.size(); ++k) {
      const selfplay::StartPosition& pos = s->positions[k];
      if (by_number) {
        sp->add_positions(pos.number);
      } else {
        v1::store::SelfPlayPlanPosition* o = sp->add_other_positions();
        o->set_id(pos.id);
        o->set_fen(pos.fen);
      }
      for (int first = 0; first < s->games_per_position; first += per_unit) {
        v1::UnitSpec us;
        v1::SelfPlayUnitSpec* u = us.mutable_selfplay();
        *u->mutable_job() = unit_job;
        if (by_number) {
          u->set_start_position(pos.number);
        } else {
          u->set_start_position(-1);
          u->mutable_position()->set_id(pos.id);
          u->mutable_position()->set_fen(pos.fen);
          u->set_position_index(int32_t(k));
        }
        u->set_first_game(first);
        u->set_games(std::min(per_unit, s->games_per_position - first));
        v1::store::UnitMeta meta;
        meta.mutable_selfplay()->set_position(int32_t(k));
        out.units.emplace_back(std::move(us), std::move(meta));
      }
    }
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
      selfplay::game_to_proto(index, *checked, out.mutable_selfplay()->add_games());
    }
    return out;
  }

  std::string required_engine(const v1::JobSpec& spec) const override { return spec.selfplay().engine(); }

  // Games under a time limit are not reproducible: workers cannot check each other's, so such
  // jobs are not verified unless asked (and plan() refuses the asking).
  v1::VerifyMode verify_mode(const v1::JobSpec& spec) const override {
    if (spec.verify() == v1::VERIFY_MODE_UNSPECIFIED)
      return spec.selfplay().movetime_ms() > 0 ? v1::VERIFY_MODE_OFF : v1::VERIFY_MODE_ADAPTIVE;
    return spec.verify();
  }

  NodeCount work(const v1::store::UnitMeta&, const v1::UnitResult& result) const override {
    return NodeCount(result.selfplay().games_size());
  }

  void fill_progress(const v1::store::JobPlan& plan, NodeCount work_done, double work_per_second,
                     v1::Progress* out) const override {
    out->set_games_done(int64_t(work_done));
    out->set_games_total(int64_t(position_count(plan.selfplay())) * plan.selfplay().games_per_position());
    out->set_games_per_second(work_per_second);
  }

  std::string describe_plan(const v1::store::JobPlan& plan, size_t units) const override {
    return absl::StrCat(position_count(plan.selfplay()), " positions x ", plan.selfplay().games_per_position(),
                        " games, ", units, " units");
  }

  std::string describe_work(NodeCount work) const override { return absl::StrCat(to_string(work), " games"); }

  std::vector<StoredGame> games(const v1::UnitSpec& spec, const v1::UnitResult& result) const override {
    std::vector<StoredGame> out;
    // Keyed by start position, or for other positions by their place in the job (a job has
    // positions of one sort only, so keys never meet).
    const v1::SelfPlayUnitSpec& u = spec.selfplay();
    const int32_t key = u.has_position() ? u.position_index() : u.start_position();
    for (const v1::SelfPlayGame& g : result.selfplay().games()) out.push_back({key, g.game_index(), g.SerializeAsString()});
    return out;
  }

  std::vector<v1::ResultChunk> results(const v1::store::JobPlan& plan, const std::vector<UnitView>& units, bool,
                                       bool omit_games) const override {
    const v1::store::SelfPlayPlan& pp = plan.selfplay();
    const int n = position_count(pp);
    std::vector<v1::SelfPlayPositionResult> pos{size_t(n)};
    for (int k = 0; k < n; ++k) {
      if (pp.other_positions_size() > 0) {
        pos[k].set_start_position(-1);
        pos[k].set_fen(pp.other_positions(k).fen());
        pos[k].set_position_id(pp.other_positions(k).id());
      } else {
        pos[k].set_start_position(pp.positions(k));
        pos[k].set_fen(startpos_fen(pp.positions(k)).value_or(""));
        pos[k].set_position_id(absl::StrCat(pp.positions(k)));
      }
      pos[k].set_games_planned(pp.games_per_position());
      pos[k].set_complete(true);
    }
    // Units are planned position by position in game order, so games arrive by index.
    for (const UnitView& u : units) {
      const int k = u.meta->selfplay().position();
      if (k < 0 || k >= n) continue;
      v1::SelfPlayPositionResult& p = pos[k];
      if (!u.result) {
        p.set_complete(false);
        continue;
      }
      for (const v1::SelfPlayGame& g : u.result->selfplay().games()) {
        p.set_games(p.games() + 1);
        if (g.result() == "1-0")
          p.set_white_wins(p.white_wins() + 1);
        else if (g.result() == "0-1")
          p.set_black_wins(p.black_wins() + 1);
        else
          p.set_draws(p.draws() + 1);
        p.set_total_plies(p.total_plies() + g.moves_size());
        if (!omit_games) *p.add_game_records() = g;
      }
    }
    std::vector<v1::ResultChunk> out;
    for (v1::SelfPlayPositionResult& p : pos) {
      if (p.game_records_size() <= kResultGamesPerChunk) {
        *out.emplace_back().mutable_selfplay() = std::move(p);
        continue;
      }
      // Split so that no chunk nears the message size limit.
      v1::SelfPlayPositionResult head = p;
      head.clear_game_records();
      for (int i = 0; i < p.game_records_size(); i += kResultGamesPerChunk) {
        v1::SelfPlayPositionResult* c = out.emplace_back().mutable_selfplay();
        *c = head;
        for (int j = i; j < std::min(p.game_records_size(), i + kResultGamesPerChunk); ++j)
          *c->add_game_records() = p.game_records(j);
      }
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<JobKind> make_selfplay_kind() { return std::make_unique<SelfPlayKind>(); }

}  // namespace c960::cluster
