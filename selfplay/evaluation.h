// Evaluations of start positions: each position searched by each engine (the built-in one or a
// UCI engine) at a fixed depth or node count, on one thread, with its hash cleared before every
// position. Under those conditions a deterministic engine's evaluation is a pure function of
// (engine, position, limit), so that two workers' results compare equal (the cluster's
// "evaluation" job kind) and a local run (`c960 evaluate`) gives the same figures.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "selfplay/spec.h"
#include "selfplay/uci_engine.h"

namespace c960::selfplay {

// Every limit of an evaluation spec in one place (validate_evaluation, the command-line options
// and their help read these).
inline constexpr int kMaxEvalEngines = 8;
inline constexpr int kMaxEvalDepth = kMaxDepthLimit;
// The most plies of a principal variation kept (longer ones are cut here, by worker and local run alike).
inline constexpr int kMaxEvalPvPlies = 64;
// The largest depth an engine may report, and the largest mate distance (moves) and centipawn
// score an evaluation may hold.
inline constexpr int kMaxEvalReportedDepth = 1000;
inline constexpr int kMaxEvalMate = 1000;
inline constexpr int kMaxEvalScoreCp = kMateScoreCp;
// UCI options an engine is given at most, and an option's name or value at most (characters):
// cluster/config.h's kMaxUciOptions and kMaxUciOptionLength, which bound a job's.
inline constexpr int kMaxEvalOptions = 64;
inline constexpr int kMaxEvalOptionLength = 256;

struct EvalEngine {
  // "builtin", or a UCI engine: in a job the name a worker offers; in a local run its path.
  std::string name;
  // Where the UCI engine's binary is (a worker's own mapping); empty: `name` is the path.
  std::string path;
  std::vector<UciOptionValue> options;
  // Set where the options come from someone else (a job on a worker): checked against it.
  std::optional<OptionPolicy> policy;
  bool builtin() const { return name == kBuiltinEngine; }
  const std::string& binary() const { return path.empty() ? name : path; }
};

struct EvalSpec {
  std::vector<int> positions;  // start position numbers, in order
  std::vector<EvalEngine> engines;
  int depth = 0;  // exactly one of depth and nodes
  uint64_t nodes = 0;
  int hash_mb = kDefaultHashMb;                     // the built-in engine's
  int engine_timeout_ms = kDefaultEngineTimeoutMs;  // a UCI engine's search, at most
};

// INVALID_ARGUMENT naming the field (positions, engines, engines[K].options, depth, nodes,
// hash_mb, engine_timeout_ms) and the problem.
absl::Status validate_evaluation(const EvalSpec& spec);

// One engine's evaluation of a start position, from the side to move (White).
struct Evaluation {
  int sp = -1;
  int score_cp = 0;  // 0 when mate != 0
  int mate = 0;      // +N: mates in N moves; -N: is mated in N; 0: no mate
  std::string best_move;
  std::vector<std::string> pv;
  int depth = 0;
  uint64_t nodes = 0;
};

// Whether an evaluation can be right for its position: the best move legal there, the PV legal
// from it and beginning with the best move (at most kMaxEvalPvPlies), scores and depth within
// bounds. Returns it in canonical form (moves as king-takes-rook UCI). INVALID_ARGUMENT naming
// `field`'s member otherwise.
absl::StatusOr<Evaluation> check_evaluation(const Evaluation& e, const std::string& field);

// One engine, started once, evaluating positions one after another (one thread).
class Evaluator {
 public:
  virtual ~Evaluator() = default;
  // FAILED_PRECONDITION when the engine cannot start or its options are refused.
  static absl::StatusOr<std::unique_ptr<Evaluator>> make(const EvalEngine& engine, const EvalSpec& spec);
  // Clears the engine's hash, searches the position under the spec's limit and returns the
  // evaluation as the engine gives it (not yet checked). UNAVAILABLE / DEADLINE_EXCEEDED /
  // FAILED_PRECONDITION when a UCI engine crashed, hung or broke the protocol (it is started
  // again at the next call).
  virtual absl::StatusOr<Evaluation> evaluate(int sp) = 0;
  // The engine's own name (its UCI id name; "c960-builtin").
  virtual std::string id_name() const = 0;
};

// A row of an evaluation table: the position, the engine's name and the spec's limit.
struct EvalRow {
  int sp = -1;
  std::string fen;  // X-FEN
  std::string engine;
  int depth_limit = 0;
  uint64_t nodes_limit = 0;
  Evaluation eval;
};

// "sp,fen,engine,depth_limit,nodes_limit,depth,nodes,score_cp,mate,best_move,pv": one row per
// evaluation (score_cp empty when the engine found a mate; the PV's moves separated by spaces).
std::string evaluations_csv(const std::vector<EvalRow>& rows);
// {"kind":"evaluation","metadata":{...},"evaluations":[{...}]} with the same fields.
std::string evaluations_json(const std::vector<EvalRow>& rows,
                             const std::vector<std::pair<std::string, std::string>>& metadata);

// A local run: every position by every engine, on `threads` threads (each with its own engine
// processes); rows by position, then engine in the spec's order. The first failure stops it.
// `done` is called after each evaluation with the number done so far (from any thread, one
// at a time).
absl::StatusOr<std::vector<EvalRow>> run_evaluation(const EvalSpec& spec, int threads,
                                                    const std::function<void(size_t)>& done = {});

}  // namespace c960::selfplay
