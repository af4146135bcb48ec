#include "client/graph_loader.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "ir/bind_params.h"
#include "ir/error.h"
#include "ir/npy.h"
#include "ir/onnx/onnx_import.h"
#include "ir/text/relay_parser.h"
#include "ir/text/relay_printer.h"

namespace fusetune::cli {

std::string ReadGraphFile(const std::string& path, const Limits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("cannot read '" + path + "': no such file or not readable");
  in.seekg(0, std::ios::end);
  int64_t size = static_cast<int64_t>(in.tellg());
  in.seekg(0, std::ios::beg);
  std::string text(static_cast<size_t>(std::min(size, limits.max_text_bytes + 1)), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

GraphSource::GraphSource(std::string path, Limits limits, std::string params_dir)
    : path_(std::move(path)),
      limits_(limits),
      params_dir_(std::move(params_dir)),
      onnx_(path_.ends_with(".onnx")) {
  if (onnx_) {
    // One sized read: a model is hundreds of MB, and reading it a character at a time into a
    // growing string copied it several times over.
    std::ifstream in(path_, std::ios::binary);
    if (!in) throw UserError("cannot read '" + path_ + "': no such file or not readable");
    std::error_code ec;
    const std::uintmax_t size = std::filesystem::file_size(path_, ec);
    if (ec) throw UserError("cannot read '" + path_ + "': " + ec.message());
    bytes_.resize(static_cast<size_t>(size));
    in.read(bytes_.data(), static_cast<std::streamsize>(bytes_.size()));
    bytes_.resize(static_cast<size_t>(in.gcount()));
  } else {
    bytes_ = ReadGraphFile(path_, limits_);
  }
  if (params_dir_.empty()) return;
  std::error_code ec;
  if (!std::filesystem::is_directory(params_dir_, ec))
    throw UserError(fmt::format("--params {}: not a directory (it holds NAME.npy for each %NAME)",
                                params_dir_));
  for (const auto& entry : std::filesystem::directory_iterator(params_dir_)) {
    if (entry.path().extension() != ".npy") continue;
    params_.emplace(entry.path().stem().string(), ReadNpy(entry.path().string()));
  }
  if (params_.empty())
    throw UserError(
        fmt::format("--params {}: no .npy files (it holds NAME.npy for each %NAME)", params_dir_));
}

Graph GraphSource::Import(const DimResolver* dims) const {
  if (onnx_) return ImportOnnx(bytes_, path_, limits_, dims);
  return ParseRelay(bytes_, path_, limits_, dims);
}

const std::vector<DynamicDim>& GraphSource::Dims() const {
  if (!discovered_) {
    dims_ = DiscoverDims([this](const DimResolver& r) { return Import(&r); });
    discovered_ = true;
  }
  return dims_;
}

Graph GraphSource::Bind(const DimBinding& binding) const {
  if (binding.empty()) {
    std::optional<Graph> graph;
    try {
      graph = Import(nullptr);
    } catch (const UserError&) {
      // A dynamic graph: say which dims need sizes, by the names --dim takes.
      if (Dims().empty()) throw;
    }
    if (graph) return BindParamFiles(std::move(*graph));
  }
  return BindParamFiles(
      BindDims([this](const DimResolver& r) { return Import(&r); }, Dims(), binding));
}

Graph GraphSource::BindParamFiles(Graph graph) const {
  if (params_.empty()) return graph;
  try {
    return BindParams(graph, params_, limits_);
  } catch (const UserError& e) {
    throw UserError(fmt::format("--params {}: {}", params_dir_, e.what()));
  }
}

std::string GraphSource::TextForServer(const Graph& graph, const DimBinding& binding) const {
  // Weights stay here (the server is told which parameters carry them: remote_client.cc). So an
  // ONNX model travels as the Relay text of its import, not as its bytes, which are mostly
  // initialisers (340 MB for BERT-base's encoder); static Relay travels as the file's own text.
  if (binding.empty() && !onnx_) return bytes_;
  return PrintRelay(graph);
}

Graph LoadGraph(const std::string& path, const Limits& limits) {
  return GraphSource(path, limits).Bind();
}

namespace {

struct DimFlag {
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
};

std::vector<std::string> SplitCommas(std::string_view s) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t comma = s.find(',', start);
    parts.emplace_back(s.substr(start, comma == std::string_view::npos ? s.npos : comma - start));
    if (comma == std::string_view::npos) return parts;
    start = comma + 1;
  }
}

DimFlag ParseDimFlag(const std::string& flag) {
  size_t eq = flag.find('=');
  if (eq == std::string::npos) {
    throw UserError(fmt::format(
        "--dim {}: expected NAME=SIZE[,SIZE...] (as in --dim seq=128 or --dim seq=64,128)", flag));
  }
  DimFlag d;
  for (std::string& name : SplitCommas(std::string_view(flag).substr(0, eq))) {
    if (name.empty()) throw UserError(fmt::format("--dim {}: a dimension name is empty", flag));
    d.names.push_back(std::move(name));
  }
  for (const std::string& text : SplitCommas(std::string_view(flag).substr(eq + 1))) {
    int64_t size = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), size);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || size <= 0) {
      throw UserError(
          fmt::format("--dim {}: size '{}' of {} is not a positive integer", flag, text,
                      d.names.size() == 1 ? "dimension '" + d.names[0] + "'" : "these dimensions"));
    }
    d.sizes.push_back(size);
  }
  return d;
}

std::vector<DimFlag> ParseDimFlags(const std::vector<std::string>& flags) {
  std::vector<DimFlag> parsed;
  std::set<std::string> seen;
  for (const std::string& flag : flags) {
    parsed.push_back(ParseDimFlag(flag));
    for (const std::string& name : parsed.back().names) {
      if (!seen.insert(name).second)
        throw UserError(fmt::format("--dim: dimension '{}' is given more than once", name));
    }
  }
  return parsed;
}

}  // namespace

void AddParamsFlag(CLI::App* cmd, std::string& dir) {
  cmd->add_option("--params", dir,
                  "bind parameters to weights: DIR/NAME.npy for each %NAME (as TVM's "
                  "bind_params_by_name); a bound weight is a constant of the plan, packed once "
                  "where a schedule asks");
}

void AddDimFlag(CLI::App* cmd, std::vector<std::string>& flags, bool several) {
  cmd->add_option("--dim", flags,
                  several ? "sizes of the graph's dynamic dimensions: NAME=SIZE[,SIZE...], "
                            "repeatable; each size is tuned in turn (several flags: every "
                            "combination); NAME1,NAME2=SIZES gives several dims the same sizes; "
                            "`fusetune check GRAPH` lists the names"
                          : "sizes of the graph's dynamic dimensions: NAME=SIZE, repeatable "
                            "(NAME1,NAME2=SIZE: several dims, one size); `fusetune check GRAPH` "
                            "lists the names")
      ->type_name("NAME=SIZE")
      ->allow_extra_args(false);
}

std::vector<DimBinding> DimBindings(const std::vector<std::string>& flags) {
  std::vector<DimBinding> bindings{{}};
  for (const DimFlag& flag : ParseDimFlags(flags)) {
    std::vector<DimBinding> next;
    for (const DimBinding& b : bindings) {
      for (int64_t size : flag.sizes) {
        DimBinding more = b;
        for (const std::string& name : flag.names) more[name] = size;
        next.push_back(std::move(more));
      }
    }
    bindings = std::move(next);
  }
  return bindings;
}

DimBinding OneDimBinding(const std::vector<std::string>& flags, const std::string& command) {
  for (const DimFlag& flag : ParseDimFlags(flags)) {
    if (flag.sizes.size() != 1) {
      throw UserError(fmt::format(
          "--dim: {} takes one size per dimension, got {} for {} (`fusetune tune` takes several)",
          command, flag.sizes.size(), fmt::join(flag.names, ",")));
    }
  }
  return DimBindings(flags).front();
}

std::string DimFlagsText(const DimBinding& binding) {
  std::string s;
  for (const auto& [name, size] : binding) s += fmt::format(" --dim {}={}", name, size);
  return s;
}

}  // namespace fusetune::cli
