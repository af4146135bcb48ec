// Data-movement and shape ONNX ops. Exporters compute shapes at run time (Shape -> Gather ->
// Unsqueeze -> Concat -> Reshape); with static input shapes every such chain is known here, so
// these ops fold on host values and only the data they move reaches the graph, as reshape,
// transpose, strided_slice, concatenate, expand_dims or broadcast_to (Squeeze, Flatten and
// multi-axis Unsqueeze are reshapes).
#include <algorithm>
#include <cmath>

#include <onnx/onnx_pb.h>

#include "ir/onnx/host_ops.h"
#include "ir/onnx/import_context.h"

namespace fusetune::onnx_import {
namespace {

int64_t Product(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

HostTensor HostFromAttr(const NodeContext& ctx, const onnx::AttributeProto& a) {
  switch (a.type()) {
    case onnx::AttributeProto::TENSOR:
      return ParseTensorProto(a.t(), ctx.limits().max_elements);
    case onnx::AttributeProto::FLOAT: {
      HostTensor t = HostTensor::Zeros(kOnnxFloat, {});
      t.SetReal(0, a.f());
      return t;
    }
    case onnx::AttributeProto::FLOATS: {
      HostTensor t = HostTensor::Zeros(kOnnxFloat, {a.floats_size()});
      for (int i = 0; i < a.floats_size(); ++i) t.SetReal(i, a.floats(i));
      return t;
    }
    case onnx::AttributeProto::INT:
      return HostTensor::Ints({}, {a.i()});
    case onnx::AttributeProto::INTS:
      return HostTensor::Ints({a.ints_size()}, {a.ints().begin(), a.ints().end()});
    default:
      ctx.Fail("a Constant with a {} value is not supported (tensor, float(s) and int(s) are)",
               a.name());
  }
}

void ConvertConstant(NodeContext& ctx) {
  for (const char* name : {"value", "value_float", "value_floats", "value_int", "value_ints",
                           "sparse_value", "value_string", "value_strings"}) {
    if (const onnx::AttributeProto* a = ctx.Attr(name))
      return ctx.SetOutput(0, HostFromAttr(ctx, *a));
  }
  ctx.Fail("the Constant has no value attribute");
}

void ConvertConstantOfShape(NodeContext& ctx) {
  Shape shape = ctx.HostInts(0, "the shape");
  HostTensor fill = HostTensor::Zeros(kOnnxFloat, {1});
  if (const onnx::AttributeProto* a = ctx.Attr("value")) fill = HostFromAttr(ctx, *a);
  if (fill.size() != 1) ctx.Fail("the value attribute must hold one element");
  for (int64_t d : shape)
    if (d < 0) ctx.Fail("the shape {} has a negative dimension", ShapeString(shape));
  if (Product(shape) > ctx.limits().max_elements) {
    ctx.Fail("the shape {} has more elements than the tensor size limit", ShapeString(shape));
  }
  HostTensor out = HostTensor::Zeros(fill.elem_type, shape);
  for (int64_t i = 0; i < out.size(); ++i) {
    if (fill.is_real())
      out.SetReal(i, fill.Real(0));
    else
      out.SetInt(i, fill.Int(0));
  }
  ctx.SetOutput(0, std::move(out));
}

void ConvertShape(NodeContext& ctx) {
  const Shape& shape = ctx.Input(0).shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t start = ctx.IntAttr("start", 0), end = ctx.IntAttr("end", rank);
  AxisRange r = ResolveSlice(start, end, 1, rank);
  ctx.SetOutput(0, HostTensor::Ints({r.extent}, Shape(shape.begin() + r.begin,
                                                      shape.begin() + r.begin + r.extent)));
}

void ConvertSize(NodeContext& ctx) {
  ctx.SetOutput(0, HostTensor::Ints({}, {Product(ctx.Input(0).shape)}));
}

// Gathers the positions `picks` along `axis` of a run-time value: one strided_slice when they
// step evenly, otherwise a concatenation of one-element slices.
ValueId EmitPicks(NodeContext& ctx, ValueId x, int axis, const std::vector<int64_t>& picks) {
  const int64_t dim = ctx.TypeOf(x).shape[axis];
  auto slice = [&](int64_t begin, int64_t count, int64_t step) {
    int64_t end = begin + count * step;
    if (end < 0) end = -dim - 1;  // one past index 0 going down: strided_slice adds dim to it
    return ctx.Emit("strided_slice", {x},
                    Attrs({{"begin", IntList{begin}},
                           {"end", IntList{end}},
                           {"strides", IntList{step}},
                           {"axes", IntList{axis}}}));
  };
  const int64_t count = static_cast<int64_t>(picks.size());
  const int64_t step = count > 1 ? picks[1] - picks[0] : 1;
  bool even = step != 0;
  for (int64_t i = 1; even && i < count; ++i) even = picks[i] - picks[i - 1] == step;
  if (even) return slice(picks[0], count, step);
  std::vector<ValueId> parts;
  for (int64_t p : picks) parts.push_back(slice(p, 1, 1));
  return ctx.Emit("concatenate", parts, Attrs({{"axis", int64_t{axis}}}));
}

void ConvertGather(NodeContext& ctx) {
  const Shape& data_shape = ctx.Input(0).shape;
  const int rank = static_cast<int>(data_shape.size());
  if (rank == 0) ctx.Fail("Gather from a scalar");
  const int axis = NormalizeOnnxAxis(ctx.IntAttr("axis", 0), rank, "axis");
  if (!ctx.IsHost(1)) {
    ctx.Fail(
        "Gather with indices computed at run time (an embedding lookup) is not supported; "
        "start the graph after the lookup and feed its result as an input");
  }
  HostTensor indices = ctx.Host(1, "the indices");
  const int64_t dim = data_shape[axis];
  for (int64_t i = 0; i < indices.size(); ++i) {
    int64_t v = indices.Int(i);
    if (v < -dim || v >= dim)
      ctx.Fail("index {} is out of range for axis {} of size {}", v, axis, dim);
    indices.SetInt(i, v < 0 ? v + dim : v);
  }
  if (ctx.IsHost(0)) return ctx.SetOutput(0, HostGather(ctx.Host(0, ""), indices, axis));
  Shape out(data_shape.begin(), data_shape.begin() + axis);
  out.insert(out.end(), indices.shape.begin(), indices.shape.end());
  out.insert(out.end(), data_shape.begin() + axis + 1, data_shape.end());
  if (indices.size() == 0) ctx.Fail("Gather with no indices yields an empty tensor");
  std::vector<int64_t> picks(static_cast<size_t>(indices.size()));
  for (int64_t i = 0; i < indices.size(); ++i) picks[i] = indices.Int(i);
  ValueId y = EmitPicks(ctx, ctx.Runtime(0), axis, picks);
  if (ctx.TypeOf(y).shape != out) y = ctx.Emit("reshape", {y}, Attrs({{"newshape", IntList(out)}}));
  ctx.SetOutput(0, y);
}

void ConvertSlice(NodeContext& ctx) {
  const Shape& shape = ctx.Input(0).shape;
  const int rank = static_cast<int>(shape.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() >= 10) {
    starts = ctx.HostInts(1, "starts");
    ends = ctx.HostInts(2, "ends");
    if (ctx.HasInput(3)) axes = ctx.HostInts(3, "axes");
    if (ctx.HasInput(4)) steps = ctx.HostInts(4, "steps");
  } else {
    starts = ctx.IntsAttr("starts").value_or(std::vector<int64_t>{});
    ends = ctx.IntsAttr("ends").value_or(std::vector<int64_t>{});
    axes = ctx.IntsAttr("axes").value_or(std::vector<int64_t>{});
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() || steps.size() != starts.size())
    ctx.Fail("starts, ends, axes and steps must have the same length");
  std::vector<AxisRange> ranges(rank);
  for (int a = 0; a < rank; ++a) ranges[a] = {0, 1, shape[a]};
  std::vector<bool> sliced(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int a = NormalizeOnnxAxis(axes[i], rank, "axis");
    if (sliced[a]) ctx.Fail("axis {} is sliced twice", a);
    if (steps[i] == 0) ctx.Fail("step 0 on axis {}", a);
    sliced[a] = true;
    ranges[a] = ResolveSlice(starts[i], ends[i], steps[i], shape[a]);
  }
  if (ctx.IsHost(0)) return ctx.SetOutput(0, HostSlice(ctx.Host(0, ""), ranges));
  ValueId y = ctx.Runtime(0);
  IntList begin, end, strides, slice_axes;
  for (int a = 0; a < rank; ++a) {
    const AxisRange& r = ranges[a];
    if (r.begin == 0 && r.step == 1 && r.extent == shape[a]) continue;  // untouched
    int64_t e = r.begin + r.extent * r.step;
    if (e < 0) e = -shape[a] - 1;  // see EmitPicks
    begin.push_back(r.begin);
    end.push_back(e);
    strides.push_back(r.step);
    slice_axes.push_back(a);
  }
  if (!slice_axes.empty()) {
    y = ctx.Emit(
        "strided_slice", {y},
        Attrs({{"begin", begin}, {"end", end}, {"strides", strides}, {"axes", slice_axes}}));
  }
  ctx.SetOutput(0, y);
}

void ConvertConcat(NodeContext& ctx) {
  const int rank = static_cast<int>(ctx.Input(0).shape.size());
  const int axis = NormalizeOnnxAxis(ctx.RequiredIntAttr("axis"), rank, "axis");
  bool all_host = true;
  for (int i = 0; i < ctx.num_inputs(); ++i) all_host = all_host && ctx.IsHost(i);
  if (all_host) {
    const HostTensor& first = ctx.Host(0, "");
    std::vector<const HostTensor*> parts;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const HostTensor& p = ctx.Host(i, "");
      bool same = p.rank() == rank && p.elem_type == first.elem_type;
      for (int a = 0; same && a < rank; ++a) same = a == axis || p.shape[a] == first.shape[a];
      if (!same) {
        ctx.Fail("input {} {} does not match input 0 {} except along axis {}", i,
                 ShapeString(p.shape), ShapeString(first.shape), axis);
      }
      parts.push_back(&p);
    }
    return ctx.SetOutput(0, HostConcat(parts, axis));
  }
  std::vector<ValueId> parts;
  for (int i = 0; i < ctx.num_inputs(); ++i) parts.push_back(ctx.Runtime(i));
  if (parts.size() == 1) return ctx.SetOutput(0, parts[0]);
  ctx.SetOutput(0, ctx.Emit("concatenate", parts, Attrs({{"axis", int64_t{axis}}})));
}

// The new shape of a host or run-time value: folded, or one reshape.
void SetReshaped(NodeContext& ctx, const Shape& shape) {
  if (ctx.IsHost(0)) return ctx.SetOutput(0, HostReshape(ctx.Host(0, ""), shape));
  ValueId x = ctx.Runtime(0);
  if (ctx.TypeOf(x).shape == shape) return ctx.SetOutput(0, x);
  ctx.SetOutput(0, ctx.Emit("reshape", {x}, Attrs({{"newshape", IntList(shape)}})));
}

void ConvertReshape(NodeContext& ctx) {
  const Shape& in = ctx.Input(0).shape;
  std::vector<int64_t> target = ctx.HostInts(1, "the target shape");
  const bool allowzero = ctx.IntAttr("allowzero", 0) != 0;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allowzero) {
      if (i >= in.size())
        ctx.Fail("0 at position {} copies a dimension {} does not have", i, ShapeString(in));
      target[i] = in[i];
    }
    if (target[i] == -1) {
      if (infer >= 0) ctx.Fail("the target shape has more than one -1");
      infer = static_cast<int>(i);
    } else if (target[i] < 0) {
      ctx.Fail("the target shape has a negative dimension {}", target[i]);
    } else {
      known *= target[i];
    }
  }
  const int64_t total = Product(in);
  if (infer >= 0) {
    if (known == 0 || total % known != 0) ctx.Fail("cannot infer -1 reshaping {}", ShapeString(in));
    target[infer] = total / known;
  }
  if (Product(target) != total) {
    ctx.Fail("cannot reshape {} ({} elements) to {}", ShapeString(in), total, ShapeString(target));
  }
  SetReshaped(ctx, target);
}

void ConvertFlatten(NodeContext& ctx) {
  const Shape& in = ctx.Input(0).shape;
  const int rank = static_cast<int>(in.size());
  int64_t axis = ctx.IntAttr("axis", 1);
  if (axis < -rank || axis > rank) ctx.Fail("axis {} is out of range for rank {}", axis, rank);
  if (axis < 0) axis += rank;
  Shape outer(in.begin(), in.begin() + axis), inner(in.begin() + axis, in.end());
  SetReshaped(ctx, {Product(outer), Product(inner)});
}

void ConvertUnsqueeze(NodeContext& ctx) {
  const Shape& in = ctx.Input(0).shape;
  std::vector<int64_t> axes = ctx.opset() >= 13
                                  ? ctx.HostInts(1, "the axes")
                                  : ctx.IntsAttr("axes").value_or(std::vector<int64_t>{});
  const int out_rank = static_cast<int>(in.size() + axes.size());
  std::vector<bool> is_new(out_rank, false);
  for (int64_t a : axes) {
    int n = NormalizeOnnxAxis(a, out_rank, "axis");
    if (is_new[n]) ctx.Fail("axis {} is listed twice", n);
    is_new[n] = true;
  }
  Shape out;
  size_t next = 0;
  for (int a = 0; a < out_rank; ++a) out.push_back(is_new[a] ? 1 : in[next++]);
  if (!ctx.IsHost(0) && axes.size() == 1) {
    const int axis = NormalizeOnnxAxis(axes[0], out_rank, "axis");
    return ctx.SetOutput(0,
                         ctx.Emit("expand_dims", {ctx.Runtime(0)},
                                  Attrs({{"axis", int64_t{axis}}, {"num_newaxis", int64_t{1}}})));
  }
  SetReshaped(ctx, out);
}

void ConvertSqueeze(NodeContext& ctx) {
  const Shape& in = ctx.Input(0).shape;
  const int rank = static_cast<int>(in.size());
  std::vector<int64_t> axes;
  if (ctx.opset() >= 13) {
    if (ctx.HasInput(1)) axes = ctx.HostInts(1, "the axes");
  } else {
    axes = ctx.IntsAttr("axes").value_or(std::vector<int64_t>{});
  }
  std::vector<bool> drop(rank, false);
  if (axes.empty()) {
    for (int a = 0; a < rank; ++a) drop[a] = in[a] == 1;
  }
  for (int64_t a : axes) {
    int n = NormalizeOnnxAxis(a, rank, "axis");
    if (in[n] != 1) ctx.Fail("cannot squeeze axis {} of {}: its size is not 1", n, ShapeString(in));
    drop[n] = true;
  }
  Shape out;
  for (int a = 0; a < rank; ++a)
    if (!drop[a]) out.push_back(in[a]);
  SetReshaped(ctx, out);
}

void ConvertTranspose(NodeContext& ctx) {
  const Shape& in = ctx.Input(0).shape;
  const int rank = static_cast<int>(in.size());
  std::vector<int> perm;
  if (auto given = ctx.IntsAttr("perm")) {
    if (static_cast<int>(given->size()) != rank)
      ctx.Fail("perm must list each of the {} axes once", rank);
    std::vector<bool> seen(rank, false);
    for (int64_t p : *given) {
      int a = NormalizeOnnxAxis(p, rank, "perm entry");
      if (seen[a]) ctx.Fail("perm lists axis {} twice", a);
      seen[a] = true;
      perm.push_back(a);
    }
  } else {
    for (int a = rank - 1; a >= 0; --a) perm.push_back(a);
  }
  if (ctx.IsHost(0)) return ctx.SetOutput(0, HostTranspose(ctx.Host(0, ""), perm));
  // A transpose that only moves axes of size 1 keeps the data in order: a reshape says so.
  std::vector<int> moved;
  for (int p : perm)
    if (in[p] != 1) moved.push_back(p);
  Shape out;
  for (int p : perm) out.push_back(in[p]);
  if (std::is_sorted(moved.begin(), moved.end())) return SetReshaped(ctx, out);
  ctx.SetOutput(0, ctx.Emit("transpose", {ctx.Runtime(0)},
                            Attrs({{"axes", IntList(perm.begin(), perm.end())}})));
}

void ConvertExpand(NodeContext& ctx) {
  const Shape shape = BroadcastShape(ctx.Input(0).shape, ctx.HostInts(1, "the shape"));
  if (Product(shape) > ctx.limits().max_elements)
    ctx.Fail("the expanded shape {} exceeds the tensor size limit", ShapeString(shape));
  if (ctx.IsHost(0)) {
    const HostTensor& x = ctx.Host(0, "");
    HostTensor zeros = HostTensor::Zeros(kOnnxInt64, shape);
    return ctx.SetOutput(
        0, HostBinary(x, zeros, x.elem_type,
                      {[](double a, double) { return a; }, [](int64_t a, int64_t) { return a; }}));
  }
  ValueId x = ctx.Runtime(0);
  if (ctx.TypeOf(x).shape == shape) return ctx.SetOutput(0, x);
  ctx.SetOutput(0, ctx.Emit("broadcast_to", {x}, Attrs({{"shape", IntList(shape)}})));
}

void ConvertRange(NodeContext& ctx) {
  const HostTensor& start = ctx.Host(0, "start");
  const HostTensor& limit = ctx.Host(1, "limit");
  const HostTensor& delta = ctx.Host(2, "delta");
  if (start.size() != 1 || limit.size() != 1 || delta.size() != 1)
    ctx.Fail("start, limit and delta must be scalars");
  if (delta.Real(0) == 0) ctx.Fail("delta is 0");
  double count = std::ceil((limit.Real(0) - start.Real(0)) / delta.Real(0));
  if (count > static_cast<double>(ctx.limits().max_elements)) ctx.Fail("the range is too long");
  const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  HostTensor out = HostTensor::Zeros(start.elem_type, {n});
  for (int64_t i = 0; i < n; ++i) {
    if (start.is_real())
      out.SetReal(i, start.Real(0) + static_cast<double>(i) * delta.Real(0));
    else
      out.SetInt(i, start.Int(0) + i * delta.Int(0));
  }
  ctx.SetOutput(0, std::move(out));
}

void ConvertSplit(NodeContext& ctx) {
  const Shape& in = ctx.Input(0).shape;
  const int rank = static_cast<int>(in.size());
  const int axis = NormalizeOnnxAxis(ctx.IntAttr("axis", 0), rank, "axis");
  std::vector<int64_t> sizes;
  if (ctx.opset() >= 13) {
    if (ctx.HasInput(1)) sizes = ctx.HostInts(1, "the split sizes");
  } else {
    sizes = ctx.IntsAttr("split").value_or(std::vector<int64_t>{});
  }
  const int outputs = ctx.num_outputs();
  if (sizes.empty()) {
    const int64_t parts = ctx.IntAttr("num_outputs", outputs);
    const int64_t each = (in[axis] + parts - 1) / parts;  // the last part takes what is left
    for (int64_t p = 0, left = in[axis]; p < parts; ++p, left -= each)
      sizes.push_back(std::min(each, left));
  }
  if (static_cast<int>(sizes.size()) != outputs)
    ctx.Fail("{} split sizes for {} outputs", sizes.size(), outputs);
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  if (total != in[axis]) ctx.Fail("the split sizes add up to {}, not {}", total, in[axis]);
  int64_t offset = 0;
  for (int o = 0; o < outputs; ++o) {
    std::vector<AxisRange> ranges(rank);
    for (int a = 0; a < rank; ++a) ranges[a] = {0, 1, in[a]};
    ranges[axis] = {offset, 1, sizes[o]};
    if (ctx.IsHost(0)) {
      ctx.SetOutput(o, HostSlice(ctx.Host(0, ""), ranges));
    } else if (ctx.HasOutput(o)) {
      ctx.SetOutput(o, ctx.Emit("strided_slice", {ctx.Runtime(0)},
                                Attrs({{"begin", IntList{offset}},
                                       {"end", IntList{offset + sizes[o]}},
                                       {"axes", IntList{axis}}})));
    }
    offset += sizes[o];
  }
}

void ConvertDropout(NodeContext& ctx) {
  if (ctx.HasInput(2) && ctx.Host(2, "training_mode").Real(0) != 0) {
    ctx.Fail("Dropout in training mode is not supported; export the model in eval mode");
  }
  ctx.ForwardInput(0, 0);
}

}  // namespace

void AddShapeConverters(ConverterTable& t) {
  t["Constant"] = ConvertConstant;
  t["ConstantOfShape"] = ConvertConstantOfShape;
  t["Identity"] = [](NodeContext& ctx) { ctx.ForwardInput(0, 0); };
  t["Dropout"] = ConvertDropout;
  t["Shape"] = ConvertShape;
  t["Size"] = ConvertSize;
  t["Gather"] = ConvertGather;
  t["Slice"] = ConvertSlice;
  t["Concat"] = ConvertConcat;
  t["Reshape"] = ConvertReshape;
  t["Flatten"] = ConvertFlatten;
  t["Unsqueeze"] = ConvertUnsqueeze;
  t["Squeeze"] = ConvertSqueeze;
  t["Transpose"] = ConvertTranspose;
  t["Expand"] = ConvertExpand;
  t["Range"] = ConvertRange;
  t["Split"] = ConvertSplit;
}

}  // namespace fusetune::onnx_import
