#pragma once
// Families of graphs and regions: the shape-free twin of the exact signature (signature.h,
// docs/signatures.md, "Families").
//
// Two regions are in one family when they differ only in sizes: the same ops, attributes, ranks,
// dtypes and wiring, and the same pattern of equal sizes. The family text is the canonical text
// with every size other than 0 and 1 written as a symbol s0, s1, ... in order of first
// appearance; equal sizes share a symbol, wherever they appear in the region. Sizes 0 and 1 stay
// literal (a size-1 axis broadcasts; a different size does not). Attribute entries that hold a
// size of the op's tensors (OpDef::size_attrs: reshape's newshape, broadcast_to's shape,
// strided_slice's ends that reach the end of their axis, dense's units) are written as that
// size's symbol; every other attribute value is part of the family as written.
//
// The binding lists this region's size of each symbol, so the members of a family can be
// compared (see shape_transfer.h for the nearest member).
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace fusetune {

struct FamilyForm {
  std::string text;              // "fusetune-family v1 ...": the canonical text with symbols
  std::string key;               // Hash128Hex(text), 32 hex digits
  std::vector<int64_t> binding;  // binding[i] = this region's size of symbol s<i>
  std::vector<ValueId> inputs;   // the value named p<i>
  std::vector<ValueId> nodes;    // the node named n<i>
  std::vector<ValueId> outputs;  // in the order of the `out` line
  // The family without its equalities: the key of the text with every symbol written `?`, so
  // two regions that differ in sizes *and* in which sizes happen to be equal share it (the seed
  // at S=64, where S equals the head size, and at S=128). `size_symbols` lists the symbol of each
  // size written, in text order: two forms with one loose key list their sizes at corresponding
  // places (EqualitiesRefine compares them).
  std::string loose_key;
  std::vector<int> size_symbols;
};

// A whole graph, or a set of nodes, exactly as Canonicalize (signature.h) scopes them. The order
// of the nodes depends only on structure, never on sizes, so members of one family list their
// nodes in corresponding order: n<i> of one member is n<i> of every other.
FamilyForm CanonicalizeFamily(const Graph& graph);
FamilyForm CanonicalizeFamily(const Graph& graph, std::span<const ValueId> nodes);

std::string FamilyKey(const Graph& graph);
std::string FamilyKey(const Graph& graph, std::span<const ValueId> nodes);

// Whether `here` (a form with `member`'s loose key) keeps every equality of `member`: sizes that
// are one symbol in the member are one symbol here (here may have more equalities, never fewer).
// When so, `here_sizes` gets here's size of each of the member's symbols, a binding comparable
// with member.binding (BindingDistance), and the member's plan may be carried over position by
// position. False when the loose keys differ. When the loose keys match but an equality does not
// hold, `not_held` gets the member's size that stands for two different sizes here, "64 is two
// sizes here (8 and 64)".
bool EqualitiesRefine(const FamilyForm& member, const FamilyForm& here,
                      std::vector<int64_t>* here_sizes = nullptr, std::string* not_held = nullptr);

// "s0=12 s1=256 s2=64".
std::string BindingText(std::span<const int64_t> binding);

}  // namespace fusetune
