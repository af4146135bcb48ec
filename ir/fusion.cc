#include "ir/fusion.h"

#include "ir/attention_pattern.h"
#include "ir/scalar_expr.h"

#include <algorithm>
#include <array>
#include <unordered_set>

#include <fmt/format.h>

namespace fusetune {
namespace {

bool IsAnchorKind(OpKind k) {
  return k == OpKind::kReduce || k == OpKind::kMatmul || k == OpKind::kComposite;
}

bool IsInlinable(const OpDef& op) {
  return (op.kind == OpKind::kElementwise || op.kind == OpKind::kInjective) &&
         op.pattern <= OpPattern::kInjective;
}

// Data movement (reshape, transpose, broadcast) or arithmetic without division, roots or
// transcendentals (ir/scalar_expr.h).
bool CheapToRecompute(const Graph& g, ValueId v) {
  const Value& value = g.value(v);
  const OpDef& op = *value.op;
  if (op.kind == OpKind::kInjective) return true;
  if (!op.scalar) return false;
  std::vector<TensorType> in_types;
  for (ValueId in : value.inputs) in_types.push_back(g.value(in).type);
  return IsCheapToRecompute(op.scalar(in_types, value.type, value.attrs));
}

GroupTemplate TemplateFor(OpKind k) {
  switch (k) {
    case OpKind::kReduce:
      return GroupTemplate::kReduce;
    case OpKind::kMatmul:
      return GroupTemplate::kMatmul;
    case OpKind::kComposite:
      return GroupTemplate::kComposite;
    default:
      return GroupTemplate::kElementwise;
  }
}

// Marks every member of `in_group` reachable from `start` along edges inside the group.
void Reach(const Graph& g, ValueId start, const std::unordered_set<ValueId>& in_group,
           bool downward, std::unordered_set<ValueId>& out) {
  std::vector<ValueId> stack{start};
  while (!stack.empty()) {
    ValueId v = stack.back();
    stack.pop_back();
    const std::vector<ValueId>& next = downward ? g.Users(v) : g.value(v).inputs;
    for (ValueId n : next) {
      if (in_group.count(n) && out.insert(n).second) stack.push_back(n);
    }
  }
}

std::optional<FusedGroup> Reject(std::string* why_not, std::string message) {
  if (why_not) *why_not = std::move(message);
  return std::nullopt;
}

// The members split into pieces connected by edges inside the group, each ascending, ordered by
// first member.
std::vector<std::vector<ValueId>> Components(const Graph& g, const std::vector<ValueId>& nodes,
                                             const std::unordered_set<ValueId>& in_group) {
  std::vector<std::vector<ValueId>> out;
  std::unordered_set<ValueId> seen;
  for (ValueId start : nodes) {
    if (!seen.insert(start).second) continue;
    std::vector<ValueId> piece{start}, stack{start};
    while (!stack.empty()) {
      ValueId v = stack.back();
      stack.pop_back();
      for (const std::vector<ValueId>* next :
           std::array<const std::vector<ValueId>*, 2>{&g.Users(v), &g.value(v).inputs})
        for (ValueId n : *next)
          if (in_group.count(n) && seen.insert(n).second) {
            piece.push_back(n);
            stack.push_back(n);
          }
    }
    std::sort(piece.begin(), piece.end());
    out.push_back(std::move(piece));
  }
  return out;
}

// Where a path that leaves the group re-enters it, if one does. Walks forward from outside users
// of members; nodes after the last member cannot lead back.
std::optional<ValueId> ReentryPoint(const Graph& g, const std::vector<ValueId>& nodes,
                                    const std::unordered_set<ValueId>& in_group,
                                    const std::unordered_set<ValueId>& recomputed) {
  const ValueId last = nodes.back();
  std::unordered_set<ValueId> seen;
  std::vector<ValueId> stack;
  for (ValueId v : nodes)
    for (ValueId u : recomputed.count(v) ? std::vector<ValueId>{} : g.Users(v))
      if (!in_group.count(u) && u < last && seen.insert(u).second) stack.push_back(u);
  while (!stack.empty()) {
    ValueId v = stack.back();
    stack.pop_back();
    for (ValueId u : g.Users(v)) {
      if (in_group.count(u)) return u;
      if (u < last && seen.insert(u).second) stack.push_back(u);
    }
  }
  return std::nullopt;
}

MatmulLayout AnchorLayout(const Graph& g, ValueId anchor) {
  const Value& a = g.value(anchor);
  std::vector<TensorType> in_types;
  for (ValueId v : a.inputs) in_types.push_back(g.value(v).type);
  return a.op->matmul(in_types, a.attrs);
}

// A group of several pieces (already known convex): each piece must be a matmul group with no
// prologue, all reading the same A with the same layout.
std::optional<FusedGroup> AnalyzeHorizontal(const Graph& g, FusedGroup group,
                                            const std::vector<std::vector<ValueId>>& pieces,
                                            std::string* why_not) {
  if (pieces.size() > kMaxHorizontalParts)
    return Reject(why_not, fmt::format("group is not connected ({} pieces; a horizontal matmul "
                                       "joins at most {} sibling products)",
                                       pieces.size(), kMaxHorizontalParts));
  for (const std::vector<ValueId>& piece : pieces) {
    std::string why;
    std::optional<FusedGroup> part = AnalyzeGroup(g, piece, &why);
    if (!part)
      return Reject(why_not, fmt::format("group is not connected, and its piece with {} is not a "
                                         "kernel: {}",
                                         g.RefName(piece[0]), why));
    if (part->templ != GroupTemplate::kMatmul)
      return Reject(why_not, fmt::format("group is not connected, and its piece with {} is not a "
                                         "matmul group (only sibling matmuls fuse horizontally)",
                                         g.RefName(piece[0])));
    const Value& anchor = g.value(part->anchor);
    for (ValueId operand : anchor.inputs)
      if (std::binary_search(part->nodes.begin(), part->nodes.end(), operand))
        return Reject(why_not, fmt::format("{} in a horizontal matmul has a prologue; its operands "
                                           "must be read from memory",
                                           g.RefName(part->anchor)));
    group.parts.push_back(std::move(*part));
  }
  std::sort(group.parts.begin(), group.parts.end(),
            [](const FusedGroup& a, const FusedGroup& b) { return a.anchor < b.anchor; });
  const FusedGroup& first = group.parts[0];
  const ValueId a_value = g.value(first.anchor).inputs[0];
  const MatmulLayout l0 = AnchorLayout(g, first.anchor);
  for (const FusedGroup& part : group.parts) {
    const ValueId anchor = part.anchor;
    if (g.value(anchor).inputs[0] != a_value)
      return Reject(why_not, fmt::format("{} and {} read different A operands; a horizontal "
                                         "matmul shares one",
                                         g.RefName(first.anchor), g.RefName(anchor)));
    const MatmulLayout l = AnchorLayout(g, anchor);
    if (l.batched != l0.batched || l.transpose_a != l0.transpose_a || l.batch != l0.batch ||
        l.m != l0.m || l.k != l0.k)
      return Reject(why_not, fmt::format("{} and {} read A with different layouts",
                                         g.RefName(first.anchor), g.RefName(anchor)));
    group.inputs.insert(group.inputs.end(), part.inputs.begin(), part.inputs.end());
    group.outputs.insert(group.outputs.end(), part.outputs.begin(), part.outputs.end());
  }
  std::sort(group.inputs.begin(), group.inputs.end());
  group.inputs.erase(std::unique(group.inputs.begin(), group.inputs.end()), group.inputs.end());
  std::sort(group.outputs.begin(), group.outputs.end());
  group.templ = GroupTemplate::kMatmul;
  group.anchor = first.anchor;
  group.sink = -1;
  return group;
}

// The layer norm a matmul group may fold into its A (ir/fusion.h), or -1 when the group's two
// anchors are not that; `why` says what rules the fold out when they nearly are.
ValueId FoldedNorm(const Graph& g, const std::vector<ValueId>& nodes, std::string* why) {
  ValueId matmul = -1, norm = -1;
  for (ValueId v : nodes) {
    const OpDef& op = *g.value(v).op;
    if (op.kind == OpKind::kMatmul && matmul < 0)
      matmul = v;
    else if (op.name == "nn.layer_norm" && norm < 0)
      norm = v;
    else if (IsAnchorKind(op.kind))
      return -1;
  }
  if (matmul < 0 || norm < 0 || g.value(matmul).inputs[0] != norm) return -1;
  const Value& n = g.value(norm);
  const int rank = n.type.rank();
  if (NormalizeAxis("nn.layer_norm", n.attrs.GetInt("axis"), rank) != rank - 1) {
    *why = fmt::format(
        "{} normalises an axis other than the last; only a norm over A's k axis "
        "folds into {}",
        g.RefName(norm), g.RefName(matmul));
    return -1;
  }
  const MatmulLayout layout = AnchorLayout(g, matmul);
  if (layout.batched && n.type.shape[0] != layout.batch) {
    *why = fmt::format(
        "{} broadcasts A over its batch; a layer norm folds only into an A with "
        "one matrix per batch",
        g.RefName(matmul));
    return -1;
  }
  if (layout.transpose_a) {
    *why = fmt::format("{} reads A transposed; a layer norm folds only into rows of A",
                       g.RefName(matmul));
    return -1;
  }
  const std::vector<ValueId>& matmul_inputs = g.value(matmul).inputs;
  if (g.Users(norm).size() != 1 ||
      std::count(matmul_inputs.begin(), matmul_inputs.end(), norm) != 1 ||
      std::count(g.outputs().begin(), g.outputs().end(), norm)) {
    *why = fmt::format("{} is also read outside {}; a folded layer norm is never stored",
                       g.RefName(norm), g.RefName(matmul));
    return -1;
  }
  return norm;
}

}  // namespace

std::string_view TemplateName(GroupTemplate t) {
  switch (t) {
    case GroupTemplate::kElementwise:
      return "elementwise";
    case GroupTemplate::kReduce:
      return "reduce";
    case GroupTemplate::kMatmul:
      return "matmul";
    case GroupTemplate::kComposite:
      return "composite";
    case GroupTemplate::kAttention:
      return "attention";
  }
  return "?";
}

std::optional<FusedGroup> AnalyzeGroup(const Graph& g, std::span<const ValueId> nodes_in,
                                       std::string* why_not, std::span<const ValueId> recompute) {
  FusedGroup group;
  group.nodes.assign(nodes_in.begin(), nodes_in.end());
  std::sort(group.nodes.begin(), group.nodes.end());
  group.nodes.erase(std::unique(group.nodes.begin(), group.nodes.end()), group.nodes.end());
  if (group.nodes.empty()) return Reject(why_not, "empty group");
  for (ValueId v : group.nodes) {
    if (v < 0 || v >= static_cast<ValueId>(g.values().size()) ||
        g.value(v).kind != ValueKind::kNode)
      return Reject(why_not, fmt::format("value {} is not an op node", v));
  }
  const std::unordered_set<ValueId> in_group(group.nodes.begin(), group.nodes.end());
  std::unordered_set<ValueId> graph_outputs(g.outputs().begin(), g.outputs().end());

  const std::unordered_set<ValueId> recomputed(recompute.begin(), recompute.end());
  for (ValueId r : recomputed) {
    if (!in_group.count(r))
      return Reject(why_not, fmt::format("value {} is recomputed but not in the group", r));
    const OpDef& op = *g.value(r).op;
    if (!IsInlinable(op))
      return Reject(why_not, fmt::format("{} ({}) is not element-wise, broadcast or injective; "
                                         "only such ops are recomputed",
                                         g.RefName(r), op.name));
    if (graph_outputs.count(r))
      return Reject(why_not, fmt::format("{} is a graph output; it must be stored, not recomputed",
                                         g.RefName(r)));
  }
  group.recompute.assign(recomputed.begin(), recomputed.end());
  std::sort(group.recompute.begin(), group.recompute.end());

  // Convex: no path leaves the group and re-enters it (for a horizontal group this also means no
  // path runs between its parts).
  if (std::optional<ValueId> at = ReentryPoint(g, group.nodes, in_group, recomputed))
    return Reject(why_not, fmt::format("group is not convex: a path leaves it and re-enters at {}",
                                       g.RefName(*at)));

  // Connected, or else a horizontal matmul.
  std::vector<std::vector<ValueId>> pieces = Components(g, group.nodes, in_group);
  if (pieces.size() > 1 && !recomputed.empty())
    return Reject(why_not, "a group that recomputes a value must be connected");
  if (pieces.size() > 1) return AnalyzeHorizontal(g, std::move(group), pieces, why_not);

  // Inputs, outputs, sink.
  std::vector<ValueId> sinks;
  for (ValueId v : group.nodes) {
    for (ValueId in : g.value(v).inputs)
      if (!in_group.count(in)) group.inputs.push_back(in);
    bool used_inside = false, used_outside = graph_outputs.count(v) > 0;
    for (ValueId u : g.Users(v)) (in_group.count(u) ? used_inside : used_outside) = true;
    if (!used_inside) sinks.push_back(v);
    // What a recomputed member reads is read again wherever it is recomputed.
    for (ValueId u : g.Users(v)) used_outside |= recomputed.count(u) > 0;
    if ((used_outside || !used_inside) && !recomputed.count(v)) group.outputs.push_back(v);
  }
  std::sort(group.inputs.begin(), group.inputs.end());
  group.inputs.erase(std::unique(group.inputs.begin(), group.inputs.end()), group.inputs.end());
  if (sinks.size() != 1)
    return Reject(why_not,
                  fmt::format("group has {} sinks; a kernel iterates one output", sinks.size()));
  group.sink = sinks[0];
  if (recomputed.count(group.sink))
    return Reject(why_not,
                  fmt::format("{} is recomputed, but no member reads it", g.RefName(group.sink)));
  const TensorType& sink_type = g.value(group.sink).type;

  // Several anchors fit one kernel only as attention.
  int anchors = 0;
  for (ValueId v : group.nodes) anchors += IsAnchorKind(g.value(v).op->kind) ? 1 : 0;
  if (anchors > 1 && IsAttentionCandidate(g, group.nodes)) {
    if (!recomputed.empty()) return Reject(why_not, "an attention kernel recomputes nothing");
    return AnalyzeAttention(g, std::move(group), why_not);
  }

  // A softmax, layer norm or RMS norm written op by op: its reductions are steps of one row kernel.
  const std::optional<NormOpByOp> row_norm =
      anchors == 1 || anchors == 2 ? NormOpByOpIn(g, group.nodes) : std::nullopt;
  std::unordered_set<ValueId> steps;
  if (row_norm) {
    if (!recomputed.empty())
      return Reject(why_not,
                    fmt::format("a {} written op by op recomputes nothing", row_norm->Name()));
    for (ValueId v : row_norm->steps) {
      if (std::binary_search(group.outputs.begin(), group.outputs.end(), v))
        return Reject(why_not, fmt::format("{} is read outside the group: the steps of a {} "
                                           "written op by op stay inside its row kernel",
                                           g.RefName(v), row_norm->Name()));
      steps.insert(v);
    }
    group.row_norm = *row_norm;
    group.anchor = row_norm->output;
  }

  // Template: at most one anchor, or a matmul with the layer norm it folds.
  std::string fold_why;
  if (anchors == 2 && !row_norm) group.norm = FoldedNorm(g, group.nodes, &fold_why);
  for (ValueId v : group.nodes) {
    const OpDef& op = *g.value(v).op;
    if (v == group.norm || steps.count(v) || (row_norm && v == group.anchor)) continue;
    if (IsAnchorKind(op.kind)) {
      if (group.anchor >= 0 && !fold_why.empty()) return Reject(why_not, fold_why);
      if (group.anchor >= 0)
        return Reject(
            why_not,
            fmt::format("group has two anchors ({} and {}); at most one {} op fits "
                        "one kernel",
                        g.RefName(group.anchor), g.RefName(v), "reduction, matmul or composite"));
      group.anchor = v;
    } else if (!IsInlinable(op)) {
      return Reject(why_not, fmt::format("{} ({}) cannot be fused", g.RefName(v), op.name));
    }
  }

  std::unordered_set<ValueId> epilogue, prologue;
  if (row_norm) {
    group.templ = GroupTemplate::kComposite;
    Reach(g, group.anchor, in_group, /*downward=*/true, epilogue);
    // The prologue is what computes x; the steps between x and the output are the kernel's.
    const ValueId x = row_norm->input;
    if (in_group.count(x)) {
      prologue.insert(x);
      Reach(g, x, in_group, /*downward=*/false, prologue);
    }
    for (ValueId v : group.nodes) {
      if (!steps.count(v) && v != group.anchor && !prologue.count(v) && !epilogue.count(v))
        return Reject(why_not, fmt::format("{} is neither before the {}'s input nor after "
                                           "its output",
                                           g.RefName(v), row_norm->Name()));
    }
    for (ValueId v : epilogue)
      for (ValueId in : g.value(v).inputs)
        if (steps.count(in))
          return Reject(why_not, fmt::format("{} reads {}, a step inside the {}", g.RefName(v),
                                             g.RefName(in), row_norm->Name()));
  } else if (group.anchor >= 0) {
    group.templ = TemplateFor(g.value(group.anchor).op->kind);
    Reach(g, group.anchor, in_group, /*downward=*/true, epilogue);
    Reach(g, group.anchor, in_group, /*downward=*/false, prologue);
  }
  if (group.anchor >= 0) {
    const TensorType& anchor_type = g.value(group.anchor).type;
    for (ValueId v : epilogue) {
      const OpDef& op = *g.value(v).op;
      if (op.kind != OpKind::kElementwise || op.pattern > OpPattern::kBroadcast)
        return Reject(why_not, fmt::format("{} ({}) after the anchor is not element-wise",
                                           g.RefName(v), op.name));
      if (g.value(v).type.shape != anchor_type.shape)
        return Reject(why_not, fmt::format("{} ({}) after the anchor changes the shape",
                                           g.RefName(v), op.name));
    }
  }

  // Extra outputs must be storable at the sink's iteration index.
  for (ValueId v : group.outputs) {
    if (v == group.sink || v == group.anchor) continue;
    if (prologue.count(v))
      return Reject(why_not, fmt::format("{} feeds the anchor and is also used outside the group",
                                         g.RefName(v)));
    // Every op on the way from v to the sink must read v's value at the same index.
    std::unordered_set<ValueId> down;
    Reach(g, v, in_group, true, down);
    bool same_index = g.value(v).type.shape == sink_type.shape;
    for (ValueId d : down) {
      const Value& dv = g.value(d);
      if (dv.op->kind != OpKind::kElementwise || dv.type.shape != sink_type.shape)
        same_index = false;
    }
    if (!same_index)
      return Reject(why_not, fmt::format("{} is used outside the group but is not computed at the "
                                         "output's index",
                                         g.RefName(v)));
  }
  return group;
}

namespace {

// Whether `r`, its readers and every node on a path between them form one lowerable group: then
// the readers can share r in one kernel, and recomputing it would only work around the search's
// group-size limit (a GPT-2 GELU's ten ops read its input thrice).
bool FusesWithItsReaders(const Graph& g, ValueId r) {
  // The convex hull of r and its readers: descendants of r that are, or lead to, a reader. Node
  // ids are topological, so nothing outside [r, last reader] is on such a path.
  const std::vector<ValueId>& readers = g.Users(r);
  const ValueId last = *std::max_element(readers.begin(), readers.end());
  std::unordered_set<ValueId> down, up(readers.begin(), readers.end());
  std::vector<ValueId> stack{r};
  while (!stack.empty()) {
    const ValueId v = stack.back();
    stack.pop_back();
    for (ValueId u : g.Users(v))
      if (u <= last && down.insert(u).second) stack.push_back(u);
  }
  stack.assign(readers.begin(), readers.end());
  while (!stack.empty()) {
    const ValueId v = stack.back();
    stack.pop_back();
    for (ValueId in : g.value(v).inputs)
      if (in > r && up.insert(in).second) stack.push_back(in);
  }
  std::vector<ValueId> hull{r};
  for (ValueId v : down)
    if (up.count(v)) hull.push_back(v);
  return AnalyzeGroup(g, hull).has_value();
}

}  // namespace

std::optional<std::vector<ValueId>> RecomputableMembers(const Graph& g,
                                                        std::span<const ValueId> nodes_in) {
  std::vector<ValueId> nodes(nodes_in.begin(), nodes_in.end());
  std::sort(nodes.begin(), nodes.end());
  auto is_matmul = [&](ValueId v) { return g.value(v).op->kind == OpKind::kMatmul; };
  if (std::any_of(nodes.begin(), nodes.end(), is_matmul)) return std::nullopt;
  const std::unordered_set<ValueId> in_group(nodes.begin(), nodes.end());
  const std::unordered_set<ValueId> graph_outputs(g.outputs().begin(), g.outputs().end());
  // Consumers come after their producers, so walking backwards sees a member's readers first: a
  // member is recomputed when it is read outside, or when a recomputed member reads it (wherever
  // that one is recomputed, it is needed too).
  std::unordered_set<ValueId> recomputed;
  int read_outside = 0;
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const ValueId v = *it;
    if (!IsInlinable(*g.value(v).op) || graph_outputs.count(v)) continue;
    if (!CheapToRecompute(g, v)) continue;
    bool outside = false, inside = false, read_by_recomputed = false, read_by_anchor = false;
    for (ValueId u : g.Users(v)) {
      if (!in_group.count(u)) {
        outside = true;
        read_by_anchor |= IsAnchorKind(g.value(u).op->kind);
      } else {
        inside = true;
        read_by_recomputed |= recomputed.count(u) > 0;
      }
    }
    if (!inside || read_by_anchor) continue;
    if (outside && FusesWithItsReaders(g, v)) continue;
    if (outside || read_by_recomputed) recomputed.insert(v);
    read_outside += outside ? 1 : 0;
  }
  if (read_outside != 1) return std::nullopt;
  std::vector<ValueId> out(recomputed.begin(), recomputed.end());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace fusetune
