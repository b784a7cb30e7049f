// The server side: how the coordinator's gRPC server listens (credentials, message limits), in
// one place next to the client side (channel.h).
#pragma once

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

namespace c960::cluster {

struct ServerOptions {
  std::string listen;  // HOST:PORT; port 0 picks a free port
};

// Adds the listening port and the limits to `builder`; *port receives the port once the server
// is built and started (0 if it could not listen).
void configure_server(const ServerOptions& options, grpc::ServerBuilder* builder, int* port);

}  // namespace c960::cluster
