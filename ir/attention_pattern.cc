#include "ir/attention_pattern.h"

#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>

#include "ir/norm_pattern.h"

namespace fusetune {
namespace {

bool IsInlinable(const Graph& g, ValueId v) {
  if (g.value(v).kind != ValueKind::kNode) return false;
  const OpDef& op = *g.value(v).op;
  return (op.kind == OpKind::kElementwise || op.kind == OpKind::kInjective) &&
         op.pattern <= OpPattern::kInjective;
}

// The shape without its leading 1s: a model that writes its scores as [1, heads, M, N] (GPT-2's
// export, for a [1, 1, M, N] causal mask) holds the same elements as the [heads, M, N] scores.
Shape WithoutLeadingOnes(const Shape& s) {
  size_t i = 0;
  while (i + 1 < s.size() && s[i] == 1) ++i;
  return Shape(s.begin() + static_cast<std::ptrdiff_t>(i), s.end());
}

bool ScoresShaped(const Graph& g, ValueId v, const Shape& scores_shape) {
  return WithoutLeadingOnes(g.value(v).type.shape) == WithoutLeadingOnes(scores_shape);
}

// A reshape (or expand_dims, squeeze) that only adds or drops leading 1s of a scores-shaped value.
bool IsUnitReshape(const Graph& g, ValueId v, const Shape& scores_shape) {
  if (g.value(v).kind != ValueKind::kNode || !g.value(v).op->row_major_view) return false;
  return ScoresShaped(g, v, scores_shape) && ScoresShaped(g, g.value(v).inputs[0], scores_shape);
}

// An element-wise step between the scores and the softmax (a scale, a mask), or a reshape of
// the scores' leading 1s.
bool IsScoreStep(const Graph& g, ValueId v, const Shape& scores_shape) {
  if (g.value(v).kind != ValueKind::kNode) return false;
  if (IsUnitReshape(g, v, scores_shape)) return true;
  const OpDef& op = *g.value(v).op;
  return op.kind == OpKind::kElementwise && op.pattern <= OpPattern::kBroadcast &&
         ScoresShaped(g, v, scores_shape);
}

// `axis` is the last of `shape`, a rank-3 shape or one with leading 1s.
bool LastAxisOfRank3(const Shape& shape, int64_t axis) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (axis < 0) axis += rank;
  return rank >= 3 && axis == rank - 1 &&
         std::all_of(shape.begin(), shape.end() - 3, [](int64_t d) { return d == 1; });
}

// The softmax P is: nn.softmax, or one written op by op (ir/norm_pattern.h), whose steps then
// belong to the attention kernel too.
struct Softmax {
  ValueId input = -1;          // the scores after their steps
  std::vector<ValueId> steps;  // max, x - max, exp, sum; empty for nn.softmax
};

// `v` as a softmax over the last axis (of a rank-3 tensor, leading 1s aside), if it is one.
std::optional<Softmax> SoftmaxOverLastAxis(const Graph& g, ValueId v) {
  const Value& sm = g.value(v);
  if (g.IsOp(v, "nn.softmax")) {
    if (!LastAxisOfRank3(sm.type.shape, sm.attrs.GetInt("axis"))) return std::nullopt;
    return Softmax{sm.inputs[0], {}};
  }
  const std::optional<NormOpByOp> n = MatchNormOpByOp(g, v);
  if (!n || n->kind != RowNorm::kSoftmax || !LastAxisOfRank3(sm.type.shape, n->axis))
    return std::nullopt;
  return Softmax{n->input, n->steps};
}

bool IsSoftmaxOpByOp(const Graph& g, ValueId v) {
  const std::optional<NormOpByOp> n = MatchNormOpByOp(g, v);
  return n && n->kind == RowNorm::kSoftmax;
}

// The rank-3 shape of a softmax SoftmaxOverLastAxis accepts.
Shape Rank3(const Shape& s) { return Shape(s.end() - 3, s.end()); }

bool IsFloat32(const Graph& g, ValueId v) { return g.value(v).type.dtype == DType::kFloat32; }

std::optional<FusedGroup> Reject(std::string* why_not, std::string message) {
  if (why_not) *why_not = std::move(message);
  return std::nullopt;
}

}  // namespace

bool IsAttentionCandidate(const Graph& g, std::span<const ValueId> nodes) {
  bool by_op = false, product = false;
  for (ValueId v : nodes) {
    if (g.IsOp(v, "nn.softmax")) return true;
    by_op |= IsSoftmaxOpByOp(g, v);
    product |= g.IsOp(v, "nn.batch_matmul");
  }
  // A softmax written op by op without a product is its own row kernel (ir/fusion.h).
  return by_op && product;
}

std::optional<FusedGroup> AnalyzeAttention(const Graph& g, FusedGroup group, std::string* why_not) {
  const std::unordered_set<ValueId> in_group(group.nodes.begin(), group.nodes.end());
  auto inside = [&](ValueId v) { return in_group.count(v) > 0; };
  const std::string kWhat = "attention (batch_matmul, scale/mask, softmax, batch_matmul)";

  AttentionNodes a;
  a.output = group.sink;
  if (!g.IsOp(a.output, "nn.batch_matmul"))
    return Reject(why_not, fmt::format("group has several anchors and its sink {} is not a "
                                       "batch_matmul; several anchors fit one kernel only as {}",
                                       g.RefName(a.output), kWhat));
  for (ValueId v : group.outputs)
    if (v != a.output)
      return Reject(why_not, fmt::format("{} is used outside the attention group; the kernel "
                                         "writes only its output, never scores or probabilities",
                                         g.RefName(v)));
  const Value& out = g.value(a.output);
  // P may reach the output through reshapes of its leading 1s (back from GPT-2's rank 4).
  const Shape& p_shape = g.value(out.inputs[0]).type.shape;
  std::vector<ValueId> p_reshapes;
  a.softmax = out.inputs[0];
  while (inside(a.softmax) && IsUnitReshape(g, a.softmax, p_shape)) {
    p_reshapes.insert(p_reshapes.begin(), a.softmax);
    a.softmax = g.value(a.softmax).inputs[0];
  }
  if (!inside(a.softmax) || !(g.IsOp(a.softmax, "nn.softmax") || IsSoftmaxOpByOp(g, a.softmax)) ||
      out.attrs.GetBool("transpose_a"))
    return Reject(why_not, fmt::format("{} does not multiply a softmax (not transposed) by V, "
                                       "as {} does",
                                       g.RefName(a.output), kWhat));
  if (out.inputs[1] == out.inputs[0])
    return Reject(why_not, "the softmax is also V; attention reads V separately");
  const std::optional<Softmax> softmax = SoftmaxOverLastAxis(g, a.softmax);
  if (!softmax)
    return Reject(why_not, fmt::format("{} is not a softmax over the last axis of a rank-3 "
                                       "tensor (leading 1s aside)",
                                       g.RefName(a.softmax)));
  // A softmax written op by op has its steps in the group: each lies on a path from its input to
  // its division, so a group without one is not convex (refused before this).
  const Shape scores_shape = Rank3(g.value(a.softmax).type.shape);

  // Back from the softmax through the element-wise steps to the scores.
  ValueId v = softmax->input;
  while (inside(v) && !g.IsOp(v, "nn.batch_matmul")) {
    if (!IsScoreStep(g, v, scores_shape))
      return Reject(why_not, fmt::format("{} ({}) between the scores and the softmax is not an "
                                         "element-wise step of the scores' shape",
                                         g.RefName(v), g.value(v).op->name));
    ValueId previous = -1;
    for (ValueId in : g.value(v).inputs) {
      if (!inside(in)) continue;
      if (previous >= 0 && previous != in)
        return Reject(why_not, fmt::format("{} combines two computed values; the scores' "
                                           "steps read the scores and values from memory",
                                           g.RefName(v)));
      previous = in;
    }
    if (previous < 0)
      return Reject(why_not, fmt::format("{} does not read the scores", g.RefName(v)));
    a.chain.push_back(v);
    v = previous;
  }
  std::reverse(a.chain.begin(), a.chain.end());
  if (!inside(v))
    return Reject(why_not, fmt::format("the softmax {} is not fed by a batch_matmul in the group",
                                       g.RefName(a.softmax)));
  a.scores = v;
  if (g.value(a.scores).type.shape != scores_shape)
    return Reject(why_not, "the scores' shape differs from the softmax's");

  // Each of scores, chain, softmax and P's reshapes is read inside the group by the next step
  // only; a softmax written op by op reads its input in its steps, which read only each other.
  std::vector<ValueId> line{a.scores};
  line.insert(line.end(), a.chain.begin(), a.chain.end());
  line.push_back(a.softmax);
  line.insert(line.end(), p_reshapes.begin(), p_reshapes.end());
  line.push_back(a.output);
  std::unordered_set<ValueId> softmax_ops(softmax->steps.begin(), softmax->steps.end());
  softmax_ops.insert(a.softmax);
  for (size_t i = 0; i + 1 < line.size(); ++i)
    for (ValueId u : g.Users(line[i]))
      if (inside(u) && u != line[i + 1] && !(line[i + 1] == a.softmax && softmax_ops.count(u)))
        return Reject(why_not, fmt::format("{} is read by {} besides the next attention step",
                                           g.RefName(line[i]), g.RefName(u)));
  for (ValueId s : softmax->steps)
    for (ValueId u : g.Users(s))
      if (inside(u) && !softmax_ops.count(u))
        return Reject(why_not, fmt::format("{}, a step of the softmax, is read by {}", g.RefName(s),
                                           g.RefName(u)));

  // The rest is the operands' prologue: inlinable, read only by the prologue or as Q, K or V.
  std::unordered_set<ValueId> core(line.begin(), line.end());
  core.insert(softmax->steps.begin(), softmax->steps.end());
  const Value& scores = g.value(a.scores);
  for (ValueId p : group.nodes) {
    if (core.count(p)) continue;
    if (!IsInlinable(g, p))
      return Reject(why_not, fmt::format("{} ({}) in an attention group is neither a step of "
                                         "the chain nor an element-wise/injective producer of Q, "
                                         "K or V",
                                         g.RefName(p), g.value(p).op->name));
    for (ValueId u : g.Users(p)) {
      bool operand = (u == a.scores && (scores.inputs[0] == p || scores.inputs[1] == p)) ||
                     (u == a.output && out.inputs[1] == p);
      if (!core.count(u) || operand) continue;
      return Reject(why_not,
                    fmt::format("{} feeds {} other than as Q, K or V", g.RefName(p), g.RefName(u)));
    }
  }
  for (ValueId f :
       {scores.inputs[0], scores.inputs[1], out.inputs[1], a.scores, a.softmax, a.output})
    if (!IsFloat32(g, f))
      return Reject(why_not, fmt::format("{} is {}; the attention kernel computes float32",
                                         g.RefName(f), DTypeName(g.value(f).type.dtype)));

  group.templ = GroupTemplate::kAttention;
  group.anchor = a.scores;
  group.attention = std::move(a);
  return group;
}

std::vector<AttentionChain> FindAttentionChains(const Graph& g) {
  const std::unordered_set<ValueId> outputs(g.outputs().begin(), g.outputs().end());
  // Whether `v` is read, and only by `allowed`, and is no graph output.
  auto only_readers = [&](ValueId v, const std::unordered_set<ValueId>& allowed) {
    if (outputs.count(v) || g.Users(v).empty()) return false;
    return std::all_of(g.Users(v).begin(), g.Users(v).end(),
                       [&](ValueId u) { return allowed.count(u) > 0; });
  };
  std::vector<AttentionChain> chains;
  for (ValueId sm = 0; sm < static_cast<ValueId>(g.values().size()); ++sm) {
    if (g.value(sm).kind != ValueKind::kNode) continue;
    const std::optional<Softmax> softmax = SoftmaxOverLastAxis(g, sm);
    if (!softmax) continue;
    const Shape shape = Rank3(g.value(sm).type.shape);
    std::vector<ValueId> core{sm};
    core.insert(core.end(), softmax->steps.begin(), softmax->steps.end());
    // A softmax written op by op reads its input in its steps, which read only each other.
    const std::unordered_set<ValueId> softmax_ops(core.begin(), core.end());
    if (!std::all_of(softmax->steps.begin(), softmax->steps.end(),
                     [&](ValueId s) { return only_readers(s, softmax_ops); }))
      continue;
    // P reaches the output directly or through reshapes of its leading 1s.
    ValueId p = sm;
    while (g.Users(p).size() == 1 && !outputs.count(p) && IsUnitReshape(g, g.Users(p)[0], shape)) {
      p = g.Users(p)[0];
      core.push_back(p);
    }
    if (g.Users(p).size() != 1 || outputs.count(p)) continue;
    const ValueId out = g.Users(p)[0];
    if (!g.IsOp(out, "nn.batch_matmul") || g.value(out).inputs[0] != p ||
        g.value(out).inputs[1] == p || g.value(out).attrs.GetBool("transpose_a"))
      continue;
    core.push_back(out);
    // Back to the scores, each step read only by the next (the softmax's input by its ops).
    ValueId v = softmax->input;
    std::unordered_set<ValueId> next = softmax_ops;
    bool ok = true;
    while (ok && !g.IsOp(v, "nn.batch_matmul")) {
      ok = IsScoreStep(g, v, shape) && only_readers(v, next);
      if (!ok) break;
      ValueId previous = -1;
      for (ValueId in : g.value(v).inputs)
        if (g.value(in).kind == ValueKind::kNode && ScoresShaped(g, in, shape) &&
            (g.IsOp(in, "nn.batch_matmul") || IsScoreStep(g, in, shape)))
          previous = previous < 0 ? in : -2;
      ok = previous >= 0;
      core.push_back(v);
      next = {v};
      v = previous;
    }
    if (!ok || !only_readers(v, next)) continue;
    core.push_back(v);
    std::sort(core.begin(), core.end());

    AttentionChain chain;
    chain.core = core;
    const ValueId operands[3][2] = {
        {v, g.value(v).inputs[0]}, {v, g.value(v).inputs[1]}, {out, g.value(out).inputs[1]}};
    for (const auto& [consumer, operand] : operands) {
      // Producers read only by this operand's prologue (or the consumer), nearest first.
      std::vector<ValueId> prologue;
      std::unordered_set<ValueId> taken;
      std::vector<ValueId> frontier{operand};
      while (!frontier.empty()) {
        ValueId p = frontier.front();
        frontier.erase(frontier.begin());
        if (taken.count(p) || !IsInlinable(g, p) || outputs.count(p)) continue;
        bool private_use = true;
        for (ValueId u : g.Users(p)) private_use &= u == consumer || taken.count(u) > 0;
        if (!private_use) continue;
        taken.insert(p);
        prologue.push_back(p);
        for (ValueId in : g.value(p).inputs) frontier.push_back(in);
      }
      chain.prologues.push_back(std::move(prologue));
    }
    chains.push_back(std::move(chain));
  }
  return chains;
}

}  // namespace fusetune
