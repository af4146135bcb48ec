#pragma once
// Reading GRAPH arguments: ONNX models (.onnx, through ir/onnx) and Relay text (anything else),
// with their dynamic dimensions bound by `--dim` (ir/dims.h). Every subcommand that takes a GRAPH
// loads it here.
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ir/dims.h"
#include "ir/graph.h"

namespace fusetune::cli {

// Reads at most limits.max_text_bytes + 1 bytes, so a huge file fails fast with the parser's
// positioned "more than the limit" message instead of filling memory.
std::string ReadGraphFile(const std::string& path, const Limits& limits);

// A GRAPH file, read once, imported once per binding.
class GraphSource {
 public:
  // `params_dir`: --params, a directory of NAME.npy files that bind the parameters %NAME
  // (ir/bind_params.h), read here once; empty binds none.
  explicit GraphSource(std::string path, Limits limits = {}, std::string params_dir = "");

  const std::string& path() const { return path_; }
  // The dynamic dims (imports the graph at probe sizes on first call; empty for a static graph).
  const std::vector<DynamicDim>& Dims() const;
  // The concrete graph; UserError naming the dimension for a binding that does not fit.
  Graph Bind(const DimBinding& binding = {}) const;
  // What a server is sent for `graph` (this source bound by `binding`): the file's own text for
  // static Relay, else `graph` printed as Relay (the server knows no bindings). Weights never
  // travel: the request names the parameters that carry them (client/remote_client.cc).
  std::string TextForServer(const Graph& graph, const DimBinding& binding) const;

 private:
  Graph Import(const DimResolver* dims) const;

  Graph BindParamFiles(Graph graph) const;

  std::string path_;
  Limits limits_;
  std::string params_dir_;
  std::map<std::string, Tensor> params_;  // the files of params_dir_, by parameter name
  bool onnx_;
  std::string bytes_;
  mutable bool discovered_ = false;
  mutable std::vector<DynamicDim> dims_;
};

Graph LoadGraph(const std::string& path, const Limits& limits = {});

// --params DIR: binds parameters to weights (GraphSource).
void AddParamsFlag(CLI::App* cmd, std::string& dir);

// --dim NAME[,NAME...]=SIZE[,SIZE...], repeatable. `several`: a flag may list several sizes
// (tune); otherwise exactly one per dim (check, query, run).
void AddDimFlag(CLI::App* cmd, std::vector<std::string>& flags, bool several);
// The bindings the flags ask for: each flag's names take each of its sizes together, and
// separate flags combine in every way (their cartesian product), in flag order. No flags: one
// empty binding. Throws UserError naming a malformed flag, a size that is not a positive
// integer, or a dim named twice.
std::vector<DimBinding> DimBindings(const std::vector<std::string>& flags);
// Exactly one binding; `command` names the subcommand in the error when a flag lists several.
DimBinding OneDimBinding(const std::vector<std::string>& flags, const std::string& command);
// " --dim seq=128 --dim x.1=64": the flags that give `binding`, for commands a message suggests.
std::string DimFlagsText(const DimBinding& binding);

}  // namespace fusetune::cli
