#include "server/request_policy.h"

#include <algorithm>

#include <fmt/format.h>

#include "ir/norm_pattern.h"
#include "ir/op.h"
#include "server/stage_log.h"

namespace fusetune {

RequestPolicy::RequestPolicy(const Graph& graph, SearchOptions options)
    : graph_(&graph), options_(std::move(options)) {
  pinned_.assign(graph.values().size(), false);
  for (size_t v = 0; v < graph.values().size(); ++v) {
    const Value& value = graph.values()[v];
    if (value.kind != ValueKind::kNode) continue;
    pinned_[v] = options_.never_fuse_ops.count(value.op->name) > 0 ||
                 options_.never_fuse_nodes.count(value.name) > 0;
  }
  for (const std::set<std::string>& names : options_.forbidden_groups) {
    std::vector<ValueId> ids;
    for (const std::string& name : names)
      if (std::optional<ValueId> id = graph.FindByName(name)) ids.push_back(*id);
    std::sort(ids.begin(), ids.end());
    if (ids.size() == names.size()) forbidden_.insert(std::move(ids));
  }
  const SearchOptions defaults;
  narrower_ =
      !options_.never_fuse_ops.empty() || !options_.never_fuse_nodes.empty() ||
      !options_.forbidden_groups.empty() || options_.max_group_size < defaults.max_group_size ||
      options_.max_kernel_args < defaults.max_kernel_args ||
      options_.horizontal < defaults.horizontal || options_.attention < defaults.attention ||
      options_.norm_fold < defaults.norm_fold || options_.recompute < defaults.recompute ||
      options_.softmax_rows < defaults.softmax_rows ||
      options_.layer_norm_rows < defaults.layer_norm_rows;
  wider_ = options_.max_group_size > defaults.max_group_size ||
           options_.max_kernel_args > defaults.max_kernel_args;
}

bool RequestPolicy::MayJoinGroup(ValueId v, std::string* why_not) const {
  if (!pinned_.at(v)) return true;
  if (why_not) {
    const Value& value = graph_->value(v);
    *why_not = options_.never_fuse_ops.count(value.op->name)
                   ? fmt::format("{} is a {}, which the request never fuses", graph_->RefName(v),
                                 value.op->name)
                   : fmt::format("the request never fuses {}", graph_->RefName(v));
  }
  return false;
}

std::optional<FusedGroup> RequestPolicy::OneKernel(std::span<const ValueId> nodes,
                                                   std::string* why_not,
                                                   std::span<const ValueId> recompute) const {
  return Check(nodes, /*limits=*/true, why_not, recompute);
}

std::optional<FusedGroup> RequestPolicy::BaselineKernel(std::span<const ValueId> nodes,
                                                        std::string* why_not) const {
  const SearchOptions defaults;
  const bool narrowed = options_.max_group_size < defaults.max_group_size ||
                        options_.max_kernel_args < defaults.max_kernel_args;
  std::string why;
  if (std::optional<FusedGroup> group = OneKernel(nodes, &why)) return group;
  // Within the limits nothing more to ask; past them, GreedyPlan is run once (RuleGroup).
  if (narrowed || nodes.size() < 2 || !RuleGroup(nodes)) {
    if (why_not) *why_not = std::move(why);
    return std::nullopt;
  }
  return Check(nodes, /*limits=*/false, why_not);
}

bool RequestPolicy::RuleGroup(std::span<const ValueId> nodes) const {
  if (!rule_groups_) {
    rule_groups_.emplace();
    for (PlanGroup& pg : GreedyPlan(*graph_, [&](ValueId v) { return pinned_.at(v); }).groups) {
      std::sort(pg.nodes.begin(), pg.nodes.end());
      rule_groups_->insert(std::move(pg.nodes));
    }
  }
  std::vector<ValueId> sorted(nodes.begin(), nodes.end());
  std::sort(sorted.begin(), sorted.end());
  return rule_groups_->count(sorted) > 0;
}

std::optional<FusedGroup> RequestPolicy::Check(std::span<const ValueId> nodes, bool limits,
                                               std::string* why_not,
                                               std::span<const ValueId> recompute) const {
  auto refuse = [&](std::string reason) -> std::optional<FusedGroup> {
    if (why_not) *why_not = std::move(reason);
    return std::nullopt;
  };
  std::vector<ValueId> sorted(nodes.begin(), nodes.end());
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  const bool single = sorted.size() == 1;
  if (!single) {
    const size_t ops = limits ? OpsCounted(*graph_, sorted) : 0;
    if (limits && static_cast<int>(ops) > options_.max_group_size)
      return refuse(fmt::format("{} ops, more than the request's max group size {}", ops,
                                options_.max_group_size));
    for (ValueId v : sorted)
      if (v >= 0 && v < static_cast<ValueId>(pinned_.size()) && !MayJoinGroup(v, why_not))
        return std::nullopt;
    if (forbidden_.count(sorted)) return refuse("the request forbids this group");
  }
  if (!recompute.empty() && !options_.recompute)
    return refuse("the request does not recompute values in several kernels (--no-recompute)");
  std::optional<FusedGroup> group = AnalyzeGroup(*graph_, sorted, why_not, recompute);
  if (!group) return std::nullopt;
  if (group->Horizontal() && !options_.horizontal)
    return refuse("the request does not fuse sibling matmuls horizontally (--no-horizontal)");
  if (group->Attention() && !options_.attention)
    return refuse("the request does not compute attention as one kernel (--no-attention)");
  if (group->norm >= 0 && !options_.norm_fold)
    return refuse("the request does not fold layer norms into matmuls (--no-norm-fold)");
  if (group->NormWrittenOpByOp() && group->row_norm.kind == RowNorm::kSoftmax &&
      !options_.softmax_rows)
    return refuse(
        "the request does not compute a softmax written op by op as one kernel "
        "(--no-softmax-rows)");
  if (group->NormWrittenOpByOp() && group->row_norm.kind != RowNorm::kSoftmax &&
      !options_.layer_norm_rows)
    return refuse(
        fmt::format("the request does not compute a {} written op by op as one kernel "
                    "(--no-layer-norm-rows)",
                    group->row_norm.Name()));
  const int args = static_cast<int>(group->inputs.size() + group->outputs.size());
  if (limits && !single && args > options_.max_kernel_args)
    return refuse(fmt::format("{} kernel arguments, more than the request's max args {}", args,
                              options_.max_kernel_args));
  return group;
}

bool RequestPolicy::Honours(std::span<const PlanGroup> groups, std::string* why_not) const {
  const std::vector<std::vector<ValueId>> recomputed = RecomputedNodes(groups);
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const PlanGroup& pg = groups[gi];
    std::string reason;
    if (OneKernel(pg.nodes, why_not ? &reason : nullptr, recomputed[gi]) ||
        (recomputed[gi].empty() && BaselineKernel(pg.nodes)))
      continue;
    if (why_not) *why_not = fmt::format("{}: {}", NodesText(*graph_, pg.nodes), reason);
    return false;
  }
  return true;
}

bool RequestPolicy::MayReuse(std::span<const PlanGroup> stored, std::string* why_not) const {
  if (wider_) {
    if (why_not)
      *why_not =
          "the request's max group size or max args is above the default, so its space is wider "
          "than the one the stored plan was chosen from";
    return false;
  }
  return Honours(stored, why_not);
}

std::optional<std::string> ControlNodeName(const Graph& graph, const std::string& given) {
  std::string name = !given.empty() && given[0] == '%' ? given.substr(1) : given;
  std::optional<ValueId> id = graph.FindByName(name);
  if (!id || graph.value(*id).kind != ValueKind::kNode) return std::nullopt;
  return name;
}

std::string ControlOpProblem(const std::string& op) {
  if (FindOp(op)) return "";
  return fmt::format("unknown operator '{}'", op.substr(0, 128));
}

}  // namespace fusetune
