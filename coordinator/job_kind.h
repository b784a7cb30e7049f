// What the coordinator needs to know about one kind of job (perft today, self-play next):
// how to validate and plan a spec into units, check a unit's result, weigh it for progress and
// turn the finished units into results. The coordinator's leasing, storage and progress code is
// the same for every kind.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "c960/v1/cluster.pb.h"
#include "c960/v1/store.pb.h"
#include "core/perft.h"
#include "coordinator/store.h"

namespace c960::cluster {

struct KindPlan {
  v1::store::JobPlan plan;
  int split_depth = 0;
  std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>> units;
};

// A unit as kinds see it when building results.
struct UnitView {
  const v1::UnitSpec* spec;
  const v1::store::UnitMeta* meta;
  const v1::UnitResult* result;  // null while not complete
};

class JobKind {
 public:
  virtual ~JobKind() = default;
  // The capability a worker announces to receive this kind's units, e.g. "perft".
  virtual std::string capability() const = 0;
  virtual v1::JobSpec::KindCase spec_case() const = 0;
  // INVALID_ARGUMENT naming the field, RESOURCE_EXHAUSTED for oversized plans.
  virtual absl::StatusOr<KindPlan> plan(const v1::JobSpec& spec) const = 0;
  // INVALID_ARGUMENT when the result cannot belong to the unit.
  virtual absl::Status check_result(const v1::UnitSpec& spec, const v1::UnitResult& result) const = 0;
  // The work a completed unit stands for in progress figures (perft: weighted leaf nodes;
  // self-play: games).
  virtual NodeCount work(const v1::store::UnitMeta& meta, const v1::UnitResult& result) const = 0;
  // divide: perft only; omit_games: self-play only (counts without game records).
  virtual std::vector<v1::ResultChunk> results(const v1::store::JobPlan& plan, const std::vector<UnitView>& units,
                                               bool divide, bool omit_games) const = 0;
  // Rows for the store's games table that a checked result brings (self-play); none for perft.
  virtual std::vector<StoredGame> games(const v1::UnitSpec&, const v1::UnitResult&) const { return {}; }
};

std::unique_ptr<JobKind> make_perft_kind();
std::unique_ptr<JobKind> make_selfplay_kind();

}  // namespace c960::cluster
