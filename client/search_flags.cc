#include "client/search_flags.h"

#include "db/default_path.h"
#include "ir/error.h"

namespace fusetune::cli {
namespace {
std::string StripPercent(const std::string& s) {
  return !s.empty() && s[0] == '%' ? s.substr(1) : s;
}
}  // namespace

void AddSearchFlags(CLI::App* cmd, SearchFlags& f, bool search) {
  cmd->add_option("--db", f.db_path,
                  "SQLite file of the cache (default: $FUSETUNE_DB, else "
                  "$XDG_CACHE_HOME/fusetune/fusetune.db, else ~/.cache/fusetune/fusetune.db)");
  cmd->add_option("--threads", f.threads, "threads each kernel runs with (part of every cache key)")
      ->check(CLI::Range(1, 256));
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
      ->check(CLI::Range(1, 64));
  cmd->add_option("--max-args", f.max_kernel_args, "most inputs + outputs of one fused kernel")
      ->check(CLI::Range(2, 1024));
  cmd->add_option("--max-region", f.max_region_nodes, "regions larger than this are cut")
      ->check(CLI::Range(1, 64));
  cmd->add_option(
         "--budget", f.budget,
         "measurements per region beyond the baselines, best first by the cost model (0: all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--schedules", f.schedules, "schedules tried per candidate group")
      ->check(CLI::Range(1, 64));
}

SearchOptions ToSearchOptions(const SearchFlags& f) {
  SearchOptions o;
  o.threads = f.threads;
  o.max_group_size = f.max_group_size;
  o.max_kernel_args = f.max_kernel_args;
  o.max_region_nodes = f.max_region_nodes;
  for (const auto& op : f.never_fuse_ops) o.never_fuse_ops.insert(op);
  for (const auto& n : f.never_fuse_nodes) o.never_fuse_nodes.insert(StripPercent(n));
  for (const auto& group : f.forbid) {
    std::set<std::string> names;
    size_t pos = 0;
    while (pos <= group.size()) {
      size_t end = group.find(',', pos);
      if (end == std::string::npos) end = group.size();
      std::string name = StripPercent(group.substr(pos, end - pos));
      if (name.empty())
        throw UserError("--forbid takes node names separated by commas, like %0,%1");
      names.insert(name);
      pos = end + 1;
    }
    o.forbidden_groups.push_back(std::move(names));
  }
  o.budget = f.budget;
  o.schedules_per_group = f.schedules;
  return o;
}

std::string DbPath(const SearchFlags& f) {
  return f.db_path.empty() ? db::DefaultDbPath() : f.db_path;
}

}  // namespace fusetune::cli
