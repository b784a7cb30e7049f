// Helpers shared by the coordinator's worker-facing files (coordinator_workers.cpp,
// coordinator_registry.cpp, coordinator_leases.cpp, coordinator_results.cpp). Internal: included
// by those files only.
#pragma once

#include <cstdint>
#include <openssl/rand.h>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "c960/v1/cluster.pb.h"
#include "c960/v1/store.pb.h"
#include "cluster/errors.h"
#include "coordinator/store.h"
#include "coordinator/validation.h"

namespace c960::cluster::workers_internal {

// Rates of workers for `c960 workers`: over this window.
inline constexpr int64_t kWorkerRateWindowMs = 120'000;

// 128 bits from OpenSSL's generator (seeded once from the system); from `seeded` where the
// coordinator was given a seed (tests and the simulation, whose failing seeds must replay: the
// order of sessions follows their ids). Not a std::random_device per id: constructing one runs
// CPUID and each number is an RDSEED retried while the CPU has no entropy ready: on a loaded
// virtual machine that was about 56 of a Hello's 60 µs of CPU.
inline std::string new_session_id(std::mt19937_64* seeded) {
  if (seeded) return absl::StrFormat("s-%016x%016x", (*seeded)(), (*seeded)());
  uint64_t r[2] = {0, 0};
  if (RAND_bytes(reinterpret_cast<unsigned char*>(r), sizeof r) != 1) {
    std::random_device rd;  // OpenSSL could not seed itself: the system's device, slower
    r[0] = uint64_t(rd()) << 32 | rd();
    r[1] = uint64_t(rd()) << 32 | rd();
  }
  return absl::StrFormat("s-%016x%016x", r[0], r[1]);
}

inline absl::Status unknown_worker(const std::string& id) {
  return with_reason(absl::NotFoundError(absl::StrCat("worker_id: no session '", id.substr(0, 64), "'; call Hello")),
                     v1::ErrorInfo::REASON_UNKNOWN_WORKER);
}

inline absl::Status quarantined(const std::string& key, const std::string& why) {
  return with_reason(absl::PermissionDeniedError(absl::StrCat("worker ", key, " is quarantined: ", why)),
                     v1::ErrorInfo::REASON_QUARANTINED);
}

inline absl::Status check_names(const google::protobuf::RepeatedPtrField<std::string>& names, const char* field,
                                int max) {
  if (names.size() > max) return absl::InvalidArgumentError(absl::StrCat(field, ": more than ", max));
  for (const std::string& n : names)
    if (absl::Status s = check_id(n, field); !s.ok()) return s;
  return absl::OkStatus();
}

// Planned units as the store keeps them, indexed from `first`.
inline std::vector<StoredUnit> stored_units(int64_t first,
                                            const std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>>& units) {
  std::vector<StoredUnit> rows(units.size());
  for (size_t k = 0; k < units.size(); ++k) {
    rows[k].index = first + int64_t(k);
    rows[k].spec = units[k].first.SerializeAsString();
    rows[k].meta = units[k].second.SerializeAsString();
  }
  return rows;
}

}  // namespace c960::cluster::workers_internal
