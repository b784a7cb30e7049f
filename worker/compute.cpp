#include "compute.h"

#include "absl/strings/str_cat.h"
#include "config.h"
#include "notation.h"
#include "position.h"
#include "u128.h"

namespace c960::cluster {

absl::StatusOr<v1::UnitResult> compute_unit(const v1::UnitSpec& spec, PerftHash* hash) {
  if (spec.kind_case() != v1::UnitSpec::kPerft) return absl::InvalidArgumentError("spec: not a perft unit");
  const v1::PerftUnitSpec& p = spec.perft();
  if (p.depth() < 0 || p.depth() > kMaxUnitDepth)
    return absl::InvalidArgumentError(absl::StrCat("spec.perft.depth: ", p.depth(), " is not in 0..", kMaxUnitDepth));
  absl::StatusOr<Position> pos = Position::from_fen(p.fen());
  if (!pos.ok()) return absl::InvalidArgumentError(absl::StrCat("spec.perft.fen: ", pos.status().message()));
  v1::UnitResult out;
  v1::PerftUnitResult* r = out.mutable_perft();
  if (p.divide() && p.depth() >= 1) {
    NodeCount total = 0;
    for (const DivideEntry& e : divide(*pos, p.depth(), hash)) {
      v1::MoveCount* mc = r->add_divide();
      mc->set_move(to_uci(e.move));
      to_proto(e.nodes, mc->mutable_nodes());
      total += e.nodes;
    }
    to_proto(total, r->mutable_nodes());
  } else {
    to_proto(perft(*pos, p.depth(), hash), r->mutable_nodes());
  }
  return out;
}

}  // namespace c960::cluster
