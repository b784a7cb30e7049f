// The coordinator's worker registry: worker records, sessions, trust (quarantined voters,
// trusted owners), leases held per credential, credentials enrolled per join token and the
// caps' counts. Guarded by the coordinator's lock; no store access: the coordinator writes a
// record to the store first, then installs it here.
//
// Invariants:
//  - `per_identity` and `per_owner` count the records of authenticated workers by credential
//    and by owner (rec.identity; rec.owner, else the identity), as the records held say: every
//    record enters by install() or load() and leaves by erase_worker(), which keep them in step;
//    a record's identity and owner change only through install();
//  - every session names a worker with a record, and `session_of` maps a worker to its newest
//    session only (add_session, forget_session);
//  - `quarantined_voters` holds the voter (or, under verify hosts, the worker key) of every
//    quarantined worker; `trusted_owners` the owners with a TRUSTED worker (earned trust), none
//    of them quarantined by quarantine_voter();
//  - `leases_held` counts, per credential, the copies leased now (take_lease, drop_lease; the
//    coordinator's check_lease_counts compares it with the copies), and holds no zero;
//  - `enrolled` counts credentials issued per join token, as the store's `credentials` table.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/store.h"
#include "selfplay/uci_engine.h"

namespace c960::cluster::coord {

// A worker process's registration; a worker's new Hello ends its previous session.
struct Session {
  std::string id;
  std::string key;    // the worker's key
  std::string voter;  // its owner (owner, else identity, else the key when nobody is authenticated)
  int32_t threads = 1;
  std::set<std::string> capabilities, engines;
  // What a job may set on each engine, as the worker declared it (an engine without one: the
  // worker checks alone).
  std::map<std::string, selfplay::OptionPolicy> policies;
  int64_t last_seen_ms = 0;
  bool lost = false;
};

struct WorkerState {
  StoredWorker rec;
  std::deque<std::pair<int64_t, int64_t>> samples;  // (ms, units_done), for its rate
};

class WorkerRegistry {
 public:
  // Records, by key.
  const std::map<std::string, WorkerState>& workers() const { return workers_; }
  // Null when unknown. The record's fields may change in place but its identity and owner
  // (install() changes those, with the counts).
  WorkerState* find(const std::string& key);
  const WorkerState* find(const std::string& key) const;
  WorkerState& at(const std::string& key) { return workers_.at(key); }
  const WorkerState& at(const std::string& key) const { return workers_.at(key); }
  // A record the store holds now, new or replacing the worker's (its samples stay); the counts
  // follow.
  WorkerState& install(StoredWorker rec);
  // A record whose row was deleted; the counts follow.
  void erase_worker(const std::string& key);
  // Replaces every record with the store's (a load): samples of known keys stay; counts, the
  // quarantined voters and the trusted owners are rebuilt from the records, the lease counts
  // cleared (the jobs holding leases are replaced too); sessions of workers without a record
  // end. `fault_prefix` starts the trust reason of a worker barred alone (verify hosts).
  void load(std::vector<StoredWorker> records, const std::string& fault_prefix);
  // The owner behind a worker key (its credential's owner; the key without authentication).
  std::string voter_of(const std::string& key) const;
  // Authenticated records held per credential and per owner (the caps of hello).
  int per_identity(const std::string& identity) const;
  int per_owner(const std::string& owner) const;

  // Sessions, by id.
  const std::map<std::string, Session>& sessions() const { return sessions_; }
  Session* session(const std::string& id);
  const Session* session(const std::string& id) const;
  // The worker's newest session's id; null when it has none.
  const std::string* session_of(const std::string& key) const;
  // A new session, the worker's newest from now on (its record must be installed).
  Session& add_session(Session s);
  // Ends a session; the worker has no newest session if it was that one.
  void forget_session(const std::string& id);

  // Trust.
  bool quarantined(const std::string& voter) const { return quarantined_voters_.count(voter) > 0; }
  // Whether the worker is barred: its voter or itself quarantined.
  bool barred(const std::string& key) const { return quarantined(voter_of(key)) || quarantined(key); }
  // A voter quarantined whole: no longer a trusted owner.
  void quarantine_voter(const std::string& voter);
  // One worker quarantined (verify hosts bars the worker alone; its voter follows separately).
  void quarantine_worker(const std::string& key) { quarantined_voters_.insert(key); }
  bool trusted(const std::string& owner) const { return trusted_owners_.count(owner) > 0; }
  void trust(const std::string& owner) { trusted_owners_.insert(owner); }

  // Leases held per credential.
  int64_t leases_held(const std::string& voter) const;
  const std::map<std::string, int64_t>& leases_held() const { return leases_held_; }
  void take_lease(const std::string& voter) { ++leases_held_[voter]; }
  void drop_lease(const std::string& voter);

  // Credentials issued per join token.
  int32_t enrolled(const std::string& join) const;
  void enrolled_one(const std::string& join) { ++enrolled_[join]; }
  void clear_enrolled() { enrolled_.clear(); }

  // Whether it is time to look for workers to forget; if so, the next look is `interval_ms` on.
  bool forget_due(int64_t now, int64_t interval_ms);

  // What a staged completion batch may change (records, trust, lease counts), kept before it
  // runs and put back if its commit fails. Sessions, counts and enrollments it never changes.
  struct Kept {
    std::map<std::string, WorkerState> workers;
    std::set<std::string> quarantined_voters, trusted_owners;
    std::map<std::string, int64_t> leases_held;
  };
  Kept keep() const { return {workers_, quarantined_voters_, trusted_owners_, leases_held_}; }
  void restore(Kept kept);

  // Empty when the invariants that the registry can see hold, else what is wrong (tests).
  std::string check() const;

 private:
  void count(const StoredWorker& rec, int delta);

  std::map<std::string, WorkerState> workers_;
  std::map<std::string, Session> sessions_;
  std::map<std::string, std::string> session_of_;  // worker key -> its newest session
  std::set<std::string> quarantined_voters_;
  std::set<std::string> trusted_owners_;
  std::map<std::string, int64_t> leases_held_;
  std::map<std::string, int32_t> enrolled_;
  std::map<std::string, int> per_identity_, per_owner_;
  int64_t next_forget_ms_ = 0;
};

}  // namespace c960::cluster::coord
