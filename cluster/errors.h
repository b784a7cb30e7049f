// Errors across the gRPC edge: absl::Status inside, grpc::Status on the wire (the codes share
// their numbering). A reason a client must act on (e.g. "unknown worker: call Hello") travels as
// a typed detail (c960.v1.ErrorInfo), never as a pattern in the message text.
#pragma once

#include <cstdint>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "c960/v1/cluster.pb.h"

namespace c960::cluster {

// The status with an ErrorInfo reason attached.
absl::Status with_reason(absl::Status status, v1::ErrorInfo::Reason reason);
// The reason attached to a status, or REASON_UNSPECIFIED.
v1::ErrorInfo::Reason reason_of(const absl::Status& status);
v1::ErrorInfo::Reason reason_of(const grpc::Status& status);
// The ErrorInfo attached to a status (reason and its details); an empty one where none is.
v1::ErrorInfo error_info_of(const absl::Status& status);
v1::ErrorInfo error_info_of(const grpc::Status& status);
// UNAVAILABLE with REASON_NOT_LEADER naming the leader (empty: not known).
absl::Status not_leader(absl::string_view message, absl::string_view leader);
// The status asking its caller to wait `ms` before it tries again (ErrorInfo.retry_delay_ms,
// beside any reason it has).
absl::Status with_retry_delay(absl::Status status, int64_t ms);
// The retry delay a status carries, in ms; 0 where it says none (negative ones read as none).
int64_t retry_delay_ms_of(const grpc::Status& status);

// Code, message and reason, as a gRPC status (the reason in the status details).
grpc::Status to_grpc(const absl::Status& status);
absl::Status from_grpc(const grpc::Status& status);

}  // namespace c960::cluster
