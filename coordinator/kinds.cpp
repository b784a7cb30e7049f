#include "coordinator/kinds.h"

#include "coordinator/coordinator.h"
#include "coordinator/evaluation_kind.h"

namespace c960::cluster {

std::vector<std::unique_ptr<JobKind>> make_kinds(const CoordinatorOptions& options) {
  std::vector<std::unique_ptr<JobKind>> kinds;
  kinds.push_back(make_perft_kind(options.lazy_plan_walk, options.lazy_window_units));
  kinds.push_back(make_selfplay_kind());
  kinds.push_back(make_evaluation_kind());
  return kinds;
}

// The store holds the tables of every kind (KindDescriptor::tables), whether a job of it exists
// or not: a store opened once without a kind's tables would skip that kind's schema steps.
const std::vector<const KindTables*>& kind_tables() {
  static const std::vector<const KindTables*> tables = [] {
    std::vector<const KindTables*> out;
    for (const std::unique_ptr<JobKind>& k : make_kinds(CoordinatorOptions{}))
      if (k->descriptor().tables) out.push_back(k->descriptor().tables);
    return out;
  }();
  return tables;
}

}  // namespace c960::cluster
