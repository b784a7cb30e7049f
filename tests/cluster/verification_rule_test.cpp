// The verification policy (coordinator/verification.h) as tables: copies (voter:result, '!' for
// discarded; voters named R... are trust roots, T... trusted owners, the rest untrusted), the
// settled result, the wanted count and the quarantined voters in; the verdict, votes, wanted
// count, credited and quarantined voters out. Then properties over every small case: no
// decision settles on a quarantined voter's copy, untrusted voters never quarantine anyone who
// sent one result, and a lone voter frames nobody; and placement, audits, failures and caps.
#include <gtest/gtest.h>
#include <map>
#include <random>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "coordinator/verification.h"

namespace c960::cluster {
namespace {

// "a:1 b:2 c:1!" -> copies.
std::vector<VoteCopy> copies(const std::string& spec) {
  std::vector<VoteCopy> out;
  for (absl::string_view t : absl::StrSplit(spec, ' ', absl::SkipEmpty())) {
    VoteCopy c;
    std::vector<std::string> p = absl::StrSplit(t, ':');
    c.voter = p[0];
    if (p.size() > 1 && !p[1].empty()) {
      std::string r = p[1];
      if (r.back() == '!') {
        c.discarded = true;
        r.pop_back();
      }
      if (!r.empty() && r != "-") c.result = r;
    }
    out.push_back(std::move(c));
  }
  return out;
}

struct Row {
  const char* copies;  // the newest copy is the last
  const char* settled;
  int wanted;
  const char* quarantined;
  Verdict verdict;
  int votes;
  int wanted_after;
  const char* credit;
  const char* quarantine;
  bool needs_root = false;
};

// Ranks from names: R... roots, T... trusted, the rest untrusted.
std::map<std::string, int> ranks(const std::vector<VoteCopy>& cs) {
  std::map<std::string, int> out;
  for (const VoteCopy& c : cs) out[c.voter] = c.voter[0] == 'R' ? kRankRoot : c.voter[0] == 'T' ? kRankTrusted : 0;
  return out;
}

const Row kRows[] = {
    // One result wanted: the first valid one settles.
    {"a:1", "", 1, "", Verdict::kSettle, 1, 1, "", ""},
    // Two wanted: one waits; two untrusted voters agreeing settle, but earn no trust from each other.
    {"a:1", "", 2, "", Verdict::kPending, 0, 2, "", ""},
    {"a:1 b:1", "", 2, "", Verdict::kSettle, 2, 2, "", ""},
    // Agreement with a trusted voter is what earns trust.
    {"a:1 T:1", "", 2, "", Verdict::kSettle, 2, 2, "a", ""},
    {"R:1 a:1", "", 2, "", Verdict::kSettle, 2, 2, "a", ""},
    {"R:1 T:1", "", 2, "", Verdict::kSettle, 2, 2, "R T", ""},
    // Two names of one owner are one voter: its second copy is no second vote.
    {"a:1 a:1", "", 2, "", Verdict::kDuplicate, 0, 2, "", ""},
    // Two different results from one voter: a liar, whatever its names.
    {"a:1 a:2", "", 2, "", Verdict::kDiscard, 0, 2, "", "a"},
    {"a:1 b:1 a:2", "1", 2, "", Verdict::kMismatch, 0, 2, "", "a"},
    // Untrusted voters disagree: nobody is quarantined, one more voter (trusted) is wanted.
    {"a:1 b:2", "", 2, "", Verdict::kPending, 0, 3, "", ""},
    // A third untrusted voter decides nothing, however many agree (framing).
    {"a:1 b:2 c:2", "", 3, "", Verdict::kPending, 0, 4, "", ""},
    {"a:1 b:2 c:2 d:2", "", 4, "", Verdict::kPending, 0, 5, "", ""},
    // Untrusted voters never fail a job: five of them still wait for a trusted one.
    {"a:1 b:2 c:3 d:4 f:5", "", 5, "", Verdict::kPending, 0, 6, "", ""},
    // A trust root decides, and the voters against it are quarantined.
    {"a:1 b:2 R:1", "", 3, "", Verdict::kSettle, 2, 3, "a", "b"},
    {"a:2 b:2 R:1", "", 3, "", Verdict::kSettle, 1, 3, "", "a b"},
    // An owner that earned trust decides nothing (it may have turned): a root is asked.
    {"a:1 b:2 T:1", "", 3, "", Verdict::kPending, 0, 4, "", ""},
    // A root outranks trusted voters; tied trusted voters ask a root.
    {"T1:1 T2:2", "", 2, "", Verdict::kPending, 0, 3, "", ""},
    {"T1:1 T2:2 R:2", "", 3, "", Verdict::kSettle, 2, 3, "R T2", "T1"},
    {"T:1 R:2", "", 2, "", Verdict::kSettle, 1, 2, "", "T"},
    // Roots tied after five voters fail the job.
    {"R1:1 R2:2 a:3 R3:3", "", 4, "", Verdict::kPending, 0, 5, "", ""},
    {"R1:1 R2:2 R3:3 R4:4 R5:5", "", 5, "", Verdict::kFail, 0, 6, "", ""},
    // A quarantined voter's copy never counts, in any order.
    {"e:2 b:1", "", 2, "e", Verdict::kPending, 0, 2, "", ""},
    {"b:1 e:2", "", 2, "e", Verdict::kDiscard, 0, 2, "", ""},
    {"e:1 b:1", "", 2, "e", Verdict::kPending, 0, 2, "", ""},
    // Discarded copies count for nothing.
    {"a:1! b:1", "", 2, "", Verdict::kPending, 0, 2, "", ""},
    // Settled: agreement confirms; credit goes to those a trusted voter confirms, once.
    {"a:1 b:1", "1", 1, "", Verdict::kConfirm, 2, 1, "", ""},
    {"a:1 T:1", "1", 1, "", Verdict::kConfirm, 2, 1, "a", ""},
    {"a:1 T:1 c:1", "1", 1, "", Verdict::kConfirm, 3, 1, "c", ""},
    // Settled on untrusted votes, contradicted by an untrusted one: taken back, a trusted voter decides.
    {"a:1 b:2", "1", 1, "", Verdict::kReopen, 0, 3, "", ""},
    {"a:1 b:1 c:2", "1", 2, "", Verdict::kReopen, 0, 4, "", ""},
    // Settled by two colluders, audited by a root that disagrees: overturned, both quarantined.
    {"a:1 b:1 R:2", "1", 2, "", Verdict::kOverturn, 1, 2, "", "a b"},
    // Settled with a root behind it, contradicted: the newcomer is outvoted; with an owner that
    // earned trust behind it, the result is taken back and a root decides.
    {"a:1 R:1 c:2", "1", 2, "", Verdict::kMismatch, 2, 2, "", "c"},
    {"a:1 T:1 c:2", "1", 2, "", Verdict::kReopen, 0, 4, "", ""},
    // Audited units settle only with a root behind the result.
    {"a:1 b:1", "", 2, "", Verdict::kPending, 0, 3, "", "", true},
    {"a:1 b:1 R:1", "", 3, "", Verdict::kSettle, 3, 3, "a b", "", true},
    {"R:1", "", 1, "", Verdict::kSettle, 1, 1, "", "", true},
    {"T:1", "", 1, "", Verdict::kPending, 0, 2, "", "", true},
};

TEST(VerificationRule, Table) {
  for (const Row& row : kRows) {
    UnitVotes u;
    u.copies = copies(row.copies);
    if (*row.settled) u.settled = row.settled;
    u.wanted = row.wanted;
    u.rank = ranks(u.copies);
    u.needs_root = row.needs_root;
    for (absl::string_view q : absl::StrSplit(row.quarantined, ' ', absl::SkipEmpty()))
      u.quarantined.insert(std::string(q));
    const Decision d = decide(u, u.copies.size() - 1, 5);
    SCOPED_TRACE(absl::StrCat("copies '", row.copies, "' settled '", row.settled, "' wanted ", row.wanted));
    EXPECT_EQ(verdict_name(d.verdict), std::string(verdict_name(row.verdict)));
    EXPECT_EQ(d.votes, row.votes);
    EXPECT_EQ(d.wanted, row.wanted_after);
    EXPECT_EQ(absl::StrJoin(d.credit, " "), row.credit);
    EXPECT_EQ(absl::StrJoin(d.quarantine, " "), row.quarantine);
  }
}

// Under adaptive verification only a trusted owner settles a unit alone: a new one's
// result wants a second, whatever the unit wanted when it was first leased.
TEST(VerificationRule, AnUntrustedVoterNeverSettlesAlone) {
  UnitVotes u;
  u.copies = copies("a:1");
  u.wanted = 1;
  u.newest_may_settle_alone = false;
  Decision d = decide(u, 0, 5);
  EXPECT_EQ(verdict_name(d.verdict), std::string("pending"));
  EXPECT_EQ(d.wanted, 2);
  u.copies = copies("a:1 b:1");
  d = decide(u, 1, 5);
  EXPECT_EQ(verdict_name(d.verdict), std::string("settle"));
  EXPECT_EQ(d.votes, 2);
}

// Every unit of up to four copies over voters a, b (untrusted), T (trusted) and R (a root), results
// 1 and 2, some quarantined: a settlement never rests on a quarantined voter; a voter that sent
// one result is quarantined only when a trust root stands behind the winning result (other
// owners, however many and however trusted, frame nobody); trust is credited only with a trusted voter agreeing; and
// a lone voter's copies quarantine nobody but itself.
TEST(VerificationRule, PropertiesOverEverySmallUnit) {
  const std::vector<std::string> voters = {"a", "b", "T", "R"};
  int cases = 0;
  for (int n = 1; n <= 4; ++n) {
    int combos = 1;
    for (int k = 0; k < n; ++k) combos *= 8;  // voter x result
    for (int code = 0; code < combos; ++code)
      for (int wanted = 1; wanted <= 3; ++wanted)
        for (int qmask = 0; qmask < 16; qmask += 3)
          for (int audit = 0; audit < 2; ++audit) {
            UnitVotes u;
            u.wanted = wanted;
            u.needs_root = audit == 1;
            int c = code;
            for (int k = 0; k < n; ++k, c /= 8)
              u.copies.push_back({voters[size_t(c % 4)], std::to_string(1 + (c / 4) % 2)});
            for (int q = 0; q < 4; ++q)
              if (qmask & (1 << q)) u.quarantined.insert(voters[size_t(q)]);
            u.rank = ranks(u.copies);
            const Decision d = decide(u, u.copies.size() - 1, 5);
            ++cases;
            std::set<std::string> distinct;
            for (const VoteCopy& v : u.copies) distinct.insert(v.voter);
            std::set<std::string> behind;  // counting voters of the winning result
            if (d.verdict == Verdict::kSettle || d.verdict == Verdict::kOverturn) {
              for (const VoteCopy& v : u.copies)
                if (*v.result == d.result && !u.quarantined.count(v.voter)) behind.insert(v.voter);
              EXPECT_GE(int(behind.size()), d.votes);
              EXPECT_FALSE(u.quarantined.count(u.copies.back().voter));
              if (u.needs_root) {
                EXPECT_TRUE(behind.count("R")) << "an audited unit settled without a root";
              }
            }
            for (const std::string& q : d.quarantine) {
              std::set<std::string> results_of_q;
              for (const VoteCopy& v : u.copies)
                if (v.voter == q) results_of_q.insert(*v.result);
              if (results_of_q.size() >= 2) continue;  // its own two results convict it
              // Otherwise a trust root stood against it.
              bool root_against = false;
              for (const VoteCopy& v : u.copies)
                if (v.voter != q && v.voter == "R" && !u.quarantined.count(v.voter) &&
                    *v.result != *results_of_q.begin())
                  root_against = true;
              EXPECT_TRUE(root_against) << "owners that are not roots quarantined " << q;
              EXPECT_NE(q, "R") << "a root was outvoted by lower ranks";
            }
            for (const std::string& v : d.credit) {
              bool confirmed = false;
              for (const VoteCopy& o : u.copies)
                if (o.voter != v && (o.voter == "T" || o.voter == "R") && !u.quarantined.count(o.voter))
                  confirmed = true;
              EXPECT_TRUE(confirmed) << v << " credited without a trusted voter";
            }
            if (distinct.size() == 1) {
              for (const std::string& q : d.quarantine) EXPECT_EQ(q, *distinct.begin()) << "a voter framed another";
            }
          }
  }
  EXPECT_GT(cases, 10000);
}

// Placement draws among the eligible owners only, each about equally often, and the same seed
// draws the same owners.
TEST(VerificationPolicy, PlacementIsUniformAndSeeded) {
  std::mt19937_64 a(7), b(7);
  const std::vector<std::string> owners = {"o1", "o2", "o3", "o4", "o5"};
  std::map<std::string, int> seen;
  for (int k = 0; k < 50'000; ++k) {
    const std::optional<std::string> x = place(owners, a);
    ASSERT_TRUE(x.has_value());
    EXPECT_EQ(*x, *place(owners, b));
    ++seen[*x];
  }
  EXPECT_EQ(seen.size(), owners.size());
  for (const auto& [o, n] : seen) EXPECT_NEAR(n, 10'000, 500) << o;  // 5 standard deviations
  EXPECT_FALSE(place({}, a).has_value());
}

// Audits: the sample is fixed by the salt (a restart keeps it), has the rate asked, and differs
// between salts; the escape bound is (1 - r)^k.
TEST(VerificationPolicy, AuditSampleAndBound) {
  int in = 0, same = 0;
  for (int64_t i = 0; i < 100'000; ++i) {
    const bool x = audited(42, i, 0.05);
    EXPECT_EQ(x, audited(42, i, 0.05));
    in += x;
    same += x && audited(43, i, 0.05);
  }
  EXPECT_NEAR(in, 5000, 350);
  EXPECT_LT(same, 400);  // independent samples overlap at about r^2
  EXPECT_FALSE(audited(42, 1, 0));
  EXPECT_TRUE(audited(42, 1, 1));
  EXPECT_NEAR(audit_escape_probability(0.05, 59), 0.0485, 0.001);
  EXPECT_EQ(audit_escape_probability(0.05, 0), 1);
  EXPECT_EQ(forged_units_caught_with(0.05, 0.05), 59);
}

// Failure reports: untrusted owners fail a job only three strong, whatever their workers; two
// workers of trusted owners do; one broken machine alone never does.
TEST(VerificationPolicy, FailuresNeedTrustOrThreeOwners) {
  const std::map<std::string, int> rank = {{"T", kRankTrusted}, {"R", kRankRoot}};
  EXPECT_FALSE(failures_fail_job(3, {{"a", "a/1"}, {"b", "b/1"}}, rank, 3, 3));
  EXPECT_FALSE(failures_fail_job(9, {{"a", "a/1"}, {"a", "a/2"}, {"b", "b/1"}, {"b", "b/2"}}, rank, 3, 3));
  EXPECT_TRUE(failures_fail_job(3, {{"a", "a/1"}, {"b", "b/1"}, {"c", "c/1"}}, rank, 3, 3));
  EXPECT_FALSE(failures_fail_job(3, {{"a", "a/1"}, {"T", "T/1"}}, rank, 3, 3));
  EXPECT_TRUE(failures_fail_job(3, {{"R", "R/1"}, {"T", "T/1"}}, rank, 3, 3));
  EXPECT_TRUE(failures_fail_job(3, {{"R", "R/1"}, {"R", "R/2"}}, rank, 3, 3));
  EXPECT_FALSE(failures_fail_job(3, {{"R", "R/1"}}, rank, 3, 3));
  EXPECT_FALSE(failures_fail_job(2, {{"R", "R/1"}, {"R", "R/2"}}, rank, 3, 3));
}

// The rank a unit's next copy needs: a root when its copies disagree, or when it is audited and
// its agreeing copies (one short of what it wants) have no root behind them.
TEST(VerificationPolicy, NextRank) {
  auto rank_for = [](const char* spec, int wanted, bool audited) {
    UnitVotes u;
    u.copies = copies(spec);
    u.rank = ranks(u.copies);
    u.wanted = wanted;
    u.needs_root = audited;
    return next_rank(u);
  };
  EXPECT_EQ(rank_for("", 2, false), kRankUntrusted);
  EXPECT_EQ(rank_for("a:1", 2, false), kRankUntrusted);
  EXPECT_EQ(rank_for("a:1 b:2", 2, false), kRankRoot);
  EXPECT_EQ(rank_for("T:1 b:2", 3, false), kRankRoot);
  EXPECT_EQ(rank_for("", 2, true), kRankUntrusted);
  EXPECT_EQ(rank_for("a:1", 2, true), kRankRoot);
  EXPECT_EQ(rank_for("a:1", 3, true), kRankUntrusted);
  EXPECT_EQ(rank_for("R:1", 2, true), kRankUntrusted);
  EXPECT_EQ(rank_for("a:1 b:1", 3, true), kRankRoot);
}

// The lease cap: what an owner's threads compute, within the ceiling, never 0.
TEST(VerificationPolicy, LeaseCapFollowsThreads) {
  EXPECT_EQ(lease_cap(1, 1, 2048), 2);
  EXPECT_EQ(lease_cap(16, 1, 2048), 32);
  EXPECT_EQ(lease_cap(4096, 1, 2048), 2048);
  EXPECT_EQ(lease_cap(0, 1, 2048), 1);
}

}  // namespace
}  // namespace c960::cluster
