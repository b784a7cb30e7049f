// The exit-code policy of every c960 command, written once.
//   0  success
//   1  a check failed: a perft mismatch, a job that failed, was cancelled or is not complete,
//      or a coordinator that could not be reached or failed internally
//   2  bad usage or bad input: an unknown option, a value out of range, an unreadable input,
//      an output file that cannot be written, a request the coordinator refused as invalid,
//      unknown or over a cap, or a missing, unknown or insufficient token
//   128 + N  a local run (perft --table, selfplay) stopped by signal N (SIGINT 130, SIGTERM 143)
//      after writing what it had done, as a shell reports a process the signal killed
//   126, 127  the command is in c960-cluster (cli/main.cpp), which could not be executed (126) or
//      was not found (127), as a shell reports a command it cannot run or cannot find
#pragma once

#include "absl/status/status.h"

namespace c960::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitSignalBase = 128;
inline constexpr int kExitCannotExecute = 126;
inline constexpr int kExitNotFound = 127;

// The exit code of a call to the coordinator that ended with `code` (absl and gRPC share the
// numbering): what the coordinator refuses because of the request or the credentials is the
// user's input (2); everything else, an unreachable or failing coordinator included, is 1.
constexpr int exit_code_for(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk: return kExitOk;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kPermissionDenied: return kExitUsage;
    default: return kExitCheckFailed;
  }
}

}  // namespace c960::cli
