// The SQLite store: what goes in comes back, results are written once.
#include <unistd.h>

#include <filesystem>
#include <fstream>

// GCC 12 at -O3 reports a false -Wrestrict inside std::string assignment (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "coordinator/store.h"

namespace c960::cluster {
namespace {

StoredUnit unit(int64_t index, const std::string& spec = "s") {
  StoredUnit u;
  u.index = index;
  u.spec = spec;
  u.meta = "m";
  return u;
}

// Issue 19: a store file that is there but empty (a mount or a copy gone wrong) used to start as
// an empty store without a word, every job gone; an SQLite file of something else was made one.
// Both are refused unless asked (--init); a file that is not SQLite at all is always refused.
TEST(StoreTest, AnEmptyOrForeignFileIsRefusedUnlessInit) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/store-init-", getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string empty = dir + "/empty.db", foreign = dir + "/foreign.db", junk = dir + "/junk.db";
  std::ofstream(empty).close();
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(foreign.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE accounts (id INTEGER, balance INTEGER)", nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  std::ofstream(junk) << "not a database, but some bytes that are not a header either\n";
  auto e = Store::open(empty);
  EXPECT_EQ(e.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(e.status().message(), "exists but is empty")) << e.status();
  EXPECT_TRUE(absl::StrContains(e.status().message(), "--init")) << e.status();
  auto f = Store::open(foreign);
  EXPECT_EQ(f.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(f.status().message(), "not a c960 store")) << f.status();
  EXPECT_FALSE(Store::open(junk).ok());
  EXPECT_FALSE(Store::open(junk, Store::kSchemaVersion, true).ok());
  // Asked: a new store in each; then it opens as any store does.
  ASSERT_TRUE(Store::open(empty, Store::kSchemaVersion, true).ok());
  EXPECT_TRUE(Store::open(empty).ok());
  ASSERT_TRUE(Store::open(foreign, Store::kSchemaVersion, true).ok());
  EXPECT_TRUE(Store::open(foreign).ok());
  // A path with nothing there is a new store, as always.
  EXPECT_TRUE(Store::open(dir + "/new.db").ok());
  std::filesystem::remove_all(dir);
}

TEST(StoreTest, JobsUnitsAndWorkersSurviveReopening) {
  const std::string path = ::testing::TempDir() + "/store_test.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(std::filesystem::path(path).concat(suffix));
  {
    auto store = Store::open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    StoredJob j;
    j.id = "job-1";
    j.seq = 1;
    j.request_id = "r";
    j.spec = std::string("spec\0bytes", 10);
    j.plan = "plan";
    j.state = 1;
    j.created_ms = 5;
    for (int i = 0; i < 3; ++i) j.units.push_back(unit(i, "s" + std::to_string(i)));
    j.owner = "alice";
    ASSERT_TRUE((*store)->insert_job(j).ok()) << (*store)->insert_job(j);
    ASSERT_TRUE((*store)
                    ->record_leases(
                        "job-1", {{1, 2, 2, {1, 0, "w/a", 2, 0, {}, false}}, {1, 3, 2, {1, 1, "w/b", 3, 1, {}, false}}})
                    .ok());
    ASSERT_TRUE((*store)->put_copy_result("job-1", 1, 0, "result").ok());
    ASSERT_TRUE((*store)->put_copy_result("job-1", 1, 1, "result").ok());
    ASSERT_TRUE((*store)->settle_unit("job-1", 1, "result", 2, std::nullopt, 0).ok());
    // A settled unit stays as it is: a second settlement fails and changes nothing.
    EXPECT_FALSE((*store)->settle_unit("job-1", 1, "other", 1, 2, 99).ok());
    ASSERT_TRUE((*store)->update_job("job-1", 2, 99, 1, "detail").ok());
    StoredWorker w;
    w.key = "w/a";
    w.identity = "w";
    w.host = "a";
    w.threads = 4;
    w.agreeing = 7;
    w.trust = 2;
    w.trust_reason = "fine";
    ASSERT_TRUE((*store)->upsert_worker(w).ok());
  }
  auto store = Store::open(path);
  ASSERT_TRUE(store.ok());
  auto jobs = (*store)->load_jobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  const StoredJob& j = (*jobs)[0];
  EXPECT_EQ(j.spec, std::string("spec\0bytes", 10));
  EXPECT_EQ(j.state, 2);
  EXPECT_EQ(j.finished_ms, 99);
  EXPECT_EQ(j.mismatches, 1);
  EXPECT_EQ(j.mismatch_detail, "detail");
  ASSERT_EQ(j.units.size(), 3u);
  EXPECT_EQ(j.owner, "alice");
  EXPECT_EQ(j.units[1].attempt, 3);
  EXPECT_EQ(j.units[1].wanted, 2);
  EXPECT_EQ(j.units[1].result, "result");
  EXPECT_EQ(j.units[1].votes, 2);
  ASSERT_EQ(j.units[1].copies.size(), 2u);
  EXPECT_EQ(j.units[1].copies[1].worker, "w/b");
  EXPECT_EQ(j.units[1].copies[1].zobrist_seed, 1u);
  EXPECT_EQ(j.units[1].copies[1].result, "result");
  EXPECT_FALSE(j.units[0].result.has_value());
  EXPECT_EQ(j.units[2].spec, "s2");
  auto workers = (*store)->load_workers();
  ASSERT_TRUE(workers.ok());
  ASSERT_EQ(workers->size(), 1u);
  EXPECT_EQ((*workers)[0].threads, 4);
  EXPECT_EQ((*workers)[0].agreeing, 7);
  EXPECT_EQ((*workers)[0].trust, 2);
  EXPECT_EQ((*workers)[0].trust_reason, "fine");
  // Inserting a job id twice fails and leaves the first intact.
  StoredJob dup;
  dup.id = "job-1";
  EXPECT_FALSE((*store)->insert_job(dup).ok());
  EXPECT_EQ((*(*store)->load_jobs())[0].units.size(), 3u);
}

TEST(StoreTest, ASecondStoreOnTheSameFileIsRefused) {
  const std::string path = ::testing::TempDir() + "/store_test_lock.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(std::filesystem::path(path).concat(suffix));
  auto first = Store::open(path);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = Store::open(path);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition) << second.status();
  first->reset();
  EXPECT_TRUE(Store::open(path).ok());  // free again once the first is closed
}

TEST(StoreTest, UnwritablePathIsAnError) { EXPECT_FALSE(Store::open("/nonexistent-dir/x/y.db").ok()); }

std::string fresh_path(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name;
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(std::filesystem::path(path).concat(suffix));
  return path;
}

TEST(StoreTest, NewStoresHaveTheCurrentSchemaVersion) {
  auto store = Store::open(":memory:");
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->schema_version(), Store::kSchemaVersion);
}

TEST(StoreTest, AStoreFromANewerCoordinatorIsRefused) {
  const std::string path = fresh_path("store_test_newer.db");
  {
    auto store = Store::open(path);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->exec_for_test("PRAGMA user_version = 999").ok());
  }
  auto store = Store::open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("newer"), absl::string_view::npos) << store.status();
}

TEST(StoreTest, AFailedTransactionLeavesNothingBehind) {
  auto store = Store::open(":memory:");
  ASSERT_TRUE(store.ok());
  StoredJob j;
  j.id = "job-1";
  j.seq = 1;
  for (int i = 0; i < 3; ++i) j.units.push_back(unit(i));
  j.units.push_back(unit(1, "duplicate index"));  // the primary key refuses it
  EXPECT_FALSE((*store)->insert_job(j).ok());
  auto jobs = (*store)->load_jobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE(jobs->empty()) << "the job row stayed without its units";
  // The guard rolled back: the store takes the next transaction.
  j.units.pop_back();
  EXPECT_TRUE((*store)->insert_job(j).ok());
  EXPECT_EQ((*(*store)->load_jobs())[0].unit_count, 3);
}

TEST(StoreTest, BigJobsAreStoredInStepsAndCountOnlyOncePlanned) {
  auto store = Store::open(":memory:");
  ASSERT_TRUE(store.ok());
  StoredJob j;
  j.id = "job-7";
  j.seq = 7;
  for (int i = 0; i < 10; ++i) j.units.push_back(unit(i));
  ASSERT_TRUE((*store)->begin_job(j).ok());
  ASSERT_TRUE((*store)->add_units("job-7", j.units, 0, 4).ok());
  auto jobs = (*store)->load_jobs();
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_FALSE((*jobs)[0].planned);
  ASSERT_TRUE((*store)->add_units("job-7", j.units, 4, 10).ok());
  ASSERT_TRUE((*store)->finish_job_plan("job-7", 10).ok());
  jobs = (*store)->load_jobs();
  EXPECT_TRUE((*jobs)[0].planned);
  EXPECT_EQ((*jobs)[0].unit_count, 10);
  EXPECT_EQ((*jobs)[0].units.size(), 10u);
  ASSERT_TRUE((*store)->delete_job("job-7").ok());
  EXPECT_TRUE((*(*store)->load_jobs()).empty());
}

TEST(StoreTest, FoldingReplacesSettledUnitsAndTheirCopiesWithOneRow) {
  auto store = Store::open(":memory:");
  ASSERT_TRUE(store.ok());
  StoredJob j;
  j.id = "job-1";
  j.seq = 1;
  j.spec = "spec";
  j.plan = "plan";
  for (int i = 0; i < 5; ++i) j.units.push_back(unit(i));
  ASSERT_TRUE((*store)->insert_job(j).ok());
  for (int64_t i : {1, 2}) {
    ASSERT_TRUE((*store)->record_leases("job-1", {{i, 1, 1, {i, 0, "w/a", 1, 0, {}, false}}}).ok());
    ASSERT_TRUE((*store)->put_copy_result("job-1", i, 0, "r").ok());
  }
  ASSERT_TRUE((*store)->settle_unit("job-1", 1, "r", 1, std::nullopt, 0).ok());
  // Unit 2 is not settled: units 1..2 do not fold, and nothing changes.
  const absl::Status refused = (*store)->fold_units("job-1", {7, 1, 3, "totals"});
  EXPECT_EQ(refused.code(), absl::StatusCode::kInternal) << refused;
  EXPECT_EQ(*(*store)->unit_rows("job-1"), 5);
  ASSERT_TRUE((*store)->settle_unit("job-1", 2, "r", 1, std::nullopt, 0).ok());
  ASSERT_TRUE((*store)->fold_units("job-1", {7, 1, 3, "totals"}).ok());
  EXPECT_EQ(*(*store)->unit_rows("job-1"), 3);
  auto jobs = (*store)->load_jobs();
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ((*jobs)[0].units.size(), 3u);
  EXPECT_EQ((*jobs)[0].units[1].index, 3);
  for (const StoredUnit& u : (*jobs)[0].units) EXPECT_TRUE(u.copies.empty());  // the copies went too
  ASSERT_EQ((*jobs)[0].folds.size(), 1u);
  EXPECT_EQ((*jobs)[0].folds[0].group, 7);
  EXPECT_EQ((*jobs)[0].folds[0].first, 1);
  EXPECT_EQ((*jobs)[0].folds[0].end, 3);
  EXPECT_EQ((*jobs)[0].folds[0].record, "totals");
  EXPECT_EQ((*jobs)[0].unit_count, 5);
  // A group folds once; a retired one keeps its indexes under another group number.
  EXPECT_FALSE((*store)->fold_units("job-1", {7, 1, 3, "totals"}).ok());
  ASSERT_TRUE((*store)->retire_fold("job-1", 7, "retired").ok());
  EXPECT_EQ((*store)->retire_fold("job-1", 7, "retired").code(), absl::StatusCode::kInternal);
  jobs = (*store)->load_jobs();
  ASSERT_EQ((*jobs)[0].folds.size(), 1u);
  EXPECT_EQ((*jobs)[0].folds[0].group, -2);
  EXPECT_EQ((*jobs)[0].folds[0].record, "retired");
  ASSERT_TRUE((*store)->delete_job("job-1").ok());
  EXPECT_TRUE((*(*store)->load_jobs()).empty());
}

TEST(StoreTest, AVersion4StoreGainsTheFoldedTable) {
  const std::string path = ::testing::TempDir() + "/store_test_v4.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(std::filesystem::path(path).concat(suffix));
  {
    auto store = Store::open(path, 4);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_EQ((*store)->schema_version(), 4);
    StoredJob j;
    j.id = "job-1";
    j.seq = 1;
    j.units.push_back(unit(0));
    ASSERT_TRUE((*store)->insert_job(j).ok());
    ASSERT_TRUE((*store)->settle_unit("job-1", 0, "r", 1, std::nullopt, 0).ok());
    EXPECT_FALSE((*store)->fold_units("job-1", {0, 0, 1, "totals"}).ok());  // no such table yet
  }
  auto store = Store::open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->schema_version(), Store::kSchemaVersion);
  ASSERT_TRUE((*store)->fold_units("job-1", {0, 0, 1, "totals"}).ok());
  auto jobs = (*store)->load_jobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE((*jobs)[0].units.empty());
  ASSERT_EQ((*jobs)[0].folds.size(), 1u);
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(std::filesystem::path(path).concat(suffix));
}

}  // namespace
}  // namespace c960::cluster
