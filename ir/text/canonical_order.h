#pragma once
// The order behind every canonical text (docs/signatures.md): which values are the inputs p0,
// p1, ..., which nodes are n0, n1, ... and in which order the outputs are listed. Shared by the
// exact signature (ir/text/signature.h) and the shape-free family key (ir/text/family.h); they
// differ only in how the structural key that orders unordered outputs spells types, attributes
// and constants, so the family's order does not depend on sizes.
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace fusetune::canonical {

// How the structural key spells what it hashes. Whatever a spelling leaves out cannot order
// outputs; the canonical text still spells out everything, so a coarser key can only cost a
// missed match, never a false one.
struct KeySpelling {
  // "[attrs] : type" of a node of the set.
  std::function<std::string(const Value& node)> attrs_and_type;
  // An outside value that is not a constant (an input).
  std::function<std::string(const TensorType& type)> type;
  // A constant read by the set.
  std::function<std::string(const Value& constant)> constant;
};

struct Order {
  bool whole = false;
  std::vector<ValueId> inputs;       // the value named p<i>
  std::vector<ValueId> nodes;        // the node named n<i>
  std::vector<ValueId> outputs;      // in the order of the `out` line
  std::vector<char> in_set;          // per graph value
  std::vector<int32_t> input_index;  // per graph value: i of p<i>, or -1
  std::vector<int32_t> node_index;   // per graph value: i of n<i>, or -1
};

// A whole graph (`nodes` absent): inputs are the parameters in order, outputs the graph's
// outputs. A node set: see Canonicalize in signature.h (`recomputed`: its members that are never
// outputs). Throws UserError when an id is not a node.
Order ComputeOrder(const Graph& graph, std::optional<std::span<const ValueId>> nodes,
                   const KeySpelling& spelling, std::span<const ValueId> recomputed = {});

// Exact spellings shared by the canonical texts.
std::string AttrValueText(const AttrValue& value);  // True, 3, 1e-05, "s", None, [1, -1]
std::string ConstantText(const Value& constant);    // 0.5f, 2, True, const(TYPE, xxh3=...)
// The constant's literal when it is a supported scalar ("0.5f"); empty otherwise.
std::string ScalarConstantText(const Value& constant);
// XXH3-64 of a constant's bytes as 16 hex digits ("0" * 16 when it has none).
std::string ConstantContentHash(const Value& constant);

}  // namespace fusetune::canonical
