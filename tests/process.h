// Child processes for tests, in one place: run a program to completion and capture its exit code
// and output (CLI tests), or start one in the background (daemons in cluster tests) that is
// killed (SIGKILL) and reaped by the destructor, so no test leaves a process behind, also when
// an assertion fails halfway.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <optional>
#include <string>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <vector>

extern char** environ;

namespace c960::test {

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::string s;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    char buf[65536];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
    std::fclose(f);
  }
  return s;
}

// Runs argv to completion. stdout and stderr go to temporary files, so a chatty child never
// blocks on a full pipe.
inline RunResult run(const std::vector<std::string>& argv, const std::string& stdin_text = "") {
  char out_tmpl[] = "/tmp/c960_out_XXXXXX", err_tmpl[] = "/tmp/c960_err_XXXXXX", in_tmpl[] = "/tmp/c960_in_XXXXXX";
  const int out_fd = mkstemp(out_tmpl), err_fd = mkstemp(err_tmpl), in_fd = mkstemp(in_tmpl);
  RunResult r;
  if (write(in_fd, stdin_text.data(), stdin_text.size()) == ssize_t(stdin_text.size())) {
    lseek(in_fd, 0, SEEK_SET);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = -1;
    if (posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ) == 0) {
      int status = 0;
      waitpid(pid, &status, 0);
      r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    posix_spawn_file_actions_destroy(&fa);
  }
  close(out_fd);
  close(err_fd);
  close(in_fd);
  r.out = slurp(out_tmpl);
  r.err = slurp(err_tmpl);
  unlink(out_tmpl);
  unlink(err_tmpl);
  unlink(in_tmpl);
  return r;
}

// A shell command line, run to completion; `output` holds stdout and stderr together.
struct CommandResult {
  int exit_code = -1;
  std::string output;
};
inline CommandResult run_command(const std::string& cmd) {
  const RunResult r = run({"/bin/sh", "-c", cmd + " 2>&1"});
  return {r.exit_code, r.out};
}

// A child process in the background, with its output in a log file.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const std::string& log_path) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      // Die with the test process even if it is killed itself.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
      }
      execv(args[0], args.data());
      _exit(127);
    }
  }
  ~Process() {
    if (running()) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !status_; }
  void signal(int sig) {
    if (running()) kill(pid_, sig);
  }
  // The exit code (128 + signal when killed), or nothing if it is still running after timeout.
  std::optional<int> wait(std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (running()) {
      int st = 0;
      const pid_t r = waitpid(pid_, &st, WNOHANG);
      if (r == pid_) {
        status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        break;
      }
      if (r < 0) {
        status_ = -1;
        break;
      }
      if (std::chrono::steady_clock::now() >= end) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return status_;
  }
  void kill_now() {
    signal(SIGKILL);
    wait(std::chrono::seconds(10));
  }

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

}  // namespace c960::test
