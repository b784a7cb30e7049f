#include "selfplay/evaluation.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/engine/search.h"
#include "core/notation.h"
#include "core/position.h"
#include "core/startpos.h"

namespace c960::selfplay {
namespace {

absl::Status bad(const std::string& field, const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", problem));
}

class BuiltinEvaluator : public Evaluator {
 public:
  BuiltinEvaluator(int hash_mb, int depth, uint64_t nodes) : engine_(size_t(hash_mb)), depth_(depth), nodes_(nodes) {}
  std::string id_name() const override { return "c960-builtin"; }
  absl::StatusOr<Evaluation> evaluate(int sp) override {
    absl::StatusOr<std::string> fen = startpos_fen(sp);
    if (!fen.ok()) return fen.status();
    absl::StatusOr<Position> pos = Position::from_fen(*fen);
    if (!pos.ok()) return pos.status();
    engine_.new_game();  // a cleared hash, killers and history: the position alone decides
    engine::Limits limits;
    limits.depth = depth_;
    limits.nodes = nodes_;
    const engine::SearchResult r = engine_.search(*pos, limits);
    Evaluation e;
    e.sp = sp;
    if (engine::is_mate_score(r.score)) {
      const int plies = engine::VALUE_MATE - std::abs(r.score);
      e.mate = (r.score > 0 ? 1 : -1) * ((plies + 1) / 2);
    } else {
      e.score_cp = r.score;
    }
    e.best_move = r.best ? to_uci(r.best) : "";
    for (Move m : r.pv) e.pv.push_back(to_uci(m));
    e.depth = r.depth;
    e.nodes = r.nodes;
    return e;
  }

 private:
  engine::Engine engine_;
  int depth_;
  uint64_t nodes_;
};

class UciEvaluator : public Evaluator {
 public:
  UciEvaluator(UciConfig config, int depth, uint64_t nodes)
      : config_(std::move(config)), depth_(depth), nodes_(nodes) {}
  std::string id_name() const override { return id_name_; }
  absl::Status start() {
    absl::StatusOr<std::unique_ptr<UciEngine>> e = UciEngine::start(config_);
    if (!e.ok()) return e.status();
    engine_ = *std::move(e);
    id_name_ = engine_->id_name();
    return absl::OkStatus();
  }
  absl::StatusOr<Evaluation> evaluate(int sp) override {
    if (!engine_ || !engine_->alive())
      if (absl::Status s = start(); !s.ok()) return s;
    absl::StatusOr<std::string> fen = startpos_fen(sp, true);
    if (!fen.ok()) return fen.status();
    // ucinewgame clears the engine's hash (Stockfish: its transposition table and histories).
    if (absl::Status s = engine_->new_game(); !s.ok()) {
      engine_.reset();
      return s;
    }
    UciGoLimits limits;
    limits.depth = depth_;
    limits.nodes = nodes_;
    absl::StatusOr<UciSearchReply> r = engine_->go(*fen, {}, limits);
    if (!r.ok()) {
      engine_.reset();
      return r.status();
    }
    Evaluation e;
    e.sp = sp;
    e.best_move = r->bestmove;
    if (r->final_mate && *r->final_mate != 0)
      e.mate = *r->final_mate;
    else if (r->final_cp)
      e.score_cp = *r->final_cp;
    else
      return absl::FailedPreconditionError(absl::StrCat("engine sent no exact score for start position ", sp));
    e.pv = r->final_pv;
    if (e.pv.size() > size_t(kMaxEvalPvPlies)) e.pv.resize(size_t(kMaxEvalPvPlies));
    e.depth = r->final_depth;
    e.nodes = r->final_nodes;
    return e;
  }

 private:
  UciConfig config_;
  int depth_;
  uint64_t nodes_;
  std::unique_ptr<UciEngine> engine_;
  std::string id_name_;
};

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += absl::StrCat("\\u00", absl::Hex(c, absl::kZeroPad2));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

absl::Status validate_evaluation(const EvalSpec& spec) {
  if (spec.positions.empty()) return bad("positions", "none given");
  if (spec.positions.size() > size_t(kStartPositions))
    return bad("positions", absl::StrCat(spec.positions.size(), " is more than the ", kStartPositions, " there are"));
  std::set<int> seen;
  for (int sp : spec.positions) {
    if (sp < 0 || sp >= kStartPositions) return bad("positions", absl::StrCat(sp, " is not in 0..959"));
    if (!seen.insert(sp).second) return bad("positions", absl::StrCat(sp, " is given twice"));
  }
  if (spec.engines.empty()) return bad("engines", "none given");
  if (spec.engines.size() > size_t(kMaxEvalEngines))
    return bad("engines", absl::StrCat(spec.engines.size(), " is more than ", kMaxEvalEngines));
  std::set<std::string> names;
  for (size_t k = 0; k < spec.engines.size(); ++k) {
    const EvalEngine& e = spec.engines[k];
    const std::string field = absl::StrCat("engines[", k, "]");
    if (e.name.empty()) return bad(field, "no engine named");
    if (!names.insert(e.name).second) return bad(field, absl::StrCat("'", e.name, "' is given twice"));
    if (e.builtin() && !e.options.empty())
      return bad(field + ".options", "the built-in engine takes no UCI options (its hash is hash_mb)");
    if (e.options.size() > size_t(kMaxEvalOptions))
      return bad(field + ".options", absl::StrCat(e.options.size(), " options is more than ", kMaxEvalOptions));
    std::set<std::string> option_names;
    for (const UciOptionValue& o : e.options) {
      const std::string name = absl::AsciiStrToLower(o.name);
      if (o.name.empty() || o.name.size() > size_t(kMaxEvalOptionLength) ||
          o.value.size() > size_t(kMaxEvalOptionLength))
        return bad(field + ".options", absl::StrCat("'", o.name.substr(0, 64), "': a name of 1..", kMaxEvalOptionLength,
                                                    " characters and a value of at most ", kMaxEvalOptionLength));
      if (!option_names.insert(name).second)
        return bad(field + ".options", absl::StrCat("'", o.name, "' is given twice"));
      // One thread and one line: what makes the search repeat exactly.
      if ((name == "threads" || name == "multipv") && o.value != "1")
        return bad(field + ".options",
                   absl::StrCat(o.name, "=", o.value.substr(0, 64),
                                ": an evaluation searches with one thread and one principal variation (1), so that "
                                "it repeats exactly"));
    }
  }
  if ((spec.depth > 0) == (spec.nodes > 0)) return bad("depth", "give exactly one of depth and nodes");
  if (spec.depth < 0 || spec.depth > kMaxEvalDepth)
    return bad("depth", absl::StrCat(spec.depth, " is not in 1..", kMaxEvalDepth));
  if (spec.nodes > kMaxNodesLimit) return bad("nodes", absl::StrCat(spec.nodes, " is not in 1..", kMaxNodesLimit));
  if (spec.hash_mb < 1 || spec.hash_mb > kMaxHashMb)
    return bad("hash_mb", absl::StrCat(spec.hash_mb, " is not in 1..", kMaxHashMb));
  if (spec.engine_timeout_ms < kMinEngineTimeoutMs || spec.engine_timeout_ms > kMaxEngineTimeoutMs)
    return bad("engine_timeout_ms",
               absl::StrCat(spec.engine_timeout_ms, " is not in ", kMinEngineTimeoutMs, "..", kMaxEngineTimeoutMs));
  return absl::OkStatus();
}

absl::StatusOr<Evaluation> check_evaluation(const Evaluation& e, const std::string& field) {
  absl::StatusOr<std::string> fen = startpos_fen(e.sp);
  if (!fen.ok()) return bad(field + ".start_position", absl::StrCat(e.sp, " is not in 0..959"));
  absl::StatusOr<Position> pos = Position::from_fen(*fen);
  if (!pos.ok()) return absl::InternalError(std::string(pos.status().message()));
  Evaluation out = e;
  if (e.mate != 0 && e.score_cp != 0) return bad(field + ".score_cp", "set together with mate");
  if (e.mate < -kMaxEvalMate || e.mate > kMaxEvalMate)
    return bad(field + ".mate", absl::StrCat(e.mate, " is not in -", kMaxEvalMate, "..", kMaxEvalMate));
  if (e.score_cp < -kMaxEvalScoreCp || e.score_cp > kMaxEvalScoreCp)
    return bad(field + ".score_cp", absl::StrCat(e.score_cp, " is not in -", kMaxEvalScoreCp, "..", kMaxEvalScoreCp));
  if (e.depth < 0 || e.depth > kMaxEvalReportedDepth)
    return bad(field + ".depth", absl::StrCat(e.depth, " is not in 0..", kMaxEvalReportedDepth));
  // Every start position has legal moves: a best move is due.
  absl::StatusOr<Move> best =
      e.best_move.size() <= 5 ? parse_uci(*pos, e.best_move) : absl::InvalidArgumentError("too long");
  if (!best.ok())
    return bad(field + ".best_move",
               absl::StrCat("'", e.best_move.substr(0, 8), "' is not a legal move in start position ", e.sp));
  out.best_move = to_uci(*best);
  if (e.pv.size() > size_t(kMaxEvalPvPlies))
    return bad(field + ".pv", absl::StrCat(e.pv.size(), " plies is more than ", kMaxEvalPvPlies));
  out.pv.clear();
  std::vector<StateInfo> states(e.pv.size());
  std::vector<Move> played;
  absl::Status status = absl::OkStatus();
  for (size_t i = 0; i < e.pv.size(); ++i) {
    absl::StatusOr<Move> m = e.pv[i].size() <= 5 ? parse_uci(*pos, e.pv[i]) : absl::InvalidArgumentError("too long");
    if (!m.ok()) {
      status = bad(field + ".pv", absl::StrCat("ply ", i + 1, " '", e.pv[i].substr(0, 8), "' is not legal there"));
      break;
    }
    out.pv.push_back(to_uci(*m));
    pos->do_move(*m, states[i]);
    played.push_back(*m);
  }
  for (auto m = played.rbegin(); m != played.rend(); ++m) pos->undo_move(*m);
  if (!status.ok()) return status;
  if (!out.pv.empty() && out.pv[0] != out.best_move)
    return bad(field + ".pv", absl::StrCat("begins with ", out.pv[0], ", not the best move ", out.best_move));
  return out;
}

absl::StatusOr<std::unique_ptr<Evaluator>> Evaluator::make(const EvalEngine& engine, const EvalSpec& spec) {
  if (engine.builtin()) return std::unique_ptr<Evaluator>(new BuiltinEvaluator(spec.hash_mb, spec.depth, spec.nodes));
  UciConfig config;
  config.path = engine.binary();
  config.options = engine.options;
  config.policy = engine.policy;
  config.move_margin_ms = spec.engine_timeout_ms;
  auto e = std::make_unique<UciEvaluator>(std::move(config), spec.depth, spec.nodes);
  if (absl::Status s = e->start(); !s.ok())
    return absl::FailedPreconditionError(absl::StartsWith(s.message(), "engine '")
                                             ? std::string(s.message())
                                             : absl::StrCat("engine '", engine.name, "': ", s.message()));
  return std::unique_ptr<Evaluator>(std::move(e));
}

std::string evaluations_csv(const std::vector<EvalRow>& rows) {
  std::string out = "sp,fen,engine,depth_limit,nodes_limit,depth,nodes,score_cp,mate,best_move,pv\n";
  for (const EvalRow& r : rows)
    absl::StrAppend(&out, r.sp, ",", csv_field(r.fen), ",", csv_field(r.engine), ",", r.depth_limit, ",", r.nodes_limit,
                    ",", r.eval.depth, ",", r.eval.nodes, ",", r.eval.mate != 0 ? "" : absl::StrCat(r.eval.score_cp),
                    ",", r.eval.mate, ",", r.eval.best_move, ",", absl::StrJoin(r.eval.pv, " "), "\n");
  return out;
}

std::string evaluations_json(const std::vector<EvalRow>& rows,
                             const std::vector<std::pair<std::string, std::string>>& metadata) {
  std::string out = "{\"kind\":\"evaluation\",\"metadata\":{";
  for (size_t i = 0; i < metadata.size(); ++i)
    absl::StrAppend(&out, i ? "," : "", json_string(metadata[i].first), ":", json_string(metadata[i].second));
  out += "},\"evaluations\":[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const EvalRow& r = rows[i];
    absl::StrAppend(&out, i ? "," : "", "\n{\"sp\":", r.sp, ",\"fen\":", json_string(r.fen),
                    ",\"engine\":", json_string(r.engine), ",\"depth_limit\":", r.depth_limit,
                    ",\"nodes_limit\":", r.nodes_limit, ",\"depth\":", r.eval.depth, ",\"nodes\":", r.eval.nodes,
                    ",\"score_cp\":", r.eval.mate != 0 ? "null" : absl::StrCat(r.eval.score_cp),
                    ",\"mate\":", r.eval.mate, ",\"best_move\":", json_string(r.eval.best_move), ",\"pv\":[");
    for (size_t k = 0; k < r.eval.pv.size(); ++k) absl::StrAppend(&out, k ? "," : "", json_string(r.eval.pv[k]));
    out += "]}";
  }
  return out + "\n]}\n";
}

absl::StatusOr<std::vector<EvalRow>> run_evaluation(const EvalSpec& spec, int threads,
                                                    const std::function<void(size_t)>& done) {
  if (absl::Status s = validate_evaluation(spec); !s.ok()) return s;
  const size_t engines = spec.engines.size(), total = spec.positions.size() * engines;
  std::vector<EvalRow> rows(total);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  absl::Status first_error = absl::OkStatus();
  size_t finished = 0;
  // Task t: position t / engines by engine t % engines, so that the rows come out in order.
  const auto work = [&] {
    std::vector<std::unique_ptr<Evaluator>> mine(engines);
    for (size_t t = next++; t < total && !failed; t = next++) {
      const size_t k = t % engines;
      const int sp = spec.positions[t / engines];
      absl::StatusOr<Evaluation> ev = absl::UnknownError("");
      if (!mine[k]) {
        absl::StatusOr<std::unique_ptr<Evaluator>> e = Evaluator::make(spec.engines[k], spec);  // names its engine
        if (e.ok())
          mine[k] = *std::move(e);
        else
          ev = e.status();
      }
      if (mine[k]) {
        const std::string where = absl::StrCat("engine '", spec.engines[k].name, "', start position ", sp);
        ev = mine[k]->evaluate(sp);
        if (ev.ok())
          ev = check_evaluation(*ev, where);
        else
          ev = absl::Status(ev.status().code(), absl::StrCat(where, ": ", ev.status().message()));
      }
      std::lock_guard<std::mutex> lock(mu);
      if (!ev.ok()) {
        if (!failed.exchange(true)) first_error = ev.status();
        return;
      }
      EvalRow& r = rows[t];
      r.sp = sp;
      r.fen = startpos_fen(sp).value_or("");
      r.engine = spec.engines[k].name;
      r.depth_limit = spec.depth;
      r.nodes_limit = spec.nodes;
      r.eval = *std::move(ev);
      if (done) done(++finished);
    }
  };
  std::vector<std::thread> pool;
  const int n = std::max(1, std::min<int>(threads, int(total)));
  pool.reserve(size_t(n));
  for (int i = 0; i < n; ++i) pool.emplace_back(work);
  for (std::thread& t : pool) t.join();
  if (failed) return first_error;
  return rows;
}

}  // namespace c960::selfplay
