#pragma once
// Dynamic dimensions: graphs whose parameters leave some sizes open (an ONNX model exported with
// dynamic_axes, Relay text with `?`), made concrete by a binding such as seq=128. The graph IR has
// static shapes only, so a binding is applied at import: the importer asks for each open size
// (DimResolver) and builds an ordinary graph, whose type inference then checks that the sizes
// fit. See docs/signatures.md, "Dynamic dimensions".
//
// Names. A named dim (ONNX dim_param "seq", a name in a Relay type: Tensor[(seq, 768), float32])
// is one dimension wherever it appears. An anonymous dim (Relay `?` or `Any`, an ONNX dim with
// neither value nor name) is named after the first parameter axis it sizes, `x.1` for axis 1 of
// %x; anonymous dims that the graph's types force to be equal (the `?` of %x and the `?` of %mask
// meet in an add) are one dimension, found by probing (DiscoverDims), and an anonymous dim forced
// equal to a named one joins it.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace fusetune {

struct DimSite {
  std::string param;  // without '%'
  int axis = 0;
  bool operator==(const DimSite&) const = default;
};

struct DynamicDim {
  std::string name;  // what a binding names
  bool anonymous = false;
  std::vector<DimSite> sites;  // every parameter axis it sizes, in parameter order
};

// Sizes by dim name.
using DimBinding = std::map<std::string, int64_t>;

// What an importer asks for each open parameter axis, in parameter order.
struct DimRequest {
  std::string name;  // empty: anonymous
  std::string param;
  int axis = 0;
};
// Returns the size (positive) or throws UserError.
using DimResolver = std::function<int64_t(const DimRequest&)>;
// Imports one graph source with its open sizes taken from the resolver.
using DimImporter = std::function<Graph(const DimResolver&)>;

// The source's dynamic dims in order of their first site. Empty for a static graph.
std::vector<DynamicDim> DiscoverDims(const DimImporter& import);

// The concrete graph under `binding`. Throws UserError naming the dimension when a dim is left
// unbound, the binding names a dim the graph does not have, a size is not positive, or the sizes
// do not fit the graph (a reshape or broadcast they break: the importer's positioned error,
// prefixed with the binding).
Graph BindDims(const DimImporter& import, const std::vector<DynamicDim>& dims,
               const DimBinding& binding);

// "x.1 (%x axis 1, %z axis 1), seq (%input axis 1)".
std::string DimsText(const std::vector<DynamicDim>& dims);
// "seq=128, x.1=64".
std::string DimBindingText(const DimBinding& binding);

}  // namespace fusetune
