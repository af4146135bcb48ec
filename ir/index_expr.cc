#include "ir/index_expr.h"

#include <fmt/format.h>

#include "ir/error.h"

namespace fusetune {
namespace {

IndexExpr Make(IndexOp op, IndexExpr a, IndexExpr b, int64_t value = 0, int var = -1) {
  IndexNode n;
  n.op = op;
  n.value = value;
  n.var = var;
  n.a = std::move(a);
  n.b = std::move(b);
  return std::make_shared<const IndexNode>(std::move(n));
}

bool IsConst(const IndexExpr& e, int64_t* v = nullptr) {
  if (e->op != IndexOp::kConst) return false;
  if (v) *v = e->value;
  return true;
}

// Python semantics: the quotient rounds toward negative infinity and the remainder takes the
// divisor's sign, so negative offsets in index maps behave as in numpy.
int64_t FloorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t FloorModInt(int64_t a, int64_t b) { return a - FloorDivInt(a, b) * b; }

}  // namespace

namespace ix {

IndexExpr Const(int64_t v) { return Make(IndexOp::kConst, nullptr, nullptr, v); }

IndexExpr Var(int axis) { return Make(IndexOp::kVar, nullptr, nullptr, 0, axis); }

IndexExpr Add(IndexExpr a, IndexExpr b) {
  int64_t x, y;
  if (IsConst(a, &x) && IsConst(b, &y)) return Const(x + y);
  if (IsConst(a)) std::swap(a, b);  // constants go right
  if (IsConst(b, &y)) {
    if (y == 0) return a;
    // (e + c1) + c2 -> e + (c1 + c2)
    int64_t inner;
    if (a->op == IndexOp::kAdd && IsConst(a->b, &inner)) return Add(a->a, Const(inner + y));
  }
  return Make(IndexOp::kAdd, std::move(a), std::move(b));
}

IndexExpr Mul(IndexExpr a, IndexExpr b) {
  int64_t x, y;
  if (IsConst(a, &x) && IsConst(b, &y)) return Const(x * y);
  if (IsConst(a)) std::swap(a, b);
  if (IsConst(b, &y)) {
    if (y == 0) return Const(0);
    if (y == 1) return a;
  }
  return Make(IndexOp::kMul, std::move(a), std::move(b));
}

IndexExpr FloorDiv(IndexExpr a, IndexExpr b) {
  int64_t x, y;
  if (IsConst(b, &y)) {
    FT_CHECK(y != 0, "index FloorDiv by zero");
    if (IsConst(a, &x)) return Const(FloorDivInt(x, y));
    if (y == 1) return a;
  }
  return Make(IndexOp::kFloorDiv, std::move(a), std::move(b));
}

IndexExpr Mod(IndexExpr a, IndexExpr b) {
  int64_t x, y;
  if (IsConst(b, &y)) {
    FT_CHECK(y != 0, "index Mod by zero");
    if (IsConst(a, &x)) return Const(FloorModInt(x, y));
    if (y == 1) return Const(0);
  }
  return Make(IndexOp::kMod, std::move(a), std::move(b));
}

IndexExpr Substitute(const IndexExpr& e, std::span<const IndexExpr> vars) {
  switch (e->op) {
    case IndexOp::kConst:
      return e;
    case IndexOp::kVar:
      FT_CHECK(e->var >= 0 && e->var < static_cast<int>(vars.size()),
               fmt::format("index Substitute: no replacement for i{}", e->var));
      return vars[e->var];
    case IndexOp::kAdd:
      return Add(Substitute(e->a, vars), Substitute(e->b, vars));
    case IndexOp::kMul:
      return Mul(Substitute(e->a, vars), Substitute(e->b, vars));
    case IndexOp::kFloorDiv:
      return FloorDiv(Substitute(e->a, vars), Substitute(e->b, vars));
    case IndexOp::kMod:
      return Mod(Substitute(e->a, vars), Substitute(e->b, vars));
  }
  FT_CHECK(false, "bad IndexOp");
}

}  // namespace ix

int64_t EvalIndex(const IndexExpr& e, std::span<const int64_t> coords) {
  switch (e->op) {
    case IndexOp::kConst:
      return e->value;
    case IndexOp::kVar:
      return coords[e->var];
    case IndexOp::kAdd:
      return EvalIndex(e->a, coords) + EvalIndex(e->b, coords);
    case IndexOp::kMul:
      return EvalIndex(e->a, coords) * EvalIndex(e->b, coords);
    case IndexOp::kFloorDiv:
      return FloorDivInt(EvalIndex(e->a, coords), EvalIndex(e->b, coords));
    case IndexOp::kMod:
      return FloorModInt(EvalIndex(e->a, coords), EvalIndex(e->b, coords));
  }
  FT_CHECK(false, "bad IndexOp");
}

std::string FormatIndex(const IndexExpr& e) {
  switch (e->op) {
    case IndexOp::kConst:
      return std::to_string(e->value);
    case IndexOp::kVar:
      return fmt::format("i{}", e->var);
    case IndexOp::kAdd:
      return fmt::format("({} + {})", FormatIndex(e->a), FormatIndex(e->b));
    case IndexOp::kMul:
      return fmt::format("{}*{}", FormatIndex(e->a), FormatIndex(e->b));
    case IndexOp::kFloorDiv:
      return fmt::format("floordiv({}, {})", FormatIndex(e->a), FormatIndex(e->b));
    case IndexOp::kMod:
      return fmt::format("floormod({}, {})", FormatIndex(e->a), FormatIndex(e->b));
  }
  return "?";
}

}  // namespace fusetune
