#include "ir/bind_params.h"

#include <fmt/format.h>

#include "ir/error.h"

namespace fusetune {

Graph BindParams(const Graph& graph, const std::map<std::string, Tensor>& values,
                 const Limits& limits) {
  for (const auto& [name, tensor] : values) {
    const std::optional<ValueId> id = graph.FindByName(name);
    if (!id || graph.value(*id).kind != ValueKind::kParam) {
      std::string params;
      for (ValueId p : graph.params())
        params += (params.empty() ? "%" : ", %") + graph.value(p).name;
      throw UserError(fmt::format("there is no parameter %{} to bind (the parameters: {})", name,
                                  params.empty() ? "none" : params));
    }
    const TensorType& type = graph.value(*id).type;
    if (tensor.type() != type)
      throw UserError(fmt::format("the value for parameter %{} is {}, the parameter is {}", name,
                                  tensor.type().ToString(), type.ToString()));
  }
  GraphBuilder b(limits);
  std::vector<ValueId> map(graph.values().size(), -1);
  for (size_t i = 0; i < graph.values().size(); ++i) {
    const Value& v = graph.values()[i];
    switch (v.kind) {
      case ValueKind::kParam: {
        auto bound = values.find(v.name);
        if (bound != values.end())
          map[i] = b.AddParamWithData(v.name, bound->second);
        else if (v.data)
          map[i] = b.AddParamWithData(v.name, v.data);
        else
          map[i] = b.AddParam(v.name, v.type);
        break;
      }
      case ValueKind::kConst:
        map[i] = b.AddConst(v.data, v.name);
        break;
      case ValueKind::kNode: {
        std::vector<ValueId> args;
        for (ValueId in : v.inputs) args.push_back(map[in]);
        map[i] = b.AddNode(v.op->name, std::move(args), v.attrs, v.name);
        break;
      }
    }
  }
  std::vector<ValueId> outputs;
  for (ValueId o : graph.outputs()) outputs.push_back(map[o]);
  b.SetOutputs(std::move(outputs), graph.tuple_output());
  return std::move(b).Build();
}

std::vector<std::string> BoundParamNames(const Graph& graph) {
  std::vector<std::string> names;
  for (ValueId p : graph.params())
    if (graph.value(p).data) names.push_back(graph.value(p).name);
  return names;
}

Graph BindParamPlaceholders(const Graph& graph, const std::map<std::string, TensorType>& types,
                            const Limits& limits) {
  std::map<std::string, Tensor> zeros_by_type;
  std::map<std::string, Tensor> values;
  for (const auto& [name, type] : types) {
    auto [it, made] = zeros_by_type.try_emplace(type.ToString());
    if (made) it->second = Tensor(type);
    values.emplace(name, it->second);
  }
  return BindParams(graph, values, limits);
}

}  // namespace fusetune
