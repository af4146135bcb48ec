// `fusetune tune GRAPH [--local] [--db PATH] [--json] [...search controls]`: measure candidate
// fusions of GRAPH on this CPU and keep the best plan of each region in the store. With
// `--server ADDR` the same search runs on a `fusetune serve` and its worker farm.
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "client/commands.h"
#include "client/graph_loader.h"
#include "client/local_backend.h"
#include "client/progress_bar.h"
#include "client/remote_client.h"
#include "client/search_flags.h"
#include "client/tune_table.h"
#include "db/cache.h"
#include "db/database.h"
#include "ir/error.h"
#include "server/tuner.h"

namespace fusetune::cli {
namespace {

struct TuneFlags {
  std::string graph_path;
  bool local = false;
  bool json = false;
  bool no_cache = false;
  int repeat = DefaultTuneTiming().repeat;
  double min_repeat_ms = DefaultTuneTiming().min_repeat_ms;
  bool flush_cache = false;
  SearchFlags search;
  RemoteFlags remote;
  std::string target;
  std::vector<std::string> dims;
  std::string params_dir;
  bool warm_only = false;
  bool cold = false;
};

// GRAPH itself, or GRAPH with its dynamic dims bound; a JSON report is printed at once when
// GRAPH is static, else collected in `json_reports`.
void TuneGraph(const TuneFlags& f, const GraphSource& source, const DimBinding& binding,
               const Graph& graph, nlohmann::json& json_reports) {
  TuneOptions options;
  options.search = ToSearchOptions(f.search, graph);
  options.timing.repeat = f.repeat;
  options.timing.min_repeat_ms = f.min_repeat_ms;
  options.timing.flush_cache = f.flush_cache;
  options.use_cache = !f.no_cache;
  options.warm_start = f.warm_only ? WarmStart::kOnly
                       : f.cold    ? WarmStart::kOff
                                   : WarmStart::kSearch;
  ProgressBar bar(!f.json && StderrIsTerminal());
  auto progress = [&](const TuneProgress& p) { bar.Update(p.phase, p.done, p.total); };
  TuneReport report;
  if (!f.remote.server.empty()) {
    report = RemoteTune(f.remote, f.graph_path, source.TextForServer(graph, binding), graph,
                        options, f.target, progress);
  } else {
    db::Database database(DbPath(f.search));
    db::Cache store(database);
    LocalBackend backend;
    report = Tune(graph, options, store, backend, progress);
  }
  bar.Finish();
  if (f.json && !binding.empty()) {
    nlohmann::json out = nlohmann::json::parse(TuneReportToJson(graph, f.graph_path, report));
    out["dims"] = binding;
    json_reports.push_back(std::move(out));
  } else if (f.json) {
    std::cout << TuneReportToJson(graph, f.graph_path, report) << "\n";
  } else {
    if (!binding.empty()) std::cout << "dims: " << DimBindingText(binding) << "\n";
    std::cout << FormatTuneTable(graph, f.graph_path, report);
  }
}

// Each binding of --dim in turn; every binding is checked before any is tuned, so a bad size
// fails at once. Several bindings with --json: one array of their reports.
void RunTune(TuneFlags f) {
  if (f.local) f.remote.server.clear();  // --local wins over $FUSETUNE_SERVER
  GraphSource source(f.graph_path, {}, f.params_dir);
  std::vector<DimBinding> bindings = DimBindings(f.dims);
  std::vector<Graph> graphs;
  for (const DimBinding& binding : bindings) graphs.push_back(source.Bind(binding));
  nlohmann::json json_reports = nlohmann::json::array();
  for (size_t b = 0; b < bindings.size(); ++b) {
    if (b > 0 && !f.json) std::cout << "\n";
    TuneGraph(f, source, bindings[b], graphs[b], json_reports);
  }
  if (json_reports.size() == 1) std::cout << json_reports[0].dump(2) << "\n";
  if (json_reports.size() > 1) std::cout << json_reports.dump(2) << "\n";
}

}  // namespace

void RegisterTuneCommand(CLI::App& app) {
  auto flags = std::make_shared<TuneFlags>();
  CLI::App* cmd = app.add_subcommand(
      "tune",
      "Measure the candidate fusions of GRAPH on this CPU and keep the best plan of every region.\n"
      "Prints, per region, the chosen kernels and their time beside TVM's greedy rules and no "
      "fusion.");
  cmd->add_option("GRAPH", flags->graph_path,
                  "graph to tune: Relay text (.relay) or ONNX model (.onnx)")
      ->required();
  cmd->add_flag("--local", flags->local,
                "tune in this process against a local SQLite file (the default when no --server)");
  cmd->add_flag("--json", flags->json,
                "print the result as JSON (the shape in docs/architecture.md)");
  cmd->add_flag("--no-cache", flags->no_cache, "search again even when the store has a plan");
  cmd->add_option("--repeat", flags->repeat, "timed repeats per measurement")
      ->check(CLI::Range(limits::kRepeat.lo, limits::kRepeat.hi));
  cmd->add_option("--min-repeat-ms", flags->min_repeat_ms,
                  "calls per repeat grow until one repeat lasts this long")
      ->check(CLI::Range(limits::kMinRepeatMs.lo, limits::kMinRepeatMs.hi));
  cmd->add_flag("--flush-cache", flags->flush_cache, "flush the CPU caches between repeats");
  AddSearchFlags(cmd, flags->search, /*search=*/true);
  AddRemoteFlags(cmd, flags->remote, /*server_required=*/false);
  AddDimFlag(cmd, flags->dims, /*several=*/true);
  AddParamsFlag(cmd, flags->params_dir);
  auto* warm_only = cmd->add_flag(
      "--warm-only", flags->warm_only,
      "a region whose family has a tuned size: time that size's plan (adapted) against greedy "
      "here\n(unfused not timed) and keep the winner, without searching (docs/signatures.md)");
  auto* cold = cmd->add_flag("--cold", flags->cold,
                             "search without starting from the plans of other tuned sizes");
  warm_only->excludes(cold);
  cmd->add_option("--target", flags->target,
                  "with --server: the target to tune for, its whole fingerprint or its CPU name "
                  "(`fusetune workers`; default: any, the one most registered workers share)");
  cmd->callback([flags] { RunTune(*flags); });
}

}  // namespace fusetune::cli
