// `fusetune query GRAPH [--local] [--db PATH] [--json]`: the cached best plans of GRAPH's regions,
// without measuring anything. A region with no stored plan is answered by transfer from the
// nearest tuned size of its family unless --exact; exit code 3 when some region has no answer.
#include <algorithm>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "client/commands.h"
#include "client/graph_loader.h"
#include "client/local_backend.h"
#include "client/remote_client.h"
#include "client/search_flags.h"
#include "client/tune_table.h"
#include "db/cache.h"
#include "db/database.h"
#include "server/target_names.h"
#include "server/tuner.h"

namespace fusetune::cli {
namespace {

struct QueryFlags {
  std::string graph_path;
  bool local = false;
  bool json = false;
  std::string target;
  SearchFlags search;
  RemoteFlags remote;
  std::vector<std::string> dims;
  std::string params_dir;
  bool exact = false;
};

void RunQuery(const QueryFlags& f) {
  DimBinding binding = OneDimBinding(f.dims, "query");
  GraphSource source(f.graph_path, {}, f.params_dir);
  Graph graph = source.Bind(binding);
  const SearchOptions search = ToSearchOptions(f.search, graph);  // before the store is opened
  std::vector<std::string> missing;
  size_t under_older_key = 0;  // of the missing regions, those with a plan under an earlier key
  TuneReport report;
  if (!f.local && !f.remote.server.empty()) {
    report = RemoteLookup(f.remote, f.graph_path, source.TextForServer(graph, binding), graph,
                          search, f.target, &missing, f.exact);
  } else {
    db::Database database(DbPath(f.search));
    db::Cache store(database);
    std::string target = f.target.empty() ? LocalBackend().TargetFingerprint()
                                          : ResolveTargetName(f.target, store.BestPlanTargets());
    report = LookupCached(graph, search, store, target, &missing, f.exact);
    const std::string before = FingerprintBeforeCpuIds(target);
    if (!missing.empty() && f.target.empty() && !before.empty()) {
      std::vector<std::string> missing_before;
      LookupCached(graph, search, store, before, &missing_before, f.exact);
      for (const std::string& m : missing)
        under_older_key +=
            std::find(missing_before.begin(), missing_before.end(), m) == missing_before.end();
    }
  }
  if (f.json && !binding.empty()) {
    nlohmann::json out = nlohmann::json::parse(TuneReportToJson(graph, f.graph_path, report));
    out["dims"] = binding;
    std::cout << out.dump(2) << "\n";
  } else if (f.json) {
    std::cout << TuneReportToJson(graph, f.graph_path, report) << "\n";
  } else {
    if (!binding.empty()) std::cout << "dims: " << DimBindingText(binding) << "\n";
    std::cout << FormatTuneTable(graph, f.graph_path, report);
  }
  if (!missing.empty()) {
    std::cerr << fmt::format(
        "{} region{} of {} ha{} no stored plan for this target and thread count{}:\n",
        missing.size(), missing.size() == 1 ? "" : "s", f.graph_path,
        missing.size() == 1 ? "s" : "ve",
        f.exact ? " (--exact)" : " and no tuned size to transfer from");
    for (const RegionReport& r : report.regions)
      if (!r.cached && r.transferred_from.empty()) {
        std::string nodes;
        for (ValueId v : r.nodes) nodes += (nodes.empty() ? "" : " ") + graph.RefName(v);
        std::cerr << fmt::format("  {}  [{}]\n", r.signature, nodes);
        if (!r.transfer_refused.empty())
          std::cerr << fmt::format("    {}, so its plan does not carry over\n", r.transfer_refused);
      }
    std::cerr << fmt::format("run `fusetune tune {}{}` to measure them\n", f.graph_path,
                             DimFlagsText(binding));
    if (under_older_key > 0)
      std::cerr << fmt::format(
          "{} of them ha{} a plan under this CPU's key of earlier fusetune versions (CPU "
          "\"generic\", before CPUs LLVM does not know were told apart by CPUID), which may come "
          "from another CPU with the same features: `--target generic` reads them\n",
          under_older_key, under_older_key == 1 ? "s" : "ve");
    SetExitCode(3);
  }
}

}  // namespace

void RegisterQueryCommand(CLI::App& app) {
  auto flags = std::make_shared<QueryFlags>();
  CLI::App* cmd = app.add_subcommand("query",
                                     "Print the stored best plans of GRAPH's regions without "
                                     "measuring. A region with no stored plan\n"
                                     "takes the plan of the nearest tuned size of its family "
                                     "(same target and threads),\n"
                                     "marked 'transferred'. Exit code 3 when some region has "
                                     "neither (they are listed on stderr).");
  cmd->add_option("GRAPH", flags->graph_path,
                  "graph to look up: Relay text (.relay) or ONNX model (.onnx)")
      ->required();
  cmd->add_flag("--local", flags->local,
                "look up a local SQLite file (the default when no --server)");
  cmd->add_flag("--json", flags->json, "print the result as JSON (the tune --json shape)");
  cmd->add_option("--target", flags->target,
                  "target to look up: its whole fingerprint or its CPU name, as `cache ls` shows "
                  "it (default: this machine)");
  AddSearchFlags(cmd, flags->search, /*search=*/true);
  AddRemoteFlags(cmd, flags->remote, /*server_required=*/false);
  AddDimFlag(cmd, flags->dims, /*several=*/false);
  AddParamsFlag(cmd, flags->params_dir);
  cmd->add_flag("--exact", flags->exact,
                "exact answers only: no transfer from other sizes (exit 3 on any miss)");
  cmd->callback([flags] { RunQuery(*flags); });
}

}  // namespace fusetune::cli
