// c960-cluster: every command of the c960 tool, in process. The c960 binary (cli/main.cpp) runs
// the local commands itself and executes this one, with the same arguments, for the others
// (those whose code links gRPC, protobuf or OpenSSL), so that its own start-up stays short.
#include <unistd.h>

#include <cstdlib>
#include <grpc/support/log.h>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"

int main(int argc, char** argv) {
  // gRPC's own log lines (one per failed TLS handshake while it retries) would bury the one
  // message the command prints about the failure; GRPC_VERBOSITY brings them back.
  if (!std::getenv("GRPC_VERBOSITY")) gpr_set_log_function([](gpr_log_func_args*) {});
  const c960::cli::Io io{std::cout, std::cerr, isatty(STDOUT_FILENO) != 0, isatty(STDERR_FILENO) != 0};
  const int code = c960::cli::run(std::vector<std::string>(argv + 1, argv + argc), io);
  std::cout.flush();
  return code;
}
