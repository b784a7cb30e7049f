// The coordinator's jobs: by id, in creation order, by (owner, request id), and the running
// ones apart, so that the hot paths (leases, Hello, quarantine cascades, the sweep) walk only
// the jobs that can still change. Guarded by the coordinator's lock; no store access.
//
// Invariants:
//  - every job is in the table by id and once in `all()`, in the order it was added (creation
//    order: the queues serve older jobs first);
//  - `running()` holds, in the same order, exactly the jobs added RUNNING that have not finished
//    since (finished() takes a job out, in one place: every transition to a final state calls
//    it);
//  - `finishing()` holds the final jobs that still had groups of units to fold when they
//    finished or were added (fold_finished folds them a lease period later), until
//    done_folding() takes them out;
//  - by_request holds exactly the jobs with a request id, by (owner, request id);
//  - next_seq is above every job's seq (take_seq, saw_seq).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/job.h"

namespace c960::cluster::coord {

class JobTable {
 public:
  // Adds a job: RUNNING ones join running(), final ones with groups finishing(). Its id and its
  // (owner, request id) must be new. Returns it.
  Job* add(std::unique_ptr<Job> j);
  // Forgets every job (a load replaces them); next_seq stays.
  void clear();
  Job* find(const std::string& id) const;
  Job* find_by_request(const std::string& owner, const std::string& request_id) const;

  // A job left RUNNING (succeeded, failed, cancelled, damaged): out of running(), and into
  // finishing() when it holds groups. Idempotent.
  void finished(Job* j);
  // A finishing job has no groups left to fold: out of finishing().
  void done_folding(Job* j);

  // Every job, final ones included, in creation order: the walks that must see final jobs
  // (metrics by state, list_jobs, durable_state, workers named by old copies) use it.
  const std::vector<Job*>& all() const { return all_; }
  // The running jobs, in creation order. A caller whose walk may finish a job walks a copy.
  const std::vector<Job*>& running() const { return running_; }
  const std::vector<Job*>& finishing() const { return finishing_; }
  size_t size() const { return all_.size(); }

  // The seq of a new job, taken before it is planned.
  int64_t take_seq() { return next_seq_++; }
  // A job (or a dropped one) with this seq exists: next_seq goes above it.
  void saw_seq(int64_t seq) { next_seq_ = std::max(next_seq_, seq + 1); }

  // The running and finishing indexes, kept by a staged batch and put back if its commit fails
  // (the jobs' contents are restored by the batch itself; their addresses never change).
  struct Order {
    std::vector<Job*> running, finishing;
  };
  Order order() const { return {running_, finishing_}; }
  void restore(Order order);

  // Empty when the invariants hold, else what is wrong (tests).
  std::string check() const;

 private:
  std::map<std::string, std::unique_ptr<Job>> jobs_;
  std::vector<Job*> all_;
  std::vector<Job*> running_;
  std::vector<Job*> finishing_;
  std::map<std::pair<std::string, std::string>, Job*> by_request_;
  int64_t next_seq_ = 1;
};

}  // namespace c960::cluster::coord
