// The verification policy as pure functions (as BOINC's check_set): decide, place, trust, audit,
// fail, and the lease cap. Nothing here changes state or reads a clock: the coordinator passes in
// what it knows, commits the decision's effects to its store and only then applies them.
//
// Voters. Under `--verify all` and `adaptive` a voter is an owner: the person or organisation
// behind a credential (the tokens file's owner=, a join token's for the credentials it was
// traded for, a certificate's O), whatever credentials or worker names it holds; under `--verify
// hosts` a voter is a worker (copies on distinct machines catch faults, not lies). Each voter has
// a rank: 2 for a trust root (an owner the operator marked, --trust-roots; every worker when the
// coordinator authenticates nobody), 1 for an owner that earned trust, 0 for the rest.
//
// The rule (decide):
//  - a voter's copies count once; a voter that sent two different results for one unit is a
//    liar (quarantined) whose copies count for nothing; copies of quarantined voters and
//    discarded copies never count, in whatever order copies arrive;
//  - when the counting copies agree, a unit settles once `wanted` voters agree (one, when its only
//    voter may settle alone); an audited unit (`needs_root`) only once a trust root agrees too;
//  - when they disagree, only trust roots decide: the result with the most root voters wins, and
//    the voters of every other result are quarantined. Without a root among them nothing is
//    decided: the unit waits for a root not involved (a result settled meanwhile is taken back).
//    No copy of an owner that is not a root, however many agree and whatever trust they earned,
//    ever quarantines anyone (an owner that earned trust may turn, and must not frame);
//  - roots that stay tied after `max_voters` voters fail the job.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace c960::cluster {

// A voter's rank.
inline constexpr int kRankUntrusted = 0;
inline constexpr int kRankTrusted = 1;  // earned: results confirmed by trusted voters
inline constexpr int kRankRoot = 2;     // a trust root

struct VoteCopy {
  std::string voter;                  // the owner (or, under verify hosts, the worker) behind the copy
  std::optional<std::string> result;  // the kept form of its result, once sent
  bool discarded = false;             // given up (a failure report, a quarantine)
};

struct UnitVotes {
  std::vector<VoteCopy> copies;
  std::optional<std::string> settled;  // the kept form the unit is settled with, if it is
  int32_t wanted = 1;                  // results wanted from different voters (1, or 2 when verified)
  std::set<std::string> quarantined;   // voters whose copies never count
  std::map<std::string, int> rank;     // voters' ranks (absent: untrusted)
  // Whether the newest copy's voter may settle the unit alone when one result is wanted (under
  // adaptive verification only a trusted voter may).
  bool newest_may_settle_alone = true;
  // An audited unit: it settles only with a trust root's vote behind its result.
  bool needs_root = false;

  int rank_of(const std::string& voter) const {
    auto it = rank.find(voter);
    return it == rank.end() ? kRankUntrusted : it->second;
  }
};

enum class Verdict {
  kPending,    // wait for more copies (wanted says how many voters, want_rank of what rank)
  kSettle,     // settle with `result` on `votes` voters
  kConfirm,    // a further voter agrees with the settled result (`votes` now)
  kDuplicate,  // nothing new: a voter's repeated result
  kReopen,     // voters disagree with the settled result and no root decides: take it back, ask a root
  kMismatch,   // the newest copy disagrees with a settled result a root decided (or it is a liar's)
  kOverturn,   // a root decides against the settled result: settle `result` instead
  kDiscard,    // the newest copy does not count (discarded, or its voter is quarantined)
  kFail,       // max_voters voters and the roots among them still tied
};

struct Decision {
  Verdict verdict = Verdict::kPending;
  std::string result;                   // kSettle, kOverturn: the winning kept form
  int32_t votes = 0;                    // kSettle, kConfirm, kOverturn: voters behind the result
  std::vector<std::string> credit;      // voters confirmed now by a trusted voter other than themselves
  std::vector<std::string> quarantine;  // outvoted by trust, or two results from one voter
  int32_t wanted = 0;                   // results wanted from different voters from now on
  int want_rank = kRankUntrusted;       // the least rank of the voter the next copy goes to
  bool disagreement = false;            // the copies disagree and no trusted voter decides yet
  bool backed = false;                  // kSettle, kOverturn: a trusted voter is behind the result
};

const char* verdict_name(Verdict v);

// The decision once copy `newest` (an index into u.copies, with a result) has arrived.
Decision decide(const UnitVotes& u, size_t newest, int max_voters);

// The least rank of the voter a unit's next copy goes to: a trust root when its counting copies
// disagree (only roots decide), or when it is audited and the copies agreeing so far, one short
// of what it wants or more, have no root behind them; any rank otherwise.
int next_rank(const UnitVotes& u);

// Placement: the voter (owner) that computes a unit's next copy, drawn uniformly from the
// eligible ones (the coordinator passes those that are connected, run the job, are not
// quarantined, hold no copy of the unit and have at least the rank wanted). nullopt when none is
// eligible: the copy waits. Neither speed nor the order of requests enters: whatever the
// colluders do, a given pair of k eligible owners holds both copies of a unit with probability
// 2 / (k (k - 1)) when both copies are placed.
std::optional<std::string> place(const std::vector<std::string>& eligible, std::mt19937_64& rng);

// Trust: a voter's confirmed results count toward trust only when a voter of rank >= 1 other
// than itself agreed (trust grows outward from the roots, never among untrusted voters).
bool confirmation_counts(const std::string& voter, const std::vector<std::string>& agreeing,
                         const std::map<std::string, int>& rank);
// Whether `confirmed` confirmations make a voter trusted.
inline bool earns_trust(int64_t confirmed, int trust_after) { return confirmed >= trust_after; }

// Audits: whether unit `index` of a job with this salt is in its audit sample (rate r). Fixed by
// the job's secret salt, so that a restart keeps the sample and no worker can compute it.
bool audited(uint64_t salt, int64_t index, double rate);
// The chance that a group which forged k settled units escapes every audit: (1 - r)^k.
double audit_escape_probability(double rate, int64_t forged);
// The forged units k that solves (1 - r)^k = p: a group forging more is caught with probability
// at least 1 - p.
int64_t forged_units_caught_with(double rate, double p);

// Failures: whether engine-failure reports fail a job, once `failures` reached max_failures.
// Untrusted owners cannot, fewer than `min_owners` of them: reporters are (owner, worker) pairs,
// and the job fails when `min_owners` distinct owners reported, or two distinct workers of
// trusted owners did (one broken machine, even the operator's, does not fail a job).
bool failures_fail_job(int64_t failures, const std::set<std::pair<std::string, std::string>>& reporters,
                       const std::map<std::string, int>& rank, int max_failures, int min_owners);

// Leases one owner may hold at once: what its connected workers can compute in a lease period
// (each thread one running and `prefetch` queued), at most `ceiling`, at least 1.
int64_t lease_cap(int64_t threads, int prefetch, int64_t ceiling);

}  // namespace c960::cluster
