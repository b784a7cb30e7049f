// Moving a store from SQLite to PostgreSQL (coordinator/store_copy.h): a store with a running
// perft job and a self-play job with stored games, workers and a credential, copied; a
// coordinator on PostgreSQL loads the same durable state as one on the SQLite file and finishes
// the job exact. What the copy refuses: a target that holds rows, a source a coordinator holds.
#include "coordinator/store_copy.h"

#include "coordinator/file_lease.h"
#include "tests/cluster/pg_server.h"
#include "tests/cluster/selfplay_job_fixture.h"

namespace c960::cluster {
namespace {

class StoreCopyTest : public SelfPlayJobTest {
 protected:
  void SetUp() override {
    std::string why;
    bool installed = false;
    pg_ = test::PgServer::shared(&why, &installed);
    if (!installed) GTEST_SKIP() << why;
    ASSERT_NE(pg_, nullptr) << why;
    SelfPlayJobTest::SetUp();
  }
  // The store at `where` as a coordinator loads it (the current coordinator and store closed).
  std::string durable_state_of(const std::string& where) {
    coordinator_.reset();
    store_.reset();
    open_store(where);
    CoordinatorFixture::open();
    return coordinator_->durable_state();
  }
  test::PgServer* pg_ = nullptr;
};

TEST_F(StoreCopyTest, ARunningStoreMovesToPostgresAndItsJobFinishesExact) {
  hello_options_ = HelloOptions{.capabilities = {"perft", "selfplay"}, .engines = {"sf"}};
  worker_ = hello("both");
  v1::SelfPlayJobSpec s = small_spec();
  s.set_store_games(v1::STORE_GAMES_ALL);
  absl::StatusOr<v1::Job> sp_job = submit(s);
  ASSERT_TRUE(sp_job.ok()) << sp_job.status();
  const v1::Job perft_job = CoordinatorFixture::submit(v1::VERIFY_MODE_OFF, 3, "0-5");
  ASSERT_FALSE(perft_job.id().empty());
  // Some of each job's units done, one lease left out.
  std::vector<v1::Lease> leased = acquire(8);
  ASSERT_GE(leased.size(), 4u);
  for (size_t i = 0; i + 1 < leased.size(); ++i)
    ASSERT_EQ(complete(leased[i], compute(leased[i])).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  StoredCredential cred{"enrolled-1", "hash-1", "join", "w1", 1234, "alice"};
  ASSERT_TRUE(store_->add_credential(cred).ok());
  ASSERT_EQ(job(perft_job.id()).state(), v1::JOB_STATE_RUNNING);

  const std::string from = dir_ + "/c.db";
  const std::string sqlite_state = durable_state_of(from);
  coordinator_.reset();
  store_.reset();
  const std::string url = pg_->fresh_database("migrate");
  ASSERT_FALSE(url.empty());
  absl::StatusOr<MigrationReport> moved = migrate_store(from, url);
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_EQ(moved->schema_version, Store::kSchemaVersion);
  std::map<std::string, int64_t> rows;
  for (const TableDigest& t : moved->tables) rows[t.table] = t.rows;
  EXPECT_EQ(rows["jobs"], 2);
  EXPECT_GT(rows["units"], 0);
  EXPECT_GT(rows["copies"], 0);
  EXPECT_GT(rows["sp_games"], 0);
  EXPECT_GT(rows["sp_totals"], 0);
  EXPECT_EQ(rows["credentials"], 1);
  EXPECT_EQ(rows["workers"], 2);  // "w" (the fixture's) and "both"

  // Each side's digests, computed apart, agree.
  {
    auto pg = Store::open(url);
    ASSERT_TRUE(pg.ok()) << pg.status();
    auto lite = Store::open(from);
    ASSERT_TRUE(lite.ok()) << lite.status();
    absl::StatusOr<std::vector<TableDigest>> a = table_digests(**lite), b = table_digests(**pg);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(*a, *b);
    EXPECT_EQ(*a, moved->tables);
  }

  EXPECT_EQ(durable_state_of(url), sqlite_state);
  ASSERT_EQ(store_->load_credentials()->size(), 1u);
  // The coordinator on PostgreSQL finishes both jobs; the lease left out is taken again.
  clock_.advance_ms(60'000);
  worker_ = hello("both");
  play_all();
  expect_exact(perft_job.id(), 3);
  EXPECT_EQ(job(sp_job->id()).state(), v1::JOB_STATE_SUCCEEDED);

  // The target now holds rows: a second copy into it is refused, naming a table.
  coordinator_.reset();
  store_.reset();
  absl::StatusOr<MigrationReport> again = migrate_store(from, url);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(again.status().message(), "is not empty")) << again.status();
}

TEST_F(StoreCopyTest, ASourceACoordinatorHoldsIsRefused) {
  const std::string from = dir_ + "/c.db";
  const std::string url = pg_->fresh_database("migrate_busy");
  // A coordinator leading on the file (its lease beside it, its store open).
  FileLease lease(from + "-leader");
  ASSERT_TRUE(lease.take_or_renew_lease("127.0.0.1:7000", 0, 10'000)->granted);
  absl::StatusOr<MigrationReport> moved = migrate_store(from, url);
  ASSERT_FALSE(moved.ok());
  EXPECT_TRUE(absl::StrContains(moved.status().message(), "a coordinator is running")) << moved.status();
  EXPECT_TRUE(absl::StrContains(moved.status().message(), "127.0.0.1:7000")) << moved.status();
  ASSERT_TRUE(lease.release_lease("127.0.0.1:7000", 1).ok());
  // Its store still open (the file's own lock): refused too, and the target left without a row.
  moved = migrate_store(from, url);
  ASSERT_FALSE(moved.ok());
  EXPECT_EQ(moved.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(pg_->psql(url.substr(url.rfind('/') + 1, url.find('?') - url.rfind('/') - 1),
                      "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public' AND table_name = "
                      "'jobs'"),
            "0\n");
  // Stopped, it moves.
  coordinator_.reset();
  store_.reset();
  moved = migrate_store(from, url);
  EXPECT_TRUE(moved.ok()) << moved.status();
}

TEST(StoreCopyArgs, TheSourceMustBeAnSQLiteFileAndTheTargetPostgres) {
  EXPECT_FALSE(migrate_store("", "postgresql://x/y").ok());
  EXPECT_FALSE(migrate_store("/nonexistent/c.db", "postgresql://x/y").ok());
  EXPECT_TRUE(
      absl::StrContains(migrate_store("/nonexistent/c.db", "postgresql://x/y").status().message(), "is not a file"));
  EXPECT_TRUE(absl::StrContains(migrate_store("/tmp", "other.db").status().message(), "--db"));
}

}  // namespace
}  // namespace c960::cluster
