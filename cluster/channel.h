// The client side of every connection to the coordinator (workers and the c960 tool): one
// place that sets message limits and reconnect backoff, so all clients behave alike.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

namespace c960::cluster {

struct ChannelOptions {
  std::string address;  // HOST:PORT of the coordinator
};

std::shared_ptr<grpc::Channel> make_channel(const ChannelOptions& options);

}  // namespace c960::cluster
