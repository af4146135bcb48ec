#include "worker/codegen/templates/group_kernel.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "ir/error.h"

namespace fusetune::codegen {
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

// Removes mods and divisions that cannot change their operand's value over the iteration space,
// and splits q·c + r with r in [0, c) into q (division) and r (mod): a slice of a reshape read
// through a transpose (attention's K as [heads, 64, S] from the QKV dense's output) left
// (s·768 + h·64 + d) / 768 and % 768 in a vectorised loop, i.e. a scalar division per lane.
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

// Affine form of e over the axes, if it is affine.
bool Linearize(const IndexExpr& e, int64_t scale, std::vector<int64_t>& coef, int64_t& constant) {
  switch (e->op) {
    case IndexOp::kConst:
      constant += scale * e->value;
      return true;
    case IndexOp::kVar:
      coef[e->var] += scale;
      return true;
    case IndexOp::kAdd:
      return Linearize(e->a, scale, coef, constant) && Linearize(e->b, scale, coef, constant);
    case IndexOp::kMul:
      if (e->b->op == IndexOp::kConst) return Linearize(e->a, scale * e->b->value, coef, constant);
      if (e->a->op == IndexOp::kConst) return Linearize(e->b, scale * e->a->value, coef, constant);
      return false;
    default:
      return false;
  }
}

bool Same(const IndexExpr& a, const IndexExpr& b) { return FormatIndex(a) == FormatIndex(b); }
bool IsConstOp(const IndexExpr& e, IndexOp op, int64_t* value, IndexExpr* operand) {
  if (e->op != op || e->b->op != IndexOp::kConst) return false;
  *value = e->b->value;
  *operand = e->a;
  return true;
}

// Cancels the unravel/ravel pairs a reshape leaves in a row-major flat index:
//   (X / c)·(c·s) + (X % c)·s            ->  X·s
//   ((X / c1) % c2)·(c1·s) + (X % c1)·s  ->  (X % (c1·c2))·s
void CancelPairs(std::vector<std::pair<IndexExpr, int64_t>>& terms,
                 std::span<const int64_t> extents) {
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& t : terms) t.first = DropTrivial(t.first, extents);
    for (size_t i = 0; i < terms.size() && !changed; ++i) {
      for (size_t j = 0; j < terms.size() && !changed; ++j) {
        if (i == j) continue;
        int64_t c, c1, c2;
        IndexExpr x, inner, xm;
        if (!IsConstOp(terms[j].first, IndexOp::kMod, &c1, &xm)) continue;
        const int64_t si = terms[i].second, sj = terms[j].second;
        if (IsConstOp(terms[i].first, IndexOp::kFloorDiv, &c, &x) && c == c1 && Same(x, xm) &&
            si == c * sj) {
          terms[j].first = xm;
        } else if (IsConstOp(terms[i].first, IndexOp::kMod, &c2, &inner) &&
                   IsConstOp(inner, IndexOp::kFloorDiv, &c, &x) && c == c1 && Same(x, xm) &&
                   si == c1 * sj) {
          terms[j].first = ix::Mod(xm, ix::Const(c1 * c2));
        } else {
          continue;
        }
        terms.erase(terms.begin() + i);
        changed = true;
      }
    }
  }
}

std::string BufferName(const Graph& graph, ValueId v) {
  std::string name = graph.RefName(v);
  if (!name.empty() && name[0] == '%') name = name.substr(1);
  if (name.empty() || !std::isalpha(static_cast<unsigned char>(name[0]))) name = "t" + name;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') ch = '_';
  return name;
}

}  // namespace

FlatIndex MakeFlatIndex(std::span<const IndexExpr> coords, const Shape& shape,
                        std::span<const int64_t> extents) {
  FT_CHECK(coords.size() == shape.size(), "flat index: coordinates do not match the shape");
  std::vector<int64_t> strides = RowMajorStrides(shape);
  std::vector<std::pair<IndexExpr, int64_t>> terms;
  for (size_t d = 0; d < coords.size(); ++d) {
    if (shape[d] == 1) continue;  // always index 0
    terms.emplace_back(coords[d], strides[d]);
  }
  CancelPairs(terms, extents);
  FlatIndex out;
  out.coef.assign(extents.size(), 0);
  for (auto& [e, stride] : terms) {
    std::vector<int64_t> coef(extents.size(), 0);
    int64_t constant = 0;
    if (Linearize(e, 1, coef, constant)) {
      for (size_t a = 0; a < coef.size(); ++a) out.coef[a] += coef[a] * stride;
      out.constant += constant * stride;
    } else {
      out.other.emplace_back(e, stride);
    }
  }
  return out;
}

KExpr ToKExpr(const IndexExpr& e, std::span<const KExpr> axes) {
  switch (e->op) {
    case IndexOp::kConst:
      return kir::Int(e->value);
    case IndexOp::kVar:
      return axes[e->var];
    case IndexOp::kAdd:
      return kir::Add(ToKExpr(e->a, axes), ToKExpr(e->b, axes));
    case IndexOp::kMul:
      return kir::Mul(ToKExpr(e->a, axes), ToKExpr(e->b, axes));
    case IndexOp::kFloorDiv:
      return kir::FloorDiv(ToKExpr(e->a, axes), ToKExpr(e->b, axes));
    case IndexOp::kMod:
      return kir::Mod(ToKExpr(e->a, axes), ToKExpr(e->b, axes));
  }
  return kir::Int(0);
}

KExpr ToKExpr(const FlatIndex& index, std::span<const KExpr> axes) {
  KExpr out = kir::Int(index.constant);
  for (size_t a = 0; a < index.coef.size(); ++a) {
    if (index.coef[a] != 0) out = kir::Add(out, kir::Mul(axes[a], kir::Int(index.coef[a])));
  }
  for (const auto& [e, stride] : index.other)
    out = kir::Add(out, kir::Mul(ToKExpr(e, axes), kir::Int(stride)));
  return out;
}

std::vector<KExpr> Unflatten(KExpr flat, std::span<const int64_t> shape) {
  std::vector<KExpr> coords(shape.size());
  int64_t inner = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    KExpr q = kir::FloorDiv(flat, kir::Int(inner));
    coords[d] = d == 0 ? q : kir::Mod(q, kir::Int(shape[d]));
    if (shape[d] == 1) coords[d] = kir::Int(0);
    inner *= shape[d];
  }
  return coords;
}

GroupKernel::GroupKernel(const Graph& graph, const FusedGroup& group, const std::string& name)
    : graph_(graph), group_(group) {
  kernel_.name = name;
  for (ValueId v : group.inputs) {
    const TensorType& t = graph.value(v).type;
    buffers_[v] =
        kernel_.AddParam(BufferName(graph, v), t.dtype, std::max<int64_t>(1, t.NumElements()));
  }
  for (ValueId v : group.outputs) {
    const TensorType& t = graph.value(v).type;
    buffers_[v] =
        kernel_.AddParam(BufferName(graph, v), t.dtype, std::max<int64_t>(1, t.NumElements()));
  }
}

std::vector<KExpr> GroupKernel::LeafArgs(const InlinedExpr& expr, std::span<const KExpr> axes,
                                         std::span<const int64_t> extents, const AnchorFn& anchor,
                                         const FlatFn& flat_fn) {
  std::vector<KExpr> args;
  for (const ExprLeaf& leaf : expr.leaves) {
    switch (leaf.kind) {
      case ExprLeaf::Kind::kInput: {
        const Shape& shape = Type(leaf.value).shape;
        std::vector<IndexExpr> coords = leaf.index;
        if (leaf.clamp) {
          // Where the select does not pick this load its index may be out of range: clamp it.
          std::vector<int64_t> strides = RowMajorStrides(shape);
          KExpr flat = kir::Int(0);
          for (size_t d = 0; d < coords.size(); ++d) {
            KExpr c =
                kir::Min(kir::Max(ToKExpr(coords[d], axes), kir::Int(0)), kir::Int(shape[d] - 1));
            flat = kir::Add(flat, kir::Mul(c, kir::Int(strides[d])));
          }
          args.push_back(kir::Load(Buffer(leaf.value), flat));
        } else {
          FlatIndex index = MakeFlatIndex(coords, shape, extents);
          args.push_back(
              kir::Load(Buffer(leaf.value), flat_fn ? flat_fn(index) : ToKExpr(index, axes)));
        }
        break;
      }
      case ExprLeaf::Kind::kIndex:
        args.push_back(ToKExpr(leaf.index.at(0), axes));
        break;
      case ExprLeaf::Kind::kAnchor:
        FT_CHECK(anchor != nullptr, "an anchor leaf with no anchor value");
        args.push_back(anchor(leaf));
        break;
    }
  }
  return args;
}

KStmt GroupKernel::CombineLanes(int acc, int lanes, const ScalarExpr& combine, KExpr init,
                                int dst) {
  std::vector<KStmt> stmts;
  int n = lanes;
  for (; n > 1 && n % 2 == 0; n /= 2) {
    const int half = n / 2;
    const int l = Var("l");
    KExpr pair = kir::Eval(combine, {kir::Load(acc, kir::Var(l)),
                                     kir::Load(acc, kir::Add(kir::Var(l), kir::Int(half)))});
    stmts.push_back(kir::For(l, half, half > 1 ? LoopKind::kVectorized : LoopKind::kSerial,
                             kir::Store(acc, kir::Var(l), pair), half));
  }
  stmts.push_back(kir::Store(dst, kir::Int(0), std::move(init)));
  const int l = Var("l");
  stmts.push_back(kir::For(
      l, n, LoopKind::kUnrolled,
      kir::Store(dst, kir::Int(0),
                 kir::Eval(combine, {kir::Load(dst, kir::Int(0)), kir::Load(acc, kir::Var(l))}))));
  return kir::Block(std::move(stmts));
}

KExpr GroupKernel::Lower(const InlinedExpr& expr, std::span<const KExpr> axes,
                         std::span<const int64_t> extents, const AnchorFn& anchor,
                         const FlatFn& flat) {
  return kir::Eval(expr.expr, LeafArgs(expr, axes, extents, anchor, flat));
}

}  // namespace fusetune::codegen
