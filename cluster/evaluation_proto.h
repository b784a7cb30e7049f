// Evaluation specs and results in the protocol (v1.EvaluationJobSpec, v1.PositionEvaluation)
// and back: what the coordinator's evaluation kind, the worker and the c960 tool share.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "c960/v1/cluster.pb.h"
#include "selfplay/evaluation.h"

namespace c960::cluster {

// The spec a job describes, validated (selfplay::validate_evaluation), its fields named as the
// proto names them (start_positions, engines[K].options, depth, nodes, multipv, hash_mb,
// engine_timeout_ms, positions_per_unit). Engines keep their names (a worker maps them to paths).
absl::StatusOr<selfplay::EvalSpec> evaluation_spec_from_proto(const v1::EvaluationJobSpec& p);
v1::EvaluationJobSpec evaluation_spec_to_proto(const selfplay::EvalSpec& spec);

selfplay::Evaluation evaluation_from_proto(const v1::PositionEvaluation& p);
void evaluation_to_proto(const selfplay::Evaluation& e, v1::PositionEvaluation* out);

// An evaluation job's results (one chunk per position and engine, as GetResults streams them)
// as table rows; incomplete ones are left out and counted in `incomplete` (optional).
std::vector<selfplay::EvalRow> evaluation_rows(const std::vector<v1::ResultChunk>& chunks,
                                               size_t* incomplete = nullptr);

}  // namespace c960::cluster
