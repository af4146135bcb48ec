// Anchor and composite ONNX ops: MatMul, Gemm, Softmax, LogSoftmax, LayerNormalization and the
// reductions. MatMul against a 2-D weight known at import becomes nn.dense with the weight stored
// transposed ([n, k], nn.dense's layout), as TVM's ONNX frontend does; other MatMuls become
// nn.matmul or nn.batch_matmul around the reshapes their batch dimensions need.
#include <numeric>

#include "ir/onnx/host_ops.h"
#include "ir/onnx/import_context.h"

namespace fusetune::onnx_import {
namespace {

int64_t Product(const Shape& s, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= s[i];
  return n;
}

Attrs Newshape(const Shape& shape) { return Attrs({{"newshape", IntList(shape)}}); }

ValueId ReshapeTo(NodeContext& ctx, ValueId x, const Shape& shape) {
  if (ctx.TypeOf(x).shape == shape) return x;
  return ctx.Emit("reshape", {x}, Newshape(shape));
}

HostTensor Transpose2D(const HostTensor& w) {
  const int perm[] = {1, 0};
  return HostTranspose(w, perm);
}

// B as nn.dense's weight [n, k] when it is a 2-D (or 1-D) value known at import.
ValueId DenseWeight(NodeContext& ctx, int input) {
  const HostTensor& b = ctx.Host(input, "the weight");
  if (b.rank() == 1) {
    return ctx.DerivedInput(input, "row", [](const HostTensor& h) {
      return HostReshape(h, {1, h.shape[0]});
    });
  }
  return ctx.DerivedInput(input, "T", Transpose2D);
}

void ConvertMatMul(NodeContext& ctx) {
  const Shape sa = ctx.Input(0).shape, sb = ctx.Input(1).shape;
  if (sa.empty() || sb.empty()) ctx.Fail("MatMul operands must have rank >= 1");
  const int ra = static_cast<int>(sa.size()), rb = static_cast<int>(sb.size());
  const int64_t k = sa.back();
  const int64_t kb = rb == 1 ? sb[0] : sb[rb - 2];
  if (k != kb) {
    ctx.Fail("the reduction dimensions differ: A {} has k={}, B {} has k={}", ShapeString(sa), k,
             ShapeString(sb), kb);
  }
  const int64_t n = rb == 1 ? 1 : sb.back();
  // numpy: a 1-D B is a column that the result drops; a 1-D A is a row that it drops.
  Shape out_shape;
  {
    Shape ba(sa.begin(), sa.end() - std::min(ra, 2));
    Shape bb(sb.begin(), sb.end() - std::min(rb, 2));
    out_shape = BroadcastShape(ba, bb);
    if (ra >= 2) out_shape.push_back(sa[ra - 2]);
    if (rb >= 2) out_shape.push_back(n);
  }
  const bool b_batch_is_unit = Product(sb, 0, rb >= 2 ? rb - 2 : 0) == 1;

  // B is one matrix (2-D, or with unit batch dims that A's batch covers): every row of A meets it.
  if (rb <= 2 || (b_batch_is_unit && rb <= ra)) {
    if (ctx.IsHost(1)) {
      ValueId w;
      if (rb <= 2) {
        w = DenseWeight(ctx, 1);
      } else {
        w = ctx.DerivedInput(1, "T", [k, n](const HostTensor& h) {
          return Transpose2D(HostReshape(h, {k, n}));
        });
      }
      ValueId y = ctx.Emit("nn.dense", {ctx.Runtime(0), w});  // [..A rows.., n]
      return ctx.SetOutput(0, ReshapeTo(ctx, y, out_shape));
    }
    ValueId a = ReshapeTo(ctx, ctx.Runtime(0), {Product(sa, 0, ra - 1), k});
    ValueId b = ReshapeTo(ctx, ctx.Runtime(1), {k, n});
    ValueId y = ctx.Emit("nn.matmul", {a, b});
    return ctx.SetOutput(0, ReshapeTo(ctx, y, out_shape));
  }

  // Batched: both sides broadcast to the common batch shape, flattened to [batch, m|k, k|n].
  const int64_t m = ra >= 2 ? sa[ra - 2] : 1;
  Shape batch(out_shape.begin(), out_shape.end() - (ra >= 2 ? 2 : 1));
  const int64_t nb = Product(batch, 0, batch.size());
  auto to_batched = [&](int input, int64_t rows, int64_t cols) {
    ValueId v = ctx.Runtime(input);
    if (ctx.TypeOf(v).rank() == 1) v = ReshapeTo(ctx, v, {rows, cols});  // 1-D A is one row
    const Shape& s = ctx.TypeOf(v).shape;
    Shape own_batch(s.begin(), s.end() - 2);
    while (own_batch.size() < batch.size()) own_batch.insert(own_batch.begin(), 1);
    if (own_batch != batch) {
      Shape full = batch;
      full.push_back(rows);
      full.push_back(cols);
      v = ctx.Emit("broadcast_to", {v}, Attrs({{"shape", IntList(full)}}));
    }
    return ReshapeTo(ctx, v, {nb, rows, cols});
  };
  ValueId a = to_batched(0, m, k);
  ValueId b = to_batched(1, k, n);
  ValueId y = ctx.Emit("nn.batch_matmul", {a, b}, Attrs({{"transpose_b", false}}));
  ctx.SetOutput(0, ReshapeTo(ctx, y, out_shape));
}

// Gemm: Y = alpha * A' * B' + beta * C.
void ConvertGemm(NodeContext& ctx) {
  const bool trans_a = ctx.IntAttr("transA", 0) != 0;
  const bool trans_b = ctx.IntAttr("transB", 0) != 0;
  const float alpha = ctx.FloatAttr("alpha", 1.0f);
  const float beta = ctx.FloatAttr("beta", 1.0f);
  if (ctx.Input(0).shape.size() != 2 || ctx.Input(1).shape.size() != 2) {
    ctx.Fail("Gemm operands must be 2-D, got {} and {}", ShapeString(ctx.Input(0).shape),
             ShapeString(ctx.Input(1).shape));
  }
  ValueId a = ctx.Runtime(0);
  ValueId y;
  if (!trans_a && trans_b) {
    y = ctx.Emit("nn.dense", {a, ctx.Runtime(1)});
  } else if (!trans_a && ctx.IsHost(1)) {
    y = ctx.Emit("nn.dense", {a, DenseWeight(ctx, 1)});
  } else {
    y = ctx.Emit("nn.matmul", {a, ctx.Runtime(1)},
                 Attrs({{"transpose_a", trans_a}, {"transpose_b", trans_b}}));
  }
  const DType dtype = ctx.TypeOf(y).dtype;
  if (alpha != 1.0f) y = ctx.Emit("multiply", {y, ctx.EmitConst(Tensor::Scalar(dtype, alpha))});
  if (ctx.HasInput(2) && beta != 0.0f) {
    ValueId c;
    if (beta == 1.0f) {
      c = ctx.Runtime(2);
    } else if (ctx.IsHost(2)) {
      c = ctx.DerivedInput(2, "scaled", [beta](const HostTensor& h) {
        HostTensor out = h;
        for (int64_t i = 0; i < out.size(); ++i) out.SetReal(i, h.Real(i) * beta);
        return out;
      });
    } else {
      c = ctx.Emit("multiply", {ctx.Runtime(2), ctx.EmitConst(Tensor::Scalar(dtype, beta))});
    }
    y = ctx.Emit("add", {y, c});
  }
  ctx.SetOutput(0, y);
}

// Softmax over one axis (opset 13+), or over the flattened axes from `axis` on (before 13).
ValueId EmitSoftmax(NodeContext& ctx) {
  ValueId x = ctx.Runtime(0);
  const Shape shape = ctx.TypeOf(x).shape;
  const int rank = static_cast<int>(shape.size());
  if (rank == 0) ctx.Fail("softmax of a scalar");
  const int64_t default_axis = ctx.opset() >= 13 ? -1 : 1;
  const int axis = NormalizeOnnxAxis(ctx.IntAttr("axis", default_axis), rank, "axis");
  if (ctx.opset() >= 13 || axis == rank - 1)
    return ctx.Emit("nn.softmax", {x}, Attrs({{"axis", int64_t{axis}}}));
  ValueId flat = ReshapeTo(ctx, x, {Product(shape, 0, axis), Product(shape, axis, rank)});
  ValueId y = ctx.Emit("nn.softmax", {flat}, Attrs({{"axis", int64_t{1}}}));
  return ReshapeTo(ctx, y, shape);
}

void ConvertLayerNorm(NodeContext& ctx) {
  ValueId x = ctx.Runtime(0);
  const Shape shape = ctx.TypeOf(x).shape;
  const int rank = static_cast<int>(shape.size());
  if (rank == 0) ctx.Fail("layer normalisation of a scalar");
  const int axis = NormalizeOnnxAxis(ctx.IntAttr("axis", -1), rank, "axis");
  const double epsilon = ctx.FloatAttr("epsilon", 1e-5f);
  const int64_t d = Product(shape, axis, rank);
  // nn.layer_norm normalises one axis: fold the normalised axes into one.
  auto vector_of = [&](int input) {
    if (ctx.IsHost(input)) {
      return ctx.DerivedInput(input, "flat",
                              [d](const HostTensor& h) { return HostReshape(h, {d}); });
    }
    return ReshapeTo(ctx, ctx.Runtime(input), {d});
  };
  ValueId gamma = vector_of(1);
  const bool center = ctx.HasInput(2);
  // Without a bias the op still takes a beta of the right shape; center=False ignores it.
  ValueId beta = center ? vector_of(2) : gamma;
  ValueId flat = axis == rank - 1 ? x : ReshapeTo(ctx, x, {Product(shape, 0, axis), d});
  ValueId y = ctx.Emit(
      "nn.layer_norm", {flat, gamma, beta},
      Attrs({{"axis", int64_t{-1}}, {"epsilon", epsilon}, {"center", center}, {"scale", true}}));
  ctx.SetOutput(0, ReshapeTo(ctx, y, shape));
}

void AddReduce(ConverterTable& t, const std::string& onnx_op, const std::string& ir_op,
               int axes_input_opset) {
  t[onnx_op] = [ir_op, axes_input_opset](NodeContext& ctx) {
    ValueId x = ctx.Runtime(0);
    const int rank = ctx.TypeOf(x).rank();
    std::vector<int64_t> axes;
    if (ctx.opset() >= axes_input_opset) {
      if (ctx.HasInput(1)) axes = ctx.HostInts(1, "the axes");
    } else if (auto given = ctx.IntsAttr("axes")) {
      axes = *given;
    }
    const bool keepdims = ctx.IntAttr("keepdims", 1) != 0;
    if (axes.empty() && ctx.IntAttr("noop_with_empty_axes", 0) != 0) return ctx.SetOutput(0, x);
    Attrs attrs({{"keepdims", keepdims}});
    if (!axes.empty()) {
      IntList normalized;
      for (int64_t a : axes) normalized.push_back(NormalizeOnnxAxis(a, rank, "axis"));
      attrs.Set("axis", normalized);
    }
    ctx.SetOutput(0, ctx.Emit(ir_op, {x}, attrs));
  };
}

}  // namespace

void AddNNConverters(ConverterTable& t) {
  t["MatMul"] = ConvertMatMul;
  t["Gemm"] = ConvertGemm;
  t["Softmax"] = [](NodeContext& ctx) { ctx.SetOutput(0, EmitSoftmax(ctx)); };
  t["LogSoftmax"] = [](NodeContext& ctx) { ctx.SetOutput(0, ctx.Emit("log", {EmitSoftmax(ctx)})); };
  t["LayerNormalization"] = ConvertLayerNorm;
  AddReduce(t, "ReduceMean", "mean", 18);
  AddReduce(t, "ReduceSum", "sum", 13);
  AddReduce(t, "ReduceMax", "max", 18);
  AddReduce(t, "ReduceMin", "min", 18);
}

}  // namespace fusetune::onnx_import
