#include "selfplay/uci_engine.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "selfplay/game.h"

extern char** environ;

namespace c960::selfplay {
namespace {

using Clock = std::chrono::steady_clock;

// A line longer than this is not UCI; refusing it bounds our memory.
constexpr size_t kMaxLine = 1 << 16;

template <typename T>
bool parse_number(absl::string_view s, T& out) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

std::vector<absl::string_view> words(absl::string_view line) {
  return absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exited with status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return absl::StrCat("killed by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  return "stopped";
}

}  // namespace

bool names_a_file(absl::string_view option_name) {
  const std::string lower = absl::AsciiStrToLower(option_name);
  for (absl::string_view word : {"file", "path", "dir", "log", "book", "eval", "syzygy", "nnue", "tablebase", "egtb"})
    if (absl::StrContains(lower, word)) return true;
  return false;
}

const OptionPolicy::Allowed* OptionPolicy::find(absl::string_view name) const {
  for (const Allowed& a : allowed)
    if (absl::EqualsIgnoreCase(a.name, name)) return &a;
  return nullptr;
}

std::string OptionPolicy::describe() const {
  if (allowed.empty()) return "none";
  return absl::StrJoin(allowed, ", ", [](std::string* out, const Allowed& a) {
    absl::StrAppend(out, a.name, a.bounded ? absl::StrCat(" (", a.min, "..", a.max, ")") : "");
  });
}

absl::Status OptionPolicy::check(const std::vector<UciOptionValue>& options) const {
  for (const UciOptionValue& o : options) {
    if (names_a_file(o.name))
      return absl::PermissionDeniedError(absl::StrCat("option '", o.name,
                                                      "': names a file or directory, which only the worker's "
                                                      "operator sets, never a job"));
    const Allowed* a = find(o.name);
    if (!a)
      return absl::PermissionDeniedError(
          absl::StrCat("option '", o.name, "': not one a job may set on this worker (it allows: ", describe(),
                       "; c960-worker --engine-option)"));
    if (!a->bounded) continue;
    long long v = 0;
    const char* end = o.value.data() + o.value.size();
    const auto [p, ec] = std::from_chars(o.value.data(), end, v);
    if (ec != std::errc() || p != end || v < a->min || v > a->max)
      return absl::PermissionDeniedError(absl::StrCat("option '", o.name, "': '", o.value.substr(0, 32),
                                                      "' is not a number in ", a->min, "..", a->max,
                                                      ", the range this worker allows"));
  }
  return absl::OkStatus();
}

absl::StatusOr<OptionPolicy::Allowed> parse_allowed_option(absl::string_view text) {
  OptionPolicy::Allowed a;
  absl::string_view name = text, range;
  if (const size_t eq = text.find('='); eq != absl::string_view::npos) {
    name = text.substr(0, eq);
    range = text.substr(eq + 1);
  }
  name = absl::StripAsciiWhitespace(name);
  if (name.empty() || name.size() > 64)
    return absl::InvalidArgumentError(
        absl::StrCat("'", text.substr(0, 80), "': the option's name must be 1..64 characters"));
  for (char c : name)
    if (!absl::ascii_isprint(static_cast<unsigned char>(c)))
      return absl::InvalidArgumentError(
          absl::StrCat("'", text.substr(0, 80), "': the option's name has a control byte"));
  a.name = std::string(name);
  if (names_a_file(a.name))
    return absl::InvalidArgumentError(absl::StrCat("'", a.name,
                                                   "': names a file or directory; set it on the engine itself, "
                                                   "never let a job choose it"));
  if (text.find('=') == absl::string_view::npos) return a;
  const size_t dots = range.find("..");
  long long lo = 0, hi = 0;
  auto number = [](absl::string_view s, long long* v) {
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
    return ec == std::errc() && p == s.data() + s.size() && !s.empty();
  };
  if (dots == absl::string_view::npos || !number(range.substr(0, dots), &lo) || !number(range.substr(dots + 2), &hi) ||
      lo > hi)
    return absl::InvalidArgumentError(
        absl::StrCat("'", text.substr(0, 80), "': give OPTION or OPTION=MIN..MAX with whole numbers MIN <= MAX"));
  a.bounded = true;
  a.min = lo;
  a.max = hi;
  return a;
}

absl::StatusOr<UciOptionValue> parse_option_assignment(absl::string_view text) {
  const size_t eq = text.find('=');
  if (eq == absl::string_view::npos)
    return absl::InvalidArgumentError(absl::StrCat("--option '", text, "': expected NAME=VALUE"));
  UciOptionValue o{std::string(absl::StripAsciiWhitespace(text.substr(0, eq))),
                   std::string(absl::StripAsciiWhitespace(text.substr(eq + 1)))};
  if (o.name.empty()) return absl::InvalidArgumentError(absl::StrCat("--option '", text, "': empty option name"));
  for (char c : o.name + o.value)
    if (c == '\n' || c == '\r' || c == '\0')
      return absl::InvalidArgumentError(absl::StrCat("--option '", o.name, "': control characters are not allowed"));
  if (absl::EqualsIgnoreCase(o.name, "UCI_Chess960"))
    return absl::InvalidArgumentError("--option UCI_Chess960: always on for Chess960 games, do not set it");
  return o;
}

absl::StatusOr<UciOptionDecl> parse_option_decl(absl::string_view line) {
  const std::vector<absl::string_view> w = words(line);
  if (w.size() < 5 || w[0] != "option" || w[1] != "name")
    return absl::FailedPreconditionError(absl::StrCat("not an option line: '", line, "'"));
  UciOptionDecl d;
  // Names may contain spaces: everything up to the "type" keyword.
  size_t i = 2;
  std::vector<absl::string_view> name;
  while (i < w.size() && w[i] != "type") name.push_back(w[i++]);
  if (name.empty() || i + 1 >= w.size())
    return absl::FailedPreconditionError(absl::StrCat("option line without name or type: '", line, "'"));
  d.name = absl::StrJoin(name, " ");
  d.type = std::string(w[i + 1]);
  for (i += 2; i < w.size(); ++i) {
    const absl::string_view key = w[i];
    // Values run to the next keyword (defaults and vars may contain spaces or be empty).
    std::vector<absl::string_view> value;
    while (i + 1 < w.size() && w[i + 1] != "default" && w[i + 1] != "min" && w[i + 1] != "max" && w[i + 1] != "var")
      value.push_back(w[++i]);
    const std::string v = absl::StrJoin(value, " ");
    if (key == "default")
      d.default_value = v;
    else if (key == "var")
      d.vars.push_back(v);
    else if (key == "min" || key == "max") {
      long long n;
      if (!parse_number(v, n))
        return absl::FailedPreconditionError(absl::StrCat("option ", d.name, ": bad ", key, " '", v, "'"));
      (key == "min" ? d.min : d.max) = n;
    }
  }
  return d;
}

absl::Status check_option_value(const UciOptionDecl& d, absl::string_view value) {
  const auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("option ", d.name, "='", value, "': ", why));
  };
  if (d.type == "spin") {
    long long n;
    if (!parse_number(value, n)) return bad("not an integer");
    if (n < d.min || n > d.max) return bad(absl::StrCat("out of range ", d.min, "..", d.max));
  } else if (d.type == "check") {
    if (value != "true" && value != "false") return bad("must be true or false");
  } else if (d.type == "combo") {
    for (const std::string& v : d.vars)
      if (absl::EqualsIgnoreCase(v, value)) return absl::OkStatus();
    return bad(absl::StrCat("must be one of ", absl::StrJoin(d.vars, ", ")));
  } else if (d.type == "button") {
    if (!value.empty()) return bad("a button takes no value");
  } else if (d.type != "string") {
    return bad(absl::StrCat("unknown option type '", d.type, "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<UciEngine>> UciEngine::start(const UciConfig& config) {
  if (config.path.empty()) return absl::InvalidArgumentError("engine path: empty");
  if (config.path.find('/') != std::string::npos && access(config.path.c_str(), X_OK) != 0)
    return absl::InvalidArgumentError(absl::StrCat("engine path '", config.path, "': ", strerror(errno)));
  if (config.init_timeout_ms <= 0 || config.move_margin_ms <= 0)
    return absl::InvalidArgumentError("engine timeouts: must be > 0");
  // Under a policy (a job's options on a worker), options by name before any process starts;
  // their declared types are checked once the engine has declared them, below.
  if (config.policy)
    if (absl::Status s = config.policy->check(config.options); !s.ok()) return s;

  // One socket serves as the engine's stdin and stdout. A socket rather than pipes: writing to
  // a dead engine then fails with EPIPE (MSG_NOSIGNAL) instead of raising SIGPIPE in our process.
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return absl::InternalError(absl::StrCat("socketpair: ", strerror(errno)));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  std::string path = config.path;
  char* argv[] = {path.data(), nullptr};
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, path.c_str(), &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(sv[1]);
  if (rc != 0) {
    close(sv[0]);
    return absl::InvalidArgumentError(absl::StrCat("engine '", config.path, "': cannot start: ", strerror(rc)));
  }

  std::unique_ptr<UciEngine> e(new UciEngine());
  e->config_ = config;
  e->pid_ = pid;
  e->fd_ = sv[0];

  if (absl::Status s = e->send("uci"); !s.ok()) return s;
  std::vector<std::string> lines;
  if (absl::StatusOr<std::string> l = e->wait_for("uciok", config.init_timeout_ms, &lines); !l.ok()) return l.status();
  std::vector<UciOptionDecl> decls;
  for (const std::string& line : lines) {
    if (absl::StartsWith(line, "id name ")) e->id_name_ = std::string(absl::StripAsciiWhitespace(line.substr(8)));
    if (absl::StartsWith(line, "option ")) {
      absl::StatusOr<UciOptionDecl> d = parse_option_decl(line);
      if (d.ok()) decls.push_back(*std::move(d));  // an odd declaration only matters if used
    }
  }
  if (e->id_name_.empty()) e->id_name_ = config.path;
  const auto find = [&](absl::string_view name) -> const UciOptionDecl* {
    for (const UciOptionDecl& d : decls)
      if (absl::EqualsIgnoreCase(d.name, name)) return &d;
    return nullptr;
  };
  if (!find("UCI_Chess960"))
    return absl::InvalidArgumentError(absl::StrCat("engine '", config.path, "' does not declare option UCI_Chess960"));
  // Every option is checked before the first setoption: a refused one never reaches the engine.
  for (const UciOptionValue& o : config.options) {
    const UciOptionDecl* d = find(o.name);
    if (!d)
      return absl::InvalidArgumentError(
          absl::StrCat("option ", o.name, ": engine '", e->id_name_, "' has no such option"));
    if (config.policy && (d->type == "string" || d->type == "button"))
      return absl::PermissionDeniedError(absl::StrCat("option '", o.name, "': a ", d->type,
                                                      " option (a file, a directory, an action) is set by the "
                                                      "worker's operator, never by a job"));
    if (absl::Status s = check_option_value(*d, o.value); !s.ok()) return s;
  }
  if (absl::Status s = e->send("setoption name UCI_Chess960 value true"); !s.ok()) return s;
  for (const UciOptionValue& o : config.options) {
    const std::string line = o.value.empty() && find(o.name)->type == "button"
                                 ? absl::StrCat("setoption name ", o.name)
                                 : absl::StrCat("setoption name ", o.name, " value ", o.value);
    if (absl::Status s = e->send(line); !s.ok()) return s;
  }
  if (absl::Status s = e->send("isready"); !s.ok()) return s;
  if (absl::StatusOr<std::string> l = e->wait_for("readyok", config.init_timeout_ms); !l.ok()) return l.status();
  return e;
}

UciEngine::~UciEngine() {
  if (pid_ > 0) {
    (void)send("quit");
    // A polite quit first: a well-behaved engine exits within milliseconds.
    for (int i = 0; i < 50 && pid_ > 0; ++i) {
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_)
        pid_ = -1;
      else
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  kill_and_reap();
}

void UciEngine::kill_and_reap() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {}
    if (exit_description_.empty()) exit_description_ = describe_wait_status(status);
    pid_ = -1;
  }
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
}

absl::Status UciEngine::fail_dead(absl::string_view doing) {
  // EOF: the engine is gone or going. Give it a moment to exit so that we can say how.
  for (int i = 0; i < 100 && pid_ > 0; ++i) {
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_description_ = describe_wait_status(status);
      pid_ = -1;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  kill_and_reap();
  return absl::UnavailableError(
      absl::StrCat("engine ", exit_description_.empty() ? "closed its output" : exit_description_, " while ", doing));
}

absl::Status UciEngine::send(absl::string_view line) {
  if (fd_ < 0) return absl::UnavailableError("engine is not running");
  const std::string data = absl::StrCat(line, "\n");
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail_dead(absl::StrCat("receiving '", line, "'"));
    done += size_t(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> UciEngine::read_line(int timeout_ms) {
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    const size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return line;
    }
    if (buffer_.size() > kMaxLine) {
      kill_and_reap();
      return absl::FailedPreconditionError("engine sent a line longer than 64 KiB");
    }
    if (fd_ < 0) return absl::UnavailableError("engine is not running");
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      kill_and_reap();
      return absl::DeadlineExceededError(absl::StrCat("engine did not answer within ", timeout_ms, " ms; killed"));
    }
    pollfd p{fd_, POLLIN, 0};
    const int r = poll(&p, 1, int(std::min<long long>(left, 1000)));
    if (r < 0 && errno != EINTR) return absl::InternalError(absl::StrCat("poll: ", strerror(errno)));
    if (r <= 0) continue;
    char chunk[4096];
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError("eof");
    buffer_.append(chunk, size_t(n));
  }
}

absl::StatusOr<std::string> UciEngine::wait_for(absl::string_view word, int timeout_ms,
                                                std::vector<std::string>* seen) {
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    const int left = int(
        std::max<long long>(1, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count()));
    absl::StatusOr<std::string> line = read_line(left);
    if (!line.ok()) {
      if (absl::IsUnavailable(line.status())) return fail_dead(absl::StrCat("we waited for '", word, "'"));
      if (absl::IsDeadlineExceeded(line.status()))
        return absl::DeadlineExceededError(
            absl::StrCat("engine sent no '", word, "' within ", timeout_ms, " ms; killed"));
      return line.status();
    }
    const std::vector<absl::string_view> w = words(*line);
    if (!w.empty() && w[0] == word) return line;
    if (seen) seen->push_back(*std::move(line));
  }
}

absl::Status UciEngine::new_game() {
  if (absl::Status s = send("ucinewgame"); !s.ok()) return s;
  if (absl::Status s = send("isready"); !s.ok()) return s;
  return wait_for("readyok", config_.init_timeout_ms).status();
}

absl::StatusOr<UciSearchReply> UciEngine::go(absl::string_view fen, const std::vector<std::string>& moves,
                                             const UciGoLimits& limits) {
  std::string pos = absl::StrCat("position fen ", fen);
  if (!moves.empty()) absl::StrAppend(&pos, " moves ", absl::StrJoin(moves, " "));
  if (absl::Status s = send(pos); !s.ok()) return s;
  std::string go = "go";
  if (limits.nodes) absl::StrAppend(&go, " nodes ", limits.nodes);
  if (limits.depth) absl::StrAppend(&go, " depth ", limits.depth);
  if (limits.movetime_ms) absl::StrAppend(&go, " movetime ", limits.movetime_ms);
  if (limits.timed)
    absl::StrAppend(&go, " wtime ", std::max(0LL, limits.wtime_ms), " btime ", std::max(0LL, limits.btime_ms), " winc ",
                    limits.winc_ms, " binc ", limits.binc_ms);
  if (go == "go") go = "go depth 1";  // never an infinite search
  if (absl::Status s = send(go); !s.ok()) return s;

  std::vector<std::string> info;
  const long long budget =
      limits.timed ? std::max(0LL, limits.white_to_move ? limits.wtime_ms : limits.btime_ms) : limits.movetime_ms;
  absl::StatusOr<std::string> best =
      wait_for("bestmove", int(std::min<long long>(budget, 1LL << 30)) + config_.move_margin_ms, &info);
  if (!best.ok()) return best.status();
  UciSearchReply reply;
  const std::vector<absl::string_view> w = words(*best);
  if (w.size() < 2) return absl::FailedPreconditionError(absl::StrCat("engine sent '", *best, "' without a move"));
  reply.bestmove = std::string(w[1]);
  // The last score of the search; bounds are fine for adjudication.
  for (const std::string& line : info) {
    const std::vector<absl::string_view> iw = words(line);
    if (iw.empty() || iw[0] != "info") continue;
    for (size_t i = 1; i + 2 < iw.size(); ++i) {
      if (iw[i] != "score") continue;
      int v;
      if (!parse_number(iw[i + 2], v) || v < -kMateScoreCp / 2 || v > kMateScoreCp / 2) continue;  // ignore nonsense
      if (iw[i + 1] == "cp")
        reply.score_cp = v;
      else if (iw[i + 1] == "mate")
        reply.score_cp = v > 0 ? kMateScoreCp - (2 * v - 1) : -kMateScoreCp - 2 * v;
    }
  }
  // The last exact score with what the same line says of depth, nodes and PV (evaluations).
  for (auto line = info.rbegin(); line != info.rend(); ++line) {
    const std::vector<absl::string_view> iw = words(*line);
    if (iw.empty() || iw[0] != "info") continue;
    if (std::find(iw.begin(), iw.end(), "score") == iw.end() ||
        std::find(iw.begin(), iw.end(), "lowerbound") != iw.end() ||
        std::find(iw.begin(), iw.end(), "upperbound") != iw.end())
      continue;
    for (size_t i = 1; i < iw.size(); ++i) {
      if (iw[i] == "pv") {
        for (size_t k = i + 1; k < iw.size(); ++k) reply.final_pv.emplace_back(iw[k]);
        break;
      }
      if (i + 1 >= iw.size()) break;
      int v;
      if (iw[i] == "depth" && parse_number(iw[i + 1], v) && v >= 0) reply.final_depth = v;
      if (iw[i] == "nodes") {
        unsigned long long n = 0;
        if (parse_number(iw[i + 1], n)) reply.final_nodes = n;
      }
      if (iw[i] == "score" && i + 2 < iw.size() && parse_number(iw[i + 2], v) && v >= -kMateScoreCp / 2 &&
          v <= kMateScoreCp / 2) {
        if (iw[i + 1] == "cp") reply.final_cp = v;
        if (iw[i + 1] == "mate") reply.final_mate = v;
      }
    }
    break;
  }
  return reply;
}

}  // namespace c960::selfplay
