#include "worker/enroll.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "c960/v1/cluster.grpc.pb.h"
#include "cluster/auth.h"
#include "cluster/config.h"
#include "cluster/coordinator_set.h"
#include "cluster/errors.h"
#include "cluster/log.h"
#include "cluster/tls.h"

namespace c960::cluster {

absl::StatusOr<std::string> read_credential(const std::string& credential_file) {
  std::ifstream in(credential_file, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat("--credential-file: ", credential_file, ": none yet"));
    return absl::InvalidArgumentError(
        absl::StrCat("--credential-file: ", credential_file, ": cannot read: ", std::strerror(errno)));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string token(absl::StripAsciiWhitespace(ss.str()));
  if (!valid_token_text(token))
    return absl::InvalidArgumentError(
        absl::StrCat("--credential-file: ", credential_file, ": does not hold a token (delete it to enroll again)"));
  return token;
}

namespace {

// Written to a temporary file first and renamed: a crash leaves the old state or the new one.
absl::Status write_credential(const std::string& path, const std::string& token) {
  const std::string tmp = absl::StrCat(path, ".tmp");
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return absl::InvalidArgumentError(absl::StrCat("--credential-file: ", tmp, ": ", std::strerror(errno)));
  const std::string text = token + "\n";
  const bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size()) && ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return absl::InvalidArgumentError(absl::StrCat("--credential-file: ", path, ": ", std::strerror(ok ? errno : err)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> enrolled_token(const ChannelOptions& options, const std::string& name,
                                           const std::string& credential_file, const StopSignal& stop,
                                           BackoffPolicy retry) {
  if (absl::StatusOr<std::string> t = read_credential(credential_file); t.ok() || !absl::IsNotFound(t.status()))
    return t;
  // A leader and its standbys: the enrollment goes to the leader (CoordinatorSet follows it).
  CoordinatorSet coordinators(options);
  std::vector<std::unique_ptr<v1::WorkerService::Stub>> stubs;
  for (size_t k = 0; k < coordinators.size(); ++k) stubs.push_back(v1::WorkerService::NewStub(coordinators.channel(k)));
  v1::EnrollRequest req;
  req.set_name(name);
  Backoff backoff(retry);
  while (!stop.stopped()) {
    const CoordinatorSet::Target target = coordinators.current();
    CoordinatorSet::After after;
    grpc::Status s;
    if (!coordinators.await_current(kFailoverConnectMs, &after)) {
      s = grpc::Status(grpc::StatusCode::UNAVAILABLE, absl::StrCat("coordinator ", target.address, " does not answer"));
    } else {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(kRpcDeadlineMs));
      // Wait for a connection until the deadline rather than fail at once while gRPC reconnects:
      // the synchronous channel progresses a TLS handshake only while a call polls it (as
      // connection.cpp).
      ctx.set_wait_for_ready(true);
      v1::EnrollResponse resp;
      s = stubs[target.index]->Enroll(&ctx, req, &resp);
      after = coordinators.after(target.index, s);
      if (s.ok()) {
        if (!valid_token_text(resp.token()))
          return absl::InternalError("Enroll: the coordinator's answer holds no token");
        if (absl::Status w = write_credential(credential_file, resp.token()); !w.ok()) return w;
        log_info(absl::StrCat("enrolled as ", resp.identity(), "; credential kept in ", credential_file));
        return resp.token();
      }
      if (s.error_code() != grpc::StatusCode::UNAVAILABLE && s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED)
        return absl::Status(
            absl::StatusCode(s.error_code()),
            absl::StrCat("--enroll-token-file: the coordinator refused the join token: ", s.error_message()));
    }
    // On to a coordinator not tried since the last wait (a standby named the leader, or one did
    // not answer): at once. Every one failed (or the only one): back off, at least as long as
    // the coordinator asked, and say so once per wait.
    if (after.moved && !after.round_over) continue;
    const int64_t wait = backoff.next_ms(retry_delay_ms_of(s));
    std::string why = s.error_message();
    if (backoff.failures() == 1 || backoff.failures() % 5 == 0) {
      // gRPC says only that the call failed; the probe says why (a wrong CA, a certificate not
      // made for the host dialled, ...), as the worker does once it has its credential.
      const std::string probed = diagnose_connection(target.address, options.tls ? &*options.tls : nullptr).message;
      if (!probed.empty()) why = probed;
    }
    log_warning(absl::StrCat("enrolling: no coordinator took the join token (", coordinators.describe(),
                             "; last: ", target.address, ": ", why, "); trying again in ", wait, " ms"));
    if (!stop.wait_ms(wait)) break;
  }
  return absl::CancelledError("stopped before enrolling");
}

}  // namespace c960::cluster
