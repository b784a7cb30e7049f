// The verification rule as one pure function (as BOINC's check_set): a unit's copies, the
// credentials behind them, which credentials are quarantined, and how many results the unit
// wants go in; the decision comes out. Nothing here changes state: the coordinator commits the
// decision's effects to its store and only then applies them to memory.
//
// The rule:
//  - a voter is a credential (a token's name, a certificate's CN), whatever worker names it
//    uses: its copies count once, and a voter that sent two different results for one unit is
//    a liar (quarantined) whose copies count for nothing;
//  - a copy counts only if it is not discarded and its voter is not quarantined, whatever the
//    order in which copies arrive (also within one batch);
//  - a unit wanting one result settles on its first valid result; a unit wanting two settles
//    when two voters agree, and then every voter that sent another result is quarantined (it
//    was outvoted by two other credentials: one credential alone can never quarantine anyone);
//  - one voter against one: a result settled on one vote is taken back, and one more voter,
//    chosen by the coordinator, decides; more than `max_voters` voters without two agreeing
//    fail the job.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace c960::cluster {

struct VoteCopy {
  std::string voter;                  // the credential behind the copy
  std::optional<std::string> result;  // the kept form of its result, once sent
  bool discarded = false;             // given up (a failure report, a quarantine)
};

struct UnitVotes {
  std::vector<VoteCopy> copies;
  std::optional<std::string> settled;  // the kept form the unit is settled with, if it is
  int32_t wanted = 1;                  // results wanted from different voters (1, or 2 when verified)
  std::set<std::string> quarantined;   // voters whose copies never count
  // Whether the newest copy's voter may settle the unit alone when one result is wanted (under
  // adaptive verification only a trusted credential may: a unit that first went to a trusted
  // worker and then, its lease expired, to a new one wants two results from then on).
  bool newest_may_settle_alone = true;
};

enum class Verdict {
  kPending,    // wait for more copies (wanted says how many voters)
  kSettle,     // settle with `result` on `votes` voters
  kConfirm,    // a further voter agrees with the settled result (`votes` now)
  kDuplicate,  // nothing new: a voter's repeated result
  kReopen,     // one vote against one: take the settled result back, ask one more voter
  kMismatch,   // the newest copy disagrees with a result settled on two voters or more
  kDiscard,    // the newest copy does not count (discarded, or its voter is quarantined)
  kFail,       // max_voters voters and no two agree
};

struct Decision {
  Verdict verdict = Verdict::kPending;
  std::string result;                   // kSettle: the winning kept form
  int32_t votes = 0;                    // kSettle, kConfirm: voters behind the settled result
  std::vector<std::string> credit;      // voters whose results other credentials confirmed now
  std::vector<std::string> quarantine;  // outvoted by two voters, or two results from one voter
  int32_t wanted = 0;                   // results wanted from different voters from now on
  bool disagreement = false;            // the copies disagree and no majority decides
};

const char* verdict_name(Verdict v);

// The decision once copy `newest` (an index into u.copies, with a result) has arrived.
Decision decide(const UnitVotes& u, size_t newest, int max_voters);

}  // namespace c960::cluster
