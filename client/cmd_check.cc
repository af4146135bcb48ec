// `fusetune check GRAPH [--json] [--types] [--dim NAME=SIZE]`: parse, verify and infer types, then
// print the typed graph and its signature. A graph with dynamic dimensions and no --dim: list the
// dimensions by the names --dim takes. Bad input: the positioned error on stderr and exit code 2.
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "client/app.h"
#include "client/commands.h"
#include "client/graph_loader.h"
#include "ir/error.h"
#include "ir/text/relay_printer.h"
#include "ir/text/signature.h"

namespace fusetune::cli {
namespace {

struct CheckOptions {
  std::string graph_path;
  bool json = false;
  bool types_only = false;
  std::vector<std::string> dims;
  std::string params_dir;
};

std::string OpName(const Value& v) {
  switch (v.kind) {
    case ValueKind::kParam:
      return "param";
    case ValueKind::kConst:
      return "const";
    case ValueKind::kNode:
      return v.op->name;
  }
  return "?";
}

nlohmann::ordered_json DimsJson(const std::vector<DynamicDim>& dims) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const DynamicDim& d : dims) {
    nlohmann::ordered_json sites = nlohmann::ordered_json::array();
    for (const DimSite& s : d.sites) sites.push_back({{"param", "%" + s.param}, {"axis", s.axis}});
    out.push_back({{"name", d.name}, {"anonymous", d.anonymous}, {"sites", sites}});
  }
  return out;
}

// The dims of a graph checked without sizes, and how to give them.
void PrintDims(const GraphSource& source, bool json) {
  if (json) {
    std::cout << nlohmann::ordered_json{{"graph", source.path()}, {"dims", DimsJson(source.Dims())}}
                     .dump(2)
              << "\n";
    return;
  }
  std::string example;
  std::cout << source.path() << " has dynamic dimensions:\n";
  for (const DynamicDim& d : source.Dims()) {
    std::string sites;
    for (const DimSite& s : d.sites)
      sites += fmt::format("{}%{} axis {}", sites.empty() ? "" : ", ", s.param, s.axis);
    std::cout << fmt::format("  {:<12} {}{}\n", d.name, sites, d.anonymous ? "  (from ?)" : "");
    example += fmt::format(" --dim {}=128", d.name);
  }
  std::cout << fmt::format("give them sizes to type-check and sign it: fusetune check {}{}\n",
                           source.path(), example);
}

nlohmann::ordered_json ToJson(const Graph& g, const std::string& path,
                              const std::string& signature) {
  nlohmann::ordered_json params = nlohmann::ordered_json::array();
  for (ValueId p : g.params()) {
    params.push_back({{"name", RelayRef(g, p)},
                      {"type", g.value(p).type.ToString()},
                      {"bound", g.value(p).data != nullptr}});
  }
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (ValueId id = 0; id < static_cast<ValueId>(g.values().size()); ++id) {
    const Value& v = g.value(id);
    if (v.kind != ValueKind::kNode) continue;
    nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
    for (ValueId in : v.inputs) inputs.push_back(RelayRef(g, in));
    nodes.push_back({{"name", RelayRef(g, id)},
                     {"op", v.op->name},
                     {"type", v.type.ToString()},
                     {"inputs", inputs}});
  }
  nlohmann::ordered_json outputs = nlohmann::ordered_json::array();
  for (ValueId o : g.outputs()) outputs.push_back(RelayRef(g, o));
  return {{"graph", path},
          {"signature", signature},
          {"params", params},
          {"nodes", nodes},
          {"outputs", outputs}};
}

// One line per parameter and node: name, op, type.
std::string TypeTable(const Graph& g) {
  std::string out;
  for (ValueId id = 0; id < static_cast<ValueId>(g.values().size()); ++id) {
    const Value& v = g.value(id);
    if (v.kind == ValueKind::kConst) continue;
    out += RelayRef(g, id) + "\t" + OpName(v) + "\t" + v.type.ToString() + "\n";
  }
  return out;
}

int RunCheck(const CheckOptions& options) {
  Graph graph;
  DimBinding binding;
  std::vector<DynamicDim> dims;
  try {
    binding = OneDimBinding(options.dims, "check");
    GraphSource source(options.graph_path, {}, options.params_dir);
    try {
      graph = source.Bind(binding);
    } catch (const UserError&) {
      // Without sizes, a dynamic graph is listed rather than refused.
      if (!binding.empty() || source.Dims().empty()) throw;
      PrintDims(source, options.json);
      return 0;
    }
    if (!binding.empty()) dims = source.Dims();
  } catch (const UserError& e) {
    std::cerr << UserErrorLine(e.what()) << "\n";
    return 2;
  }
  std::string signature = Signature(graph);
  if (options.json) {
    nlohmann::ordered_json out = ToJson(graph, options.graph_path, signature);
    if (!binding.empty()) {
      out["dims"] = DimsJson(dims);
      out["binding"] = binding;
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  if (!binding.empty()) std::cout << "dims: " << DimBindingText(binding) << "\n";
  if (!options.params_dir.empty()) {
    std::string bound;
    for (ValueId p : graph.params())
      if (graph.value(p).data) bound += " " + RelayRef(graph, p);
    std::cout << "bound by --params:" << bound << "\n";
  }
  if (options.types_only) {
    std::cout << TypeTable(graph) << "signature: " << signature << "\n";
  } else {
    PrintOptions print;
    print.types = true;
    std::cout << PrintRelay(graph, print) << "signature: " << signature << "\n";
  }
  return 0;
}

}  // namespace

void RegisterCheckCommand(CLI::App& app) {
  auto options = std::make_shared<CheckOptions>();
  CLI::App* cmd = app.add_subcommand(
      "check",
      "Parse a graph, verify it, infer its types; print the typed graph and its signature");
  cmd->add_option("GRAPH", options->graph_path, "Relay text (.relay) or ONNX (.onnx) file")
      ->required();
  cmd->add_flag("--json", options->json,
                "print {graph, signature, params, nodes, outputs} as JSON instead");
  cmd->add_flag("--types", options->types_only,
                "print one line per parameter and node (name, op, type) instead of the graph");
  AddDimFlag(cmd, options->dims, /*several=*/false);
  AddParamsFlag(cmd, options->params_dir);
  cmd->callback([options] { SetExitCode(RunCheck(*options)); });
}

}  // namespace fusetune::cli
