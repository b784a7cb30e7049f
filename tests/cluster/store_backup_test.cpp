// Online backups of the SQLite store (coordinator/store_backup.h): a copy taken mid-job restores
// to a coordinator that finishes the job exact; a copy taken while another connection writes is of
// one commit while the coordinator writes; the newest N are kept; a full disk leaves the older copies and no
// half-written file; the options are checked, naming their flags.
#include "coordinator/store_backup.h"

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sqlite3.h>
#include <sys/resource.h>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cluster/auth.h"
#include "tests/cluster/coordinator_fixture.h"

namespace c960::cluster {
namespace {

class StoreBackupTest : public CoordinatorFixture {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = absl::StrCat(::testing::TempDir(), "/c960-backup-", info->name(), "-", getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    db_ = dir_ + "/store.db";
    open_store(db_);
    open();
  }
  void TearDown() override {
    coordinator_.reset();
    store_.reset();
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  BackupOptions options(int keep = 3) const {
    BackupOptions o;
    o.dir = dir_ + "/backups";
    o.keep = keep;
    return o;
  }

  // Runs `sql` on its own connection to `path`; the first column of the first row, as text.
  static std::string query(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    std::string out;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
      sqlite3_stmt* st = nullptr;
      if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
          sqlite3_column_text(st, 0))
        out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
      sqlite3_finalize(st);
    }
    sqlite3_close_v2(db);
    return out;
  }

  std::string dir_, db_;
};

TEST_F(StoreBackupTest, ACopyTakenMidJobRestoresToACoordinatorThatFinishesTheJobExact) {
  const std::string w = hello("w1");
  const v1::Job j = submit(v1::VERIFY_MODE_OFF, 3, "0-9");
  std::vector<v1::Lease> ls = acquire(w, 6);
  ASSERT_EQ(ls.size(), 6u);
  for (size_t i = 0; i < 4; ++i) ASSERT_EQ(complete(w, ls[i]).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  const int64_t done_at_backup = job(j.id()).progress().units_done();
  ASSERT_EQ(done_at_backup, 4);

  StoreBackups backups(store_.get(), options());
  absl::StatusOr<BackupMade> made = backups.backup_now();
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_TRUE(absl::StartsWith(std::filesystem::path(made->path).filename().string(), "c960-store-"));
  EXPECT_EQ(made->bytes, int64_t(std::filesystem::file_size(made->path)));
  EXPECT_FALSE(std::filesystem::exists(made->path + "-wal"));  // self-contained
  // The job goes on after the copy: none of that is in it.
  for (size_t i = 4; i < 6; ++i) ASSERT_EQ(complete(w, ls[i]).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  drain(w);
  expect_exact(j.id(), 3);

  // Restored as docs/operations.md says: the copy over --db, without the old -wal and -shm.
  coordinator_.reset();
  store_.reset();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db_ + suffix);
  std::filesystem::copy_file(made->path, db_);
  open_store(db_);
  open();
  const v1::Job restored = job(j.id());
  EXPECT_EQ(restored.state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(restored.progress().units_done(), done_at_backup);
  // The two units leased but not sent at the copy come back when their leases expire.
  clock_.advance_ms(31'000);
  coordinator_->sweep();
  drain(hello("w2"));
  expect_exact(j.id(), 3);
}

TEST_F(StoreBackupTest, ACopyIsOfOneCommitWhileTheCoordinatorWrites) {
  ASSERT_TRUE(store_->exec_for_test("CREATE TABLE pairs(a INTEGER)").ok());
  std::atomic<bool> stop{false};
  std::atomic<int> commits{0};
  // Each transaction adds two rows through the store's connection, as the coordinator's commits
  // do: a copy of one commit holds an even number of them.
  std::thread writer([&] {
    while (!stop)
      if (store_->exec_for_test("BEGIN; INSERT INTO pairs VALUES(1); INSERT INTO pairs VALUES(2); COMMIT").ok())
        ++commits;
  });
  BackupOptions o = options(100);
  o.pages_per_step = 1;  // a step per page: the writer's commits fall between steps
  StoreBackups backups(store_.get(), o);
  std::vector<std::string> copies;
  while (copies.size() < 8) {
    absl::StatusOr<BackupMade> made = backups.backup_now();
    ASSERT_TRUE(made.ok()) << made.status();
    copies.push_back(made->path);
  }
  stop = true;
  writer.join();
  EXPECT_GT(commits.load(), 0);
  int64_t last = -1;
  for (const std::string& c : copies) {
    EXPECT_EQ(query(c, "PRAGMA integrity_check"), "ok") << c;
    int64_t rows = 0;
    ASSERT_TRUE(absl::SimpleAtoi(query(c, "SELECT count(*) FROM pairs"), &rows)) << c;
    EXPECT_EQ(rows % 2, 0) << c << " holds half a commit";
    EXPECT_GE(rows, last) << "copies are taken in order";
    last = rows;
  }
}

TEST_F(StoreBackupTest, TheNewestAreKeptAndTheirNamesSortByTime) {
  StoreBackups backups(store_.get(), options(3));
  std::vector<std::string> made;
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<BackupMade> m = backups.backup_now();
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(m->removed.size(), i < 3 ? 0u : 1u) << i;
    made.push_back(m->path);
  }
  EXPECT_EQ(list_backups(options().dir), std::vector<std::string>(made.begin() + 2, made.end()));
  // Something else in the folder is left alone, and is not counted.
  std::ofstream(options().dir + "/notes.txt") << "not a copy\n";
  ASSERT_TRUE(backups.backup_now().ok());
  EXPECT_TRUE(std::filesystem::exists(options().dir + "/notes.txt"));
  EXPECT_EQ(list_backups(options().dir).size(), 3u);
  // Each is a store a coordinator opens.
  for (const std::string& p : list_backups(options().dir)) {
    auto s = Store::open(p);
    ASSERT_TRUE(s.ok()) << p << ": " << s.status();
    EXPECT_EQ((*s)->schema_version(), Store::kSchemaVersion);
  }
}

TEST_F(StoreBackupTest, AFullDiskLeavesTheOlderCopiesAndNoHalfWrittenFile) {
  // A store of some size: a job of 960 units.
  hello("w1");
  submit(v1::VERIFY_MODE_OFF, 3, "0-959");
  StoreBackups backups(store_.get(), options(3));
  absl::StatusOr<BackupMade> first = backups.backup_now();
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_GT(first->bytes, 64 << 10);
  int observed_failures = 0;
  backups.set_observer([&](const absl::StatusOr<BackupMade>& m) { observed_failures += !m.ok(); });

  // A file-size limit below the store's size: writes past it fail as on a full disk.
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 32 << 10;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  absl::StatusOr<BackupMade> second = backups.backup_now();
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);

  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted) << second.status();
  EXPECT_TRUE(absl::StrContains(second.status().message(), "--backup-dir")) << second.status();
  EXPECT_EQ(observed_failures, 1);
  EXPECT_EQ(list_backups(options().dir), std::vector<std::string>{first->path});
  for (const auto& e : std::filesystem::directory_iterator(options().dir))
    EXPECT_FALSE(absl::StrContains(e.path().string(), ".tmp")) << e.path();
  // Space back: the next copy is made.
  EXPECT_TRUE(backups.backup_now().ok());
}

TEST_F(StoreBackupTest, OptionsAreCheckedNamingTheirFlags) {
  BackupOptions o = options();
  EXPECT_TRUE(validate_backup_options(o).ok());
  o.keep = 0;
  EXPECT_TRUE(absl::StrContains(validate_backup_options(o).message(), "--backup-keep"));
  o = options();
  o.every_ms = 59'000;
  EXPECT_TRUE(absl::StrContains(validate_backup_options(o).message(), "--backup-every"));
  o = options();
  o.dir = "";
  o.every_ms = 3'600'000;
  EXPECT_TRUE(absl::StrContains(validate_backup_options(o).message(), "needs --backup-dir"));
  o = options();
  o.dir = db_;  // a file
  EXPECT_TRUE(absl::StrContains(validate_backup_options(o).message(), "is not a folder"));
  // No folder at all: a request is refused, naming the flag.
  StoreBackups none(store_.get(), BackupOptions{"", 3, 0});
  absl::StatusOr<BackupMade> m = none.backup_now();
  EXPECT_EQ(m.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(m.status().message(), "--backup-dir"));
}

TEST_F(StoreBackupTest, TheScheduleCopiesEveryPeriodUntilStopped) {
  BackupOptions o = options(100);
  o.every_ms = 20;  // (the flag allows a minute at least; the schedule itself takes any period)
  StoreBackups backups(store_.get(), o);
  std::mutex mu;
  std::condition_variable cv;
  int made = 0;
  backups.set_observer([&](const absl::StatusOr<BackupMade>& m) {
    std::lock_guard lock(mu);
    made += m.ok();
    cv.notify_all();
  });
  BackupSchedule schedule(&backups);
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return made >= 3; }));
  }
  schedule.stop();
  const size_t after_stop = list_backups(o.dir).size();
  EXPECT_GE(after_stop, 3u);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // (no copy may follow the stop)
  EXPECT_EQ(list_backups(o.dir).size(), after_stop);
}

TEST(StoreBackupAuth, OnlyTheAdminRoleMayAskForACopy) {
  const std::string method = "/c960.v1.AdminService/BackupStore";
  EXPECT_TRUE(role_may_call(Role::kAdmin, method));
  for (Role r : {Role::kSubmit, Role::kRead, Role::kWorker, Role::kEnroll}) EXPECT_FALSE(role_may_call(r, method));
}

}  // namespace
}  // namespace c960::cluster
