// Runs a program to completion and captures its exit code, stdout and stderr (for CLI tests).
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
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

// stdout and stderr go to temporary files, so a chatty child never blocks on a full pipe.
inline RunResult run(const std::vector<std::string>& argv, const std::string& stdin_text = "") {
  char out_tmpl[] = "/tmp/c960_out_XXXXXX", err_tmpl[] = "/tmp/c960_err_XXXXXX", in_tmpl[] = "/tmp/c960_in_XXXXXX";
  const int out_fd = mkstemp(out_tmpl), err_fd = mkstemp(err_tmpl), in_fd = mkstemp(in_tmpl);
  if (write(in_fd, stdin_text.data(), stdin_text.size()) != ssize_t(stdin_text.size())) return {};
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
  RunResult r;
  if (posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ) == 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  posix_spawn_file_actions_destroy(&fa);
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

}  // namespace c960::test
