#pragma once
// Graph -> Relay text, in the `fn (...) { ... }` form: one binding per line, attributes in schema
// order with defaults left out, scalar constants written inline as literals. ParseRelay reads the
// output back to an equal graph (names included), and printing that again gives the same text.
//
// The last node is written as the unbound result expression (as in the seed example) when it is
// the single output and its name is the number the parser would give an unnamed result; otherwise
// every node is bound and the result is `%name` or a tuple `(%a, %b)`.
#include <string>

#include "ir/graph.h"

namespace fusetune {

struct PrintOptions {
  bool types = false;  // `/* ty=... */` after every binding and `-> T` after the parameters
};

std::string PrintRelay(const Graph& graph, const PrintOptions& options = {});

// How a value is written as an argument: %x, %0, or a scalar literal (0.5f, 2, True).
std::string RelayRef(const Graph& graph, ValueId id);

}  // namespace fusetune
