// A job in the coordinator's memory: its units, their copies, its queues, groups and progress
// (the data JobTable holds; Coordinator's transitions change it under its lock).
//
// Invariants:
//  - a unit index, once given out by the plan, never moves or repeats; folded units keep no
//    state (Units);
//  - a unit's `queue` mark and its job's `queues` agree (UnitQueues, unit_queues.h, which alone
//    reads and writes the mark); a job that is not RUNNING queues nothing;
//  - `active` holds the units with a lease out, `verifying` the unsettled units with a result
//    that waits for another.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "c960/v1/cluster.pb.h"
#include "c960/v1/store.pb.h"
#include "coordinator/job_kind.h"
#include "coordinator/unit_queues.h"
#include "core/perft.h"

namespace c960::cluster::coord {

// One copy of a unit: a worker was given it, and may have sent a result for it.
struct Copy {
  std::string worker;   // the worker's key
  int32_t attempt = 0;  // the unit's attempt that leased it last
  uint64_t zobrist_seed = 0;
  std::string session;  // the session holding a lease on it now; empty when none
  int64_t expire_ms = 0;
  int64_t held_since_ms = 0;          // when its lease was given (renewals keep it); 0: not known
  bool overheld = false;              // held past JobKind::max_hold_ms: never leased to its worker again
  std::optional<std::string> result;  // the kept form of its result (JobKind::kept)
  bool discarded = false;             // its worker was quarantined, or it failed the unit
  bool leased() const { return !session.empty(); }
};
struct Unit {
  v1::UnitSpec spec;
  v1::store::UnitMeta meta;
  int32_t attempt = 0;  // leases so far
  int32_t wanted = 0;   // results wanted from different workers; 0 until its first lease
  std::vector<Copy> copies;
  std::optional<v1::UnitResult> result;  // the settled result as held in memory (JobKind::settle_form)
  std::string settled;                   // its kept form
  int32_t votes = 0;                     // copies that sent it
  QueueMark queue;                       // its place in the job's queues (UnitQueues)
  bool folded = false;                   // its group was folded: no state left (Units)

  int leases() const;
  int results() const;  // valid results sent (not discarded)
  // Whether it wants another copy: Coordinator::needs_copy (it counts voters, which need the
  // registry).
  Copy* copy_of(const std::string& worker);
};
// A job's units by index: every index the plan gave out so far (size) less the folded ones,
// whose state is gone (their group's totals stand for them). Indexes never move or repeat;
// folded units at the front take no memory, those behind a group still in flight one
// empty Unit each until it folds too.
class Units {
 public:
  size_t size() const { return size_t(base_) + live_.size(); }
  int64_t first() const { return base_; }  // units below it are all folded
  bool live(int64_t i) const { return i >= base_ && i < int64_t(size()) && !live_[size_t(i - base_)].folded; }
  Unit& operator[](int64_t i) { return live_[size_t(i - base_)]; }
  const Unit& operator[](int64_t i) const { return live_[size_t(i - base_)]; }
  void resize(size_t n) { live_.resize(n - size_t(base_)); }  // grows only
  void append_folded(int64_t n);
  void clear() {
    base_ = 0;
    live_.clear();
  }
  // Units first .. end - 1 lose their state and stay folded.
  void fold(int64_t first, int64_t end);

 private:
  int64_t base_ = 0;
  std::deque<Unit> live_;
};
// Folding: a group's units (JobKind::fold_group) in flight, and a folded group's totals.
struct Group {
  int64_t first = 0, end = 0;  // its units' indexes
  int64_t unsettled = 0;
};
struct Folded {
  int64_t first = 0, end = 0;
  v1::store::FoldedGroup record;
};
struct Sample {
  int64_t ms;
  int64_t units;
  NodeCount work;
};
struct Job {
  std::string id;
  int64_t seq = 0;
  std::string request_id;
  std::string owner;
  v1::JobSpec spec;
  v1::JobSpec shared;  // what its units share (JobKind::shared): work_spec() adds it to a unit
  // The spec without its lists of positions (spec_summary): what a watch sends, so that a watch
  // of a job with a spec of megabytes does not cost a copy of it.
  v1::JobSpec summary;
  v1::VerifyMode verify = v1::VERIFY_MODE_ADAPTIVE;
  v1::store::JobPlan plan;
  v1::JobState state = v1::JOB_STATE_RUNNING;
  int64_t created_ms = 0;
  int64_t finished_ms = 0;
  int64_t mismatches = 0;
  std::string mismatch_detail;
  int64_t disagreements = 0;
  // Unit failure reports and who sent them. The reason of a FAILED job is stored; the counts
  // of a running job are not (they start again after a restart).
  int64_t unit_failures = 0;
  std::set<std::pair<std::string, std::string>> failing_workers;  // (owner, worker)
  std::string failure_detail;
  const JobKind* kind = nullptr;
  Units units;
  std::map<int64_t, Group> groups;   // groups with units in memory, by group
  std::map<int64_t, Folded> folded;  // by group
  std::vector<int64_t> ready;        // groups whose units are all settled, to fold
  // Units that want a copy (fresh, replicas) and copies placed with an owner (unit_queues.h).
  UnitQueues queues;
  int64_t stalled = 0;          // units found with no eligible owner at the last look (the notice)
  int64_t audited = 0;          // units settled through an audit (a root's copy beside untrusted ones)
  std::set<int64_t> active;     // units with a lease out
  std::set<int64_t> verifying;  // unsettled units with a result that waits for another
  bool damaged = false;         // its stored units disagree with its record: FAILED, no results
  bool refilling = false;       // lazy plan: the waiter thread expands its next roots
  int64_t done = 0;             // settled units, folded ones included
  int64_t retired = 0;          // indexes of groups folded, then planned again under new ones
  int64_t total() const { return int64_t(units.size()) - retired; }
  NodeCount work_done = 0;     // in the kind's unit of work (JobKind::work)
  std::deque<Sample> samples;  // recent progress, for rates
};

}  // namespace c960::cluster::coord
