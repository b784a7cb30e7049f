// Kinds own their tables (issue 35): the generic store names no kind; a kind registers its tables,
// their schema steps and their rows' deletion (KindTables), and the store runs them inside its own
// transactions.
#include <unistd.h>

#include <filesystem>

// GCC 12 at -O3 reports a false -Wrestrict inside std::string assignment (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "coordinator/selfplay_store.h"
#include "coordinator/store.h"
#include "coordinator/store_sql.h"

namespace c960::cluster {
namespace {

using store_sql::Stmt;

// A kind with one table of its own: made by create() (no schema version of its own), a column
// added by a step at version 5 of the store's numbering, rows deleted per job. Its deletion
// fails while `fail_delete` is set.
class FakeTables : public KindTables {
 public:
  const char* name() const override { return "fake"; }
  const char* create() const override {
    return "CREATE TABLE IF NOT EXISTS fake_rows (job_id TEXT NOT NULL, n INTEGER NOT NULL)";
  }
  std::vector<Step> steps() const override {
    return {{5, "CREATE TABLE fake_steps (version INTEGER NOT NULL)", [this](StoreSql& sql) {
               ++rewrites;
               return sql.exec(absl::StrCat("INSERT INTO fake_steps VALUES (", sql.version(), ")").c_str());
             }}};
  }
  absl::Status delete_job(StoreSql& sql, const std::string& job_id) const override {
    if (fail_delete) return sql.error("fake rows (failed on purpose)");
    Stmt q(sql.db(), "DELETE FROM fake_rows WHERE job_id = ?");
    if (!q.ok()) return sql.error("delete fake rows");
    q.bind_text(1, job_id);
    if (!q.run()) return sql.error("delete fake rows");
    return absl::OkStatus();
  }

  // Test helpers: a row for a job, and the rows a job has.
  static absl::Status add(Store* store, const std::string& job_id) {
    StoreSql sql(store);
    Stmt q(sql.db(), "INSERT INTO fake_rows VALUES (?, 1)");
    if (!q.ok()) return sql.error("add fake row");
    q.bind_text(1, job_id);
    if (!q.run()) return sql.error("add fake row");
    return absl::OkStatus();
  }
  static int64_t rows(Store* store, const std::string& job_id) {
    StoreSql sql(store);
    Stmt q(sql.db(), "SELECT COUNT(*) FROM fake_rows WHERE job_id = ?");
    q.bind_text(1, job_id);
    return q.step() == SQLITE_ROW ? q.i64(0) : -1;
  }

  mutable int rewrites = 0;
  bool fail_delete = false;
};

// The tables an opened store has whose names start with `prefix`.
int64_t tables_named(Store* store, const std::string& prefix) {
  StoreSql sql(store);
  Stmt q(sql.db(), "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND substr(name, 1, ?1) = ?2");
  q.bind(1, int64_t(prefix.size()));
  q.bind_text(2, prefix);
  return q.step() == SQLITE_ROW ? q.i64(0) : -1;
}

StoredJob job(const std::string& id, int64_t seq) {
  StoredJob j;
  j.id = id;
  j.seq = seq;
  StoredUnit u;
  u.spec = "s";
  u.meta = "m";
  j.units.push_back(u);
  return j;
}

TEST(KindTablesTest, TheGenericStoreHasNoKindsTables) {
  auto bare = Store::open(":memory:", Store::kSchemaVersion, false, {});
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_EQ(tables_named(bare->get(), "sp_"), 0);
  EXPECT_EQ(tables_named(bare->get(), "games"), 0);
  EXPECT_GT(tables_named(bare->get(), "jobs"), 0);
  // Every kind's tables come with the kinds this build registers (kinds.cpp).
  auto full = Store::open(":memory:");
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(tables_named(full->get(), "sp_"), 6);
}

TEST(KindTablesTest, AKindsCreateAndStepsRunOnceEachInTheirVersion) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/kind-tables-", getpid(), ".db");
  std::filesystem::remove(path);
  FakeTables fake;
  {
    auto old = Store::open(path, 3, false, {&fake});
    ASSERT_TRUE(old.ok()) << old.status();
    EXPECT_EQ(tables_named(old->get(), "fake_rows"), 1);  // create(): whatever the version
    EXPECT_EQ(tables_named(old->get(), "fake_steps"), 0);
    EXPECT_EQ(fake.rewrites, 0);
  }
  for (int open = 0; open < 2; ++open) {
    auto store = Store::open(path, Store::kSchemaVersion, false, {&fake});
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_EQ((*store)->schema_version(), Store::kSchemaVersion);
    StoreSql sql(store->get());
    Stmt q(sql.db(), "SELECT COUNT(*), MIN(version) FROM fake_steps");
    ASSERT_EQ(q.step(), SQLITE_ROW);
    EXPECT_EQ(q.i64(0), 1);  // once, not again on the second open
    EXPECT_EQ(q.i64(1), 5);  // it saw the version it belongs to
  }
  EXPECT_EQ(fake.rewrites, 1);
  std::filesystem::remove(path);
}

TEST(KindTablesTest, AKindsStepThatFailsFailsItsVersionWhole) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/kind-tables-fail-", getpid(), ".db");
  std::filesystem::remove(path);
  {
    auto old = Store::open(path, 4, false, {});
    ASSERT_TRUE(old.ok()) << old.status();
  }
  class Failing : public FakeTables {
    std::vector<Step> steps() const override {
      return {{5, "CREATE TABLE fake_steps (version INTEGER NOT NULL)",
               [](StoreSql&) { return absl::DataLossError("fake: a row does not parse"); }}};
    }
  } failing;
  auto refused = Store::open(path, Store::kSchemaVersion, false, {&failing});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("a row does not parse"), std::string::npos) << refused.status();
  // Nothing of version 5 was kept: the file is still at version 4, without the step's table.
  auto again = Store::open(path, 4, false, {});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->schema_version(), 4);
  EXPECT_EQ(tables_named(again->get(), "fake_steps"), 0);
  std::filesystem::remove(path);
}

TEST(KindTablesTest, DeleteJobDeletesEachKindsRowsInItsTransaction) {
  FakeTables fake;
  auto store = Store::open(":memory:", Store::kSchemaVersion, false, {&fake});
  ASSERT_TRUE(store.ok()) << store.status();
  Store* s = store->get();
  for (const auto& [id, seq] : {std::pair<std::string, int64_t>{"job-1", 1}, {"job-2", 2}}) {
    ASSERT_TRUE(s->insert_job(job(id, seq)).ok());
    ASSERT_TRUE(FakeTables::add(s, id).ok());
  }
  // A kind whose deletion fails keeps the whole job: its row, its units and the kind's rows.
  fake.fail_delete = true;
  EXPECT_FALSE(s->delete_job("job-1").ok());
  EXPECT_EQ(s->load_jobs()->size(), 2u);
  EXPECT_EQ(*s->unit_rows("job-1"), 1);
  EXPECT_EQ(FakeTables::rows(s, "job-1"), 1);
  fake.fail_delete = false;
  ASSERT_TRUE(s->delete_job("job-1").ok());
  EXPECT_EQ(s->load_jobs()->size(), 1u);
  EXPECT_EQ(FakeTables::rows(s, "job-1"), 0);
  EXPECT_EQ(FakeTables::rows(s, "job-2"), 1);  // another job's rows stay
}

TEST(KindTablesTest, DeleteJobDeletesTheSelfPlayKindsRows) {
  auto store = Store::open(":memory:");
  ASSERT_TRUE(store.ok()) << store.status();
  Store* s = store->get();
  ASSERT_TRUE(s->insert_job(job("job-1", 1)).ok());
  SelfPlaySettlement sp;
  sp.sp = 0;
  sp.match = true;
  sp.games = {GameSummary{0, 1, 40, 11, true, 21}, GameSummary{2, 1, 50, 12, true, 22}};
  StoredGame g;
  g.white = "a";
  g.black = "b";
  g.moves = "x";
  sp.stored = {g};
  ASSERT_TRUE(apply_settlement(s, "job-1", sp, 1).ok());
  ASSERT_EQ(load_position_totals(s, "job-1")->size(), 1u);
  ASSERT_EQ(load_position_totals(s, "job-1")->at(0).lines.size(), 2u);  // 1-0 in one line, 0-1 in another
  ASSERT_EQ(load_games(s, "job-1")->size(), 1u);
  ASSERT_TRUE(s->delete_job("job-1").ok());
  EXPECT_TRUE(load_position_totals(s, "job-1")->empty());
  EXPECT_TRUE(load_games(s, "job-1")->empty());
  StoreSql sql(s);
  for (const char* table : {"sp_totals", "sp_hashes", "sp_pair_hashes", "sp_names", "sp_games", "sp_lines"}) {
    Stmt q(sql.db(), absl::StrCat("SELECT COUNT(*) FROM ", table).c_str());
    ASSERT_EQ(q.step(), SQLITE_ROW) << table;
    EXPECT_EQ(q.i64(0), 0) << table;
  }
}

}  // namespace
}  // namespace c960::cluster
