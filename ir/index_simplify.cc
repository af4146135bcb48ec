#include "ir/index_simplify.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace fusetune {
namespace {

struct Bounds {
  int64_t lo, hi;
};

Bounds BoundsOf(const IndexExpr& e, std::span<const int64_t> extents) {
  switch (e->op) {
    case IndexOp::kConst:
      return {e->value, e->value};
    case IndexOp::kVar:
      return {0, std::max<int64_t>(0, extents[e->var] - 1)};
    case IndexOp::kAdd: {
      Bounds a = BoundsOf(e->a, extents), b = BoundsOf(e->b, extents);
      return {a.lo + b.lo, a.hi + b.hi};
    }
    case IndexOp::kMul: {
      Bounds a = BoundsOf(e->a, extents), b = BoundsOf(e->b, extents);
      int64_t c[] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
      return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
    }
    case IndexOp::kFloorDiv: {
      Bounds a = BoundsOf(e->a, extents);
      if (e->b->op == IndexOp::kConst && e->b->value > 0) {
        auto fd = [&](int64_t x) {
          return x >= 0 ? x / e->b->value : -((-x + e->b->value - 1) / e->b->value);
        };
        return {fd(a.lo), fd(a.hi)};
      }
      return {INT64_MIN / 4, INT64_MAX / 4};
    }
    case IndexOp::kMod: {
      Bounds a = BoundsOf(e->a, extents);
      if (e->b->op == IndexOp::kConst && e->b->value > 0) {
        if (a.lo >= 0 && a.hi < e->b->value) return a;
        return {0, e->b->value - 1};
      }
      return {INT64_MIN / 4, INT64_MAX / 4};
    }
  }
  return {INT64_MIN / 4, INT64_MAX / 4};
}

void AddTerms(const IndexExpr& e, std::vector<IndexExpr>& terms) {
  if (e->op != IndexOp::kAdd) {
    terms.push_back(e);
    return;
  }
  AddTerms(e->a, terms);
  AddTerms(e->b, terms);
}

// e / c when e is a multiple of c (a constant, or a product with a constant factor): else null.
IndexExpr ExactQuotient(const IndexExpr& e, int64_t c) {
  if (e->op == IndexOp::kConst) return e->value % c == 0 ? ix::Const(e->value / c) : nullptr;
  if (e->op == IndexOp::kMul && e->b->op == IndexOp::kConst && e->b->value % c == 0)
    return ix::Mul(e->a, ix::Const(e->b->value / c));
  return nullptr;
}

}  // namespace

IndexExpr DropTrivial(const IndexExpr& e, std::span<const int64_t> extents) {
  if (e->op == IndexOp::kConst || e->op == IndexOp::kVar) return e;
  IndexExpr a = DropTrivial(e->a, extents), b = DropTrivial(e->b, extents);
  if ((e->op == IndexOp::kMod || e->op == IndexOp::kFloorDiv) && b->op == IndexOp::kConst &&
      b->value > 0) {
    const int64_t c = b->value;
    Bounds ab = BoundsOf(a, extents);
    if (ab.lo >= 0 && ab.hi < c) return e->op == IndexOp::kMod ? a : ix::Const(0);
    std::vector<IndexExpr> terms;
    AddTerms(a, terms);
    IndexExpr q = ix::Const(0), r = ix::Const(0);
    for (const IndexExpr& t : terms) {
      if (IndexExpr tq = ExactQuotient(t, c))
        q = ix::Add(q, tq);
      else
        r = ix::Add(r, t);
    }
    Bounds rb = BoundsOf(r, extents);
    if (rb.lo >= 0 && rb.hi < c && !(q->op == IndexOp::kConst && q->value == 0))
      return e->op == IndexOp::kMod ? r : q;
  }
  switch (e->op) {
    case IndexOp::kAdd:
      return ix::Add(a, b);
    case IndexOp::kMul:
      return ix::Mul(a, b);
    case IndexOp::kFloorDiv:
      return ix::FloorDiv(a, b);
    case IndexOp::kMod:
      return ix::Mod(a, b);
    default:
      return e;
  }
}

}  // namespace fusetune
