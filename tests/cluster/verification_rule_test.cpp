// The verification rule (coordinator/verification.h) as a table: copies (voter:result, '!' for
// discarded), the settled result, the wanted count and the quarantined voters in; the verdict,
// votes, wanted count, credited and quarantined voters out. Then two properties over every
// small case: no decision settles on a quarantined voter's copy, and one voter alone never
// quarantines another.
#include <gtest/gtest.h>

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
};

const Row kRows[] = {
    // One result wanted: the first valid one settles.
    {"a:1", "", 1, "", Verdict::kSettle, 1, 1, "", ""},
    // Two wanted: one waits; two voters agreeing settle and are credited.
    {"a:1", "", 2, "", Verdict::kPending, 0, 2, "", ""},
    {"a:1 b:1", "", 2, "", Verdict::kSettle, 2, 2, "a b", ""},
    // Two names of one credential are one voter: its second copy is no second vote.
    {"a:1 a:1", "", 2, "", Verdict::kDuplicate, 0, 2, "", ""},
    // Two different results from one credential: a liar, whatever its names.
    {"a:1 a:2", "", 2, "", Verdict::kDiscard, 0, 2, "", "a"},
    {"a:1 b:1 a:2", "1", 2, "", Verdict::kMismatch, 0, 2, "", "a"},
    // One against one: nobody is quarantined, one more voter is wanted.
    {"a:1 b:2", "", 2, "", Verdict::kPending, 0, 3, "", ""},
    // The third decides, and the outvoted one is quarantined (by two voters).
    {"a:1 b:2 c:1", "", 3, "", Verdict::kSettle, 2, 3, "a c", "b"},
    // A quarantined voter's copy never counts, in any order.
    {"e:2 b:1", "", 2, "e", Verdict::kPending, 0, 2, "", ""},
    {"b:1 e:2", "", 2, "e", Verdict::kDiscard, 0, 2, "", ""},
    {"e:1 b:1", "", 2, "e", Verdict::kPending, 0, 2, "", ""},
    // Discarded copies count for nothing.
    {"a:1! b:1", "", 2, "", Verdict::kPending, 0, 2, "", ""},
    // Settled: agreement confirms (first confirmation credits both), later ones the newcomer.
    {"a:1 b:1", "1", 1, "", Verdict::kConfirm, 2, 1, "a b", ""},
    {"a:1 b:1 c:1", "1", 1, "", Verdict::kConfirm, 3, 1, "c", ""},
    // Settled on one vote, contradicted by one: taken back, a third decides.
    {"a:1 b:2", "1", 1, "", Verdict::kReopen, 0, 3, "", ""},
    // Settled on two votes, contradicted: the newcomer is outvoted.
    {"a:1 b:1 c:2", "1", 2, "", Verdict::kMismatch, 0, 2, "", "c"},
    // Five voters, no two agreeing: the job fails.
    {"a:1 b:2 c:3 d:4 f:5", "", 5, "", Verdict::kFail, 0, 5, "", ""},
};

TEST(VerificationRule, Table) {
  for (const Row& row : kRows) {
    UnitVotes u;
    u.copies = copies(row.copies);
    if (*row.settled) u.settled = row.settled;
    u.wanted = row.wanted;
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

// Under adaptive verification only a trusted credential settles a unit alone: a new one's
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

// Every unit of up to four copies over voters a, b, c (results 1, 2; some quarantined): a
// settlement never rests on a quarantined voter, a quarantine always has two other voters
// behind the winning result (or is of a voter that sent two results), and a lone voter's
// copies can quarantine nobody.
TEST(VerificationRule, PropertiesOverEverySmallUnit) {
  const std::vector<std::string> voters = {"a", "b", "c"};
  int cases = 0;
  for (int n = 1; n <= 4; ++n) {
    int combos = 1;
    for (int k = 0; k < n; ++k) combos *= 6;  // voter x result
    for (int code = 0; code < combos; ++code)
      for (int wanted = 1; wanted <= 3; ++wanted)
        for (int qmask = 0; qmask < 8; ++qmask) {
          UnitVotes u;
          u.wanted = wanted;
          int c = code;
          for (int k = 0; k < n; ++k, c /= 6)
            u.copies.push_back({voters[size_t(c % 3)], std::to_string(1 + (c / 3) % 2)});
          for (int q = 0; q < 3; ++q)
            if (qmask & (1 << q)) u.quarantined.insert(voters[size_t(q)]);
          const Decision d = decide(u, u.copies.size() - 1, 5);
          ++cases;
          std::set<std::string> distinct;
          for (const VoteCopy& v : u.copies) distinct.insert(v.voter);
          if (d.verdict == Verdict::kSettle) {
            std::set<std::string> behind;
            for (const VoteCopy& v : u.copies)
              if (*v.result == d.result && !u.quarantined.count(v.voter)) behind.insert(v.voter);
            EXPECT_GE(int(behind.size()), d.votes);
            EXPECT_FALSE(u.quarantined.count(u.copies.back().voter));
          }
          for (const std::string& q : d.quarantine) {
            std::set<std::string> results_of_q;
            for (const VoteCopy& v : u.copies)
              if (v.voter == q) results_of_q.insert(*v.result);
            if (results_of_q.size() < 2) {
              EXPECT_EQ(d.verdict == Verdict::kSettle ? d.votes >= 2 : d.verdict == Verdict::kMismatch, true);
            }
          }
          if (distinct.size() == 1) {
            for (const std::string& q : d.quarantine) EXPECT_EQ(q, *distinct.begin()) << "a voter framed another";
          }
        }
  }
  EXPECT_GT(cases, 10000);
}

}  // namespace
}  // namespace c960::cluster
