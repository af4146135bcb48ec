// Reductions sum / max / min / mean over an axis set (None = all, negative axes, keepdims,
// exclude). The reference accumulates in double.
#include <cmath>
#include <limits>

#include "ir/ops/ops.h"

namespace fusetune::ops {
namespace {

TensorType InferReduce(std::string_view op, const TensorType& in, const Attrs& attrs) {
  if (!attrs.IsNone("axis")) NormalizeAxes(op, attrs.GetIntList("axis"), in.rank());
  std::vector<int> axes = ReduceAxes(in, attrs);
  const bool keepdims = attrs.GetBool("keepdims");
  TensorType out{in.dtype, {}};
  for (int a = 0; a < in.rank(); ++a) {
    bool reduced = std::find(axes.begin(), axes.end(), a) != axes.end();
    if (!reduced)
      out.shape.push_back(in.shape[a]);
    else if (keepdims)
      out.shape.push_back(1);
  }
  return out;
}

Tensor EvalReduce(const ReduceInfo& info, const Tensor& in, const TensorType& out,
                  const Attrs& attrs) {
  const TensorType& type = in.type();
  std::vector<int> axes = ReduceAxes(type, attrs);
  const int rank = type.rank();
  // Stride in the output of each input axis (0 for reduced axes), whether or not keepdims.
  std::vector<int64_t> out_stride(rank, 0);
  {
    int64_t s = 1;
    for (int a = rank - 1; a >= 0; --a) {
      if (std::find(axes.begin(), axes.end(), a) != axes.end()) continue;
      out_stride[a] = s;
      s *= type.shape[a];
    }
  }
  double init = 0.0;
  if (info.combiner == ReduceCombiner::kMax) init = -std::numeric_limits<double>::infinity();
  if (info.combiner == ReduceCombiner::kMin) init = std::numeric_limits<double>::infinity();
  std::vector<double> acc(out.NumElements(), init);

  const int64_t total = type.NumElements();
  std::vector<int64_t> coords(rank, 0);
  const int64_t inner = rank ? type.shape[rank - 1] : 1;
  const int64_t inner_stride = rank ? out_stride[rank - 1] : 0;
  for (int64_t flat = 0; flat < total;) {
    int64_t base = 0;
    for (int d = 0; d + 1 < rank; ++d) base += coords[d] * out_stride[d];
    for (int64_t j = 0; j < inner; ++j, ++flat) {
      double v = in.Get(flat);
      double& a = acc[base + j * inner_stride];
      switch (info.combiner) {
        case ReduceCombiner::kSum:
          a += v;
          break;
        case ReduceCombiner::kMax:
          if (v > a || std::isnan(v)) a = v;
          break;
        case ReduceCombiner::kMin:
          if (v < a || std::isnan(v)) a = v;
          break;
      }
    }
    for (int d = rank - 2; d >= 0; --d) {
      if (++coords[d] < type.shape[d]) break;
      coords[d] = 0;
    }
  }
  Tensor result(out);
  const double count = out.NumElements() ? static_cast<double>(total) / out.NumElements() : 0;
  for (int64_t i = 0; i < result.size(); ++i) result.Set(i, info.mean ? acc[i] / count : acc[i]);
  return result;
}

void AddReduce(OpList& ops, std::string name, ReduceCombiner combiner, bool mean) {
  auto def = std::make_unique<OpDef>();
  def->name = name;
  def->pattern = OpPattern::kCommReduce;
  def->kind = OpKind::kReduce;
  def->reduce = ReduceInfo{combiner, mean};
  def->attrs = {{"axis", AttrKind::kOptionalIntList, NoneAttr{}},
                {"keepdims", AttrKind::kBool, false},
                {"exclude", AttrKind::kBool, false}};
  def->infer = [name, mean](std::span<const TensorType> in, const Attrs& attrs) {
    if (mean) RequireNumeric(name, in[0]);
    return InferReduce(name, in[0], attrs);
  };
  def->access = [](std::span<const TensorType> in, const TensorType&, const Attrs&) {
    AccessMap map;
    map.inputs.push_back(IdentityRead(in[0].rank()));
    return map;
  };
  ReduceInfo info = def->reduce;
  def->eval = [info](std::span<const Tensor* const> in, const TensorType& out, const Attrs& attrs) {
    return EvalReduce(info, *in[0], out, attrs);
  };
  def->flops = [mean](std::span<const TensorType> in, const TensorType& out, const Attrs&) {
    return static_cast<double>(in[0].NumElements()) +
           (mean ? static_cast<double>(out.NumElements()) : 0.0);
  };
  ops.push_back(std::move(def));
}

}  // namespace

void AddReduceOps(OpList& ops) {
  AddReduce(ops, "sum", ReduceCombiner::kSum, false);
  AddReduce(ops, "max", ReduceCombiner::kMax, false);
  AddReduce(ops, "min", ReduceCombiner::kMin, false);
  AddReduce(ops, "mean", ReduceCombiner::kSum, true);
}

}  // namespace fusetune::ops
