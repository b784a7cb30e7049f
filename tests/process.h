// Child processes for tests, in one place: run a program to completion and capture its exit code
// and output (CLI tests), or start one in the background (daemons in cluster tests) that is
// killed (SIGKILL) and reaped by the destructor, so no test leaves a process behind, also when
// an assertion fails halfway.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <unistd.h>

#include <algorithm>
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

// A child process spoken to line by line on its stdin and stdout (a UCI engine); stderr stays the
// test's. Killed (SIGKILL) and reaped by the destructor, also when an assertion fails halfway.
class Conversation {
 public:
  explicit Conversation(const std::vector<std::string>& argv) {
    std::signal(SIGPIPE, SIG_IGN);  // a child that died must fail a send, not the test
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return;
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      dup2(in[0], STDIN_FILENO);
      dup2(out[1], STDOUT_FILENO);
      execv(args[0], args.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
  }
  ~Conversation() {
    close_input();
    if (from_ >= 0) close(from_);
    if (pid_ > 0 && !status_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  Conversation(const Conversation&) = delete;
  Conversation& operator=(const Conversation&) = delete;

  bool send(const std::string& line) {
    const std::string text = line + "\n";
    return to_ >= 0 && write(to_, text.data(), text.size()) == ssize_t(text.size());
  }
  void close_input() {
    if (to_ >= 0) close(to_);
    to_ = -1;
  }
  // The next line (without '\n') within `timeout`; nothing at the end of output or on timeout.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (const size_t nl = buffer_.find('\n'); nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0 || from_ < 0) return std::nullopt;
      pollfd p{from_, POLLIN, 0};
      if (poll(&p, 1, int(left.count())) <= 0) return std::nullopt;
      char buf[4096];
      const ssize_t n = read(from_, buf, sizeof buf);
      if (n <= 0) return std::nullopt;
      buffer_.append(buf, size_t(n));
    }
  }
  // Every line up to and including the first that starts with `prefix`; nothing if the output
  // ends or `timeout` passes first (the lines read are then in *seen, if given).
  std::optional<std::vector<std::string>> read_until(const std::string& prefix, std::chrono::milliseconds timeout,
                                                     std::vector<std::string>* seen = nullptr) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    std::vector<std::string> lines;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      std::optional<std::string> l = read_line(std::max(left, std::chrono::milliseconds(0)));
      if (!l) {
        if (seen) *seen = lines;
        return std::nullopt;
      }
      lines.push_back(*l);
      if (l->rfind(prefix, 0) == 0) return lines;
    }
  }
  // The exit code (128 + signal), or nothing if it still runs after `timeout`.
  std::optional<int> wait(std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (pid_ > 0 && !status_) {
      int st = 0;
      const pid_t r = waitpid(pid_, &st, WNOHANG);
      if (r == pid_) status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      if (r < 0) status_ = -1;
      if (status_ || std::chrono::steady_clock::now() >= end) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return status_;
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string buffer_;
  std::optional<int> status_;
};

}  // namespace c960::test
