// The import driver: decode the model, declare inputs and initialisers, convert the nodes the
// outputs need in file order (ONNX files are topologically sorted), check the outputs against
// the types the file declares. Converters live in convert_*.cc, one table entry per op type.
#include "ir/onnx/onnx_import.h"

#include <fstream>
#include <unordered_set>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "ir/layer_norm_pattern.h"
#include "ir/onnx/import_context.h"

namespace fusetune {
namespace {

using onnx_import::ImportState;
using onnx_import::NodeContext;
using onnx_import::OnnxValue;

int DefaultOpset(const onnx::ModelProto& model, const std::string& source) {
  for (const onnx::OperatorSetIdProto& id : model.opset_import()) {
    if (id.domain().empty() || id.domain() == "ai.onnx") {
      int v = static_cast<int>(id.version());
      if (v < kMinOnnxOpset || v > kMaxOnnxOpset) {
        throw UserError(fmt::format(
            "{}: opset {} is not supported (the importer handles opsets {} to {}); re-export the "
            "model with opset_version=13 or 14",
            source, v, kMinOnnxOpset, kMaxOnnxOpset));
      }
      return v;
    }
  }
  throw UserError(fmt::format(
      "{}: the model imports no opset of the default ONNX domain; the file is malformed", source));
}

std::string NodeLabel(const onnx::NodeProto& node, int index) {
  std::string label = fmt::format("node {}", index);
  if (!node.name().empty()) label += " '" + node.name() + "'";
  std::string op = node.domain().empty() || node.domain() == "ai.onnx"
                       ? node.op_type()
                       : node.domain() + "." + node.op_type();
  return label + " (" + op + ")";
}

TensorType InputType(const onnx::ValueInfoProto& info, const std::string& source,
                     const std::string& param, const DimResolver* dims) {
  const std::string what = fmt::format("{}: graph input '{}'", source, info.name());
  if (!info.type().has_tensor_type())
    throw UserError(what + " is not a tensor; only tensor inputs are supported");
  const onnx::TypeProto::Tensor& tt = info.type().tensor_type();
  std::optional<DType> dtype = onnx_import::RuntimeDType(tt.elem_type());
  if (!dtype) {
    throw UserError(fmt::format("{} has element type {}; inputs must be float, int32 or bool", what,
                                onnx_import::OnnxTypeName(tt.elem_type())));
  }
  if (!tt.has_shape()) {
    throw UserError(what +
                    " has no shape; fusetune tunes static shapes: export with fixed input shapes");
  }
  TensorType type{*dtype, {}};
  for (int a = 0; a < tt.shape().dim_size(); ++a) {
    const onnx::TensorShapeProto::Dimension& d = tt.shape().dim(a);
    if (!d.has_dim_value()) {
      std::string dim = d.has_dim_param() ? "'" + d.dim_param() + "'" : "without a name";
      if (!dims) {
        throw UserError(
            fmt::format("{} has a dynamic dimension {} at axis {}; give it a size (fusetune "
                        "check/tune/run/query --dim NAME=SIZE; `fusetune check` lists the names)",
                        what, dim, a));
      }
      try {
        type.shape.push_back((*dims)(DimRequest{d.dim_param(), param, a}));
      } catch (const UserError& e) {
        throw UserError(fmt::format("{}: {}", what, e.what()));
      }
      continue;
    }
    if (d.dim_value() < 0)
      throw UserError(fmt::format("{} has a negative dimension at axis {}", what, a));
    type.shape.push_back(d.dim_value());
  }
  return type;
}

// The nodes the graph outputs depend on; the rest (dead exporter leftovers) are skipped so an
// unsupported op nobody reads cannot fail the import. `read` collects every value they read.
std::vector<bool> LiveNodes(const onnx::GraphProto& g, std::unordered_set<std::string>& read,
                            const std::string& source) {
  std::unordered_map<std::string, int> producer;
  for (int n = 0; n < g.node_size(); ++n) {
    for (const std::string& out : g.node(n).output()) {
      if (out.empty()) continue;
      auto [it, fresh] = producer.emplace(out, n);
      if (!fresh) {
        throw UserError(
            fmt::format("{}: value '{}' is produced by nodes {} and {}; the file is "
                        "malformed",
                        source, out, it->second, n));
      }
    }
  }
  std::vector<bool> live(g.node_size(), false);
  std::vector<int> stack;
  auto need = [&](const std::string& name) {
    read.insert(name);
    auto it = producer.find(name);
    if (it != producer.end() && !live[it->second]) {
      live[it->second] = true;
      stack.push_back(it->second);
    }
  };
  for (const onnx::ValueInfoProto& out : g.output()) need(out.name());
  while (!stack.empty()) {
    int n = stack.back();
    stack.pop_back();
    for (const std::string& in : g.node(n).input())
      if (!in.empty()) need(in);
  }
  return live;
}

void ConvertNode(ImportState& state, const onnx::NodeProto& node, int index, int opset,
                 const std::unordered_set<std::string>& read) {
  const std::string label = NodeLabel(node, index);
  try {
    if (!(node.domain().empty() || node.domain() == "ai.onnx")) {
      throw UserError(fmt::format(
          "ops of domain '{}' are not supported, only the default ONNX domain; export without "
          "custom or contrib ops",
          node.domain()));
    }
    const auto& table = onnx_import::Converters();
    auto it = table.find(node.op_type());
    if (it == table.end()) {
      std::string known;
      for (const auto& [name, fn] : table) known += (known.empty() ? "" : ", ") + name;
      throw UserError(fmt::format(
          "op {} is not supported; re-export the model without it (PyTorch at opset 13 or 14 "
          "emits only supported ops for transformer layers) or write the graph in Relay text. "
          "Supported: {}",
          node.op_type(), known));
    }
    for (const std::string& in : node.input()) {
      if (!in.empty() && !state.values.count(in)) {
        throw UserError(fmt::format(
            "input '{}' is not defined before this node (no graph input, initialiser or earlier "
            "node produces it); the file is malformed or not topologically sorted",
            in));
      }
    }
    NodeContext ctx(state, node, opset);
    it->second(ctx);
    for (int o = 0; o < node.output_size(); ++o) {
      const std::string& out = node.output(o);
      if (!out.empty() && read.count(out) && !state.values.count(out)) {
        throw UserError(fmt::format(
            "output {} ('{}') is read by the graph, but the importer supports only this op's "
            "main result; export in inference mode or without the extra output",
            o, out));
      }
    }
  } catch (const UserError& e) {
    throw UserError(fmt::format("{}: {}: {}", state.source, label, e.what()));
  }
}

void CheckDeclaredOutput(const onnx::ValueInfoProto& info, const OnnxValue& v,
                         const std::string& source) {
  if (!info.type().has_tensor_type()) return;
  const onnx::TypeProto::Tensor& tt = info.type().tensor_type();
  const std::string what = fmt::format("{}: graph output '{}'", source, info.name());
  if (tt.elem_type() != 0 && tt.elem_type() != v.elem_type) {
    throw UserError(fmt::format("{} is declared {} but computes {}; the file is inconsistent", what,
                                onnx_import::OnnxTypeName(tt.elem_type()),
                                onnx_import::OnnxTypeName(v.elem_type)));
  }
  if (!tt.has_shape()) return;
  bool same = tt.shape().dim_size() == static_cast<int>(v.shape.size());
  for (int a = 0; same && a < tt.shape().dim_size(); ++a) {
    const auto& d = tt.shape().dim(a);
    same = !d.has_dim_value() || d.dim_value() == v.shape[a];
  }
  if (!same) {
    std::string declared = "(";
    for (int a = 0; a < tt.shape().dim_size(); ++a) {
      const auto& d = tt.shape().dim(a);
      declared +=
          (a ? ", " : "") + (d.has_dim_value() ? std::to_string(d.dim_value()) : std::string("?"));
    }
    declared += ")";
    throw UserError(fmt::format("{} is declared with shape {} but computes {}", what, declared,
                                onnx_import::ShapeString(v.shape)));
  }
}

}  // namespace

Graph ImportOnnx(std::string_view bytes, const std::string& source, const Limits& limits,
                 const DimResolver* dims) {
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    throw UserError(fmt::format(
        "{}: not an ONNX model: the protobuf does not parse (a truncated file, or not .onnx)",
        source));
  }
  if (!model.has_graph()) throw UserError(fmt::format("{}: the model has no graph", source));
  const int opset = DefaultOpset(model, source);
  const onnx::GraphProto& g = model.graph();
  if (g.output_size() == 0) throw UserError(fmt::format("{}: the graph has no outputs", source));
  if (g.sparse_initializer_size() > 0) {
    throw UserError(
        fmt::format("{}: sparse initialisers are not supported; save dense ones", source));
  }

  ImportState state(limits, source);
  std::unordered_set<std::string> initializer_names;
  for (const onnx::TensorProto& init : g.initializer()) initializer_names.insert(init.name());
  // Inputs first, in file order, so the parameters a user feeds come first.
  for (const onnx::ValueInfoProto& info : g.input()) {
    if (initializer_names.count(info.name())) continue;  // a default value: a weight
    const std::string param = state.ParamName(info.name());
    TensorType type = InputType(info, source, param, dims);
    auto v = std::make_shared<OnnxValue>();
    v->elem_type = onnx_import::OnnxTypeOf(type.dtype);
    v->shape = type.shape;
    try {
      v->id = state.builder.AddParam(param, type);
      state.Define(info.name(), std::move(v));
    } catch (const UserError& e) {
      throw UserError(fmt::format("{}: graph input '{}': {}", source, info.name(), e.what()));
    }
  }
  for (onnx::TensorProto& init : *model.mutable_graph()->mutable_initializer()) {
    auto v = std::make_shared<OnnxValue>();
    try {
      auto host = std::make_shared<onnx_import::HostTensor>(
          onnx_import::ParseTensorProto(init, limits.max_elements));
      // The values now live in `host`; free the file's copy rather than hold a model twice.
      std::string().swap(*init.mutable_raw_data());
      init.clear_float_data();
      v->elem_type = host->elem_type;
      v->shape = host->shape;
      v->host = std::move(host);
      state.Define(init.name(), std::move(v));
    } catch (const UserError& e) {
      throw UserError(fmt::format("{}: initialiser '{}': {}", source, init.name(), e.what()));
    }
  }

  std::unordered_set<std::string> read;
  std::vector<bool> live = LiveNodes(g, read, source);
  for (int n = 0; n < g.node_size(); ++n)
    if (live[n]) ConvertNode(state, g.node(n), n, opset, read);

  std::vector<ValueId> outputs;
  for (const onnx::ValueInfoProto& info : g.output()) {
    auto it = state.values.find(info.name());
    if (it == state.values.end()) {
      throw UserError(fmt::format(
          "{}: graph output '{}' is produced by no node, input or initialiser; the file is "
          "malformed",
          source, info.name()));
    }
    CheckDeclaredOutput(info, *it->second, source);
    try {
      outputs.push_back(state.Materialize(info.name(), *it->second));
    } catch (const UserError& e) {
      throw UserError(fmt::format("{}: graph output '{}': {}", source, info.name(), e.what()));
    }
  }
  state.builder.SetOutputs(outputs, outputs.size() > 1);
  return FuseDecomposedLayerNorms(std::move(state.builder).Build(), limits);
}

Graph ImportOnnxFile(const std::string& path, const Limits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("cannot read '" + path + "': no such file or not readable");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return ImportOnnx(bytes, path, limits);
}

std::vector<std::string> SupportedOnnxOps() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : onnx_import::Converters()) names.push_back(name);
  return names;
}

}  // namespace fusetune
