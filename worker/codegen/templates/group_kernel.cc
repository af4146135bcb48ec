#include "worker/codegen/templates/group_kernel.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/index_simplify.h"

namespace fusetune::codegen {
namespace {

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

int ReductionChains(int64_t extent, int width) {
  return static_cast<int>(std::clamp<int64_t>(extent / std::max(width, 1), 1, 4));
}

KStmt GroupKernel::ChainedLoop(int64_t extent, int width,
                               const std::function<KStmt(KExpr slot, KExpr l)>& update) {
  const int chains = ReductionChains(extent, width);
  const int64_t block = int64_t{chains} * width, blocks = extent / block;
  const LoopKind lanes = width > 1 ? LoopKind::kVectorized : LoopKind::kSerial;
  std::vector<KStmt> stmts;
  if (blocks > 0) {
    const int j = Var("j"), u = Var("u"), v = Var("l");
    KExpr slot = kir::Add(kir::Mul(kir::Var(u), kir::Int(width)), kir::Var(v));
    KExpr l = kir::Add(kir::Mul(kir::Var(j), kir::Int(block)), slot);
    stmts.push_back(kir::For(j, blocks, LoopKind::kSerial,
                             kir::For(u, chains, LoopKind::kUnrolled,
                                      kir::For(v, width, lanes, update(slot, l), width))));
  }
  if (const int64_t rest = extent - blocks * block; rest > 0) {
    const int t = Var("l");
    KExpr slot = kir::Mod(kir::Var(t), kir::Int(width));
    stmts.push_back(kir::For(t, rest, lanes,
                             update(slot, kir::Add(kir::Int(blocks * block), kir::Var(t))), width));
  }
  return kir::Block(std::move(stmts));
}

KExpr GroupKernel::Lower(const InlinedExpr& expr, std::span<const KExpr> axes,
                         std::span<const int64_t> extents, const AnchorFn& anchor,
                         const FlatFn& flat) {
  return kir::Eval(expr.expr, LeafArgs(expr, axes, extents, anchor, flat));
}

}  // namespace fusetune::codegen
