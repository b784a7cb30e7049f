// The c960 subcommands. Each returns the process exit code: 0 success, 1 a check failed,
// 2 bad usage or bad input (with a message on stderr naming the problem).
#pragma once

#include <string>
#include <vector>

namespace c960::cli {

constexpr int kExitOk = 0;
constexpr int kExitCheckFailed = 1;
constexpr int kExitUsage = 2;

int cmd_startpos(const std::vector<std::string>& args);
int cmd_perft(const std::vector<std::string>& args);
int cmd_selfplay(const std::vector<std::string>& args);
// Cluster client commands (cmd_cluster.cpp).
int cmd_submit(const std::vector<std::string>& args);
int cmd_status(const std::vector<std::string>& args);
int cmd_watch(const std::vector<std::string>& args);
int cmd_results(const std::vector<std::string>& args);
int cmd_cancel(const std::vector<std::string>& args);

}  // namespace c960::cli
