// Data-movement (injective) ops: reshape, transpose, expand_dims, squeeze, broadcast_to,
// strided_slice, concatenate. Each is an index map from output coordinates to input coordinates;
// the reference evaluation is the generic one through that map (EvalOp).
#include <algorithm>
#include <cstring>
#include <numeric>

#include "ir/ops/ops.h"

namespace fusetune::ops {
namespace {

// "(2, 3)" for a shape, as in the Tensor type spelling.
std::string ShapeText(const Shape& s) {
  std::string t = "(";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  if (s.size() == 1) t += ",";
  return t + ")";
}

AccessMap OneInput(InputAccess read) {
  AccessMap map;
  map.inputs.push_back(std::move(read));
  return map;
}

std::unique_ptr<OpDef> NewInjective(std::string name, OpPattern pattern = OpPattern::kInjective) {
  auto def = std::make_unique<OpDef>();
  def->name = std::move(name);
  def->pattern = pattern;
  def->kind = OpKind::kInjective;
  def->flops = [](std::span<const TensorType>, const TensorType&, const Attrs&) { return 0.0; };
  return def;
}

// ---- reshape --------------------------------------------------------------------------------
// Relay's newshape codes: a positive size, 0 = copy the input's dimension at this position
// (a literal 0 when allowzero), -1 = infer from the element count.
Shape ReshapeTarget(const TensorType& in, const IntList& newshape, bool allowzero) {
  Shape out;
  int infer_at = -1;
  for (size_t i = 0; i < newshape.size(); ++i) {
    int64_t v = newshape[i];
    if (v > 0) {
      out.push_back(v);
    } else if (v == 0 && allowzero) {
      out.push_back(0);
    } else if (v == 0) {
      if (static_cast<int>(i) >= in.rank()) {
        Fail("reshape", "newshape code 0 at position {} copies a dimension that {} does not have",
             i, in.ToString());
      }
      out.push_back(in.shape[i]);
    } else if (v == -1) {
      if (infer_at >= 0) Fail("reshape", "newshape may contain -1 only once");
      infer_at = static_cast<int>(out.size());
      out.push_back(1);
    } else {
      Fail("reshape", "newshape code {} is not supported (supported: positive sizes, 0 and -1)", v);
    }
  }
  int64_t known = 1;
  for (size_t i = 0; i < out.size(); ++i)
    if (static_cast<int>(i) != infer_at) known *= out[i];
  const int64_t total = in.NumElements();
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0) {
      Fail("reshape", "cannot infer -1 in newshape {} for {}", FormatAttrValue(newshape),
           in.ToString());
    }
    out[infer_at] = total / known;
  } else if (known != total) {
    Fail("reshape", "cannot reshape {} ({} elements) to {} ({} elements)", in.ToString(), total,
         ShapeText(out), known);
  }
  return out;
}

void AddReshape(OpList& ops) {
  auto def = NewInjective("reshape");
  def->row_major_view = true;
  def->attrs = {{"newshape", AttrKind::kIntList, NoneAttr{}},
                {"allowzero", AttrKind::kBool, false}};
  def->infer = [](std::span<const TensorType> in, const Attrs& attrs) {
    return TensorType{in[0].dtype, ReshapeTarget(in[0], attrs.GetIntList("newshape"),
                                                 attrs.GetBool("allowzero"))};
  };
  def->access = [](std::span<const TensorType> in, const TensorType& out, const Attrs&) {
    // Row-major flat position of the output coordinate, unravelled in the input's shape. Trailing
    // dimensions both shapes share are read as they are: the same position for in-bounds
    // coordinates, and the last one stays a unit-stride lane index for the code generator
    // ([256, 1, 768] -> [256, 768] reads (i + j, k), not ((768i + 768j + k) / 768, ... % 768)).
    const Shape& in_shape = in[0].shape;
    int kept = 0;
    while (kept < out.rank() && kept < in[0].rank() &&
           out.shape[out.rank() - 1 - kept] == in_shape[in[0].rank() - 1 - kept])
      ++kept;
    const Shape out_lead(out.shape.begin(), out.shape.end() - kept);
    const Shape in_lead(in_shape.begin(), in_shape.end() - kept);
    std::vector<int64_t> out_strides = RowMajorStrides(out_lead);
    IndexExpr flat = ix::Const(0);
    for (size_t i = 0; i < out_lead.size(); ++i)
      flat = ix::Add(flat, ix::Mul(ix::Var(static_cast<int>(i)), ix::Const(out_strides[i])));
    std::vector<int64_t> in_strides = RowMajorStrides(in_lead);
    InputAccess read;
    for (size_t j = 0; j < in_lead.size(); ++j) {
      IndexExpr e = ix::FloorDiv(flat, ix::Const(in_strides[j]));
      if (j > 0) e = ix::Mod(e, ix::Const(in_lead[j]));
      if (in_lead[j] == 1) e = ix::Const(0);
      read.index.push_back(e);
    }
    for (int k = 0; k < kept; ++k)
      read.index.push_back(ix::Var(static_cast<int>(out_lead.size()) + k));
    return OneInput(std::move(read));
  };
  // newshape spells the output's sizes: a positive entry is one, and so are the codes 0 (copy)
  // and -1 (infer) once resolved; only allowzero's literal 0 is not a size.
  def->size_attrs = [](std::span<const TensorType>, const TensorType&, const Attrs& attrs) {
    std::vector<SizeAttr> sizes;
    const IntList& newshape = attrs.GetIntList("newshape");
    for (size_t i = 0; i < newshape.size(); ++i) {
      if (newshape[i] == 0 && attrs.GetBool("allowzero")) continue;
      sizes.push_back({"newshape", static_cast<int>(i), -1, static_cast<int>(i)});
    }
    return sizes;
  };
  // Row-major data is unchanged by a reshape: copy it rather than unravel every index (the access
  // map above is what kernels use; tests check it against this).
  def->eval = [](std::span<const Tensor* const> in, const TensorType& out, const Attrs&) {
    Tensor result(out);
    std::memcpy(result.data(), in[0]->data(), static_cast<size_t>(out.NumBytes()));
    return result;
  };
  ops.push_back(std::move(def));
}

// ---- transpose ------------------------------------------------------------------------------
std::vector<int> TransposeAxes(const TensorType& in, const Attrs& attrs) {
  const int rank = in.rank();
  std::vector<int> axes;
  if (attrs.IsNone("axes")) {
    for (int i = rank - 1; i >= 0; --i) axes.push_back(i);
    return axes;
  }
  const IntList& given = attrs.GetIntList("axes");
  if (static_cast<int>(given.size()) != rank) {
    Fail("transpose", "axes {} must list each of the {} axes of {} once", FormatAttrValue(given),
         rank, in.ToString());
  }
  return NormalizeAxes("transpose", given, rank);
}

void AddTranspose(OpList& ops) {
  auto def = NewInjective("transpose");
  def->attrs = {{"axes", AttrKind::kOptionalIntList, NoneAttr{}}};
  def->infer = [](std::span<const TensorType> in, const Attrs& attrs) {
    TensorType out{in[0].dtype, {}};
    for (int a : TransposeAxes(in[0], attrs)) out.shape.push_back(in[0].shape[a]);
    return out;
  };
  def->access = [](std::span<const TensorType> in, const TensorType&, const Attrs& attrs) {
    std::vector<int> axes = TransposeAxes(in[0], attrs);
    InputAccess read;
    read.index.resize(axes.size());
    // Output axis i is input axis axes[i].
    for (size_t i = 0; i < axes.size(); ++i) read.index[axes[i]] = ix::Var(static_cast<int>(i));
    return OneInput(std::move(read));
  };
  ops.push_back(std::move(def));
}

// ---- expand_dims ----------------------------------------------------------------------------
int ExpandAxis(const TensorType& in, const Attrs& attrs) {
  int64_t axis = attrs.GetInt("axis");
  const int rank = in.rank();
  if (axis < -rank - 1 || axis > rank) {
    Fail("expand_dims", "axis {} is out of range for {} (valid: {} to {})", axis, in.ToString(),
         -rank - 1, rank);
  }
  if (attrs.GetInt("num_newaxis") < 0) Fail("expand_dims", "num_newaxis must be >= 0");
  return static_cast<int>(axis < 0 ? axis + rank + 1 : axis);
}

void AddExpandDims(OpList& ops) {
  auto def = NewInjective("expand_dims", OpPattern::kBroadcast);
  def->row_major_view = true;
  def->attrs = {{"axis", AttrKind::kInt, NoneAttr{}}, {"num_newaxis", AttrKind::kInt, int64_t{1}}};
  def->infer = [](std::span<const TensorType> in, const Attrs& attrs) {
    int axis = ExpandAxis(in[0], attrs);
    TensorType out = in[0];
    out.shape.insert(out.shape.begin() + axis, attrs.GetInt("num_newaxis"), 1);
    return out;
  };
  def->access = [](std::span<const TensorType> in, const TensorType&, const Attrs& attrs) {
    int axis = ExpandAxis(in[0], attrs);
    int added = static_cast<int>(attrs.GetInt("num_newaxis"));
    InputAccess read;
    for (int j = 0; j < in[0].rank(); ++j) read.index.push_back(ix::Var(j < axis ? j : j + added));
    return OneInput(std::move(read));
  };
  ops.push_back(std::move(def));
}

// ---- squeeze --------------------------------------------------------------------------------
std::vector<bool> SqueezedAxes(const TensorType& in, const Attrs& attrs) {
  std::vector<bool> squeezed(in.rank(), false);
  if (attrs.IsNone("axis")) {
    for (int a = 0; a < in.rank(); ++a) squeezed[a] = in.shape[a] == 1;
    return squeezed;
  }
  for (int a : NormalizeAxes("squeeze", attrs.GetIntList("axis"), in.rank())) {
    if (in.shape[a] != 1)
      Fail("squeeze", "cannot squeeze axis {} of {}: its size is not 1", a, in.ToString());
    squeezed[a] = true;
  }
  return squeezed;
}

void AddSqueeze(OpList& ops) {
  auto def = NewInjective("squeeze");
  def->row_major_view = true;
  def->attrs = {{"axis", AttrKind::kOptionalIntList, NoneAttr{}}};
  def->infer = [](std::span<const TensorType> in, const Attrs& attrs) {
    std::vector<bool> squeezed = SqueezedAxes(in[0], attrs);
    TensorType out{in[0].dtype, {}};
    for (int a = 0; a < in[0].rank(); ++a)
      if (!squeezed[a]) out.shape.push_back(in[0].shape[a]);
    return out;
  };
  def->access = [](std::span<const TensorType> in, const TensorType&, const Attrs& attrs) {
    std::vector<bool> squeezed = SqueezedAxes(in[0], attrs);
    InputAccess read;
    int next = 0;
    for (int a = 0; a < in[0].rank(); ++a)
      read.index.push_back(squeezed[a] ? ix::Const(0) : ix::Var(next++));
    return OneInput(std::move(read));
  };
  ops.push_back(std::move(def));
}

// ---- broadcast_to ---------------------------------------------------------------------------
void AddBroadcastTo(OpList& ops) {
  auto def = NewInjective("broadcast_to", OpPattern::kBroadcast);
  def->attrs = {{"shape", AttrKind::kIntList, NoneAttr{}}};
  def->infer = [](std::span<const TensorType> in, const Attrs& attrs) {
    TensorType target{in[0].dtype, attrs.GetIntList("shape")};
    for (int64_t d : target.shape)
      if (d < 0) Fail("broadcast_to", "shape {} has a negative dimension", ShapeText(target.shape));
    if (in[0].rank() > target.rank()) {
      Fail("broadcast_to", "cannot broadcast {} to the lower-rank shape {}", in[0].ToString(),
           ShapeText(target.shape));
    }
    for (int j = 0; j < in[0].rank(); ++j) {
      int64_t d = in[0].shape[j], t = target.shape[j + target.rank() - in[0].rank()];
      if (d != t && d != 1) {
        Fail("broadcast_to", "cannot broadcast {} to shape {}", in[0].ToString(),
             ShapeText(target.shape));
      }
    }
    return target;
  };
  def->access = [](std::span<const TensorType> in, const TensorType& out, const Attrs&) {
    return BroadcastAccess(in, out);
  };
  def->size_attrs = [](std::span<const TensorType>, const TensorType& out, const Attrs&) {
    std::vector<SizeAttr> sizes;
    for (int a = 0; a < out.rank(); ++a) sizes.push_back({"shape", a, -1, a});
    return sizes;
  };
  ops.push_back(std::move(def));
}

// ---- strided_slice --------------------------------------------------------------------------
struct AxisSlice {
  int64_t begin = 0, stride = 1, extent = 0;
};

std::vector<AxisSlice> SliceAxes(const TensorType& in, const Attrs& attrs) {
  const int rank = in.rank();
  const IntList& begin = attrs.GetIntList("begin");
  const IntList& end = attrs.GetIntList("end");
  IntList strides = attrs.IsNone("strides") ? IntList{} : attrs.GetIntList("strides");
  const std::string& mode = attrs.GetString("slice_mode");
  if (mode != "end" && mode != "size") {
    Fail("strided_slice", "slice_mode must be \"end\" or \"size\", got \"{}\"", mode);
  }
  std::vector<int> axes;
  if (attrs.IsNone("axes")) {
    if (static_cast<int>(begin.size()) > rank || static_cast<int>(end.size()) > rank) {
      Fail("strided_slice", "begin/end have more entries than {} has axes", in.ToString());
    }
    for (int a = 0; a < rank; ++a) axes.push_back(a);
  } else {
    axes = NormalizeAxes("strided_slice", attrs.GetIntList("axes"), rank);
    if (begin.size() != axes.size() || end.size() != axes.size()) {
      Fail("strided_slice", "begin and end must have one entry per axis in axes ({})", axes.size());
    }
  }
  if (strides.size() > axes.size())
    Fail("strided_slice", "strides has more entries than there are axes");

  std::vector<AxisSlice> slices(rank);
  for (int a = 0; a < rank; ++a) slices[a] = {0, 1, in.shape[a]};
  for (size_t i = 0; i < axes.size(); ++i) {
    const int a = axes[i];
    const int64_t dim = in.shape[a];
    if (i >= begin.size() && i >= end.size()) continue;  // unsliced trailing axis
    int64_t s = (i < strides.size() && mode == "end") ? strides[i] : 1;
    if (s == 0) Fail("strided_slice", "stride of axis {} is 0", a);
    // numpy: negative indices count from the end, then clamp into the axis.
    int64_t b = i < begin.size() ? begin[i] : (s > 0 ? 0 : dim - 1);
    if (b < 0) b += dim;
    int64_t e;
    if (mode == "size") {
      int64_t size = i < end.size() ? end[i] : -1;
      e = size < 0 ? dim : b + size;
    } else {
      e = i < end.size() ? end[i] : (s > 0 ? dim : -dim - 1);
      if (e < 0) e += dim;
    }
    int64_t extent;
    if (s > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      extent = e > b ? (e - b + s - 1) / s : 0;
    } else {
      b = std::clamp<int64_t>(b, -1, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      extent = b > e ? (b - e + (-s) - 1) / (-s) : 0;
    }
    slices[a] = {b, s, extent};
  }
  return slices;
}

void AddStridedSlice(OpList& ops) {
  auto def = NewInjective("strided_slice");
  def->attrs = {{"begin", AttrKind::kIntList, NoneAttr{}},
                {"end", AttrKind::kIntList, NoneAttr{}},
                {"strides", AttrKind::kOptionalIntList, NoneAttr{}},
                {"slice_mode", AttrKind::kString, std::string("end")},
                {"axes", AttrKind::kOptionalIntList, NoneAttr{}}};
  def->infer = [](std::span<const TensorType> in, const Attrs& attrs) {
    TensorType out{in[0].dtype, {}};
    for (const AxisSlice& s : SliceAxes(in[0], attrs)) out.shape.push_back(s.extent);
    return out;
  };
  def->access = [](std::span<const TensorType> in, const TensorType&, const Attrs& attrs) {
    std::vector<AxisSlice> slices = SliceAxes(in[0], attrs);
    InputAccess read;
    for (size_t a = 0; a < slices.size(); ++a) {
      read.index.push_back(
          ix::Add(ix::Const(slices[a].begin),
                  ix::Mul(ix::Var(static_cast<int>(a)), ix::Const(slices[a].stride))));
    }
    return OneInput(std::move(read));
  };
  // An end that reaches the end of its axis (forward, "end" mode: PyTorch writes x[:, 1:] as a
  // huge end) means "to the end", whatever the axis' size.
  def->size_attrs = [](std::span<const TensorType> in, const TensorType&, const Attrs& attrs) {
    std::vector<SizeAttr> sizes;
    if (attrs.GetString("slice_mode") != "end") return sizes;
    const IntList& end = attrs.GetIntList("end");
    IntList strides = attrs.IsNone("strides") ? IntList{} : attrs.GetIntList("strides");
    IntList axes;
    if (attrs.IsNone("axes")) {
      for (int a = 0; a < in[0].rank(); ++a) axes.push_back(a);
    } else {
      axes = attrs.GetIntList("axes");
    }
    for (size_t i = 0; i < end.size() && i < axes.size(); ++i) {
      int a = NormalizeAxis("strided_slice", axes[i], in[0].rank());
      bool forward = i >= strides.size() || strides[i] > 0;
      if (forward && end[i] >= in[0].shape[a]) sizes.push_back({"end", static_cast<int>(i), 0, a});
    }
    return sizes;
  };
  ops.push_back(std::move(def));
}

// ---- concatenate ----------------------------------------------------------------------------
void AddConcatenate(OpList& ops) {
  auto def = NewInjective("concatenate");
  def->min_inputs = 1;
  def->max_inputs = -1;
  def->tuple_input = true;
  def->attrs = {{"axis", AttrKind::kInt, int64_t{0}}};
  def->infer = [](std::span<const TensorType> in, const Attrs& attrs) {
    const TensorType& first = in[0];
    if (first.rank() == 0) Fail("concatenate", "cannot concatenate scalars");
    int axis = NormalizeAxis("concatenate", attrs.GetInt("axis"), first.rank());
    TensorType out = first;
    for (size_t i = 1; i < in.size(); ++i) {
      bool same = in[i].dtype == first.dtype && in[i].rank() == first.rank();
      for (int a = 0; same && a < first.rank(); ++a)
        same = a == axis || in[i].shape[a] == first.shape[a];
      if (!same) {
        Fail("concatenate", "input {} {} does not match input 0 {} except along axis {}", i,
             in[i].ToString(), first.ToString(), axis);
      }
      out.shape[axis] += in[i].shape[axis];
    }
    return out;
  };
  def->access = [](std::span<const TensorType> in, const TensorType& out, const Attrs& attrs) {
    int axis = NormalizeAxis("concatenate", attrs.GetInt("axis"), out.rank());
    AccessMap map;
    map.select_axis = axis;
    int64_t offset = 0;
    for (const TensorType& t : in) {
      InputAccess read = IdentityRead(out.rank());
      read.index[axis] = ix::Add(ix::Var(axis), ix::Const(-offset));
      map.inputs.push_back(read);
      map.select_begin.push_back(offset);
      offset += t.shape[axis];
    }
    return map;
  };
  ops.push_back(std::move(def));
}

}  // namespace

void AddTransformOps(OpList& ops) {
  AddReshape(ops);
  AddTranspose(ops);
  AddExpandDims(ops);
  AddSqueeze(ops);
  AddBroadcastTo(ops);
  AddStridedSlice(ops);
  AddConcatenate(ops);
}

}  // namespace fusetune::ops
