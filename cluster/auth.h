// Who calls, as the coordinator's logic sees it: an identity (the name of the caller's token, or
// of its TLS client certificate) and the role it may act in. The gRPC edge establishes the caller
// of every call before it reaches a service; the logic uses it for ownership (a submitter's own
// jobs) and for worker identity (never taken from a request field).
#pragma once

#include <string>

namespace c960::cluster {

enum class Role {
  kAdmin,   // everything
  kSubmit,  // submit jobs; read and cancel its own
  kRead,    // read every job and the workers
  kWorker,  // the worker service only
};

struct Caller {
  std::string identity;  // "" when the coordinator authenticates nobody
  Role role = Role::kAdmin;
  // False when the coordinator has neither tokens nor client certificates (loopback, or
  // --insecure): every caller is then an anonymous admin.
  bool authenticated = false;

  static Caller local() { return {}; }
};

}  // namespace c960::cluster
