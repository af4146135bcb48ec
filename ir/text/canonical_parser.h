#pragma once
// Canonical text (docs/signatures.md) back to a graph. The store keeps each tuned region's
// canonical text, not the graph it came from; rebuilding the region from that text gives what a
// shape-free comparison needs (its family and sizes, the groups of its stored plan) without the
// original graph.
#include <string_view>

#include "ir/graph.h"

namespace fusetune {

// The region (or graph) a canonical text describes: parameters p0, p1, ... in order, nodes n0,
// n1, ... in the canonical order (so canonical position i is the i-th node), outputs as in the
// `out` line. Types are inferred and checked against the text, and the graph's canonical text is
// checked to be `text` again. Throws UserError for malformed text and for non-scalar constants,
// whose values the text does not hold.
Graph ParseCanonicalText(std::string_view text);

// The node that canonical position `i` names in a graph from ParseCanonicalText.
ValueId CanonicalNode(const Graph& parsed, int i);

}  // namespace fusetune
