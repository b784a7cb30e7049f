// The evaluation job kind (evaluation_kind.cpp): each start position evaluated by each engine at
// a fixed depth or node count (selfplay/evaluation.h).
#pragma once

#include <memory>

#include "coordinator/job_kind.h"

namespace c960::cluster {

std::unique_ptr<JobKind> make_evaluation_kind();

}  // namespace c960::cluster
