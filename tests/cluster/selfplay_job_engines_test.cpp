// The self-play job kind in the coordinator, without sockets: engines and options: units go only to workers offering
// the job's engine and allowing its options, within their operators' bounds.
#include "tests/cluster/selfplay_job_fixture.h"

namespace c960::cluster {
namespace {

TEST_F(SelfPlayJobTest, UnitsGoOnlyToWorkersOfferingTheEngine) {
  v1::SelfPlayJobSpec s = small_spec();
  s.set_engine("other");
  auto j = submit(s);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_TRUE(acquire(4).empty());  // the worker offers builtin and sf only
  EXPECT_TRUE(absl::StrContains(j->notice(), "no connected worker offers engine 'other'")) << j->notice();
  v1::HelloRequest req;
  req.set_name("other-host");
  req.set_threads(32);
  req.add_capabilities("selfplay");
  req.add_engines("other");
  req.set_protocol_version(kProtocolVersion);
  const std::string w2 = coordinator_->hello(Caller::local(), req)->worker_id();
  EXPECT_EQ(coordinator_->get_job(Caller::local(), j->id())->notice(), "");
  EXPECT_FALSE(acquire(4, w2).empty());
}

// The probe of issue 19: a submitter setting Stockfish's "Debug Log File" made every worker
// offering it truncate and write a file of the worker's choosing... of the job's choosing. Now
// the coordinator refuses such a job, and a worker refuses the option (and any option its
// operator did not allow, and Hash or Threads out of bounds) before the engine starts, even for
// a unit that comes to it some other way.
TEST_F(SelfPlayJobTest, AJobCannotMakeAWorkerWriteFilesOrExceedItsBounds) {
  const std::string sf = c960::test::stockfish_path();
  if (sf.empty()) GTEST_SKIP() << "stockfish not installed (deploy/install-deps.sh installs it)";
  const std::string target = dir_ + "/written-by-the-job";
  v1::SelfPlayJobSpec s = small_spec();
  s.set_engine("sf");
  v1::UciOption* o = s.add_options();
  o->set_name("Debug Log File");
  o->set_value(target);
  auto refused = submit(s);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "options: 'Debug Log File'")) << refused.status();
  // A unit that carries it anyway (an older or a hostile coordinator): the worker refuses it.
  s.clear_options();
  auto j = submit(s);
  ASSERT_TRUE(j.ok()) << j.status();
  std::vector<v1::Lease> ls = acquire(1);
  ASSERT_EQ(ls.size(), 1u);
  const std::map<std::string, EngineOffer> offers = {{"sf", {sf, default_engine_policy(), "", ""}}};
  auto with = [&](std::vector<std::pair<std::string, std::string>> options) {
    v1::UnitSpec spec = ls[0].spec();
    for (const auto& [name, value] : options) {
      v1::UciOption* u = spec.mutable_selfplay()->mutable_job()->add_options();
      u->set_name(name);
      u->set_value(value);
    }
    return compute_unit(spec, nullptr, offers);
  };
  for (const auto& [options, names] :
       std::vector<std::pair<std::vector<std::pair<std::string, std::string>>, std::string>>{
           {{{"Debug Log File", target}}, "'Debug Log File': names a file"},
           {{{"EvalFile", target}}, "'EvalFile': names a file"},
           {{{"SyzygyPath", dir_}}, "'SyzygyPath': names a file"},
           {{{"Hash", "4096"}}, "'Hash': '4096' is not a number in 1..256"},
           {{{"Threads", "8"}}, "'Threads': '8' is not a number in 1..1"},
           {{{"Skill Level", "3"}}, "'Skill Level': not one a job may set on this worker"}}) {
    auto r = with(options);
    ASSERT_FALSE(r.ok()) << names;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
    EXPECT_TRUE(absl::StrContains(r.status().message(), names)) << r.status();
  }
  EXPECT_FALSE(std::filesystem::exists(target));
  // Within the bounds it plays; and an option the operator allows (--engine-option) is a job's.
  auto ok = with({{"Hash", "16"}, {"Threads", "1"}});
  EXPECT_TRUE(ok.ok()) << ok.status();
  std::map<std::string, EngineOffer> wider = offers;
  wider["sf"].policy.allowed.push_back(*selfplay::parse_allowed_option("Skill Level=0..20"));
  v1::UnitSpec spec = ls[0].spec();
  v1::UciOption* skill = spec.mutable_selfplay()->mutable_job()->add_options();
  skill->set_name("Skill Level");
  skill->set_value("3");
  auto allowed = compute_unit(spec, nullptr, wider);
  EXPECT_TRUE(allowed.ok()) << allowed.status();
}

// Workers say what a job may set on each engine they offer (Hello's engine_offers, from
// c960-worker --engine-option): a job no connected offering worker allows is refused at submit,
// naming the option, and a job's units go only to workers that allow its options.
TEST_F(SelfPlayJobTest, UnitsGoOnlyToWorkersAllowingTheJobsOptions) {
  struct Allowed {
    std::string name;
    int64_t min, max;
  };
  auto hello_with = [&](const std::string& name, const std::vector<Allowed>& allowed) {
    v1::HelloRequest req = hello_request(name);
    v1::EngineOffer* o = req.add_engine_offers();
    o->set_engine("sf");
    for (const Allowed& a : allowed) {
      v1::AllowedOption* ao = o->add_options();
      ao->set_name(a.name);
      ao->set_bounded(true);
      ao->set_min(a.min);
      ao->set_max(a.max);
    }
    return coordinator_->hello(Caller::local(), req);
  };
  auto with = [](std::string name, std::string value) {
    v1::SelfPlayJobSpec s = small_spec();
    s.set_engine("sf");
    v1::UciOption* o = s.add_options();
    o->set_name(std::move(name));
    o->set_value(std::move(value));
    return s;
  };
  worker_ = hello_with("w", {{"Hash", 1, 64}})->worker_id();  // the fixture's worker, saying what it allows
  for (const auto& [spec, why] : std::vector<std::pair<v1::SelfPlayJobSpec, std::string>>{
           {with("Skill Level", "3"), "'Skill Level': not one a job may set"},
           {with("Hash", "128"), "'Hash': '128' is not a number in 1..64"}}) {
    auto refused = submit(spec);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
    EXPECT_TRUE(absl::StrContains(refused.status().message(), "no connected worker offering engine 'sf' allows"))
        << refused.status();
    EXPECT_TRUE(absl::StrContains(refused.status().message(), why)) << refused.status();
  }
  // A worker that allows Skill Level joins: the job is accepted, and only that worker gets it.
  const std::string w2 = hello_with("w2", {{"Hash", 1, 64}, {"Skill Level", 0, 20}})->worker_id();
  auto skill = submit(with("Skill Level", "3"));
  ASSERT_TRUE(skill.ok()) << skill.status();
  EXPECT_TRUE(acquire(4).empty());
  EXPECT_FALSE(acquire(4, w2).empty());
  // Offers are checked: an engine it does not offer, a range upside down.
  v1::HelloRequest bad;
  bad.set_name("bad");
  bad.set_threads(1);
  bad.set_protocol_version(kProtocolVersion);
  bad.add_engine_offers()->set_engine("sf");
  auto r = coordinator_->hello(Caller::local(), bad);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(r.status().message(), "engine_offers.engine")) << r.status();
  auto upside = hello_with("upside", {{"Hash", 64, 1}});
  EXPECT_EQ(upside.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(upside.status().message(), "engine_offers.options")) << upside.status();
}

// Issue 34: a job sizes the built-in engine's hash (hash_mb, up to 4,096 MiB a player, two
// players a game, one game per compute thread); the worker's operator bounds it. Workers say
// their bound at Hello (builtin's Hash, c960-worker --engine-option builtin:Hash=1..MAX, 64 by
// default): a job no connected worker allows is refused at submit, its units go only to workers
// that allow it, and a worker refuses such a unit before it allocates anything.
TEST_F(SelfPlayJobTest, AJobCannotSizeAWorkersMemoryPastItsOperatorsBound) {
  auto hello_with = [&](const std::string& name, int64_t max_mb) {
    v1::HelloRequest req = hello_request(name);
    v1::EngineOffer* o = req.add_engine_offers();
    o->set_engine("builtin");
    v1::AllowedOption* a = o->add_options();
    a->set_name("Hash");
    a->set_bounded(true);
    a->set_min(1);
    a->set_max(max_mb);
    return coordinator_->hello(Caller::local(), req);
  };
  // The fixture's worker says it allows the default bound.
  auto w = hello_with("w", kDefaultBuiltinHashMaxMb);
  ASSERT_TRUE(w.ok()) << w.status();
  worker_ = w->worker_id();
  v1::SelfPlayJobSpec big = small_spec();
  big.set_hash_mb(4096);
  auto refused = submit(big);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "no connected worker offering engine 'builtin' allows"))
      << refused.status();
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "'Hash': '4096' is not a number in 1..64"))
      << refused.status();
  // Within the bound it is accepted. A worker whose operator allows more joins: the big job is
  // accepted, and only it gets units.
  auto roomy = hello_with("roomy", 4096);
  ASSERT_TRUE(roomy.ok()) << roomy.status();
  v1::SelfPlayJobSpec fits = small_spec();
  fits.set_hash_mb(kDefaultBuiltinHashMaxMb);
  auto fitting = submit(fits);
  ASSERT_TRUE(fitting.ok()) << fitting.status();
  ASSERT_TRUE(coordinator_->cancel(Caller::local(), fitting->id()).ok());
  auto accepted = submit(big);
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  EXPECT_TRUE(acquire(4).empty());
  std::vector<v1::Lease> ls = acquire(1, roomy->worker_id());
  ASSERT_EQ(ls.size(), 1u);
  // A unit that carries it anyway (an older or a hostile coordinator): the worker refuses it
  // naming the field and its flag, under its default bound or the one its operator set.
  for (const std::map<std::string, EngineOffer>& engines :
       {std::map<std::string, EngineOffer>{},
        std::map<std::string, EngineOffer>{{"builtin", {"", default_builtin_policy(), "", ""}}}}) {
    auto r = compute_unit(ls[0].spec(), nullptr, engines);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
    EXPECT_TRUE(absl::StrContains(r.status().message(), "hash_mb 4096 is more than this worker allows (Hash (1..64)"))
        << r.status();
    EXPECT_TRUE(absl::StrContains(r.status().message(), "--engine-option builtin:Hash=1..MAX")) << r.status();
  }
  // An offer for builtin needs no --engine of that name.
  EXPECT_TRUE(hello_with("plain", 16).ok());
}

}  // namespace
}  // namespace c960::cluster
