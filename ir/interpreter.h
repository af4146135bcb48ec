#pragma once
// The reference interpreter: evaluates a graph exactly by the op semantics of the catalog
// (EvalOp; accumulation in double where it matters). It is the ground truth every generated
// kernel is compared against.
#include <cstdint>
#include <span>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace fusetune {

// Evaluates the graph and returns its outputs in order (one tensor per output, also for a tuple).
//
// `inputs` gives the parameters, in the order of graph.params(), in one of two forms:
//  - one tensor per parameter. A parameter that carries data (an ONNX initialiser) may be given
//    an empty Tensor() to use its data;
//  - one tensor per parameter that carries no data, in order; parameters with data use it.
// Each given tensor must have exactly its parameter's type; a mismatch throws UserError naming it.
std::vector<Tensor> Interpret(const Graph& graph, std::span<const Tensor> inputs);

// Values evaluated before, offered to Interpret before it evaluates a node (the worker keeps them
// across measurement jobs: worker/reference_cache.h). A node the memo has is not evaluated, nor
// is anything only it needed; every node Interpret evaluates is offered to Keep.
class ValueMemo {
 public:
  virtual ~ValueMemo() = default;
  // The value of `node` when the memo has it (exactly the node's type), else nullptr.
  virtual const Tensor* Find(ValueId node) = 0;
  virtual void Keep(ValueId node, const Tensor& value) = 0;
};
std::vector<Tensor> Interpret(const Graph& graph, std::span<const Tensor> inputs, ValueMemo& memo);

// Like Interpret, but returns every value of the graph indexed by ValueId (parameters, constants
// and every node), for tests that compare intermediates.
std::vector<Tensor> InterpretAll(const Graph& graph, std::span<const Tensor> inputs);

// Another honest float32 evaluation of the graph: as Interpret, but every float32 value each node
// produces is moved by at most one ulp, up, down or not at all at random (seeded by `seed`), as
// a different order of rounding would leave it. How far its outputs lie from Interpret's measures
// how much the graph itself amplifies float32 rounding (worker/output_check.h): a deep stack of
// layers with random weights can amplify it past any fixed tolerance.
std::vector<Tensor> InterpretPerturbed(const Graph& graph, std::span<const Tensor> inputs,
                                       uint64_t seed);

// Deterministic random tensors, one per parameter in order (Tensor::Random, seeded by `seed` and
// the parameter's position); a parameter that carries data gets that data.
std::vector<Tensor> RandomInputs(const Graph& graph, uint64_t seed);
// The one of them at position `index` of graph.params().
Tensor RandomInput(const Graph& graph, size_t index, uint64_t seed);

}  // namespace fusetune
