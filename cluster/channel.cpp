#include "cluster/channel.h"

#include "cluster/config.h"

namespace c960::cluster {

std::shared_ptr<grpc::Channel> make_channel(const ChannelOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  // gRPC's own reconnect backoff grows to two minutes; cap it like ours so a restarted
  // coordinator gets its clients back within seconds.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, int(kBackoffInitialMs));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, int(kBackoffInitialMs));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, int(kBackoffMaxMs));
  return grpc::CreateCustomChannel(options.address, grpc::InsecureChannelCredentials(), args);
}

}  // namespace c960::cluster
