// A scratch PostgreSQL server for tests: a cluster made with initdb in a temporary directory, run
// as an unprivileged user (the postgres account when the tests run as root), listening on a free
// loopback port and a socket in that directory only, stopped (pg_ctl stop -m immediate) and
// removed when the process's tests end, or when it fails to start, or (by a watcher process)
// when the test process is killed. One per test process, a
// fresh database per test; under ctest, the run's one server instead (pg_fixture.sh). PostgreSQL 15's binaries are
// looked for in /usr/lib/postgresql/15/bin (C960_PG_BIN overrides); without them the tests that need a server skip,
// naming why.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <netinet/in.h>
#include <sstream>
#include <string>
#include <sys/socket.h>

#include "absl/strings/str_cat.h"
#include "tests/test_util.h"

namespace c960::test {

class PgServer {
 public:
  // The process's server, started on first use; nullptr with `why` set when there is none (not
  // installed: skip; installed but it would not start: fail, with its log).
  static PgServer* shared(std::string* why, bool* installed) {
    static std::string failure;
    static bool found = false;
    static std::unique_ptr<PgServer> server = [] {
      const char* env = std::getenv("C960_PG_BIN");
      const std::string bin = env && *env ? env : "/usr/lib/postgresql/15/bin";
      // Under ctest, the run's one server (the fixture "pg": tests/cluster/pg_fixture.sh).
      const char* shared_dir = std::getenv("C960_PG_SERVER_DIR");
      int port = 0;
      if (shared_dir && *shared_dir) {
        std::ifstream in(std::string(shared_dir) + "/port");
        if (in >> port && port > 0) {
          found = true;
          auto s = std::unique_ptr<PgServer>(new PgServer(bin));
          s->dir_ = shared_dir;
          s->port_ = port;
          s->owned_ = false;
          return s;
        }
      }
      found = std::filesystem::exists(bin + "/initdb") && std::filesystem::exists(bin + "/pg_ctl");
      if (!found) {
        failure = absl::StrCat("PostgreSQL is not installed (no initdb and pg_ctl in ", bin,
                               "; deploy/install-deps.sh installs postgresql-15)");
        return std::unique_ptr<PgServer>();
      }
      auto s = std::unique_ptr<PgServer>(new PgServer(bin));
      if (!s->start(&failure)) return std::unique_ptr<PgServer>();
      return s;
    }();
    *why = failure;
    *installed = found;
    return server.get();
  }

  ~PgServer() {
    if (owned_) stop();
  }
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  // A new, empty database; its URL.
  std::string fresh_database(const std::string& prefix) {
    static std::atomic<int> n{0};
    const std::string name = absl::StrCat(prefix, "_", getpid(), "_", n++);
    if (!run(absl::StrCat(bin_, "/createdb -h ", dir_, " -p ", port_, " -U c960 -E UTF8 ", name))) return "";
    return url(name);
  }
  std::string url(const std::string& database) const {
    return absl::StrCat("postgresql://c960@127.0.0.1:", port_, "/", database, "?sslmode=disable");
  }
  // psql's output of SQL run in `database` (tests that look at the server directly).
  std::string psql(const std::string& database, const std::string& sql) {
    const std::string in = absl::StrCat(dir_, "/psql-", getpid(), ".sql"),
                      out = absl::StrCat(dir_, "/psql-", getpid(), ".out");
    std::ofstream(in) << sql;
    if (!run(absl::StrCat(bin_, "/psql -X -q -A -t -h ", dir_, " -p ", port_, " -U c960 -d ", database, " -f ", in,
                          " -o ", out)))
      return "(psql failed)";
    std::stringstream s;
    s << std::ifstream(out).rdbuf();
    return s.str();
  }
  int port() const { return port_; }

 private:
  explicit PgServer(std::string bin) : bin_(std::move(bin)) {}

  // A command as the server's user (the postgres account when root: PostgreSQL refuses root).
  bool run(const std::string& cmd) const {
    const std::string full = getuid() == 0 ? absl::StrCat("runuser -u postgres -- ", cmd) : cmd;
    return std::system(absl::StrCat(full, " >>", dir_, "/log 2>&1").c_str()) == 0;
  }

  bool start(std::string* why) {
    char tmpl[] = "/tmp/c960-pg-XXXXXX";
    if (!mkdtemp(tmpl)) {
      *why = "cannot make a temporary directory";
      return false;
    }
    dir_ = tmpl;
    if (getuid() == 0 && std::system(absl::StrCat("chown postgres: ", dir_).c_str()) != 0) {
      *why = "cannot give the temporary directory to the postgres user";
      return false;
    }
    if (!run(absl::StrCat(bin_, "/initdb -D ", dir_, "/data -U c960 --auth=trust -E UTF8 --no-locale --no-sync"))) {
      *why = failed("initdb");
      return false;
    }
    // The port is free when asked; another process may take it before the server does: try again.
    for (int attempt = 0; attempt < 3 && !started_; ++attempt) {
      port_ = c960::test::free_port();
      started_ = run(absl::StrCat(bin_, "/pg_ctl -D ", dir_, "/data -l ", dir_, "/server.log -w -t 60 -o \"-p ", port_,
                                  " -k ", dir_,
                                  " -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
                                  "-c full_page_writes=off\" start"));
    }
    if (!started_) {
      *why = failed("pg_ctl start");
      stop();
      return false;
    }
    watch_for_exit();
    return true;
  }

  // A process killed before its destructor runs (SIGKILL, SIGPIPE, a crash) would leave the
  // server running: a shell that waits on a pipe this process holds stops it and removes the
  // directory when the pipe closes, which it does when this process ends in any way.
  void watch_for_exit() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    const std::string stop_cmd = absl::StrCat(getuid() == 0 ? "runuser -u postgres -- " : "", bin_, "/pg_ctl -D ", dir_,
                                              "/data -m immediate -w stop; rm -rf ", dir_);
    const std::string script = absl::StrCat("cat >/dev/null; ", stop_cmd, " >/dev/null 2>&1");
    const pid_t pid = fork();
    if (pid == 0) {  // only exec after fork: the test process may have threads
      dup2(fds[0], 0);
      const int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      dup2(null, 2);
      setsid();  // not in the test's process group: a signal to it does not reach the watcher first
      execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[0]);
    if (pid > 0)
      watch_fd_ = fds[1];  // kept open until this process ends
    else
      close(fds[1]);
  }

  std::string failed(const char* what) const {
    std::stringstream s;
    s << std::ifstream(dir_ + "/log").rdbuf() << std::ifstream(dir_ + "/server.log").rdbuf();
    return absl::StrCat("the test PostgreSQL server did not start (", what, "): ", s.str());
  }

  void stop() {
    if (dir_.empty()) return;
    if (started_) run(absl::StrCat(bin_, "/pg_ctl -D ", dir_, "/data -m immediate -w stop"));
    started_ = false;
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    dir_.clear();
  }

  std::string bin_;
  std::string dir_;
  int port_ = 0;
  bool started_ = false;
  int watch_fd_ = -1;  // the pipe the watcher waits on (watch_for_exit)
  bool owned_ = true;  // started by this process (else the ctest fixture's: left running)
};

}  // namespace c960::test
