// NodeCount (unsigned __int128) <-> c960.v1.UInt128.
#pragma once

#include "c960/v1/cluster.pb.h"
#include "core/perft.h"

namespace c960::cluster {

inline v1::UInt128 to_proto(NodeCount n) {
  v1::UInt128 p;
  p.set_hi(uint64_t(n >> 64));
  p.set_lo(uint64_t(n));
  return p;
}
inline void to_proto(NodeCount n, v1::UInt128* p) { *p = to_proto(n); }
inline NodeCount from_proto(const v1::UInt128& p) { return (NodeCount(p.hi()) << 64) | p.lo(); }

}  // namespace c960::cluster
