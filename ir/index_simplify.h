#pragma once
// Index expressions simplified over a known iteration space (each variable i in [0, extents[i])).
#include <cstdint>
#include <span>

#include "ir/index_expr.h"

namespace fusetune {

// Removes mods and divisions that cannot change their operand's value over the iteration space,
// and splits q·c + r with r in [0, c) into q (division) and r (mod): a slice of a reshape read
// through a transpose (attention's K as [heads, 64, S] from the QKV dense's output) left
// (s·768 + h·64 + d) / 768 and % 768 in a vectorised loop, i.e. a scalar division per lane.
IndexExpr DropTrivial(const IndexExpr& e, std::span<const int64_t> extents);

}  // namespace fusetune
