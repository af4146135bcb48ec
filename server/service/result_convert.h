#pragma once
// TuneReport (server/tuner.h) <-> v1::TuneResult. The server sends the report of a finished task;
// a remote client turns it back into a TuneReport over its own copy of the graph and prints it
// with the very code local mode uses, so `tune --server` and `tune --local` print the same table
// and the same JSON. Nodes travel by name ("%0"); the graph resolves them on each side.
#include "ir/graph.h"
#include "proto/fusetune.pb.h"
#include "server/tuner.h"

namespace fusetune::service {

v1::TuneResult ReportToProto(const Graph& graph, const std::string& graph_name,
                             const TuneReport& report);
// Throws UserError when the result names nodes `graph` does not have (another graph).
TuneReport ReportFromProto(const Graph& graph, const v1::TuneResult& result);

// Lookups: one region of a graph query.
v1::RegionResult RegionToProto(const Graph& graph, const RegionReport& region, bool found);

}  // namespace fusetune::service
