#pragma once
// The op catalog: one OpDef per operator, holding everything any part of fusetune needs to know
// about it: arity, attribute schema, type inference, fusion pattern, cost, and its meaning (a
// ScalarExpr and/or an index map, or a reference kernel for anchors, reductions and composites).
// Definitions live in ir/ops/*.cc, grouped by family; nothing else switches on op names.
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attrs.h"
#include "ir/index_expr.h"
#include "ir/scalar_expr.h"
#include "ir/tensor.h"

namespace fusetune {

// TVM's fusion pattern taxonomy, in TVM's order.
enum class OpPattern {
  kElemWise = 0,
  kBroadcast = 1,
  kInjective = 2,
  kCommReduce = 3,
  kOutEWiseFusable = 4,
  kOpaque = 8
};
std::string_view PatternName(OpPattern p);

// What kind of kernel template computes this op; the code generator dispatches on it.
enum class OpKind {
  kElementwise,  // ElemWise/Broadcast: `scalar` over inputs read through `access`
  kInjective,  // data movement: output = input read through `access` (select_axis picks the input)
  kReduce,     // `reduce` describes it
  kMatmul,     // dense, batch_matmul, matmul: `matmul` describes it
  kComposite,  // softmax, layer_norm: row-wise kernels of their own
};

enum class ReduceCombiner { kSum, kMax, kMin };

struct ReduceInfo {
  ReduceCombiner combiner;
  bool mean = false;  // divide by the reduced count afterwards
};

// out[b, m, n] = sum_k A(b, m, k) * B(b, n, k) after transposes resolved.
struct MatmulLayout {
  bool batched = false;
  bool transpose_a = false;  // A stored [.., k, m]
  bool transpose_b = true;   // B stored [.., n, k]
  int64_t batch = 1, m = 0, n = 0, k = 0;
};

// Inputs to infer/eval. Type inference throws UserError with a message that names the problem
// (without position: the caller adds file:line:col).
using InferFn = std::function<TensorType(std::span<const TensorType> inputs, const Attrs& attrs)>;
using AccessFn = std::function<AccessMap(std::span<const TensorType> inputs, const TensorType& out,
                                         const Attrs& attrs)>;
using ScalarFn = std::function<ScalarExpr(std::span<const TensorType> inputs, const TensorType& out,
                                          const Attrs& attrs)>;
using EvalFn = std::function<Tensor(std::span<const Tensor* const> inputs, const TensorType& out,
                                    const Attrs& attrs)>;
using CostFn = std::function<double(std::span<const TensorType> inputs, const TensorType& out,
                                    const Attrs& attrs)>;
using MatmulFn =
    std::function<MatmulLayout(std::span<const TensorType> inputs, const Attrs& attrs)>;

// An attribute entry that holds a size of one of the op's tensors: reshape's positive newshape
// entries, strided_slice's ends that reach the end of their axis, dense's units. Shape-free keys
// (ir/text/family.h) write it as the symbol of that size, so two calls that differ only in sizes
// share a family.
struct SizeAttr {
  std::string attr;
  int index = -1;  // entry of an int list; -1: the attribute is one int
  int input = -1;  // whose size: input i, or -1 for the output
  int axis = 0;
};
using SizeAttrsFn = std::function<std::vector<SizeAttr>(std::span<const TensorType> inputs,
                                                        const TensorType& out, const Attrs& attrs)>;

struct OpDef {
  std::string name;
  int min_inputs = 1;
  int max_inputs = 1;        // -1: variadic
  bool tuple_input = false;  // Relay passes the inputs as one tuple: concatenate((%a, %b), axis=0)
  std::vector<AttrSpec> attrs;
  OpPattern pattern = OpPattern::kOpaque;
  OpKind kind = OpKind::kElementwise;
  // Its output is its first input's memory read in another shape (row-major order unchanged:
  // reshape, expand_dims, squeeze), so a kernel may read that input in place of computing it.
  bool row_major_view = false;

  InferFn infer;
  AccessFn access;  // kElementwise, kInjective (and the prologue reads of kReduce)
  ScalarFn scalar;  // kElementwise
  ReduceInfo reduce{ReduceCombiner::kSum};  // kReduce
  MatmulFn matmul;                          // kMatmul
  EvalFn eval;   // reference semantics when not derivable from scalar/access (kReduce, kMatmul,
                 // kComposite)
  CostFn flops;  // floating-point operations of one evaluation
  SizeAttrsFn size_attrs;  // absent: no attribute holds a size
};

const OpDef* FindOp(std::string_view name);
const std::vector<const OpDef*>& AllOps();

// Checks attributes against the schema (unknown names, wrong kinds) and returns them normalised:
// every schema attribute present, in schema order, defaults filled. Throws UserError.
Attrs NormalizeAttrs(const OpDef& op, const Attrs& given);

// Reference evaluation of one op (uses `eval`, or the generic access/scalar path).
Tensor EvalOp(const OpDef& op, std::span<const Tensor* const> inputs, const TensorType& out,
              const Attrs& attrs);

// An axis attribute in [-rank, rank) made non-negative; throws UserError naming `op` otherwise.
int NormalizeAxis(std::string_view op, int64_t axis, int rank);

// The input axes a reduction (sum/max/min/mean) reduces, ascending, from its normalised attrs
// (axis None = all axes; exclude inverts the set).
std::vector<int> ReduceAxes(const TensorType& input, const Attrs& attrs);

}  // namespace fusetune
