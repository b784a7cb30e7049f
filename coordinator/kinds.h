// The kinds of job this build knows: the one list a new kind joins. A kind is its own files (a
// JobKind, and a KindTables where it keeps tables of its own: perft_kind.cpp; selfplay_kind.cpp
// with selfplay_store.cpp) and a line in kinds.cpp; nothing generic names it.
#pragma once

#include <memory>
#include <vector>

#include "coordinator/job_kind.h"

namespace c960::cluster {

struct CoordinatorOptions;

// Every kind, made with the coordinator's options.
std::vector<std::unique_ptr<JobKind>> make_kinds(const CoordinatorOptions& options);

}  // namespace c960::cluster
