#include "coordinator/job_table.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"

namespace c960::cluster::coord {

Job* JobTable::add(std::unique_ptr<Job> j) {
  Job* raw = j.get();
  saw_seq(raw->seq);
  if (!raw->request_id.empty()) by_request_[{raw->owner, raw->request_id}] = raw;
  all_.push_back(raw);
  if (raw->state == v1::JOB_STATE_RUNNING) {
    running_.push_back(raw);
  } else if (!raw->groups.empty()) {
    finishing_.push_back(raw);
  }
  jobs_[raw->id] = std::move(j);
  return raw;
}

void JobTable::clear() {
  jobs_.clear();
  all_.clear();
  running_.clear();
  finishing_.clear();
  by_request_.clear();
}

Job* JobTable::find(const std::string& id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : it->second.get();
}

Job* JobTable::find_by_request(const std::string& owner, const std::string& request_id) const {
  auto it = by_request_.find({owner, request_id});
  return it == by_request_.end() ? nullptr : it->second;
}

void JobTable::finished(Job* j) {
  auto it = std::find(running_.begin(), running_.end(), j);
  if (it == running_.end()) return;
  running_.erase(it);
  if (!j->groups.empty()) finishing_.push_back(j);
}

void JobTable::done_folding(Job* j) {
  auto it = std::find(finishing_.begin(), finishing_.end(), j);
  if (it != finishing_.end()) finishing_.erase(it);
}

void JobTable::restore(Order order) {
  running_ = std::move(order.running);
  finishing_ = std::move(order.finishing);
}

std::string JobTable::check() const {
  if (all_.size() != jobs_.size())
    return absl::StrCat(all_.size(), " jobs in creation order, ", jobs_.size(), " by id");
  std::map<const Job*, size_t> pos;
  for (size_t k = 0; k < all_.size(); ++k) {
    const Job* j = all_[k];
    if (find(j->id) != j) return absl::StrCat("job ", j->id, " is not found by its id");
    if (!pos.emplace(j, k).second) return absl::StrCat("job ", j->id, " is twice in creation order");
    if (j->seq >= next_seq_) return absl::StrCat("job ", j->id, " has seq ", j->seq, ", next_seq is ", next_seq_);
    if (!j->request_id.empty() && find_by_request(j->owner, j->request_id) != j)
      return absl::StrCat("job ", j->id, " is not found by its request id");
  }
  size_t with_request = 0;
  for (const Job* j : all_) with_request += !j->request_id.empty();
  if (by_request_.size() != with_request)
    return absl::StrCat(by_request_.size(), " jobs by request id, ", with_request, " with one");
  std::set<const Job*> running(running_.begin(), running_.end());
  if (running.size() != running_.size()) return "a job is twice among the running";
  size_t last = 0;
  bool first = true;
  for (const Job* j : running_) {
    auto p = pos.find(j);
    if (p == pos.end()) return absl::StrCat("running job ", j->id, " is not in the table");
    if (j->state != v1::JOB_STATE_RUNNING) return absl::StrCat("job ", j->id, " is among the running, but final");
    if (!first && p->second <= last) return absl::StrCat("running job ", j->id, " is out of creation order");
    last = p->second;
    first = false;
  }
  for (const Job* j : all_)
    if (j->state == v1::JOB_STATE_RUNNING && !running.count(j))
      return absl::StrCat("job ", j->id, " runs but is not among the running");
  for (const Job* j : finishing_) {
    if (!pos.count(j)) return absl::StrCat("finishing job ", j->id, " is not in the table");
    if (j->state == v1::JOB_STATE_RUNNING) return absl::StrCat("job ", j->id, " is finishing, but running");
  }
  return "";
}

}  // namespace c960::cluster::coord
