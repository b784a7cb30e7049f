#include "coordinator/metrics.h"

#include <chrono>
#include <google/protobuf/descriptor.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "c960/v1/cluster.pb.h"
#include "cluster/log.h"
#include "core/version.h"

namespace c960::cluster {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Services the coordinator serves that have no descriptor in the generated pool.
constexpr const char* kOtherMethods[] = {
    "/grpc.health.v1.Health/Check",
    "/grpc.health.v1.Health/Watch",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
};

// The states every scrape reports for every registered kind (CoordinatorMetrics::kinds), zeros
// included, so that a query for a series finds it before the first job of its kind.
constexpr v1::JobState kStates[] = {v1::JOB_STATE_RUNNING, v1::JOB_STATE_SUCCEEDED, v1::JOB_STATE_FAILED,
                                    v1::JOB_STATE_CANCELLED};
constexpr v1::TrustState kTrust[] = {v1::TRUST_STATE_NEW, v1::TRUST_STATE_TRUSTED, v1::TRUST_STATE_QUARANTINED};
constexpr v1::CompletionOutcome kOutcomes[] = {
    v1::COMPLETION_OUTCOME_ACCEPTED,  v1::COMPLETION_OUTCOME_PENDING_VERIFICATION,
    v1::COMPLETION_OUTCOME_DUPLICATE, v1::COMPLETION_OUTCOME_MISMATCH,
    v1::COMPLETION_OUTCOME_DISCARDED, v1::COMPLETION_OUTCOME_FAILURE_RECORDED};

MetricFamily family(std::string name, std::string help, MetricType type) {
  MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

void add(MetricFamily* f, double value, std::vector<ClientMetric::Label> labels = {}) {
  ClientMetric m;
  m.label = std::move(labels);
  if (f->type == MetricType::Counter)
    m.counter.value = value;
  else
    m.gauge.value = value;
  f->metric.push_back(std::move(m));
}

template <typename Map, typename Key>
typename Map::mapped_type count_of(const Map& map, const Key& key) {
  auto it = map.find(key);
  return it == map.end() ? typename Map::mapped_type{} : it->second;
}

class RpcTimer final : public grpc::experimental::Interceptor {
 public:
  RpcTimer(Metrics* metrics, std::string method)
      : metrics_(metrics), method_(std::move(method)), start_(std::chrono::steady_clock::now()) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS))
      metrics_->observe_rpc(method_, int(methods->GetSendStatus().error_code()),
                            std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    methods->Proceed();
  }

 private:
  Metrics* metrics_;
  std::string method_;
  std::chrono::steady_clock::time_point start_;
};

class RpcTimerFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RpcTimerFactory(Metrics* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    return new RpcTimer(metrics_, info->method() ? info->method() : "");
  }

 private:
  Metrics* metrics_;
};

}  // namespace

Metrics::Metrics()
    : start_time_(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()),
      registry_(std::make_shared<prometheus::Registry>()) {
  const google::protobuf::DescriptorPool* pool = google::protobuf::DescriptorPool::generated_pool();
  for (const char* service : {"c960.v1.JobService", "c960.v1.WorkerService", "c960.v1.AdminService"})
    if (const google::protobuf::ServiceDescriptor* s = pool->FindServiceByName(service))
      for (int i = 0; i < s->method_count(); ++i)
        methods_.insert(absl::StrCat("/", service, "/", s->method(i)->name()));
  for (const char* m : kOtherMethods) methods_.insert(m);

  rpc_ = &prometheus::BuildHistogram()
              .Name("c960_rpc_duration_seconds")
              .Help("gRPC calls served, by method and status code: time from the call's start to its status")
              .Register(*registry_);
  commit_ =
      &prometheus::BuildHistogram()
           .Name("c960_store_commit_duration_seconds")
           .Help("commits of the SQLite store (an outermost transaction's release)")
           .Register(*registry_)
           .Add({}, prometheus::Histogram::BucketBoundaries(std::begin(kCommitBuckets), std::end(kCommitBuckets)));
  http_ = &prometheus::BuildCounter()
               .Name("c960_http_requests_total")
               .Help("HTTP requests answered, by handler and status code")
               .Register(*registry_);
  http_connections_ = &prometheus::BuildGauge()
                           .Name("c960_http_connections")
                           .Help("HTTP connections open (admitted, not yet closed)")
                           .Register(*registry_)
                           .Add({});
  auto& refused = prometheus::BuildCounter()
                      .Name("c960_http_connections_refused_total")
                      .Help(
                          "HTTP connections refused (503, then closed) because a limit was reached: connections, "
                          "or answers' bytes waiting to be sent")
                      .Register(*registry_);
  for (const char* r : {"max_connections", "max_connections_per_address", "max_queued_bytes"})
    http_refused_[r] = &refused.Add({{"reason", r}});
  auto& timeouts = prometheus::BuildCounter()
                       .Name("c960_http_timeouts_total")
                       .Help("HTTP connections closed at a deadline, by the phase it bounds")
                       .Register(*registry_);
  for (const char* p : {"handshake", "head", "body", "write"}) http_timeouts_[p] = &timeouts.Add({{"phase", p}});
  auto& backups = prometheus::BuildCounter()
                      .Name("c960_store_backups_total")
                      .Help("online copies of the store tried (--backup-dir), by outcome (ok, failed)")
                      .Register(*registry_);
  backups_ok_ = &backups.Add({{"outcome", "ok"}});
  backups_failed_ = &backups.Add({{"outcome", "failed"}});
  backup_last_ok_ = &prometheus::BuildGauge()
                         .Name("c960_store_backup_last_success_timestamp_seconds")
                         .Help("Unix time of the newest copy of the store that was made whole (0: none since start)")
                         .Register(*registry_)
                         .Add({});
  backup_bytes_ = &prometheus::BuildGauge()
                       .Name("c960_store_backup_bytes")
                       .Help("size of the newest copy of the store")
                       .Register(*registry_)
                       .Add({});
  backup_seconds_ = &prometheus::BuildGauge()
                         .Name("c960_store_backup_duration_seconds")
                         .Help("how long the newest copy of the store took")
                         .Register(*registry_)
                         .Add({});
}

Metrics::~Metrics() = default;

void Metrics::observe_rpc(absl::string_view method, int code, double seconds) {
  const std::string m = methods_.count(method) ? std::string(method) : "other";
  prometheus::Histogram* h = nullptr;
  {
    // Family::Add builds a histogram before it looks for an existing one: look here first.
    std::lock_guard lock(mu_);
    prometheus::Histogram*& slot = rpc_series_[{m, code}];
    if (!slot) {
      std::string c = absl::StatusCodeToString(absl::StatusCode(code));
      if (c.empty()) c = "UNKNOWN";
      slot = &rpc_->Add({{"method", m}, {"code", c}},
                        prometheus::Histogram::BucketBoundaries(std::begin(kRpcBuckets), std::end(kRpcBuckets)));
    }
    h = slot;
  }
  h->Observe(seconds);
}

void Metrics::observe_commit(double seconds) { commit_->Observe(seconds); }

void Metrics::declare_http_handlers(const std::vector<std::string>& names, const std::string& other) {
  std::lock_guard lock(mu_);
  http_handlers_.insert(names.begin(), names.end());
  http_handlers_.insert(other);
  http_other_ = other;
}

void Metrics::count_http(absl::string_view handler, int status) {
  prometheus::Counter* c = nullptr;
  {
    std::lock_guard lock(mu_);
    if (!http_handlers_.count(handler)) handler = http_other_;
    prometheus::Counter*& slot = http_series_[{std::string(handler), status}];
    if (!slot) slot = &http_->Add({{"handler", std::string(handler)}, {"code", absl::StrCat(status)}});
    c = slot;
  }
  c->Increment();
}

void Metrics::set_http_connections(int64_t open) { http_connections_->Set(double(open)); }

void Metrics::observe_backup(bool ok, double seconds, int64_t bytes) {
  if (!ok) {
    backups_failed_->Increment();
    return;
  }
  backups_ok_->Increment();
  backup_last_ok_->Set(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  backup_bytes_->Set(double(bytes));
  backup_seconds_->Set(seconds);
}

void Metrics::count_http_refused(absl::string_view reason) {
  if (auto it = http_refused_.find(reason); it != http_refused_.end()) it->second->Increment();
}

void Metrics::count_http_timeout(absl::string_view phase) {
  if (auto it = http_timeouts_.find(phase); it != http_timeouts_.end()) it->second->Increment();
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> Metrics::interceptor_factory() {
  return std::make_unique<RpcTimerFactory>(this);
}

std::string Metrics::render(const CoordinatorMetrics& s, const Store::FileSizes& store_sizes) const {
  std::vector<MetricFamily> out;

  MetricFamily info = family("c960_build_info", "the coordinator's version (value 1)", MetricType::Gauge);
  add(&info, 1, {{"version", std::string(c960::version())}});
  out.push_back(std::move(info));
  MetricFamily start = family("c960_start_time_seconds", "when the coordinator started, Unix time", MetricType::Gauge);
  add(&start, start_time_);
  out.push_back(std::move(start));

  MetricFamily jobs = family("c960_jobs", "jobs by kind and state", MetricType::Gauge);
  for (const std::string& kind : s.kinds)
    for (v1::JobState state : kStates)
      add(&jobs, double(count_of(s.jobs, std::make_pair(kind, state))),
          {{"kind", kind}, {"state", enum_word(v1::JobState_Name(state), "JOB_STATE_")}});
  out.push_back(std::move(jobs));

  MetricFamily units = family("c960_units",
                              "units of running jobs by state: pending (waiting for a lease), leased (being computed), "
                              "verifying (a result waits for another worker's), done (settled)",
                              MetricType::Gauge);
  add(&units, double(s.units_pending), {{"state", "pending"}});
  add(&units, double(s.units_leased), {{"state", "leased"}});
  add(&units, double(s.units_verifying), {{"state", "verifying"}});
  add(&units, double(s.units_done), {{"state", "done"}});
  out.push_back(std::move(units));
  MetricFamily disagreeing = family("c960_units_disagreeing",
                                    "verifying units of running jobs whose workers sent different results (another "
                                    "worker decides)",
                                    MetricType::Gauge);
  add(&disagreeing, double(s.units_disagreeing));
  out.push_back(std::move(disagreeing));

  MetricFamily workers =
      family("c960_workers", "workers known to the coordinator by trust state and whether alive", MetricType::Gauge);
  for (v1::TrustState t : kTrust)
    for (bool alive : {true, false})
      add(&workers, double(count_of(s.workers, std::make_pair(t, alive))),
          {{"trust", enum_word(v1::TrustState_Name(t), "TRUST_STATE_")}, {"alive", alive ? "true" : "false"}});
  out.push_back(std::move(workers));

  MetricFamily watches = family("c960_watch_streams", "open WatchJob streams", MetricType::Gauge);
  add(&watches, double(s.watches));
  out.push_back(std::move(watches));

  const CoordinatorCounters& c = s.counters;
  MetricFamily completions =
      family("c960_unit_completions_total", "CompleteUnit calls answered, by outcome", MetricType::Counter);
  for (v1::CompletionOutcome o : kOutcomes)
    add(&completions, double(count_of(c.completions, o)),
        {{"outcome", enum_word(v1::CompletionOutcome_Name(o), "COMPLETION_OUTCOME_")}});
  out.push_back(std::move(completions));

  const auto counter = [&](const char* name, const char* help, double value) {
    MetricFamily f = family(name, help, MetricType::Counter);
    add(&f, value);
    out.push_back(std::move(f));
  };
  counter("c960_jobs_submitted_total", "jobs submitted and planned", double(c.jobs_submitted));
  counter("c960_lease_expiries_total", "leases that expired without renewal", double(c.lease_expiries));
  counter("c960_unit_requeues_total",
          "leases ended without a result, their unit queued again (expired, released, a worker's new session, "
          "quarantine)",
          double(c.requeues));
  counter("c960_unit_failures_total", "units a worker reported it cannot compute", double(c.unit_failures));
  counter("c960_unit_disagreements_total", "results that disagreed with another worker's for the same unit",
          double(c.disagreements));
  counter("c960_result_mismatches_total", "results that differ from a unit's settled result (recorded on the job)",
          double(c.mismatches));
  counter("c960_worker_quarantines_total", "workers quarantined", double(c.quarantines));
  counter("c960_units_replicated_total", "units settled on the agreeing results of two or more workers",
          double(c.replicated));
  for (const KindDescriptor& d : s.descriptors)  // each kind's work (KindDescriptor::work_metric)
    counter(d.work_metric.c_str(), d.work_help.c_str(), count_of(c.work, d.capability));

  counter("c960_store_commit_failures_total", "commits of the store that failed (probes of a degraded store included)",
          double(c.store_commit_failures));
  counter("c960_store_probes_total", "small writes that probed a degraded store", double(c.store_probes));
  counter("c960_store_reloads_total",
          "full reloads of the coordinator's memory from its store after start-up (a failed commit reloads nothing: 0)",
          double(c.store_reloads));
  MetricFamily degraded = family(
      "c960_store_degraded", "1 while the store refuses writes (degraded mode: writes answered UNAVAILABLE), else 0",
      MetricType::Gauge);
  add(&degraded, s.store_degraded ? 1 : 0);
  out.push_back(std::move(degraded));

  MetricFamily size =
      family("c960_store_size_bytes", "the SQLite store on disk: the database file and its WAL", MetricType::Gauge);
  add(&size, double(store_sizes.db), {{"file", "db"}});
  add(&size, double(store_sizes.wal), {{"file", "wal"}});
  out.push_back(std::move(size));

  for (MetricFamily& f : registry_->Collect()) out.push_back(std::move(f));
  return prometheus::TextSerializer().Serialize(out);
}

}  // namespace c960::cluster
