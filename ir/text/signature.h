#pragma once
// Canonical text and signatures of graphs and subgraphs (see docs/signatures.md).
//
// The canonical text lists inputs (p0, p1, ...), nodes (n0, n1, ...) and outputs in an order that
// depends only on structure: op names, normalised attributes, shapes, dtypes and constant values,
// never on variable names, binding numbers or the order in which independent bindings were
// written. Nodes are numbered by a depth-first post-order walk from the outputs, visiting each
// node's inputs in argument order. The signature is the XXH3-128 hash of the canonical text as 32
// lowercase hex digits.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace fusetune {

struct CanonicalForm {
  std::string text;
  std::vector<ValueId> inputs;   // the value named p<i>
  std::vector<ValueId> nodes;    // the node named n<i>
  std::vector<ValueId> outputs;  // in the order of the `out` line
};

// A whole graph: inputs are the parameters in declaration order, outputs the graph's outputs.
CanonicalForm Canonicalize(const Graph& graph);
// A set of nodes (any order; duplicates ignored): values read from outside the set become the
// inputs p0, p1, ... in the order the walk first meets them; the outputs are the nodes whose value
// is used outside the set, is a graph output, or is used nowhere. `recomputed`: members a group
// recomputes (ir/fusion.h), never outputs; what they read is an output. Throws UserError when an
// id is not a node of the graph.
CanonicalForm Canonicalize(const Graph& graph, std::span<const ValueId> nodes,
                           std::span<const ValueId> recomputed = {});

std::string CanonicalText(const Graph& graph);
std::string CanonicalText(const Graph& graph, std::span<const ValueId> nodes);

std::string Signature(const Graph& graph);
std::string Signature(const Graph& graph, std::span<const ValueId> nodes,
                      std::span<const ValueId> recomputed = {});

// XXH3-128 of `text` as 32 lowercase hex digits (high 64 bits first).
std::string Hash128Hex(std::string_view text);

}  // namespace fusetune
