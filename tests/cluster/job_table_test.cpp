// The coordinator's job table (coordinator/job_table.h): jobs by id, by request id and in
// creation order, the running ones apart (the hot paths walk only those), and the final jobs
// with groups left to fold.
#include "coordinator/job_table.h"

#include <gtest/gtest.h>
#include <memory>
#include <string>
#include <vector>

namespace c960::cluster::coord {
namespace {

std::unique_ptr<Job> make_job(int64_t seq, v1::JobState state = v1::JOB_STATE_RUNNING, std::string request = "",
                              bool with_group = false) {
  auto j = std::make_unique<Job>();
  j->id = "job-" + std::to_string(seq);
  j->seq = seq;
  j->owner = "alice";
  j->request_id = std::move(request);
  j->state = state;
  if (with_group) j->groups[0] = Group{0, 4, 0};
  return j;
}

std::vector<std::string> ids(const std::vector<Job*>& jobs) {
  std::vector<std::string> out;
  for (const Job* j : jobs) out.push_back(j->id);
  return out;
}

TEST(JobTable, FindsJobsByIdAndRequestIdAndKeepsCreationOrder) {
  JobTable t;
  t.add(make_job(t.take_seq(), v1::JOB_STATE_RUNNING, "r1"));
  t.add(make_job(t.take_seq(), v1::JOB_STATE_SUCCEEDED));
  t.add(make_job(t.take_seq()));
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(ids(t.all()), (std::vector<std::string>{"job-1", "job-2", "job-3"}));
  EXPECT_EQ(ids(t.running()), (std::vector<std::string>{"job-1", "job-3"}));
  ASSERT_NE(t.find("job-2"), nullptr);
  EXPECT_EQ(t.find("job-2")->seq, 2);
  EXPECT_EQ(t.find("job-9"), nullptr);
  ASSERT_NE(t.find_by_request("alice", "r1"), nullptr);
  EXPECT_EQ(t.find_by_request("alice", "r1")->id, "job-1");
  EXPECT_EQ(t.find_by_request("bob", "r1"), nullptr);  // request ids are per owner
  EXPECT_EQ(t.check(), "");
}

TEST(JobTable, SeqStaysAboveEveryJobAddedOrDropped) {
  JobTable t;
  t.add(make_job(7));
  EXPECT_EQ(t.take_seq(), 8);
  t.saw_seq(20);  // a dropped job's seq is not given out again
  EXPECT_EQ(t.take_seq(), 21);
  t.clear();
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.take_seq(), 22);  // a load keeps the numbering
}

TEST(JobTable, AFinishedJobLeavesTheRunningInOrderAndOnce) {
  JobTable t;
  std::vector<Job*> jobs;
  for (int k = 0; k < 5; ++k) jobs.push_back(t.add(make_job(t.take_seq())));
  jobs[2]->state = v1::JOB_STATE_CANCELLED;
  EXPECT_NE(t.check(), "");  // final but still among the running: the table says so
  t.finished(jobs[2]);
  EXPECT_EQ(t.check(), "");
  jobs[0]->state = v1::JOB_STATE_FAILED;
  t.finished(jobs[0]);
  t.finished(jobs[0]);  // idempotent
  EXPECT_EQ(ids(t.running()), (std::vector<std::string>{"job-2", "job-4", "job-5"}));
  EXPECT_EQ(t.all().size(), 5u);       // final jobs stay in the table
  EXPECT_TRUE(t.finishing().empty());  // neither had groups to fold
  EXPECT_EQ(t.check(), "");
}

TEST(JobTable, FinalJobsWithGroupsWaitToFoldUntilDone) {
  JobTable t;
  Job* loaded = t.add(make_job(t.take_seq(), v1::JOB_STATE_SUCCEEDED, "", true));
  Job* running = t.add(make_job(t.take_seq(), v1::JOB_STATE_RUNNING, "", true));
  EXPECT_EQ(ids(t.finishing()), (std::vector<std::string>{"job-1"}));
  running->state = v1::JOB_STATE_SUCCEEDED;
  t.finished(running);
  EXPECT_EQ(ids(t.finishing()), (std::vector<std::string>{"job-1", "job-2"}));
  loaded->groups.clear();
  t.done_folding(loaded);
  EXPECT_EQ(ids(t.finishing()), (std::vector<std::string>{"job-2"}));
  EXPECT_TRUE(t.running().empty());
  EXPECT_EQ(t.check(), "");
}

TEST(JobTable, RestoreOrderPutsBackWhatAFailedBatchFinished) {
  JobTable t;
  Job* a = t.add(make_job(t.take_seq(), v1::JOB_STATE_RUNNING, "", true));
  t.add(make_job(t.take_seq()));
  const JobTable::Order kept = t.order();
  a->state = v1::JOB_STATE_FAILED;
  t.finished(a);
  EXPECT_EQ(ids(t.running()), (std::vector<std::string>{"job-2"}));
  EXPECT_EQ(ids(t.finishing()), (std::vector<std::string>{"job-1"}));
  a->state = v1::JOB_STATE_RUNNING;  // the batch puts the job's contents back
  t.restore(kept);
  EXPECT_EQ(ids(t.running()), (std::vector<std::string>{"job-1", "job-2"}));
  EXPECT_TRUE(t.finishing().empty());
  EXPECT_EQ(t.check(), "");
}

}  // namespace
}  // namespace c960::cluster::coord
