#include "cluster/server.h"

#include "cluster/config.h"

namespace c960::cluster {

void configure_server(const ServerOptions& options, grpc::ServerBuilder* builder, int* port) {
  builder->AddListeningPort(options.listen, grpc::InsecureServerCredentials(), port);
  builder->SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder->SetMaxSendMessageSize(kMaxMessageBytes);
}

}  // namespace c960::cluster
