// The op registry, attribute normalisation, and the generic reference evaluator.
//
// Generic evaluation (element-wise and injective ops) walks the output row by row. Each input's
// index map is folded into one flat-index expression; when that expression is affine in the
// output coordinates (broadcast, transpose, slice, concatenate) the flat index is a running sum,
// otherwise (reshape's floordiv/mod) it runs as a small postfix program without allocation.
#include "ir/op.h"

#include <algorithm>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/ops/ops.h"

namespace fusetune {

std::string_view PatternName(OpPattern p) {
  switch (p) {
    case OpPattern::kElemWise:
      return "ElemWise";
    case OpPattern::kBroadcast:
      return "Broadcast";
    case OpPattern::kInjective:
      return "Injective";
    case OpPattern::kCommReduce:
      return "CommReduce";
    case OpPattern::kOutEWiseFusable:
      return "OutEWiseFusable";
    case OpPattern::kOpaque:
      return "Opaque";
  }
  return "?";
}

namespace {

struct Registry {
  ops::OpList defs;
  std::vector<const OpDef*> all;
};

const Registry& GetRegistry() {
  static const Registry* registry = [] {
    auto* r = new Registry;
    ops::AddElementwiseOps(r->defs);
    ops::AddReduceOps(r->defs);
    ops::AddTransformOps(r->defs);
    ops::AddNNOps(r->defs);
    for (const auto& d : r->defs) r->all.push_back(d.get());
    std::sort(r->all.begin(), r->all.end(),
              [](const OpDef* a, const OpDef* b) { return a->name < b->name; });
    for (size_t i = 1; i < r->all.size(); ++i) {
      FT_CHECK(r->all[i - 1]->name != r->all[i]->name, "op registered twice: " + r->all[i]->name);
    }
    return r;
  }();
  return *registry;
}

bool AdmitsNone(AttrKind kind) {
  return kind == AttrKind::kOptionalInt || kind == AttrKind::kOptionalIntList;
}

const char* KindDescription(AttrKind kind) {
  switch (kind) {
    case AttrKind::kBool:
      return "True or False";
    case AttrKind::kInt:
      return "an int";
    case AttrKind::kFloat:
      return "a float";
    case AttrKind::kString:
      return "a string";
    case AttrKind::kIntList:
      return "a list of ints";
    case AttrKind::kOptionalInt:
      return "an int";
    case AttrKind::kOptionalIntList:
      return "a list of ints";
  }
  return "?";
}

// The value converted to the schema's kind, or nullopt when it has the wrong kind.
std::optional<AttrValue> Coerce(AttrKind kind, const AttrValue& v) {
  const bool is_none = std::holds_alternative<NoneAttr>(v);
  switch (kind) {
    case AttrKind::kBool:
      if (std::holds_alternative<bool>(v)) return v;
      return std::nullopt;
    case AttrKind::kInt:
      if (std::holds_alternative<int64_t>(v)) return v;
      return std::nullopt;
    case AttrKind::kFloat:
      if (std::holds_alternative<double>(v)) return v;
      if (std::holds_alternative<int64_t>(v)) return static_cast<double>(std::get<int64_t>(v));
      return std::nullopt;
    case AttrKind::kString:
      if (std::holds_alternative<std::string>(v)) return v;
      return std::nullopt;
    case AttrKind::kIntList:
      if (std::holds_alternative<IntList>(v)) return v;
      return std::nullopt;
    case AttrKind::kOptionalInt:
      if (is_none || std::holds_alternative<int64_t>(v)) return v;
      return std::nullopt;
    case AttrKind::kOptionalIntList:
      if (is_none || std::holds_alternative<IntList>(v)) return v;
      if (std::holds_alternative<int64_t>(v)) return IntList{std::get<int64_t>(v)};
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

const OpDef* FindOp(std::string_view name) {
  const auto& all = GetRegistry().all;
  auto it = std::lower_bound(all.begin(), all.end(), name,
                             [](const OpDef* d, std::string_view n) { return d->name < n; });
  if (it != all.end() && (*it)->name == name) return *it;
  return nullptr;
}

const std::vector<const OpDef*>& AllOps() { return GetRegistry().all; }

Attrs NormalizeAttrs(const OpDef& op, const Attrs& given) {
  const auto& items = given.items();
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string& name = items[i].first;
    bool known = std::any_of(op.attrs.begin(), op.attrs.end(),
                             [&](const AttrSpec& s) { return s.name == name; });
    if (!known) {
      std::string names;
      for (const AttrSpec& s : op.attrs) names += (names.empty() ? "" : ", ") + s.name;
      throw UserError(fmt::format("{} has no attribute '{}' (it has: {})", op.name, name,
                                  names.empty() ? "none" : names));
    }
    for (size_t j = 0; j < i; ++j) {
      if (items[j].first == name) {
        throw UserError(fmt::format("{}: attribute '{}' is given twice", op.name, name));
      }
    }
  }
  std::vector<std::pair<std::string, AttrValue>> normalised;
  for (const AttrSpec& spec : op.attrs) {
    if (!given.Has(spec.name)) {
      if (std::holds_alternative<NoneAttr>(spec.default_value) && !AdmitsNone(spec.kind)) {
        throw UserError(fmt::format("{}: missing required attribute '{}'", op.name, spec.name));
      }
      normalised.emplace_back(spec.name, spec.default_value);
      continue;
    }
    const AttrValue& v = given.Get(spec.name);
    std::optional<AttrValue> coerced = Coerce(spec.kind, v);
    if (!coerced) {
      throw UserError(fmt::format("{}: attribute '{}' must be {}, got {}", op.name, spec.name,
                                  KindDescription(spec.kind), FormatAttrValue(v)));
    }
    normalised.emplace_back(spec.name, std::move(*coerced));
  }
  return Attrs(std::move(normalised));
}

int NormalizeAxis(std::string_view op, int64_t axis, int rank) {
  if (axis < -rank || axis >= rank) {
    throw UserError(
        fmt::format("{}: axis {} is out of range for a tensor of rank {} (valid: {} to {})", op,
                    axis, rank, -rank, rank - 1));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

std::vector<int> ReduceAxes(const TensorType& input, const Attrs& attrs) {
  const int rank = input.rank();
  std::vector<bool> chosen(rank, false);
  if (attrs.IsNone("axis")) {
    chosen.assign(rank, true);
  } else {
    for (int a : ops::NormalizeAxes("reduce", attrs.GetIntList("axis"), rank)) chosen[a] = true;
  }
  const bool exclude = attrs.GetBool("exclude");
  std::vector<int> axes;
  for (int a = 0; a < rank; ++a)
    if (chosen[a] != exclude) axes.push_back(a);
  return axes;
}

// ---------------------------------------------------------------------------------------------
// Generic evaluation through index maps.
namespace {

// One input's flat index as a function of the output coordinates.
class FlatIndex {
 public:
  FlatIndex(const InputAccess& access, const Shape& input_shape, int out_rank)
      : coef_(out_rank, 0) {
    std::vector<int64_t> strides = RowMajorStrides(input_shape);
    FT_CHECK(access.index.size() == input_shape.size(),
             "index map rank differs from the input rank");
    IndexExpr flat = ix::Const(0);
    for (size_t j = 0; j < strides.size(); ++j) {
      flat = ix::Add(flat, ix::Mul(access.index[j], ix::Const(strides[j])));
    }
    affine_ = Linearize(flat, 1);
    if (!affine_) {
      Compile(flat);
      stack_.resize(program_.size() + 1);
    }
  }

  bool affine() const { return affine_; }
  int64_t coef(int axis) const { return coef_[axis]; }
  int64_t offset() const { return offset_; }

  int64_t Eval(const int64_t* coords) {
    int64_t* sp = stack_.data();
    for (const Instr& in : program_) {
      switch (in.op) {
        case IndexOp::kConst:
          *sp++ = in.value;
          break;
        case IndexOp::kVar:
          *sp++ = coords[in.value];
          break;
        case IndexOp::kAdd:
          sp[-2] += sp[-1];
          --sp;
          break;
        case IndexOp::kMul:
          sp[-2] *= sp[-1];
          --sp;
          break;
        case IndexOp::kFloorDiv: {
          int64_t a = sp[-2], b = sp[-1];
          int64_t q = a / b;
          if (q * b != a && ((a < 0) != (b < 0))) --q;  // one division, not two
          sp[-2] = q;
          --sp;
          break;
        }
        case IndexOp::kMod: {
          int64_t a = sp[-2], b = sp[-1];
          int64_t r = a - (a / b) * b;
          if (r != 0 && ((r < 0) != (b < 0))) r += b;
          sp[-2] = r;
          --sp;
          break;
        }
      }
    }
    return sp[-1];
  }

 private:
  struct Instr {
    IndexOp op;
    int64_t value;
  };

  // Adds scale * e to (coef_, offset_); false when e is not affine.
  bool Linearize(const IndexExpr& e, int64_t scale) {
    switch (e->op) {
      case IndexOp::kConst:
        offset_ += scale * e->value;
        return true;
      case IndexOp::kVar:
        coef_.at(e->var) += scale;
        return true;
      case IndexOp::kAdd:
        return Linearize(e->a, scale) && Linearize(e->b, scale);
      case IndexOp::kMul:
        if (e->b->op == IndexOp::kConst) return Linearize(e->a, scale * e->b->value);
        if (e->a->op == IndexOp::kConst) return Linearize(e->b, scale * e->a->value);
        return false;
      default:
        return false;
    }
  }

  void Compile(const IndexExpr& e) {
    switch (e->op) {
      case IndexOp::kConst:
        program_.push_back({IndexOp::kConst, e->value});
        return;
      case IndexOp::kVar:
        program_.push_back({IndexOp::kVar, e->var});
        return;
      default:
        Compile(e->a);
        Compile(e->b);
        program_.push_back({e->op, 0});
    }
  }

  bool affine_ = false;
  std::vector<int64_t> coef_;
  int64_t offset_ = 0;
  std::vector<Instr> program_;
  std::vector<int64_t> stack_;
};

Tensor GenericEval(const OpDef& op, std::span<const Tensor* const> inputs, const TensorType& out,
                   const Attrs& attrs) {
  std::vector<TensorType> types;
  for (const Tensor* t : inputs) types.push_back(t->type());
  FT_CHECK(op.access != nullptr, op.name + " has neither eval nor access");
  const AccessMap map = op.access(types, out, attrs);
  FT_CHECK(map.inputs.size() == inputs.size(), op.name + ": access map has the wrong input count");
  const bool elementwise = op.kind == OpKind::kElementwise;
  ScalarExpr scalar;
  if (elementwise) {
    FT_CHECK(op.scalar != nullptr, op.name + " is element-wise without a scalar expression");
    scalar = op.scalar(types, out, attrs);
  } else {
    FT_CHECK(op.kind == OpKind::kInjective,
             op.name + ": generic eval needs an element-wise or injective op");
    FT_CHECK(map.select_axis >= 0 || inputs.size() == 1,
             op.name + ": injective op with several inputs needs select_axis");
  }

  const size_t n = inputs.size();
  const int rank = out.rank();
  std::vector<FlatIndex> index;
  for (size_t i = 0; i < n; ++i) index.emplace_back(map.inputs[i], types[i].shape, rank);

  Tensor result(out);
  const int64_t total = out.NumElements();
  if (total == 0) return result;
  const int64_t inner = rank ? out.shape[rank - 1] : 1;
  const int last = rank - 1;
  std::vector<int64_t> coords(std::max(rank, 1), 0);
  std::vector<int64_t> base(n, 0);
  std::vector<double> args(n, 0.0);
  // An element-wise op whose inputs are all read at affine offsets is evaluated a row (the last
  // axis) at a time: each input's row read, the expression evaluated over it (EvalScalarRow).
  const bool by_rows = elementwise && std::all_of(index.begin(), index.end(),
                                                  [](const FlatIndex& f) { return f.affine(); });
  std::vector<std::vector<double>> rows(by_rows ? n : 0, std::vector<double>(inner));
  std::vector<const double*> row_args;
  for (const std::vector<double>& row : rows) row_args.push_back(row.data());
  std::vector<double> row_out(by_rows ? inner : 0);
  // For concatenate-like ops: which input owns output coordinate c along select_axis.
  auto owner = [&](int64_t c) {
    size_t k = 0;
    while (k + 1 < n && c >= map.select_begin[k + 1]) ++k;
    return k;
  };

  int64_t flat = 0;
  while (flat < total) {
    for (size_t i = 0; i < n; ++i) {
      if (!index[i].affine()) continue;
      int64_t b = index[i].offset();
      for (int d = 0; d < last; ++d) b += index[i].coef(d) * coords[d];
      base[i] = b;
    }
    if (by_rows) {
      for (size_t i = 0; i < n; ++i)
        inputs[i]->GetStrided(base[i], rank ? index[i].coef(last) : 0, inner, rows[i].data());
      EvalScalarRow(scalar, row_args, inner, row_out.data());
      result.SetRange(flat, inner, row_out.data());
      flat += inner;
    }
    for (int64_t j = 0; !by_rows && j < inner; ++j, ++flat) {
      if (rank) coords[last] = j;
      auto read = [&](size_t i) {
        int64_t at = index[i].affine() ? base[i] + (rank ? index[i].coef(last) * j : 0)
                                       : index[i].Eval(coords.data());
        return inputs[i]->Get(at);
      };
      double value;
      if (elementwise) {
        for (size_t i = 0; i < n; ++i) args[i] = read(i);
        value = EvalScalar(scalar, args);
      } else {
        value = read(map.select_axis >= 0 ? owner(coords[map.select_axis]) : 0);
      }
      result.Set(flat, value);
    }
    // Advance the outer coordinates (all but the last axis) like an odometer.
    for (int d = last - 1; d >= 0; --d) {
      if (++coords[d] < out.shape[d]) break;
      coords[d] = 0;
    }
  }
  return result;
}

}  // namespace

Tensor EvalOp(const OpDef& op, std::span<const Tensor* const> inputs, const TensorType& out,
              const Attrs& attrs) {
  for (const Tensor* t : inputs) {
    if (!IsSupportedForCompute(t->dtype())) {
      throw UserError(
          fmt::format("{}: {} tensors cannot be evaluated (supported: float32, int32, bool)",
                      op.name, DTypeName(t->dtype())));
    }
  }
  if (op.eval) return op.eval(inputs, out, attrs);
  return GenericEval(op, inputs, out, attrs);
}

}  // namespace fusetune
