#include "client/search_flags.h"

#include <fmt/format.h>

#include "db/default_path.h"
#include "ir/error.h"
#include "server/request_policy.h"

namespace fusetune::cli {
namespace {

template <typename T>
CLI::Range InRange(ControlRange<T> range) {
  return CLI::Range(range.lo, range.hi);
}

std::string NodeName(const Graph& graph, const std::string& given, const char* flag) {
  std::optional<std::string> name = ControlNodeName(graph, given);
  if (!name) throw UserError(fmt::format("{}: '{}' is not a node of the graph", flag, given));
  return *name;
}

}  // namespace

void AddSearchFlags(CLI::App* cmd, SearchFlags& f, bool search) {
  cmd->add_option("--db", f.db_path,
                  "SQLite file of the cache (default: $FUSETUNE_DB, else "
                  "$XDG_CACHE_HOME/fusetune/fusetune.db, else ~/.cache/fusetune/fusetune.db)");
  cmd->add_option("--threads", f.threads, "threads each kernel runs with (part of every cache key)")
      ->check(InRange(limits::kThreads));
  if (!search) return;
  cmd->add_option("--never-fuse", f.never_fuse_ops,
                  "ops that always get a kernel of their own, e.g. exp,where")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_option("--never-fuse-node", f.never_fuse_nodes,
                  "nodes that always get a kernel of their own, e.g. %3,%7")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_option("--forbid", f.forbid,
                  "a group that must not be one kernel, e.g. --forbid %0,%1,%2 (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--max-group", f.max_group_size, "most ops in one fused kernel")
      ->check(InRange(limits::kMaxGroupSize));
  cmd->add_option("--max-args", f.max_kernel_args, "most inputs + outputs of one fused kernel")
      ->check(InRange(limits::kMaxKernelArgs));
  cmd->add_option("--max-region", f.max_region_nodes, "regions larger than this are cut")
      ->check(InRange(limits::kMaxRegionNodes));
  cmd->add_option(
         "--budget", f.budget,
         "measurements per region beyond the baselines, best first by the cost model (0: all)")
      ->check(InRange(limits::kBudget));
  cmd->add_option("--schedules", f.schedules,
                  "schedules measured first per candidate group: the default and the best ranked")
      ->check(InRange(limits::kSchedulesPerGroup));
  cmd->add_option("--schedule-budget", f.schedule_budget,
                  "further schedules per region, searched in rounds on its heaviest groups (0: "
                  "none)")
      ->check(InRange(limits::kScheduleBudget));
  cmd->add_flag("--no-attention", f.no_attention,
                "never compute attention (batch_matmul, scale/mask, softmax, batch_matmul) as one "
                "kernel that never writes the score matrix");
  cmd->add_flag("--no-norm-fold", f.no_norm_fold,
                "never normalise a layer norm's rows inside the matmul that reads them (the norm "
                "gets a kernel of its own)");
  cmd->add_flag("--no-recompute", f.no_recompute,
                "never recompute a cheap op (element-wise, broadcast) inside each kernel that "
                "reads it instead of storing it once");
  cmd->add_flag("--no-softmax-rows", f.no_softmax_rows,
                "never compute a softmax written op by op (max, subtract, exp, sum, divide) as one "
                "row kernel (the rules' kernels store its exponent)");
  cmd->add_flag("--no-layer-norm-rows", f.no_layer_norm_rows,
                "never compute a layer norm or RMS norm written op by op (mean, subtract, square, "
                "mean, add, sqrt, divide; or without the first mean) as one row kernel (the rules' "
                "kernels store x - mean or read x twice)");
  cmd->add_flag("--no-horizontal", f.no_horizontal,
                "never fuse sibling matmuls that read the same input (Q, K, V) into one kernel");
}

SearchOptions ToSearchOptions(const SearchFlags& f, const Graph& graph) {
  SearchOptions o;
  o.threads = f.threads;
  o.max_group_size = f.max_group_size;
  o.max_kernel_args = f.max_kernel_args;
  o.max_region_nodes = f.max_region_nodes;
  o.horizontal = !f.no_horizontal;
  o.attention = !f.no_attention;
  o.norm_fold = !f.no_norm_fold;
  o.recompute = !f.no_recompute;
  o.softmax_rows = !f.no_softmax_rows;
  o.layer_norm_rows = !f.no_layer_norm_rows;
  for (const auto& op : f.never_fuse_ops) {
    if (std::string problem = ControlOpProblem(op); !problem.empty())
      throw UserError("--never-fuse: " + problem);
    o.never_fuse_ops.insert(op);
  }
  for (const auto& n : f.never_fuse_nodes)
    o.never_fuse_nodes.insert(NodeName(graph, n, "--never-fuse-node"));
  for (const auto& group : f.forbid) {
    std::set<std::string> names;
    size_t pos = 0;
    while (pos <= group.size()) {
      size_t end = group.find(',', pos);
      if (end == std::string::npos) end = group.size();
      std::string given = group.substr(pos, end - pos);
      if (given.empty() || given == "%")
        throw UserError("--forbid takes node names separated by commas, like %0,%1");
      names.insert(NodeName(graph, given, "--forbid"));
      pos = end + 1;
    }
    if (names.size() < kMinForbiddenGroupNodes)
      throw UserError(fmt::format("--forbid {}: {}", group, kForbiddenGroupTooSmall));
    o.forbidden_groups.push_back(std::move(names));
  }
  o.budget = f.budget;
  o.schedules_per_group = f.schedules;
  o.schedule_budget = f.schedule_budget;
  return o;
}

std::string DbPath(const SearchFlags& f) {
  return f.db_path.empty() ? db::DefaultDbPath() : f.db_path;
}

}  // namespace fusetune::cli
