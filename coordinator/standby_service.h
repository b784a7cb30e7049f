// What a standby coordinator serves on its gRPC port while another leads: every call of every
// service is answered UNAVAILABLE with REASON_NOT_LEADER naming the leader as last read (clients
// given several coordinators go to it: cluster/coordinator_set.h), and the health service says
// NOT_SERVING. Registered as the server's generic service, it answers whatever no other service
// registered (a standby registers only the health service).
#pragma once

#include <mutex>
#include <string>

#include <grpcpp/generic/async_generic_service.h>

namespace c960::cluster {

class StandbyService final : public grpc::CallbackGenericService {
 public:
  // The leader's advertised gRPC address ("" while none is known).
  void set_leader(std::string leader);
  std::string leader() const;
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override;

 private:
  mutable std::mutex mu_;
  std::string leader_;
};

}  // namespace c960::cluster
