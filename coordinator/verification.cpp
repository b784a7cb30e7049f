#include "coordinator/verification.h"

#include <algorithm>
#include <map>

namespace c960::cluster {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kPending: return "pending";
    case Verdict::kSettle: return "settle";
    case Verdict::kConfirm: return "confirm";
    case Verdict::kDuplicate: return "duplicate";
    case Verdict::kReopen: return "reopen";
    case Verdict::kMismatch: return "mismatch";
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
  // Two different results from one credential: it lies (or two of its workers disagree, which
  // an honest credential's never do). None of its copies count.
  if (now.liars.count(mine.voter)) {
    d.quarantine.push_back(mine.voter);
    d.verdict = u.settled ? Verdict::kMismatch : Verdict::kDiscard;
    return d;
  }
  const std::string& r = *mine.result;
  const bool new_voter = !before.by_voter.count(mine.voter);
  if (u.settled) {
    if (r == *u.settled) {
      if (!new_voter) {
        d.verdict = Verdict::kDuplicate;
        d.votes = now.votes_for(r);
        return d;
      }
      d.verdict = Verdict::kConfirm;
      d.votes = now.votes_for(r);
      // The settled result's first confirmation credits everyone behind it; later ones only
      // the newcomer (the others were credited already).
      if (d.votes == 2)
        d.credit = now.by_result.at(r);
      else if (d.votes > 2)
        d.credit = {mine.voter};
      return d;
    }
    const int32_t behind = now.votes_for(*u.settled);
    if (behind >= 2) {
      d.verdict = Verdict::kMismatch;
      d.quarantine.push_back(mine.voter);
      return d;
    }
    d.verdict = Verdict::kReopen;
    d.disagreement = true;
    d.wanted = std::max<int32_t>(u.wanted, int32_t(now.by_voter.size()) + 1);
    return d;
  }
  if (!new_voter) {  // the same voter's result again (another of its copies): no new evidence
    d.verdict = Verdict::kDuplicate;
    return d;
  }
  const int32_t need = u.wanted >= 2 || !u.newest_may_settle_alone ? 2 : 1;
  d.wanted = std::max(u.wanted, need);
  const int32_t votes = now.votes_for(r);
  if (votes >= need && (need >= 2 || now.by_result.size() == 1)) {
    d.verdict = Verdict::kSettle;
    d.result = r;
    d.votes = votes;
    if (votes >= 2) {
      d.credit = now.by_result.at(r);
      for (const auto& [other, voters] : now.by_result)
        if (other != r) d.quarantine.insert(d.quarantine.end(), voters.begin(), voters.end());
    }
    return d;
  }
  if (now.by_result.size() > 1) {
    d.disagreement = true;
    const int32_t voters = int32_t(now.by_voter.size());
    if (voters >= max_voters) {
      d.verdict = Verdict::kFail;
      return d;
    }
    d.wanted = std::max<int32_t>(u.wanted, voters + 1);
  }
  d.verdict = Verdict::kPending;
  return d;
}

}  // namespace c960::cluster
