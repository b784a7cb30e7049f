// A UCI engine in a child process: start, handshake with UCI_Chess960 on, options checked against
// what the engine declares, one search at a time, with every wait bounded. An engine that dies,
// hangs or talks nonsense is reported by status code, never by a crash of ours:
//   kUnavailable        the engine process died or closed its pipe (crash)
//   kDeadlineExceeded   no answer in time (hang); the process has been killed
//   kInvalidArgument    bad option name/value from the caller
//   kFailedPrecondition the engine broke the protocol (e.g. bestmove without a move)
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace c960::selfplay {

struct UciOptionValue {
  std::string name;
  std::string value;
};

// "Name=Value" (name may contain spaces, value may be empty); the error names the problem.
absl::StatusOr<UciOptionValue> parse_option_assignment(absl::string_view text);

// What a job may set on an engine, decided by whoever runs the engine (a worker's operator),
// never by the job: the options allowed by name (compared case-insensitively, as UCI does) and,
// for number (spin) options, the range allowed. Options the engine declares of type string or
// button are never allowed under a policy, whatever it lists: string options name files and
// directories (logs, networks, tablebases, books), which are the operator's.
struct OptionPolicy {
  struct Allowed {
    std::string name;
    bool bounded = false;  // a number within min..max only
    long long min = 0, max = 0;
  };
  std::vector<Allowed> allowed;
  const Allowed* find(absl::string_view name) const;
  // Options by name and value alone (before any engine is started): each one allowed, and a
  // bounded one a number within its range. PERMISSION_DENIED naming the option otherwise.
  absl::Status check(const std::vector<UciOptionValue>& options) const;
  // "Hash (1..256), Threads (1..1)": for messages.
  std::string describe() const;
};
// Whether an option's name says it names a file or directory (Debug Log File, EvalFile,
// SyzygyPath, BookFile, NNUE...): such an option is never a job's, under any policy, and the
// coordinator refuses a job that sets one.
bool names_a_file(absl::string_view option_name);
// "OPTION" or "OPTION=MIN..MAX" (what c960-worker --engine-option takes after "ENGINE:"); an
// option that names a file cannot be allowed.
absl::StatusOr<OptionPolicy::Allowed> parse_allowed_option(absl::string_view text);

struct UciConfig {
  std::string path;
  std::vector<UciOptionValue> options;
  // Set: `options` come from someone else (a job) and are checked against it, and string or
  // button options are refused, before anything is sent to the engine. Unset: any option the
  // engine declares (a local run: the user's own engine and options).
  std::optional<OptionPolicy> policy;
  int init_timeout_ms = 10000;  // uci/uciok and isready/readyok
  int move_margin_ms = 30000;   // a search may take its movetime plus this, or this without movetime
};

// An option as the engine declares it ("option name Hash type spin default 16 min 1 max 33554432").
struct UciOptionDecl {
  std::string name;
  std::string type;  // check, spin, combo, button, string
  std::string default_value;
  long long min = 0, max = 0;
  std::vector<std::string> vars;
};
// Parses one "option ..." line; error if it is not one.
absl::StatusOr<UciOptionDecl> parse_option_decl(absl::string_view line);
// Checks a value against the declaration; the error names option and problem.
absl::Status check_option_value(const UciOptionDecl& decl, absl::string_view value);

struct UciGoLimits {
  unsigned long long nodes = 0;
  int depth = 0;
  int movetime_ms = 0;
  // A time control: "go wtime btime winc binc" (the clocks in ms); the engine's answer is awaited
  // for its own clock's remaining time (plus the move margin).
  bool timed = false;
  long long wtime_ms = 0, btime_ms = 0, winc_ms = 0, binc_ms = 0;
  bool white_to_move = true;
};

struct UciSearchReply {
  std::string bestmove;         // as sent, e.g. "e1h1"
  std::optional<int> score_cp;  // the last "info ... score" seen; mates as +-(100000 - plies)
  // The search's last "info" line with an exact score (not a lowerbound or upperbound), as the
  // engine sent it: its depth, nodes, score (cp, or mate in moves) and principal variation.
  // Unset fields: the line did not have them (no such line: final_cp and final_mate unset).
  int final_depth = 0;
  unsigned long long final_nodes = 0;
  std::optional<int> final_cp, final_mate;
  std::vector<std::string> final_pv;
};

class UciEngine {
 public:
  // Starts the process and completes the handshake (uci, options, UCI_Chess960, isready).
  static absl::StatusOr<std::unique_ptr<UciEngine>> start(const UciConfig& config);
  ~UciEngine();  // asks it to quit, then kills it if it lingers, and reaps it
  UciEngine(const UciEngine&) = delete;
  UciEngine& operator=(const UciEngine&) = delete;

  const std::string& id_name() const { return id_name_; }
  pid_t pid() const { return pid_; }
  bool alive() const { return pid_ > 0; }

  absl::Status new_game();  // ucinewgame, isready
  // position fen FEN moves ...; go with the limits. FEN should be Shredder-FEN and moves in
  // king-takes-rook UCI form.
  absl::StatusOr<UciSearchReply> go(absl::string_view fen, const std::vector<std::string>& moves,
                                    const UciGoLimits& limits);

 private:
  UciEngine() = default;
  absl::Status send(absl::string_view line);
  // The next line within deadline_ms; kUnavailable at EOF, kDeadlineExceeded on timeout.
  absl::StatusOr<std::string> read_line(int timeout_ms);
  // Reads until a line whose first word is `word`; returns that line.
  absl::StatusOr<std::string> wait_for(absl::string_view word, int timeout_ms,
                                       std::vector<std::string>* seen = nullptr);
  absl::Status fail_dead(absl::string_view doing);  // turns EOF into a message with the exit status
  void kill_and_reap();

  UciConfig config_;
  std::string id_name_;
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string buffer_;
  std::string exit_description_;
};

}  // namespace c960::selfplay
