// How the inlining works: a depth-first walk from the requested value. At each group member the
// op's index map (access) composes with the incoming coordinates to give each input's
// coordinates, and the op's scalar expression is instantiated with its inputs' inlined
// expressions as arguments. Injective ops have no arithmetic: the value is the input's value at
// the mapped position; a concatenate-like op (select_axis) becomes a chain of selects on the
// output coordinate, whose unused branches may index out of bounds (so their loads clamp).
#include "ir/group_expr.h"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_set>

#include <fmt/format.h>

#include "ir/error.h"

namespace fusetune {
namespace {

std::string CoordsKey(std::span<const IndexExpr> coords) {
  std::string key;
  for (const IndexExpr& c : coords) key += FormatIndex(c) + ";";
  return key;
}

class Inliner {
 public:
  Inliner(const Graph& graph, const FusedGroup& group, const InlineOptions& options)
      : graph_(graph),
        group_(group),
        options_(options),
        members_(group.nodes.begin(), group.nodes.end()) {}

  ScalarExpr Inline(ValueId v, std::vector<IndexExpr> coords, bool clamp) {
    std::string key = fmt::format("{}|{}|{}", v, clamp, CoordsKey(coords));
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    ScalarExpr e = InlineUncached(v, std::move(coords), clamp);
    memo_.emplace(std::move(key), e);
    return e;
  }

  std::vector<ExprLeaf> TakeLeaves() { return std::move(leaves_); }

 private:
  ScalarExpr Leaf(ExprLeaf leaf) {
    std::string key = fmt::format("{}|{}|{}|{}", static_cast<int>(leaf.kind), leaf.value,
                                  leaf.clamp, CoordsKey(leaf.index));
    auto [it, inserted] = leaf_index_.emplace(key, static_cast<int>(leaves_.size()));
    if (inserted) leaves_.push_back(leaf);
    return sx::Arg(it->second, leaves_[it->second].dtype);
  }

  ScalarExpr InlineUncached(ValueId v, std::vector<IndexExpr> coords, bool clamp) {
    const Value& value = graph_.value(v);
    FT_CHECK(static_cast<int>(coords.size()) == value.type.rank(),
             fmt::format("inlining {} with {} coordinates for rank {}", graph_.RefName(v),
                         coords.size(), value.type.rank()));
    if (!members_.count(v)) {
      // A scalar constant folds into the expression; anything else is a load of a kernel input.
      if (value.kind == ValueKind::kConst && value.data && value.type.rank() == 0) {
        return sx::Const(value.data->Get(0), value.type.dtype);
      }
      return Leaf({ExprLeaf::Kind::kInput, v, std::move(coords), value.type.dtype, clamp});
    }
    if (v == group_.anchor) {
      FT_CHECK(options_.stop_at_anchor,
               fmt::format("inlining reached the anchor {}", graph_.RefName(v)));
      return Leaf({ExprLeaf::Kind::kAnchor, v, std::move(coords), value.type.dtype, false});
    }
    const OpDef& op = *value.op;
    std::vector<TensorType> in_types;
    for (ValueId in : value.inputs) in_types.push_back(graph_.value(in).type);
    FT_CHECK(op.access,
             fmt::format("{} ({}) has no index map to inline", graph_.RefName(v), op.name));
    AccessMap access = op.access(in_types, value.type, value.attrs);

    auto input_coords = [&](size_t i) {
      std::vector<IndexExpr> out;
      for (const IndexExpr& d : access.inputs.at(i).index) out.push_back(ix::Substitute(d, coords));
      return out;
    };

    if (op.kind == OpKind::kElementwise) {
      FT_CHECK(op.scalar, fmt::format("{} has no scalar expression", op.name));
      ScalarExpr scalar = op.scalar(in_types, value.type, value.attrs);
      std::vector<ScalarExpr> args;
      for (size_t i = 0; i < value.inputs.size(); ++i)
        args.push_back(Inline(value.inputs[i], input_coords(i), clamp));
      return sx::Substitute(scalar, args);
    }
    FT_CHECK(op.kind == OpKind::kInjective,
             fmt::format("{} ({}) cannot be inlined into a kernel expression", graph_.RefName(v),
                         op.name));
    if (access.select_axis < 0) return Inline(value.inputs.at(0), input_coords(0), clamp);

    // Concatenate: input i where select_begin[i] <= coords[axis] < select_begin[i+1].
    const IndexExpr& position = coords.at(access.select_axis);
    const size_t n = value.inputs.size();
    ScalarExpr result = Inline(value.inputs[n - 1], input_coords(n - 1), true);
    for (size_t i = n - 1; i-- > 0;) {
      ScalarExpr at = Leaf({ExprLeaf::Kind::kIndex, -1, {position}, DType::kInt32, false});
      ScalarExpr before_next =
          sx::Binary(ScalarOp::kLt, at,
                     sx::Const(static_cast<double>(access.select_begin.at(i + 1)), DType::kInt32));
      result = sx::Select(before_next, Inline(value.inputs[i], input_coords(i), true), result);
    }
    return result;
  }

  const Graph& graph_;
  const FusedGroup& group_;
  const InlineOptions& options_;
  std::unordered_set<ValueId> members_;
  std::map<std::string, ScalarExpr> memo_;
  std::map<std::string, int> leaf_index_;
  std::vector<ExprLeaf> leaves_;
};

}  // namespace

std::vector<IndexExpr> IdentityCoords(int rank) {
  std::vector<IndexExpr> coords;
  for (int d = 0; d < rank; ++d) coords.push_back(ix::Var(d));
  return coords;
}

InlinedExpr InlineValue(const Graph& graph, const FusedGroup& group, ValueId value,
                        std::span<const IndexExpr> coords, const InlineOptions& options) {
  Inliner inliner(graph, group, options);
  InlinedExpr out;
  out.expr = inliner.Inline(value, std::vector<IndexExpr>(coords.begin(), coords.end()), false);
  out.leaves = inliner.TakeLeaves();
  return out;
}

}  // namespace fusetune
