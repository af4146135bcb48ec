// Element-wise and broadcast ops: each is a ScalarExpr over its inputs, read through numpy
// broadcasting (nn.bias_add reads its bias along one axis).
#include <cmath>

#include "ir/ops/ops.h"

namespace fusetune::ops {
namespace {

enum class Operand { kFloat, kNumeric, kAny };

void Require(std::string_view op, Operand kind, const TensorType& t) {
  if (kind == Operand::kFloat) RequireFloat(op, t);
  if (kind == Operand::kNumeric) RequireNumeric(op, t);
}

std::unique_ptr<OpDef> NewElementwise(std::string name, int arity, OpPattern pattern) {
  auto def = std::make_unique<OpDef>();
  def->name = std::move(name);
  def->min_inputs = def->max_inputs = arity;
  def->pattern = pattern;
  def->kind = OpKind::kElementwise;
  def->access = [](std::span<const TensorType> in, const TensorType& out, const Attrs&) {
    return BroadcastAccess(in, out);
  };
  const OpDef* self = def.get();
  def->flops = [self](std::span<const TensorType> in, const TensorType& out, const Attrs& attrs) {
    return ScalarFlops(*self, in, out, attrs);
  };
  return def;
}

// y = f(x), same type as x.
void AddUnary(OpList& ops, std::string name, Operand operand,
              std::function<ScalarExpr(ScalarExpr x, const Attrs&)> build,
              OpPattern pattern = OpPattern::kElemWise) {
  auto def = NewElementwise(name, 1, pattern);
  def->infer = [name, operand](std::span<const TensorType> in, const Attrs&) {
    Require(name, operand, in[0]);
    return in[0];
  };
  def->scalar = [build](std::span<const TensorType> in, const TensorType&, const Attrs& attrs) {
    return build(sx::Arg(0, in[0].dtype), attrs);
  };
  ops.push_back(std::move(def));
}

void AddMath(OpList& ops, std::string name, ScalarOp op, Operand operand = Operand::kFloat) {
  AddUnary(ops, std::move(name), operand,
           [op](ScalarExpr x, const Attrs&) { return sx::Unary(op, std::move(x)); });
}

// z = f(x, y) under numpy broadcasting; x and y share a dtype.
void AddBinary(OpList& ops, std::string name, ScalarOp op, Operand operand) {
  auto def = NewElementwise(name, 2, OpPattern::kBroadcast);
  def->infer = [name, operand](std::span<const TensorType> in, const Attrs&) {
    RequireSameDType(name, in);
    Require(name, operand, in[0]);
    return TensorType{in[0].dtype, BroadcastShapes(name, in)};
  };
  def->scalar = [op](std::span<const TensorType> in, const TensorType&, const Attrs&) {
    return sx::Binary(op, sx::Arg(0, in[0].dtype), sx::Arg(1, in[1].dtype));
  };
  ops.push_back(std::move(def));
}

void AddLike(OpList& ops, std::string name, double value) {
  AddUnary(ops, std::move(name), Operand::kAny,
           [value](ScalarExpr x, const Attrs&) { return sx::Const(value, x->dtype); });
}

void AddWhere(OpList& ops) {
  auto def = NewElementwise("where", 3, OpPattern::kBroadcast);
  def->infer = [](std::span<const TensorType> in, const Attrs&) {
    RequireSameDType("where", in.subspan(1));
    return TensorType{in[1].dtype, BroadcastShapes("where", in)};
  };
  def->scalar = [](std::span<const TensorType> in, const TensorType&, const Attrs&) {
    // A non-bool condition counts non-zero as true.
    ScalarExpr cond = sx::Binary(ScalarOp::kNe, sx::Arg(0, in[0].dtype), sx::Const(0, in[0].dtype));
    return sx::Select(cond, sx::Arg(1, in[1].dtype), sx::Arg(2, in[2].dtype));
  };
  ops.push_back(std::move(def));
}

void AddBiasAdd(OpList& ops) {
  auto def = NewElementwise("nn.bias_add", 2, OpPattern::kBroadcast);
  def->attrs = {{"axis", AttrKind::kInt, int64_t{1}}};
  def->infer = [](std::span<const TensorType> in, const Attrs& attrs) {
    RequireSameDType("nn.bias_add", in);
    RequireNumeric("nn.bias_add", in[0]);
    int axis = NormalizeAxis("nn.bias_add", attrs.GetInt("axis"), in[0].rank());
    if (in[1].rank() != 1 || in[1].shape[0] != in[0].shape[axis]) {
      Fail("nn.bias_add", "bias {} must have shape ({},) to match axis {} of {}", in[1].ToString(),
           in[0].shape[axis], axis, in[0].ToString());
    }
    return in[0];
  };
  def->access = [](std::span<const TensorType> in, const TensorType& out, const Attrs& attrs) {
    int axis = NormalizeAxis("nn.bias_add", attrs.GetInt("axis"), out.rank());
    AccessMap map;
    map.inputs.push_back(IdentityRead(out.rank()));
    map.inputs.push_back(InputAccess{{ix::Var(axis)}});
    (void)in;
    return map;
  };
  def->scalar = [](std::span<const TensorType> in, const TensorType&, const Attrs&) {
    return sx::Binary(ScalarOp::kAdd, sx::Arg(0, in[0].dtype), sx::Arg(1, in[1].dtype));
  };
  ops.push_back(std::move(def));
}

void AddClip(OpList& ops) {
  AddUnary(ops, "clip", Operand::kNumeric, [](ScalarExpr x, const Attrs& attrs) {
    DType t = x->dtype;
    ScalarExpr lo = sx::Binary(ScalarOp::kMax, std::move(x), sx::Const(attrs.GetFloat("a_min"), t));
    return sx::Binary(ScalarOp::kMin, std::move(lo), sx::Const(attrs.GetFloat("a_max"), t));
  });
  ops.back()->attrs = {{"a_min", AttrKind::kFloat, NoneAttr{}},
                       {"a_max", AttrKind::kFloat, NoneAttr{}}};
}

void AddCast(OpList& ops) {
  auto def = NewElementwise("cast", 1, OpPattern::kElemWise);
  def->attrs = {{"dtype", AttrKind::kString, NoneAttr{}}};
  def->infer = [](std::span<const TensorType> in, const Attrs& attrs) {
    const std::string& name = attrs.GetString("dtype");
    std::optional<DType> to = ParseDType(name);
    if (!to)
      Fail("cast", "unknown dtype \"{}\" (known: float32, int32, bool, float16, bfloat16)", name);
    return TensorType{*to, in[0].shape};
  };
  def->scalar = [](std::span<const TensorType> in, const TensorType& out, const Attrs&) {
    return sx::Cast(sx::Arg(0, in[0].dtype), out.dtype);
  };
  ops.push_back(std::move(def));
}

}  // namespace

void AddElementwiseOps(OpList& ops) {
  AddBinary(ops, "add", ScalarOp::kAdd, Operand::kNumeric);
  AddBinary(ops, "subtract", ScalarOp::kSub, Operand::kNumeric);
  AddBinary(ops, "multiply", ScalarOp::kMul, Operand::kNumeric);
  AddBinary(ops, "divide", ScalarOp::kDiv, Operand::kNumeric);
  AddBinary(ops, "power", ScalarOp::kPow, Operand::kNumeric);
  AddBinary(ops, "maximum", ScalarOp::kMax, Operand::kAny);
  AddBinary(ops, "minimum", ScalarOp::kMin, Operand::kAny);

  AddMath(ops, "negative", ScalarOp::kNeg, Operand::kNumeric);
  AddMath(ops, "abs", ScalarOp::kAbs, Operand::kNumeric);
  AddMath(ops, "exp", ScalarOp::kExp);
  AddMath(ops, "fast_exp", ScalarOp::kFastExp);
  AddMath(ops, "log", ScalarOp::kLog);
  AddMath(ops, "sqrt", ScalarOp::kSqrt);
  AddMath(ops, "rsqrt", ScalarOp::kRsqrt);
  AddMath(ops, "tanh", ScalarOp::kTanh);
  AddMath(ops, "fast_tanh", ScalarOp::kFastTanh);
  AddMath(ops, "sigmoid", ScalarOp::kSigmoid);
  AddMath(ops, "erf", ScalarOp::kErf);
  AddUnary(ops, "nn.relu", Operand::kNumeric, [](ScalarExpr x, const Attrs&) {
    DType t = x->dtype;
    return sx::Binary(ScalarOp::kMax, std::move(x), sx::Const(0, t));
  });
  AddClip(ops);
  AddCast(ops);
  AddLike(ops, "ones_like", 1.0);
  AddLike(ops, "zeros_like", 0.0);
  AddWhere(ops);
  AddBiasAdd(ops);
}

}  // namespace fusetune::ops
