#pragma once
// Everything a client or a worker sends is checked here before anything is stored, and each
// problem throws UserError (INVALID_ARGUMENT) with a message that names the field and, for Relay
// text, the line and column. Handlers call these and nothing else decides what is valid.
#include <string>
#include <vector>

#include "ir/graph.h"
#include "proto/fusetune.pb.h"
#include "server/service/service_options.h"
#include "server/tuner.h"

namespace fusetune::service {

Limits GraphLimits(const ServiceOptions& options);

// A graph from a request: Relay text (parsed with `limits`), an ONNX model (imported with
// `limits`) or the structured message, with its `bound_params` bound to placeholders
// (ir/bind_params.h; a name that is no parameter, or a type unlike the parameter's, is
// INVALID_ARGUMENT). `*text` receives the Relay text the task will keep (without weights: the
// task keeps the bound parameters' names beside it).
Graph GraphFromSource(const v1::GraphSource& source, const Limits& limits, const char* field,
                      std::string* text);

// A checked SubmitTune: what the task row keeps.
struct Submission {
  Graph graph;
  std::string graph_text;
  std::vector<std::string> bound_params;  // parameters that carry weights (ir/bind_params.h)
  std::string graph_name;
  v1::TuneOptions options;
  std::string target;  // a fingerprint or "any"
  std::string client;  // the label given (empty: the caller picks one)
};
Submission CheckSubmitTune(const v1::SubmitTuneRequest& request, const ServiceOptions& options);

// The search and timing controls of a request over `graph`; each field is checked (ranges, op
// names, node names). 0 / absent fields take local mode's defaults.
TuneOptions TuneOptionsFromProto(const v1::TuneOptions& options, const Graph& graph);

// A target: "any" or a fingerprint (printable ASCII, at most 4096 bytes). "" becomes "any".
std::string CheckTarget(const std::string& target, const char* field);
void CheckTaskId(int64_t id, const char* field);
// A label or id sent by a caller: at most `max_bytes` printable ASCII characters.
void CheckLabel(const std::string& label, const char* field, size_t max_bytes);
// 32 lowercase hex digits, as `fusetune check` prints.
void CheckRegionSignature(const std::string& signature, const char* field);

}  // namespace fusetune::service
