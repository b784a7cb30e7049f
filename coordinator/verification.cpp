#include "coordinator/verification.h"

#include <algorithm>
#include <cmath>

namespace c960::cluster {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kPending: return "pending";
    case Verdict::kSettle: return "settle";
    case Verdict::kConfirm: return "confirm";
    case Verdict::kDuplicate: return "duplicate";
    case Verdict::kReopen: return "reopen";
    case Verdict::kMismatch: return "mismatch";
    case Verdict::kOverturn: return "overturn";
    case Verdict::kDiscard: return "discard";
    case Verdict::kFail: return "fail";
  }
  return "?";
}

namespace {

// Each counting voter's one result (copies [0, end) only), and the voters that sent two.
struct Tally {
  std::map<std::string, std::string> by_voter;
  std::set<std::string> liars;
  std::map<std::string, std::vector<std::string>> by_result;  // result -> its voters, in order

  Tally(const UnitVotes& u, size_t end) {
    for (size_t k = 0; k < end; ++k) {
      const VoteCopy& c = u.copies[k];
      if (!c.result || c.discarded || u.quarantined.count(c.voter)) continue;
      auto [it, added] = by_voter.try_emplace(c.voter, *c.result);
      if (!added && it->second != *c.result) liars.insert(c.voter);
    }
    for (const std::string& l : liars) by_voter.erase(l);
    for (const auto& [voter, result] : by_voter) by_result[result].push_back(voter);
  }
  int32_t votes_for(const std::string& r) const {
    auto it = by_result.find(r);
    return it == by_result.end() ? 0 : int32_t(it->second.size());
  }
};

int top_rank(const UnitVotes& u, const std::vector<std::string>& voters) {
  int top = kRankUntrusted;
  for (const std::string& v : voters) top = std::max(top, u.rank_of(v));
  return top;
}

// Voters of `agreeing` whose agreement a trusted voter other than themselves confirms.
std::vector<std::string> credited(const UnitVotes& u, const std::vector<std::string>& agreeing) {
  std::vector<std::string> out;
  for (const std::string& v : agreeing)
    if (confirmation_counts(v, agreeing, u.rank)) out.push_back(v);
  return out;
}

// Copies disagree: only trust roots decide (an owner that earned trust may turn, and must not
// frame anyone): the result with the most root voters wins, unless tied.
Decision contested(const UnitVotes& u, const Tally& now, Decision d, int max_voters) {
  const int32_t voters = int32_t(now.by_voter.size());
  int top = kRankUntrusted;
  std::map<std::string, int> at_top;  // result -> its root voters
  for (const auto& [voter, result] : now.by_voter)
    if (u.rank_of(voter) == kRankRoot) {
      top = kRankRoot;
      ++at_top[result];
    }
  std::string winner;
  int best = 0;
  bool tied = false;
  for (const auto& [result, n] : at_top) {
    if (n > best) {
      best = n;
      winner = result;
      tied = false;
    } else if (n == best) {
      tied = true;
    }
  }
  if (top == kRankUntrusted || tied) {
    // Nothing decides yet: one more voter, a trust root not involved.
    d.disagreement = true;
    d.want_rank = kRankRoot;
    d.wanted = std::max<int32_t>(u.wanted, voters + 1);
    if (top == kRankRoot && voters >= max_voters) {
      d.verdict = Verdict::kFail;
      return d;
    }
    d.verdict = u.settled ? Verdict::kReopen : Verdict::kPending;
    return d;
  }
  for (const auto& [result, vs] : now.by_result)
    if (result != winner) d.quarantine.insert(d.quarantine.end(), vs.begin(), vs.end());
  d.votes = now.votes_for(winner);
  d.backed = true;
  if (u.settled && *u.settled == winner) {
    d.verdict = Verdict::kMismatch;
    return d;
  }
  d.result = winner;
  d.credit = credited(u, now.by_result.at(winner));
  d.verdict = u.settled ? Verdict::kOverturn : Verdict::kSettle;
  return d;
}

}  // namespace

Decision decide(const UnitVotes& u, size_t newest, int max_voters) {
  Decision d;
  d.wanted = u.wanted;
  const VoteCopy& mine = u.copies.at(newest);
  if (!mine.result || mine.discarded || u.quarantined.count(mine.voter)) {
    d.verdict = Verdict::kDiscard;
    return d;
  }
  const Tally before(u, newest);
  const Tally now(u, u.copies.size());
  // Two different results from one voter: it lies (or two of its workers disagree, which an
  // honest owner's never do). None of its copies count. This needs no trust: it is its own word.
  if (now.liars.count(mine.voter)) {
    d.quarantine.push_back(mine.voter);
    d.verdict = u.settled ? Verdict::kMismatch : Verdict::kDiscard;
    return d;
  }
  const std::string& r = *mine.result;
  const bool new_voter = !before.by_voter.count(mine.voter);
  if (!new_voter) {  // the same voter's result again (another of its copies): no new evidence
    d.verdict = Verdict::kDuplicate;
    if (u.settled) d.votes = now.votes_for(*u.settled);
    return d;
  }
  if (now.by_result.size() > 1) return contested(u, now, d, max_voters);
  // Every counting copy agrees.
  const std::vector<std::string>& agreeing = now.by_result.at(r);
  if (u.settled) {
    d.verdict = Verdict::kConfirm;
    d.votes = now.votes_for(r);
    // Credit once a trusted voter other than the voter confirms it; later confirmations only
    // the newcomer (the others were credited already).
    auto prior = before.by_result.find(r);
    const std::vector<std::string> earlier =
        prior == before.by_result.end() ? std::vector<std::string>{} : credited(u, prior->second);
    for (const std::string& v : credited(u, agreeing))
      if (std::find(earlier.begin(), earlier.end(), v) == earlier.end()) d.credit.push_back(v);
    d.backed = top_rank(u, agreeing) >= kRankTrusted;
    return d;
  }
  const int32_t need = u.wanted >= 2 || !u.newest_may_settle_alone ? 2 : 1;
  d.wanted = std::max(u.wanted, need);
  const int32_t votes = now.votes_for(r);
  const int top = top_rank(u, agreeing);
  if (votes >= need && (!u.needs_root || top == kRankRoot)) {
    d.verdict = Verdict::kSettle;
    d.result = r;
    d.votes = votes;
    d.credit = credited(u, agreeing);
    d.backed = top >= kRankTrusted;
    return d;
  }
  d.verdict = Verdict::kPending;
  if (votes >= need) {  // audited: a root's copy too
    d.wanted = std::max<int32_t>(d.wanted, votes + 1);
    d.want_rank = kRankRoot;
  }
  return d;
}

int next_rank(const UnitVotes& u) {
  const Tally now(u, u.copies.size());
  if (now.by_result.size() > 1) return kRankRoot;
  if (!u.needs_root || now.by_voter.empty() || int32_t(now.by_voter.size()) + 1 < u.wanted) return kRankUntrusted;
  for (const auto& [voter, result] : now.by_voter)
    if (u.rank_of(voter) == kRankRoot) return kRankUntrusted;
  return kRankRoot;
}

std::optional<std::string> place(const std::vector<std::string>& eligible, std::mt19937_64& rng) {
  if (eligible.empty()) return std::nullopt;
  return eligible[std::uniform_int_distribution<size_t>(0, eligible.size() - 1)(rng)];
}

bool confirmation_counts(const std::string& voter, const std::vector<std::string>& agreeing,
                         const std::map<std::string, int>& rank) {
  for (const std::string& other : agreeing) {
    if (other == voter) continue;
    auto it = rank.find(other);
    if (it != rank.end() && it->second >= kRankTrusted) return true;
  }
  return false;
}

bool audited(uint64_t salt, int64_t index, double rate) {
  if (rate <= 0) return false;
  // splitmix64 of (salt, index): a keyed draw, the same after a restart.
  uint64_t z = salt + 0x9e3779b97f4a7c15ULL * (uint64_t(index) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return double(z >> 11) * 0x1.0p-53 < rate;
}

double audit_escape_probability(double rate, int64_t forged) {
  if (forged <= 0) return 1;
  if (rate <= 0) return 1;
  if (rate >= 1) return 0;
  return std::pow(1 - rate, double(forged));
}

int64_t forged_units_caught_with(double rate, double p) {
  if (rate <= 0 || p <= 0) return -1;
  if (rate >= 1) return 1;
  return int64_t(std::ceil(std::log(p) / std::log(1 - rate)));
}

bool failures_fail_job(int64_t failures, const std::set<std::pair<std::string, std::string>>& reporters,
                       const std::map<std::string, int>& rank, int max_failures, int min_owners) {
  if (failures < max_failures) return false;
  std::set<std::string> owners, trusted_workers;
  for (const auto& [owner, worker] : reporters) {
    owners.insert(owner);
    auto it = rank.find(owner);
    if (it != rank.end() && it->second >= kRankTrusted) trusted_workers.insert(worker);
  }
  return int(owners.size()) >= min_owners || trusted_workers.size() >= 2;
}

int64_t lease_cap(int64_t threads, int prefetch, int64_t ceiling) {
  return std::max<int64_t>(1, std::min(ceiling, threads * (1 + prefetch)));
}

}  // namespace c960::cluster
