#pragma once
// The search controls every tuning subcommand shares (tune, query, run --plan tuned): defined once
// so their spellings and defaults agree.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ir/graph.h"
#include "server/search_options.h"

namespace fusetune::cli {

struct SearchFlags {
  std::string db_path;  // empty: db::DefaultDbPath()
  int threads = 1;
  int max_group_size = SearchOptions{}.max_group_size;
  int max_kernel_args = SearchOptions{}.max_kernel_args;
  int max_region_nodes = SearchOptions{}.max_region_nodes;
  std::vector<std::string> never_fuse_ops;
  std::vector<std::string> never_fuse_nodes;
  std::vector<std::string> forbid;  // each "%1,%2"
  int budget = 0;
  int schedules = SearchOptions{}.schedules_per_group;
  int schedule_budget = SearchOptions{}.schedule_budget;
  bool no_horizontal = false;
  bool no_attention = false;
  bool no_norm_fold = false;
  bool no_recompute = false;
  bool no_softmax_rows = false;
  bool no_layer_norm_rows = false;
};

// Adds --db, --threads and, when `search` is set, the search-space controls.
void AddSearchFlags(CLI::App* cmd, SearchFlags& flags, bool search);

// The controls as the search takes them. Throws UserError (exit 2) naming the flag when a name
// means nothing for `graph`: an unknown op, a node the graph does not have, a one-node --forbid.
SearchOptions ToSearchOptions(const SearchFlags& flags, const Graph& graph);
std::string DbPath(const SearchFlags& flags);

}  // namespace fusetune::cli
