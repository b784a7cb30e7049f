// Helpers shared by the test binaries: reading test data and building positions.
#pragma once

#include <unistd.h>

#include <arpa/inet.h>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <sstream>
#include <string>
#include <sys/socket.h>
#include <vector>

#include "core/position.h"
#include "gtest/gtest.h"
#include "tests/test_paths.h"

namespace c960::test {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A private directory under the system temp dir, removed with the object.
class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "c960-test-XXXXXX").string();
    if (mkdtemp(tmpl.data())) path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path_)) out.push_back(e.path().filename().string());
    return out;
  }

 private:
  std::string path_;
};

inline std::string data_path(const std::string& name) { return std::string(c960::test::data_dir()) + "/" + name; }

inline std::string read_data(const std::string& name) {
  std::ifstream in(data_path(name), std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << data_path(name);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A position from a FEN that the test knows to be valid; fails the test otherwise.
inline Position pos_of(const std::string& fen) {
  absl::StatusOr<Position> p = Position::from_fen(fen);
  EXPECT_TRUE(p.ok()) << fen << ": " << p.status().message();
  return p.ok() ? *p : *Position::from_fen("4k3/8/8/8/8/8/8/4K3 w - - 0 1");
}

struct StartposRow {
  int sp;
  std::string backrank, fen;
  uint64_t perft[7];  // perft[d] for d in 1..6
};

// tests/data/chess960_startpos_perft.csv: sp_id,backrank,fen_shredder,d1..d6,source_line
inline std::vector<StartposRow> startpos_table() {
  std::vector<StartposRow> rows;
  std::istringstream in(read_data("chess960_startpos_perft.csv"));
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ls(line);
    for (std::string cell; std::getline(ls, cell, ',');) f.push_back(cell);
    if (f.size() < 9) continue;
    StartposRow r{std::stoi(f[0]), f[1], f[2], {}};
    for (int d = 1; d <= 6; ++d) r.perft[d] = std::stoull(f[2 + d]);
    rows.push_back(r);
  }
  return rows;
}

// A loopback port free now (bound and let go): for a process that must be told its port.
inline int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

}  // namespace c960::test
