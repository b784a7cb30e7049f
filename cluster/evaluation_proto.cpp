#include "cluster/evaluation_proto.h"

#include "absl/strings/str_cat.h"
#include "cluster/config.h"
#include "core/startpos.h"

namespace c960::cluster {

absl::StatusOr<selfplay::EvalSpec> evaluation_spec_from_proto(const v1::EvaluationJobSpec& p) {
  selfplay::EvalSpec s;
  if (p.start_positions().size() > size_t(kMaxStartPositionsLength))
    return absl::InvalidArgumentError(
        absl::StrCat("start_positions: longer than ", kMaxStartPositionsLength, " characters"));
  absl::StatusOr<std::vector<int>> positions =
      parse_sp_ranges(p.start_positions().empty() ? "0-959" : p.start_positions());
  if (!positions.ok())
    return absl::InvalidArgumentError(absl::StrCat("start_positions: ", positions.status().message()));
  s.positions = *std::move(positions);
  if (p.engines_size() > selfplay::kMaxEvalEngines)
    return absl::InvalidArgumentError(
        absl::StrCat("engines: ", p.engines_size(), " is more than ", selfplay::kMaxEvalEngines));
  for (const v1::EvaluationEngine& e : p.engines()) {
    selfplay::EvalEngine engine;
    engine.name = e.engine();
    if (e.options_size() > kMaxUciOptions)
      return absl::InvalidArgumentError(absl::StrCat("engines[", s.engines.size(), "].options: ", e.options_size(),
                                                     " options is more than ", kMaxUciOptions));
    for (const v1::UciOption& o : e.options()) engine.options.push_back({o.name(), o.value()});
    s.engines.push_back(std::move(engine));
  }
  if (p.depth() < 0) return absl::InvalidArgumentError(absl::StrCat("depth: ", p.depth(), " is negative"));
  s.depth = p.depth();
  s.nodes = p.nodes();
  if (p.multipv() != 0 && p.multipv() != 1)
    return absl::InvalidArgumentError(
        absl::StrCat("multipv: ", p.multipv(), " is not 1: an evaluation keeps one principal variation"));
  s.hash_mb = p.hash_mb() == 0 ? selfplay::kDefaultHashMb : p.hash_mb();
  s.engine_timeout_ms = p.engine_timeout_ms() == 0 ? selfplay::kDefaultEngineTimeoutMs : p.engine_timeout_ms();
  if (p.positions_per_unit() < 0 || p.positions_per_unit() > kMaxEvaluationPositionsPerUnit)
    return absl::InvalidArgumentError(
        absl::StrCat("positions_per_unit: ", p.positions_per_unit(), " is not in 1..", kMaxEvaluationPositionsPerUnit));
  if (absl::Status v = selfplay::validate_evaluation(s); !v.ok()) {
    // The library calls the list "positions"; the proto "start_positions".
    if (v.message().rfind("positions:", 0) == 0) return absl::InvalidArgumentError(absl::StrCat("start_", v.message()));
    return v;
  }
  return s;
}

v1::EvaluationJobSpec evaluation_spec_to_proto(const selfplay::EvalSpec& spec) {
  v1::EvaluationJobSpec p;
  std::string sps;
  for (size_t i = 0; i < spec.positions.size(); ++i) absl::StrAppend(&sps, i ? "," : "", spec.positions[i]);
  p.set_start_positions(sps);
  for (const selfplay::EvalEngine& e : spec.engines) {
    v1::EvaluationEngine* pe = p.add_engines();
    pe->set_engine(e.name);
    for (const selfplay::UciOptionValue& o : e.options) {
      v1::UciOption* po = pe->add_options();
      po->set_name(o.name);
      po->set_value(o.value);
    }
  }
  p.set_depth(spec.depth);
  p.set_nodes(spec.nodes);
  if (spec.hash_mb != selfplay::kDefaultHashMb) p.set_hash_mb(spec.hash_mb);
  if (spec.engine_timeout_ms != selfplay::kDefaultEngineTimeoutMs) p.set_engine_timeout_ms(spec.engine_timeout_ms);
  return p;
}

selfplay::Evaluation evaluation_from_proto(const v1::PositionEvaluation& p) {
  selfplay::Evaluation e;
  e.sp = p.start_position();
  e.score_cp = p.score_cp();
  e.mate = p.mate();
  e.best_move = p.best_move();
  e.pv.assign(p.pv().begin(), p.pv().end());
  e.depth = p.depth();
  e.nodes = p.nodes();
  return e;
}

void evaluation_to_proto(const selfplay::Evaluation& e, v1::PositionEvaluation* out) {
  out->set_start_position(e.sp);
  out->set_score_cp(e.score_cp);
  out->set_mate(e.mate);
  out->set_best_move(e.best_move);
  for (const std::string& m : e.pv) out->add_pv(m);
  out->set_depth(e.depth);
  out->set_nodes(e.nodes);
}

std::vector<selfplay::EvalRow> evaluation_rows(const std::vector<v1::ResultChunk>& chunks, size_t* incomplete) {
  std::vector<selfplay::EvalRow> rows;
  if (incomplete) *incomplete = 0;
  for (const v1::ResultChunk& c : chunks) {
    if (!c.has_evaluation()) continue;
    const v1::EvaluationResult& r = c.evaluation();
    if (!r.complete()) {
      if (incomplete) ++*incomplete;
      continue;
    }
    selfplay::EvalRow row;
    row.sp = r.start_position();
    row.fen = r.fen();
    row.engine = r.engine();
    row.depth_limit = r.depth_limit();
    row.nodes_limit = r.nodes_limit();
    row.eval = evaluation_from_proto(r.evaluation());
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace c960::cluster
