// The store, on SQLite and on PostgreSQL (a scratch server: pg_server.h): what goes in comes
// back, results are written once.
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
#include "coordinator/store_db.h"
#include "coordinator/store_lease.h"
#include "coordinator/store_sql.h"
#include "tests/cluster/pg_server.h"

namespace c960::cluster {
namespace {

StoredUnit unit(int64_t index, const std::string& spec = "s") {
  StoredUnit u;
  u.index = index;
  u.spec = spec;
  u.meta = "m";
  return u;
}

// The backends every test below runs on.
enum class Backend { kSqlite, kPostgres };

// The test process's PostgreSQL server: skips the test when PostgreSQL is not installed, fails it
// when the server would not start.
#define C960_USE_PG(pg)                            \
  do {                                             \
    std::string why;                               \
    bool installed = false;                        \
    pg = test::PgServer::shared(&why, &installed); \
    if (!installed) GTEST_SKIP() << why;           \
    ASSERT_NE(pg, nullptr) << why;                 \
  } while (0)

class StoreBackendTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::kPostgres) C960_USE_PG(pg_);
  }
  // Where a new store goes: a fresh file, or a fresh database.
  std::string fresh(const std::string& name) {
    if (pg_) {
      const std::string url = pg_->fresh_database("store");
      EXPECT_FALSE(url.empty()) << "createdb failed";
      return url;
    }
    const std::string path = ::testing::TempDir() + "/" + name;
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(std::filesystem::path(path).concat(suffix));
    return path;
  }
  test::PgServer* pg_ = nullptr;
};

INSTANTIATE_TEST_SUITE_P(Backends, StoreBackendTest, ::testing::Values(Backend::kSqlite, Backend::kPostgres),
                         [](const ::testing::TestParamInfo<Backend>& b) {
                           return b.param == Backend::kSqlite ? "SQLite" : "PostgreSQL";
                         });

// What only PostgreSQL has, or what compares it with SQLite.
class PostgresStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { C960_USE_PG(pg_); }
  test::PgServer* pg_ = nullptr;
};

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

TEST_P(StoreBackendTest, JobsUnitsAndWorkersSurviveReopening) {
  const std::string path = fresh("store_test.db");
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

TEST_P(StoreBackendTest, ASecondStoreOnTheSameFileIsRefused) {
  const std::string path = fresh("store_test_lock.db");
  auto first = Store::open(path);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = Store::open(path);
  ASSERT_FALSE(second.ok());
  // PostgreSQL: ABORTED, the leader's lock (a standby waits on it: StoreLease).
  EXPECT_EQ(second.status().code(),
            GetParam() == Backend::kPostgres ? absl::StatusCode::kAborted : absl::StatusCode::kFailedPrecondition)
      << second.status();
  first->reset();
  EXPECT_TRUE(Store::open(path).ok());  // free again once the first is closed
}

TEST(StoreTest, UnwritablePathIsAnError) { EXPECT_FALSE(Store::open("/nonexistent-dir/x/y.db").ok()); }

TEST_P(StoreBackendTest, NewStoresHaveTheCurrentSchemaVersion) {
  auto store = Store::open(fresh("store_test_version.db"));
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->schema_version(), Store::kSchemaVersion);
}

TEST_P(StoreBackendTest, AStoreFromANewerCoordinatorIsRefused) {
  const std::string path = fresh("store_test_newer.db");
  {
    auto store = Store::open(path);
    ASSERT_TRUE(store.ok());
    const auto dialect = GetParam() == Backend::kSqlite ? store_db::Dialect::kSqlite : store_db::Dialect::kPostgres;
    ASSERT_TRUE((*store)->exec_for_test(store_db::dialect::set_schema_version(dialect, 999)).ok());
  }
  auto store = Store::open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("newer"), absl::string_view::npos) << store.status();
}

TEST_P(StoreBackendTest, AFailedTransactionLeavesNothingBehind) {
  auto store = Store::open(fresh("store_test_AFailedTransactionLeavesNothingBehind.db"));
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

TEST_P(StoreBackendTest, BigJobsAreStoredInStepsAndCountOnlyOncePlanned) {
  auto store = Store::open(fresh("store_test_BigJobsAreStoredInStepsAndCountOnlyOncePlanned.db"));
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

TEST_P(StoreBackendTest, FoldingReplacesSettledUnitsAndTheirCopiesWithOneRow) {
  auto store = Store::open(fresh("store_test_FoldingReplacesSettledUnitsAndTheirCopiesWithOneRow.db"));
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

TEST_P(StoreBackendTest, AVersion4StoreGainsTheFoldedTable) {
  const std::string path = fresh("store_test_v4.db");
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
  if (!pg_)
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(std::filesystem::path(path).concat(suffix));
}

// Every stored result is bound to its row (schema 8) by c960_bind: the same function of the same
// row on both backends (SQLite's in C++, PostgreSQL's in SQL), so a store moved from one to the
// other checks alike; and a result moved to another row is refused on both.
TEST_F(PostgresStoreTest, ResultsAreBoundToTheirRowsAlikeOnBothBackends) {
  std::vector<std::string> bindings;
  for (const std::string& where : {pg_->fresh_database("store"), std::string(":memory:")}) {
    auto store = Store::open(where);
    ASSERT_TRUE(store.ok()) << store.status();
    StoredJob j;
    j.id = "job-\xc3\xa9";  // text beyond ASCII: its UTF-8 bytes
    j.seq = 1;
    j.units.push_back(unit(0, std::string("spec\0\xff", 6)));
    j.units.push_back(unit(-5, "other"));
    ASSERT_TRUE((*store)->insert_job(j).ok());
    ASSERT_TRUE((*store)->record_leases(j.id, {{-5, 1, 1, {-5, 3, "w/a", 1, 0, {}, false}}}).ok());
    ASSERT_TRUE((*store)->put_copy_result(j.id, -5, 3, std::string("r\0", 2)).ok());
    ASSERT_TRUE((*store)->settle_unit(j.id, 0, std::string(300, 'x'), 1, std::nullopt, 0).ok());
    ASSERT_TRUE((*store)->settle_unit(j.id, -5, "r", 1, std::nullopt, 0).ok());
    ASSERT_TRUE((*store)->fold_units(j.id, {9, -5, -4, "record"}).ok());
    std::string all;
    {
      StoreSql sql(store->get());
      for (const char* q : {"SELECT bound FROM units ORDER BY idx", "SELECT bound FROM folded ORDER BY grp"}) {
        store_sql::Stmt s(sql.db(), q);
        ASSERT_TRUE(s.ok()) << q;
        while (s.step() == SQLITE_ROW) {
          EXPECT_EQ(s.blob(0).size(), 16u);
          all += s.blob(0);
        }
      }
    }
    bindings.push_back(all);
    // A damaged result no longer matches its row.
    ASSERT_TRUE((*store)->exec_for_test("UPDATE units SET result = 'xx' WHERE idx = 0").ok());
    EXPECT_EQ((*store)->unit_result(j.id, 0).status().code(), absl::StatusCode::kDataLoss);
    auto jobs = (*store)->load_jobs();
    ASSERT_TRUE(jobs.ok()) << jobs.status();
    EXPECT_FALSE((*jobs)[0].units[0].intact);
    EXPECT_TRUE((*jobs)[0].folds[0].intact);
  }
  EXPECT_EQ(bindings[0].size(), 32u);
  EXPECT_EQ(bindings[0], bindings[1]) << "PostgreSQL's c960_bind differs from SQLite's";
}

// A database with tables of something else is not made a store unless asked, as a foreign file.
TEST_F(PostgresStoreTest, AForeignDatabaseIsRefusedUnlessInit) {
  const std::string url = pg_->fresh_database("store");
  const std::string db = url.substr(url.rfind('/') + 1, url.find('?') - url.rfind('/') - 1);
  EXPECT_EQ(pg_->psql(db, "CREATE TABLE accounts (id INTEGER, balance INTEGER); SELECT 'made';"), "made\n");
  auto refused = Store::open(url);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "not a c960 store")) << refused.status();
  EXPECT_TRUE(Store::open(url, Store::kSchemaVersion, true).ok());
  EXPECT_TRUE(Store::open(url).ok());
}

// A leader whose database connection is cut (the server ended its session: a restart, a
// network cut that the server noticed, an operator's pg_terminate_backend) has lost its lease
// with the session's advisory lock. libpq never connects it again: it is deposed at its next
// renewal, without waiting out its lease, and nothing it writes after the cut is kept; a standby
// takes the lease and the store.
TEST_F(PostgresStoreTest, ALeaderWhoseConnectionIsCutIsDeposedAtOnceAndWritesNothing) {
  const std::string url = pg_->fresh_database("store");
  const std::string db = url.substr(url.rfind('/') + 1, url.find('?') - url.rfind('/') - 1);
  const LeaderTiming timing{.ttl_ms = 10'000};
  StoreLease lease_a([&] { return Store::open(url); });
  LeaderElection a(&lease_a, "a:1", timing);
  ASSERT_EQ(a.step(0), LeaderRole::kLeader) << a.why();
  std::unique_ptr<Store> store_a = lease_a.take_store();
  ASSERT_NE(store_a, nullptr);
  lease_a.watch(store_a.get());
  StoredWorker w;
  w.key = "id/before";
  ASSERT_TRUE(store_a->upsert_worker(w).ok());
  StoreLease lease_b([&] { return Store::open(url); });
  LeaderElection b(&lease_b, "b:1", timing);
  ASSERT_EQ(b.step(0), LeaderRole::kStandby);

  EXPECT_EQ(pg_->psql(db,
                      "SELECT COUNT(pg_terminate_backend(pid, 10000)) FROM pg_stat_activity WHERE datname = "
                      "current_database() AND application_name = 'c960-coordinator';"),
            "1\n");
  w.key = "id/after";
  const absl::Status write = store_a->upsert_worker(w);
  EXPECT_FALSE(write.ok());
  const absl::Status alive = store_a->check_alive();
  EXPECT_EQ(alive.code(), absl::StatusCode::kAborted) << alive;
  // 1 ms after its last renewal, with nearly all of its lease left by its own clock.
  EXPECT_EQ(a.step(1), LeaderRole::kDeposed);
  EXPECT_TRUE(absl::StrContains(a.why(), "lost the leader lease")) << a.why();

  ASSERT_EQ(b.step(2), LeaderRole::kLeader) << b.why();
  std::unique_ptr<Store> store_b = lease_b.take_store();
  ASSERT_NE(store_b, nullptr);
  // The old connection stays gone: its writes keep failing, and only the new leader's are kept.
  w.key = "id/late";
  EXPECT_FALSE(store_a->upsert_worker(w).ok());
  w.key = "id/new-leader";
  ASSERT_TRUE(store_b->upsert_worker(w).ok());
  absl::StatusOr<std::vector<StoredWorker>> workers = store_b->load_workers();
  ASSERT_TRUE(workers.ok()) << workers.status();
  std::vector<std::string> keys;
  for (const StoredWorker& x : *workers) keys.push_back(x.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"id/before", "id/new-leader"}));
}

// The advisory lock does not say who holds it: the holder writes its address and the next epoch
// in c960_leader, and a standby names it while the session that wrote the row holds the lock,
// as a standby on SQLite names the lease file's holder. A row left by a leader whose session
// has ended names nobody, even while something else holds the lock; the next holder writes its
// own, one epoch on.
TEST_F(PostgresStoreTest, AStandbyNamesTheLeaderItsRowSaysAndATakeoverGrowsTheEpoch) {
  const std::string url = pg_->fresh_database("store");
  const LeaderTiming timing{.ttl_ms = 10'000};
  StoreLease lease_a([&] { return Store::open(url); });
  LeaderElection a(&lease_a, "", timing);  // its port not known yet
  ASSERT_EQ(a.step(0), LeaderRole::kLeader) << a.why();
  EXPECT_EQ(a.epoch(), 1);
  std::unique_ptr<Store> store_a = lease_a.take_store();
  ASSERT_NE(store_a, nullptr);
  lease_a.watch(store_a.get());
  StoreLease lease_b([&] { return Store::open(url); });
  LeaderElection b(&lease_b, "127.0.0.1:2", timing);
  ASSERT_EQ(b.step(0), LeaderRole::kStandby);
  EXPECT_EQ(b.leader(), "") << "a holder without an address yet names nobody";
  // Its address learned, the leader writes it at its next renewal; the standby names it.
  a.set_holder("127.0.0.1:1");
  ASSERT_EQ(a.step(1), LeaderRole::kLeader) << a.why();
  ASSERT_EQ(b.step(2), LeaderRole::kStandby);
  EXPECT_EQ(b.leader(), "127.0.0.1:1");

  // The leader's session ends; something else (not a coordinator) holds the lock for a while.
  store_a.reset();
  absl::StatusOr<std::unique_ptr<store_db::Connection>> other = store_db::open_postgres(url, "");
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE((*other)->exec(absl::StrCat("SELECT pg_advisory_lock(", Store::kAdvisoryLockKey, ")").c_str()))
      << (*other)->describe();
  ASSERT_EQ(b.step(3), LeaderRole::kStandby);
  EXPECT_EQ(b.leader(), "") << "the dead leader's row was trusted";
  other->reset();

  // The standby takes over: its address, one epoch on; another standby names it.
  ASSERT_EQ(b.step(4), LeaderRole::kLeader) << b.why();
  EXPECT_EQ(b.epoch(), 2);
  std::unique_ptr<Store> store_b = lease_b.take_store();
  ASSERT_NE(store_b, nullptr);
  lease_b.watch(store_b.get());
  StoreLease lease_c([&] { return Store::open(url); });
  LeaderElection c(&lease_c, "127.0.0.1:3", timing);
  ASSERT_EQ(c.step(5), LeaderRole::kStandby);
  EXPECT_EQ(c.leader(), "127.0.0.1:2");
  // What the table holds: one row, the holder's.
  const std::string db = url.substr(url.rfind('/') + 1, url.find('?') - url.rfind('/') - 1);
  EXPECT_EQ(pg_->psql(db, "SELECT holder || ' ' || epoch FROM c960_leader;"), "127.0.0.1:2 2\n");
}

// A leader's session gives up a cut network within the time asked, on the server's side too:
// the server ends the session, and releases its advisory lock, once the client is silent that
// long (without it, at the server's TCP keepalive: two hours by default).
TEST_F(PostgresStoreTest, LimitSilenceSetsTheSessionsTcpTimeouts) {
  auto store = Store::open(pg_->fresh_database("store"));
  ASSERT_TRUE(store.ok()) << store.status();
  const std::string check =
      "DO $$BEGIN IF current_setting('tcp_user_timeout') <> '4000' OR current_setting('tcp_keepalives_idle') <> '1' "
      "OR current_setting('tcp_keepalives_count') <> '3' THEN RAISE EXCEPTION 'not set'; END IF; END$$";
  EXPECT_FALSE((*store)->exec_for_test(check).ok()) << "the server's defaults";
  ASSERT_TRUE((*store)->limit_silence(4000).ok());
  const absl::Status set = (*store)->exec_for_test(check);
  EXPECT_TRUE(set.ok()) << set;
  EXPECT_TRUE((*store)->check_alive().ok());
}

// A server that is not there: FAILED_PRECONDITION naming the URL without its password.
TEST(StoreTest, AnUnreachableDatabaseIsAnErrorWithoutItsPassword) {
  auto s = Store::open("postgresql://c960:secret@127.0.0.1:1/none?sslmode=disable&connect_timeout=2");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(s.status().message(), "postgresql://c960:***@127.0.0.1:1/none")) << s.status();
  EXPECT_FALSE(absl::StrContains(s.status().message(), "secret")) << s.status();
}

// The PostgreSQL dialect, as the store's SQL is translated.
TEST(StoreTest, SqliteSqlIsTranslatedForPostgres) {
  using store_db::dialect::postgres;
  EXPECT_EQ(postgres("SELECT a FROM t WHERE x = ? AND y = ?"), "SELECT a FROM t WHERE x = $1 AND y = $2");
  EXPECT_EQ(postgres("UPDATE t SET r = ?1, b = f(?1) WHERE k = ?2 AND j = ?"),
            "UPDATE t SET r = $1, b = f($1) WHERE k = $2 AND j = $3");
  EXPECT_EQ(postgres("SELECT '?', \"INTEGER\" FROM t WHERE s = 'it''s ?' AND v = ?"),
            "SELECT '?', \"INTEGER\" FROM t WHERE s = 'it''s ?' AND v = $1");
  EXPECT_EQ(postgres("CREATE TABLE t (a INTEGER NOT NULL, b BLOB, PRIMARY KEY (a)) WITHOUT ROWID;"),
            "CREATE TABLE t (a BIGINT NOT NULL, b BYTEA, PRIMARY KEY (a)) ;");
  EXPECT_EQ(postgres("SELECT bound IS f(x), r IS NULL, r IS NOT NULL FROM t"),
            "SELECT bound IS NOT DISTINCT FROM f(x), r IS NULL, r IS NOT NULL FROM t");
  EXPECT_EQ(postgres("UPDATE u SET b = c960_bind('unit', job_id, idx, spec, ?1)"),
            "UPDATE u SET b = c960_bind_unit(job_id, idx, spec, $1)");
  EXPECT_EQ(store_db::redact_url("postgresql://u:pw@h:5/d?x=1"), "postgresql://u:***@h:5/d?x=1");
  EXPECT_EQ(store_db::redact_url("postgresql://u@h/d"), "postgresql://u@h/d");
}

}  // namespace
}  // namespace c960::cluster
