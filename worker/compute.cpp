#include "worker/compute.h"

#include <map>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "cluster/config.h"
#include "cluster/evaluation_proto.h"
#include "cluster/selfplay_proto.h"
#include "cluster/u128.h"
#include "core/notation.h"
#include "core/position.h"
#include "core/startpos.h"
#include "selfplay/local_runner.h"

namespace c960::cluster {
namespace {

// One game at a time per compute thread, with the players of the last job this thread served.
absl::StatusOr<v1::UnitResult> compute_selfplay(const v1::SelfPlayUnitSpec& u,
                                                const std::map<std::string, EngineOffer>& engines) {
  thread_local std::string cached_job;
  thread_local std::optional<selfplay::Players> players;
  absl::StatusOr<selfplay::SelfPlaySpec> spec = selfplay::spec_from_proto(u.job());
  if (!spec.ok()) return absl::InvalidArgumentError(absl::StrCat("spec.selfplay.job.", spec.status().message()));
  // Jobs name engines (a match two); only this worker knows which binary a name stands for.
  // The job's options are checked against the operator's policy for that engine before it
  // starts (check_engine below: UciEngine::start).
  const auto resolve = [&](const std::string& name, std::string* path,
                           std::optional<selfplay::OptionPolicy>* policy) -> absl::Status {
    const auto it = engines.find(name);
    if (name == selfplay::kBuiltinEngine) {
      // The job sizes the built-in engine's tables; the operator bounds them.
      const selfplay::OptionPolicy builtin = it != engines.end() ? it->second.policy : default_builtin_policy();
      if (absl::Status s = builtin.check({selfplay::builtin_hash_option(spec->hash_mb)}); !s.ok())
        return absl::FailedPreconditionError(
            absl::StrCat("engine 'builtin': hash_mb ", spec->hash_mb, " is more than this worker allows (",
                         builtin.describe(), " MiB per player; c960-worker --engine-option builtin:Hash=1..MAX)"));
      return absl::OkStatus();
    }
    if (it == engines.end())
      return absl::FailedPreconditionError(absl::StrCat("engine '", name, "' is not offered by this worker"));
    *path = it->second.path;
    *policy = it->second.policy;
    return absl::OkStatus();
  };
  if (absl::Status s = resolve(spec->engine, &spec->engine_path, &spec->option_policy); !s.ok()) return s;
  if (spec->match())
    if (absl::Status s = resolve(spec->opponent, &spec->opponent_path, &spec->opponent_option_policy); !s.ok())
      return s;
  if (u.first_game() < 0 || u.games() < 1 || u.games() > kMaxSelfPlayGamesPerUnit)
    return absl::InvalidArgumentError("spec.selfplay: first_game or games out of range");
  absl::StatusOr<selfplay::StartPosition> position = selfplay::unit_position(u);
  if (!position.ok()) return absl::InvalidArgumentError(absl::StrCat("spec.selfplay.", position.status().message()));
  const std::string key = u.job().SerializeAsString();
  if (!players || key != cached_job) {
    players.reset();
    // The engine is checked once per job and thread: a missing binary or a bad option fails the
    // unit with the reason, rather than losing every game by "engine error".
    if (absl::Status s = selfplay::check_engine(*spec); !s.ok())
      return absl::FailedPreconditionError(s.message().substr(0, 9) == "opponent:"
                                               ? absl::StrCat("engine '", spec->opponent, "'", s.message().substr(8))
                                               : absl::StrCat("engine '", spec->engine, "': ", s.message()));
    absl::StatusOr<selfplay::Players> p = selfplay::make_players(*spec);
    if (!p.ok()) return absl::FailedPreconditionError(p.status().message());
    players = std::move(*p);
    cached_job = key;
  }
  v1::UnitResult out;
  for (int k = 0; k < u.games(); ++k) {
    const int index = u.first_game() + k;
    absl::StatusOr<selfplay::GameRecord> g = selfplay::play_selfplay_game(*spec, *position, index, *players);
    if (!g.ok()) return absl::InvalidArgumentError(g.status().message());
    selfplay::game_to_proto(index, *g, out.mutable_selfplay()->add_games());
  }
  return out;
}

// An evaluation unit: its positions by its one engine, started once per job and thread and kept
// while the thread serves units of the same job and engine.
absl::StatusOr<v1::UnitResult> compute_evaluation(const v1::EvaluationUnitSpec& u,
                                                  const std::map<std::string, EngineOffer>& engines) {
  thread_local std::string cached_job;
  thread_local std::unique_ptr<selfplay::Evaluator> evaluator;
  absl::StatusOr<selfplay::EvalSpec> spec = evaluation_spec_from_proto(u.job());
  if (!spec.ok()) return absl::InvalidArgumentError(absl::StrCat("spec.evaluation.job.", spec.status().message()));
  if (spec->engines.size() != 1)
    return absl::InvalidArgumentError("spec.evaluation.job.engines: a unit is computed by one engine");
  if (u.start_positions_size() < 1 || u.start_positions_size() > kMaxEvaluationPositionsPerUnit)
    return absl::InvalidArgumentError(absl::StrCat("spec.evaluation.start_positions: ", u.start_positions_size(),
                                                   " positions is not in 1..", kMaxEvaluationPositionsPerUnit));
  selfplay::EvalEngine& engine = spec->engines[0];
  const auto it = engines.find(engine.name);
  if (engine.builtin()) {
    const selfplay::OptionPolicy builtin = it != engines.end() ? it->second.policy : default_builtin_policy();
    if (absl::Status s = builtin.check({selfplay::builtin_hash_option(spec->hash_mb)}); !s.ok())
      return absl::FailedPreconditionError(absl::StrCat("engine 'builtin': hash_mb ", spec->hash_mb,
                                                        " is more than this worker allows (", builtin.describe(),
                                                        " MiB; c960-worker --engine-option builtin:Hash=1..MAX)"));
  } else {
    if (it == engines.end())
      return absl::FailedPreconditionError(absl::StrCat("engine '", engine.name, "' is not offered by this worker"));
    engine.path = it->second.path;
    engine.policy = it->second.policy;
  }
  const std::string key = u.job().SerializeAsString();
  if (!evaluator || key != cached_job) {
    evaluator.reset();
    absl::StatusOr<std::unique_ptr<selfplay::Evaluator>> e = selfplay::Evaluator::make(engine, *spec);
    if (!e.ok()) return absl::FailedPreconditionError(e.status().message());
    evaluator = *std::move(e);
    cached_job = key;
  }
  v1::UnitResult out;
  for (int sp : u.start_positions()) {
    if (sp < 0 || sp >= kStartPositions)
      return absl::InvalidArgumentError(absl::StrCat("spec.evaluation.start_positions: ", sp, " is not in 0..959"));
    absl::StatusOr<selfplay::Evaluation> e = evaluator->evaluate(sp);
    if (!e.ok()) {
      evaluator.reset();
      return absl::FailedPreconditionError(
          absl::StrCat("engine '", engine.name, "', start position ", sp, ": ", e.status().message()));
    }
    evaluation_to_proto(*e, out.mutable_evaluation()->add_evaluations());
  }
  return out;
}

// The key set of a copy of a perft unit: 0 the global one, others one per seed, kept per thread
// (a set is 9 KB; a worker sees a handful).
const zobrist::Keys* keys_for(uint64_t seed) {
  if (seed == 0) return nullptr;
  thread_local std::map<uint64_t, std::unique_ptr<zobrist::Keys>> sets;
  std::unique_ptr<zobrist::Keys>& k = sets[seed];
  // Far from the global set's seed and from each other.
  if (!k) k = std::make_unique<zobrist::Keys>(zobrist::make_keys(0x9E3779B97F4A7C15ULL * seed + 0x2545F4914F6CDD1DULL));
  return k.get();
}

}  // namespace

selfplay::OptionPolicy default_engine_policy() {
  selfplay::OptionPolicy p;
  p.allowed.push_back({"Hash", true, 1, kDefaultEngineHashMaxMb});
  p.allowed.push_back({"Threads", true, 1, kDefaultEngineThreadsMax});
  return p;
}

selfplay::OptionPolicy default_builtin_policy() {
  selfplay::OptionPolicy p;
  p.allowed.push_back({"Hash", true, 1, kDefaultBuiltinHashMaxMb});
  return p;
}

absl::StatusOr<v1::UnitResult> compute_unit(const v1::UnitSpec& spec, PerftHash* hash,
                                            const std::map<std::string, EngineOffer>& engines) {
  if (spec.kind_case() == v1::UnitSpec::kSelfplay) return compute_selfplay(spec.selfplay(), engines);
  if (spec.kind_case() == v1::UnitSpec::kEvaluation) return compute_evaluation(spec.evaluation(), engines);
  if (spec.kind_case() != v1::UnitSpec::kPerft) return absl::InvalidArgumentError("spec: not a perft unit");
  const v1::PerftUnitSpec& p = spec.perft();
  if (p.depth() < 0 || p.depth() > kMaxUnitDepth)
    return absl::InvalidArgumentError(absl::StrCat("spec.perft.depth: ", p.depth(), " is not in 0..", kMaxUnitDepth));
  absl::StatusOr<Position> pos = Position::from_fen(p.fen());
  if (!pos.ok()) return absl::InvalidArgumentError(absl::StrCat("spec.perft.fen: ", pos.status().message()));
  v1::UnitResult out;
  v1::PerftUnitResult* r = out.mutable_perft();
  if (p.divide() && p.depth() >= 1) {
    NodeCount total = 0;
    for (const DivideEntry& e : divide(*pos, p.depth(), hash, keys_for(p.zobrist_seed()))) {
      v1::MoveCount* mc = r->add_divide();
      mc->set_move(to_uci(e.move));
      to_proto(e.nodes, mc->mutable_nodes());
      total += e.nodes;
    }
    to_proto(total, r->mutable_nodes());
  } else {
    to_proto(perft(*pos, p.depth(), hash, keys_for(p.zobrist_seed())), r->mutable_nodes());
  }
  return out;
}

}  // namespace c960::cluster
