// c960: the command-line tool for Chess960 positions, perft, self-play and the cluster. It links
// only the core and the engine, so that it starts in a few milliseconds (a perftree session or a
// script runs it once per position): the local commands (local_command in cli/commands.h) run in
// this process; for the others it executes c960-cluster (cli/cluster_main.cpp) with the same
// arguments, as git runs git-<command>. The new program replaces this process: its exit code,
// signals and standard streams are the caller's, as if c960 ran the command itself.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace {

char** g_argv = nullptr;

// Where c960-cluster is looked for, in this order: beside this binary (the build tree), then
// at the installed layout's place relative to it (a package unpacked or installed under
// another prefix), then where the build was configured to install it.
std::vector<std::string> cluster_binary_candidates() {
  std::vector<std::string> out;
  std::string self(4096, '\0');
  const ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (n > 0) {
    self.resize(size_t(n));
    const std::string dir = self.substr(0, self.rfind('/') + 1);
    out.push_back(dir + "c960-cluster");
    out.push_back(dir + C960_CLUSTER_FROM_BINDIR "/c960-cluster");
  }
  out.emplace_back(C960_CLUSTER_INSTALLED);
  return out;
}

// Every command that is not local: execute c960-cluster with this process's own arguments.
// Returns only when no candidate could be executed.
int exec_cluster(const std::vector<std::string>&, const c960::cli::Io& io) {
  io.out.flush();
  io.err.flush();
  std::string looked;
  for (const std::string& path : cluster_binary_candidates()) {
    execv(path.c_str(), g_argv);
    const int error = errno;
    if (error != ENOENT && error != ENOTDIR) {
      io.err << "c960 " << g_argv[1] << ": cannot execute " << path << ": " << std::strerror(error) << "\n";
      return c960::cli::kExitCannotExecute;
    }
    looked += looked.empty() ? path : ", " + path;
  }
  io.err << "c960 " << g_argv[1] << ": this command is in c960-cluster, which is not installed (looked for " << looked
         << ")\n";
  return c960::cli::kExitNotFound;
}

c960::cli::CommandFn find_command(std::string_view name) {
  if (const c960::cli::CommandFn local = c960::cli::local_command(name)) return local;
  return exec_cluster;
}

}  // namespace

int main(int argc, char** argv) {
  g_argv = argv;
  const c960::cli::Io io{std::cout, std::cerr, isatty(STDOUT_FILENO) != 0, isatty(STDERR_FILENO) != 0};
  const int code = c960::cli::run_with(std::vector<std::string>(argv + 1, argv + argc), io, find_command);
  std::cout.flush();
  return code;
}
