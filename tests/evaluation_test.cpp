// The evaluation kind's parts without sockets: spec validation (errors name the field), unit
// planning, result checking, the built-in engine's determinism, Stockfish's evaluations read from
// its UCI output (when installed), and the report's statistics on known inputs.
#include "report/evaluation.h"

#include <cmath>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "cluster/evaluation_proto.h"
#include "coordinator/evaluation_kind.h"
#include "core/prng.h"
#include "selfplay/evaluation.h"
#include "tests/selfplay_test_util.h"

namespace c960 {
namespace {

using selfplay::EvalSpec;

EvalSpec builtin_spec(int depth = 4) {
  EvalSpec s;
  s.positions = {0, 518};
  s.engines.push_back({"builtin", "", {}, std::nullopt});
  s.depth = depth;
  return s;
}

void expect_error(const absl::Status& s, const std::string& field) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(absl::StartsWith(s.message(), field)) << s.message() << " should begin with " << field;
}

TEST(EvaluationSpec, ErrorsNameTheField) {
  EXPECT_TRUE(selfplay::validate_evaluation(builtin_spec()).ok());
  EvalSpec s = builtin_spec();
  s.depth = 0;
  expect_error(selfplay::validate_evaluation(s), "depth");  // neither limit
  s.nodes = 1000;
  EXPECT_TRUE(selfplay::validate_evaluation(s).ok());
  s.depth = 3;
  expect_error(selfplay::validate_evaluation(s), "depth");  // both
  s = builtin_spec(selfplay::kMaxEvalDepth + 1);
  expect_error(selfplay::validate_evaluation(s), "depth");
  s = builtin_spec();
  s.nodes = 0;
  s.positions = {960};
  expect_error(selfplay::validate_evaluation(s), "positions");
  s = builtin_spec();
  s.positions = {5, 5};
  expect_error(selfplay::validate_evaluation(s), "positions");
  s = builtin_spec();
  s.engines.push_back({"builtin", "", {}, std::nullopt});
  expect_error(selfplay::validate_evaluation(s), "engines[1]");
  s = builtin_spec();
  s.engines[0].options.push_back({"Hash", "16"});
  expect_error(selfplay::validate_evaluation(s), "engines[0].options");
  s = builtin_spec();
  s.engines.push_back({"sf", "", {{"Threads", "4"}}, std::nullopt});
  expect_error(selfplay::validate_evaluation(s), "engines[1].options");
  s.engines[1].options = {{"MultiPV", "3"}};
  expect_error(selfplay::validate_evaluation(s), "engines[1].options");
  s.engines[1].options = {{"Threads", "1"}, {"MultiPV", "1"}, {"Hash", "64"}};
  EXPECT_TRUE(selfplay::validate_evaluation(s).ok());
  s = builtin_spec();
  s.hash_mb = 0;
  expect_error(selfplay::validate_evaluation(s), "hash_mb");
  s = builtin_spec();
  s.engine_timeout_ms = 5;
  expect_error(selfplay::validate_evaluation(s), "engine_timeout_ms");
}

TEST(EvaluationSpec, ProtoErrorsNameTheProtoField) {
  v1::EvaluationJobSpec p;
  p.set_start_positions("0-9,2000");
  p.add_engines()->set_engine("builtin");
  p.set_depth(3);
  expect_error(cluster::evaluation_spec_from_proto(p).status(), "start_positions");
  p.set_start_positions("0-9");
  EXPECT_TRUE(cluster::evaluation_spec_from_proto(p).ok());
  p.set_multipv(2);
  expect_error(cluster::evaluation_spec_from_proto(p).status(), "multipv");
  p.set_multipv(1);
  p.set_positions_per_unit(-1);
  expect_error(cluster::evaluation_spec_from_proto(p).status(), "positions_per_unit");
  p.set_positions_per_unit(0);
  p.clear_engines();
  expect_error(cluster::evaluation_spec_from_proto(p).status(), "engines");
}

v1::JobSpec job_spec(const std::string& sps, const std::vector<std::string>& engines, int per_unit) {
  v1::JobSpec j;
  v1::EvaluationJobSpec* e = j.mutable_evaluation();
  e->set_start_positions(sps);
  for (const std::string& n : engines) e->add_engines()->set_engine(n);
  e->set_depth(4);
  e->set_positions_per_unit(per_unit);
  return j;
}

TEST(EvaluationKind, PlansUnitsOfEachEngine) {
  const std::unique_ptr<cluster::JobKind> kind = cluster::make_evaluation_kind();
  absl::StatusOr<cluster::KindPlan> plan = kind->plan(job_spec("0-9", {"builtin", "sf"}, 4));
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->units.size(), 6u);  // 3 units (4, 4, 2 positions) for each of 2 engines
  EXPECT_EQ(plan->units[2].first.evaluation().start_positions_size(), 2);
  EXPECT_EQ(plan->units[3].first.evaluation().engine_index(), 1);
  EXPECT_EQ(plan->units[3].first.evaluation().start_positions(0), 0);
  EXPECT_EQ(plan->units[5].second.evaluation().first(), 8);
  // A lease carries the one engine of its unit and the job's limit.
  const v1::UnitSpec w = kind->work_spec(kind->shared(job_spec("0-9", {"builtin", "sf"}, 4)), plan->units[3].first);
  ASSERT_EQ(w.evaluation().job().engines_size(), 1);
  EXPECT_EQ(w.evaluation().job().engines(0).engine(), "sf");
  EXPECT_EQ(w.evaluation().job().depth(), 4);
  // Every engine is required, builtin with its hash.
  const auto needs = kind->required_engines(job_spec("0-9", {"builtin", "sf"}, 4));
  ASSERT_EQ(needs.size(), 2u);
  EXPECT_EQ(needs[0].engine, "builtin");
  EXPECT_EQ(needs[1].engine, "sf");
}

TEST(EvaluationKind, RefusesPathsAndFileOptions) {
  const std::unique_ptr<cluster::JobKind> kind = cluster::make_evaluation_kind();
  expect_error(kind->plan(job_spec("0", {"/usr/games/stockfish"}, 0)).status(), "engines[0].engine");
  v1::JobSpec j = job_spec("0", {"sf"}, 0);
  v1::UciOption* o = j.mutable_evaluation()->mutable_engines(0)->add_options();
  o->set_name("EvalFile");
  o->set_value("/etc/passwd");
  expect_error(kind->plan(j).status(), "engines[0].options");
}

// A unit's result as the built-in engine computes it.
v1::UnitResult builtin_result(const v1::UnitSpec& unit) {
  absl::StatusOr<selfplay::EvalSpec> spec = cluster::evaluation_spec_from_proto(unit.evaluation().job());
  EXPECT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<std::unique_ptr<selfplay::Evaluator>> e = selfplay::Evaluator::make(spec->engines[0], *spec);
  EXPECT_TRUE(e.ok());
  v1::UnitResult r;
  for (int sp : unit.evaluation().start_positions()) {
    absl::StatusOr<selfplay::Evaluation> ev = (*e)->evaluate(sp);
    EXPECT_TRUE(ev.ok());
    cluster::evaluation_to_proto(*ev, r.mutable_evaluation()->add_evaluations());
  }
  return r;
}

TEST(EvaluationKind, ChecksResults) {
  const std::unique_ptr<cluster::JobKind> kind = cluster::make_evaluation_kind();
  const v1::JobSpec job = job_spec("0-2", {"builtin"}, 3);
  absl::StatusOr<cluster::KindPlan> plan = kind->plan(job);
  ASSERT_TRUE(plan.ok());
  const v1::UnitSpec unit = kind->work_spec(kind->shared(job), plan->units[0].first);
  const v1::UnitResult good = builtin_result(unit);
  absl::StatusOr<v1::UnitResult> checked = kind->check_result(unit, good);
  ASSERT_TRUE(checked.ok()) << checked.status();
  // The built-in engine with a cleared hash repeats itself exactly: copies compare equal.
  EXPECT_EQ(kind->kept(*checked), kind->kept(*kind->check_result(unit, builtin_result(unit))));

  v1::UnitResult r = good;
  r.mutable_evaluation()->mutable_evaluations()->RemoveLast();
  expect_error(kind->check_result(unit, r).status(), "result.evaluation.evaluations");
  r = good;
  r.mutable_evaluation()->mutable_evaluations(1)->set_start_position(7);
  expect_error(kind->check_result(unit, r).status(), "result.evaluation.evaluations[1].start_position");
  r = good;
  r.mutable_evaluation()->mutable_evaluations(0)->set_best_move("e2e5");
  expect_error(kind->check_result(unit, r).status(), "result.evaluation.evaluations[0].best_move");
  r = good;
  r.mutable_evaluation()->mutable_evaluations(0)->add_pv("a1a8");
  expect_error(kind->check_result(unit, r).status(), "result.evaluation.evaluations[0].pv");
  r = good;
  v1::PositionEvaluation* e = r.mutable_evaluation()->mutable_evaluations(2);
  ASSERT_GE(e->pv_size(), 2);
  e->set_pv(0, e->pv(1));  // a PV not starting with the best move (or illegal)
  expect_error(kind->check_result(unit, r).status(), "result.evaluation.evaluations[2].pv");
  r = good;
  r.mutable_evaluation()->mutable_evaluations(0)->set_mate(3);
  r.mutable_evaluation()->mutable_evaluations(0)->set_score_cp(40);
  expect_error(kind->check_result(unit, r).status(), "result.evaluation.evaluations[0].score_cp");
  r = good;
  r.mutable_evaluation()->mutable_evaluations(0)->set_score_cp(selfplay::kMaxEvalScoreCp + 1);
  expect_error(kind->check_result(unit, r).status(), "result.evaluation.evaluations[0].score_cp");
  v1::UnitResult perft;
  perft.mutable_perft();
  expect_error(kind->check_result(unit, perft).status(), "result");
}

TEST(EvaluationKind, ResultsInPositionThenEngineOrder) {
  const std::unique_ptr<cluster::JobKind> kind = cluster::make_evaluation_kind();
  const v1::JobSpec job = job_spec("3,1", {"builtin"}, 1);
  absl::StatusOr<cluster::KindPlan> plan = kind->plan(job);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->units.size(), 2u);
  const v1::UnitResult r0 = builtin_result(kind->work_spec(kind->shared(job), plan->units[0].first));
  std::vector<cluster::UnitView> views = {{&plan->units[0].first, &plan->units[0].second, &r0},
                                          {&plan->units[1].first, &plan->units[1].second, nullptr}};
  const std::vector<v1::ResultChunk> chunks = kind->results(plan->plan, views, false, false);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].evaluation().start_position(), 1);  // parse_sp_ranges sorts
  EXPECT_TRUE(chunks[0].evaluation().complete());
  EXPECT_FALSE(chunks[1].evaluation().complete());
  size_t incomplete = 0;
  EXPECT_EQ(cluster::evaluation_rows(chunks, &incomplete).size(), 1u);
  EXPECT_EQ(incomplete, 1u);
}

TEST(Evaluation, StockfishAtFixedDepthRepeatsAndChecks) {
  const std::string sf = test::stockfish_path();
  if (sf.empty()) GTEST_SKIP() << "stockfish not installed (Debian package stockfish)";
  EvalSpec s;
  s.positions = {518, 0};
  s.engines.push_back({sf, "", {{"Hash", "16"}}, std::nullopt});
  s.depth = 8;
  absl::StatusOr<std::vector<selfplay::EvalRow>> a = selfplay::run_evaluation(s, 1);
  absl::StatusOr<std::vector<selfplay::EvalRow>> b = selfplay::run_evaluation(s, 2);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(selfplay::evaluations_csv(*a), selfplay::evaluations_csv(*b));
  for (const selfplay::EvalRow& r : *a) {
    EXPECT_EQ(r.eval.depth, 8);
    EXPECT_GT(r.eval.nodes, 0u);
    EXPECT_FALSE(r.eval.pv.empty());
    EXPECT_EQ(r.eval.pv[0], r.eval.best_move);
    EXPECT_LT(std::abs(r.eval.score_cp), 200) << "a start position is about level";
  }
}

TEST(EvaluationReport, SpearmanOnKnownRanks) {
  EXPECT_DOUBLE_EQ(report::spearman_interval({1, 2, 3, 4, 5}, {10, 20, 30, 40, 50}).rho, 1.0);
  EXPECT_DOUBLE_EQ(report::spearman_interval({1, 2, 3, 4, 5}, {5, 4, 3, 2, 1}).rho, -1.0);
  // Ranks (1 2 3 4 5) and (2 1 4 3 5): d^2 = 4, rho = 1 - 6 * 4 / (5 * 24) = 0.8.
  const report::RankCorrelation r = report::spearman_interval({1, 2, 3, 4, 5}, {2, 1, 4, 3, 5});
  EXPECT_NEAR(r.rho, 0.8, 1e-12);
  // Fisher's z with Bonett-Wright's variance (1 + 0.32) / 2.
  const double se = std::sqrt(1.32 / 2);
  EXPECT_NEAR(r.lo, std::tanh(std::atanh(0.8) - 1.959963984540054 * se), 1e-12);
  EXPECT_NEAR(r.hi, std::tanh(std::atanh(0.8) + 1.959963984540054 * se), 1e-12);
  EXPECT_LT(r.lo, 0.8);
  EXPECT_GT(r.hi, 0.8);
}

TEST(EvaluationReport, LogisticFitRecoversKnownParameters) {
  // 300 positions, evaluations -150..+250 cp, 400 games each drawn from a = 0.2, b = 0.9 a pawn.
  const double a = 0.2, b = 0.9;
  Prng prng(12345);
  std::vector<double> cp, score, games;
  for (int i = 0; i < 300; ++i) {
    const double x = -150 + 400.0 * i / 299;
    const double p = 1 / (1 + std::exp(-(a + b * x / 100)));
    int wins = 0;
    for (int g = 0; g < 400; ++g) wins += double(prng.rand64() >> 11) * 0x1.0p-53 < p;
    cp.push_back(x);
    score.push_back(wins / 400.0);
    games.push_back(400);
  }
  const report::LogisticFit fit = report::fit_logistic(cp, score, games);
  ASSERT_TRUE(fit.ok);
  EXPECT_NEAR(fit.a, a, 3 * fit.se_a);
  EXPECT_NEAR(fit.b, b, 3 * fit.se_b);
  EXPECT_LT(fit.se_b, 0.05);
  // Binomial data fit by its own model: the deviance is about its degrees of freedom.
  EXPECT_LT(fit.deviance, 298 + 4 * std::sqrt(2 * 298.0));
  EXPECT_GT(fit.null_deviance, 10 * fit.deviance);
  EXPECT_NEAR(fit.score_at(0), 1 / (1 + std::exp(-fit.a)), 1e-12);
  // Too little to fit.
  EXPECT_FALSE(report::fit_logistic({10, 10, 10}, {0.5, 0.6, 0.4}, {10, 10, 10}).ok);
}

TEST(EvaluationReport, ParsesTheTableItWrites) {
  selfplay::EvalRow r;
  r.sp = 518;
  r.fen = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
  r.engine = "sf";
  r.depth_limit = 12;
  r.eval = {518, 35, 0, "e2e4", {"e2e4", "e7e5"}, 12, 12345};
  selfplay::EvalRow m = r;
  m.sp = 0;
  m.eval = {0, 0, 3, "f1f7", {"f1f7"}, 12, 99};
  absl::StatusOr<report::EvaluationTable> t = report::parse_evaluation_csv(selfplay::evaluations_csv({r, m}));
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->rows.size(), 2u);
  EXPECT_EQ(t->rows[0].cp, 35);
  EXPECT_EQ(t->rows[0].pv, "e2e4 e7e5");
  EXPECT_TRUE(std::isnan(t->rows[1].cp));
  EXPECT_EQ(t->rows[1].mate, 3);
  EXPECT_EQ(t->engines, std::vector<std::string>{"sf"});
  const std::string twice = selfplay::evaluations_csv({r, r});
  EXPECT_TRUE(absl::StrContains(report::parse_evaluation_csv(twice).status().message(), "twice"));
  EXPECT_TRUE(absl::StrContains(report::parse_evaluation_csv("sp,fen\n1,x\n").status().message(), "score_cp"));
}

}  // namespace
}  // namespace c960
