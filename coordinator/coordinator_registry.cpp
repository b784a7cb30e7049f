// The coordinator's worker registry: Hello (sessions), worker records and their caps, and
// forgetting workers silent for long.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cluster/errors.h"
#include "cluster/log.h"
#include "coordinator/coordinator.h"
#include "coordinator/coordinator_workers_internal.h"
#include "coordinator/validation.h"
#include "coordinator/verification.h"
#include "core/version.h"
#include "selfplay/spec.h"

namespace c960::cluster {

using workers_internal::check_names;
using workers_internal::kWorkerRateWindowMs;
using workers_internal::new_session_id;
using workers_internal::quarantined;
using workers_internal::stored_units;
using workers_internal::unknown_worker;

// ---------------------------------------------------------------------------------------------
// Sessions

namespace {

// What a worker said of itself at Hello, as one line for the jobs it computes (checked first).
std::string worker_provenance(const v1::HelloRequest& req) {
  std::string out = absl::StrCat("c960 ", req.version().empty() ? "?" : req.version(), "; CPU ",
                                 req.cpu().empty() ? "unknown" : req.cpu());
  for (const v1::EngineOffer& o : req.engine_offers())
    absl::StrAppend(&out, "; ", o.engine(), " '", o.id_name().empty() ? "?" : o.id_name(), "' sha256 ",
                    o.sha256().empty() ? "unknown" : o.sha256());
  return out;
}

}  // namespace

absl::StatusOr<v1::HelloResponse> Coordinator::hello(const Caller& caller, const v1::HelloRequest& req) {
  if (req.protocol_version() < kMinProtocolVersion || req.protocol_version() > kProtocolVersion)
    return with_reason(
        absl::FailedPreconditionError(absl::StrCat(
            "protocol_version: the worker speaks ", req.protocol_version(), " (version '", req.version().substr(0, 64),
            "'), this coordinator ", kMinProtocolVersion, "..", kProtocolVersion, " (version ",
            std::string(c960::version()), "): run the same c960 version on both")),
        v1::ErrorInfo::REASON_INCOMPATIBLE_VERSION);
  if (absl::Status s = check_text(req.name(), "name", kMaxNameLength, false); !s.ok()) return s;
  if (absl::Status s = check_text(req.version(), "version", kMaxVersionLength, false); !s.ok()) return s;
  if (req.threads() < 1 || req.threads() > kMaxThreads)
    return absl::InvalidArgumentError(absl::StrCat("threads: ", req.threads(), " is not in 1..", kMaxThreads));
  if (absl::Status s = check_names(req.capabilities(), "capabilities", kMaxCapabilities); !s.ok()) return s;
  if (absl::Status s = check_names(req.engines(), "engines", kMaxEngines); !s.ok()) return s;
  for (const std::string& e : req.engines())
    if (e.size() > size_t(kMaxEngineNameLength))
      return absl::InvalidArgumentError(absl::StrCat("engines: '", e.substr(0, 64), "...' is too long"));
  std::map<std::string, selfplay::OptionPolicy> policies;
  if (req.engine_offers_size() > kMaxEngines)
    return absl::InvalidArgumentError(absl::StrCat("engine_offers: more than ", kMaxEngines));
  for (const v1::EngineOffer& o : req.engine_offers()) {
    // builtin is offered by every worker; its offer bounds what a job may ask of it (hash_mb).
    if (o.engine() != selfplay::kBuiltinEngine &&
        std::find(req.engines().begin(), req.engines().end(), o.engine()) == req.engines().end())
      return absl::InvalidArgumentError(
          absl::StrCat("engine_offers.engine: '", o.engine().substr(0, 64), "' is not one of engines"));
    if (o.options_size() > kMaxEngines)
      return absl::InvalidArgumentError(absl::StrCat("engine_offers.options: more than ", kMaxEngines));
    selfplay::OptionPolicy p;
    for (const v1::AllowedOption& a : o.options()) {
      if (absl::Status s = check_text(a.name(), "engine_offers.options.name", 64, true); !s.ok()) return s;
      if (a.bounded() && a.min() > a.max())
        return absl::InvalidArgumentError(
            absl::StrCat("engine_offers.options: ", a.name(), ": min ", a.min(), " is above max ", a.max()));
      p.allowed.push_back({a.name(), a.bounded(), a.min(), a.max()});
    }
    if (!policies.emplace(o.engine(), std::move(p)).second)
      return absl::InvalidArgumentError(absl::StrCat("engine_offers.engine: '", o.engine(), "' given twice"));
    if (!o.sha256().empty() && (o.sha256().size() != 64 ||
                                !std::all_of(o.sha256().begin(), o.sha256().end(),
                                             [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); })))
      return absl::InvalidArgumentError(
          absl::StrCat("engine_offers.sha256: '", o.sha256().substr(0, 80), "' is not 64 lower-case hex digits"));
    if (absl::Status s = check_text(o.id_name(), "engine_offers.id_name", kMaxProvenanceText, false); !s.ok()) return s;
  }
  if (absl::Status s = check_text(req.cpu(), "cpu", kMaxProvenanceText, false); !s.ok()) return s;
  // The worker is who its credentials say; the name only tells its processes apart.
  const std::string host = req.name().empty() ? "worker" : req.name();
  const std::string key = caller.identity.empty() ? host : absl::StrCat(caller.identity, "/", host);

  // The voter is the credential's owner: all credentials and names of one owner vote once.
  const std::string voter = caller.identity.empty() ? key : caller.owner_or_identity();

  std::lock_guard lock(mu_);
  if (absl::Status s = writable(clock_->now_ms()); !s.ok()) return s;
  // An owner is quarantined whole: none of its credentials or names may join again.
  if (registry_.quarantined(voter) || registry_.quarantined(key)) {
    const WorkerState* it = registry_.find(key);
    return quarantined(key, it && it->rec.trust == v1::TRUST_STATE_QUARANTINED
                                ? it->rec.trust_reason
                                : absl::StrCat("its owner '", voter, "' is quarantined"));
  }
  // Decide, commit, then apply: the record as it will be, stored before anything in memory
  // changes (a failed write leaves the old session and the old record as they were).
  const WorkerState* known = registry_.find(key);
  // A new name counts against its credential's and its owner's caps (a known one, a restart,
  // never does): refused before anything is stored.
  if (!known && !caller.identity.empty()) {
    const auto refuse = [&](const char* flag, const std::string& whose, int n, int cap) {
      return absl::ResourceExhaustedError(absl::StrCat(
          flag, ": ", whose, " already has ", n, " worker names, the cap (", cap, "); worker '", host,
          "' was not registered. Start workers under names the coordinator knows (c960-worker --name), or wait "
          "until names unused for ",
          options_.forget_workers_ms / 1000, " s are forgotten (--forget-workers-after-days)"));
    };
    if (int n = registry_.per_identity(caller.identity); n >= options_.max_workers_per_credential)
      return refuse("max-workers-per-credential", absl::StrCat("credential '", caller.identity, "'"), n,
                    options_.max_workers_per_credential);
    if (int n = registry_.per_owner(voter); n >= options_.max_workers_per_owner)
      return refuse("max-workers-per-owner", absl::StrCat("owner '", voter, "'"), n, options_.max_workers_per_owner);
  }
  StoredWorker rec = known ? known->rec : StoredWorker{};
  const int64_t now = clock_->now_ms();
  if (rec.key.empty()) {
    rec.key = key;
    rec.trust = v1::TRUST_STATE_NEW;
    rec.trust_reason = "no results confirmed yet";
  }
  std::set<std::string> engines = {req.engines().begin(), req.engines().end()};
  engines.insert("builtin");
  rec.identity = caller.identity;
  rec.owner = caller.identity.empty() ? "" : caller.owner_or_identity();
  rec.host = host;
  rec.version = req.version();
  rec.threads = req.threads();
  rec.capabilities = absl::StrJoin(req.capabilities(), ",");
  rec.engines = absl::StrJoin(engines, ",");
  rec.provenance = worker_provenance(req);
  rec.last_seen_ms = now;
  if (absl::Status st = store_->upsert_worker(rec); !st.ok()) {
    store_failed(st);
    return absl::UnavailableError(absl::StrCat(st.message(), "; the worker was not registered: retry"));
  }
  // A new session supersedes the worker's previous one: its leases go back to the queue.
  if (const std::string* found = registry_.session_of(key)) {
    const std::string old = *found;
    for (Job* j : table_.running())  // final jobs hold no leases (drop_leases)
      for (auto it = j->active.begin(); it != j->active.end();) {
        const int64_t i = *it++;
        for (Copy& c : j->units[i].copies)
          if (c.session == old) end_lease(j, i, c, true);
      }
    registry_.forget_session(old);
  }
  // The counts per credential and owner follow (its owner may have changed).
  WorkerState& w = registry_.install(std::move(rec));
  Session s;
  s.id = new_session_id(options_.seed ? &session_ids_ : nullptr);
  s.key = key;
  s.voter = voter;
  s.threads = w.rec.threads;
  s.capabilities = {req.capabilities().begin(), req.capabilities().end()};
  s.engines = std::move(engines);
  s.policies = std::move(policies);
  s.last_seen_ms = now;
  log_event(LogLevel::kInfo, "worker_joined",
            absl::StrCat("worker ", key, " joined: ", w.rec.threads, " threads, version ", w.rec.version, ", engines ",
                         w.rec.engines, ", trust ",
                         enum_word(v1::TrustState_Name(v1::TrustState(w.rec.trust)), "TRUST_STATE_")),
            {{"worker", key},
             {"identity", w.rec.identity},
             {"threads", w.rec.threads},
             {"version", w.rec.version},
             {"engines", w.rec.engines},
             {"trust", enum_word(v1::TrustState_Name(v1::TrustState(w.rec.trust)), "TRUST_STATE_")}});
  v1::HelloResponse resp;
  resp.set_worker_id(s.id);
  resp.set_lease_seconds(options_.lease_ms / 1000);
  resp.set_worker_name(key);
  registry_.add_session(std::move(s));
  // An owner that may decide waiting units may have joined: the next look says.
  for (Job* j : table_.running()) j->stalled = 0;
  changed();
  return resp;
}

absl::StatusOr<Coordinator::Session*> Coordinator::session_for(const Caller& caller, const std::string& id) {
  if (absl::Status s = check_text(id, "worker_id", kMaxIdLength, true); !s.ok()) return s;
  Session* s = registry_.session(id);
  // A session of another identity is as unknown as a made-up one.
  if (!s) return unknown_worker(id);
  const WorkerState* w = registry_.find(s->key);
  if (!w || w->rec.identity != caller.identity) return unknown_worker(id);
  return s;
}

void Coordinator::touch(Session* s) {
  s->last_seen_ms = clock_->now_ms();
  if (s->lost) {
    s->lost = false;
    log_event(LogLevel::kInfo, "worker_back", absl::StrCat("worker ", s->key, " is back"), {{"worker", s->key}});
  }
}

void Coordinator::save_worker(const WorkerState& w) {
  if (batch_saves_) {  // a completion batch writes each worker's row once, before its commit
    batch_saves_->insert(w.rec.key);
    return;
  }
  if (absl::Status s = store_->upsert_worker(w.rec); !s.ok()) {
    log_error(s.message());  // inside a transaction: its commit fails with it
    store_failed(s);
  }
}

bool Coordinator::forget_workers(int64_t now) {
  // Candidates: silent long enough, no session, not quarantined (the quarantine lives in the
  // records), and not the last TRUSTED worker of its owner (the owner's earned trust does).
  std::map<std::string, int> trusted;  // TRUSTED workers by owner
  for (const auto& [key, w] : registry_.workers())
    if (w.rec.trust == v1::TRUST_STATE_TRUSTED) ++trusted[voter_of(key)];
  std::set<std::string> gone;
  for (const auto& [key, w] : registry_.workers()) {
    if (registry_.session_of(key) || w.rec.last_seen_ms + options_.forget_workers_ms > now ||
        w.rec.trust == v1::TRUST_STATE_QUARANTINED)
      continue;
    if (w.rec.trust == v1::TRUST_STATE_TRUSTED) {
      int& n = trusted[voter_of(key)];
      if (n <= 1) continue;
      --n;
    }
    gone.insert(key);
  }
  // Workers that jobs in memory still name stay: a lease or a copy's vote (a later quarantine of
  // its owner finds its votes through its record), a folded group's sole voter, and the workers a
  // job lists as its provenance.
  for (const Job* j : table_.all()) {  // final jobs included: their copies and groups name workers
    if (gone.empty()) return false;
    for (int64_t i = j->units.first(); i < int64_t(j->units.size()); ++i)
      if (j->units.live(i))
        for (const Copy& c : j->units[i].copies) gone.erase(c.worker);
    for (const auto& [g, f] : j->folded)
      for (const std::string& v : f.record.sole_voters()) gone.erase(v);
  }
  if (gone.empty()) return false;
  const std::vector<std::string> keys(gone.begin(), gone.end());
  if (absl::Status s = store_->delete_workers(keys); !s.ok()) {
    log_error(absl::StrCat("forgetting ", keys.size(), " workers: ", s.message()));
    return false;
  }
  for (const std::string& key : keys) {
    const int64_t silent_s = (now - registry_.at(key).rec.last_seen_ms) / 1000;
    log_event(LogLevel::kInfo, "worker_forgotten",
              absl::StrCat("worker ", key, " forgotten: silent for ", silent_s, " s, nothing needs its record"),
              {{"worker", key}, {"silent_s", silent_s}});
    registry_.erase_worker(key);  // the counts follow
  }
  return true;
}

}  // namespace c960::cluster
