#include "coordinator/job.h"

#include <algorithm>

namespace c960::cluster::coord {

int Unit::leases() const {
  return int(std::count_if(copies.begin(), copies.end(), [](const Copy& c) { return c.leased(); }));
}

int Unit::results() const {
  return int(std::count_if(copies.begin(), copies.end(), [](const Copy& c) { return c.result && !c.discarded; }));
}

Copy* Unit::copy_of(const std::string& worker) {
  for (Copy& c : copies)
    if (c.worker == worker) return &c;
  return nullptr;
}

void Units::append_folded(int64_t n) {
  if (live_.empty()) {
    base_ += n;
    return;
  }
  for (int64_t k = 0; k < n; ++k) live_.emplace_back().folded = true;
}

void Units::fold(int64_t first, int64_t end) {
  for (int64_t i = std::max(first, base_); i < end; ++i) {
    Unit& u = live_[size_t(i - base_)];
    u = Unit();
    u.folded = true;
  }
  while (!live_.empty() && live_.front().folded) {
    live_.pop_front();
    ++base_;
  }
}

}  // namespace c960::cluster::coord
