// Child processes for integration tests: started with fork/exec, output to a log file, and
// killed (SIGKILL) and reaped by the destructor, so no test leaves a process behind, also when
// an assertion fails halfway.
#pragma once

#include <chrono>
#include <csignal>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace c960::testing {

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

}  // namespace c960::testing
