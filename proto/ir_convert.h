#pragma once
// The one place that converts between the IR and the wire messages of proto/fusetune.proto.
//
// To the wire: total (every IR graph has a message). From the wire: every message is untrusted
// input, checked as fully as Relay text is: a problem throws UserError naming the field and the
// node ("graph.values[4] (node %2 = exp): ..."), and GraphBuilder's verification and limits apply.
// A parameter that carries weights (Param.data) becomes a named constant: the IR builds
// parameters without data, and a value whose data is fixed is a constant to every later pass.
#include <string>

#include "ir/attrs.h"
#include "ir/graph.h"
#include "ir/plan.h"
#include "ir/tensor.h"
#include "proto/fusetune.pb.h"

namespace fusetune {

v1::DType DTypeToProto(DType dtype);
DType DTypeFromProto(v1::DType dtype, const std::string& where);

v1::TensorType TensorTypeToProto(const TensorType& type);
TensorType TensorTypeFromProto(const v1::TensorType& type, const std::string& where);

v1::Tensor TensorToProto(const Tensor& tensor);
Tensor TensorFromProto(const v1::Tensor& tensor, const std::string& where);

v1::AttrValue AttrValueToProto(const AttrValue& value);
AttrValue AttrValueFromProto(const v1::AttrValue& value, const std::string& where);

v1::Graph GraphToProto(const Graph& graph);
Graph GraphFromProto(const v1::Graph& graph, const Limits& limits = {});

v1::Schedule ScheduleToProto(const Schedule& schedule);
Schedule ScheduleFromProto(const v1::Schedule& schedule, const std::string& where);

// Plans name nodes by binding ("%0"); `graph` resolves them. PlanFromProto checks that every name
// is a node of the graph and then runs ValidatePlan (cover, lowerability, order).
v1::Plan PlanToProto(const Graph& graph, const Plan& plan);
Plan PlanFromProto(const Graph& graph, const v1::Plan& plan);

}  // namespace fusetune
