// Differential test: divide of c960 against Debian's Stockfish (go perft, UCI_Chess960 on) on
// positions reached by random legal moves from random start positions, depth 3 to 5.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <sys/wait.h>

#include "core/movegen.h"
#include "core/notation.h"
#include "core/perft.h"
#include "core/prng.h"
#include "core/startpos.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace c960 {
namespace {

std::string stockfish_path() {
  if (const char* env = std::getenv("C960_STOCKFISH")) return env;
  for (const char* p : {"/usr/games/stockfish", "/usr/bin/stockfish"})
    if (access(p, X_OK) == 0) return p;
  return "";
}

// A UCI engine on two pipes; killed and reaped by the destructor.
class Engine {
 public:
  explicit Engine(const std::string& path) {
    int to_child[2], from_child[2];
    if (pipe(to_child) || pipe(from_child)) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(to_child[0], 0);
      dup2(from_child[1], 1);
      close(to_child[1]);
      close(from_child[0]);
      execl(path.c_str(), path.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    in_ = to_child[1];
    out_ = from_child[0];
  }
  ~Engine() {
    if (pid_ > 0) {
      send("quit");
      close(in_);
      close(out_);
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool ok() const { return pid_ > 0; }
  void send(const std::string& line) {
    const std::string s = line + "\n";
    if (write(in_, s.data(), s.size()) != ssize_t(s.size())) failed_ = true;
  }
  // The next line, or false after `timeout` without one.
  bool read_line(std::string& line, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (const size_t nl = buf_.find('\n'); nl != std::string::npos) {
        line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return true;
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{out_, POLLIN, 0};
      if (poll(&p, 1, int(left.count())) <= 0) return false;
      char chunk[4096];
      const ssize_t n = read(out_, chunk, sizeof chunk);
      if (n <= 0) return false;
      buf_.append(chunk, size_t(n));
    }
  }

 private:
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1;
  bool failed_ = false;
  std::string buf_;
};

TEST(StockfishDiff, DivideAgreesOnRandomPositions) {
  const std::string sf = stockfish_path();
  ASSERT_FALSE(sf.empty()) << "stockfish not found (deploy/install-deps.sh installs it; or set C960_STOCKFISH)";
  Engine engine(sf);
  ASSERT_TRUE(engine.ok());
  engine.send("uci");
  engine.send("setoption name UCI_Chess960 value true");
  engine.send("setoption name Threads value 1");
  engine.send("isready");
  std::string line;
  while (engine.read_line(line, std::chrono::seconds(30)) && line != "readyok") {}
  ASSERT_EQ(line, "readyok");

  const int kPositions = 300;
  Prng rng(960);
  int compared = 0;
  for (int i = 0; i < kPositions; ++i) {
    Position pos = test::pos_of(*startpos_fen(int(rng.below(960))));
    const int plies = 1 + int(rng.below(40));
    std::vector<StateInfo> states(plies);
    for (int k = 0; k < plies; ++k) {
      MoveList list;
      generate_legal(pos, list);
      if (!list.size()) break;
      pos.do_move(list.moves[rng.below(uint64_t(list.size()))], states[k]);
    }
    const Position root = pos;
    // Deep where the tree is narrow, so no position takes long.
    int depth = 3 + i % 3;
    while (depth > 3 && perft(root, 3) > 200000) --depth;

    std::map<std::string, uint64_t> ours;
    for (const DivideEntry& e : divide(root, depth)) ours[to_uci(e.move)] = uint64_t(e.nodes);

    engine.send("position fen " + root.fen(FenDialect::kShredder));
    engine.send("go perft " + std::to_string(depth));
    std::map<std::string, uint64_t> theirs;
    uint64_t total = 0;
    bool finished = false;
    while (engine.read_line(line, std::chrono::seconds(120))) {
      if (line.rfind("Nodes searched: ", 0) == 0) {
        total = std::stoull(line.substr(16));
        finished = true;
        break;
      }
      const size_t colon = line.find(": ");
      if (colon != std::string::npos && colon >= 4 && colon <= 5)
        theirs[line.substr(0, colon)] = std::stoull(line.substr(colon + 2));
    }
    ASSERT_TRUE(finished) << "stockfish gave no total for " << root.fen(FenDialect::kShredder);
    EXPECT_EQ(ours, theirs) << root.fen(FenDialect::kShredder) << " depth " << depth;
    EXPECT_EQ(perft(root, depth), total) << root.fen(FenDialect::kShredder) << " depth " << depth;
    ++compared;
  }
  EXPECT_EQ(compared, kPositions);
}

}  // namespace
}  // namespace c960
