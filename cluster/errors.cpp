#include "cluster/errors.h"

#include "absl/strings/cord.h"

namespace c960::cluster {
namespace {

// The payload key absl uses, and the type URL of the Any in RpcStatus.details.
constexpr char kErrorInfoUrl[] = "type.googleapis.com/c960.v1.ErrorInfo";

}  // namespace

absl::Status with_reason(absl::Status status, v1::ErrorInfo::Reason reason) {
  v1::ErrorInfo info;
  info.set_reason(reason);
  status.SetPayload(kErrorInfoUrl, absl::Cord(info.SerializeAsString()));
  return status;
}

v1::ErrorInfo error_info_of(const absl::Status& status) {
  auto payload = status.GetPayload(kErrorInfoUrl);
  v1::ErrorInfo info;
  if (!payload || !info.ParseFromString(std::string(*payload))) return v1::ErrorInfo();
  return info;
}

v1::ErrorInfo error_info_of(const grpc::Status& status) { return error_info_of(from_grpc(status)); }

v1::ErrorInfo::Reason reason_of(const absl::Status& status) { return error_info_of(status).reason(); }

v1::ErrorInfo::Reason reason_of(const grpc::Status& status) { return reason_of(from_grpc(status)); }

absl::Status not_leader(absl::string_view message, absl::string_view leader) {
  v1::ErrorInfo info;
  info.set_reason(v1::ErrorInfo::REASON_NOT_LEADER);
  info.set_leader(std::string(leader));
  absl::Status status = absl::UnavailableError(message);
  status.SetPayload(kErrorInfoUrl, absl::Cord(info.SerializeAsString()));
  return status;
}

absl::Status with_retry_delay(absl::Status status, int64_t ms) {
  v1::ErrorInfo info = error_info_of(status);
  info.set_retry_delay_ms(ms);
  status.SetPayload(kErrorInfoUrl, absl::Cord(info.SerializeAsString()));
  return status;
}

int64_t retry_delay_ms_of(const grpc::Status& status) {
  const int64_t ms = error_info_of(status).retry_delay_ms();
  return ms > 0 ? ms : 0;
}

grpc::Status to_grpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  const grpc::StatusCode code = grpc::StatusCode(int(s.code()));
  std::string message(s.message());
  auto payload = s.GetPayload(kErrorInfoUrl);
  if (!payload) return grpc::Status(code, message);
  v1::RpcStatus details;
  details.set_code(int(s.code()));
  details.set_message(message);
  google::protobuf::Any* any = details.add_details();
  any->set_type_url(kErrorInfoUrl);
  any->set_value(std::string(*payload));
  return grpc::Status(code, message, details.SerializeAsString());
}

absl::Status from_grpc(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  absl::Status out(absl::StatusCode(int(s.error_code())), s.error_message());
  v1::RpcStatus details;
  if (!s.error_details().empty() && details.ParseFromString(s.error_details()))
    for (const google::protobuf::Any& any : details.details())
      if (any.type_url() == kErrorInfoUrl) out.SetPayload(kErrorInfoUrl, absl::Cord(any.value()));
  return out;
}

}  // namespace c960::cluster
