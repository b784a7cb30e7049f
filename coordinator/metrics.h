// The coordinator's metrics in the Prometheus text format (served at /metrics by the HTTP side):
// the Coordinator's snapshot (jobs, units, workers, its event counters) taken at each scrape,
// and what is measured as it happens: every gRPC call's latency by method and code (one server
// interceptor, never code in the handlers), every store commit, every HTTP request.
//
// Names follow Prometheus' conventions: the c960_ prefix, base units (_seconds, _bytes), _total
// for counters, and label values from fixed sets (methods the coordinator serves, status codes,
// states), so no caller can grow the number of series. docs/operations.md lists them all.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <grpcpp/support/server_interceptor.h>

#include "absl/strings/string_view.h"
#include "coordinator/coordinator.h"
#include "coordinator/store.h"

namespace prometheus {
class Registry;
class Histogram;
class Counter;
class Gauge;
template <typename T>
class Family;
}  // namespace prometheus

namespace c960::cluster {

// Upper bounds of the latency histograms, in seconds.
inline constexpr double kRpcBuckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                         0.25,   0.5,   1,      2.5,   5,    10,    30,   60};
inline constexpr double kCommitBuckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                            0.025,  0.05,    0.1,    0.25,  0.5,    1};

class Metrics {
 public:
  Metrics();
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // A gRPC call of `method` (its full name, "/c960.v1.JobService/GetJob") ended with `code`
  // after `seconds`. Methods the coordinator does not serve are counted as "other".
  void observe_rpc(absl::string_view method, int code, double seconds);
  void observe_commit(double seconds);
  // The values of the HTTP request counter's "handler" label: HttpApi declares its routing
  // table's names (HttpApi::routes()) and the one of requests no row serves, `other`, which an
  // undeclared name is counted as.
  void declare_http_handlers(const std::vector<std::string>& names, const std::string& other);
  // An HTTP request answered by `handler` (a declared name) with `status`.
  void count_http(absl::string_view handler, int status);
  // The HTTP side's connections (http_server.h): open now; refused over a limit (reason
  // "max_connections", "max_connections_per_address", or "max_queued_bytes": a request refused
  // while too many answers' bytes wait to be sent); cut at a deadline (phase "handshake",
  // "head", "body" or "write"). Other label values are ignored.
  void set_http_connections(int64_t open);
  void count_http_refused(absl::string_view reason);
  void count_http_timeout(absl::string_view phase);
  // A copy of the store (coordinator/store_backup.h) made (`ok`: its size and time) or failed.
  void observe_backup(bool ok, double seconds, int64_t bytes);

  // The interceptor that times every call of a gRPC server; give it to the ServerBuilder
  // (builder.experimental().SetInterceptorCreators). The factory must not outlive this object.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> interceptor_factory();

  // The text exposition: the snapshot, the store's size, and the histograms and counters.
  std::string render(const CoordinatorMetrics& snapshot, const Store::FileSizes& store_sizes) const;

 private:
  std::set<std::string, std::less<>> methods_;  // the label values allowed for "method"
  double start_time_;                           // Unix seconds
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Histogram>* rpc_ = nullptr;
  prometheus::Histogram* commit_ = nullptr;
  prometheus::Family<prometheus::Counter>* http_ = nullptr;
  prometheus::Gauge* http_connections_ = nullptr;
  // Fixed label sets, made in the constructor (read without the lock).
  std::map<std::string, prometheus::Counter*, std::less<>> http_refused_, http_timeouts_;
  prometheus::Counter* backups_ok_ = nullptr;
  prometheus::Counter* backups_failed_ = nullptr;
  prometheus::Gauge* backup_last_ok_ = nullptr;
  prometheus::Gauge* backup_bytes_ = nullptr;
  prometheus::Gauge* backup_seconds_ = nullptr;
  std::mutex mu_;  // the series maps
  std::map<std::pair<std::string, int>, prometheus::Histogram*> rpc_series_;
  std::map<std::pair<std::string, int>, prometheus::Counter*> http_series_;
  std::set<std::string, std::less<>> http_handlers_;  // declare_http_handlers
  std::string http_other_ = "other";
};

}  // namespace c960::cluster
