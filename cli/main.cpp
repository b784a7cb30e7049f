// c960: the command-line tool for Chess960 positions, perft, self-play and the cluster. The
// commands live in the c960_cli library (cli/commands.h); this binds them to the process.
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"

int main(int argc, char** argv) {
  const c960::cli::Io io{std::cout, std::cerr, isatty(STDOUT_FILENO) != 0, isatty(STDERR_FILENO) != 0};
  const int code = c960::cli::run(std::vector<std::string>(argv + 1, argv + argc), io);
  std::cout.flush();
  return code;
}
