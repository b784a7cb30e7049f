// A worker's own credential: read from its credential file, or, the first time, made by trading
// a join token (role enroll) with the coordinator's Enroll and kept in that file (mode 0600,
// written whole or not at all), so that the worker is the same voter after every restart.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "cluster/backoff.h"
#include "cluster/channel.h"

namespace c960::cluster {

// `options` carries the join token; `name` is the worker's name for the coordinator's record.
// Retries while the coordinator is unreachable or its store fails, backing off after every
// round of its coordinators as `retry` says (cluster/backoff.h), until `stop` (which ends a wait
// at once: CANCELLED); any other refusal (a used-up or unknown join token) is returned, naming
// the flag.
absl::StatusOr<std::string> enrolled_token(const ChannelOptions& options, const std::string& name,
                                           const std::string& credential_file, const StopSignal& stop,
                                           BackoffPolicy retry = {});

// The credential file's token, if the file exists (NOT_FOUND if not).
absl::StatusOr<std::string> read_credential(const std::string& credential_file);

}  // namespace c960::cluster
